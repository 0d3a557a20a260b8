/* powermodel: baseline + delta power models fitted with GSL (see powermodel.h). */
#include "model/powermodel.h"

#include <errno.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"
#include "core/file.h"
#include "core/fmt.h"

#define PM_TSVD_TOL 1e-10 /* singular values below tol × the largest count as zero */

/* ---- least squares ---- */

/* The numerical rank of [1, x] without column skip (-1: none), by truncated SVD. */
static int design_rank(const double *x, size_t n, size_t p, const double *w, int skip, int *ret)
{
    size_t q = 1 + p - (skip >= 0);
    gsl_matrix *X = gsl_matrix_alloc(n, q);
    gsl_vector *wv = gsl_vector_alloc(n), *yv = gsl_vector_calloc(n), *c = gsl_vector_alloc(q);
    gsl_matrix *cov = gsl_matrix_alloc(q, q);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, q);
    int rc = -ENOMEM;
    if (!X || !wv || !yv || !c || !cov || !ws)
        goto out;
    for (size_t i = 0; i < n; i++) {
        size_t m = 0;
        gsl_matrix_set(X, i, m++, 1.0);
        for (size_t j = 0; j < p; j++)
            if ((int)j != skip)
                gsl_matrix_set(X, i, m++, x[i * p + j]);
        gsl_vector_set(wv, i, w ? w[i] : 1.0);
    }
    size_t rank = 0;
    double chisq;
    if (gsl_multifit_wlinear_tsvd(X, wv, yv, PM_TSVD_TOL, c, cov, &chisq, &rank, ws) != 0) {
        rc = -EINVAL;
        goto out;
    }
    *ret = (int)rank;
    rc = 0;
out:
    gsl_matrix_free(X);
    gsl_vector_free(wv);
    gsl_vector_free(yv);
    gsl_vector_free(c);
    gsl_matrix_free(cov);
    if (ws)
        gsl_multifit_linear_free(ws);
    return rc;
}

int pm_linfit(const double *x, size_t n, size_t p, const double *y, const double *w,
              const char *const *names, double *coef, double *se, struct carma_err *e)
{
    gsl_set_error_handler_off(); /* GSL's default handler aborts: errors are returned */
    if (n < p + 1)
        return carma_err_set(e, -EINVAL,
                             "too few intervals: %zu for %zu coefficients (the baseline and %zu "
                             "feature%s)",
                             n, p + 1, p, p == 1 ? "" : "s");
    /* a constant feature cannot be told apart from the baseline */
    double sw = 0;
    for (size_t i = 0; i < n; i++)
        sw += w ? w[i] : 1.0;
    for (size_t j = 0; j < p; j++) {
        double m = 0, v = 0;
        for (size_t i = 0; i < n; i++)
            m += (w ? w[i] : 1.0) * x[i * p + j];
        m /= sw;
        for (size_t i = 0; i < n; i++)
            v += (w ? w[i] : 1.0) * (x[i * p + j] - m) * (x[i * p + j] - m);
        v /= sw;
        if (!(v > 1e-12 * fmax(1.0, m * m)))
            return carma_err_set(e, -EINVAL,
                                 "rank deficient: feature '%s' is constant (%.6g) over the %zu "
                                 "intervals, so its coefficient cannot be told apart from the "
                                 "baseline: give runs where it varies, or leave it out",
                                 names[j], m, n);
    }
    size_t q = p + 1;
    gsl_matrix *X = gsl_matrix_alloc(n, q), *cov = gsl_matrix_alloc(q, q);
    gsl_vector *wv = gsl_vector_alloc(n), *yv = gsl_vector_alloc(n), *c = gsl_vector_alloc(q);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, q);
    int rc = -ENOMEM;
    if (!X || !cov || !wv || !yv || !c || !ws)
        goto out;
    for (size_t i = 0; i < n; i++) {
        gsl_matrix_set(X, i, 0, 1.0);
        for (size_t j = 0; j < p; j++)
            gsl_matrix_set(X, i, j + 1, x[i * p + j]);
        gsl_vector_set(wv, i, w ? w[i] : 1.0);
        gsl_vector_set(yv, i, y[i]);
    }
    size_t rank = 0;
    double chisq = 0;
    if (gsl_multifit_wlinear_tsvd(X, wv, yv, PM_TSVD_TOL, c, cov, &chisq, &rank, ws) != 0) {
        rc = carma_err_set(e, -EINVAL, "the least-squares fit failed (GSL)");
        goto out;
    }
    if (rank < q) {
        /* which feature is a linear combination of the baseline and the others */
        const char *which = NULL;
        for (size_t j = 0; j < p && !which; j++) {
            int r2 = 0;
            if (design_rank(x, n, p, w, (int)j, &r2) == 0 && (size_t)r2 == rank)
                which = names[j];
        }
        char others[512] = "the baseline";
        for (size_t j = 0; j < p; j++) {
            if (which && strcmp(names[j], which) == 0)
                continue;
            size_t used = strlen(others);
            snprintf(others + used, sizeof others - used, ", %s", names[j]);
        }
        rc = carma_err_set(e, -EINVAL,
                           "rank deficient (rank %zu of %zu): feature '%s' is a linear "
                           "combination of %s over these intervals: leave one of them out",
                           rank, q, which ? which : "?", others);
        goto out;
    }
    size_t dof = n > q ? n - q : 0;
    for (size_t j = 0; j < q; j++) {
        coef[j] = gsl_vector_get(c, j);
        if (se)
            se[j] = dof ? sqrt(gsl_matrix_get(cov, j, j) * chisq / (double)dof) : NAN;
    }
    rc = 0;
