/*
 * carma model: CARMA's power models on run directories (src/model/).
 *
 *   carma model fit RUN_DIR... -o model.json    baseline + delta per device kind, with R² and
 *                                               MAPE in-sample and on held-out data
 *   carma model predict RUN_DIR --model FILE    per-job predicted power and energy beside the
 *                                               measured attribution (prediction.csv, .json)
 *
 * Exit status: 0, 1 for a run or model that cannot be used (the message names the file and
 * field), 2 for usage errors.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "core/jsonutil.h"
#include "core/parse.h"
#include "core/fmt.h"
#include "core/timeutil.h"
#include "model/features.h"
#include "model/powermodel.h"

/* The warnings of a run read (a torn last line skipped), one line each on stderr. */
static void print_run_warnings(const struct fx_run *r)
{
    for (size_t k = 0; k < r->nwarnings; k++)
        fprintf(stderr, "warning: %s\n", r->warnings[k]);
}
static void help(void)
{
    printf(
        "usage: carma model fit RUN_DIR... -o MODEL.json [OPTIONS]\n"
        "       carma model predict RUN_DIR --model MODEL.json [--json] [-q]\n\n"
        "fit: per device kind, the static power (baseline) and the power each job adds (delta,\n"
        "linear in its features), by least squares on the node's measured power of `carma run`\n"
        "directories; prints R^2 and MAPE in-sample and on held-out data.\n"
        "predict: per-job predicted power and energy of a run, written to RUN_DIR/prediction.csv\n"
        "and prediction.json beside the run's attribution (measured, or estimated when the run's\n"
        "power was), with the errors.\n\n"
        "fit options:\n"
        "  -o, --output FILE   the model file (required)\n"
        "  --features LIST     delta features, comma-separated: cpu_util, instructions, cycles\n"
        "                      (CPU-side kinds); gpu_sm, gpu_util, gpu_mem, gpu_busy (GPUs)\n"
        "                      (default: cpu_util; gpu_sm, else gpu_util)\n"
        "  --kinds LIST        only these kinds: cpu,dram,soc,gpu,system,other (default: all\n"
        "                      the runs have)\n"
        "  --folds K           k-fold cross-validation over contiguous blocks (default 5)\n"
        "  --cv runs           leave one run out instead (two runs or more)\n"
        "  --window T          interval length (default 1s)\n"
        "  --json              print the model on stdout too\n"
        "  --allow-estimated   fit on runs whose power was estimated (by a model), not\n"
        "                      measured: refused without it\n"
        "predict options:\n"
        "  --model FILE        the model file (required)\n"
        "  --json              print prediction.json on stdout instead of the table\n"
        "  -q                  print nothing\n");
}

static const char *kind_str(int k)
{
    return channel_kind_name((enum channel_kind)k);
}

static int parse_kinds(const char *arg, struct pm_fit_opts *o)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    o->kinds_given = true;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = -1;
        for (int q = 0; q < FX_KINDS; q++)
            if (strcmp(t, kind_str(q)) == 0)
                k = q;
        if (k < 0) {
            cli_error("--kinds: '%s' is not cpu, dram, soc, gpu, system or other", t);
            return -1;
        }
        o->kinds[k] = true;
    }
    return 0;
}

static int parse_features(const char *arg, struct pm_fit_opts *o)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int f = modelfile_feature_parse(t);
        if (f < 0) {
            cli_error("--features: unknown feature '%s' (cpu_util, instructions, cycles, gpu_sm, "
                      "gpu_util, gpu_mem, gpu_busy)",
                      t);
            return -1;
        }
        size_t *n = modelfile_feature_is_gpu(f) ? &o->nfeat_gpu : &o->nfeat_cpu;
        int *arr = modelfile_feature_is_gpu(f) ? o->feat_gpu : o->feat_cpu;
        for (size_t j = 0; j < *n; j++)
            if (arr[j] == f) {
                cli_error("--features: '%s' given twice", t);
                return -1;
            }
        arr[(*n)++] = f;
    }
    return 0;
}

