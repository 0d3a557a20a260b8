/* carbon: operational and embodied CO2e, intensity time series (see carbon.h). */
#include "analysis/carbon.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/file.h"
#include "core/csv.h"
#include "core/iso8601.h"
#include "core/parse.h"

#define SECONDS_PER_YEAR (365.25 * 86400.0)

/* ---- intensity time series ---- */

/* Reads the whole file at path (at most CARBON_SERIES_MAX_BYTES) into a new buffer. */
static int read_whole(const char *path, char **ret, size_t *ret_len, struct carma_err *e)
{
    int r = file_read_all(path, CARBON_SERIES_MAX_BYTES, ret, ret_len);
    switch (r) {
    case 0:
        return 0;
    case -EFBIG:
        return carma_err_set(e, r, "%s: larger than %u MiB", path, CARBON_SERIES_MAX_BYTES >> 20);
    case -ENOMEM:
        return carma_err_set(e, r, "%s: out of memory", path);
    case -ENOENT:
        return carma_err_set(e, r, "%s: cannot open the intensity file: %s", path, strerror(-r));
    case -ESPIPE:
        return file_input_err(e, path, r);
    default:
        return carma_err_set(e, -EACCES, "%s: cannot open the intensity file: %s", path,
                             strerror(-r));
    }
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A time field: Unix seconds or ISO 8601 (four digits and a '-' start one). */
static int parse_time(const char *field, double *ret, const char **why)
{
    const char *p = field;
    while (*p == ' ' || *p == '\t')
        p++;
    if (is_digit(p[0]) && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) && p[4] == '-') {
        char buf[64];
        size_t n = strlen(p);
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n >= sizeof buf) {
            *why = "is not a time (Unix seconds or ISO 8601 with a UTC offset)";
            return -EINVAL;
        }
        memcpy(buf, p, n);
        buf[n] = '\0';
        return iso8601_parse_aware(buf, ret, why);
    }
    if (parse_double(field, ret) < 0) {
        *why = "is not a time (Unix seconds or ISO 8601 with a UTC offset)";
        return -EINVAL;
    }
    return 0;
}

/* The first 64 bytes of a cell for a message, its control characters (a quoted cell may hold a
 * line end) written \u00XX, so that the message stays one line. */
#define CELL_SHOWN 64
static const char *cell(const char *f, char buf[6 * CELL_SHOWN + 1])
{
    size_t k = 0;
    for (size_t i = 0; f[i] && i < CELL_SHOWN; i++) {
        unsigned char c = (unsigned char)f[i];
        if (c < 0x20 || c == 0x7F)
            k += (size_t)snprintf(buf + k, 7, "\\u%04x", c);
        else
            buf[k++] = (char)c;
    }
    buf[k] = '\0';
    return buf;
}

int carbon_series_load(const char *path, struct carbon_series *ret, struct carma_err *e)
{
    char *text = NULL;
    size_t len = 0;
    struct csv_doc doc = {0};
    struct carbon_interval *v = NULL;
    int r = read_whole(path, &text, &len, e);
    if (r < 0)
        return r;
    if ((r = csv_parse(text, len, path, &doc, e)) < 0)
        goto out;
    if (doc.n == 0) {
        r = carma_err_set(e, -EINVAL, "%s:1: header: missing (want start,end,g_per_kwh)", path);
        goto out;
    }
    static const char *const cols[] = {"start", "end", "g_per_kwh"};
    int idx[3];
    for (size_t c = 0; c < 3; c++) {
        idx[c] = csv_column(&doc.rows[0], cols[c]);
        if (idx[c] < 0) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: %s: missing column (want start,end,g_per_kwh)",
                              path, doc.rows[0].line, cols[c]);
            goto out;
        }
    }
    if (doc.n == 1) {
        r = carma_err_set(e, -EINVAL, "%s:%zu: start: no intervals after the header", path,
                          doc.rows[0].line);
        goto out;
    }
    v = calloc(doc.n - 1, sizeof *v);
    if (!v) {
        r = carma_err_set(e, -ENOMEM, "%s: out of memory", path);
        goto out;
    }
    size_t n = 0;
    size_t prev_line = 0;
    for (size_t i = 1; i < doc.n; i++) {
        const struct csv_row *row = &doc.rows[i];
        if (row->n != doc.rows[0].n) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: row: %zu fields, the header has %zu", path,
                              row->line, row->n, doc.rows[0].n);
            goto out;
        }
        struct carbon_interval iv;
        const char *why;
        char qa[6 * CELL_SHOWN + 1], qb[6 * CELL_SHOWN + 1];
        for (size_t c = 0; c < 2; c++) {
            const char *f = row->fields[idx[c]];
            if (parse_time(f, c == 0 ? &iv.start_s : &iv.end_s, &why) < 0) {
                r = carma_err_set(e, -EINVAL, "%s:%zu: %s: '%s' %s", path, row->line, cols[c],
                                  cell(f, qa), why);
                goto out;
            }
        }
        const char *g = row->fields[idx[2]];
        if (parse_double(g, &iv.g_per_kwh) < 0) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: g_per_kwh: '%s' is not a number", path,
                              row->line, cell(g, qa));
            goto out;
        }
        if (iv.g_per_kwh < 0) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: g_per_kwh: '%s' is negative", path, row->line,
                              cell(g, qa));
            goto out;
        }
        if (!(iv.end_s > iv.start_s)) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: end: '%s' is not after start '%s'", path,
                              row->line, cell(row->fields[idx[1]], qa),
                              cell(row->fields[idx[0]], qb));
            goto out;
        }
        if (n > 0 && iv.start_s < v[n - 1].start_s) {
            r = carma_err_set(e, -EINVAL,
                              "%s:%zu: start: '%s' is before the start of line %zu: rows must "
                              "be sorted by time",
                              path, row->line, cell(row->fields[idx[0]], qa), prev_line);
            goto out;
        }
        if (n > 0 && iv.start_s < v[n - 1].end_s) {
            r = carma_err_set(e, -EINVAL,
                              "%s:%zu: start: '%s' overlaps line %zu, which ends at %.17g", path,
                              row->line, cell(row->fields[idx[0]], qa), prev_line, v[n - 1].end_s);
            goto out;
        }
        v[n++] = iv;
        prev_line = row->line;
    }
    ret->v = v;
    ret->n = n;
    v = NULL;
    r = 0;
