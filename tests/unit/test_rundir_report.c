/*
 * Unit tests for rundir/report: report.json and report.txt of a hand-made run (two workloads,
 * one GPU split by process, a baseline, an interruption). The figures are chosen so that each
 * one can be checked by hand: the ledger's parts sum to the node's total, the embodied grams
 * are kg × 1000 / lifetime_s × seconds × share.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rundir/report.h"
#include "testutil.h"

#define EPS 1e-9

/* A year of 365.25 days, in seconds. */
#define YEAR_S (365.25 * 86400)

/* The run: train (4 CPUs of 8, GPU 0) and infer (GPU 0 too), on a node of a CPU package
 * channel, a DRAM channel and one NVML GPU; 100 J in all. */
struct fixture {
    struct rundir_report_in in;
    struct rundir_report_job job[2];
    struct rundir_report_node node[3];
    struct rundir_report_gpu gpu[1];
    struct ledger l;
    struct carbon_embodied_override ov[1];
};

static void make(struct fixture *x, bool gpu_measured)
{
    memset(x, 0, sizeof *x);
    x->job[0] = (struct rundir_report_job){
        .name = "train",
        .type = "training",
        .exit_status = 0,
        .duration_s = 10.0,
        .cpu_s = 20.0,
        .n_cpus = 4,
        .wants_gpu = true,
        .gpus = {0},
        .ngpus = 1,
        .perf = {1000, 2000, 3000},
        .perf_mask = 7,
    };
    x->job[1] = (struct rundir_report_job){
        .name = "infer",
        .exit_status = 3,
        .timed_out = true,
        .duration_s = 5.0,
        .cpu_s = 10.0, /* of 8 CPUs over 5 s: a share of 0.25 */
        .wants_gpu = true,
        .gpus = {0},
        .ngpus = 1,
        .perf = {500},
        .perf_mask = 1,
        .perf_error = {NULL, "no such event", "no such event"},
    };
    x->node[0] = (struct rundir_report_node){"rapl/package-0", KIND_CPU, 20.0};
    x->node[1] = (struct rundir_report_node){"rapl/dram-0", KIND_DRAM, NAN};
    size_t nnode = 2;
    if (gpu_measured)
        x->node[nnode++] = (struct rundir_report_node){"nvml/gpu0", KIND_GPU, 30.0};
    /* the accounts: jobs 60 + 30, idle 5, other 3, unattributed 2 = 100 J */
    struct ledger *l = &x->l;
    l->njobs = 2;
    l->job[0].energy_j = 60.0;
    l->job[0].by_kind_j[KIND_CPU] = 35.0;
    l->job[0].by_kind_j[KIND_DRAM] = 5.0;
    l->job[0].by_kind_j[KIND_GPU] = gpu_measured ? 20.0 : 0.0;
    l->job[0].g_op = 0.006;
    l->job[0].gpu_j[0] = 20.0;
    l->job[1].energy_j = 30.0;
    l->job[1].by_kind_j[KIND_CPU] = 30.0;
    l->job[1].g_op = 0.003;
    l->idle_j = 5.0;
    l->other_j = 3.0;
    l->unattr_j = 2.0;
    l->total_j = 100.0;
    l->idle_g = 0.0005;
    l->other_g = 0.0003;
    l->unattr_g = 0.0002;
    l->gpu[0] = (struct ledger_gpu){.jobs_j = 20.0,
                                    .idle_j = 4.0,
                                    .other_j = 1.0,
                                    .unattr_j = 0.0,
                                    .total_j = 25.0,
                                    .basis_s = {8.0, 0.0, 1.5, 0.01}};
    x->gpu[0] = (struct rundir_report_gpu){
        .channel = "nvml/gpu0",
        .index = 0,
        .uuid = "GPU-1234",
        .label = "NVIDIA H200 GPU-1234",
        .counter = true,
        .covered_s = 12.5,
        .invalid = 0,
        .drift_pct = 1.25,
        .gauge = {{"instant", -0.5}},
        .ngauge = 1,
        .static_w = 30.0,
        .owns = {true, false},
    };
    snprintf(x->ov[0].component, sizeof x->ov[0].component, "gpu");
    snprintf(x->ov[0].model, sizeof x->ov[0].model, "default");
    x->ov[0].kg_co2e = 150;
    x->ov[0].lifetime_years = 5;
    json_t *intr = json_pack("{s:s, s:i}", "signal", "SIGINT", "signal_number", 2);
    json_t *warn = json_pack("[s]", "the baseline was busy");
    x->in = (struct rundir_report_in){
        .experiment = "exp",
        .run_dir = "runs/exp-1",
        .duration_s = 12.5,
        .end_unix = 1700000012.5,
        .status = "interrupted",
        .interruption = intr,
        .interruption_text = "SIGINT (signal 2) at 2023-11-14T22:13:32.500Z",
        .idle_policy = "proportional",
        .method = "measured",
        .static_source = "baseline",
        .cpu_time_source = "cgroup",
        .baseline_s = 3.0,
        .baseline_busy_cpus = 0.25,
        .baseline_other_j = 1.5,
        .have_cpus = true,
        .ncpu = 8,
        .nsockets = 1,
        .embodied = gpu_measured ? NULL : x->ov,
        .n_embodied = gpu_measured ? 0 : 1,
        .gpu_measured = gpu_measured,
        .job = x->job,
        .njobs = 2,
        .ledger = l,
        .gpu = x->gpu,
        .ngpus = gpu_measured ? 1 : 0,
        .have_gpu_lists = gpu_measured,
        .gpu_list_reads = 4,
        .gpu_list_mean_ms = 0.5,
        .gpu_list_period_ms = 20.0,
        .node = x->node,
        .nnode = nnode,
        .g_per_kwh = 360.0,
        .intensity_source = "constant",
        .pue = 1.2,
        .warnings = warn,
        .outcome_text = "\ninfer timed out after 5 s (timeout_s)\n",
    };
}

