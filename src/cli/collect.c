/*
 * carma collect: the head-node collector. Scrapes the /metrics of many exporters (carma's own,
 * srt-slurm's cpu-power-exporter) on one clock into one samples file, and optionally
 * srt-slurm's CPU power leg.
 *
 * The clock: cycle k starts at start + k x interval on CLOCK_MONOTONIC (absolute, so nothing
 * drifts); a cycle that could not start within its slot is counted as missed, and its
 * scrape_seq is left out. Each cycle starts one HTTP request per target at once through one
 * libcurl multi handle and waits for all of them up to the request timeout (at most 95 % of the
 * interval: the cycle never takes longer than the interval); a request still running then is
 * abandoned. The easy handles are made once and re-added every cycle, so that connections are
 * kept alive in the multi handle's cache; each target's body buffer keeps its largest size.
 * Bodies are parsed (collect/promparse, under prom_limits_default; the download is capped at
 * its max_bytes) and written in target order by collect/collector (samples.csv, nodes.csv)
 * and, with --srt-cpu, export/srt_cpu (power/cpu/).
 *
 * A target that fails (no answer, an HTTP status other than 200, a body too large or
 * unparseable) gets a row with blank cells, a warning when it goes down and a note when it
 * comes back (nothing in between), and is retried with exponential backoff (cycles skipped: 1,
 * 2, 4, ... up to 30 s worth), never holding up the others. SIGINT, SIGTERM and SIGHUP are
 * blocked (and taken even when inherited ignored) and waited for between cycles (sigtimedwait is
 * the sleep): one that arrives during a cycle ends the run after it; the files are flushed and
 * manifest.json says how it went.
 */
#include "cli/cli.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/common.h"
#include "cli/interrupt.h"
#include "cli/outdir.h"
#include "core/file.h"
#include "collect/collector.h"
#include "collect/promparse.h"
#include "core/parse.h"
#include "core/timeutil.h"
#include "export/srt_cpu.h"
#include "cli/follow_opt.h"
#include "workload/launcher.h"

#define DEFAULT_INTERVAL_NS NS_PER_S
#define MAX_TIMEOUT_NS      (5 * NS_PER_S)
#define BACKOFF_MAX_NS      (30 * NS_PER_S)
#define BODY_INITIAL_CAP    (16u << 10)
#define LAST_ERROR_MAX      256
#define EMPTY_WARN_SCRAPES  3

struct collect_opts {
    struct collect_targets targets;
    const char *out_dir;
    int64_t interval_ns;
    int64_t timeout_ns;  /* 0: min(interval, 5 s) */
    int64_t duration_ns; /* 0: until a signal */
    bool required;
    bool srt_cpu;
    struct follow_opts follow; /* --report-follow */
    int verbose;
};

/* One target's state across cycles. */
struct tgt {
    const struct collect_target *t;
    CURL *easy;
    char *body; /* the response, grown up to max_bytes and kept */
    size_t len, cap;
    bool too_big;
    bool active;  /* in the multi handle this cycle */
    bool done;    /* its transfer ended this cycle */
    bool scraped; /* it was due this cycle */
    CURLcode result;
    int64_t done_real_ns;
    char errbuf[CURL_ERROR_SIZE];
    struct collect_backoff backoff;

    bool down;               /* its last scrape failed (warned once) */
    uint64_t failed_in_row;  /* scrapes */
    int64_t down_since_real; /* ns */
    uint64_t scrapes, errors, skipped;
    char last_error[LAST_ERROR_MAX];
    int64_t last_error_real; /* 0: none */
    char *node_label;        /* the node label its exporter gives, once seen */
    unsigned empty_in_row;   /* answers without a power sample, in a row */
    bool warned_empty;
    uint64_t negative; /* power samples below 0 W it served (written as missing) */
};

struct collector {
    struct collect_opts *o;
    size_t n;
    struct tgt *tg;
    CURLM *multi;
    struct curl_slist *headers;
    size_t max_bytes;
    int64_t req_timeout_ns;
    int64_t waited_ns; /* how long this cycle's requests had */
    uint64_t max_skip;

    char dir[PATH_MAX];
    char manifest_path[PATH_MAX + 32];
    struct collect_out *out;
    struct srt_cpu *cpu;
    struct srt_cpu_scrape *cpu_scrape;

    int64_t start_mono, start_real, stop_real;
    uint64_t cycles, missed;
    bool write_failing; /* samples.csv: warned, not yet written again */
    bool write_failed;  /* ever */
    bool cpu_write_failing, cpu_write_failed;
    bool interrupted;
    struct interruption stop; /* the signal that ended the run, and when */
    bool ran;                 /* the clock started (else the run failed before its first cycle) */
    uint64_t rows;            /* samples.csv rows, kept when it is closed */
    struct follower follower; /* --report-follow */
    bool report_failed;
};

