/*
 * split: the energy of one channel over one tick, apportioned to the jobs of an experiment.
 *
 * ΔE = Σ jobs + idle + other + unattributed, exactly (to rounding). The static part of ΔE
 * (the node's baseline power × Δt, at most ΔE) is split by the idle policy; the rest, the
 * dynamic part, by each job's share of the node's busy time (CPU time on CPU-side channels,
 * utilization on a GPU): what processes outside the experiment kept busy goes to "other",
 * and a dynamic part with no busy time at all is "unattributed".
 * Idle policies: idle (the static part is its own line), proportional (to the dynamic
 * shares, other's included), equal (among the jobs running during the tick).
 */
#ifndef CARMA_ANALYSIS_SPLIT_H
#define CARMA_ANALYSIS_SPLIT_H

#include <stdbool.h>
#include <stddef.h>

enum split_policy { SPLIT_IDLE, SPLIT_PROPORTIONAL, SPLIT_EQUAL };

#define SPLIT_JOBS_MAX 64

struct split_in {
    double de_j;            /* the channel's energy over the tick */
    double static_j;        /* static power × Δt (clamped to [0, de_j]); 0 when unknown */
    size_t njobs;           /* at most SPLIT_JOBS_MAX */
    const double *job_busy; /* per job busy time (or utilization weight) over the tick */
    const bool *running;    /* per job: running during the tick (for SPLIT_EQUAL) */
    double node_busy;       /* the node's busy time over the tick, same unit */
    enum split_policy policy;
};

struct split_out {
    double job_j[SPLIT_JOBS_MAX];
    double idle_j;         /* static part kept apart (policy idle, or nobody to give it to) */
    double other_j;        /* dynamic part of processes outside the experiment */
    double unattributed_j; /* dynamic part with no busy time to split it by */
};

/* Splits in->de_j into *out. No allocation; out is overwritten. */
void split_energy(const struct split_in *in, struct split_out *out);

/* "idle", "proportional", "equal" ("?" for another value); parsing returns 0 or -EINVAL. */
const char *split_policy_name(enum split_policy p);
int split_policy_parse(const char *s, enum split_policy *ret);

#endif
