/*
 * carma top RUN_DIR: the live view of a run directory (report/live) from another terminal:
 * per job the power now, the energy and CO2e so far, the node's power by domain, the elapsed
 * time, the mark windows open now, redrawn every interval until the run ends (then its last
 * figures) or SIGINT/SIGTERM. On a terminal the view is redrawn in place; otherwise each frame
 * is a plain block of lines with no escape codes.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/common.h"
#include "core/jsonutil.h"
#include "core/parse.h"
#include "report/live.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: carma top RUN_DIR [--interval T] [--once] [--json]\n"
               "\n"
               "The live view of a carma run directory, running or finished: per job the power\n"
               "over the last second, the energy (Wh) and operational CO2e so far; the node's\n"
               "power by domain; the elapsed time; the mark windows open now (marks.csv:\n"
               "name, job, how long open, the node's energy since the begin; 8 shown, then\n"
               "\"+K more\"). Redrawn every T (default 1s) until the run ends or\n"
               "SIGINT/SIGTERM; plain lines, no escape codes, when stdout is not a terminal.\n"
               "\n"
               "options:\n"
               "  --interval T   the redraw period (default 1s)\n"
               "  --once         one frame, then exit\n"
               "  --json         each frame as one line of JSON (run_dir, elapsed_s, finished,\n"
               "                 carma_gone, node_power_w, domains, jobs, idle_j, other_j,\n"
               "                 unattributed_j, open_windows, open_windows_more)\n"
               "  -h, --help\n"
               "\n"
               "A run whose manifest.json says \"running\" but whose carma is gone from this\n"
               "host (killed) is shown once more, said so, and top exits.\n"
               "\n"
               "Exit status: 0; 1 when RUN_DIR cannot be read or its carma is gone without\n"
               "finishing; 2 for a usage error.\n");
}

/* One frame as a JSON object (--json): the figures of the view, null where unknown. */
static json_t *view_json(const struct live_view *v)
{
    json_t *o = json_object();
    json_object_set_new(o, "run_dir", json_string(v->title));
    jsonutil_set_num(o, "elapsed_s", v->elapsed_s);
    jsonutil_set_num(o, "updated_unix", v->updated_unix);
    json_object_set_new(o, "finished", json_boolean(v->finished));
    json_object_set_new(o, "carma_gone", json_boolean(v->writer_gone_pid != 0));
    jsonutil_set_num(o, "node_power_w", v->node_w);
    json_t *doms = json_array();
    for (size_t k = 0; k < v->ndomains; k++) {
        const struct live_domain *d = &v->domain[k];
        json_t *x = json_object();
        json_object_set_new(x, "kind", json_string(d->kind));
        jsonutil_set_num(x, "power_w", d->power_w);
        json_object_set_new(x, "channels", json_integer(d->channels));
        json_object_set_new(x, "method", json_string(d->estimated ? "estimated" : "measured"));
        json_array_append_new(doms, x);
    }
    json_object_set_new(o, "domains", doms);
    json_t *jobs = v->have_jobs ? json_array() : json_null();
    for (size_t k = 0; v->have_jobs && k < v->njobs; k++) {
        const struct live_job *j = &v->job[k];
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(j->name));
        jsonutil_set_num(x, "power_w", j->power_w);
        jsonutil_set_num(x, "energy_j", j->energy_j);
        jsonutil_set_num(x, "g_co2e", j->g_co2e);
        json_object_set_new(x, "ended", json_boolean(j->ended));
        json_object_set_new(x, "method", json_string(j->estimated ? "estimated" : "measured"));
        json_array_append_new(jobs, x);
    }
    json_object_set_new(o, "jobs", jobs);
    jsonutil_set_num(o, "idle_j", v->have_jobs ? v->idle_j : NAN);
    jsonutil_set_num(o, "other_j", v->have_jobs ? v->other_j : NAN);
    jsonutil_set_num(o, "unattributed_j", v->have_jobs ? v->unattributed_j : NAN);
    json_t *wins = json_array();
    for (size_t k = 0; k < v->nwindows; k++) {
        const struct live_window *w = &v->window[k];
        bool known = isfinite(w->energy_j);
        json_t *x = json_object();
        json_object_set_new(x, "id", json_integer(w->id));
        json_object_set_new(x, "name", json_string(w->name));
        json_object_set_new(x, "workload", w->workload[0] ? json_string(w->workload) : json_null());
        jsonutil_set_num(x, "begin_unix", w->begin_unix);
        jsonutil_set_num(x, "open_s", w->open_s);
        jsonutil_set_num(x, "energy_j", w->energy_j);
        json_object_set_new(x, "method",
                            known ? json_string(w->estimated ? "estimated" : "measured")
                                  : json_null());
        json_array_append_new(wins, x);
    }
    json_object_set_new(o, "open_windows", wins);
    json_object_set_new(o, "open_windows_more", json_integer((json_int_t)v->windows_more));
    return o;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int cmd_top(int argc, char **argv)
{
    enum { TOP_INTERVAL = 300, TOP_ONCE, TOP_JSON };
    static const struct option longopts[] = {
        {"interval", required_argument, NULL, TOP_INTERVAL},
        {"once", no_argument, NULL, TOP_ONCE},
        {"json", no_argument, NULL, TOP_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int64_t period_ns = 1000000000LL;
    bool once = false, json = false;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "h", longopts, "top")) != -1) {
        switch (c) {
        case TOP_INTERVAL:
            if (cli_duration("--interval", optarg, 10000000LL, 86400000000000LL, &period_ns) < 0)
                return 2;
            break;
        case TOP_ONCE:
            once = true;
            break;
        case TOP_JSON:
            json = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return 2;
        }
    }
    if (optind != argc - 1) {
        cli_error(optind >= argc ? "top: a run directory is needed" : "top: one directory only");
        usage(stderr);
        return 2;
    }
    struct live_reader rd;
    struct carma_err e = {0};
    if (live_reader_open(&rd, argv[optind], &e) < 0) {
        fprintf(stderr, "error: %s\n", e.msg);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    bool ansi = isatty(STDOUT_FILENO);
    struct live_view v;
    memset(&v, 0, sizeof v);
    int lines = 0, status = 0;
    for (;;) {
        if (live_reader_poll(&rd, &v, &e) < 0) {
            fprintf(stderr, "error: %s\n", e.msg);
            status = 1;
            break;
        }
        if (rd.warning[0]) {
            fprintf(stderr, "warning: %s\n", rd.warning);
            rd.warning[0] = '\0';
        }
        if (rd.marks.warning[0]) {
            fprintf(stderr, "warning: %s\n", rd.marks.warning);
            rd.marks.warning[0] = '\0';
        }
        struct winsize ws;
        int width = ansi && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 100;
        if (json) { /* one frame a line (JSON Lines) */
            json_t *o = view_json(&v);
            json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16));
            fputc('\n', stdout);
            fflush(stdout);
            json_decref(o);
        } else {
            live_render(stdout, &v, ansi, width, &lines);
        }
        if (v.writer_gone_pid) {
            fprintf(stderr,
                    "error: %s: the run's carma (pid %ld) is gone: the run ended without "
                    "finishing (killed?)\n",
                    argv[optind], v.writer_gone_pid);
            status = 1;
            break;
        }
        if (once || v.finished || stop)
            break;
        struct timespec ts = {.tv_sec = period_ns / 1000000000LL,
                              .tv_nsec = period_ns % 1000000000LL};
        while (!stop && nanosleep(&ts, &ts) < 0)
            ;
        if (stop)
            break;
    }
    live_reader_close(&rd);
    return status;
}
