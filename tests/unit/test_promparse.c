/*
 * Unit tests for collect/promparse: the Prometheus text format 0.0.4 parser. Exact samples,
 * labels and families of a representative body; every rejection with its message and line;
 * the limits (-E2BIG) at and just past each one; histogram and summary linking; line ends
 * (CRLF, none at the end), NUL bytes, empty bodies; TYPE rules; label escapes round trip;
 * values and timestamps as Go's ParseFloat/ParseInt read them; a large body.
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

#include "collect/promparse.h"

/* Parses the NUL-terminated body; fails the test unless it parses. */
static void parse_ok(const char *body, struct prom_doc *doc)
{
    struct carma_err e = {0};
    int rc = prom_parse(body, strlen(body), NULL, doc, &e);
    if (rc != 0)
        fail_msg("prom_parse: %d (%s)", rc, e.msg);
}

/* Parses the len bytes at body under lim and asserts code and the exact message. */
static void parse_fail_n(const char *body, size_t len, const struct prom_limits *lim, int code,
                         const char *msg)
{
    struct carma_err e = {0};
    struct prom_doc doc;
    memset(&doc, 0xa5, sizeof doc);
    int rc = prom_parse(body, len, lim, &doc, &e);
    if (rc != code)
        fail_msg("body \"%s\": rc %d (%s), want %d \"%s\"", body, rc, e.msg, code, msg);
    assert_int_equal(e.code, code);
    if (strcmp(e.msg, msg) != 0)
        fail_msg("body \"%s\":\n got  \"%s\"\n want \"%s\"", body, e.msg, msg);
    /* left empty, and freeing it is fine */
    assert_null(doc.samples);
    assert_int_equal(doc.nsamples, 0);
    assert_null(doc.families);
    assert_int_equal(doc.nfamilies, 0);
    assert_null(doc.mem);
    prom_doc_free(&doc);
}

static void parse_fail(const char *body, int code, const char *msg)
{
    parse_fail_n(body, strlen(body), NULL, code, msg);
}

/* Asserts sample i of doc: name, value, line and exactly the labels given (name, value...). */
static void check_sample(const struct prom_doc *doc, size_t i, const char *name, double value,
                         size_t line, size_t n, const char *const *kv)
{
    if (i >= doc->nsamples)
        fail_msg("no sample %zu (%zu samples)", i, doc->nsamples);
    const struct prom_sample *s = &doc->samples[i];
    assert_string_equal(s->name, name);
    if (isnan(value)) {
        if (!isnan(s->value))
            fail_msg("sample %zu: %.17g, want NaN", i, s->value);
    } else if (memcmp(&s->value, &value, sizeof value) != 0) {
        fail_msg("sample %zu: %.17g, want %.17g", i, s->value, value);
    }
    if (s->line != line)
        fail_msg("sample %zu on line %zu, want %zu", i, s->line, line);
    if (s->nlabels != n / 2)
        fail_msg("sample %zu has %zu labels, want %zu", i, s->nlabels, n / 2);
    for (size_t k = 0; k < n / 2; k++) {
        assert_string_equal(s->labels[k].name, kv[2 * k]);
        assert_string_equal(s->labels[k].value, kv[2 * k + 1]);
    }
}

