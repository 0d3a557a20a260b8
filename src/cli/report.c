/*
 * carma report: energy, power statistics, perf-per-watt and carbon per window, for a directory
 * carma wrote (`carma run -o`, `carma stat -o`: report/runreport) or an srt-slurm log directory
 * (srt/log + srt/report: srt-slurm's power_energy_report, its JSON keys and text).
 *
 * As srt-slurm's report: the text goes to stdout, --json-out FILE writes the JSON list
 * (json.dumps indent 2 and a newline, atomically); an error prints `error: <message>` and
 * exits 1 having written nothing. --follow polls an srt-slurm log directory and writes each
 * finished window's report as it can (srt/follow).
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/common.h"
#include "cli/follow_opt.h"
#include "core/file.h"
#include "core/parse.h"
#include "srt/follow.h"
#include "report/html.h"
#include "core/pyjson.h"
#include "core/threads.h"
#include "report/collectreport.h"
#include "report/reportdir.h"
#include "report/runreport.h"
#include "srt/log.h"
#include "srt/report.h"

#define DEFAULT_POLL_NS (30 * (int64_t)1000000000)

static void usage(FILE *f)
{
    fprintf(
        f, "usage: carma report DIR [OPTIONS]\n"
           "\n"
           "Energy, power statistics, perf-per-watt and carbon per window of DIR: a run\n"
           "directory of `carma run -o` or `carma stat -o` (windows: the whole run, each\n"
           "workload and each window marked with carma mark), an srt-slurm log directory\n"
           "(windows: each benchmark concurrency, as srt-slurm's power_energy_report reads\n"
           "them), or a `carma collect -o` directory (windows: the whole collect run,\n"
           "--window, --windows, the windows marked on its socket and, when DIR or its parent\n"
           "holds benchmark.out, that srt-slurm log's benchmark windows).\n"
           "\n"
           "options:\n"
           "  --format text|json|html  what goes to stdout (default text); html: one\n"
           "                      self-contained page with charts (docs/report.md)\n"
           "  --json              the same as --format json\n"
           "  -o FILE             write that format to FILE (atomically) instead of stdout\n"
           "  --json-out FILE     also write the JSON list to FILE (atomically)\n"
           "  --cpu-samples CSV   srt-slurm: this CSV is the CPU power leg (default: discovered)\n"
           "  --edges E           interpolate (default: windows cut exactly at their edges by\n"
           "                      linear interpolation, gaps inside checked) or snap (srt-slurm's\n"
           "                      nearest sample within 3 s: its numbers exactly)\n"
           "  --strict            srt-slurm: refuse what its strict samples readers refuse\n"
           "  --window NAME=START,END  collect: a window to report (Unix seconds or ISO 8601\n"
           "                      with a UTC offset; repeatable)\n"
           "  --windows FILE      collect: windows from FILE (CSV name,start,end[,tokens]\n"
           "                      [,requests], or a JSON list of such objects)\n"
           "  --region CODE       collect: the grid region of every node (default: WORLD)\n"
           "  --region NODE=CODE  collect: NODE's own region (repeatable)\n"
           "  --pue P             collect: the PUE for the carbon (default 1.0)\n"
           "  --max-gap S         collect: the longest gap between samples that is\n"
           "                      interpolated across (default max(3, 3 x the interval))\n"
           "  --follow            srt-slurm: poll DIR and write power_energy_c<N>.json next to\n"
           "                      each finished window's artifact and a line to\n"
           "                      DIR/power_energy_report.jsonl, until SIGINT/SIGTERM (then once\n"
           "                      more, final); collect: rewrite DIR/report.json and\n"
           "                      DIR/report.txt each poll with what was collected so far\n"
           "  --poll T            --follow's period (default 30s)\n"
           "  --once              --follow: one poll, then exit (for cron and tests)\n"
           "  -q, --quiet         --follow: no progress messages\n"
           "  -h, --help\n"
           "\n"
           "Exit status: 0, 1 on an error (nothing written), 2 on a usage error.\n");
}

enum {
    OPT_FORMAT = 300,
    OPT_JSON_OUT,
    OPT_CPU_SAMPLES,
    OPT_EDGES,
    OPT_STRICT,
    OPT_FOLLOW,
    OPT_POLL,
    OPT_ONCE,
    OPT_JSON_FORMAT,
    OPT_WINDOW,
    OPT_WINDOWS,
    OPT_REGION,
    OPT_PUE,
    OPT_MAX_GAP,
};

static int report_error(const char *msg);

#define REPORT_WINDOWS_MAX 4096
#define REPORT_REGIONS_MAX 4096

/*
 * Writes a report: its JSON js (needed with json or json_out) to json_out, then the report (js
 * with json, else text) to output or else stdout; files with a final newline, atomically.
 * Returns the exit status: 0, or 1 with the error said (nothing more written after a failed
 * json_out). js is written through (its NUL becomes the newline, and is put back).
 */
