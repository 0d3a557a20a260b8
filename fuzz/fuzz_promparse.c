/*
 * libFuzzer harness for collect/promparse (prom_parse).
 *
 * Each input is parsed twice: under the default limits and under tiny ones (so that every
 * -E2BIG path runs). A failure must leave the document empty with an error message naming a
 * line; a success must hold a well-formed document (valid names, NUL-terminated strings,
 * family indexes in range, increasing line numbers). A parsed document is then written back
 * in the text format and parsed again: the second document must equal the first (names,
 * labels, values bit for bit, timestamps, families, links). Each sample is also read again
 * from its line by a naive reader (strtod, byte-by-byte unescaping, no shared strings or fast
 * paths), which must agree with the parser. Each parsed document is also read by
 * collect/dcgm (dcgm_is_body, dcgm_parse), whose readings must hold their fields' ranges and
 * bounds. Sanitizers catch the rest.
 *
 * fuzz-sources: src/collect/promparse.c src/collect/dcgm.c src/core/parse.c src/core/err.c
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/dcgm.h"
#include "collect/promparse.h"

struct buf {
    char *p;
    size_t len, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p)
            abort();
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* s escaped as the format wants: \\ and \n always, \" too in label values. */
static void put_escaped(struct buf *b, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            puts_(b, "\\\\");
        else if (*s == '\n')
            puts_(b, "\\n");
        else if (*s == '"' && quote)
            puts_(b, "\\\"");
        else
            put(b, s, 1);
    }
}

static void put_value(struct buf *b, double v)
{
    char tmp[64];
    if (isnan(v))
        snprintf(tmp, sizeof tmp, "NaN");
    else if (isinf(v))
        snprintf(tmp, sizeof tmp, "%sInf", v < 0 ? "-" : "+");
    else
        snprintf(tmp, sizeof tmp, "%.17g", v);
    puts_(b, tmp);
}

static bool name_ok(const char *s, bool metric)
{
    if (!*s)
        return false;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                  (i > 0 && c >= '0' && c <= '9') || (metric && c == ':');
        if (!ok)
            return false;
    }
    return true;
}

/* Checks the shape of a parsed document. */
static void check_doc(const struct prom_doc *d, size_t nlines_max)
{
    size_t last_line = 0;
    for (size_t i = 0; i < d->nsamples; i++) {
        const struct prom_sample *s = &d->samples[i];
        if (!name_ok(s->name, true))
            abort();
        if (s->line <= last_line || s->line > nlines_max)
            abort();
        last_line = s->line;
        if (s->family != SIZE_MAX && s->family >= d->nfamilies)
            abort();
        if (s->nlabels && !s->labels)
            abort();
        for (size_t k = 0; k < s->nlabels; k++) {
            if (!name_ok(s->labels[k].name, false))
                abort();
            (void)strlen(s->labels[k].value);
            for (size_t j = 0; j < k; j++)
                if (strcmp(s->labels[j].name, s->labels[k].name) == 0)
                    abort();
            if (prom_label_value(s, s->labels[k].name) != s->labels[k].value)
                abort();
        }
    }
    for (size_t f = 0; f < d->nfamilies; f++) {
        if (!name_ok(d->families[f].name, true))
            abort();
        if (d->families[f].help)
            (void)strlen(d->families[f].help);
        (void)prom_type_name(d->families[f].type);
        for (size_t g = 0; g < f; g++)
            if (strcmp(d->families[f].name, d->families[g].name) == 0)
                abort();
    }
}

