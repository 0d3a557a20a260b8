/* modelfile: the fitted power model file and the features it names (see modelfile.h). */
#include "sources/modelfile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/file.h"

static const struct {
    const char *name, *unit, *source;
    bool gpu;
} feature_info[FX_N] = {
    [FX_CPU_UTIL] = {"cpu_util", "fraction of the node's CPU time (0..1)",
                     "features.csv cpu_time_s; the node's from node_util.csv", false},
    [FX_INSTRUCTIONS] = {"instructions", "1e9 instructions per second",
                         "features.csv instructions (perf_event)", false},
    [FX_CYCLES] = {"cycles", "1e9 cycles per second", "features.csv cycles (perf_event)", false},
    [FX_GPU_SM] = {"gpu_sm", "SM utilization summed over the GPUs (1 = one GPU's SMs)",
                   "utilization.csv sm_util_pct", true},
    [FX_GPU_UTIL] = {"gpu_util", "device utilization summed over the GPUs, by SM share",
                     "utilization.csv gpu_util_pct", true},
    [FX_GPU_MEM] = {"gpu_mem", "memory utilization summed over the GPUs, by SM share",
                    "utilization.csv mem_util_pct", true},
    [FX_GPU_BUSY] = {"gpu_busy", "kernel busy fraction summed over the GPUs",
                     "nsys_gpu.csv busy_s (carma import-nsys)", true},
};

const char *modelfile_feature_name(int f)
{
    return f >= 0 && f < FX_N ? feature_info[f].name : NULL;
}

int modelfile_feature_parse(const char *name)
{
    for (int f = 0; f < FX_N; f++)
        if (strcmp(name, feature_info[f].name) == 0)
            return f;
    return -1;
}

const char *modelfile_feature_unit(int f)
{
    return f >= 0 && f < FX_N ? feature_info[f].unit : NULL;
}

const char *modelfile_feature_source(int f)
{
    return f >= 0 && f < FX_N ? feature_info[f].source : NULL;
}

bool modelfile_feature_is_gpu(int f)
{
    return f >= 0 && f < FX_N && feature_info[f].gpu;
}

/* key: v, or null when v is not finite */
static void set_num(json_t *o, const char *key, double v)
{
    json_object_set_new(o, key, isfinite(v) ? json_real(v) : json_null());
}

