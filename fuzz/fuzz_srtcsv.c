/*
 * libFuzzer harness for the CSV legs of srt/log (srt_log_load_gpu, srt_log_load_cpu):
 * srt-slurm's GPU power/samples.csv and CPU samples.csv, read as a stream and split in place.
 *
 * Each input is written to samples.csv and loaded
 *   - as the GPU leg twice, with the fused one-pass line reader (gpu_line) and without it
 *     (CARMA_SRTLOG_NO_FAST: every row split by csv_split and read by gpu_row): the two must
 *     give the same result, error text, warnings and series, bit for bit;
 *   - as the GPU leg under SRT_LOG_STRICT (every input of odd length also with a manifest that
 *     gives roles to node-a/node-b's GPUs): a strict load that succeeds must give the same
 *     series as the lenient one (strict refuses more, it never reads differently);
 *   - as the CPU leg, lenient and strict, with the same rule.
 * A failure's message must name the file ("samples.csv: ..." or "samples.csv:LINE: ...", LINE
 * a line of the file); a success must hold series whose times never go back, finite times and
 * powers within +-1 GW, and utilization columns whose times are in range of their device's.
 *
 * fuzz-sources: src/srt/log.c src/analysis/series.c src/core/array.c src/core/csv.c
 * fuzz-sources: src/core/err.c src/core/file.c src/core/parse.c src/core/csvstream.c
 * fuzz-sources: src/core/pathwalk.c src/core/threads.c
 * fuzz-sources: src/core/iso8601.c src/core/idmap.c src/core/strtab.c src/core/linereader.c
 * fuzz-libs: -ljansson -lpthread
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_file.h"
#include "srt/log.h"

struct text {
    char *s;
    size_t n, cap;
};

__attribute__((format(printf, 2, 3))) static void add(struct text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap - t->n;
        int k = vsnprintf(t->s ? t->s + t->n : NULL, room, fmt, ap);
        va_end(ap);
        if (k < 0)
            abort();
        if ((size_t)k < room) {
            t->n += (size_t)k;
            return;
        }
        t->cap = t->cap * 2 + (size_t)k + 256;
        if (!(t->s = realloc(t->s, t->cap)))
            abort();
    }
}

static void add_series(struct text *t, const struct srt_log_series_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        const struct srt_log_series *s = &set->v[i];
        add(t, "%s %s %lld %s %s n=%zu", s->label, s->host, s->index, s->role ? s->role : "-",
            s->sensor ? s->sensor : "-", s->n);
        for (size_t j = 0; j < s->n_roles; j++)
            add(t, " r:%s", s->roles[j]);
        for (size_t j = 0; j < s->n_other; j++)
            add(t, " o:%s", s->other_sensors[j]);
        add(t, "\n");
        for (size_t j = 0; j < s->n; j++)
            add(t, " %a %a", s->t[j], s->w[j]);
        add(t, "\n");
    }
}

static void add_util(struct text *t, const struct srt_log_util_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        const struct srt_log_util *u = &set->v[i];
        add(t, "util %s %s %zu n=%zu\n", u->label, u->column, u->series, u->n);
        for (size_t j = 0; j < u->n; j++)
            add(t, " %a %a", u->t[j], u->v[j]);
        add(t, "\n");
    }
}

/* The series of a set: sorted times, finite values; a device's or socket's power (max_w > 0)
 * within max_w. */
static void check_series(const struct srt_log_series_set *set, double max_w)
{
    for (size_t i = 0; i < set->n; i++) {
        const struct srt_log_series *s = &set->v[i];
        if (!s->label || !s->host || (s->n && (!s->t || !s->w)))
            abort();
        for (size_t j = 0; j < s->n; j++) {
            if (!isfinite(s->t[j]) || !isfinite(s->w[j]) || (max_w > 0 && fabs(s->w[j]) > max_w))
                abort();
            if (j > 0 && s->t[j] < s->t[j - 1])
                abort();
        }
    }
}

/* Utilization columns: their device in range, sorted finite values; a GPU's column (one_per_row:
 * a row gives one power sample and at most one value a column) no longer than its series. A CPU
 * socket's column has a value per row of any sensor, its series only the chosen sensor's. */
static void check_util(const struct srt_log_util_set *u, const struct srt_log_series_set *dev,
                       bool one_per_row)
{
    for (size_t i = 0; i < u->n; i++) {
        const struct srt_log_util *x = &u->v[i];
        if (x->series >= dev->n || x->n == 0 || (one_per_row && x->n > dev->v[x->series].n))
            abort();
        for (size_t j = 0; j < x->n; j++) {
            if (!isfinite(x->t[j]) || !isfinite(x->v[j]))
                abort();
            if (j > 0 && x->t[j] < x->t[j - 1])
                abort();
        }
    }
}

/* An error must name the file, and a line of it when it names one. */
static void check_error(const char *msg, const char *path, size_t nlines)
{
    size_t n = strlen(path);
    if (strncmp(msg, path, n) != 0) {
        fprintf(stderr, "error without the file: %s\n", msg);
        abort();
    }
    const char *p = msg + n;
    if (p[0] == ':' && p[1] >= '0' && p[1] <= '9') {
        char *end;
        unsigned long line = strtoul(p + 1, &end, 10);
        if (*end != ':' || line < 1 || line > nlines) {
            fprintf(stderr, "line outside the file (%zu lines): %s\n", nlines, msg);
            abort();
        }
    } else if (p[0] != ':' || p[1] != ' ') {
        fprintf(stderr, "error without ': ': %s\n", msg);
        abort();
    }
}

