/*
 * collect/scrape: the collector's scrape engine: the libcurl multi handle, the clock that
 * schedules a cycle per slot, each target's state across cycles (its body buffer, its backoff,
 * its counts, down or up), the outcome of each scrape, and manifest.json's content.
 * collect/scrape.h says how a run goes.
 */
#include "collect/scrape.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect/promparse.h"
#include "core/timeutil.h"

#define MAX_TIMEOUT_NS     (5 * NS_PER_S)
#define BACKOFF_MAX_NS     (30 * NS_PER_S)
#define BODY_INITIAL_CAP   (16u << 10)
#define LAST_ERROR_MAX     256
#define EMPTY_WARN_SCRAPES 3

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
    int64_t start_real_ns; /* its request of this cycle started */
    int64_t done_real_ns;  /* and settled */
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

struct scrape {
    struct scrape_opts o;
    const struct collect_targets *targets;
    size_t n;
    struct tgt *tg;
    bool curl_global; /* curl_global_init done */
    CURLM *multi;
    struct curl_slist *headers;
    char user_agent[64];
    int64_t req_timeout_ns;
    int64_t waited_ns; /* how long this cycle's requests had */
    uint64_t max_skip;

    struct collect_out *out;
    void *cpu;                /* o.srt_cpu's writer */
    void *gpu;                /* o.srt_gpu's writer */
    struct dcgm_scrape *dcgm; /* the dcgm-exporter body being handled */
    bool have_end;
    struct scrape_end end; /* scrape_set_end's */

    int64_t start_mono, start_real, stop_real;
    uint64_t cycles, missed;
    bool write_failing; /* samples.csv: warned, not yet written again */
    bool write_failed;  /* ever */
    bool cpu_write_failing, cpu_write_failed;
    bool gpu_write_failing, gpu_write_failed;
    bool ran;      /* the clock started (else the run failed before its first cycle) */
    uint64_t rows; /* samples.csv rows, kept when it is closed */
};

/* Hands one line to the warn callback. */
__attribute__((format(printf, 2, 3))) static void warnf(struct scrape *c, const char *fmt, ...)
{
    if (!c->o.warn)
        return;
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        c->o.warn(c->o.warn_cls, small);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        c->o.warn(c->o.warn_cls, small); /* cut short rather than lost */
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    c->o.warn(c->o.warn_cls, big);
    free(big);
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

int scrape_http_init(struct scrape *c, struct carma_err *e)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return carma_err_set(e, -ENOMEM, "cannot initialize libcurl");
    c->curl_global = true;
    c->multi = curl_multi_init();
    c->headers = curl_slist_append(NULL, "Accept: text/plain;version=0.0.4;q=1,*/*;q=0.1");
    if (!c->multi || !c->headers)
        return carma_err_set(e, -ENOMEM, "cannot initialize libcurl: out of memory");
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)(c->n + 8));
    long timeout_ms = (long)((c->req_timeout_ns + NS_PER_MS - 1) / NS_PER_MS);
    for (size_t i = 0; i < c->n; i++) {
        struct tgt *t = &c->tg[i];
        CURL *h = curl_easy_init();
        if (!h)
            return carma_err_set(e, -ENOMEM, "cannot initialize libcurl: out of memory");
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
        curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
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

static void http_done(struct scrape *c)
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
    if (c->curl_global)
        curl_global_cleanup();
}

/* Collects the transfers that ended. */
static void reap(struct scrape *c)
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
static void http_cycle(struct scrape *c, int64_t deadline)
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
        t->start_real_ns = time_real_ns();
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

static void failed(struct scrape *c, struct tgt *t, uint64_t seq, const char *why)
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
        if (!c->o.quiet)
            warnf(c,
                  "collect: warning: %s (node %s) is down: %s; retrying with backoff "
                  "(rows with blank cells meanwhile)",
                  t->t->name, node_of(t), t->last_error);
    }
}

