/*
 * carma run: the experiment orchestrator.
 *
 * Loads an experiment file, measures the node's baseline, launches every workload (after its
 * delay) in its own process group and, where the machine allows it, its own cgroup v2,
 * samples every channel on one clock, and apportions each tick's energy to the workloads in
 * real time (src/analysis/split.c): CPU-side channels by each workload's share of the node's
 * busy time above the baseline's, the static part by the idle policy; what processes outside
 * the experiment used is "other". Carbon per workload: operational (energy × PUE × grid
 * intensity at the time) and embodied (device manufacture, by time share), side by side.
 * Everything lands in a run directory (docs/formats.md); the exit status is 0 when every
 * workload exited 0, 1 otherwise, 2 for a bad experiment or usage.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/carbon.h"
#include "analysis/split.h"
#include "cli/cli.h"
#include "cli/common.h"
#include "core/csv.h"
#include "core/fmt.h"
#include "core/journal.h"
#include "core/jsonutil.h"
#include "core/parse.h"
#include "core/timeutil.h"
#include "export/carma_files.h"
#include "report/html.h"
#include "report/live.h"
#include "core/pidlive.h"
#include "rundir/crash.h"
#include "rundir/manifest.h"
#include "rundir/report.h"
#include "rundir/rows.h"
#include "rundir/writer.h"
#include "sampler/samples_csv.h"
#include "serve/markd.h"
#include "workload/cgroup.h"
#include "workload/experiment.h"
#include "workload/launcher.h"
#include "workload/perfcount.h"
#include "workload/proctree.h"
#include "workload/supervise.h"
#include "cli/run.h"
#include "cli/follow_opt.h"
#include "cli/interrupt.h"
#include "cli/caveats.h"
#include "cli/escaped.h"

/* kills the workloads if carma is killed (supervise.h) */
static struct supervisor run_sup = {.fd = -1};
/* run.lock, held for the run's life (rundir/crash.h); processes.jsonl, what carma cleanup
 * stops after a crash */
static int run_lock = -1;
static struct journal *run_procs;

static void help(void)
{
    printf("usage: carma run [OPTIONS] EXPERIMENT.json\n\n"
           "Runs every workload of the experiment side by side, measures the node, apportions\n"
           "the energy to each workload in real time and accounts its carbon. Writes a run\n"
           "directory (printed first) and ends with a per-workload report. Exit status: 0 when\n"
           "every workload exited 0, 1 otherwise, 2 for a bad experiment file or usage. When\n"
           "carma itself is killed, `carma cleanup DIR` stops what it left and finishes DIR.\n\n"
           "options:\n" COMMON_OPTIONS_HELP
           "  -o, --output DIR    where run directories go (default: runs)\n" SOCKET_GROUP_HELP
           "  --json              print {\"run_dir\", \"report\": report.json} on stdout instead\n"
           "                      of the directory's path and the text report\n"
           "  --baseline T        idle measurement before the workloads (default: the file's\n"
           "                      monitoring.baseline_s, else 3s; 0 skips it)\n"
           "  --grace T           after SIGTERM, wait T before SIGKILL (default "
           "5s)\n" FOLLOW_OPTIONS_HELP);
}

/* ---- the run directory (rundir/writer) ---- */

/* CARMA's files (nvidia_smi_power.csv, perf.log, ...) from the run's own (export/carma_files):
 * followed at every event summary, so that a run killed outright leaves them up to then, and
 * written whole at the end. */
static struct carma_files *carma_follow;
static bool carma_follow_failed;

static void carma_files_tick(struct run *r)
{
    struct carma_err e = {0};
    if (!carma_follow && !carma_follow_failed && !(carma_follow = carma_files_open(r->dir)))
        carma_follow_failed = true;
    if (carma_follow && carma_files_follow(carma_follow, &e) < 0 && !carma_follow_failed) {
        cli_error("%s; CARMA's files are written at the end of the run", e.msg);
        carma_follow_failed = true;
    }
}

static void carma_files(struct run *r)
{
    struct carma_err e = {0};
    carma_files_free(carma_follow);
    carma_follow = NULL;
    if (carma_files_write(r->dir, &e) < 0) {
        cli_error("%s; CARMA's files are not all written", e.msg);
        if (e.code != -EINVAL && e.code != -ENOENT) /* a write that failed, not bad content */
            rundir_writer_failed(&r->out, "CARMA's files");
    }
}

/* report.html: `carma report DIR --format html` of the finished run (report/html). */
static void write_html(struct run *r)
{
    struct carma_err e = {0};
    struct html_opts ho = {.version = CARMA_VERSION};
    char *page = NULL;
    size_t len = 0;
    if (html_run(r->dir, NULL, &ho, &page, &len, &e) < 0) {
        /* what the files hold (a run without samples): said, not a failed write */
        cli_error("no %s/report.html: the run's files give no page: %s", r->dir, e.msg);
        return;
    }
    rundir_writer_write_file(&r->out, "report.html", page, len);
    free(page);
}

static json_t *manifest(struct run *r, const char *status)
{
    const char *schemas[8] = {"samples_csv", "attribution_csv", "report_json", "node_util_csv"};
    size_t n = 4;
    if (r->gpu)
        schemas[n++] = "utilization_csv";
    if (r->dcgm.n)
        schemas[n++] = "cpu_util_csv";
    for (size_t k = 0; k < r->x.n; k++)
        if (r->x.w[k].profile_nsys) {
            schemas[n++] = "nsys_gpu_csv"; /* import-nsys */
            break;
        }
    json_t *opts = json_object();
    json_object_set_new(opts, "idle_policy", json_string(split_policy_name(r->policy)));
    json_object_set_new(opts, "cgroups", json_boolean(r->have_base));
    if (!r->have_base)
        json_object_set_new(opts, "cgroups_unavailable", json_string(r->cgroup_note));
    struct rundir_manifest m = {
        .producer = "carma run",
        .version = CARMA_VERSION,
        .schemas = schemas,
        .options = opts,
        .status = status,
        .interruption = interruption_json(&r->stop),
    };
    return rundir_manifest_json(r->s, &m);
}

/* ---- workloads ---- */

/* Appends o (taken) to processes.jsonl, one compact line. */
static void record_process(struct run *r, json_t *o)
{
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(o);
    if (!line || !run_procs) {
        free(line);
        return;
    }
    size_t n = strlen(line);
    char *p = realloc(line, n + 2);
    if (p) {
        p[n] = '\n';
        rundir_writer_append(&r->out, run_procs, p, n + 1, 1, time_real_ns());
    }
    free(p ? p : line);
}

