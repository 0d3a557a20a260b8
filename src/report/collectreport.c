/*
 * collectreport: carma report of a carma collect directory (see collectreport.h).
 *
 * The numbers (docs/report.md, "carma collect directories", has them for users):
 *   - a channel's samples are its rows with a finite watts cell; two consecutive samples at
 *     most max_gap_s apart cover the time between them, a longer gap covers nothing (the
 *     energy there is missing, never interpolated); a window's energy is that of the covered
 *     part of it, and covered_s says how much that is;
 *   - energy_j is the exporter's counter difference (joules_total; series_window_counter, a
 *     step where it goes down is a reset: counted, not integrated) where the channel has one,
 *     else the trapezoid of the watts (series_window_interpolate, or series_window_snap for
 *     --edges snap); the trapezoid is kept beside a counter as its cross-check (drift_pct);
 *   - statistics (mean, min, p5..p99, max) are over the samples inside the window (np.percentile's
 *     linear method); for a sum of parts (a node of several, a kind, the job) over the first
 *     part's sample times, the other parts interpolated there, an instant skipped where a part
 *     with samples in the window does not cover it;
 *   - a node is its nodes.csv total (the carma exporter's own node figure) where it has one,
 *     else the sum of its total-domain channels; a dcgm-exporter GPU channel (source "dcgm")
 *     is added to a node that has no GPU channel from a carma exporter.
 */
#include "report/collectreport.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/carbon.h"
#include "core/channel_kind.h"
#include "core/csv.h"
#include "core/fastnum.h"
#include "core/file.h"
#include "core/iso8601.h"
#include "core/jsonutil.h"
#include "core/pyjson.h"
#include "rundir/rundir.h"
#include "srt/log.h"

#define M_MEAS 1u
#define M_EST  2u
#define M_OTH  4u

#define WINDOWS_FILE_MAX (16u << 20)

static const char *const SAMPLES_COLS[] = {
    "schema_version", "timestamp_unix", "scrape_seq", "node",   "target", "channel",
    "source",         "kind",           "domain",     "method", "watts",  "joules_total"};
static const char *const NODES_COLS[] = {
    "schema_version", "timestamp_unix", "scrape_seq",   "node",           "target",
    "method",         "watts",          "joules_total", "cpu_util_total", "cpu_util_user",
    "cpu_util_nice",  "cpu_util_sys",   "cpu_util_irq"};

/* ---- the loaded data ---- */

struct chan {
    char *channel, *source, *kind, *domain;
    unsigned methods;
    size_t grp;
    double *w, *j; /* per time of the group; NAN where no reading; j NULL: never a counter */
    size_t n, cap;
};

struct grp {
    char *node, *target;
    double *t;
    size_t n, cap;
    uint64_t last_seq;
    bool has_last;
    double *blank_t; /* the times of blank rows */
    size_t nblank, blank_cap;
    size_t *chans;
    size_t nch;
    size_t hint;
};

struct tab {
    struct grp *g;
    size_t ng;
    struct chan *c;
    size_t nc;
    size_t cur; /* the group of the last row */
};

/* A node: its parts (channels of samples.csv or nodes.csv's totals). */
struct part {
    const struct tab *tab;
    size_t ch;
};

struct node {
    char *name;
    struct part *parts;
    size_t nparts;
    bool from_nodes_csv;
    size_t dcgm_added;
    struct carbon_intensity ci;
    const char *region; /* borrowed: the --region code, NULL: default */
};

struct win {
    char name[COLLECTREPORT_NAME_MAX];
    const char *source; /* "run", "cli", "file", "srt" */
    double start, end;
    double tokens, requests, input_tokens;
};

/* Where the reading of one file stands (follow: the next poll goes on from there). */
struct reader {
    off_t off;   /* just after the last whole line read */
    size_t line; /* lines read */
    bool header; /* the header was read and checked */
    bool absent; /* nodes.csv: not there (yet) */
};

struct cr {
    const char *dir;
    struct reader rs, rn;
    json_t *load_warnings; /* of the reading (a torn last line): kept across polls */
    struct tab s, n;       /* samples.csv, nodes.csv */
    struct node *nodes;
    size_t nnodes;
    double gap;
    enum series_edges edges;
    double pue;
    double interval_s;
    struct series_scratch sc;
    double *stat_v;
    size_t stat_cap;
    json_t *warnings;
};