#define SAMPLE(doc, i, name, value, line, ...)                                                     \
    do {                                                                                           \
        const char *const kv_[] = {NULL, ##__VA_ARGS__};                                           \
        check_sample(doc, i, name, value, line, sizeof kv_ / sizeof kv_[0] - 1, kv_ + 1);          \
    } while (0)

/* The index of family name in doc; fails the test when there is none. */
static size_t family_index(const struct prom_doc *doc, const char *name)
{
    for (size_t i = 0; i < doc->nfamilies; i++)
        if (strcmp(doc->families[i].name, name) == 0)
            return i;
    fail_msg("no family %s", name);
    return SIZE_MAX;
}

/* ---- a representative body ---- */

static const char body_main[] =
    "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n"            /* 1 */
    "# TYPE node_cpu_seconds_total counter\n"                                         /* 2 */
    "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 12345.67\n"                      /* 3 */
    "node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 89.5\n"                          /* 4 */
    "\n"                                                                              /* 5 */
    "# a plain comment\n"                                                             /* 6 */
    "# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).\n" /* 7 */
    "# TYPE cpu_power_acpi_watts gauge\n"                                             /* 8 */
    "cpu_power_acpi_watts{sensor=\"hwmon0/power1\",type=\"cpu_rail\",socket=\"0\","
    "oem_info=\"CPU Power Socket 0\",source=\"acpi\"} 150.000000\n" /* 9 */
    "# TYPE carma_power_w histogram\n"                              /* 10 */
    "carma_power_w_bucket{le=\"100\"} 3\n"                          /* 11 */
    "carma_power_w_bucket{le=\"+Inf\"} 5\n"                         /* 12 */
    "carma_power_w_sum 612.5\n"                                     /* 13 */
    "carma_power_w_count 5\n"                                       /* 14 */
    "# TYPE rpc_seconds summary\n"                                  /* 15 */
    "rpc_seconds{quantile=\"0.5\"} NaN\n"                           /* 16 */
    "rpc_seconds_sum 1.5e-3 1700000000000\n"                        /* 17 */
    "rpc_seconds_count 0 -5\n"                                      /* 18 */
    "  odd:name\t{ a = \"x\\\\y\\\"z\\nw\" , b=\"\", } -Inf\n"      /* 19 */
    "plain +Inf\n";                                                 /* 20 */

static void t_representative(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok(body_main, &doc);
    assert_int_equal(doc.nsamples, 12);
    assert_int_equal(doc.nfamilies, 4);

    SAMPLE(&doc, 0, "node_cpu_seconds_total", 12345.67, 3, "cpu", "0", "mode", "idle");
    SAMPLE(&doc, 1, "node_cpu_seconds_total", 89.5, 4, "cpu", "0", "mode", "user");
    SAMPLE(&doc, 2, "cpu_power_acpi_watts", 150.0, 9, "sensor", "hwmon0/power1", "type", "cpu_rail",
           "socket", "0", "oem_info", "CPU Power Socket 0", "source", "acpi");
    SAMPLE(&doc, 3, "carma_power_w_bucket", 3, 11, "le", "100");
    SAMPLE(&doc, 4, "carma_power_w_bucket", 5, 12, "le", "+Inf");
    SAMPLE(&doc, 5, "carma_power_w_sum", 612.5, 13);
    SAMPLE(&doc, 6, "carma_power_w_count", 5, 14);
    SAMPLE(&doc, 7, "rpc_seconds", NAN, 16, "quantile", "0.5");
    SAMPLE(&doc, 8, "rpc_seconds_sum", 1.5e-3, 17);
    SAMPLE(&doc, 9, "rpc_seconds_count", 0, 18);
    SAMPLE(&doc, 10, "odd:name", -INFINITY, 19, "a", "x\\y\"z\nw", "b", "");
    SAMPLE(&doc, 11, "plain", INFINITY, 20);

    /* timestamps */
    for (size_t i = 0; i < doc.nsamples; i++)
        if (i != 8 && i != 9)
            assert_false(doc.samples[i].has_timestamp);
    assert_true(doc.samples[8].has_timestamp);
    assert_int_equal(doc.samples[8].timestamp_ms, 1700000000000LL);
    assert_true(doc.samples[9].has_timestamp);
    assert_int_equal(doc.samples[9].timestamp_ms, -5);

    /* families, in order of their first HELP or TYPE line */
    assert_string_equal(doc.families[0].name, "node_cpu_seconds_total");
    assert_int_equal(doc.families[0].type, PROM_COUNTER);
    assert_string_equal(doc.families[0].help, "Seconds the CPUs spent in each mode.");
    assert_string_equal(doc.families[1].name, "cpu_power_acpi_watts");
    assert_int_equal(doc.families[1].type, PROM_GAUGE);
    assert_string_equal(doc.families[1].help, "Grace CPU power rail reading from ACPI hwmon (W).");
    assert_string_equal(doc.families[2].name, "carma_power_w");
    assert_int_equal(doc.families[2].type, PROM_HISTOGRAM);
    assert_null(doc.families[2].help);
    assert_string_equal(doc.families[3].name, "rpc_seconds");
    assert_int_equal(doc.families[3].type, PROM_SUMMARY);

    static const size_t fam[] = {0, 0, 1, 2, 2, 2, 2, 3, 3, 3, SIZE_MAX, SIZE_MAX};
    for (size_t i = 0; i < 12; i++)
        if (doc.samples[i].family != fam[i])
            fail_msg("sample %zu in family %zu, want %zu", i, doc.samples[i].family, fam[i]);

    assert_string_equal(prom_label_value(&doc.samples[2], "oem_info"), "CPU Power Socket 0");
    assert_string_equal(prom_label_value(&doc.samples[2], "source"), "acpi");
    assert_null(prom_label_value(&doc.samples[2], "sourc"));
    assert_null(prom_label_value(&doc.samples[5], "le"));
    assert_string_equal(prom_label_value(&doc.samples[10], "b"), "");
    prom_doc_free(&doc);
    assert_null(doc.mem);
    assert_int_equal(doc.nsamples, 0);
    prom_doc_free(&doc); /* twice is fine */
    prom_doc_free(NULL);
}

/* ---- rejections ---- */

struct bad {
    const char *body;
    int code;
    const char *msg;
};

static const struct bad bad_bodies[] = {
    /* metric names */
    {"1abc 1\n", -EINVAL, "line 1: invalid metric name: unexpected '1'"},
    {"ok 1\n-a 1\n", -EINVAL, "line 2: invalid metric name: unexpected '-'"},
    {"a-b 1\n", -EINVAL, "line 1: invalid character '-' in metric name"},
    {"a\"b 1\n", -EINVAL, "line 1: invalid character '\"' in metric name"},
    {"caf\xc3\xa9 1\n", -EINVAL, "line 1: invalid character byte 0xc3 in metric name"},
    {"a\x01 1\n", -EINVAL, "line 1: invalid character byte 0x01 in metric name"},
    {"{a=\"b\"} 1\n", -EINVAL, "line 1: invalid metric name: unexpected '{'"},
    /* values and timestamps */
    {"a\n", -EINVAL, "line 1: sample of a without a value"},
    {"a   \n", -EINVAL, "line 1: sample of a without a value"},
    {"a{b=\"c\"}\n", -EINVAL, "line 1: sample of a without a value"},
    {"a x\n", -EINVAL, "line 1: invalid value \"x\" for a"},
    {"a 1,5\n", -EINVAL, "line 1: invalid value \"1,5\" for a"},
    {"a 0x1p-3\n", -EINVAL, "line 1: invalid value \"0x1p-3\" for a"},
    {"a 1_000\n", -EINVAL, "line 1: invalid value \"1_000\" for a"},
    {"a +NaN\n", -EINVAL, "line 1: invalid value \"+NaN\" for a"},
    {"a infinit\n", -EINVAL, "line 1: invalid value \"infinit\" for a"},
    {"a 1e\n", -EINVAL, "line 1: invalid value \"1e\" for a"},
    {"a 1e+\n", -EINVAL, "line 1: invalid value \"1e+\" for a"},
    {"a .\n", -EINVAL, "line 1: invalid value \".\" for a"},
    {"a 1.2.3\n", -EINVAL, "line 1: invalid value \"1.2.3\" for a"},
    {"a --1\n", -EINVAL, "line 1: invalid value \"--1\" for a"},
    {"a 1e309\n", -EINVAL, "line 1: value \"1e309\" of a out of range"},
    {"a -1.8e308\n", -EINVAL, "line 1: value \"-1.8e308\" of a out of range"},
    {"a 1 x\n", -EINVAL,
     "line 1: invalid timestamp \"x\" for a (an integer number of milliseconds)"},
    {"a 1 1.5\n", -EINVAL,
     "line 1: invalid timestamp \"1.5\" for a (an integer number of milliseconds)"},
    {"a 1 -\n", -EINVAL,
     "line 1: invalid timestamp \"-\" for a (an integer number of milliseconds)"},
    {"a 1 9223372036854775808\n", -EINVAL,
     "line 1: timestamp \"9223372036854775808\" of a out of range"},
    {"a 1 2 3\n", -EINVAL, "line 1: unexpected text after the timestamp of a"},
    {"a 1\r2\n", -EINVAL, "line 1: invalid value \"1\r2\" for a"},
    /* label sets */
    {"a{\n", -EINVAL, "line 1: label set of a not closed"},
    {"a{b=\"c\" 1\n", -EINVAL,
     "line 1: expected ',' or '}' after the value of label \"b\", found '1'"},
    {"a{b=\"c\",\n", -EINVAL, "line 1: label set of a not closed"},
    {"a{b=\"c\"\n", -EINVAL,
     "line 1: expected ',' or '}' after the value of label \"b\", found end of line"},
    {"a{b=\"c} 1\n", -EINVAL, "line 1: value of label \"b\" not terminated"},
    {"a{b=\"c\\\n", -EINVAL, "line 1: value of label \"b\" not terminated"},
    {"a{b=\"c\\t\"} 1\n", -EINVAL,
     "line 1: invalid escape sequence '\\' followed by 't' in the value of label \"b\""},
    {"a{b=c} 1\n", -EINVAL, "line 1: expected '\"' to open the value of label \"b\", found 'c'"},
    {"a{b} 1\n", -EINVAL, "line 1: expected '=' after label name \"b\", found '}'"},
    {"a{b\n", -EINVAL, "line 1: expected '=' after label name \"b\", found end of line"},
    {"a{1=\"x\"} 1\n", -EINVAL, "line 1: expected a label name or '}' in a, found '1'"},
    {"a{,} 1\n", -EINVAL, "line 1: expected a label name or '}' in a, found ','"},
    {"a{b=\"1\",,} 1\n", -EINVAL, "line 1: expected a label name or '}' in a, found ','"},
    {"a{b:c=\"1\"} 1\n", -EINVAL, "line 1: expected '=' after label name \"b\", found ':'"},
    {"a{b=\"1\",b=\"2\"} 1\n", -EINVAL, "line 1: label \"b\" appears twice in a sample of a"},
    {"a{b=\"1\",c=\"2\",b=\"1\"} 1\n", -EINVAL,
     "line 1: label \"b\" appears twice in a sample of a"},
    {"a{b=\"\xff\"} 1\n", -EINVAL, "line 1: value of label \"b\" is not valid UTF-8"},
    {"a{b=\"\xc0\xaf\"} 1\n", -EINVAL, "line 1: value of label \"b\" is not valid UTF-8"},
    {"a{b=\"\xe0\x80\xaf\"} 1\n", -EINVAL, "line 1: value of label \"b\" is not valid UTF-8"},
    {"a{b=\"\xed\xa0\x80\"} 1\n", -EINVAL, "line 1: value of label \"b\" is not valid UTF-8"},
    {"a{b=\"\xe2\x82\"} 1\n", -EINVAL, "line 1: value of label \"b\" is not valid UTF-8"},
    {"a{b=\"\xf4\x90\x80\x80\"} 1\n", -EINVAL, "line 1: value of label \"b\" is not valid UTF-8"},
    /* HELP and TYPE */
    {"# HELP\n", -EINVAL, "line 1: HELP line without a metric name"},
    {"# TYPE   \n", -EINVAL, "line 1: TYPE line without a metric name"},
    {"# HELP 0a x\n", -EINVAL, "line 1: invalid metric name in HELP line: unexpected '0'"},
    {"# TYPE a-b counter\n", -EINVAL,
     "line 1: invalid character '-' in the metric name of a TYPE line"},
    {"# TYPE a\n", -EINVAL, "line 1: TYPE line for a without a type"},
    {"# TYPE a counter gauge\n", -EINVAL,
     "line 1: unexpected text after the type in the TYPE line for a"},
    {"# TYPE a Counter\n", -EINVAL,
     "line 1: unknown metric type \"Counter\" for a (counter, gauge, histogram, summary or "
     "untyped)"},
    {"# TYPE a gaugehistogram\n", -EINVAL,
     "line 1: unknown metric type \"gaugehistogram\" for a (counter, gauge, histogram, summary "
     "or untyped)"},
    {"# TYPE a counter\n# TYPE a counter\n", -EINVAL,
     "line 2: second TYPE line for a (the first is on line 1)"},
    {"# TYPE a counter\na 1\n# TYPE a gauge\n", -EINVAL,
     "line 3: second TYPE line for a (the first is on line 1)"},
    {"# HELP a x\n\n# HELP a y\n", -EINVAL,
     "line 3: second HELP line for a (the first is on line 1)"},
    {"a 1\n# TYPE a gauge\n", -EINVAL, "line 2: TYPE line for a after its samples (line 1)"},
    {"a_bucket{le=\"1\"} 1\n# TYPE a histogram\n", -EINVAL,
     "line 2: TYPE line for a after the samples of a_bucket (line 1)"},
    {"x 1\na_count 1\n# TYPE a summary\n", -EINVAL,
     "line 3: TYPE line for a after the samples of a_count (line 2)"},
    {"# HELP a x\\t\n", -EINVAL,
     "line 1: invalid escape sequence '\\' followed by 't' in the HELP text for a"},
    {"# HELP a x\\\"\n", -EINVAL,
     "line 1: invalid escape sequence '\\' followed by '\"' in the HELP text for a"},
    {"# HELP a x\\\n", -EINVAL, "line 1: HELP text for a ends in a lone backslash"},
    {"# HELP a \xe9t\xe9\n", -EINVAL, "line 1: HELP text for a is not valid UTF-8"},
    /* NUL bytes are checked in t_nul */
};

static void t_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_bodies / sizeof bad_bodies[0]; i++)
        parse_fail(bad_bodies[i].body, bad_bodies[i].code, bad_bodies[i].msg);
}

