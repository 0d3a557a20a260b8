/*
 * Unit tests for core/table: CPU TDP look-up by model name (whole-token, case-insensitive,
 * longest pattern first, "*" fallback) in the embedded table and in custom tables, and the
 * grid intensity look-up, the embodied carbon look-up (exact model, else the component's generic
 * row). Expected values are those of data/cpu_tdp.csv, data/grid_intensity.csv and
 * data/embodied.csv.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "core/table.h"

static void lookup_ok(const char *model, const char *pattern, double tdp_w, int cores, int fallback)
{
    struct cpu_tdp_match m;
    struct carma_err e = {0};
    memset(&m, 0xa5, sizeof m);
    int r = table_cpu_tdp_lookup(model, NULL, 0, NULL, &m, &e);
    if (r != 0)
        fail_msg("lookup \"%s\": %d (%s)", model, r, e.msg);
    if (strcmp(m.pattern, pattern) != 0)
        fail_msg("lookup \"%s\" matched \"%s\", want \"%s\"", model, m.pattern, pattern);
    assert_true(m.tdp_w == tdp_w);
    assert_int_equal(m.cores, cores);
    assert_int_equal(m.fallback, fallback);
    assert_true(m.source[0] != '\0');
}

static void test_embedded_exact_tokens(void **state)
{
    (void)state;
    /* "Gold 6248" must not match "Gold 6248R", and the longer row must win */
    lookup_ok("Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz", "Xeon(R) Gold 6248R", 205, 24, 0);
    lookup_ok("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", "Xeon(R) Gold 6248", 150, 20, 0);
    lookup_ok("AMD EPYC 7B12 64-Core Processor", "EPYC 7B12", 240, 64, 0);
    lookup_ok("AMD EPYC 7763 64-Core Processor", "EPYC 7763", 280, 64, 0);
    lookup_ok("Intel(R) Xeon(R) Platinum 8480+", "Xeon(R) Platinum 8480+", 350, 56, 0);
    lookup_ok("Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz", "Xeon(R) Platinum 8275CL", 240, 24,
              0);
    lookup_ok("12th Gen Intel(R) Core(TM) i9-12900K", "i9-12900K", 125, 16, 0);
    lookup_ok("AMD Ryzen 9 7950X3D 16-Core Processor", "Ryzen 9 7950X3D", 120, 16, 0);
    lookup_ok("AMD Ryzen 9 7950X 16-Core Processor", "Ryzen 9 7950X", 170, 16, 0);
    /* case-insensitive */
    lookup_ok("intel(r) xeon(r) gold 6248r cpu @ 3.00ghz", "Xeon(R) Gold 6248R", 205, 24, 0);
}

static void test_embedded_fallback(void **state)
{
    (void)state;
    lookup_ok("AMD EPYC", "*", 85, 0, 1);
    lookup_ok("", "*", 85, 0, 1);
    lookup_ok("Intel(R) Core(TM) i9-12900KS", "*", 85, 0, 1); /* KS is another SKU */
    lookup_ok("AMD EPYC 77630 Processor", "*", 85, 0, 1);     /* digits run on */
    lookup_ok("Intel(R) Xeon(R) Gold X6248", "*", 85, 0, 1);  /* letters before */
    lookup_ok("Intel(R) Xeon(R) Gold 6248_v2", "Xeon(R) Gold 6248", 150, 20, 0); /* '_' ends */

    struct cpu_tdp_match m;
    struct carma_err e = {0};
    assert_int_equal(table_cpu_tdp_lookup(NULL, NULL, 0, NULL, &m, &e), 0);
    assert_string_equal(m.pattern, "*");
    assert_true(m.fallback);
}

static int lookup_custom(const char *model, const char *text, struct cpu_tdp_match *m,
                         struct carma_err *e)
{
    return table_cpu_tdp_lookup(model, text, strlen(text), "my.csv", m, e);
}