/* pid's start time (clock ticks since boot), 0 when unknown. */
static uint64_t start_ticks_of(pid_t pid)
{
    uint64_t t = 0;
    return pid_start_ticks(pid, &t, NULL) == 0 ? t : 0;
}

/* A cgroup's directory's inode (a new cgroup of the same name has another), 0 when unknown. */
static uint64_t cgroup_ino(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* The supervisor's line of processes.jsonl (carma's cgroup with it). */
static void record_supervisor(struct run *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "role", json_string("supervisor"));
    json_object_set_new(o, "pid", json_integer(run_sup.pid));
    json_object_set_new(
        o, "pid_start_ticks",
        json_integer((json_int_t)(run_sup.pid > 0 ? start_ticks_of(run_sup.pid) : 0)));
    json_object_set_new(o, "cgroup", r->have_base ? json_string(r->base.path) : json_null());
    json_object_set_new(o, "cgroup_ino",
                        r->have_base ? json_integer((json_int_t)cgroup_ino(r->base.path))
                                     : json_null());
    record_process(r, o);
}

/* A workload's line of processes.jsonl, as it started. */
static void record_workload(struct run *r, const struct job *j)
{
    json_t *o = json_object();
    json_object_set_new(o, "role", json_string("workload"));
    json_object_set_new(o, "name", json_string(j->spec->name));
    json_object_set_new(o, "type", jsonutil_str(j->spec->type));
    json_object_set_new(o, "pid", json_integer(j->proc.pid));
    json_object_set_new(o, "pgid", json_integer(j->proc.pid));
    json_object_set_new(o, "pid_start_ticks",
                        json_integer((json_int_t)start_ticks_of(j->proc.pid)));
    json_object_set_new(o, "start_unix", jsonutil_real((double)j->proc.start_real / 1e9));
    json_object_set_new(o, "cgroup", j->proc.have_cg ? json_string(j->proc.cg.path) : json_null());
    json_object_set_new(o, "cgroup_ino",
                        j->proc.have_cg ? json_integer((json_int_t)cgroup_ino(j->proc.cg.path))
                                        : json_null());
    record_process(r, o);
}

static void start_job(struct run *r, struct job *j)
{
    char out[4200], err[4200];
    snprintf(out, sizeof out, "%s/logs/%s.out", r->dir, j->spec->name);
    snprintf(err, sizeof err, "%s/logs/%s.err", r->dir, j->spec->name);
    struct carma_err e = {0};
    if (r->have_base) {
        j->proc.have_cg = cgroup_child_create(&r->base, j->spec->name, &j->proc.cg, &e) == 0;
        if (!j->proc.have_cg)
            cli_error("%s: %s; following its process tree instead", j->spec->name, e.msg);
    }
    char **nsys_argv = run_nsys_argv(r, j);
    struct launch_opts lo = {
        .argv = nsys_argv ? nsys_argv : j->spec->argv,
        .cwd = j->spec->cwd ? j->spec->cwd : r->x.dir,
        .stdout_path = out,
        .stderr_path = err,
        .cgroup = j->proc.have_cg ? &j->proc.cg : NULL,
        .env = j->spec->env,
    };
    int spawned = jobs_spawn(&r->ctl, &j->proc, &lo, &e);
    free(nsys_argv);
    if (spawned < 0) {
        cli_error("%s: %s", j->spec->name, e.msg);
        return;
    }
    record_workload(r, j);
    markd_add_root(r->marks, j->proc.pid, j->spec->name);
    if (!j->proc.have_cg && proctree_init(&j->tree, j->proc.pid, "/proc", NS_PER_S) == 0) {
        j->have_tree = true;
        j->proc.tree = &j->tree;
    }
    perf_counters_open(&j->perf, j->proc.pid);
}

/* CPU time of the job so far (ns): exact from its cgroup, else from its process tree. */
static uint64_t job_cpu(struct run *r, struct job *j)
{
    uint64_t ns = jobs_cpu_ns(&j->proc, r->s->t_now);
    return ns > j->cpu_ns ? ns : j->cpu_ns;
}

/* Notes the terminating signal sig (the count-th) and says on stderr what carma does about it
 * (the jobs' on_stop, before it is forwarded). */
static void say_stopping(void *ctx, int sig)
{
    struct run *r = ctx;
    interruption_note(&r->stop, sig);
    size_t running = 0, waiting = 0;
    for (size_t k = 0; k < r->njobs; k++) {
        running += r->jobs[k].proc.started && !r->jobs[k].proc.done;
        waiting += !r->jobs[k].proc.started;
    }
    char name[32], grace[32], rest[96] = "";
    interruption_signal_name(sig, name, sizeof name);
    time_format_duration(r->ctl.grace_ns, grace, sizeof grace);
    if (waiting)
        snprintf(rest, sizeof rest, "; %zu not started yet will not start", waiting);
    if (!running)
        cli_error("%s received: no workload is running%s", name, rest);
    else if (r->ctl.signals >= 2)
        cli_error("%s received again: SIGKILL to %zu workload%s now%s", name, running,
                  running == 1 ? "" : "s", rest);
    else
        cli_error("%s received: stopping %zu workload%s (%s to each one's process group, "
                  "SIGKILL after %s)%s",
                  name, running, running == 1 ? "" : "s", name, grace, rest);
    fflush(stderr);
}

/* Says that workload k outlived the grace period after the signal that stopped the run (the
 * jobs' on_kill, before its SIGKILL). */
static void say_killing(void *ctx, size_t k)
{
    struct run *r = ctx;
    if (!r->stop.sig)
        return;
    char name[32], grace[32];
    time_format_duration(r->ctl.grace_ns, grace, sizeof grace);
    cli_error("%s: still running %s after %s: SIGKILL", r->jobs[k].spec->name, grace,
              interruption_signal_name(r->stop.sig, name, sizeof name));
}

/* ---- attribution (analysis/splitter.h, analysis/ledger.h) ---- */

/* attribution.csv: the rows of one split with one write(2), a killed carma, or a full disk,
 * leaves whole splits (core/journal). The ledger's sink. */
static int attr_sink(void *ctx, const char *rows, size_t len, uint64_t nrows)
{
    struct run *r = ctx;
    return rundir_writer_append(&r->out, r->attr, rows, len, nrows, r->s->real_now);
}

/* Grams of CO2e per joule at the current tick (intensity × PUE). */
static double run_g_per_j(const struct run *r)
{
    double t = (double)r->s->real_now / 1e9;
    return (r->ci.kind == CARBON_CI_SERIES ? carbon_series_at(&r->ci.series, t) : r->ci.g_per_kwh) /
           3.6e6 * r->x.pue;
}