static int report_emit(char *js, const char *text, bool json, const char *json_out,
                       const char *output)
{
    if (json_out) {
        size_t n = strlen(js);
        js[n] = '\n';
        int r = file_replace(json_out, js, n + 1);
        js[n] = '\0';
        if (r < 0) {
            fprintf(stderr, "error: cannot write %s: %s\n", json_out, strerror(-r));
            return 1;
        }
    }
    if (output) {
        int r;
        if (json) {
            size_t n = strlen(js);
            js[n] = '\n';
            r = file_replace(output, js, n + 1);
            js[n] = '\0';
        } else {
            r = file_replace(output, text, strlen(text));
        }
        if (r < 0) {
            fprintf(stderr, "error: cannot write %s: %s\n", output, strerror(-r));
            return 1;
        }
        return 0;
    }
    if (json)
        printf("%s\n", js);
    else
        fputs(text, stdout);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "error: cannot write the report to stdout: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* carma report of a carma collect directory (report/collectreport), to stdout, -o, --json-out. */
static int collect_report(const char *dir, const struct collectreport_opts *o, bool json,
                          const char *json_out, const char *output)
{
    json_t *rep = NULL;
    struct carma_err e = {0};
    if (collectreport_build(dir, o, &rep, &e) < 0)
        return report_error(e.msg);
    char *js = (json || json_out) ? pyjson_dumps(rep, 2) : NULL;
    char *text = json ? NULL : collectreport_text(rep);
    json_decref(rep);
    int status = (!json && !text) || ((json || json_out) && !js)
                     ? report_error("out of memory")
                     : report_emit(js, text, json, json_out, output);
    free(js);
    free(text);
    return status;
}

static double now_unix(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int report_error(const char *msg)
{
    fprintf(stderr, "error: %s\n", msg);
    return 1;
}

/* Blocks SIGINT and SIGTERM, the followers' stop signals, and puts them in *set (for
 * wait_stop). */
static void block_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigprocmask(SIG_BLOCK, set, NULL);
}

/* Waits poll_ns for one of the blocked signals of set: true when SIGINT or SIGTERM came. */
static bool wait_stop(const sigset_t *set, int64_t poll_ns)
{
    struct timespec ts = {.tv_sec = poll_ns / 1000000000, .tv_nsec = poll_ns % 1000000000};
    int sig = sigtimedwait(set, NULL, &ts);
    return sig == SIGINT || sig == SIGTERM;
}

/* --follow: polls until a signal, then once more, final (--once: a single ordinary poll). */
static int follow_loop(const char *dir, const char *cpu_samples, unsigned flags,
                       enum series_edges edges, int64_t poll_ns, bool once, bool quiet)
{
    struct srt_follow f;
    if (srt_follow_init(&f, dir, cpu_samples, flags, edges) < 0)
        return report_error("out of memory");
    sigset_t set;
    block_stop_signals(&set);
    int status = 0;
    bool stop = false;
    for (;;) {
        struct carma_err e = {0};
        int r = srt_follow_poll(&f, now_unix(), stop, &e);
        if (r < 0) {
            /* a report that could not be written (a full disk): said, retried next poll */
            fprintf(stderr, "error: %s\n", e.msg);
            status = 1;
        } else if (!quiet && r > 0) {
            fprintf(stderr, "carma report: %d window%s reported (%zu in all)\n", r,
                    r == 1 ? "" : "s", f.emitted);
        } else if (!quiet && f.last_error[0]) {
            fprintf(stderr, "carma report: waiting: %s\n", f.last_error);
        }
        if (stop || once)
            break;
        stop = wait_stop(&set, poll_ns); /* a stop: one more poll, final */
    }
    if (!quiet)
        fprintf(stderr, "carma report: %zu window%s reported, %zu given up\n", f.emitted,
                f.emitted == 1 ? "" : "s", f.dead);
    srt_follow_done(&f);
    return status;
}

/*
 * --follow of a carma collect directory: every poll, the report of what the collector has
 * written so far into DIR/report.json and DIR/report.txt (atomically), until SIGINT/SIGTERM,
 * then once more, final (--once: one ordinary poll). A malformed row ends it (exit 1).
 */
static int collect_follow_loop(const char *dir, const struct collectreport_opts *co,
                               const char *json_out, int64_t poll_ns, bool once, bool quiet)
{
    struct collectreport_follow *f = collectreport_follow_new(dir, co);
    if (!f)
        return report_error("out of memory");
    sigset_t set;
    block_stop_signals(&set);
    int status = 0;
    bool stop = false;
    size_t written = 0;
    for (;;) {
        struct carma_err e = {0};
        json_t *rep = NULL;
        int r = collectreport_follow_poll(f, stop, &rep, &e);
        if (r == -ENODATA) {
            if (!quiet)
                fprintf(stderr, "carma report: waiting: %s\n", e.msg);
        } else if (r < 0) {
            fprintf(stderr, "error: %s\n", e.msg);
            status = 1;
            break;
        } else {
            struct carma_err we = {0};
            status = collectreport_follow_write(dir, rep, json_out, &we) < 0 ? 1 : 0;
            if (status)
                fprintf(stderr, "error: %s\n", we.msg);
            written += status == 0;
            if (!quiet && status == 0) {
                const json_t *run = json_array_get(json_object_get(rep, "windows"), 0);
                fprintf(stderr, "carma report: %s/report.json: %.0f s of the run, %zu window%s\n",
                        dir, json_number_value(json_object_get(run, "duration_s")),
                        json_array_size(json_object_get(rep, "windows")),
                        json_array_size(json_object_get(rep, "windows")) == 1 ? "" : "s");
            }
        }
        json_decref(rep);
        if (stop || once)
            break;
        stop = wait_stop(&set, poll_ns); /* a stop: one more poll, final */
    }
    if (!quiet)
        fprintf(stderr, "carma report: %zu report%s written\n", written, written == 1 ? "" : "s");
    collectreport_follow_free(f);
    return status;
}

/*
 * Writes an HTML report: the JSON of rep (indent 2, a final newline) to json_out (NULL: none),
 * then the page (len bytes) to output (atomically) or else stdout. Returns the exit status: 0,
 * or 1 with the error said (no page written after a failed json_out).
 */
static int page_emit(const json_t *rep, const char *json_out, const char *page, size_t len,
                     const char *output)
{
    int r = 0, status = 0;
    if (json_out) {
        char *js = pyjson_dumps(rep, 2);
        size_t n = js ? strlen(js) : 0;
        if (js)
            js[n] = '\n';
        if (!js || (r = file_replace(json_out, js, n + 1)) < 0) {
            fprintf(stderr, "error: cannot write %s: %s\n", json_out,
                    js ? strerror(-r) : "out of memory");
            status = 1;
        }
        free(js);
    }
    if (status == 0 && output) {
        if ((r = file_replace(output, page, len)) < 0) {
            fprintf(stderr, "error: cannot write %s: %s\n", output, strerror(-r));
            status = 1;
        }
    } else if (status == 0 && (fwrite(page, 1, len, stdout) != len || fflush(stdout) != 0)) {
        fprintf(stderr, "error: cannot write the report to stdout: %s\n", strerror(errno));
        status = 1;
    }
    return status;
}

/* --format html of a carma collect directory (report/html's html_collect), --json-out too. */
static int collect_html(const char *dir, const struct collectreport_opts *co, const char *json_out,
                        const char *output)
{
    struct carma_err e = {0};
    struct collectreport_timeline tl;
    if (collectreport_timeline_load(dir, co, &tl, &e) < 0)
        return report_error(e.msg);
    struct html_opts ho = {.version = CARMA_VERSION};
    char *page = NULL;
    size_t len = 0;
    int r = html_collect(&tl, &ho, &page, &len, &e);
    int status = r < 0 ? report_error(e.msg) : page_emit(tl.report, json_out, page, len, output);
    collectreport_timeline_free(&tl);
    free(page);
    return status;
}

/*
 * --format html: the page for DIR to output (atomically) or stdout; with json_out, the JSON
 * list too (the same report). The exit status.
 */
static int html_report(const char *dir, bool run_dir, const char *cpu_samples, unsigned flags,
                       enum series_edges edges, const char *json_out, const char *output)
{
    struct carma_err e = {0};
    struct html_opts ho = {.version = CARMA_VERSION};
    char *page = NULL;
    size_t len = 0;
    json_t *list = NULL;
    int r;
    if (run_dir) {
        if (cpu_samples) {
            cli_error("--cpu-samples reads srt-slurm log directories; %s is a carma run directory",
                      dir);
            return 2;
        }
        struct runreport_opts o = {.edges = edges};
        r = html_run(dir, &o, &ho, &page, &len, &e);
        if (r == 0 && json_out)
            r = runreport_build(dir, &o, &list, &e);
    } else {
        struct srt_log log;
        struct srt_log_opts o = {.cpu_samples = cpu_samples, .flags = flags};
        r = srt_log_open(&log, dir, &o, &e);
        if (r == 0)
            r = srt_report_build(&log, edges, &list, &e);
        if (r == 0)
            r = html_srt(&log, list, &ho, &page, &len, &e);
        srt_log_done(&log);
    }
    if (r < 0) {
        json_decref(list);
        free(page);
        return report_error(e.msg);
    }
    int status = page_emit(list, json_out, page, len, output);
    json_decref(list);
    free(page);
    return status;
}

int cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, OPT_FORMAT},
        {"json", no_argument, NULL, OPT_JSON_FORMAT},
        {"json-out", required_argument, NULL, OPT_JSON_OUT},
        {"cpu-samples", required_argument, NULL, OPT_CPU_SAMPLES},
        {"edges", required_argument, NULL, OPT_EDGES},
        {"strict", no_argument, NULL, OPT_STRICT},
        {"follow", no_argument, NULL, OPT_FOLLOW},
        {"poll", required_argument, NULL, OPT_POLL},
        {"once", no_argument, NULL, OPT_ONCE},
        {"window", required_argument, NULL, OPT_WINDOW},
        {"windows", required_argument, NULL, OPT_WINDOWS},
        {"region", required_argument, NULL, OPT_REGION},
        {"pue", required_argument, NULL, OPT_PUE},
        {"max-gap", required_argument, NULL, OPT_MAX_GAP},
        {"quiet", no_argument, NULL, 'q'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, html = false, follow = false, once = false, quiet = false;
    const char *json_out = NULL, *cpu_samples = NULL, *output = NULL;
    enum series_edges edges = SERIES_EDGES_INTERPOLATE;
    unsigned flags = 0;
    int64_t poll_ns = DEFAULT_POLL_NS;
    static struct collectreport_window windows[REPORT_WINDOWS_MAX];
    static struct collectreport_region regions[REPORT_REGIONS_MAX];
    struct collectreport_opts co = {.windows = windows, .regions = regions};
    bool collect_opt = false;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "qho:", longopts, "report")) != -1) {
        switch (c) {
        case OPT_FORMAT:
            json = strcmp(optarg, "json") == 0;
            html = strcmp(optarg, "html") == 0;
            if (!json && !html && strcmp(optarg, "text") != 0) {
                cli_error("--format: '%s' is not text, json or html", optarg);
                return 2;
            }
            break;
        case OPT_JSON_FORMAT:
            json = true;
            html = false;
            break;
        case 'o':
            output = optarg;
            break;
        case OPT_JSON_OUT:
            json_out = optarg;
            break;
        case OPT_CPU_SAMPLES:
            cpu_samples = optarg;
            break;
        case OPT_EDGES:
            if (report_edges_parse(optarg, &edges) < 0) {
                cli_error("--edges: '%s' is not interpolate or snap", optarg);
                return 2;
            }
            break;
        case OPT_STRICT:
            flags |= SRT_LOG_STRICT;
            break;
        case OPT_FOLLOW:
            follow = true;
            break;
        case OPT_POLL: {
            if (cli_duration("--poll", optarg, 1, 86400000000000LL, &poll_ns) < 0)
                return 2;
            break;
        }
        case OPT_ONCE:
            once = true;
            break;
        case OPT_WINDOW:
        case OPT_REGION: {
            struct carma_err we = {0};
            bool win = c == OPT_WINDOW;
            if ((win ? co.nwindows : co.nregions) == REPORT_WINDOWS_MAX) {
                cli_error("--%s: at most %d", win ? "window" : "region", REPORT_WINDOWS_MAX);
                return 2;
            }
            if ((win ? collectreport_window_parse(optarg, &windows[co.nwindows], &we)
                     : collectreport_region_parse(optarg, &regions[co.nregions], &we)) < 0) {
                cli_error("%s", we.msg);
                return 2;
            }
            *(win ? &co.nwindows : &co.nregions) += 1;
            collect_opt = true;
            break;
        }
        case OPT_WINDOWS:
            co.windows_file = optarg;
            collect_opt = true;
            break;
        case OPT_PUE:
        case OPT_MAX_GAP: {
            double v;
            if (parse_double(optarg, &v) < 0 || !(v > 0) || !(v < 1e9)) {
                cli_error("--%s: '%s' is not a positive number", c == OPT_PUE ? "pue" : "max-gap",
                          optarg);
                return 2;
            }
            *(c == OPT_PUE ? &co.pue : &co.max_gap_s) = v;
            collect_opt = true;
            break;
        }
        case 'q':
            quiet = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return 2;
        }
    }
    if (optind != argc - 1) {
        cli_error(optind >= argc ? "report: a directory is needed" : "report: one directory only");
        usage(stderr);
        return 2;
    }
    const char *dir = argv[optind];
    size_t nthreads;
    if (threads_env("CARMA_REPORT_THREADS", &nthreads) < 0) {
        cli_error("CARMA_REPORT_THREADS='%s': a thread count from 1 to %d is needed (1: one "
                  "thread; unset: the CPUs this process may run on)",
                  getenv("CARMA_REPORT_THREADS"), THREADS_MAX);
        return 2;
    }
    if (once && !follow) {
        cli_error("--once goes with --follow");
        return 2;
    }

    if (follow && (html || output)) {
        cli_error("--follow writes its own files: no --format html or -o with it");
        return 2;
    }
    /* what DIR is, or what it should have been (--follow waits for a log directory to fill) */
    enum reportdir_kind kind = REPORTDIR_SRT;
    struct carma_err de = {0};
    if (!follow && reportdir_detect(dir, &kind, &de) < 0)
        return report_error(de.msg);
    enum reportdir_kind fk;
    if (follow && reportdir_detect(dir, &fk, &de) == 0 && fk == REPORTDIR_COLLECT) {
        if (cpu_samples || (flags & SRT_LOG_STRICT)) {
            cli_error("--cpu-samples and --strict read srt-slurm log directories; %s is a carma "
                      "collect directory",
                      dir);
            return 2;
        }
        co.edges = edges;
        return collect_follow_loop(dir, &co, json_out, poll_ns, once, quiet);
    }
    bool run_dir = follow ? runreport_is_run_dir(dir) : kind == REPORTDIR_RUN;
    if (!follow && kind == REPORTDIR_COLLECT) {
        if (cpu_samples || (flags & SRT_LOG_STRICT)) {
            cli_error("--cpu-samples and --strict read srt-slurm log directories; %s is a carma "
                      "collect directory",
                      dir);
            return 2;
        }
        co.edges = edges;
        if (html)
            return collect_html(dir, &co, json_out, output);
        return collect_report(dir, &co, json, json_out, output);
    }
    if (collect_opt) {
        cli_error("--window, --windows, --region, --pue and --max-gap read carma collect "
                  "directories; %s is not one",
                  dir);
        return 2;
    }
    if (html)
        return html_report(dir, run_dir, cpu_samples, flags, edges, json_out, output);
    if (follow) {
        if (run_dir) {
            cli_error("--follow reads srt-slurm log directories; %s is a carma run directory", dir);
            return 2;
        }
        return follow_loop(dir, cpu_samples, flags, edges, poll_ns, once, quiet);
    }

    json_t *list = NULL;
    char *text = NULL;
    struct carma_err e = {0};
    if (run_dir) {
        if (cpu_samples) {
            cli_error("--cpu-samples reads srt-slurm log directories; %s is a carma run directory",
                      dir);
            return 2;
        }
        struct runreport_opts o = {.edges = edges};
        if (runreport_build(dir, &o, &list, &e) < 0)
            return report_error(e.msg);
        if (!json)
            text = runreport_text(list);
    } else {
        struct srt_log log;
        struct srt_log_opts o = {.cpu_samples = cpu_samples, .flags = flags};
        int r = srt_log_open(&log, dir, &o, &e);
        if (r == 0)
            r = srt_report_build(&log, edges, &list, &e);
        srt_log_done(&log);
        if (r < 0)
            return report_error(e.msg);
        if (!json)
            text = srt_report_text(list);
    }
    char *js = (json || json_out) ? pyjson_dumps(list, 2) : NULL;
    json_decref(list);
    if ((!json && !text) || ((json || json_out) && !js)) {
        free(text);
        free(js);
        return report_error("out of memory");
    }
    int status = report_emit(js, text, json, json_out, output);
    free(text);
    free(js);
    return status;
}
