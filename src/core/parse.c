/* parse: strict number parsing (see parse.h for the rules). */
#include "parse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Trims s into [*b, *e); returns false when nothing is left. */
static bool trim(const char *s, const char **b, const char **e)
{
    if (!s)
        return false;
    const char *p = s;
    while (is_space(*p))
        p++;
    const char *q = p + strlen(p);
    while (q > p && is_space(q[-1]))
        q--;
    *b = p;
    *e = q;
    return q > p;
}

/* Unsigned decimal digits in [b, e): 0 and *ret, -EINVAL (not all digits, or none), -ERANGE. */
static int digits_u64(const char *b, const char *e, uint64_t *ret)
{
    if (b == e)
        return -EINVAL;
    uint64_t v = 0;
    /* [b, e) is trim's: *e is a space or the NUL, so the digits stop there at the latest; an
     * overflow comes before any byte that is not a digit */
    const char *q = parse_digits_u64(b, &v);
    if (!q)
        return -ERANGE;
    if (q != e)
        return -EINVAL;
    *ret = v;
    return 0;
}

int parse_u64(const char *s, uint64_t *ret)
{
    const char *b, *e;
    if (!trim(s, &b, &e))
        return -EINVAL;
    return digits_u64(b, e, ret);
}

int parse_uint(const char *s, unsigned *ret)
{
    uint64_t v;
    int r = parse_u64(s, &v);
    if (r < 0)
        return r;
    if (v > UINT_MAX)
        return -ERANGE;
    *ret = (unsigned)v;
    return 0;
}

int parse_i64(const char *s, int64_t *ret)
{
    const char *b, *e;
    if (!trim(s, &b, &e))
        return -EINVAL;
    bool neg = false;
    if (*b == '-' || *b == '+') {
        neg = *b == '-';
        b++;
    }
    uint64_t v;
    int r = digits_u64(b, e, &v);
    if (r < 0)
        return r;
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return -ERANGE;
        *ret = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return -ERANGE;
        *ret = (int64_t)v;
    }
    return 0;
}

/* Parses a finite double at the start of [b, e) and returns the end pointer in *end. */
static int parse_double_prefix(const char *b, const char *e, double *ret, const char **end)
{
    /* Only plain decimal syntax: digits, '.', an exponent, a sign. strtod() must not read
     * past that run: it would for "0x10", "inf" or "nan". No copy, so no length limit. */
    const char *run = b;
    while (run < e && ((*run >= '0' && *run <= '9') || *run == '.' || *run == 'e' || *run == 'E' ||
                       *run == '+' || *run == '-'))
        run++;
    if (run == b)
        return -EINVAL;
    char *q;
    errno = 0;
    double v = strtod(b, &q);
    if (q == b || q > run)
        return -EINVAL;
    if (errno == ERANGE && fabs(v) > 1.0)
        return -ERANGE;
    if (!isfinite(v))
        return -ERANGE;
    *ret = v;
    *end = q;
    return 0;
}

int parse_double(const char *s, double *ret)
{
    const char *b, *e, *end;
    if (!trim(s, &b, &e))
        return -EINVAL;
    double v;
    int r = parse_double_prefix(b, e, &v, &end);
    if (r < 0)
        return r;
    if (end != e)
        return -EINVAL;
    *ret = v;
    return 0;
}

/* The unit's length in ns, or 0 when [u, u + n) is no unit; a plain number (n == 0) is seconds. */
static double duration_unit_ns(const char *u, size_t n)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {
        {"ns", 1.0}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9},
    };
    if (n == 0)
        return 1e9;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].unit) == n && memcmp(units[i].unit, u, n) == 0)
            return units[i].ns;
    return 0;
}

/* Parses a duration of 0 or more: 0, -EINVAL (not a duration, or negative), -ERANGE (> 24 h). */
static int duration_ns(const char *s, int64_t *ret)
{
    const char *b, *e, *end;
    if (!trim(s, &b, &e))
        return -EINVAL;
    if (*b == '-')
        return -EINVAL;
    double v;
    int r = parse_double_prefix(b, e, &v, &end);
    if (r < 0)
        return r;
    double unit = duration_unit_ns(end, (size_t)(e - end));
    if (unit == 0)
        return -EINVAL;
    double ns = v * unit;
    if (ns < 0.0)
        return -EINVAL;
    if (ns > 86400e9)
        return -ERANGE;
    *ret = (int64_t)llround(ns);
    return 0;
}

int parse_duration_ns(const char *s, int64_t *ret)
{
    int64_t n;
    int r = duration_ns(s, &n);
    if (r < 0)
        return r;
    if (n <= 0)
        return -EINVAL;
    *ret = n;
    return 0;
}

int parse_duration_range_ns(const char *s, int64_t min_ns, int64_t max_ns, int64_t *ret)
{
    int64_t n;
    int r = duration_ns(s, &n);
    if (r < 0)
        return r;
    if (n < min_ns || n > max_ns)
        return -ERANGE;
    *ret = n;
    return 0;
}

/* Writes ns as the shortest whole unit that fits: "0s", "500us", "1ms", "60s", "10m", "1h". */
static void duration_text(int64_t ns, char *buf, size_t cap)
{
    static const struct {
        const char *unit;
        int64_t ns;
    } units[] = {{"h", 3600000000000LL}, {"m", 60000000000LL}, {"s", 1000000000LL},
                 {"ms", 1000000LL},      {"us", 1000LL},       {"ns", 1LL}};
    if (ns == 0) {
        snprintf(buf, cap, "0s");
        return;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (ns % units[i].ns == 0) {
            snprintf(buf, cap, "%lld%s", (long long)(ns / units[i].ns), units[i].unit);
            return;
        }
    }
}

size_t parse_duration_rule(char *buf, size_t cap, int64_t min_ns, int64_t max_ns)
{
    char lo[32], hi[32];
    duration_text(min_ns, lo, sizeof lo);
    duration_text(max_ns, hi, sizeof hi);
    int n = snprintf(buf, cap,
                     "a duration from %s to %s: a plain number is seconds (1.5 = 1.5 s), or "
                     "give a unit: ns, us, ms, s, m or h (e.g. 100ms, 2s, 1m)",
                     lo, hi);
    return n < 0 ? 0 : (size_t)n;
}

size_t parse_utf8_bad_at(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t k;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        } else {
            return i;
        }
        if (n - i <= k)
            return i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t j = 2; j <= k; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xbf)
                return i;
        i += k + 1;
    }
    return n;
}
