/* iso8601: ISO 8601 date-times to Unix seconds, two entry points on one scanner (iso8601.h). */
#include "core/iso8601.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* ---- the shared core: day count and field scanner ---- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Month 1 to 12 and a day of it. */
static bool date_valid(int y, int m, int d)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return d <= (m == 2 && leap ? 29 : dm[m - 1]);
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Exactly n digits at s into *ret; false (and *ret untouched) when they are not there. */
static bool digits(const char *s, int n, int *ret)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit(s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *ret = v;
    return true;
}

/* YYYY-MM-DD at p (no range check): the end, or NULL. */
static const char *scan_date(const char *p, int *y, int *m, int *d)
{
    if (!digits(p, 4, y) || p[4] != '-' || !digits(p + 5, 2, m) || p[7] != '-' ||
        !digits(p + 8, 2, d))
        return NULL;
    return p + 10;
}

/* A time of day as written: parts is 1 (HH), 2 (HH:MM) or 3 (HH:MM:SS, maybe a fraction). */
struct clock {
    int parts, hour, minute, second;
    int64_t frac_num, frac_den; /* the fraction's first nine digits, num / den */
};

/* HH[:MM[:SS[(.|,)digits]]] at p (no range check): the end, or NULL when a ':' or the
 * fraction's mark is not followed by what it starts. */
static const char *scan_clock(const char *p, struct clock *c)
{
    *c = (struct clock){.parts = 1, .frac_den = 1};
    if (!digits(p, 2, &c->hour))
        return NULL;
    p += 2;
    if (*p != ':')
        return p;
    if (!digits(p + 1, 2, &c->minute))
        return NULL;
    p += 3;
    c->parts = 2;
    if (*p != ':')
        return p;
    if (!digits(p + 1, 2, &c->second))
        return NULL;
    p += 3;
    c->parts = 3;
    if (*p != '.' && *p != ',')
        return p;
    p++;
    if (!is_digit(*p))
        return NULL;
    for (; is_digit(*p); p++)
        if (c->frac_den < 1000000000) {
            c->frac_num = c->frac_num * 10 + (*p - '0');
            c->frac_den *= 10;
        }
    return p;
}

static bool clock_valid(const struct clock *c)
{
    return c->hour <= 23 && c->minute <= 59 && c->second <= 59;
}

/* The fraction's first six digits as microseconds. */
static int64_t clock_us(const struct clock *c)
{
    return c->frac_den >= 1000000 ? c->frac_num / (c->frac_den / 1000000)
                                  : c->frac_num * (1000000 / c->frac_den);
}

/* HH, HH:MM or HHMM at p (past the sign; no range check): the end, or NULL. */
static const char *scan_offset(const char *p, int *h, int *m)
{
    *m = 0;
    if (!digits(p, 2, h))
        return NULL;
    p += 2;
    if (*p == ':') {
        if (!digits(p + 1, 2, m))
            return NULL;
        return p + 3;
    }
    if (is_digit(*p)) {
        if (!digits(p, 2, m))
            return NULL;
        return p + 2;
    }
    return p;
}

/* ---- carma's own: an offset always ---- */

int iso8601_parse_aware(const char *s, double *ret, const char **why)
{
    int y, mo, d;
    struct clock c;
    *why = "is not an ISO 8601 time (YYYY-MM-DDTHH:MM:SS+HH:MM)";
    const char *p = scan_date(s, &y, &mo, &d);
    if (!p || (*p != 'T' && *p != 't' && *p != ' '))
        return -EINVAL;
    p = scan_clock(p + 1, &c);
    if (!p || c.parts < 2)
        return -EINVAL;
    if (!date_valid(y, mo, d) || !clock_valid(&c)) {
        *why = "is not a valid date and time";
        return -EINVAL;
    }
    int off_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p = scan_offset(p + 1, &oh, &om);
        if (!p)
            return -EINVAL;
        if (oh > 23 || om > 59) {
            *why = "has an invalid UTC offset";
            return -EINVAL;
        }
        off_s = sign * (oh * 3600 + om * 60);
    } else if (*p == '\0') {
        *why = "has no UTC offset (add Z or +HH:MM)";
        return -EINVAL;
    } else {
        return -EINVAL;
    }
    if (*p != '\0')
        return -EINVAL;
    int64_t t =
        days_from_civil(y, mo, d) * 86400 + c.hour * 3600 + c.minute * 60 + c.second - off_s;
    *ret = (double)t + (double)c.frac_num / (double)c.frac_den;
    return 0;
}