static void help(void)
{
    printf(
        "usage: carma collect (--target HOST:PORT ... | --targets-file F | --slurm) [OPTIONS]\n\n"
        "Scrapes the /metrics of carma exporters (and srt-slurm's cpu-power-exporter) on\n"
        "many nodes on one clock into one run directory: samples.csv (one row per channel\n"
        "per node per cycle), nodes.csv (node power, energy and CPU utilization) and\n"
        "manifest.json. The directory's path is the first line of stdout. A target that is\n"
        "down gets a row with blank cells, a warning, and retries with backoff; the others go\n"
        "on. SIGINT/SIGTERM/SIGHUP end the run after the current cycle.\n\n"
        "targets:\n"
        "  --target T          HOST, HOST:PORT, [IPV6]:PORT or an http:// URL (repeatable);\n"
        "                      the port defaults to 9405 (--port), the path to /metrics\n"
        "  --targets-file F    one target per line, '#' comments, blank lines skipped\n"
        "  --slurm             the nodes of the current Slurm job (SLURM_JOB_NODELIST,\n"
        "                      expanded with scontrol show hostnames), each at --port\n"
        "  --port P            port of targets given without one (default 9405)\n\n"
        "options:\n"
        "  -o, --output DIR    the run directory: new, or without an earlier run's files (never\n"
        "                      overwritten; default: a new collect_<YYYYmmdd-HHMMSS>)\n"
        "  --interval T        scrape period, 10ms..1h (default 1s)\n"
        "  --timeout T         request timeout (default: the interval, at most 5s; never\n"
        "                      more than 95 %% of the interval)\n"
        "  --duration T        stop after T (default: run until SIGINT/SIGTERM/SIGHUP)\n"
        "  --required          a target down in the first cycle is fatal (exit 1)\n"
        "  --srt-cpu           also write srt-slurm's CPU power leg, power/cpu/samples.csv\n"
        "                      and power/cpu/cpu_manifest.json, from cpu_power_acpi_watts /\n"
        "                      cpu_power_dcgm_watts\n" FOLLOW_OPTIONS_HELP
        "                      (with --srt-cpu, the CPU leg is this run's power/cpu/samples.csv)\n"
        "  -q, --quiet         no warnings about targets, no summary at the end\n");
}

static int parse_duration_opt(const char *opt, const char *arg, int64_t min_ns, int64_t max_ns,
                              int64_t *ret)
{
    char name[64];
    snprintf(name, sizeof name, "collect: %s", opt);
    return cli_duration(name, arg, min_ns, max_ns, ret);
}

/* Returns 0, 1 after --help, -1 after an error (printed). */
static int parse_args(struct collect_opts *o, int argc, char **argv)
{
    enum {
        OPT_TARGET = 256,
        OPT_TARGETS_FILE,
        OPT_SLURM,
        OPT_PORT,
        OPT_INTERVAL_C,
        OPT_TIMEOUT,
        OPT_DURATION,
        OPT_REQUIRED,
        OPT_SRT_CPU,
    };
    static const struct option longopts[] = {
        {"target", required_argument, NULL, OPT_TARGET},
        {"targets-file", required_argument, NULL, OPT_TARGETS_FILE},
        {"slurm", no_argument, NULL, OPT_SLURM},
        {"port", required_argument, NULL, OPT_PORT},
        {"output", required_argument, NULL, 'o'},
        {"interval", required_argument, NULL, OPT_INTERVAL_C},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"required", no_argument, NULL, OPT_REQUIRED},
        {"srt-cpu", no_argument, NULL, OPT_SRT_CPU},
        FOLLOW_LONG_OPTIONS,
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* targets are parsed after every option is read, so that --port applies to all */
    const char *specs[COLLECT_TARGETS_MAX];
    size_t nspecs = 0;
    const char *files[64];
    size_t nfiles = 0;
    bool slurm = false;
    unsigned port = COLLECT_DEFAULT_PORT;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "+qvho:", longopts, "collect")) != -1) {
        int fh = follow_opt_handle(&o->follow, "collect", c, optarg);
        if (fh < 0)
            return -1;
        if (fh > 0)
            continue;
        switch (c) {
        case OPT_TARGET:
            if (nspecs == COLLECT_TARGETS_MAX) {
                cli_error("collect: more than %d --target", COLLECT_TARGETS_MAX);
                return -1;
            }
            specs[nspecs++] = optarg;
            break;
        case OPT_TARGETS_FILE:
            if (nfiles == sizeof files / sizeof files[0]) {
                cli_error("collect: more than 64 --targets-file");
                return -1;
            }
            files[nfiles++] = optarg;
            break;
        case OPT_SLURM:
            slurm = true;
            break;
        case OPT_PORT: {
            uint64_t v;
            if (parse_u64(optarg, &v) < 0 || v < 1 || v > 65535) {
                cli_error("collect: --port: '%s' is not a port (1..65535)", optarg);
                return -1;
            }
            port = (unsigned)v;
            break;
        }
        case 'o':
            o->out_dir = optarg;
            break;
        case OPT_INTERVAL_C:
            if (parse_duration_opt("--interval", optarg, 10 * NS_PER_MS, 3600 * NS_PER_S,
                                   &o->interval_ns) < 0)
                return -1;
            break;
        case OPT_TIMEOUT:
            if (parse_duration_opt("--timeout", optarg, NS_PER_MS, 3600 * NS_PER_S,
                                   &o->timeout_ns) < 0)
                return -1;
            break;
        case OPT_DURATION:
            if (parse_duration_opt("--duration", optarg, NS_PER_MS, 24 * 3600 * NS_PER_S,
                                   &o->duration_ns) < 0)
                return -1;
            break;
        case OPT_REQUIRED:
            o->required = true;
            break;
        case OPT_SRT_CPU:
            o->srt_cpu = true;
            break;
        case 'q':
            o->verbose = -1;
            break;
        case 'v':
            o->verbose = 1;
            break;
        case 'h':
            help();
            return 1;
        default:
            return -1;
        }
    }
    if (optind < argc) {
        cli_error("collect: unexpected argument '%s' (targets are given with --target)",
                  argv[optind]);
        return -1;
    }
    if (nspecs == 0 && nfiles == 0 && !slurm) {
        cli_error("collect: no targets: give --target HOST:PORT, --targets-file F or --slurm");
        return -1;
    }
    struct carma_err e = {0};
    for (size_t i = 0; i < nspecs; i++)
        if (collect_targets_add(&o->targets, specs[i], port, NULL, "--target: ", &e) < 0) {
            cli_error("collect: %s", e.msg);
            return -1;
        }
    for (size_t i = 0; i < nfiles; i++)
        if (collect_targets_file(&o->targets, files[i], port, &e) < 0) {
            cli_error("collect: %s", e.msg);
            return -1;
        }
    if (slurm && collect_slurm_targets(&o->targets, port, NULL, &e) < 0) {
        cli_error("collect: %s", e.msg);
        return -1;
    }
    return 0;
}