out:
    gsl_matrix_free(X);
    gsl_matrix_free(cov);
    gsl_vector_free(wv);
    gsl_vector_free(yv);
    gsl_vector_free(c);
    if (ws)
        gsl_multifit_linear_free(ws);
    return rc;
}

int pm_crossval(const double *x, size_t n, size_t p, const double *y, const double *w,
                const int *fold, int nfold, const char *const *names, double *yhat,
                struct carma_err *e)
{
    double *tx = malloc((n * p + 1) * sizeof *tx), *ty = malloc(n * sizeof *ty),
           *tw = malloc(n * sizeof *tw), *coef = malloc((p + 1) * sizeof *coef);
    int rc = -ENOMEM;
    if (!tx || !ty || !tw || !coef)
        goto out;
    for (int f = 0; f < nfold; f++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (fold[i] == f)
                continue;
            memcpy(&tx[m * p], &x[i * p], p * sizeof *x);
            ty[m] = y[i];
            tw[m] = w ? w[i] : 1.0;
            m++;
        }
        if (m == n)
            continue; /* an empty fold */
        struct carma_err fe = {0};
        rc = pm_linfit(tx, m, p, ty, tw, names, coef, NULL, &fe);
        if (rc < 0) {
            carma_err_set(e, rc, "fold %d of %d (trained without it): %s", f + 1, nfold, fe.msg);
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            if (fold[i] != f)
                continue;
            double v = coef[0];
            for (size_t j = 0; j < p; j++)
                v += coef[j + 1] * x[i * p + j];
            yhat[i] = v;
        }
    }
    rc = 0;
out:
    free(tx);
    free(ty);
    free(tw);
    free(coef);
    return rc;
}

void pm_scores(const double *y, const double *yhat, const double *w, size_t n, double *r2,
               double *mape_pct)
{
    double sw = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        sw += w ? w[i] : 1.0;
        m += (w ? w[i] : 1.0) * y[i];
    }
    m = sw > 0 ? m / sw : NAN;
    double sse = 0, sst = 0, ape = 0, aw = 0;
    for (size_t i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        sse += wi * (y[i] - yhat[i]) * (y[i] - yhat[i]);
        sst += wi * (y[i] - m) * (y[i] - m);
        if (y[i] != 0) {
            ape += wi * fabs(y[i] - yhat[i]) / fabs(y[i]);
            aw += wi;
        }
    }
    if (r2)
        *r2 = sst > 0 ? 1.0 - sse / sst : NAN;
    if (mape_pct)
        *mape_pct = aw > 0 ? 100.0 * ape / aw : NAN;
}

/* ---- fitting ---- */