static void print_fit(const struct power_model *m)
{
    printf("%-7s %9s %8s  %-30s %7s %8s %9s %10s %6s\n", "kind", "base W", "+-", "delta W/unit",
           "R2", "MAPE %", "cv R2", "cv MAPE %", "n");
    for (size_t k = 0; k < m->nkinds; k++) {
        const struct pm_kind *pk = &m->k[k];
        char delta[256] = "";
        for (size_t j = 0; j < pk->nfeat; j++) {
            size_t used = strlen(delta);
            snprintf(delta + used, sizeof delta - used, "%s%s %.4g", j ? ", " : "",
                     modelfile_feature_name(pk->feat[j]), pk->coef[j]);
        }
        printf("%-7s %9.3f %8.3f  %-30s %7.4f %8.3f %9.4f %10.3f %6zu\n", kind_str(pk->kind),
               pk->baseline_w, pk->baseline_se_w, delta, pk->r2, pk->mape_pct, pk->cv_r2,
               pk->cv_mape_pct, pk->nint);
        if (pk->cv_note[0])
            printf("        held-out scores not computed: %s\n", pk->cv_note);
    }
    for (int k = 0; k < FX_KINDS; k++)
        if (m->skipped[k][0])
            printf("%-7s not fitted: %s\n", kind_str(k), m->skipped[k]);
    printf("held out: %s; baseline = the intercept (static power at zero load); temperature and "
           "clocks are not recorded, so the baseline is one constant per kind\n",
           m->nkinds ? m->k[0].cv_method : "-");
    for (size_t k = 0; k < m->nkinds; k++)
        if (strstr(m->k[k].training_method, "estimated"))
            printf("note: %s trained on estimated power (%s), not measured: the model learnt "
                   "another model's output\n",
                   kind_str(m->k[k].kind), m->k[k].training_method);
    if (!m->background_seen)
        printf("note: a run has no node_util.csv (written by carma run since the model "
               "commands): the background's CPU time was taken as 0\n");
}

/*
 * True (after saying why) when a run's power of a kind to fit was estimated, not measured: a
 * model fitted on it would learn the estimating model, not the machine.
 */
static bool refuse_estimated(const struct fx_run *runs, size_t nruns, const struct pm_fit_opts *o)
{
    for (size_t r = 0; r < nruns; r++)
        for (int k = 0; k < FX_KINDS; k++) {
            if (!runs[r].has_kind[k] || !runs[r].kind_estimated[k] ||
                (o->kinds_given && !o->kinds[k]))
                continue;
            cli_error("model fit: %s: its %s power was estimated, not measured (%s: method "
                      "\"estimated\" in samples.csv): a model fitted on it learns that estimate, "
                      "not the machine; fit on runs with measured power (RAPL, a meter, NVML), "
                      "or give --allow-estimated to fit anyway",
                      runs[r].dir, kind_str(k), runs[r].kind_estimated_channels[k]);
            return true;
        }
    return false;
}