static const char *blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* The sample s read again from its line [p, end) by the simplest means; aborts on a mismatch. */
static void reread(const struct prom_sample *s, const char *p, const char *end)
{
    char tmp[128];
    p = blanks(p, end);
    size_t n = strlen(s->name);
    if ((size_t)(end - p) < n || memcmp(p, s->name, n) != 0)
        abort();
    p = blanks(p + n, end);
    size_t k = 0;
    if (p < end && *p == '{') {
        p++;
        for (;;) {
            p = blanks(p, end);
            if (*p == '}') {
                p++;
                break;
            }
            if (k >= s->nlabels)
                abort();
            const char *name = s->labels[k].name, *value = s->labels[k].value;
            n = strlen(name);
            if (memcmp(p, name, n) != 0)
                abort();
            p = blanks(blanks(p + n, end) + 1, end) + 1; /* '=' and '"' */
            size_t i = 0;
            for (; *p != '"'; p++, i++) {
                char c = *p;
                if (c == '\\') {
                    p++;
                    c = *p == 'n' ? '\n' : *p;
                }
                if (value[i] != c)
                    abort();
            }
            if (value[i] != '\0')
                abort();
            k++;
            p = blanks(p + 1, end);
            if (*p == ',')
                p++;
        }
    }
    if (k != s->nlabels)
        abort();
    p = blanks(p, end);
    const char *v = p;
    while (p < end && *p != ' ' && *p != '\t')
        p++;
    if (p - v <= 0 || (size_t)(p - v) >= sizeof tmp)
        return; /* a long token: left to the round trip */
    memcpy(tmp, v, (size_t)(p - v));
    tmp[p - v] = '\0';
    double want = strtod(tmp, NULL);
    if (isnan(want) ? !isnan(s->value) : memcmp(&want, &s->value, sizeof want) != 0)
        abort();
    p = blanks(p, end);
    if ((p < end) != s->has_timestamp)
        abort();
    if (p < end) {
        const char *t = p;
        while (p < end && *p != ' ' && *p != '\t')
            p++;
        if ((size_t)(p - t) >= sizeof tmp)
            return; /* leading zeros: left to the round trip */
        memcpy(tmp, t, (size_t)(p - t));
        tmp[p - t] = '\0';
        if (strtoll(tmp, NULL, 10) != s->timestamp_ms)
            abort();
    }
}

/* d written back in the text format: every HELP and TYPE first, then the samples. */
static void serialize(const struct prom_doc *d, struct buf *b)
{
    for (size_t f = 0; f < d->nfamilies; f++) {
        const struct prom_family *fam = &d->families[f];
        if (fam->help) {
            puts_(b, "# HELP ");
            puts_(b, fam->name);
            puts_(b, " ");
            put_escaped(b, fam->help, false);
            puts_(b, "\n");
        }
        if (fam->type != PROM_UNTYPED || !fam->help) {
            puts_(b, "# TYPE ");
            puts_(b, fam->name);
            puts_(b, " ");
            puts_(b, prom_type_name(fam->type));
            puts_(b, "\n");
        }
    }
    for (size_t i = 0; i < d->nsamples; i++) {
        const struct prom_sample *s = &d->samples[i];
        puts_(b, s->name);
        if (s->nlabels) {
            puts_(b, "{");
            for (size_t k = 0; k < s->nlabels; k++) {
                puts_(b, k ? "," : "");
                puts_(b, s->labels[k].name);
                puts_(b, "=\"");
                put_escaped(b, s->labels[k].value, true);
                puts_(b, "\"");
            }
            puts_(b, "}");
        }
        puts_(b, " ");
        put_value(b, s->value);
        if (s->has_timestamp) {
            char tmp[32];
            snprintf(tmp, sizeof tmp, " %lld", (long long)s->timestamp_ms);
            puts_(b, tmp);
        }
        puts_(b, "\n");
    }
}

/* HELP text loses trailing CRs and blanks on the way back; the rest must be equal. */
static bool help_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    size_t na = strlen(a), nb = strlen(b);
    while (na && (a[na - 1] == '\r' || a[na - 1] == ' ' || a[na - 1] == '\t'))
        na--;
    while (nb && (b[nb - 1] == '\r' || b[nb - 1] == ' ' || b[nb - 1] == '\t'))
        nb--;
    return na == nb && memcmp(a, b, na) == 0;
}

