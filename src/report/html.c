/*
 * html: the self-contained HTML report (see html.h).
 *
 * The page is written through a memory stream (open_memstream): tables from the report's JSON
 * (the full data), charts from report/svg over the series (downsampled there).
 */
#include "report/html.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/channel_kind.h"
#include "core/jsonutil.h"
#include "report/svg.h"
#include "rundir/rundir.h"

#define DEFAULT_POINTS 1500
#define DEFAULT_BINS   1500

static const char css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;"
    "color:#1d232a;background:#fff}\n"
    "main{max-width:1100px;margin:0 auto;padding:16px 24px 48px}\n"
    "h1{font-size:22px;margin:8px 0 2px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px "
    "solid #dde1e6;padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}\n"
    ".sub{color:#5b6570;margin:0 0 8px}\n"
    "table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums}\n"
    "th,td{padding:3px 10px;border-bottom:1px solid #e6e9ed;text-align:right;white-space:nowrap}"
    "\nth{background:#f4f6f8;font-weight:600}td.l,th.l{text-align:left}\n"
    "tr.total td{font-weight:600;border-top:2px solid #c9ced4}\n"
    ".scroll{overflow-x:auto}\n"
    "figure.chart{margin:10px 0 18px}figure.chart svg{width:100%;height:auto;display:block}\n"
    "svg text{font:11px system-ui,sans-serif;fill:#3c454f}svg text.title{font-size:13px;"
    "font-weight:600;fill:#1d232a}\n"
    "svg text.ytick{text-anchor:end}svg text.xtick,svg text.xlabel{text-anchor:middle}\n"
    "svg text.ylabel{text-anchor:middle}svg line.grid{stroke:#eceff2}svg line.axis{stroke:#8a939c}"
    "\n"
    "ul.legend{list-style:none;padding:0;margin:2px 0 0 64px;display:flex;flex-wrap:wrap;gap:4px "
    "16px;font-size:12px}\n"
    ".swatch{display:inline-block;width:22px;height:0;border-top:3px solid;vertical-align:middle;"
    "margin-right:6px}.swatch.dashed{border-top-style:dashed}\n"
    ".tag{font-size:11px;padding:0 5px;border-radius:3px;background:#eef1f4;color:#3c454f}\n"
    ".tag.measured{background:#e3f1e6;color:#1f6b32}.tag.estimated{background:#fdf0dc;color:"
    "#8a5a00}\n"
    "ul.warn li{color:#8a3a00}\n"
    "footer{color:#5b6570;font-size:12px;margin-top:32px}\n"
    "details{margin:4px 0}summary{cursor:pointer;font-weight:600;margin:6px 0}\n";

/* ---- small writers ---- */

static void esc(FILE *f, const char *s)
{
    svg_escape(f, s ? s : "");
}

/* A number with dec decimals (thousands separated by a thin space), or "–" when unknown. */
static void num(FILE *f, double x, int dec)
{
    if (!isfinite(x)) {
        fputs("–", f);
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%.*f", dec, fabs(x));
    char *dot = strchr(buf, '.');
    size_t intlen = dot ? (size_t)(dot - buf) : strlen(buf);
    if (x < 0 && strspn(buf, "0.") != strlen(buf))
        fputc('-', f);
    for (size_t i = 0; i < intlen; i++) {
        if (i > 0 && (intlen - i) % 3 == 0)
            fputs("&#8201;", f);
        fputc(buf[i], f);
    }
    if (dot)
        fputs(dot, f);
}

/* A number chosen to show about 4 significant digits. */
static void num_auto(FILE *f, double x)
{
    double a = fabs(x);
    if (x == 0) {
        fputc('0', f);
        return;
    }
    num(f, x,
        !isfinite(x) || a >= 1000 ? 0
        : a >= 100                ? 1
        : a >= 10                 ? 2
        : a >= 1                  ? 3
        : a >= 0.01               ? 4
                                  : 6);
}

static void td_num(FILE *f, double x)
{
    fputs("<td>", f);
    num_auto(f, x);
    fputs("</td>", f);
}

static void td_int(FILE *f, double x)
{
    fputs("<td>", f);
    num(f, x, 0);
    fputs("</td>", f);
}

static void td_str(FILE *f, const char *s)
{
    fputs("<td class=\"l\">", f);
    esc(f, s);
    fputs("</td>", f);
}

static void tag(FILE *f, const char *method)
{
    if (!method)
        return;
    fprintf(f, " <span class=\"tag %s\">",
            strcmp(method, "measured") == 0    ? "measured"
            : strcmp(method, "estimated") == 0 ? "estimated"
                                               : "");
    esc(f, method);
    fputs("</span>", f);
}

/* A workload's type (the experiment's "type": its kind, as the user names it). */
static void kind_tag(FILE *f, const char *type)
{
    if (!type)
        return;
    fputs(" <span class=\"tag kind\">", f);
    esc(f, type);
    fputs("</span>", f);
}

static void utc(FILE *f, double t)
{
    if (!isfinite(t)) {
        fputs("–", f);
        return;
    }
    if (!(fabs(t) < 1e15)) { /* beyond any date gmtime knows */
        fputs("–", f);
        return;
    }
    time_t s = (time_t)floor(t);
    struct tm tm;
    if (!gmtime_r(&s, &tm)) {
        fputs("–", f);
        return;
    }
    char buf[40];
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    fputs(buf, f);
}

static const char *version(const struct html_opts *o)
{
    return o && o->version ? o->version : "";
}

static void page_open(FILE *f, const struct html_opts *o, const char *title, const char *sub)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"carma ",
          f);
    esc(f, version(o));
    fputs("\">\n<title>", f);
    esc(f, title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n<h1>", css);
    esc(f, title);
    fputs("</h1>\n<p class=\"sub\">", f);
    esc(f, sub);
    fputs("</p>\n", f);
}

static void page_close(FILE *f, const struct html_opts *o)
{
    time_t now = time(NULL);
    fputs("<footer>Written by carma ", f);
    esc(f, version(o));
    fputs(" on ", f);
    utc(f, (double)now);
    fputs(". Charts are downsampled for display (largest-triangle-three-buckets); the tables "
          "come from the full data.</footer>\n</main>\n</body>\n</html>\n",
          f);
}

/* The warnings of every window of a report (strings), once each, as a list. */
static void warnings(FILE *f, const json_t *report, const char *key)
{
    fputs("<section id=\"warnings\"><h2>Warnings</h2>\n", f);
    size_t shown = 0, i, k;
    const json_t *w, *s;
    json_array_foreach(report, i, w)
    {
        json_array_foreach(json_object_get(w, key), k, s)
        {
            const char *msg = json_string_value(s);
            if (!msg)
                continue;
            /* once each: an earlier window may have said it */
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++) {
                size_t q;
                const json_t *o;
                json_array_foreach(json_object_get(json_array_get(report, j), key), q,
                                   o) if (json_string_value(o) &&
                                          strcmp(json_string_value(o), msg) == 0) seen = true;
            }
            if (seen)
                continue;
            fputs(shown++ ? "<li>" : "<ul class=\"warn\"><li>", f);
            const char *wname = jsonutil_get_str(w, "name");
            if (wname) {
                esc(f, wname);
                fputs(": ", f);
            }
            esc(f, msg);
            fputs("</li>\n", f);
        }
    }
    fputs(shown ? "</ul>\n" : "<p>None.</p>\n", f);
    fputs("</section>\n", f);
}

