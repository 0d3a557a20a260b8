/*
 * run_gpu: the GPU side of `carma run`.
 *
 * Every GPU's energy (each total-domain GPU channel of the nvml or the dcgm source) is split
 * among the workloads on one rule per tick: the static part (the GPU's baseline power × Δt) by
 * the idle policy, the dynamic rest by the workloads' processes' SM utilization of that device
 * (analysis/splitter.h does the split, analysis/gpu_split.h has the fallbacks). NVML names
 * processes by pid; workload/pidowner.h finds whose they are (cgroup, process group, ancestry).
 * DCGM lists no process: its GPUs go by the fallback, the running workloads that own the
 * device by allocation or CUDA_VISIBLE_DEVICES sharing equally. What is read of a device
 * beside its energy comes from its source's backend (struct gpu_backend). The process lists
 * are read at most every RUN_GPU_PERIOD_NS, and the energy of the ticks in between is split on
 * the next read. Every RUN_GPU_UTIL_PERIOD_NS the device and process utilization goes to
 * utilization.csv and the GPUs' power to power/ in srt-slurm's format (srt/power.h).
 *
 * GPU numbers: a device's number is its channel's socket, NVML's index or DCGM's GPU id. The
 * two are one numbering on a machine without MIG (DCGM's GPU id is NVML's index), so that
 * allocation.gpus and the indexes of CUDA_VISIBLE_DEVICES name dcgm GPUs as they name nvml
 * ones.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/common.h"
#include "cli/import_nsys.h"
#include "cli/run.h"
#include "core/fmt.h"
#include "core/jsonutil.h"
#include "core/timeutil.h"
#include "rundir/rows.h"
#include "rundir/rundir.h"
#include "sources/dcgm.h"
#include "srt/power.h"

/* A device's utilization now: NAN where unknown. */
struct gpu_util_now {
    double gpu_pct, mem_pct; /* percent */
    double sm_active;        /* ratio 0..1 (DCGM's profiling field) */
};

/* What run_gpu reads of a GPU beside its energy, by the source of its channel. */
struct gpu_backend {
    const char *source; /* the channel's source */
    const char *(*uuid)(const struct source *s, unsigned gpu);
    /* the processes on the device into out (at most cap): their number or a negative errno;
     * NULL: the source lists none (the split falls back to the allocation) */
    int (*processes)(const struct source *s, unsigned gpu, struct nvml_proc *out, int cap);
    /* the device's utilization into *u: 0 or a negative errno */
    int (*utilization)(const struct source *s, unsigned gpu, struct gpu_util_now *u);
    /* power/'s manifest: power_w's metric (counter, gauge), its scope, gpu_util_pct's metric */
    const char *metric_counter, *metric_gauge, *power_scope, *util_metric;
};

static int nvml_util(const struct source *s, unsigned gpu, struct gpu_util_now *u)
{
    struct nvml_util n;
    int e = nvml_device_utilization(s, gpu, &n);
    if (e < 0)
        return e;
    *u = (struct gpu_util_now){.gpu_pct = n.gpu_pct, .mem_pct = n.mem_pct, .sm_active = NAN};
    return 0;
}

static int dcgm_util(const struct source *s, unsigned gpu, struct gpu_util_now *u)
{
    struct dcgm_gpu_util d;
    int e = dcgm_source_gpu_util(s, gpu, &d);
    if (e < 0)
        return e;
    *u = (struct gpu_util_now){.gpu_pct = d.gpu_pct, .mem_pct = NAN, .sm_active = d.sm_active};
    return 0;
}

/* In this order in power/'s manifest when a run has GPUs of both. */
static const struct gpu_backend backends[] = {
    {
        .source = "nvml",
        .uuid = nvml_device_uuid,
        .processes = nvml_device_processes,
        .utilization = nvml_util,
        .metric_counter = "nvmlDeviceGetTotalEnergyConsumption",
        .metric_gauge = "nvmlDeviceGetPowerUsage",
        .power_scope = "gpu_device_board_as_reported_by_nvml",
        .util_metric = "nvmlDeviceGetUtilizationRates",
    },
    {
        .source = "dcgm",
        .uuid = dcgm_source_gpu_uuid,
        .processes = NULL,
        .utilization = dcgm_util,
        .metric_counter = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        .metric_gauge = "DCGM_FI_DEV_POWER_USAGE",
        .power_scope = "gpu_device_board_as_reported_by_dcgm",
        .util_metric = "DCGM_FI_DEV_GPU_UTIL",
    },
};
#define NBACKENDS (sizeof backends / sizeof backends[0])