static void tab_free(struct tab *t)
{
    for (size_t i = 0; i < t->ng; i++) {
        free(t->g[i].node);
        free(t->g[i].target);
        free(t->g[i].t);
        free(t->g[i].blank_t);
        free(t->g[i].chans);
    }
    for (size_t i = 0; i < t->nc; i++) {
        free(t->c[i].channel);
        free(t->c[i].source);
        free(t->c[i].kind);
        free(t->c[i].domain);
        free(t->c[i].w);
        free(t->c[i].j);
    }
    free(t->g);
    free(t->c);
    memset(t, 0, sizeof *t);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

static int warn(struct cr *cr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int warn(struct cr *cr, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return json_array_append_new(cr->warnings, json_string(buf)) < 0 ? -ENOMEM : 0;
}

/* The group of (node, target) in t, made when new; -ENOMEM. */
static long tab_group(struct tab *t, const char *node, const char *target)
{
    for (size_t k = 0; k < t->ng && k < 2; k++) {
        size_t i = (t->cur + k) % t->ng;
        if (strcmp(t->g[i].target, target) == 0 && strcmp(t->g[i].node, node) == 0)
            return (long)(t->cur = i);
    }
    for (size_t i = 0; i < t->ng; i++)
        if (strcmp(t->g[i].target, target) == 0 && strcmp(t->g[i].node, node) == 0)
            return (long)(t->cur = i);
    size_t cap = t->ng;
    if (grow((void **)&t->g, &cap, t->ng + 1, sizeof *t->g) < 0)
        return -ENOMEM;
    struct grp *g = &t->g[t->ng];
    memset(g, 0, sizeof *g);
    g->node = strdup(node);
    g->target = strdup(target);
    t->ng++;
    if (!g->node || !g->target)
        return -ENOMEM;
    return (long)(t->cur = t->ng - 1);
}

/* The channel named channel of group gi, made when new; -ENOMEM. */
static long tab_chan(struct tab *t, size_t gi, const char *channel, const char *source,
                     const char *kind, const char *domain)
{
    struct grp *g = &t->g[gi];
    if (g->hint < g->nch && strcmp(t->c[g->chans[g->hint]].channel, channel) == 0)
        return (long)g->chans[g->hint++];
    for (size_t k = 0; k < g->nch; k++)
        if (strcmp(t->c[g->chans[k]].channel, channel) == 0) {
            g->hint = k + 1;
            return (long)g->chans[k];
        }
    size_t cap = t->nc, gcap = g->nch;
    if (grow((void **)&t->c, &cap, t->nc + 1, sizeof *t->c) < 0 ||
        grow((void **)&g->chans, &gcap, g->nch + 1, sizeof *g->chans) < 0)
        return -ENOMEM;
    struct chan *c = &t->c[t->nc];
    memset(c, 0, sizeof *c);
    c->grp = gi;
    c->channel = strdup(channel);
    c->source = strdup(source);
    c->kind = strdup(kind);
    c->domain = strdup(domain);
    g->chans[g->nch++] = t->nc;
    g->hint = g->nch;
    t->nc++;
    if (!c->channel || !c->source || !c->kind || !c->domain)
        return -ENOMEM;
    return (long)(t->nc - 1);
}

/* Makes room for index i in c's arrays, NAN-filling from c->n. */
static int chan_at(struct chan *c, size_t i)
{
    if (i >= c->cap) {
        size_t nc = c->cap ? c->cap : 1024;
        while (nc <= i)
            nc *= 2;
        double *w = realloc(c->w, nc * sizeof *w);
        if (!w)
            return -ENOMEM;
        c->w = w;
        if (c->j) {
            double *j = realloc(c->j, nc * sizeof *j);
            if (!j)
                return -ENOMEM;
            c->j = j;
        }
        c->cap = nc;
    }
    for (size_t k = c->n; k < i; k++) {
        c->w[k] = NAN;
        if (c->j)
            c->j[k] = NAN;
    }
    if (c->n < i)
        c->n = i;
    return 0;
}

static int chan_need_j(struct chan *c)
{
    if (c->j)
        return 0;
    c->j = malloc((c->cap ? c->cap : 1) * sizeof *c->j);
    if (!c->j)
        return -ENOMEM;
    for (size_t k = 0; k < c->n; k++)
        c->j[k] = NAN;
    return 0;
}

static int num_cell(const char *path, size_t line, const char *col, const char *s, bool blank_ok,
                    double *ret, struct carma_err *e)
{
    *ret = NAN;
    if (*s == '\0' && blank_ok)
        return 0;
    double v;
    if (fastnum_double(s, &v) < 0 || !isfinite(v))
        return carma_err_set(e, -EINVAL, "%s:%zu: %s: '%.40s' is not a finite number", path, line,
                             col, s);
    *ret = v;
    return 0;
}

static unsigned method_bit(const char *m)
{
    return strcmp(m, "measured") == 0 ? M_MEAS : strcmp(m, "estimated") == 0 ? M_EST : M_OTH;
}

/*
 * Reads dir/name into t from where rd stands: samples.csv (nodes false) or nodes.csv (nodes
 * true). An absent nodes.csv is no error (rd->absent; nothing read), nor, when following, an
 * absent samples.csv (-ENODATA). follow: a last line without its line end is not yet whole and
 * is left for the next call; else it is skipped with a warning.
 */
static int tab_read(struct cr *cr, struct tab *t, struct reader *rd, const char *name, bool nodes,
                    bool follow, struct carma_err *e)
{
    const char *const *cols = nodes ? NODES_COLS : SAMPLES_COLS;
    size_t ncols =
        nodes ? sizeof NODES_COLS / sizeof *NODES_COLS : sizeof SAMPLES_COLS / sizeof *SAMPLES_COLS;
    struct rundir_lines l;
    memset(&l, 0, sizeof l);
    if (nodes || follow) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", cr->dir, name);
        if (access(p, F_OK) < 0 && errno == ENOENT) {
            rd->absent = true;
            return nodes ? 0 : carma_err_set(e, -ENODATA, "%s: not there yet", p);
        }
        rd->absent = false;
    }
    int r = rundir_lines_open(&l, cr->dir, name, rd->off, rd->line, e);
    if (r < 0)
        return r;
    l.follow = follow;
    if (!rd->header) {
        r = rundir_lines_next(&l, e);
        if (r == 0)
            r = follow ? carma_err_set(e, -ENODATA, "%s: no header yet", l.path)
                       : carma_err_set(e, -EINVAL, "%s: empty file (no header)", l.path);
        if (r < 0)
            goto out;
        bool ok = l.nf == ncols;
        for (size_t k = 0; ok && k < ncols; k++)
            ok = strcmp(l.fld[k], cols[k]) == 0;
        if (!ok) {
            r = carma_err_set(e, -EINVAL,
                              "%s:%zu: not the header of carma collect's %s (schema 1): want "
                              "%s,%s,...,%s",
                              l.path, l.line, name, cols[0], cols[1], cols[ncols - 1]);
            goto out;
        }
        rd->header = true;
    }
    while ((r = rundir_lines_next(&l, e)) > 0) {
        char **f = l.fld;
        if (l.nf != ncols) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: %zu fields, the header has %zu", l.path, l.line,
                              l.nf, ncols);
            break;
        }
        if (strcmp(f[0], "1") != 0) {
            r = carma_err_set(e, -EINVAL,
                              "%s:%zu: schema_version: '%.40s' is not 1 (the schema this carma "
                              "reads)",
                              l.path, l.line, f[0]);
            break;
        }
        double ts, w, j;
        uint64_t seq;
        if ((r = num_cell(l.path, l.line, "timestamp_unix", f[1], false, &ts, e)) < 0)
            break;
        if (fastnum_u64(f[2], &seq) < 0) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: scrape_seq: '%.40s' is not a cycle number",
                              l.path, l.line, f[2]);
            break;
        }
        if (!f[3][0] || !f[4][0]) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: %s: empty", l.path, l.line,
                              f[3][0] ? "target" : "node");
            break;
        }
        const char *method = nodes ? f[5] : f[9];
        const char *wcell = nodes ? f[6] : f[10], *jcell = nodes ? f[7] : f[11];
        bool blank = nodes ? (!f[5][0] && !f[6][0] && !f[7][0]) : !f[5][0];
        if ((r = num_cell(l.path, l.line, "watts", wcell, true, &w, e)) < 0 ||
            (r = num_cell(l.path, l.line, "joules_total", jcell, true, &j, e)) < 0)
            break;
        long gi = tab_group(t, f[3], f[4]);
        if (gi < 0) {
            r = -ENOMEM;
            break;
        }
        struct grp *g = &t->g[gi];
        if (g->n > 0 && ts < g->t[g->n - 1]) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: timestamp_unix goes back in time for target %s",
                              l.path, l.line, f[4]);
            break;
        }
        if (blank) {
            size_t bc = g->blank_cap;
            if (grow((void **)&g->blank_t, &bc, g->nblank + 1, sizeof *g->blank_t) < 0) {
                r = -ENOMEM;
                break;
            }
            g->blank_cap = bc;
            g->blank_t[g->nblank++] = ts;
            g->has_last = false;
            continue;
        }
        if (!g->has_last || g->last_seq != seq || g->t[g->n - 1] != ts) {
            size_t tc = g->cap;
            if (grow((void **)&g->t, &tc, g->n + 1, sizeof *g->t) < 0) {
                r = -ENOMEM;
                break;
            }
            g->cap = tc;
            g->t[g->n++] = ts;
            g->last_seq = seq;
            g->has_last = true;
            g->hint = 0;
        }
        long ci = nodes ? tab_chan(t, (size_t)gi, "node", "carma", "node", "total")
                        : tab_chan(t, (size_t)gi, f[5], f[6], f[7], f[8]);
        if (ci < 0) {
            r = -ENOMEM;
            break;
        }
        struct chan *c = &t->c[ci];
        size_t at = g->n - 1;
        if (c->n > at) {
            r = carma_err_set(e, -EINVAL,
                              "%s:%zu: channel '%.60s' of target %s twice in scrape %llu", l.path,
                              l.line, c->channel, f[4], (unsigned long long)seq);
            break;
        }
        if (chan_at(c, at) < 0 || (!isnan(j) && chan_need_j(c) < 0)) {
            r = -ENOMEM;
            break;
        }
        c->w[at] = w;
        if (c->j)
            c->j[at] = j;
        c->n = at + 1;
        if (method[0])
            c->methods |= method_bit(method);
    }
    if (r == 0 && l.torn) {
        char buf[4400];
        rundir_torn_warning(&l, buf, sizeof buf);
        r = json_array_append_new(cr->load_warnings, json_string(buf)) < 0 ? -ENOMEM : 0;
    }
    /* a channel's arrays may end before its group's times: the rest has no reading */
    rd->off = l.off;
    rd->line = l.line;
out:
    rundir_lines_close(&l);
    return r == -ENOMEM ? carma_err_set(e, r, "out of memory") : r;
}

/* ---- views and windows ---- */

/* A part's samples around a window, NANs left out: the arrays themselves where the range
 * holds no NAN (borrowed), else a contiguous copy (owned). */
struct view {
    double *t, *v;
    size_t n;
    bool owned;
};

static void view_free(struct view *x)
{
    if (x->owned) {
        free(x->t);
        free(x->v);
    }
    memset(x, 0, sizeof *x);
}

