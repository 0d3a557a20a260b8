/*
 * svg: inline SVG charts for the HTML report (see svg.h).
 */
#include "report/svg.h"

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
    fprintf(out,
            "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
            "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n",
            f->L, f->W - f->R, f->H - f->B, f->H - f->B, f->L, f->L, f->T, f->H - f->B);
    const char *unit = f->log2 || !c->x0 ? ""
                       : f->xdiv == 3600 ? " (h)"
                       : f->xdiv == 60   ? " (min)"
                                         : " (s)";
    fprintf(out, "<text class=\"xlabel\" x=\"%.1f\" y=\"%.1f\">", (f->L + f->W - f->R) / 2,
            f->H - 6);
    svg_escape(out, c->x_label);
    fprintf(out,
            "%s</text>\n<text class=\"ylabel\" x=\"12\" y=\"%.1f\" transform=\"rotate(-90 12 "
            "%.1f)\">",
            unit, (f->T + f->H - f->B) / 2, (f->T + f->H - f->B) / 2);
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
