/*
 * carma collect: the head-node collector. Scrapes the /metrics of many exporters (carma's own,
 * srt-slurm's cpu-power-exporter) on one clock into one run directory, and optionally
 * srt-slurm's CPU power leg.
 *
 * This file parses the options, claims the run directory, blocks SIGINT, SIGTERM and SIGHUP
 * (taken even when inherited ignored), runs the scrape engine (collect/scrape.h: the libcurl
 * multi handle, the clock, each target's state and backoff) until one of them comes, the
 * duration is over or a required target is down, writes manifest.json with how it went, and
 * prints: the directory's path on stdout, the engine's warnings and the last line on stderr.
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <malloc.h>
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
#include "cli/follow_opt.h"
#include "cli/interrupt.h"
#include "cli/outdir.h"
#include "collect/collector.h"
#include "collect/scrape.h"
#include "core/file.h"
#include "core/jsonutil.h"
#include "core/parse.h"
#include "core/timeutil.h"
#include "report/collectreport.h"
#include "serve/markd.h"
#include "srt/cpu.h"
#include "srt/gpu.h"
#include "workload/launcher.h"

#define DEFAULT_INTERVAL_NS NS_PER_S

struct collect_opts {
    struct collect_targets targets;
    const char *out_dir;
    int64_t interval_ns;
    int64_t timeout_ns;  /* 0: min(interval, 5 s) */
    int64_t duration_ns; /* 0: until a signal */
    bool required;
    bool srt_cpu;
    bool srt_gpu;
    struct follow_opts follow; /* --report-follow */
    int verbose;
    bool group_set; /* --socket-group */
    gid_t gid;
};

static void help(void)
{
    printf(
        "usage: carma collect (--target HOST:PORT ... | --targets-file F | --slurm) [OPTIONS]\n\n"
        "Scrapes the /metrics of carma exporters (srt-slurm's cpu-power-exporter, NVIDIA's\n"
        "dcgm-exporter) on many nodes on one clock into one run directory: samples.csv (one\n"
        "row per channel per node per cycle; a dcgm-exporter's GPUs are channels\n"
        "dcgm/gpu<N>), nodes.csv (node power, energy and CPU utilization) and\n"
        "manifest.json. The directory's path is the first line of stdout. A target that is\n"
        "down gets a row with blank cells, a warning, and retries with backoff; the others go\n"
        "on. SIGINT/SIGTERM/SIGHUP end the run after the current cycle.\n\n"
        "targets:\n"
        "  --target T          HOST, HOST:PORT, [IPV6]:PORT or an http:// URL (repeatable);\n"
        "                      the port defaults to 9405 (--port), the path to /metrics;\n"
        "                      dcgm:T names a dcgm-exporter (port 9400 by default); a body\n"
        "                      with dcgm-exporter's families is read as one anyway\n"
        "  --targets-file F    one target per line, '#' comments, blank lines skipped\n"
        "  --slurm             the nodes of the current Slurm job (SLURM_JOB_NODELIST,\n"
        "                      expanded with scontrol show hostnames), each at --port\n"
        "  --port P            port of targets given without one (default 9405)\n"
        "  --dcgm-port P       with --slurm: also each node's dcgm-exporter at port P\n"
        "                      (dcgm:NODE:P; dcgm-exporter's default is 9400)\n\n"
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
        "                      cpu_power_dcgm_watts\n"
        "  --srt-gpu           also write srt-slurm's GPU power leg, power/samples.csv and\n"
        "                      power/manifest.json, from dcgm-exporter targets and carma\n"
        "                      exporters' GPU channels\n" SOCKET_GROUP_HELP FOLLOW_OPTIONS_HELP
        "                      (with --srt-cpu, the CPU leg is this run's power/cpu/samples.csv)\n"
        "                      DIR the same as -o DIR: carma report DIR --follow of this\n"
        "                      collect directory instead (DIR/report.json, report.txt)\n"
        "  -q, --quiet         no warnings about targets, no summary at the end\n");
}

/* Whether paths a and b name the same directory (as written, trailing slashes aside, or by
 * realpath when both exist). */