static void compare(const struct prom_doc *a, const struct prom_doc *b)
{
    if (a->nsamples != b->nsamples || a->nfamilies != b->nfamilies)
        abort();
    for (size_t f = 0; f < a->nfamilies; f++) {
        if (strcmp(a->families[f].name, b->families[f].name) != 0 ||
            a->families[f].type != b->families[f].type ||
            !help_eq(a->families[f].help, b->families[f].help))
            abort();
    }
    for (size_t i = 0; i < a->nsamples; i++) {
        const struct prom_sample *x = &a->samples[i], *y = &b->samples[i];
        if (strcmp(x->name, y->name) != 0 || x->nlabels != y->nlabels ||
            x->has_timestamp != y->has_timestamp || x->family != y->family)
            abort();
        if (x->has_timestamp && x->timestamp_ms != y->timestamp_ms)
            abort();
        if (isnan(x->value) ? !isnan(y->value) : memcmp(&x->value, &y->value, sizeof x->value))
            abort();
        for (size_t k = 0; k < x->nlabels; k++)
            if (strcmp(x->labels[k].name, y->labels[k].name) != 0 ||
                strcmp(x->labels[k].value, y->labels[k].value) != 0)
                abort();
    }
}

/* dcgm's readings of d: within their bounds and their fields' ranges, NAN otherwise. */
static void check_dcgm(const struct prom_doc *d)
{
    static struct dcgm_scrape sc;
    (void)dcgm_is_body(d);
    dcgm_parse(d, &sc);
    if (sc.n != sc.ngpus + sc.nmig || sc.ngpus > DCGM_GPUS_MAX || sc.nmig > DCGM_MIG_MAX)
        abort();
    double sum = NAN;
    for (size_t j = 0; j < sc.n; j++) {
        const struct dcgm_reading *r = &sc.r[j];
        if (!isnan(r->power_w) && !(r->power_w >= 0 && r->power_w < 140737488355328.0))
            abort();
        if (!isnan(r->energy_j) && !(r->energy_j >= 0 && isfinite(r->energy_j)))
            abort();
        if (!isnan(r->gpu_util_pct) && !(r->gpu_util_pct >= 0 && r->gpu_util_pct <= 100))
            abort();
        if (!isnan(r->sm_active) && !(r->sm_active >= 0 && r->sm_active <= 1))
            abort();
        if (!r->mig && !isnan(r->power_w))
            sum = isnan(sum) ? r->power_w : sum + r->power_w;
    }
    if (isnan(sum) ? !isnan(sc.device_power_w) : sum != sc.device_power_w)
        abort();
}

static void run(const char *text, size_t len, const struct prom_limits *lim)
{
    struct prom_doc doc;
    struct carma_err e = {0};
    size_t nlines = 1;
    for (size_t i = 0; i < len; i++)
        nlines += text[i] == '\n';
    int rc = prom_parse(text, len, lim, &doc, &e);
    if (rc < 0) {
        if (doc.nsamples || doc.samples || doc.nfamilies || doc.families || doc.mem)
            abort();
        if (e.code != rc || !e.msg[0])
            abort();
        if (rc != -E2BIG && rc != -ENOMEM && strncmp(e.msg, "line ", 5) != 0)
            abort();
        prom_doc_free(&doc);
        return;
    }
    if (rc != 0)
        abort();
    check_doc(&doc, nlines);
    check_dcgm(&doc);

    /* the naive reader, line by line */
    const char *p = text, *end = text + len;
    size_t line = 1;
    for (size_t i = 0; i < doc.nsamples; i++) {
        const struct prom_sample *s = &doc.samples[i];
        while (line < s->line) {
            p = memchr(p, '\n', (size_t)(end - p));
            if (!p)
                abort();
            p++;
            line++;
        }
        const char *le = memchr(p, '\n', (size_t)(end - p));
        le = le ? le : end;
        if (le > p && le[-1] == '\r')
            le--;
        reread(s, p, le);
    }

    struct buf b = {0};
    serialize(&doc, &b);
    struct prom_limits big = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
    struct prom_doc again;
    struct carma_err e2 = {0};
    if (prom_parse(b.p ? b.p : "", b.len, &big, &again, &e2) != 0) {
        fprintf(stderr, "round trip failed: %s\n--- written ---\n%s\n", e2.msg, b.p ? b.p : "");
        abort();
    }
    compare(&doc, &again);
    prom_doc_free(&again);
    free(b.p);
    prom_doc_free(&doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes, so that ASan sees any read past the end */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    run(text, size, NULL);
    static const struct prom_limits tiny = {
        .max_bytes = 4096, .max_samples = 8, .max_labels = 3, .max_line = 80, .max_families = 3};
    run(text, size, &tiny);
    free(text);
    return 0;
}
