/*
 * Unit tests for core/timeutil: the clocks, local ISO 8601 time stamps (checked against
 * what Python's datetime.isoformat() writes for the same instant and zone) and duration
 * strings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/parse.h"
#include "core/timeutil.h"

/* 2026-09-01T00:29:03.627448Z */
#define INSTANT_NS 1788222543627448000LL

static void set_tz(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

/* The Olson name when the zone database is installed, else the POSIX rule. */
static const char *los_angeles(void)
{
    return access("/usr/share/zoneinfo/America/Los_Angeles", R_OK) == 0 ? "America/Los_Angeles"
                                                                        : "PST8PDT,M3.2.0,M11.1.0";
}

static void check_iso(int64_t ns, const char *want)
{
    char buf[64];
    memset(buf, 'x', sizeof buf);
    int n = time_format_local_iso(ns, buf, sizeof buf);
    if (n < 0 || strcmp(buf, want) != 0)
        fail_msg("time_format_local_iso(%lld) = %d \"%s\", want \"%s\"", (long long)ns, n, buf,
                 want);
    assert_int_equal(n, (int)strlen(want));
    /* the cached form gives the same text, from a fresh cache and from one kept */
    static struct time_local_cache kept;
    struct time_local_cache fresh = {0};
    char c1[64], c2[64];
    assert_int_equal(time_format_local_iso_cached(&fresh, ns, c1, sizeof c1), n);
    assert_string_equal(c1, want);
    assert_int_equal(time_format_local_iso_cached(&kept, ns, c2, sizeof c2), n);
    assert_string_equal(c2, want);
}

/* Across a change of offset (Los Angeles, 2026-03-08 02:00 PST becomes 03:00 PDT at
 * 10:00 UTC) and a day, in steps of 0.25 s with one cache: the text of the uncached form
 * every time; a buffer too small refused. */
static void test_iso_cached(void **state)
{
    (void)state;
    set_tz(los_angeles());
    struct time_local_cache c = {0};
    int64_t change = 1772964000LL * NS_PER_S;
    for (int64_t t = change - 3 * NS_PER_S; t < change + 3 * NS_PER_S; t += NS_PER_S / 4) {
        char want[64], got[64];
        int n = time_format_local_iso(t, want, sizeof want);
        assert_int_equal(time_format_local_iso_cached(&c, t, got, sizeof got), n);
        assert_string_equal(got, want);
    }
    char small[20];
    assert_int_equal(time_format_local_iso_cached(&c, change, small, sizeof small), -EINVAL);
    assert_string_equal(small, "");
    char buf[64];
    time_format_local_iso_cached(&c, change - NS_PER_S / 2, buf, sizeof buf);
    assert_string_equal(buf, "2026-03-08T01:59:59.500000-08:00");
    time_format_local_iso_cached(&c, change + NS_PER_S / 2, buf, sizeof buf);
    assert_string_equal(buf, "2026-03-08T03:00:00.500000-07:00");
    set_tz("UTC");
}

static void test_iso_utc(void **state)
{
    (void)state;
    set_tz("UTC");
    check_iso(INSTANT_NS, "2026-09-01T00:29:03.627448+00:00");
    /* the fraction is left out when it is zero */
    check_iso(1788222543000000000LL, "2026-09-01T00:29:03+00:00");
    check_iso(0, "1970-01-01T00:00:00+00:00");
    check_iso(1000, "1970-01-01T00:00:00.000001+00:00");
    /* below a microsecond is cut, not rounded */
    check_iso(1788222543000000999LL, "2026-09-01T00:29:03+00:00");
    check_iso(1788222543999999999LL, "2026-09-01T00:29:03.999999+00:00");
    /* before the epoch, as datetime.fromtimestamp(-1.5) */
    check_iso(-1500000000LL, "1969-12-31T23:59:58.500000+00:00");
    check_iso(-NS_PER_S, "1969-12-31T23:59:59+00:00");
}

static void test_iso_los_angeles(void **state)
{
    (void)state;
    set_tz(los_angeles());
    check_iso(INSTANT_NS, "2026-08-31T17:29:03.627448-07:00");
    check_iso(INSTANT_NS + 86400 * NS_PER_S, "2026-09-01T17:29:03.627448-07:00");
    check_iso(1768507200LL * NS_PER_S, "2026-01-15T12:00:00-08:00");
    set_tz("UTC");
}

static void test_iso_odd_offsets(void **state)
{
    (void)state;
    if (access("/usr/share/zoneinfo/Asia/Kolkata", R_OK) == 0) {
        set_tz("Asia/Kolkata");
        check_iso(1772303400LL * NS_PER_S, "2026-03-01T00:00:00+05:30");
    }
    set_tz("NST+3:30");
    check_iso(1772335800LL * NS_PER_S, "2026-03-01T00:00:00-03:30");
    if (access("/usr/share/zoneinfo/America/Los_Angeles", R_OK) == 0) {
        /* local mean time had seconds in its offset; isoformat writes them */
        set_tz("America/Los_Angeles");
        check_iso(-3786797222LL * NS_PER_S, "1850-01-01T00:00:00-07:52:58");
    }
    if (access("/usr/share/zoneinfo/Europe/Amsterdam", R_OK) == 0) {
        set_tz("Europe/Amsterdam");
        check_iso(-3786826772LL * NS_PER_S, "1850-01-01T00:00:00+00:19:32");
    }
    set_tz("UTC");
}

static void test_iso_buffer(void **state)
{
    (void)state;
    set_tz("UTC");
    const char *want = "2026-09-01T00:29:03.627448+00:00";
    char buf[64];
    /* exactly enough room */
    assert_int_equal(time_format_local_iso(INSTANT_NS, buf, strlen(want) + 1), strlen(want));
    assert_string_equal(buf, want);
    /* one byte short: an error and an empty string, never a cut stamp */
    memset(buf, 'x', sizeof buf);
    assert_int_equal(time_format_local_iso(INSTANT_NS, buf, strlen(want)), -EINVAL);
    assert_string_equal(buf, "");
    memset(buf, 'x', sizeof buf);
    assert_int_equal(time_format_local_iso(INSTANT_NS, buf, 1), -EINVAL);
    assert_int_equal(buf[0], '\0');
    assert_int_equal(buf[1], 'x');
    assert_int_equal(time_format_local_iso(INSTANT_NS, buf, 0), -EINVAL);
    assert_int_equal(buf[0], '\0');
}

static void test_clocks(void **state)
{
    (void)state;
    int64_t a = time_mono_ns();
    assert_true(a > 0);
    int64_t prev = a;
    for (int i = 0; i < 1000; i++) {
        int64_t t = time_mono_ns();
        assert_true(t >= prev);
        prev = t;
    }
    struct timespec ts = {0, 2 * NS_PER_MS};
    nanosleep(&ts, NULL);
    int64_t b = time_mono_ns();
    assert_true(b - a >= 2 * NS_PER_MS);
    assert_true(b - a < 10 * NS_PER_S);

    int64_t r = time_real_ns();
    int64_t now_s = (int64_t)time(NULL);
    assert_true(r / NS_PER_S >= now_s - 1 && r / NS_PER_S <= now_s + 1);
}

static void check_duration(int64_t ns, const char *want)
{
    char buf[32];
    memset(buf, 'x', sizeof buf);
    time_format_duration(ns, buf, sizeof buf);
    if (strcmp(buf, want) != 0)
        fail_msg("time_format_duration(%lld) = \"%s\", want \"%s\"", (long long)ns, buf, want);
}

static void test_duration(void **state)
{
    (void)state;
    check_duration(100 * NS_PER_MS, "100ms");
    check_duration(1500 * NS_PER_MS, "1.5s");
    check_duration(250 * NS_PER_US, "250us");
    check_duration(NS_PER_S, "1s");
    check_duration(0, "0s");
    check_duration(500, "500ns");
    check_duration(1, "1ns");
    check_duration(1500, "1.5us");
    check_duration(NS_PER_MS, "1ms");
    check_duration(10 * NS_PER_MS, "10ms");
    check_duration(999 * NS_PER_MS, "999ms");
    check_duration(1234567, "1.234567ms");
    check_duration(120 * NS_PER_S, "120s");
    check_duration(86400 * NS_PER_S, "86400s");
    check_duration(NS_PER_S + 1, "1.000000001s");
    check_duration(-1500 * NS_PER_MS, "-1.5s");
    check_duration(-500, "-500ns");
    check_duration(INT64_MAX, "9223372036.854775807s");
    check_duration(INT64_MIN, "-9223372036.854775808s");

    char small[4];
    time_format_duration(1500 * NS_PER_MS, small, sizeof small);
    assert_string_equal(small, "1.5");
}

static void test_duration_round_trip(void **state)
{
    (void)state;
    /* what time_format_duration writes, parse_duration_ns reads back */
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int64_t ns = (int64_t)(x % (uint64_t)(86400 * NS_PER_S)) + 1;
        if (i % 3 == 0)
            ns -= ns % NS_PER_MS;
        if (ns <= 0)
            continue;
        char buf[32];
        time_format_duration(ns, buf, sizeof buf);
        int64_t back = 0;
        int r = parse_duration_ns(buf, &back);
        if (r != 0 || back != ns)
            fail_msg("%lld -> \"%s\" -> %d %lld", (long long)ns, buf, r, (long long)back);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iso_utc),         cmocka_unit_test(test_iso_los_angeles),
        cmocka_unit_test(test_iso_odd_offsets), cmocka_unit_test(test_iso_cached),
        cmocka_unit_test(test_iso_buffer),      cmocka_unit_test(test_clocks),
        cmocka_unit_test(test_duration),        cmocka_unit_test(test_duration_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
