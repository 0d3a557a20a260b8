/*
 * modelfile: the fitted power model file (docs/model.md) and the features a model names.
 *
 * A model file holds, per device kind, the baseline (static power) and the delta's coefficients
 * over features such as cpu_util: P_kind = baseline_w + Σ_f coef_f × x_f. `carma model fit`
 * (model/powermodel, with GSL) writes it, `carma model predict` and the estimating source
 * (`--sources model --model-file`, sources/estimate.c) read it. The format lives here, below
 * the fitting and without GSL, so that a source reads it without a layer above sources/.
 * Nothing here prints; errors name the file and the field.
 */
#ifndef CARMA_SOURCES_MODELFILE_H
#define CARMA_SOURCES_MODELFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/channel_kind.h"
#include "core/err.h"

/* The features a delta model may use (docs/model.md). */
enum fx_feature {
    FX_CPU_UTIL,     /* CPU time / the node's CPU time (0..1): features.csv, node_util.csv */
    FX_INSTRUCTIONS, /* 1e9 instructions per second (features.csv, perf) */
    FX_CYCLES,       /* 1e9 cycles per second (features.csv, perf) */
    FX_GPU_SM,       /* SM utilization summed over the GPUs (0..1 per GPU; utilization.csv) */
    FX_GPU_UTIL,     /* device utilization, given to the processes by their SM shares */
    FX_GPU_MEM,      /* device memory utilization, given likewise */
    FX_GPU_BUSY,     /* kernel busy fraction summed over the GPUs (nsys_gpu.csv) */
    FX_N
};

/* The feature's name in model files and on the command line; -1 / NULL when unknown. */
const char *modelfile_feature_name(int f);
int modelfile_feature_parse(const char *name);
/* Its unit and the file it comes from, for the model file and the docs. */
const char *modelfile_feature_unit(int f);
const char *modelfile_feature_source(int f);
/* True for the features of GPU kinds (the others are for the CPU-side kinds). */
bool modelfile_feature_is_gpu(int f);

#define PM_RUNS_MAX 64
#define PM_SCHEMA   1

struct pm_kind {
    int kind; /* enum channel_kind */
    char channels[512];
    char training_method[24]; /* its runs' power: "measured", "estimated" or both with a '+'
                                 ("" in a model file older than the field) */
    size_t nfeat;
    int feat[FX_N];                   /* the delta's features, in order */
    double baseline_w, baseline_se_w; /* the intercept and its standard error */
    double coef[FX_N], coef_se[FX_N]; /* W per feature unit, by position in feat[] */
    size_t nint;                      /* intervals fitted */
    double seconds;
    double r2, rmse_w, mape_pct;         /* in-sample */
    char cv_method[32];                  /* "5-fold", "leave-one-run-out" */
    double cv_r2, cv_mape_pct;           /* out-of-sample; NAN when not computed */
    char cv_note[256];                   /* why not, when NAN */
    double phase_s, phase_w, phase_util; /* the baseline phase: seconds, mean power, mean
                                            cpu_util; NAN when no run had one */
};

struct power_model {
    size_t nkinds;
    struct pm_kind k[CHANNEL_KINDS];
    char skipped[CHANNEL_KINDS][256]; /* per kind: why it was not fitted ("" when fitted/absent) */
    size_t nruns;
    char runs[PM_RUNS_MAX][512];
    int ncpu;             /* host.cpus of the runs (0 when unknown or mixed) */
    double window_s;      /* interval length used */
    bool background_seen; /* every run had node_util.csv */
};

/* The model as JSON (docs/model.md); the caller owns the result. */
json_t *modelfile_to_json(const struct power_model *m);

/* Writes the model to path atomically. Returns 0 or a negative errno with e set. */
int modelfile_save(const struct power_model *m, const char *path, struct carma_err *e);

/*
 * Reads a model file. Returns 0, or -ENOENT / -EINVAL with e naming the file and the field
 * (unknown kind or feature, a coefficient that is not a number, a schema it does not know).
 */
int modelfile_load(const char *path, struct power_model *ret, struct carma_err *e);

/* The model of kind, or NULL. */
const struct pm_kind *modelfile_find_kind(const struct power_model *m, int kind);

/* Σ coef_f × x[feat_f] (x indexed by enum fx_feature): the delta of a party or the node. */
double modelfile_delta(const struct pm_kind *k, const double *x);

#endif
