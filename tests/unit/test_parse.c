/*
 * Unit tests for core/parse: strict integer, floating point and duration parsing.
 *
 * Behaviour asserted beyond the header: a plain number is seconds ("1.5" = 1.5 s); duration
 * units are case-sensitive ("ns", "us", "µs", "ms", "s", "m", "h") and must follow the number
 * directly ("1 s" is rejected); a duration
 * that rounds to 0 ns ("0.1ns") is rejected like "0s"; a sign is allowed on parse_i64 and
 * parse_double ("+5"), never on parse_u64.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/parse.h"

static void test_u64_valid(void **state)
{
    (void)state;
    uint64_t v = 99;
    assert_int_equal(parse_u64("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(parse_u64("42", &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(parse_u64("  42\n", &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(parse_u64("\t7 \r\n", &v), 0);
    assert_int_equal(v, 7);
    assert_int_equal(parse_u64("000123", &v), 0);
    assert_int_equal(v, 123);
    assert_int_equal(parse_u64("262143328850\n", &v), 0);
    assert_int_equal(v, 262143328850ULL);
    assert_int_equal(parse_u64("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
}

/* The reference: every digit checked, as the loops parse_digits_u64 replaced. */
static const char *digits_ref(const char *p, uint64_t *ret)
{
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return NULL;
        v = v * 10 + d;
    }
    *ret = v;
    return p;
}

/* parse_digits_u64: the reference's end and value for every length from 0 to 40 digits, runs
 * of leading zeros, the values next to 2^64, and whatever byte ends the run. */
static void test_digits_u64(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "",
        "x",
        "0",
        "7 ",
        "1234567890123456789",  /* 19 digits: taken unchecked */
        "9999999999999999999",  /* the largest 19 */
        "10000000000000000000", /* 20: checked */
        "18446744073709551615", /* 2^64 - 1 */
        "18446744073709551616", /* 2^64 */
        "18446744073709551619",
        "18446744073709551620",
        "18446744073709551700",
        "19999999999999999999",
        "99999999999999999999",
        "184467440737095516150", /* 2^64 - 1, then a digit */
        "00000000000000000000000000000018446744073709551615",
        "00000000000000000000000000000018446744073709551616",
        "0000000000000000000000000000000000000000",
        "12345678901234567890123456789012345678901234567890",
        "42\n",
        "42/",
        "42:",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t a = 77, b = 77;
        const char *x = parse_digits_u64(cases[i], &a), *y = digits_ref(cases[i], &b);
        if (x != y || (x && a != b))
            fail_msg("parse_digits_u64(\"%s\"): end %td value %llu; want end %td value %llu",
                     cases[i], x ? x - cases[i] : -1, (unsigned long long)a, y ? y - cases[i] : -1,
                     (unsigned long long)b);
    }
    /* every prefix of a long run of each digit, and 2^64 - 1 with each digit raised */
    char buf[64];
    for (int d = 0; d <= 9; d++)
        for (int n = 0; n < 40; n++) {
            memset(buf, '0' + d, (size_t)n);
            buf[n] = ',';
            buf[n + 1] = '\0';
            uint64_t a = 0, b = 0;
            const char *x = parse_digits_u64(buf, &a), *y = digits_ref(buf, &b);
            if (x != y || (x && a != b))
                fail_msg("%d x '%d': end %td, want %td", n, d, x ? x - buf : -1, y ? y - buf : -1);
        }
    for (int i = 0; i < 20; i++)
        for (char c = '0'; c <= '9'; c++) {
            strcpy(buf, "18446744073709551615");
            buf[i] = c;
            uint64_t a = 0, b = 0;
            const char *x = parse_digits_u64(buf, &a), *y = digits_ref(buf, &b);
            if (x != y || (x && a != b))
                fail_msg("'%s': end %td, want %td", buf, x ? x - buf : -1, y ? y - buf : -1);
        }
}

static void test_u64_reject(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",  "  ", "\n",   "12a", "a12", "1 2", "-1",  "+1",
        "+", "-",  "0x10", "1.0", "1e3", "inf", "nan",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 77;
        int r = parse_u64(bad[i], &v);
        if (r != -EINVAL)
            fail_msg("parse_u64(\"%s\") = %d, want -EINVAL", bad[i], r);
        assert_int_equal(v, 77); /* untouched on failure */
    }
    uint64_t v = 77;
    assert_int_equal(parse_u64(NULL, &v), -EINVAL);
    assert_int_equal(parse_u64("18446744073709551616", &v), -ERANGE);
    assert_int_equal(parse_u64("99999999999999999999", &v), -ERANGE);
    assert_int_equal(parse_u64("100000000000000000000000", &v), -ERANGE);
    assert_int_equal(v, 77);
}