static bool same_dir(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (realpath(a, ra) && realpath(b, rb))
        return strcmp(ra, rb) == 0;
    size_t na = strlen(a), nb = strlen(b);
    while (na > 1 && a[na - 1] == '/')
        na--;
    while (nb > 1 && b[nb - 1] == '/')
        nb--;
    return na == nb && memcmp(a, b, na) == 0;
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
        OPT_SRT_GPU,
        OPT_DCGM_PORT,
        OPT_SOCKET_GROUP,
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
        {"srt-gpu", no_argument, NULL, OPT_SRT_GPU},
        {"dcgm-port", required_argument, NULL, OPT_DCGM_PORT},
        {"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
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
    unsigned port = COLLECT_DEFAULT_PORT, dcgm_port = 0;
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
        case OPT_SOCKET_GROUP:
            if (cli_socket_group("collect", optarg, &o->gid) < 0)
                return -1;
            o->group_set = true;
            break;
        case OPT_SRT_CPU:
            o->srt_cpu = true;
            break;
        case OPT_SRT_GPU:
            o->srt_gpu = true;
            break;
        case OPT_DCGM_PORT: {
            uint64_t v;
            if (parse_u64(optarg, &v) < 0 || v < 1 || v > 65535) {
                cli_error("collect: --dcgm-port: '%s' is not a port (1..65535)", optarg);
                return -1;
            }
            dcgm_port = (unsigned)v;
            break;
        }
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
    if (dcgm_port && !slurm) {
        cli_error("collect: --dcgm-port goes with --slurm (name other dcgm-exporters with "
                  "--target dcgm:HOST:PORT)");
        return -1;
    }
    if (o->follow.dir && o->out_dir && same_dir(o->follow.dir, o->out_dir) &&
        o->follow.cpu_samples) {
        cli_error("collect: --report-cpu-samples is for an srt-slurm log directory; "
                  "--report-follow %s is this collect directory",
                  o->follow.dir);
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
    if (slurm && collect_slurm_targets(&o->targets, port, dcgm_port, NULL, &e) < 0) {
        cli_error("collect: %s", e.msg);
        return -1;
    }
    return 0;
}

/* ---- the run directory ---- */

/* Claims -o DIR (new, or holding none of a run's files) or makes a new collect_<stamp>. 0, 2 when
 * DIR holds something (refused, printed), 1 on another error (printed). */
static int make_dir(const char *dir, char *ret_dir, size_t cap)
{
    if (dir) {
        /* new, or without a run's files, claimed: an earlier run is never overwritten (2: refused)
         */
        bool created;
        static const char *const outputs[] = {OUTDIR_CLAIM, "samples.csv", "nodes.csv", "power",
                                              "marks.csv",  "carma.sock",  NULL};
        int r = outdir_claim("collect", "-o", dir, outputs, &created);
        if (r != 0)
            return r;
        snprintf(ret_dir, cap, "%s", dir);
        return 0;
    }
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    for (int k = 1; k < 1000; k++) {
        if (k == 1)
            snprintf(ret_dir, cap, "collect_%s", stamp);
        else
            snprintf(ret_dir, cap, "collect_%s-%d", stamp, k);
        if (mkdir(ret_dir, FILE_DIR_MODE) == 0)
            return 0;
        if (errno != EEXIST) {
            cli_error("collect: cannot create %s: %s", ret_dir, strerror(errno));
            return 1;
        }
    }
    cli_error("collect: cannot create collect_%s: every name up to -999 exists", stamp);
    return 1;
}

/* ---- the command ---- */

/* The engine's warnings and notes. */
static void warn_line(void *cls, const char *msg)
{
    (void)cls;
    cli_error("%s", msg);
}

/* Writes manifest.json (atomically). Returns 0 or -1 (printed). */
static int write_manifest(struct scrape *s, const char *path, const struct scrape_end *end,
                          const struct interruption *stop)
{
    json_t *m = scrape_manifest(s, end, interruption_json(stop));
    int r = m ? jsonutil_write_file(m, path) : -ENOMEM;
    json_decref(m);
    if (r < 0) {
        cli_error("collect: cannot write %s: %s", path, strerror(-r));
        return -1;
    }
    return 0;
}

int cmd_collect(int argc, char **argv)
{
    struct collect_opts o = {.interval_ns = DEFAULT_INTERVAL_NS};
    struct scrape *s = NULL;
    struct interruption stop = {0};            /* the signal that ended the run, and when */
    struct follower follower = {0};            /* --report-follow */
    struct markd *marks = NULL;                /* DIR/carma.sock */
    struct collectreport_follow *cself = NULL; /* --report-follow of -o DIR itself */
    struct collectreport_follow_thread *cthread = NULL;
    bool report_failed = false;
    char dir[PATH_MAX] = "";
    char manifest_path[PATH_MAX + 32] = "";
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
    struct scrape_opts so = {
        .interval_ns = o.interval_ns,
        .timeout_ns = o.timeout_ns,
        .duration_ns = o.duration_ns,
        .required = o.required,
        .srt_cpu = o.srt_cpu ? &srt_cpu_sink : NULL,
        .srt_gpu = o.srt_gpu ? &srt_gpu_sink : NULL,
        .quiet = o.verbose < 0,
        .version = CARMA_VERSION,
        .warn = warn_line,
    };
    struct carma_err e = {0};
    s = scrape_new(&o.targets, &so, &e);
    if (!s) {
        cli_error("collect: %s", e.msg);
        goto out;
    }

    int md = make_dir(o.out_dir, dir, sizeof dir);
    if (md != 0) {
        ret = md;
        goto out;
    }
    printf("%s\n", dir);
    fflush(stdout);
    snprintf(manifest_path, sizeof manifest_path, "%s/manifest.json", dir);

    if (scrape_open(s, dir, &e) < 0) {
        cli_error("collect: %s", e.msg);
        goto out;
    }
    if (write_manifest(s, manifest_path, &(struct scrape_end){0}, &stop) < 0)
        goto out;
    if (scrape_http_init(s, &e) < 0) {
        cli_error("collect: %s", e.msg);
        goto out;
    }

    /* the marks socket: a benchmark driver on this node marks its windows (DIR/carma.sock) */
    struct markd_opts mo = {.dir = dir,
                            .version = CARMA_VERSION,
                            .group_set = o.group_set,
                            .gid = o.gid,
                            .warn = cli_say};
    marks = markd_start(&mo, &e);
    if (!marks)
        cli_error("collect: %s (marks are off: no window can be marked)", e.msg);
    char own_cpu[PATH_MAX + 32];
    snprintf(own_cpu, sizeof own_cpu, "%s/power/cpu/samples.csv", dir);
    if (o.follow.dir && same_dir(o.follow.dir, dir)) {
        /* --report-follow of this very directory: carma report DIR --follow, in-process */
        struct collectreport_opts co = {.edges = o.follow.edges};
        cself = collectreport_follow_new(dir, &co);
        if (cself)
            cthread = collectreport_follow_thread_start(cself, o.follow.poll_ns, NULL, &e);
        if (!cthread) {
            cli_error("collect: --report-follow: %s", cself ? e.msg : "out of memory");
            goto out;
        }
    } else if (follower_start(&follower, &o.follow, o.srt_cpu ? own_cpu : NULL, "collect") < 0) {
        goto out;
    }
    int sig = 0;
    fatal = scrape_run(s, &sigs, &sig) > 0;
    if (sig)
        interruption_note(&stop, sig);
    ret = fatal ? 1 : 0;

out:
    if (s) {
        scrape_set_end(s, &(struct scrape_end){.final = true, .fatal = fatal, .sig = stop.sig});
        scrape_close(s);
    }
    if (marks) {
        struct carma_err me = {0};
        int left = markd_stop(marks, time_real_ns(), &me);
        if (left < 0)
            cli_error("collect: %s", me.msg);
        else if (left > 0 && o.verbose >= 0)
            cli_error("collect: %d window%s still open at the end (marks.csv: unended)", left,
                      left == 1 ? "" : "s");
    }
    /* after the samples are flushed: the final poll sees every row */
    if (follower_stop(&follower, "collect", o.verbose < 0) < 0)
        report_failed = true;
    bool started = s && scrape_started(s);
    if (started) {
        struct scrape_end end = {.final = true, .fatal = fatal, .sig = stop.sig};
        if (write_manifest(s, manifest_path, &end, &stop) < 0 && ret == 0)
            ret = 1;
    }
    if (cthread) {
        /* after the final manifest: the last report says how the run ended */
        size_t written = 0;
        struct carma_err re = {0};
        if (collectreport_follow_thread_stop(cthread, &written, &re) < 0) {
            cli_error("collect: --report-follow: %s", re.msg);
            report_failed = true;
        }
        if (o.verbose >= 0)
            fprintf(stderr, "carma: collect: %zu report%s of %s written to %s/report.json\n",
                    written, written == 1 ? "" : "s", dir, dir);
    }
    collectreport_follow_free(cself);
    if (ret == 0 && ((s && scrape_write_failed(s)) || report_failed))
        ret = 1;
    if (started && o.verbose >= 0 && !fatal) {
        struct scrape_totals t;
        scrape_totals_get(s, &t);
        size_t n = o.targets.n;
        char neg[64] = "";
        if (t.negative)
            snprintf(neg, sizeof neg, ", %llu negative power readings dropped",
                     (unsigned long long)t.negative);
        fprintf(stderr,
                "carma: collect: %llu cycles of %zu target%s, %llu scrapes, %llu failed%s%s; "
                "%s\n",
                (unsigned long long)t.cycles, n, n == 1 ? "" : "s", (unsigned long long)t.scrapes,
                (unsigned long long)t.errors, t.missed ? ", some cycles missed" : "", neg, dir);
    }
    scrape_free(s);
    collect_targets_free(&o.targets);
    if (masked) {
        (void)scrape_signal_pending(
            &sigs); /* taken: a signal during the shutdown changes nothing */
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
    }
    return ret;
}
