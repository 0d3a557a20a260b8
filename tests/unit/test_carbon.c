/*
 * Unit tests for analysis/carbon: grams of CO2e from joules, PUE and intensity; where the
 * intensity comes from (a time series file, a constant, a region of data/grid_intensity.csv,
 * the world average); intensity files (tests/fixtures/carbon) and energy spread over their
 * intervals; embodied carbon from data/embodied.csv and experiment overrides.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis/carbon.h"
#include "testutil.h"

static void test_operational(void **state)
{
    (void)state;
    /* 3.6 MJ = 1 kWh */
    tu_assert_near(carbon_operational_g(3.6e6, 1.0, 475.0), 475.0, 1e-9);
    tu_assert_near(carbon_operational_g(3.6e6, 1.2, 475.0), 570.0, 1e-9);
    tu_assert_near(carbon_operational_g(1.8e6, 1.0, 56.0), 28.0, 1e-9);
    tu_assert_near(carbon_operational_g(360.0, 1.5, 400.0), 0.06, 1e-12);
    assert_true(carbon_operational_g(0.0, 1.2, 475.0) == 0.0);
}

static void test_region(void **state)
{
    (void)state;
    struct carbon_intensity ci;
    struct carma_err e = {0};
    assert_int_equal(carbon_intensity_resolve("FRA", 0, &ci, &e), 0);
    assert_true(ci.g_per_kwh == 56.0);
    assert_string_equal(ci.region, "FRA");
    assert_non_null(strstr(ci.source, "FRA (France)"));
    assert_non_null(strstr(ci.source, "2023"));
    assert_non_null(strstr(ci.source, "Ember"));
    tu_assert_near(carbon_operational_g(3.6e6, 1.0, ci.g_per_kwh), 56.0, 1e-9);

    /* codes are case-insensitive; the canonical spelling is kept */
    assert_int_equal(carbon_intensity_resolve("fra", 0, &ci, &e), 0);
    assert_string_equal(ci.region, "FRA");
    assert_true(ci.g_per_kwh == 56.0);
}

static void test_world_default(void **state)
{
    (void)state;
    struct carbon_intensity ci;
    struct carma_err e = {0};
    assert_int_equal(carbon_intensity_resolve(NULL, 0, &ci, &e), 0);
    assert_true(ci.g_per_kwh == 475.0);
    assert_string_equal(ci.region, "WORLD");
    assert_non_null(strstr(ci.source, "IEA 2019"));
    assert_non_null(strstr(ci.source, ", 2019"));
    /* a non-positive constant means "not given" */
    assert_int_equal(carbon_intensity_resolve(NULL, -3, &ci, &e), 0);
    assert_true(ci.g_per_kwh == 475.0);
}

static void test_unknown_region(void **state)
{
    (void)state;
    struct carbon_intensity ci = {.g_per_kwh = 1.0};
    struct carma_err e = {0};
    assert_int_equal(carbon_intensity_resolve("XYZ", 0, &ci, &e), -ENOENT);
    assert_int_equal(e.code, -ENOENT);
    assert_non_null(strstr(e.msg, "unknown region 'XYZ'"));
    assert_non_null(strstr(e.msg, "--intensity"));
    assert_true(ci.g_per_kwh == 1.0); /* untouched */
    assert_int_equal(carbon_intensity_resolve("", 0, &ci, &e), -ENOENT);
}

static void test_constant_wins(void **state)
{
    (void)state;
    struct carbon_intensity ci;
    struct carma_err e = {0};
    assert_int_equal(carbon_intensity_resolve("FRA", 123.5, &ci, &e), 0);
    assert_true(ci.g_per_kwh == 123.5);
    assert_string_equal(ci.region, "");
    assert_string_equal(ci.source, "given on the command line");
    /* even with a region that does not exist */
    assert_int_equal(carbon_intensity_resolve("XYZ", 10, &ci, &e), 0);
    assert_true(ci.g_per_kwh == 10.0);
}