/* A breakdown table (rows of label, joules, power statistics). */
static void brow_table(FILE *f, const char *id, const json_t *rows, bool kinds)
{
    fprintf(f, "<div class=\"scroll\"><table id=\"%s\"><tr><th class=\"l\">series</th>", id);
    if (kinds)
        fputs("<th class=\"l\">kind</th>", f);
    fputs("<th>energy (J)</th><th>avg (W)</th><th>min</th><th>p5</th><th>p50</th><th>p95</th>"
          "<th>p99</th><th>max (W)</th><th>samples</th></tr>\n",
          f);
    size_t i;
    const json_t *r;
    json_array_foreach(rows, i, r)
    {
        fputs("<tr><td class=\"l\">", f);
        esc(f, jsonutil_get_str(r, "label"));
        if (kinds)
            tag(f, jsonutil_get_str(r, "method"));
        fputs("</td>", f);
        if (kinds)
            td_str(f, jsonutil_get_str(r, "kind") ? jsonutil_get_str(r, "kind") : "");
        td_num(f, jsonutil_get_num(r, "joules"));
        td_num(f, jsonutil_get_num(r, "avg_power_w"));
        static const char *const k[] = {"min_w", "p5_w", "p50_w", "p95_w", "p99_w", "max_w"};
        for (size_t q = 0; q < 6; q++)
            td_num(f, jsonutil_get_num(r, k[q]));
        fputs("<td>", f);
        num(f, jsonutil_get_num(r, "samples"), 0);
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* ---- carma run / stat directories ---- */

enum group { G_CPU, G_DRAM, G_GPU, G_SYSTEM, G_OTHER, G_N };
static const char *const group_title[G_N] = {"CPU", "DRAM", "GPU", "System", "Other"};
static const char *const group_id[G_N] = {"power-cpu", "power-dram", "power-gpu", "power-system",
                                          "power-other"};

static enum group kind_group(const char *kind)
{
    if (!kind)
        return G_OTHER;
    if (strcmp(kind, "cpu") == 0 || strcmp(kind, "soc") == 0)
        return G_CPU;
    if (strcmp(kind, "dram") == 0)
        return G_DRAM;
    if (strcmp(kind, "gpu") == 0)
        return G_GPU;
    if (strcmp(kind, "system") == 0)
        return G_SYSTEM;
    return G_OTHER;
}

/*
 * A channel's watts with a missing value (NAN) put where the ticks pause for more than 2.5
 * intervals, so that its line breaks over a gap. Arrays malloc'ed into *x, *y; the count.
 */
static size_t with_breaks(const struct runreport_chan_tl *c, double interval, double **x,
                          double **y)
{
    *x = malloc((2 * c->n + 1) * sizeof **x);
    *y = malloc((2 * c->n + 1) * sizeof **y);
    if (!*x || !*y) {
        free(*x);
        free(*y);
        *x = *y = NULL;
        return 0;
    }
    size_t m = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (i > 0 && c->t[i] - c->t[i - 1] > 2.5 * interval) {
            (*x)[m] = (c->t[i] + c->t[i - 1]) / 2;
            (*y)[m++] = NAN;
        }
        (*x)[m] = c->t[i];
        (*y)[m++] = c->w[i];
    }
    return m;
}

/* ---- marks: a timeline over the power charts ---- */

/* x with 4 significant digits (no fewer than its integer digits), plain, for a tooltip (which
 * is text): "–" when unknown. */
static const char *snum(char buf[48], double x)
{
    if (!isfinite(x))
        return "–";
    double a = fabs(x);
    int dec = a == 0 ? 0 : 3 - (int)floor(log10(a));
    snprintf(buf, 48, "%.*f", dec < 0 ? 0 : dec > 12 ? 12 : dec, x);
    return buf;
}

/* Whether report window w is a mark's (its key says "mark": "window" of a run's, "source" of a
 * collect report's). */
static bool is_mark(const json_t *w, const char *key)
{
    const char *v = jsonutil_get_str(w, key);
    return v && strcmp(v, "mark") == 0;
}

#define NAME_COLORS 32 /* names given a color each, in order; the rest by a hash of the name */

struct name_colors {
    const char *name[NAME_COLORS];
    size_t n;
};

static int name_color(struct name_colors *nc, const char *name)
{
    name = name ? name : "";
    for (size_t k = 0; k < nc->n; k++)
        if (strcmp(nc->name[k], name) == 0)
            return (int)k;
    if (nc->n < NAME_COLORS) {
        nc->name[nc->n] = name;
        return (int)nc->n++;
    }
    unsigned h = 5381;
    for (const char *p = name; *p; p++)
        h = h * 33 + (unsigned char)*p;
    return (int)(h % 1000);
}

/*
 * The marked windows of a page: a bar each for the timeline (its tooltip the window's figures),
 * the first lane's again as bands behind the power charts, the events as ticks, and the time
 * range every chart of the timeline's axis spans.
 */
struct marks_tl {
    size_t n, nlanes, ntop, nev;
    struct svg_band *b, *top;
    struct svg_tick *ev;
    char **text; /* the tooltips, n + nev */
    double lo, hi;
};

static void marks_tl_free(struct marks_tl *m)
{
    for (size_t i = 0; m->text && i < m->n + m->nev; i++)
        free(m->text[i]);
    free(m->text);
    free(m->b);
    free(m->top);
    free(m->ev);
    memset(m, 0, sizeof *m);
}

static void marks_tl_widen(struct marks_tl *m, double x)
{
    if (isfinite(x)) {
        m->lo = fmin(m->lo, x);
        m->hi = fmax(m->hi, x);
    }
}

/* Room for n windows and nev events; the lanes and bands once the windows are in. */
static int marks_tl_alloc(struct marks_tl *m, size_t n, size_t nev)
{
    memset(m, 0, sizeof *m);
    m->lo = INFINITY;
    m->hi = -INFINITY;
    m->b = calloc(n ? n : 1, sizeof *m->b);
    m->top = calloc(n ? n : 1, sizeof *m->top);
    m->ev = calloc(nev ? nev : 1, sizeof *m->ev);
    m->text = calloc(n + nev ? n + nev : 1, sizeof *m->text);
    if (!m->b || !m->top || !m->ev || !m->text) {
        marks_tl_free(m);
        return -ENOMEM;
    }
    return 0;
}

/* The lanes, and the windows of each group's first lane as the bands behind the charts. */
static int marks_tl_lanes(struct marks_tl *m)
{
    int r = svg_lanes(m->b, m->n, &m->nlanes);
    size_t first[SVG_LANES_MAX + 1];
    const char *gname[SVG_LANES_MAX];
    size_t ng = 0;
    for (size_t i = 0; r == 0 && i < m->n; i++) {
        size_t g = 0;
        while (g < ng && !(gname[g] == m->b[i].group ||
                           (gname[g] && m->b[i].group && strcmp(gname[g], m->b[i].group) == 0)))
            g++;
        if (g == ng && ng < SVG_LANES_MAX) {
            gname[ng] = m->b[i].group;
            first[ng++] = m->b[i].lane;
        }
        if (g < ng && m->b[i].lane < first[g])
            first[g] = m->b[i].lane;
    }
    for (size_t i = 0; r == 0 && i < m->n; i++) {
        size_t g = 0;
        while (g < ng && !(gname[g] == m->b[i].group ||
                           (gname[g] && m->b[i].group && strcmp(gname[g], m->b[i].group) == 0)))
            g++;
        if (g < ng && m->b[i].lane == first[g])
            m->top[m->ntop++] = m->b[i];
    }
    return r;
}

/* A run's mark window's tooltip: who marked it, when, its energies, counts and flags. */
static char *run_mark_title(const json_t *w, double t0)
{
    char *buf = NULL, a[48], b[48], c[48];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    const char *wl = jsonutil_get_str(w, "workload"), *by = jsonutil_get_str(w, "ended_by");
    double s0 = jsonutil_get_num(w, "start_unix"), s1 = jsonutil_get_num(w, "end_unix");
    fprintf(f, "%s (mark %lld)\n%s%s%s%s\n", jsonutil_get_str(w, "name"),
            (long long)json_integer_value(json_object_get(w, "mark_id")),
            wl ? "workload " : "no workload", wl ? wl : "", by ? ", ended by " : "", by ? by : "");
    fprintf(f, "%+.3f s to %+.3f s since the run's start: %.3f s\n", s0 - t0, s1 - t0, s1 - s0);
    fprintf(f, "node %s J", snum(a, jsonutil_get_num(w, "node_total_joules")));
    if (json_is_number(json_object_get(w, "job_joules")))
        fprintf(f, ", job %s J, other jobs %s J", snum(b, jsonutil_get_num(w, "job_joules")),
                snum(c, jsonutil_get_num(w, "other_jobs_joules")));
    if (json_is_integer(json_object_get(w, "tokens")))
        fprintf(f, "\ntokens %lld: %s J/token",
                (long long)json_integer_value(json_object_get(w, "tokens")),
                snum(a, jsonutil_get_num(w, "joules_per_token")));
    fprintf(f, "\n%.1f %% interpolated within ticks",
            100 * jsonutil_get_num(w, "interpolated_fraction"));
    if (json_is_true(json_object_get(w, "unended")))
        fputs("\nunended: carma closed it when the measurement ended", f);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The mark windows of a run's report and the events of its marks.csv. */
static int run_marks(const struct runreport_timeline *tl, struct marks_tl *m)
{
    size_t n = 0, nev = 0, i;
    const json_t *w;
    json_array_foreach(tl->report, i, w) n += is_mark(w, "window");
    for (size_t k = 0; k < tl->nmarks; k++)
        nev += tl->marks[k].id < 0;
    if (marks_tl_alloc(m, n, nev) < 0)
        return -ENOMEM;
    struct name_colors nc = {.n = 0};
    json_array_foreach(tl->report, i, w)
    {
        if (!is_mark(w, "window"))
            continue;
        struct svg_band *b = &m->b[m->n];
        if (!(m->text[m->n] = run_mark_title(w, tl->t0)))
            goto oom;
        *b = (struct svg_band){.label = jsonutil_get_str(w, "name"),
                               .title = m->text[m->n],
                               .id = json_integer_value(json_object_get(w, "mark_id")),
                               .x0 = jsonutil_get_num(w, "start_unix"),
                               .x1 = jsonutil_get_num(w, "end_unix"),
                               .flagged = json_is_true(json_object_get(w, "unended")),
                               .color = name_color(&nc, jsonutil_get_str(w, "name")),
                               .group = jsonutil_get_str(w, "workload")
                                            ? jsonutil_get_str(w, "workload")
                                            : "no workload"};
        marks_tl_widen(m, b->x0);
        marks_tl_widen(m, b->x1);
        m->n++;
    }
    for (size_t k = 0; k < tl->nmarks; k++) {
        const struct rundir_mark *e = &tl->marks[k];
        if (e->id >= 0)
            continue;
        char v[48];
        char *t = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&t, &len);
        if (!f)
            goto oom;
        fprintf(f, "%s = %s at %+.3f s%s%s%s", e->name, snum(v, e->value), e->t0 - tl->t0,
                e->workload[0] ? " (workload " : "", e->workload, e->workload[0] ? ")" : "");
        bool bad = ferror(f) != 0;
        if (fclose(f) != 0 || bad) {
            free(t);
            goto oom;
        }
        m->text[m->n + m->nev] = t;
        m->ev[m->nev++] = (struct svg_tick){.title = t, .x = e->t0};
        marks_tl_widen(m, e->t0);
    }
    if (marks_tl_lanes(m) < 0)
        goto oom;
    for (size_t k = 0; k < tl->nch; k++)
        for (size_t q = 0; q < tl->ch[k].n; q++)
            if (isfinite(tl->ch[k].w[q]))
                marks_tl_widen(m, tl->ch[k].t[q]);
    return 0;
oom:
    marks_tl_free(m);
    return -ENOMEM;
}

/* The timeline of the marks, on the axis of the charts below it. */
static int marks_timeline(FILE *f, const struct marks_tl *m, const char *id, double x0,
                          const char *x_label)
{
    if (m->n == 0 && m->nev == 0)
        return 0;
    char title[96];
    if (m->nev)
        snprintf(title, sizeof title, "Marked windows (%zu) and events (%zu)", m->n, m->nev);
    else
        snprintf(title, sizeof title, "Marked windows (%zu)", m->n);
    struct svg_chart ch = {.id = id,
                           .title = title,
                           .x_label = x_label,
                           .x0 = x0,
                           .width = 1000,
                           .x_fixed = true,
                           .x_min = m->lo,
                           .x_max = m->hi,
                           .flag_note = "hatched, dashed: unended (carma closed it at the end)"};
    return svg_timeline(f, &ch, m->b, m->n, m->ev, m->nev);
}

#define MARKS_TABLE_OPEN 30 /* mark windows listed open; more are folded */

/* The table of a run's mark windows. */
static void run_marks_table(FILE *f, const struct runreport_timeline *tl)
{
    size_t i, n = 0;
    bool jobs = false, tokens = false; /* columns shown only when some window has them */
    const json_t *w;
    json_array_foreach(tl->report, i, w)
    {
        if (!is_mark(w, "window"))
            continue;
        n++;
        jobs = jobs || json_is_number(json_object_get(w, "job_joules"));
        tokens = tokens || json_is_integer(json_object_get(w, "tokens"));
    }
    if (n == 0)
        return;
    fprintf(f,
            "<section id=\"marks\"><h2>Marked windows</h2>\n<p class=\"sub\">%zu window%s marked "
            "by the programs (<code>carma mark</code>, libcarma, the Python module), in the order "
            "they began; times since the run's start.%s</p>\n",
            n, n == 1 ? "" : "s",
            jobs ? " Job: the energy attributed to the workload that began the window; other "
                   "jobs: to the other workloads."
                 : "");
    bool fold = n > MARKS_TABLE_OPEN;
    if (fold)
        fprintf(f, "<details><summary>the %zu windows</summary>\n", n);
    fputs("<div class=\"scroll\"><table id=\"marks-table\"><tr><th class=\"l\">mark</th>"
          "<th>id</th><th class=\"l\">workload</th><th>begin (s)</th><th>length (s)</th>"
          "<th>node (J)</th>",
          f);
    if (jobs)
        fputs("<th>job (J)</th><th>others (J)</th>", f);
    if (tokens)
        fputs("<th>tokens</th><th>J/token</th>", f);
    fputs("<th title=\"the part of the window interpolated within ticks\">interp. (%)</th>"
          "</tr>\n",
          f);
    json_array_foreach(tl->report, i, w)
    {
        if (!is_mark(w, "window"))
            continue;
        fprintf(f, "<tr data-id=\"%lld\"><td class=\"l\">",
                (long long)json_integer_value(json_object_get(w, "mark_id")));
        esc(f, jsonutil_get_str(w, "name"));
        if (json_is_true(json_object_get(w, "unended")))
            fputs(" <span class=\"tag estimated\">unended</span>", f);
        if (jsonutil_get_num(w, "duration_seconds") < 2 * tl->interval_s)
            fputs(" <span class=\"tag\">under 2 ticks</span>", f);
        fputs("</td>", f);
        td_int(f, jsonutil_get_num(w, "mark_id"));
        fputs("<td class=\"l\">", f);
        esc(f, jsonutil_get_str(w, "workload") ? jsonutil_get_str(w, "workload") : "–");
        if (jsonutil_get_str(w, "ended_by")) {
            fputs(", ended by ", f);
            esc(f, jsonutil_get_str(w, "ended_by"));
        }
        fputs("</td><td>", f);
        num(f, jsonutil_get_num(w, "start_unix") - tl->t0, 3);
        fputs("</td><td>", f);
        num(f, jsonutil_get_num(w, "duration_seconds"), 3);
        fputs("</td>", f);
        td_num(f, jsonutil_get_num(w, "node_total_joules"));
        if (jobs) {
            td_num(f, jsonutil_get_num(w, "job_joules"));
            td_num(f, jsonutil_get_num(w, "other_jobs_joules"));
        }
        if (tokens) {
            td_int(f, jsonutil_get_num(w, "tokens"));
            td_num(f, jsonutil_get_num(w, "joules_per_token"));
        }
        fputs("<td>", f);
        num(f, 100 * jsonutil_get_num(w, "interpolated_fraction"), 1);
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);
    if (fold)
        fputs("</details>\n", f);
    fputs("</section>\n", f);
}

static int run_power_charts(FILE *f, const struct runreport_timeline *tl, const struct marks_tl *mk,
                            size_t maxp)
{
    fputs("<section id=\"power\"><h2>Power over time, by domain</h2>\n"
          "<p class=\"sub\">Each channel's power at every tick; measured channels solid, estimated "
          "ones dashed. A component channel (a part of another) is shown, never added.</p>\n",
          f);
    int r = marks_timeline(f, mk, "marks-timeline", tl->t0, "time since the run's start");
    for (int g = 0; g < G_N && r == 0; g++) {
        size_t n = 0;
        for (size_t k = 0; k < tl->nch; k++)
            n += kind_group(tl->ch[k].kind) == (enum group)g;
        if (n == 0)
            continue;
        struct svg_series *s = calloc(n, sizeof *s);
        double **xs = calloc(n, sizeof *xs), **ys = calloc(n, sizeof *ys);
        if (!s || !xs || !ys) {
            free(s);
            free(xs);
            free(ys);
            return -ENOMEM;
        }
        size_t q = 0;
        for (size_t k = 0; k < tl->nch; k++) {
            const struct runreport_chan_tl *c = &tl->ch[k];
            if (kind_group(c->kind) != (enum group)g)
                continue;
            size_t m = with_breaks(c, tl->interval_s, &xs[q], &ys[q]);
            if (c->n > 0 && m == 0)
                r = -ENOMEM;
            s[q] = (struct svg_series){.label = c->name,
                                       .x = xs[q],
                                       .y = ys[q],
                                       .n = m,
                                       .dashed = c->method && strcmp(c->method, "estimated") == 0,
                                       .color = (int)q};
            q++;
        }
        char title[64];
        snprintf(title, sizeof title, "%s power (W)", group_title[g]);
        struct svg_chart ch = {.id = group_id[g],
                               .title = title,
                               .x_label = "time since the run's start",
                               .y_label = "W",
                               .x0 = tl->t0,
                               .y_from_zero = true,
                               .width = 1000,
                               .height = 300,
                               .max_points = maxp,
                               .x_fixed = mk->n + mk->nev > 0,
                               .x_min = mk->lo,
                               .x_max = mk->hi,
                               .bands = mk->top,
                               .nbands = mk->ntop};
        if (r == 0)
            r = svg_lines(f, &ch, s, n, false);
        for (size_t k = 0; k < n; k++) {
            free(xs[k]);
            free(ys[k]);
        }
        free(xs);
        free(ys);
        free(s);
    }
    fputs("</section>\n", f);
    return r;
}

static int run_job_charts(FILE *f, const struct runreport_timeline *tl, size_t maxp)
{
    fputs("<section id=\"jobs-over-time\"><h2>Attributed power and energy per job</h2>\n", f);
    if (tl->nbins == 0 || tl->njobs == 0) {
        fputs("<p>No attribution.csv: nothing to show per job.</p></section>\n", f);
        return 0;
    }
    size_t n = tl->njobs, nb = tl->nbins;
    struct svg_series *s = calloc(n, sizeof *s);
    double *cum = malloc(n * nb * sizeof *cum), *co2 = malloc(n * nb * sizeof *co2);
    double *x = malloc((nb + 1) * sizeof *x);
    if (!s || !cum || !co2 || !x) {
        free(s);
        free(cum);
        free(co2);
        free(x);
        return -ENOMEM;
    }
    double dt = (tl->t1 - tl->t0) / (double)nb;
    /* stacked: each bin's power drawn at the bin's middle */
    for (size_t i = 0; i < nb; i++)
        x[i] = tl->t0 + ((double)i + 0.5) * dt;
    double gk = isfinite(tl->g_per_kwh) ? tl->g_per_kwh * (isfinite(tl->pue) ? tl->pue : 1) : NAN;
    for (size_t k = 0; k < n; k++) {
        double acc = 0;
        for (size_t i = 0; i < nb; i++) {
            acc += tl->jobs[k].w[i] * dt;
            cum[k * nb + i] = acc;
            co2[k * nb + i] = acc / 3.6e6 * gk;
        }
        s[k] = (struct svg_series){.label = tl->jobs[k].name,
                                   .x = tl->bin_t,
                                   .y = tl->jobs[k].w,
                                   .n = nb,
                                   .color = (int)k};
    }
    struct svg_chart ch = {.id = "jobs-power",
                           .title = "Attributed power per job, stacked (W)",
                           .x_label = "time since the run's start",
                           .y_label = "W",
                           .x0 = tl->t0,
                           .y_from_zero = true,
                           .width = 1000,
                           .height = 320,
                           .max_points = maxp};
    int r = nb >= 2 ? svg_stacked(f, &ch, x, nb, s, n) : 0;
    for (size_t k = 0; k < n && r == 0; k++)
        s[k].y = cum + k * nb;
    ch.id = "jobs-energy";
    ch.title = "Cumulative energy per job (J)";
    ch.y_label = "J";
    ch.height = 280;
    if (r == 0)
        r = svg_lines(f, &ch, s, n, false);
    for (size_t k = 0; k < n && r == 0; k++)
        s[k].y = co2 + k * nb;
    ch.id = "jobs-co2e";
    ch.title = "Cumulative operational CO2e per job (g)";
    ch.y_label = "gCO2e";
    if (r == 0 && isfinite(gk))
        r = svg_lines(f, &ch, s, n, false);
    fputs("</section>\n", f);
    free(s);
    free(cum);
    free(co2);
    free(x);
    return r;
}

static void exit_cell(FILE *f, const json_t *w)
{
    fputs("<td class=\"l\">", f);
    const json_t *st = json_object_get(w, "exit_status"), *sig = json_object_get(w, "signal");
    if (json_is_true(json_object_get(w, "timed_out")))
        fputs("timed out ", f);
    if (json_is_integer(sig) && json_integer_value(sig) > 0)
        fprintf(f, "signal %lld", (long long)json_integer_value(sig));
    else if (json_is_integer(st))
        fprintf(f, "%lld", (long long)json_integer_value(st));
    else
        fputs("–", f);
    fputs("</td>", f);
}

static void run_summary(FILE *f, const struct runreport_timeline *tl)
{
    const json_t *rep = tl->run_json;
    const json_t *ws = json_object_get(rep, "workloads");
    fprintf(f, "<section id=\"summary\"><h2>%s</h2>\n",
            json_array_size(ws) ? "Summary per job" : "Summary");
    if (!json_array_size(ws)) {
        const json_t *win = json_array_get(tl->report, 0);
        fputs("<p>Node energy over the run: <b>", f);
        num_auto(f, jsonutil_get_num(win, "node_total_joules"));
        fputs(" J</b>; operational ", f);
        num_auto(f, jsonutil_get_num(json_object_get(win, "carbon"), "operational_g_co2e"));
        fputs(" gCO2e.</p>\n", f);
        /* carma stat: the command's share of the node's CPU-side energy (summary.json) */
        const json_t *cmd = json_object_get(rep, "command");
        if (json_is_object(cmd)) {
            fputs("<table id=\"command\"><tr><th class=\"l\">command</th><th>CPU energy "
                  "(J)</th><th>share of the node's CPU energy</th><th>CPU time (s)</th><th>node "
                  "busy time (s)</th><th>dynamic CPU energy (J)</th></tr>\n<tr><td class=\"l\">",
                  f);
            size_t q;
            const json_t *a;
            json_array_foreach(json_object_get(tl->manifest, "command"), q, a)
            {
                if (q)
                    fputc(' ', f);
                esc(f, json_string_value(a));
            }
            tag(f, jsonutil_get_str(cmd, "method"));
            fputs("</td>", f);
            td_num(f, jsonutil_get_num(cmd, "cpu_energy_j"));
            td_num(f, jsonutil_get_num(cmd, "cpu_share"));
            td_num(f, jsonutil_get_num(cmd, "cpu_time_s"));
            td_num(f, jsonutil_get_num(cmd, "node_busy_time_s"));
            td_num(f, jsonutil_get_num(cmd, "dynamic_cpu_energy_j"));
            fputs("</tr>\n</table>\n", f);
        }
        fputs("</section>\n", f);
        return;
    }
    /* the kinds that have energy in some job */
    enum { SHOWN_KINDS = KIND_OTHER }; /* cpu, dram, soc, gpu, system: all but other */
    bool show[SHOWN_KINDS] = {false};
    size_t nshow = 0, i;
    const json_t *w;
    json_array_foreach(ws, i, w)
    {
        for (size_t k = 0; k < SHOWN_KINDS; k++) {
            double j =
                jsonutil_get_num(json_object_get(w, "energy_by_kind_j"), channel_kind_name(k));
            if (!show[k] && isfinite(j) && j != 0) {
                show[k] = true;
                nshow++;
            }
        }
    }
    fputs("<div class=\"scroll\"><table id=\"jobs\"><tr><th class=\"l\">job</th><th>duration "
          "(s)</th><th class=\"l\">exit</th><th>energy (J)</th>",
          f);
    for (size_t k = 0; k < SHOWN_KINDS; k++)
        if (show[k])
            fprintf(f, "<th>%s (J)</th>", channel_kind_name(k));
    fputs("<th>avg power (W)</th><th>operational (gCO2e)</th><th>embodied (gCO2e)</th><th "
          "class=\"l\">embodied sources</th></tr>\n",
          f);
    json_array_foreach(ws, i, w)
    {
        fputs("<tr><td class=\"l\">", f);
        esc(f, jsonutil_get_str(w, "name"));
        kind_tag(f, jsonutil_get_str(w, "type"));
        tag(f, jsonutil_get_str(w, "method"));
        fputs("</td>", f);
        td_num(f, jsonutil_get_num(w, "duration_s"));
        exit_cell(f, w);
        td_num(f, jsonutil_get_num(w, "energy_j"));
        const json_t *bk = json_object_get(w, "energy_by_kind_j");
        for (size_t k = 0; k < SHOWN_KINDS; k++)
            if (show[k])
                td_num(f, jsonutil_get_num(bk, channel_kind_name(k)));
        td_num(f, jsonutil_get_num(w, "avg_power_w"));
        td_num(f, jsonutil_get_num(w, "operational_g_co2e"));
        td_num(f, jsonutil_get_num(w, "embodied_g_co2e"));
        fputs("<td class=\"l\">", f);
        size_t q;
        const json_t *em;
        json_array_foreach(json_object_get(w, "embodied"), q, em)
        {
            if (q)
                fputs("; ", f);
            esc(f, jsonutil_get_str(em, "device"));
            fputs(": ", f);
            esc(f, jsonutil_get_str(em, "source"));
            if (json_is_true(json_object_get(em, "declared")))
                fputs(" (declared: no such device measured)", f);
        }
        fputs("</td></tr>\n", f);
    }
    static const char *const extra[] = {"idle", "other", "unattributed"};
    for (size_t k = 0; k < 3; k++) {
        double j = jsonutil_get_num(json_object_get(rep, extra[k]), "energy_j");
        if (!isfinite(j))
            continue;
        fprintf(f, "<tr><td class=\"l\">%s</td><td></td><td></td>", extra[k]);
        td_num(f, j);
        for (size_t q = 0; q < nshow + 4; q++)
            fputs("<td></td>", f);
        fputs("</tr>\n", f);
    }
    const json_t *carbon = json_object_get(rep, "carbon");
    fputs("<tr class=\"total\"><td class=\"l\">run</td>", f);
    td_num(f, jsonutil_get_num(rep, "duration_s"));
    fputs("<td></td>", f);
    td_num(f, jsonutil_get_num(rep, "total_energy_j"));
    for (size_t q = 0; q < nshow + 1; q++)
        fputs("<td></td>", f);
    td_num(f, jsonutil_get_num(carbon, "operational_g_co2e"));
    td_num(f, jsonutil_get_num(carbon, "embodied_g_co2e"));
    fputs("<td></td></tr>\n</table></div>\n", f);
    fputs("<p class=\"sub\">Operational and embodied carbon are reported side by side, never "
          "summed. Energies count the node's channels after the baseline; jobs + idle + other + "
          "unattributed = the run's energy.</p>\n</section>\n",
          f);
}

static void kv_row(FILE *f, const char *k, const json_t *v)
{
    fputs("<tr><td class=\"l\">", f);
    esc(f, k);
    fputs("</td><td class=\"l\">", f);
    if (json_is_string(v)) {
        esc(f, json_string_value(v));
    } else if (v) {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
        esc(f, s ? s : "");
        free(s);
    } else {
        fputs("–", f);
    }
    fputs("</td></tr>\n", f);
}

static void run_settings(FILE *f, const struct runreport_timeline *tl)
{
    fputs("<section id=\"settings\"><h2>Settings</h2>\n<table id=\"settings-table\">\n", f);
    const json_t *host = json_object_get(tl->manifest, "host");
    kv_row(f, "producer", json_object_get(tl->manifest, "producer"));
    kv_row(f, "carma version", json_object_get(tl->manifest, "carma_version"));
    kv_row(f, "status", json_object_get(tl->manifest, "status"));
    if (json_is_object(json_object_get(tl->manifest, "interruption")))
        kv_row(f, "interruption", json_object_get(tl->manifest, "interruption"));
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)host, k, v)
    {
        char key[96];
        snprintf(key, sizeof key, "host.%s", k);
        kv_row(f, key, v);
    }
    json_object_foreach(json_object_get(tl->manifest, "options"), k, v)
    {
        char key[96];
        snprintf(key, sizeof key, "options.%s", k);
        kv_row(f, key, v);
    }
    json_object_foreach(json_object_get(tl->run_json, "attribution"), k, v)
    {
        char key[96];
        snprintf(key, sizeof key, "attribution.%s", k);
        kv_row(f, key, v);
    }
    const json_t *carbon = json_object_get(tl->run_json, "carbon");
    kv_row(f, "carbon.g_per_kwh", json_object_get(carbon, "g_per_kwh"));
    kv_row(f, "carbon.intensity_source", json_object_get(carbon, "intensity_source"));
    kv_row(f, "carbon.pue", json_object_get(carbon, "pue"));
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(tl->manifest, "channels"), i, c)
    {
        char key[160];
        snprintf(key, sizeof key, "channel %s",
                 jsonutil_get_str(c, "name") ? jsonutil_get_str(c, "name") : "?");
        char val[512];
        snprintf(val, sizeof val, "source %s: %s, %s, %s, %s (%s)",
                 jsonutil_get_str(c, "source") ? jsonutil_get_str(c, "source") : "?",
                 jsonutil_get_str(c, "kind") ? jsonutil_get_str(c, "kind") : "?",
                 jsonutil_get_str(c, "domain") ? jsonutil_get_str(c, "domain") : "?",
                 jsonutil_get_str(c, "method") ? jsonutil_get_str(c, "method") : "?",
                 jsonutil_get_str(c, "form") ? jsonutil_get_str(c, "form") : "?",
                 jsonutil_get_str(c, "path") ? jsonutil_get_str(c, "path") : "");
        json_t *s = json_string(val);
        kv_row(f, key, s);
        json_decref(s);
    }
    fputs("</table>\n</section>\n", f);
}