static void done(struct fixture *x)
{
    json_decref(x->in.interruption);
    json_decref(x->in.warnings);
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("%s: not a number", key);
    return json_number_value(v);
}

/* report.txt of x (malloc'd). */
static char *text(struct fixture *x, const json_t *rep)
{
    char *t = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&t, &len);
    assert_non_null(f);
    rundir_report_text(&x->in, rep, f);
    assert_int_equal(fclose(f), 0);
    return t;
}

/* The keys of report.json's top level, in order. */
static void test_json_keys(void **state)
{
    (void)state;
    struct fixture x;
    make(&x, true);
    json_t *rep = rundir_report_json(&x.in);
    static const char *const keys[] = {
        "experiment",   "run_dir",     "duration_s",   "end_unix",       "status",
        "interruption", "attribution", "workloads",    "gpus",           "gpu_process_lists",
        "idle",         "other",       "unattributed", "total_energy_j", "node_channels",
        "carbon",       "warnings",
    };
    size_t n = 0;
    const char *key;
    json_t *v;
    json_object_foreach(rep, key, v)
    {
        assert_true(n < sizeof keys / sizeof keys[0]);
        assert_string_equal(key, keys[n]);
        n++;
    }
    assert_int_equal(n, sizeof keys / sizeof keys[0]);
    assert_string_equal(json_string_value(json_object_get(rep, "status")), "interrupted");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(rep, "interruption"), "signal")),
        "SIGINT");
    /* the baseline */
    json_t *a = json_object_get(rep, "attribution");
    assert_string_equal(json_string_value(json_object_get(a, "static_source")), "baseline");
    tu_assert_near(num(a, "static_power_w"), 50.0, EPS); /* 20 + 30, the DRAM's unknown */
    json_t *b = json_object_get(a, "baseline");
    tu_assert_near(num(b, "duration_s"), 3.0, EPS);
    tu_assert_near(num(b, "busy_cpus"), 0.25, EPS);
    assert_int_equal(json_integer_value(json_object_get(b, "cpus")), 8);
    tu_assert_near(num(b, "other_j"), 1.5, EPS);
    /* the node's parts and the workloads sum to the total */
    json_t *ws = json_object_get(rep, "workloads");
    assert_int_equal(json_array_size(ws), 2);
    double sum = num(json_object_get(rep, "idle"), "energy_j") +
                 num(json_object_get(rep, "other"), "energy_j") +
                 num(json_object_get(rep, "unattributed"), "energy_j");
    for (size_t k = 0; k < 2; k++)
        sum += num(json_array_get(ws, k), "energy_j");
    tu_assert_near(sum, num(rep, "total_energy_j"), EPS);
    tu_assert_near(num(rep, "total_energy_j"), 100.0, EPS);
    json_t *nodes = json_object_get(rep, "node_channels");
    assert_int_equal(json_array_size(nodes), 3);
    assert_string_equal(json_string_value(json_array_get(nodes, 2)), "nvml/gpu0");
    assert_null(json_object_get(rep, "rest_of_system"));
    /* carbon: the node's parts' grams and the workloads' */
    json_t *c = json_object_get(rep, "carbon");
    tu_assert_near(num(c, "operational_g_co2e"), 0.001 + 0.006 + 0.003, 1e-15);
    tu_assert_near(num(c, "pue"), 1.2, EPS);
    assert_string_equal(json_string_value(json_array_get(json_object_get(rep, "warnings"), 0)),
                        "the baseline was busy");
    json_decref(rep);
    done(&x);
}

