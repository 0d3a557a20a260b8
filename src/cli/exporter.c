/*
 * carma exporter: this node's power, energy and utilization as Prometheus metrics over HTTP.
 *
 * Two kinds of threads share one snapshot store (serve/metrics.h). The sampler thread ticks
 * on the sampler's timerfd; after each tick it renders the whole /metrics body into a
 * snapshot and publishes it. The HTTP server (serve/httpd.h: libmicrohttpd's polling threads
 * and the connection guard) answers the requests from the latest snapshot; it never reads a
 * sensor. The main thread waits for SIGINT/SIGTERM, sweeping the server's connections past
 * their deadline meanwhile, then stops the server (the responses in flight finish) and the
 * sampler, and exits 0. This file parses the options, wires the three together and prints.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "core/timeutil.h"
#include "core/file.h"
#include "serve/httpd.h"
#include "serve/markd.h"
#include "serve/metrics.h"

#define EXPORTER_PORT_DEFAULT 9405

struct exporter {
    struct common_opts c;
    const char *listen_arg;
    bool compat_srtctl;
    const char *srt_source_arg; /* --srt-source, NULL when not given */
    enum metrics_srt_source srt_source;
    char node[256];
    struct sampler *s;
    struct metrics_renderer *r;
    struct metrics_store store;
    struct metrics_hist hist; /* sampler thread only */
    bool render_failed;       /* sampler thread: the out-of-memory warning was given */
    int stopfd;               /* eventfd: the sampler thread ends when it is readable */
    struct httpd *h;
    const char *marks_dir; /* --marks-dir: the marks socket and marks.csv, or NULL */
    bool group_set;        /* --socket-group */
    gid_t gid;
    struct markd *marks;
};

static void help(void)
{
    printf("usage: carma exporter [OPTIONS]\n\n"
           "Serves this node's power, energy and CPU/GPU utilization as Prometheus metrics:\n"
           "GET /metrics, /healthz, /. Every channel is sampled on the --interval clock; a\n"
           "scrape sends the latest sample and never reads a sensor. SIGINT/SIGTERM stop it.\n\n"
           "options:\n" COMMON_OPTIONS_HELP
           "  --listen ADDR:PORT  where to listen: 127.0.0.1:9405, [::1]:9405 or :9405 (every\n"
           "                      address, IPv4 and IPv6; the default is :9405); port 0 picks\n"
           "                      a free port\n"
           "  --compat srtctl     also serve srt-slurm's CPU family (NVIDIA Grace), one chosen at\n"
           "                      start as srt-slurm's exporter chooses it (--srt-source)\n"
           "  --srt-source auto|acpi|dcgm\n"
           "                      with --compat srtctl: acpi serves cpu_power_acpi_watts (the\n"
           "                      ACPI power_meter channels), dcgm cpu_power_dcgm_watts (the\n"
           "                      dcgm source's CPU rails; exit 2 when DCGM is unavailable or\n"
           "                      reads no positive value at start); auto (the default) acpi\n"
           "                      when an ACPI socket-total sensor reads a positive value at\n"
           "                      start, else dcgm, else exit 2\n"
           "  --marks-dir DIR     listen for marks on DIR/carma.sock (CARMA_SOCKET for the\n"
           "                      programs here): each end is answered with the node's energy,\n"
           "                      marks.csv keeps them, carma_marks_open and\n"
           "                      carma_mark_windows_total count them\n" SOCKET_GROUP_HELP "\n"
           "limits (fixed): 1024 connections at once, 64 from one address; a request must be\n"
           "complete (headers and body) within 10 s of the connection's accept or of its last\n"
           "response, else the connection is closed; past 896 connections (48 from one\n"
           "address) a new one closes the oldest still waiting for its request, so a scrape\n"
           "always finds a place; request headers over 32 KiB get 431; a connection silent\n"
           "for 60 s is closed.\n");
}

/* ---- sampling ---- */