static bool kind_is_gpu(int kind)
{
    return kind == KIND_GPU;
}

static int fit_kind(const struct fx_run *runs, size_t nruns, const struct pm_fit_opts *o, int kind,
                    const int *feat, size_t nfeat, struct pm_kind *pk, struct carma_err *e)
{
    size_t cap = 0;
    for (size_t r = 0; r < nruns; r++)
        cap += runs[r].nint;
    double *x = malloc((cap * nfeat + 1) * sizeof *x), *y = malloc((cap + 1) * sizeof *y),
           *w = malloc((cap + 1) * sizeof *w), *yhat = malloc((cap + 1) * sizeof *yhat);
    int *run_of = malloc((cap + 1) * sizeof *run_of), *fold = malloc((cap + 1) * sizeof *fold);
    double coef[FX_N + 1], se[FX_N + 1];
    const char *names[FX_N];
    int rc = -ENOMEM;
    if (!x || !y || !w || !yhat || !run_of || !fold)
        goto out;
    memset(pk, 0, sizeof *pk);
    pk->kind = kind;
    pk->nfeat = nfeat;
    for (size_t j = 0; j < nfeat; j++) {
        pk->feat[j] = feat[j];
        names[j] = modelfile_feature_name(feat[j]);
    }
    size_t n = 0;
    double ph_s = 0, ph_e = 0, ph_u = 0;
    int nrun_rows = 0;
    for (size_t r = 0; r < nruns; r++) {
        const struct fx_run *R = &runs[r];
        if (!R->has_kind[kind])
            continue;
        if (!pk->channels[0])
            snprintf(pk->channels, sizeof pk->channels, "%s", R->kind_channels[kind]);
        /* what the model learns from: the machine (measured) or another model (estimated) */
        const char *tm = R->kind_estimated[kind] ? "estimated" : "measured";
        if (!pk->training_method[0])
            snprintf(pk->training_method, sizeof pk->training_method, "%s", tm);
        else if (strcmp(pk->training_method, tm) != 0)
            snprintf(pk->training_method, sizeof pk->training_method, "measured+estimated");
        size_t before = n;
        for (size_t i = 0; i < R->nint; i++) {
            double pw = R->power_w[i * FX_KINDS + (size_t)kind];
            double dt = R->t1[i] - R->t0[i];
            bool ok = isfinite(pw);
            for (size_t j = 0; j < nfeat && ok; j++) {
                x[n * nfeat + j] = fx_node(R, i, feat[j]);
                ok = isfinite(x[n * nfeat + j]);
            }
            if (!ok)
                continue;
            y[n] = pw;
            w[n] = dt;
            run_of[n] = nrun_rows;
            if (R->baseline[i]) {
                ph_s += dt;
                ph_e += pw * dt;
                double u = fx_node(R, i, FX_CPU_UTIL);
                ph_u += isfinite(u) ? u * dt : NAN;
            }
            n++;
        }
        if (n > before)
            nrun_rows++;
    }
    pk->phase_s = ph_s;
    pk->phase_w = ph_s > 0 ? ph_e / ph_s : NAN;
    pk->phase_util = ph_s > 0 ? ph_u / ph_s : NAN;
    struct carma_err fe = {0};
    rc = pm_linfit(x, n, nfeat, y, w, names, coef, se, &fe);
    if (rc < 0) {
        carma_err_set(e, rc, "kind %s: %s", channel_kind_name(kind), fe.msg);
        goto out;
    }
    pk->baseline_w = coef[0];
    pk->baseline_se_w = se[0];
    for (size_t j = 0; j < nfeat; j++) {
        pk->coef[j] = coef[j + 1];
        pk->coef_se[j] = se[j + 1];
    }
    pk->nint = n;
    double sse = 0, sw = 0;
    for (size_t i = 0; i < n; i++) {
        double v = coef[0];
        for (size_t j = 0; j < nfeat; j++)
            v += coef[j + 1] * x[i * nfeat + j];
        yhat[i] = v;
        sse += w[i] * (y[i] - v) * (y[i] - v);
        sw += w[i];
    }
    pk->seconds = sw;
    pk->rmse_w = sw > 0 ? sqrt(sse / sw) : NAN;
    pm_scores(y, yhat, w, n, &pk->r2, &pk->mape_pct);
    /* out of sample */
    int nfold;
    if (o->cv_runs) {
        snprintf(pk->cv_method, sizeof pk->cv_method, "leave-one-run-out");
        nfold = nrun_rows;
        memcpy(fold, run_of, n * sizeof *fold);
    } else {
        nfold = o->folds > 0 ? o->folds : 5;
        snprintf(pk->cv_method, sizeof pk->cv_method, "%d-fold", nfold);
        for (size_t i = 0; i < n; i++)
            fold[i] = (int)(i * (size_t)nfold / n); /* contiguous blocks */
    }
    pk->cv_r2 = pk->cv_mape_pct = NAN;
    if (nfold < 2) {
        snprintf(pk->cv_note, sizeof pk->cv_note, "%s needs two folds or more (%d)",
                 o->cv_runs ? "leave-one-run-out" : "k-fold", nfold);
    } else if (pm_crossval(x, n, nfeat, y, w, fold, nfold, names, yhat, &fe) < 0) {
        snprintf(pk->cv_note, sizeof pk->cv_note, "%s", fe.msg);
    } else {
        pm_scores(y, yhat, w, n, &pk->cv_r2, &pk->cv_mape_pct);
    }
    rc = 0;
out:
    free(x);
    free(y);
    free(w);
    free(yhat);
    free(run_of);
    free(fold);
    return rc;
}

