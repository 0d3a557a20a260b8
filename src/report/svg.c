/*
 * svg: inline SVG charts for the HTML report (see svg.h).
 */
#include "report/svg.h"

#include <assert.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/lttb.h"

/* Tableau 10: distinct on screen and in print. */
static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define NPALETTE (sizeof palette / sizeof palette[0])

const char *svg_color(int i)
{
    if (i < 0)
        i = -i;
    return palette[(size_t)i % NPALETTE];
}

void svg_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

double svg_nice_step(double lo, double hi, int max_ticks, double *first)
{
    if (!(hi > lo) || max_ticks < 1) {
        *first = lo;
        return 1;
    }
    double raw = (hi - lo) / max_ticks;
    double p = pow(10, floor(log10(raw)));
    double step = p;
    if (raw > 5 * p)
        step = 10 * p;
    else if (raw > 2 * p)
        step = 5 * p;
    else if (raw > p)
        step = 2 * p;
    *first = ceil(lo / step - 1e-9) * step;
    return step;
}

/* The plot area and the mapping of data to pixels. */
struct frame {
    double xlo, xhi, ylo, yhi;
    double L, R, T, B, W, H;
    bool log2;
    double x0;
    double xdiv; /* time axes: 1 (s), 60 (min) or 3600 (h) */
};

static double xval(const struct frame *f, double x)
{
    return f->log2 ? log2(x) : (x - f->x0) / f->xdiv;
}

/* A pixel coordinate as printed: never NaN or infinite (an SVG attribute cannot hold them),
 * held within ten chart sizes of the chart (NaN: at lo, the axis). */
static double pixel(double v, double lo, double size)
{
    if (isnan(v))
        return lo;
    return fmin(fmax(v, -10 * size), 11 * size);
}

static double px(const struct frame *f, double x)
{
    return pixel(f->L + (xval(f, x) - f->xlo) / (f->xhi - f->xlo) * (f->W - f->L - f->R), f->L,
                 f->W);
}

static double py(const struct frame *f, double y)
{
    return pixel(f->H - f->B - (y - f->ylo) / (f->yhi - f->ylo) * (f->H - f->T - f->B), f->H - f->B,
                 f->H);
}

/* A tick label: the shortest of %.0f .. %.3f that shows the step. */
static void tick_label(char *buf, size_t cap, double v, double step)
{
    int dec = 0;
    while (dec < 3 && fabs(step * pow(10, dec) - round(step * pow(10, dec))) > 1e-6)
        dec++;
    if (fabs(v) < step * 1e-9)
        v = 0;
    snprintf(buf, cap, "%.*f", dec, v);
}

static void frame_init(struct frame *f, const struct svg_chart *c, double xlo, double xhi,
                       double ylo, double yhi)
{
    memset(f, 0, sizeof *f);
    f->W = c->width > 0 ? c->width : 900;
    f->H = c->height > 0 ? c->height : 320;
    f->L = 64;
    f->R = 16;
    f->T = 30;
    f->B = 42;
    f->log2 = c->x_log2;
    f->x0 = c->x0;
    f->xdiv = 1;
    if (!c->x_log2) {
        double span = xhi - xlo;
        f->xdiv = span > 3 * 3600 ? 3600 : span > 3 * 60 ? 60 : 1;
    }
    if (!isfinite(xlo) || !isfinite(xhi)) {
        xlo = c->x_log2 ? 1 : c->x0;
        xhi = xlo + 1;
    }
    f->xlo = f->log2 ? log2(xlo) : (xlo - f->x0) / f->xdiv;
    f->xhi = f->log2 ? log2(xhi) : (xhi - f->x0) / f->xdiv;
    /* a range of a few ulps (times 0.1 µs apart on an epoch axis) is widened like an empty one */
    if (!(f->xhi - f->xlo > 1e-9 * fmax(fabs(f->xlo), fabs(f->xhi)))) {
        f->xlo -= 0.5;
        f->xhi += 0.5;
    }
    if (!isfinite(ylo) || !isfinite(yhi)) {
        ylo = 0;
        yhi = 1;
    }
    /* a range wider than a double holds (values near ±DBL_MAX) is cut to one it does */
    ylo = fmax(ylo, -DBL_MAX / 8);
    yhi = fmin(yhi, DBL_MAX / 8);
    if (c->y_from_zero && ylo > 0)
        ylo = 0;
    if (!(yhi - ylo > 1e-9 * fmax(fabs(ylo), fabs(yhi)))) {
        /* flat, or flat to a few ulps: a range around it */
        double mid = ylo;
        ylo = mid - (mid != 0 ? fabs(mid) * 0.1 : 1);
        yhi = mid + (mid != 0 ? fabs(mid) * 0.1 : 1);
        if (c->y_from_zero && ylo > 0)
            ylo = 0;
    }
    double first, step = svg_nice_step(ylo, yhi, 6, &first);
    f->ylo = floor(ylo / step + 1e-9) * step;
    f->yhi = ceil(yhi / step - 1e-9) * step;
    if (!(f->yhi > f->ylo))
        f->yhi = f->ylo + step;
    if (!isfinite(f->yhi - f->ylo)) {
        f->ylo = 0;
        f->yhi = 1;
    }
    if (!isfinite(f->xhi - f->xlo)) {
        f->xlo = 0;
        f->xhi = 1;
    }
}

