/* parse: strict number parsing (see parse.h for the rules). */
#include "parse.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
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
    for (const char *p = b; p < e; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
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

int parse_duration_ns(const char *s, int64_t *ret)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {
        {"ns", 1.0}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9},
    };
    const char *b, *e, *end;
    if (!trim(s, &b, &e))
        return -EINVAL;
    double v;
    int r = parse_double_prefix(b, e, &v, &end);
    if (r < 0)
        return r;
    size_t ulen = (size_t)(e - end);
    if (ulen == 0)
        return -EINVAL;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].unit) == ulen && memcmp(units[i].unit, end, ulen) == 0) {
            double ns = v * units[i].ns;
            if (!(ns > 0.0))
                return -EINVAL;
            if (ns > 86400e9)
                return -ERANGE;
            int64_t n = (int64_t)llround(ns);
            if (n <= 0)
                return -EINVAL;
            *ret = n;
            return 0;
        }
    }
    return -EINVAL;
}