/* A fitted kind's figures: the baseline and coefficients finite, nothing infinite (sums that
 * overflowed a double: the rows' bounds, rundir.h, keep them from it), so that no inf or nan
 * reaches a model file. 0 or -ERANGE naming the figure. */
static int fit_finite(const struct pm_kind *k, struct carma_err *e)
{
    const char *bad = !isfinite(k->baseline_w)  ? "baseline_w"
                      : isinf(k->baseline_se_w) ? "baseline_se_w"
                      : isinf(k->rmse_w)        ? "rmse_w"
                      : isinf(k->phase_w)       ? "phase_w"
                                                : NULL;
    for (size_t j = 0; !bad && j < k->nfeat; j++)
        if (!isfinite(k->coef[j]) || isinf(k->coef_se[j]))
            bad = modelfile_feature_name(k->feat[j]);
    if (!bad)
        return 0;
    return carma_err_set(e, -ERANGE,
                         "kind %s: %s: the fit's sums overflow a double (no power or energy is "
                         "that large)",
                         channel_kind_name(k->kind), bad);
}

int pm_fit(const struct fx_run *runs, size_t nruns, const struct pm_fit_opts *o,
           struct power_model *ret, struct carma_err *e)
{
    struct pm_fit_opts def = {.folds = 5};
    if (!o)
        o = &def;
    struct power_model *m = ret;
    memset(m, 0, sizeof *m);
    if (nruns == 0 || nruns > PM_RUNS_MAX)
        return carma_err_set(e, -EINVAL, "give 1 to %d run directories", PM_RUNS_MAX);
    if (o->cv_runs && nruns < 2)
        return carma_err_set(e, -EINVAL,
                             "leave-one-run-out cross-validation needs two runs or more");
    m->nruns = nruns;
    m->window_s = o->window_s > 0 ? o->window_s : 1.0;
    m->ncpu = runs[0].ncpu;
    m->background_seen = true;
    for (size_t r = 0; r < nruns; r++) {
        snprintf(m->runs[r], sizeof m->runs[r], "%s", runs[r].dir);
        if (runs[r].ncpu != m->ncpu)
            m->ncpu = 0;
        m->background_seen = m->background_seen && runs[r].node_util;
    }
    for (int kind = 0; kind < FX_KINDS; kind++) {
        bool any = false;
        for (size_t r = 0; r < nruns; r++)
            any = any || runs[r].has_kind[kind];
        if (o->kinds_given && !o->kinds[kind])
            continue;
        if (!any) {
            if (o->kinds_given)
                return carma_err_set(e, -EINVAL, "kind %s: no run has a total-domain channel of it",
                                     channel_kind_name(kind));
            continue;
        }
        int feat[FX_N];
        size_t nfeat = 0;
        bool gpu = kind_is_gpu(kind);
        if (gpu && o->nfeat_gpu) {
            nfeat = o->nfeat_gpu;
            memcpy(feat, o->feat_gpu, nfeat * sizeof *feat);
        } else if (!gpu && o->nfeat_cpu) {
            nfeat = o->nfeat_cpu;
            memcpy(feat, o->feat_cpu, nfeat * sizeof *feat);
        } else {
            int f = FX_CPU_UTIL;
            if (gpu) {
                f = FX_GPU_SM;
                for (size_t r = 0; r < nruns; r++)
                    if (runs[r].has_kind[kind] && !runs[r].has_feat[FX_GPU_SM])
                        f = FX_GPU_UTIL;
            }
            feat[nfeat++] = f;
        }
        /* every feature in every run that has the kind */
        const char *missing = NULL;
        for (size_t r = 0; r < nruns && !missing; r++)
            for (size_t j = 0; j < nfeat && !missing; j++)
                if (runs[r].has_kind[kind] && !runs[r].has_feat[feat[j]]) {
                    missing = runs[r].feat_missing[feat[j]];
                    if (o->kinds_given || (gpu ? o->nfeat_gpu : o->nfeat_cpu))
                        return carma_err_set(
                            e, -EINVAL, "kind %s: feature '%s' is not available: %s",
                            channel_kind_name(kind), modelfile_feature_name(feat[j]), missing);
                    snprintf(m->skipped[kind], sizeof m->skipped[kind],
                             "feature '%s' is not available: %s", modelfile_feature_name(feat[j]),
                             missing);
                }
        if (missing)
            continue;
        int rc = fit_kind(runs, nruns, o, kind, feat, nfeat, &m->k[m->nkinds], e);
        if (rc < 0)
            return rc;
        if ((rc = fit_finite(&m->k[m->nkinds], e)) < 0)
            return rc;
        m->nkinds++;
    }
    if (m->nkinds == 0)
        return carma_err_set(e, -EINVAL, "no kind of device could be fitted%s%s",
                             m->skipped[KIND_CPU][0] ? ": cpu: " : "", m->skipped[KIND_CPU]);
    return 0;
}