/* ---- HTTP ---- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *user)
{
    struct tgt *t = user;
    size_t n = size * nmemb;
    size_t max = prom_limits_default.max_bytes;
    if (n > max || t->len > max - n) {
        t->too_big = true;
        return 0; /* aborts the transfer (CURLE_WRITE_ERROR) */
    }
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap : BODY_INITIAL_CAP;
        while (cap < t->len + n)
            cap *= 2;
        if (cap > max)
            cap = max;
        char *p = realloc(t->body, cap);
        if (!p)
            return 0;
        t->body = p;
        t->cap = cap;
    }
    memcpy(t->body + t->len, data, n);
    t->len += n;
    return n;
}

/* Makes the multi handle and one easy handle per target. Returns 0 or -1 (printed). */
static int http_init(struct collector *c)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        cli_error("collect: cannot initialize libcurl");
        return -1;
    }
    c->multi = curl_multi_init();
    c->headers = curl_slist_append(NULL, "Accept: text/plain;version=0.0.4;q=1,*/*;q=0.1");
    if (!c->multi || !c->headers) {
        cli_error("collect: cannot initialize libcurl: out of memory");
        return -1;
    }
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)(c->n + 8));
    long timeout_ms = (long)((c->req_timeout_ns + NS_PER_MS - 1) / NS_PER_MS);
    for (size_t i = 0; i < c->n; i++) {
        struct tgt *t = &c->tg[i];
        CURL *h = curl_easy_init();
        if (!h) {
            cli_error("collect: cannot initialize libcurl: out of memory");
            return -1;
        }
        t->easy = h;
        curl_easy_setopt(h, CURLOPT_URL, t->t->url);
        curl_easy_setopt(h, CURLOPT_PRIVATE, t);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t->errbuf);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)prom_limits_default.max_bytes);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "carma-collect/" CARMA_VERSION);
        curl_easy_setopt(h, CURLOPT_PROXY, ""); /* exporters are reached directly */
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
#if LIBCURL_VERSION_NUM >= 0x075700
        /* a request abandoned while its host name is being resolved must not wait for the
         * resolver thread (the cycle would block as long as the DNS lookup does): the thread
         * is detached and ends by itself */
        curl_easy_setopt(h, CURLOPT_QUICK_EXIT, 1L);
#endif
    }
    return 0;
}

static void http_done(struct collector *c)
{
    for (size_t i = 0; c->tg && i < c->n; i++) {
        if (c->tg[i].easy) {
            if (c->tg[i].active)
                curl_multi_remove_handle(c->multi, c->tg[i].easy);
            curl_easy_cleanup(c->tg[i].easy);
        }
    }
    if (c->multi)
        curl_multi_cleanup(c->multi);
    curl_slist_free_all(c->headers);
    curl_global_cleanup();
}

/* Collects the transfers that ended. */
static void reap(struct collector *c)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct tgt *t = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        if (!t)
            continue;
        t->result = m->data.result;
        t->done = true;
        t->done_real_ns = time_real_ns();
        curl_multi_remove_handle(c->multi, t->easy);
        t->active = false;
    }
}

