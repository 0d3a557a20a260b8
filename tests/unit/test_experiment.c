/*
 * Unit tests for workload/experiment: the good experiments of tests/experiments/good load with
 * exact values (resolved paths, argv per type, env merge list, gpu → CUDA_VISIBLE_DEVICES,
 * defaults), the locator finds exact lines and columns in tricky text, and every malformed
 * file of tests/experiments/bad gives exactly the messages of its .expected file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/carbon.h"
#include "testutil.h"
#include "workload/experiment.h"

/* The corpus: tests/experiments, next to the fixtures. */
static void corpus(char *buf, size_t cap, const char *rel)
{
    char tmp[PATH_MAX];
    tu_fixture_path(tmp, sizeof tmp, "../experiments");
    char *abs = realpath(tmp, NULL);
    if (!abs)
        fail_msg("no corpus at %s", tmp);
    snprintf(buf, cap, "%s%s%s", abs, *rel ? "/" : "", rel);
    free(abs);
}

static struct experiment load_ok(const char *rel)
{
    char path[PATH_MAX];
    corpus(path, sizeof path, rel);
    struct experiment x;
    char *errors = NULL;
    int r = experiment_load(path, &x, &errors);
    if (r != 0)
        fail_msg("%s: %d: %s", rel, r, errors ? errors : "(no message)");
    assert_null(errors);
    return x;
}

