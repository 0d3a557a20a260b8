/*
 * rundir: the line reader and the row rules of a run directory's files (see rundir.h).
 */
#include "rundir/rundir.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file.h"
#include "core/parse.h"
#include "sources/source.h"

/* ---- whole files ---- */

json_t *rundir_read_json(const char *dir, const char *name, json_error_t *je, struct carma_err *e)
{
    _Static_assert(RUNDIR_JSON_MAX == FILE_JSON_MAX, "file_load_json reads at most FILE_JSON_MAX");
    json_error_t local;
    if (!je)
        je = &local;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int r = 0;
    json_t *j = file_load_json(path, 0, je, &r);
    if (!j && r != -EINVAL)
        file_input_err(e, path, r);
    else if (!j)
        carma_err_set(e, -EINVAL, "%s:%d:%d: %s", path, je->line, je->column, je->text);
    return j;
}

/* A whole-file reader's error r for path: file_input_err's for -ESPIPE, else "PATH: cannot read:
 * REASON". Returns r. */
static int read_err(struct carma_err *e, const char *path, int r)
{
    if (r == -ESPIPE)
        return file_input_err(e, path, r);
    return carma_err_set(e, r, "%s: cannot read: %s", path, strerror(-r));
}

int rundir_read_file(const char *dir, const char *name, char **text, size_t *len,
                     struct carma_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int r = file_read_all(path, RUNDIR_CSV_MAX, text, len);
    return r < 0 ? read_err(e, path, r) : 0;
}

/* ---- the line reader ---- */

int rundir_lines_open(struct rundir_lines *l, const char *dir, const char *name, off_t off,
                      size_t line, struct carma_err *e)
{
    memset(l, 0, sizeof *l);
    snprintf(l->path, sizeof l->path, "%s/%s", dir, name);
    int r = 0;
    l->f = file_fopen_input(l->path, &r);
    if (!l->f)
        return file_input_err(e, l->path, r);
    struct stat st;
    if (fstat(fileno(l->f), &st) < 0) {
        r = -errno;
        rundir_lines_close(l);
        return carma_err_set(e, r, "%s: %s", l->path, strerror(-r));
    }
    l->size = st.st_size;
    if (off > l->size) { /* the file was replaced by a shorter one: from its start */
        off = 0;
        line = 0;
    }
    if (off > 0 && fseeko(l->f, off, SEEK_SET) < 0) {
        r = -errno;
        rundir_lines_close(l);
        return carma_err_set(e, r, "%s: %s", l->path, strerror(-r));
    }
    l->off = off;
    l->line = line;
    return 0;
}

void rundir_lines_close(struct rundir_lines *l)
{
    if (l->f)
        fclose(l->f);
    free(l->buf);
    l->f = NULL;
    l->buf = NULL;
    l->cap = 0;
}

/* Splits the line in l->buf (no line end) into fields in place (RFC 4180 quoting). */
static int lines_split(struct rundir_lines *l, struct carma_err *e)
{
    char *p = l->buf, *out = l->buf;
    l->nf = 0;
    for (;;) {
        if (l->nf == RUNDIR_FIELDS_MAX)
            return carma_err_set(e, -EINVAL, "%s:%zu: more than %d fields", l->path, l->line,
                                 RUNDIR_FIELDS_MAX);
        l->fld[l->nf++] = out;
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p)
                    return carma_err_set(e, -EINVAL, "%s:%zu: unterminated quoted field", l->path,
                                         l->line);
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
            if (*p && *p != ',')
                return carma_err_set(e, -EINVAL, "%s:%zu: text after a closing quote", l->path,
                                     l->line);
        } else {
            while (*p && *p != ',') {
                if (*p == '"')
                    return carma_err_set(e, -EINVAL, "%s:%zu: a quote inside an unquoted field",
                                         l->path, l->line);
                *out++ = *p++;
            }
        }
        if (!*p) {
            *out = '\0';
            return 0;
        }
        *out++ = '\0';
        p++; /* the comma; out never passes p, so the next field starts at or after out */
    }
}