/* The backend of channel c when it is a GPU that run_gpu splits, else NULL. */
static const struct gpu_backend *backend_of(const struct channel *c)
{
    if (c->kind != KIND_GPU || c->domain != DOMAIN_TOTAL)
        return NULL;
    for (size_t b = 0; b < NBACKENDS; b++)
        if (strcmp(c->source, backends[b].source) == 0)
            return &backends[b];
    return NULL;
}

/* GPU d of run_gpu is the splitter's GPU d, its ledger account d. */
struct gpu_dev {
    size_t ch;                   /* the channel in the sampler's set */
    unsigned index;              /* NVML's index or DCGM's GPU id (one numbering, see above) */
    const char *uuid;            /* "" when unknown */
    struct source *src;          /* its source */
    const struct gpu_backend *b; /* and what it reads of it */
    bool owns[SPLIT_JOBS_MAX];
    double util_j; /* since the last power/ row */
    int64_t util_ns;
    bool util_valid;  /* every reading since the last power/ row was valid */
    bool nsys_split;  /* split again by Nsight kernels: the SM basis is kernel time */
    uint64_t invalid; /* readings missing since the run started */
    int nprocs;       /* the last process list (-errno when it could not be read) */
    struct nvml_proc procs[NVML_PROCS_MAX];
    int proc_job[NVML_PROCS_MAX];
};

struct run_gpu {
    size_t n;
    struct gpu_dev dev[RUN_GPUS_MAX];
    struct pidowner owner;
    struct pidowner_job pj[SPLIT_JOBS_MAX];
    int64_t last_split, last_util;
    struct journal *util; /* utilization.csv */
    uint64_t urows;       /* rows in ubuf */
    struct csv_buf ubuf;
    struct srt_power *srt;
    bool srt_failed;
    int64_t period_ns;   /* the process lists' period now */
    double cost_ewma_ns; /* what reading them costs, smoothed */
    uint64_t queries;    /* reads so far */
    int64_t query_ns;    /* and their total cost */
};

/* The source that owns channel i, or NULL. */
static struct source *source_of(struct sampler *s, size_t i)
{
    for (size_t k = 0; k < s->nsrc; k++)
        if (s->src[k].status == 0 && i >= s->src[k].first && i < s->src[k].first + s->src[k].count)
            return &s->src[k];
    return NULL;
}

/* The CUDA_VISIBLE_DEVICES a workload gets: its own env's, else carma's; NULL when none. */
static const char *workload_cvd(const struct workload_spec *w)
{
    static const char key[] = "CUDA_VISIBLE_DEVICES=";
    for (size_t i = 0; i < w->n_env; i++)
        if (strncmp(w->env[i], key, sizeof key - 1) == 0)
            return w->env[i] + sizeof key - 1;
    return getenv("CUDA_VISIBLE_DEVICES");
}

/* Which GPUs each workload owns: its allocation's, else those its CUDA_VISIBLE_DEVICES
 * names. A workload that states neither, or says "gpu": false, owns none (for the fallback
 * split only). */
static void find_owners(struct run *r, struct run_gpu *g)
{
    size_t ngpu = 0;
    const char *uuids[NVML_GPUS_MAX] = {0};
    for (size_t d = 0; d < g->n; d++) {
        if (g->dev[d].index < NVML_GPUS_MAX) {
            uuids[g->dev[d].index] = g->dev[d].uuid;
            if (g->dev[d].index + 1 > ngpu)
                ngpu = g->dev[d].index + 1;
        }
    }
    for (size_t k = 0; k < r->njobs; k++) {
        const struct workload_spec *w = r->jobs[k].spec;
        bool vis[NVML_GPUS_MAX] = {0};
        if (w->gpu_use == WORKLOAD_GPU_NO) {
            /* "gpu": false: not a GPU workload, whatever CUDA_VISIBLE_DEVICES it inherits */
        } else if (w->n_gpus) {
            for (size_t q = 0; q < w->n_gpus; q++)
                if (w->gpus[q] >= 0 && w->gpus[q] < NVML_GPUS_MAX)
                    vis[w->gpus[q]] = true;
        } else {
            gpu_visible_parse(workload_cvd(w), uuids, ngpu, vis);
        }
        for (size_t d = 0; d < g->n; d++)
            g->dev[d].owns[k] = g->dev[d].index < NVML_GPUS_MAX && vis[g->dev[d].index];
    }
}

