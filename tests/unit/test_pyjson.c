/*
 * test_pyjson: numbers and JSON text as CPython prints them (src/report/pyjson.c).
 *
 * Hand cases were checked against /usr/bin/python3 (3.11) one by one: repr's layout edges,
 * format's rounding ties and signs, json.dumps' indentation and escapes. The randomized cases
 * write 200,000 doubles (random bit patterns, subnormals, every power of two and its
 * neighbours, decimal-looking values, ties) and a random jansson tree to files, run
 * tests/unit/pyjson_ref.py with /usr/bin/python3 on them and compare every byte; they are
 * skipped (visibly) when that python is missing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pyjson.h"
#include "testutil.h"

#define PYTHON "/usr/bin/python3"

/* ---- repr ---- */

struct repr_case {
    double x;
    const char *want;
};

static void test_repr(void **state)
{
    (void)state;
    static const struct repr_case cases[] = {
        {0.0, "0.0"},
        {-0.0, "-0.0"},
        {1.0, "1.0"},
        {-1.5, "-1.5"},
        {0.1, "0.1"},
        {0.1 + 0.2, "0.30000000000000004"},
        {1.0 / 3, "0.3333333333333333"},
        {2.0 / 3, "0.6666666666666666"},
        {100.0, "100.0"},
        {0.0001, "0.0001"},
        {0.00012345, "0.00012345"},
        {1e-05, "1e-05"},
        {-1.5e-05, "-1.5e-05"},
        {9.999999999999999e-05, "9.999999999999999e-05"},
        {123456789012345.0, "123456789012345.0"},
        {1234567890123456.0, "1234567890123456.0"},
        {9999999999999998.0, "9999999999999998.0"},
        {1e16, "1e+16"},
        {1.5e16, "1.5e+16"},
        {12345678901234567890.0, "1.2345678901234567e+19"},
        {1e22, "1e+22"},
        {1e23, "1e+23"},
        {1e100, "1e+100"},
        {5e-324, "5e-324"},
        {-5e-324, "-5e-324"},
        {1e-320, "1e-320"},
        {2.2250738585072014e-308, "2.2250738585072014e-308"},
        {2.225073858507201e-308, "2.225073858507201e-308"},
        {DBL_MAX, "1.7976931348623157e+308"},
        {9007199254740993.0, "9007199254740992.0"},
        {0x1p-1074 * 3, "1.5e-323"},
        {0x1p60, "1.152921504606847e+18"},
        /* lopsided: the nearest 16 digits (...044) fall out below, the next up is shortest */
        {0x1p-1017, "7.120236347223045e-307"},
        {0x1p-921, "5.641232424577593e-278"},
        {0x1p-20, "9.5367431640625e-07"},
        {2.675, "2.675"},
        {1e-07, "1e-07"},
        {INFINITY, "inf"},
        {-INFINITY, "-inf"},
        {NAN, "nan"},
        {-NAN, "nan"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[PYJSON_NUM_MAX];
        size_t n = pyjson_repr(cases[i].x, buf);
        assert_string_equal(buf, cases[i].want);
        assert_int_equal(n, strlen(cases[i].want));
    }
}

/* ---- format ---- */

struct format_case {
    double x;
    int decimals;
    bool commas, plus;
    const char *want;
};

static void test_format(void **state)
{
    (void)state;
    static const struct format_case cases[] = {
        {1234567.891, 2, true, false, "1,234,567.89"},
        {0.125, 2, false, false, "0.12"}, /* exact tie: half to even */
        {0.375, 2, false, false, "0.38"},
        {2.675, 2, false, false, "2.67"}, /* 2.67499999... in binary */
        {2.5, 0, false, false, "2"},
        {3.5, 0, false, false, "4"},
        {0.5, 0, false, false, "0"},
        {0.2, 2, false, true, "+0.20"},
        {999999.5, 0, true, false, "1,000,000"},
        {999.5, 0, true, false, "1,000"},
        {999.4, 0, true, false, "999"},
        {100000.0, 1, true, false, "100,000.0"},
        {-1234.5, 1, true, false, "-1,234.5"},
        {-1234567.0, 0, true, true, "-1,234,567"},
        {0.0, 2, false, true, "+0.00"},
        {-0.0, 2, false, true, "-0.00"},
        {-0.0, 2, false, false, "-0.00"},
        {-0.001, 2, false, false, "-0.00"},
        {-0.001, 0, true, true, "-0"},
        {0.0, 0, false, false, "0"},
        {1.0, 4, false, false, "1.0000"},
        {0.1, 20, false, false, "0.10000000000000000555"},
        {1e22, 0, true, false, "10,000,000,000,000,000,000,000"},
        {5e-324, 3, false, true, "+0.000"},
        {NAN, 2, false, false, "nan"},
        {-NAN, 2, true, false, "nan"},
        {NAN, 2, false, true, "+nan"},
        {-NAN, 2, false, true, "+nan"},
        {INFINITY, 2, true, false, "inf"},
        {INFINITY, 2, false, true, "+inf"},
        {-INFINITY, 2, true, true, "-inf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct format_case *c = &cases[i];
        char buf[PYJSON_NUM_MAX];
        size_t n = pyjson_format(c->x, c->decimals, c->commas, c->plus, buf);
        assert_string_equal(buf, c->want);
        assert_int_equal(n, strlen(c->want));
    }
    /* the longest: -DBL_MAX with every separator and 20 decimals fits the buffer */
    char buf[PYJSON_NUM_MAX];
    size_t n = pyjson_format(-DBL_MAX, 20, true, true, buf);
    assert_int_equal(n, 1 + 309 + 102 + 1 + 20);
    assert_memory_equal(buf, "-179,769,313,486,231,570,8", 26);
    assert_string_equal(buf + n - 24, "368.00000000000000000000");
}

/* ---- dumps, by hand ---- */

static void expect_dumps(const json_t *v, int indent, const char *want)
{
    char *s = pyjson_dumps(v, indent);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
}

static void test_dumps_scalars(void **state)
{
    (void)state;
    json_t *v;
    v = json_integer(-9223372036854775807LL - 1);
    expect_dumps(v, 2, "-9223372036854775808");
    json_decref(v);
    v = json_real(1e16);
    expect_dumps(v, -1, "1e+16");
    json_decref(v);
    v = json_real(-0.0);
    expect_dumps(v, 2, "-0.0");
    json_decref(v);
    v = json_real(3.0);
    expect_dumps(v, 2, "3.0");
    json_decref(v);
    assert_null(json_real(NAN)); /* so a tree never holds NaN or an infinity */
    assert_null(json_real(INFINITY));
    expect_dumps(json_true(), 2, "true");
    expect_dumps(json_false(), -1, "false");
    expect_dumps(json_null(), 0, "null");
    assert_null(pyjson_dumps(NULL, 2));

    /* escapes: python3 -c 'print(json.dumps("..."))' */
    static const char esc[] = "q\"b\\n\nr\rt\tb\bf\f\x01\x1f\x7f~ \xc3\xa9\xe4\xb8\xad"
                              "\xf0\x9f\x98\x80\xef\xbf\xbf\0z";
    v = json_stringn(esc, sizeof esc - 1);
    assert_non_null(v);
    expect_dumps(v, 2,
                 "\"q\\\"b\\\\n\\nr\\rt\\tb\\bf\\f\\u0001\\u001f\\u007f~ \\u00e9\\u4e2d"
                 "\\ud83d\\ude00\\uffff\\u0000z\"");
    json_decref(v);
    /* bytes that are not UTF-8 (only json_stringn_nocheck lets them in): one \ufffd a byte */
    static const char bad[] = "a\xff\xc3(\xed\xa0\x80\xc0\xaf\xf8\x80\x80\xe4\xb8"
                              "b";
    v = json_stringn_nocheck(bad, sizeof bad - 1);
    expect_dumps(v, -1,
                 "\"a\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd"
                 "\\ufffd\\ufffd\\ufffdb\"");
    json_decref(v);
}

static void test_dumps_containers(void **state)
{
    (void)state;
    /* [1, [], {}, {"a": [1, 2.5], "b": {"c": null}, "": "x"}, [[]]] */
    json_t *v =
        json_pack("[i,[],{},{s:[i,f],s:{s:n},s:s},[[]]]", 1, "a", 1, 2.5, "b", "c", "", "x");
    assert_non_null(v);
    expect_dumps(v, -1, "[1, [], {}, {\"a\": [1, 2.5], \"b\": {\"c\": null}, \"\": \"x\"}, [[]]]");
    expect_dumps(v, 2,
                 "[\n  1,\n  [],\n  {},\n  {\n    \"a\": [\n      1,\n      2.5\n    ],\n"
                 "    \"b\": {\n      \"c\": null\n    },\n    \"\": \"x\"\n  },\n  [\n    []\n"
                 "  ]\n]");
    expect_dumps(v, 0,
                 "[\n1,\n[],\n{},\n{\n\"a\": [\n1,\n2.5\n],\n\"b\": {\n\"c\": null\n},\n"
                 "\"\": \"x\"\n},\n[\n[]\n]\n]");
    json_decref(v);

    /* keys in insertion order, not sorted; a key with a NUL and one to escape */
    v = json_object();
    json_object_set_new(v, "zeta", json_integer(1));
    json_object_set_new(v, "alpha", json_integer(2));
    json_object_setn_new(v, "n\0ul", 4, json_integer(3));
    json_object_set_new(v, "\xc3\xa9\t", json_integer(4));
    json_object_set_new(v, "mid", json_integer(5));
    expect_dumps(v, -1,
                 "{\"zeta\": 1, \"alpha\": 2, \"n\\u0000ul\": 3, \"\\u00e9\\t\": 4, \"mid\": 5}");
    expect_dumps(v, 1,
                 "{\n \"zeta\": 1,\n \"alpha\": 2,\n \"n\\u0000ul\": 3,\n \"\\u00e9\\t\": 4,\n"
                 " \"mid\": 5\n}");
    json_decref(v);
    expect_dumps(json_object_get(v = json_pack("{s:{}}", "k"), "k"), 3, "{}");
    json_decref(v);
}

/* a tree 100,000 deep: no recursion (indented, it would be gigabytes of spaces) */
static void test_dumps_deep(void **state)
{
    (void)state;
    enum { DEPTH = 100000 };
    json_t **lv = calloc(DEPTH, sizeof *lv);
    assert_non_null(lv);
    lv[0] = json_array();
    for (int i = 1; i < DEPTH; i++) { /* [{"k": [{"k": ... {}}]}] */
        lv[i] = i % 2 ? json_object() : json_array();
        assert_non_null(lv[i]);
        if (i % 2)
            assert_int_equal(json_array_append(lv[i - 1], lv[i]), 0);
        else
            assert_int_equal(json_object_set(lv[i - 1], "k", lv[i]), 0);
    }
    char *s = pyjson_dumps(lv[0], -1);
    assert_non_null(s);
    assert_memory_equal(s, "[{\"k\": [{\"k\": [", 15);
    /* 50,000 arrays "[]", 49,999 objects "{\"k\": }" and the last "{}" */
    assert_int_equal(strlen(s), (size_t)DEPTH / 2 * 2 + (DEPTH / 2 - 1) * 7 + 2);
    free(s);
    /* jansson frees recursively: empty every level first (each still holds its own ref) */
    for (int i = 0; i < DEPTH; i++) {
        if (json_is_array(lv[i]))
            json_array_clear(lv[i]);
        else
            json_object_clear(lv[i]);
    }
    for (int i = 0; i < DEPTH; i++)
        json_decref(lv[i]);
    free(lv);
}

/* a container that holds itself (through another): NULL, as Python raises */
static void test_dumps_cycle(void **state)
{
    (void)state;
    json_t *a = json_array(), *b = json_object();
    json_array_append(a, b);
    json_object_set(b, "a", a);
    assert_null(pyjson_dumps(a, 2));
    assert_null(pyjson_dumps(b, -1));
    json_object_clear(b); /* break the cycle so both are freed */
    json_decref(b);
    json_decref(a);
}

/* ---- randomized, against python3 ---- */

static double bits_to_double(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/*
 * A random finite double of one of several kinds; never NaN or an infinity. One tu_rng_next() per
 * statement: the order of evaluation of operands is unspecified.
 */
static double rng_double(void)
{
    static const double pow10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    double sign = tu_rng_next() & 1 ? -1 : 1, x;
    switch (tu_rng_next() % 8) {
    case 0:
    case 1: /* any bit pattern */
        do
            x = bits_to_double(tu_rng_next());
        while (!isfinite(x));
        return x;
    case 2: /* subnormal */
        return sign * bits_to_double(tu_rng_next() & 0x000fffffffffffffull);
    case 3: /* decimal-looking: k / 10^d */
        x = (double)(tu_rng_next() % 100000000);
        return sign * x / pow10[tu_rng_next() % 10];
    case 4: /* exact binary ties for the formats: k / 2^j */
        x = (double)(tu_rng_next() % 1000000);
        return sign * ldexp(x, -(int)(tu_rng_next() % 12));
    case 5: /* near 10^e, where the layout switches and digits carry */
        x = pow(10, (double)(int)(tu_rng_next() % 50) - 25);
        for (int k = (int)(tu_rng_next() % 5) - 2; k != 0; k += k > 0 ? -1 : 1)
            x = nextafter(x, k > 0 ? INFINITY : 0);
        return sign * x;
    case 6: /* a power of two or its neighbour */
        x = ldexp(1, (int)(tu_rng_next() % 2098) - 1074);
        return sign * (tu_rng_next() & 1 ? x : nextafter(x, tu_rng_next() & 1 ? INFINITY : 0));
    default: /* uniform over a few magnitudes */
        x = tu_rng_u();
        return sign * x * pow10[tu_rng_next() % 10];
    }
}

static bool have_python(void)
{
    if (access(PYTHON, X_OK) == 0)
        return true;
    print_message("no " PYTHON ": skipped\n");
    return false;
}

static void ref_script(char *buf, size_t cap)
{
    const char *fx = getenv("CARMA_FIXTURES");
    if (fx && *fx)
        snprintf(buf, cap, "%s/../unit/pyjson_ref.py", fx);
    else
        snprintf(buf, cap, "tests/unit/pyjson_ref.py");
    if (access(buf, R_OK) != 0)
        fail_msg("no reference script %s", buf);
}

#define NRANDOM 200000

struct num_case {
    double x;
    int decimals;
    bool commas, plus;
};

static struct num_case num_cases[NRANDOM];

static void test_numbers_vs_python(void **state)
{
    (void)state;
    if (!have_python())
        skip();
    char script[512];
    ref_script(script, sizeof script);

    static const int decs[] = {0, 0, 1, 2, 2, 2, 3, 4, 6, 10, 17, 20};
    tu_rng_seed(20240612);
    size_t n = 0;
    /* fixed: zeros, the non-finite values, every power of two and both of its neighbours */
    static const double fixed[] = {0.0, -0.0, NAN, -NAN, INFINITY, -INFINITY, DBL_MAX, DBL_MIN};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        num_cases[n++].x = fixed[i];
    for (int e = -1074; e <= 1023; e++) {
        double x = ldexp(1, e);
        num_cases[n++].x = x;
        num_cases[n++].x = nextafter(x, 0);
        num_cases[n++].x = nextafter(x, INFINITY);
    }
    while (n < NRANDOM)
        num_cases[n++].x = rng_double();
    for (size_t i = 0; i < n; i++) {
        num_cases[i].decimals = decs[tu_rng_next() % (sizeof decs / sizeof decs[0])];
        num_cases[i].commas = tu_rng_next() & 1;
        num_cases[i].plus = tu_rng_next() % 4 == 0;
    }

    char path[TU_DIR_MAX + 32];
    snprintf(path, sizeof path, "%s/nums.txt", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) {
        const struct num_case *c = &num_cases[i];
        if (isnan(c->x))
            fprintf(f, "%s", signbit(c->x) ? "-nan" : "nan");
        else if (isinf(c->x))
            fprintf(f, "%s", c->x < 0 ? "-inf" : "inf");
        else
            fprintf(f, "%a", c->x);
        fprintf(f, " %d %s%s%s\n", c->decimals, c->plus ? "+" : "", c->commas ? "," : "",
                c->plus || c->commas ? "" : "-");
    }
    assert_int_equal(fclose(f), 0);

    char cmd[1200];
    snprintf(cmd, sizeof cmd, PYTHON " '%s' nums '%s'", script, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *line = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        const struct num_case *c = &num_cases[i];
        ssize_t len = getline(&line, &cap, p);
        if (len <= 0)
            fail_msg("pyjson_ref.py stopped after %zu of %zu values", i, n);
        if (line[len - 1] == '\n')
            line[--len] = '\0';
        char want[2 * PYJSON_NUM_MAX + 2], r[PYJSON_NUM_MAX], fm[PYJSON_NUM_MAX];
        pyjson_repr(c->x, r);
        pyjson_format(c->x, c->decimals, c->commas, c->plus, fm);
        snprintf(want, sizeof want, "%s %s", r, fm);
        if (strcmp(want, line) != 0)
            fail_msg("%a (decimals %d%s%s): python \"%s\", carma \"%s\"", c->x, c->decimals,
                     c->commas ? " ," : "", c->plus ? " +" : "", line, want);
    }
    assert_int_equal(getline(&line, &cap, p), -1);
    free(line);
    assert_int_equal(pclose(p), 0);
    print_message("compared %zu values with python's repr and format\n", n);
}

static const char *const strs[] = {
    "",
    "plain",
    "q\"uote",
    "back\\slash",
    "nl\nand\ttab",
    "\x01\x1f\x7f",
    "caf\xc3\xa9",
    "\xe4\xb8\xad\xe6\x96\x87",
    "\xf0\x9f\x98\x80 grin",
    "\xef\xbf\xbd",
    "/slash",
    "\xc2\x80\xdf\xbf\xe0\xa0\x80",
};

static json_t *rng_tree(int depth)
{
    unsigned k = depth >= 6 ? (unsigned)(tu_rng_next() % 5) : (unsigned)(tu_rng_next() % 8);
    switch (k) {
    case 0:
        return json_real(rng_double());
    case 1: {
        json_int_t i = (json_int_t)tu_rng_next();
        return json_integer(i >> (tu_rng_next() % 64));
    }
    case 2:
        return json_string(strs[tu_rng_next() % (sizeof strs / sizeof strs[0])]);
    case 3:
        return tu_rng_next() & 1 ? json_boolean(tu_rng_next() & 1) : json_null();
    case 4:
        return json_real((double)(tu_rng_next() % 2000) / 8 - 100);
    case 5:
    case 6: {
        json_t *o = json_object();
        unsigned n = (unsigned)(tu_rng_next() % 6);
        for (unsigned i = 0; i < n; i++) {
            char key[64];
            const char *stem = strs[tu_rng_next() % (sizeof strs / sizeof strs[0])];
            snprintf(key, sizeof key, "%s%u", stem, (unsigned)(tu_rng_next() % 1000));
            json_object_set_new(o, key, rng_tree(depth + 1));
        }
        return o;
    }
    default: {
        json_t *a = json_array();
        unsigned n = (unsigned)(tu_rng_next() % 6);
        for (unsigned i = 0; i < n; i++)
            json_array_append_new(a, rng_tree(depth + 1));
        return a;
    }
    }
}

static void test_dumps_vs_python(void **state)
{
    (void)state;
    if (!have_python())
        skip();
    char script[512];
    ref_script(script, sizeof script);

    tu_rng_seed(7);
    json_t *root = json_array();
    for (int i = 0; i < 400; i++)
        json_array_append_new(root, rng_tree(1));
    json_array_append_new(root, json_pack("{s:[],s:{},s:[[],{}]}", "e", "o", "both"));

    char path[TU_DIR_MAX + 32];
    snprintf(path, sizeof path, "%s/tree.json", tu_dir);
    assert_int_equal(json_dump_file(root, path, JSON_REAL_PRECISION(17)), 0);

    struct {
        char *s;
        size_t len;
    } want = {0};
    static const int indents[] = {2, 0, 4, -1};
    for (size_t i = 0; i < sizeof indents / sizeof indents[0]; i++) {
        char *s = pyjson_dumps(root, indents[i]);
        assert_non_null(s);
        size_t n = strlen(s);
        want.s = realloc(want.s, want.len + n + 2);
        assert_non_null(want.s);
        memcpy(want.s + want.len, s, n);
        want.len += n;
        want.s[want.len++] = '\n';
        want.s[want.len] = '\0';
        free(s);
    }

    char cmd[1200];
    snprintf(cmd, sizeof cmd, PYTHON " '%s' json '%s'", script, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *got = malloc(want.len + 2);
    assert_non_null(got);
    size_t n = fread(got, 1, want.len + 1, p);
    got[n] = '\0';
    assert_int_equal(pclose(p), 0);
    if (n != want.len || memcmp(got, want.s, n) != 0) {
        size_t i = 0;
        while (i < n && i < want.len && got[i] == want.s[i])
            i++;
        size_t from = i > 60 ? i - 60 : 0;
        fail_msg(
            "differs at byte %zu (python %zu bytes, carma %zu):\npython: %.120s\ncarma:  %.120s", i,
            n, want.len, got + from, want.s + from);
    }
    print_message("compared %zu bytes of json.dumps\n", want.len);
    free(got);
    free(want.s);
    json_decref(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repr),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_dumps_scalars),
        cmocka_unit_test(test_dumps_containers),
        cmocka_unit_test(test_dumps_deep),
        cmocka_unit_test(test_dumps_cycle),
        cmocka_unit_test_setup_teardown(test_numbers_vs_python, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_dumps_vs_python, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
