/*
 * Unit tests for core/fastnum: the fast paths give what core/parse gives for the same string,
 * bit for bit, on the forms they take and on the ones they leave to it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fastnum.h"
#include "core/parse.h"

static const char *const doubles[] = {
    "0",
    "-0",
    "+0",
    "0.0",
    "1",
    "-1",
    "150.0",
    "93.4",
    "0.1",
    "1e22",
    "1e23",
    "1e-22",
    "1.7976931348623157e308",
    "4.9e-324",
    "123456789012345",
    "1234567890123456",
    "0.000001",
    "00012.5000",
    ".5",
    "5.",
    "1e",
    "1e+",
    "1E5",
    "1e-5",
    "+.5e1",
    "-",
    "",
    " 1",
    "1 ",
    "1x",
    "nan",
    "inf",
    "1e99999",
    "0x10",
    "12,5",
    "1..2",
    "9007199254740993",
    "2.5e-3",
    "1785168098.646759",
    "250.125",
};

static void test_double(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++) {
        double a = -1, b = -1;
        int ra = parse_double(doubles[i], &a), rb = fastnum_double(doubles[i], &b);
        if (ra != rb || memcmp(&a, &b, sizeof a) != 0)
            fail_msg("'%s': parse_double %d %a, fastnum_double %d %a", doubles[i], ra, a, rb, b);
    }
}

/* xorshift64: the same numbers on every run */
static uint64_t trng = 88172645463325252ull;

static uint64_t trand(void)
{
    trng ^= trng << 13;
    trng ^= trng >> 7;
    trng ^= trng << 17;
    return trng;
}

/* A random decimal-looking string: signs, leading zeros, 1 to 22 digits, a point, an
 * exponent, and now and then something parse_double refuses or reads slowly. */
static void random_number(char *s, size_t cap)
{
    static const char *const odd[] = {"",
                                      " 1.5",
                                      "1.5 ",
                                      "1.",
                                      ".5",
                                      "-.5",
                                      "+1",
                                      "1e",
                                      "1e+",
                                      "e5",
                                      ".",
                                      "-",
                                      "1_0",
                                      "0x10",
                                      "inf",
                                      "nan",
                                      "1.5.5",
                                      "--1",
                                      "1e400",
                                      "1e-400",
                                      "4.9e-324",
                                      "1e23",
                                      "9007199254740993",
                                      "0.000",
                                      "-0",
                                      "-0.0e7",
                                      "00012.50",
                                      "1E5",
                                      "1e-05"};
    size_t o = 0;
    if (trand() % 8 == 0) {
        snprintf(s, cap, "%s", odd[trand() % (sizeof odd / sizeof odd[0])]);
        return;
    }
    uint64_t k = trand();
    if (k % 5 == 0)
        s[o++] = '-';
    else if (k % 17 == 0)
        s[o++] = '+';
    for (int z = (int)(trand() % 4); z > 0 && trand() % 3 == 0; z--)
        s[o++] = '0';
    int nd = 1 + (int)(trand() % 22);
    int point = (int)(trand() % (unsigned)(nd + 2)) - 1; /* -1: none */
    for (int i = 0; i < nd; i++) {
        if (i == point)
            s[o++] = '.';
        s[o++] = (char)('0' + trand() % 10);
    }
    if (trand() % 4 == 0) {
        s[o++] = trand() % 2 ? 'e' : 'E';
        uint64_t sg = trand() % 3;
        if (sg)
            s[o++] = sg == 1 ? '-' : '+';
        o += (size_t)snprintf(s + o, cap - o, "%d", (int)(trand() % 40));
    }
    s[o] = '\0';
}

static void test_parse_double(void **state)
{
    (void)state;
    char s[96];
    size_t fast = 0;
    for (int i = 0; i < 400000; i++) {
        random_number(s, sizeof s);
        double a = 0, b = 0;
        int ra = fastnum_double(s, &a), rb = parse_double(s, &b);
        if (ra != rb || (ra == 0 && memcmp(&a, &b, sizeof a) != 0))
            fail_msg("'%s': fastnum_double %d %.17g, parse_double %d %.17g", s, ra, a, rb, b);
        if (ra == 0) {
            char *end;
            double c = strtod(s, &end);
            if (memcmp(&a, &c, sizeof a) != 0)
                fail_msg("'%s': %.17g, strtod %.17g", s, a, c);
            fast++;
        }
    }
    assert_true(fast > 300000);
    /* values at the edges of the fast path: 15 digits, 10^22, 10^-22, negative zero */
    const char *edge[] = {"999999999999999",
                          "999999999999999e22",
                          "1e-22",
                          "123456789012345e-22",
                          "-0.0",
                          "0.1",
                          "0.3",
                          "1785168098.123",
                          "699.999",
                          "2.2250738585072014e-308"};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        double a, c = strtod(edge[i], NULL);
        assert_int_equal(fastnum_double(edge[i], &a), 0);
        if (memcmp(&a, &c, sizeof a) != 0)
            fail_msg("'%s': %.17g, strtod %.17g", edge[i], a, c);
    }
}

static void test_prefix(void **state)
{
    (void)state;
    const char *end = NULL;
    double v = 0;
    assert_true(fastnum_prefix("12.5,7", &end, &v));
    assert_true(v == 12.5);
    assert_int_equal(*end, ',');
    assert_true(fastnum_prefix("-3e2\r\n", &end, &v));
    assert_true(v == -300.0);
    assert_int_equal(*end, '\r');
    /* left to strtod: 16 digits, a big exponent, "1.", no digits */
    assert_false(fastnum_prefix("1234567890123456,", &end, &v));
    assert_false(fastnum_prefix("1e23,", &end, &v));
    assert_false(fastnum_prefix("1.,", &end, &v));
    assert_false(fastnum_prefix(",", &end, &v));
    assert_false(fastnum_prefix("e5", &end, &v));
}

static const char *const ints[] = {
    "0",
    "7",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-1",
    "+1",
    "",
    " 1",
    "1 ",
    "01",
    "1x",
    "999999999999999999",
    "1000000000000000000",
};

static void test_ints(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        uint64_t ua = 1, ub = 1;
        int64_t ia = 1, ib = 1;
        int rua = parse_u64(ints[i], &ua), rub = fastnum_u64(ints[i], &ub);
        int ria = parse_i64(ints[i], &ia), rib = fastnum_i64(ints[i], &ib);
        if (rua != rub || ua != ub)
            fail_msg("'%s': parse_u64 %d %llu, fastnum_u64 %d %llu", ints[i], rua,
                     (unsigned long long)ua, rub, (unsigned long long)ub);
        if (ria != rib || ia != ib)
            fail_msg("'%s': parse_i64 %d %lld, fastnum_i64 %d %lld", ints[i], ria, (long long)ia,
                     rib, (long long)ib);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_double),
        cmocka_unit_test(test_parse_double),
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_ints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