/* Runs the requests of the targets due in this cycle until all ended or deadline (mono ns).
 * (curl_multi_poll: with 64 to 256 targets, driving the multi handle through its socket
 * interface on an epoll set measured the same.) */
static void http_cycle(struct collector *c, int64_t deadline)
{
    int running = 0;
    for (size_t i = 0; i < c->n; i++) {
        struct tgt *t = &c->tg[i];
        if (!t->scraped)
            continue;
        t->len = 0;
        t->too_big = false;
        t->done = false;
        t->errbuf[0] = '\0';
        if (curl_multi_add_handle(c->multi, t->easy) != CURLM_OK) {
            t->done = true;
            t->result = CURLE_OUT_OF_MEMORY;
            t->done_real_ns = time_real_ns();
            continue;
        }
        t->active = true;
        running++;
    }
    while (running > 0) {
        curl_multi_perform(c->multi, &running);
        reap(c);
        if (running == 0)
            break;
        int64_t left = deadline - time_mono_ns();
        if (left <= 0)
            break;
        int ms = (int)((left + NS_PER_MS - 1) / NS_PER_MS);
        curl_multi_poll(c->multi, NULL, 0, ms > 1000 ? 1000 : ms, NULL);
    }
    /* abandoned at the deadline */
    for (size_t i = 0; i < c->n; i++) {
        struct tgt *t = &c->tg[i];
        if (!t->active)
            continue;
        curl_multi_remove_handle(c->multi, t->easy);
        t->active = false;
        t->done = false;
    }
}

/* ---- outcomes ---- */

static void node_label_seen(struct tgt *t, const char *label)
{
    if (!label || (t->node_label && strcmp(t->node_label, label) == 0))
        return;
    char *copy = strdup(label);
    if (!copy)
        return;
    free(t->node_label);
    t->node_label = copy;
}

/* The node of a target's rows: a node given (Slurm's name), else what its exporter calls
 * itself (once seen), else the host. */
static const char *node_of(const struct tgt *t)
{
    return !t->t->node_given && t->node_label ? t->node_label : t->t->node;
}

static void failed(struct collector *c, struct tgt *t, uint64_t seq, const char *why)
{
    t->errors++;
    t->failed_in_row++;
    /* the text may quote what a peer sent: no control characters reach the terminal */
    snprintf(t->last_error, sizeof t->last_error, "%s", why);
    for (char *p = t->last_error; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    t->last_error_real = time_real_ns();
    collect_backoff_record(&t->backoff, seq, false, c->max_skip);
    if (!t->down) {
        t->down = true;
        t->down_since_real = t->last_error_real;
        if (c->o->verbose >= 0)
            cli_error("collect: warning: %s (node %s) is down: %s; retrying with backoff "
                      "(rows with blank cells meanwhile)",
                      t->t->name, node_of(t), t->last_error);
    }
}

static void succeeded(struct collector *c, struct tgt *t, uint64_t seq)
{
    collect_backoff_record(&t->backoff, seq, true, c->max_skip);
    if (t->down) {
        if (c->o->verbose >= 0)
            cli_error("collect: %s (node %s) is back after %llu failed scrape%s (%.1f s)",
                      t->t->name, node_of(t), (unsigned long long)t->failed_in_row,
                      t->failed_in_row == 1 ? "" : "s",
                      (double)(time_real_ns() - t->down_since_real) / 1e9);
        t->down = false;
    }
    t->failed_in_row = 0;
}

/* Why a finished transfer is not a usable body, or NULL when it is. */
static const char *transfer_error(struct tgt *t, char *buf, size_t cap, int64_t timeout_ns)
{
    if (!t->done) {
        snprintf(buf, cap, "no answer within %.3g s (request abandoned)", (double)timeout_ns / 1e9);
        return buf;
    }
    if (t->too_big || t->result == CURLE_FILESIZE_EXCEEDED) {
        snprintf(buf, cap, "body larger than %zu bytes", prom_limits_default.max_bytes);
        return buf;
    }
    if (t->result != CURLE_OK) {
        snprintf(buf, cap, "%s", t->errbuf[0] ? t->errbuf : curl_easy_strerror(t->result));
        return buf;
    }
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200) {
        snprintf(buf, cap, "HTTP status %ld", code);
        return buf;
    }
    return NULL;
}