/* What the same lines are fine as, so that the cases above fail for the stated reason. */
static void t_near_misses(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "a_b:c 1\n",
        "_a 1\n",
        ":a 1\n",
        "a{} 1\n",
        "a{}1\n",
        "a{b=\"c\"}1\n",
        "a{b=\"c\",} 1\n",
        "a { b = \"c\" , d=\"e\" , } 1 2\n",
        "a 1 +9223372036854775807\n",
        "a 1 -9223372036854775808\n",
        "a 1.7976931348623157e308\n",
        "a 1e-400\n",
        "a{b=\"\xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9\"} 1\n",
        "# HELP a\n",
        "# HELP a \xe2\x82\xac \\\\ \\n \"\n",
        "# HELPER a b c\n",
        "#HELP a x\n",
        "#\n",
        "# TYPE a untyped\n",
        "# TYPE a counter\n# HELP a x\na 1\n# HELP b y\nb 2\n",
        "a 1\n# HELP a later\n",
        "# TYPE a histogram\na 1\n",
        "# HELP a_bucket x\na_bucket 1\n# TYPE a histogram\n",
        "a_bucket 1\n# TYPE a summary\n",
        "a_sum 1\n# TYPE a counter\n",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct prom_doc doc;
        struct carma_err e = {0};
        int rc = prom_parse(ok[i], strlen(ok[i]), NULL, &doc, &e);
        if (rc != 0)
            fail_msg("\"%s\": %d (%s)", ok[i], rc, e.msg);
        prom_doc_free(&doc);
    }
}

