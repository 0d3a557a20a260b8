/*
 * powermodel: CARMA's baseline + delta power models, fitted by least squares (GSL).
 *
 * Per device kind, the node's measured power over an interval is modelled as
 *
 *     P_kind = baseline_w + Σ_f coef_f × X_f,    X_f = Σ_parties x_{party,f}
 *
 * the baseline being the kind's static power and the sum its dynamic power: the delta each
 * party (a workload, or "other": the processes outside the experiment) adds is linear in its
 * own features, so the node-level fit on the sums of the features gives per-job predictions
 * (delta_job = Σ_f coef_f × x_{job,f}) without fitting to carma's own attribution. The fit is a
 * weighted linear least squares (gsl_multifit_wlinear_tsvd, weights = interval seconds);
 * its quality is scored in-sample and out-of-sample (k-fold over contiguous blocks of intervals,
 * or leave-one-run-out): R² and MAPE. The model file is JSON (docs/model.md). Nothing here
 * prints; errors name the file, kind and feature.
 */
#ifndef CARMA_MODEL_POWERMODEL_H
#define CARMA_MODEL_POWERMODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "model/features.h"

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
    struct pm_kind k[FX_KINDS];
    char skipped[FX_KINDS][256]; /* per kind: why it was not fitted ("" when fitted/absent) */
    size_t nruns;
    char runs[PM_RUNS_MAX][512];
    int ncpu;             /* host.cpus of the runs (0 when unknown or mixed) */
    double window_s;      /* interval length used */
    bool background_seen; /* every run had node_util.csv */
};

struct pm_fit_opts {
    int folds;        /* k of the k-fold CV (default 5) */
    bool cv_runs;     /* leave-one-run-out instead (needs two runs or more) */
    size_t nfeat_cpu; /* the CPU-side kinds' features; 0: cpu_util */
    int feat_cpu[FX_N];
    size_t nfeat_gpu; /* the GPU kind's; 0: gpu_sm where every run has it, else gpu_util */
    int feat_gpu[FX_N];
    bool kinds[FX_KINDS]; /* with kinds_given: only these */
    bool kinds_given;
    double window_s; /* for the record */
};

/*
 * Weighted least squares of y on [1, x] (x: n rows of p features, row-major; w: weights > 0;
 * names: the p features' names for messages). Writes p + 1 coefficients (the intercept first)
 * to coef and their standard errors to se (may be NULL; scaled by the residual variance, NAN
 * when n <= p + 1). Returns 0, or -EINVAL with e saying which feature is constant or a linear
 * combination of the others (rank deficiency), or that there are too few rows.
 */
int pm_linfit(const double *x, size_t n, size_t p, const double *y, const double *w,
              const char *const *names, double *coef, double *se, struct carma_err *e);

/*
 * Out-of-fold predictions: for each fold f in [0, nfold), fits on the rows whose fold[] is not
 * f and predicts the rows whose fold[] is f, into yhat. Returns 0, or pm_linfit's error for
 * the first fold that cannot be fitted (e says which fold).
 */
int pm_crossval(const double *x, size_t n, size_t p, const double *y, const double *w,
                const int *fold, int nfold, const char *const *names, double *yhat,
                struct carma_err *e);

/*
 * Scores of yhat against y with weights w (NULL: 1): R² = 1 - Σw(y-ŷ)² / Σw(y-ȳ)² (ȳ the
 * weighted mean) and MAPE = 100 × Σw|y-ŷ|/|y| / Σw over the rows with y != 0.
 */
void pm_scores(const double *y, const double *yhat, const double *w, size_t n, double *r2,
               double *mape_pct);

/*
 * Fits the model of every kind the runs have (o may be NULL for the defaults). Returns 0 or a
 * negative errno with e naming the run, kind and feature (a feature missing from a run, too
 * few intervals, rank deficiency).
 */
int pm_fit(const struct fx_run *runs, size_t nruns, const struct pm_fit_opts *o,
           struct power_model *ret, struct carma_err *e);

/* The model as JSON (docs/model.md); the caller owns the result. */
json_t *pm_to_json(const struct power_model *m);

/* Writes the model to path atomically. Returns 0 or a negative errno with e set. */
int pm_save(const struct power_model *m, const char *path, struct carma_err *e);

/*
 * Reads a model file. Returns 0, or -ENOENT / -EINVAL with e naming the file and the field
 * (unknown kind or feature, a coefficient that is not a number, a schema it does not know).
 */
int pm_load(const char *path, struct power_model *ret, struct carma_err *e);

/* The model of kind, or NULL. */
const struct pm_kind *pm_find_kind(const struct power_model *m, int kind);

/* Σ coef_f × x[feat_f] (x indexed by enum fx_feature): the delta of a party or the node. */
double pm_delta(const struct pm_kind *k, const double *x);

/*
 * CARMA's predict step on one run: per interval, kind and party the predicted power (the
 * delta, and the static share by the run's idle policy), written to RUN/prediction.csv, and
 * per workload the predicted energy against the attributed energy measured (attribution.csv),
 * per kind the node's prediction against its measurement (R², MAPE), written to
 * RUN/prediction.json. *ret (may be NULL) gets prediction.json's content. model_path names
 * the model in messages and in the JSON. Returns 0 or a negative errno with e set (a kind the
 * run lacks, a feature it lacks, too few intervals, a file that cannot be written).
 */
int pm_predict(const struct power_model *m, const char *model_path, const struct fx_run *r,
               json_t **ret, struct carma_err *e);

#endif