/* Loads the experiment text (written to tu_dir/exp.json); fails the test on any error. */
static struct experiment load_text_ok(const char *text)
{
    char path[TU_DIR_MAX + 32];
    snprintf(path, sizeof path, "%s/exp.json", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    struct experiment x;
    char *errors = NULL;
    int r = experiment_load(path, &x, &errors);
    if (r != 0)
        fail_msg("%d: %s", r, errors ? errors : "(no message)");
    return x;
}

static void assert_strv(char *const *v, size_t n, const char *const *want)
{
    for (size_t i = 0; i < n; i++) {
        assert_non_null(want[i]);
        assert_string_equal(v[i], want[i]);
    }
    assert_null(want[n]);
}

/* ---- locator ---- */

static void at(const char *text, const struct json_path_step *p, size_t n, bool key, int line,
               int col)
{
    int l = -1, c = -1;
    int r = experiment_locate(text, strlen(text), p, n, key, &l, &c);
    if (r != 0 || l != line || c != col)
        fail_msg("want %d:%d, got %d:%d (r %d)", line, col, l, c, r);
}

#define K(k)                                                                                       \
    {                                                                                              \
        k, 0                                                                                       \
    }
#define I(i)                                                                                       \
    {                                                                                              \
        NULL, i                                                                                    \
    }

static void test_locate_tricky(void **state)
{
    (void)state;
    /* keys and strings holding quotes, braces, brackets, commas and escapes */
    const char *t = "  {\"a\\\"}{\": \"x{[,\\\"\", \"b\": [1, [2, {\"c\": \"]\"}], 3],\n"
                    "\"d\\u00e9\": {\"e\": true, \"\\ud83d\\ude00\": null, \"a\\\\b\": -1.5e3}}";
    at(t, NULL, 0, false, 1, 3);
    at(t, (struct json_path_step[]){K("a\"}{")}, 1, false, 1, 13);
    at(t, (struct json_path_step[]){K("a\"}{")}, 1, true, 1, 4);
    at(t, (struct json_path_step[]){K("b")}, 1, false, 1, 28);
    at(t, (struct json_path_step[]){K("b"), I(0)}, 2, false, 1, 29);
    at(t, (struct json_path_step[]){K("b"), I(1)}, 2, false, 1, 32);
    at(t, (struct json_path_step[]){K("b"), I(1), I(1), K("c")}, 4, false, 1, 42);
    at(t, (struct json_path_step[]){K("b"), I(1), I(1), K("c")}, 4, true, 1, 37);
    at(t, (struct json_path_step[]){K("b"), I(2)}, 2, false, 1, 49);
    /* \u00e9 decodes to é; a surrogate pair to U+1F600; \\ to one backslash */
    at(t, (struct json_path_step[]){K("d\xc3\xa9"), K("e")}, 2, false, 2, 18);
    at(t, (struct json_path_step[]){K("d\xc3\xa9"), K("\xf0\x9f\x98\x80")}, 2, true, 2, 24);
    at(t, (struct json_path_step[]){K("d\xc3\xa9"), K("\xf0\x9f\x98\x80")}, 2, false, 2, 40);
    at(t, (struct json_path_step[]){K("d\xc3\xa9"), K("a\\b")}, 2, false, 2, 54);

    int l, c;
    size_t len = strlen(t);
    assert_int_equal(experiment_locate(t, len, (struct json_path_step[]){K("z")}, 1, false, &l, &c),
                     -ENOENT);
    assert_int_equal(
        experiment_locate(t, len, (struct json_path_step[]){K("b"), I(3)}, 2, false, &l, &c),
        -ENOENT);
    assert_int_equal(experiment_locate(t, len, (struct json_path_step[]){I(0)}, 1, false, &l, &c),
                     -ENOENT);
    /* a prefix of a key is not the key */
    assert_int_equal(experiment_locate(t, len, (struct json_path_step[]){K("a")}, 1, false, &l, &c),
                     -ENOENT);
    /* a truncated document */
    assert_int_equal(experiment_locate(t, 20, (struct json_path_step[]){K("b")}, 1, false, &l, &c),
                     -EINVAL);
}

/* A NUL byte right after a number: jansson takes it as the number's end (it loads
 * {"b": 1\0}), so the locator must step over it too, not stop at it. */
static void test_locate_nul_after_number(void **state)
{
    (void)state;
    static const char t[] = "{\"a\": [{\"b\": 1\0}, {\"c\": 2}]}";
    int l = 0, c = 0;
    assert_int_equal(experiment_locate(t, sizeof t - 1, (struct json_path_step[]){K("a"), I(1)}, 2,
                                       false, &l, &c),
                     0);
    assert_int_equal(l, 1);
    assert_int_equal(c, 19);
}

static void test_locate_unicode_columns(void **state)
{
    (void)state;
    /* columns count characters: é (2 bytes), — (3 bytes), 😀 (4 bytes) are one each */
    const char *t = "{\"\xc3\xa9\": \"\xe2\x80\x94\xf0\x9f\x98\x80\", \"n\": [\"\xc3\xa9\", 7]}";
    at(t, (struct json_path_step[]){K("\xc3\xa9")}, 1, false, 1, 7);
    at(t, (struct json_path_step[]){K("n")}, 1, true, 1, 13);
    at(t, (struct json_path_step[]){K("n"), I(1)}, 2, false, 1, 24);
}

static void test_locate_crlf(void **state)
{
    (void)state;
    const char *t = "{\r\n  \"a\": [\r\n    1,\r\n\t\"x\"\r\n  ],\r\n  \"b\":\r\n\r\n  {}\r\n}\r\n";
    at(t, (struct json_path_step[]){K("a")}, 1, false, 2, 8);
    at(t, (struct json_path_step[]){K("a")}, 1, true, 2, 3);
    at(t, (struct json_path_step[]){K("a"), I(0)}, 2, false, 3, 5);
    at(t, (struct json_path_step[]){K("a"), I(1)}, 2, false, 4, 2);
    at(t, (struct json_path_step[]){K("b")}, 1, false, 8, 3);
}

/* The locator agrees with jansson's columns: where a one-character value of one document
 * is an invalid token in another, jansson reports the same line:column for it. */
static void test_locate_matches_jansson(void **state)
{
    (void)state;
    const char *good = "{\"\xc3\xa9\xe2\x80\x94\": [1,\r\n \"\xf0\x9f\x98\x80\", 2]}";
    const char *bad = "{\"\xc3\xa9\xe2\x80\x94\": [1,\r\n \"\xf0\x9f\x98\x80\", x]}";
    json_error_t je;
    json_t *j = json_loads(bad, 0, &je);
    assert_null(j);
    /* jansson stops at x, where the other document has 2 */
    at(good, (struct json_path_step[]){K("\xc3\xa9\xe2\x80\x94"), I(2)}, 2, false, je.line,
       je.column);
}

/* ---- good files ---- */

static void test_good_full(void **state)
{
    (void)state;
    char dir[PATH_MAX], p[PATH_MAX + 64];
    corpus(dir, sizeof dir, "good");
    struct experiment x = load_ok("good/full.json");

    assert_string_equal(x.dir, dir);
    assert_string_equal(x.name, "collocated-v1.2");
    assert_string_equal(x.description, "a training job and a server sharing GPU 0");
    assert_int_equal(x.n, 3);

    /* python: python3 runs the script, resolved against the file's directory */
    struct workload_spec *w = &x.w[0];
    assert_string_equal(w->name, "train");
    /* carma's earlier files: a type of python, shell or exec without "launch" is the launch
     * mode, and stays the workload's type too */
    assert_string_equal(w->type, "python");
    assert_int_equal(w->launch, LAUNCH_PYTHON);
    assert_int_equal(w->gpu_use, WORKLOAD_GPU_YES);
    assert_false(w->gpu_bool);
    snprintf(p, sizeof p, "%s/scripts/train.py", dir);
    assert_string_equal(w->script, p);
    assert_strv(w->argv, 4, (const char *const[]){"python3", p, "--epochs", "3", NULL});
    snprintf(p, sizeof p, "%s/scripts", dir);
    assert_string_equal(w->cwd, p);
    assert_int_equal(w->gpu, 0);
    /* env in file order, then the gpu */
    assert_strv(w->env, w->n_env,
                (const char *const[]){"OMP_NUM_THREADS=4", "PYTHONUNBUFFERED=1",
                                      "CUDA_VISIBLE_DEVICES=0", NULL});
    assert_true(w->delay_s == 0);
    assert_true(w->timeout_s == 3600);
    assert_int_equal(w->n_cpus, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(w->cpus[i], i);
    assert_int_equal(w->n_gpus, 1);
    assert_int_equal(w->gpus[0], 0);

    /* exec with a path: run directly; the env's own CUDA_VISIBLE_DEVICES wins over gpu */
    w = &x.w[1];
    assert_string_equal(w->name, "serve");
    assert_string_equal(w->type, "exec");
    assert_int_equal(w->launch, LAUNCH_EXEC);
    snprintf(p, sizeof p, "%s/bin/run.sh", dir);
    assert_string_equal(w->script, p);
    assert_strv(w->argv, 3, (const char *const[]){p, "--port", "8000", NULL});
    assert_null(w->cwd);
    assert_int_equal(w->gpu, 1);
    assert_strv(w->env, w->n_env, (const char *const[]){"CUDA_VISIBLE_DEVICES=2,3", NULL});
    assert_true(w->delay_s == 2.5);
    assert_true(w->timeout_s == 0);
    assert_int_equal(w->n_cpus, 0);
    assert_null(w->cpus);
    assert_int_equal(w->n_gpus, 0);

    /* shell: /bin/sh runs the script; gpu null is no gpu */
    w = &x.w[2];
    assert_string_equal(w->type, "shell");
    assert_int_equal(w->launch, LAUNCH_SHELL);
    assert_int_equal(w->gpu_use, WORKLOAD_GPU_UNSTATED);
    snprintf(p, sizeof p, "%s/scripts/setup.sh", dir);
    assert_strv(w->argv, 2, (const char *const[]){"/bin/sh", p, NULL});
    assert_int_equal(w->gpu, -1);
    assert_int_equal(w->n_env, 0);

    assert_int_equal(x.interval_ns, 250000000);
    assert_string_equal(x.sources, "rapl,model");
    assert_true(x.baseline_s == 0);
    assert_string_equal(x.region, "FRA"); /* the table's spelling of "fra" */
    assert_true(x.g_per_kwh == 0);
    assert_null(x.intensity_file);
    assert_true(x.pue == 1.2);
    assert_int_equal(x.n_embodied, 2);
    assert_string_equal(x.embodied[0].component, "gpu");
    assert_string_equal(x.embodied[0].model, "NVIDIA H100");
    assert_true(x.embodied[0].kg_co2e == 150 && x.embodied[0].lifetime_years == 5);
    assert_string_equal(x.embodied[1].component, "server");
    assert_string_equal(x.embodied[1].model, "");
    assert_true(x.embodied[1].kg_co2e == 1200.5 && x.embodied[1].lifetime_years == 4);
    assert_int_equal(x.idle_policy, SPLIT_PROPORTIONAL);

    /* the resolved document */
    json_t *r = x.resolved;
    json_t *w0 = json_array_get(json_object_get(r, "workloads"), 0);
    snprintf(p, sizeof p, "%s/scripts/train.py", dir);
    assert_string_equal(json_string_value(json_object_get(w0, "script")), p);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(w0, "env"), "CUDA_VISIBLE_DEVICES")),
        "0");
    json_t *w2 = json_array_get(json_object_get(r, "workloads"), 2);
    assert_string_equal(json_string_value(json_object_get(w2, "cwd")), dir);
    assert_true(json_is_null(json_object_get(w2, "gpu")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r, "attribution"), "idle_policy")),
        "proportional");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "carbon"), "region")),
                        "FRA");
    experiment_free(&x);
    experiment_free(&x); /* zeroed: safe */
    experiment_free(NULL);
}

