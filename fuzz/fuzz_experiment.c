/*
 * libFuzzer harness for workload/experiment (experiment_load, experiment_locate).
 *
 * Each input is written to exp.json in a directory of this process's own that also holds the
 * scripts, directories and intensity file the seeds name (scripts/train.py, bin/run.sh,
 * data/ci.csv, ...), so that good experiments load whole and every later check runs, and is
 * loaded with experiment_load. A load that fails must say why, one problem a line, each line
 * "exp.json:LINE:COL: ..." with LINE:COL inside the text (a line of the file, a column at most
 * one past its last character), or "exp.json: ..." for a file that cannot be read; a load
 * that succeeds must give a named experiment with at least one workload whose argv ends in
 * NULL. Then, when jansson accepts the text, every value of the document (the first 4000, in
 * document order) is looked up again with experiment_locate, by its path and by its key: each
 * must be found, at a position inside the text whose character starts a value of that type
 * ('{', '[', '"', a digit or '-', t, f, n), and a key at a '"'.
 *
 * fuzz-sources: src/workload/experiment.c src/analysis/carbon.c src/analysis/split.c
 * fuzz-sources: src/core/array.c src/core/csv.c src/core/err.c src/core/file.c src/core/fmt.c
 * fuzz-sources: src/core/fsroot.c src/core/parse.c src/core/table.c src/core/timeutil.c
 * fuzz-sources: src/sources/hwmon.c src/sources/estimate.c src/sources/modelfile.c
 * fuzz-sources: src/sources/meter.c src/sources/nvml.c src/sources/rapl.c src/sources/note.c
 * fuzz-sources: src/sources/source.c src/sources/channel.c src/core/channel_kind.c
 * fuzz-sources: build-fuzz/embedded_data.c src/sources/dcgm.c src/sources/dynlib.c
 * fuzz-sources: src/core/iso8601.c src/core/jsonutil.c
 * fuzz-libs: -ljansson -ldl
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_file.h"
#include "workload/experiment.h"

static void setup(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    static const char *const dirs[] = {"scripts", "bin", "data", "workloads"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        fuzz_mkdir(dirs[i]);
    static const char sh[] = "#!/bin/sh\nexit 0\n";
    static const char py[] = "print('ok')\n";
    static const char ci[] = "start,end,g_per_kwh\n"
                             "2024-01-01T00:00:00Z,2024-01-01T01:00:00Z,120\n"
                             "2024-01-01T01:00:00Z,2024-01-01T02:00:00+01:00,90.5\n";
    fuzz_put("scripts/train.py", py, sizeof py - 1);
    fuzz_put("scripts/setup.sh", sh, sizeof sh - 1);
    fuzz_put("load.py", py, sizeof py - 1);
    fuzz_put("workloads/finetune_model.py", py, sizeof py - 1);
    chmod(fuzz_put("bin/run.sh", sh, sizeof sh - 1), 0755);
    fuzz_put("data/ci.csv", ci, sizeof ci - 1);
}

/* Line starts of text: starts[k] is the offset of line k + 1; returns the number of lines. */
static size_t line_starts(const char *text, size_t len, size_t **ret)
{
    size_t n = 1;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    size_t *s = malloc(n * sizeof *s);
    if (!s)
        abort();
    size_t k = 0;
    s[k++] = 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n')
            s[k++] = i + 1;
    *ret = s;
    return n;
}

/* The byte offset of 1-based line:col (columns count UTF-8 characters, as jansson), or
 * SIZE_MAX when the position is not inside the text (col may be one past the line's end). */