/* Handles one target's outcome of cycle seq: its rows, its state. Returns -1 when it failed. */
static int outcome(struct collector *c, size_t i, uint64_t seq, int64_t cycle_real)
{
    struct tgt *t = &c->tg[i];
    if (!t->scraped) {
        t->skipped++;
        collect_out_target(c->out, cycle_real, node_of(t), false, t->t->name, NULL, NULL);
        return t->down ? -1 : 0;
    }
    t->scrapes++;
    char why[LAST_ERROR_MAX];
    const char *err = transfer_error(t, why, sizeof why, c->waited_ns);
    int64_t ts = t->done ? t->done_real_ns : time_real_ns();
    struct prom_doc doc = {0};
    if (!err) {
        struct carma_err pe = {0};
        int r = prom_parse(t->body, t->len, NULL, &doc, &pe);
        if (r < 0) {
            snprintf(why, sizeof why, "unparseable body: %s", pe.msg[0] ? pe.msg : strerror(-r));
            err = why;
        }
    }
    if (err) {
        failed(c, t, seq, err);
        collect_out_target(c->out, ts, node_of(t), false, t->t->name, NULL, NULL);
        /* srt-slurm counts a poll that answered, not one abandoned at the deadline */
        if (c->cpu && t->done)
            srt_cpu_node(c->cpu, i, ts, NULL);
        prom_doc_free(&doc);
        return -1;
    }
    struct collect_scrape_info info;
    collect_out_target(c->out, ts, node_of(t), !t->t->node_given, t->t->name, &doc, &info);
    node_label_seen(t, info.node_label);
    /* an exporter that has just started may not have a reading yet: only a target that
     * stays without one is worth a warning */
    t->empty_in_row = info.power_rows == 0 && !info.srt_cpu ? t->empty_in_row + 1 : 0;
    if (t->empty_in_row == EMPTY_WARN_SCRAPES && !t->warned_empty && c->o->verbose >= 0) {
        cli_error("collect: warning: %s (node %s) serves no carma_power_watts (nor srt-slurm's "
                  "cpu_power_*_watts) samples in %d scrapes",
                  t->t->name, node_of(t), EMPTY_WARN_SCRAPES);
        t->warned_empty = true;
    }
    if (info.negative && !t->negative && c->o->verbose >= 0)
        cli_error("collect: warning: %s (node %s) serves power below 0 W: no reading, written as "
                  "a missing value (each counted; the count is in the last line)",
                  t->t->name, node_of(t));
    t->negative += info.negative;
    if (c->cpu) {
        srt_cpu_parse(&doc, c->cpu_scrape);
        srt_cpu_node(c->cpu, i, ts, c->cpu_scrape);
    }
    prom_doc_free(&doc);
    succeeded(c, t, seq);
    return 0;
}

/* ---- the run directory ---- */

/* Claims -o DIR (new, or holding none of a run's files) or makes a new collect_<stamp>. 0, 2 when
 * DIR holds something (refused, printed), 1 on another error (printed). */
static int make_dir(struct collector *c)
{
    const char *dir = c->o->out_dir;
    if (dir) {
        /* new, or without a run's files, claimed: an earlier run is never overwritten (2: refused)
         */
        bool created;
        static const char *const outputs[] = {OUTDIR_CLAIM, "samples.csv", "nodes.csv", "power",
                                              NULL};
        int r = outdir_claim("collect", "-o", dir, outputs, &created);
        if (r != 0)
            return r;
        snprintf(c->dir, sizeof c->dir, "%s", dir);
        return 0;
    }
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    for (int k = 1; k < 1000; k++) {
        if (k == 1)
            snprintf(c->dir, sizeof c->dir, "collect_%s", stamp);
        else
            snprintf(c->dir, sizeof c->dir, "collect_%s-%d", stamp, k);
        if (mkdir(c->dir, FILE_DIR_MODE) == 0)
            return 0;
        if (errno != EEXIST) {
            cli_error("collect: cannot create %s: %s", c->dir, strerror(errno));
            return 1;
        }
    }
    cli_error("collect: cannot create collect_%s: every name up to -999 exists", stamp);
    return 1;
}

static json_t *jstr_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *j_seconds(int64_t real_ns)
{
    return json_real((double)(real_ns / NS_PER_US) / 1e6);
}

static const char *status_of(const struct collector *c, bool final, bool fatal)
{
    if (!final)
        return "running";
    if (fatal || !c->ran)
        return "failed";
    /* without --duration a signal is the ordinary end of the run; with one, it cut it short */
    if (c->stop.sig && c->o->duration_ns)
        return "interrupted";
    bool gaps = c->missed || c->write_failed || c->cpu_write_failed;
    for (size_t i = 0; i < c->n && !gaps; i++)
        gaps = c->tg[i].errors || c->tg[i].skipped;
    return gaps ? "incomplete" : "complete";
}