json_t *modelfile_to_json(const struct power_model *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "schema_version", json_integer(PM_SCHEMA));
    json_object_set_new(o, "producer", json_string("carma model fit"));
    json_object_set_new(
        o, "form",
        json_string("P_kind = baseline_w + sum_f coefficients[f] * x_f; the node's x_f is the sum "
                    "over the workloads and the background (other), a workload's delta is "
                    "sum_f coefficients[f] * its own x_f"));
    json_object_set_new(o, "created_unix", json_integer((json_int_t)time(NULL)));
    json_t *runs = json_array();
    for (size_t r = 0; r < m->nruns; r++)
        json_array_append_new(runs, json_string(m->runs[r]));
    json_object_set_new(o, "runs", runs);
    json_t *host = json_object();
    json_object_set_new(host, "cpus", m->ncpu > 0 ? json_integer(m->ncpu) : json_null());
    json_object_set_new(o, "host", host);
    json_t *fit = json_object();
    json_object_set_new(fit, "method",
                        json_string("weighted linear least squares (gsl_multifit_wlinear_tsvd), "
                                    "weights = interval seconds"));
    set_num(fit, "interval_s", m->window_s);
    json_object_set_new(fit, "background_seen", json_boolean(m->background_seen));
    json_object_set_new(o, "fit", fit);
    json_t *feats = json_object();
    for (int f = 0; f < FX_N; f++) {
        bool used = false;
        for (size_t k = 0; k < m->nkinds; k++)
            for (size_t j = 0; j < m->k[k].nfeat; j++)
                used = used || m->k[k].feat[j] == f;
        if (!used)
            continue;
        json_t *d = json_object();
        json_object_set_new(d, "unit", json_string(modelfile_feature_unit(f)));
        json_object_set_new(d, "source", json_string(modelfile_feature_source(f)));
        json_object_set_new(feats, modelfile_feature_name(f), d);
    }
    json_object_set_new(o, "features", feats);
    json_t *bl = json_object();
    json_object_set_new(bl, "features", json_array());
    json_t *un = json_object();
    json_object_set_new(un, "temperature",
                        json_string("not recorded in run directories: the baseline is one "
                                    "constant per kind"));
    json_object_set_new(un, "clocks", json_string("not recorded in run directories"));
    json_object_set_new(bl, "unavailable", un);
    json_object_set_new(o, "baseline_model", bl);
    json_t *kinds = json_array();
    for (size_t k = 0; k < m->nkinds; k++) {
        const struct pm_kind *pk = &m->k[k];
        json_t *ko = json_object();
        json_object_set_new(ko, "kind", json_string(channel_kind_name(pk->kind)));
        json_object_set_new(ko, "channels", json_string(pk->channels));
        json_object_set_new(ko, "training_method",
                            pk->training_method[0] ? json_string(pk->training_method)
                                                   : json_null());
        json_t *b = json_object();
        set_num(b, "watts", pk->baseline_w);
        set_num(b, "stderr_w", pk->baseline_se_w);
        json_object_set_new(b, "source", json_string("intercept"));
        json_t *ph = json_object();
        set_num(ph, "seconds", pk->phase_s);
        set_num(ph, "power_w", pk->phase_w);
        set_num(ph, "cpu_util", pk->phase_util);
        json_object_set_new(b, "baseline_phase", ph);
        json_object_set_new(ko, "baseline", b);
        json_t *d = json_object(), *fs = json_array(), *cs = json_object(), *ss = json_object();
        for (size_t j = 0; j < pk->nfeat; j++) {
            const char *name = modelfile_feature_name(pk->feat[j]);
            json_array_append_new(fs, json_string(name));
            set_num(cs, name, pk->coef[j]);
            set_num(ss, name, pk->coef_se[j]);
        }
        json_object_set_new(d, "features", fs);
        json_object_set_new(d, "coefficients", cs);
        json_object_set_new(d, "stderr", ss);
        json_object_set_new(ko, "delta", d);
        json_t *q = json_object();
        json_object_set_new(q, "intervals", json_integer((json_int_t)pk->nint));
        set_num(q, "seconds", pk->seconds);
        set_num(q, "r2", pk->r2);
        set_num(q, "rmse_w", pk->rmse_w);
        set_num(q, "mape_pct", pk->mape_pct);
        json_t *cv = json_object();
        json_object_set_new(cv, "method", json_string(pk->cv_method));
        set_num(cv, "r2", pk->cv_r2);
        set_num(cv, "mape_pct", pk->cv_mape_pct);
        if (pk->cv_note[0])
            json_object_set_new(cv, "note", json_string(pk->cv_note));
        json_object_set_new(q, "held_out", cv);
        json_object_set_new(ko, "quality", q);
        json_array_append_new(kinds, ko);
    }
    json_object_set_new(o, "kinds", kinds);
    json_t *sk = json_object();
    for (int k = 0; k < CHANNEL_KINDS; k++)
        if (m->skipped[k][0])
            json_object_set_new(sk, channel_kind_name(k), json_string(m->skipped[k]));
    json_object_set_new(o, "kinds_skipped", sk);
    return o;
}

int modelfile_save(const struct power_model *m, const char *path, struct carma_err *e)
{
    json_t *j = modelfile_to_json(m);
    char *text =
        j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(j);
    if (!text)
        return carma_err_set(e, -ENOMEM, "%s: out of memory", path);
    size_t n = strlen(text);
    text[n] = '\n';
    int r = file_replace(path, text, n + 1);
    free(text);
    if (r < 0)
        return carma_err_set(e, r, "cannot write %s: %s", path, strerror(-r));
    return 0;
}