/* A workload's figures: by kind, the embodied parts, the counters, its GPU share. */
static void test_json_workloads(void **state)
{
    (void)state;
    struct fixture x;
    make(&x, true);
    json_t *rep = rundir_report_json(&x.in);
    json_t *ws = json_object_get(rep, "workloads");
    json_t *w = json_array_get(ws, 0);
    assert_string_equal(json_string_value(json_object_get(w, "type")), "training");
    tu_assert_near(num(w, "avg_power_w"), 6.0, EPS);
    json_t *bk = json_object_get(w, "energy_by_kind_j");
    assert_int_equal(json_object_size(bk), 3); /* cpu, dram, gpu: the node's kinds */
    tu_assert_near(num(bk, "cpu"), 35.0, EPS);
    tu_assert_near(num(bk, "gpu"), 20.0, EPS);
    assert_null(json_object_get(bk, "soc"));
    /* CPUs: 4 of 8, one package, the table's 100 kg over 5 years; GPU 0: half (two name it),
     * the table's 150 kg over 5 years */
    json_t *e = json_object_get(w, "embodied");
    assert_int_equal(json_array_size(e), 2);
    json_t *cpu = json_array_get(e, 0), *gpu = json_array_get(e, 1);
    assert_string_equal(json_string_value(json_object_get(cpu, "device")), "cpu");
    assert_int_equal(json_integer_value(json_object_get(cpu, "units")), 1);
    tu_assert_near(num(cpu, "share"), 0.5, EPS);
    double gc = 100e3 / (5 * YEAR_S) * 10.0 * 0.5, gg = 150e3 / (5 * YEAR_S) * 10.0 * 0.5;
    tu_assert_near(num(cpu, "g_co2e"), gc, 1e-12);
    assert_string_equal(json_string_value(json_object_get(gpu, "device")), "gpu0");
    tu_assert_near(num(gpu, "share"), 0.5, EPS);
    tu_assert_near(num(gpu, "g_co2e"), gg, 1e-12);
    assert_null(json_object_get(gpu, "declared"));
    tu_assert_near(num(w, "embodied_g_co2e"), gc + gg, 1e-12);
    /* the second workload's CPUs by its CPU time: 10 s of 8 CPUs × 5 s */
    json_t *w1 = json_array_get(ws, 1);
    assert_true(json_is_null(json_object_get(w1, "type")));
    assert_true(json_is_true(json_object_get(w1, "timed_out")));
    json_t *cpu1 = json_array_get(json_object_get(w1, "embodied"), 0);
    tu_assert_near(num(cpu1, "share"), 0.25, EPS);
    json_t *c = json_object_get(rep, "carbon");
    tu_assert_near(num(c, "embodied_g_co2e"),
                   gc + gg + 100e3 / (5 * YEAR_S) * 5.0 * 0.25 + 150e3 / (5 * YEAR_S) * 5.0 * 0.5,
                   1e-12);
    /* counters: a value, or null and why */
    json_t *pf = json_object_get(w1, "perf");
    assert_int_equal(json_integer_value(json_object_get(pf, "task_clock_ns")), 500);
    assert_true(json_is_null(json_object_get(pf, "instructions")));
    assert_string_equal(json_string_value(json_object_get(pf, "instructions_unavailable")),
                        "no such event");
    assert_null(json_object_get(json_object_get(w, "perf"), "cycles_unavailable"));
    /* the GPU */
    tu_assert_near(num(json_object_get(w, "gpu_j"), "nvml/gpu0"), 20.0, EPS);
    json_t *g = json_array_get(json_object_get(rep, "gpus"), 0);
    assert_string_equal(json_string_value(json_object_get(g, "name")), "NVIDIA H200");
    assert_string_equal(json_string_value(json_object_get(g, "form")), "counter");
    tu_assert_near(num(g, "energy_j"), 25.0, EPS);
    tu_assert_near(num(json_object_get(g, "gauge_drift_pct"), "instant"), -0.5, EPS);
    tu_assert_near(num(json_object_get(g, "basis_s"), "allocation"), 1.5, EPS);
    json_t *own = json_object_get(g, "owners");
    assert_int_equal(json_array_size(own), 1);
    assert_string_equal(json_string_value(json_array_get(own, 0)), "train");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(rep, "gpu_process_lists"), "reads")), 4);
    json_decref(rep);
    done(&x);
}