static size_t lower_bound(const double *t, size_t n, double x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (t[m] < x)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

static size_t upper_bound(const double *t, size_t n, double x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (t[m] <= x)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* The finite samples of (t, v) in [a, b], with the last one before a and the first one after b. */
static int view_make(struct view *x, const double *t, const double *v, size_t n, double a, double b)
{
    memset(x, 0, sizeof *x);
    if (!v || n == 0)
        return 0;
    size_t lo = lower_bound(t, n, a), hi = upper_bound(t, n, b);
    size_t i0 = lo, e1 = hi;
    for (size_t k = lo; k-- > 0;)
        if (isfinite(v[k])) {
            i0 = k;
            break;
        }
    for (size_t k = hi; k < n; k++)
        if (isfinite(v[k])) {
            e1 = k + 1;
            break;
        }
    size_t m = e1 > i0 ? e1 - i0 : 0;
    if (m == 0)
        return 0;
    size_t bad = 0;
    for (size_t k = i0; k < e1; k++)
        bad += !isfinite(v[k]);
    if (bad == 0) {
        x->t = (double *)t + i0; /* borrowed: never written through */
        x->v = (double *)v + i0;
        x->n = m;
        return 0;
    }
    m -= bad;
    if (m == 0)
        return 0;
    x->owned = true;
    x->t = malloc(m * sizeof *x->t);
    x->v = malloc(m * sizeof *x->v);
    if (!x->t || !x->v) {
        view_free(x);
        return -ENOMEM;
    }
    for (size_t k = i0; k < e1; k++)
        if (isfinite(v[k])) {
            x->t[x->n] = t[k];
            x->v[x->n++] = v[k];
        }
    return 0;
}

enum emode { E_INTERP, E_COUNTER, E_SNAP };

struct eres {
    double joules, covered_s;
    size_t resets;
};

/* The energy of view x over the covered part of [a, b] (segments split at gaps over cr->gap). */
static int view_energy(struct cr *cr, const struct view *x, double a, double b, enum emode mode,
                       struct eres *ret, struct carma_err *e)
{
    memset(ret, 0, sizeof *ret);
    struct series_opts so = {.max_gap_s = INFINITY, .edge_tol_s = 0.0};
    size_t i = 0;
    while (i < x->n) {
        size_t j = i;
        while (j + 1 < x->n && x->t[j + 1] - x->t[j] <= cr->gap)
            j++;
        if (j > i) {
            double s = x->t[i] > a ? x->t[i] : a, t_end = x->t[j] < b ? x->t[j] : b;
            if (t_end > s) {
                struct series sv = {
                    .t = x->t + i, .w = x->v + i, .n = j - i + 1, .cap = j - i + 1, .sorted = true};
                struct series_window w;
                struct carma_err we = {0};
                int r = mode == E_COUNTER
                            ? series_window_counter(&sv, s, t_end, &so, "c", &cr->sc, &w, &we)
                        : mode == E_SNAP
                            ? series_window_snap(&sv, s, t_end, "c", &cr->sc, &w, &we)
                            : series_window_interpolate(&sv, s, t_end, &so, "c", &cr->sc, &w, &we);
                if (r == -ENOMEM)
                    return carma_err_set(e, r, "out of memory");
                if (r == 0)
                    ret->joules += w.joules;
                else if (r != -ENODATA && mode != E_SNAP)
                    return carma_err_set(e, r, "%s", we.msg);
                ret->covered_s += t_end - s;
                if (mode == E_COUNTER)
                    for (size_t k = i; k < j; k++)
                        if (x->v[k + 1] < x->v[k] && x->t[k + 1] > a && x->t[k] < b)
                            ret->resets++;
            }
        }
        i = j + 1;
    }
    return 0;
}

struct stats {
    size_t n;
    double mean, min, p5, p25, p50, p75, p95, p99, max;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/*
 * The statistics of the sum of the parts' views over [a, b]: at the sample times of the first
 * part with a sample in [a, b], each part with a sample in [a, b] interpolated there; an instant
 * that one of them does not cover (outside its samples, or in a gap over the limit) is skipped.
 */
static int agg_stats(struct cr *cr, const struct view *v, size_t np, double a, double b,
                     struct stats *st)
{
    memset(st, 0, sizeof *st);
    st->mean = st->min = st->p5 = st->p25 = st->p50 = st->p75 = st->p95 = st->p99 = st->max = NAN;
    size_t grid = np, *cur = calloc(np ? np : 1, sizeof *cur);
    bool *in = calloc(np ? np : 1, sizeof *in);
    if (!cur || !in) {
        free(cur);
        free(in);
        return -ENOMEM;
    }
    for (size_t p = 0; p < np; p++) {
        size_t k = lower_bound(v[p].t, v[p].n, a);
        in[p] = k < v[p].n && v[p].t[k] <= b;
        if (in[p] && grid == np)
            grid = p;
    }
    size_t cnt = 0;
    int r = 0;
    if (grid < np) {
        const struct view *g = &v[grid];
        size_t k0 = lower_bound(g->t, g->n, a), k1 = upper_bound(g->t, g->n, b);
        if (k1 - k0 > cr->stat_cap) {
            double *nv = realloc(cr->stat_v, (k1 - k0) * sizeof *nv);
            if (!nv) {
                r = -ENOMEM;
                goto out;
            }
            cr->stat_v = nv;
            cr->stat_cap = k1 - k0;
        }
        for (size_t k = k0; k < k1; k++) {
            double t = g->t[k], sum = 0;
            bool ok = true;
            for (size_t p = 0; p < np && ok; p++) {
                if (!in[p])
                    continue;
                if (p == grid) {
                    sum += g->v[k];
                    continue;
                }
                const struct view *x = &v[p];
                while (cur[p] + 1 < x->n && x->t[cur[p] + 1] <= t)
                    cur[p]++;
                size_t c = cur[p];
                if (x->n == 0 || x->t[c] > t) {
                    ok = false;
                } else if (x->t[c] == t) {
                    sum += x->v[c];
                } else if (c + 1 < x->n && x->t[c + 1] - x->t[c] <= cr->gap) {
                    double f = (t - x->t[c]) / (x->t[c + 1] - x->t[c]);
                    sum += x->v[c] + f * (x->v[c + 1] - x->v[c]);
                } else {
                    ok = false;
                }
            }
            if (ok)
                cr->stat_v[cnt++] = sum;
        }
    }
    if (cnt > 0) {
        double *s = cr->stat_v;
        st->n = cnt;
        st->mean = series_sum(s, cnt) / (double)cnt;
        qsort(s, cnt, sizeof *s, cmp_double);
        st->min = s[0];
        st->max = s[cnt - 1];
        st->p5 = series_percentile_sorted(s, cnt, 5);
        st->p25 = series_percentile_sorted(s, cnt, 25);
        st->p50 = series_percentile_sorted(s, cnt, 50);
        st->p75 = series_percentile_sorted(s, cnt, 75);
        st->p95 = series_percentile_sorted(s, cnt, 95);
        st->p99 = series_percentile_sorted(s, cnt, 99);
    }
out:
    free(cur);
    free(in);
    return r;
}

static void stats_json(json_t *o, const struct stats *st)
{
    json_object_set_new(o, "stat_samples", json_integer((json_int_t)st->n));
    jsonutil_set_num(o, "mean_w", st->mean);
    jsonutil_set_num(o, "min_w", st->min);
    jsonutil_set_num(o, "p5_w", st->p5);
    jsonutil_set_num(o, "p25_w", st->p25);
    jsonutil_set_num(o, "p50_w", st->p50);
    jsonutil_set_num(o, "p75_w", st->p75);
    jsonutil_set_num(o, "p95_w", st->p95);
    jsonutil_set_num(o, "p99_w", st->p99);
    jsonutil_set_num(o, "max_w", st->max);
}

static const char *method_name(unsigned m)
{
    if ((m & M_MEAS) && (m & M_EST))
        return "measured+estimated";
    if (m & M_MEAS)
        return "measured";
    if (m & M_EST)
        return "estimated";
    return "unknown";
}

/* One part's figures over a window. */
struct pres {
    double energy, trap, covered, avg, drift;
    size_t resets, samples;
    bool counter;
};

static int part_eval(struct cr *cr, const struct tab *t, size_t ci, double a, double b,
                     struct view *wv, struct pres *ret, struct carma_err *e)
{
    const struct chan *c = &t->c[ci];
    const struct grp *g = &t->g[c->grp];
    memset(ret, 0, sizeof *ret);
    ret->drift = NAN;
    int r = view_make(wv, g->t, c->w, c->n, a, b);
    if (r < 0)
        return carma_err_set(e, r, "out of memory");
    ret->samples = upper_bound(wv->t, wv->n, b) - lower_bound(wv->t, wv->n, a);
    struct eres tr;
    if ((r = view_energy(cr, wv, a, b, cr->edges == SERIES_EDGES_SNAP ? E_SNAP : E_INTERP, &tr,
                         e)) < 0)
        return r;
    ret->trap = tr.joules;
    ret->energy = tr.joules;
    ret->covered = tr.covered_s;
    if (c->j && cr->edges != SERIES_EDGES_SNAP) {
        struct view jv;
        if ((r = view_make(&jv, g->t, c->j, c->n, a, b)) < 0)
            return carma_err_set(e, r, "out of memory");
        struct eres cres;
        r = view_energy(cr, &jv, a, b, E_COUNTER, &cres, e);
        view_free(&jv);
        if (r < 0)
            return r;
        if (cres.covered_s > 0) {
            ret->counter = true;
            ret->energy = cres.joules;
            ret->covered = cres.covered_s;
            ret->resets = cres.resets;
            if (cres.joules != 0)
                ret->drift = (tr.joules - cres.joules) / cres.joules * 100.0;
        }
    }
    ret->avg = ret->covered > 0 ? ret->energy / ret->covered : NAN;
    return 0;
}

static void pres_json(json_t *o, const struct pres *p)
{
    jsonutil_set_num(o, "energy_j", p->energy);
    jsonutil_set_num(o, "avg_power_w", p->avg);
    json_object_set_new(o, "energy_source", json_string(p->counter ? "counter" : "trapezoid"));
    jsonutil_set_num(o, "trapezoid_j", p->trap);
    jsonutil_set_num(o, "drift_pct", p->drift);
    json_object_set_new(o, "resets", json_integer((json_int_t)p->resets));
    jsonutil_set_num(o, "covered_s", p->covered);
    json_object_set_new(o, "samples", json_integer((json_int_t)p->samples));
}

/* ---- nodes ---- */

static bool is_dcgm(const struct chan *c)
{
    return strcmp(c->source, "dcgm") == 0;
}

static long node_find(struct cr *cr, const char *name)
{
    for (size_t i = 0; i < cr->nnodes; i++)
        if (strcmp(cr->nodes[i].name, name) == 0)
            return (long)i;
    return -1;
}

static int node_add_part(struct node *nd, const struct tab *t, size_t ch)
{
    struct part *p = realloc(nd->parts, (nd->nparts + 1) * sizeof *p);
    if (!p)
        return -ENOMEM;
    nd->parts = p;
    p[nd->nparts++] = (struct part){t, ch};
    return 0;
}

static int cmp_node(const void *a, const void *b)
{
    return strcmp(((const struct node *)a)->name, ((const struct node *)b)->name);
}

/* The nodes (sorted by name) and their parts, by the rule in the file's comment. */
static int nodes_build(struct cr *cr)
{
    const struct tab *tabs[2] = {&cr->s, &cr->n};
    for (size_t ti = 0; ti < 2; ti++)
        for (size_t i = 0; i < tabs[ti]->ng; i++) {
            const char *name = tabs[ti]->g[i].node;
            if (node_find(cr, name) >= 0)
                continue;
            struct node *v = realloc(cr->nodes, (cr->nnodes + 1) * sizeof *v);
            if (!v)
                return -ENOMEM;
            cr->nodes = v;
            memset(&v[cr->nnodes], 0, sizeof *v);
            if (!(v[cr->nnodes].name = strdup(name)))
                return -ENOMEM;
            cr->nnodes++;
        }
    qsort(cr->nodes, cr->nnodes, sizeof *cr->nodes, cmp_node);
    for (size_t ni = 0; ni < cr->nnodes; ni++) {
        struct node *nd = &cr->nodes[ni];
        for (size_t c = 0; c < cr->n.nc; c++)
            if (strcmp(cr->n.g[cr->n.c[c].grp].node, nd->name) == 0 && node_add_part(nd, &cr->n, c))
                return -ENOMEM;
        nd->from_nodes_csv = nd->nparts > 0;
        bool carma_gpu = false;
        for (size_t c = 0; c < cr->s.nc; c++) {
            const struct chan *ch = &cr->s.c[c];
            if (strcmp(cr->s.g[ch->grp].node, nd->name) == 0 && !is_dcgm(ch) &&
                strcmp(ch->kind, "gpu") == 0)
                carma_gpu = true;
        }
        for (size_t c = 0; c < cr->s.nc; c++) {
            const struct chan *ch = &cr->s.c[c];
            if (strcmp(cr->s.g[ch->grp].node, nd->name) != 0)
                continue;
            bool add =
                is_dcgm(ch) ? !carma_gpu : !nd->from_nodes_csv && strcmp(ch->domain, "total") == 0;
            if (add && node_add_part(nd, &cr->s, c) < 0)
                return -ENOMEM;
            nd->dcgm_added += add && is_dcgm(ch);
        }
    }
    return 0;
}

/* A samples.csv channel counts in its kind: total domain, and a dcgm one only where the node
 * takes it. */
static bool chan_in_kind(const struct cr *cr, size_t c)
{
    const struct chan *ch = &cr->s.c[c];
    if (!is_dcgm(ch))
        return strcmp(ch->domain, "total") == 0;
    long ni = -1;
    for (size_t i = 0; i < cr->nnodes; i++)
        if (strcmp(cr->nodes[i].name, cr->s.g[ch->grp].node) == 0)
            ni = (long)i;
    if (ni < 0)
        return false;
    const struct node *nd = &cr->nodes[ni];
    for (size_t p = 0; p < nd->nparts; p++)
        if (nd->parts[p].tab == &cr->s && nd->parts[p].ch == c)
            return true;
    return false;
}

static int kind_index(const char *kind)
{
    int k = channel_kind_parse(kind);
    return k < 0 ? KIND_OTHER : k;
}

/* ---- coverage and down time ---- */

struct down {
    double down_s, longest_s, longest_at;
    size_t blanks;
};

/* How long group g was down within [a, b]: before its first time, gaps over the limit, after
 * its last; and its blank rows there. */
static void group_down(const struct cr *cr, const struct grp *g, double a, double b, struct down *d)
{
    memset(d, 0, sizeof *d);
    d->longest_at = NAN;
    for (size_t k = 0; k < g->nblank; k++)
        d->blanks += g->blank_t[k] >= a && g->blank_t[k] <= b;
    if (g->n == 0) {
        d->down_s = d->longest_s = b - a;
        d->longest_at = a;
        return;
    }
#define SPAN(x0, x1)                                                                               \
    do {                                                                                           \
        double s_ = (x0) > a ? (x0) : a, e_ = (x1) < b ? (x1) : b;                                 \
        if (e_ > s_) {                                                                             \
            d->down_s += e_ - s_;                                                                  \
            if (e_ - s_ > d->longest_s) {                                                          \
                d->longest_s = e_ - s_;                                                            \
                d->longest_at = s_;                                                                \
            }                                                                                      \
        }                                                                                          \
    } while (0)
    if (g->t[0] - a > cr->gap)
        SPAN(a, g->t[0]);
    size_t k0 = lower_bound(g->t, g->n, a);
    if (k0 > 0)
        k0--;
    for (size_t k = k0; k + 1 < g->n && g->t[k] < b; k++)
        if (g->t[k + 1] - g->t[k] > cr->gap)
            SPAN(g->t[k], g->t[k + 1]);
    if (b - g->t[g->n - 1] > cr->gap)
        SPAN(g->t[g->n - 1], b);
#undef SPAN
}

/* ---- windows ---- */

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

int collectreport_region_parse(char *spec, struct collectreport_region *ret, struct carma_err *e)
{
    char *eq = strchr(spec, '=');
    if (!eq) {
        if (!spec[0])
            return carma_err_set(e, -EINVAL, "--region: an empty region code");
        *ret = (struct collectreport_region){NULL, spec};
        return 0;
    }
    if (eq == spec || !eq[1])
        return carma_err_set(e, -EINVAL, "--region '%s': want CODE or NODE=CODE", spec);
    *eq = '\0';
    *ret = (struct collectreport_region){spec, eq + 1};
    return 0;
}

static int win_push(struct collectreport_window **v, size_t *n, size_t *cap,
                    const struct collectreport_window *w)
{
    if (grow((void **)v, cap, *n + 1, sizeof **v) < 0)
        return -ENOMEM;
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
        memset(&w, 0, sizeof w);
        w.tokens = w.requests = NAN;
        if (!json_is_object(o)) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: window %zu is not an object", path, line, i);
            goto out;
        }
        const char *name = json_string_value(json_object_get(o, "name"));
        if (!name || !name[0] || strlen(name) >= COLLECTREPORT_NAME_MAX) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: name: %s", path, line,
                              !name      ? "missing or not a string"
                              : !name[0] ? "empty"
                                         : "too long");
            goto out;
        }
        snprintf(w.name, sizeof w.name, "%s", name);
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
        if (!(w.end > w.start)) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: end: not after start", path, line);
            goto out;
        }
        if (win_push(v, n, cap, &w) < 0) {
            r = carma_err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
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
        memset(&w, 0, sizeof w);
        w.tokens = w.requests = NAN;
        const char *name = row->fields[ci[0]];
        if (!name[0] || strlen(name) >= COLLECTREPORT_NAME_MAX) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: name: %s", path, row->line,
                              name[0] ? "too long" : "empty");
            goto out;
        }
        snprintf(w.name, sizeof w.name, "%s", name);
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
        if (!(w.end > w.start)) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: end: not after start", path, row->line);
            goto out;
        }
        if (win_push(v, n, cap, &w) < 0) {
            r = carma_err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
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

/* ---- the report ---- */

static int cr_push_win(struct win **v, size_t *n, size_t *cap, const struct win *w)
{
    if (grow((void **)v, cap, *n + 1, sizeof **v) < 0)
        return -ENOMEM;
    (*v)[(*n)++] = *w;
    return 0;
}

/* The srt-slurm log directory dir or its parent, when one holds benchmark.out; its windows. */
static int srt_windows(struct cr *cr, struct win **v, size_t *n, size_t *cap)
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
            return warn(cr,
                        "srt-slurm log directory %s: its benchmark windows are not reported: %s",
                        cand[c], e.msg);
        }
        for (size_t i = 0; i < log.nwindows; i++) {
            const struct srt_log_window *sw = &log.windows[i];
            struct win w;
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
                if ((r = warn(cr, "srt-slurm window %s: its end is not after its start: skipped",
                              w.name)) < 0)
                    break;
                continue;
            }
            if ((r = cr_push_win(v, n, cap, &w)) < 0)
                break;
        }
        srt_log_done(&log);
        return r < 0 ? r : 0;
    }
    return 0;
}

