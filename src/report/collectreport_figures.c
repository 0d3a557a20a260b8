/*
 * collectreport_figures: the figures of a collect directory's report (see
 * collectreport_figures.h; the rules are in collectreport.c's comment): a part's samples around a
 * window (a view), its energy over the covered time (analysis/series.c: counter, trapezoid or
 * snap), the statistics of a sum of parts at the first one's sample times, down time, and each
 * window's channels, nodes (with their carbon, analysis/carbon.c), kinds and job.
 */
#include "report/collectreport_figures.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/carbon.h"
#include "analysis/series.h"
#include "core/channel_kind.h"
#include "core/iso8601.h"
#include "core/jsonutil.h"

/* ---- views ---- */

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

/* The finite samples of (t, v) in [a, b], with the last one before a and the first one after b. */
static int view_make(struct view *x, const double *t, const double *v, size_t n, double a, double b)
{
    memset(x, 0, sizeof *x);
    if (!v || n == 0)
        return 0;
    size_t lo = series_lower_bound(t, n, a), hi = series_upper_bound(t, n, b);
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

/*
 * Adds x's power at time t to *sum: its sample at t, or the line between the samples around t
 * where they are at most gap apart. *cur: the sample the last call stood at (t ascending from
 * call to call). false (nothing added) where x does not cover t.
 */
static inline bool view_add_at(const struct view *x, size_t *cur, double t, double gap, double *sum)
{
    while (*cur + 1 < x->n && x->t[*cur + 1] <= t)
        (*cur)++;
    size_t c = *cur;
    if (x->n == 0 || x->t[c] > t)
        return false;
    if (x->t[c] == t) {
        *sum += x->v[c];
        return true;
    }
    if (c + 1 < x->n && x->t[c + 1] - x->t[c] <= gap) {
        double f = (t - x->t[c]) / (x->t[c + 1] - x->t[c]);
        *sum += x->v[c] + f * (x->v[c + 1] - x->v[c]);
        return true;
    }
    return false;
}

/* ---- energy and statistics ---- */

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
        size_t k = series_lower_bound(v[p].t, v[p].n, a);
        in[p] = k < v[p].n && v[p].t[k] <= b;
        if (in[p] && grid == np)
            grid = p;
    }
    size_t cnt = 0;
    int r = 0;
    if (grid < np) {
        const struct view *g = &v[grid];
        size_t k0 = series_lower_bound(g->t, g->n, a), k1 = series_upper_bound(g->t, g->n, b);
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
                ok = view_add_at(&v[p], &cur[p], t, cr->gap, &sum);
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

static int part_eval(struct cr *cr, const struct cr_tab *t, size_t ci, double a, double b,
                     struct view *wv, struct pres *ret, struct carma_err *e)
{
    const struct cr_chan *c = &t->c[ci];
    const struct cr_grp *g = &t->g[c->grp];
    memset(ret, 0, sizeof *ret);
    ret->drift = NAN;
    int r = view_make(wv, g->t, c->w, c->n, a, b);
    if (r < 0)
        return carma_err_set(e, r, "out of memory");
    ret->samples = series_upper_bound(wv->t, wv->n, b) - series_lower_bound(wv->t, wv->n, a);
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

static int kind_index(const char *kind)
{
    int k = channel_kind_parse(kind);
    return k < 0 ? KIND_OTHER : k;
}

/* ---- down time ---- */

struct down {
    double down_s, longest_s, longest_at;
    size_t blanks;
};

/* How long group g was down within [a, b]: before its first time, gaps over the limit, after
 * its last; and its blank rows there. */
static void group_down(const struct cr *cr, const struct cr_grp *g, double a, double b,
                       struct down *d)
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
    size_t k0 = series_lower_bound(g->t, g->n, a);
    if (k0 > 0)
        k0--;
    for (size_t k = k0; k + 1 < g->n && g->t[k] < b; k++)
        if (g->t[k + 1] - g->t[k] > cr->gap)
            SPAN(g->t[k], g->t[k + 1]);
    if (b - g->t[g->n - 1] > cr->gap)
        SPAN(g->t[g->n - 1], b);
#undef SPAN
}

/* ---- the figures of a window, the coverage, a node's power ---- */

int collectreport_figures_window(struct cr *cr, const struct cr_win *w, json_t *out,
                                 struct carma_err *e)
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
        const struct cr_chan *ch = &cr->s.c[c];
        const struct cr_grp *g = &cr->s.g[ch->grp];
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
        const struct cr_node *nd = &cr->nodes[ni];
        double nj = 0, navg = 0, nest = 0, ntrap = 0, ncov = INFINITY;
        size_t nres_n = 0;
        unsigned nm = 0;
        bool ncounter = false, ntrapz = false, ncovered_any = false;
        json_t *parts = json_array();
        size_t v0 = jvn;
        for (size_t p = 0; p < nd->nparts; p++) {
            const struct cr_part *pt = &nd->parts[p];
            const struct cr_chan *ch = &pt->tab->c[pt->ch];
            const struct pres *pr = pt->tab == &cr->s ? &cres[pt->ch] : &nres[pt->ch];
            const struct cr_grp *g = &pt->tab->g[ch->grp];
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
                                json_string(pt->tab == &cr->s ? cr->samples : "nodes.csv"));
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
            const struct cr_chan *ch = &cr->s.c[c];
            if (strcmp(cr->s.g[ch->grp].node, nd->name) != 0 || !collectreport_load_in_kind(cr, c))
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
            const struct cr_grp *g = &cr->s.g[gi];
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
            np += collectreport_load_in_kind(cr, c) && kind_index(cr->s.c[c].kind) == k;
        struct view *kv = calloc(np ? np : 1, sizeof *kv);
        if (!kv) {
            r = -ENOMEM;
            break;
        }
        size_t kn = 0;
        for (size_t c = 0; c < cr->s.nc && r == 0; c++) {
            if (!collectreport_load_in_kind(cr, c) || kind_index(cr->s.c[c].kind) != k)
                continue;
            const struct cr_chan *ch = &cr->s.c[c];
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

json_t *collectreport_figures_coverage(const struct cr *cr)
{
    json_t *cov = json_array();
    for (size_t ni = 0; ni < cr->nnodes; ni++) {
        const struct cr_node *nd = &cr->nodes[ni];
        double first = INFINITY, last = -INFINITY, gap = 0;
        size_t samples = 0, blanks = 0;
        json_t *targets = json_array();
        for (size_t gi = 0; gi < cr->s.ng; gi++) {
            const struct cr_grp *g = &cr->s.g[gi];
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

int collectreport_figures_node_tl(struct cr *cr, const struct cr_node *nd,
                                  struct collectreport_node_tl *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->node = nd->name;
    if (nd->nparts == 0)
        return 0;
    struct view *v = calloc(nd->nparts, sizeof *v);
    size_t *cur = calloc(nd->nparts, sizeof *cur);
    int r = v && cur ? 0 : -ENOMEM;
    for (size_t p = 0; p < nd->nparts && r == 0; p++) {
        const struct cr_chan *ch = &nd->parts[p].tab->c[nd->parts[p].ch];
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
        for (size_t p = 1; p < nd->nparts && isfinite(sum); p++)
            if (!view_add_at(&v[p], &cur[p], t, cr->gap, &sum))
                sum = NAN;
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
