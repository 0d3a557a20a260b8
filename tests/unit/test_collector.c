/*
 * Unit tests for collect/collector's dcgm-exporter parts: "dcgm:" targets (the default port
 * 9400, the name, errors naming the target as given, "dcgm:PORT" being the host dcgm) and the
 * samples.csv rows of a dcgm-exporter scrape (channels dcgm/gpu<N>, MIG instances as
 * dcgm/gpu<N>/mig<ID> of domain component, the energy counter in J, blank cells for what is
 * missing, a blank row for a scrape without readings), hand-worked.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collect/collector.h"
#include "collect/dcgm.h"
#include "collect/promparse.h"

static void test_dcgm_targets(void **state)
{
    (void)state;
    struct collect_target t;
    struct carma_err e = {0};
    assert_int_equal(collect_target_parse("dcgm:gpu-node-3", 9405, NULL, &t, &e), 0);
    assert_true(t.dcgm);
    assert_string_equal(t.name, "dcgm:gpu-node-3:9400");
    assert_string_equal(t.url, "http://gpu-node-3:9400/metrics");
    assert_string_equal(t.node, "gpu-node-3");
    collect_target_done(&t);

    assert_int_equal(collect_target_parse("dcgm:10.0.0.7:9500", 9405, "n7", &t, &e), 0);
    assert_true(t.dcgm);
    assert_string_equal(t.url, "http://10.0.0.7:9500/metrics");
    assert_string_equal(t.node, "n7");
    collect_target_done(&t);

    assert_int_equal(collect_target_parse("dcgm:[::1]", 9405, NULL, &t, &e), 0);
    assert_string_equal(t.name, "dcgm:[::1]:9400");
    collect_target_done(&t);

    /* the host named dcgm at a port: a plain target */
    assert_int_equal(collect_target_parse("dcgm:9405", 1, NULL, &t, &e), 0);
    assert_false(t.dcgm);
    assert_string_equal(t.url, "http://dcgm:9405/metrics");
    collect_target_done(&t);
    assert_int_equal(collect_target_parse("plain:9405", 1, NULL, &t, &e), 0);
    assert_false(t.dcgm);
    collect_target_done(&t);

    assert_int_equal(collect_target_parse("dcgm:h:0", 9405, NULL, &t, &e), -EINVAL);
    assert_string_equal(e.msg, "bad target 'dcgm:h:0': port '0' is not 1..65535");
    assert_int_equal(collect_target_parse("dcgm:", 9405, NULL, &t, &e), -EINVAL);
    assert_string_equal(e.msg, "bad target 'dcgm:': no host after 'dcgm:'");
    assert_int_equal(collect_target_parse("dcgm:h:x", 9405, NULL, &t, &e), -EINVAL);
    assert_string_equal(e.msg, "bad target 'dcgm:h:x': port 'x' is not 1..65535");
    assert_int_equal(collect_target_parse("dcgm:ftp://h", 9405, NULL, &t, &e), -EINVAL);
    assert_string_equal(e.msg, "bad target 'dcgm:ftp://h': only http:// and https:// URLs");

    /* a targets file line goes through the same parse; listed twice is refused */
    struct collect_targets ts = {0};
    assert_int_equal(collect_targets_add(&ts, "dcgm:a", 9405, NULL, "", &e), 0);
    assert_int_equal(collect_targets_add(&ts, "a:9400", 9405, NULL, "f:2: ", &e), -EINVAL);
    assert_string_equal(e.msg, "f:2: target 'a:9400' is given twice (http://a:9400/metrics)");
    collect_targets_free(&ts);
}

static void test_dcgm_rows(void **state)
{
    (void)state;
    static const char body[] =
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"pod-1\"} 250.500000\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"pod-1\"} "
        "140737488355328.000000\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\",GPU_I_PROFILE=\"3g.40gb\","
        "GPU_I_ID=\"2\",Hostname=\"pod-1\"} 99.000000\n"
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"pod-1\"} "
        "4335301032\n"
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"pod-1\"} "
        "1500\n";
    struct prom_doc doc = {0};
    struct carma_err e = {0};
    assert_int_equal(prom_parse(body, strlen(body), NULL, &doc, &e), 0);
    assert_true(dcgm_is_body(&doc));
    static struct dcgm_scrape d;
    dcgm_parse(&doc, &d);

    struct collect_out *o = collect_out_open(tu_dir, COLLECT_SAMPLES, &e);
    assert_non_null(o);
    collect_out_cycle_begin(o, 3);
    struct collect_scrape_info info;
    collect_out_dcgm(o, 1796000000123456LL * 1000, "n1", "dcgm:n1:9400", &d, &info);
    assert_int_equal(info.power_rows, 3);
    assert_null(info.node_label);
    collect_out_dcgm(o, 1796000000500000LL * 1000, "n2", "dcgm:n2:9400", NULL, &info);
    assert_int_equal(info.power_rows, 0);
    assert_int_equal(collect_out_cycle_end(o, &e), 0);
    assert_int_equal(collect_out_rows(o), 4);
    assert_int_equal(collect_out_close(o, &e), 0);
    prom_doc_free(&doc);

    static char text[8192];
    char path[TU_DIR_MAX + 32];
    snprintf(path, sizeof path, "%s/samples.csv", tu_dir);
    tu_slurp(path, text, sizeof text);
    assert_string_equal(text,
                        "schema_version,timestamp_unix,scrape_seq,node,target,channel,source,kind,"
                        "domain,method,watts,joules_total\r\n"
                        "1,1796000000.123456,3,n1,dcgm:n1:9400,dcgm/gpu0,dcgm,gpu,total,measured,"
                        "250.5,4335301.032\r\n"
                        "1,1796000000.123456,3,n1,dcgm:n1:9400,dcgm/gpu1,dcgm,gpu,total,measured,"
                        ",1.5\r\n"
                        "1,1796000000.123456,3,n1,dcgm:n1:9400,dcgm/gpu1/mig2,dcgm,gpu,component,"
                        "measured,99,\r\n"
                        "1,1796000000.500000,3,n2,dcgm:n2:9400,,,,,,,\r\n");
    snprintf(path, sizeof path, "%s/nodes.csv", tu_dir);
    tu_slurp(path, text, sizeof text);
    assert_non_null(strstr(text, "\r\n1,1796000000.123456,3,n1,dcgm:n1:9400,,,,,,,,\r\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dcgm_targets),
        cmocka_unit_test_setup_teardown(test_dcgm_rows, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
