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

size_t fmt_fixed6(char *buf, double v)
{
    if (!isfinite(v) || fabs(v) >= 9e12) {
        buf[0] = '\0';
        return 0;
    }
    size_t n = 0;
    double a = fabs(v);
    uint64_t micro = (uint64_t)llround(a * 1e6);
    if (v < 0 && micro)
        buf[n++] = '-';
    n += fmt_u64(buf + n, micro / 1000000);
    unsigned frac = (unsigned)(micro % 1000000);
    if (frac) {
        buf[n++] = '.';
        char d[6];
        for (int i = 5; i >= 0; i--) {
            d[i] = (char)('0' + frac % 10);
            frac /= 10;
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
    int n = 0;
    for (int prec = 1; prec <= 17; prec++) {
        n = snprintf(buf, cap, "%.*g", prec, v);
        if (!isfinite(v) || strtod(buf, NULL) == v)
            break;
    }
    return n < 0 ? 0 : (size_t)n;
}