static void succeeded(struct scrape *c, struct tgt *t, uint64_t seq)
{
    collect_backoff_record(&t->backoff, seq, true, c->max_skip);
    if (t->down) {
        if (!c->o.quiet)
            warnf(c, "collect: %s (node %s) is back after %llu failed scrape%s (%.1f s)",
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
static int outcome(struct scrape *c, size_t i, uint64_t seq, int64_t cycle_real)
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
        if (c->cpu && t->done && !t->t->dcgm)
            c->o.srt_cpu->node(c->cpu, i, ts, NULL);
        prom_doc_free(&doc);
        return -1;
    }
    struct collect_scrape_info info;
    bool dcgm = t->t->dcgm || dcgm_is_body(&doc);
    if (dcgm) {
        dcgm_parse(&doc, c->dcgm);
        collect_out_dcgm(c->out, ts, node_of(t), t->t->name, c->dcgm, &info);
    } else {
        collect_out_target(c->out, ts, node_of(t), !t->t->node_given, t->t->name, &doc, &info);
        node_label_seen(t, info.node_label);
    }
    /* an exporter that has just started may not have a reading yet: only a target that
     * stays without one is worth a warning */
    t->empty_in_row = info.power_rows == 0 && !info.srt_cpu ? t->empty_in_row + 1 : 0;
    if (t->empty_in_row == EMPTY_WARN_SCRAPES && !t->warned_empty && !c->o.quiet) {
        if (dcgm)
            warnf(c,
                  "collect: warning: %s (node %s) serves no dcgm-exporter GPU readings "
                  "(DCGM_FI_DEV_POWER_USAGE, ...{gpu=...}) in %d scrapes",
                  t->t->name, node_of(t), EMPTY_WARN_SCRAPES);
        else
            warnf(c,
                  "collect: warning: %s (node %s) serves no carma_power_watts (nor srt-slurm's "
                  "cpu_power_*_watts) samples in %d scrapes",
                  t->t->name, node_of(t), EMPTY_WARN_SCRAPES);
        t->warned_empty = true;
    }
    if (info.negative && !t->negative && !c->o.quiet)
        warnf(c,
              "collect: warning: %s (node %s) serves power below 0 W: no reading, written as "
              "a missing value (each counted; the count is in the last line)",
              t->t->name, node_of(t));
    t->negative += info.negative;
    /* a dcgm-exporter is no CPU leg's exporter: its polls are not srt-slurm's CPU polls */
    if (c->cpu && !dcgm)
        c->o.srt_cpu->node(c->cpu, i, ts, &doc);
    if (c->gpu)
        c->o.srt_gpu->node(c->gpu, i, t->start_real_ns, ts, &doc, dcgm ? c->dcgm : NULL);
    prom_doc_free(&doc);
    succeeded(c, t, seq);
    return 0;
}

/* ---- the manifest ---- */

static json_t *jstr_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *j_seconds(int64_t real_ns)
{
    return json_real((double)(real_ns / NS_PER_US) / 1e6);
}

static const char *status_of(const struct scrape *c, const struct scrape_end *end)
{
    if (!end->final)
        return "running";
    if (end->fatal || !c->ran)
        return "failed";
    /* without --duration a signal is the ordinary end of the run; with one, it cut it short */
    if (end->sig && c->o.duration_ns)
        return "interrupted";
    bool gaps = c->missed || c->write_failed || c->cpu_write_failed || c->gpu_write_failed;
    for (size_t i = 0; i < c->n && !gaps; i++)
        gaps = c->tg[i].errors || c->tg[i].skipped;
    return gaps ? "incomplete" : "complete";
}

json_t *scrape_manifest(struct scrape *c, const struct scrape_end *end, json_t *interruption)
{
    bool final = end->final, fatal = end->fatal;
    if (final && !c->stop_real)
        c->stop_real = time_real_ns();
    json_t *m = json_object();
    if (!m) {
        json_decref(interruption);
        return NULL;
    }
    char host[256] = "";
    if (gethostname(host, sizeof host) < 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    json_object_set_new(m, "schema_version", json_integer(1));
    json_object_set_new(m, "producer", json_string("carma collect"));
    json_object_set_new(m, "carma_version", json_string(c->o.version));
    json_object_set_new(m, "host", json_string(host));
    json_t *sv = json_object();
    json_object_set_new(sv, "samples_csv", json_integer(1));
    json_object_set_new(sv, "nodes_csv", json_integer(1));
    if (c->o.srt_cpu)
        json_object_set_new(sv, "srt_cpu_samples_csv", json_integer(1));
    if (c->o.srt_gpu)
        json_object_set_new(sv, "srt_gpu_samples_csv", json_integer(2));
    json_object_set_new(m, "schema_versions", sv);
    json_t *opt = json_object();
    json_object_set_new(opt, "interval_s", json_real((double)c->o.interval_ns / 1e9));
    json_object_set_new(opt, "timeout_s", json_real((double)c->req_timeout_ns / 1e9));
    json_object_set_new(opt, "duration_s",
                        c->o.duration_ns ? json_real((double)c->o.duration_ns / 1e9) : json_null());
    json_object_set_new(opt, "required", json_boolean(c->o.required));
    json_object_set_new(opt, "srt_cpu", json_boolean(c->o.srt_cpu != NULL));
    json_object_set_new(opt, "srt_gpu", json_boolean(c->o.srt_gpu != NULL));
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
        json_object_set_new(o, "kind", json_string(t->t->dcgm ? "dcgm" : "exporter"));
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
    json_object_set_new(m, "status", json_string(status_of(c, end)));
    const char *why = NULL;
    if (final)
        why = fatal              ? "required_target_down"
              : end->sig         ? "signal"
              : c->o.duration_ns ? "duration"
                                 : "error";
    json_object_set_new(m, "stop_reason", jstr_or_null(why));
    json_object_set_new(m, "interruption", interruption ? interruption : json_null());
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
        if (c->gpu_write_failed)
            json_array_append_new(rc, json_string("srt_gpu_write_failed"));
    }
    json_object_set_new(m, "reason_codes", rc);
    return m;
}

/* ---- the clock ---- */

int scrape_signal_pending(const sigset_t *set)
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

/* An srt sink's cycle end r (e its error): a failure is remembered in *failed and warned of
 * once when it begins (*failing: while it lasts). */
static void sink_cycle_ended(struct scrape *c, int r, const struct carma_err *e, bool *failed,
                             bool *failing)
{
    if (r < 0) {
        *failed = true;
        if (!*failing)
            warnf(c, "collect: %s; trying again every cycle", e->msg);
        *failing = true;
    } else {
        *failing = false;
    }
}

/* Runs cycle seq (its slot starts at mono tick). Returns the number of targets that failed. */
static size_t run_cycle(struct scrape *c, uint64_t seq, int64_t tick)
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
        c->o.srt_cpu->cycle_begin(c->cpu);
    if (c->gpu)
        c->o.srt_gpu->cycle_begin(c->gpu, seq);
    for (size_t i = 0; i < c->n; i++)
        failures += outcome(c, i, seq, cycle_real) < 0;
    struct carma_err e = {0};
    if (collect_out_cycle_end(c->out, &e) < 0) {
        c->write_failed = true;
        if (!c->write_failing)
            warnf(c, "collect: %s; trying again every cycle", e.msg);
        c->write_failing = true;
    } else if (c->write_failing) {
        c->write_failing = false;
        if (!c->o.quiet)
            warnf(c, "collect: writing the samples again (cycle %llu)", (unsigned long long)seq);
    }
    if (c->cpu)
        sink_cycle_ended(c, c->o.srt_cpu->cycle_end(c->cpu, &e), &e, &c->cpu_write_failed,
                         &c->cpu_write_failing);
    if (c->gpu)
        sink_cycle_ended(c, c->o.srt_gpu->cycle_end(c->gpu, &e), &e, &c->gpu_write_failed,
                         &c->gpu_write_failing);
    c->cycles++;
    return failures;
}