static void t_error_line_numbers(void **state)
{
    (void)state;
    parse_fail("a 1\n\n# c\r\nb 2\r\n\n  \nc{x=\"y\"} bad\n", -EINVAL,
               "line 7: invalid value \"bad\" for c");
    parse_fail("a 1\nb 2\nc", -EINVAL, "line 3: sample of c without a value");
    parse_fail("\n\n\n\n\n\n\n\n\n\n\n# TYPE a foo\n", -EINVAL,
               "line 12: unknown metric type \"foo\" for a (counter, gauge, histogram, summary or "
               "untyped)");
}

/* ---- values ---- */

struct val {
    const char *tok;
    double v;
};

static void t_values(void **state)
{
    (void)state;
    static const struct val vals[] = {
        {"0", 0.0},
        {"-0", -0.0},
        {"+0.0", 0.0},
        {"1", 1.0},
        {"+1", 1.0},
        {"-1.5", -1.5},
        {"150.000000", 150.0},
        {"43.878000", 43.878},
        {"12345.67", 12345.67},
        {".5", 0.5},
        {"5.", 5.0},
        {"1e3", 1000.0},
        {"1E3", 1000.0},
        {"1e+03", 1000.0},
        {"2.5e-3", 0.0025},
        {"0.1", 0.1},
        {"0.3", 0.3},
        {"007", 7.0},
        {"1.7976931348623157e308", 1.7976931348623157e308},
        {"4.9e-324", 4.9e-324},
        {"1e-400", 0.0},
        {"-1e-400", -0.0},
        {"9007199254740993", 9007199254740992.0}, /* 2^53 + 1 rounds to even */
        {"123456789012345678901234567890", 1.2345678901234568e29},
        {"0.000000000000000000000000000001", 1e-30},
        {"1e22", 1e22},
        {"1e-22", 1e-22},
        {"1e-23", 1e-23},                             /* past the exact powers of 10 */
        {"5698110514485434e30", 5698110514485434e30}, /* too big for the exact path */
        {"9007199254740991e-5", 9007199254740991e-5},
        {"1e23", 1e23},
        {"3.0e37", 3.0e37},
        {"1844674407370955161600", 1844674407370955161600.0},
        {"Inf", INFINITY},
        {"+Inf", INFINITY},
        {"-Inf", -INFINITY},
        {"inf", INFINITY},
        {"-infinity", -INFINITY},
        {"+InFiNiTy", INFINITY},
        {"NaN", NAN},
        {"nan", NAN},
        {"NAN", NAN},
    };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char body[128];
        snprintf(body, sizeof body, "m %s\n", vals[i].tok);
        struct prom_doc doc;
        parse_ok(body, &doc);
        assert_int_equal(doc.nsamples, 1);
        double got = doc.samples[0].value, want = vals[i].v;
        if (isnan(want) ? !isnan(got) : memcmp(&got, &want, sizeof got) != 0)
            fail_msg("\"%s\" read as %.17g, want %.17g", vals[i].tok, got, want);
        prom_doc_free(&doc);
    }
}