static void run_drift(FILE *f, const struct runreport_timeline *tl)
{
    const json_t *gpus = json_object_get(tl->run_json, "gpus");
    fputs("<section id=\"drift\"><h2>Counter against gauge</h2>\n", f);
    if (!json_array_size(gpus)) {
        fputs("<p>No GPU with both an energy counter and a power gauge in this run.</p>\n"
              "</section>\n",
              f);
        return;
    }
    fputs("<p class=\"sub\">Each power gauge integrated over the run against the energy counter "
          "over the same steps, in %.</p>\n<table id=\"drift-table\"><tr><th "
          "class=\"l\">GPU</th><th>energy (J)</th><th>drift (%)</th><th>power_usage "
          "(%)</th><th>power_instant (%)</th><th>power_average (%)</th><th>missing "
          "readings</th></tr>\n",
          f);
    size_t i;
    const json_t *g;
    json_array_foreach(gpus, i, g)
    {
        fputs("<tr>", f);
        td_str(f, jsonutil_get_str(g, "channel"));
        td_num(f, jsonutil_get_num(g, "energy_j"));
        td_num(f, jsonutil_get_num(g, "drift_pct"));
        const json_t *gd = json_object_get(g, "gauge_drift_pct");
        td_num(f, jsonutil_get_num(gd, "power_usage"));
        td_num(f, jsonutil_get_num(gd, "power_instant"));
        td_num(f, jsonutil_get_num(gd, "power_average"));
        fputs("<td>", f);
        num(f, jsonutil_get_num(g, "invalid_samples"), 0);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n</section>\n", f);
}

static void run_windows(FILE *f, const struct runreport_timeline *tl)
{
    fputs("<section id=\"windows\"><h2>Windows</h2>\n", f);
    size_t i;
    const json_t *w;
    json_array_foreach(tl->report, i, w)
    {
        const char *name = jsonutil_get_str(w, "name");
        fputs("<details", f);
        fputs(i == 0 ? " open><summary>" : "><summary>", f);
        if (is_mark(w, "window")) {
            const char *wl = jsonutil_get_str(w, "workload");
            fputs("mark ", f);
            esc(f, name);
            fprintf(f, " (id %lld, ", (long long)json_integer_value(json_object_get(w, "mark_id")));
            fputs(wl ? "workload " : "no workload", f);
            esc(f, wl);
            fputs(")", f);
            if (json_is_true(json_object_get(w, "unended")))
                fputs(" <span class=\"tag estimated\">unended</span>", f);
        } else if (name) {
            fputs("workload ", f);
            esc(f, name);
            kind_tag(f, jsonutil_get_str(w, "type"));
        } else {
            fputs("the whole run", f);
        }
        fputs(": ", f);
        num(f, jsonutil_get_num(w, "duration_seconds"), 3);
        fputs(" s from ", f);
        utc(f, jsonutil_get_num(w, "start_unix"));
        fputs("</summary>\n", f);
        char id[64];
        snprintf(id, sizeof id, "window-%zu", i);
        json_t *rows = json_array();
        json_array_extend(rows, json_object_get(w, "per_channel"));
        json_array_extend(rows, json_object_get(w, "per_node"));
        brow_table(f, id, rows, true);
        json_decref(rows);
        fputs("</details>\n", f);
    }
    fputs("</section>\n", f);
}

/* Closes the page's stream (which sets *buf and *len) and hands the page over, or frees it. */
static int finish(FILE *f, char **buf, size_t *len, char **ret, size_t *ret_len, int r,
                  struct carma_err *e)
{
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad)
        r = r < 0 ? r : -ENOMEM;
    if (r < 0) {
        free(*buf);
        return r == -ENOMEM ? carma_err_set(e, -ENOMEM, "out of memory") : r;
    }
    *ret = *buf;
    *ret_len = *len;
    return 0;
}