int rundir_lines_next(struct rundir_lines *l, struct carma_err *e)
{
    for (;;) {
        if (!l->f || l->off >= l->size)
            return 0; /* nothing begun after the size the file had when opened */
        errno = 0;
        ssize_t n = getline(&l->buf, &l->cap, l->f);
        if (n < 0) {
            if (errno && errno != EINVAL)
                return carma_err_set(e, -errno, "%s: %s", l->path, strerror(errno));
            return 0;
        }
        if (l->buf[n - 1] != '\n') {
            /* no line end: not yet whole (follow), or torn by a crash or a copy */
            if (!l->follow)
                l->torn = l->line + 1;
            return 0;
        }
        l->line++;
        l->off += (off_t)n;
        if ((size_t)n > RUNDIR_LINE_MAX)
            return carma_err_set(e, -EINVAL, "%s:%zu: line longer than %d bytes", l->path, l->line,
                                 RUNDIR_LINE_MAX);
        if (memchr(l->buf, '\0', (size_t)n))
            return carma_err_set(e, -EINVAL, "%s:%zu: a NUL byte", l->path, l->line);
        l->buf[--n] = '\0';
        if (n > 0 && l->buf[n - 1] == '\r')
            l->buf[--n] = '\0';
        if (n == 0)
            continue;
        int r = lines_split(l, e);
        return r < 0 ? r : 1;
    }
}

int rundir_lines_header(struct rundir_lines *l, const char *const *names, size_t n,
                        unsigned required, int *idx, size_t *nf, struct carma_err *e)
{
    int r = rundir_lines_next(l, e);
    if (r < 0)
        return r;
    if (r == 0)
        return carma_err_set(e, -EINVAL, "%s: empty file (no header)", l->path);
    for (size_t k = 0; k < n; k++) {
        idx[k] = -1;
        for (size_t f = 0; f < l->nf; f++)
            if (strcmp(l->fld[f], names[k]) == 0)
                idx[k] = (int)f;
        if (idx[k] < 0 && (required & (1u << k)))
            return carma_err_set(e, -EINVAL, "%s:%zu: no column '%s'", l->path, l->line, names[k]);
    }
    *nf = l->nf;
    return 0;
}

void rundir_torn_warning(const struct rundir_lines *l, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "%s:%zu: the last line has no line end (cut short by a crash or a copy): it is "
             "skipped",
             l->path, l->torn);
}

/* ---- cells ---- */

static int check_width(const char *path, size_t line, size_t nf, size_t want, struct carma_err *e)
{
    if (nf != want)
        return carma_err_set(e, -EINVAL, "%s:%zu: %zu fields, the header has %zu", path, line, nf,
                             want);
    return 0;
}

int rundir_num(const char *path, size_t line, const char *col, const char *s, bool blank_ok,
               double *ret, struct carma_err *e)
{
    *ret = NAN;
    if (*s == '\0' && blank_ok)
        return 0;
    double v;
    if (parse_double(s, &v) < 0 || !isfinite(v))
        return carma_err_set(e, -EINVAL, "%s:%zu: %s: '%.40s' is not a finite number", path, line,
                             col, s);
    *ret = v;
    return 0;
}

int rundir_name(const char *path, size_t line, const char *col, const char *s, struct carma_err *e)
{
    size_t n = strlen(s);
    if (n == 0 || n >= RUNDIR_NAME_MAX)
        return carma_err_set(e, -EINVAL, "%s:%zu: %s: %s", path, line, col,
                             n ? "longer than 255 bytes" : "empty");
    size_t at = parse_utf8_bad_at(s, n);
    if (at != n)
        return carma_err_set(
            e, -EILSEQ, "%s:%zu: %s is not valid UTF-8 (byte 0x%02x at offset %zu of the cell)",
            path, line, col, (unsigned)(unsigned char)s[at], at);
    return 0;
}

/* One of the words words[0..n) (the cell of column col), or -EINVAL listing them. */
static int word(const char *path, size_t line, const char *col, const char *s,
                const char *const *words, size_t n, const char *list, struct carma_err *e)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(s, words[k]) == 0)
            return (int)k;
    return carma_err_set(e, -EINVAL, "%s:%zu: %s: '%.40s' is not %s", path, line, col, s, list);
}