/* The job-level part list: every node's parts. */
static int window_report(struct cr *cr, const struct win *w, json_t *out, struct carma_err *e)
{
    double a = w->start, b = w->end, dur = b - a;
    json_t *jw = json_object(), *jn = json_array(), *jc = json_array(), *jk = json_array(),
           *jwarn = json_array();
    json_object_set_new(jw, "name", json_string(w->name));
    json_object_set_new(jw, "source", json_string(w->source));
    jsonutil_set_num(jw, "start_unix", a);
    jsonutil_set_num(jw, "end_unix", b);
    jsonutil_set_num(jw, "duration_s", dur);
    jsonutil_set_num(jw, "tokens", w->tokens);
    jsonutil_set_num(jw, "input_tokens", w->input_tokens);
    jsonutil_set_num(jw, "requests", w->requests);
    json_object_set_new(jw, "nodes", jn);
    json_object_set_new(jw, "channels", jc);
    json_object_set_new(jw, "kinds", jk);
    json_object_set_new(jw, "warnings", jwarn);
    json_array_append_new(out, jw);
    int r = 0;
    /* every samples.csv channel */
    struct pres *cres = calloc(cr->s.nc ? cr->s.nc : 1, sizeof *cres);
    struct pres *nres = calloc(cr->n.nc ? cr->n.nc : 1, sizeof *nres);
    if (!cres || !nres) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t c = 0; c < cr->s.nc; c++) {
        struct view v;
        r = part_eval(cr, &cr->s, c, a, b, &v, &cres[c], e);
        struct stats st;
        if (r == 0)
            r = agg_stats(cr, &v, 1, a, b, &st);
        view_free(&v);
        if (r < 0)
            goto out;
        const struct chan *ch = &cr->s.c[c];
        const struct grp *g = &cr->s.g[ch->grp];
        json_t *o = json_object();
        json_object_set_new(o, "node", json_string(g->node));
        json_object_set_new(o, "target", json_string(g->target));
        json_object_set_new(o, "channel", json_string(ch->channel));
        json_object_set_new(o, "source", json_string(ch->source));
        json_object_set_new(o, "kind", json_string(ch->kind));
        json_object_set_new(o, "domain", json_string(ch->domain));
        json_object_set_new(o, "method", json_string(method_name(ch->methods)));
        pres_json(o, &cres[c]);
        stats_json(o, &st);
        json_array_append_new(jc, o);
    }
    for (size_t c = 0; c < cr->n.nc; c++) {
        struct view v;
        r = part_eval(cr, &cr->n, c, a, b, &v, &nres[c], e);
        view_free(&v);
        if (r < 0)
            goto out;
    }
    /* nodes */
    double job_j = 0, job_avg = 0, job_est = 0, job_g = 0, job_covered_min = INFINITY;
    unsigned job_m = 0;
    size_t job_parts = 0;
    for (size_t ni = 0; ni < cr->nnodes; ni++)
        job_parts += cr->nodes[ni].nparts;
    struct view *jv = calloc(job_parts ? job_parts : 1, sizeof *jv);
    if (!jv) {
        r = -ENOMEM;
        goto out;
    }
    size_t jvn = 0;
    double kind_j[CHANNEL_KINDS] = {0}, kind_avg[CHANNEL_KINDS] = {0};
    unsigned kind_m[CHANNEL_KINDS] = {0};
    bool kind_any[CHANNEL_KINDS] = {0};
    for (size_t ni = 0; ni < cr->nnodes && r == 0; ni++) {
        const struct node *nd = &cr->nodes[ni];
        double nj = 0, navg = 0, nest = 0, ntrap = 0, ncov = INFINITY;
        size_t nres_n = 0;
        unsigned nm = 0;
        bool ncounter = false, ntrapz = false, ncovered_any = false;
        json_t *parts = json_array();
        size_t v0 = jvn;
        for (size_t p = 0; p < nd->nparts; p++) {
            const struct part *pt = &nd->parts[p];
            const struct chan *ch = &pt->tab->c[pt->ch];
            const struct pres *pr = pt->tab == &cr->s ? &cres[pt->ch] : &nres[pt->ch];
            const struct grp *g = &pt->tab->g[ch->grp];
            if ((r = view_make(&jv[jvn++], g->t, ch->w, ch->n, a, b)) < 0)
                break;
            nj += pr->energy;
            ntrap += pr->trap;
            if (pr->covered > 0) {
                navg += pr->avg;
                ncovered_any = true;
            }
            if (pr->covered < ncov)
                ncov = pr->covered;
            nres_n += pr->resets;
            nm |= ch->methods;
            if ((ch->methods & M_EST) && !(ch->methods & M_MEAS))
                nest += pr->energy;
            ncounter |= pr->counter;
            ntrapz |= !pr->counter;
            json_t *po = json_object();
            json_object_set_new(po, "file",
                                json_string(pt->tab == &cr->s ? "samples.csv" : "nodes.csv"));
            json_object_set_new(po, "target", json_string(g->target));
            json_object_set_new(po, "channel",
                                json_string(pt->tab == &cr->s ? ch->channel : "node total"));
            json_object_set_new(po, "method", json_string(method_name(ch->methods)));
            pres_json(po, pr);
            json_array_append_new(parts, po);
        }
        if (r < 0) {
            json_decref(parts);
            break;
        }
        struct stats st;
        if ((r = agg_stats(cr, jv + v0, jvn - v0, a, b, &st)) < 0) {
            json_decref(parts);
            break;
        }
        if (nd->nparts == 0)
            ncov = 0;
        /* kinds of the node: its samples.csv channels in their kind */
        double by_kind[CHANNEL_KINDS] = {0};
        bool has_kind[CHANNEL_KINDS] = {0};
        for (size_t c = 0; c < cr->s.nc; c++) {
            const struct chan *ch = &cr->s.c[c];
            if (strcmp(cr->s.g[ch->grp].node, nd->name) != 0 || !chan_in_kind(cr, c))
                continue;
            int k = kind_index(ch->kind);
            by_kind[k] += cres[c].energy;
            has_kind[k] = true;
            kind_j[k] += cres[c].energy;
            if (cres[c].covered > 0)
                kind_avg[k] += cres[c].avg;
            kind_m[k] |= ch->methods;
            kind_any[k] = true;
        }
        /* down time: the worst of its samples.csv targets */
        struct down worst = {0};
        worst.longest_at = NAN;
        const char *worst_target = NULL;
        size_t blanks = 0;
        for (size_t gi = 0; gi < cr->s.ng; gi++) {
            const struct grp *g = &cr->s.g[gi];
            if (strcmp(g->node, nd->name) != 0)
                continue;
            struct down d;
            group_down(cr, g, a, b, &d);
            blanks += d.blanks;
            if (d.down_s > worst.down_s || (!worst_target && (d.down_s > 0 || d.blanks > 0))) {
                worst = d;
                worst_target = g->target;
            }
        }
        bool down = worst.down_s > 0;
        double missing = dur - (isfinite(ncov) ? ncov : 0);
        if (missing < 0)
            missing = 0;
        char msg[1024];
        msg[0] = '\0';
        if (down) {
            char at[40] = "-";
            if (isfinite(worst.longest_at))
                iso8601_format_utc(worst.longest_at, at, sizeof at);
            snprintf(msg, sizeof msg,
                     "window '%s': node %s was down for %.3f s of %.3f s (target %s: the longest "
                     "outage %.3f s from %s; %zu scrape%s gave nothing): its energy there is "
                     "missing (never interpolated across a gap over %.3f s); its figures cover "
                     "%.3f s",
                     w->name, nd->name, worst.down_s, dur, worst_target ? worst_target : "-",
                     worst.longest_s, at, blanks, blanks == 1 ? "" : "s", cr->gap,
                     isfinite(ncov) ? ncov : 0.0);
        } else if (blanks > 0) {
            snprintf(msg, sizeof msg,
                     "window '%s': node %s: %zu scrape%s gave nothing (target %s), each gap "
                     "within the %.3f s limit: interpolated across",
                     w->name, nd->name, blanks, blanks == 1 ? "" : "s",
                     worst_target ? worst_target : "-", cr->gap);
        }
        if (msg[0]) {
            json_array_append_new(jwarn, json_string(msg));
            json_array_append_new(cr->warnings, json_string(msg));
        }
        double g_co2 = carbon_intensity_energy_g(&nd->ci, a, b, nj, cr->pue, NULL);
        json_t *o = json_object();
        json_object_set_new(o, "node", json_string(nd->name));
        jsonutil_set_num(o, "energy_j", nj);
        jsonutil_set_num(o, "avg_power_w", ncovered_any ? navg : NAN);
        json_object_set_new(o, "method", json_string(method_name(nm)));
        jsonutil_set_num(o, "estimated_j", nest);
        json_object_set_new(o, "energy_source",
                            json_string(ncounter && ntrapz ? "counter+trapezoid"
                                        : ncounter         ? "counter"
                                                           : "trapezoid"));
        jsonutil_set_num(o, "trapezoid_j", ntrap);
        jsonutil_set_num(o, "drift_pct", nj != 0 && ncounter ? (ntrap - nj) / nj * 100.0 : NAN);
        json_object_set_new(o, "resets", json_integer((json_int_t)nres_n));
        json_object_set_new(o, "basis", json_string(nd->from_nodes_csv ? "nodes.csv" : "channels"));
        json_object_set_new(o, "dcgm_gpus_added", json_integer((json_int_t)nd->dcgm_added));
        jsonutil_set_num(o, "covered_s", isfinite(ncov) ? ncov : 0.0);
        jsonutil_set_num(o, "missing_s", missing);
        json_object_set_new(o, "down", json_boolean(down));
        jsonutil_set_num(o, "down_s", worst.down_s);
        json_object_set_new(o, "blank_rows", json_integer((json_int_t)blanks));
        stats_json(o, &st);
        json_t *bk = json_object();
        for (int k = 0; k < CHANNEL_KINDS; k++)
            if (has_kind[k])
                jsonutil_set_num(bk, channel_kind_name((enum channel_kind)k), by_kind[k]);
        json_object_set_new(o, "energy_by_kind_j", bk);
        json_t *cb = json_object();
        jsonutil_set_num(cb, "g_co2e", g_co2);
        jsonutil_set_num(cb, "g_per_kwh", nd->ci.g_per_kwh);
        jsonutil_set_num(cb, "pue", cr->pue);
        json_object_set_new(cb, "region",
                            nd->ci.region[0] ? json_string(nd->ci.region) : json_null());
        json_object_set_new(cb, "intensity_source", json_string(nd->ci.source));
        json_object_set_new(cb, "method", json_string(method_name(nm)));
        json_object_set_new(o, "carbon", cb);
        json_object_set_new(o, "parts", parts);
        json_array_append_new(jn, o);
        job_j += nj;
        if (ncovered_any)
            job_avg += navg;
        job_est += nest;
        job_g += g_co2;
        job_m |= nm;
        if (ncov < job_covered_min)
            job_covered_min = ncov;
    }
    if (r < 0) {
        for (size_t i = 0; i < jvn; i++)
            view_free(&jv[i]);
        free(jv);
        goto out;
    }
    /* kinds */
    for (int k = 0; k < CHANNEL_KINDS && r == 0; k++) {
        if (!kind_any[k])
            continue;
        size_t np = 0;
        for (size_t c = 0; c < cr->s.nc; c++)
            np += chan_in_kind(cr, c) && kind_index(cr->s.c[c].kind) == k;
        struct view *kv = calloc(np ? np : 1, sizeof *kv);
        if (!kv) {
            r = -ENOMEM;
            break;
        }
        size_t kn = 0;
        for (size_t c = 0; c < cr->s.nc && r == 0; c++) {
            if (!chan_in_kind(cr, c) || kind_index(cr->s.c[c].kind) != k)
                continue;
            const struct chan *ch = &cr->s.c[c];
            r = view_make(&kv[kn++], cr->s.g[ch->grp].t, ch->w, ch->n, a, b);
        }
        struct stats st;
        if (r == 0)
            r = agg_stats(cr, kv, kn, a, b, &st);
        for (size_t i = 0; i < kn; i++)
            view_free(&kv[i]);
        free(kv);
        if (r < 0)
            break;
        json_t *o = json_object();
        json_object_set_new(o, "kind", json_string(channel_kind_name((enum channel_kind)k)));
        jsonutil_set_num(o, "energy_j", kind_j[k]);
        jsonutil_set_num(o, "avg_power_w", kind_avg[k]);
        json_object_set_new(o, "method", json_string(method_name(kind_m[k])));
        json_object_set_new(o, "channels", json_integer((json_int_t)kn));
        stats_json(o, &st);
        json_array_append_new(jk, o);
    }
    /* the job */
    if (r == 0) {
        struct stats st;
        r = agg_stats(cr, jv, jvn, a, b, &st);
        if (r == 0) {
            json_t *o = json_object();
            jsonutil_set_num(o, "energy_j", job_j);
            jsonutil_set_num(o, "avg_power_w", job_avg);
            json_object_set_new(o, "method", json_string(method_name(job_m)));
            jsonutil_set_num(o, "estimated_j", job_est);
            json_object_set_new(o, "nodes", json_integer((json_int_t)cr->nnodes));
            jsonutil_set_num(o, "carbon_g_co2e", job_g);
            double tps = w->tokens / dur;
            jsonutil_set_num(o, "tokens_per_s", tps);
            jsonutil_set_num(o, "tokens_per_s_per_w", job_avg > 0 ? tps / job_avg : NAN);
            jsonutil_set_num(o, "j_per_token", w->tokens > 0 ? job_j / w->tokens : NAN);
            jsonutil_set_num(o, "j_per_request", w->requests > 0 ? job_j / w->requests : NAN);
            jsonutil_set_num(o, "covered_s", isfinite(job_covered_min) ? job_covered_min : 0.0);
            stats_json(o, &st);
            json_object_set_new(jw, "job", o);
        }
    }
    for (size_t i = 0; i < jvn; i++)
        view_free(&jv[i]);
    free(jv);