static void test_good_minimal_defaults(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    corpus(dir, sizeof dir, "good");
    struct experiment x = load_ok("good/minimal.json");
    assert_string_equal(x.name, "minimal");
    assert_null(x.description);
    assert_int_equal(x.n, 1);
    struct workload_spec *w = &x.w[0];
    assert_null(w->type); /* no kind given */
    assert_int_equal(w->launch, LAUNCH_EXEC);
    assert_int_equal(w->gpu_use, WORKLOAD_GPU_UNSTATED);
    /* a command name stays a name, for execvp to look up */
    assert_string_equal(w->script, "sleep");
    assert_strv(w->argv, 2, (const char *const[]){"sleep", "1", NULL});
    assert_null(w->cwd);
    assert_int_equal(w->n_env, 0);
    assert_int_equal(w->gpu, -1);
    assert_true(w->delay_s == 0 && w->timeout_s == 0);
    assert_int_equal(x.interval_ns, 0);
    assert_null(x.sources);
    assert_true(x.baseline_s == 3);
    assert_null(x.region);
    assert_true(x.g_per_kwh == 0);
    assert_null(x.intensity_file);
    assert_true(x.pue == 1);
    assert_int_equal(x.n_embodied, 0);
    assert_int_equal(x.idle_policy, SPLIT_IDLE);
    json_t *m = json_object_get(x.resolved, "monitoring");
    assert_null(json_object_get(m, "interval"));
    assert_true(json_real_value(json_object_get(m, "baseline_s")) == 3);
    assert_true(json_real_value(json_object_get(json_object_get(x.resolved, "carbon"), "pue")) ==
                1);
    json_t *w0 = json_array_get(json_object_get(x.resolved, "workloads"), 0);
    assert_true(json_is_null(json_object_get(w0, "type")));
    assert_string_equal(json_string_value(json_object_get(w0, "launch")), "exec");
    experiment_free(&x);
}