/* Loads one leg of path into a fresh log: *ret_all gets everything it gave as text (result,
 * message, layout, warnings, series), *ret_series the series alone (NULL: not wanted). Returns
 * whether it loaded. */
static bool load(bool gpu, bool strict, const char *path, const char *manifest, size_t nlines,
                 char **ret_all, char **ret_series)
{
    struct srt_log log;
    memset(&log, 0, sizeof log);
    log.flags = strict ? SRT_LOG_STRICT : 0;
    struct carma_err e = {0};
    int r = gpu ? srt_log_load_gpu(&log, path, manifest, &e) : srt_log_load_cpu(&log, path, &e);
    struct text all = {0}, t = {0};
    if (r < 0) {
        if (e.code != r || !e.msg[0])
            abort();
        if (r != -ENOMEM)
            check_error(e.msg, path, nlines);
        add(&all, "r=%d msg=%s\n", r, e.msg);
        if (log.gpu_devices.n || log.cpu_sockets.n || log.gpu_loaded || log.cpu_loaded)
            abort();
    } else {
        add(&all, "schema=%d layout=%s wide=%d\n", log.gpu_schema,
            log.cpu_layout ? log.cpu_layout : "-", log.cpu_wide);
        for (size_t i = 0; i < log.nwarnings; i++)
            add(&all, "warning %s\n", log.warnings[i]);
        check_series(&log.gpu_devices, 1e9);
        check_series(&log.gpu_nodes, 0);
        check_series(&log.gpu_roles, 0);
        check_series(&log.cpu_sockets, 1e9);
        check_series(&log.cpu_nodes, 1e9);
        check_util(&log.gpu_util, &log.gpu_devices, true);
        check_util(&log.cpu_util, &log.cpu_sockets, false);
        add_series(&t, &log.gpu_devices);
        add_series(&t, &log.gpu_nodes);
        add_series(&t, &log.gpu_roles);
        add_series(&t, &log.cpu_sockets);
        add_series(&t, &log.cpu_nodes);
        add_util(&t, &log.gpu_util);
        add_util(&t, &log.cpu_util);
    }
    srt_log_done(&log);
    add(&t, "%s", "");
    add(&all, "%s", t.s);
    *ret_all = all.s;
    if (ret_series)
        *ret_series = t.s;
    else
        free(t.s);
    return r == 0;
}

static void same(const char *a, const char *b, const char *what)
{
    if (strcmp(a, b) != 0) {
        fprintf(stderr, "%s differ:\n--- one ---\n%.3000s\n--- other ---\n%.3000s\n", what, a, b);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[PATH_MAX], manifest[PATH_MAX];
    if (!path[0]) {
        static const char m[] = "{\"expected_devices\": ["
                                "{\"hostname\": \"node-a\", \"gpu_index\": 0, \"assignments\": "
                                "[{\"worker_role\": \"prefill\"}]},"
                                "{\"hostname\": \"node-b\", \"gpu_index\": 1, \"assignments\": "
                                "[{\"worker_role\": \"decode\"}, {\"worker_role\": \"agg\"}]}]}\n";
        snprintf(manifest, sizeof manifest, "%s", fuzz_put("manifest.json", m, sizeof m - 1));
    }
    snprintf(path, sizeof path, "%s", fuzz_put("samples.csv", data, size));
    /* lines as csv_split counts them: \n, \r\n and a lone \r each end one */
    size_t nlines = 1;
    for (size_t i = 0; i < size; i++)
        if (data[i] == '\n' || (data[i] == '\r' && (i + 1 == size || data[i + 1] != '\n')))
            nlines++;
    const char *m = size & 1 ? manifest : NULL;
    char *fast, *slow, *fast_series, *strict, *strict_series;

    unsetenv("CARMA_SRTLOG_NO_FAST");
    bool ok = load(true, false, path, m, nlines, &fast, &fast_series);
    setenv("CARMA_SRTLOG_NO_FAST", "1", 1);
    load(true, false, path, m, nlines, &slow, NULL);
    unsetenv("CARMA_SRTLOG_NO_FAST");
    same(fast, slow, "the GPU leg's fast and split readings");
    if (load(true, true, path, m, nlines, &strict, &strict_series)) {
        if (!ok)
            abort(); /* strict refuses more, never less */
        same(fast_series, strict_series, "the GPU leg's strict and lenient series");
    }
    free(fast);
    free(slow);
    free(fast_series);
    free(strict);
    free(strict_series);

    char *lenient, *lenient_series;
    ok = load(false, false, path, NULL, nlines, &lenient, &lenient_series);
    if (load(false, true, path, NULL, nlines, &strict, &strict_series)) {
        if (!ok)
            abort();
        same(lenient_series, strict_series, "the CPU leg's strict and lenient series");
    }
    free(lenient);
    free(lenient_series);
    free(strict);
    free(strict_series);
    return 0;
}