static int cmd_fit(int argc, char **argv)
{
    const char *out = NULL;
    bool json = false;
    struct pm_fit_opts o = {.folds = 5};
    struct fx_opts fo = {.window_s = 1.0};
    bool allow_estimated = false;
    enum {
        OPT_FEATURES = 300,
        OPT_KINDS,
        OPT_FOLDS,
        OPT_CV,
        OPT_WINDOW,
        OPT_JSON_OUT,
        OPT_ALLOW_ESTIMATED
    };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"allow-estimated", no_argument, NULL, OPT_ALLOW_ESTIMATED},
        {"features", required_argument, NULL, OPT_FEATURES},
        {"kinds", required_argument, NULL, OPT_KINDS},
        {"folds", required_argument, NULL, OPT_FOLDS},
        {"cv", required_argument, NULL, OPT_CV},
        {"window", required_argument, NULL, OPT_WINDOW},
        {"json", no_argument, NULL, OPT_JSON_OUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "ho:", longopts, "model fit")) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case OPT_FEATURES:
            if (parse_features(optarg, &o) < 0)
                return 2;
            break;
        case OPT_KINDS:
            if (parse_kinds(optarg, &o) < 0)
                return 2;
            break;
        case OPT_FOLDS: {
            uint64_t k;
            if (parse_u64(optarg, &k) < 0 || k < 2 || k > 100) {
                cli_error("--folds: '%s' is not a number from 2 to 100", optarg);
                return 2;
            }
            o.folds = (int)k;
            break;
        }
        case OPT_CV:
            if (strcmp(optarg, "runs") != 0) {
                cli_error("--cv: '%s' is not 'runs' (for k-fold, give --folds K)", optarg);
                return 2;
            }
            o.cv_runs = true;
            break;
        case OPT_WINDOW: {
            int64_t ns;
            if (cli_duration("--window", optarg, 10000000, 3600 * NS_PER_S, &ns) < 0)
                return 2;
            fo.window_s = (double)ns / 1e9;
            break;
        }
        case OPT_JSON_OUT:
            json = true;
            break;
        case OPT_ALLOW_ESTIMATED:
            allow_estimated = true;
            break;
        case 'h':
            help();
            return 0;
        default:
            return 2;
        }
    }
    if (!out) {
        cli_error("model fit: give the model file with -o FILE");
        return 2;
    }
    size_t nruns = (size_t)(argc - optind);
    if (nruns == 0 || nruns > PM_RUNS_MAX) {
        cli_error("model fit: give 1 to %d run directories", PM_RUNS_MAX);
        return 2;
    }
    o.window_s = fo.window_s;
    struct fx_run *runs = calloc(nruns, sizeof *runs);
    struct power_model *m = calloc(1, sizeof *m);
    int status = 1;
    struct carma_err e = {0};
    size_t loaded = 0;
    if (!runs || !m)
        goto out;
    for (; loaded < nruns; loaded++) {
        if (fx_run_load(argv[optind + (int)loaded], &fo, &runs[loaded], &e) < 0) {
            cli_error("%s", e.msg);
            goto out;
        }
        print_run_warnings(&runs[loaded]);
    }
    if (!allow_estimated && refuse_estimated(runs, nruns, &o))
        goto out;
    if (pm_fit(runs, nruns, &o, m, &e) < 0) {
        cli_error("model fit: %s", e.msg);
        goto out;
    }
    if (modelfile_save(m, out, &e) < 0) {
        cli_error("%s", e.msg);
        goto out;
    }
    if (json) {
        json_t *j = modelfile_to_json(m);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        printf("\n");
        json_decref(j);
    } else {
        print_fit(m);
        printf("model written to %s\n", out);
    }
    status = 0;
out:
    for (size_t r = 0; r < loaded && runs; r++)
        fx_run_free(&runs[r]);
    free(runs);
    free(m);
    return status;
}

/* The run's own figure a prediction is compared with: measured_j, or estimated_j when the
 * run's power was estimated (a model's output is never called measured). */
static double ref_j(json_t *o)
{
    double v = jsonutil_get_num(o, "measured_j");
    return json_object_get(o, "estimated_j") ? jsonutil_get_num(o, "estimated_j") : v;
}

/* a figure printed with 3 decimals: never "-0.000" */
#define Z3(x) fmt_round_zero((x), 3)

static void print_row(const char *name, json_t *o)
{
    printf("%-20s %12.3f %12.3f %12.3f %12.3f %8.2f\n", name,
           Z3(jsonutil_get_num(o, "predicted_dynamic_j")),
           Z3(jsonutil_get_num(o, "predicted_static_j")), Z3(jsonutil_get_num(o, "predicted_j")),
           Z3(ref_j(o)), fmt_round_zero(jsonutil_get_num(o, "error_pct"), 2));
}

