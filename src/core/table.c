/* table: look-ups in the embedded data/ tables (see table.h). */
#include "table.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "csv.h"
#include "parse.h"

extern const char embedded_cpu_tdp[];
extern const size_t embedded_cpu_tdp_len;
extern const char embedded_grid_intensity[];
extern const size_t embedded_grid_intensity_len;
extern const char embedded_embodied[];
extern const size_t embedded_embodied_len;

/* Case-insensitive search for pat in s as whole tokens; returns true on a match. */
static bool token_match(const char *s, const char *pat)
{
    size_t ls = strlen(s), lp = strlen(pat);
    if (lp == 0 || lp > ls)
        return false;
    for (size_t i = 0; i + lp <= ls; i++) {
        if (strncasecmp(s + i, pat, lp) != 0)
            continue;
        bool left_ok =
            i == 0 || !isalnum((unsigned char)s[i - 1]) || !isalnum((unsigned char)pat[0]);
        bool right_ok = i + lp == ls || !isalnum((unsigned char)s[i + lp]) ||
                        !isalnum((unsigned char)pat[lp - 1]);
        if (left_ok && right_ok)
            return true;
    }
    return false;
}

static int need_columns(const struct csv_row *h, const char *table, const char *const *cols,
                        int *idx, size_t n, struct carma_err *e)
{
    for (size_t i = 0; i < n; i++) {
        idx[i] = csv_column(h, cols[i]);
        if (idx[i] < 0)
            return carma_err_set(e, -EINVAL, "%s:1: missing column '%s'", table, cols[i]);
    }
    return 0;
}

int table_cpu_tdp_lookup(const char *model_name, const char *text, size_t len,
                         const char *table_name, struct cpu_tdp_match *ret, struct carma_err *e)
{
    if (!text) {
        text = embedded_cpu_tdp;
        len = embedded_cpu_tdp_len;
        table_name = "data/cpu_tdp.csv (embedded)";
    }
    struct csv_doc doc;
    int r = csv_parse(text, len, table_name, &doc, e);
    if (r < 0)
        return r;
    static const char *const cols[] = {"pattern", "tdp_w", "cores", "source"};
    int idx[4];
    if (doc.n == 0) {
        r = carma_err_set(e, -EINVAL, "%s: empty table", table_name);
        goto out;
    }
    if ((r = need_columns(&doc.rows[0], table_name, cols, idx, 4, e)) < 0)
        goto out;
    const struct csv_row *best = NULL, *fallback = NULL;
    size_t best_len = 0;
    for (size_t i = 1; i < doc.n; i++) {
        const struct csv_row *row = &doc.rows[i];
        if (row->n != doc.rows[0].n) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: %zu fields, the header has %zu", table_name,
                              row->line, row->n, doc.rows[0].n);
            goto out;
        }
        double tdp;
        if (parse_double(row->fields[idx[1]], &tdp) < 0 || tdp <= 0) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: field tdp_w: '%s' is not a positive number",
                              table_name, row->line, row->fields[idx[1]]);
            goto out;
        }
        const char *pat = row->fields[idx[0]];
        if (strcmp(pat, "*") == 0) {
            fallback = row;
            continue;
        }
        size_t pl = strlen(pat);
        if (model_name && pl > best_len && token_match(model_name, pat)) {
            best = row;
            best_len = pl;
        }
    }
    const struct csv_row *use = best ? best : fallback;
    if (!use) {
        r = carma_err_set(e, -ENOENT, "%s: no row matches '%s' and there is no '*' row", table_name,
                          model_name ? model_name : "");
        goto out;
    }
    memset(ret, 0, sizeof *ret);
    snprintf(ret->pattern, sizeof ret->pattern, "%s", use->fields[idx[0]]);
    parse_double(use->fields[idx[1]], &ret->tdp_w);
    uint64_t cores = 0;
    if (parse_u64(use->fields[idx[2]], &cores) == 0)
        ret->cores = (int)cores;
    snprintf(ret->source, sizeof ret->source, "%s", use->fields[idx[3]]);
    ret->fallback = !best;
    r = 0;
out:
    csv_doc_free(&doc);
    return r;
}

