/*
 * carma record: srt-slurm's in-job host collector on one worker node (no exporter, no port).
 *
 * Probes every source once (one sampler), picks the srt-slurm source (--source: ACPI's
 * power_meter channels with a socket total, else DCGM's CPU entities, as the host collector's
 * auto does), writes srt-slurm's per-node files (srt/host.h) and the ready marker, and records
 * every channel of the sampler as a one-node collect directory (collect/collector.h:
 * carma_samples.csv, nodes.csv; manifest.json with producer "carma record") that `carma report`
 * reads. Each cycle: one tick of the sampler (its timestamp taken before the reads), the
 * srt-slurm rows with one write(2), the carma rows with one write(2) per file; the schedule is
 * absolute (next += interval on CLOCK_MONOTONIC; cycles that are already past are skipped and
 * counted). SIGINT, SIGTERM and SIGHUP are blocked and taken between cycles: the files end in
 * whole rows.
 *
 * Exit status: 0; 2 for a bad option or when no source opens (ready/<host>.error.json says
 * why); 3 when no srt-slurm row was ever written; 1 when a file cannot be created.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "collect/collector.h"
#include "core/file.h"
#include "core/fmt.h"
#include "core/jsonutil.h"
#include "core/timeutil.h"
#include "serve/markd.h"
#include "sources/dcgm.h"
#include "srt/host.h"
#include "workload/launcher.h"

enum {
    OPT_OUTPUT_DIR = OPT_COMMON_LAST + 1,
    OPT_READY_DIR,
    OPT_SOURCE,
    OPT_SCHEMA,
    OPT_CARMA_DIR,
    OPT_DURATION,
    OPT_SOCKET_GROUP
};

struct record_opts {
    struct common_opts c;
    const char *output_dir, *ready_dir, *carma_dir;
    const char *source; /* auto, acpi, dcgm */
    bool group_set;     /* --socket-group: the marks socket's group */
    gid_t gid;
    int schema;
    int64_t duration_ns; /* 0: until a signal */
};

static void help(void)
{
    printf("usage: carma record --output-dir DIR/nodes --ready-dir DIR/ready [OPTIONS]\n\n"
           "srt-slurm's in-job host collector on this node, without an exporter or a port:\n"
           "samples this node's CPU power (ACPI power_meter or DCGM) on an absolute clock and\n"
           "writes DIR/nodes/<host>.csv, DIR/nodes/<host>.metadata.json and the ready marker\n"
           "DIR/ready/<host>.ready.json (or <host>.error.json when no source opens, exit 2).\n"
           "Every channel of every source here is also recorded as a one-node carma collect\n"
           "directory (DIR/carma/<host>/) that carma report reads, with the marks socket\n"
           "DIR/carma/<host>/carma.sock for a program on this node (CARMA_SOCKET; carma merge\n"
           "joins the marks). <host> is $SLURMD_NODENAME\n"
           "or the short host name. SIGINT/SIGTERM/SIGHUP end it after the current cycle; exit\n"
           "3 when no row was written.\n\n"
           "options:\n"
           "  --output-dir DIR    srt-slurm's nodes/ directory (made when absent)\n"
           "  --ready-dir DIR     srt-slurm's ready/ directory (made when absent)\n"
           "  --source S          auto (ACPI with a socket total, else DCGM; the default),\n"
           "                      acpi or dcgm\n"
           "  --srt-schema N      samples schema: 3 (the default, one row per sensor) or 4\n"
           "                      (one row per socket with its rails)\n"
           "  --carma-dir DIR     carma's own recording (default: the parent of --output-dir,\n"
           "                      then carma/<host>)\n"
           "  --duration T        stop after T (default: run until a signal)\n" SOCKET_GROUP_HELP
               COMMON_OPTIONS_HELP);
}

