/*
 * libFuzzer harness for the number readers and writers that srt-slurm's outputs depend on:
 * core/pyjson (pyjson_repr, pyjson_format, pyjson_dumps) and fastnum_double against
 * core/parse's parse_double.
 *
 *   - every line of the input (the first 64, up to 400 bytes each) is read by parse_double and
 *     by fastnum_double: the same result, and the same double bit for bit;
 *   - every 9 bytes of the input are a double x and a byte of options (and so is each number
 *     those lines gave, the line length its options):
 *     repr(x) read back with strtod is x bit for bit ("nan", "inf" for those), has the fewest
 *     digits that do (one digit less, correctly rounded, does not give x back; the digits are
 *     the nearest of that length; both except where x is a power of two, whose rounding
 *     interval is lopsided), and fits PYJSON_NUM_MAX; format(x, "[+][,].Nf") for N from the
 *     next byte is exactly glibc's "%.Nf" (correctly rounded, ties to even), with ',' between
 *     groups of three integer digits and '+' before a number without a sign;
 *   - the input, when jansson takes it as JSON, is written by pyjson_dumps (indent -1, 0 and
 *     2) and read back: the same document (jansson's json_equal: keys, order-free; numbers
 *     exactly).
 *
 * fuzz-sources: src/core/pyjson.c src/core/csv.c src/core/err.c src/core/parse.c
 * fuzz-sources: src/core/array.c src/core/file.c
 * fuzz-libs: -ljansson -lpthread
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fastnum.h"
#include "core/parse.h"
#include "core/pyjson.h"

static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static bool power_of_two(double x)
{
    int e;
    return fabs(frexp(x, &e)) == 0.5;
}

/* The significant digits of a repr ("1.25e-05" -> "125"), without leading zeros. */
static size_t repr_digits(const char *s, char *out)
{
    size_t n = 0;
    bool lead = true;
    for (; *s && *s != 'e'; s++) {
        if (*s < '0' || *s > '9')
            continue;
        if (lead && *s == '0')
            continue;
        lead = false;
        out[n++] = *s;
    }
    /* trailing zeros of "100.0" are not significant */
    while (n > 1 && out[n - 1] == '0')
        n--;
    out[n] = '\0';
    return n;
}

static void check_repr(double x)
{
    char buf[PYJSON_NUM_MAX];
    size_t n = pyjson_repr(x, buf);
    if (n >= PYJSON_NUM_MAX || strlen(buf) != n)
        abort();
    if (isnan(x)) {
        if (strcmp(buf, "nan") != 0)
            abort();
        return;
    }
    double back = strtod(buf, NULL);
    if (!same_bits(back, x)) {
        fprintf(stderr, "repr(%a) = %s reads back as %a\n", x, buf, back);
        abort();
    }
    if (isinf(x) || x == 0 || power_of_two(x))
        return;
    char dig[64], want[64];
    size_t nd = repr_digits(buf, dig);
    if (nd == 0 || nd > 17)
        abort();
    /* the nearest nd-digit decimal is repr's */
    char e[64];
    snprintf(e, sizeof e, "%.*e", (int)nd - 1, x);
    repr_digits(e, want);
    if (strcmp(dig, want) != 0) {
        fprintf(stderr, "repr(%a) = %s, the nearest %zu digits are %s\n", x, buf, nd, e);
        abort();
    }
    /* and one digit less does not give x back */
    if (nd > 1) {
        snprintf(e, sizeof e, "%.*e", (int)nd - 2, x);
        if (same_bits(strtod(e, NULL), x)) {
            fprintf(stderr, "repr(%a) = %s, but %s is shorter\n", x, buf, e);
            abort();
        }
    }
}

static void check_format(double x, unsigned char opt)
{
    int decimals = opt % 21;
    bool commas = opt & 0x40, plus = opt & 0x80;
    char buf[PYJSON_NUM_MAX], want[PYJSON_NUM_MAX + 8];
    size_t n = pyjson_format(x, decimals, commas, plus, buf);
    if (n >= PYJSON_NUM_MAX || strlen(buf) != n)
        abort();
    if (!isfinite(x))
        return;
    /* buf without its commas (checking where they stand) and '+' */
    char plain[PYJSON_NUM_MAX];
    size_t k = 0;
    const char *p = buf;
    if (plus && !signbit(x)) {
        if (*p != '+')
            abort();
        p++;
    }
    if (*p == '-')
        plain[k++] = *p++;
    const char *int_end = strchr(p, '.');
    if (!int_end)
        int_end = p + strlen(p);
    size_t int_digits = 0;
    for (const char *q = p; q < int_end; q++)
        int_digits += *q != ',';
    size_t seen = 0;
    for (const char *q = p; *q; q++) {
        if (q < int_end && *q == ',') {
            /* a comma stands where a multiple of three digits is left */
            if (!commas || seen == 0 || (int_digits - seen) % 3 != 0)
                abort();
            continue;
        }
        if (q < int_end) {
            if (commas && seen > 0 && (int_digits - seen) % 3 == 0 && q[-1] != ',')
                abort(); /* a missing comma */
            seen++;
        }
        plain[k++] = *q;
    }
    plain[k] = '\0';
    snprintf(want, sizeof want, "%.*f", decimals, x);
    if (strcmp(plain, want) != 0) {
        fprintf(stderr, "format(%a, %d) = %s, printf gives %s\n", x, decimals, buf, want);
        abort();
    }
}

static void numbers(double x, unsigned char opt)
{
    check_repr(x);
    check_format(x, opt);
}

static void json_round_trip(const char *text, size_t len)
{
    json_error_t je;
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, &je);
    if (!v)
        return;
    static const int indents[] = {-1, 0, 2};
    for (size_t i = 0; i < 3; i++) {
        char *s = pyjson_dumps(v, indents[i]);
        if (!s)
            abort();
        json_t *back = json_loads(s, JSON_DECODE_ANY, &je);
        if (!back || !json_equal(v, back)) {
            fprintf(stderr, "pyjson_dumps (indent %d) does not read back: %s\n%.2000s\n",
                    indents[i], back ? "a different document" : je.text, s);
            abort();
        }
        json_decref(back);
        free(s);
    }
    json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* lines as numbers, by both readers */
    const uint8_t *p = data, *end = data + size;
    for (int line = 0; line < 64 && p < end; line++) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        char s[401];
        if (n < sizeof s && !memchr(p, '\0', n)) {
            memcpy(s, p, n);
            s[n] = '\0';
            double a = 0, b = 0;
            int ra = parse_double(s, &a), rb = fastnum_double(s, &b);
            if (ra != rb || (ra == 0 && !same_bits(a, b))) {
                fprintf(stderr, "'%s': parse_double %d %a, fastnum_double %d %a\n", s, ra, a, rb,
                        b);
                abort();
            }
            if (ra == 0)
                numbers(a, (unsigned char)n);
        }
        p += n + 1;
    }
    /* the bytes as doubles */
    for (size_t i = 0; i + 9 <= size && i < 8 * 32; i += 9) {
        double x;
        memcpy(&x, data + i, sizeof x);
        numbers(x, data[i + 8]);
    }
    json_round_trip((const char *)data, size);
    return 0;
}