/* ---- intensity time series ---- */

static void load_ok(const char *name, struct carbon_series *s)
{
    char path[512];
    struct carma_err e = {0};
    tu_fixture_path(path, sizeof path, name);
    int r = carbon_series_load(path, s, &e);
    if (r != 0)
        fail_msg("%s: %d (%s)", name, r, e.msg);
}

/* Loading fixture name fails with code, the message holding "name:LINE: field: " and what. */
static void load_bad(const char *name, int code, const char *where, const char *what)
{
    char path[512], want[600];
    struct carma_err e = {0};
    struct carbon_series s = {.v = (void *)&s, .n = 77};
    tu_fixture_path(path, sizeof path, name);
    int r = carbon_series_load(path, &s, &e);
    if (r != code)
        fail_msg("%s: %d, want %d (%s)", name, r, code, e.msg);
    assert_int_equal(e.code, code);
    snprintf(want, sizeof want, "%s%s", path, where);
    if (strncmp(e.msg, want, strlen(want)) != 0 || !strstr(e.msg, what))
        fail_msg("%s: message \"%s\", want \"%s...%s\"", name, e.msg, want, what);
    assert_true(s.v == (void *)&s && s.n == 77); /* untouched */
}

static void test_series_parse_unix(void **state)
{
    (void)state;
    struct carbon_series s;
    load_ok("carbon/good-unix.csv", &s);
    assert_int_equal(s.n, 3);
    assert_true(s.v[0].start_s == 0 && s.v[0].end_s == 3600 && s.v[0].g_per_kwh == 100);
    assert_true(s.v[1].start_s == 3600 && s.v[1].end_s == 7200 && s.v[1].g_per_kwh == 300);
    assert_true(s.v[2].start_s == 10800 && s.v[2].end_s == 14400 && s.v[2].g_per_kwh == 50);
    /* (3600 * 100 + 3600 * 300 + 3600 * 50) / 10800 */
    assert_true(carbon_series_mean_g_per_kwh(&s) == 150);
    carbon_series_free(&s);
    assert_null(s.v);
    assert_int_equal(s.n, 0);
    carbon_series_free(&s); /* twice is fine */
}

static void test_series_parse_iso(void **state)
{
    (void)state;
    struct carbon_series s;
    /* columns in another order, an extra quoted column, Z, +00:00, +01:00, -04:00, +0000 */
    load_ok("carbon/good-iso.csv", &s);
    assert_int_equal(s.n, 3);
    assert_true(s.v[0].start_s == 1796025600.0); /* 2026-11-30T08:00:00Z */
    assert_true(s.v[0].end_s == 1796029200.0);
    assert_true(s.v[0].g_per_kwh == 120.5);
    assert_true(s.v[1].start_s == 1796029200.0); /* 10:00+01:00 = 09:00Z */
    assert_true(s.v[1].end_s == 1796031000.5);
    assert_true(s.v[1].g_per_kwh == 80);
    assert_true(s.v[2].start_s == 1796031000.5); /* 05:30:00.5-04:00 = 09:30:00.5Z */
    assert_true(s.v[2].end_s == 1796032800.0);
    assert_true(s.v[2].g_per_kwh == 0);
    carbon_series_free(&s);
}

static void test_series_parse_crlf_quoted(void **state)
{
    (void)state;
    struct carbon_series s;
    load_ok("carbon/good-crlf.csv", &s);
    assert_int_equal(s.n, 2);
    assert_true(s.v[0].start_s == 0 && s.v[0].end_s == 60 && s.v[0].g_per_kwh == 10);
    assert_true(s.v[1].start_s == 60 && s.v[1].end_s == 120.5 && s.v[1].g_per_kwh == 20.25);
    carbon_series_free(&s);
}