/* CARMA's README example as it is written: type is the kind, gpu a boolean, script the
 * program (python3, exec'd from PATH) and args relative to cwd "." (the file's directory). */
static void test_good_carma_readme(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    corpus(dir, sizeof dir, "good/carma-readme");
    struct experiment x = load_ok("good/carma-readme/sample_experiment.json");
    assert_string_equal(x.name, "experiment_name");
    assert_string_equal(x.description, "Description of the experiment");
    assert_int_equal(x.n, 1);
    struct workload_spec *w = &x.w[0];
    assert_string_equal(w->name, "workload_name");
    assert_string_equal(w->type, "finetune");
    assert_int_equal(w->launch, LAUNCH_EXEC);
    assert_int_equal(w->gpu_use, WORKLOAD_GPU_YES);
    assert_true(w->gpu_bool);
    assert_int_equal(w->gpu, -1);
    assert_string_equal(w->script, "python3");
    assert_strv(w->argv, 6,
                (const char *const[]){"python3", "workloads/finetune_model.py", "--model_name",
                                      "model_name", "--max_steps", "60", NULL});
    assert_string_equal(w->cwd, dir); /* "." is the directory itself */
    /* the env's CUDA_VISIBLE_DEVICES, nothing added */
    assert_strv(w->env, w->n_env, (const char *const[]){"CUDA_VISIBLE_DEVICES=0", NULL});
    int g[4];
    assert_int_equal(experiment_spec_gpus(w, g, 4), 1);
    assert_int_equal(g[0], 0);
    json_t *w0 = json_array_get(json_object_get(x.resolved, "workloads"), 0);
    assert_string_equal(json_string_value(json_object_get(w0, "type")), "finetune");
    assert_string_equal(json_string_value(json_object_get(w0, "launch")), "exec");
    assert_true(json_is_true(json_object_get(w0, "gpu")));
    assert_string_equal(json_string_value(json_object_get(w0, "cwd")), dir);
    experiment_free(&x);
}

