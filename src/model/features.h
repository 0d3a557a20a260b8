/*
 * features: a `carma run` directory read into aligned intervals for power models.
 *
 * The run is cut into intervals of about `window_s` at the sample ticks of samples.csv (at the
 * ticks of features.csv's rows where they fall, and at the last tick before the first workload
 * started, so that the baseline phase has intervals of its own). Per interval:
 *
 *   - per device kind (cpu, dram, soc, gpu, system, other), the node's measured power: the
 *     mean over the interval of the sum of the kind's total-domain channels (NAN when one of
 *     them had a missing reading in it);
 *   - per party (each workload, then "other": the processes outside the experiment) the
 *     features of enum fx_feature (sources/modelfile.h); a node-level feature is the sum over
 *     the parties;
 *   - per workload and kind, the power attribution.csv gave it (its measured attributed
 *     power), NAN without attribution.csv.
 *
 * Cumulative counters (node_util.csv, features.csv) are interpolated linearly at the interval
 * ends; gauges (utilization.csv) are averaged over the samples inside the interval; spans
 * (nsys_gpu.csv) are spread uniformly over their time. Nothing here prints; errors name the
 * file, line and field.
 */
#ifndef CARMA_MODEL_FEATURES_H
#define CARMA_MODEL_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "sources/modelfile.h"

#define FX_KINDS CHANNEL_KINDS /* per device kind, enum channel_kind (core/channel_kind.h) */

struct fx_opts {
    double window_s;       /* interval length (default 1 s) */
    double min_interval_s; /* shorter intervals are dropped (default window_s / 4) */
};

struct fx_run {
    char dir[4096];
    size_t njobs;
    char **jobs;        /* workload names; party njobs is "other" */
    double *job_start;  /* per workload, unix s (NAN when unknown) */
    double *job_end;    /* per workload, unix s (NAN when unknown) */
    char policy[16];    /* the run's idle policy (manifest.json), "" when unknown */
    int ncpu;           /* manifest host.cpus, 0 when unknown */
    double first_start; /* the first workload's start, unix s (NAN when none started) */
    size_t nint;        /* intervals */
    double *t0, *t1;    /* per interval, unix s */
    bool *baseline;     /* the interval ends before the first workload started */
    double *power_w;    /* [nint][FX_KINDS] node's measured power, NAN when unknown */
    double *feat;       /* [nint][njobs + 1][FX_N] per party; NAN when unknown */
    double *meas_w;     /* [nint][njobs + 2][FX_KINDS] attributed power: workloads, other,
                           idle; NAN without attribution.csv */
    bool has_kind[FX_KINDS];
    char kind_channels[FX_KINDS][512];           /* the channels summed, comma-separated */
    bool kind_estimated[FX_KINDS];               /* one of them is estimated (samples.csv method) */
    char kind_estimated_channels[FX_KINDS][512]; /* which, comma-separated */
    bool has_feat[FX_N];
    char feat_missing[FX_N][256]; /* why a feature is not available in this run */
    bool node_util;               /* node_util.csv was there: the background is seen */
    bool attribution;             /* attribution.csv was there */
    char **warnings;              /* what the caller should say: a file's torn last line
                                     skipped ("PATH:LINE: ...", rundir.h) */
    size_t nwarnings;
};

/* Index of party p's feature f in interval i. */
static inline double fx_party(const struct fx_run *r, size_t i, size_t p, int f)
{
    return r->feat[(i * (r->njobs + 1) + p) * FX_N + (size_t)f];
}

/* The node's value of feature f in interval i: the sum over the parties. */
double fx_node(const struct fx_run *r, size_t i, int f);

/*
 * Reads the run directory dir (samples.csv and workloads.json required; manifest.json,
 * node_util.csv, features.csv, utilization.csv, nsys_gpu.csv, attribution.csv when present)
 * into *ret (free with fx_run_free). o may be NULL for the defaults. Returns 0, or a negative
 * errno with e naming the file, line and field: -ENOENT for a missing required file, -EINVAL
 * for bad content or a run too short for a single interval.
 */
int fx_run_load(const char *dir, const struct fx_opts *o, struct fx_run *ret, struct carma_err *e);

/* Frees what fx_run_load allocated (safe on a zeroed struct). */
void fx_run_free(struct fx_run *r);

#endif