int html_run(const char *dir, const struct runreport_opts *ro, const struct html_opts *o,
             char **ret, size_t *ret_len, struct carma_err *e)
{
    size_t maxp = o && o->max_points ? o->max_points : DEFAULT_POINTS;
    size_t bins = o && o->bins ? o->bins : DEFAULT_BINS;
    struct runreport_timeline tl;
    int r = runreport_timeline_load(dir, ro, bins, &tl, e);
    if (r < 0)
        return r;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        runreport_timeline_free(&tl);
        return carma_err_set(e, -ENOMEM, "out of memory");
    }
    const char *exp = jsonutil_get_str(tl.run_json, "experiment");
    char title[300];
    snprintf(title, sizeof title, "carma report: %s",
             o && o->title ? o->title
             : exp         ? exp
             : tl.is_run   ? "carma run"
                           : "carma stat");
    char sub[1200];
    snprintf(sub, sizeof sub, "%s, %s directory, %.3f s", dir,
             tl.is_run ? "carma run" : "carma stat", tl.t1 - tl.t0);
    page_open(f, o, title, sub);
    fputs("<p class=\"sub\">From ", f);
    utc(f, tl.t0);
    fputs(" to ", f);
    utc(f, tl.t1);
    fputs(".</p>\n", f);
    run_summary(f, &tl);
    struct marks_tl mk;
    r = run_marks(&tl, &mk);
    if (r == 0)
        r = run_power_charts(f, &tl, &mk, maxp);
    marks_tl_free(&mk);
    if (r == 0)
        run_marks_table(f, &tl);
    if (r == 0)
        r = run_job_charts(f, &tl, maxp);
    if (r == 0) {
        run_windows(f, &tl);
        run_drift(f, &tl);
        run_settings(f, &tl);
        warnings(f, tl.report, "warnings");
        page_close(f, o);
    }
    runreport_timeline_free(&tl);
    return finish(f, &buf, &len, ret, ret_len, r, e);
}