/* parse_uint: parse_u64's rule, then the range of an unsigned int. */
static void test_uint(void **state)
{
    (void)state;
    unsigned v = 9;
    assert_int_equal(parse_uint("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(parse_uint(" 7\n", &v), 0);
    assert_int_equal(v, 7);
    assert_int_equal(parse_uint("4294967295", &v), 0);
    assert_true(v == 4294967295U);
    v = 9;
    assert_int_equal(parse_uint("4294967296", &v), -ERANGE);
    assert_int_equal(parse_uint("18446744073709551616", &v), -ERANGE);
    assert_int_equal(parse_uint("-1", &v), -EINVAL);
    assert_int_equal(parse_uint("1.5", &v), -EINVAL);
    assert_int_equal(parse_uint("", &v), -EINVAL);
    assert_int_equal(parse_uint(NULL, &v), -EINVAL);
    assert_int_equal(v, 9); /* untouched on failure */
}

static void test_i64(void **state)
{
    (void)state;
    int64_t v = 5;
    assert_int_equal(parse_i64("-1", &v), 0);
    assert_int_equal(v, -1);
    assert_int_equal(parse_i64(" +17\n", &v), 0);
    assert_int_equal(v, 17);
    assert_int_equal(parse_i64("-007", &v), 0);
    assert_int_equal(v, -7);
    assert_int_equal(parse_i64("-0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(parse_i64("9223372036854775807", &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(parse_i64("-9223372036854775808", &v), 0);
    assert_true(v == INT64_MIN);

    v = 5;
    assert_int_equal(parse_i64("9223372036854775808", &v), -ERANGE);
    assert_int_equal(parse_i64("-9223372036854775809", &v), -ERANGE);
    assert_int_equal(parse_i64("18446744073709551616", &v), -ERANGE);
    assert_int_equal(parse_i64("", &v), -EINVAL);
    assert_int_equal(parse_i64("  ", &v), -EINVAL);
    assert_int_equal(parse_i64("-", &v), -EINVAL);
    assert_int_equal(parse_i64("+", &v), -EINVAL);
    assert_int_equal(parse_i64("--1", &v), -EINVAL);
    assert_int_equal(parse_i64("- 1", &v), -EINVAL);
    assert_int_equal(parse_i64("1 2", &v), -EINVAL);
    assert_int_equal(parse_i64("12a", &v), -EINVAL);
    assert_int_equal(parse_i64("0x10", &v), -EINVAL);
    assert_int_equal(v, 5);
}

static void test_double_valid(void **state)
{
    (void)state;
    double v = -1;
    assert_int_equal(parse_double("1.5", &v), 0);
    assert_true(v == 1.5);
    assert_int_equal(parse_double("  -3.25\n", &v), 0);
    assert_true(v == -3.25);
    assert_int_equal(parse_double("+2", &v), 0);
    assert_true(v == 2.0);
    assert_int_equal(parse_double("007.50", &v), 0);
    assert_true(v == 7.5);
    assert_int_equal(parse_double(".5", &v), 0);
    assert_true(v == 0.5);
    assert_int_equal(parse_double("5.", &v), 0);
    assert_true(v == 5.0);
    assert_int_equal(parse_double("1e3", &v), 0);
    assert_true(v == 1000.0);
    assert_int_equal(parse_double("2.5E-3", &v), 0);
    assert_true(v == 0.0025);
    assert_int_equal(parse_double("0.1", &v), 0);
    assert_true(v == 0.1);
    assert_int_equal(parse_double("1.7976931348623157e308", &v), 0);
    assert_true(v == 1.7976931348623157e308);
    /* a subnormal is a finite number that reads back exactly */
    assert_int_equal(parse_double("5e-324", &v), 0);
    assert_true(v == 5e-324);
    assert_int_equal(parse_double("-0", &v), 0);
    assert_true(v == 0.0 && signbit(v));
    /* no length limit on a well-formed number */
    assert_int_equal(
        parse_double("3.14159265358979323846264338327950288419716939937510582097494459230781", &v),
        0);
    assert_true(v == 3.141592653589793);
    char zeros[512];
    memset(zeros, '0', sizeof zeros);
    zeros[0] = '1';
    zeros[sizeof zeros - 1] = '\0';
    assert_int_equal(parse_double(zeros, &v), -ERANGE); /* 1e510 */
    zeros[1] = '.';
    assert_int_equal(parse_double(zeros, &v), 0);
    assert_true(v == 1.0);
}

static void test_double_reject(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",    "  ",  "12a",   "1 2",      "+",     "-",     "0x10", "inf",   "-inf",
        "nan", "NaN", "1e",    "1e+",      "1.2.3", "1e5e5", "--1",  ".",     "e5",
        "1,5", "1_0", "0x1p3", "infinity", "1d",    "1f",    "- 1",  "1.5 s",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v = 42;
        int r = parse_double(bad[i], &v);
        if (r != -EINVAL)
            fail_msg("parse_double(\"%s\") = %d, want -EINVAL", bad[i], r);
        assert_true(v == 42);
    }
    double v = 42;
    assert_int_equal(parse_double("1e999", &v), -ERANGE);
    assert_int_equal(parse_double("-1e999", &v), -ERANGE);
    assert_int_equal(parse_double("1.8e308", &v), -ERANGE);
    assert_true(v == 42);
}

static void test_duration_valid(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int64_t ns;
    } ok[] = {
        {"100ms", 100000000LL},
        {"1s", 1000000000LL},
        {"250us", 250000LL},
        {"250µs", 250000LL},
        {"1.5s", 1500000000LL},
        {"2m", 120000000000LL},
        {"500ns", 500LL},
        {"1ms", 1000000LL},
        {"1h", 3600000000000LL},
        {"24h", 86400000000000LL},
        {"1440m", 86400000000000LL},
        {" 10ms\n", 10000000LL},
        {"0.5ms", 500000LL},
        {".25s", 250000000LL},
        {"1e3ms", 1000000000LL},
        {"007s", 7000000000LL},
        {"1ns", 1LL},
        {"0.6ns", 1LL},
        {"0.001s", 1000000LL},
        {"+2s", 2000000000LL},
        {"1.5", 1500000000LL}, /* a plain number is seconds */
        {"100", 100000000000LL},
        {"0.1", 100000000LL},
        {" 2\n", 2000000000LL},
        {"1.00000000000000000000000000000000000000000000000000000000000000000000000s",
         1000000000LL},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = -1;
        int r = parse_duration_ns(ok[i].s, &v);
        if (r != 0 || v != ok[i].ns)
            fail_msg("parse_duration_ns(\"%s\") = %d, %lld; want 0, %lld", ok[i].s, r, (long long)v,
                     (long long)ok[i].ns);
    }
}

static void test_duration_reject(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "0",    "-1",    "ms",    "",   "  ",   "-1s",  "-0s",  "0s",   "0ms", "0.1ns",
        "abc",  "1 s",   "2d",    "1S", "1MS",  "1sec", "1s1",  "1ss",  "s1",  "infs",
        "nans", "1.5.s", "0x10s", "1e", "1,5s", "1 2s", "1msx", "--1s",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 42;
        int r = parse_duration_ns(bad[i], &v);
        if (r != -EINVAL)
            fail_msg("parse_duration_ns(\"%s\") = %d, want -EINVAL", bad[i], r);
        if (v != 42) /* *ret is written only on success */
            fail_msg("parse_duration_ns(\"%s\") wrote %lld", bad[i], (long long)v);
    }
    int64_t v = 42;
    assert_int_equal(parse_duration_ns("25h", &v), -ERANGE);
    assert_int_equal(parse_duration_ns("1441m", &v), -ERANGE);
    assert_int_equal(parse_duration_ns("86401s", &v), -ERANGE);
    assert_int_equal(parse_duration_ns("1e999s", &v), -ERANGE);
    assert_int_equal(parse_duration_ns(NULL, &v), -EINVAL);
    assert_int_equal(parse_duration_ns("86401", &v), -ERANGE);
    assert_int_equal(v, 42);
}

static void test_duration_range(void **state)
{
    (void)state;
    int64_t v = 42;
    assert_int_equal(parse_duration_range_ns("0", 0, 1000000000LL, &v), 0); /* 0 where allowed */
    assert_int_equal(v, 0);
    assert_int_equal(parse_duration_range_ns("0s", 0, 1000000000LL, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(parse_duration_range_ns("0.25", 0, 1000000000LL, &v), 0);
    assert_int_equal(v, 250000000LL);
    v = 42;
    assert_int_equal(parse_duration_range_ns("0", 1000000LL, 1000000000LL, &v), -ERANGE);
    assert_int_equal(parse_duration_range_ns("2", 1000000LL, 1000000000LL, &v), -ERANGE);
    assert_int_equal(parse_duration_range_ns("500us", 1000000LL, 1000000000LL, &v), -ERANGE);
    assert_int_equal(parse_duration_range_ns("-1", 0, 1000000000LL, &v), -EINVAL);
    assert_int_equal(parse_duration_range_ns("1x", 0, 1000000000LL, &v), -EINVAL);
    assert_int_equal(v, 42);
    char buf[256];
    parse_duration_rule(buf, sizeof buf, 1000000LL, 60000000000LL);
    assert_string_equal(buf, "a duration from 1ms to 1m: a plain number is seconds (1.5 = 1.5 s), "
                             "or give a unit: ns, us, ms, s, m or h (e.g. 100ms, 2s, 1m)");
    parse_duration_rule(buf, sizeof buf, 0, 1500000000LL);
    assert_string_equal(buf, "a duration from 0s to 1500ms: a plain number is seconds (1.5 = 1.5 "
                             "s), or give a unit: ns, us, ms, s, m or h (e.g. 100ms, 2s, 1m)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u64_valid),
        cmocka_unit_test(test_u64_reject),
        cmocka_unit_test(test_digits_u64),
        cmocka_unit_test(test_uint),
        cmocka_unit_test(test_i64),
        cmocka_unit_test(test_double_valid),
        cmocka_unit_test(test_double_reject),
        cmocka_unit_test(test_duration_valid),
        cmocka_unit_test(test_duration_reject),
        cmocka_unit_test(test_duration_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