/* A timestamp of the file: finite, never before the previous row's (*last, updated). */
static int timestamp(const char *path, size_t line, const char *s, double *last, double *ret,
                     struct carma_err *e)
{
    int r = rundir_num(path, line, "timestamp_unix", s, false, ret, e);
    if (r < 0)
        return r;
    if (!(*ret >= 0 && *ret <= RUNDIR_TIME_MAX))
        return carma_err_set(e, -ERANGE,
                             "%s:%zu: timestamp_unix: %g is no Unix time from 0 to %g (the year "
                             "5138)",
                             path, line, *ret, RUNDIR_TIME_MAX);
    if (*ret < *last)
        return carma_err_set(e, -EINVAL, "%s:%zu: timestamp_unix goes back in time", path, line);
    *last = *ret;
    return 0;
}

/* The energy a bound of max_w draws over the file's time t - t0: twice that time, for the
 * counters' jitter slack (a step of up to max_w x (dt + 1 ms) is a valid reading at intervals of
 * 1 ms or more), plus a second. */
static double energy_bound_j(double max_w, double t0, double t)
{
    double span = isfinite(t0) && t > t0 ? t - t0 : 0;
    return max_w * (2 * span + 1);
}

/* ---- samples.csv ---- */

int rundir_samples_header(struct rundir_samples *s, struct rundir_lines *l, struct carma_err *e)
{
    static const char *const cols[RS_N] = {"timestamp_unix", "channel", "source", "kind",
                                           "domain",         "method",  "watts",  "joules_total"};
    memset(s, 0, sizeof *s);
    s->t_first = s->t_last = NAN;
    int r =
        rundir_lines_header(l, cols, RS_N, ((1u << RS_N) - 1) & ~(1u << RS_SRC), s->col, &s->nf, e);
    s->t_last = -INFINITY;
    return r;
}

int rundir_samples_check(struct rundir_samples *s, const char *path, size_t line, char *const *fld,
                         size_t nf, struct rundir_sample *ret, struct carma_err *e)
{
    static const char *const kinds = "one of cpu, dram, soc, gpu, system, other";
    static const char *const domains[] = {"total", "component"};
    static const char *const methods[] = {"measured", "estimated"};
    int r;
    memset(ret, 0, sizeof *ret);
    ret->w = ret->j = NAN;
    if ((r = check_width(path, line, nf, s->nf, e)) < 0 ||
        (r = timestamp(path, line, fld[s->col[RS_T]], &s->t_last, &ret->t, e)) < 0)
        return r;
    if (!isfinite(s->t_first))
        s->t_first = ret->t;
    ret->channel = fld[s->col[RS_CH]];
    ret->kind = fld[s->col[RS_KIND]];
    ret->domain = fld[s->col[RS_DOM]];
    ret->method = fld[s->col[RS_METH]];
    if ((r = rundir_name(path, line, "channel", ret->channel, e)) < 0)
        return r;
    ret->kind_id = channel_kind_parse(ret->kind);
    if (ret->kind_id < 0)
        return carma_err_set(e, -EINVAL, "%s:%zu: kind: '%.40s' is not %s", path, line, ret->kind,
                             kinds);
    int d = word(path, line, "domain", ret->domain, domains, 2, "total or component", e);
    if (d < 0)
        return d;
    int m = word(path, line, "method", ret->method, methods, 2, "measured or estimated", e);
    if (m < 0)
        return m;
    ret->total = d == 0;
    ret->estimated = m == 1;
    bool meter = s->col[RS_SRC] >= 0 ? strcmp(fld[s->col[RS_SRC]], "meter") == 0
                                     : strncmp(ret->channel, "meter/", 6) == 0;
    ret->meter = meter;
    ret->max_w = channel_kind_power_max_w((enum channel_kind)ret->kind_id, meter);
    if ((r = rundir_num(path, line, "watts", fld[s->col[RS_W]], true, &ret->w, e)) < 0 ||
        (r = rundir_num(path, line, "joules_total", fld[s->col[RS_J]], true, &ret->j, e)) < 0)
        return r;
    if (ret->w < 0 || ret->w > ret->max_w)
        return carma_err_set(e, -ERANGE,
                             "%s:%zu: watts: %g W is no reading of a %s%s channel (from 0 to %g W, "
                             "docs/sources.md)",
                             path, line, ret->w, meter ? "meter's " : "", ret->kind, ret->max_w);
    double max_j = energy_bound_j(ret->max_w, s->t_first, ret->t);
    if (ret->j < 0 || ret->j > max_j)
        return carma_err_set(e, -ERANGE,
                             "%s:%zu: joules_total: %g J is no energy of a %s%s channel over the "
                             "file's %g s (from 0 to %g J)",
                             path, line, ret->j, meter ? "meter's " : "", ret->kind,
                             ret->t - s->t_first, max_j);
    return 0;
}