/* ---- srt-slurm log directories ---- */

/* One chart of a series set (node, role, socket series), x relative to t0. */
static int srt_set_chart(FILE *f, const struct srt_log_series_set *set, const char *id,
                         const char *title, double t0, size_t maxp)
{
    if (set->n == 0)
        return 0;
    struct svg_series *s = calloc(set->n, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (size_t k = 0; k < set->n; k++)
        s[k] = (struct svg_series){.label = set->v[k].label,
                                   .x = set->v[k].t,
                                   .y = set->v[k].w,
                                   .n = set->v[k].n,
                                   .color = (int)k};
    struct svg_chart ch = {.id = id,
                           .title = title,
                           .x_label = "time since the first sample",
                           .y_label = "W",
                           .x0 = t0,
                           .y_from_zero = true,
                           .width = 1000,
                           .height = 300,
                           .max_points = maxp};
    int r = svg_lines(f, &ch, s, set->n, false);
    free(s);
    return r;
}

static double first_time(const struct srt_log *log)
{
    double t0 = INFINITY;
    const struct srt_log_series_set *sets[] = {&log->gpu_nodes, &log->cpu_nodes};
    for (size_t i = 0; i < 2; i++)
        for (size_t k = 0; k < sets[i]->n; k++)
            if (sets[i]->v[k].n > 0 && sets[i]->v[k].t[0] < t0)
                t0 = sets[i]->v[k].t[0];
    return isfinite(t0) ? t0 : 0;
}

static void srt_table(FILE *f, const json_t *reports)
{
    fputs("<section id=\"windows\"><h2>Per concurrency window</h2>\n<div class=\"scroll\"><table "
          "id=\"srt-windows\"><tr><th>concurrency</th><th class=\"l\">benchmark</th><th>duration "
          "(s)</th><th>GPU energy (J)</th><th>CPU energy (J)</th><th>combined (J)</th><th>output "
          "tok/s</th><th>tok/s per GPU W</th><th>tok/s per combined W</th><th>J / output "
          "token</th><th>J / total token</th></tr>\n",
          f);
    size_t i;
    const json_t *w;
    json_array_foreach(reports, i, w)
    {
        const json_t *pw = json_object_get(w, "perf_per_watt");
        const json_t *tm = json_object_get(json_object_get(w, "timing"), "computed");
        fputs("<tr><td>", f);
        num(f, jsonutil_get_num(w, "concurrency"), 0);
        fputs("</td>", f);
        td_str(f, jsonutil_get_str(w, "benchmark_type"));
        td_num(f, jsonutil_get_num(tm, "duration_seconds"));
        td_num(f, jsonutil_get_num(w, "gpu_total_joules"));
        td_num(f, jsonutil_get_num(w, "cpu_total_joules"));
        td_num(f, jsonutil_get_num(w, "combined_total_joules"));
        td_num(f, jsonutil_get_num(pw, "output_tokens_per_second"));
        td_num(f, jsonutil_get_num(pw, "output_tokens_per_second_per_gpu_watt"));
        td_num(f, jsonutil_get_num(pw, "output_tokens_per_second_per_combined_watt"));
        td_num(f, jsonutil_get_num(w, "joules_per_output_token"));
        td_num(f, jsonutil_get_num(w, "joules_per_total_token"));
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n</section>\n", f);
}

/* Each window's breakdown rows, folded. */
static void srt_details(FILE *f, const json_t *reports)
{
    fputs("<section id=\"window-details\"><h2>Breakdown per window</h2>\n", f);
    size_t i;
    const json_t *w;
    json_array_foreach(reports, i, w)
    {
        char id[64];
        snprintf(id, sizeof id, "window-%zu", i);
        fputs("<details><summary>concurrency ", f);
        num(f, jsonutil_get_num(w, "concurrency"), 0);
        fputs("</summary>\n", f);
        json_t *rows = json_array();
        static const char *const keys[] = {"gpu_per_node", "gpu_per_role", "gpu_per_device",
                                           "cpu_per_node", "cpu_per_socket"};
        for (size_t k = 0; k < 5; k++)
            json_array_extend(rows, json_object_get(w, keys[k]));
        brow_table(f, id, rows, false);
        json_decref(rows);
        fputs("</details>\n", f);
    }
    fputs("</section>\n", f);
}

static int srt_perf_charts(FILE *f, const json_t *reports, size_t maxp)
{
    size_t n = json_array_size(reports);
    if (n == 0)
        return 0;
    double *x = malloc(n * sizeof *x), *y = malloc(4 * n * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return -ENOMEM;
    }
    /* in order of concurrency (a sweep may run them in any order) */
    size_t *ord = malloc(n * sizeof *ord);
    if (!ord) {
        free(x);
        free(y);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i;
             j > 0 && jsonutil_get_num(json_array_get(reports, ord[j - 1]), "concurrency") >
                          jsonutil_get_num(json_array_get(reports, ord[j]), "concurrency");
             j--) {
            size_t tmp = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = tmp;
        }
    for (size_t i = 0; i < n; i++) {
        const json_t *w = json_array_get(reports, ord[i]);
        const json_t *pw = json_object_get(w, "perf_per_watt");
        x[i] = jsonutil_get_num(w, "concurrency");
        y[i] = jsonutil_get_num(pw, "output_tokens_per_second_per_gpu_watt");
        y[n + i] = jsonutil_get_num(pw, "output_tokens_per_second_per_combined_watt");
        y[2 * n + i] = jsonutil_get_num(w, "joules_per_output_token");
        y[3 * n + i] = jsonutil_get_num(w, "joules_per_total_token");
    }
    struct svg_series s[2] = {
        {.label = "output tok/s per GPU W", .x = x, .y = y, .n = n, .color = 0},
        {.label = "output tok/s per combined W", .x = x, .y = y + n, .n = n, .color = 1},
    };
    struct svg_chart ch = {.id = "perf-per-watt",
                           .title = "Perf per watt against concurrency",
                           .x_label = "concurrency",
                           .y_label = "tok/s per W",
                           .x_log2 = true,
                           .y_from_zero = true,
                           .width = 1000,
                           .height = 300,
                           .max_points = maxp};
    fputs("<section id=\"perf\"><h2>Perf per watt</h2>\n", f);
    int r = svg_lines(f, &ch, s, 2, true);
    struct svg_series t[2] = {
        {.label = "J per output token", .x = x, .y = y + 2 * n, .n = n, .color = 2},
        {.label = "J per total token", .x = x, .y = y + 3 * n, .n = n, .color = 3},
    };
    ch.id = "joules-per-token";
    ch.title = "Energy per token against concurrency";
    ch.y_label = "J per token";
    if (r == 0)
        r = svg_lines(f, &ch, t, 2, true);
    fputs("</section>\n", f);
    free(ord);
    free(x);
    free(y);
    return r;
}

int html_srt(const struct srt_log *log, const json_t *reports, const struct html_opts *o,
             char **ret, size_t *ret_len, struct carma_err *e)
{
    size_t maxp = o && o->max_points ? o->max_points : DEFAULT_POINTS;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return carma_err_set(e, -ENOMEM, "out of memory");
    char title[300];
    snprintf(title, sizeof title, "carma report: %s",
             o && o->title ? o->title : "srt-slurm benchmark");
    char sub[1200];
    snprintf(sub, sizeof sub, "%s: %zu window%s, GPU leg %s, CPU leg %s", log->log_dir,
             json_array_size(reports), json_array_size(reports) == 1 ? "" : "s",
             log->gpu_csv ? "present" : "absent", log->cpu_csv ? "present" : "absent");
    page_open(f, o, title, sub);
    srt_table(f, reports);
    int r = srt_perf_charts(f, reports, maxp);
    double t0 = first_time(log);
    if (r == 0)
        fputs("<section id=\"power\"><h2>Power over time</h2>\n", f);
    if (r == 0)
        r = srt_set_chart(f, &log->gpu_nodes, "power-gpu-nodes", "GPU power per node (W)", t0,
                          maxp);
    if (r == 0)
        r = srt_set_chart(f, &log->gpu_roles, "power-gpu-roles", "GPU power per role (W)", t0,
                          maxp);
    if (r == 0)
        r = srt_set_chart(f, &log->gpu_devices, "power-gpu-devices", "GPU power per device (W)", t0,
                          maxp);
    if (r == 0)
        r = srt_set_chart(f, &log->cpu_nodes, "power-cpu-nodes", "CPU power per node (W)", t0,
                          maxp);
    if (r == 0)
        r = srt_set_chart(f, &log->cpu_sockets, "power-cpu-sockets", "CPU power per socket (W)", t0,
                          maxp);
    if (r == 0) {
        fputs("</section>\n", f);
        srt_details(f, reports);
        warnings(f, reports, "warnings");
        page_close(f, o);
    }
    return finish(f, &buf, &len, ret, ret_len, r, e);
}

/* ---- carma collect directories ---- */

static const char *const collect_kinds[] = {"cpu", "dram", "soc", "gpu", "system", "other"};
#define COLLECT_KINDS (sizeof collect_kinds / sizeof *collect_kinds)

static void collect_windows_table(FILE *f, const json_t *rep)
{
    fputs("<section id=\"windows\"><h2>Windows</h2>\n<div class=\"scroll\"><table "
          "id=\"collect-windows\"><tr><th class=\"l\">window</th><th class=\"l\">source</th>"
          "<th class=\"l\">start</th><th>duration (s)</th><th>job energy (J)</th><th>avg power "
          "(W)</th><th>p50 (W)</th><th>max (W)</th><th>carbon (g CO2e)</th><th>tokens</th>"
          "<th>tok/s per W</th><th>J / token</th><th class=\"l\">method</th></tr>\n",
          f);
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(rep, "windows"), i, w)
    {
        const json_t *job = json_object_get(w, "job");
        fputs("<tr>", f);
        td_str(f, jsonutil_get_str(w, "name"));
        td_str(f, jsonutil_get_str(w, "source"));
        fputs("<td class=\"l\">", f);
        utc(f, jsonutil_get_num(w, "start_unix"));
        fputs("</td>", f);
        td_num(f, jsonutil_get_num(w, "duration_s"));
        td_num(f, jsonutil_get_num(job, "energy_j"));
        td_num(f, jsonutil_get_num(job, "avg_power_w"));
        td_num(f, jsonutil_get_num(job, "p50_w"));
        td_num(f, jsonutil_get_num(job, "max_w"));
        td_num(f, jsonutil_get_num(job, "carbon_g_co2e"));
        td_num(f, jsonutil_get_num(w, "tokens"));
        td_num(f, jsonutil_get_num(job, "tokens_per_s_per_w"));
        td_num(f, jsonutil_get_num(job, "j_per_token"));
        fputs("<td class=\"l\">", f);
        tag(f, jsonutil_get_str(job, "method"));
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n</section>\n", f);
}

static void collect_nodes_table(FILE *f, const json_t *rep)
{
    const json_t *run = json_array_get(json_object_get(rep, "windows"), 0);
    fputs("<section id=\"nodes\"><h2>Nodes over the whole run</h2>\n<div class=\"scroll\"><table "
          "id=\"collect-nodes\"><tr><th class=\"l\">node</th><th>energy (J)</th><th>avg power "
          "(W)</th><th>p5 (W)</th><th>p50 (W)</th><th>p95 (W)</th><th>max (W)</th><th "
          "class=\"l\">from</th><th>drift (%)</th><th>resets</th><th>covered (s)</th><th>down "
          "(s)</th><th>carbon (g CO2e)</th><th class=\"l\">intensity</th><th "
          "class=\"l\">method</th></tr>\n",
          f);
    size_t i;
    const json_t *n;
    json_array_foreach(json_object_get(run, "nodes"), i, n)
    {
        const json_t *cb = json_object_get(n, "carbon");
        fputs("<tr>", f);
        td_str(f, jsonutil_get_str(n, "node"));
        td_num(f, jsonutil_get_num(n, "energy_j"));
        td_num(f, jsonutil_get_num(n, "avg_power_w"));
        td_num(f, jsonutil_get_num(n, "p5_w"));
        td_num(f, jsonutil_get_num(n, "p50_w"));
        td_num(f, jsonutil_get_num(n, "p95_w"));
        td_num(f, jsonutil_get_num(n, "max_w"));
        char from[64];
        snprintf(from, sizeof from, "%s, %s", jsonutil_get_str(n, "basis"),
                 jsonutil_get_str(n, "energy_source"));
        td_str(f, from);
        td_num(f, jsonutil_get_num(n, "drift_pct"));
        td_int(f, jsonutil_get_num(n, "resets"));
        td_num(f, jsonutil_get_num(n, "covered_s"));
        td_num(f, jsonutil_get_num(n, "down_s"));
        td_num(f, jsonutil_get_num(cb, "g_co2e"));
        td_str(f, jsonutil_get_str(cb, "region"));
        fputs("<td class=\"l\">", f);
        tag(f, jsonutil_get_str(n, "method"));
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n</section>\n", f);
    fputs("<section id=\"coverage\"><h2>Coverage</h2>\n<div class=\"scroll\"><table "
          "id=\"collect-coverage\"><tr><th class=\"l\">node</th><th class=\"l\">first sample</th>"
          "<th class=\"l\">last sample</th><th>largest gap (s)</th><th>scrapes</th><th>blank "
          "rows</th></tr>\n",
          f);
    json_array_foreach(json_object_get(rep, "coverage"), i, n)
    {
        fputs("<tr>", f);
        td_str(f, jsonutil_get_str(n, "node"));
        fputs("<td class=\"l\">", f);
        utc(f, jsonutil_get_num(n, "first_sample_unix"));
        fputs("</td><td class=\"l\">", f);
        utc(f, jsonutil_get_num(n, "last_sample_unix"));
        fputs("</td>", f);
        td_num(f, jsonutil_get_num(n, "largest_gap_s"));
        td_int(f, jsonutil_get_num(n, "scrapes"));
        td_int(f, jsonutil_get_num(n, "blank_rows"));
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n</section>\n", f);
}

/* One window's energy per node, a bar per node stacked by kind (and the rest of the node's
 * energy that no kind channel holds). */
static void collect_energy_bars(FILE *f, const json_t *w, size_t wi)
{
    const json_t *nodes = json_object_get(w, "nodes");
    size_t nn = json_array_size(nodes);
    if (nn == 0)
        return;
    double top = 0;
    size_t i;
    const json_t *n;
    json_array_foreach(nodes, i, n)
    {
        double sum = 0, e = jsonutil_get_num(n, "energy_j");
        for (size_t k = 0; k < COLLECT_KINDS; k++) {
            double v = jsonutil_get_num(json_object_get(n, "energy_by_kind_j"), collect_kinds[k]);
            sum += isfinite(v) ? v : 0;
        }
        if (isfinite(e) && e > sum)
            sum = e;
        if (sum > top)
            top = sum;
    }
    if (!(top > 0))
        top = 1;
    const int W = 1000, H = 300, L = 64, R = 16, T = 28, B = 56;
    double first, step = svg_nice_step(0, top, 6, &first);
    double ymax = step > 0 ? ceil(top / step) * step : top;
    double bw = (double)(W - L - R) / (double)nn;
    fprintf(f,
            "<figure class=\"chart\"><svg id=\"energy-w%zu\" viewBox=\"0 0 %d %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">\n<text class=\"title\" x=\"%d\" "
            "y=\"16\">Energy per node (J): ",
            wi, W, H, L);
    esc(f, jsonutil_get_str(w, "name"));
    fputs("</text>\n", f);
    for (double y = 0; step > 0 && y <= ymax * (1 + 1e-9); y += step) {
        double py = T + (H - T - B) * (1 - y / ymax);
        fprintf(f,
                "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
                "<text class=\"ytick\" x=\"%d\" y=\"%.1f\">%.6g</text>\n",
                L, W - R, py, py, L - 6, py + 4, y);
    }
    json_array_foreach(nodes, i, n)
    {
        double x = L + bw * (double)i + bw * 0.15, y0 = 0, e = jsonutil_get_num(n, "energy_j");
        for (size_t k = 0; k <= COLLECT_KINDS; k++) {
            double v;
            if (k < COLLECT_KINDS) {
                v = jsonutil_get_num(json_object_get(n, "energy_by_kind_j"), collect_kinds[k]);
            } else {
                v = isfinite(e) ? e - y0 : NAN; /* the rest: in the node total, in no kind */
                if (v < 1e-9 * (e > 0 ? e : 1))
                    v = NAN;
            }
            if (!isfinite(v) || v <= 0)
                continue;
            double py1 = T + (H - T - B) * (1 - (y0 + v) / ymax);
            double py0 = T + (H - T - B) * (1 - y0 / ymax);
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
                    "<title>",
                    x, py1, bw * 0.7, py0 - py1, k < COLLECT_KINDS ? svg_color((int)k) : "#b8bec5");
            esc(f, jsonutil_get_str(n, "node"));
            fprintf(f, " %s: %.6g J</title></rect>\n",
                    k < COLLECT_KINDS ? collect_kinds[k] : "rest", v);
            y0 += v;
        }
        fprintf(f, "<text class=\"xtick\" x=\"%.1f\" y=\"%d\">", L + bw * ((double)i + 0.5),
                H - B + 16);
        esc(f, jsonutil_get_str(n, "node"));
        fputs("</text>\n", f);
    }
    fprintf(f, "<line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>\n</svg>\n", L, W - R,
            H - B, H - B);
    fputs("<ul class=\"legend\">", f);
    for (size_t k = 0; k <= COLLECT_KINDS; k++)
        fprintf(f, "<li><span class=\"swatch\" style=\"border-color:%s\"></span>%s</li>",
                k < COLLECT_KINDS ? svg_color((int)k) : "#b8bec5",
                k < COLLECT_KINDS ? collect_kinds[k] : "rest (node total, no kind channel)");
    fputs("</ul></figure>\n", f);
}

/* A collect window's tooltip (a mark's): its span, the job's energy and power, its tokens. */
static char *collect_mark_title(const json_t *w, double t0)
{
    char *buf = NULL, a[48], b[48];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    const json_t *job = json_object_get(w, "job");
    double s0 = jsonutil_get_num(w, "start_unix"), s1 = jsonutil_get_num(w, "end_unix");
    fprintf(f, "%s (mark)\n%+.3f s to %+.3f s since the first sample: %.3f s\n",
            jsonutil_get_str(w, "name"), s0 - t0, s1 - t0, s1 - s0);
    fprintf(f, "job %s J, %s W on average", snum(a, jsonutil_get_num(job, "energy_j")),
            snum(b, jsonutil_get_num(job, "avg_power_w")));
    if (json_is_number(json_object_get(w, "tokens")))
        fprintf(f, "\ntokens %.0f: %s J/token", jsonutil_get_num(w, "tokens"),
                snum(a, jsonutil_get_num(job, "j_per_token")));
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The mark windows of a collect report (source "mark"), and the range of its nodes' series. */
static int collect_marks(const struct collectreport_timeline *tl, struct marks_tl *m)
{
    const json_t *ws = json_object_get(tl->report, "windows"), *w;
    size_t n = 0, i;
    json_array_foreach(ws, i, w) n += is_mark(w, "source");
    if (marks_tl_alloc(m, n, 0) < 0)
        return -ENOMEM;
    struct name_colors nc = {.n = 0};
    long long id = 0;
    json_array_foreach(ws, i, w)
    {
        if (!is_mark(w, "source"))
            continue;
        if (!(m->text[m->n] = collect_mark_title(w, tl->t0))) {
            marks_tl_free(m);
            return -ENOMEM;
        }
        m->b[m->n] = (struct svg_band){.label = jsonutil_get_str(w, "name"),
                                       .title = m->text[m->n],
                                       .id = ++id,
                                       .x0 = jsonutil_get_num(w, "start_unix"),
                                       .x1 = jsonutil_get_num(w, "end_unix"),
                                       .color = name_color(&nc, jsonutil_get_str(w, "name"))};
        marks_tl_widen(m, m->b[m->n].x0);
        marks_tl_widen(m, m->b[m->n].x1);
        m->n++;
    }
    if (marks_tl_lanes(m) < 0) {
        marks_tl_free(m);
        return -ENOMEM;
    }
    for (size_t k = 0; k < tl->nnodes; k++)
        for (size_t q = 0; q < tl->nodes[k].n; q++)
            if (isfinite(tl->nodes[k].w[q]))
                marks_tl_widen(m, tl->nodes[k].t[q]);
    return 0;
}

int html_collect(const struct collectreport_timeline *tl, const struct html_opts *o, char **ret,
                 size_t *ret_len, struct carma_err *e)
{
    size_t maxp = o && o->max_points ? o->max_points : DEFAULT_POINTS;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return carma_err_set(e, -ENOMEM, "out of memory");
    const json_t *rep = tl->report;
    char title[300];
    snprintf(title, sizeof title, "carma report: %s", o && o->title ? o->title : "carma collect");
    char sub[1200];
    snprintf(sub, sizeof sub, "%s: %zu node%s, %zu window%s, %.3f s", jsonutil_get_str(rep, "dir"),
             tl->nnodes, tl->nnodes == 1 ? "" : "s",
             json_array_size(json_object_get(rep, "windows")),
             json_array_size(json_object_get(rep, "windows")) == 1 ? "" : "s", tl->t1 - tl->t0);
    page_open(f, o, title, sub);
    fputs("<p class=\"sub\">From ", f);
    utc(f, tl->t0);
    fputs(" to ", f);
    utc(f, tl->t1);
    fputs(".</p>\n", f);
    collect_windows_table(f, rep);
    collect_nodes_table(f, rep);
    int r = 0;
    fputs("<section id=\"power\"><h2>Power per node over time</h2>\n<p class=\"sub\">Each node's "
          "power (its nodes.csv total, else its total channels, with the dcgm-exporter GPUs "
          "that count in it); a break where a gap is over the limit.</p>\n",
          f);
    struct svg_series *s = calloc(tl->nnodes ? tl->nnodes : 1, sizeof *s);
    struct marks_tl mk = {.n = 0};
    if (!s)
        r = -ENOMEM;
    else if ((r = collect_marks(tl, &mk)) == 0)
        r = marks_timeline(f, &mk, "marks-timeline", tl->t0, "time since the first sample");
    for (size_t i = 0; r == 0 && i < tl->nnodes; i++)
        s[i] = (struct svg_series){.label = tl->nodes[i].node,
                                   .x = tl->nodes[i].t,
                                   .y = tl->nodes[i].w,
                                   .n = tl->nodes[i].n,
                                   .color = (int)i};
    struct svg_chart ch = {.id = "power-nodes",
                           .title = "Power per node (W)",
                           .x_label = "time since the first sample",
                           .y_label = "W",
                           .x0 = tl->t0,
                           .y_from_zero = true,
                           .width = 1000,
                           .height = 320,
                           .max_points = maxp};
    if (r == 0 && mk.n > 0) {
        ch.x_fixed = true;
        ch.x_min = mk.lo;
        ch.x_max = mk.hi;
        ch.bands = mk.top;
        ch.nbands = mk.ntop;
    }
    if (r == 0 && tl->nnodes > 0)
        r = svg_lines(f, &ch, s, tl->nnodes, false);
    marks_tl_free(&mk);
    free(s);
    if (r == 0) {
        fputs("</section>\n<section id=\"energy\"><h2>Energy per node per window, by kind</h2>\n",
              f);
        size_t i;
        const json_t *w;
        json_array_foreach(json_object_get(rep, "windows"), i, w) collect_energy_bars(f, w, i);
        fputs("</section>\n", f);
        fputs("<section id=\"warnings\"><h2>Warnings</h2>\n", f);
        const json_t *ws = json_object_get(rep, "warnings"), *m;
        if (json_array_size(ws) == 0)
            fputs("<p>None.</p>\n", f);
        else
            fputs("<ul class=\"warn\">", f);
        json_array_foreach(ws, i, m)
        {
            fputs("<li>", f);
            esc(f, json_string_value(m));
            fputs("</li>\n", f);
        }
        if (json_array_size(ws))
            fputs("</ul>\n", f);
        fputs("</section>\n", f);
        page_close(f, o);
    }
    return finish(f, &buf, &len, ret, ret_len, r, e);
}