/* ---- line ends, NUL, empty ---- */

static void t_crlf(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok("# HELP a Help text.\r\n# TYPE a gauge\r\na{b=\"c\"} 1.5\r\n\r\nd 2 3\r\n", &doc);
    assert_int_equal(doc.nsamples, 2);
    SAMPLE(&doc, 0, "a", 1.5, 3, "b", "c");
    SAMPLE(&doc, 1, "d", 2, 5);
    assert_true(doc.samples[1].has_timestamp);
    assert_int_equal(doc.samples[1].timestamp_ms, 3);
    assert_string_equal(doc.families[0].help, "Help text.");
    assert_int_equal(doc.families[0].type, PROM_GAUGE);
    prom_doc_free(&doc);

    /* a CR that does not end a line is content: fine in a label value, not after a value */
    parse_ok("a{b=\"x\ry\"} 1\n", &doc);
    SAMPLE(&doc, 0, "a", 1, 1, "b", "x\ry");
    prom_doc_free(&doc);
    parse_fail("a 1\r\r\n", -EINVAL, "line 1: invalid value \"1\r\" for a");
}

static void t_no_final_newline(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok("a 1\nb{c=\"d\"} 2", &doc);
    assert_int_equal(doc.nsamples, 2);
    SAMPLE(&doc, 1, "b", 2, 2, "c", "d");
    prom_doc_free(&doc);

    parse_ok("a 1\nb 2 77", &doc);
    assert_int_equal(doc.samples[1].timestamp_ms, 77);
    prom_doc_free(&doc);

    parse_ok("a 1\r\nb 2\r", &doc);
    SAMPLE(&doc, 1, "b", 2, 2);
    prom_doc_free(&doc);

    parse_ok("# HELP a the end", &doc);
    assert_string_equal(doc.families[0].help, "the end");
    prom_doc_free(&doc);

    /* a body cut inside a label set is an error on its last line */
    parse_fail("a 1\nb{c=\"d", -EINVAL, "line 2: value of label \"c\" not terminated");
}

static void t_nul(void **state)
{
    (void)state;
    static const char b1[] = "a 1\nb 2\x00 3\nc 3\n";
    parse_fail_n(b1, sizeof b1 - 1, NULL, -EINVAL, "line 2: NUL byte");
    static const char b2[] = "a{b=\"x\x00y\"} 1\n";
    parse_fail_n(b2, sizeof b2 - 1, NULL, -EINVAL, "line 1: NUL byte");
    static const char b3[] = "# comment \x00\n";
    parse_fail_n(b3, sizeof b3 - 1, NULL, -EINVAL, "line 1: NUL byte");
    static const char b4[] = "a 1\n\x00";
    parse_fail_n(b4, sizeof b4 - 1, NULL, -EINVAL, "line 2: NUL byte");
    /* an earlier error comes first */
    static const char b5[] = "a x\n\x00\n";
    parse_fail_n(b5, sizeof b5 - 1, NULL, -EINVAL, "line 1: invalid value \"x\" for a");
}