/* A GPU asked for and not measured: energy_by_kind_j's gpu is null (unknown, not 0), its
 * embodied part is the experiment's declared fact. */
static void test_gpu_unmeasured(void **state)
{
    (void)state;
    struct fixture x;
    make(&x, false);
    json_t *rep = rundir_report_json(&x.in);
    json_t *w = json_array_get(json_object_get(rep, "workloads"), 0);
    json_t *bk = json_object_get(w, "energy_by_kind_j");
    assert_non_null(json_object_get(bk, "gpu"));
    assert_true(json_is_null(json_object_get(bk, "gpu")));
    json_t *gpu = json_array_get(json_object_get(w, "embodied"), 1);
    assert_string_equal(json_string_value(json_object_get(gpu, "source")), "experiment override");
    assert_true(json_is_true(json_object_get(gpu, "declared")));
    assert_int_equal(json_array_size(json_object_get(rep, "gpus")), 0);
    assert_null(json_object_get(rep, "gpu_process_lists"));
    assert_int_equal(json_object_size(json_object_get(w, "gpu_j")), 0);
    char *t = text(&x, rep);
    /* the GPU column says n/a, and there is no GPU table */
    assert_non_null(strstr(t, "   cpu J    dram J     gpu J  oper. gCO2e embod. gCO2e\n"));
    assert_non_null(strstr(t, "      n/a     0.006000"));
    assert_null(strstr(t, "split by (seconds)"));
    free(t);
    json_decref(rep);
    /* without the override no GPU is charged */
    x.in.n_embodied = 0;
    rep = rundir_report_json(&x.in);
    w = json_array_get(json_object_get(rep, "workloads"), 0);
    assert_int_equal(json_array_size(json_object_get(w, "embodied")), 1);
    json_decref(rep);
    done(&x);
}

/* report.txt: the run's line, the warnings and the interruption, the table, the GPU's. */
static void test_text(void **state)
{
    (void)state;
    struct fixture x;
    make(&x, true);
    json_t *rep = rundir_report_json(&x.in);
    char *t = text(&x, rep);
    static const char *const lines[] = {
        "experiment exp: 12.500 s, idle policy proportional, measured\n"
        "warning: the baseline was busy\n"
        "interrupted by SIGINT (signal 2) at 2023-11-14T22:13:32.500Z: the run was cut short, its "
        "figures cover it up to then\n\n",
        "workload               exit    time s    energy J         Wh     avg W     cpu J    dram "
        "J "
        "    gpu J  oper. gCO2e embod. gCO2e\n",
        "train                     0    10.000      60.000   0.016667     6.000    35.000     "
        "5.000 "
        "   20.000     0.006000 ",
        "infer                     3     5.000      30.000   0.008333     6.000    30.000     "
        "0.000 "
        "    0.000     0.003000 ",
        "idle                                        5.000   0.001389\n",
        "node total                                100.000   0.027778\n",
        "workload types: train training\n",
        "\ninfer timed out after 5 s (timeout_s)\n",
        "\nGPU               energy J workloads J      idle J     other J   unattr. J   drift %  "
        "split by (seconds)\n"
        "nvml/gpu0           25.000      20.000       4.000       1.000       0.000    +1.250  sm "
        "8.0s, allocation 1.5s\n"
        "                 train                     20.000 J\n"
        "drift: NVML's power gauge",
        "\nintensity: 360 g/kWh x PUE 1.2 (constant)\n",
    };
    for (size_t k = 0; k < sizeof lines / sizeof lines[0]; k++)
        if (!strstr(t, lines[k]))
            fail_msg("not in report.txt:\n%s\n---\n%s", lines[k], t);
    /* split again by nsys: the SM basis is named for the kernels */
    free(t);
    x.gpu[0].nsys_split = true;
    t = text(&x, rep);
    assert_non_null(strstr(t, "  kernels 8.0s, allocation 1.5s\n"));
    free(t);
    json_decref(rep);
    done(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_keys),
        cmocka_unit_test(test_json_workloads),
        cmocka_unit_test(test_gpu_unmeasured),
        cmocka_unit_test(test_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