static void open_svg(FILE *out, const struct svg_chart *c, const struct frame *f)
{
    fprintf(out, "<figure class=\"chart\"");
    if (c->id) {
        fputs(" id=\"", out);
        svg_escape(out, c->id);
        fputc('"', out);
    }
    fprintf(out, "><svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"", f->W, f->H);
    svg_escape(out, c->title);
    fprintf(out, "\" xmlns=\"http://www.w3.org/2000/svg\">\n");
    fprintf(out, "<text class=\"title\" x=\"%.0f\" y=\"18\">", f->L);
    svg_escape(out, c->title);
    fputs("</text>\n", out);
}

/* The x axis's grid lines and tick labels. */
static void x_ticks(FILE *out, const struct frame *f)
{
    char buf[64];
    double first;
    if (f->log2) {
        for (double e = ceil(f->xlo - 1e-9); e <= f->xhi + 1e-9 && e < ceil(f->xlo) + 64; e++) {
            double x = f->L + (e - f->xlo) / (f->xhi - f->xlo) * (f->W - f->L - f->R);
            fprintf(out,
                    "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                    "<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\">%.0f</text>\n",
                    x, x, f->T, f->H - f->B, x, f->H - f->B + 16, pow(2, e));
        }
    } else {
        double xs = svg_nice_step(f->xlo, f->xhi, 8, &first);
        for (int q = 0; q <= 64; q++) {
            double v = first + q * xs;
            if (v > f->xhi + xs * 1e-9)
                break;
            double x = f->L + (v - f->xlo) / (f->xhi - f->xlo) * (f->W - f->L - f->R);
            tick_label(buf, sizeof buf, v, xs);
            fprintf(out,
                    "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                    "<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                    x, x, f->T, f->H - f->B, x, f->H - f->B + 16, buf);
        }
    }
}

/* The x axis's label, with the unit of a time axis. */
static void x_label(FILE *out, const struct svg_chart *c, const struct frame *f)
{
    const char *unit = f->log2 || !c->x0 ? ""
                       : f->xdiv == 3600 ? " (h)"
                       : f->xdiv == 60   ? " (min)"
                                         : " (s)";
    fprintf(out, "<text class=\"xlabel\" x=\"%.1f\" y=\"%.1f\">", (f->L + f->W - f->R) / 2,
            f->H - 6);
    svg_escape(out, c->x_label);
    fprintf(out, "%s</text>\n", unit);
}

static void axes(FILE *out, const struct svg_chart *c, const struct frame *f)
{
    char buf[64];
    fputs("<g class=\"axes\">\n", out);
    double first, step = svg_nice_step(f->ylo, f->yhi, 6, &first);
    /* counted, not stepped: a step below the values' resolution must not loop forever */
    for (int q = 0; q <= 64; q++) {
        double v = first + q * step;
        if (v > f->yhi + step * 1e-9)
            break;
        double y = py(f, v);
        tick_label(buf, sizeof buf, v, step);
        fprintf(out,
                "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                "<text class=\"ytick\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                f->L, f->W - f->R, y, y, f->L - 6, y + 4, buf);
    }
    x_ticks(out, f);
    fprintf(out,
            "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
            "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n",
            f->L, f->W - f->R, f->H - f->B, f->H - f->B, f->L, f->L, f->T, f->H - f->B);
    x_label(out, c, f);
    fprintf(out,
            "<text class=\"ylabel\" x=\"12\" y=\"%.1f\" transform=\"rotate(-90 12 "
            "%.1f)\">",
            (f->T + f->H - f->B) / 2, (f->T + f->H - f->B) / 2);
    svg_escape(out, c->y_label);
    fputs("</text>\n</g>\n", out);
}

static void legend_item(FILE *out, const struct svg_series *s, bool empty)
{
    fprintf(out, "<li><span class=\"swatch%s\" style=\"border-color:%s\"></span>",
            s->dashed ? " dashed" : "", svg_color(s->color));
    svg_escape(out, s->label);
    if (empty)
        fputs(" (no data)", out);
    fputs("</li>", out);
}

/* A window's left and right edges in pixels, within the plot (at least a pixel wide). */
static void band_px(const struct frame *f, const struct svg_band *b, double *a, double *z)
{
    double lo = f->L, hi = f->W - f->R;
    *a = fmin(fmax(px(f, b->x0), lo), hi);
    *z = isfinite(b->x1) ? fmin(fmax(px(f, b->x1), lo), hi) : *a;
    if (*z - *a < 1) {
        if (*a + 1 <= hi)
            *z = *a + 1;
        else
            *a = *z - 1;
    }
}

/* The chart's windows, shaded behind its series over the plot's height. */
static void bands(FILE *out, const struct svg_chart *c, const struct frame *f)
{
    if (!c->nbands || f->log2)
        return;
    fputs("<g class=\"bands\">\n", out);
    for (size_t i = 0; i < c->nbands; i++) {
        const struct svg_band *b = &c->bands[i];
        if (!isfinite(b->x0))
            continue;
        double a, z;
        band_px(f, b, &a, &z);
        fprintf(out,
                "<rect class=\"band\" data-id=\"%lld\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                "height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.08\" stroke=\"%s\" "
                "stroke-opacity=\"0.35\" stroke-width=\"0.6\"><title>",
                b->id, a, f->T, z - a, f->H - f->B - f->T, svg_color(b->color),
                svg_color(b->color));
        svg_escape(out, b->title ? b->title : b->label);
        fputs("</title></rect>\n", out);
    }
    fputs("</g>\n", out);
}

int svg_lines(FILE *out, const struct svg_chart *c, const struct svg_series *s, size_t n,
              bool markers)
{
    if (n == 0)
        return -EINVAL;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    size_t room = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < s[k].n; i++) {
            if (!isfinite(s[k].y[i]) || !isfinite(s[k].x[i]) || (c->x_log2 && !(s[k].x[i] > 0)))
                continue;
            xlo = fmin(xlo, s[k].x[i]);
            xhi = fmax(xhi, s[k].x[i]);
            ylo = fmin(ylo, s[k].y[i]);
            yhi = fmax(yhi, s[k].y[i]);
        }
    if (c->x_fixed && !c->x_log2) {
        xlo = c->x_min;
        xhi = c->x_max;
    }
    size_t maxp = c->max_points ? c->max_points : 1000;
    for (size_t k = 0; k < n; k++) {
        size_t r = lttb_gaps_room(s[k].y, s[k].n, maxp);
        room = r > room ? r : room;
    }
    size_t *idx = malloc((room ? room : 1) * sizeof *idx);
    if (!idx)
        return -ENOMEM;
    struct frame f;
    frame_init(&f, c, xlo, xhi, ylo, yhi);
    open_svg(out, c, &f);
    axes(out, c, &f);
    bands(out, c, &f);
    for (size_t k = 0; k < n; k++) {
        size_t m = lttb_gaps(s[k].x, s[k].y, s[k].n, maxp, idx);
        fputs("<g class=\"series\" data-label=\"", out);
        svg_escape(out, s[k].label);
        fprintf(out, "\" data-points=\"%zu\" data-shown=\"%zu\"><title>", s[k].n, m);
        svg_escape(out, s[k].label);
        fprintf(out, "</title><path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s d=\"",
                svg_color(s[k].color), s[k].dashed ? " stroke-dasharray=\"6 3\"" : "");
        bool pen = false;
        for (size_t q = 0; q < m; q++) {
            double x = s[k].x[idx[q]], y = s[k].y[idx[q]];
            if (!isfinite(y) || !isfinite(x) || (c->x_log2 && !(x > 0))) {
                pen = false;
                continue;
            }
            fprintf(out, "%s%.1f %.1f", pen ? " L" : (q ? " M" : "M"), px(&f, x), py(&f, y));
            pen = true;
        }
        fputs("\"/>", out);
        if (markers)
            for (size_t q = 0; q < m; q++) {
                double x = s[k].x[idx[q]], y = s[k].y[idx[q]];
                if (isfinite(y) && isfinite(x) && (!c->x_log2 || x > 0))
                    fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", px(&f, x),
                            py(&f, y), svg_color(s[k].color));
            }
        fputs("</g>\n", out);
    }
    fputs("</svg><ul class=\"legend\">", out);
    for (size_t k = 0; k < n; k++) {
        bool any = false;
        for (size_t i = 0; i < s[k].n && !any; i++)
            any = isfinite(s[k].y[i]) != 0;
        legend_item(out, &s[k], !any);
    }
    fputs("</ul></figure>\n", out);
    free(idx);
    return 0;
}

