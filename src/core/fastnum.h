/*
 * fastnum: core/parse's number readers with a fast path for the plain cells of large CSVs.
 *
 * Each gives what core/parse's reader gives for the same string (the same strings accepted, the
 * same value, bit for bit) and leaves everything but the common forms to it: plain decimals of
 * at most 15 significant digits and an exponent within 10^±22 (Clinger's exact fast path, one
 * correctly rounded operation), integers of plain digits. They are inline: they sit in the
 * per-cell loops of the srt-slurm readers.
 */
#ifndef CARMA_CORE_FASTNUM_H
#define CARMA_CORE_FASTNUM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/parse.h"

static inline bool fastnum_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/*
 * Clinger's exact fast path over the number at p, which ends at the first byte that cannot
 * continue it (*ret_end): true and *ret when the text up to there is a plain decimal of at most
 * 15 significant digits and an exponent within 10^±22 (then *ret is strtod's double, bit for
 * bit), false when it needs strtod (or is no number). The caller decides whether *ret_end is
 * where the cell ends.
 */
static inline bool fastnum_prefix(const char *p, const char **ret_end, double *ret)
{
    /* 10^0 .. 10^22: every one exact in a double. */
    static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                         1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                         1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    bool neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    uint64_t m = 0;
    int nd = 0, exp10 = 0; /* significant digits (leading zeros not counted), exponent */
    bool any = false;
    while (*p == '0') {
        p++;
        any = true;
    }
    for (; fastnum_is_digit(*p); p++, nd++, any = true)
        m = m * 10 + (uint64_t)(*p - '0'); /* wraps past 19 digits: nd > 15 then anyway */
    if (*p == '.') {
        const char *f0 = ++p;
        if (nd == 0)
            for (; *p == '0'; p++)
                exp10--;
        for (; fastnum_is_digit(*p); p++, nd++, exp10--)
            m = m * 10 + (uint64_t)(*p - '0');
        if (p == f0)
            return false; /* "1." */
        any = true;
    }
    if (!any)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        bool eneg = *p == '-';
        if (*p == '-' || *p == '+')
            p++;
        int x = 0, xd = 0;
        for (; fastnum_is_digit(*p) && xd < 4; p++, xd++)
            x = x * 10 + (*p - '0');
        if (xd == 0)
            return false;
        exp10 += eneg ? -x : x;
    }
    if (nd > 15)
        return false;
    /* Clinger: m < 2^53 and 10^|exp10| are exact, so one multiplication or division rounds
     * once, correctly (as strtod's result). */
    double v = (double)m;
    if (m != 0 && exp10 != 0) {
        if (exp10 < -22 || exp10 > 22)
            return false;
        v = exp10 < 0 ? v / pow10_exact[-exp10] : v * pow10_exact[exp10];
    }
    *ret = neg ? -v : v;
    *ret_end = p;
    return true;
}

/* parse_double (core/parse.h) of the whole string s, by the fast path where it applies.
 * Returns 0 and *ret, or -EINVAL / -ERANGE. */
static inline int fastnum_double(const char *s, double *ret)
{
    const char *end;
    double v;
    if (fastnum_prefix(s, &end, &v) && *end == '\0') {
        *ret = v;
        return 0;
    }
    return parse_double(s, ret);
}

/* parse_u64 with a fast path for 1 to 19 plain digits. */
static inline int fastnum_u64(const char *s, uint64_t *ret)
{
    uint64_t v = 0;
    const char *p = s;
    for (; fastnum_is_digit(*p) && p - s < 19; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    if (*p != '\0' || p == s)
        return parse_u64(s, ret);
    *ret = v;
    return 0;
}

/* parse_i64 with a fast path for 1 to 18 plain digits. */
static inline int fastnum_i64(const char *s, int64_t *ret)
{
    int64_t v = 0;
    const char *p = s;
    for (; fastnum_is_digit(*p) && p - s < 18; p++)
        v = v * 10 + (*p - '0');
    if (*p != '\0' || p == s)
        return parse_i64(s, ret);
    *ret = v;
    return 0;
}

#endif