static int parse_args(struct record_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        COMMON_LONG_OPTIONS,
        {"output-dir", required_argument, NULL, OPT_OUTPUT_DIR},
        {"ready-dir", required_argument, NULL, OPT_READY_DIR},
        {"source", required_argument, NULL, OPT_SOURCE},
        {"srt-schema", required_argument, NULL, OPT_SCHEMA},
        {"carma-dir", required_argument, NULL, OPT_CARMA_DIR},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = cli_getopt(argc, argv, "hqv", longopts, "record")) != -1) {
        int r = common_opts_handle(&o->c, c, optarg);
        if (r < 0)
            return -1;
        if (r > 0)
            continue;
        switch (c) {
        case 'h':
            help();
            return 1;
        case OPT_OUTPUT_DIR:
            o->output_dir = optarg;
            break;
        case OPT_READY_DIR:
            o->ready_dir = optarg;
            break;
        case OPT_CARMA_DIR:
            o->carma_dir = optarg;
            break;
        case OPT_SOURCE:
            if (strcmp(optarg, "auto") != 0 && strcmp(optarg, "acpi") != 0 &&
                strcmp(optarg, "dcgm") != 0) {
                cli_error("record: --source: '%s' is not auto, acpi or dcgm", optarg);
                return -1;
            }
            o->source = optarg;
            break;
        case OPT_SCHEMA:
            if (strcmp(optarg, "3") != 0 && strcmp(optarg, "4") != 0) {
                cli_error("record: --srt-schema: '%s' is not 3 or 4", optarg);
                return -1;
            }
            o->schema = optarg[0] - '0';
            break;
        case OPT_SOCKET_GROUP:
            if (cli_socket_group("record", optarg, &o->gid) < 0)
                return -1;
            o->group_set = true;
            break;
        case OPT_DURATION:
            if (cli_duration("record: --duration", optarg, SAMPLER_INTERVAL_MIN_NS,
                             7LL * 24 * 3600 * NS_PER_S, &o->duration_ns) < 0)
                return -1;
            break;
        default:
            return -1;
        }
    }
    if (optind < argc) {
        cli_error("record: unexpected argument '%s'", argv[optind]);
        return -1;
    }
    if (!o->output_dir || !*o->output_dir || !o->ready_dir || !*o->ready_dir) {
        cli_error("record: --output-dir and --ready-dir are needed");
        return -1;
    }
    return 0;
}

/* $SLURMD_NODENAME, else the host name up to its first dot, into buf. Returns 0 or -1. */
static int host_name(char *buf, size_t cap)
{
    const char *env = getenv("SLURMD_NODENAME");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
    } else {
        if (gethostname(buf, cap) < 0)
            return -1;
        buf[cap - 1] = '\0';
        char *dot = strchr(buf, '.');
        if (dot)
            *dot = '\0';
    }
    if (!*buf || strchr(buf, '/') || strcmp(buf, ".") == 0 || strcmp(buf, "..") == 0)
        return -1;
    return 0;
}

/* The sampler's usable dcgm source, or NULL. */
static const struct source *dcgm_src(const struct sampler *s)
{
    for (size_t k = 0; k < s->nsrc; k++)
        if (s->src[k].ops == &dcgm_source_ops)
            return &s->src[k];
    return NULL;
}

/* Picks the srt-slurm source into *src and its sensors. Returns the number of sensors, or 0
 * with why set (the host collector's words where it has them). */
static size_t pick_source(const struct sampler *s, const char *requested, const char *root,
                          enum srt_host_source *src, struct srt_host_sensor *sensors, char *why,
                          size_t cap)
{
    char acpi_why[1024] = "", dcgm_why[1024] = "";
    if (strcmp(requested, "dcgm") != 0) {
        size_t n = srt_host_sensors(&s->set, SRT_HOST_ACPI, sensors, SRT_HOST_SENSORS_MAX);
        if (srt_host_has_total(sensors, n)) {
            *src = SRT_HOST_ACPI;
            return n;
        }
        snprintf(acpi_why, sizeof acpi_why,
                 "no ACPI socket-total power_meter channels under %s; available domains: ", root);
        size_t seen = 0;
        for (size_t i = 0; i < s->set.n; i++) {
            const struct channel *c = &s->set.ch[i];
            if (!c->source || strcmp(c->source, "hwmon") != 0 ||
                strncmp(c->name, "hwmon/power_meter/", 18) != 0)
                continue;
            fmt_append(acpi_why, sizeof acpi_why, "%s%s", seen++ ? ", " : "",
                       c->label[0] ? c->label : c->name);
        }
        if (!seen)
            fmt_append(acpi_why, sizeof acpi_why, "none");
    }
    if (strcmp(requested, "acpi") != 0) {
        size_t n = srt_host_sensors(&s->set, SRT_HOST_DCGM, sensors, SRT_HOST_SENSORS_MAX);
        if (n) {
            *src = SRT_HOST_DCGM;
            return n;
        }
        const struct source *d = dcgm_src(s);
        snprintf(dcgm_why, sizeof dcgm_why, "no DCGM CPU entity with power (field 1130)%s%s",
                 d && d->status != 0 && d->reason[0] ? ": " : "",
                 d && d->status != 0 ? d->reason : "");
        if (!d)
            fmt_append(dcgm_why, sizeof dcgm_why, ": the dcgm source is not among --sources");
    }
    snprintf(why, cap, "%s%s%s", acpi_why, acpi_why[0] && dcgm_why[0] ? "; " : "", dcgm_why);
    return 0;
}