/* type, launch and gpu in their combinations, and the GPUs a workload names. */
static void test_type_launch_gpu(void **state)
{
    (void)state;
    struct experiment x = load_text_ok(
        "{\"experiment_name\": \"e\", \"workloads\": ["
        "{\"name\": \"a\", \"type\": \"inference\", \"gpu\": false, \"script\": \"true\"},"
        "{\"name\": \"b\", \"type\": \"python\", \"launch\": \"exec\", \"script\": \"true\"},"
        "{\"name\": \"c\", \"type\": null, \"launch\": \"shell\", \"gpu\": true,"
        " \"script\": \"/dev/null\", \"env\": {\"CUDA_VISIBLE_DEVICES\": \" 3, 1,3,GPU-ab,2\"}},"
        "{\"name\": \"d\", \"gpu\": true, \"script\": \"true\"},"
        "{\"name\": \"e\", \"gpu\": 2, \"script\": \"true\", \"allocation\": {\"gpus\": [4, 5]}},"
        "{\"name\": \"f\", \"gpu\": 2, \"script\": \"true\"}]}");
    int g[8];
    assert_string_equal(x.w[0].type, "inference");
    assert_int_equal(x.w[0].launch, LAUNCH_EXEC);
    assert_int_equal(x.w[0].gpu_use, WORKLOAD_GPU_NO);
    assert_int_equal(experiment_spec_gpus(&x.w[0], g, 8), 0);
    /* launch given: type is only the kind */
    assert_string_equal(x.w[1].type, "python");
    assert_int_equal(x.w[1].launch, LAUNCH_EXEC);
    assert_strv(x.w[1].argv, 1, (const char *const[]){"true", NULL});
    assert_null(x.w[2].type);
    assert_int_equal(x.w[2].launch, LAUNCH_SHELL);
    /* true: the indexes of its CUDA_VISIBLE_DEVICES, up to the first that is not one */
    assert_int_equal(experiment_spec_gpus(&x.w[2], g, 8), 2);
    assert_int_equal(g[0], 3);
    assert_int_equal(g[1], 1);
    assert_int_equal(experiment_spec_gpus(&x.w[2], g, 1), 1);
    /* true without CUDA_VISIBLE_DEVICES: a GPU workload on whatever GPUs it uses */
    assert_int_equal(x.w[3].gpu_use, WORKLOAD_GPU_YES);
    assert_int_equal(x.w[3].n_env, 0);
    assert_int_equal(experiment_spec_gpus(&x.w[3], g, 8), 0);
    /* the allocation first, then the index */
    assert_int_equal(experiment_spec_gpus(&x.w[4], g, 8), 2);
    assert_int_equal(g[0], 4);
    assert_int_equal(experiment_spec_gpus(&x.w[5], g, 8), 1);
    assert_int_equal(g[0], 2);
    assert_int_equal(x.w[5].gpu_use, WORKLOAD_GPU_YES);
    json_t *ws = json_object_get(x.resolved, "workloads");
    assert_true(json_is_false(json_object_get(json_array_get(ws, 0), "gpu")));
    assert_true(json_is_null(json_object_get(json_array_get(ws, 2), "type")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(ws, 2), "launch")),
                        "shell");
    assert_true(json_is_true(json_object_get(json_array_get(ws, 3), "gpu")));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ws, 5), "gpu")), 2);
    assert_string_equal(experiment_launch_name(LAUNCH_PYTHON), "python");
    experiment_free(&x);
}

