/*
 * collectreport_window: the windows of a collect directory's report (see
 * collectreport_window.h): --window NAME=START,END, --windows files (CSV or JSON), the benchmark
 * windows of an srt-slurm log directory around it, and the list a report covers.
 */
#include "report/collectreport_window.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/csv.h"
#include "core/fastnum.h"
#include "core/file.h"
#include "core/iso8601.h"
#include "rundir/rundir.h"
#include "srt/log.h"

#define WINDOWS_FILE_MAX (16u << 20)

static int time_parse(const char *s, double *ret, const char **why)
{
    double v;
    if (fastnum_double(s, &v) == 0 && isfinite(v)) {
        *ret = v;
        return 0;
    }
    if (iso8601_parse_aware(s, &v, why) == 0) {
        *ret = v;
        return 0;
    }
    if (!strchr(s, '-') && !strchr(s, ':'))
        *why = "is not Unix seconds or an ISO 8601 time with a UTC offset";
    return -EINVAL;
}

int collectreport_window_parse(const char *spec, struct collectreport_window *ret,
                               struct carma_err *e)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        return carma_err_set(e, -EINVAL, "--window '%s': want NAME=START,END", spec);
    size_t nl = (size_t)(eq - spec);
    if (nl >= COLLECTREPORT_NAME_MAX)
        return carma_err_set(e, -EINVAL, "--window '%s': the name is longer than %d bytes", spec,
                             COLLECTREPORT_NAME_MAX - 1);
    const char *comma = strchr(eq + 1, ',');
    if (!comma)
        return carma_err_set(e, -EINVAL, "--window '%s': want NAME=START,END", spec);
    char a[128], b[128];
    size_t al = (size_t)(comma - eq - 1);
    if (al >= sizeof a || strlen(comma + 1) >= sizeof b)
        return carma_err_set(e, -EINVAL, "--window '%s': a time is too long", spec);
    memcpy(a, eq + 1, al);
    a[al] = '\0';
    snprintf(b, sizeof b, "%s", comma + 1);
    struct collectreport_window w;
    memset(&w, 0, sizeof w);
    memcpy(w.name, spec, nl);
    w.name[nl] = '\0';
    w.tokens = w.requests = NAN;
    const char *why = "is not a time";
    if (time_parse(a, &w.start, &why) < 0)
        return carma_err_set(e, -EINVAL, "--window '%s': start '%s' %s", spec, a, why);
    why = "is not a time";
    if (time_parse(b, &w.end, &why) < 0)
        return carma_err_set(e, -EINVAL, "--window '%s': end '%s' %s", spec, b, why);
    if (!(w.end > w.start))
        return carma_err_set(e, -EINVAL, "--window '%s': the end is not after the start", spec);
    *ret = w;
    return 0;
}

/* A window of a windows file (name, tokens, requests unset) with its name checked: name NULL is
 * a JSON window without a string "name". */
static int window_named(const char *path, size_t line, const char *name,
                        struct collectreport_window *w, struct carma_err *e)
{
    memset(w, 0, sizeof *w);
    w->tokens = w->requests = NAN;
    if (!name || !name[0] || strlen(name) >= COLLECTREPORT_NAME_MAX)
        return carma_err_set(e, -EINVAL, "%s:%zu: name: %s", path, line,
                             !name      ? "missing or not a string"
                             : !name[0] ? "empty"
                                        : "too long");
    snprintf(w->name, sizeof w->name, "%s", name);
    return 0;
}

/* Appends w, read at path:line, to *v (n of them, cap room) once its end is after its start. */
static int window_add(const char *path, size_t line, const struct collectreport_window *w,
                      struct collectreport_window **v, size_t *n, size_t *cap, struct carma_err *e)
{
    if (!(w->end > w->start))
        return carma_err_set(e, -EINVAL, "%s:%zu: end: not after start", path, line);
    if (array_grow(v, cap, *n + 1, sizeof **v) < 0)
        return carma_err_set(e, -ENOMEM, "out of memory");
    (*v)[(*n)++] = *w;
    return 0;
}