static void print_prediction(json_t *p)
{
    printf("prediction of %s (idle policy %s), model %s\n\n",
           json_string_value(json_object_get(p, "run_dir")),
           json_string_value(json_object_get(p, "idle_policy")),
           json_string_value(json_object_get(p, "model")));
    const char *ref =
        json_object_get(json_object_get(json_object_get(p, "node"), "all"), "estimated_j")
            ? "estimated J"
            : "measured J";
    printf("%-20s %12s %12s %12s %12s %8s\n", "job", "dynamic J", "static J", "predicted J", ref,
           "error %");
    json_t *ws = json_object_get(p, "workloads");
    for (size_t k = 0; k < json_array_size(ws); k++) {
        json_t *w = json_array_get(ws, k);
        print_row(json_string_value(json_object_get(w, "name")), w);
    }
    print_row("other processes", json_object_get(p, "other"));
    print_row("idle", json_object_get(p, "idle"));
    printf("\n%-20s %12s %12s %8s %8s %8s\n", "node", "predicted J", ref, "error %", "MAPE %",
           "R2");
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(p, "node"), key, v)
    {
        printf("%-20s %12.3f %12.3f %8.2f %8.3f %8.4f\n", key,
               Z3(jsonutil_get_num(v, "predicted_j")), Z3(ref_j(v)),
               fmt_round_zero(jsonutil_get_num(v, "error_pct"), 2), jsonutil_get_num(v, "mape_pct"),
               jsonutil_get_num(v, "r2"));
    }
    printf("\n%s: %s; MAPE and R2 over the intervals of the node's power\n",
           strcmp(ref, "measured J") == 0 ? "measured" : "estimated (not measured)",
           json_string_value(json_object_get(p, "measured_basis")));
}

static int cmd_predict(int argc, char **argv)
{
    const char *model = NULL;
    bool json = false, quiet = false;
    enum { OPT_MODEL = 300, OPT_JSON_OUT };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, OPT_MODEL},
        {"json", no_argument, NULL, OPT_JSON_OUT},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "hq", longopts, "model predict")) != -1) {
        switch (c) {
        case OPT_MODEL:
            model = optarg;
            break;
        case OPT_JSON_OUT:
            json = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            help();
            return 0;
        default:
            return 2;
        }
    }
    if (!model || optind + 1 != argc) {
        cli_error("model predict: give one run directory and --model FILE");
        return 2;
    }
    struct power_model *m = calloc(1, sizeof *m);
    struct fx_run run = {0};
    struct carma_err e = {0};
    json_t *p = NULL;
    int status = 1;
    if (!m)
        goto out;
    if (modelfile_load(model, m, &e) < 0) {
        cli_error("%s", e.msg);
        goto out;
    }
    struct fx_opts fo = {.window_s = isfinite(m->window_s) && m->window_s > 0 ? m->window_s : 1};
    if (fx_run_load(argv[optind], &fo, &run, &e) < 0) {
        cli_error("%s", e.msg);
        goto out;
    }
    print_run_warnings(&run);
    if (pm_predict(m, model, &run, &p, &e) < 0) {
        cli_error("model predict: %s", e.msg);
        goto out;
    }
    if (json) {
        json_dumpf(p, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16));
        printf("\n");
    } else if (!quiet) {
        print_prediction(p);
    }
    status = 0;
out:
    json_decref(p);
    fx_run_free(&run);
    free(m);
    return status;
}

int cmd_model(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        help();
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "fit") == 0)
        return cmd_fit(argc - 1, argv + 1);
    if (strcmp(argv[1], "predict") == 0)
        return cmd_predict(argc - 1, argv + 1);
    static const char *const subs[] = {"fit", "predict"};
    char near[64];
    if (cli_suggest(argv[1], subs, 2, "", near, sizeof near) > 0)
        cli_error("model: unknown subcommand '%s': did you mean %s?", argv[1], near);
    else
        cli_error("model: unknown subcommand '%s' (fit or predict)", argv[1]);
    return 2;
}