/* Splits the energy gathered since the last fresh CPU times among the jobs (the GPUs split
 * by process are run_gpu.c's). */
static void split_pending(struct run *r, bool final, const struct ledger_time *at)
{
    const struct sampler *s = r->s;
    if (!splitter_due(&r->split, s->util_fresh || !s->have_util, final))
        return;
    double busy[SPLIT_JOBS_MAX] = {0}, jobs_busy = 0;
    bool running[SPLIT_JOBS_MAX] = {0};
    for (size_t k = 0; k < r->njobs && k < SPLIT_JOBS_MAX; k++) {
        struct job *j = &r->jobs[k];
        /* a workload that ended since the last split is read once more: its last CPU time */
        if (j->proc.started && !j->cpu_final) {
            j->cpu_ns = job_cpu(r, j);
            busy[k] = (double)(j->cpu_ns - j->cpu_prev_ns) / 1e9;
            j->cpu_prev_ns = j->cpu_ns;
            running[k] = !j->proc.done; /* a process of the workload is alive */
            jobs_busy += busy[k];
            j->cpu_final = j->proc.done;
        }
    }
    double node_busy = jobs_busy;
    if (s->have_util && s->util_fresh)
        node_busy = (double)s->util.busy_ticks_delta / (double)r->clk_tck;
    struct splitter_busy b = {.job = busy, .running = running, .node = node_busy};
    splitter_split(&r->split, &r->ledger, &b, final, at);
    ledger_flush(&r->ledger);
}

/* This tick's energy into the splitter, and the splits due (always when final). */
static void split_tick(struct run *r, bool final)
{
    double e[CHANNELS_MAX];
    for (size_t i = 0; i < r->s->set.n; i++)
        e[i] = r->s->st[i].tick_energy_j;
    splitter_tick(&r->split, e, r->s->t_now - r->s->t_prev);
    char ts[40];
    fmt_unix_us(ts, r->s->real_now);
    struct ledger_time at = {.ts = ts, .g_per_j = run_g_per_j(r)};
    run_gpu_tick(r, final, &at); /* first: the meter's split takes the GPUs' shares of the tick */
    split_pending(r, final, &at);
}

/* "measured", "estimated", or "measured+estimated" when the node's channels mix both */
static const char *run_method(const struct run *r)
{
    bool meas = false, est = false;
    for (size_t k = 0; k < r->nnode; k++) {
        meas = meas || r->s->set.ch[r->node_idx[k]].method == METHOD_MEASURED;
        est = est || r->s->set.ch[r->node_idx[k]].method == METHOD_ESTIMATED;
    }
    return meas && est ? "measured+estimated" : meas ? "measured" : est ? "estimated" : "none";
}

_Static_assert(PERFC_N == RUNDIR_FEATURES_COUNTERS, "features.csv's counters are perfcount's");

/* features.csv: the workloads' performance counters, cumulative, at each event summary */
static void features_rows(struct run *r)
{
    if (!r->features)
        return;
    char ts[40];
    fmt_unix_us(ts, r->s->real_now);
    char *text = NULL;
    size_t len = 0;
    uint64_t rows = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    for (size_t k = 0; k < r->njobs; k++) {
        struct job *j = &r->jobs[k];
        if (!j->proc.started || j->proc.pid <= 0)
            continue;
        uint64_t v[PERFC_N];
        unsigned mask = perf_counters_read(&j->perf, v);
        rundir_rows_features(f, ts, j->spec->name, (double)j->cpu_ns / 1e9, v, mask);
        rows++;
    }
    if (fclose(f) == 0 && len)
        rundir_writer_append(&r->out, r->features, text, len, rows, r->s->real_now);
    free(text);
}

/* cpu_util.csv: DCGM's utilization of each CPU socket as of its last read, one row per socket
 * (blank cells for the values DCGM did not give), all in one append */
static void cpu_util_rows(struct run *r, const char *ts)
{
    if (!r->cpu_util)
        return;
    char rows[DCGM_SRC_CPUS_MAX * 160];
    size_t len = 0, n = 0;
    for (size_t k = 0; k < r->dcgm.n; k++) {
        struct dcgm_cpu_util u;
        if (dcgm_source_cpu_util(r->dcgm.src, r->dcgm.socket[k], &u) < 0)
            u = (struct dcgm_cpu_util){NAN, NAN, NAN, NAN, NAN};
        const double v[RUNDIR_CPU_UTIL_FIGURES] = {u.total, u.user, u.nice, u.sys, u.irq};
        size_t l =
            rundir_rows_cpu_util(rows + len, sizeof rows - len, ts, r->dcgm.socket[k], "dcgm", v);
        if (!l)
            break;
        len += l;
        n++;
    }
    if (n)
        rundir_writer_append(&r->out, r->cpu_util, rows, len, n, r->s->real_now);
}

/* node_util.csv: the node's busy and total CPU time (proc/stat below the root), cumulative
 * from the first row, at every tick that re-read it: the node's side of features.csv */
static void node_util_row(struct run *r)
{
    const struct sampler *s = r->s;
    if (!r->node_util || !s->have_util || !s->util_fresh || !s->util.valid)
        return;
    const struct cpu_times *t = &s->util.node_cur;
    uint64_t busy = s->util.busy_ticks;
    uint64_t total = busy + t->idle + t->iowait;
    if (!r->nu_started) {
        r->nu_started = true;
        r->nu_busy0 = busy;
        r->nu_total0 = total;
    }
    char ts[40], row[160];
    fmt_unix_us(ts, s->real_now);
    double hz = (double)r->clk_tck;
    size_t n = rundir_rows_node_util(
        row, sizeof row, ts, (double)(busy - r->nu_busy0) / hz, (double)(total - r->nu_total0) / hz,
        s->util.primed && s->util.total_ticks_delta > 0 ? s->util.util_total : NAN);
    if (n)
        rundir_writer_append(&r->out, r->node_util, row, n, 1, r->s->real_now);
    cpu_util_rows(r, ts);
}