/* The line where the i-th element of the top-level JSON array begins. */
static size_t json_elem_line(const char *s, size_t len, size_t want)
{
    size_t line = 1, idx = 0;
    int depth = 0;
    bool str = false, esc = false, seen = false;
    for (size_t k = 0; k < len; k++) {
        char c = s[k];
        if (c == '\n')
            line++;
        if (str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                str = false;
            continue;
        }
        if (depth == 1 && !seen && c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ',' &&
            c != ']') {
            if (idx == want)
                return line;
            seen = true;
        }
        if (c == '"')
            str = true;
        else if (c == '[' || c == '{')
            depth++;
        else if (c == ']' || c == '}')
            depth--;
        else if (c == ',' && depth == 1) {
            idx++;
            seen = false;
        }
    }
    return line;
}

static int windows_json(const char *path, const char *text, size_t len,
                        struct collectreport_window **v, size_t *n, size_t *cap,
                        struct carma_err *e)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return carma_err_set(e, -EINVAL, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    int r = 0, count = 0;
    if (!json_is_array(root)) {
        r = carma_err_set(e, -EINVAL, "%s:1: a JSON list of windows is expected", path);
        goto out;
    }
    for (size_t i = 0; i < json_array_size(root); i++) {
        json_t *o = json_array_get(root, i);
        size_t line = json_elem_line(text, len, i);
        struct collectreport_window w;
        if (!json_is_object(o)) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: window %zu is not an object", path, line, i);
            goto out;
        }
        if ((r = window_named(path, line, json_string_value(json_object_get(o, "name")), &w, e)) <
            0)
            goto out;
        static const char *const tf[] = {"start", "end"};
        double *tv[] = {&w.start, &w.end};
        for (int k = 0; k < 2; k++) {
            json_t *x = json_object_get(o, tf[k]);
            const char *why = "is not a time";
            if (json_is_number(x) && isfinite(json_number_value(x))) {
                *tv[k] = json_number_value(x);
            } else if (json_is_string(x)) {
                if (time_parse(json_string_value(x), tv[k], &why) < 0) {
                    r = carma_err_set(e, -EINVAL, "%s:%zu: %s: '%.60s' %s", path, line, tf[k],
                                      json_string_value(x), why);
                    goto out;
                }
            } else {
                r = carma_err_set(e, -EINVAL, "%s:%zu: %s: %s", path, line, tf[k],
                                  x ? "not a time (Unix seconds or an ISO 8601 string)"
                                    : "missing");
                goto out;
            }
        }
        static const char *const of[] = {"tokens", "requests"};
        double *ov[] = {&w.tokens, &w.requests};
        for (int k = 0; k < 2; k++) {
            json_t *x = json_object_get(o, of[k]);
            if (!x || json_is_null(x))
                continue;
            if (!json_is_number(x) || !(json_number_value(x) >= 0) ||
                !isfinite(json_number_value(x))) {
                r = carma_err_set(e, -EINVAL, "%s:%zu: %s: not a number >= 0", path, line, of[k]);
                goto out;
            }
            *ov[k] = json_number_value(x);
        }
        if ((r = window_add(path, line, &w, v, n, cap, e)) < 0)
            goto out;
        count++;
    }
    r = count;
out:
    json_decref(root);
    return r;
}

static int windows_csv(const char *path, const char *text, size_t len,
                       struct collectreport_window **v, size_t *n, size_t *cap, struct carma_err *e)
{
    struct csv_doc doc;
    int r = csv_parse(text, len, path, &doc, e);
    if (r < 0)
        return r;
    int count = 0;
    if (doc.n == 0) {
        r = carma_err_set(e, -EINVAL, "%s: empty file (no header)", path);
        goto out;
    }
    int ci[5];
    static const char *const cols[] = {"name", "start", "end", "tokens", "requests"};
    for (int k = 0; k < 5; k++) {
        ci[k] = csv_column(&doc.rows[0], cols[k]);
        if (ci[k] < 0 && k < 3) {
            r = carma_err_set(e, -EINVAL,
                              "%s:%zu: no column '%s' (want name,start,end[,tokens]"
                              "[,requests])",
                              path, doc.rows[0].line, cols[k]);
            goto out;
        }
    }
    for (size_t i = 1; i < doc.n; i++) {
        const struct csv_row *row = &doc.rows[i];
        if (row->n != doc.rows[0].n) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: %zu fields, the header has %zu", path, row->line,
                              row->n, doc.rows[0].n);
            goto out;
        }
        struct collectreport_window w;
        if ((r = window_named(path, row->line, row->fields[ci[0]], &w, e)) < 0)
            goto out;
        double *tv[] = {&w.start, &w.end};
        for (int k = 1; k < 3; k++) {
            const char *why = "is not a time";
            if (time_parse(row->fields[ci[k]], tv[k - 1], &why) < 0) {
                r = carma_err_set(e, -EINVAL, "%s:%zu: %s: '%.60s' %s", path, row->line, cols[k],
                                  row->fields[ci[k]], why);
                goto out;
            }
        }
        double *ov[] = {&w.tokens, &w.requests};
        for (int k = 3; k < 5; k++) {
            if (ci[k] < 0 || !row->fields[ci[k]][0])
                continue;
            double x;
            if (fastnum_double(row->fields[ci[k]], &x) < 0 || !isfinite(x) || x < 0) {
                r = carma_err_set(e, -EINVAL, "%s:%zu: %s: '%.40s' is not a number >= 0", path,
                                  row->line, cols[k], row->fields[ci[k]]);
                goto out;
            }
            *ov[k - 3] = x;
        }
        if ((r = window_add(path, row->line, &w, v, n, cap, e)) < 0)
            goto out;
        count++;
    }
    r = count;