/* Writes manifest.json (atomically). Returns 0 or -1 (printed). */
static int write_manifest(struct collector *c, bool final, bool fatal)
{
    json_t *m = json_object();
    char host[256] = "";
    if (gethostname(host, sizeof host) < 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    json_object_set_new(m, "schema_version", json_integer(1));
    json_object_set_new(m, "producer", json_string("carma collect"));
    json_object_set_new(m, "carma_version", json_string(CARMA_VERSION));
    json_object_set_new(m, "host", json_string(host));
    json_t *sv = json_object();
    json_object_set_new(sv, "samples_csv", json_integer(1));
    json_object_set_new(sv, "nodes_csv", json_integer(1));
    if (c->o->srt_cpu)
        json_object_set_new(sv, "srt_cpu_samples_csv", json_integer(1));
    json_object_set_new(m, "schema_versions", sv);
    json_t *opt = json_object();
    json_object_set_new(opt, "interval_s", json_real((double)c->o->interval_ns / 1e9));
    json_object_set_new(opt, "timeout_s", json_real((double)c->req_timeout_ns / 1e9));
    json_object_set_new(opt, "duration_s",
                        c->o->duration_ns ? json_real((double)c->o->duration_ns / 1e9)
                                          : json_null());
    json_object_set_new(opt, "required", json_boolean(c->o->required));
    json_object_set_new(opt, "srt_cpu", json_boolean(c->o->srt_cpu));
    json_object_set_new(opt, "max_body_bytes",
                        json_integer((json_int_t)prom_limits_default.max_bytes));
    json_object_set_new(opt, "backoff_max_cycles", json_integer((json_int_t)c->max_skip));
    json_object_set_new(m, "options", opt);
    const char *job = getenv("SLURM_JOB_ID");
    json_object_set_new(m, "job_id", jstr_or_null(job && *job ? job : NULL));

    json_t *targets = json_array(), *nodes = json_array();
    for (size_t i = 0; i < c->n; i++) {
        const struct tgt *t = &c->tg[i];
        json_t *o = json_object();
        json_object_set_new(o, "target", json_string(t->t->name));
        json_object_set_new(o, "url", json_string(t->t->url));
        json_object_set_new(o, "node", json_string(t->t->node));
        json_object_set_new(o, "node_label", jstr_or_null(t->node_label));
        json_object_set_new(o, "scrape_count", json_integer((json_int_t)t->scrapes));
        json_object_set_new(o, "error_count", json_integer((json_int_t)t->errors));
        json_object_set_new(o, "skipped_count", json_integer((json_int_t)t->skipped));
        json_object_set_new(o, "last_error",
                            jstr_or_null(t->last_error_real ? t->last_error : NULL));
        json_object_set_new(o, "last_error_unix",
                            t->last_error_real ? j_seconds(t->last_error_real) : json_null());
        json_object_set_new(o, "up", t->scrapes ? json_boolean(!t->down) : json_null());
        json_array_append_new(targets, o);
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(c->tg[k].t->node, t->t->node) == 0;
        if (!seen)
            json_array_append_new(nodes, json_string(t->t->node));
    }
    json_object_set_new(m, "targets", targets);
    json_object_set_new(m, "nodes", nodes);
    json_object_set_new(m, "started_unix", j_seconds(c->start_real));
    json_object_set_new(m, "stopped_unix", final ? j_seconds(c->stop_real) : json_null());
    json_object_set_new(m, "cycles", json_integer((json_int_t)c->cycles));
    json_object_set_new(m, "missed_cycles", json_integer((json_int_t)c->missed));
    json_object_set_new(m, "sample_row_count",
                        json_integer((json_int_t)(c->out ? collect_out_rows(c->out) : c->rows)));
    json_object_set_new(m, "status", json_string(status_of(c, final, fatal)));
    const char *why = NULL;
    if (final)
        why = fatal               ? "required_target_down"
              : c->interrupted    ? "signal"
              : c->o->duration_ns ? "duration"
                                  : "error";
    json_object_set_new(m, "stop_reason", jstr_or_null(why));
    json_object_set_new(m, "interruption", interruption_json(&c->stop));
    json_t *rc = json_array();
    if (final) {
        bool errs = false;
        for (size_t i = 0; i < c->n; i++)
            errs |= c->tg[i].errors || c->tg[i].skipped;
        if (fatal)
            json_array_append_new(rc, json_string("required_target_down"));
        if (errs)
            json_array_append_new(rc, json_string("target_errors"));
        if (c->missed)
            json_array_append_new(rc, json_string("cycles_missed"));
        if (c->write_failed)
            json_array_append_new(rc, json_string("samples_write_failed"));
        if (c->cpu_write_failed)
            json_array_append_new(rc, json_string("srt_cpu_write_failed"));
    }
    json_object_set_new(m, "reason_codes", rc);
    int r = json_write_file(m, c->manifest_path);
    json_decref(m);
    if (r < 0) {
        cli_error("collect: cannot write %s: %s", c->manifest_path, strerror(-r));
        return -1;
    }
    return 0;
}

/* ---- the clock ---- */

/* Waits until mono time t or a signal of set. Returns the signal that came, or 0. */
static int wait_until(int64_t t, const sigset_t *set)
{
    for (;;) {
        int64_t left = t - time_mono_ns();
        if (left <= 0)
            return 0;
        struct timespec ts = {(time_t)(left / NS_PER_S), (long)(left % NS_PER_S)};
        int s = sigtimedwait(set, NULL, &ts);
        if (s > 0)
            return s;
        if (s < 0 && errno != EAGAIN && errno != EINTR)
            return 0;
    }
}

/* A signal of set pending? Takes every one; returns the first, or 0. */
static int signal_pending(const sigset_t *set)
{
    sigset_t pend;
    if (sigpending(&pend) < 0)
        return 0;
    bool any = false;
    for (int s = 1; s < NSIG; s++)
        if (sigismember(set, s) == 1 && sigismember(&pend, s) == 1)
            any = true;
    int first = 0;
    if (any) {
        struct timespec zero = {0, 0};
        int s;
        while ((s = sigtimedwait(set, NULL, &zero)) > 0)
            if (!first)
                first = s;
    }
    return first;
}

/* Notes the signal that ends the run. */
static void stopped_by(struct collector *c, int sig)
{
    c->interrupted = true;
    interruption_note(&c->stop, sig);
}

/* Runs cycle seq (its slot starts at mono tick). Returns the number of targets that failed. */
static size_t run_cycle(struct collector *c, uint64_t seq, int64_t tick)
{
    int64_t cycle_real = time_real_ns();
    for (size_t i = 0; i < c->n; i++)
        c->tg[i].scraped = collect_backoff_due(&c->tg[i].backoff, seq);
    /* the deadline keeps to the slot: a cycle that starts late has less time */
    int64_t deadline = tick + c->req_timeout_ns + 2 * NS_PER_MS;
    c->waited_ns = deadline - time_mono_ns();
    if (c->waited_ns < 0)
        c->waited_ns = 0;
    http_cycle(c, deadline);

    size_t failures = 0;
    collect_out_cycle_begin(c->out, seq);
    if (c->cpu)
        srt_cpu_cycle_begin(c->cpu);
    for (size_t i = 0; i < c->n; i++)
        failures += outcome(c, i, seq, cycle_real) < 0;
    struct carma_err e = {0};
    if (collect_out_cycle_end(c->out, &e) < 0) {
        c->write_failed = true;
        if (!c->write_failing)
            cli_error("collect: %s; trying again every cycle", e.msg);
        c->write_failing = true;
    } else if (c->write_failing) {
        c->write_failing = false;
        if (c->o->verbose >= 0)
            cli_error("collect: writing the samples again (cycle %llu)", (unsigned long long)seq);
    }
    if (c->cpu) {
        if (srt_cpu_cycle_end(c->cpu, &e) < 0) {
            c->cpu_write_failed = true;
            if (!c->cpu_write_failing)
                cli_error("collect: %s; trying again every cycle", e.msg);
            c->cpu_write_failing = true;
        } else {
            c->cpu_write_failing = false;
        }
    }
    c->cycles++;
    return failures;
}

/* ---- the command ---- */

int cmd_collect(int argc, char **argv)
{
    struct collect_opts o = {.interval_ns = DEFAULT_INTERVAL_NS};
    struct collector c = {.o = &o};
    int ret = 1;
    bool fatal = false;
    sigset_t sigs, old_mask;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    bool masked = false;

    int pr = parse_args(&o, argc, argv);
    if (pr != 0) {
        collect_targets_free(&o.targets);
        return pr > 0 ? 0 : 2;
    }
    c.n = o.targets.n;
    /* from here on SIGINT, SIGTERM and SIGHUP are taken by sigtimedwait between cycles */
    if (sigprocmask(SIG_BLOCK, &sigs, &old_mask) == 0) {
        masked = true;
        launcher_signals_take(&sigs); /* also when inherited ignored */
    }
    /* The bodies' parses and libcurl's transfers allocate and free the same sizes every cycle:
     * keep the heap (no trimming, no mmap for blocks up to 32 MiB) instead of giving pages
     * back to the kernel and faulting them in again each cycle. */
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* past a file size limit a write fails (EFBIG), as on a full disk */
    int64_t timeout = o.timeout_ns ? o.timeout_ns : MAX_TIMEOUT_NS;
    int64_t cap = o.interval_ns - o.interval_ns / 20; /* the cycle's own work fits in the rest */
    c.req_timeout_ns = timeout < cap ? timeout : cap;
    c.max_skip = (uint64_t)((BACKOFF_MAX_NS + o.interval_ns - 1) / o.interval_ns);
    c.tg = calloc(c.n, sizeof *c.tg);
    c.cpu_scrape = o.srt_cpu ? calloc(1, sizeof *c.cpu_scrape) : NULL;
    if (!c.tg || (o.srt_cpu && !c.cpu_scrape)) {
        cli_error("collect: out of memory");
        goto out;
    }
    for (size_t i = 0; i < c.n; i++)
        c.tg[i].t = &o.targets.t[i];

    int md = make_dir(&c);
    if (md != 0) {
        ret = md;
        goto out;
    }
    printf("%s\n", c.dir);
    fflush(stdout);
    snprintf(c.manifest_path, sizeof c.manifest_path, "%s/manifest.json", c.dir);

    struct carma_err e = {0};
    c.out = collect_out_open(c.dir, &e);
    if (!c.out) {
        cli_error("collect: %s", e.msg);
        goto out;
    }
    if (o.srt_cpu) {
        char cpu_dir[PATH_MAX + 16];
        snprintf(cpu_dir, sizeof cpu_dir, "%s/power/cpu", c.dir);
        const char **nodes = calloc(c.n, sizeof *nodes);
        if (!nodes) {
            cli_error("collect: out of memory");
            goto out;
        }
        for (size_t i = 0; i < c.n; i++)
            nodes[i] = o.targets.t[i].node;
        c.cpu = srt_cpu_open(cpu_dir, nodes, c.n, &e);
        free(nodes);
        if (!c.cpu) {
            cli_error("collect: %s", e.msg);
            goto out;
        }
    }
    c.start_real = time_real_ns();
    if (write_manifest(&c, false, false) < 0)
        goto out;
    if (http_init(&c) < 0)
        goto out;

    char own_cpu[PATH_MAX + 32];
    snprintf(own_cpu, sizeof own_cpu, "%s/power/cpu/samples.csv", c.dir);
    if (follower_start(&c.follower, &o.follow, o.srt_cpu ? own_cpu : NULL, "collect") < 0)
        goto out;
    c.ran = true;
    c.start_mono = time_mono_ns();
    uint64_t seq = 0;
    for (;;) {
        int64_t tick = c.start_mono + (int64_t)seq * o.interval_ns;
        if (o.duration_ns && tick - c.start_mono >= o.duration_ns)
            break;
        int sig = wait_until(tick, &sigs);
        if (sig) {
            stopped_by(&c, sig);
            break;
        }
        size_t failures = run_cycle(&c, seq, tick);
        if (seq == 0 && o.required && failures) {
            for (size_t i = 0; i < c.n; i++)
                if (c.tg[i].down)
                    cli_error("collect: required target %s (node %s) is down: %s", c.tg[i].t->name,
                              c.tg[i].t->node, c.tg[i].last_error);
            fatal = true;
            break;
        }
        if ((sig = signal_pending(&sigs))) {
            stopped_by(&c, sig);
            break;
        }
        /* the next slot; one that has already passed whole is missed */
        uint64_t next = seq + 1;
        int64_t now = time_mono_ns();
        uint64_t slot = (uint64_t)((now - c.start_mono) / o.interval_ns);
        if (slot > next) {
            c.missed += slot - next;
            next = slot;
        }
        seq = next;
    }
    c.stop_real = time_real_ns();
    ret = fatal ? 1 : 0;

out:
    if (c.out) {
        struct carma_err ce = {0};
        c.rows = collect_out_rows(c.out);
        int cr = collect_out_close(c.out, &ce);
        c.out = NULL;
        if (cr < 0) {
            cli_error("collect: %s", ce.msg);
            c.write_failed = true;
        }
    }
    if (c.cpu) {
        struct carma_err ce = {0};
        if (srt_cpu_finish(c.cpu, &ce) < 0) {
            cli_error("collect: %s", ce.msg);
            c.cpu_write_failed = true;
        }
    }
    /* after the samples are flushed: the final poll sees every row */
    if (follower_stop(&c.follower, "collect", o.verbose < 0) < 0)
        c.report_failed = true;
    if (c.start_real) {
        if (!c.stop_real)
            c.stop_real = time_real_ns();
        if (write_manifest(&c, true, fatal) < 0 && ret == 0)
            ret = 1;
    }
    if (ret == 0 && (c.write_failed || c.cpu_write_failed || c.report_failed))
        ret = 1;
    if (c.start_real && o.verbose >= 0 && !fatal) {
        uint64_t scrapes = 0, errors = 0, negative = 0;
        for (size_t i = 0; i < c.n; i++) {
            scrapes += c.tg[i].scrapes;
            errors += c.tg[i].errors;
            negative += c.tg[i].negative;
        }
        char neg[64] = "";
        if (negative)
            snprintf(neg, sizeof neg, ", %llu negative power readings dropped",
                     (unsigned long long)negative);
        fprintf(stderr,
                "carma: collect: %llu cycles of %zu target%s, %llu scrapes, %llu failed%s%s; "
                "%s\n",
                (unsigned long long)c.cycles, c.n, c.n == 1 ? "" : "s", (unsigned long long)scrapes,
                (unsigned long long)errors, c.missed ? ", some cycles missed" : "", neg, c.dir);
    }
    if (c.multi || c.headers)
        http_done(&c);
    for (size_t i = 0; c.tg && i < c.n; i++) {
        free(c.tg[i].body);
        free(c.tg[i].node_label);
    }
    free(c.tg);
    free(c.cpu_scrape);
    collect_targets_free(&o.targets);
    if (masked) {
        (void)signal_pending(&sigs); /* taken: a signal during the shutdown changes nothing */
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
    }
    return ret;
}