/* ---- the engine ---- */

struct scrape *scrape_new(const struct collect_targets *ts, const struct scrape_opts *o,
                          struct carma_err *e)
{
    struct scrape *c = calloc(1, sizeof *c);
    if (!c) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    c->o = *o;
    c->targets = ts;
    c->n = ts->n;
    snprintf(c->user_agent, sizeof c->user_agent, "carma-collect/%s", o->version);
    int64_t timeout = o->timeout_ns ? o->timeout_ns : MAX_TIMEOUT_NS;
    int64_t cap = o->interval_ns - o->interval_ns / 20; /* the cycle's own work fits in the rest */
    c->req_timeout_ns = timeout < cap ? timeout : cap;
    c->max_skip = (uint64_t)((BACKOFF_MAX_NS + o->interval_ns - 1) / o->interval_ns);
    c->tg = calloc(c->n, sizeof *c->tg);
    c->dcgm = malloc(sizeof *c->dcgm);
    if (!c->tg || !c->dcgm) {
        scrape_free(c);
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < c->n; i++)
        c->tg[i].t = &ts->t[i];
    return c;
}

int scrape_open(struct scrape *c, const char *dir, struct carma_err *e)
{
    c->out = collect_out_open(dir, COLLECT_SAMPLES, e);
    if (!c->out)
        return e && e->code ? e->code : -EIO;
    if (c->o.srt_cpu) {
        char cpu_dir[PATH_MAX + 16];
        snprintf(cpu_dir, sizeof cpu_dir, "%s/power/cpu", dir);
        const char **nodes = calloc(c->n, sizeof *nodes);
        if (!nodes)
            return carma_err_set(e, -ENOMEM, "out of memory");
        for (size_t i = 0; i < c->n; i++)
            nodes[i] = c->targets->t[i].node;
        c->cpu = c->o.srt_cpu->open(cpu_dir, nodes, c->n, e);
        free(nodes);
        if (!c->cpu)
            return e && e->code ? e->code : -EIO;
    }
    if (c->o.srt_gpu) {
        char gpu_dir[PATH_MAX + 16];
        snprintf(gpu_dir, sizeof gpu_dir, "%s/power", dir);
        const char **nodes = calloc(c->n, sizeof *nodes);
        if (!nodes)
            return carma_err_set(e, -ENOMEM, "out of memory");
        for (size_t i = 0; i < c->n; i++)
            nodes[i] = c->targets->t[i].node;
        struct scrape_opts go = c->o;
        go.timeout_ns = c->req_timeout_ns;
        c->gpu = c->o.srt_gpu->open(gpu_dir, nodes, c->n, &go, e);
        free(nodes);
        if (!c->gpu)
            return e && e->code ? e->code : -EIO;
    }
    c->start_real = time_real_ns();
    return 0;
}