static void open_power(struct run *r, struct run_gpu *g)
{
    unsigned idx[RUN_GPUS_MAX];
    const char *uu[RUN_GPUS_MAX];
    struct srt_power_assignment as[RUN_GPUS_MAX * 8];
    size_t na = 0;
    /* per backend: has GPUs, all of them with a counter */
    bool used[NBACKENDS] = {0}, counter[NBACKENDS];
    for (size_t b = 0; b < NBACKENDS; b++)
        counter[b] = true;
    for (size_t d = 0; d < g->n; d++) {
        idx[d] = g->dev[d].index;
        uu[d] = g->dev[d].uuid;
        size_t b = (size_t)(g->dev[d].b - backends);
        used[b] = true;
        counter[b] = counter[b] && r->s->set.ch[g->dev[d].ch].form == FORM_COUNTER;
        for (size_t k = 0; k < r->njobs && na < sizeof as / sizeof as[0]; k++)
            if (g->dev[d].owns[k])
                as[na++] = (struct srt_power_assignment){
                    .gpu_index = g->dev[d].index,
                    .worker_role = "agg",
                    .worker_index = (int)k,
                    .worker_process = r->jobs[k].spec->name,
                };
    }
    /* the manifest's strings are the run's: those of the one source of its GPUs, or with GPUs
     * of both each source's, joined by '+' (nvml first); a scope "..._by_dcgm_or_nvml" as
     * carma collect writes it */
    if (g->n == 0)
        used[0] = true; /* no GPU: NVML's strings, as ever */
    char metric[160] = "", util[160] = "";
    const char *scope = NULL;
    size_t ml = 0, ul = 0;
    for (size_t b = 0; b < NBACKENDS; b++) {
        if (!used[b])
            continue;
        const struct gpu_backend *k = &backends[b];
        ml += (size_t)snprintf(metric + ml, sizeof metric - ml, "%s%s", ml ? "+" : "",
                               counter[b] ? k->metric_counter : k->metric_gauge);
        ul += (size_t)snprintf(util + ul, sizeof util - ul, "%s%s", ul ? "+" : "", k->util_metric);
        scope = scope ? "gpu_device_board_as_reported_by_dcgm_or_nvml" : k->power_scope;
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/power", r->dir);
    double iv = (double)r->s->interval_ns / 1e9;
    struct srt_power_opts o = {
        .dir = dir,
        .run_name = r->x.name,
        .interval_s = iv > RUN_GPU_UTIL_PERIOD_NS / 1e9 ? iv : RUN_GPU_UTIL_PERIOD_NS / 1e9,
        .producer_version = CARMA_VERSION,
        .source_metric = metric,
        .power_scope = scope,
        .util_metric = util,
        .ndev = g->n,
        .gpu_index = idx,
        .gpu_uuid = uu,
        .nassign = na,
        .assign = as,
    };
    struct carma_err e = {0};
    g->srt = srt_power_open(&o, &e);
    if (!g->srt)
        cli_error("%s; the GPU samples are not exported to power/", e.msg);
}

int run_gpu_setup(struct run *r)
{
    struct sampler *s = r->s;
    size_t n = 0;
    for (size_t i = 0; i < s->set.n; i++)
        n += backend_of(&s->set.ch[i]) != NULL;
    if (n == 0)
        return 0;
    struct run_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        cli_error("out of memory");
        return -1;
    }
    r->gpu = g;
    for (size_t i = 0; i < s->set.n && g->n < RUN_GPUS_MAX; i++) {
        const struct channel *c = &s->set.ch[i];
        const struct gpu_backend *b = backend_of(c);
        if (!b || c->socket < 0)
            continue;
        struct source *src = source_of(s, i);
        const char *uuid = b->uuid(src, (unsigned)c->socket);
        if (!uuid || splitter_add_gpu(&r->split, i) < 0)
            continue;
        struct gpu_dev *d = &g->dev[g->n++];
        d->ch = i;
        d->index = (unsigned)c->socket;
        d->uuid = uuid;
        d->src = src;
        d->b = b;
        d->util_valid = true;
    }
    /* the GPUs' other power readings (components) are only compared, never split */
    for (size_t i = 0; i < s->set.n; i++) {
        int par = s->set.ch[i].parent;
        if (s->set.ch[i].domain == DOMAIN_COMPONENT && par >= 0 &&
            r->split.ch[par].rule == SPLITTER_GPU)
            splitter_skip(&r->split, i);
    }
    if (n > g->n)
        cli_error("%zu GPUs: the energy of the first %d is split among the workloads, the rest "
                  "is unattributed",
                  n, RUN_GPUS_MAX);
    g->period_ns = RUN_GPU_PERIOD_NS;
    pidowner_init(&g->owner, "/proc");
    find_owners(r, g);
    g->util =
        rundir_writer_open_journal(&r->out, "utilization.csv", RUNDIR_UTILIZATION_HEADER, "rows");
    if (csv_buf_reserve(&g->ubuf, 64 * 1024) < 0)
        return -1;
    open_power(r, g);
    return 0;
}

