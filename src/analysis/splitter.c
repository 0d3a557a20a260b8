/* splitter: each tick's energy of an experiment's channels, split and posted to the ledger
 * (see splitter.h). */
#include "analysis/splitter.h"

#include <math.h>
#include <string.h>

void splitter_init(struct splitter *sp, size_t njobs, enum split_policy policy)
{
    memset(sp, 0, sizeof *sp);
    sp->njobs = njobs < SPLIT_JOBS_MAX ? njobs : SPLIT_JOBS_MAX;
    sp->policy = policy;
    sp->background = true;
    sp->busy_unit_ns = 1e9;
}

int splitter_add_channel(struct splitter *sp, const char *name, enum channel_kind kind)
{
    if (sp->nch >= CHANNELS_MAX)
        return -1;
    struct splitter_channel *c = &sp->ch[sp->nch];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->kind = kind;
    c->rule = SPLITTER_CPU_TIME;
    c->static_w = NAN;
    return (int)sp->nch++;
}

void splitter_node(struct splitter *sp, size_t ch)
{
    if (ch < sp->nch)
        sp->ch[ch].node = true;
}

void splitter_meter(struct splitter *sp, const int *parts, size_t nparts)
{
    sp->meter_node = true;
    for (size_t k = 0; k < nparts; k++) {
        if (parts[k] < 0 || (size_t)parts[k] >= sp->nch)
            continue;
        sp->ch[parts[k]].metered = true;
        sp->meter_has_gpu |= sp->ch[parts[k]].kind == KIND_GPU;
    }
}

int splitter_add_gpu(struct splitter *sp, size_t ch)
{
    if (ch >= sp->nch || sp->ngpu >= SPLITTER_GPUS_MAX)
        return -1;
    sp->ch[ch].rule = SPLITTER_GPU;
    struct splitter_gpu *g = &sp->gpu[sp->ngpu];
    memset(g, 0, sizeof *g);
    g->ch = ch;
    return (int)sp->ngpu++;
}

void splitter_skip(struct splitter *sp, size_t ch)
{
    if (ch < sp->nch)
        sp->ch[ch].rule = SPLITTER_NONE;
}

void splitter_set_static(struct splitter *sp, const double *static_w, double static_busy)
{
    for (size_t i = 0; i < sp->nch; i++)
        sp->ch[i].static_w = static_w[i];
    sp->static_busy = static_busy;
}

void splitter_tick(struct splitter *sp, const double *tick_j, int64_t dt_ns)
{
    for (size_t i = 0; i < sp->nch; i++)
        if (sp->ch[i].rule == SPLITTER_CPU_TIME)
            sp->ch[i].pend_j += tick_j[i];
    sp->pend_ns += dt_ns;
}

bool splitter_due(const struct splitter *sp, bool fresh, bool final)
{
    if (final)
        return true;
    return sp->epoch_ns > 0 ? sp->pend_ns >= sp->epoch_ns : fresh;
}

/* A split of a channel that the wall meter contains: its shares are added to the weights of
 * the meter's next split. No-op without a meter as the node. */
static void metered_add(struct splitter *sp, size_t ch, const struct split_out *o)
{
    if (!sp->meter_node || !sp->ch[ch].metered)
        return;
    if (sp->ch[ch].kind == KIND_GPU)
        sp->mw_gpu_seen = true;
    for (size_t k = 0; k < sp->njobs; k++)
        sp->mw_job[k] += o->job_j[k];
    sp->mw_idle += o->idle_j;
    sp->mw_other += o->other_j;
    sp->mw_unattr += o->unattributed_j;
}

/*
 * The split of a wall meter's energy de: in proportion to how the measured channels inside it
 * were split since its last split (jobs, idle, other, unattributed), so that what the meter
 * sees beyond them (power supply losses, fans, disks: the rest of the system) follows the
 * measured energy. False when they hold no energy (nothing measured inside the meter): the
 * meter is split by CPU time then.
 */
static bool meter_split(const struct splitter *sp, double de, struct split_out *o)
{
    /* a part below zero (a counter's negative step) weighs nothing */
    double idle = fmax(sp->mw_idle, 0), other = fmax(sp->mw_other, 0);
    double unattr = fmax(sp->mw_unattr, 0), tot = idle + other + unattr;
    for (size_t k = 0; k < sp->njobs; k++)
        tot += fmax(sp->mw_job[k], 0);
    if (!(tot > 0))
        return false;
    memset(o, 0, sizeof *o);
    for (size_t k = 0; k < sp->njobs; k++)
        o->job_j[k] = de * (fmax(sp->mw_job[k], 0) / tot);
    o->idle_j = de * (idle / tot);
    o->other_j = de * (other / tot);
    o->unattributed_j = de * (unattr / tot);
    return true;
}

static bool cpu_side(enum channel_kind k)
{
    return k == KIND_CPU || k == KIND_DRAM || k == KIND_SOC || k == KIND_SYSTEM;
}