/* The parent directory of path ("." when it has none) into buf. */
static void parent_dir(const char *path, char *buf, size_t cap)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    while (n > 0 && path[n - 1] != '/')
        n--;
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n == 0)
        snprintf(buf, cap, ".");
    else
        snprintf(buf, cap, "%.*s", (int)n, path);
}

struct carma_rec {
    struct collect_out *out;
    char manifest[PATH_MAX + 32];
    const char *host;
    int64_t interval_ns, started_ns;
    uint64_t cycles, missed;
    uint64_t rows; /* samples.csv rows, kept when out is closed */
};

static int carma_manifest(const struct carma_rec *c, const char *status, int64_t stopped_ns,
                          const char *stop_reason)
{
    json_t *m = json_object();
    json_object_set_new(m, "schema_version", json_integer(1));
    json_object_set_new(m, "producer", json_string("carma record"));
    json_object_set_new(m, "carma_version", json_string(CARMA_VERSION));
    json_object_set_new(m, "host", json_string(c->host));
    json_t *sv = json_object();
    json_object_set_new(sv, "samples_csv", json_integer(1));
    json_object_set_new(sv, "nodes_csv", json_integer(1));
    json_object_set_new(m, "schema_versions", sv);
    json_t *opt = json_object();
    json_object_set_new(opt, "interval_s", json_real((double)c->interval_ns / 1e9));
    json_object_set_new(m, "options", opt);
    const char *job = getenv("SLURM_JOB_ID");
    json_object_set_new(m, "job_id", job && *job ? json_string(job) : json_null());
    json_t *t = json_object();
    json_object_set_new(t, "target", json_string("local"));
    json_object_set_new(t, "node", json_string(c->host));
    json_object_set_new(t, "kind", json_string("local"));
    json_t *targets = json_array();
    json_array_append_new(targets, t);
    json_object_set_new(m, "targets", targets);
    json_t *nodes = json_array();
    json_array_append_new(nodes, json_string(c->host));
    json_object_set_new(m, "nodes", nodes);
    json_object_set_new(m, "started_unix", json_real((double)c->started_ns / 1e9));
    json_object_set_new(m, "stopped_unix",
                        stopped_ns ? json_real((double)stopped_ns / 1e9) : json_null());
    json_object_set_new(m, "cycles", json_integer((json_int_t)c->cycles));
    json_object_set_new(m, "missed_cycles", json_integer((json_int_t)c->missed));
    json_object_set_new(m, "sample_row_count",
                        json_integer((json_int_t)(c->out ? collect_out_rows(c->out) : c->rows)));
    json_object_set_new(m, "status", json_string(status));
    json_object_set_new(m, "stop_reason", stop_reason ? json_string(stop_reason) : json_null());
    int r = jsonutil_write_file(m, c->manifest);
    json_decref(m);
    if (r < 0)
        cli_error("record: cannot write %s: %s", c->manifest, strerror(-r));
    return r;
}