static void test_series_parse_errors(void **state)
{
    (void)state;
    load_bad("carbon/bad-unsorted.csv", -EINVAL, ":4: start: ", "sorted");
    load_bad("carbon/bad-overlap.csv", -EINVAL, ":4: start: ", "overlaps line 3");
    load_bad("carbon/bad-end-not-after-start.csv", -EINVAL, ":3: end: ", "not after start");
    load_bad("carbon/bad-negative.csv", -EINVAL, ":3: g_per_kwh: ", "'-5' is negative");
    load_bad("carbon/bad-nonnumeric.csv", -EINVAL,
             ":3: g_per_kwh: ", "'about 300' is not a number");
    load_bad("carbon/bad-time.csv", -EINVAL, ":3: start: ", "'soon' is not a time");
    load_bad("carbon/bad-missing-column.csv", -EINVAL, ":1: end: ", "missing column");
    load_bad("carbon/bad-no-offset.csv", -EINVAL, ":2: start: ", "no UTC offset");
    load_bad("carbon/bad-date.csv", -EINVAL, ":2: start: ", "not a valid date");
    load_bad("carbon/bad-short-row.csv", -EINVAL, ":3: row: ", "2 fields, the header has 3");
    load_bad("carbon/bad-no-rows.csv", -EINVAL, ":1: start: ", "no intervals");
    load_bad("carbon/does-not-exist.csv", -ENOENT, ": ", "cannot open");
}

/* Loads text written into a file in the test's scratch directory. */
static int load_text(const char *text, struct carbon_series *s, struct carma_err *e)
{
    char path[TU_DIR_MAX + 16];
    tu_put("series.csv", text);
    snprintf(path, sizeof path, "%s/series.csv", tu_dir);
    return carbon_series_load(path, s, e);
}

/* A quoted cell may hold a line end; the message that quotes it stays one line (a problem a
 * line, as validate prints them), the control characters escaped. */
static void test_series_error_one_line(void **state)
{
    (void)state;
    struct carbon_series s = {0};
    struct carma_err e = {0};
    assert_int_equal(
        load_text("start,end,g_per_kwh\n\"2024-01-01\nT00:00:00Z\",2024-01-01T01:00:00Z,"
                  "120\n\"1\",\"2\",\"a\tb\r\"\n",
                  &s, &e),
        -EINVAL);
    assert_null(strchr(e.msg, '\n'));
    if (!strstr(e.msg, ":2: start: '2024-01-01\\u000aT00:00:00Z' is not an ISO 8601 time"))
        fail_msg("%s", e.msg);
    assert_int_equal(load_text("start,end,g_per_kwh\n1,2,\"a\tb\r\"\n", &s, &e), -EINVAL);
    if (!strstr(e.msg, ":2: g_per_kwh: 'a\\u0009b\\u000d' is not a number"))
        fail_msg("%s", e.msg);
}