static void test_custom_longest_wins(void **state)
{
    (void)state;
    struct cpu_tdp_match m;
    struct carma_err e = {0};
    const char *short_first = "pattern,tdp_w,cores,source\n"
                              "Gold,100,,generic gold\n"
                              "Xeon(R) Gold 6248,150,20,ark\n"
                              "Gold 6248,120,,shorter\n"
                              "*,85,,fallback\n";
    assert_int_equal(lookup_custom("Intel(R) Xeon(R) Gold 6248 CPU", short_first, &m, &e), 0);
    assert_string_equal(m.pattern, "Xeon(R) Gold 6248");
    assert_true(m.tdp_w == 150);
    assert_int_equal(m.cores, 20);
    assert_string_equal(m.source, "ark");
    assert_false(m.fallback);

    const char *long_first = "pattern,tdp_w,cores,source\n"
                             "Xeon(R) Gold 6248,150,20,ark\n"
                             "Gold,100,,generic gold\n";
    assert_int_equal(lookup_custom("Intel(R) Xeon(R) Gold 6248 CPU", long_first, &m, &e), 0);
    assert_string_equal(m.pattern, "Xeon(R) Gold 6248");

    assert_int_equal(lookup_custom("Intel(R) Xeon(R) Gold 5218", short_first, &m, &e), 0);
    assert_string_equal(m.pattern, "Gold");
    assert_true(m.tdp_w == 100);
    assert_int_equal(m.cores, 0);
    assert_false(m.fallback);

    /* quoted fields and columns in any order */
    const char *quoted = "source,tdp_w,pattern,cores\r\n"
                         "\"ark, 2024\",95.5,\"Core, Ultra\",8\r\n";
    assert_int_equal(lookup_custom("Intel Core, Ultra 7", quoted, &m, &e), 0);
    assert_string_equal(m.pattern, "Core, Ultra");
    assert_true(m.tdp_w == 95.5);
    assert_int_equal(m.cores, 8);
    assert_string_equal(m.source, "ark, 2024");
}

static void test_custom_errors(void **state)
{
    (void)state;
    struct cpu_tdp_match m;
    struct carma_err e = {0};

    const char *bad_tdp = "pattern,tdp_w,cores,source\n"
                          "EPYC 7B12,240,64,x\n"
                          "EPYC 7R13,about 225,48,x\n";
    assert_int_equal(lookup_custom("AMD EPYC 7B12", bad_tdp, &m, &e), -EINVAL);
    assert_int_equal(e.code, -EINVAL);
    assert_non_null(strstr(e.msg, "my.csv:3:"));
    assert_non_null(strstr(e.msg, "tdp_w"));

    const char *zero_tdp = "pattern,tdp_w,cores,source\n\nEPYC,0,1,x\n";
    memset(&e, 0, sizeof e);
    assert_int_equal(lookup_custom("AMD EPYC", zero_tdp, &m, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "my.csv:3:"));

    const char *no_tdp = "pattern,cores,source\nEPYC,64,x\n";
    memset(&e, 0, sizeof e);
    assert_int_equal(lookup_custom("AMD EPYC", no_tdp, &m, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "my.csv:1:"));
    assert_non_null(strstr(e.msg, "tdp_w"));

    const char *short_row = "pattern,tdp_w,cores,source\nEPYC,200,64,x\nXeon,150\n";
    memset(&e, 0, sizeof e);
    assert_int_equal(lookup_custom("AMD EPYC", short_row, &m, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "my.csv:3:"));

    const char *bad_quote = "pattern,tdp_w,cores,source\nEP\"YC,200,64,x\n";
    memset(&e, 0, sizeof e);
    assert_int_equal(lookup_custom("AMD EPYC", bad_quote, &m, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "my.csv:2:"));

    memset(&e, 0, sizeof e);
    assert_int_equal(lookup_custom("AMD EPYC", "", &m, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "my.csv"));

    /* no match and no "*" row */
    const char *no_star = "pattern,tdp_w,cores,source\nEPYC 7B12,240,64,x\n";
    memset(&e, 0, sizeof e);
    assert_int_equal(lookup_custom("Intel(R) Xeon(R)", no_star, &m, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "my.csv"));
}

static void test_grid(void **state)
{
    (void)state;
    struct grid_intensity g;
    struct carma_err e = {0};
    assert_int_equal(table_grid_lookup("FRA", &g, &e), 0);
    assert_string_equal(g.region, "FRA");
    assert_string_equal(g.name, "France");
    assert_true(g.g_per_kwh == 56);
    assert_int_equal(g.year, 2023);
    assert_true(g.source[0] != '\0');

    memset(&g, 0, sizeof g);
    assert_int_equal(table_grid_lookup("fra", &g, &e), 0);
    assert_string_equal(g.region, "FRA");
    assert_true(g.g_per_kwh == 56);

    assert_int_equal(table_grid_lookup(GRID_WORLD_REGION, &g, &e), 0);
    assert_string_equal(g.region, "WORLD");
    assert_true(g.g_per_kwh == 475);
    assert_int_equal(g.year, 2019);

    assert_int_equal(table_grid_lookup("ISL", &g, &e), 0);
    assert_true(g.g_per_kwh == 28);
    assert_int_equal(g.year, 2022);
    assert_int_equal(table_grid_lookup("usa", &g, &e), 0);
    assert_true(g.g_per_kwh == 369);

    memset(&g, 0x5a, sizeof g);
    struct grid_intensity before = g;
    assert_int_equal(table_grid_lookup("XXX", &g, &e), -ENOENT);
    assert_int_equal(e.code, -ENOENT);
    assert_non_null(strstr(e.msg, "'XXX'"));
    assert_non_null(strstr(e.msg, "data/grid_intensity.csv"));
    assert_non_null(strstr(e.msg, "WORLD"));
    assert_memory_equal(&g, &before, sizeof g); /* untouched on failure */

    assert_int_equal(table_grid_lookup("", &g, &e), -ENOENT);
    assert_int_equal(table_grid_lookup("FR", &g, &e), -ENOENT);
    assert_int_equal(table_grid_lookup("FRAN", &g, &e), -ENOENT);
}