int rundir_samples_row(struct rundir_samples *s, const struct rundir_lines *l,
                       struct rundir_sample *ret, struct carma_err *e)
{
    return rundir_samples_check(s, l->path, l->line, l->fld, l->nf, ret, e);
}

/* ---- attribution.csv ---- */

int rundir_attr_header(struct rundir_attr *a, double t0, struct rundir_lines *l,
                       struct carma_err *e)
{
    static const char *const cols[] = {"timestamp_unix", "channel", "job", "joules"};
    memset(a, 0, sizeof *a);
    a->t0 = t0;
    a->t_last = -INFINITY;
    return rundir_lines_header(l, cols, 4, 0xf, a->col, &a->nf, e);
}

int rundir_attr_check(struct rundir_attr *a, const char *path, size_t line, char *const *fld,
                      size_t nf, struct rundir_attr_row *ret, struct carma_err *e)
{
    int r;
    memset(ret, 0, sizeof *ret);
    if ((r = check_width(path, line, nf, a->nf, e)) < 0 ||
        (r = timestamp(path, line, fld[a->col[0]], &a->t_last, &ret->t, e)) < 0)
        return r;
    if (!isfinite(a->t0))
        a->t0 = ret->t;
    ret->channel = fld[a->col[1]];
    ret->job = fld[a->col[2]];
    if ((r = rundir_name(path, line, "channel", ret->channel, e)) < 0 ||
        (r = rundir_name(path, line, "job", ret->job, e)) < 0 ||
        (r = rundir_num(path, line, "joules", fld[a->col[3]], false, &ret->j, e)) < 0)
        return r;
    double max_j = energy_bound_j(CHANNEL_METER_MAX_W, a->t0, ret->t);
    if (!(fabs(ret->j) <= max_j))
        return carma_err_set(e, -ERANGE,
                             "%s:%zu: joules: %g J is no share of a channel's energy over %g s "
                             "of samples (at most %g J either way)",
                             path, line, ret->j, ret->t > a->t0 ? ret->t - a->t0 : 0.0, max_j);
    return 0;
}

int rundir_attr_row(struct rundir_attr *a, const struct rundir_lines *l,
                    struct rundir_attr_row *ret, struct carma_err *e)
{
    return rundir_attr_check(a, l->path, l->line, l->fld, l->nf, ret, e);
}

/* ---- node_util.csv ---- */

int rundir_util_header(struct rundir_util *u, struct rundir_lines *l, struct carma_err *e)
{
    static const char *const cols[] = {"timestamp_unix", "busy_cpu_s", "total_cpu_s", "cpu_util"};
    memset(u, 0, sizeof *u);
    u->t_last = -INFINITY;
    return rundir_lines_header(l, cols, 4, 0x7, u->col, &u->nf, e);
}