/* Fills v[0 .. n) from the sampler's current tick. */
static void values(const struct sampler *s, enum srt_host_source src, const struct source *dcgm,
                   const struct srt_host_sensor *sensors, size_t n, struct srt_host_value *v)
{
    for (size_t i = 0; i < n; i++) {
        const struct reading *rd = &s->readings[sensors[i].channel];
        v[i].valid = (rd->valid & READING_POWER) && isfinite(rd->power_w) && rd->power_w >= 0;
        v[i].power_w = rd->power_w;
        for (int k = 0; k < SRT_HOST_UTIL; k++)
            v[i].util[k] = NAN;
        struct dcgm_cpu_util u;
        if (src == SRT_HOST_DCGM && dcgm &&
            dcgm_source_cpu_util(dcgm, (unsigned)sensors[i].socket, &u) == 0) {
            v[i].util[0] = u.total;
            v[i].util[1] = u.user;
            v[i].util[2] = u.nice;
            v[i].util[3] = u.sys;
            v[i].util[4] = u.irq;
        }
    }
}

int cmd_record(int argc, char **argv)
{
    struct record_opts o = {.source = "auto", .schema = 3};
    common_opts_init(&o.c);
    int pr = parse_args(&o, argc, argv);
    if (pr != 0)
        return pr > 0 ? 0 : 2;

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &sigs, NULL) == 0)
        launcher_signals_take(&sigs); /* also when inherited ignored */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);

    int ret = 2;
    char host[256];
    if (host_name(host, sizeof host) < 0) {
        cli_error("record: no usable host name (set SLURMD_NODENAME)");
        goto out_mask;
    }
    const char *root = o.c.sampler.root ? o.c.sampler.root : "/";
    struct carma_err e = {0};
    struct sampler *s = sampler_new(&o.c.sampler, &e);
    if (!s) {
        struct carma_err me = {0};
        if (srt_host_error(o.ready_dir, host, e.msg, &me) < 0)
            cli_error("record: %s", me.msg);
        cli_error("record: %s", e.msg);
        goto out_mask;
    }
    enum srt_host_source src = SRT_HOST_ACPI;
    static struct srt_host_sensor sensors[SRT_HOST_SENSORS_MAX];
    static struct srt_host_value vals[SRT_HOST_SENSORS_MAX];
    char why[2200];
    size_t n = pick_source(s, o.source, root, &src, sensors, why, sizeof why);
    if (n == 0) {
        struct carma_err me = {0};
        if (srt_host_error(o.ready_dir, host, why, &me) < 0)
            cli_error("record: %s", me.msg);
        cli_error("record: %s", why);
        goto out_sampler;
    }
    const struct source *dcgm = src == SRT_HOST_DCGM ? dcgm_src(s) : NULL;
    tzset();
    int64_t interval = s->interval_ns;

    ret = 1;
    struct srt_host_opts ho = {
        .nodes_dir = o.output_dir,
        .host = host,
        .schema = o.schema,
        .source = src,
        .requested_source = o.source,
        .interval_ns = interval,
        .started_ns = time_real_ns(),
        .set = &s->set,
        .sensors = sensors,
        .n = n,
        .root = root,
    };
    struct srt_host *w = srt_host_open(&ho, &e);
    if (!w) {
        cli_error("record: %s", e.msg);
        goto out_sampler;
    }
    /* carma's own recording */
    char cdir[PATH_MAX];
    if (o.carma_dir) {
        snprintf(cdir, sizeof cdir, "%s", o.carma_dir);
    } else {
        char parent[PATH_MAX];
        parent_dir(o.output_dir, parent, sizeof parent);
        snprintf(cdir, sizeof cdir, "%s/carma/%s", parent, host);
    }
    struct carma_rec cr = {.host = host, .interval_ns = interval, .started_ns = ho.started_ns};
    snprintf(cr.manifest, sizeof cr.manifest, "%s/manifest.json", cdir);
    int mr = file_mkdirs(cdir);
    if (mr < 0) {
        cli_error("record: cannot create %s: %s", cdir, strerror(-mr));
        srt_host_finish(w, NULL);
        goto out_sampler;
    }
    cr.out = collect_out_open(cdir, COLLECT_HOST_SAMPLES, &e);
    if (!cr.out || carma_manifest(&cr, "running", 0, NULL) < 0) {
        if (!cr.out)
            cli_error("record: %s", e.msg);
        collect_out_close(cr.out, NULL);
        srt_host_finish(w, NULL);
        goto out_sampler;
    }

    /* the marks socket: a benchmark driver on this node marks its windows there
     * (CARMA_SOCKET=DIR/carma/<host>/carma.sock; carma merge joins the marks) */
    struct markd_opts mo = {.dir = cdir,
                            .version = CARMA_VERSION,
                            .group_set = o.group_set,
                            .gid = o.gid,
                            .warn = cli_say};
    struct markd *marks = markd_start(&mo, &e);
    if (!marks)
        cli_error("record: %s (marks are off: no window can be marked)", e.msg);

    /* ready once every file is there */
    if (srt_host_ready(o.ready_dir, host, srt_host_source_name(src), time_real_ns(), &e) < 0) {
        cli_error("record: %s", e.msg);
        markd_stop(marks, time_real_ns(), NULL);
        collect_out_close(cr.out, NULL);
        srt_host_finish(w, NULL);
        goto out_sampler;
    }

    bool srt_failing = false, carma_failing = false;
    int sig = 0;
    int64_t t0 = time_mono_ns(), next = t0;
    for (;;) {
        sampler_tick(s);
        markd_publish_sampler(marks, s);
        values(s, src, dcgm, sensors, n, vals);
        struct carma_err ce = {0};
        int r = srt_host_cycle(w, s->real_now, vals, &ce);
        if (r < 0 && !srt_failing && o.c.verbose >= 0)
            cli_error("record: %s", ce.msg);
        srt_failing = r < 0;
        collect_out_cycle_begin(cr.out, cr.cycles);
        collect_out_sampler(cr.out, host, "local", s);
        r = collect_out_cycle_end(cr.out, &ce);
        if (r < 0 && !carma_failing && o.c.verbose >= 0)
            cli_error("record: %s", ce.msg);
        carma_failing = r < 0;
        cr.cycles++;
        next += interval;
        int64_t now = time_mono_ns();
        if (next <= now) {
            int64_t skip = (now - next) / interval + 1;
            cr.missed += (uint64_t)skip;
            next += skip * interval;
        }
        if (o.duration_ns && next - t0 > o.duration_ns) {
            sig = time_wait_signal_until(t0 + o.duration_ns, &sigs);
            break;
        }
        if ((sig = time_wait_signal_until(next, &sigs)) > 0)
            break;
    }
    int64_t stopped = time_real_ns();
    bool marks_failed = false;
    if (marks) {
        struct carma_err me = {0};
        int left = markd_stop(marks, s->real_now, &me);
        if (left < 0) {
            cli_error("record: %s", me.msg);
            marks_failed = true;
        } else if (left > 0 && o.c.verbose >= 0) {
            cli_error("record: %d window%s still open at the end (marks.csv: unended)", left,
                      left == 1 ? "" : "s");
        }
    }
    uint64_t rows = srt_host_row_count(w);
    uint64_t failures = srt_host_failure_count(w);
    ret = rows ? marks_failed : 3;
    if (srt_host_finish(w, &e) < 0) {
        cli_error("record: %s", e.msg);
        ret = 1;
    }
    cr.rows = collect_out_rows(cr.out);
    int cr_close = collect_out_close(cr.out, &e);
    cr.out = NULL;
    if (cr_close < 0) {
        cli_error("record: %s", e.msg);
        ret = 1;
    }
    if (carma_manifest(&cr, cr.cycles ? "complete" : "failed", stopped,
                       sig ? "signal" : "duration") < 0)
        ret = 1;
    if (o.c.verbose >= 0)
        fprintf(stderr, "carma: record: %s: %llu rows (%s), %llu read failures, %llu cycles\n",
                host, (unsigned long long)rows, srt_host_source_name(src),
                (unsigned long long)failures, (unsigned long long)cr.cycles);
    if (rows == 0)
        cli_error("record: no row was written");
out_sampler:
    sampler_free(s);
out_mask:
    /* The signals stay blocked until the process exits: one that comes after the last cycle
     * (or during a failed start) has done its work, and unblocked it would kill carma on its
     * way out, the exit status lost. */
    return ret;
}
