/*
 * carma stat: run one command under measurement, like time(1) or perf stat.
 *
 * The command runs in its own process group; carma samples every channel on its clock
 * while it runs, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT to the group, and when it ends
 * prints per channel energy and average power, the CPU energy attributed to the command by
 * its process tree's share of the node's CPU time, and the operational CO2e. carma exits
 * with the command's exit status (128+N when killed by signal N, 127 when not found).
 * With -o DIR it keeps a run directory: manifest.json, samples.csv, summary.json.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/carbon.h"
#include "analysis/ledger.h"
#include "analysis/splitter.h"
#include "cli/cli.h"
#include "cli/common.h"
#include "cli/interrupt.h"
#include "cli/outdir.h"
#include "cli/short_run.h"
#include "cli/caveats.h"
#include "core/fmt.h"
#include "core/file.h"
#include "core/jsonutil.h"
#include "core/parse.h"
#include "core/timeutil.h"
#include "rundir/manifest.h"
#include "rundir/rows.h"
#include "rundir/writer.h"
#include "sampler/samples_csv.h"
#include "serve/markd.h"
#include "workload/jobs.h"
#include "workload/launcher.h"
#include "workload/proctree.h"
#include "workload/supervise.h"

#define ATTRIB_EPOCH_MIN_NS (500 * NS_PER_MS)
/* New members of the command's tree are found among the pids created since the last update;
 * a full scan of /proc (every /proc/PID/stat of the machine) runs only where /proc/loadavg
 * cannot tell the last pid, at most this often, and when carma reaps an orphan. A member
 * found late loses nothing: its time is in its parent's cutime, or in carma's rusage. */
#define PROCTREE_SCAN_NS (1000 * NS_PER_MS)

struct stat_opts {
    struct common_opts c;
    const char *run_dir;
    const char *json_out;
    const char *region;
    double intensity;
    double pue;
    int64_t baseline_ns;
    int64_t grace_ns;
    bool group_set; /* --socket-group */
    gid_t gid;
    char **argv;
};

struct stat_run {
    struct stat_opts *o;
    struct sampler *s;
    struct markd *marks; /* the marks socket of -o DIR (serve/markd.h), or NULL */
    struct samples_csv *csv;
    bool csv_failed;
    struct jobs ctl;     /* the command's process, carma's signals (workload/jobs) */
    struct job_proc cmd; /* the command: its pid (and group), exit status, start and end */
    struct proctree tree;
    bool have_tree;
    bool scan_due; /* look for new members of the tree at the next update */
    uint64_t tree_prev_ns;
    /*
     * The command's CPU-side energy (analysis/splitter.h), one job: its tree, the CPU channels
     * one channel. CPU times count in 10 ms clock ticks, so ticks are grouped into epochs of
     * at least ATTRIB_EPOCH_MIN_NS, split with busy times in ns. all: every joule by the tree's
     * share of the node's busy time (no static part); dyn, when the static power is known: the
     * energy above it by the tree's share of the busy time the static power does not already
     * pay for (a baseline's background load taken out of the node's, none given to "other").
     */
    struct splitter all, dyn;
    struct ledger all_l, dyn_l;
    bool have_static;
    uint64_t ep_busy_ns, ep_tree_ns; /* the open epoch's CPU times */
    uint64_t tree_ns, busy_ns;       /* the split epochs' */
    int cpu_idx[CHANNELS_MAX];
    size_t ncpu_idx;
    double static_w;           /* CPU-side static power, NAN when unknown */
    double static_busy;        /* CPUs busy on average while static_w was measured */
    const char *static_source; /* "baseline", "model" or NULL */
    double baseline_s;         /* the baseline's length, 0 when none was measured */
    int forwarded_signal;
    struct interruption stop; /* the first signal carma received, and when */
    bool dir_created;         /* -o DIR was made by this carma (else it was empty) */
    struct rundir_writer out; /* -o DIR (rundir/writer) */
    bool start_failed;        /* the command could not be started */
    struct carbon_intensity ci;
    /* DCGM's CPU utilization per socket (fields 1100-1104) over the command's ticks: the sum
     * and count of the values present, per figure, and the ticks that gave any */
    struct common_dcgm_cpus dcgm;
    struct {
        double sum[RUNDIR_CPU_UTIL_FIGURES];
        uint64_t n[RUNDIR_CPU_UTIL_FIGURES];
        uint64_t samples;
    } dcgm_util[DCGM_SRC_CPUS_MAX];
};

static void help(void)
{
    printf("usage: carma stat [OPTIONS] -- CMD [ARGS...]\n\n"
           "Runs CMD under measurement and prints, when it ends, per channel energy and\n"
           "average power, the CPU energy attributed to CMD (its process tree's share of the\n"
           "node's CPU busy time) and the operational CO2e. Exits with CMD's exit status\n"
           "(128+N if a signal N killed it, 127 if it was not found).\n\n"
           "options:\n" COMMON_OPTIONS_HELP
           "  -o, --output DIR    keep a run directory: manifest.json, samples.csv, summary.json;\n"
           "                      DIR is new or holds none of these (never overwritten)\n"
           "  --json-out FILE     write the summary as JSON to FILE\n"
           "  --json              print the summary as JSON on stderr instead of the table\n"
           "  --baseline T        measure the node's idle power for T before starting CMD, so\n"
           "                      that CMD's dynamic (above-idle) CPU energy can be reported\n"
           "  --region CODE       grid carbon intensity of a region (data/grid_intensity.csv,\n"
           "                      e.g. USA, FRA; default WORLD, 475 g/kWh)\n"
           "  --intensity G       grid carbon intensity in gCO2e/kWh\n"
           "  --pue X             power usage effectiveness of the facility (default 1.0)\n"
           "  --grace T           after forwarding SIGINT/SIGTERM/SIGHUP/SIGQUIT, wait T for\n"
           "                      the command's group to end, then SIGKILL it (default 5s;\n"
           "                      a second signal kills at once)\n" SOCKET_GROUP_HELP);
}