bool scrape_started(const struct scrape *c)
{
    return c->start_real != 0;
}

int scrape_run(struct scrape *c, const sigset_t *sigs, int *ret_sig)
{
    bool fatal = false;
    *ret_sig = 0;
    c->ran = true;
    c->start_mono = time_mono_ns();
    uint64_t seq = 0;
    for (;;) {
        int64_t tick = c->start_mono + (int64_t)seq * c->o.interval_ns;
        if (c->o.duration_ns && tick - c->start_mono >= c->o.duration_ns)
            break;
        int sig = time_wait_signal_until(tick, sigs);
        if (sig) {
            *ret_sig = sig;
            break;
        }
        size_t failures = run_cycle(c, seq, tick);
        if (seq == 0 && c->o.required && failures) {
            for (size_t i = 0; i < c->n; i++)
                if (c->tg[i].down)
                    warnf(c, "collect: required target %s (node %s) is down: %s", c->tg[i].t->name,
                          c->tg[i].t->node, c->tg[i].last_error);
            fatal = true;
            break;
        }
        if ((sig = scrape_signal_pending(sigs))) {
            *ret_sig = sig;
            break;
        }
        /* the next slot; one that has already passed whole is missed */
        uint64_t next = seq + 1;
        int64_t now = time_mono_ns();
        uint64_t slot = (uint64_t)((now - c->start_mono) / c->o.interval_ns);
        if (slot > next) {
            c->missed += slot - next;
            next = slot;
        }
        seq = next;
    }
    c->stop_real = time_real_ns();
    return fatal ? 1 : 0;
}

void scrape_set_end(struct scrape *c, const struct scrape_end *end)
{
    c->end = *end;
    c->have_end = true;
}

/* The GPU leg's status: srt-slurm's complete, incomplete or failed. */
static const char *gpu_status(const struct scrape *c)
{
    if (!c->have_end)
        return "incomplete";
    struct scrape_end end = c->end;
    end.final = true;
    const char *s = status_of(c, &end);
    return strcmp(s, "complete") == 0 || strcmp(s, "failed") == 0 ? s : "incomplete";
}

void scrape_close(struct scrape *c)
{
    if (c->out) {
        struct carma_err ce = {0};
        c->rows = collect_out_rows(c->out);
        int cr = collect_out_close(c->out, &ce);
        c->out = NULL;
        if (cr < 0) {
            warnf(c, "collect: %s", ce.msg);
            c->write_failed = true;
        }
    }
    if (c->cpu) {
        struct carma_err ce = {0};
        if (c->o.srt_cpu->finish(c->cpu, &ce) < 0) {
            warnf(c, "collect: %s", ce.msg);
            c->cpu_write_failed = true;
        }
        c->cpu = NULL;
    }
    if (c->gpu) {
        struct carma_err ce = {0};
        if (c->o.srt_gpu->finish(c->gpu, gpu_status(c), &ce) < 0) {
            warnf(c, "collect: %s", ce.msg);
            c->gpu_write_failed = true;
        }
        c->gpu = NULL;
    }
}

bool scrape_write_failed(const struct scrape *c)
{
    return c->write_failed || c->cpu_write_failed || c->gpu_write_failed;
}

void scrape_totals_get(const struct scrape *c, struct scrape_totals *ret)
{
    *ret = (struct scrape_totals){.cycles = c->cycles, .missed = c->missed};
    for (size_t i = 0; i < c->n; i++) {
        ret->scrapes += c->tg[i].scrapes;
        ret->errors += c->tg[i].errors;
        ret->negative += c->tg[i].negative;
    }
}

void scrape_free(struct scrape *c)
{
    if (!c)
        return;
    collect_out_close(c->out, NULL); /* where scrape_close was not called */
    if (c->cpu)
        c->o.srt_cpu->finish(c->cpu, NULL);
    if (c->gpu)
        c->o.srt_gpu->finish(c->gpu, "failed", NULL);
    if (c->multi || c->headers || c->curl_global)
        http_done(c);
    for (size_t i = 0; c->tg && i < c->n; i++) {
        free(c->tg[i].body);
        free(c->tg[i].node_label);
    }
    free(c->tg);
    free(c->dcgm);
    free(c);
}