/* One tick, rendered and published; its cost goes into the histogram (next snapshot). */
static void sample_once(struct exporter *x)
{
    int64_t t0 = time_mono_ns();
    sampler_tick(x->s);
    struct metrics_snapshot *snap = metrics_store_begin(&x->store);
    if (snap) {
        markd_publish_sampler(x->marks, x->s);
        struct markd_stats ms;
        markd_stats(x->marks, &ms);
        struct metrics_self self = {
            .sample_duration = &x->hist,
            .scrapes = httpd_scrapes(x->h),
            .marks = x->marks != NULL,
            .marks_open = ms.open,
            .marks_windows = ms.ended,
            .marks_events = ms.events,
        };
        if (metrics_render(x->r, x->s, &self, &snap->text) == 0)
            metrics_store_publish(&x->store, snap);
        else if (!x->render_failed)
            cli_error("exporter: out of memory rendering the metrics: the last sample is served");
        x->render_failed = x->render_failed || snap->text.oom;
    }
    metrics_hist_observe(&x->hist, time_mono_ns() - t0);
}

static void *sampler_main(void *arg)
{
    struct exporter *x = arg;
    sample_once(x);
    struct pollfd p[2] = {{.fd = sampler_fd(x->s), .events = POLLIN},
                          {.fd = x->stopfd, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            cli_error("exporter: poll: %s", strerror(errno));
            break;
        }
        if (p[1].revents)
            break;
        if (p[0].revents & POLLIN) {
            sampler_ack(x->s);
            sample_once(x);
        }
    }
    return NULL;
}

/* ---- the command ---- */

static void node_name(char *buf, size_t cap)
{
    const char *env = getenv("SLURMD_NODENAME");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return;
    }
    if (gethostname(buf, cap) < 0 || !buf[0])
        snprintf(buf, cap, "localhost");
    buf[cap - 1] = '\0';
    char *dot = strchr(buf, '.');
    if (dot && dot != buf)
        *dot = '\0';
}

/* Returns 0 to go on, 1 after --help, -1 (usage error, printed) otherwise. */
static int parse_args(struct exporter *x, int argc, char **argv)
{
    enum {
        OPT_LISTEN = OPT_COMMON_LAST + 1,
        OPT_COMPAT,
        OPT_SRT_SOURCE,
        OPT_MARKS_DIR,
        OPT_SOCKET_GROUP
    };
    static const struct option longopts[] = {
        COMMON_LONG_OPTIONS,
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"compat", required_argument, NULL, OPT_COMPAT},
        {"srt-source", required_argument, NULL, OPT_SRT_SOURCE},
        {"marks-dir", required_argument, NULL, OPT_MARKS_DIR},
        {"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "qvh", longopts, "exporter")) != -1) {
        int r = common_opts_handle(&x->c, c, optarg);
        if (r < 0)
            return -1;
        if (r > 0)
            continue;
        switch (c) {
        case OPT_LISTEN:
            x->listen_arg = optarg;
            break;
        case OPT_COMPAT:
            if (strcmp(optarg, "srtctl") != 0) {
                cli_error("--compat: '%s' is not known (known: srtctl)", optarg);
                return -1;
            }
            x->compat_srtctl = true;
            break;
        case OPT_SRT_SOURCE:
            if (strcmp(optarg, "auto") == 0) {
                x->srt_source = METRICS_SRT_SOURCE_AUTO;
            } else if (strcmp(optarg, "acpi") == 0) {
                x->srt_source = METRICS_SRT_SOURCE_ACPI;
            } else if (strcmp(optarg, "dcgm") == 0) {
                x->srt_source = METRICS_SRT_SOURCE_DCGM;
            } else {
                cli_error("--srt-source: '%s' is not known (known: auto, acpi, dcgm)", optarg);
                return -1;
            }
            x->srt_source_arg = optarg;
            break;
        case OPT_MARKS_DIR:
            x->marks_dir = optarg;
            break;
        case OPT_SOCKET_GROUP:
            if (cli_socket_group("exporter", optarg, &x->gid) < 0)
                return -1;
            x->group_set = true;
            break;
        case 'h':
            help();
            return 1;
        default:
            return -1;
        }
    }
    if (x->c.json) {
        cli_error("exporter: --json is not an option of exporter (it serves the Prometheus text "
                  "format)");
        return -1;
    }
    if (optind < argc) {
        cli_error("exporter: unexpected argument '%s'", argv[optind]);
        return -1;
    }
    if (x->group_set && !x->marks_dir) {
        cli_error("exporter: --socket-group goes with --marks-dir (the exporter has no marks "
                  "socket without it)");
        return -1;
    }
    if (x->srt_source_arg && !x->compat_srtctl) {
        cli_error("exporter: --srt-source %s goes with --compat srtctl (it chooses srt-slurm's "
                  "CPU family)",
                  x->srt_source_arg);
        return -1;
    }
    return 0;
}