out:
    free(v);
    csv_doc_free(&doc);
    free(text);
    return r;
}

void carbon_series_free(struct carbon_series *s)
{
    if (!s)
        return;
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* The index of the last interval starting at or before t, or -1 when t is before the first. */
static ptrdiff_t last_start_at_or_before(const struct carbon_series *s, double t)
{
    size_t lo = 0, hi = s->n; /* answer + 1 is in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid].start_s <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

double carbon_series_at(const struct carbon_series *s, double t_unix)
{
    if (!s || s->n == 0 || !isfinite(t_unix))
        return NAN;
    ptrdiff_t i = last_start_at_or_before(s, t_unix);
    if (i < 0)
        return s->v[0].g_per_kwh;
    const struct carbon_interval *a = &s->v[i];
    if (t_unix < a->end_s || (size_t)i + 1 == s->n)
        return a->g_per_kwh;
    const struct carbon_interval *b = &s->v[i + 1];
    return t_unix - a->end_s < b->start_s - t_unix ? a->g_per_kwh : b->g_per_kwh;
}

/* Length of the overlap of [a0, a1] and [b0, b1] (0 when they do not meet). */
static double overlap(double a0, double a1, double b0, double b1)
{
    double lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

double carbon_series_energy_g(const struct carbon_series *s, double t0_unix, double t1_unix,
                              double energy_j, double pue, int *ret_covered)
{
    if (ret_covered)
        *ret_covered = 0;
    if (!s || s->n == 0 || !isfinite(t0_unix) || !isfinite(t1_unix) || t1_unix < t0_unix)
        return NAN;
    if (t1_unix == t0_unix) {
        ptrdiff_t i = last_start_at_or_before(s, t0_unix);
        if (ret_covered)
            *ret_covered = i >= 0 && t0_unix < s->v[i].end_s;
        return carbon_operational_g(energy_j, pue, carbon_series_at(s, t0_unix));
    }
    /* Each interval i is charged for its own span and, outside the series, for the part of
     * the time line nearest to it: [mid(i-1, i), mid(i, i+1)), open-ended at both ends. */
    double span = t1_unix - t0_unix, weighted = 0;
    bool uncovered = false;
    /* intervals before the last one starting at or before t0 end their share before t0 */
    ptrdiff_t first = last_start_at_or_before(s, t0_unix);
    if (first < 0)
        first = 0;
    for (size_t i = (size_t)first; i < s->n; i++) {
        const struct carbon_interval *iv = &s->v[i];
        double lo = i == 0 ? -INFINITY : (s->v[i - 1].end_s + iv->start_s) / 2;
        double hi = i + 1 == s->n ? INFINITY : (iv->end_s + s->v[i + 1].start_s) / 2;
        if (lo >= t1_unix)
            break;
        double inside = overlap(t0_unix, t1_unix, iv->start_s, iv->end_s);
        double near =
            overlap(t0_unix, t1_unix, lo, iv->start_s) + overlap(t0_unix, t1_unix, iv->end_s, hi);
        if (near > 0)
            uncovered = true;
        weighted += (inside + near) / span * iv->g_per_kwh;
    }
    if (ret_covered)
        *ret_covered = !uncovered;
    return carbon_operational_g(energy_j, pue, weighted);
}

double carbon_series_mean_g_per_kwh(const struct carbon_series *s)
{
    if (!s || s->n == 0)
        return NAN;
    double sum = 0, dur = 0;
    for (size_t i = 0; i < s->n; i++) {
        double d = s->v[i].end_s - s->v[i].start_s;
        sum += d * s->v[i].g_per_kwh;
        dur += d;
    }
    return sum / dur;
}

/* ---- intensity: where it comes from ---- */

int carbon_intensity_resolve_series(const char *series_path, const char *region, double g_per_kwh,
                                    struct carbon_intensity *ret, struct carma_err *e)
{
    if (series_path && series_path[0]) {
        struct carbon_series s;
        int r = carbon_series_load(series_path, &s, e);
        if (r < 0)
            return r;
        char a[32], b[32];
        iso8601_format_utc(s.v[0].start_s, a, sizeof a);
        iso8601_format_utc(s.v[s.n - 1].end_s, b, sizeof b);
        memset(ret, 0, sizeof *ret);
        ret->kind = CARBON_CI_SERIES;
        ret->g_per_kwh = carbon_series_mean_g_per_kwh(&s);
        snprintf(ret->source, sizeof ret->source, "time series %s (%zu intervals, %s to %s)",
                 series_path, s.n, a, b);
        ret->series = s;
        return 0;
    }
    if (g_per_kwh > 0) {
        memset(ret, 0, sizeof *ret);
        ret->kind = CARBON_CI_CONSTANT;
        ret->g_per_kwh = g_per_kwh;
        snprintf(ret->source, sizeof ret->source, "given on the command line");
        return 0;
    }
    struct grid_intensity g;
    int r = table_grid_lookup(region ? region : GRID_WORLD_REGION, &g, e);
    if (r < 0)
        return r;
    memset(ret, 0, sizeof *ret);
    ret->kind = CARBON_CI_REGION;
    ret->g_per_kwh = g.g_per_kwh;
    snprintf(ret->region, sizeof ret->region, "%s", g.region);
    snprintf(ret->source, sizeof ret->source, "%s (%s): %s, %d", g.region, g.name, g.source,
             g.year);
    return 0;
}

int carbon_intensity_resolve(const char *region, double g_per_kwh, struct carbon_intensity *ret,
                             struct carma_err *e)
{
    return carbon_intensity_resolve_series(NULL, region, g_per_kwh, ret, e);
}

void carbon_intensity_done(struct carbon_intensity *ci)
{
    if (ci)
        carbon_series_free(&ci->series);
}

double carbon_intensity_energy_g(const struct carbon_intensity *ci, double t0_unix, double t1_unix,
                                 double energy_j, double pue, int *ret_covered)
{
    if (ci->kind == CARBON_CI_SERIES && ci->series.n > 0)
        return carbon_series_energy_g(&ci->series, t0_unix, t1_unix, energy_j, pue, ret_covered);
    if (ret_covered)
        *ret_covered = 1;
    return carbon_operational_g(energy_j, pue, ci->g_per_kwh);
}

double carbon_operational_g(double energy_j, double pue, double g_per_kwh)
{
    return energy_j / 3.6e6 * pue * g_per_kwh;
}

/* ---- embodied ---- */

double carbon_embodied_g(double kg_co2e, double lifetime_years, double seconds, double share)
{
    if (!isfinite(kg_co2e) || !isfinite(lifetime_years) || !isfinite(seconds) || !isfinite(share) ||
        kg_co2e < 0 || lifetime_years <= 0 || seconds < 0 || share < 0)
        return NAN;
    return kg_co2e * 1000.0 / (lifetime_years * SECONDS_PER_YEAR) * seconds * share;
}

static const struct carbon_embodied_override *
find_override(const struct carbon_embodied_override *ov, size_t n, const char *component,
              const char *model)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(ov[i].component, component) == 0 && strcasecmp(ov[i].model, model) == 0)
            return &ov[i];
    /* an override without a model replaces the component's generic row (experiment.h) */
    bool generic = strcasecmp(model, "default") == 0 || strcasecmp(model, "per_gb") == 0;
    for (size_t i = 0; i < n && generic; i++)
        if (strcasecmp(ov[i].component, component) == 0 && !ov[i].model[0])
            return &ov[i];
    return NULL;
}

/*
 * Fills ret from override o; the scope comes from the table's row for the same model (row, or
 * NULL), per_gb from the component's rows (per_gb).
 */
static int use_override(const struct carbon_embodied_override *o, const struct embodied_fact *row,
                        bool per_gb, bool fallback, struct embodied_fact *ret, struct carma_err *e)
{
    if (!isfinite(o->kg_co2e) || o->kg_co2e < 0)
        return carma_err_set(e, -EINVAL,
                             "embodied override %s/%s: kg_co2e %.17g is not a number >= 0",
                             o->component, o->model, o->kg_co2e);
    if (!isfinite(o->lifetime_years) || o->lifetime_years <= 0)
        return carma_err_set(e, -EINVAL,
                             "embodied override %s/%s: lifetime_years %.17g is not positive",
                             o->component, o->model, o->lifetime_years);
    memset(ret, 0, sizeof *ret);
    snprintf(ret->component, sizeof ret->component, "%s", o->component);
    snprintf(ret->model, sizeof ret->model, "%s", o->model);
    ret->kg_co2e = o->kg_co2e;
    ret->lifetime_years = o->lifetime_years;
    if (row)
        snprintf(ret->scope, sizeof ret->scope, "%s", row->scope);
    ret->per_gb = per_gb;
    snprintf(ret->source, sizeof ret->source, "experiment override");
    ret->fallback = fallback;
    return 0;
}

int carbon_embodied_resolve(const char *component, const char *model,
                            const struct carbon_embodied_override *overrides, size_t n,
                            struct embodied_fact *ret, struct carma_err *e)
{
    if (!component)
        component = "";
    const char *want = model && model[0] ? model : "default";
    struct embodied_fact t;
    int r = table_embodied_lookup(component, model, &t, e);
    if (r < 0 && r != -ENOENT)
        return r;
    bool in_table = r == 0;
    const struct carbon_embodied_override *o = find_override(overrides, n, component, want);
    if (o) {
        bool same_row = in_table && !t.fallback;
        r = use_override(o, same_row ? &t : NULL, in_table && t.per_gb, false, ret, e);
        if (r == 0)
            carma_err_clear(e);
        return r;
    }
    if (!in_table)
        return r; /* e names the components */
    o = find_override(overrides, n, t.component, t.model);
    if (o)
        return use_override(o, &t, t.per_gb, t.fallback, ret, e);
    *ret = t;
    return 0;
}

bool carbon_embodied_declared(const struct embodied_fact *f)
{
    return strcmp(f->source, "experiment override") == 0;
}

size_t carbon_embodied_job(const struct carbon_embodied_use *u, struct carbon_embodied_part *out,
                           size_t cap, double *ret_g)
{
    double dur = u->seconds, g = 0;
    size_t n = 0;
    struct embodied_fact f;
    struct carma_err e = {0};
    /* CPUs: the allocation's share of the CPUs, else the time share of the job's CPU time */
    double share =
        u->n_cpus ? (double)u->n_cpus / u->ncpu : (dur > 0 ? u->cpu_s / (u->ncpu * dur) : 0);
    if (share > 1)
        share = 1;
    if (carbon_embodied_resolve("cpu", "default", u->overrides, u->n_overrides, &f, &e) == 0 &&
        n < cap) {
        double gc = u->sockets * carbon_embodied_g(f.kg_co2e, f.lifetime_years, dur, share);
        g += gc;
        out[n++] = (struct carbon_embodied_part){
            .gpu = -1, .units = u->sockets, .share = share, .g_co2e = gc, .fact = f};
    }
    /* GPUs: those the workload names, shared with the workloads naming them */
    for (size_t k = 0; k < u->ngpus; k++) {
        int sharing = u->gpu_users[k];
        double gs = sharing ? 1.0 / sharing : 1.0;
        if (carbon_embodied_resolve("gpu", "default", u->overrides, u->n_overrides, &f, &e) == 0 &&
            (u->gpu_measured || carbon_embodied_declared(&f)) && n < cap) {
            double gg = carbon_embodied_g(f.kg_co2e, f.lifetime_years, dur, gs);
            g += gg;
            out[n++] = (struct carbon_embodied_part){.gpu = u->gpus[k],
                                                     .share = gs,
                                                     .g_co2e = gg,
                                                     .declared = !u->gpu_measured,
                                                     .fact = f};
        }
    }
    *ret_g = g;
    return n;
}
