/*
 * libFuzzer harness for analysis/carbon's intensity file reader (carbon_series_load): a CSV of
 * start,end,g_per_kwh rows (Unix seconds or ISO 8601 with a UTC offset) that an experiment's
 * carbon.intensity_file or --intensity-file names.
 *
 * Each input is written to intensity.csv and loaded. A failure must name the file ("FILE:LINE:
 * ..." with LINE a line of the file, or "FILE: ..."); a success must give at least one
 * interval, sorted, not overlapping, each with start < end, finite times and a finite
 * g_per_kwh >= 0. Then the look-ups must hold to that: carbon_series_at at an interval's
 * middle is its intensity, the time-weighted mean and the intensity charged over any span
 * (carbon_series_energy_g for 3.6 MJ, PUE 1: grams = the span's mean g/kWh) lie between the
 * least and greatest intensity, and a span inside one interval is covered.
 *
 * fuzz-sources: src/analysis/carbon.c src/core/csv.c src/core/err.c src/core/file.c
 * fuzz-sources: src/core/parse.c src/core/table.c build-fuzz/embedded_data.c
 * fuzz-sources: src/core/iso8601.c
 * fuzz-libs: -ljansson
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/carbon.h"
#include "fuzz_file.h"

/* lo <= x <= hi, with room for the rounding of a weighted sum */
static bool between(double x, double lo, double hi)
{
    double slack = 1e-9 * fmax(fabs(lo), fabs(hi)) + 1e-300;
    return x >= lo - slack && x <= hi + slack;
}

static void check_error(const char *msg, const char *path, size_t nlines)
{
    size_t n = strlen(path);
    if (strncmp(msg, path, n) != 0)
        abort();
    const char *p = msg + n;
    if (p[0] == ':' && p[1] >= '0' && p[1] <= '9') {
        char *end;
        unsigned long line = strtoul(p + 1, &end, 10);
        if (*end != ':' || line < 1 || line > nlines) {
            fprintf(stderr, "a line outside the file (%zu lines): %s\n", nlines, msg);
            abort();
        }
    } else if (p[0] != ':' || p[1] != ' ') {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", fuzz_put("intensity.csv", data, size));
    size_t nlines = 1;
    for (size_t i = 0; i < size; i++)
        nlines += data[i] == '\n' || (data[i] == '\r' && (i + 1 == size || data[i + 1] != '\n'));

    struct carbon_series s = {0};
    struct carma_err e = {0};
    int r = carbon_series_load(path, &s, &e);
    if (r < 0) {
        if (e.code != r || !e.msg[0] || s.v || s.n)
            abort();
        if (r != -ENOMEM)
            check_error(e.msg, path, nlines);
        return 0;
    }
    if (r != 0 || s.n == 0 || !s.v)
        abort();
    double gmin = INFINITY, gmax = -INFINITY;
    for (size_t i = 0; i < s.n; i++) {
        const struct carbon_interval *iv = &s.v[i];
        if (!isfinite(iv->start_s) || !isfinite(iv->end_s) || !(iv->start_s < iv->end_s) ||
            !isfinite(iv->g_per_kwh) || iv->g_per_kwh < 0)
            abort();
        if (i > 0 && iv->start_s < s.v[i - 1].end_s)
            abort();
        gmin = fmin(gmin, iv->g_per_kwh);
        gmax = fmax(gmax, iv->g_per_kwh);
    }
    for (size_t i = 0; i < s.n && i < 64; i++) {
        const struct carbon_interval *iv = &s.v[i];
        double mid = iv->start_s + (iv->end_s - iv->start_s) / 2;
        if (mid > iv->start_s && mid < iv->end_s) {
            if (carbon_series_at(&s, mid) != iv->g_per_kwh)
                abort();
            int covered = 0;
            double g = carbon_series_energy_g(&s, iv->start_s, mid, 3.6e6, 1.0, &covered);
            if (!covered || !between(g, iv->g_per_kwh, iv->g_per_kwh))
                abort();
        }
    }
    double mean = carbon_series_mean_g_per_kwh(&s);
    if (isfinite(s.v[s.n - 1].end_s - s.v[0].start_s) && !between(mean, gmin, gmax)) {
        fprintf(stderr, "mean %.17g outside [%.17g, %.17g]\n", mean, gmin, gmax);
        abort();
    }
    /* spans from the input's own times: before, across and after the series */
    double t0 = s.v[0].start_s, t1 = s.v[s.n - 1].end_s;
    const double spans[][2] = {{t0 - 10, t1 + 10}, {t0, t1}, {t0 - 5, t0}, {t1, t1 + 5}};
    for (size_t k = 0; k < 4; k++) {
        if (!isfinite(spans[k][0]) || !isfinite(spans[k][1]) || !(spans[k][1] > spans[k][0]) ||
            !isfinite(spans[k][1] - spans[k][0]))
            continue;
        double g = carbon_series_energy_g(&s, spans[k][0], spans[k][1], 3.6e6, 1.0, NULL);
        if (!between(g, gmin, gmax)) {
            fprintf(stderr, "span %zu: %.17g g outside [%.17g, %.17g]\n", k, g, gmin, gmax);
            abort();
        }
    }
    carbon_series_free(&s);
    return 0;
}
