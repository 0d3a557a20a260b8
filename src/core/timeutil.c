/* timeutil: clocks and time formatting. */
#include "timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t time_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

int64_t time_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

int time_format_local_iso(int64_t real_ns, char *buf, size_t cap)
{
    if (cap > 0)
        buf[0] = '\0';
    time_t sec = (time_t)(real_ns / NS_PER_S);
    long usec = (long)((real_ns % NS_PER_S) / NS_PER_US);
    if (usec < 0) {
        usec += 1000000;
        sec -= 1;
    }
    struct tm tm;
    if (!localtime_r(&sec, &tm))
        return -EINVAL;
    char frac[16] = "";
    if (usec)
        snprintf(frac, sizeof frac, ".%06ld", usec);
    /* an offset with seconds (local mean time before time zones) keeps them, as isoformat */
    long off = tm.tm_gmtoff;
    char sign = off < 0 ? '-' : '+';
    off = labs(off);
    char offs[16] = "";
    if (off % 60)
        snprintf(offs, sizeof offs, ":%02ld", off % 60);
    char tmp[96];
    int n = snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d%s%c%02ld:%02ld%s",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     frac, sign, off / 3600, (off % 3600) / 60, offs);
    if (n < 0 || (size_t)n >= sizeof tmp || (size_t)n >= cap)
        return -EINVAL;
    memcpy(buf, tmp, (size_t)n + 1);
    return n;
}

int time_format_local_iso_cached(struct time_local_cache *c, int64_t real_ns, char *buf, size_t cap)
{
    int64_t sec = real_ns / NS_PER_S;
    long usec = (long)((real_ns % NS_PER_S) / NS_PER_US);
    if (usec < 0) {
        usec += 1000000;
        sec -= 1;
    }
    if (c->len <= 0 || c->sec != sec) {
        char whole[96];
        int n = time_format_local_iso(sec * NS_PER_S, whole, sizeof whole);
        /* the whole second's text: the date and time (19 characters), then the offset */
        if (n < 19 || n - 19 >= (int)sizeof c->offset) {
            c->len = 0;
            return time_format_local_iso(real_ns, buf, cap);
        }
        memcpy(c->date, whole, 19);
        c->date[19] = '\0';
        c->len = 19;
        c->off_len = n - 19;
        memcpy(c->offset, whole + 19, (size_t)c->off_len + 1);
        c->sec = sec;
    }
    size_t need = (size_t)c->len + (usec ? 7 : 0) + (size_t)c->off_len;
    if (need >= cap) {
        if (cap > 0)
            buf[0] = '\0';
        return -EINVAL;
    }
    char *p = buf;
    memcpy(p, c->date, (size_t)c->len);
    p += c->len;
    if (usec) {
        *p++ = '.';
        for (int i = 5; i >= 0; i--) {
            p[i] = (char)('0' + usec % 10);
            usec /= 10;
        }
        p += 6;
    }
    memcpy(p, c->offset, (size_t)c->off_len + 1);
    return (int)need;
}

void time_format_duration(int64_t ns, char *buf, size_t cap)
{
    static const struct {
        uint64_t ns;
        int digits;
        const char *name;
    } units[] = {{NS_PER_S, 9, "s"}, {NS_PER_MS, 6, "ms"}, {NS_PER_US, 3, "us"}, {1, 0, "ns"}};
    uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
    if (a == 0) {
        snprintf(buf, cap, "0s");
        return;
    }
    /* the largest unit that is not more than the duration, with an exact decimal fraction */
    size_t u = 0;
    while (a < units[u].ns)
        u++;
    uint64_t whole = a / units[u].ns, rest = a % units[u].ns;
    char frac[16] = "";
    if (rest) {
        int len = snprintf(frac, sizeof frac, ".%0*llu", units[u].digits, (unsigned long long)rest);
        while (len > 1 && frac[len - 1] == '0')
            frac[--len] = '\0';
    }
    snprintf(buf, cap, "%s%llu%s%s", ns < 0 ? "-" : "", (unsigned long long)whole, frac,
             units[u].name);
}

int time_wait_signal_until(int64_t mono_ns, const sigset_t *set)
{
    for (;;) {
        int64_t left = mono_ns - time_mono_ns();
        if (left <= 0)
            return 0;
        struct timespec ts = {(time_t)(left / NS_PER_S), (long)(left % NS_PER_S)};
        int s = sigtimedwait(set, NULL, &ts);
        if (s > 0)
            return s;
        if (s < 0 && errno != EAGAIN && errno != EINTR)
            return 0;
    }
}
