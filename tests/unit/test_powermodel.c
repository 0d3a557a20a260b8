/*
 * Unit tests of src/model/: the least-squares fit (known coefficients recovered from noisy
 * synthetic data, rank deficiency named), the k-fold scores against hand-computed values, a
 * tiny run directory read into intervals (features.c), and the fit and predict steps on it
 * (the model file's round trip: test_modelfile.c).
 */
#include "testutil.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/features.h"
#include "model/powermodel.h"

/* a normal deviate (Box-Muller) from the tests' deterministic generator */
static double gauss(void)
{
    double u1 = tu_rng_u(), u2 = tu_rng_u();
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static void test_linfit_recovers(void **state)
{
    (void)state;
    enum { N = 400, P = 2 };
    double x[N * P], y[N], w[N], coef[P + 1], se[P + 1];
    tu_rng_seed(42);
    for (int i = 0; i < N; i++) {
        x[i * P] = tu_rng_u();           /* a utilization */
        x[i * P + 1] = 5.0 * tu_rng_u(); /* an instruction rate */
        w[i] = 0.5 + tu_rng_u();
        y[i] = 50.0 + 120.0 * x[i * P] + 7.0 * x[i * P + 1] + 0.5 * gauss();
    }
    const char *names[P] = {"cpu_util", "instructions"};
    struct carma_err e = {0};
    assert_int_equal(pm_linfit(x, N, P, y, w, names, coef, se, &e), 0);
    tu_assert_near(coef[0], 50.0, 0.5);
    tu_assert_near(coef[1], 120.0, 1.2);
    tu_assert_near(coef[2], 7.0, 0.07);
    /* the standard errors say how well: the truth within 4 of them */
    for (int j = 0; j <= P; j++)
        assert_true(se[j] > 0 && se[j] < 1.0);
    assert_true(fabs(coef[1] - 120.0) < 4 * se[1]);
    /* without noise: exact */
    for (int i = 0; i < N; i++)
        y[i] = 50.0 + 120.0 * x[i * P] + 7.0 * x[i * P + 1];
    assert_int_equal(pm_linfit(x, N, P, y, NULL, names, coef, NULL, &e), 0);
    tu_assert_near(coef[0], 50.0, 1e-9);
    tu_assert_near(coef[1], 120.0, 1e-9);
    tu_assert_near(coef[2], 7.0, 1e-9);
}

static void test_linfit_rank_deficient(void **state)
{
    (void)state;
    enum { N = 20 };
    double x[N * 2], y[N], coef[3];
    const char *names[2] = {"cpu_util", "cycles"};
    for (int i = 0; i < N; i++) {
        x[i * 2] = i / 20.0;
        x[i * 2 + 1] = 3.0; /* constant */
        y[i] = 10 + i;
    }
    struct carma_err e = {0};
    assert_int_equal(pm_linfit(x, N, 2, y, NULL, names, coef, NULL, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "'cycles' is constant"));
    /* collinear: cycles = 2 cpu_util + 1 */
    for (int i = 0; i < N; i++)
        x[i * 2 + 1] = 2.0 * x[i * 2] + 1.0;
    assert_int_equal(pm_linfit(x, N, 2, y, NULL, names, coef, NULL, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "rank deficient (rank 2 of 3)"));
    assert_non_null(strstr(e.msg, "linear combination"));
    assert_non_null(strstr(e.msg, "'cpu_util'"));
    /* too few rows */
    assert_int_equal(pm_linfit(x, 2, 2, y, NULL, names, coef, NULL, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "too few intervals: 2 for 3 coefficients"));
}

static void test_crossval_by_hand(void **state)
{
    (void)state;
    /* two folds of two points: each held-out pair predicted by the line through the other */
    double x[4] = {0, 1, 2, 3}, y[4] = {1, 3, 7, 9}, yhat[4];
    int fold[4] = {0, 0, 1, 1};
    const char *names[1] = {"cpu_util"};
    struct carma_err e = {0};
    assert_int_equal(pm_crossval(x, 4, 1, y, NULL, fold, 2, names, yhat, &e), 0);
    /* fold 0 from (2,7),(3,9): y = 3 + 2x; fold 1 from (0,1),(1,3): y = 1 + 2x */
    tu_assert_near(yhat[0], 3, 1e-12);
    tu_assert_near(yhat[1], 5, 1e-12);
    tu_assert_near(yhat[2], 5, 1e-12);
    tu_assert_near(yhat[3], 7, 1e-12);
    double r2, mape;
    pm_scores(y, yhat, NULL, 4, &r2, &mape);
    tu_assert_near(r2, 1.0 - 16.0 / 40.0, 1e-12); /* SSE 16, SST 40 */
    tu_assert_near(mape, 100.0 * (2.0 / 1 + 2.0 / 3 + 2.0 / 7 + 2.0 / 9) / 4, 1e-9);
    /* weighted: the weights count in both sums */
    double w[4] = {1, 1, 2, 2};
    pm_scores(y, yhat, w, 4, &r2, &mape);
    /* weighted mean 6; SST = 25 + 9 + 2 + 18 = 54; SSE = 4 + 4 + 8 + 8 = 24 */
    tu_assert_near(r2, 1.0 - 24.0 / 54.0, 1e-12);
    tu_assert_near(mape, 100.0 * (2.0 / 1 + 2.0 / 3 + 2 * 2.0 / 7 + 2 * 2.0 / 9) / 6, 1e-9);
}

/*
 * A tiny run: 2 CPUs, baseline 100..102 s at u = 0.1 (the background), workload w from 102 s
 * to 104 s at 0.5 of the node (one CPU), ticks every 0.5 s. cpu: P = 10 + 100 u; dram:
 * P = 2 + 10 u; the core channel is a component and must not count.
 */
static void put_tiny_run(void)
{
    tu_put("run/workloads.json",
           "{\"workloads\": [{\"name\": \"w\", \"start_unix\": 102.0, \"end_unix\": 104.0}]}");
    tu_put("run/manifest.json", "{\"host\": {\"cpus\": 2}, \"options\": {\"idle_policy\": "
                                "\"idle\"}}");
    char samples[8192] = "timestamp_unix,timestamp_local,channel,source,kind,domain,method,"
                         "watts,joules_total\r\n";
    char util[2048] = "timestamp_unix,busy_cpu_s,total_cpu_s,cpu_util\r\n";
    char attr[4096] = "timestamp_unix,channel,job,joules\r\n";
    double busy = 0;
    for (int k = 0; k <= 8; k++) {
        double t = 100.0 + 0.5 * k, u = t <= 102.0 ? 0.1 : 0.6;
        size_t n = strlen(samples);
        if (k == 0)
            snprintf(samples + n, sizeof samples - n,
                     "%.1f,x,rapl/package-0,rapl,cpu,total,measured,,0\r\n"
                     "%.1f,x,rapl/package-0/core,rapl,cpu,component,measured,,0\r\n"
                     "%.1f,x,rapl/package-0/dram,rapl,dram,total,measured,,0\r\n",
                     t, t, t);
        else
            snprintf(samples + n, sizeof samples - n,
                     "%.1f,x,rapl/package-0,rapl,cpu,total,measured,%.6f,0\r\n"
                     "%.1f,x,rapl/package-0/core,rapl,cpu,component,measured,999,0\r\n"
                     "%.1f,x,rapl/package-0/dram,rapl,dram,total,measured,%.6f,0\r\n",
                     t, 10 + 100 * u, t, t, 2 + 10 * u);
        if (k)
            busy += u * 1.0; /* 2 CPUs x 0.5 s */
        n = strlen(util);
        snprintf(util + n, sizeof util - n, "%.1f,%.6f,%.6f,\r\n", t, busy, 1.0 * k);
        if (t > 102.0) {
            n = strlen(attr);
            snprintf(attr + n, sizeof attr - n,
                     "%.1f,rapl/package-0,w,25\r\n%.1f,rapl/package-0/core,w,1\r\n"
                     "%.1f,rapl/package-0/dram,w,2.5\r\n%.1f,rapl/package-0,idle,15\r\n",
                     t, t, t, t);
        }
    }
    tu_put("run/samples.csv", samples);
    tu_put("run/node_util.csv", util);
    tu_put("run/attribution.csv", attr);
    tu_put("run/features.csv", "timestamp_unix,workload,cpu_time_s,task_clock_ns,instructions,"
                               "cycles\r\n103.0,w,1.0,,,\r\n104.0,w,2.0,,,\r\n");
}

static void test_features_tiny_run(void **state)
{
    (void)state;
    put_tiny_run();
    char dir[512];
    snprintf(dir, sizeof dir, "%s/run", tu_dir);
    struct fx_run r;
    struct carma_err e = {0};
    assert_int_equal(fx_run_load(dir, NULL, &r, &e), 0);
    assert_int_equal(r.njobs, 1);
    assert_int_equal(r.ncpu, 2);
    assert_string_equal(r.policy, "idle");
    assert_true(r.node_util && r.attribution);
    assert_true(r.has_kind[KIND_CPU] && r.has_kind[KIND_DRAM] && !r.has_kind[KIND_GPU]);
    assert_string_equal(r.kind_channels[KIND_CPU], "rapl/package-0");
    assert_int_equal(r.nint, 4); /* cut at 101, 102 (the baseline's end), 103, 104 */
    double t0[4] = {100, 101, 102, 103}, u[4] = {0.1, 0.1, 0.6, 0.6}, uw[4] = {0, 0, 0.5, 0.5};
    for (size_t i = 0; i < 4; i++) {
        tu_assert_near(r.t0[i], t0[i], 1e-9);
        tu_assert_near(r.t1[i], t0[i] + 1, 1e-9);
        assert_int_equal(r.baseline[i], i < 2);
        tu_assert_near(r.power_w[i * FX_KINDS + KIND_CPU], 10 + 100 * u[i], 1e-9);
        tu_assert_near(r.power_w[i * FX_KINDS + KIND_DRAM], 2 + 10 * u[i], 1e-9);
        tu_assert_near(fx_node(&r, i, FX_CPU_UTIL), u[i], 1e-9);
        tu_assert_near(fx_party(&r, i, 0, FX_CPU_UTIL), uw[i], 1e-9);
        tu_assert_near(fx_party(&r, i, 1, FX_CPU_UTIL), 0.1, 1e-9); /* other */
        /* attributed: 25 J per 0.5 s to w on the package, the core not counted */
        tu_assert_near(r.meas_w[(i * 3 + 0) * FX_KINDS + KIND_CPU], i < 2 ? 0 : 50, 1e-9);
        tu_assert_near(r.meas_w[(i * 3 + 2) * FX_KINDS + KIND_CPU], i < 2 ? 0 : 30, 1e-9);
    }
    assert_false(r.has_feat[FX_INSTRUCTIONS]);
    assert_non_null(strstr(r.feat_missing[FX_INSTRUCTIONS], "features.csv:2: instructions is "
                                                            "blank"));
    assert_false(r.has_feat[FX_GPU_SM]);
    assert_non_null(strstr(r.feat_missing[FX_GPU_SM], "utilization.csv: absent"));

    /* fit: exact, CPU and DRAM; instructions asked for: named as missing */
    struct power_model *m = calloc(1, sizeof *m);
    assert_non_null(m);
    struct pm_fit_opts o = {.folds = 2};
    assert_int_equal(pm_fit(&r, 1, &o, m, &e), 0);
    assert_int_equal(m->nkinds, 2);
    const struct pm_kind *c = modelfile_find_kind(m, KIND_CPU),
                         *d = modelfile_find_kind(m, KIND_DRAM);
    assert_non_null(c);
    assert_non_null(d);
    tu_assert_near(c->baseline_w, 10, 1e-9);
    tu_assert_near(c->coef[0], 100, 1e-9);
    tu_assert_near(d->baseline_w, 2, 1e-9);
    tu_assert_near(d->coef[0], 10, 1e-9);
    tu_assert_near(c->r2, 1, 1e-12);
    tu_assert_near(c->phase_w, 20, 1e-9);
    tu_assert_near(c->phase_util, 0.1, 1e-9);
    assert_int_equal(c->nint, 4);
    /* two contiguous folds: the baseline phase, then the run: neither fits alone */
    assert_true(isnan(c->cv_r2));
    assert_non_null(strstr(c->cv_note, "constant"));
    o.nfeat_cpu = 2;
    o.feat_cpu[0] = FX_CPU_UTIL;
    o.feat_cpu[1] = FX_INSTRUCTIONS;
    assert_int_equal(pm_fit(&r, 1, &o, m, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "feature 'instructions' is not available"));

    /* predict on the same run: exact, and the files are written */
    o.nfeat_cpu = 0;
    assert_int_equal(pm_fit(&r, 1, &o, m, &e), 0);
    json_t *p = NULL;
    assert_int_equal(pm_predict(m, "model.json", &r, &p, &e), 0);
    json_t *w = json_array_get(json_object_get(p, "workloads"), 0);
    assert_string_equal(json_string_value(json_object_get(w, "name")), "w");
    /* cpu 50 W + dram 5 W over 2 s */
    tu_assert_near(json_real_value(json_object_get(w, "predicted_j")), 110, 1e-6);
    tu_assert_near(json_real_value(json_object_get(w, "measured_j")), 110, 1e-6);
    tu_assert_near(json_real_value(json_object_get(w, "error_pct")), 0, 1e-6);
    json_t *node = json_object_get(json_object_get(p, "node"), "cpu");
    tu_assert_near(json_real_value(json_object_get(node, "mape_pct")), 0, 1e-9);
    json_decref(p);
    char buf[8192];
    char path[600];
    snprintf(path, sizeof path, "%s/prediction.csv", dir);
    tu_slurp(path, buf, sizeof buf);
    assert_non_null(strstr(buf, "interval_start_unix,interval_end_unix,kind,job,dynamic_w,"
                                "static_w,predicted_w,predicted_j,measured_w,measured_j\r\n"));
    assert_non_null(strstr(buf, "102,103,cpu,w,50,0,50,50,50,50\r\n"));
    assert_non_null(strstr(buf, "102,103,cpu,node,60,10,70,70,70,70\r\n"));

    /* a model of a kind the run lacks */
    m->k[1].kind = KIND_GPU;
    assert_int_equal(pm_predict(m, "model.json", &r, NULL, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "model.json was fitted on kind gpu"));

    /* powers whose sums overflow a double (more than any row may hold, set here past the
     * readers' rules): an error naming the figure, never an inf or null in the model */
    for (size_t i = 0; i < r.nint; i++)
        r.power_w[i * FX_KINDS + KIND_CPU] = 1.7e308 * (i % 2 ? 1 : -1);
    assert_int_equal(pm_fit(&r, 1, &o, m, &e), -ERANGE);
    assert_non_null(strstr(e.msg, "kind cpu: "));
    assert_non_null(strstr(e.msg, ": the fit's sums overflow a double"));
    free(m);
    fx_run_free(&r);

    /* GPU features: utilization.csv (a device row, then its processes) and nsys_gpu.csv */
    tu_put("run/utilization.csv",
           "timestamp_unix,gpu,gpu_uuid,pid,workload,gpu_util_pct,mem_util_pct,sm_util_pct,"
           "used_mem_mib\r\n"
           "102.5,0,GPU-0,,,80,10,,\r\n102.5,0,GPU-0,11,w,,,60,\r\n102.5,0,GPU-0,12,other,,,20,\r\n"
           "103.0,0,GPU-0,,,80,10,,\r\n103.0,0,GPU-0,11,w,,,60,\r\n"
           "103.0,0,GPU-0,12,other,,,20,\r\n");
    tu_put("run/nsys_gpu.csv", "interval_start_unix,interval_end_unix,gpu,pid,workload,busy_s\r\n"
                               "102.0,104.0,0,11,w,1.0\r\n");
    assert_int_equal(fx_run_load(dir, NULL, &r, &e), 0);
    assert_true(r.has_feat[FX_GPU_SM] && r.has_feat[FX_GPU_UTIL] && r.has_feat[FX_GPU_BUSY]);
    /* [102, 103]: two samples; w has 3/4 of the SMs in use, so 3/4 of the device's figures */
    tu_assert_near(fx_party(&r, 2, 0, FX_GPU_SM), 0.6, 1e-9);
    tu_assert_near(fx_party(&r, 2, 1, FX_GPU_SM), 0.2, 1e-9);
    tu_assert_near(fx_party(&r, 2, 0, FX_GPU_UTIL), 0.6, 1e-9);
    tu_assert_near(fx_party(&r, 2, 0, FX_GPU_MEM), 0.075, 1e-9);
    tu_assert_near(fx_node(&r, 2, FX_GPU_UTIL), 0.8, 1e-9);
    assert_true(isnan(fx_node(&r, 3, FX_GPU_SM))); /* no sample in [103, 104] */
    /* 1 s busy spread over [102, 104] */
    tu_assert_near(fx_party(&r, 2, 0, FX_GPU_BUSY), 0.5, 1e-9);
    tu_assert_near(fx_party(&r, 3, 0, FX_GPU_BUSY), 0.5, 1e-9);
    tu_assert_near(fx_node(&r, 0, FX_GPU_BUSY), 0, 1e-9);
    fx_run_free(&r);

    /* a missing file and a bad number are named */
    assert_int_equal(fx_run_load(tu_dir, NULL, &r, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "workloads.json: cannot open"));
    tu_put("run/node_util.csv", "timestamp_unix,busy_cpu_s,total_cpu_s,cpu_util\r\n1,x,2,\r\n");
    assert_int_equal(fx_run_load(dir, NULL, &r, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "node_util.csv:2: busy_cpu_s: 'x' is not a finite number"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linfit_recovers),
        cmocka_unit_test(test_linfit_rank_deficient),
        cmocka_unit_test(test_crossval_by_hand),
        cmocka_unit_test_setup_teardown(test_features_tiny_run, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
