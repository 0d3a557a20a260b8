/*
 * collectreport_load: samples.csv and nodes.csv of a collect directory read into series, and the
 * nodes made of them (see collectreport_load.h).
 */
#include "report/collectreport_load.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/collector.h"
#include "core/array.h"
#include "core/fastnum.h"
#include "rundir/rundir.h"

static const char *const SAMPLES_COLS[] = {
    "schema_version", "timestamp_unix", "scrape_seq", "node",   "target", "channel",
    "source",         "kind",           "domain",     "method", "watts",  "joules_total"};
static const char *const NODES_COLS[] = {
    "schema_version", "timestamp_unix", "scrape_seq",   "node",           "target",
    "method",         "watts",          "joules_total", "cpu_util_total", "cpu_util_user",
    "cpu_util_nice",  "cpu_util_sys",   "cpu_util_irq"};

static void tab_free(struct cr_tab *t)
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

int collectreport_load_warn(struct cr *cr, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return json_array_append_new(cr->warnings, json_string(buf)) < 0 ? -ENOMEM : 0;
}

/* The group of (node, target) in t, made when new; -ENOMEM. */
static long tab_group(struct cr_tab *t, const char *node, const char *target)
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
    if (array_grow((void **)&t->g, &cap, t->ng + 1, sizeof *t->g) < 0)
        return -ENOMEM;
    struct cr_grp *g = &t->g[t->ng];
    memset(g, 0, sizeof *g);
    g->node = strdup(node);
    g->target = strdup(target);
    t->ng++;
    if (!g->node || !g->target)
        return -ENOMEM;
    return (long)(t->cur = t->ng - 1);
}