int svg_stacked(FILE *out, const struct svg_chart *c, const double *x, size_t nx,
                const struct svg_series *s, size_t n)
{
    if (nx < 2 || n == 0)
        return -EINVAL;
    double *top = calloc(nx, sizeof *top);
    size_t maxp = c->max_points ? c->max_points : 1000;
    size_t *idx = malloc((maxp < 3 ? 3 : maxp) * sizeof *idx);
    double *base = calloc(maxp < 3 ? 3 : maxp, sizeof *base);
    if (!top || !idx || !base) {
        free(top);
        free(idx);
        free(base);
        return -ENOMEM;
    }
    double yhi = 0;
    for (size_t i = 0; i < nx; i++) {
        for (size_t k = 0; k < n; k++)
            if (isfinite(s[k].y[i]) && s[k].y[i] > 0)
                top[i] += s[k].y[i];
        yhi = fmax(yhi, top[i]);
    }
    size_t m = lttb(x, top, nx, maxp, idx);
    struct frame f;
    frame_init(&f, c, x[0], x[nx - 1], 0, yhi);
    open_svg(out, c, &f);
    axes(out, c, &f);
    for (size_t k = 0; k < n; k++) {
        fputs("<g class=\"series\" data-label=\"", out);
        svg_escape(out, s[k].label);
        fprintf(out, "\" data-points=\"%zu\" data-shown=\"%zu\"><title>", nx, m);
        svg_escape(out, s[k].label);
        fprintf(out, "</title><path fill=\"%s\" fill-opacity=\"0.75\" stroke=\"none\" d=\"",
                svg_color(s[k].color));
        for (size_t q = 0; q < m; q++) {
            double v = s[k].y[idx[q]];
            fprintf(out, "%s%.1f %.1f", q ? " L" : "M", px(&f, x[idx[q]]),
                    py(&f, base[q] + (isfinite(v) && v > 0 ? v : 0)));
        }
        for (size_t q = m; q-- > 0;)
            fprintf(out, " L%.1f %.1f", px(&f, x[idx[q]]), py(&f, base[q]));
        fputs(" Z\"/></g>\n", out);
        for (size_t q = 0; q < m; q++) {
            double v = s[k].y[idx[q]];
            base[q] += isfinite(v) && v > 0 ? v : 0;
        }
    }
    fputs("</svg><ul class=\"legend\">", out);
    for (size_t k = 0; k < n; k++)
        legend_item(out, &s[k], false);
    fputs("</ul></figure>\n", out);
    free(top);
    free(idx);
    free(base);
    return 0;
}