out:
    free(cres);
    free(nres);
    if (r == -ENOMEM)
        return carma_err_set(e, r, "out of memory");
    return r;
}

static json_t *coverage_json(const struct cr *cr)
{
    json_t *cov = json_array();
    for (size_t ni = 0; ni < cr->nnodes; ni++) {
        const struct node *nd = &cr->nodes[ni];
        double first = INFINITY, last = -INFINITY, gap = 0;
        size_t samples = 0, blanks = 0;
        json_t *targets = json_array();
        for (size_t gi = 0; gi < cr->s.ng; gi++) {
            const struct grp *g = &cr->s.g[gi];
            if (strcmp(g->node, nd->name) != 0)
                continue;
            json_array_append_new(targets, json_string(g->target));
            blanks += g->nblank;
            samples += g->n;
            if (g->n == 0)
                continue;
            if (g->t[0] < first)
                first = g->t[0];
            if (g->t[g->n - 1] > last)
                last = g->t[g->n - 1];
            for (size_t k = 0; k + 1 < g->n; k++)
                if (g->t[k + 1] - g->t[k] > gap)
                    gap = g->t[k + 1] - g->t[k];
        }
        json_t *o = json_object();
        json_object_set_new(o, "node", json_string(nd->name));
        json_object_set_new(o, "targets", targets);
        jsonutil_set_num(o, "first_sample_unix", isfinite(first) ? first : NAN);
        jsonutil_set_num(o, "last_sample_unix", isfinite(last) ? last : NAN);
        jsonutil_set_num(o, "largest_gap_s", gap);
        json_object_set_new(o, "scrapes", json_integer((json_int_t)samples));
        json_object_set_new(o, "blank_rows", json_integer((json_int_t)blanks));
        json_object_set_new(o, "gap_over_limit", json_boolean(gap > cr->gap));
        json_array_append_new(cov, o);
    }
    return cov;
}