static void event_summary(struct run *r, double period_s)
{
    if (!r->events)
        return;
    struct rundir_event_workload w[SPLIT_JOBS_MAX];
    for (size_t k = 0; k < r->njobs; k++) {
        struct job *j = &r->jobs[k];
        struct ledger_job *a = &r->ledger.job[k];
        j->last_w = period_s > 0 ? a->event_j / period_s : NAN;
        w[k] = (struct rundir_event_workload){
            .name = j->spec->name,
            .power_w = j->last_w,
            .energy_j = a->energy_j,
            .g_co2e = a->g_op,
            .method = run_method(r),
        };
        a->event_j = 0;
    }
    features_rows(r);
    struct rundir_event ev = {
        .timestamp_unix = (double)r->s->real_now / 1e9,
        .elapsed_s = (double)(r->s->t_now - r->t_start) / 1e9,
        .w = w,
        .n = r->njobs,
        .idle_j = r->ledger.idle_j,
        .other_j = r->ledger.other_j,
        .unattributed_j = r->ledger.unattr_j,
    };
    size_t n = 0;
    char *text = rundir_rows_event(&ev, &n);
    if (text)
        rundir_writer_append(&r->out, r->events, text, n, 1, r->s->real_now);
    free(text);
}

/* The run's marks.csv, followed for the live view's open windows (report/live). */
static struct live_marks live_marks;
static bool live_marks_failed;

/* The live view (stdout a terminal): the jobs now, the node by domain, the open mark windows
 * (report/live). */
static void live_frame(struct run *r, bool finished)
{
    if (!r->live)
        return;
    struct live_view v;
    memset(&v, 0, sizeof v);
    snprintf(v.title, sizeof v.title, "%s", r->dir);
    v.elapsed_s = (double)(r->s->t_now - r->t_start) / 1e9;
    v.finished = finished;
    v.have_jobs = true;
    bool est = strcmp(run_method(r), "estimated") == 0;
    for (size_t k = 0; k < r->njobs && v.njobs < LIVE_JOBS_MAX; k++) {
        const struct job *j = &r->jobs[k];
        struct live_job *lj = &v.job[v.njobs++];
        snprintf(lj->name, sizeof lj->name, "%s", j->spec->name);
        lj->power_w = j->proc.exited ? 0.0 : j->last_w;
        lj->energy_j = r->ledger.job[k].energy_j;
        lj->g_co2e = r->ledger.job[k].g_op;
        lj->ended = j->proc.exited;
        lj->estimated = est;
    }
    v.idle_j = r->ledger.idle_j;
    v.other_j = r->ledger.other_j;
    v.unattributed_j = r->ledger.unattr_j;
    double sys = 0, sum = 0;
    bool have_sys = false;
    for (size_t i = 0; i < r->s->set.n; i++) {
        const struct channel *c = &r->s->set.ch[i];
        double w = r->s->st[i].watts;
        if (!channel_is_total(&r->s->set, i) || !isfinite(w))
            continue;
        const char *kind = channel_kind_name(c->kind);
        size_t d;
        for (d = 0; d < v.ndomains && strcmp(v.domain[d].kind, kind) != 0; d++)
            ;
        if (d == v.ndomains) {
            if (d == LIVE_DOMAINS_MAX)
                continue;
            snprintf(v.domain[d].kind, sizeof v.domain[d].kind, "%s", kind);
            v.ndomains++;
        }
        v.domain[d].power_w += w;
        v.domain[d].channels++;
        v.domain[d].estimated |= c->method == METHOD_ESTIMATED;
        if (c->kind == KIND_SYSTEM) {
            sys += w;
            have_sys = true;
        } else {
            sum += w;
        }
    }
    v.node_w = have_sys ? sys : sum;
    /* the open windows from marks.csv, each one's energy so far as its end would reply */
    struct carma_err me = {0};
    if (!live_marks_failed && live_marks_poll(&live_marks, r->dir, !finished, &me) < 0) {
        cli_error("%s; the live view shows no mark windows", me.msg);
        live_marks_failed = true;
    }
    if (!live_marks_failed) {
        if (live_marks.warning[0])
            cli_error("%s", live_marks.warning);
        live_marks.warning[0] = '\0';
        live_marks_view(&live_marks, &v, (double)r->s->real_now / 1e9);
        for (size_t k = 0; k < v.nwindows; k++)
            markd_window_energy(r->marks, (uint64_t)v.window[k].id, r->s->real_now,
                                &v.window[k].energy_j, &v.window[k].estimated);
    }
    if (finished)
        live_marks_free(&live_marks);
    struct winsize ws;
    int width = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 100;
    live_render(stdout, &v, true, width, &r->live_lines);
}

static void status_line(struct run *r)
{
    if (!r->tty)
        return;
    fprintf(stderr, "\r[%6.1fs]", (double)(r->s->t_now - r->t_start) / 1e9);
    for (size_t k = 0; k < r->njobs; k++) {
        struct job *j = &r->jobs[k];
        fprintf(stderr, " %s %.1f W %.4f Wh %.4f g%s |", j->spec->name,
                isfinite(j->last_w) ? j->last_w : 0.0, r->ledger.job[k].energy_j / 3600.0,
                r->ledger.job[k].g_op, j->proc.exited ? " (ended)" : "");
    }
    fprintf(stderr, "\033[K");
    fflush(stderr);
}

static void pstree_snapshot(struct run *r)
{
    if (!r->pstree)
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return;
    rundir_rows_pstree_begin(out, (double)r->s->real_now / 1e9);
    for (size_t k = 0; k < r->njobs; k++) {
        struct job *j = &r->jobs[k];
        if (!j->proc.started || j->proc.done)
            continue;
        rundir_rows_pstree_job(out, j->spec->name, (int)j->proc.pid,
                               j->proc.have_cg ? j->proc.cg.path : NULL);
        if (j->proc.have_cg) {
            char path[4200];
            snprintf(path, sizeof path, "%s/cgroup.procs", j->proc.cg.path);
            FILE *f = fopen(path, "re");
            char line[64];
            while (f && fgets(line, sizeof line, f))
                rundir_rows_pstree_line(out, line);
            if (f)
                fclose(f);
        } else if (j->have_tree) {
            for (int m = 0; m < j->tree.n; m++)
                rundir_rows_pstree_pid(out, (int)j->tree.m[m].pid);
        }
    }
    if (fclose(out) == 0 && len) /* one snapshot, whole or not at all */
        rundir_writer_append(&r->out, r->pstree, text, len, 1, r->s->real_now);
    free(text);
}

/* samples.csv: this tick's rows (a failure said once per condition, counted at the end);
 * final: the batch held goes out now, before the files are read. */
static void run_samples(struct run *r, bool final)
{
    struct carma_err warn = {0};
    if (!r->csv)
        return;
    int w = samples_csv_write_tick(r->csv, r->s, &warn);
    if (final && w == 0)
        w = samples_csv_flush(r->csv, &warn);
    if (w < 0 && warn.code)
        cli_error("%s", warn.msg);
}