/* The channel named channel of group gi, made when new; -ENOMEM. */
static long tab_chan(struct cr_tab *t, size_t gi, const char *channel, const char *source,
                     const char *kind, const char *domain)
{
    struct cr_grp *g = &t->g[gi];
    if (g->hint < g->nch && strcmp(t->c[g->chans[g->hint]].channel, channel) == 0)
        return (long)g->chans[g->hint++];
    for (size_t k = 0; k < g->nch; k++)
        if (strcmp(t->c[g->chans[k]].channel, channel) == 0) {
            g->hint = k + 1;
            return (long)g->chans[k];
        }
    size_t cap = t->nc, gcap = g->nch;
    if (array_grow((void **)&t->c, &cap, t->nc + 1, sizeof *t->c) < 0 ||
        array_grow((void **)&g->chans, &gcap, g->nch + 1, sizeof *g->chans) < 0)
        return -ENOMEM;
    struct cr_chan *c = &t->c[t->nc];
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
static int chan_at(struct cr_chan *c, size_t i)
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

static int chan_need_j(struct cr_chan *c)
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
static int tab_read(struct cr *cr, struct cr_tab *t, struct cr_reader *rd, const char *name,
                    bool nodes, bool follow, struct carma_err *e)
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
        struct cr_grp *g = &t->g[gi];
        if (g->n > 0 && ts < g->t[g->n - 1]) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: timestamp_unix goes back in time for target %s",
                              l.path, l.line, f[4]);
            break;
        }
        if (blank) {
            size_t bc = g->blank_cap;
            if (array_grow((void **)&g->blank_t, &bc, g->nblank + 1, sizeof *g->blank_t) < 0) {
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
            if (array_grow((void **)&g->t, &tc, g->n + 1, sizeof *g->t) < 0) {
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
        struct cr_chan *c = &t->c[ci];
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

static bool is_dcgm(const struct cr_chan *c)
{
    return strcmp(c->source, "dcgm") == 0;
}

long collectreport_load_node_find(struct cr *cr, const char *name)
{
    for (size_t i = 0; i < cr->nnodes; i++)
        if (strcmp(cr->nodes[i].name, name) == 0)
            return (long)i;
    return -1;
}

static int node_add_part(struct cr_node *nd, const struct cr_tab *t, size_t ch)
{
    struct cr_part *p = realloc(nd->parts, (nd->nparts + 1) * sizeof *p);
    if (!p)
        return -ENOMEM;
    nd->parts = p;
    p[nd->nparts++] = (struct cr_part){t, ch};
    return 0;
}

static int cmp_node(const void *a, const void *b)
{
    return strcmp(((const struct cr_node *)a)->name, ((const struct cr_node *)b)->name);
}

int collectreport_load_nodes(struct cr *cr)
{
    const struct cr_tab *tabs[2] = {&cr->s, &cr->n};
    for (size_t ti = 0; ti < 2; ti++)
        for (size_t i = 0; i < tabs[ti]->ng; i++) {
            const char *name = tabs[ti]->g[i].node;
            if (collectreport_load_node_find(cr, name) >= 0)
                continue;
            struct cr_node *v = realloc(cr->nodes, (cr->nnodes + 1) * sizeof *v);
            if (!v)
                return -ENOMEM;
            cr->nodes = v;
            memset(&v[cr->nnodes], 0, sizeof *v);
            if (!(v[cr->nnodes].name = strdup(name)))
                return -ENOMEM;
            cr->nnodes++;
        }
    if (cr->nnodes > 1) /* qsort(NULL, 0, ...) is undefined: no nodes before the first scrape */
        qsort(cr->nodes, cr->nnodes, sizeof *cr->nodes, cmp_node);
    for (size_t ni = 0; ni < cr->nnodes; ni++) {
        struct cr_node *nd = &cr->nodes[ni];
        for (size_t c = 0; c < cr->n.nc; c++)
            if (strcmp(cr->n.g[cr->n.c[c].grp].node, nd->name) == 0 && node_add_part(nd, &cr->n, c))
                return -ENOMEM;
        nd->from_nodes_csv = nd->nparts > 0;
        bool carma_gpu = false;
        for (size_t c = 0; c < cr->s.nc; c++) {
            const struct cr_chan *ch = &cr->s.c[c];
            if (strcmp(cr->s.g[ch->grp].node, nd->name) == 0 && !is_dcgm(ch) &&
                strcmp(ch->kind, "gpu") == 0)
                carma_gpu = true;
        }
        for (size_t c = 0; c < cr->s.nc; c++) {
            const struct cr_chan *ch = &cr->s.c[c];
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

bool collectreport_load_in_kind(const struct cr *cr, size_t c)
{
    const struct cr_chan *ch = &cr->s.c[c];
    if (!is_dcgm(ch))
        return strcmp(ch->domain, "total") == 0;
    long ni = -1;
    for (size_t i = 0; i < cr->nnodes; i++)
        if (strcmp(cr->nodes[i].name, cr->s.g[ch->grp].node) == 0)
            ni = (long)i;
    if (ni < 0)
        return false;
    const struct cr_node *nd = &cr->nodes[ni];
    for (size_t p = 0; p < nd->nparts; p++)
        if (nd->parts[p].tab == &cr->s && nd->parts[p].ch == c)
            return true;
    return false;
}

void collectreport_load_nodes_free(struct cr *cr)
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

void collectreport_load_free(struct cr *cr)
{
    tab_free(&cr->s);
    tab_free(&cr->n);
    collectreport_load_nodes_free(cr);
    series_scratch_done(&cr->sc);
    free(cr->stat_v);
    json_decref(cr->warnings);
    json_decref(cr->load_warnings);
    memset(cr, 0, sizeof *cr);
}

int collectreport_load_init(struct cr *cr, const char *dir, const struct collectreport_opts *o,
                            struct carma_err *e)
{
    memset(cr, 0, sizeof *cr);
    cr->dir = dir;
    cr->samples = collect_samples_name(dir);
    cr->edges = o->edges;
    cr->pue = o->pue > 0 ? o->pue : 1.0;
    cr->load_warnings = json_array();
    return cr->load_warnings ? 0 : carma_err_set(e, -ENOMEM, "out of memory");
}

int collectreport_load_read(struct cr *cr, bool follow, struct carma_err *e)
{
    int r = tab_read(cr, &cr->s, &cr->rs, cr->samples, false, follow, e);
    if (r == 0)
        r = tab_read(cr, &cr->n, &cr->rn, "nodes.csv", true, follow, e);
    return r;
}
