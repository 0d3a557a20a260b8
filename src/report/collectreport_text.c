/*
 * collectreport_text: the text form of a collect directory's report (collectreport_text, see
 * collectreport.h), made from the report's JSON object alone: coverage, then each window's
 * warnings, job, tokens, nodes, kinds and channels, then the report's warnings.
 */
#include "report/collectreport.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/array.h"
#include "core/jsonutil.h"

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
    if (k < 0 || array_grow((void **)&b->p, &b->cap, b->n + (size_t)k + 1, 1) < 0) {
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