static void tick(struct run *r)
{
    sampler_tick(r->s);
    run_samples(r, false);
    markd_publish_sampler(r->marks, r->s);
    node_util_row(r);
    split_tick(r, false);
    if (r->s->t_now - r->last_event >= EVENT_PERIOD_NS) {
        event_summary(r, (double)(r->s->t_now - r->last_event) / 1e9);
        carma_files_tick(r);
        r->last_event = r->s->t_now;
        status_line(r);
        live_frame(r, false);
    }
    if (r->pstree_due || r->s->t_now - r->last_pstree >= PSTREE_PERIOD_NS) {
        r->pstree_due = false;
        pstree_snapshot(r);
        r->last_pstree = r->s->t_now;
    }
}

/* ---- carbon and the report ---- */

/* A GPU is measured on this node (a channel of kind gpu). */
static bool gpu_measured(const struct run *r)
{
    return caveat_has_kind(r->s, KIND_GPU);
}

/* The warnings known before the workloads start: estimated power, GPUs not measured. Printed
 * on stderr now, kept for the reports. */
static void start_warnings(struct run *r)
{
    char msg[4096];
    r->warnings = json_array();
    if (caveat_estimated(r->s, r->node_idx, r->nnode, msg, sizeof msg))
        json_array_append_new(r->warnings, json_string(msg));
    if (!gpu_measured(r)) {
        struct embodied_fact f;
        struct carma_err e = {0};
        bool declared = carbon_embodied_resolve("gpu", "default", r->x.embodied, r->x.n_embodied,
                                                &f, &e) == 0 &&
                        carbon_embodied_declared(&f);
        for (size_t k = 0; k < r->njobs; k++)
            if (workload_wants_gpu(r->jobs[k].spec)) {
                caveat_gpu_missing(r->s, r->jobs[k].spec, declared, msg, sizeof msg);
                json_array_append_new(r->warnings, json_string(msg));
            }
    }
    size_t k;
    json_t *v;
    json_array_foreach(r->warnings, k, v)
        fprintf(stderr, "carma: warning: %s\n", json_string_value(v));
}

/* The warnings of the report: those of the start, then the baseline's load. */
static json_t *report_warnings(struct run *r)
{
    json_t *w = r->warnings ? json_deep_copy(r->warnings) : json_array();
    char msg[1024];
    int ncpu = r->s->have_util ? r->s->util.ncpu : 0;
    if (r->baseline_s > 0 &&
        caveat_baseline(r->baseline_busy_cpus, ncpu, r->baseline_s, r->split.bg_other_j,
                        split_policy_name(r->policy), msg, sizeof msg))
        json_array_append_new(w, json_string(msg));
    return w;
}

/* report.json's and report.txt's figures (rundir/report) and what they point to. */
struct run_report {
    struct rundir_report_in in;
    struct rundir_report_job job[SPLIT_JOBS_MAX];
    struct rundir_report_node node[CHANNELS_MAX];
    struct rundir_report_gpu gpu[RUN_GPUS_MAX];
    char stopped[128];
    char *system_text, *outcome_text;
};

static struct run_report run_report;

/* Gathers the run's figures into p for rundir/report. */
static void report_input(struct run *r, struct run_report *p)
{
    memset(p, 0, sizeof *p);
    for (size_t k = 0; k < r->njobs; k++) {
        struct job *j = &r->jobs[k];
        struct rundir_report_job *o = &p->job[k];
        *o = (struct rundir_report_job){
            .name = j->spec->name,
            .type = j->spec->type,
            .exit_status = j->proc.exit_status,
            .timed_out = j->proc.timed_out,
            .duration_s = (double)(j->proc.end_mono - j->proc.start_mono) / 1e9,
            .cpu_s = (double)j->cpu_ns / 1e9,
            .n_cpus = j->spec->n_cpus,
            .wants_gpu = workload_wants_gpu(j->spec),
        };
        o->ngpus = experiment_spec_gpus(j->spec, o->gpus, RUNDIR_REPORT_GPUS_MAX);
        o->perf_mask = perf_counters_read(&j->perf, o->perf);
        for (int i = 0; i < PERFC_N; i++)
            if (!(o->perf_mask & (1u << i)))
                o->perf_error[i] = perf_counter_error_text(&j->perf, i);
    }
    for (size_t k = 0; k < r->nnode; k++) {
        const struct channel *c = &r->s->set.ch[r->node_idx[k]];
        p->node[k] = (struct rundir_report_node){
            .name = c->name, .kind = c->kind, .static_w = r->static_w[r->node_idx[k]]};
    }
    if (r->stop.sig)
        interruption_text(&r->stop, p->stopped, sizeof p->stopped);
    json_t *rest = rest_of_system_json(r->s);
    p->in = (struct rundir_report_in){
        .experiment = r->x.name,
        .run_dir = r->dir,
        .duration_s = sampler_window_s(r->s),
        .end_unix = (double)r->s->real_now / 1e9,
        .status = r->stop.sig ? "interrupted" : "complete",
        .interruption = interruption_json(&r->stop),
        .interruption_text = r->stop.sig ? p->stopped : NULL,
        .idle_policy = split_policy_name(r->policy),
        .method = run_method(r),
        .static_source = r->static_source,
        .cpu_time_source = r->have_base ? "cgroup" : "proc",
        .baseline_s = r->baseline_s,
        .baseline_busy_cpus = r->baseline_busy_cpus,
        .baseline_other_j = r->split.bg_other_j,
        .have_cpus = r->s->have_util,
        .ncpu = r->s->have_util ? r->s->util.ncpu : 0,
        .nsockets = r->s->have_util ? r->s->util.nsockets : 0,
        .embodied = r->x.embodied,
        .n_embodied = r->x.n_embodied,
        .gpu_measured = gpu_measured(r),
        .job = p->job,
        .njobs = r->njobs,
        .ledger = &r->ledger,
        .node = p->node,
        .nnode = r->nnode,
        .rest_of_system = rest,
        .meters = rest ? rundir_manifest_meters(r->s) : NULL,
        .g_per_kwh = r->ci.g_per_kwh,
        .intensity_source = r->ci.source,
        .pue = r->x.pue,
        .warnings = report_warnings(r),
    };
    run_gpu_report(r, &p->in, p->gpu);
}

/* report.txt's lines in carma's words (cli/common, cli/run_outcome), once report.json (rep)
 * is final: the rest of the system and the meters, the workloads that did not end well; and
 * the GPUs' figures, split again by nsys (run_nsys_finish) or not. */
