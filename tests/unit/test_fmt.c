/*
 * Unit tests for core/fmt: fixed-point (fmt_fixed6), integer (fmt_u64) and shortest
 * round-trip (fmt_double) formatting.
 *
 * fmt_fixed6 is held to printf("%.6f") with trailing zeros (and a "-" on a zero result)
 * removed: the decimal it writes is the exact binary value rounded to 1e-6, so 0.0000005
 * (stored as 4.99999999999999977e-7) is "0" while 1.0000005 (stored just above) is
 * "1.000001".
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fmt.h"

static void check_fixed6(double v, const char *want)
{
    char buf[64];
    memset(buf, 'x', sizeof buf);
    size_t n = fmt_fixed6(buf, v);
    if (strcmp(buf, want) != 0)
        fail_msg("fmt_fixed6(%.17g) = \"%s\", want \"%s\"", v, buf, want);
    assert_int_equal(n, strlen(want));
}

static void test_fixed6_values(void **state)
{
    (void)state;
    check_fixed6(0.0, "0");
    check_fixed6(-0.0, "0");
    check_fixed6(1.0, "1");
    check_fixed6(-3.0, "-3");
    check_fixed6(150.0, "150");
    check_fixed6(150.5, "150.5");
    check_fixed6(0.000123, "0.000123");
    check_fixed6(0.000001, "0.000001");
    check_fixed6(1e-7, "0");
    check_fixed6(-1e-7, "0");
    check_fixed6(-3.25, "-3.25");
    check_fixed6(123456789.123456, "123456789.123456");
    check_fixed6(0.1 + 0.2, "0.3");
    check_fixed6(1000000.0, "1000000");
    check_fixed6(42.000010, "42.00001");
    check_fixed6(8999999999999.0, "8999999999999");
}

static void test_fixed6_rounding(void **state)
{
    (void)state;
    /* exact binary values decide: 5e-7 is stored below one half of 1e-6 */
    check_fixed6(0.0000005, "0");
    check_fixed6(-0.0000005, "0");
    check_fixed6(0.0000015, "0.000002");
    check_fixed6(1.0000005, "1.000001");
    check_fixed6(2.0000005, "2.000001");
    check_fixed6(-2.0000005, "-2.000001");
    check_fixed6(0.9999995, "1");
    check_fixed6(0.9999994, "0.999999");
    check_fixed6(1.9999996, "2");
    check_fixed6(-0.9999999, "-1");
    check_fixed6(123456.7890125, "123456.789012"); /* stored as ...78901249999 */
    /* an exact tie rounds to even, as printf does */
    check_fixed6(0.0078125, "0.007812");
    check_fixed6(0.0234375, "0.023438");
}

static void test_fixed6_large(void **state)
{
    (void)state;
    /* no noise digits from scaling: the stored value rounded to 1e-6 */
    check_fixed6(8999999999999.5, "8999999999999.5");
    check_fixed6(1e12 + 0.3, "1000000000000.300049"); /* stored as 1000000000000.30004882… */
    check_fixed6(1e10 + 0.1, "10000000000.1");        /* stored as 10000000000.10000038… */
    check_fixed6(4503599627.370496, "4503599627.370496");
    check_fixed6(-8999999999999.75, "-8999999999999.75");
}

static void test_fixed6_out_of_range(void **state)
{
    (void)state;
    check_fixed6(9e12, "");
    check_fixed6(-9e12, "");
    check_fixed6(1e300, "");
    check_fixed6(INFINITY, "");
    check_fixed6(-INFINITY, "");
    check_fixed6(NAN, "");
}

/* Trims printf("%.6f") output the way fmt_fixed6 writes it. */
static void printf_fixed6(char *buf, size_t cap, double v)
{
    snprintf(buf, cap, "%.6f", v);
    size_t n = strlen(buf);
    while (buf[n - 1] == '0')
        buf[--n] = '\0';
    if (buf[n - 1] == '.')
        buf[--n] = '\0';
    if (strcmp(buf, "-0") == 0)
        strcpy(buf, "0");
}

static void test_fixed6_matches_printf(void **state)
{
    (void)state;
    /* deterministic pseudo-random values over every magnitude fmt_fixed6 accepts */
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double mant = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
        int exp10 = (int)(x % 20) - 7;                        /* 1e-7 .. 1e12 */
        double v = mant * pow(10.0, exp10);
        if (x & (1ULL << 5))
            v = -v;
        if (i % 7 == 0) /* values sitting on a half of 1e-6 */
            v = (floor(v * 1e6) + 0.5) / 1e6;
        if (!(fabs(v) < 9e12))
            continue;
        char want[64], got[64];
        printf_fixed6(want, sizeof want, v);
        fmt_fixed6(got, v);
        if (strcmp(want, got) != 0)
            fail_msg("fmt_fixed6(%.17g) = \"%s\", printf gives \"%s\"", v, got, want);
    }
}