out:
    csv_doc_free(&doc);
    return r;
}

int collectreport_windows_load(const char *path, struct collectreport_window **v, size_t *n,
                               size_t *cap, struct carma_err *e)
{
    char *text = NULL;
    size_t len = 0;
    int r = file_read_all(path, WINDOWS_FILE_MAX, &text, &len);
    if (r < 0)
        return file_input_err(e, path, r);
    size_t k = 0;
    while (k < len && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r' || text[k] == '\n'))
        k++;
    if (k < len && text[k] == '[')
        r = windows_json(path, text, len, v, n, cap, e);
    else
        r = windows_csv(path, text, len, v, n, cap, e);
    free(text);
    return r;
}

static int win_push(struct cr_win **v, size_t *n, size_t *cap, const struct cr_win *w)
{
    if (array_grow(v, cap, *n + 1, sizeof **v) < 0)
        return -ENOMEM;
    (*v)[(*n)++] = *w;
    return 0;
}

/* The srt-slurm log directory dir or its parent, when one holds benchmark.out; its windows. */
static int srt_windows(struct cr *cr, struct cr_win **v, size_t *n, size_t *cap)
{
    char cand[2][4200];
    snprintf(cand[0], sizeof cand[0], "%s", cr->dir);
    snprintf(cand[1], sizeof cand[1], "%s/..", cr->dir);
    for (int c = 0; c < 2; c++) {
        char bo[4300];
        snprintf(bo, sizeof bo, "%s/benchmark.out", cand[c]);
        FILE *f = fopen(bo, "r");
        if (!f)
            continue;
        fclose(f);
        struct srt_log log;
        struct srt_log_opts o = {.flags = SRT_LOG_WINDOWS_ONLY};
        struct carma_err e = {0};
        int r = srt_log_discover(&log, cand[c], &o, &e);
        if (r == 0)
            r = srt_log_load_windows(&log, &e);
        if (r < 0) {
            srt_log_done(&log);
            if (r == -ENOMEM)
                return r;
            return collectreport_load_warn(
                cr, "srt-slurm log directory %s: its benchmark windows are not reported: %s",
                cand[c], e.msg);
        }
        for (size_t i = 0; i < log.nwindows; i++) {
            const struct srt_log_window *sw = &log.windows[i];
            struct cr_win w;
            memset(&w, 0, sizeof w);
            snprintf(w.name, sizeof w.name, "%s c%lld", srt_log_bench_name(sw->type),
                     sw->concurrency);
            w.source = "srt";
            w.start = sw->start_unix;
            w.end = sw->end_unix;
            w.tokens = sw->output_tokens ? sw->output_tokens_n : NAN;
            w.input_tokens = sw->input_tokens ? sw->input_tokens_n : NAN;
            w.requests = NAN;
            if (!(w.end > w.start)) {
                if ((r = collectreport_load_warn(
                         cr, "srt-slurm window %s: its end is not after its start: skipped",
                         w.name)) < 0)
                    break;
                continue;
            }
            if ((r = win_push(v, n, cap, &w)) < 0)
                break;
        }
        srt_log_done(&log);
        return r < 0 ? r : 0;
    }
    return 0;
}

/* The windows marked during the collect run (marks.csv: carma mark on the head node), in the
 * order they began; one never ended ends at the run's last sample t_end, with a warning. */
static int mark_windows(struct cr *cr, struct cr_win **v, size_t *n, size_t *cap, double t_end,
                        struct carma_err *e)
{
    struct rundir_mark *m = NULL;
    size_t nm = 0;
    char torn[4400];
    int r = rundir_marks_load(cr->dir, &m, &nm, torn, sizeof torn, e);
    if (r < 0)
        return r;
    if (torn[0] && (r = collectreport_load_warn(cr, "%s", torn)) < 0)
        goto out;
    for (size_t k = 0; k < nm; k++) {
        if (m[k].id < 0)
            continue;
        struct cr_win w = {.source = "mark",
                           .start = m[k].t0,
                           .end = isnan(m[k].t1) ? t_end : m[k].t1,
                           .tokens = m[k].tokens >= 0 ? (double)m[k].tokens : NAN,
                           .requests = m[k].requests >= 0 ? (double)m[k].requests : NAN,
                           .input_tokens = NAN};
        snprintf(w.name, sizeof w.name, "%s", m[k].name);
        if ((m[k].unended || isnan(m[k].t1)) &&
            (r = collectreport_load_warn(cr,
                                         "mark %s (id %lld) was never ended: its window ends "
                                         "with the collect run",
                                         m[k].name, m[k].id)) < 0)
            goto out;
        if (!(w.end > w.start))
            continue; /* an instant: no energy to report */
        if ((r = win_push(v, n, cap, &w)) < 0) {
            r = carma_err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
    }
out:
    free(m);
    return r < 0 ? r : 0;
}

/* A --window's or a windows file's window, as source's. */
static int win_push_user(struct cr_win **v, size_t *n, size_t *cap,
                         const struct collectreport_window *uw, const char *source)
{
    struct cr_win w = {.source = source,
                       .start = uw->start,
                       .end = uw->end,
                       .tokens = uw->tokens,
                       .requests = uw->requests,
                       .input_tokens = NAN};
    snprintf(w.name, sizeof w.name, "%s", uw->name);
    return win_push(v, n, cap, &w);
}

int collectreport_window_list(struct cr *cr, const struct collectreport_opts *o,
                              struct cr_win **ret, size_t *ret_n, struct carma_err *e)
{
    struct cr_win *wins = NULL;
    size_t nw = 0, wcap = 0;
    struct collectreport_window *fw = NULL;
    size_t nfw = 0, fwcap = 0;
    int r = 0;
    double t0 = INFINITY, t1 = -INFINITY;
    for (size_t gi = 0; gi < cr->s.ng; gi++)
        if (cr->s.g[gi].n > 0) {
            if (cr->s.g[gi].t[0] < t0)
                t0 = cr->s.g[gi].t[0];
            if (cr->s.g[gi].t[cr->s.g[gi].n - 1] > t1)
                t1 = cr->s.g[gi].t[cr->s.g[gi].n - 1];
        }
    if (!(t1 > t0)) {
        r = carma_err_set(e, -ENODATA, "%s/%s: %s: there is no run to report", cr->dir, cr->samples,
                          isfinite(t0) ? "one scrape's samples only" : "no power samples");
        goto out;
    }
    struct cr_win rw = {.name = "run",
                        .source = "run",
                        .start = t0,
                        .end = t1,
                        .tokens = NAN,
                        .requests = NAN,
                        .input_tokens = NAN};
    if (win_push(&wins, &nw, &wcap, &rw) < 0)
        goto oom;
    for (size_t i = 0; i < o->nwindows; i++)
        if (win_push_user(&wins, &nw, &wcap, &o->windows[i], "cli") < 0)
            goto oom;
    if (o->windows_file) {
        if ((r = collectreport_windows_load(o->windows_file, &fw, &nfw, &fwcap, e)) < 0)
            goto out;
        for (size_t i = 0; i < nfw; i++)
            if (win_push_user(&wins, &nw, &wcap, &fw[i], "file") < 0)
                goto oom;
    }
    if ((r = mark_windows(cr, &wins, &nw, &wcap, t1, e)) < 0)
        goto out;
    if (!o->no_srt && srt_windows(cr, &wins, &nw, &wcap) < 0)
        goto oom;
    *ret = wins;
    *ret_n = nw;
    wins = NULL;
    r = 0;
    goto out;
oom:
    r = carma_err_set(e, -ENOMEM, "out of memory");
out:
    free(wins);
    free(fw);
    return r;
}