int rundir_util_check(struct rundir_util *u, const char *path, size_t line, char *const *fld,
                      size_t nf, struct rundir_util_row *ret, struct carma_err *e)
{
    int r;
    memset(ret, 0, sizeof *ret);
    ret->util = NAN;
    if ((r = check_width(path, line, nf, u->nf, e)) < 0 ||
        (r = timestamp(path, line, fld[u->col[0]], &u->t_last, &ret->t, e)) < 0 ||
        (r = rundir_num(path, line, "busy_cpu_s", fld[u->col[1]], false, &ret->busy_s, e)) < 0 ||
        (r = rundir_num(path, line, "total_cpu_s", fld[u->col[2]], false, &ret->total_s, e)) < 0 ||
        (u->col[3] >= 0 &&
         (r = rundir_num(path, line, "cpu_util", fld[u->col[3]], true, &ret->util, e)) < 0))
        return r;
    if (ret->busy_s < 0 || ret->total_s < 0)
        return carma_err_set(e, -ERANGE, "%s:%zu: %s: %g CPU-seconds is below 0", path, line,
                             ret->busy_s < 0 ? "busy_cpu_s" : "total_cpu_s",
                             ret->busy_s < 0 ? ret->busy_s : ret->total_s);
    if (ret->busy_s > ret->total_s)
        return carma_err_set(e, -ERANGE, "%s:%zu: busy_cpu_s %g is more than total_cpu_s %g", path,
                             line, ret->busy_s, ret->total_s);
    if (ret->util < 0 || ret->util > 1)
        return carma_err_set(e, -ERANGE, "%s:%zu: cpu_util %g is not a fraction from 0 to 1", path,
                             line, ret->util);
    return 0;
}

int rundir_util_row(struct rundir_util *u, const struct rundir_lines *l,
                    struct rundir_util_row *ret, struct carma_err *e)
{
    return rundir_util_check(u, l->path, l->line, l->fld, l->nf, ret, e);
}

/* ---- marks.csv ---- */

int rundir_marks_header(struct rundir_marks *m, struct rundir_lines *l, struct carma_err *e)
{
    static const char *const cols[] = {"schema_version", "event", "id",       "name",
                                       "timestamp_unix", "pid",   "workload", "tokens",
                                       "requests",       "value"};
    memset(m, 0, sizeof *m);
    return rundir_lines_header(l, cols, 10, 0x3ff, m->col, &m->nf, e);
}

/* An integer cell >= 0, or -1 when blank. */
static int count_cell(const char *path, size_t line, const char *col, const char *s, long long *ret,
                      struct carma_err *e)
{
    *ret = -1;
    if (!*s)
        return 0;
    uint64_t v;
    if (parse_u64(s, &v) < 0 || v > LLONG_MAX)
        return carma_err_set(e, -EINVAL, "%s:%zu: %s: '%.40s' is not a count", path, line, col, s);
    *ret = (long long)v;
    return 0;
}

int rundir_marks_row(struct rundir_marks *m, const struct rundir_lines *l,
                     struct rundir_mark_row *ret, struct carma_err *e)
{
    static const char *const events[] = {"begin", "end", "event", "unended"};
    const char *path = l->path;
    size_t line = l->line;
    char *const *f = l->fld;
    int r;
    memset(ret, 0, sizeof *ret);
    if ((r = check_width(path, line, l->nf, m->nf, e)) < 0)
        return r;
    const char *ev = f[m->col[1]];
    int k = 0;
    while (k < 4 && strcmp(ev, events[k]) != 0)
        k++;
    if (k == 4)
        return carma_err_set(e, -EINVAL,
                             "%s:%zu: event: '%.40s' is not begin, end, event or "
                             "unended",
                             path, line, ev);
    ret->event = (enum rundir_mark_event)k;
    ret->name = f[m->col[3]];
    ret->workload = f[m->col[6]];
    if ((r = rundir_name(path, line, "name", ret->name, e)) < 0 ||
        (r = count_cell(path, line, "id", f[m->col[2]], &ret->id, e)) < 0 ||
        (r = count_cell(path, line, "pid", f[m->col[5]], &ret->pid, e)) < 0 ||
        (r = count_cell(path, line, "tokens", f[m->col[7]], &ret->tokens, e)) < 0 ||
        (r = count_cell(path, line, "requests", f[m->col[8]], &ret->requests, e)) < 0 ||
        (r = rundir_num(path, line, "timestamp_unix", f[m->col[4]], false, &ret->t, e)) < 0 ||
        (r = rundir_num(path, line, "value", f[m->col[9]], true, &ret->value, e)) < 0)
        return r;
    if (!(ret->t >= 0 && ret->t <= RUNDIR_TIME_MAX))
        return carma_err_set(e, -ERANGE, "%s:%zu: timestamp_unix: %g is no Unix time", path, line,
                             ret->t);
    if (ret->event != RUNDIR_MARK_EVENT && ret->id < 1)
        return carma_err_set(e, -EINVAL, "%s:%zu: id: a %s row needs a window id", path, line, ev);
    if (ret->workload[0] && (r = rundir_name(path, line, "workload", ret->workload, e)) < 0)
        return r;
    return 0;
}