void splitter_split(struct splitter *sp, struct ledger *l, const struct splitter_busy *b,
                    bool final, const struct ledger_time *at)
{
    double jobs_busy = 0;
    for (size_t k = 0; k < sp->njobs; k++)
        jobs_busy += b->job[k];
    /* the baseline's power already holds the background's load: only busy time above it
     * is split */
    double dt = (double)sp->pend_ns / 1e9;
    double above = b->node - sp->static_busy * ((double)sp->pend_ns / sp->busy_unit_ns);
    if (above < jobs_busy)
        above = jobs_busy;
    bool meter_waits = false;
    for (size_t i = 0; i < sp->nch; i++) {
        struct splitter_channel *c = &sp->ch[i];
        if (c->rule != SPLITTER_CPU_TIME)
            continue;
        double de = c->pend_j;
        c->pend_j = 0;
        if (de == 0.0)
            continue;
        bool meter = sp->meter_node && c->node;
        if (meter && sp->meter_has_gpu && !sp->mw_gpu_seen && !final) {
            /* the GPUs inside the meter are split on their own clock: the meter's energy
             * waits for their shares of the same time */
            c->pend_j = de;
            meter_waits = true;
            continue;
        }
        bool cpu = cpu_side(c->kind);
        double st = isfinite(c->static_w) ? c->static_w * dt : 0.0;
        if (st > de)
            st = de;
        /*
         * A baseline measured with other processes running holds their power too. The
         * channel's power per busy CPU, learnt from the run so far (dynamic energy over busy
         * time above the baseline), tells how much: that part belongs to "other", and only
         * the rest is the idle power the policy gives out.
         */
        double bg = 0;
        if (cpu && sp->background && sp->static_busy > 0 && sp->sum_above > 0.5) {
            double k_w = c->sum_dyn_j / sp->sum_above; /* W per busy CPU */
            bg = k_w * sp->static_busy * dt;
            if (bg > st)
                bg = st;
            if (bg < 0)
                bg = 0;
        }
        if (cpu) {
            c->sum_dyn_j += de - st;
            sp->sum_above_next = above;
        }
        struct split_in in = {
            .de_j = de - bg,
            .static_j = st - bg,
            .njobs = cpu ? sp->njobs : 0,
            .job_busy = b->job,
            .running = b->running,
            .node_busy = cpu ? above : 0.0,
            .policy = sp->policy,
        };
        struct split_out o;
        bool metered = meter && meter_split(sp, de, &o);
        if (!metered) {
            split_energy(&in, &o);
            o.other_j += bg;
            if (c->node)
                sp->bg_other_j += bg;
        }
        metered_add(sp, i, &o);
        struct ledger_post p = {
            .channel = c->name,
            .kind = c->kind,
            .node = c->node,
            .gpu = -1,
            .njobs = metered ? sp->njobs : in.njobs,
            .de_j = de,
        };
        ledger_post(l, &p, &o, at);
    }
    sp->sum_above += sp->sum_above_next;
    sp->sum_above_next = 0;
    sp->pend_ns = 0;
    if (sp->meter_node && !meter_waits) {
        for (size_t k = 0; k < sp->njobs; k++)
            sp->mw_job[k] = 0;
        sp->mw_idle = sp->mw_other = sp->mw_unattr = 0;
        sp->mw_gpu_seen = false;
    }
}

void splitter_gpu_tick(struct splitter *sp, size_t gpu, double tick_j, int64_t dt_ns,
                       int64_t tau_ns)
{
    if (gpu >= sp->ngpu)
        return;
    struct splitter_gpu *v = &sp->gpu[gpu];
    if (tau_ns && !v->have_tau && dt_ns > 0) {
        double frac = (double)tau_ns / (double)dt_ns;
        v->have_tau = true;
        v->pend_before_j = v->pend_j + tick_j * frac;
        v->pend_before_ns = v->pend_ns + tau_ns;
    }
    v->pend_j += tick_j;
    v->pend_ns += dt_ns;
}

void splitter_gpu_split(struct splitter *sp, struct ledger *l, size_t gpu,
                        const struct gpu_proc *procs, size_t nprocs, const bool *owns,
                        const bool *alive, const struct ledger_time *at)
{
    if (gpu >= sp->ngpu)
        return;
    struct splitter_gpu *v = &sp->gpu[gpu];
    const struct splitter_channel *c = &sp->ch[v->ch];
    double dt = (double)v->pend_ns / 1e9;
    double de = v->pend_j;
    /* the period's two parts: before and after a workload started or ended in it (its halves
     * when none did) */
    double e0 = v->have_tau ? v->pend_before_j : de / 2, e1 = de - e0;
    double d0 = v->have_tau ? (double)v->pend_before_ns / 1e9 : dt / 2, d1 = dt - d0;
    v->pend_j = 0;
    v->pend_ns = 0;
    v->have_tau = false;
    struct gpu_weights w;
    gpu_weights(procs, nprocs, sp->njobs, owns, alive, &w);
    /* the period's shares from the lists read at its two ends (gpu_split.h) */
    double sw = isfinite(c->static_w) ? c->static_w : 0.0;
    struct gpu_shares sh;
    gpu_period_shares(v->have_prev ? &v->prev : NULL, &w, sp->njobs, e0 - sw * d0, e1 - sw * d1, d0,
                      d1, &sh);
    v->prev = w;
    v->have_prev = true;
    ledger_basis(l, gpu, sh.basis, dt);
    if (de == 0.0)
        return;
    double st = isfinite(c->static_w) ? c->static_w * dt : 0.0;
    struct split_in in = {
        .de_j = de,
        .static_j = st,
        .njobs = sp->njobs,
        .job_busy = sh.f,
        .running = sh.present,
        .node_busy = sh.node, /* the rest of the shares: processes outside */
        .policy = sp->policy,
    };
    struct split_out o;
    split_energy(&in, &o);
    metered_add(sp, v->ch, &o);
    struct ledger_post p = {
        .channel = c->name,
        .kind = c->kind,
        .node = c->node,
        .gpu = (int)gpu,
        .njobs = sp->njobs,
        .de_j = de,
    };
    ledger_post(l, &p, &o, at);
}
