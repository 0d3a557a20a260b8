/*
 * carma top RUN_DIR: the live view of a run directory (report/live) from another terminal:
 * per job the power now, the energy and CO2e so far, the node's power by domain, the elapsed
 * time, redrawn every interval until the run ends (then its last figures) or SIGINT/SIGTERM.
 * On a terminal the view is redrawn in place; otherwise each frame is a plain block of lines
 * with no escape codes.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/common.h"
#include "core/parse.h"
#include "report/live.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: carma top RUN_DIR [--interval T] [--once]\n"
               "\n"
               "The live view of a carma run directory, running or finished: per job the power\n"
               "over the last second, the energy (Wh) and operational CO2e so far; the node's\n"
               "power by domain; the elapsed time. Redrawn every T (default 1s) until the run\n"
               "ends or SIGINT/SIGTERM; plain lines, no escape codes, when stdout is not a\n"
               "terminal.\n"
               "\n"
               "options:\n"
               "  --interval T   the redraw period (default 1s)\n"
               "  --once         one frame, then exit\n"
               "  -h, --help\n"
               "\n"
               "Exit status: 0; 1 when RUN_DIR cannot be read; 2 for a usage error.\n");
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int cmd_top(int argc, char **argv)
{
    enum { TOP_INTERVAL = 300, TOP_ONCE };
    static const struct option longopts[] = {
        {"interval", required_argument, NULL, TOP_INTERVAL},
        {"once", no_argument, NULL, TOP_ONCE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int64_t period_ns = 1000000000LL;
    bool once = false;
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
        struct winsize ws;
        int width = ansi && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 100;
        live_render(stdout, &v, ansi, width, &lines);
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