static void test_series_iso_forms(void **state)
{
    (void)state;
    struct carbon_series s;
    struct carma_err e = {0};
    /* a space for T, no seconds, ±HH offsets, a leap day, a comma fraction, 1970 */
    assert_int_equal(load_text("start,end,g_per_kwh\n"
                               "1970-01-01 00:00Z,1970-01-01T02:00:00+01,1\n"
                               "2024-02-29T23:59:59,5-00:00,2024-03-01T00:00:00z,2\n",
                               &s, &e),
                     -EINVAL); /* the unquoted comma splits the row */
    assert_non_null(strstr(e.msg, ":3: row: 4 fields"));
    assert_int_equal(load_text("start,end,g_per_kwh\n"
                               "1970-01-01 00:00Z,1970-01-01T02:00:00+01,1\n"
                               "\"2024-02-29T23:59:59,5-00:00\",2024-03-01T00:00:00z,2\n",
                               &s, &e),
                     0);
    assert_int_equal(s.n, 2);
    assert_true(s.v[0].start_s == 0 && s.v[0].end_s == 3600);
    assert_true(s.v[1].start_s == 1709251199.5 && s.v[1].end_s == 1709251200.0);
    carbon_series_free(&s);

    /* fractions to the nanosecond; more digits are dropped */
    assert_int_equal(
        load_text("start,end,g_per_kwh\n0,1970-01-01T00:00:00.0000000009Z,1\n", &s, &e), -EINVAL);
    assert_non_null(strstr(e.msg, ":2: end: '1970-01-01T00:00:00.0000000009Z' is not after start"));
    assert_int_equal(load_text("start,end,g_per_kwh\n0,1970-01-01T00:00:00.000000001Z,1\n", &s, &e),
                     0);
    assert_true(s.v[0].end_s == 1e-9);
    carbon_series_free(&s);
    assert_int_equal(load_text("start,end,g_per_kwh\n"
                               "2026-11-30T08:00:00.125Z,2026-11-30T08:00:00.375+00:00,1\n",
                               &s, &e),
                     0);
    assert_true(s.v[0].start_s == 1796025600.125);
    assert_true(s.v[0].end_s == 1796025600.375);
    carbon_series_free(&s);

    assert_int_equal(
        load_text("start,end,g_per_kwh\n2026-13-01T00:00Z,2027-01-01T00:00Z,1\n", &s, &e), -EINVAL);
    assert_non_null(strstr(e.msg, ":2: start: '2026-13-01T00:00Z' is not a valid date"));
    assert_int_equal(load_text("start,end,g_per_kwh\n0,2026-11-30T08:00:00+24:00,1\n", &s, &e),
                     -EINVAL);
    assert_non_null(strstr(e.msg, ":2: end: "));
    assert_non_null(strstr(e.msg, "offset"));
    assert_int_equal(load_text("start,end,g_per_kwh\n0,2026-11-30T08:00:00+01:00x,1\n", &s, &e),
                     -EINVAL);
    assert_non_null(strstr(e.msg, ":2: end: "));
    assert_int_equal(load_text("start,end,g_per_kwh\n0,10,inf\n", &s, &e), -EINVAL);
    assert_non_null(strstr(e.msg, ":2: g_per_kwh: 'inf' is not a number"));
    assert_int_equal(load_text("start,end,g_per_kwh\n0,nan,1\n", &s, &e), -EINVAL);
    assert_non_null(strstr(e.msg, ":2: end: 'nan' is not a time"));
    assert_int_equal(load_text("", &s, &e), -EINVAL);
    assert_non_null(strstr(e.msg, ":1: header: missing"));
}