static void test_embodied(void **state)
{
    (void)state;
    struct embodied_fact f;
    struct carma_err e = {0};

    assert_int_equal(table_embodied_lookup("gpu", "H100-SXM-80GB", &f, &e), 0);
    assert_string_equal(f.component, "gpu");
    assert_string_equal(f.model, "H100-SXM-80GB");
    assert_true(f.kg_co2e == 575);
    assert_true(f.lifetime_years == 5);
    assert_string_equal(f.scope, "card");
    assert_string_equal(f.source, "Boavizta impact factors applied to die/VRAM/PCB/heatsink specs");
    assert_false(f.fallback);
    assert_false(f.per_gb);

    /* case-insensitive, the table's spelling kept; "A100" is not "A100-SXM4-40GB" */
    assert_int_equal(table_embodied_lookup("GPU", "a100", &f, &e), 0);
    assert_string_equal(f.model, "A100");
    assert_true(f.kg_co2e == 318);
    assert_string_equal(f.scope, "card incl. 1/8 of an 8-GPU host");
    assert_int_equal(table_embodied_lookup("gpu", "A100-SXM4-40GB", &f, &e), 0);
    assert_true(f.kg_co2e == 273);

    /* an unknown model: the component's default row, flagged */
    assert_int_equal(table_embodied_lookup("gpu", "H100-PCIe", &f, &e), 0);
    assert_string_equal(f.model, "default");
    assert_true(f.kg_co2e == 150);
    assert_true(f.lifetime_years == 5);
    assert_true(f.fallback);
    assert_non_null(strstr(f.source, "Cloud Carbon Footprint"));
    /* no model, or "default": the default row, not a fallback */
    assert_int_equal(table_embodied_lookup("gpu", NULL, &f, &e), 0);
    assert_true(f.kg_co2e == 150);
    assert_false(f.fallback);
    assert_int_equal(table_embodied_lookup("cpu", "Default", &f, &e), 0);
    assert_true(f.kg_co2e == 100);
    assert_string_equal(f.scope, "socket");
    assert_false(f.fallback);
    assert_int_equal(table_embodied_lookup("server", "", &f, &e), 0);
    assert_true(f.kg_co2e == 1000);
    assert_int_equal(table_embodied_lookup("ssd", "990 PRO", &f, &e), 0);
    assert_true(f.kg_co2e == 100);
    assert_true(f.fallback);

    /* dram is per GB */
    assert_int_equal(table_embodied_lookup("dram", NULL, &f, &e), 0);
    assert_string_equal(f.model, "per_gb");
    assert_true(f.kg_co2e == 1.39);
    assert_true(f.per_gb);
    assert_false(f.fallback);
    assert_int_equal(table_embodied_lookup("dram", "per_gb", &f, &e), 0);
    assert_true(f.per_gb);
    assert_false(f.fallback);
    assert_int_equal(table_embodied_lookup("dram", "DDR5-4800 RDIMM", &f, &e), 0);
    assert_string_equal(f.model, "per_gb");
    assert_true(f.per_gb);
    assert_true(f.fallback);

    /* an unknown component */
    memset(&f, 0x5a, sizeof f);
    struct embodied_fact before = f;
    assert_int_equal(table_embodied_lookup("tpu", "v4", &f, &e), -ENOENT);
    assert_int_equal(e.code, -ENOENT);
    assert_non_null(strstr(e.msg, "'tpu'"));
    assert_non_null(strstr(e.msg, "gpu, cpu, server, dram, ssd"));
    assert_memory_equal(&f, &before, sizeof f); /* untouched on failure */
    assert_int_equal(table_embodied_lookup(NULL, NULL, &f, &e), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedded_exact_tokens),
        cmocka_unit_test(test_embedded_fallback),
        cmocka_unit_test(test_custom_longest_wins),
        cmocka_unit_test(test_custom_errors),
        cmocka_unit_test(test_grid),
        cmocka_unit_test(test_embodied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