/* ---- predict ---- */

/* key: v, or null when v is not finite */
static void set_num(json_t *o, const char *key, double v)
{
    json_object_set_new(o, key, isfinite(v) ? json_real(v) : json_null());
}

struct acc {
    double pred_j, meas_j, dyn_j, stat_j;
    bool meas_known;
};

static void csv_num(struct csv_buf *b, double v)
{
    char num[64];
    csv_buf_raw(b, ",", 1);
    if (isfinite(v)) {
        fmt_fixed6(num, v);
        csv_buf_raw(b, num, strlen(num));
    }
}

static void pred_row(struct csv_buf *b, double t0, double t1, int kind, const char *job, double dyn,
                     double st, double meas, double dt)
{
    char ts[64];
    fmt_fixed6(ts, t0);
    csv_buf_raw(b, ts, strlen(ts));
    csv_num(b, t1);
    csv_buf_field(b, channel_kind_name(kind), 0);
    csv_buf_field(b, job, 0);
    csv_num(b, dyn);
    csv_num(b, st);
    csv_num(b, dyn + st);
    csv_num(b, (dyn + st) * dt);
    csv_num(b, meas);
    csv_num(b, meas * dt);
    csv_buf_end_row(b);
}

/* est: the run's own figures compared with are estimated (its power came from a model):
 * they are "estimated_j" then, never "measured_j" */
static json_t *acc_json(const struct acc *a, bool est)
{
    json_t *o = json_object();
    set_num(o, "predicted_dynamic_j", a->dyn_j);
    set_num(o, "predicted_static_j", a->stat_j);
    set_num(o, "predicted_j", a->pred_j);
    set_num(o, est ? "estimated_j" : "measured_j", a->meas_known ? a->meas_j : NAN);
    set_num(o, "error_pct",
            a->meas_known && a->meas_j != 0 ? 100.0 * (a->pred_j - a->meas_j) / a->meas_j : NAN);
    return o;
}

