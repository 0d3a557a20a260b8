/*
 * libFuzzer harness for the model file reader (modelfile_load, sources/modelfile.c): the JSON
 * that `carma model fit` writes and `carma model predict` / `--model-file` read.
 *
 * Each input is written to model.json and loaded. A failure must name the file ("model.json:
 * ..."); a success must give kinds that are known and distinct, with known, distinct features
 * (at most FX_N) and NUL-terminated text fields. A model that loads is then saved
 * (modelfile_save) and loaded again: the second model must give the same JSON
 * (modelfile_to_json, but for created_unix) and the same delta for a feature vector, bit for bit.
 *
 * fuzz-sources: src/sources/modelfile.c src/core/channel_kind.c src/core/err.c src/core/file.c
 * fuzz-sources: src/core/iso8601.c src/core/jsonutil.c
 * fuzz-libs: -ljansson
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_file.h"
#include "sources/modelfile.h"

static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static void check_model(const struct power_model *m)
{
    if (m->nkinds > CHANNEL_KINDS || m->nruns > PM_RUNS_MAX)
        abort();
    for (size_t i = 0; i < m->nkinds; i++) {
        const struct pm_kind *k = &m->k[i];
        if (k->nfeat > FX_N || modelfile_find_kind(m, k->kind) != k)
            abort(); /* a kind twice: the first would shadow the second */
        (void)strlen(k->channels);
        (void)strlen(k->training_method);
        (void)strlen(k->cv_method);
        (void)strlen(k->cv_note);
        for (size_t f = 0; f < k->nfeat; f++) {
            if (k->feat[f] < 0 || k->feat[f] >= FX_N || !modelfile_feature_name(k->feat[f]))
                abort();
            for (size_t g = 0; g < f; g++)
                if (k->feat[g] == k->feat[f])
                    abort();
        }
    }
    for (size_t i = 0; i < m->nruns; i++)
        (void)strlen(m->runs[i]);
}

static json_t *model_json(const struct power_model *m)
{
    json_t *j = modelfile_to_json(m);
    if (!j)
        abort();
    json_object_del(j, "created_unix");
    return j;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[PATH_MAX], again[PATH_MAX];
    snprintf(path, sizeof path, "%s", fuzz_put("model.json", data, size));
    if (!again[0])
        snprintf(again, sizeof again, "%s/again.json", fuzz_dir());
    static struct power_model m, m2;
    struct carma_err e = {0};
    int r = modelfile_load(path, &m, &e);
    if (r < 0) {
        if (e.code != r || !e.msg[0])
            abort();
        if (r != -ENOMEM &&
            (strncmp(e.msg, path, strlen(path)) != 0 || e.msg[strlen(path)] != ':')) {
            fprintf(stderr, "an error without the file: %s\n", e.msg);
            abort();
        }
        return 0;
    }
    if (r != 0)
        abort();
    check_model(&m);
    if (modelfile_save(&m, again, &e) != 0) {
        fprintf(stderr, "modelfile_save: %s\n", e.msg);
        abort();
    }
    if (modelfile_load(again, &m2, &e) != 0) {
        fprintf(stderr, "the saved model does not load: %s\n", e.msg);
        abort();
    }
    json_t *a = model_json(&m), *b = model_json(&m2);
    if (!json_equal(a, b)) {
        char *sa = json_dumps(a, JSON_SORT_KEYS), *sb = json_dumps(b, JSON_SORT_KEYS);
        fprintf(stderr, "saved and loaded again, the model differs:\n%s\n%s\n", sa, sb);
        abort();
    }
    json_decref(a);
    json_decref(b);
    double x[FX_N];
    for (size_t f = 0; f < FX_N; f++)
        x[f] = 0.25 + (double)f;
    if (m.nkinds != m2.nkinds)
        abort();
    for (size_t i = 0; i < m.nkinds; i++) {
        const struct pm_kind *k2 = modelfile_find_kind(&m2, m.k[i].kind);
        if (!k2 || !same_bits(modelfile_delta(&m.k[i], x), modelfile_delta(k2, x)) ||
            !same_bits(m.k[i].baseline_w, k2->baseline_w))
            abort();
    }
    return 0;
}
