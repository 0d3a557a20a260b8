/*
 * Unit tests for core/iso8601: the two entry points on the one scanner (carma's own stamps
 * with an offset always, Python's fromisoformat with naive local stamps), where they agree
 * and where they differ on purpose, and the UTC formatter.
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

#include "core/iso8601.h"

static void set_tz(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

static void aware_ok(const char *s, double want)
{
    double t = -1;
    const char *why = NULL;
    int r = iso8601_parse_aware(s, &t, &why);
    if (r != 0 || t != want)
        fail_msg("iso8601_parse_aware(\"%s\") = %d %.17g (%s), want %.17g", s, r, t, r ? why : "",
                 want);
}

static void aware_bad(const char *s, const char *want_why)
{
    double t = -1;
    const char *why = NULL;
    int r = iso8601_parse_aware(s, &t, &why);
    if (r != -EINVAL || strcmp(why, want_why) != 0)
        fail_msg("iso8601_parse_aware(\"%s\") = %d (%s), want -EINVAL (%s)", s, r, why ? why : "",
                 want_why);
    assert_true(t == -1); /* *ret untouched */
}

static void py_ok(const char *s, double want)
{
    double t = -1;
    int r = iso8601_parse_fromisoformat(s, &t);
    if (r != 0 || t != want)
        fail_msg("iso8601_parse_fromisoformat(\"%s\") = %d %.17g, want %.17g", s, r, t, want);
}

static void py_bad(const char *s)
{
    double t = -1;
    assert_int_equal(iso8601_parse_fromisoformat(s, &t), -EINVAL);
    assert_true(t == -1);
}

#define SYNTAX     "is not an ISO 8601 time (YYYY-MM-DDTHH:MM:SS+HH:MM)"
#define INVALID    "is not a valid date and time"
#define BAD_OFFSET "has an invalid UTC offset"
#define NO_OFFSET  "has no UTC offset (add Z or +HH:MM)"

static void test_aware(void **state)
{
    (void)state;
    aware_ok("2026-11-30T08:00:00Z", 1796025600.0);
    aware_ok("1970-01-01t00:00z", 0.0);
    aware_ok("2024-02-29 12:30+0530", 1709190000.0);
    aware_ok("2024-02-29T12:30:15,25-07", 1709235015.25);
    aware_ok("1970-01-01T00:00:00+01:00", -3600.0);
    /* nine digits of a fraction are kept, further ones dropped */
    aware_ok("1970-01-01T00:00:00.123456789123Z", 0.123456789);
    aware_ok("0000-03-01T00:00Z", -62162035200.0);

    aware_bad("2026-11-30T08:00:00", NO_OFFSET);
    aware_bad("2026-11-30T08Z", SYNTAX);
    aware_bad("2026-11-30X08:00Z", SYNTAX);
    aware_bad("2026-11-30", SYNTAX);
    aware_bad("2026-11-30T08:00:0Z", SYNTAX);
    aware_bad("2026-11-30T08:00:00.Z", SYNTAX);
    aware_bad("2026-11-30T08:00:00Z ", SYNTAX);
    aware_bad("2026-11-30T08:00:00+05:30:00", SYNTAX);
    aware_bad("2026-11-30T08:00:00+053", SYNTAX);
    aware_bad("2026-11-30T08:00:00+5", SYNTAX);
    /* the range of the date and time is checked before the offset is read */
    aware_bad("2026-02-29T08:00:00Z", INVALID);
    aware_bad("2026-13-01T08:00", INVALID);
    aware_bad("2026-01-01T24:00Z", INVALID);
    aware_bad("2026-01-01T23:60+99", INVALID);
    aware_bad("2026-01-01T23:59:60Z", INVALID);
    aware_bad("2026-01-01T08:00+24:00", BAD_OFFSET);
    aware_bad("2026-01-01T08:00-0060", BAD_OFFSET);
    aware_bad("2026-01-01T08:00+25:00:", BAD_OFFSET);
}

static void test_fromisoformat(void **state)
{
    (void)state;
    set_tz("UTC");
    py_ok("1970-01-01T00:00:01Z", 1.0);
    py_ok("1970-01-01 01:00-0130", 9000.0);
    py_ok("1970-01-02", 86400.0);
    py_ok("1970-01-01T00:00:00.1234567", 0.123456);
    py_ok("1970-01-01x05", 18000.0);
    py_ok("1970-01-01T00:00+00:00:01.5", -1.5);
    py_ok("2024-02-29T12:30:15,25-07", 1709235015.25);
    py_bad("1970-02-30T00:00:00");
    py_bad("1970-01-01T24:00:00");
    py_bad("1970-01-01T00:00:00 junk");
    py_bad("1970-01-01T00:00:00z");
    py_bad("0000-01-01");
    py_bad("1970-01-01T");
    py_bad("1970-01-01T00:");
    py_bad("1970-01-01T00:00+24");
    py_bad("1970-01-01T00:00+00:60");
    py_bad("1970-01-01T00:00+0000:00");
    py_bad("1970-01-01T00:00+053");
    /* naive stamps in a zone with DST, resolved as CPython does (fold=0): the earlier of the
     * two 01:30 of the fall-back night, a time in the spring gap moved by the offset before it */
    if (access("/usr/share/zoneinfo/America/Los_Angeles", R_OK) == 0) {
        set_tz("America/Los_Angeles");
        py_ok("2026-11-01T01:30:00", 1793521800.0);
        py_ok("2026-03-08T02:30:00", 1772962200.0);
        py_ok("2026-07-01T12:00:00", 1782932400.0);
        set_tz("UTC");
    }
    /* a POSIX rule needs no zone database */
    set_tz("EST5EDT,M3.2.0,M11.1.0");
    py_ok("2026-07-01T12:00:00", 1782921600.0);
    py_ok("2026-01-01", 1767243600.0);
    set_tz("UTC");
}

static void test_format_utc(void **state)
{
    (void)state;
    char buf[32];
    iso8601_format_utc(1796025600.75, buf, sizeof buf);
    assert_string_equal(buf, "2026-11-30T08:00:00Z");
    iso8601_format_utc(-0.5, buf, sizeof buf);
    assert_string_equal(buf, "1969-12-31T23:59:59Z");
    double t;
    const char *why;
    assert_int_equal(iso8601_parse_aware("2026-11-30T08:00:00Z", &t, &why), 0);
    assert_true(t == 1796025600.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aware),
        cmocka_unit_test(test_fromisoformat),
        cmocka_unit_test(test_format_utc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