static void test_series_energy(void **state)
{
    (void)state;
    struct carbon_series s;
    int covered = -1;
    load_ok("carbon/good-unix.csv", &s); /* [0,3600) 100, [3600,7200) 300, [10800,14400) 50 */

    /* one interval: 1 kWh at 100 g/kWh, PUE 1.5 */
    assert_true(carbon_series_energy_g(&s, 0, 3600, 3.6e6, 1.5, &covered) == 150.0);
    assert_int_equal(covered, 1);
    covered = -1;
    assert_true(carbon_series_energy_g(&s, 1000, 2000, 3.6e6, 1.0, &covered) == 100.0);
    assert_int_equal(covered, 1);

    /* across two: half the energy at 100, half at 300 */
    covered = -1;
    assert_true(carbon_series_energy_g(&s, 0, 7200, 3.6e6, 1.0, &covered) == 200.0);
    assert_int_equal(covered, 1);
    /* a quarter at 100, three quarters at 300 */
    tu_assert_near(carbon_series_energy_g(&s, 2700, 6300, 3.6e6, 1.0, &covered), 250.0, 1e-9);
    assert_int_equal(covered, 1);

    /* partly before the series: the first interval's value, not covered */
    covered = -1;
    assert_true(carbon_series_energy_g(&s, -3600, 3600, 3.6e6, 1.0, &covered) == 100.0);
    assert_int_equal(covered, 0);
    /* partly after: the last interval's */
    tu_assert_near(carbon_series_energy_g(&s, 12600, 16200, 3.6e6, 1.0, &covered), 50.0, 1e-9);
    assert_int_equal(covered, 0);
    /* the gap [7200,10800): the first half at 300, the second at 50 */
    tu_assert_near(carbon_series_energy_g(&s, 7200, 10800, 3.6e6, 1.0, &covered), 175.0, 1e-9);
    assert_int_equal(covered, 0);
    /* the whole series and an hour either side, 6 kWh */
    tu_assert_near(
        carbon_series_energy_g(&s, -3600, 18000, 6 * 3.6e6, 1.0, &covered),
        (7200 * 100.0 + 3600 * 300.0 + 1800 * 300.0 + 1800 * 50.0 + 7200 * 50.0) / 21600 * 6, 1e-9);
    assert_int_equal(covered, 0);

    /* an instant */
    covered = -1;
    assert_true(carbon_series_energy_g(&s, 4000, 4000, 3.6e6, 1.0, &covered) == 300.0);
    assert_int_equal(covered, 1);
    assert_true(carbon_series_energy_g(&s, 7300, 7300, 3.6e6, 1.0, &covered) == 300.0);
    assert_int_equal(covered, 0);

    /* no energy, no grams; bad spans are NAN */
    assert_true(carbon_series_energy_g(&s, 0, 7200, 0, 1.0, NULL) == 0.0);
    assert_true(isnan(carbon_series_energy_g(&s, 10, 5, 1, 1.0, &covered)));
    assert_int_equal(covered, 0);
    assert_true(isnan(carbon_series_energy_g(&s, NAN, 5, 1, 1.0, &covered)));
    struct carbon_series empty = {0};
    assert_true(isnan(carbon_series_energy_g(&empty, 0, 5, 1, 1.0, &covered)));
    carbon_series_free(&s);
}

static void test_series_at(void **state)
{
    (void)state;
    struct carbon_series s;
    load_ok("carbon/good-unix.csv", &s);
    assert_true(carbon_series_at(&s, 0) == 100);
    assert_true(carbon_series_at(&s, 3599.999) == 100);
    assert_true(carbon_series_at(&s, 3600) == 300); /* [start, end) */
    assert_true(carbon_series_at(&s, 7199) == 300);
    assert_true(carbon_series_at(&s, -1e9) == 100); /* before: the first */
    assert_true(carbon_series_at(&s, 1e12) == 50);  /* after: the last */
    assert_true(carbon_series_at(&s, 8999) == 300); /* gap, nearer the earlier */
    assert_true(carbon_series_at(&s, 9000) == 50);  /* the midpoint: the later */
    assert_true(carbon_series_at(&s, 10799) == 50); /* gap, nearer the later */
    assert_true(carbon_series_at(&s, 14399.5) == 50);
    assert_true(isnan(carbon_series_at(&s, NAN)));
    struct carbon_series empty = {0};
    assert_true(isnan(carbon_series_at(&empty, 0)));
    carbon_series_free(&s);
}