int pm_predict(const struct power_model *m, const char *model_path, const struct fx_run *r,
               json_t **ret, struct carma_err *e)
{
    /* the model's kinds and features must all be in the run */
    for (size_t k = 0; k < m->nkinds; k++) {
        const struct pm_kind *pk = &m->k[k];
        if (!r->has_kind[pk->kind])
            return carma_err_set(e, -EINVAL,
                                 "%s was fitted on kind %s, but %s/samples.csv has no "
                                 "total-domain %s channel",
                                 model_path, channel_kind_name(pk->kind), r->dir,
                                 channel_kind_name(pk->kind));
        for (size_t j = 0; j < pk->nfeat; j++)
            if (!r->has_feat[pk->feat[j]])
                return carma_err_set(e, -EINVAL, "%s: kind %s uses feature '%s': %s", model_path,
                                     channel_kind_name(pk->kind),
                                     modelfile_feature_name(pk->feat[j]),
                                     r->feat_missing[pk->feat[j]]);
    }
    size_t nj = r->njobs, np = nj + 1, nm = nj + 2;
    enum {
        P_IDLE,
        P_PROP,
        P_EQUAL
    } pol = strcmp(r->policy, "proportional") == 0 ? P_PROP
            : strcmp(r->policy, "equal") == 0      ? P_EQUAL
                                                   : P_IDLE;
    struct acc *ja = calloc(nm * FX_KINDS, sizeof *ja); /* workloads, other, idle; per kind */
    struct acc *na = calloc(FX_KINDS, sizeof *na);
    double *y = malloc((r->nint + 1) * FX_KINDS * sizeof *y),
           *yh = malloc((r->nint + 1) * FX_KINDS * sizeof *yh),
           *w = malloc((r->nint + 1) * FX_KINDS * sizeof *w), *d = malloc(np * sizeof *d);
    size_t *ny = calloc(FX_KINDS, sizeof *ny);
    /* the node summed over the model's kinds */
    double *ty = malloc((r->nint + 1) * sizeof *ty), *tyh = malloc((r->nint + 1) * sizeof *tyh),
           *tw = malloc((r->nint + 1) * sizeof *tw);
    size_t nty = 0;
    struct csv_buf b = {0};
    int rc = -ENOMEM;
    json_t *out = NULL;
    if (!ja || !na || !y || !yh || !w || !d || !ny || !ty || !tyh || !tw)
        goto out;
    /* the run's power of a model kind estimated: what the prediction is compared with is an
     * estimate too, and named so */
    bool ref_est = false;
    for (size_t k = 0; k < m->nkinds; k++)
        ref_est = ref_est || r->kind_estimated[m->k[k].kind];
    const char *hdr = ref_est ? "interval_start_unix,interval_end_unix,kind,job,dynamic_w,static_w,"
                                "predicted_w,predicted_j,estimated_w,estimated_j\r\n"
                              : "interval_start_unix,interval_end_unix,kind,job,dynamic_w,static_w,"
                                "predicted_w,predicted_j,measured_w,measured_j\r\n";
    csv_buf_raw(&b, hdr, strlen(hdr));
    for (size_t i = 0; i < r->nint; i++) {
        double dt = r->t1[i] - r->t0[i];
        /* attribution.csv starts with the workloads: the parties are compared after it */
        bool attr_iv = !r->baseline[i];
        double tot_y = 0, tot_yh = 0;
        bool tot_ok = true;
        for (size_t k = 0; k < m->nkinds; k++) {
            const struct pm_kind *pk = &m->k[k];
            int kind = pk->kind;
            double x[FX_N], dsum = 0;
            bool ok = true;
            for (size_t p = 0; p < np; p++) {
                for (int f = 0; f < FX_N; f++)
                    x[f] = fx_party(r, i, p, f);
                d[p] = modelfile_delta(pk, x);
                ok = ok && isfinite(d[p]);
                dsum += d[p] > 0 ? d[p] : 0;
            }
            if (!ok) {
                tot_ok = false;
                continue; /* a feature unknown in this interval (no GPU sample in it) */
            }
            double base = pk->baseline_w, idle_st = base;
            size_t running = 0;
            for (size_t p = 0; p < nj; p++)
                running += isfinite(r->job_start[p]) && r->job_start[p] < r->t1[i] &&
                           !(r->job_end[p] <= r->t0[i]);
            for (size_t p = 0; p < np; p++) {
                double st = 0;
                if (pol == P_PROP && dsum > 0)
                    st = base * (d[p] > 0 ? d[p] : 0) / dsum;
                else if (pol == P_EQUAL && running && p < nj && isfinite(r->job_start[p]) &&
                         r->job_start[p] < r->t1[i] && !(r->job_end[p] <= r->t0[i]))
                    st = base / (double)running;
                idle_st -= st;
                double meas = attr_iv ? r->meas_w[(i * nm + p) * FX_KINDS + (size_t)kind] : NAN;
                pred_row(&b, r->t0[i], r->t1[i], kind, p < nj ? r->jobs[p] : "other", d[p], st,
                         meas, dt);
                if (!attr_iv)
                    continue;
                struct acc *a = &ja[p * FX_KINDS + (size_t)kind];
                a->dyn_j += d[p] * dt;
                a->stat_j += st * dt;
                a->pred_j += (d[p] + st) * dt;
                if (isfinite(meas)) {
                    a->meas_j += meas * dt;
                    a->meas_known = true;
                }
            }
            if (idle_st < 1e-12 && idle_st > -1e-12)
                idle_st = 0;
            double meas_idle =
                attr_iv ? r->meas_w[(i * nm + nj + 1) * FX_KINDS + (size_t)kind] : NAN;
            pred_row(&b, r->t0[i], r->t1[i], kind, "idle", 0, idle_st, meas_idle, dt);
            struct acc *a = &ja[(nj + 1) * FX_KINDS + (size_t)kind];
            if (attr_iv) {
                a->stat_j += idle_st * dt;
                a->pred_j += idle_st * dt;
                if (isfinite(meas_idle)) {
                    a->meas_j += meas_idle * dt;
                    a->meas_known = true;
                }
            }
            double pnode = base;
            for (size_t p = 0; p < np; p++)
                pnode += d[p];
            double meas_node = r->power_w[i * FX_KINDS + (size_t)kind];
            pred_row(&b, r->t0[i], r->t1[i], kind, "node", pnode - base, base, meas_node, dt);
            struct acc *na_k = &na[kind];
            na_k->dyn_j += (pnode - base) * dt;
            na_k->stat_j += base * dt;
            na_k->pred_j += pnode * dt;
            if (isfinite(meas_node)) {
                na_k->meas_j += meas_node * dt;
                na_k->meas_known = true;
                size_t q = (size_t)kind * (r->nint + 1) + ny[kind]++;
                y[q] = meas_node;
                yh[q] = pnode;
                w[q] = dt;
                tot_y += meas_node;
                tot_yh += pnode;
            } else {
                tot_ok = false;
            }
        }
        if (tot_ok) {
            ty[nty] = tot_y;
            tyh[nty] = tot_yh;
            tw[nty++] = dt;
        }
    }
    if (nty < 2) {
        rc = carma_err_set(e, -EINVAL,
                           "%s: too few intervals with every reading and feature (%zu) to "
                           "compare a prediction with",
                           r->dir, nty);
        goto out;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/prediction.csv", r->dir);
    rc = file_replace(path, b.data, b.len);
    if (rc < 0) {
        carma_err_set(e, rc, "cannot write %s: %s", path, strerror(-rc));
        goto out;
    }
    out = json_object();
    json_object_set_new(out, "run_dir", json_string(r->dir));
    json_object_set_new(out, "model", json_string(model_path));
    json_object_set_new(out, "idle_policy", json_string(r->policy[0] ? r->policy : "idle"));
    json_object_set_new(out, "intervals", json_integer((json_int_t)r->nint));
    json_object_set_new(out, "measured_basis",
                        json_string(r->attribution
                                        ? ref_est ? "attribution.csv over the same intervals and "
                                                    "kinds; its power estimated, not measured"
                                                  : "attribution.csv over the same intervals and "
                                                    "kinds"
                                        : "none: the run has no attribution.csv"));
    /* per kind: how the run's power was obtained, how the model's training runs' was; the
     * prediction itself is a model's output ("predicted"), never a measurement */
    json_t *refm = json_object(), *trm = json_object();
    for (size_t k = 0; k < m->nkinds; k++) {
        const struct pm_kind *pk = &m->k[k];
        json_object_set_new(refm, channel_kind_name(pk->kind),
                            json_string(r->kind_estimated[pk->kind] ? "estimated" : "measured"));
        json_object_set_new(trm, channel_kind_name(pk->kind),
                            pk->training_method[0] ? json_string(pk->training_method)
                                                   : json_null());
    }
    json_object_set_new(out, "method", json_string("predicted"));
    json_object_set_new(out, "reference_method", refm);
    json_object_set_new(out, "model_training_method", trm);
    json_t *node = json_object();
    struct acc nt = {0};
    for (size_t k = 0; k < m->nkinds; k++) {
        int kind = m->k[k].kind;
        json_t *o = acc_json(&na[kind], r->kind_estimated[kind]);
        double r2, mape;
        pm_scores(&y[(size_t)kind * (r->nint + 1)], &yh[(size_t)kind * (r->nint + 1)],
                  &w[(size_t)kind * (r->nint + 1)], ny[kind], &r2, &mape);
        json_object_set_new(o, "intervals", json_integer((json_int_t)ny[kind]));
        set_num(o, "r2", r2);
        set_num(o, "mape_pct", mape);
        json_object_set_new(node, channel_kind_name(kind), o);
        nt.dyn_j += na[kind].dyn_j;
        nt.stat_j += na[kind].stat_j;
        nt.pred_j += na[kind].pred_j;
        nt.meas_j += na[kind].meas_j;
        nt.meas_known = nt.meas_known || na[kind].meas_known;
    }
    json_t *all = acc_json(&nt, ref_est);
    double r2, mape;
    pm_scores(ty, tyh, tw, nty, &r2, &mape);
    json_object_set_new(all, "intervals", json_integer((json_int_t)nty));
    set_num(all, "r2", r2);
    set_num(all, "mape_pct", mape);
    json_object_set_new(node, "all", all);
    json_object_set_new(out, "node", node);
    json_t *ws = json_array();
    for (size_t p = 0; p < nm; p++) {
        struct acc sum = {0};
        json_t *bk = json_object();
        for (size_t k = 0; k < m->nkinds; k++) {
            const struct acc *a = &ja[p * FX_KINDS + (size_t)m->k[k].kind];
            json_object_set_new(bk, channel_kind_name(m->k[k].kind),
                                acc_json(a, r->kind_estimated[m->k[k].kind]));
            sum.dyn_j += a->dyn_j;
            sum.stat_j += a->stat_j;
            sum.pred_j += a->pred_j;
            sum.meas_j += a->meas_j;
            sum.meas_known = sum.meas_known || a->meas_known;
        }
        if (!r->attribution)
            sum.meas_known = false;
        json_t *o = acc_json(&sum, ref_est);
        json_object_set_new(o, "by_kind", bk);
        if (p < nj) {
            json_object_set_new(o, "name", json_string(r->jobs[p]));
            json_array_append_new(ws, o);
        } else {
            json_object_set_new(out, p == nj ? "other" : "idle", o);
        }
    }
    json_object_set_new(out, "workloads", ws);
    snprintf(path, sizeof path, "%s/prediction.json", r->dir);
    char *text = json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16));
    if (!text) {
        rc = -ENOMEM;
        goto out;
    }
    size_t tl = strlen(text);
    text[tl] = '\n';
    rc = file_replace(path, text, tl + 1);
    free(text);
    if (rc < 0) {
        carma_err_set(e, rc, "cannot write %s: %s", path, strerror(-rc));
        goto out;
    }
    rc = 0;
out:
    if (rc == 0 && ret) {
        *ret = out;
        out = NULL;
    }
    json_decref(out);
    csv_buf_free(&b);
    free(ja);
    free(na);
    free(y);
    free(yh);
    free(w);
    free(d);
    free(ny);
    free(ty);
    free(tyh);
    free(tw);
    return rc;
}