/* Reads each GPU's processes and whose they are. */
static void read_processes(struct run *r, struct run_gpu *g)
{
    pidowner_next(&g->owner);
    for (size_t k = 0; k < r->njobs && k < SPLIT_JOBS_MAX; k++) {
        const struct job *j = &r->jobs[k];
        g->pj[k] = (struct pidowner_job){
            .cgroup = j->proc.have_cg ? j->proc.cg.rel : NULL,
            .pid = j->proc.started ? j->proc.pid : 0,
        };
    }
    for (size_t d = 0; d < g->n; d++) {
        struct gpu_dev *v = &g->dev[d];
        v->nprocs = v->b->processes ? v->b->processes(v->src, v->index, v->procs, NVML_PROCS_MAX)
                                    : -EOPNOTSUPP;
        for (int p = 0; p < v->nprocs; p++)
            v->proc_job[p] = pidowner_lookup(&g->owner, (pid_t)v->procs[p].pid, g->pj,
                                             r->njobs < SPLIT_JOBS_MAX ? r->njobs : SPLIT_JOBS_MAX);
    }
}

/* Splits GPU d's pending energy by the processes just read. */
static void split_device(struct run *r, struct run_gpu *g, size_t d, const struct ledger_time *at)
{
    struct gpu_dev *v = &g->dev[d];
    struct gpu_proc gp[NVML_PROCS_MAX];
    size_t np = v->nprocs > 0 ? (size_t)v->nprocs : 0;
    for (size_t p = 0; p < np; p++)
        gp[p] = (struct gpu_proc){.job = v->proc_job[p], .sm_pct = v->procs[p].sm_util_pct};
    bool alive[SPLIT_JOBS_MAX] = {0};
    for (size_t k = 0; k < r->njobs && k < SPLIT_JOBS_MAX; k++)
        alive[k] = r->jobs[k].proc.started && !r->jobs[k].proc.done;
    splitter_gpu_split(&r->split, &r->ledger, d, gp, np, v->owns, alive, at);
}