static void t_empty(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "", "\n", "\n\n\r\n", "   \t\n", "# just a comment\n", "# HELP a x\n# TYPE a gauge\n"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        struct prom_doc doc;
        parse_ok(bodies[i], &doc);
        assert_int_equal(doc.nsamples, 0);
        prom_doc_free(&doc);
    }
    struct prom_doc doc;
    struct carma_err e = {0};
    assert_int_equal(prom_parse(NULL, 0, NULL, &doc, &e), 0);
    assert_int_equal(doc.nsamples, 0);
    assert_int_equal(doc.nfamilies, 0);
    prom_doc_free(&doc);
    assert_int_equal(prom_parse(NULL, 3, NULL, &doc, &e), -EINVAL);
    assert_string_equal(e.msg, "no metrics body");
    prom_doc_free(&doc);
}

/* ---- limits ---- */

static void t_limits(void **state)
{
    (void)state;
    struct prom_limits lim = prom_limits_default;
    struct prom_doc doc;
    struct carma_err e = {0};

    assert_int_equal(lim.max_bytes, 16u << 20);
    assert_int_equal(lim.max_samples, 200000);
    assert_int_equal(lim.max_labels, 64);
    assert_int_equal(lim.max_line, 64u << 10);
    assert_int_equal(lim.max_families, 10000);

    const char *body = "a 1\nb 2\nc 3\n";
    lim.max_bytes = strlen(body);
    assert_int_equal(prom_parse(body, strlen(body), &lim, &doc, &e), 0);
    assert_int_equal(doc.nsamples, 3);
    prom_doc_free(&doc);
    lim.max_bytes--;
    parse_fail_n(body, strlen(body), &lim, -E2BIG,
                 "metrics body of 12 bytes exceeds the limit of 11 bytes");

    lim = prom_limits_default;
    lim.max_samples = 3;
    assert_int_equal(prom_parse(body, strlen(body), &lim, &doc, &e), 0);
    prom_doc_free(&doc);
    lim.max_samples = 2;
    parse_fail_n(body, strlen(body), &lim, -E2BIG, "line 3: more than 2 samples");
    lim.max_samples = 0;
    parse_fail_n(body, strlen(body), &lim, -E2BIG, "line 1: more than 0 samples");

    lim = prom_limits_default;
    const char *lab = "x 0\na{b=\"1\",c=\"2\",d=\"3\"} 1\n";
    lim.max_labels = 3;
    assert_int_equal(prom_parse(lab, strlen(lab), &lim, &doc, &e), 0);
    prom_doc_free(&doc);
    lim.max_labels = 2;
    parse_fail_n(lab, strlen(lab), &lim, -E2BIG, "line 2: more than 2 labels in a sample of a");

    lim = prom_limits_default;
    const char *ln = "a 1\nbb 22\r\nc 3"; /* lines of 3, 5 (+CRLF) and 3 bytes */
    lim.max_line = 5;
    assert_int_equal(prom_parse(ln, strlen(ln), &lim, &doc, &e), 0);
    prom_doc_free(&doc);
    lim.max_line = 4;
    parse_fail_n(ln, strlen(ln), &lim, -E2BIG, "line 2: longer than 4 bytes");
    const char *last = "a 1\nbbbbbbbbb 2"; /* the last line, without a newline */
    parse_fail_n(last, strlen(last), &lim, -E2BIG, "line 2: longer than 4 bytes");

    /* the default: a 64 KiB line is fine, one byte more is not */
    size_t big = (size_t)64 << 10;
    char *b = malloc(big + 2);
    assert_non_null(b);
    memset(b, ' ', big);
    memcpy(b, "a 1", 3);
    b[big] = '\n';
    assert_int_equal(prom_parse(b, big + 1, NULL, &doc, &e), 0);
    prom_doc_free(&doc);
    b[big] = ' ';
    b[big + 1] = '\n';
    parse_fail_n(b, big + 2, NULL, -E2BIG, "line 1: longer than 65536 bytes");
    free(b);

    lim = prom_limits_default;
    const char *fam = "# HELP a x\n# TYPE a gauge\n# TYPE b gauge\nc 1\n# HELP d y\n";
    lim.max_families = 3;
    assert_int_equal(prom_parse(fam, strlen(fam), &lim, &doc, &e), 0);
    assert_int_equal(doc.nfamilies, 3);
    prom_doc_free(&doc);
    lim.max_families = 2;
    parse_fail_n(fam, strlen(fam), &lim, -E2BIG, "line 5: more than 2 metric families");
}

/* ---- families ---- */