static void report_lines(struct run *r, struct run_report *p, const json_t *rep)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f;
    const json_t *rest = json_object_get(rep, "rest_of_system");
    if (rest && (f = open_memstream(&text, &len))) {
        rest_of_system_print(f, rest);
        meters_print(f, r->s, "  meter ");
        if (fclose(f) == 0)
            p->in.system_text = p->system_text = text;
        else
            free(text);
    }
    text = NULL;
    if ((f = open_memstream(&text, &len))) {
        run_outcome_text(r, f);
        if (fclose(f) == 0)
            p->in.outcome_text = p->outcome_text = text;
        else
            free(text);
    }
    run_gpu_report(r, &p->in, p->gpu);
}

/* Frees what report_input made. */
static void report_input_done(struct run_report *p)
{
    json_decref(p->in.interruption);
    json_decref(p->in.rest_of_system);
    json_decref(p->in.meters);
    json_decref(p->in.warnings);
    free(p->system_text);
    free(p->outcome_text);
    memset(p, 0, sizeof *p);
}

/* ---- main ---- */

/* Waits for the next tick (1: taken), signals (handled) or until; 0 otherwise, <0 on error. */
static int wait_event(struct run *r, int64_t until)
{
    int ev = jobs_wait(&r->ctl, sampler_fd(r->s), until);
    if (ev == 1)
        sampler_ack(r->s);
    return ev;
}

/* The baseline's rows: samples.csv and node_util.csv at each of its ticks. */
static void baseline_rows(void *ctx)
{
    struct run *r = ctx;
    run_samples(r, false);
    node_util_row(r);
}

static int baseline(struct run *r, int64_t ns)
{
    struct jobs_baseline b;
    int e = jobs_baseline(&r->ctl, r->s, ns, baseline_rows, r, &b);
    if (e < 0)
        return e;
    double dt = b.dt_s;
    if (dt <= 0)
        return 0;
    for (size_t i = 0; i < r->s->set.n; i++)
        r->static_w[i] = r->s->st[i].samples ? b.energy_j[i] / dt : NAN;
    if (r->s->have_util)
        r->static_busy = (double)b.busy_ticks / (double)r->clk_tck / dt;
    r->baseline_s = dt;
    r->baseline_busy_cpus = r->s->have_util ? r->static_busy : NAN;
    r->static_source = "baseline";
    return 0;
}