static struct rundir_mark *mark_by_id(struct rundir_mark *v, size_t n, long long id)
{
    for (size_t k = n; k-- > 0;)
        if (v[k].id == id)
            return &v[k];
    return NULL;
}

int rundir_marks_load(const char *dir, struct rundir_mark **ret, size_t *ret_n, char *torn,
                      size_t cap, struct carma_err *e)
{
    *ret = NULL;
    *ret_n = 0;
    if (torn && cap)
        torn[0] = '\0';
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/marks.csv", dir);
    if (stat(path, &st) < 0 && errno == ENOENT)
        return 0;
    struct rundir_lines l;
    int r = rundir_lines_open(&l, dir, "marks.csv", 0, 0, e);
    if (r < 0)
        return r;
    struct rundir_marks mh;
    struct rundir_mark *v = NULL;
    size_t n = 0, vcap = 0;
    r = rundir_marks_header(&mh, &l, e);
    while (r == 0 && (r = rundir_lines_next(&l, e)) == 1) {
        struct rundir_mark_row row;
        if ((r = rundir_marks_row(&mh, &l, &row, e)) < 0)
            break;
        if (row.event == RUNDIR_MARK_END || row.event == RUNDIR_MARK_UNENDED) {
            struct rundir_mark *m = mark_by_id(v, n, row.id);
            if (!m || !isnan(m->t1)) {
                r = carma_err_set(e, -EINVAL, "%s:%zu: id %lld: %s", l.path, l.line, row.id,
                                  m ? "the window has ended already" : "no begin row before it");
                break;
            }
            m->t1 = row.t < m->t0 ? m->t0 : row.t;
            m->unended = row.event == RUNDIR_MARK_UNENDED;
            if (row.tokens >= 0)
                m->tokens = row.tokens;
            if (row.requests >= 0)
                m->requests = row.requests;
            if (row.workload[0] && strcmp(row.workload, m->workload) != 0)
                snprintf(m->end_workload, sizeof m->end_workload, "%s", row.workload);
            continue;
        }
        if (row.event == RUNDIR_MARK_BEGIN && mark_by_id(v, n, row.id)) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: id %lld begins twice", l.path, l.line, row.id);
            break;
        }
        if (n == RUNDIR_MARKS_MAX) {
            r = carma_err_set(e, -E2BIG, "%s:%zu: more than %d marks", l.path, l.line,
                              RUNDIR_MARKS_MAX);
            break;
        }
        if (n == vcap) {
            vcap = vcap ? 2 * vcap : 16;
            struct rundir_mark *nv = realloc(v, vcap * sizeof *nv);
            if (!nv) {
                r = carma_err_set(e, -ENOMEM, "out of memory");
                break;
            }
            v = nv;
        }
        struct rundir_mark *m = &v[n++];
        *m = (struct rundir_mark){.id = row.event == RUNDIR_MARK_EVENT ? -1 : row.id,
                                  .t0 = row.t,
                                  .t1 = row.event == RUNDIR_MARK_EVENT ? row.t : NAN,
                                  .pid = row.pid,
                                  .tokens = row.tokens,
                                  .requests = row.requests,
                                  .value = row.value};
        snprintf(m->name, sizeof m->name, "%s", row.name);
        snprintf(m->workload, sizeof m->workload, "%s", row.workload);
    }
    if (r >= 0 && l.torn && torn && cap)
        rundir_torn_warning(&l, torn, cap);
    rundir_lines_close(&l);
    if (r < 0) {
        free(v);
        return r;
    }
    *ret = v;
    *ret_n = n;
    return 0;
}

/* ---- utilization.csv ---- */

int rundir_gpu_header(struct rundir_gpu *g, struct rundir_lines *l, struct carma_err *e)
{
    static const char *const cols[RG_N] = {
        "timestamp_unix", "gpu", "pid", "workload", "gpu_util_pct", "mem_util_pct", "sm_util_pct"};
    memset(g, 0, sizeof *g);
    return rundir_lines_header(l, cols, RG_N, (1u << RG_N) - 1, g->col, &g->nf, e);
}