static void t_linking(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok("h_bucket{le=\"1\"} 0\n" /* before any TYPE: not linked, no family of its own */
             "# HELP h A histogram.\n"
             "# TYPE s summary\n"
             "s{quantile=\"0.9\"} 1\n"
             "s_sum 2\n"
             "s_count 3\n"
             "s_bucket 4\n" /* a summary has no buckets */
             "# TYPE g gauge\n"
             "g_sum 5\n" /* a gauge has no _sum */
             "g 6\n"
             "u 7\n"
             "# HELP u later\n" /* HELP may follow the samples */
             "# TYPE c_count counter\n"
             "c_count 8\n"
             "# TYPE c summary\n" /* c_count keeps its own family */
             "c_sum 9\n"
             "c_sumx 10\n"
             "_sum 11\n"
             "# TYPE x histogram\n"
             "x_bucket{le=\"+Inf\"} 12\n"
             "x_count 13\n"
             "x_sum 14\n"
             "x 15\n",
             &doc);
    size_t h = family_index(&doc, "h"), s = family_index(&doc, "s"), g = family_index(&doc, "g");
    size_t u = family_index(&doc, "u"), cc = family_index(&doc, "c_count");
    size_t c = family_index(&doc, "c"), x = family_index(&doc, "x");
    assert_int_equal(doc.families[h].type, PROM_UNTYPED);
    assert_string_equal(doc.families[u].help, "later");
    assert_int_equal(doc.families[c].type, PROM_SUMMARY);
    assert_int_equal(doc.families[cc].type, PROM_COUNTER);
    const size_t want[] = {SIZE_MAX, s, s,        s,        SIZE_MAX, SIZE_MAX, g, u,
                           cc,       c, SIZE_MAX, SIZE_MAX, x,        x,        x, x};
    assert_int_equal(doc.nsamples, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < doc.nsamples; i++)
        if (doc.samples[i].family != want[i])
            fail_msg("sample %zu (%s) in family %zu, want %zu", i, doc.samples[i].name,
                     doc.samples[i].family, want[i]);
    assert_string_equal(prom_type_name(doc.families[x].type), "histogram");
    prom_doc_free(&doc);

    assert_string_equal(prom_type_name(PROM_UNTYPED), "untyped");
    assert_string_equal(prom_type_name(PROM_COUNTER), "counter");
    assert_string_equal(prom_type_name(PROM_GAUGE), "gauge");
    assert_string_equal(prom_type_name(PROM_SUMMARY), "summary");
    assert_string_equal(prom_type_name((enum prom_type)99), "untyped");
}

static void t_help_text(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok("# HELP a   lead and trail  \t\n"
             "# HELP b \\\\ back \\n line \"quoted\" {braces} # hash\n"
             "# HELP c\n"
             "# HELP d    \n",
             &doc);
    assert_int_equal(doc.nfamilies, 4);
    assert_string_equal(doc.families[0].help, "lead and trail");
    assert_string_equal(doc.families[1].help, "\\ back \n line \"quoted\" {braces} # hash");
    assert_string_equal(doc.families[2].help, "");
    assert_string_equal(doc.families[3].help, "");
    assert_int_equal(doc.families[0].type, PROM_UNTYPED);
    prom_doc_free(&doc);
}

/* ---- escapes ---- */

/* Writes v into out as a quoted label value's contents (\\, \" and \n escaped). */
static size_t escape(char *out, const char *v)
{
    size_t n = 0;
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') {
            out[n++] = '\\';
            out[n++] = *v;
        } else if (*v == '\n') {
            out[n++] = '\\';
            out[n++] = 'n';
        } else {
            out[n++] = *v;
        }
    }
    out[n] = '\0';
    return n;
}

static void t_escape_round_trip(void **state)
{
    (void)state;
    static const char *const values[] = {
        "",
        "plain",
        "\\",
        "\"",
        "\n",
        "\\\\\"\"\n\n",
        "a\\nb",     /* a backslash and an n, not a newline */
        "C:\\dir\\", /* a trailing backslash */
        "say \"hi\"\nbye",
        "\xe2\x82\xac\xf0\x9f\x94\x8b caf\xc3\xa9",
        "{}=,# \t",
        "\r",
    };
    size_t nv = sizeof values / sizeof values[0];
    char *body = malloc(8192);
    assert_non_null(body);
    size_t n = 0;
    for (size_t i = 0; i < nv; i++) {
        char esc[256];
        escape(esc, values[i]);
        n += (size_t)snprintf(body + n, 8192 - n, "m{i=\"%zu\",v=\"%s\",w=\"%s\"} %zu\n", i, esc,
                              esc, i);
    }
    struct prom_doc doc;
    parse_ok(body, &doc);
    assert_int_equal(doc.nsamples, nv);
    for (size_t i = 0; i < nv; i++) {
        assert_string_equal(prom_label_value(&doc.samples[i], "v"), values[i]);
        assert_string_equal(prom_label_value(&doc.samples[i], "w"), values[i]);
        assert_true(doc.samples[i].value == (double)i);
    }
    prom_doc_free(&doc);
    free(body);
}

/* Equal labels of consecutive samples may share storage, but every sample reads right. */
static void t_shared_strings(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok("m{a=\"1\",b=\"2\"} 1\n"
             "m{a=\"1\",b=\"3\"} 2\n"
             "m{a=\"1\",b=\"3\"} 3\n"
             "m{b=\"1\",a=\"3\"} 4\n"
             "m{a=\"1\\\\\",b=\"3\"} 5\n"
             "m{a=\"1\\\\\",b=\"3\"} 6\n"
             "n{a=\"1\"} 7\n"
             "m 8\n"
             "m{a=\"1\"} 9\n",
             &doc);
    SAMPLE(&doc, 0, "m", 1, 1, "a", "1", "b", "2");
    SAMPLE(&doc, 1, "m", 2, 2, "a", "1", "b", "3");
    SAMPLE(&doc, 2, "m", 3, 3, "a", "1", "b", "3");
    SAMPLE(&doc, 3, "m", 4, 4, "b", "1", "a", "3");
    SAMPLE(&doc, 4, "m", 5, 5, "a", "1\\", "b", "3");
    SAMPLE(&doc, 5, "m", 6, 6, "a", "1\\", "b", "3");
    SAMPLE(&doc, 6, "n", 7, 7, "a", "1");
    SAMPLE(&doc, 7, "m", 8, 8);
    SAMPLE(&doc, 8, "m", 9, 9, "a", "1");
    assert_ptr_equal(doc.samples[0].name, doc.samples[7].name);
    prom_doc_free(&doc);
}