static size_t offset_of(const char *text, size_t len, const size_t *starts, size_t nlines,
                        long line, long col)
{
    if (line < 1 || (size_t)line > nlines || col < 1)
        return SIZE_MAX;
    size_t i = starts[line - 1];
    size_t end = (size_t)line < nlines ? starts[line] - 1 : len; /* at its '\n' or the end */
    for (long c = 1; c < col; c++) {
        if (i >= end)
            return SIZE_MAX;
        i++;
        while (i < end && ((unsigned char)text[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

static const char *exp_path; /* where the input is */

/* Every error line must be "exp.json:LINE:COL: " with the position in the text, or
 * "exp.json: " (the file could not be read). */
static void check_errors(const char *errors, int rc, const char *text, size_t len,
                         const size_t *starts, size_t nlines)
{
    if (!errors) {
        if (rc != -ENOMEM)
            abort();
        return;
    }
    if (!*errors || errors[strlen(errors) - 1] != '\n')
        abort();
    const char *p = errors;
    const char *prefix = exp_path;
    size_t np = strlen(prefix);
    while (*p) {
        const char *nl = strchr(p, '\n');
        if (!nl || strncmp(p, prefix, np) != 0)
            abort();
        const char *q = p + np;
        if (q[0] == ':' && q[1] >= '0' && q[1] <= '9') {
            char *end;
            long line = strtol(q + 1, &end, 10);
            if (*end != ':')
                abort();
            long col = strtol(end + 1, &end, 10);
            if (*end != ':' || end[1] != ' ')
                abort();
            if (offset_of(text, len, starts, nlines, line, col) == SIZE_MAX) {
                fprintf(stderr, "position %ld:%ld outside the text: %.*s\n", line, col,
                        (int)(nl - p), p);
                abort();
            }
        } else if (q[0] != ':' || q[1] != ' ') {
            abort();
        }
        p = nl + 1;
    }
}

struct walk {
    const char *text;
    size_t len;
    const size_t *starts;
    size_t nlines;
    struct json_path_step path[64];
    size_t budget;
};

static bool starts_value(char c, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return c == '{';
    case JSON_ARRAY:
        return c == '[';
    case JSON_STRING:
        return c == '"';
    case JSON_INTEGER:
    case JSON_REAL:
        return c == '-' || (c >= '0' && c <= '9');
    case JSON_TRUE:
        return c == 't';
    case JSON_FALSE:
        return c == 'f';
    case JSON_NULL:
        return c == 'n';
    }
    return false;
}

static void locate_at(struct walk *w, size_t n, bool key, const json_t *v)
{
    int line = 0, col = 0;
    int r = experiment_locate(w->text, w->len, w->path, n, key, &line, &col);
    if (r != 0) {
        fprintf(stderr, "experiment_locate: %d for a path of %zu steps that jansson has\n", r, n);
        abort();
    }
    size_t off = offset_of(w->text, w->len, w->starts, w->nlines, line, col);
    if (off == SIZE_MAX || off >= w->len)
        abort();
    if (key ? w->text[off] != '"' : !starts_value(w->text[off], v)) {
        fprintf(stderr, "experiment_locate: %d:%d ('%c') is not the %s of a %d\n", line, col,
                w->text[off], key ? "key" : "value", (int)json_typeof(v));
        abort();
    }
}

static void walk(struct walk *w, const json_t *v, size_t n)
{
    if (w->budget == 0)
        return;
    w->budget--;
    locate_at(w, n, false, v);
    if (n > 0 && w->path[n - 1].key)
        locate_at(w, n, true, v);
    if (n == sizeof w->path / sizeof *w->path)
        return;
    if (json_is_object(v)) {
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)v, k, m)
        {
            w->path[n] = (struct json_path_step){k, 0};
            walk(w, m, n + 1);
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            w->path[n] = (struct json_path_step){NULL, i};
            walk(w, json_array_get(v, i), n + 1);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > EXPERIMENT_FILE_MAX)
        return 0;
    setup();
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", fuzz_put("exp.json", data, size));
    exp_path = path;

    char *text = malloc(size ? size : 1); /* exactly size bytes, for ASan */
    if (!text)
        abort();
    memcpy(text, data, size);
    size_t *starts;
    size_t nlines = line_starts(text, size, &starts);

    struct experiment x;
    char *errors = NULL;
    int rc = experiment_load(path, &x, &errors);
    if (rc < 0) {
        check_errors(errors, rc, text, size, starts, nlines);
    } else {
        if (rc != 0 || errors || !x.name || x.n == 0 || !x.w || !x.resolved)
            abort();
        for (size_t i = 0; i < x.n; i++) {
            size_t k = 0;
            while (x.w[i].argv[k])
                k++;
            if (k == 0 || !x.w[i].name)
                abort();
        }
    }
    free(errors);
    experiment_free(&x);

    json_error_t je;
    json_t *root = json_loadb(text, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (root) {
        struct walk w = {text, size, starts, nlines, {{0}}, 4000};
        walk(&w, root, 0);
        json_decref(root);
    }
    free(starts);
    free(text);
    return 0;
}