/* ---- timelines ---- */

struct lane_key {
    double x0, x1;
    size_t i;
};

static int lane_cmp(const void *pa, const void *pb)
{
    const struct lane_key *a = pa, *b = pb;
    if (a->x0 != b->x0)
        return a->x0 < b->x0 ? -1 : 1;
    if (a->x1 != b->x1)
        return a->x1 > b->x1 ? -1 : 1; /* the longer first: the outer of two nested */
    return a->i < b->i ? -1 : a->i > b->i;
}

static bool same_group(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

int svg_lanes(struct svg_band *b, size_t n, size_t *ret_lanes)
{
    *ret_lanes = 0;
    if (n == 0)
        return 0;
    struct lane_key *k = malloc(n * sizeof *k);
    unsigned char *grp = malloc(n);
    if (!k || !grp) {
        free(k);
        free(grp);
        return -ENOMEM;
    }
    const char *gname[SVG_GROUPS_MAX];
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        size_t g = 0;
        while (g < ng && !same_group(gname[g], b[i].group))
            g++;
        if (g == ng && ng < SVG_GROUPS_MAX)
            gname[ng++] = b[i].group;
        grp[i] = (unsigned char)(g < ng ? g : ng - 1);
        /* an unknown edge sorts as -inf, an unknown end as an instant */
        k[i] = (struct lane_key){isfinite(b[i].x0) ? b[i].x0 : -INFINITY,
                                 isfinite(b[i].x1)   ? b[i].x1
                                 : isfinite(b[i].x0) ? b[i].x0
                                                     : -INFINITY,
                                 i};
    }
    qsort(k, n, sizeof *k, lane_cmp);
    /* each group's rows, then the groups one below the other */
    static_assert(SVG_GROUPS_MAX <= 255, "a group's number fits a byte");
    double end[SVG_GROUPS_MAX][SVG_LANES_MAX];
    size_t lanes[SVG_GROUPS_MAX] = {0};
    for (size_t q = 0; q < n; q++) {
        size_t g = grp[k[q].i], l = 0;
        while (l < lanes[g] && end[g][l] > k[q].x0)
            l++;
        if (l == SVG_LANES_MAX)
            l = SVG_LANES_MAX - 1;
        if (l == lanes[g])
            end[g][lanes[g]++] = k[q].x1;
        else
            end[g][l] = fmax(end[g][l], k[q].x1); /* the last row, shared, may hold a longer */
        b[k[q].i].lane = l;
    }
    size_t base[SVG_GROUPS_MAX], total = 0;
    for (size_t g = 0; g < ng; g++) {
        base[g] = total;
        total += lanes[g];
    }
    for (size_t i = 0; i < n; i++) {
        size_t l = base[grp[i]] + b[i].lane;
        b[i].lane = l < SVG_LANES_MAX ? l : SVG_LANES_MAX - 1;
    }
    free(k);
    free(grp);
    *ret_lanes = total < SVG_LANES_MAX ? total : SVG_LANES_MAX;
    return 0;
}

