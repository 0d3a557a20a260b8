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
 * or leave-one-run-out): R² and MAPE. The model file (JSON, docs/model.md) is sources/modelfile's:
 * what is fitted here is saved and loaded there. Nothing here prints; errors name the file, kind
 * and feature.
 */
#ifndef CARMA_MODEL_POWERMODEL_H
#define CARMA_MODEL_POWERMODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "model/features.h"
#include "sources/modelfile.h"

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
