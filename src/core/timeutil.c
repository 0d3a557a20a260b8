/* timeutil: clocks and time formatting. */
#include "timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
    time_t sec = (time_t)(real_ns / NS_PER_S);
    long usec = (long)((real_ns % NS_PER_S) / NS_PER_US);
    if (usec < 0) {
        usec += 1000000;
        sec -= 1;
    }
    struct tm tm;
    if (!localtime_r(&sec, &tm) || cap < 40)
        return -EINVAL;
    long off = tm.tm_gmtoff;
    char sign = off < 0 ? '-' : '+';
    off = labs(off);
    int n;
    if (usec)
        n = snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld%c%02ld:%02ld",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     usec, sign, off / 3600, (off % 3600) / 60);
    else
        n = snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d%c%02ld:%02ld", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, sign, off / 3600,
                     (off % 3600) / 60);
    return n;
}

void time_format_duration(int64_t ns, char *buf, size_t cap)
{
    if (ns % NS_PER_S == 0)
        snprintf(buf, cap, "%llds", (long long)(ns / NS_PER_S));
    else if (ns % NS_PER_MS == 0)
        snprintf(buf, cap, "%lldms", (long long)(ns / NS_PER_MS));
    else if (ns % NS_PER_US == 0)
        snprintf(buf, cap, "%lldus", (long long)(ns / NS_PER_US));
    else
        snprintf(buf, cap, "%lldns", (long long)ns);
}