static void cr_nodes_free(struct cr *cr)
{
    for (size_t i = 0; i < cr->nnodes; i++) {
        free(cr->nodes[i].name);
        free(cr->nodes[i].parts);
        carbon_intensity_done(&cr->nodes[i].ci);
    }
    free(cr->nodes);
    cr->nodes = NULL;
    cr->nnodes = 0;
}

static void cr_free(struct cr *cr)
{
    tab_free(&cr->s);
    tab_free(&cr->n);
    cr_nodes_free(cr);
    series_scratch_done(&cr->sc);
    free(cr->stat_v);
    json_decref(cr->warnings);
    json_decref(cr->load_warnings);
    memset(cr, 0, sizeof *cr);
}

/* Makes *cr empty for dir (cr_free it, whatever this returns). */
static int cr_init(struct cr *cr, const char *dir, const struct collectreport_opts *o,
                   struct carma_err *e)
{
    memset(cr, 0, sizeof *cr);
    cr->dir = dir;
    cr->edges = o->edges;
    cr->pue = o->pue > 0 ? o->pue : 1.0;
    cr->load_warnings = json_array();
    return cr->load_warnings ? 0 : carma_err_set(e, -ENOMEM, "out of memory");
}

/* Reads what samples.csv and nodes.csv hold past where the last call stopped. */
static int cr_load(struct cr *cr, bool follow, struct carma_err *e)
{
    int r = tab_read(cr, &cr->s, &cr->rs, "samples.csv", false, follow, e);
    if (r == 0)
        r = tab_read(cr, &cr->n, &cr->rn, "nodes.csv", true, follow, e);
    return r;
}

/* The report of what cr holds (nodes, carbon, windows made again: a follower calls it after
 * every cr_load). */