/* utilization.csv rows and a power/ scrape for every GPU. */
static void write_utilization(struct run *r, struct run_gpu *g)
{
    char ts[40];
    size_t tl = fmt_unix_us(ts, r->s->real_now);
    struct csv_buf *b = &g->ubuf;
    /* the rows hold each GPU's average power over the period: stamped at its middle (every
     * GPU's period is the same) */
    if (g->srt)
        srt_power_scrape_begin(g->srt,
                               (double)(r->s->real_now - (g->n ? g->dev[0].util_ns / 2 : 0)) / 1e9);
    for (size_t d = 0; d < g->n; d++) {
        struct gpu_dev *v = &g->dev[d];
        struct gpu_util_now u;
        bool have_u = v->b->utilization(v->src, v->index, &u) == 0;
        if (have_u || v->nprocs >= 0) {
            rundir_rows_gpu_device(b, ts, tl, v->index, v->uuid, have_u ? u.gpu_pct : NAN,
                                   have_u ? u.mem_pct : NAN);
            g->urows++;
        }
        for (int p = 0; p < v->nprocs; p++) {
            const struct nvml_proc *pr = &v->procs[p];
            rundir_rows_gpu_process(
                b, ts, tl, v->index, v->uuid, pr->pid,
                v->proc_job[p] >= 0 ? r->jobs[v->proc_job[p]].spec->name : "other",
                pr->sm_util_pct >= 0 ? pr->sm_util_pct : NAN,
                pr->used_mem_bytes != UINT64_MAX ? (double)pr->used_mem_bytes / (1024.0 * 1024.0)
                                                 : NAN);
            g->urows++;
        }
        if (g->srt && v->util_valid && v->util_ns > 0)
            srt_power_row(g->srt, v->index, v->uuid, v->util_j / ((double)v->util_ns / 1e9),
                          have_u ? u.gpu_pct : NAN, have_u ? u.sm_active : NAN);
        v->util_j = 0;
        v->util_ns = 0;
        v->util_valid = true;
    }
    if (g->util && b->len)
        rundir_writer_append(&r->out, g->util, b->data, b->len, g->urows, r->s->real_now);
    b->len = 0;
    g->urows = 0;
    if (g->srt) {
        struct carma_err e = {0};
        if (srt_power_scrape_end(g->srt, &e) < 0 && !g->srt_failed) {
            g->srt_failed = true;
            cli_error("%s", e.msg);
            /* it keeps whole scrapes, not all */
            rundir_writer_failed(&r->out, "power/samples.csv");
        }
    }
}

void run_gpu_tick(struct run *r, bool final, const struct ledger_time *at)
{
    struct run_gpu *g = r->gpu;
    if (!g)
        return;
    const struct sampler *s = r->s;
    int64_t dt = s->t_now - s->t_prev;
    /* when a workload started or ended in this tick (the first such time) */
    int64_t tau = 0;
    for (size_t k = 0; k < r->njobs; k++) {
        const struct job *j = &r->jobs[k];
        if (j->proc.started && j->proc.start_mono > s->t_prev && j->proc.start_mono <= s->t_now &&
            (!tau || j->proc.start_mono < tau))
            tau = j->proc.start_mono;
        if (j->proc.exited && j->proc.end_mono > s->t_prev && j->proc.end_mono <= s->t_now &&
            (!tau || j->proc.end_mono < tau))
            tau = j->proc.end_mono;
    }
    for (size_t d = 0; d < g->n; d++) {
        struct gpu_dev *v = &g->dev[d];
        const struct chan_state *st = &s->st[v->ch];
        splitter_gpu_tick(&r->split, d, st->tick_energy_j, dt, tau ? tau - s->t_prev : 0);
        v->util_j += st->tick_energy_j;
        v->util_ns += dt;
        if (!st->tick_valid) {
            v->invalid++;
            v->util_valid = false;
        }
    }
    /* due when a period is over, to half a tick: ticks land either side of it */
    if (!final && g->last_split && s->t_now - g->last_split < g->period_ns - s->interval_ns / 2)
        return;
    g->last_split = s->t_now;
    int64_t q0 = time_mono_ns();
    read_processes(r, g);
    /* NVML's process calls cost from µs to ms (more on busy drivers): the lists are read at
     * most 1/RUN_GPU_COST_SHARE of the time, and at least every RUN_GPU_PERIOD_MAX_NS */
    int64_t cost = time_mono_ns() - q0;
    g->queries++;
    g->query_ns += cost;
    g->cost_ewma_ns = g->queries == 1 ? (double)cost : 0.8 * g->cost_ewma_ns + 0.2 * (double)cost;
    double want = g->cost_ewma_ns * RUN_GPU_COST_SHARE;
    g->period_ns = want < RUN_GPU_PERIOD_NS       ? RUN_GPU_PERIOD_NS
                   : want > RUN_GPU_PERIOD_MAX_NS ? RUN_GPU_PERIOD_MAX_NS
                                                  : (int64_t)want;
    for (size_t d = 0; d < g->n; d++)
        split_device(r, g, d, at);
    ledger_flush(&r->ledger);
    if (final || !g->last_util || s->t_now - g->last_util >= RUN_GPU_UTIL_PERIOD_NS) {
        g->last_util = s->t_now;
        write_utilization(r, g);
    }
}