static void test_u64(void **state)
{
    (void)state;
    static const struct {
        uint64_t v;
        const char *s;
    } cases[] = {
        {0, "0"},
        {1, "1"},
        {9, "9"},
        {10, "10"},
        {1000000, "1000000"},
        {4294967295ULL, "4294967295"},
        {262143328850ULL, "262143328850"},
        {9223372036854775808ULL, "9223372036854775808"},
        {UINT64_MAX, "18446744073709551615"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[21];
        size_t n = fmt_u64(buf, cases[i].v);
        assert_string_equal(buf, cases[i].s);
        assert_int_equal(n, strlen(cases[i].s));
    }
}

static void check_double(double v, const char *want)
{
    char buf[40];
    size_t n = fmt_double(buf, sizeof buf, v);
    if (strcmp(buf, want) != 0)
        fail_msg("fmt_double(%.17g) = \"%s\", want \"%s\"", v, buf, want);
    assert_int_equal(n, strlen(want));
    if (isfinite(v)) {
        double back = strtod(buf, NULL);
        assert_memory_equal(&back, &v, sizeof v); /* bit for bit, -0 included */
    }
}

static void test_double_shortest(void **state)
{
    (void)state;
    check_double(0.0, "0");
    check_double(-0.0, "-0");
    check_double(0.1, "0.1");
    check_double(1.0 / 3.0, "0.3333333333333333");
    check_double(2.0 / 3.0, "0.6666666666666666");
    check_double(1e300, "1e+300");
    check_double(5e-324, "5e-324");
    check_double(2.2250738585072014e-308, "2.2250738585072014e-308");
    check_double(1.7976931348623157e308, "1.7976931348623157e+308");
    check_double(0.1 + 0.2, "0.30000000000000004");
    check_double(150.5, "150.5");
    check_double(-3.25, "-3.25");
    check_double(123456789.0, "123456789");
    check_double(1e21, "1e+21");
    check_double(INFINITY, "inf");
    check_double(-INFINITY, "-inf");
}

static void test_double_round_trip(void **state)
{
    (void)state;
    uint64_t x = 12345;
    for (int i = 0; i < 100000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        double v;
        uint64_t bits = x;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            continue;
        char buf[40];
        size_t n = fmt_double(buf, sizeof buf, v);
        assert_int_equal(n, strlen(buf));
        assert_true(n <= 24);
        double back = strtod(buf, NULL);
        if (memcmp(&back, &v, sizeof v) != 0)
            fail_msg("fmt_double(%.17g) = \"%s\" reads back as %.17g", v, buf, back);
    }
}

static void test_double_small_buffer(void **state)
{
    (void)state;
    /* the length returned is what is in buf, never more than cap - 1 */
    char buf[8];
    memset(buf, 'x', sizeof buf);
    size_t n = fmt_double(buf, sizeof buf, 1.0 / 3.0);
    assert_int_equal(n, strlen(buf));
    assert_true(n <= sizeof buf - 1);
    assert_int_equal(fmt_double(buf, sizeof buf, 0.5), 3);
    assert_string_equal(buf, "0.5");
}

/* fmt_round_zero: a figure that prints as zero prints as "0.000", never "-0.000" */
static void test_round_zero(void **state)
{
    (void)state;
    char buf[64];
    static const struct {
        double v;
        int dec;
        const char *want;
    } cases[] = {
        {-0.0001, 3, "0.000"},   {-0.0, 3, "0.000"},     {-0.0004999, 3, "0.000"},
        {-0.0005, 2, "0.00"},    {-0.0006, 3, "-0.001"}, {-1.5, 1, "-1.5"},
        {0.0001, 3, "0.000"},    {2.25, 2, "2.25"},      {-0.4, 0, "0"},
        {-1e-12, 6, "0.000000"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(buf, sizeof buf, "%.*f", cases[k].dec, fmt_round_zero(cases[k].v, cases[k].dec));
        assert_string_equal(buf, cases[k].want);
    }
    assert_true(isnan(fmt_round_zero(NAN, 3)));
    assert_true(isinf(fmt_round_zero(-INFINITY, 3)));
    assert_true(fmt_round_zero(-7.0, 3) == -7.0); /* not zero: unchanged */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed6_values),         cmocka_unit_test(test_fixed6_rounding),
        cmocka_unit_test(test_fixed6_large),          cmocka_unit_test(test_fixed6_out_of_range),
        cmocka_unit_test(test_fixed6_matches_printf), cmocka_unit_test(test_u64),
        cmocka_unit_test(test_double_shortest),       cmocka_unit_test(test_double_round_trip),
        cmocka_unit_test(test_double_small_buffer),   cmocka_unit_test(test_round_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