static int tick_cmp(const void *pa, const void *pb)
{
    const struct svg_tick *a = *(const struct svg_tick *const *)pa;
    const struct svg_tick *b = *(const struct svg_tick *const *)pb;
    return a->x < b->x ? -1 : a->x > b->x;
}

/* Writes s cut to at most max characters (UTF-8: whole characters), "…" for the rest. */
static void text_fit(FILE *out, const char *s, size_t max)
{
    size_t chars = 0, i = 0;
    for (const char *p = s; *p; p++)
        chars += ((unsigned char)*p & 0xC0) != 0x80;
    if (chars <= max) {
        svg_escape(out, s);
        return;
    }
    char buf[1024];
    size_t keep = max > 1 ? max - 1 : 0;
    for (chars = 0; s[i] && i + 4 < sizeof buf; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80 && chars++ == keep)
            break;
        buf[i] = s[i];
    }
    buf[i] = '\0';
    svg_escape(out, buf);
    fputs("…", out);
}

/* A flagged bar's hatching: lines up to the right, 5 px apart, inside the bar. */
static void hatch(FILE *out, double x, double y, double w, double h, const char *color)
{
    fputs("<path class=\"hatch\" d=\"", out);
    for (double k = 5; k < w + h; k += 5) {
        double v1 = fmin(k, h), u1 = k - v1;
        double u2 = fmin(k, w), v2 = k - u2;
        fprintf(out, "%sM%.1f %.1f L%.1f %.1f", k > 5 ? " " : "", x + u1, y + v1, x + u2, y + v2);
    }
    fprintf(out, "\" stroke=\"%s\" stroke-width=\"1\" fill=\"none\"/>", color);
}