void run_gpu_report(struct run *r, struct rundir_report_in *in, struct rundir_report_gpu *out)
{
    struct run_gpu *g = r->gpu;
    in->gpu = out;
    in->ngpus = g ? g->n : 0;
    for (size_t d = 0; g && d < g->n; d++) {
        struct gpu_dev *v = &g->dev[d];
        const struct channel *c = &r->s->set.ch[v->ch];
        struct rundir_report_gpu *o = &out[d];
        *o = (struct rundir_report_gpu){
            .channel = c->name,
            .source = c->source,
            .index = v->index,
            .uuid = v->uuid,
            .label = c->label,
            .counter = c->form == FORM_COUNTER,
            .covered_s = sampler_window_covered_s(r->s, v->ch),
            .invalid = v->invalid,
            .drift_pct = sampler_window_drift_pct(r->s, v->ch),
            .static_w = r->static_w[v->ch],
            .nsys_split = v->nsys_split,
        };
        /* every power gauge of the GPU against its counter: average powers over the run */
        double ce = sampler_window_energy_j(r->s, v->ch),
               cs = sampler_window_covered_s(r->s, v->ch);
        for (size_t i = 0; i < r->s->set.n && o->ngauge < RUNDIR_REPORT_GAUGES_MAX; i++) {
            const struct channel *k = &r->s->set.ch[i];
            if (k->parent != (int)v->ch || k->domain != DOMAIN_COMPONENT || c->form != FORM_COUNTER)
                continue;
            double ke = sampler_window_energy_j(r->s, i), ks = sampler_window_covered_s(r->s, i);
            o->gauge[o->ngauge++] = (struct rundir_report_gauge){
                .zone = k->zone,
                .drift_pct =
                    ce > 0 && cs > 0 && ks > 0 ? ((ke / ks) / (ce / cs) - 1.0) * 100.0 : NAN,
            };
        }
        for (size_t k = 0; k < r->njobs; k++)
            o->owns[k] = v->owns[k];
    }
    /* process lists were read unless every GPU's source lists none (DCGM's) */
    bool lists = g && g->n == 0;
    for (size_t d = 0; g && d < g->n; d++)
        lists = lists || g->dev[d].b->processes;
    in->have_gpu_lists = lists;
    if (in->have_gpu_lists) {
        in->gpu_list_reads = g->queries;
        in->gpu_list_mean_ms = g->queries ? (double)g->query_ns / 1e6 / (double)g->queries : NAN;
        in->gpu_list_period_ms = (double)g->period_ns / 1e6;
    }
}

void run_gpu_done(struct run *r, const char *status)
{
    struct run_gpu *g = r->gpu;
    if (!g)
        return;
    journal_close(g->util);
    csv_buf_free(&g->ubuf);
    if (g->srt) {
        struct carma_err e = {0};
        if (srt_power_finish(g->srt, status, &e) < 0)
            cli_error("%s", e.msg);
    }
    free(g);
    r->gpu = NULL;
}

/* ---- Nsight Systems ---- */

int run_nsys_check(const struct experiment *x)
{
    size_t n = 0;
    const char *first = NULL;
    for (size_t k = 0; k < x->n; k++) {
        if (x->w[k].profile_nsys) {
            n++;
            first = first ? first : x->w[k].name;
        }
    }
    if (!n)
        return 0;
    const char *path = getenv("PATH");
    char buf[4200];
    for (const char *p = path ? path : ""; *p;) {
        const char *c = strchr(p, ':');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/nsys", (int)len, len ? p : ".");
        if (access(buf, X_OK) == 0)
            return 0;
        if (!c)
            break;
        p = c + 1;
    }
    cli_error("%s: workload '%s'%s asks to be profiled (\"profile\": \"nsys\") but nsys (Nsight "
              "Systems) is not in PATH: install it or add its bin directory to PATH, or remove "
              "\"profile\"; nothing was started",
              x->path, first, n > 1 ? " and others" : "");
    return -1;
}