static void test_resolve_order(void **state)
{
    (void)state;
    char path[512];
    struct carbon_intensity ci;
    struct carma_err e = {0};
    int covered = -1;
    tu_fixture_path(path, sizeof path, "carbon/good-unix.csv");

    /* a series file wins over a constant and a region */
    assert_int_equal(carbon_intensity_resolve_series(path, "FRA", 123.5, &ci, &e), 0);
    assert_int_equal(ci.kind, CARBON_CI_SERIES);
    assert_int_equal(ci.series.n, 3);
    assert_true(ci.g_per_kwh == 150); /* the duration-weighted mean */
    assert_string_equal(ci.region, "");
    assert_non_null(strstr(ci.source, "good-unix.csv"));
    assert_non_null(strstr(ci.source, "3 intervals, 1970-01-01T00:00:00Z to 1970-01-01T04:00:00Z"));
    assert_true(carbon_intensity_energy_g(&ci, 0, 7200, 3.6e6, 1.0, &covered) == 200.0);
    assert_int_equal(covered, 1);
    carbon_intensity_done(&ci);
    assert_int_equal(ci.series.n, 0);

    /* then the constant, then the region, then the world */
    assert_int_equal(carbon_intensity_resolve_series("", "FRA", 123.5, &ci, &e), 0);
    assert_int_equal(ci.kind, CARBON_CI_CONSTANT);
    assert_true(ci.g_per_kwh == 123.5);
    covered = -1;
    assert_true(carbon_intensity_energy_g(&ci, 0, 7200, 3.6e6, 1.0, &covered) == 123.5);
    assert_int_equal(covered, 1);
    assert_int_equal(carbon_intensity_resolve_series(NULL, "FRA", 0, &ci, &e), 0);
    assert_int_equal(ci.kind, CARBON_CI_REGION);
    assert_true(ci.g_per_kwh == 56);
    assert_int_equal(ci.series.n, 0);
    assert_int_equal(carbon_intensity_resolve_series(NULL, NULL, 0, &ci, &e), 0);
    assert_int_equal(ci.kind, CARBON_CI_REGION);
    assert_true(ci.g_per_kwh == 475);
    carbon_intensity_done(&ci);

    /* a bad series file is an error, not a fall-through to the constant */
    tu_fixture_path(path, sizeof path, "carbon/bad-overlap.csv");
    ci.g_per_kwh = 1.0;
    assert_int_equal(carbon_intensity_resolve_series(path, NULL, 10, &ci, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "bad-overlap.csv:4: start: "));
    assert_true(ci.g_per_kwh == 1.0);
}

/* ---- embodied ---- */

static void test_embodied_formula(void **state)
{
    (void)state;
    /* H100-SXM-80GB: 575 kg over 5 years; an hour at half the card */
    tu_assert_near(carbon_embodied_g(575, 5, 3600, 0.5), 6.559434177503992, 1e-12);
    /* a whole year of a whole device is a fifth of it */
    tu_assert_near(carbon_embodied_g(575, 5, 365.25 * 86400, 1), 115000.0, 1e-6);
    assert_true(carbon_embodied_g(575, 5, 0, 1) == 0);
    assert_true(carbon_embodied_g(575, 5, 3600, 0) == 0);
    assert_true(isnan(carbon_embodied_g(575, 0, 3600, 1)));
    assert_true(isnan(carbon_embodied_g(575, -1, 3600, 1)));
    assert_true(isnan(carbon_embodied_g(-1, 5, 3600, 1)));
    assert_true(isnan(carbon_embodied_g(575, 5, -1, 1)));
    assert_true(isnan(carbon_embodied_g(575, 5, 3600, NAN)));
}

/* A workload's embodied carbon: the CPUs by CPU time (capped at all of them) or allocation,
 * times the packages; a GPU at its share among the workloads naming it, only when a GPU is
 * measured or its fact is the experiment's. */