static int cr_report(struct cr *crp, const struct collectreport_opts *o, json_t **ret,
                     struct carma_err *e)
{
    const char *dir = crp->dir;
    json_decref(crp->warnings);
    crp->warnings = json_copy(crp->load_warnings);
    struct win *wins = NULL;
    size_t nw = 0, wcap = 0;
    struct collectreport_window *fw = NULL;
    size_t nfw = 0, fwcap = 0;
    json_t *report = NULL;
    int r = 0;
    if (!crp->warnings) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    /* the manifest: the interval */
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/manifest.json", dir);
    json_error_t je;
    int ferr = 0;
    json_t *man = file_load_json(mp, JSON_REJECT_DUPLICATES, &je, &ferr);
    if (!man) {
        r = ferr ? file_input_err(e, mp, ferr)
                 : carma_err_set(e, -EINVAL, "%s:%d:%d: %s", mp, je.line, je.column, je.text);
        goto out;
    }
    crp->interval_s = jsonutil_get_num(json_object_get(man, "options"), "interval_s");
    json_t *job_id = json_incref(json_object_get(man, "job_id"));
    json_t *status = json_incref(json_object_get(man, "status"));
    json_decref(man);
    crp->gap = o->max_gap_s > 0 ? o->max_gap_s
               : isfinite(crp->interval_s) && 3 * crp->interval_s > SERIES_MAX_GAP_S
                   ? 3 * crp->interval_s
                   : SERIES_MAX_GAP_S;
    cr_nodes_free(crp);
    if (crp->rn.absent &&
        (r = warn(crp,
                  "%s/nodes.csv: absent: each node is the sum of its total-domain "
                  "channels",
                  dir)) < 0)
        goto out_j;
    if ((r = nodes_build(crp)) < 0) {
        r = carma_err_set(e, r, "out of memory");
        goto out_j;
    }
    /* carbon per node */
    const char *def_region = NULL;
    for (size_t i = 0; i < o->nregions; i++) {
        if (!o->regions[i].node)
            def_region = o->regions[i].code;
        else if (node_find(crp, o->regions[i].node) < 0 &&
                 (r = warn(crp, "--region %s=%s: no node %s in %s", o->regions[i].node,
                           o->regions[i].code, o->regions[i].node, dir)) < 0)
            goto out_j;
    }
    for (size_t ni = 0; ni < crp->nnodes; ni++) {
        const char *code = def_region;
        for (size_t i = 0; i < o->nregions; i++)
            if (o->regions[i].node && strcmp(o->regions[i].node, crp->nodes[ni].name) == 0)
                code = o->regions[i].code;
        if ((r = carbon_intensity_resolve(code, 0, &crp->nodes[ni].ci, e)) < 0)
            goto out_j;
    }
    /* windows: the run, --window, --windows, srt-slurm's */
    double t0 = INFINITY, t1 = -INFINITY;
    for (size_t gi = 0; gi < crp->s.ng; gi++)
        if (crp->s.g[gi].n > 0) {
            if (crp->s.g[gi].t[0] < t0)
                t0 = crp->s.g[gi].t[0];
            if (crp->s.g[gi].t[crp->s.g[gi].n - 1] > t1)
                t1 = crp->s.g[gi].t[crp->s.g[gi].n - 1];
        }
    if (!(t1 > t0)) {
        r = carma_err_set(e, -ENODATA, "%s/samples.csv: %s: there is no run to report", dir,
                          isfinite(t0) ? "one scrape's samples only" : "no power samples");
        goto out_j;
    }
    struct win rw = {.name = "run",
                     .source = "run",
                     .start = t0,
                     .end = t1,
                     .tokens = NAN,
                     .requests = NAN,
                     .input_tokens = NAN};
    if (cr_push_win(&wins, &nw, &wcap, &rw) < 0)
        goto oom;
    for (size_t i = 0; i < o->nwindows; i++) {
        struct win w = {.source = "cli",
                        .start = o->windows[i].start,
                        .end = o->windows[i].end,
                        .tokens = o->windows[i].tokens,
                        .requests = o->windows[i].requests,
                        .input_tokens = NAN};
        snprintf(w.name, sizeof w.name, "%s", o->windows[i].name);
        if (cr_push_win(&wins, &nw, &wcap, &w) < 0)
            goto oom;
    }
    if (o->windows_file) {
        if ((r = collectreport_windows_load(o->windows_file, &fw, &nfw, &fwcap, e)) < 0)
            goto out_j;
        for (size_t i = 0; i < nfw; i++) {
            struct win w = {.source = "file",
                            .start = fw[i].start,
                            .end = fw[i].end,
                            .tokens = fw[i].tokens,
                            .requests = fw[i].requests,
                            .input_tokens = NAN};
            snprintf(w.name, sizeof w.name, "%s", fw[i].name);
            if (cr_push_win(&wins, &nw, &wcap, &w) < 0)
                goto oom;
        }
    }
    if (!o->no_srt && (r = srt_windows(crp, &wins, &nw, &wcap)) < 0)
        goto oom;
    report = json_object();
    json_t *jwins = json_array();
    json_object_set_new(report, "kind", json_string("collect"));
    json_object_set_new(report, "dir", json_string(dir));
    json_object_set_new(report, "job_id", job_id ? job_id : json_null());
    job_id = NULL;
    json_object_set_new(report, "collect_status", status ? status : json_null());
    status = NULL;
    json_object_set_new(report, "edges",
                        json_string(crp->edges == SERIES_EDGES_SNAP ? "snap" : "interpolate"));
    jsonutil_set_num(report, "interval_s", crp->interval_s);
    jsonutil_set_num(report, "max_gap_s", crp->gap);
    json_object_set_new(report, "windows", jwins);
    for (size_t i = 0; i < nw; i++)
        if ((r = window_report(crp, &wins[i], jwins, e)) < 0)
            goto out_j;
    json_object_set_new(report, "coverage", coverage_json(crp));
    json_object_set_new(report, "warnings", json_incref(crp->warnings));
    *ret = report;
    report = NULL;
    r = 0;
    goto out_j;
oom:
    r = carma_err_set(e, -ENOMEM, "out of memory");
out_j:
    json_decref(job_id);
    json_decref(status);
out:
    json_decref(report);
    free(wins);
    free(fw);
    return r;
}

/* collectreport_build, leaving what it loaded in *crp (cr_free it, whatever this returns). */
static int build_keep(const char *dir, const struct collectreport_opts *o, struct cr *crp,
                      json_t **ret, struct carma_err *e)
{
    struct collectreport_opts def = {0};
    if (!o)
        o = &def;
    int r = cr_init(crp, dir, o, e);
    if (r == 0)
        r = cr_load(crp, false, e);
    if (r == 0)
        r = cr_report(crp, o, ret, e);
    return r;
}

int collectreport_build(const char *dir, const struct collectreport_opts *o, json_t **ret,
                        struct carma_err *e)
{
    struct cr cr;
    int r = build_keep(dir, o, &cr, ret, e);
    cr_free(&cr);
    return r;
}

/* The node's power at the sample times of its first part (the others interpolated there), NAN
 * where a part does not cover an instant or a gap over the limit breaks the line. */
static int node_series(struct cr *cr, const struct node *nd, struct collectreport_node_tl *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->node = nd->name;
    if (nd->nparts == 0)
        return 0;
    struct view *v = calloc(nd->nparts, sizeof *v);
    size_t *cur = calloc(nd->nparts, sizeof *cur);
    int r = v && cur ? 0 : -ENOMEM;
    for (size_t p = 0; p < nd->nparts && r == 0; p++) {
        const struct chan *ch = &nd->parts[p].tab->c[nd->parts[p].ch];
        r = view_make(&v[p], nd->parts[p].tab->g[ch->grp].t, ch->w, ch->n, -INFINITY, INFINITY);
    }
    size_t n = r == 0 ? v[0].n : 0;
    if (r == 0 && n > 0) {
        ret->t = malloc(2 * n * sizeof *ret->t);
        ret->w = malloc(2 * n * sizeof *ret->w);
        if (!ret->t || !ret->w)
            r = -ENOMEM;
    }
    for (size_t k = 0; r == 0 && k < n; k++) {
        double t = v[0].t[k], sum = v[0].v[k];
        for (size_t p = 1; p < nd->nparts && isfinite(sum); p++) {
            const struct view *x = &v[p];
            while (cur[p] + 1 < x->n && x->t[cur[p] + 1] <= t)
                cur[p]++;
            size_t c = cur[p];
            if (x->n == 0 || x->t[c] > t)
                sum = NAN;
            else if (x->t[c] == t)
                sum += x->v[c];
            else if (c + 1 < x->n && x->t[c + 1] - x->t[c] <= cr->gap)
                sum += x->v[c] + (t - x->t[c]) / (x->t[c + 1] - x->t[c]) * (x->v[c + 1] - x->v[c]);
            else
                sum = NAN;
        }
        if (k > 0 && t - v[0].t[k - 1] > cr->gap) {
            ret->t[ret->n] = (t + v[0].t[k - 1]) / 2;
            ret->w[ret->n++] = NAN;
        }
        ret->t[ret->n] = t;
        ret->w[ret->n++] = sum;
    }
    for (size_t p = 0; v && p < nd->nparts; p++)
        view_free(&v[p]);
    free(v);
    free(cur);
    return r;
}

void collectreport_timeline_free(struct collectreport_timeline *tl)
{
    if (!tl)
        return;
    json_decref(tl->report);
    for (size_t i = 0; i < tl->nnodes; i++) {
        free(tl->nodes[i].t);
        free(tl->nodes[i].w);
    }
    free(tl->nodes);
    if (tl->priv) {
        cr_free(tl->priv);
        free(tl->priv);
    }
    memset(tl, 0, sizeof *tl);
}

int collectreport_timeline_load(const char *dir, const struct collectreport_opts *o,
                                struct collectreport_timeline *ret, struct carma_err *e)
{
    memset(ret, 0, sizeof *ret);
    struct cr *cr = calloc(1, sizeof *cr);
    if (!cr)
        return carma_err_set(e, -ENOMEM, "out of memory");
    ret->priv = cr;
    int r = build_keep(dir, o, cr, &ret->report, e);
    if (r == 0 && !(ret->nodes = calloc(cr->nnodes ? cr->nnodes : 1, sizeof *ret->nodes)))
        r = carma_err_set(e, -ENOMEM, "out of memory");
    for (size_t i = 0; r == 0 && i < cr->nnodes; i++) {
        ret->nnodes++;
        if (node_series(cr, &cr->nodes[i], &ret->nodes[i]) < 0)
            r = carma_err_set(e, -ENOMEM, "out of memory");
    }
    if (r == 0) {
        const json_t *run = json_array_get(json_object_get(ret->report, "windows"), 0);
        ret->t0 = jsonutil_get_num(run, "start_unix");
        ret->t1 = jsonutil_get_num(run, "end_unix");
        ret->max_gap_s = cr->gap;
    }
    if (r < 0)
        collectreport_timeline_free(ret);
    return r;
}

/* ---- --follow ---- */

struct collectreport_follow {
    char *dir;
    struct collectreport_opts o;
    struct cr cr;
    bool init;
};

struct collectreport_follow *collectreport_follow_new(const char *dir,
                                                      const struct collectreport_opts *o)
{
    struct collectreport_follow *f = calloc(1, sizeof *f);
    if (!f || !(f->dir = strdup(dir))) {
        free(f);
        return NULL;
    }
    if (o)
        f->o = *o;
    return f;
}

int collectreport_follow_poll(struct collectreport_follow *f, bool final, json_t **ret,
                              struct carma_err *e)
{
    int r = 0;
    if (!f->init) {
        if ((r = cr_init(&f->cr, f->dir, &f->o, e)) < 0)
            return r;
        f->init = true;
    }
    if ((r = cr_load(&f->cr, !final, e)) < 0)
        return r;
    return cr_report(&f->cr, &f->o, ret, e);
}

void collectreport_follow_free(struct collectreport_follow *f)
{
    if (!f)
        return;
    if (f->init)
        cr_free(&f->cr);
    free(f->dir);
    free(f);
}