static void test_good_intensity_file(void **state)
{
    (void)state;
    char dir[PATH_MAX], p[PATH_MAX + 64];
    corpus(dir, sizeof dir, "good");
    struct experiment x = load_ok("good/intensity_file.json");
    snprintf(p, sizeof p, "%s/data/ci.csv", dir);
    assert_string_equal(x.intensity_file, p);
    assert_null(x.region);
    assert_int_equal(x.idle_policy, SPLIT_EQUAL);
    assert_int_equal(x.n, 2);
    snprintf(p, sizeof p, "%s/bin/run.sh", dir);
    assert_strv(x.w[1].argv, 1, (const char *const[]){p, NULL});
    experiment_free(&x);
}

/* A relative path: kept as given for messages; dir made absolute. */
static void test_relative_path(void **state)
{
    (void)state;
    char dir[PATH_MAX], old[PATH_MAX];
    corpus(dir, sizeof dir, "");
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(dir), 0);
    struct experiment x;
    char *errors = NULL;
    int r = experiment_load("good/../good/full.json", &x, &errors);
    assert_int_equal(chdir(old), 0);
    assert_int_equal(r, 0);
    assert_string_equal(x.path, "good/../good/full.json");
    strcat(dir, "/good");
    assert_string_equal(x.dir, dir);
    experiment_free(&x);
}

/* The resolved document is itself a valid experiment, and resolves to itself. */
static void test_resolved_reloads(void **state)
{
    (void)state;
    static const char *const files[] = {"good/full.json", "good/minimal.json",
                                        "good/intensity_file.json",
                                        "good/carma-readme/sample_experiment.json"};
    for (size_t i = 0; i < 4; i++) {
        struct experiment x = load_ok(files[i]), y;
        char path[TU_DIR_MAX + 32], *errors = NULL;
        snprintf(path, sizeof path, "%s/resolved.json", tu_dir);
        assert_int_equal(json_dump_file(x.resolved, path, JSON_INDENT(1)), 0);
        int r = experiment_load(path, &y, &errors);
        if (r != 0)
            fail_msg("%s resolved: %s", files[i], errors);
        assert_true(json_equal(x.resolved, y.resolved));
        experiment_free(&x);
        experiment_free(&y);
    }
}

/* ---- errors ---- */