/* Says why nothing can be exported: every source's reason. */
static void no_channels(const struct sampler *s)
{
    cli_error("exporter: no power channel to export below %s:", s->root.path);
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].status != 0)
            fprintf(stderr, "  %-6s %s\n", s->src[i].ops->name, s->src[i].reason);
}

static void describe(const struct exporter *x)
{
    const struct sampler *s = x->s;
    fprintf(stderr, "carma: exporter: node %s, %zu channels, every %.3f s\n", x->node, s->set.n,
            (double)s->interval_ns / 1e9);
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].status != 0)
            fprintf(stderr, "  unavailable: %-6s %s\n", s->src[i].ops->name, s->src[i].reason);
}

/* Waits for SIGINT or SIGTERM on fd; meanwhile drops the connections past their deadline. */
static int wait_signal(struct exporter *x, int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    struct signalfd_siginfo si;
    for (;;) {
        int r = poll(&p, 1, HTTPD_SWEEP_MS);
        if (r < 0 && errno != EINTR)
            return -errno;
        httpd_sweep(x->h, time_mono_ns());
        if (r <= 0)
            continue;
        ssize_t n = read(fd, &si, sizeof si);
        if (n == (ssize_t)sizeof si)
            return (int)si.ssi_signo;
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return -errno;
    }
}

/* MHD's log (with -v). */
static void http_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    fputs("carma: exporter: http: ", stderr);
    vfprintf(stderr, fmt, ap);
}