int cmd_run(int argc, char **argv)
{
    struct common_opts co;
    common_opts_init(&co);
    const char *runs = "runs";
    int64_t baseline_ns = -1, grace_ns = 5 * NS_PER_S;
    bool interval_given = false;
    struct follow_opts fo = {0};
    struct follower follower = {0};
    bool group_set = false;
    gid_t gid = 0;
    enum { OPT_BASELINE = OPT_COMMON_LAST + 1, OPT_GRACE, OPT_SOCKET_GROUP };
    static const struct option longopts[] = {
        COMMON_LONG_OPTIONS,
        {"output", required_argument, NULL, 'o'},
        {"baseline", required_argument, NULL, OPT_BASELINE},
        {"grace", required_argument, NULL, OPT_GRACE},
        {"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
        FOLLOW_LONG_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "qvho:", longopts, "run")) != -1) {
        int h = common_opts_handle(&co, c, optarg);
        if (h < 0)
            return 2;
        if (h > 0) {
            interval_given = interval_given || c == OPT_INTERVAL;
            continue;
        }
        h = follow_opt_handle(&fo, "run", c, optarg);
        if (h < 0)
            return 2;
        if (h > 0)
            continue;
        switch (c) {
        case 'o':
            runs = optarg;
            break;
        case OPT_BASELINE:
            if (cli_duration("--baseline", optarg, 0, 600 * NS_PER_S, &baseline_ns) < 0)
                return 2;
            break;
        case OPT_GRACE:
            if (cli_duration("--grace", optarg, 0, 3600 * NS_PER_S, &grace_ns) < 0)
                return 2;
            break;
        case OPT_SOCKET_GROUP:
            if (cli_socket_group("run", optarg, &gid) < 0)
                return 2;
            group_set = true;
            break;
        case 'h':
            help();
            return 0;
        default:
            return 2;
        }
    }
    if (optind + 1 != argc) {
        cli_error("run: give one experiment file (usage: carma run [OPTIONS] EXPERIMENT.json)");
        return 2;
    }
    struct run *r = calloc(1, sizeof *r);
    if (!r)
        return 1;
    signal(SIGXFSZ, SIG_IGN); /* past a file size limit a write fails (EFBIG), as on a full disk */
    rundir_writer_init(&r->out, cli_say, NULL);
    r->socket_group = group_set;
    r->gid = gid;
    r->dir = r->out.dir;
    r->ctl = (struct jobs){
        .sigfd = -1,
        .grace_ns = grace_ns,
        .linger = true,
        .sup = &run_sup,
        .on_stop = say_stopping,
        .on_kill = say_killing,
        .ctx = r,
    };
    r->clk_tck = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
    int status = 2;
    const char *gpu_status = "failed";
    char *errors = NULL;
    if (experiment_load(argv[optind], &r->x, &errors) < 0) {
        fprintf(stderr, "%s", errors ? errors : "cannot load the experiment\n");
        free(errors);
        goto out;
    }
    if (run_nsys_check(&r->x) < 0)
        goto out;
    r->njobs = r->x.n;
    if (r->njobs > SPLIT_JOBS_MAX) {
        cli_error("%s: at most %d workloads", argv[optind], SPLIT_JOBS_MAX);
        goto out;
    }
    r->policy = r->x.idle_policy;
    if (!interval_given && r->x.interval_ns)
        co.sampler.interval_ns = r->x.interval_ns;
    if (!co.sampler.sources && r->x.sources)
        co.sampler.sources = r->x.sources;
    /* --meter replaces the file's monitoring.meter */
    const char *meter_option = "--meter";
    if (!co.sampler.n_meters && r->x.meter) {
        co.sampler.meters[co.sampler.n_meters++] = r->x.meter;
        meter_option = "monitoring.meter";
    }
    if (baseline_ns < 0)
        baseline_ns = (int64_t)llround(r->x.baseline_s * 1e9);
    if (baseline_ns && baseline_ns < 2 * co.sampler.interval_ns) {
        cli_error("the baseline must be at least two sampling intervals");
        goto out;
    }
    struct carma_err e = {0};
    if (carbon_intensity_resolve_series(r->x.intensity_file, r->x.region, r->x.g_per_kwh, &r->ci,
                                        &e) < 0) {
        cli_error("%s", e.msg);
        goto out;
    }
    r->s = sampler_new(&co.sampler, &e);
    if (!r->s) {
        cli_error("%s", e.msg);
        goto out;
    }
    if (common_meters_check(r->s, meter_option) < 0)
        goto out;
    r->nnode = sampler_select_node(r->s, r->node_idx);
    common_dcgm_cpus(r->s, &r->dcgm);
    splitter_init(&r->split, r->njobs, r->policy);
    for (size_t i = 0; i < r->s->set.n; i++)
        splitter_add_channel(&r->split, r->s->set.ch[i].name, r->s->set.ch[i].kind);
    for (size_t k = 0; k < r->nnode; k++)
        splitter_node(&r->split, (size_t)r->node_idx[k]);
    if (r->nnode > 0 && channel_is_meter(&r->s->set.ch[r->node_idx[0]])) {
        int parts[CHANNELS_MAX];
        size_t np = sampler_select_metered(r->s, parts);
        splitter_meter(&r->split, parts, np);
    }
    for (size_t i = 0; i < r->s->set.n; i++) {
        r->static_w[i] = r->s->set.ch[i].idle_w; /* a model's idle power, else NAN */
        if (!isnan(r->static_w[i]))
            r->static_source = "model";
    }
    r->jobs = calloc(r->njobs, sizeof *r->jobs);
    if (!r->jobs)
        goto out;
    for (size_t k = 0; k < r->njobs; k++) {
        struct job *j = &r->jobs[k];
        j->spec = &r->x.w[k];
        j->proc.timeout_ns = j->spec->timeout_s > 0 ? (int64_t)(j->spec->timeout_s * 1e9) : -1;
        jobs_add(&r->ctl, &j->proc);
        perf_counters_init(&j->perf);
    }
    status = 1;
    if (rundir_writer_create(&r->out, runs, r->x.name, time(NULL), &e) < 0) {
        cli_error("%s", e.msg);
        goto out;
    }
    if ((run_lock = rundir_crash_lock(r->dir, 1, NULL, &e)) < 0)
        cli_error("%s (carma cleanup cannot tell this run from a crashed one)", e.msg);
    rundir_writer_reserve(&r->out);
    if (!co.json) /* --json: the directory is in the one JSON document at the end */
        printf("%s\n", r->dir);
    fflush(stdout);
    start_warnings(r);
    if (follower_start(&follower, &fo, NULL, "run") < 0)
        goto out;
    rundir_writer_write_json(&r->out, "experiment.json", json_deep_copy(r->x.resolved));
    rundir_writer_write_json(&r->out, "manifest.json", manifest(r, "running"));
    r->csv = rundir_writer_open_samples(&r->out, r->s);
    r->attr = rundir_writer_open_journal(&r->out, "attribution.csv",
                                         "timestamp_unix,channel,job,joules\r\n", "rows");
    const char *names[SPLIT_JOBS_MAX];
    for (size_t k = 0; k < r->njobs; k++)
        names[k] = r->jobs[k].spec->name;
    ledger_init(&r->ledger, r->njobs, names, r->attr ? attr_sink : NULL, r);
    r->events = rundir_writer_open_journal(&r->out, "event_summaries.jsonl", NULL, "lines");
    r->pstree = rundir_writer_open_journal(&r->out, "pstree.log", NULL, "snapshots");
    run_procs = rundir_writer_open_journal(&r->out, "processes.jsonl", NULL, "lines");
    r->features =
        rundir_writer_open_journal(&r->out, "features.csv", RUNDIR_FEATURES_HEADER, "rows");
    r->node_util =
        rundir_writer_open_journal(&r->out, "node_util.csv", RUNDIR_NODE_UTIL_HEADER, "rows");
    if (r->dcgm.n)
        r->cpu_util =
            rundir_writer_open_journal(&r->out, "cpu_util.csv", RUNDIR_CPU_UTIL_HEADER, "rows");
    r->have_base = cgroup_base_create(&r->base, &e) == 0;
    if (!r->have_base)
        snprintf(r->cgroup_note, sizeof r->cgroup_note, "%s", e.msg);
    if (run_gpu_setup(r) < 0)
        goto out;
    /* the live view on a terminal's stdout; else the one-line status on a terminal's stderr */
    r->live = isatty(STDOUT_FILENO) && co.verbose >= 0;
    r->tty = !r->live && isatty(STDERR_FILENO) && co.verbose >= 0;
    jobs_open(&r->ctl);
    /* before carma is a subreaper: the supervisor must not be carma's child */
    char hint[SUPERVISE_HINT_MAX];
    snprintf(hint, sizeof hint, "to stop what is left and finish %s: carma cleanup %s", r->dir,
             r->dir);
    supervisor_hint(hint);
    if (supervisor_start(&run_sup, r->have_base ? &r->base : NULL, &e) < 0)
        cli_error("%s (a killed carma would leave its workloads running; carma cleanup %s "
                  "stops them)",
                  e.msg, r->dir);
    record_supervisor(r);
    /* the marks socket: CARMA_SOCKET in every workload's environment (its thread started
     * after the supervisor's fork) */
    struct markd_opts mo = {.dir = r->dir,
                            .version = CARMA_VERSION,
                            .group_set = r->socket_group,
                            .gid = r->gid,
                            .warn = cli_say};
    r->marks = markd_start(&mo, &e);
    if (r->marks)
        setenv("CARMA_SOCKET", markd_socket(r->marks), 1);
    else
        cli_error("%s (marks are off: the workloads' windows will not be reported)", e.msg);
    escaped_begin();
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout is an error to report, not a death */
    if (sampler_start(r->s) < 0) {
        cli_error("cannot start the sampling timer: %s", strerror(errno));
        goto out;
    }
    sampler_tick(r->s);
    run_samples(r, false);
    markd_publish_sampler(r->marks, r->s);
    node_util_row(r);
    if (baseline_ns && baseline(r, baseline_ns) == -EINTR) {
        cli_error("interrupted during the baseline; no workload was started");
        for (size_t k = 0; k < r->njobs; k++)
            r->jobs[k].proc.started = r->jobs[k].proc.exited = r->jobs[k].proc.done = true;
    }
    splitter_set_static(&r->split, r->static_w, r->static_busy);
    sampler_window_start(r->s);
    r->t_start = r->last_event = r->last_pstree = r->s->t_now;
    for (;;) {
        int64_t now = time_mono_ns(), next = 0;
        bool all_done = true;
        for (size_t k = 0; k < r->njobs; k++) {
            struct job *j = &r->jobs[k];
            int64_t due = r->t_start + (int64_t)(j->spec->delay_s * 1e9);
            if (!j->proc.started) {
                if (now >= due && !r->ctl.signals) {
                    start_job(r, j);
                    r->pstree_due = true;
                } else if (!next || due < next)
                    next = due;
            }
            jobs_tend(&r->ctl, k, now, &next);
            all_done = all_done && j->proc.done;
        }
        if (all_done)
            break;
        int ev = wait_event(r, next);
        if (ev < 0)
            break;
        if (ev == 1)
            tick(r);
    }
    sampler_tick(r->s);
    run_samples(r, true);
    markd_publish_sampler(r->marks, r->s);
    sampler_refresh_util(r->s);
    node_util_row(r);
    split_tick(r, true);
    {
        /* the windows still open end here (marks.csv: unended) */
        struct carma_err me = {0};
        int left = markd_stop(r->marks, r->s->real_now, &me);
        r->marks = NULL;
        if (left < 0)
            cli_error("%s", me.msg);
        else if (left > 0 && co.verbose >= 0)
            cli_error("%d window%s still open at the end (marks.csv: unended)", left,
                      left == 1 ? "" : "s");
    }
    event_summary(r, (double)(r->s->t_now - r->last_event) / 1e9);
    pstree_snapshot(r);
    live_frame(r, true);
    if (r->tty)
        fprintf(stderr, "\n");
    /* the workloads have ended: the follower's final poll sees their whole log directory */
    bool report_failed = follower_stop(&follower, "run", co.verbose < 0) < 0;
    /* workloads.json, CARMA's workload_pids.json, the report */
    struct rundir_workload wls[SPLIT_JOBS_MAX];
    status = 0;
    for (size_t k = 0; k < r->njobs; k++) {
        struct job *j = &r->jobs[k];
        wls[k] = (struct rundir_workload){
            .name = j->spec->name,
            .type = j->spec->type,
            .pid = (int)j->proc.pid,
            .cgroup = j->proc.have_cg ? j->proc.cg.path : NULL,
            .start_unix = j->proc.start_real ? (double)j->proc.start_real / 1e9 : NAN,
            .end_unix = j->proc.end_real ? (double)j->proc.end_real / 1e9 : NAN,
            .exit_status = j->proc.exit_status,
            .signal =
                WIFSIGNALED(j->proc.wstatus) && j->proc.pid > 0 ? WTERMSIG(j->proc.wstatus) : 0,
            .timed_out = j->proc.timed_out,
        };
        if (j->proc.exit_status != 0)
            status = 1;
    }
    if (report_failed)
        status = 1; /* reports that could not be written (said above) */
    rundir_writer_losses(&r->out, r->csv ? samples_csv_journal(r->csv) : NULL, r->warnings);
    /* the small final files first, in the room kept for them */
    rundir_writer_release(&r->out);
    rundir_writer_write_json(&r->out, "workloads.json", rundir_rows_workloads(wls, r->njobs));
    rundir_writer_write_json(&r->out, "workload_pids.json",
                             rundir_rows_workload_pids(wls, r->njobs));
    struct run_report *rr = &run_report;
    report_input(r, rr);
    json_t *rep = rundir_report_json(&rr->in);
    run_nsys_finish(r, &rep, co.verbose < 0);
    report_lines(r, rr, rep);
    char *text = NULL;
    size_t tlen = 0;
    FILE *mem = open_memstream(&text, &tlen);
    if (mem) {
        rundir_report_text(&rr->in, rep, mem);
        fclose(mem);
    }
    report_input_done(rr);
    /* the files first: a closed stdout must not cost the report */
    /* --json: report.json (which the writer takes) and the directory, one document on stdout */
    json_t *doc = co.json ? json_pack("{s:s, s:O}", "run_dir", r->dir, "report", rep) : NULL;
    rundir_writer_write_json(&r->out, "report.json", rep);
    rundir_writer_write_file(&r->out, "report.txt", text, tlen);
    rundir_writer_write_json(&r->out, "manifest.json",
                             manifest(r, r->stop.sig ? "interrupted" : "complete"));
    /* then the large ones, made from the files on disk */
    carma_files(r);
    if (doc)
        cli_print_json(stdout, doc);
    else if (text && co.verbose >= 0)
        fputs(text, stdout);
    json_decref(doc);
    free(text);
    write_html(r);
    if (r->out.incomplete[0]) {
        cli_error("%s is incomplete (%s: said above): exit status 1", r->dir, r->out.incomplete);
        status = 1;
    }
    gpu_status = r->ctl.signals ? "incomplete" : "complete";