#define TL_CHAR_W 6.2 /* a character of the 11 px labels, about */
#define TL_LEGEND 12  /* names in the legend */

int svg_timeline(FILE *out, const struct svg_chart *c, const struct svg_band *b, size_t n,
                 const struct svg_tick *t, size_t nt)
{
    if (n == 0 && nt == 0)
        return -EINVAL;
    const struct svg_tick **ts = malloc((nt ? nt : 1) * sizeof *ts);
    if (!ts)
        return -ENOMEM;
    size_t lanes = 0;
    double xlo = INFINITY, xhi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        lanes = b[i].lane + 1 > lanes ? b[i].lane + 1 : lanes;
        if (isfinite(b[i].x0)) {
            xlo = fmin(xlo, b[i].x0);
            xhi = fmax(xhi, isfinite(b[i].x1) ? b[i].x1 : b[i].x0);
        }
    }
    size_t mt = 0;
    for (size_t i = 0; i < nt; i++)
        if (isfinite(t[i].x)) {
            ts[mt++] = &t[i];
            xlo = fmin(xlo, t[i].x);
            xhi = fmax(xhi, t[i].x);
        }
    qsort(ts, mt, sizeof *ts, tick_cmp);
    if (c->x_fixed) {
        xlo = c->x_min;
        xhi = c->x_max;
    }
    double lane_h = lanes ? fmin(18, fmax(3, 360.0 / (double)lanes)) : 0;
    double ev_h = mt ? 14 : 0;
    double top = 30 + ev_h + (mt ? 4 : 0); /* frame_init's T, then the ticks' strip */
    struct svg_chart cc = *c;
    cc.x_log2 = false;
    cc.height = (int)ceil(top + (double)lanes * lane_h + 4 + 42);
    struct frame f;
    frame_init(&f, &cc, xlo, xhi, 0, 1);
    open_svg(out, &cc, &f);
    fputs("<g class=\"axes\">\n", out);
    for (size_t l = 1; l < lanes; l += 2)
        fprintf(out,
                "<rect class=\"lane\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"#f6f7f9\"/>\n",
                f.L, top + (double)l * lane_h, f.W - f.R - f.L, lane_h);
    x_ticks(out, &f);
    fprintf(out, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", f.L,
            f.W - f.R, f.H - f.B, f.H - f.B);
    x_label(out, &cc, &f);
    if (mt)
        fprintf(out, "<text class=\"ytick\" x=\"%.1f\" y=\"%.1f\">events</text>\n", f.L - 6,
                f.T + ev_h / 2 + 4);
    /* each group's name beside its first row (a row's group: that of its first window), a
     * line between groups */
    const struct svg_band *first[SVG_LANES_MAX] = {NULL};
    for (size_t i = 0; i < n; i++)
        if (b[i].lane < SVG_LANES_MAX && !first[b[i].lane])
            first[b[i].lane] = &b[i];
    for (size_t l = 0; l < lanes && l < SVG_LANES_MAX; l++) {
        if (!first[l] ||
            (l > 0 && first[l - 1] && same_group(first[l - 1]->group, first[l]->group)))
            continue;
        double y = top + (double)l * lane_h;
        if (l > 0)
            fprintf(out, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n",
                    4.0, f.W - f.R, y, y);
        if (lane_h >= 10 || l == 0) {
            fprintf(out, "<text class=\"ytick group\" x=\"%.1f\" y=\"%.1f\">", f.L - 6,
                    y + fmin(lane_h, 18) / 2 + 4);
            text_fit(out, first[l]->group ? first[l]->group : "marks", 9);
            fputs("</text>\n", out);
        }
    }
    fputs("</g>\n", out);
    fprintf(out, "<g class=\"timeline\" data-lanes=\"%zu\" data-lane-height=\"%.2f\">\n", lanes,
            lane_h);
    double bh = lane_h >= 8 ? lane_h - 3 : fmax(lane_h - 1, 1.5);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(b[i].x0))
            continue;
        const char *col = svg_color(b[i].color);
        double a, z, y = top + (double)b[i].lane * lane_h + (lane_h - bh) / 2;
        band_px(&f, &b[i], &a, &z);
        fprintf(out,
                "<g class=\"mark\" data-id=\"%lld\" data-start=\"%.6f\" data-end=\"%.6f\" "
                "data-lane=\"%zu\"%s><title>",
                b[i].id, b[i].x0, isfinite(b[i].x1) ? b[i].x1 : b[i].x0, b[i].lane,
                b[i].flagged ? " data-flagged=\"true\"" : "");
        svg_escape(out, b[i].title ? b[i].title : b[i].label);
        fprintf(out,
                "</title><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" rx=\"2\" "
                "fill=\"%s\" fill-opacity=\"0.3\" stroke=\"%s\" stroke-width=\"1\"%s/>",
                a, y, z - a, bh, col, col, b[i].flagged ? " stroke-dasharray=\"3 2\"" : "");
        if (b[i].flagged)
            hatch(out, a, y, z - a, bh, col);
        double room = (z - a - 6) / TL_CHAR_W;
        if (lane_h >= 12 && room >= 2 && b[i].label && b[i].label[0]) {
            fprintf(out, "<text class=\"mark-label\" x=\"%.2f\" y=\"%.2f\">", a + 3,
                    y + bh / 2 + 4);
            size_t len = 0;
            for (const char *p = b[i].label; *p; p++)
                len += ((unsigned char)*p & 0xC0) != 0x80;
            if (b[i].flagged && (double)len + 10 <= room) {
                svg_escape(out, b[i].label);
                fputs(" (unended)", out);
            } else {
                text_fit(out, b[i].label, (size_t)room);
            }
            fputs("</text>", out);
        }
        fputs("</g>\n", out);
    }
    /* the ticks: those within a pixel of the first of a group drawn as one */
    for (size_t q = 0; q < mt;) {
        double x = fmin(fmax(px(&f, ts[q]->x), f.L), f.W - f.R);
        size_t e = q + 1;
        while (e < mt && px(&f, ts[e]->x) - px(&f, ts[q]->x) < 1)
            e++;
        fprintf(out, "<g class=\"tick\" data-time=\"%.6f\" data-count=\"%zu\"><title>", ts[q]->x,
                e - q);
        if (e - q > 1)
            fprintf(out, "%zu events: ", e - q);
        for (size_t k = q; k < e && k < q + 5; k++) {
            if (k > q)
                fputs("; ", out);
            svg_escape(out, ts[k]->title ? ts[k]->title : "");
        }
        if (e - q > 5)
            fputs("; …", out);
        fprintf(out,
                "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"6\" height=\"%.1f\" fill=\"#000\" "
                "fill-opacity=\"0\"/><line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#3c454f\" stroke-width=\"1.5\"/></g>\n",
                x - 3, f.T, ev_h, x, x, f.T + 1, f.T + ev_h - 1);
        q = e;
    }
    fputs("</g>\n</svg><ul class=\"legend\">", out);
    /* the first names, once each */
    const struct svg_band *shown[TL_LEGEND];
    size_t ns = 0;
    bool more = false, flagged = false;
    for (size_t i = 0; i < n; i++) {
        flagged = flagged || b[i].flagged;
        bool seen = false;
        for (size_t k = 0; k < ns && !seen; k++)
            seen =
                strcmp(shown[k]->label ? shown[k]->label : "", b[i].label ? b[i].label : "") == 0;
        if (seen)
            continue;
        if (ns == TL_LEGEND) {
            more = true;
            continue;
        }
        shown[ns++] = &b[i];
    }
    for (size_t k = 0; k < ns; k++) {
        fprintf(out, "<li><span class=\"swatch\" style=\"border-color:%s\"></span>",
                svg_color(shown[k]->color));
        svg_escape(out, shown[k]->label);
        fputs("</li>", out);
    }
    if (more)
        fputs("<li>and more</li>", out);
    if (flagged && c->flag_note) {
        fputs("<li><span class=\"swatch dashed\" style=\"border-color:#5b6570\"></span>", out);
        svg_escape(out, c->flag_note);
        fputs("</li>", out);
    }
    if (mt)
        fputs("<li><span class=\"swatch\" style=\"width:0;height:10px;border-top:0;border-left:"
              "2px solid #3c454f\"></span>event</li>",
              out);
    fputs("</ul></figure>\n", out);
    free(ts);
    return 0;
}