int cmd_exporter(int argc, char **argv)
{
    struct exporter *x = calloc(1, sizeof *x);
    if (!x) {
        cli_error("out of memory");
        return 1;
    }
    int rc = 1, lfd = -1, sigfd = -1;
    bool thread_started = false;
    pthread_t thr;
    common_opts_init(&x->c);
    x->stopfd = -1;
    metrics_store_init(&x->store);

    int pr = parse_args(x, argc, argv);
    if (pr != 0) {
        rc = pr > 0 ? 0 : 2;
        goto out;
    }
    struct httpd_listen la;
    char default_listen[16];
    if (!x->listen_arg) {
        snprintf(default_listen, sizeof default_listen, ":%d", EXPORTER_PORT_DEFAULT);
        x->listen_arg = default_listen;
    }
    struct carma_err e = {0};
    if (httpd_listen_parse(x->listen_arg, &la, &e) < 0) {
        cli_error("%s", e.msg);
        goto out;
    }
    node_name(x->node, sizeof x->node);

    x->s = sampler_new(&x->c.sampler, &e);
    if (!x->s) {
        cli_error("%s", e.msg);
        rc = e.code == -ENOMEM ? 1 : 2;
        goto out;
    }
    if (common_meters_check(x->s, "--meter") < 0) {
        rc = 2;
        goto out;
    }
    if (x->s->set.n == 0) {
        no_channels(x->s);
        goto out;
    }
    struct metrics_opts mo = {
        .node = x->node, .version = CARMA_VERSION, .compat_srtctl = x->compat_srtctl};
    struct metrics_srt_choice choice = {0};
    if (x->compat_srtctl) {
        /* srt-slurm's family is chosen once, on the readings at start (acpi reads nothing) */
        if (x->srt_source != METRICS_SRT_SOURCE_ACPI)
            sampler_tick(x->s);
        if (metrics_srt_choose(x->s, x->srt_source, &choice, &e) < 0) {
            cli_error("exporter: %s", e.msg);
            rc = 2;
            goto out;
        }
        mo.srt_family = choice.family;
    }
    x->r = metrics_renderer_new(x->s, &mo, &e);
    if (!x->r) {
        cli_error("%s", e.msg);
        goto out;
    }
    if (x->compat_srtctl && choice.family == METRICS_SRT_ACPI &&
        metrics_renderer_compat_count(x->r) == 0)
        cli_error("exporter: --compat srtctl: no ACPI power_meter channel below %s: "
                  "cpu_power_acpi_watts will have no samples",
                  x->s->root.path);
    if (x->compat_srtctl)
        fprintf(stderr, "carma: exporter: --compat srtctl: serving %s (%s)\n",
                choice.family == METRICS_SRT_DCGM ? "cpu_power_dcgm_watts" : "cpu_power_acpi_watts",
                choice.why);
    if (x->c.verbose > 0)
        describe(x);

    /* SIGINT/SIGTERM are read from a signalfd by the main thread: blocked in every thread
     * (the server's and the sampler's inherit the mask) */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
    x->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (sigfd < 0 || x->stopfd < 0) {
        cli_error("exporter: %s", strerror(errno));
        goto out;
    }

    unsigned long long nofile;
    struct httpd_opts ho = {.store = &x->store, .conn_max = httpd_conn_budget(&nofile)};
    if (nofile && x->c.verbose > 0)
        fprintf(stderr,
                "carma: exporter: open files limited to %llu (ulimit -n): %u connections at "
                "once, not %d\n",
                nofile, ho.conn_max, HTTPD_CONN_MAX);
    if (x->c.verbose > 0)
        ho.log = http_log;
    x->h = httpd_new(&ho, &e);
    if (!x->h) {
        cli_error("%s", e.msg);
        goto out;
    }

    char bound[HTTPD_ADDR_TEXT_MAX];
    lfd = httpd_listen_open(&la, x->listen_arg, bound, sizeof bound, &e);
    if (lfd < 0) {
        cli_error("%s", e.msg);
        goto out;
    }
    if (x->marks_dir) {
        /* the marks socket: a program on this node marks windows; the end replies with the
         * node's energy, marks.csv keeps them, and the metrics count them */
        int mr = file_mkdirs(x->marks_dir);
        if (mr < 0) {
            cli_error("exporter: --marks-dir: cannot create %s: %s", x->marks_dir, strerror(-mr));
            rc = 2;
            goto out;
        }
        struct markd_opts mko = {.dir = x->marks_dir,
                                 .version = CARMA_VERSION,
                                 .group_set = x->group_set,
                                 .gid = x->gid,
                                 .warn = cli_say};
        x->marks = markd_start(&mko, &e);
        if (!x->marks) {
            cli_error("exporter: --marks-dir: %s", e.msg);
            rc = 2;
            goto out;
        }
        fprintf(stderr, "carma: exporter: marks on %s\n", markd_socket(x->marks));
    }
    int r = sampler_start(x->s);
    if (r < 0) {
        cli_error("exporter: cannot arm the sampling timer: %s", strerror(-r));
        goto out;
    }
    if (httpd_start(x->h, lfd) < 0) {
        cli_error("exporter: cannot start the HTTP server on %s (libmicrohttpd refused its "
                  "options; run with -v for its log)",
                  bound);
        goto out;
    }
    lfd = -1; /* the server's now */
    r = pthread_create(&thr, NULL, sampler_main, x);
    if (r != 0) {
        cli_error("exporter: cannot start the sampler thread: %s", strerror(r));
        goto out;
    }
    thread_started = true;
    fprintf(stderr, "listening on %s\n", bound);
    fflush(stderr);

    int sig = wait_signal(x, sigfd);
    if (sig < 0)
        cli_error("exporter: waiting for signals: %s", strerror(-sig));
    else if (x->c.verbose > 0)
        fprintf(stderr, "carma: exporter: %s: stopping\n", strsignal(sig));
    rc = sig < 0 ? 1 : 0;
out:
    if (x->h)
        httpd_stop(x->h);
    if (thread_started) {
        uint64_t one = 1;
        if (write(x->stopfd, &one, sizeof one) != (ssize_t)sizeof one)
            cli_error("exporter: cannot stop the sampler thread: %s", strerror(errno));
        pthread_join(thr, NULL);
    }
    if (x->marks) {
        struct carma_err me = {0};
        int left = markd_stop(x->marks, x->s->real_now, &me);
        if (left < 0) {
            cli_error("exporter: %s", me.msg);
            rc = 1;
        } else if (left > 0 && x->c.verbose >= 0) {
            cli_error("exporter: %d window%s still open at the end (marks.csv: unended)", left,
                      left == 1 ? "" : "s");
        }
    }
    if (lfd >= 0)
        close(lfd);
    if (sigfd >= 0)
        close(sigfd);
    if (x->stopfd >= 0)
        close(x->stopfd);
    httpd_free(x->h);
    metrics_store_done(&x->store);
    metrics_renderer_free(x->r);
    sampler_free(x->s);
    free(x);
    return rc;
}