out:
    markd_stop(r->marks, r->s ? r->s->real_now : 0, NULL);
    r->marks = NULL;
    follower_stop(&follower, "run", co.verbose < 0);
    run_gpu_done(r, gpu_status);
    if (r->csv)
        samples_csv_close(r->csv);
    journal_close(r->attr);
    ledger_done(&r->ledger);
    journal_close(r->events);
    journal_close(r->pstree);
    journal_close(run_procs);
    run_procs = NULL;
    journal_close(r->features);
    journal_close(r->node_util);
    journal_close(r->cpu_util);
    rundir_writer_release(&r->out);
    for (size_t k = 0; r->jobs && k < r->njobs; k++) {
        struct job *j = &r->jobs[k];
        jobs_cgroup_release(&j->proc);
        if (j->have_tree)
            proctree_done(&j->tree);
        perf_counters_close(&j->perf);
    }
    /* reap every child left (zombies of killed workloads reparented to carma) */
    jobs_reap_rest();
    if (r->have_base)
        cgroup_remove(&r->base);
    jobs_close(&r->ctl);
    sampler_free(r->s);
    /* without cgroups, what left its workload's process group is carma's (the subreaper's) */
    pid_t keep[SPLIT_JOBS_MAX];
    size_t nkeep = 0;
    for (size_t k = 0; r->jobs && k < r->njobs && nkeep < SPLIT_JOBS_MAX; k++)
        if (r->jobs[k].proc.pid > 0)
            keep[nkeep++] = r->jobs[k].proc.pid;
    escaped_end(keep, nkeep, r->ctl.grace_ns);
    supervisor_stop(&run_sup);
    if (run_lock >= 0)
        close(run_lock);
    run_lock = -1;
    carbon_intensity_done(&r->ci);
    experiment_free(&r->x);
    json_decref(r->warnings);
    free(r->jobs);
    free(r);
    return status;
}