char **run_nsys_argv(struct run *r, const struct job *j)
{
    if (!j->spec->profile_nsys || !j->spec->argv)
        return NULL;
    static char nsys[] = "nsys", profile[] = "profile", exp[] = "--export=sqlite",
                force[] = "--force-overwrite=true", trace[] = "--trace=cuda";
    size_t na = 0;
    while (j->spec->argv[na])
        na++;
    char **v = calloc(na + 7, sizeof *v);
    /* the --output=... string lives with the job: one per workload */
    static char outs[SPLIT_JOBS_MAX][4300];
    size_t k = (size_t)(j - r->jobs);
    if (!v || k >= SPLIT_JOBS_MAX) {
        free(v);
        return NULL;
    }
    snprintf(outs[k], sizeof outs[k], "--output=%s/logs/%s", r->dir, j->spec->name);
    size_t i = 0;
    v[i++] = nsys;
    v[i++] = profile;
    v[i++] = outs[k];
    v[i++] = exp;
    v[i++] = force;
    v[i++] = trace;
    for (size_t a = 0; a < na; a++)
        v[i++] = j->spec->argv[a];
    v[i] = NULL;
    return v;
}

/* A number of report.json (jsonutil_get_num), 0 when absent or not a number. */
static double num0(const json_t *o, const char *key)
{
    double v = jsonutil_get_num(o, key);
    return isnan(v) ? 0.0 : v;
}

/* The run's totals (for report.txt) from a report.json split again by nsys. */
static void run_nsys_refresh(struct run *r, json_t *rep)
{
    struct ledger *l = &r->ledger;
    l->idle_j = num0(json_object_get(rep, "idle"), "energy_j");
    l->other_j = num0(json_object_get(rep, "other"), "energy_j");
    l->unattr_j = num0(json_object_get(rep, "unattributed"), "energy_j");
    struct run_gpu *g = r->gpu;
    json_t *gpus = json_object_get(rep, "gpus"), *ws = json_object_get(rep, "workloads");
    for (size_t d = 0; g && d < g->n && d < json_array_size(gpus); d++) {
        struct gpu_dev *v = &g->dev[d];
        struct ledger_gpu *a = &l->gpu[d];
        json_t *o = json_array_get(gpus, d);
        a->jobs_j = num0(o, "jobs_j");
        a->idle_j = num0(o, "idle_j");
        a->other_j = num0(o, "other_j");
        a->unattr_j = num0(o, "unattributed_j");
        json_t *b = json_object_get(o, "nsys_basis_s");
        /* report.txt's "split by": the kernels' seconds in the SM slot, named "kernels" */
        v->nsys_split = true;
        a->basis_s[GPU_BASIS_SM] = num0(b, "kernels");
        a->basis_s[GPU_BASIS_CONTEXT] = num0(b, "context");
        a->basis_s[GPU_BASIS_ALLOCATION] = num0(b, "allocation");
        a->basis_s[GPU_BASIS_NONE] = num0(b, "none");
        for (size_t k = 0; k < r->njobs; k++)
            l->job[k].gpu_j[d] =
                num0(json_object_get(json_array_get(ws, k), "gpu_j"), r->s->set.ch[v->ch].name);
    }
}

void run_nsys_finish(struct run *r, json_t **rep, bool quiet)
{
    char *files[SPLIT_JOBS_MAX];
    const char *names[SPLIT_JOBS_MAX];
    size_t n = 0;
    for (size_t k = 0; k < r->njobs && k < SPLIT_JOBS_MAX; k++) {
        const struct job *j = &r->jobs[k];
        if (!j->spec->profile_nsys || !j->proc.started || j->proc.pid <= 0)
            continue;
        if (asprintf(&files[n], "%s/logs/%s.sqlite", r->dir, j->spec->name) < 0)
            break;
        names[n++] = j->spec->name;
    }
    if (!n)
        return;
    /* the import reads the run directory: report.json as it stands */
    char path[4200];
    snprintf(path, sizeof path, "%s/report.json", r->dir);
    int e = jsonutil_write_file(*rep, path);
    bool redo = r->x.gpu_attribution == GPU_ATTR_NSYS && r->gpu && r->gpu->n > 0;
    if (e < 0)
        cli_error("cannot write %s: %s", path, strerror(-e));
    else if (import_nsys_into_run(r->dir, files, names, n, redo, true, quiet) == 0 && redo) {
        json_t *nrep = rundir_read_json(r->dir, "report.json", NULL, NULL);
        if (nrep && json_object_get(json_object_get(nrep, "attribution"), "gpu")) {
            json_decref(*rep);
            *rep = nrep;
            run_nsys_refresh(r, nrep);
        } else {
            json_decref(nrep);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(files[i]);
}
