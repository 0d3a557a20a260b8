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
#include "serve/httpd.h"
#include "serve/metrics.h"

#define EXPORTER_PORT_DEFAULT 9405

struct exporter {
    struct common_opts c;
    const char *listen_arg;
    bool compat_srtctl;
    char node[256];
    struct sampler *s;
    struct metrics_renderer *r;
    struct metrics_store store;
    struct metrics_hist hist; /* sampler thread only */
    bool render_failed;       /* sampler thread: the out-of-memory warning was given */
    int stopfd;               /* eventfd: the sampler thread ends when it is readable */
    struct httpd *h;
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
           "  --compat srtctl     also serve srt-slurm's cpu_power_acpi_watts family for the\n"
           "                      ACPI power_meter channels (NVIDIA Grace)\n\n"
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
        struct metrics_self self = {
            .sample_duration = &x->hist,
            .scrapes = httpd_scrapes(x->h),
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
    enum { OPT_LISTEN = OPT_COMMON_LAST + 1, OPT_COMPAT };
    static const struct option longopts[] = {
        COMMON_LONG_OPTIONS,
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"compat", required_argument, NULL, OPT_COMPAT},
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
    x->r = metrics_renderer_new(x->s, &mo, &e);
    if (!x->r) {
        cli_error("%s", e.msg);
        goto out;
    }
    if (x->compat_srtctl && metrics_renderer_compat_count(x->r) == 0)
        cli_error("exporter: --compat srtctl: no ACPI power_meter channel below %s: "
                  "cpu_power_acpi_watts will have no samples",
                  x->s->root.path);
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
