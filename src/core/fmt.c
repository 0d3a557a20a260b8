/* fmt: number formatting without printf on the hot path (see fmt.h). */
#include "fmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t fmt_u64(char *buf, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return n;
}

/*
 * Rounds frac (in [0, 1)) to millionths: the exact binary value decides, halves go to the
 * even neighbour, as printf("%.6f") does. frac * 1e6 is rounded once by the multiplication,
 * so the candidate is checked with fma(), whose single rounding never changes the sign of
 * the exact difference. Returns 0 .. 1000000.
 */
static uint64_t round_micro(double frac)
{
    uint64_t q = (uint64_t)(frac * 1e6);
    while (q > 0 && fma(frac, 1e6, -(double)q) < 0)
        q--;
    while (fma(frac, 1e6, -(double)(q + 1)) >= 0)
        q++;
    double half = fma(frac, 1e6, -((double)q + 0.5));
    if (half > 0 || (half == 0 && (q & 1)))
        q++;
    return q;
}

size_t fmt_unix_us(char *buf, int64_t real_ns)
{
    if (real_ns < 0)
        real_ns = 0;
    size_t n = fmt_u64(buf, (uint64_t)(real_ns / 1000000000LL));
    buf[n++] = '.';
    uint64_t us = (uint64_t)((real_ns % 1000000000LL) / 1000);
    for (int k = 5; k >= 0; k--) {
        buf[n + (size_t)k] = (char)('0' + us % 10);
        us /= 10;
    }
    n += 6;
    buf[n] = '\0';
    return n;
}

size_t fmt_fixed6(char *buf, double v)
{
    if (!isfinite(v) || fabs(v) >= 9e12) {
        buf[0] = '\0';
        return 0;
    }
    double a = fabs(v);
    double ip = floor(a);
    uint64_t whole = (uint64_t)ip;
    uint64_t micro = round_micro(a - ip); /* a - ip is exact */
    if (micro == 1000000) {
        whole++;
        micro = 0;
    }
    size_t n = 0;
    if (v < 0 && (whole || micro))
        buf[n++] = '-';
    n += fmt_u64(buf + n, whole);
    if (micro) {
        buf[n++] = '.';
        char d[6];
        for (int i = 5; i >= 0; i--) {
            d[i] = (char)('0' + micro % 10);
            micro /= 10;
        }
        int last = 5;
        while (last > 0 && d[last] == '0')
            last--;
        for (int i = 0; i <= last; i++)
            buf[n++] = d[i];
    }
    buf[n] = '\0';
    return n;
}

size_t fmt_double(char *buf, size_t cap, double v)
{
    if (cap == 0)
        return 0;
    int n = 0;
    for (int prec = 1; prec <= 17; prec++) {
        n = snprintf(buf, cap, "%.*g", prec, v);
        if (!isfinite(v) || strtod(buf, NULL) == v)
            break;
    }
    if (n < 0)
        n = 0;
    /* a short buffer holds a cut string: report what is there */
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

double fmt_round_zero(double v, int dec)
{
    if (!isfinite(v))
        return v;
    if (dec < 0)
        dec = 0;
    if (dec > 17)
        dec = 17;
    char buf[64];
    snprintf(buf, sizeof buf, "%.*f", dec, fabs(v));
    return strtod(buf, NULL) == 0.0 ? 0.0 : v;
}

void fmt_vappend(char *buf, size_t cap, const char *fmt, va_list ap)
{
    size_t len = strnlen(buf, cap);
    if (len + 1 >= cap)
        return;
    vsnprintf(buf + len, cap - len, fmt, ap);
}

void fmt_append(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fmt_vappend(buf, cap, fmt, ap);
    va_end(ap);
}