/* ---- Python's fromisoformat(...).astimezone().timestamp() ---- */

/* Local wall-clock seconds (as if UTC) of unix time u. */
static int local_s(long long u, long long *ret, long *ret_gmtoff)
{
    time_t tt = (time_t)u;
    struct tm tm;
    if (!localtime_r(&tt, &tm))
        return -EINVAL;
    *ret = days_from_civil(tm.tm_year + 1900LL, tm.tm_mon + 1, tm.tm_mday) * 86400LL +
           tm.tm_hour * 3600LL + tm.tm_min * 60LL + tm.tm_sec;
    if (ret_gmtoff)
        *ret_gmtoff = tm.tm_gmtoff;
    return 0;
}

/*
 * The UTC offset Python gives the naive local time t (seconds, as if UTC) in astimezone():
 * CPython's datetime._mktime for fold=0 (of two instants showing t, the earlier one; for a t
 * in a gap, the later candidate), then the offset in force at that instant.
 */
static int local_offset(long long t, long long *ret)
{
    long long lt, t1, t2, u;
    if (local_s(t, &lt, NULL) < 0)
        return -EINVAL;
    long long a = lt - t, b;
    long long u1 = t - a;
    if (local_s(u1, &t1, NULL) < 0)
        return -EINVAL;
    if (t1 == t) {
        long long u2 = u1 - 24 * 3600, l2;
        if (local_s(u2, &l2, NULL) < 0)
            return -EINVAL;
        b = l2 - u2;
        if (a == b) {
            u = u1;
            goto found;
        }
    } else {
        b = t1 - u1;
    }
    long long u2 = t - b;
    if (local_s(u2, &t2, NULL) < 0)
        return -EINVAL;
    if (t2 == t)
        u = u2;
    else if (t1 == t)
        u = u1;
    else
        u = u1 > u2 ? u1 : u2; /* t is in a gap */
found:;
    long off;
    if (local_s(u, &lt, &off) < 0)
        return -EINVAL;
    *ret = off;
    return 0;
}

int iso8601_parse_fromisoformat(const char *s, double *ret)
{
    int y, mo, d;
    struct clock c = {.parts = 0, .frac_den = 1};
    const char *p = scan_date(s, &y, &mo, &d);
    if (!p || y < 1 || !date_valid(y, mo, d))
        return -EINVAL;
    bool aware = false;
    long long off_us = 0;
    if (*p) {
        p = scan_clock(p + 1, &c); /* past any one separator */
        if (!p || !clock_valid(&c))
            return -EINVAL;
        if (*p == 'Z') {
            aware = true;
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p == '-' ? -1 : 1;
            struct clock o = {.frac_den = 1};
            p++;
            if (p[0] && p[1] && p[2] == ':') { /* +HH:MM[:SS[.ffffff]] */
                p = scan_clock(p, &o);
                if (!p || !clock_valid(&o))
                    return -EINVAL;
            } else { /* +HH or +HHMM */
                p = scan_offset(p, &o.hour, &o.minute);
                if (!p || !clock_valid(&o))
                    return -EINVAL;
            }
            aware = true;
            off_us = sign * ((((long long)o.hour * 60 + o.minute) * 60 + o.second) * 1000000LL +
                             clock_us(&o));
        }
        if (*p)
            return -EINVAL;
    }
    long long secs =
        days_from_civil(y, mo, d) * 86400LL + c.hour * 3600LL + c.minute * 60LL + c.second;
    if (!aware) {
        long long off;
        if (local_offset(secs, &off) < 0)
            return -EINVAL;
        off_us = off * 1000000LL;
    }
    long long total_us = secs * 1000000LL + clock_us(&c) - off_us;
    *ret = (double)total_us / 1e6;
    return 0;
}

void iso8601_format_utc(double t, char *buf, size_t cap)
{
    time_t tt = (time_t)floor(t);
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, cap, "%.17g", t);
}
