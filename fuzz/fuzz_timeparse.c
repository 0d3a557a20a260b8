/*
 * libFuzzer harness for the time and duration parsers: core/iso8601's two entry points,
 * iso8601_parse_fromisoformat (srt-slurm's stamps, Python's fromisoformat) and
 * iso8601_parse_aware (the intensity file's stamps, an offset always), and core/parse's
 * parse_duration_ns, parse_duration_range_ns, parse_i64 and parse_u64.
 *
 * Every line of the input (the first 64, up to 200 bytes each) is read by each of them:
 *   - ISO: where both entry points accept a stamp with a UTC offset they agree (to the
 *     microsecond fromisoformat keeps); a stamp either accepts, formatted again with
 *     time_format_local_iso (UTC) or iso8601_format_utc, reads back as the same time (to the
 *     microsecond; to the second); a naive stamp read in US Eastern time (a POSIX TZ rule, no
 *     tzdata needed) is the UTC reading plus 4 or 5 hours;
 *   - durations: parse_duration_ns and parse_duration_range_ns(0, 1 day) agree on what both
 *     take, the value is within a day, and time_format_duration's text of it reads back as the
 *     same number of nanoseconds;
 *   - integers: parse_i64 / parse_u64 give what strtoll / strtoull give, and their decimal
 *     text reads back.
 *
 * fuzz-sources: src/core/iso8601.c src/core/parse.c src/core/timeutil.c
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/iso8601.h"
#include "core/parse.h"
#include "core/timeutil.h"

static void set_tz(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

static bool near(double a, double b, double tol)
{
    double m = fmax(fabs(a), fabs(b));
    return fabs(a - b) <= tol + 4 * m * 2.220446049250313e-16;
}

static bool has_offset(const char *s)
{
    size_t n = strlen(s);
    if (n > 0 && (s[n - 1] == 'Z' || s[n - 1] == 'z'))
        return true;
    /* a sign after the time (past the date's own '-'s) */
    return n > 10 && (strchr(s + 10, '+') || strchr(s + 10, '-'));
}

static void iso(const char *s)
{
    double a = 0, b = 0;
    const char *why;
    set_tz("UTC0");
    bool sa = iso8601_parse_fromisoformat(s, &a) == 0;
    bool ca = iso8601_parse_aware(s, &b, &why) == 0;
    if (sa && !isfinite(a))
        abort();
    if (ca && !isfinite(b))
        abort();
    if (sa && ca && !near(a, b, 1e-6)) {
        fprintf(stderr, "'%s': fromisoformat %.17g, aware %.17g\n", s, a, b);
        abort();
    }
    /* formatted again and read back */
    if (sa || ca) {
        double t = sa ? a : b;
        char buf[128];
        if (fabs(t) < 9e9 && /* the int64 ns of time_format_local_iso */
            time_format_local_iso((int64_t)llround(t * 1e6) * 1000, buf, sizeof buf) > 0) {
            double back;
            if (iso8601_parse_fromisoformat(buf, &back) == 0 && !near(back, t, 1.5e-6)) {
                fprintf(stderr, "'%s' = %.17g, formatted '%s', read back %.17g\n", s, t, buf, back);
                abort();
            }
        }
        if (t >= 0 && t < 253402300800.0) { /* years 1970 to 9999 */
            iso8601_format_utc(t, buf, sizeof buf);
            double back;
            if (iso8601_parse_aware(buf, &back, &why) != 0 || back != floor(t)) {
                fprintf(stderr, "'%s' = %.17g, iso8601_format_utc '%s' reads back %.17g\n", s, t,
                        buf, back);
                abort();
            }
        }
    }
    /* a naive stamp in US Eastern time: 4 or 5 hours later than in UTC */
    if (sa && !has_offset(s)) {
        set_tz("EST5EDT,M3.2.0,M11.1.0");
        double e = 0;
        if (iso8601_parse_fromisoformat(s, &e) == 0) {
            double d = e - a;
            if (!near(d, 14400, 1e-6) && !near(d, 18000, 1e-6)) {
                fprintf(stderr, "'%s': UTC %.17g, US Eastern %.17g\n", s, a, e);
                abort();
            }
        }
    }
}

static void duration(const char *s)
{
    int64_t a = 0, b = 0;
    int ra = parse_duration_ns(s, &a);
    int rb = parse_duration_range_ns(s, 0, 86400 * (int64_t)1000000000, &b);
    if (ra == 0) {
        if (a <= 0 || a > 86400 * (int64_t)1000000000 || rb != 0 || a != b)
            abort();
    }
    if (rb == 0) {
        if (b < 0 || (ra != 0 && b != 0))
            abort(); /* range takes what parse_duration_ns does, and 0 */
        char buf[64];
        time_format_duration(b, buf, sizeof buf);
        int64_t back = -1;
        if (b > 0 ? parse_duration_ns(buf, &back) != 0 || back != b
                  : parse_duration_range_ns(buf, 0, 0, &back) != 0 || back != 0) {
            fprintf(stderr, "'%s' = %" PRId64 " ns, formatted '%s', read back %" PRId64 "\n", s, b,
                    buf, back);
            abort();
        }
    }
}

static void integers(const char *s)
{
    int64_t i;
    uint64_t u;
    char buf[32];
    if (parse_i64(s, &i) == 0) {
        errno = 0;
        if (strtoll(s, NULL, 10) != i || errno)
            abort();
        snprintf(buf, sizeof buf, "%" PRId64, i);
        int64_t back;
        if (parse_i64(buf, &back) != 0 || back != i)
            abort();
    }
    if (parse_u64(s, &u) == 0) {
        errno = 0;
        if (strtoull(s, NULL, 10) != u || errno)
            abort();
        snprintf(buf, sizeof buf, "%" PRIu64, u);
        uint64_t back;
        if (parse_u64(buf, &back) != 0 || back != u)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    for (int line = 0; line < 64 && p < end; line++) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        char s[201];
        if (n < sizeof s && !memchr(p, '\0', n)) {
            memcpy(s, p, n);
            s[n] = '\0';
            iso(s);
            duration(s);
            integers(s);
        }
        p += n + 1;
    }
    return 0;
}
