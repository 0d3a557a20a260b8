/*
 * Unit tests of src/sources/modelfile: a model saved and loaded again gives the same kinds,
 * coefficients, standard errors, scores and notes; a file naming an unknown feature, a
 * coefficient that is not a number, a feature twice or a key twice is refused with the field
 * named; a missing file is -ENOENT.
 */
#include "testutil.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/modelfile.h"

static void test_model_round_trip(void **state)
{
    (void)state;
    struct power_model m = {0};
    m.nkinds = 2;
    m.nruns = 1;
    snprintf(m.runs[0], sizeof m.runs[0], "runs/a");
    m.ncpu = 2;
    m.window_s = 1;
    m.background_seen = true;
    m.k[0] = (struct pm_kind){.kind = KIND_CPU,
                              .nfeat = 2,
                              .feat = {FX_CPU_UTIL, FX_INSTRUCTIONS},
                              .baseline_w = 60.125,
                              .baseline_se_w = 0.25,
                              .coef = {240.5, 1.0 / 3},
                              .coef_se = {0.5, NAN},
                              .nint = 12,
                              .seconds = 11.5,
                              .r2 = 0.99,
                              .rmse_w = 1.5,
                              .mape_pct = 0.7,
                              .cv_r2 = 0.98,
                              .cv_mape_pct = 0.9,
                              .phase_s = 2,
                              .phase_w = 64,
                              .phase_util = 0.02};
    snprintf(m.k[0].channels, sizeof m.k[0].channels, "rapl/package-0,rapl/package-1");
    snprintf(m.k[0].cv_method, sizeof m.k[0].cv_method, "5-fold");
    m.k[1] = (struct pm_kind){.kind = KIND_GPU,
                              .nfeat = 1,
                              .feat = {FX_GPU_SM},
                              .baseline_w = 100,
                              .coef = {400},
                              .cv_r2 = NAN,
                              .cv_mape_pct = NAN,
                              .phase_s = NAN,
                              .phase_w = NAN,
                              .phase_util = NAN};
    snprintf(m.k[1].cv_note, sizeof m.k[1].cv_note, "fold 1 of 5: too few intervals");
    char path[512];
    snprintf(path, sizeof path, "%s/model.json", tu_dir);
    struct carma_err e = {0};
    assert_int_equal(modelfile_save(&m, path, &e), 0);
    struct power_model *l = calloc(1, sizeof *l);
    assert_non_null(l);
    assert_int_equal(modelfile_load(path, l, &e), 0);
    assert_int_equal(l->nkinds, 2);
    assert_int_equal(l->ncpu, 2);
    assert_string_equal(l->runs[0], "runs/a");
    assert_true(l->background_seen);
    const struct pm_kind *c = modelfile_find_kind(l, KIND_CPU);
    assert_non_null(c);
    assert_int_equal(c->nfeat, 2);
    assert_int_equal(c->feat[1], FX_INSTRUCTIONS);
    assert_true(c->baseline_w == 60.125 && c->coef[0] == 240.5 && c->coef[1] == 1.0 / 3);
    assert_true(isnan(c->coef_se[1]) && c->coef_se[0] == 0.5);
    assert_string_equal(c->channels, "rapl/package-0,rapl/package-1");
    assert_string_equal(c->cv_method, "5-fold");
    assert_true(c->cv_mape_pct == 0.9 && c->phase_util == 0.02 && c->nint == 12);
    const struct pm_kind *g = modelfile_find_kind(l, KIND_GPU);
    assert_non_null(g);
    assert_true(isnan(g->cv_r2));
    assert_string_equal(g->cv_note, "fold 1 of 5: too few intervals");
    double x[FX_N] = {0};
    x[FX_CPU_UTIL] = 0.5;
    x[FX_INSTRUCTIONS] = 3;
    tu_assert_near(modelfile_delta(c, x), 240.5 * 0.5 + 1.0, 1e-12);
    /* a model file naming a feature carma does not know: the field is named */
    tu_put("bad.json", "{\"schema_version\": 1, \"kinds\": [{\"kind\": \"cpu\", \"baseline\": "
                       "{\"watts\": 1}, \"delta\": {\"features\": [\"temperature\"], "
                       "\"coefficients\": {\"temperature\": 1}}}]}");
    snprintf(path, sizeof path, "%s/bad.json", tu_dir);
    assert_int_equal(modelfile_load(path, l, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "kinds[0].delta.features[0]: unknown feature 'temperature'"));
    tu_put("bad.json",
           "{\"schema_version\": 1, \"kinds\": [{\"kind\": \"cpu\", \"baseline\": "
           "{\"watts\": \"x\"}, \"delta\": {\"features\": [], \"coefficients\": {}}}]}");
    assert_int_equal(modelfile_load(path, l, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "kinds[0].baseline.watts: not a number"));
    /* a feature listed twice would count its coefficient twice in every delta */
    tu_put("bad.json", "{\"schema_version\": 1, \"kinds\": [{\"kind\": \"cpu\", \"baseline\": "
                       "{\"watts\": 3}, \"delta\": {\"features\": [\"cpu_util\", \"cpu_util\"], "
                       "\"coefficients\": {\"cpu_util\": 2}}}]}");
    assert_int_equal(modelfile_load(path, l, &e), -EINVAL);
    if (!strstr(e.msg, "kinds[0].delta.features[1]: 'cpu_util' is given twice"))
        fail_msg("%s", e.msg);
    /* a key given twice in one object (which one counts?) is refused as JSON that is wrong */
    tu_put("bad.json", "{\"schema_version\": 1, \"kinds\": [{\"kind\": \"cpu\", \"baseline\": "
                       "{\"watts\": 3, \"watts\": 4}, \"delta\": {\"features\": [], "
                       "\"coefficients\": {}}}]}");
    assert_int_equal(modelfile_load(path, l, &e), -EINVAL);
    if (!strstr(e.msg, "bad.json:1: duplicate object key"))
        fail_msg("%s", e.msg);
    snprintf(path, sizeof path, "%s/none.json", tu_dir);
    assert_int_equal(modelfile_load(path, l, &e), -ENOENT);
    free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_model_round_trip, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