/* A percentage of column col: blank (NAN) or from 0 to 100. */
static int pct(const char *path, size_t line, const char *col, const char *s, double *ret,
               struct carma_err *e)
{
    int r = rundir_num(path, line, col, s, true, ret, e);
    if (r == 0 && (*ret < 0 || *ret > 100))
        r = carma_err_set(e, -ERANGE, "%s:%zu: %s %g is not a percentage from 0 to 100", path, line,
                          col, *ret);
    return r;
}

int rundir_gpu_check(struct rundir_gpu *g, const char *path, size_t line, char *const *fld,
                     size_t nf, struct rundir_gpu_row *ret, struct carma_err *e)
{
    int r;
    memset(ret, 0, sizeof *ret);
    double any = -INFINITY; /* no order between the rows */
    if ((r = check_width(path, line, nf, g->nf, e)) < 0 ||
        (r = timestamp(path, line, fld[g->col[RG_T]], &any, &ret->t, e)) < 0)
        return r;
    int64_t v;
    const char *s = fld[g->col[RG_GPU]];
    if (parse_i64(s, &v) < 0 || v < 0 || v >= RUNDIR_GPUS_MAX)
        return carma_err_set(e, -EINVAL, "%s:%zu: gpu: '%.40s' is not a GPU index (0 to %d)", path,
                             line, s, RUNDIR_GPUS_MAX - 1);
    ret->gpu = (int)v;
    s = fld[g->col[RG_PID]];
    if (*s && (parse_i64(s, &v) < 0 || v <= 0))
        return carma_err_set(e, -EINVAL, "%s:%zu: pid: '%.40s' is not a process id", path, line, s);
    ret->pid = *s ? v : 0;
    ret->workload = fld[g->col[RG_WL]];
    if (ret->pid && (r = rundir_name(path, line, "workload", ret->workload, e)) < 0)
        return r;
    if ((r = pct(path, line, "gpu_util_pct", fld[g->col[RG_UTIL]], &ret->util_pct, e)) < 0 ||
        (r = pct(path, line, "mem_util_pct", fld[g->col[RG_MEM]], &ret->mem_pct, e)) < 0 ||
        (r = pct(path, line, "sm_util_pct", fld[g->col[RG_SM]], &ret->sm_pct, e)) < 0)
        return r;
    return 0;
}

int rundir_gpu_row(struct rundir_gpu *g, const struct rundir_lines *l, struct rundir_gpu_row *ret,
                   struct carma_err *e)
{
    return rundir_gpu_check(g, l->path, l->line, l->fld, l->nf, ret, e);
}

int rundir_sum_check(double sum, const char *what, struct carma_err *e)
{
    if (isfinite(sum))
        return 0;
    return carma_err_set(e, -ERANGE,
                         "%s: the sum overflows a double (no power or energy is that large)", what);
}

/* ---- columns and cells ---- */

int rundir_lines_start(struct rundir_lines *l, const char *dir, const char *name,
                       struct carma_err *e)
{
    int r = rundir_lines_open(l, dir, name, 0, 0, NULL);
    return r < 0 ? read_err(e, l->path, r) : 0;
}

int rundir_lines_column(const struct rundir_lines *l, const char *name)
{
    for (size_t k = 0; k < l->nf; k++)
        if (strcmp(l->fld[k], name) == 0)
            return (int)k;
    return -1;
}

const char *rundir_lines_cell(const struct rundir_lines *l, int k)
{
    return k >= 0 && (size_t)k < l->nf ? l->fld[k] : "";
}

int rundir_lines_num(const struct rundir_lines *l, int k, const char *col, bool blank_ok,
                     double *ret, struct carma_err *e)
{
    *ret = NAN;
    const char *s = rundir_lines_cell(l, k);
    if (!s[0] && blank_ok)
        return 0;
    double v;
    if (parse_double(s, &v) < 0 || !isfinite(v))
        return carma_err_set(e, -EINVAL, "%s:%zu: %s: '%s' is not a number", l->path, l->line, col,
                             s);
    *ret = v;
    return 0;
}