static void test_embodied_job(void **state)
{
    (void)state;
    const double per_s = 100e3 / (5 * 365.25 * 86400); /* the table's CPU: 100 kg, 5 years */
    int gpus[] = {3}, users[] = {4};
    struct carbon_embodied_use u = {.seconds = 10,
                                    .cpu_s = 100,
                                    .ncpu = 8,
                                    .sockets = 2, /* 100 s of 80: all the CPUs */
                                    .gpus = gpus,
                                    .gpu_users = users,
                                    .ngpus = 1,
                                    .gpu_measured = true};
    struct carbon_embodied_part p[4];
    double g = -1;
    assert_int_equal(carbon_embodied_job(&u, p, 4, &g), 2);
    assert_int_equal(p[0].gpu, -1);
    assert_int_equal(p[0].units, 2);
    tu_assert_near(p[0].share, 1.0, 1e-15);
    tu_assert_near(p[0].g_co2e, 2 * per_s * 10, 1e-12);
    assert_int_equal(p[1].gpu, 3);
    tu_assert_near(p[1].share, 0.25, 1e-15);
    tu_assert_near(p[1].g_co2e, 150e3 / (5 * 365.25 * 86400) * 10 * 0.25, 1e-12);
    assert_false(p[1].declared);
    tu_assert_near(g, p[0].g_co2e + p[1].g_co2e, 1e-15);
    /* an allocation of 2 of 8 CPUs; no GPU measured and none declared: no GPU part */
    u.n_cpus = 2;
    u.gpu_measured = false;
    assert_int_equal(carbon_embodied_job(&u, p, 4, &g), 1);
    tu_assert_near(p[0].share, 0.25, 1e-15);
    tu_assert_near(g, 2 * per_s * 10 * 0.25, 1e-12);
    /* declared by the experiment: charged, and said so */
    struct carbon_embodied_override ov = {
        .component = "gpu", .model = "default", .kg_co2e = 300, .lifetime_years = 3};
    u.overrides = &ov;
    u.n_overrides = 1;
    assert_int_equal(carbon_embodied_job(&u, p, 4, &g), 2);
    assert_true(p[1].declared);
    assert_true(carbon_embodied_declared(&p[1].fact));
    tu_assert_near(p[1].g_co2e, 300e3 / (3 * 365.25 * 86400) * 10 * 0.25, 1e-12);
    /* cap: the CPUs' part only */
    assert_int_equal(carbon_embodied_job(&u, p, 1, &g), 1);
}

static void test_embodied_resolve(void **state)
{
    (void)state;
    struct embodied_fact f;
    struct carma_err e = {0};

    /* the table row */
    assert_int_equal(carbon_embodied_resolve("gpu", "H100-SXM-80GB", NULL, 0, &f, &e), 0);
    assert_true(f.kg_co2e == 575 && f.lifetime_years == 5);
    assert_false(f.fallback);
    assert_non_null(strstr(f.source, "Boavizta"));
    tu_assert_near(carbon_embodied_g(f.kg_co2e, f.lifetime_years, 3600, 0.5), 6.559434177503992,
                   1e-12);

    /* an unknown model: the default row, flagged */
    assert_int_equal(carbon_embodied_resolve("gpu", "B200", NULL, 0, &f, &e), 0);
    assert_true(f.kg_co2e == 150 && f.lifetime_years == 5);
    assert_string_equal(f.model, "default");
    assert_true(f.fallback);

    /* an override of the model wins over the table */
    const struct carbon_embodied_override ov[] = {
        {.component = "GPU", .model = "h100-sxm-80gb", .kg_co2e = 1000, .lifetime_years = 4},
        {.component = "gpu", .model = "default", .kg_co2e = 200, .lifetime_years = 6},
        {.component = "fpga", .model = "U280", .kg_co2e = 80, .lifetime_years = 5},
    };
    assert_int_equal(carbon_embodied_resolve("gpu", "H100-SXM-80GB", ov, 3, &f, &e), 0);
    assert_true(f.kg_co2e == 1000 && f.lifetime_years == 4);
    assert_string_equal(f.source, "experiment override");
    assert_string_equal(f.scope, "card"); /* the table's row for the same model */
    assert_false(f.fallback);
    tu_assert_near(carbon_embodied_g(f.kg_co2e, f.lifetime_years, 3600, 1),
                   1e6 / (4 * 365.25 * 86400) * 3600, 1e-12);

    /* an override of the default row applies to unknown models, still flagged */
    assert_int_equal(carbon_embodied_resolve("gpu", "B200", ov, 3, &f, &e), 0);
    assert_true(f.kg_co2e == 200 && f.lifetime_years == 6);
    assert_string_equal(f.source, "experiment override");
    assert_true(f.fallback);
    /* but not to a model the table knows */
    assert_int_equal(carbon_embodied_resolve("gpu", "A100", ov, 3, &f, &e), 0);
    assert_true(f.kg_co2e == 318);
    assert_string_equal(f.source, "Chien et al. HotCarbon 2023");

    /* a component the table does not have: only an override can give it */
    assert_int_equal(carbon_embodied_resolve("fpga", "U280", ov, 3, &f, &e), 0);
    assert_true(f.kg_co2e == 80);
    assert_string_equal(f.scope, "");
    assert_int_equal(carbon_embodied_resolve("fpga", "U280", NULL, 0, &f, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "'fpga'"));

    /* an override without a model (the experiment file left it out) is the generic row's */
    const struct carbon_embodied_override nomodel[] = {
        {.component = "gpu", .model = "", .kg_co2e = 120, .lifetime_years = 4},
    };
    assert_int_equal(carbon_embodied_resolve("gpu", "default", nomodel, 1, &f, &e), 0);
    assert_true(f.kg_co2e == 120 && f.lifetime_years == 4);
    assert_string_equal(f.source, "experiment override");
    assert_int_equal(carbon_embodied_resolve("gpu", "B200", nomodel, 1, &f, &e), 0);
    assert_true(f.kg_co2e == 120 && f.fallback);
    assert_int_equal(carbon_embodied_resolve("gpu", "A100", nomodel, 1, &f, &e), 0);
    assert_true(f.kg_co2e == 318); /* a model the table knows keeps its row */

    /* a bad override is an error */
    const struct carbon_embodied_override bad[] = {
        {.component = "cpu", .model = "default", .kg_co2e = 100, .lifetime_years = 0},
    };
    f.kg_co2e = -7;
    assert_int_equal(carbon_embodied_resolve("cpu", NULL, bad, 1, &f, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "cpu/default"));
    assert_non_null(strstr(e.msg, "lifetime_years"));
    assert_true(f.kg_co2e == -7); /* untouched */
}