int collectreport_follow_write(const char *dir, const json_t *rep, const char *json_out,
                               struct carma_err *e)
{
    char *js = pyjson_dumps(rep, 2), *text = collectreport_text(rep);
    int r = 0;
    if (!js || !text) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    size_t n = strlen(js);
    js[n] = '\n';
    char p[4200], q[4200];
    snprintf(p, sizeof p, "%s/report.json", dir);
    snprintf(q, sizeof q, "%s/report.txt", dir);
    const char *paths[] = {p, json_out, q};
    for (int k = 0; k < 3 && r == 0; k++) {
        if (!paths[k])
            continue;
        r = k < 2 ? file_replace(paths[k], js, n + 1) : file_replace(q, text, strlen(text));
        if (r < 0)
            r = carma_err_set(e, r, "cannot write %s: %s", paths[k], strerror(-r));
    }
out:
    free(js);
    free(text);
    return r;
}

struct collectreport_follow_thread {
    struct collectreport_follow *f;
    int64_t period_ns;
    const char *json_out;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    size_t written;
    int last_r; /* the last poll's error (but "nothing yet"), or 0 */
    struct carma_err last_e;
};

static void *follow_main(void *arg)
{
    struct collectreport_follow_thread *t = arg;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        int64_t ns = (int64_t)until.tv_nsec + t->period_ns % 1000000000LL;
        until.tv_sec += (time_t)(t->period_ns / 1000000000LL + ns / 1000000000LL);
        until.tv_nsec = (long)(ns % 1000000000LL);
        while (!t->stop && pthread_cond_timedwait(&t->wake, &t->lock, &until) == 0)
            ;
        bool final = t->stop;
        pthread_mutex_unlock(&t->lock);
        struct carma_err e = {0};
        json_t *rep = NULL;
        int r = collectreport_follow_poll(t->f, final, &rep, &e);
        if (r == 0)
            r = collectreport_follow_write(t->f->dir, rep, t->json_out, &e);
        json_decref(rep);
        pthread_mutex_lock(&t->lock);
        t->written += r == 0;
        t->last_r = r < 0 && (r != -ENODATA || final) ? r : 0;
        if (t->last_r < 0)
            t->last_e = e;
        if (final)
            break;
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

struct collectreport_follow_thread *
collectreport_follow_thread_start(struct collectreport_follow *f, int64_t period_ns,
                                  const char *json_out, struct carma_err *e)
{
    struct collectreport_follow_thread *t = calloc(1, sizeof *t);
    if (!t) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    t->f = f;
    t->json_out = json_out;
    t->period_ns = period_ns > 0 ? period_ns : 30000000000LL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, &ca);
    pthread_condattr_destroy(&ca);
    /* no signal for this thread: the command waits for its own with them blocked */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = pthread_create(&t->thread, NULL, follow_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        pthread_cond_destroy(&t->wake);
        pthread_mutex_destroy(&t->lock);
        free(t);
        carma_err_set(e, -r, "cannot start the report thread: %s", strerror(r));
        return NULL;
    }
    return t;
}

int collectreport_follow_thread_stop(struct collectreport_follow_thread *t, size_t *ret_written,
                                     struct carma_err *e)
{
    if (!t)
        return 0;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    int r = t->last_r;
    if (r < 0 && e)
        *e = t->last_e;
    if (ret_written)
        *ret_written = t->written;
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    free(t);
    return r;
}

/* ---- text ---- */

struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || grow((void **)&b->p, &b->cap, b->n + (size_t)k + 1, 1) < 0) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

static const char *fnum(char *buf, size_t cap, const json_t *o, const char *key, const char *fmt)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return "-";
    snprintf(buf, cap, fmt, json_number_value(v));
    return buf;
}

char *collectreport_text(const json_t *rep)
{
    struct sbuf b = {0};
    char x1[64], x2[64], x3[64], x4[64], x5[64], x6[64];
    sb_printf(&b, "carma collect report: %s (edges %s, gap limit %s s)\n",
              jsonutil_get_str(rep, "dir"), jsonutil_get_str(rep, "edges"),
              fnum(x1, sizeof x1, rep, "max_gap_s", "%.3f"));
    const json_t *cov = json_object_get(rep, "coverage");
    size_t i;
    const json_t *c;
    sb_printf(&b, "coverage:\n");
    json_array_foreach(cov, i, c)
    {
        sb_printf(&b, "  %-20s first %s  last %s  largest gap %s s  blank rows %lld\n",
                  jsonutil_get_str(c, "node"), fnum(x1, sizeof x1, c, "first_sample_unix", "%.3f"),
                  fnum(x2, sizeof x2, c, "last_sample_unix", "%.3f"),
                  fnum(x3, sizeof x3, c, "largest_gap_s", "%.3f"),
                  (long long)json_integer_value(json_object_get(c, "blank_rows")));
    }
    const json_t *ws = json_object_get(rep, "windows"), *w;
    json_array_foreach(ws, i, w)
    {
        sb_printf(&b, "\nwindow %s (%s): %s .. %s (%s s)\n", jsonutil_get_str(w, "name"),
                  jsonutil_get_str(w, "source"), fnum(x1, sizeof x1, w, "start_unix", "%.3f"),
                  fnum(x2, sizeof x2, w, "end_unix", "%.3f"),
                  fnum(x3, sizeof x3, w, "duration_s", "%.3f"));
        const json_t *wa = json_object_get(w, "warnings"), *s;
        size_t k;
        json_array_foreach(wa, k, s) sb_printf(&b, "  warning: %s\n", json_string_value(s));
        const json_t *job = json_object_get(w, "job");
        sb_printf(&b, "  job: %s J, avg %s W (%s), %s g CO2e\n",
                  fnum(x1, sizeof x1, job, "energy_j", "%.3f"),
                  fnum(x2, sizeof x2, job, "avg_power_w", "%.3f"), jsonutil_get_str(job, "method"),
                  fnum(x3, sizeof x3, job, "carbon_g_co2e", "%.4f"));
        if (json_is_number(json_object_get(w, "tokens")))
            sb_printf(&b, "  tokens %s: %s tokens/s, %s tokens/s/W, %s J/token\n",
                      fnum(x1, sizeof x1, w, "tokens", "%.0f"),
                      fnum(x2, sizeof x2, job, "tokens_per_s", "%.3f"),
                      fnum(x3, sizeof x3, job, "tokens_per_s_per_w", "%.6f"),
                      fnum(x4, sizeof x4, job, "j_per_token", "%.6f"));
        const json_t *n;
        json_array_foreach(json_object_get(w, "nodes"), k, n)
        {
            const json_t *cb = json_object_get(n, "carbon");
            sb_printf(&b,
                      "  node %-20s %14s J  avg %10s W  p50 %10s W  max %10s W  %s, %s%s, "
                      "covered %s s, %s g CO2e (%s)\n",
                      jsonutil_get_str(n, "node"), fnum(x1, sizeof x1, n, "energy_j", "%.3f"),
                      fnum(x2, sizeof x2, n, "avg_power_w", "%.3f"),
                      fnum(x3, sizeof x3, n, "p50_w", "%.3f"),
                      fnum(x4, sizeof x4, n, "max_w", "%.3f"), jsonutil_get_str(n, "method"),
                      jsonutil_get_str(n, "energy_source"),
                      json_is_true(json_object_get(n, "down")) ? ", DOWN" : "",
                      fnum(x5, sizeof x5, n, "covered_s", "%.3f"),
                      fnum(x6, sizeof x6, cb, "g_co2e", "%.4f"),
                      jsonutil_get_str(cb, "intensity_source"));
        }
        json_array_foreach(json_object_get(w, "kinds"), k, n)
        {
            sb_printf(&b, "  kind %-8s %14s J  avg %10s W  (%s)\n", jsonutil_get_str(n, "kind"),
                      fnum(x1, sizeof x1, n, "energy_j", "%.3f"),
                      fnum(x2, sizeof x2, n, "avg_power_w", "%.3f"), jsonutil_get_str(n, "method"));
        }
        json_array_foreach(json_object_get(w, "channels"), k, n)
        {
            sb_printf(&b,
                      "  channel %s %s %s: %s J (%s, trapezoid %s J, drift %s %%, %lld "
                      "reset%s) avg %s W p50 %s W (%s)\n",
                      jsonutil_get_str(n, "node"), jsonutil_get_str(n, "target"),
                      jsonutil_get_str(n, "channel"), fnum(x1, sizeof x1, n, "energy_j", "%.3f"),
                      jsonutil_get_str(n, "energy_source"),
                      fnum(x2, sizeof x2, n, "trapezoid_j", "%.3f"),
                      fnum(x3, sizeof x3, n, "drift_pct", "%.3f"),
                      (long long)json_integer_value(json_object_get(n, "resets")),
                      json_integer_value(json_object_get(n, "resets")) == 1 ? "" : "s",
                      fnum(x4, sizeof x4, n, "avg_power_w", "%.3f"),
                      fnum(x5, sizeof x5, n, "p50_w", "%.3f"), jsonutil_get_str(n, "method"));
        }
    }
    const json_t *wr = json_object_get(rep, "warnings"), *s;
    if (json_array_size(wr))
        sb_printf(&b, "\nwarnings:\n");
    json_array_foreach(wr, i, s) sb_printf(&b, "  %s\n", json_string_value(s));
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