/* A number of o, or NAN for null/absent when null_ok; -EINVAL naming the field otherwise. */
static int get_num(const char *path, const char *where, json_t *o, const char *key, bool null_ok,
                   double *ret, struct carma_err *e)
{
    json_t *v = json_object_get(o, key);
    if ((!v || json_is_null(v)) && null_ok) {
        *ret = NAN;
        return 0;
    }
    if (!json_is_number(v))
        return carma_err_set(e, -EINVAL, "%s: %s.%s: not a number", path, where, key);
    *ret = json_number_value(v);
    return 0;
}

int modelfile_load(const char *path, struct power_model *ret, struct carma_err *e)
{
    struct power_model *m = ret;
    memset(m, 0, sizeof *m);
    char *text = NULL;
    size_t len = 0;
    int rc = file_read_all(path, 16u << 20, &text, &len);
    if (rc == -ESPIPE)
        return file_input_err(e, path, rc);
    if (rc < 0)
        return carma_err_set(e, rc, "%s: cannot read: %s", path, strerror(-rc));
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!j)
        return carma_err_set(e, -EINVAL, "%s:%d: %s", path, je.line, je.text);
    rc = -EINVAL;
    json_t *sv = json_object_get(j, "schema_version");
    if (!json_is_integer(sv) || json_integer_value(sv) != PM_SCHEMA) {
        carma_err_set(e, -EINVAL, "%s: schema_version: not %d (is it a carma model file?)", path,
                      PM_SCHEMA);
        goto out;
    }
    json_t *runs = json_object_get(j, "runs");
    for (size_t r = 0; r < json_array_size(runs) && r < PM_RUNS_MAX; r++) {
        const char *s = json_string_value(json_array_get(runs, r));
        snprintf(m->runs[m->nruns++], sizeof m->runs[0], "%s", s ? s : "");
    }
    json_t *cpus = json_object_get(json_object_get(j, "host"), "cpus");
    m->ncpu = json_is_integer(cpus) ? (int)json_integer_value(cpus) : 0;
    json_t *fit = json_object_get(j, "fit");
    json_t *iv = json_object_get(fit, "interval_s");
    m->window_s = json_is_number(iv) ? json_number_value(iv) : NAN;
    m->background_seen = json_is_true(json_object_get(fit, "background_seen"));
    json_t *kinds = json_object_get(j, "kinds");
    if (!json_is_array(kinds) || json_array_size(kinds) == 0 ||
        json_array_size(kinds) > CHANNEL_KINDS) {
        carma_err_set(e, -EINVAL, "%s: kinds: not an array of 1 to %d kinds", path, CHANNEL_KINDS);
        goto out;
    }
    for (size_t k = 0; k < json_array_size(kinds); k++) {
        json_t *ko = json_array_get(kinds, k);
        struct pm_kind *pk = &m->k[k];
        char where[64];
        snprintf(where, sizeof where, "kinds[%zu]", k);
        const char *kn = json_string_value(json_object_get(ko, "kind"));
        pk->kind = kn ? channel_kind_parse(kn) : -1;
        if (pk->kind < 0) {
            carma_err_set(e, -EINVAL,
                          "%s: %s.kind: '%s' is not cpu, dram, soc, gpu, system or other", path,
                          where, kn ? kn : "(missing)");
            goto out;
        }
        if (modelfile_find_kind(m, pk->kind)) {
            carma_err_set(e, -EINVAL, "%s: %s.kind: %s appears twice", path, where, kn);
            goto out;
        }
        const char *ch = json_string_value(json_object_get(ko, "channels"));
        snprintf(pk->channels, sizeof pk->channels, "%s", ch ? ch : "");
        const char *tm = json_string_value(json_object_get(ko, "training_method"));
        snprintf(pk->training_method, sizeof pk->training_method, "%s", tm ? tm : "");
        json_t *b = json_object_get(ko, "baseline");
        snprintf(where, sizeof where, "kinds[%zu].baseline", k);
        if (get_num(path, where, b, "watts", false, &pk->baseline_w, e) < 0 ||
            get_num(path, where, b, "stderr_w", true, &pk->baseline_se_w, e) < 0)
            goto out;
        json_t *ph = json_object_get(b, "baseline_phase");
        get_num(path, where, ph, "seconds", true, &pk->phase_s, NULL);
        get_num(path, where, ph, "power_w", true, &pk->phase_w, NULL);
        get_num(path, where, ph, "cpu_util", true, &pk->phase_util, NULL);
        json_t *d = json_object_get(ko, "delta");
        json_t *fs = json_object_get(d, "features"), *cs = json_object_get(d, "coefficients"),
               *ss = json_object_get(d, "stderr");
        snprintf(where, sizeof where, "kinds[%zu].delta.coefficients", k);
        if (!json_is_array(fs) || json_array_size(fs) > FX_N || !json_is_object(cs)) {
            carma_err_set(e, -EINVAL,
                          "%s: kinds[%zu].delta: needs features (an array) and "
                          "coefficients (an object)",
                          path, k);
            goto out;
        }
        for (size_t f = 0; f < json_array_size(fs); f++) {
            const char *fname = json_string_value(json_array_get(fs, f));
            int id = fname ? modelfile_feature_parse(fname) : -1;
            if (id < 0) {
                carma_err_set(e, -EINVAL,
                              "%s: kinds[%zu].delta.features[%zu]: unknown feature "
                              "'%s'",
                              path, k, f, fname ? fname : "(not a string)");
                goto out;
            }
            for (size_t g = 0; g < pk->nfeat; g++) {
                if (pk->feat[g] == id) {
                    carma_err_set(e, -EINVAL,
                                  "%s: kinds[%zu].delta.features[%zu]: '%s' is given "
                                  "twice",
                                  path, k, f, fname);
                    goto out;
                }
            }
            pk->feat[pk->nfeat] = id;
            if (get_num(path, where, cs, fname, false, &pk->coef[pk->nfeat], e) < 0)
                goto out;
            get_num(path, where, ss, fname, true, &pk->coef_se[pk->nfeat], NULL);
            pk->nfeat++;
        }
        json_t *q = json_object_get(ko, "quality");
        json_t *ni = json_object_get(q, "intervals");
        pk->nint = json_is_integer(ni) ? (size_t)json_integer_value(ni) : 0;
        get_num(path, where, q, "seconds", true, &pk->seconds, NULL);
        get_num(path, where, q, "r2", true, &pk->r2, NULL);
        get_num(path, where, q, "rmse_w", true, &pk->rmse_w, NULL);
        get_num(path, where, q, "mape_pct", true, &pk->mape_pct, NULL);
        json_t *cv = json_object_get(q, "held_out");
        const char *meth = json_string_value(json_object_get(cv, "method"));
        snprintf(pk->cv_method, sizeof pk->cv_method, "%s", meth ? meth : "");
        get_num(path, where, cv, "r2", true, &pk->cv_r2, NULL);
        get_num(path, where, cv, "mape_pct", true, &pk->cv_mape_pct, NULL);
        const char *note = json_string_value(json_object_get(cv, "note"));
        snprintf(pk->cv_note, sizeof pk->cv_note, "%s", note ? note : "");
        m->nkinds++;
    }
    rc = 0;
out:
    json_decref(j);
    if (rc < 0)
        memset(m, 0, sizeof *m);
    return rc;
}

const struct pm_kind *modelfile_find_kind(const struct power_model *m, int kind)
{
    for (size_t k = 0; k < m->nkinds; k++)
        if (m->k[k].kind == kind)
            return &m->k[k];
    return NULL;
}

double modelfile_delta(const struct pm_kind *k, const double *x)
{
    double d = 0;
    for (size_t j = 0; j < k->nfeat; j++)
        d += k->coef[j] * x[k->feat[j]];
    return d;
}