/* ---- a large body ---- */

static void t_large(void **state)
{
    (void)state;
    const size_t n = 60000;
    size_t cap = n * 96 + 4096;
    char *body = malloc(cap);
    assert_non_null(body);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 0)
            len += (size_t)snprintf(body + len, cap - len, "# TYPE fam_%zu gauge\n", i / 3);
        len += (size_t)snprintf(body + len, cap - len,
                                "fam_%zu{instance=\"host-%zu\",idx=\"%zu\"} %zu.25 %zu\n", i / 3,
                                i % 7, i, i, i * 1000);
    }
    struct prom_limits lim = prom_limits_default;
    lim.max_families = n;
    struct prom_doc doc;
    struct carma_err e = {0};
    int rc = prom_parse(body, len, &lim, &doc, &e);
    if (rc)
        fail_msg("%d %s", rc, e.msg);
    assert_int_equal(doc.nsamples, n);
    assert_int_equal(doc.nfamilies, n / 3);
    for (size_t i = 0; i < n; i++) {
        const struct prom_sample *s = &doc.samples[i];
        char want[64];
        snprintf(want, sizeof want, "fam_%zu", i / 3);
        if (strcmp(s->name, want) != 0)
            fail_msg("sample %zu is %s", i, s->name);
        assert_true(s->value == (double)i + 0.25);
        assert_int_equal(s->timestamp_ms, (int64_t)(i * 1000));
        assert_int_equal(s->family, i / 3);
        snprintf(want, sizeof want, "%zu", i);
        assert_string_equal(prom_label_value(s, "idx"), want);
        snprintf(want, sizeof want, "host-%zu", i % 7);
        assert_string_equal(prom_label_value(s, "instance"), want);
    }
    prom_doc_free(&doc);
    free(body);
}

/* Many labels per sample, up to the default limit of 64. */
static void t_many_labels(void **state)
{
    (void)state;
    char body[4096];
    size_t len = (size_t)snprintf(body, sizeof body, "m{");
    for (int i = 0; i < 64; i++)
        len += (size_t)snprintf(body + len, sizeof body - len, "l%d=\"v%d\",", i, i);
    len += (size_t)snprintf(body + len, sizeof body - len, "} 1\n");
    struct prom_doc doc;
    parse_ok(body, &doc);
    assert_int_equal(doc.samples[0].nlabels, 64);
    assert_string_equal(prom_label_value(&doc.samples[0], "l63"), "v63");
    prom_doc_free(&doc);
    snprintf(body + len - 4, sizeof body - len + 4, "x=\"y\"} 1\n");
    parse_fail(body, -E2BIG, "line 1: more than 64 labels in a sample of m");
}

/* Strings larger than an arena block, in a body of one line and next to small ones. */
static void t_big_strings(void **state)
{
    (void)state;
    size_t big = 60000;
    char *body = malloc(2 * big + 256);
    assert_non_null(body);
    size_t n = (size_t)sprintf(body, "# HELP h ");
    memset(body + n, 'h', big);
    n += big;
    n += (size_t)sprintf(body + n, "\nm{a=\"small\",b=\"");
    memset(body + n, 'v', big);
    n += big;
    n += (size_t)sprintf(body + n, "\"} 1\nm{a=\"small\",b=\"x\"} 2");
    struct prom_doc doc;
    struct carma_err e = {0};
    int rc = prom_parse(body, n, NULL, &doc, &e);
    if (rc)
        fail_msg("%d %s", rc, e.msg);
    assert_int_equal(strlen(doc.families[0].help), big);
    const char *v = prom_label_value(&doc.samples[0], "b");
    assert_int_equal(strlen(v), big);
    assert_true(v[0] == 'v' && v[big - 1] == 'v');
    assert_string_equal(prom_label_value(&doc.samples[1], "b"), "x");
    assert_string_equal(prom_label_value(&doc.samples[1], "a"), "small");
    prom_doc_free(&doc);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_representative),
        cmocka_unit_test(t_errors),
        cmocka_unit_test(t_near_misses),
        cmocka_unit_test(t_error_line_numbers),
        cmocka_unit_test(t_values),
        cmocka_unit_test(t_crlf),
        cmocka_unit_test(t_no_final_newline),
        cmocka_unit_test(t_nul),
        cmocka_unit_test(t_empty),
        cmocka_unit_test(t_limits),
        cmocka_unit_test(t_linking),
        cmocka_unit_test(t_help_text),
        cmocka_unit_test(t_escape_round_trip),
        cmocka_unit_test(t_shared_strings),
        cmocka_unit_test(t_large),
        cmocka_unit_test(t_many_labels),
        cmocka_unit_test(t_big_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