static void expect_errors(const char *path, int code, const char *want)
{
    struct experiment x;
    char *errors = NULL;
    int r = experiment_load(path, &x, &errors);
    assert_int_equal(r, code);
    assert_non_null(errors);
    assert_string_equal(errors, want);
    free(errors);
    assert_null(x.w);
    assert_null(x.name);
}

static void test_cannot_read(void **state)
{
    (void)state;
    char path[TU_DIR_MAX + 32], want[TU_DIR_MAX + 128];
    snprintf(path, sizeof path, "%s/nope.json", tu_dir);
    snprintf(want, sizeof want, "%s: cannot read: No such file or directory\n", path);
    expect_errors(path, -ENOENT, want);
    snprintf(want, sizeof want, "%s: cannot read: Is a directory\n", tu_dir);
    expect_errors(tu_dir, -EISDIR, want);

    /* over the size limit */
    snprintf(path, sizeof path, "%s/big.json", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputc('{', f);
    for (size_t i = 0; i < EXPERIMENT_FILE_MAX; i++)
        fputc(' ', f);
    fputc('}', f);
    assert_int_equal(fclose(f), 0);
    snprintf(want, sizeof want, "%s: cannot read: File too large (the limit is 1 MiB)\n", path);
    expect_errors(path, -EFBIG, want);

    /* errors may be NULL */
    struct experiment x;
    assert_int_equal(experiment_load(path, &x, NULL), -EFBIG);
}

static void test_errors_in_text(void **state)
{
    (void)state;
    /* CRLF line ends and a tab: the position is still line:column in characters */
    tu_put("crlf.json", "{\r\n\t\"experiment_name\": \"x\",\r\n\t\"workloads\": [\r\n"
                        "\t\t{\"name\": \"a\", \"script\": \"true\", \"gpu\": -3}\r\n\t]\r\n}\r\n");
    char path[TU_DIR_MAX + 32], want[TU_DIR_MAX + 256];
    snprintf(path, sizeof path, "%s/crlf.json", tu_dir);
    snprintf(want, sizeof want,
             "%s:4:42: workloads[0].gpu: must be true, false, an integer >= 0 or null (got -3)\n",
             path);
    expect_errors(path, -EINVAL, want);

    /* a newline in a user's string never breaks the one-problem-per-line output, and long
     * strings are shortened */
    char doc[1024];
    snprintf(doc, sizeof doc,
             "{\"experiment_name\": \"a\\nb\\\"c\", \"workloads\": [{\"name\": \"%0150d\", "
             "\"script\": \"true\"}]}",
             7);
    tu_put("esc.json", doc);
    snprintf(path, sizeof path, "%s/esc.json", tu_dir);
    snprintf(want, sizeof want,
             "%s:1:21: experiment_name: \"a\\u000ab\\\"c\" is not a valid name: use only letters, "
             "digits, '.', '_' and '-'\n"
             "%s:1:55: workloads[0].name: longer than 128 characters\n",
             path, path);
    expect_errors(path, -EINVAL, want);

    /* an env key that needs quoting in the path, and a script that is a directory */
    tu_put("q.json", "{\"experiment_name\": \"x\", \"workloads\": [{\"name\": \"a\", \"script\": "
                     "\"./\", \"type\": \"python\", \"env\": {\"a b\": 1}}]}");
    snprintf(path, sizeof path, "%s/q.json", tu_dir);
    snprintf(want, sizeof want,
             "%s:1:64: workloads[0].script: \"./\" is a directory\n"
             "%s:1:103: workloads[0].env[\"a b\"]: must be a string, not a number\n",
             path, path);
    expect_errors(path, -EINVAL, want);
}

/* jansson's syntax message quotes the token where it stopped, which may hold a line end (a
 * backslash before one): the message stays one line, the control character escaped. */
static void test_syntax_error_one_line(void **state)
{
    (void)state;
    tu_put("esc_nl.json", "{\n  \"ex\\\n  \"workloads\": []\n}\n");
    char path[TU_DIR_MAX + 32], want[TU_DIR_MAX + 128];
    snprintf(path, sizeof path, "%s/esc_nl.json", tu_dir);
    snprintf(want, sizeof want, "%s:3:1: JSON syntax: invalid escape near '\"ex\\\\u000a'\n", path);
    expect_errors(path, -EINVAL, want);
}

/* A NUL byte anywhere in the file is refused with its position: jansson would read
 * "timeout_s": 12\0 as 12, and a file of NULs is not an empty one. */
static void test_nul_byte(void **state)
{
    (void)state;
    static const char doc[] = "{\"experiment_name\": \"x\",\n \"workloads\": [{\"name\": \"a\", "
                              "\"script\": \"true\", \"timeout_s\": 12\0}]}\n";
    static const char nuls[] = "\0\0\n";
    const struct {
        const char *name, *text;
        size_t len;
        const char *pos;
    } cases[] = {{"nul.json", doc, sizeof doc - 1, "2:63"}, {"nuls.json", nuls, 3, "1:1"}};
    for (size_t k = 0; k < 2; k++) {
        char path[TU_DIR_MAX + 32], want[TU_DIR_MAX + 128];
        snprintf(path, sizeof path, "%s/%s", tu_dir, cases[k].name);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(cases[k].text, 1, cases[k].len, f), cases[k].len);
        assert_int_equal(fclose(f), 0);
        snprintf(want, sizeof want, "%s:%s: JSON syntax: a NUL byte (not text)\n", path,
                 cases[k].pos);
        expect_errors(path, -EINVAL, want);
    }
}