static int parse_args(struct stat_opts *o, int argc, char **argv)
{
    enum {
        OPT_JSON_OUT = OPT_COMMON_LAST + 1,
        OPT_BASELINE,
        OPT_REGION,
        OPT_INTENSITY,
        OPT_PUE,
        OPT_GRACE,
        OPT_SOCKET_GROUP,
    };
    static const struct option longopts[] = {
        COMMON_LONG_OPTIONS,
        {"output", required_argument, NULL, 'o'},
        {"json-out", required_argument, NULL, OPT_JSON_OUT},
        {"baseline", required_argument, NULL, OPT_BASELINE},
        {"region", required_argument, NULL, OPT_REGION},
        {"intensity", required_argument, NULL, OPT_INTENSITY},
        {"pue", required_argument, NULL, OPT_PUE},
        {"grace", required_argument, NULL, OPT_GRACE},
        {"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "+qvho:", longopts, "stat")) != -1) {
        int r = common_opts_handle(&o->c, c, optarg);
        if (r < 0)
            return -1;
        if (r > 0)
            continue;
        switch (c) {
        case 'o':
            o->run_dir = optarg;
            break;
        case OPT_JSON_OUT:
            o->json_out = optarg;
            break;
        case OPT_BASELINE:
            if (cli_duration("--baseline", optarg, 0, 600 * NS_PER_S, &o->baseline_ns) < 0)
                return -1;
            break;
        case OPT_REGION:
            o->region = optarg;
            break;
        case OPT_INTENSITY:
            if (parse_double(optarg, &o->intensity) < 0 || o->intensity <= 0 ||
                o->intensity > 5000) {
                cli_error("--intensity: '%s' is not a carbon intensity in gCO2e/kWh "
                          "(0 < G <= 5000)",
                          optarg);
                return -1;
            }
            break;
        case OPT_PUE:
            if (parse_double(optarg, &o->pue) < 0 || o->pue < 1.0 || o->pue > 5.0) {
                cli_error("--pue: '%s' is not a PUE between 1.0 and 5.0", optarg);
                return -1;
            }
            break;
        case OPT_GRACE:
            if (cli_duration("--grace", optarg, 0, 3600 * NS_PER_S, &o->grace_ns) < 0)
                return -1;
            break;
        case OPT_SOCKET_GROUP:
            if (cli_socket_group("stat", optarg, &o->gid) < 0)
                return -1;
            o->group_set = true;
            break;
        case 'h':
            help();
            return 1;
        default:
            return -1;
        }
    }
    if (o->region && o->intensity > 0) {
        cli_error("give --region or --intensity, not both");
        return -1;
    }
    if (optind >= argc) {
        cli_error("stat: no command given (usage: carma stat [OPTIONS] -- CMD [ARGS...])");
        return -1;
    }
    o->argv = argv + optind;
    return 0;
}

/* CPU-side energy of the current tick. */
static double cpu_tick_j(const struct stat_run *r)
{
    double j = 0;
    for (size_t k = 0; k < r->ncpu_idx; k++)
        j += r->s->st[r->cpu_idx[k]].tick_energy_j;
    return j;
}

/* The command's attribution from the static power known when it starts. */
static void attrib_init(struct stat_run *r, int64_t epoch_ns)
{
    static const char *const job[] = {"command"};
    r->have_static = r->static_w >= 0; /* NAN: unknown */
    double none = NAN, sw = r->static_w;
    struct splitter *sp[] = {&r->all, &r->dyn};
    for (size_t k = 0; k < 2; k++) {
        splitter_init(sp[k], 1, SPLIT_IDLE);
        splitter_add_channel(sp[k], "cpu", KIND_CPU);
        splitter_node(sp[k], 0);
        sp[k]->background = false;
        sp[k]->busy_unit_ns = 1;
        sp[k]->epoch_ns = epoch_ns;
    }
    splitter_set_static(&r->all, &none, 0);
    splitter_set_static(&r->dyn, &sw, r->have_static && r->static_busy > 0 ? r->static_busy : 0);
    ledger_init(&r->all_l, 1, job, NULL, NULL);
    ledger_init(&r->dyn_l, 1, job, NULL, NULL);
}

/* Adds one tick (CPU-side energy de_j over dt_ns, the node's busy and the tree's CPU time
 * deltas in ns) and splits the epoch when it is over (always when final). */
static void attrib_tick(struct stat_run *r, double de_j, int64_t dt_ns, uint64_t busy_ns,
                        uint64_t tree_ns, bool final)
{
    splitter_tick(&r->all, &de_j, dt_ns);
    if (r->have_static)
        splitter_tick(&r->dyn, &de_j, dt_ns);
    r->ep_busy_ns += busy_ns;
    r->ep_tree_ns += tree_ns;
    if (!splitter_due(&r->all, false, final))
        return;
    /* the node's busy time counts in clock ticks while the tree's reaped time is exact: a
     * busy time below the tree's own is taken as the tree's */
    if (r->ep_busy_ns < r->ep_tree_ns)
        r->ep_busy_ns = r->ep_tree_ns;
    double tree = (double)r->ep_tree_ns;
    bool running = true;
    struct splitter_busy b = {.job = &tree, .running = &running, .node = (double)r->ep_busy_ns};
    struct ledger_time at = {.ts = "", .g_per_j = 0};
    splitter_split(&r->all, &r->all_l, &b, final, &at);
    if (r->have_static)
        splitter_split(&r->dyn, &r->dyn_l, &b, final, &at);
    r->tree_ns += r->ep_tree_ns;
    r->busy_ns += r->ep_busy_ns;
    r->ep_busy_ns = r->ep_tree_ns = 0;
}

/* The tree's share of the node's busy time over the epochs split. */
static double attrib_share(const struct stat_run *r)
{
    if (r->busy_ns == 0)
        return r->tree_ns > 0 ? 1.0 : 0.0;
    double s = (double)r->tree_ns / (double)r->busy_ns;
    return s > 1.0 ? 1.0 : s;
}

/* This tick's rows; final: the batch held goes out now (sampler/samples_csv). */
static void write_samples(struct stat_run *r, bool final)
{
    if (!r->csv)
        return;
    struct carma_err e = {0};
    /* e is set at the first failure of each condition only (core/journal) */
    int w = samples_csv_write_tick(r->csv, r->s, &e);
    if (final && w == 0)
        w = samples_csv_flush(r->csv, &e);
    if (w < 0 && e.code) {
        r->csv_failed = true;
        cli_error("%s; measuring goes on, the summary will still be printed", e.msg);
    }
}

/* Adds this tick's DCGM CPU utilization of each socket (the values present) to the window's. */
static void dcgm_util_tick(struct stat_run *r)
{
    for (size_t k = 0; k < r->dcgm.n; k++) {
        struct dcgm_cpu_util u;
        if (dcgm_source_cpu_util(r->dcgm.src, r->dcgm.socket[k], &u) < 0)
            continue;
        const double v[RUNDIR_CPU_UTIL_FIGURES] = {u.total, u.user, u.nice, u.sys, u.irq};
        r->dcgm_util[k].samples++;
        for (int f = 0; f < RUNDIR_CPU_UTIL_FIGURES; f++)
            if (!isnan(v[f])) {
                r->dcgm_util[k].sum[f] += v[f];
                r->dcgm_util[k].n[f]++;
            }
    }
}

/* One tick during the command: sample, journal, attribute. */
static void run_tick(struct stat_run *r, bool final)
{
    sampler_tick(r->s);
    write_samples(r, final);
    markd_publish_sampler(r->marks, r->s);
    dcgm_util_tick(r);
    /* CPU times advance in 10 ms clock ticks: the tree is re-read with proc/stat, so that the
     * busy and tree deltas cover the same interval */
    if (final)
        sampler_refresh_util(r->s);
    if (!r->have_tree)
        return;
    /* every tick's energy goes in; the CPU times only when they were re-read */
    uint64_t tree_d = 0, busy_d = 0;
    if (r->s->util_fresh || !r->s->have_util) {
        uint64_t tree = proctree_update(&r->tree, r->s->t_now, final || r->scan_due);
        r->scan_due = false;
        tree_d = tree - r->tree_prev_ns;
        r->tree_prev_ns = tree;
        if (r->s->have_util)
            busy_d = r->s->util.busy_ticks_delta * (uint64_t)(NS_PER_S / r->tree.clk_tck);
    }
    attrib_tick(r, cpu_tick_j(r), r->s->t_now - r->s->t_prev, busy_d, tree_d, final);
}

/* An orphan of the tree was reaped: its siblings may be new members, looked for at the next
 * update. */
static void note_orphans(struct stat_run *r)
{
    if (r->ctl.orphans)
        r->scan_due = true;
    r->ctl.orphans = 0;
}

/* A terminating signal came (the jobs' on_stop, before it is forwarded to the command's whole
 * group, which gets SIGKILL after the grace period, or at once on a second signal): says so.
 * Before the command started (the baseline), it is not started. */
static void say_forwarding(void *ctx, int sig)
{
    struct stat_run *r = ctx;
    interruption_note(&r->stop, sig);
    r->forwarded_signal = sig;
    if (r->cmd.pid <= 0)
        return;
    char name[32], grace[32];
    interruption_signal_name(sig, name, sizeof name);
    time_format_duration(r->ctl.grace_ns, grace, sizeof grace);
    if (r->ctl.signals >= 2)
        cli_error("%s received again: SIGKILL to the command's process group", name);
    else
        cli_error("%s received: forwarded to the command's process group (SIGKILL "
                  "after %s if it still runs)",
                  name, grace);
}

/* The command's group outlived the grace period (the jobs' on_kill, before its SIGKILL). */
static void say_killing(void *ctx, size_t k)
{
    (void)k;
    struct stat_run *r = ctx;
    char name[32], grace[32];
    time_format_duration(r->ctl.grace_ns, grace, sizeof grace);
    cli_error("the command's process group still runs %s after %s: SIGKILL", grace,
              interruption_signal_name(r->stop.sig, name, sizeof name));
}

/* The baseline's energy: the CPU-side channels', added tick by tick. */
struct baseline_sum {
    struct stat_run *r;
    double cpu_j;
};

static void baseline_tick(void *ctx)
{
    struct baseline_sum *b = ctx;
    write_samples(b->r, false);
    b->cpu_j += cpu_tick_j(b->r);
}

static int measure_baseline(struct stat_run *r)
{
    struct baseline_sum sum = {.r = r};
    struct jobs_baseline b;
    int e = jobs_baseline(&r->ctl, r->s, r->o->baseline_ns, baseline_tick, &sum, &b);
    note_orphans(r);
    if (e < 0)
        return e;
    double dt = b.dt_s;
    if (dt > 0 && r->ncpu_idx > 0) {
        uint64_t busy_ns = b.busy_ticks * (uint64_t)(NS_PER_S / sysconf(_SC_CLK_TCK));
        r->static_w = sum.cpu_j / dt;
        r->static_busy = (double)busy_ns / 1e9 / dt;
        r->static_source = "baseline";
        r->baseline_s = dt;
    }
    return 0;
}

static json_t *manifest_json(const struct stat_run *r, bool final)
{
    static const char *const schemas[] = {"samples_csv", "summary_json", NULL};
    json_t *opts = json_object();
    json_object_set_new(opts, "sources",
                        r->o->c.sampler.sources ? json_string(r->o->c.sampler.sources)
                                                : json_null());
    json_object_set_new(opts, "baseline_s", json_real((double)r->o->baseline_ns / 1e9));
    json_t *argv = json_array();
    for (char **a = r->o->argv; *a; a++)
        json_array_append_new(argv, json_string(*a));
    struct rundir_manifest m = {
        .producer = "carma stat",
        .version = CARMA_VERSION,
        .schemas = schemas,
        .options = opts,
        .command = argv,
        .status = !final            ? "running"
                  : r->start_failed ? "failed"
                  : r->stop.sig     ? "interrupted"
                                    : "complete",
        .interruption = interruption_json(&r->stop),
    };
    return rundir_manifest_json(r->s, &m);
}

static void write_manifest(struct stat_run *r, bool final)
{
    if (r->o->run_dir)
        rundir_writer_write_json(&r->out, "manifest.json", manifest_json(r, final));
}

/* "measured", "estimated", or "measured+estimated" when the node's channels mix both */
static json_t *node_method(const struct sampler *s, const int *idx, size_t n)
{
    bool meas = false, est = false;
    for (size_t k = 0; k < n; k++) {
        meas = meas || s->set.ch[idx[k]].method == METHOD_MEASURED;
        est = est || s->set.ch[idx[k]].method == METHOD_ESTIMATED;
    }
    if (!n)
        return json_null();
    return json_string(meas && est ? "measured+estimated" : meas ? "measured" : "estimated");
}

/* dcgm_cpu_util: per DCGM CPU socket, the mean of each figure over the command's ticks that
 * gave it (null when none did) and the count of ticks that gave any. */
static json_t *dcgm_util_json(const struct stat_run *r)
{
    static const char *const names[RUNDIR_CPU_UTIL_FIGURES] = {"total", "user", "nice", "sys",
                                                               "irq"};
    json_t *arr = json_array();
    for (size_t k = 0; k < r->dcgm.n; k++) {
        json_t *o = json_object();
        json_object_set_new(o, "socket", json_integer(r->dcgm.socket[k]));
        for (int f = 0; f < RUNDIR_CPU_UTIL_FIGURES; f++)
            jsonutil_set_num(
                o, names[f],
                r->dcgm_util[k].n[f] ? r->dcgm_util[k].sum[f] / (double)r->dcgm_util[k].n[f] : NAN);
        json_object_set_new(o, "samples", json_integer((json_int_t)r->dcgm_util[k].samples));
        json_array_append_new(arr, o);
    }
    return arr;
}

static json_t *summary_json(struct stat_run *r)
{
    const struct sampler *s = r->s;
    json_t *j = json_object();
    json_object_set_new(j, "exit_status", json_integer(r->cmd.exit_status));
    json_object_set_new(j, "status", json_string(r->stop.sig ? "interrupted" : "complete"));
    json_object_set_new(j, "interruption", interruption_json(&r->stop));
    double dur = (double)(r->cmd.end_mono - r->cmd.start_mono) / (double)NS_PER_S;
    jsonutil_set_num(j, "duration_s", dur);
    jsonutil_set_num(j, "start_unix", (double)s->real_win / 1e9);
    jsonutil_set_num(j, "end_unix", (double)s->real_now / 1e9);
    jsonutil_set_num(j, "command_start_unix", (double)r->cmd.start_real / 1e9);
    jsonutil_set_num(j, "command_end_unix", (double)r->cmd.end_real / 1e9);
    jsonutil_set_num(j, "interval_s", (double)s->interval_ns / 1e9);
    json_object_set_new(j, "ticks", json_integer((json_int_t)s->ticks));
    /* shorter than two ticks: the figures below are kept, but are not a measurement */
    char too_short[512];
    short_run_text(r->cmd.end_mono - r->cmd.start_mono, s->interval_ns, too_short,
                   sizeof too_short);
    json_object_set_new(j, "too_short",
                        short_run_is(r->cmd.end_mono - r->cmd.start_mono, s->interval_ns)
                            ? json_string(too_short)
                            : json_null());
    json_t *chans = json_array();
    for (size_t i = 0; i < s->set.n; i++) {
        const struct channel *c = &s->set.ch[i];
        const struct chan_state *st = &s->st[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(c->name));
        json_object_set_new(o, "source", json_string(c->source));
        json_object_set_new(o, "kind", json_string(channel_kind_name(c->kind)));
        json_object_set_new(o, "domain", json_string(channel_domain_name(c->domain)));
        json_object_set_new(o, "method", json_string(channel_method_name(c->method)));
        json_object_set_new(o, "socket", c->socket >= 0 ? json_integer(c->socket) : json_null());
        /* known when some energy was integrated inside the window; the average is over the
         * time that energy covers, so a sensor that vanished is not diluted */
        double covered = sampler_window_covered_s(s, i);
        bool known = covered > 0;
        double ej = sampler_window_energy_j(s, i);
        jsonutil_set_num(o, "energy_j", known ? ej : NAN);
        jsonutil_set_num(o, "avg_power_w", known ? ej / covered : NAN);
        jsonutil_set_num(o, "covered_s", covered);
        if (c->form == FORM_COUNTER)
            jsonutil_set_num(o, "gauge_drift_pct", sampler_window_drift_pct(s, i));
        jsonutil_set_num(o, "min_power_w", isfinite(st->min_w) ? st->min_w : NAN);
        jsonutil_set_num(o, "max_power_w", isfinite(st->max_w) ? st->max_w : NAN);
        json_object_set_new(o, "samples",
                            json_integer((json_int_t)(st->samples - st->win_samples)));
        json_object_set_new(o, "invalid",
                            json_integer((json_int_t)(st->invalid - st->win_invalid)));
        json_object_set_new(o, "wraps", json_integer((json_int_t)(st->wraps - st->win_wraps)));
        json_object_set_new(o, "resets", json_integer((json_int_t)(st->resets - st->win_resets)));
        if (st->invalid > st->win_invalid)
            json_object_set_new(o, "last_error", json_string(reading_error_text(st->last_err)));
        json_array_append_new(chans, o);
    }
    json_object_set_new(j, "channels", chans);
    int node_idx[CHANNELS_MAX];
    size_t nn = sampler_select_node(s, node_idx);
    double node_j = 0;
    size_t node_known = 0;
    json_t *node_names = json_array(), *node_missing = json_array();
    for (size_t k = 0; k < nn; k++) {
        size_t i = (size_t)node_idx[k];
        json_array_append_new(node_names, json_string(s->set.ch[i].name));
        if (sampler_window_covered_s(s, i) > 0) {
            node_j += sampler_window_energy_j(s, i);
            node_known++;
        } else {
            json_array_append_new(node_missing, json_string(s->set.ch[i].name));
        }
    }
    json_t *node = json_object();
    json_object_set_new(node, "channels", node_names);
    /* a channel without a reading is missing from the sum, never counted as 0 J */
    json_object_set_new(node, "missing_channels", node_missing);
    /* a partial sum would understate the node: it is unknown when a channel is missing */
    if (!node_known || node_known < nn)
        node_j = NAN;
    jsonutil_set_num(node, "energy_j", node_j);
    json_object_set_new(node, "method", node_method(s, node_idx, nn));
    json_t *rest = rest_of_system_json(s);
    if (rest)
        json_object_set_new(node, "rest_of_system", rest);
    json_object_set_new(j, "node", node);
    if (rest)
        json_object_set_new(j, "meters", rundir_manifest_meters(s));
    json_t *cmd = json_object();
    json_t *cpu_names = json_array();
    for (size_t k = 0; k < r->ncpu_idx; k++)
        json_array_append_new(cpu_names, json_string(s->set.ch[r->cpu_idx[k]].name));
    json_object_set_new(cmd, "cpu_channels", cpu_names);
    json_object_set_new(cmd, "method",
                        r->ncpu_idx
                            ? json_string(channel_method_name(s->set.ch[r->cpu_idx[0]].method))
                            : json_null());
    bool cpu_known = false;
    for (size_t k = 0; k < r->ncpu_idx; k++)
        cpu_known = cpu_known || sampler_window_covered_s(s, (size_t)r->cpu_idx[k]) > 0;
    bool attr = r->have_tree && cpu_known;
    double cpu_j = r->all_l.job[0].energy_j;
    jsonutil_set_num(cmd, "cpu_energy_j", attr ? cpu_j : NAN);
    jsonutil_set_num(cmd, "cpu_share", attr ? attrib_share(r) : NAN);
    jsonutil_set_num(cmd, "cpu_time_s", r->have_tree ? (double)r->tree_ns / 1e9 : NAN);
    jsonutil_set_num(cmd, "node_busy_time_s",
                     r->have_tree && s->have_util ? (double)r->busy_ns / 1e9 : NAN);
    if (r->dcgm.n)
        json_object_set_new(cmd, "dcgm_cpu_util", dcgm_util_json(r));
    jsonutil_set_num(cmd, "node_cpu_energy_j", attr ? r->all_l.total_j : NAN);
    jsonutil_set_num(cmd, "dynamic_cpu_energy_j",
                     attr && r->have_static ? r->dyn_l.job[0].energy_j : NAN);
    jsonutil_set_num(cmd, "static_power_w", r->static_w);
    jsonutil_set_num(cmd, "static_busy_cpus", r->static_source ? r->static_busy : NAN);
    json_object_set_new(cmd, "static_source",
                        r->static_source ? json_string(r->static_source) : json_null());
    json_object_set_new(j, "command", cmd);
    json_t *carbon = json_object();
    jsonutil_set_num(carbon, "g_co2e", carbon_operational_g(node_j, r->o->pue, r->ci.g_per_kwh));
    jsonutil_set_num(carbon, "command_cpu_g_co2e",
                     attr ? carbon_operational_g(cpu_j, r->o->pue, r->ci.g_per_kwh) : NAN);
    jsonutil_set_num(carbon, "g_per_kwh", r->ci.g_per_kwh);
    jsonutil_set_num(carbon, "pue", r->o->pue);
    json_object_set_new(carbon, "region",
                        r->ci.region[0] ? json_string(r->ci.region) : json_null());
    json_object_set_new(carbon, "intensity_source", json_string(r->ci.source));
    json_object_set_new(carbon, "energy_basis", json_string("node"));
    json_object_set_new(j, "carbon", carbon);
    /* what the numbers are not (cli/caveats.h): printed, and repeated by carma report */
    json_t *warns = json_array();
    char msg[4096];
    if (caveat_estimated(s, node_idx, nn, msg, sizeof msg))
        json_array_append_new(warns, json_string(msg));
    if (r->baseline_s > 0 && s->have_util &&
        caveat_baseline_stat(r->static_busy, s->util.ncpu, r->baseline_s, msg, sizeof msg))
        json_array_append_new(warns, json_string(msg));
    json_object_set_new(j, "warnings", warns);
    return j;
}

/* a figure printed with 3 decimals: never "-0.000" */
#define Z3(x) fmt_round_zero((x), 3)

/* A ratio of dcgm_cpu_util as a percentage with one decimal, "?" for null. */
static const char *pct_text(const json_t *v, char *buf, size_t cap)
{
    if (json_is_number(v))
        snprintf(buf, cap, "%.1f%%", fmt_round_zero(100 * json_number_value(v), 1));
    else
        snprintf(buf, cap, "?");
    return buf;
}

/* One line per socket of summary_json's dcgm_cpu_util (nothing when there is none). */
static void dcgm_util_print(FILE *f, const json_t *arr)
{
    size_t k;
    json_t *o;
    json_array_foreach(arr, k, o)
    {
        json_int_t n = json_integer_value(json_object_get(o, "samples"));
        fprintf(f, "  DCGM CPU %-4lld ",
                (long long)json_integer_value(json_object_get(o, "socket")));
        if (n == 0) {
            fprintf(f, "utilization: no value from DCGM during the command\n");
            continue;
        }
        char t[5][24];
        fprintf(f, "utilization %s (user %s, nice %s, sys %s, irq %s; mean of %lld readings)\n",
                pct_text(json_object_get(o, "total"), t[0], sizeof t[0]),
                pct_text(json_object_get(o, "user"), t[1], sizeof t[1]),
                pct_text(json_object_get(o, "nice"), t[2], sizeof t[2]),
                pct_text(json_object_get(o, "sys"), t[3], sizeof t[3]),
                pct_text(json_object_get(o, "irq"), t[4], sizeof t[4]), (long long)n);
    }
}

static void print_summary(struct stat_run *r, const json_t *j)
{
    const struct sampler *s = r->s;
    FILE *f = stderr;
    double dur = (double)(r->cmd.end_mono - r->cmd.start_mono) / (double)NS_PER_S;
    fprintf(f, "\n carma stat: '%s", r->o->argv[0]);
    for (char **a = r->o->argv + 1; *a; a++)
        fprintf(f, " %s", *a);
    if (WIFSIGNALED(r->cmd.wstatus))
        fprintf(f, "' killed by signal %d after %.3f s\n\n", WTERMSIG(r->cmd.wstatus), dur);
    else
        fprintf(f, "' exited with status %d after %.3f s\n\n", r->cmd.exit_status, dur);
    if (r->stop.sig) {
        char what[128];
        interruption_text(&r->stop, what, sizeof what);
        fprintf(
            f, "  interrupted by %s: forwarded to the command; the figures cover it to its end\n\n",
            what);
    }
    json_t *too_short = json_object_get(j, "too_short");
    bool na = json_is_string(too_short); /* too short: n/a, not a misleading number */
    if (na)
        fprintf(f, "  too short: %s\n\n", json_string_value(too_short));
    if (s->set.n == 0) {
        fprintf(f, "  no power channel: nothing measured or estimated (see `carma sensors`)\n");
    } else {
        fprintf(f, "  %-40s %-6s %-9s %-9s %12s %12s %10s\n", "channel", "kind", "domain", "method",
                "energy J", "energy Wh", "avg W");
        json_t *chans = json_object_get(j, "channels");
        for (size_t i = 0; i < s->set.n; i++) {
            const struct channel *c = &s->set.ch[i];
            const struct chan_state *st = &s->st[i];
            json_t *o = json_array_get(chans, i);
            json_t *ej = json_object_get(o, "energy_j"), *pw = json_object_get(o, "avg_power_w");
            if (json_is_real(ej) && !na)
                fprintf(f, "  %-40s %-6s %-9s %-9s %12.3f %12.6f %10.3f", c->name,
                        channel_kind_name(c->kind), channel_domain_name(c->domain),
                        channel_method_name(c->method), Z3(json_real_value(ej)),
                        fmt_round_zero(json_real_value(ej) / 3600.0, 6),
                        json_is_real(pw) ? Z3(json_real_value(pw)) : NAN);
            else
                fprintf(f, "  %-40s %-6s %-9s %-9s %12s %12s %10s", c->name,
                        channel_kind_name(c->kind), channel_domain_name(c->domain),
                        channel_method_name(c->method), na ? "n/a" : "?", na ? "n/a" : "?",
                        na ? "n/a" : "?");
            if (st->invalid > st->win_invalid)
                fprintf(f, "  (%llu missing readings: %s)",
                        (unsigned long long)(st->invalid - st->win_invalid),
                        reading_error_text(st->last_err));
            if (st->resets > st->win_resets)
                fprintf(f, "  (%llu counter reset(s) skipped)",
                        (unsigned long long)(st->resets - st->win_resets));
            fprintf(f, "\n");
        }
    }
    json_t *node = json_object_get(j, "node");
    json_t *nj = json_object_get(node, "energy_j");
    if (na && s->set.n > 0)
        fprintf(f, "\n  node energy, command CPU and carbon: n/a (too short)\n");
    if (json_is_real(nj) && !na) {
        fprintf(f, "\n  node energy   %.3f J = %.6f Wh (%s: ", Z3(json_real_value(nj)),
                fmt_round_zero(json_real_value(nj) / 3600.0, 6),
                json_string_value(json_object_get(node, "method")));
        json_t *names = json_object_get(node, "channels");
        for (size_t k = 0; k < json_array_size(names); k++)
            fprintf(f, "%s%s", k ? " + " : "", json_string_value(json_array_get(names, k)));
        fprintf(f, ")\n");
    }
    if (!na)
        rest_of_system_print(f, json_object_get(node, "rest_of_system"));
    meters_print(f, s, "  meter         ");
    json_t *cmd = json_object_get(j, "command");
    json_t *ce = json_object_get(cmd, "cpu_energy_j");
    if (json_is_real(ce) && !na) {
        fprintf(f,
                "  command CPU   %.3f J, %.1f%% of the node's CPU busy time "
                "(%.3f s of %.3f s)\n",
                Z3(json_real_value(ce)), 100 * json_real_value(json_object_get(cmd, "cpu_share")),
                json_real_value(json_object_get(cmd, "cpu_time_s")),
                json_real_value(json_object_get(cmd, "node_busy_time_s")));
        json_t *dyn = json_object_get(cmd, "dynamic_cpu_energy_j");
        if (json_is_real(dyn))
            fprintf(f, "  command dyn.  %.3f J above a static %.3f W (%s)\n",
                    Z3(json_real_value(dyn)), r->static_w, r->static_source);
    }
    dcgm_util_print(f, json_object_get(cmd, "dcgm_cpu_util"));
    json_t *carbon = json_object_get(j, "carbon");
    json_t *g = json_object_get(carbon, "g_co2e");
    if (json_is_real(g) && !na)
        fprintf(f, "  carbon        %.4f g CO2e (node energy x PUE %.2g x %.4g g/kWh)\n",
                json_real_value(g), r->o->pue, r->ci.g_per_kwh);
    if (!na)
        fprintf(f, "                intensity: %s\n", r->ci.source);
    size_t k;
    json_t *w;
    for (size_t i = 0; i < s->nsrc; i++) {
        if (s->src[i].status != 0 || !s->src[i].note[0])
            continue;
        /* a note the warnings below repeat (the estimate's basis) is said once, there */
        static const char said[] = "estimated, not measured: ";
        const char *note = s->src[i].note;
        if (strncmp(note, said, sizeof said - 1) == 0)
            note += sizeof said - 1;
        bool repeated = false;
        json_array_foreach(json_object_get(j, "warnings"), k, w)
        {
            const char *text = json_string_value(w);
            repeated = repeated || (text && strstr(text, note));
        }
        if (!repeated)
            fprintf(f, "  note (%s): %s\n", s->src[i].ops->name, s->src[i].note);
    }
    json_array_foreach(json_object_get(j, "warnings"), k, w)
        fprintf(f, "  warning: %s\n", json_string_value(w));
    fprintf(f, "\n");
}

/* Fails early, before the command runs, when path cannot be written later. */
static int check_writable(const char *path)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        cli_error("--json-out %s: is a directory", path);
        return -1;
    }
    if (access(dir, W_OK) < 0) {
        cli_error("--json-out %s: cannot write in %s: %s", path, dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Claims -o DIR and opens its samples.csv and manifest. 0 (also without -o), 2 when DIR holds
 * something, 1 on another error (printed). */
static int setup_run_dir(struct stat_run *r)
{
    if (!r->o->run_dir)
        return 0;
    static const char *const outputs[] = {OUTDIR_CLAIM, "samples.csv", "summary.json",
                                          "marks.csv",  "carma.sock",  NULL};
    int c = outdir_claim("stat", "-o", r->o->run_dir, outputs, &r->dir_created);
    if (c != 0)
        return c;
    rundir_writer_use(&r->out, r->o->run_dir);
    r->csv = rundir_writer_open_samples(&r->out, r->s);
    if (!r->csv) {
        file_unclaim_dir(r->o->run_dir, OUTDIR_CLAIM, r->dir_created);
        return 1;
    }
    write_manifest(r, false);
    return 0;
}

int cmd_stat(int argc, char **argv)
{
    struct stat_opts o = {.pue = 1.0, .grace_ns = 5 * NS_PER_S};
    common_opts_init(&o.c);
    int pr = parse_args(&o, argc, argv);
    if (pr != 0)
        return pr > 0 ? 0 : 2;
    struct stat_run r = {.o = &o, .static_w = NAN};
    rundir_writer_init(&r.out, cli_say, NULL);
    struct supervisor sup = {.fd = -1}; /* kills the command if carma is killed */
    r.ctl = (struct jobs){
        .sigfd = -1,
        .grace_ns = o.grace_ns,
        .ticks_first = true,
        .sup = &sup,
        .on_stop = say_forwarding,
        .on_kill = say_killing,
        .ctx = &r,
    };
    r.cmd.timeout_ns = -1;
    jobs_add(&r.ctl, &r.cmd);
    signal(SIGXFSZ, SIG_IGN); /* past a file size limit a write fails (EFBIG), as on a full disk */
    struct carma_err e = {0};
    if (carbon_intensity_resolve(o.region, o.intensity, &r.ci, &e) < 0) {
        cli_error("--region: %s", e.msg);
        return 2;
    }
    if (o.baseline_ns && o.baseline_ns < 2 * o.c.sampler.interval_ns) {
        cli_error("--baseline must be at least two sampling intervals");
        return 2;
    }
    r.s = sampler_new(&o.c.sampler, &e);
    if (!r.s) {
        cli_error("%s", e.msg);
        return 2;
    }
    if (common_meters_check(r.s, "--meter") < 0) {
        sampler_free(r.s);
        return 2;
    }
    int status = 1;
    r.ncpu_idx = sampler_select_cpu(r.s, r.cpu_idx);
    common_dcgm_cpus(r.s, &r.dcgm);
    /* the model knows its static power; a baseline measurement replaces it */
    if (r.ncpu_idx) {
        double idle = 0;
        bool all = true;
        for (size_t k = 0; k < r.ncpu_idx; k++) {
            double w = r.s->set.ch[r.cpu_idx[k]].idle_w;
            if (isnan(w))
                all = false;
            else
                idle += w;
        }
        if (all) {
            r.static_w = idle;
            r.static_source = "model";
        }
    }
    if (jobs_open(&r.ctl) < 0) {
        cli_error("cannot set up signal handling: %s", strerror(-r.ctl.sigfd));
        goto out;
    }
    /* before carma is a subreaper: the supervisor must not be carma's child */
    if (supervisor_start(&sup, NULL, &e) < 0)
        cli_error("%s (a killed carma would leave the command running)", e.msg);
    /* orphans of the command's tree are reparented to carma, which reaps them and counts
     * their CPU time */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN); /* a closed stderr must not cost the JSON summary */
    if (o.json_out && check_writable(o.json_out) < 0) {
        status = 2;
        goto out;
    }
    /* -o DIR is claimed before anything is measured: 2 when it holds something */
    int sd = setup_run_dir(&r);
    if (sd != 0) {
        status = sd;
        goto out;
    }
    if (o.run_dir) {
        /* the marks socket: CARMA_SOCKET in the command's environment */
        struct markd_opts mo = {.dir = o.run_dir,
                                .version = CARMA_VERSION,
                                .group_set = o.group_set,
                                .gid = o.gid,
                                .warn = cli_say};
        r.marks = markd_start(&mo, &e);
        if (r.marks)
            setenv("CARMA_SOCKET", markd_socket(r.marks), 1);
        else
            cli_error("%s (marks are off: the command's windows will not be reported)", e.msg);
    }
    if (sampler_start(r.s) < 0) {
        cli_error("cannot start the sampling timer: %s", strerror(errno));
        goto out;
    }
    sampler_tick(r.s);
    write_samples(&r, false);
    markd_publish_sampler(r.marks, r.s);
    if (o.baseline_ns) {
        int b = measure_baseline(&r);
        if (b == -EINTR) {
            cli_error("interrupted during the baseline; the command was not started");
            status = 128 + r.forwarded_signal;
            write_manifest(&r, true);
            goto out;
        }
    }
    /* the figures reported are those of the command's run, not of the baseline */
    sampler_window_start(r.s);
    struct launch_opts lo = {.argv = o.argv, .foreground = true};
    if (jobs_spawn(&r.ctl, &r.cmd, &lo, &e) < 0) {
        cli_error("%s", e.msg);
        status = r.cmd.exit_status;
        r.start_failed = true;
        write_manifest(&r, true);
        goto out;
    }
    markd_add_root(r.marks, r.cmd.pid, "cmd");
    attrib_init(&r,
                r.s->interval_ns > ATTRIB_EPOCH_MIN_NS ? r.s->interval_ns : ATTRIB_EPOCH_MIN_NS);
    if (proctree_init(&r.tree, r.cmd.pid, "/proc", PROCTREE_SCAN_NS) == 0) {
        r.have_tree = true;
        r.cmd.tree = &r.tree;
        r.tree.adopter = getpid();
        r.tree_prev_ns = proctree_update(&r.tree, time_mono_ns(), true);
    }
    /* until the command ends; after a forwarded signal, also until the rest of its group
     * has ended or the grace period is over (then the group gets SIGKILL) */
    for (;;) {
        if (r.cmd.exited && (r.ctl.signals == 0 || !jobs_alive(&r.cmd)))
            break;
        int64_t next = 0;
        jobs_kill_step(&r.ctl, 0, time_mono_ns(), &next);
        int ev = jobs_wait(&r.ctl, sampler_fd(r.s), next);
        if (ev < 0) {
            cli_error("poll: %s", strerror(-ev));
            break;
        }
        note_orphans(&r);
        if (ev == 1) {
            sampler_ack(r.s);
            run_tick(&r, false);
        }
    }
    if (!r.cmd.exited) {
        r.cmd.end_real = time_real_ns();
        r.cmd.end_mono = time_mono_ns();
    }
    launcher_reclaim_tty();
    /* a last tick so that the energy covers the command to its end */
    run_tick(&r, true);
    status = r.cmd.exit_status;
    json_t *j = summary_json(&r);
    if (o.c.verbose >= 0 && o.c.json) /* stdout is the command's: the JSON goes to stderr too */
        cli_print_json(stderr, j);
    else if (o.c.verbose >= 0)
        print_summary(&r, j);
    if (o.json_out) {
        int w = jsonutil_write_file(j, o.json_out);
        if (w < 0)
            cli_error("cannot write %s: %s", o.json_out, strerror(-w));
    }
    if (r.marks) {
        struct carma_err me = {0};
        int left = markd_stop(r.marks, r.s->real_now, &me);
        r.marks = NULL;
        if (left < 0)
            cli_error("%s", me.msg);
        else if (left > 0 && o.c.verbose >= 0)
            cli_error("%d window%s still open at the end (marks.csv: unended)", left,
                      left == 1 ? "" : "s");
    }
    if (o.run_dir) {
        /* the count of what the warning above began */
        rundir_writer_losses(&r.out, samples_csv_journal(r.csv), NULL);
        rundir_writer_write_json(&r.out, "summary.json", json_incref(j));
        write_manifest(&r, true);
    }
    json_decref(j);
out:
    markd_stop(r.marks, r.s ? r.s->real_now : 0, NULL);
    supervisor_stop(&sup);
    if (r.have_tree)
        proctree_done(&r.tree);
    samples_csv_close(r.csv);
    jobs_close(&r.ctl);
    sampler_free(r.s);
    return status;
}