static void test_embodied_dram_per_gb(void **state)
{
    (void)state;
    struct embodied_fact f;
    struct carma_err e = {0};
    assert_int_equal(carbon_embodied_resolve("dram", NULL, NULL, 0, &f, &e), 0);
    assert_string_equal(f.model, "per_gb");
    assert_true(f.per_gb);
    assert_false(f.fallback);
    assert_true(f.kg_co2e == 1.39 && f.lifetime_years == 5);
    /* 64 GB for a day */
    tu_assert_near(carbon_embodied_g(f.kg_co2e * 64, f.lifetime_years, 86400, 1), 48.71184120465434,
                   1e-11);

    const struct carbon_embodied_override ov[] = {
        {.component = "dram", .model = "per_gb", .kg_co2e = 2, .lifetime_years = 4},
    };
    assert_int_equal(carbon_embodied_resolve("dram", "DDR5-4800", ov, 1, &f, &e), 0);
    assert_true(f.kg_co2e == 2 && f.lifetime_years == 4);
    assert_true(f.per_gb);
    assert_true(f.fallback);
    assert_string_equal(f.source, "experiment override");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operational),
        cmocka_unit_test(test_region),
        cmocka_unit_test(test_world_default),
        cmocka_unit_test(test_unknown_region),
        cmocka_unit_test(test_constant_wins),
        cmocka_unit_test(test_series_parse_unix),
        cmocka_unit_test(test_series_parse_iso),
        cmocka_unit_test(test_series_parse_crlf_quoted),
        cmocka_unit_test(test_series_parse_errors),
        cmocka_unit_test_setup_teardown(test_series_iso_forms, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_series_error_one_line, tu_setup, tu_teardown),
        cmocka_unit_test(test_series_energy),
        cmocka_unit_test(test_series_at),
        cmocka_unit_test(test_resolve_order),
        cmocka_unit_test(test_embodied_formula),
        cmocka_unit_test(test_embodied_resolve),
        cmocka_unit_test(test_embodied_job),
        cmocka_unit_test(test_embodied_dram_per_gb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