int table_grid_lookup(const char *region, struct grid_intensity *ret, struct carma_err *e)
{
    const char *table_name = "data/grid_intensity.csv (embedded)";
    struct csv_doc doc;
    int r = csv_parse(embedded_grid_intensity, embedded_grid_intensity_len, table_name, &doc, e);
    if (r < 0)
        return r;
    static const char *const cols[] = {"region", "name", "g_co2e_per_kwh", "year", "source"};
    int idx[5];
    if (doc.n == 0 || (r = need_columns(&doc.rows[0], table_name, cols, idx, 5, e)) < 0) {
        if (r == 0)
            r = carma_err_set(e, -EINVAL, "%s: empty table", table_name);
        goto out;
    }
    r = carma_err_set(e, -ENOENT,
                      "unknown region '%s': use an ISO 3166 alpha-3 code from "
                      "data/grid_intensity.csv (e.g. USA, FRA, DEU) or WORLD, or give "
                      "--intensity G_PER_KWH",
                      region);
    for (size_t i = 1; i < doc.n; i++) {
        const struct csv_row *row = &doc.rows[i];
        if (row->n != doc.rows[0].n || strcasecmp(row->fields[idx[0]], region) != 0)
            continue;
        memset(ret, 0, sizeof *ret);
        snprintf(ret->region, sizeof ret->region, "%s", row->fields[idx[0]]);
        snprintf(ret->name, sizeof ret->name, "%s", row->fields[idx[1]]);
        if (parse_double(row->fields[idx[2]], &ret->g_per_kwh) < 0) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: field g_co2e_per_kwh is not a number",
                              table_name, row->line);
            goto out;
        }
        int64_t y = 0;
        parse_i64(row->fields[idx[3]], &y);
        ret->year = (int)y;
        snprintf(ret->source, sizeof ret->source, "%s", row->fields[idx[4]]);
        carma_err_clear(e);
        r = 0;
        break;
    }
out:
    csv_doc_free(&doc);
    return r;
}

/* True for the model of a component's generic row. */
static bool embodied_generic(const char *model)
{
    return strcasecmp(model, "default") == 0 || strcasecmp(model, "per_gb") == 0;
}

int table_embodied_lookup(const char *component, const char *model, struct embodied_fact *ret,
                          struct carma_err *e)
{
    const char *table_name = "data/embodied.csv (embedded)";
    struct csv_doc doc;
    int r = csv_parse(embedded_embodied, embedded_embodied_len, table_name, &doc, e);
    if (r < 0)
        return r;
    static const char *const cols[] = {"component",      "model", "kg_co2e",
                                       "lifetime_years", "scope", "source"};
    int idx[6];
    if (doc.n == 0 || (r = need_columns(&doc.rows[0], table_name, cols, idx, 6, e)) < 0) {
        if (r == 0)
            r = carma_err_set(e, -EINVAL, "%s: empty table", table_name);
        goto out;
    }
    if (!component)
        component = "";
    bool want_generic = !model || !model[0] || strcasecmp(model, "default") == 0;
    const struct csv_row *exact = NULL, *generic = NULL;
    char components[256] = "";
    size_t clen = 0;
    for (size_t i = 1; i < doc.n; i++) {
        const struct csv_row *row = &doc.rows[i];
        if (row->n != doc.rows[0].n) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: %zu fields, the header has %zu", table_name,
                              row->line, row->n, doc.rows[0].n);
            goto out;
        }
        double kg, years;
        if (parse_double(row->fields[idx[2]], &kg) < 0 || kg < 0) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: field kg_co2e: '%s' is not a number >= 0",
                              table_name, row->line, row->fields[idx[2]]);
            goto out;
        }
        if (parse_double(row->fields[idx[3]], &years) < 0 || years <= 0) {
            r = carma_err_set(e, -EINVAL,
                              "%s:%zu: field lifetime_years: '%s' is not a positive number",
                              table_name, row->line, row->fields[idx[3]]);
            goto out;
        }
        const char *comp = row->fields[idx[0]], *mod = row->fields[idx[1]];
        /* the list of components for the error message, each once */
        size_t cl = strlen(comp);
        bool seen = false;
        for (const char *p = components; (p = strstr(p, comp)) != NULL; p += cl)
            if ((p == components || p[-1] == ' ') && (p[cl] == ',' || p[cl] == '\0'))
                seen = true;
        if (!seen && clen + cl + 3 < sizeof components)
            clen += (size_t)snprintf(components + clen, sizeof components - clen, "%s%s",
                                     clen ? ", " : "", comp);
        if (strcasecmp(comp, component) != 0)
            continue;
        if (!want_generic && !exact && strcasecmp(mod, model) == 0)
            exact = row;
        if (!generic && embodied_generic(mod))
            generic = row;
    }
    const struct csv_row *use = exact ? exact : generic;
    if (!use) {
        r = carma_err_set(e, -ENOENT,
                          "unknown embodied-carbon component '%s': data/embodied.csv has %s; "
                          "give the experiment an override for it",
                          component, components);
        goto out;
    }
    memset(ret, 0, sizeof *ret);
    snprintf(ret->component, sizeof ret->component, "%s", use->fields[idx[0]]);
    snprintf(ret->model, sizeof ret->model, "%s", use->fields[idx[1]]);
    parse_double(use->fields[idx[2]], &ret->kg_co2e);
    parse_double(use->fields[idx[3]], &ret->lifetime_years);
    snprintf(ret->scope, sizeof ret->scope, "%s", use->fields[idx[4]]);
    snprintf(ret->source, sizeof ret->source, "%s", use->fields[idx[5]]);
    ret->fallback = !exact && !want_generic;
    ret->per_gb = strcasecmp(ret->scope, "per GB") == 0;
    carma_err_clear(e);
    r = 0;
out:
    csv_doc_free(&doc);
    return r;
}