/* Every bad/NAME.json gives exactly bad/NAME.expected (loaded from inside bad/, so that the
 * messages name the file by its basename). */
static void test_corpus(void **state)
{
    (void)state;
    char dir[PATH_MAX], old[PATH_MAX];
    corpus(dir, sizeof dir, "bad");
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(dir), 0);
    struct dirent **names = NULL;
    int n = scandir(".", &names, NULL, alphasort);
    assert_true(n > 0);
    int cases = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        size_t len = strlen(name);
        if (len > 5 && strcmp(name + len - 5, ".json") == 0) {
            char exp[PATH_MAX], want[8192];
            snprintf(exp, sizeof exp, "%.*s.expected", (int)(len - 5), name);
            tu_slurp(exp, want, sizeof want);
            struct experiment x;
            char *errors = NULL;
            int r = experiment_load(name, &x, &errors);
            if (r != -EINVAL || !errors || strcmp(errors, want) != 0) {
                print_error("%s: r %d\n--- got\n%s--- expected\n%s", name, r,
                            errors ? errors : "(null)\n", want);
                failed++;
            }
            free(errors);
            if (r == 0)
                experiment_free(&x);
            cases++;
        }
        free(names[i]);
    }
    free(names);
    assert_int_equal(chdir(old), 0);
    assert_int_equal(failed, 0);
    assert_true(cases >= 22);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_locate_tricky),
        cmocka_unit_test(test_locate_nul_after_number),
        cmocka_unit_test(test_locate_unicode_columns),
        cmocka_unit_test(test_locate_crlf),
        cmocka_unit_test(test_locate_matches_jansson),
        cmocka_unit_test(test_good_full),
        cmocka_unit_test(test_good_minimal_defaults),
        cmocka_unit_test(test_good_intensity_file),
        cmocka_unit_test(test_good_carma_readme),
        cmocka_unit_test_setup_teardown(test_type_launch_gpu, tu_setup, tu_teardown),
        cmocka_unit_test(test_relative_path),
        cmocka_unit_test_setup_teardown(test_resolved_reloads, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_cannot_read, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_errors_in_text, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_nul_byte, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_syntax_error_one_line, tu_setup, tu_teardown),
        cmocka_unit_test(test_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
