/*
 * Tests for report/live's open windows: marks.csv followed (live_marks_poll: a begin opens, an
 * end or unended row of the same id and name closes; a torn last line awaited while followed,
 * skipped with one warning once not; an end before its begin, a second begin, an end of another
 * name skipped with a warning; a file replaced; at most LIVE_WINDOWS_MAX shown, the oldest
 * first, the rest counted; a bad row refused as carma report refuses it), the node's energy
 * at a begin from the ticks given (interpolated, the first tick's for a begin before it, a begin
 * after the last tick awaiting the next, unknown when the channels changed or the tick before it
 * is forgotten), and live_reader's node figure from samples.csv (sampler_select_node's choice:
 * a wall meter alone; else the measured totals and the estimates of kinds nothing measures).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/live.h"

#define MARKS_HEADER                                                                               \
    "schema_version,event,id,name,timestamp_unix,pid,workload,tokens,requests,value\r\n"
#define SAMPLES_HEADER                                                                             \
    "timestamp_unix,timestamp_local,channel,source,kind,domain,method,watts,joules_total\r\n"

static struct live_view view;

/* Polls m on tu_dir and fills view at now; the poll's return. */
static int poll_view(struct live_marks *m, bool follow, double now, struct carma_err *e)
{
    int r = live_marks_poll(m, tu_dir, follow, e);
    memset(&view, 0, sizeof view);
    live_marks_view(m, &view, now);
    return r;
}

/* The names of the windows shown, comma-separated, then "+N" when more are counted. */
static const char *shown(void)
{
    static char buf[512];
    size_t o = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < view.nwindows; k++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", k ? "," : "", view.window[k].name);
    if (view.windows_more)
        snprintf(buf + o, sizeof buf - o, "+%zu", view.windows_more);
    return buf;
}

static void no_file(void **state)
{
    (void)state;
    struct live_marks m = {0};
    struct carma_err e = {0};
    assert_int_equal(poll_view(&m, true, 10, &e), 0);
    assert_int_equal(view.nwindows, 0);
    assert_string_equal(m.warning, "");
    /* created empty (its header not yet written): awaited while followed, refused once not */
    tu_put("marks.csv", "");
    assert_int_equal(poll_view(&m, true, 10, &e), 0);
    tu_put("marks.csv", "schema_version,event,id,na");
    assert_int_equal(poll_view(&m, true, 10, &e), 0);
    assert_int_equal(poll_view(&m, false, 10, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "marks.csv: empty file (no header)"));
    tu_put("marks.csv", "a,b\r\n");
    assert_int_equal(poll_view(&m, true, 10, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "marks.csv:1: no column 'schema_version'"));
    live_marks_free(&m);
}

static void open_and_close(void **state)
{
    (void)state;
    struct live_marks m = {0};
    struct carma_err e = {0};
    tu_put("marks.csv", MARKS_HEADER "1,begin,1,outer,100.000000,7,a,,,\r\n"
                                     "1,begin,2,inner,101.000000,7,a,5,,\r\n"
                                     "1,event,,loss,101.500000,7,a,,,0.25\r\n"
                                     "1,begin,3,\"x,\"\"y\"\"\",102.000000,8,,,,\r\n"
                                     "1,end,2,inner,103.000000,9,b,,,\r\n"
                                     "1,begin,4,left,103.5");
    assert_int_equal(poll_view(&m, true, 110, &e), 0);
    assert_string_equal(shown(), "outer,x,\"y\"");
    assert_int_equal(view.window[0].id, 1);
    assert_string_equal(view.window[0].workload, "a");
    assert_string_equal(view.window[1].workload, "");
    tu_assert_near(view.window[0].begin_unix, 100, 1e-9);
    tu_assert_near(view.window[0].open_s, 10, 1e-9);
    tu_assert_near(view.window[1].open_s, 8, 1e-9);
    assert_true(isnan(view.window[0].energy_j)); /* no tick given */
    assert_string_equal(m.warning, "");          /* the torn line is awaited, not said */
    /* the torn line made whole, unended closes (at the end of carma's measurement) */
    tu_put("marks.csv", MARKS_HEADER "1,begin,1,outer,100.000000,7,a,,,\r\n"
                                     "1,begin,2,inner,101.000000,7,a,5,,\r\n"
                                     "1,event,,loss,101.500000,7,a,,,0.25\r\n"
                                     "1,begin,3,\"x,\"\"y\"\"\",102.000000,8,,,,\r\n"
                                     "1,end,2,inner,103.000000,9,b,,,\r\n"
                                     "1,begin,4,left,103.500000,7,a,,,\r\n"
                                     "1,unended,1,outer,104.000000,,,,,\r\n");
    assert_int_equal(poll_view(&m, true, 105, &e), 0);
    assert_string_equal(shown(), "x,\"y\",left");
    tu_assert_near(view.window[1].open_s, 1.5, 1e-9);
    assert_int_equal(m.line, 8);
    /* a window that began after now (clocks): open 0 s */
    assert_int_equal(poll_view(&m, true, 103, &e), 0);
    tu_assert_near(view.window[1].open_s, 0, 0);
    /* a file replaced by a shorter one: read again from its start */
    tu_put("marks.csv", MARKS_HEADER "1,begin,1,new,200.000000,7,a,,,\r\n");
    assert_int_equal(poll_view(&m, true, 201, &e), 0);
    assert_string_equal(shown(), "new");
    live_marks_free(&m);
}

static void torn_when_ended(void **state)
{
    (void)state;
    struct live_marks m = {0};
    struct carma_err e = {0};
    tu_put("marks.csv", MARKS_HEADER "1,begin,1,a,100.000000,7,a,,,\r\n"
                                     "1,end,1,a,101.0");
    assert_int_equal(poll_view(&m, true, 102, &e), 0);
    assert_string_equal(shown(), "a");
    assert_string_equal(m.warning, "");
    assert_int_equal(poll_view(&m, false, 102, &e), 0);
    assert_string_equal(shown(), "a"); /* the torn end is no end */
    char want[4400];
    snprintf(want, sizeof want,
             "%s/marks.csv:3: the last line has no line end (cut short by a crash or a copy): it "
             "is skipped",
             tu_dir);
    assert_string_equal(m.warning, want);
    m.warning[0] = '\0';
    assert_int_equal(poll_view(&m, false, 102, &e), 0);
    assert_string_equal(m.warning, ""); /* said once */
    live_marks_free(&m);
}

static void odd_rows(void **state)
{
    (void)state;
    struct live_marks m = {0};
    struct carma_err e = {0};
    /* an end before its begin: the begin opens nothing; an end of another name than the
     * window of its id; a second begin of an open id; an end of a window that ended already */
    tu_put("marks.csv", MARKS_HEADER "1,end,5,ghost,100.000000,7,a,,,\r\n"
                                     "1,begin,1,a,100.100000,7,a,,,\r\n"
                                     "1,begin,5,ghost,100.200000,7,a,,,\r\n"
                                     "1,end,1,b,100.300000,7,a,,,\r\n"
                                     "1,begin,2,c,100.500000,7,a,,,\r\n"
                                     "1,begin,2,c,100.550000,7,a,,,\r\n"
                                     "1,begin,3,d,100.600000,7,a,,,\r\n"
                                     "1,end,3,d,100.650000,7,a,,,\r\n"
                                     "1,end,3,d,100.700000,7,a,,,\r\n");
    assert_int_equal(poll_view(&m, true, 101, &e), 0);
    assert_string_equal(shown(), "a,c");
    tu_assert_near(view.window[1].begin_unix, 100.5, 1e-9); /* its first begin's */
    char want[4400];
    snprintf(want, sizeof want,
             "%s/marks.csv:2: id 5: an end of no open window (no begin row before it, or ended "
             "already): the row is skipped",
             tu_dir);
    assert_string_equal(m.warning, want); /* the first one said */
    /* a bad row is refused, as every reader refuses it */
    tu_put("marks.csv", MARKS_HEADER "1,end,5,ghost,100.000000,7,a,,,\r\n"
                                     "1,begin,1,a,100.100000,7,a,,,\r\n"
                                     "1,begin,5,ghost,100.200000,7,a,,,\r\n"
                                     "1,end,1,b,100.300000,7,a,,,\r\n"
                                     "1,begin,2,c,100.500000,7,a,,,\r\n"
                                     "1,begin,2,c,100.550000,7,a,,,\r\n"
                                     "1,begin,3,d,100.600000,7,a,,,\r\n"
                                     "1,end,3,d,100.650000,7,a,,,\r\n"
                                     "1,end,3,d,100.700000,7,a,,,\r\n"
                                     "1,stop,4,e,100.800000,7,a,,,\r\n");
    assert_int_equal(poll_view(&m, true, 101, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "marks.csv:11: event: 'stop' is not begin, end, event or"));
    live_marks_free(&m);
}

static void bounded(void **state)
{
    (void)state;
    struct live_marks m = {0};
    struct carma_err e = {0};
    char buf[8192];
    size_t o = (size_t)snprintf(buf, sizeof buf, "%s", MARKS_HEADER);
    for (int k = 1; k <= 12; k++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "1,begin,%d,w%d,%d.000000,7,a,,,\r\n", k, k,
                              100 + k);
    o += (size_t)snprintf(buf + o, sizeof buf - o, "1,end,2,w2,120.000000,7,a,,,\r\n");
    tu_put("marks.csv", buf);
    assert_int_equal(poll_view(&m, true, 130, &e), 0);
    assert_string_equal(shown(), "w1,w3,w4,w5,w6,w7,w8,w9+3");
    live_marks_free(&m);
}

static void energy_at_begin(void **state)
{
    (void)state;
    struct live_marks m = {0};
    struct carma_err e = {0};
    /* ticks at 100, 101, 102: 100 W */
    tu_put("marks.csv", MARKS_HEADER "1,begin,1,early,99.000000,7,a,,,\r\n"
                                     "1,begin,2,mid,100.250000,7,a,,,\r\n");
    assert_int_equal(poll_view(&m, true, 100, &e), 0);
    live_marks_point(&m, 100, 1000, 1, false);
    live_marks_point(&m, 101, 1100, 1, false);
    live_marks_point(&m, 102, 1200, 1, true);
    memset(&view, 0, sizeof view);
    live_marks_view(&m, &view, 102.5);
    tu_assert_near(view.window[0].energy_j, 200, 1e-9); /* from the first tick */
    tu_assert_near(view.window[1].energy_j, 175, 1e-9);
    assert_true(view.window[1].estimated); /* the last tick's figure has a model's channel */
    /* begins read after their ticks (from the ring); one after the last tick awaits the next */
    tu_put("marks.csv", MARKS_HEADER "1,begin,1,early,99.000000,7,a,,,\r\n"
                                     "1,begin,2,mid,100.250000,7,a,,,\r\n"
                                     "1,begin,3,late,101.500000,7,a,,,\r\n"
                                     "1,begin,4,exact,102.000000,7,a,,,\r\n"
                                     "1,begin,5,next,102.750000,7,a,,,\r\n");
    assert_int_equal(poll_view(&m, true, 102.8, &e), 0);
    tu_assert_near(view.window[2].energy_j, 50, 1e-9);
    tu_assert_near(view.window[3].energy_j, 0, 0);
    assert_true(isnan(view.window[4].energy_j));
    live_marks_point(&m, 103, 1300, 1, false);
    memset(&view, 0, sizeof view);
    live_marks_view(&m, &view, 103);
    tu_assert_near(view.window[4].energy_j, 25, 1e-9);
    tu_assert_near(view.window[0].energy_j, 300, 1e-9);
    /* the channels changed: nothing rather than a wrong figure */
    live_marks_point(&m, 104, 5000, 2, false);
    memset(&view, 0, sizeof view);
    live_marks_view(&m, &view, 104);
    for (size_t k = 0; k < view.nwindows; k++)
        assert_true(isnan(view.window[k].energy_j));
    /* a begin between two ticks of different channels: unknown for good */
    tu_put("marks.csv", MARKS_HEADER "1,begin,6,across,103.500000,7,a,,,\r\n");
    assert_int_equal(poll_view(&m, true, 104, &e), 0);
    live_marks_point(&m, 105, 5100, 2, false);
    memset(&view, 0, sizeof view);
    live_marks_view(&m, &view, 105);
    assert_string_equal(shown(), "across");
    assert_true(isnan(view.window[0].energy_j));
    /* a begin row read after the tick before it has left the ring: unknown */
    for (int k = 0; k < LIVE_POINTS + 2; k++)
        live_marks_point(&m, 106 + k, 6000 + 100 * k, 2, false);
    tu_put("marks.csv", MARKS_HEADER "1,begin,6,across,103.500000,7,a,,,\r\n"
                                     "1,begin,7,old,106.500000,7,a,,,\r\n"
                                     "1,begin,8,recent,170.500000,7,a,,,\r\n");
    assert_int_equal(poll_view(&m, true, 172, &e), 0);
    assert_string_equal(shown(), "across,old,recent");
    assert_true(isnan(view.window[1].energy_j));
    tu_assert_near(view.window[2].energy_j, 50, 1e-6); /* between the ticks at 170 and 171 */
    live_marks_free(&m);
}

/* One tick of samples.csv: rows "channel,source,kind,domain,method,joules" (watts 1). */
static void tick_rows(char *buf, size_t cap, double t, const char *const *rows, size_t n)
{
    size_t o = strlen(buf);
    for (size_t k = 0; k < n; k++) {
        char ch[64], src[16], kind[16], dom[16], meth[16];
        double j;
        assert_int_equal(sscanf(rows[k], "%63[^,],%15[^,],%15[^,],%15[^,],%15[^,],%lf", ch, src,
                                kind, dom, meth, &j),
                         6);
        o += (size_t)snprintf(buf + o, cap - o, "%.6f,,%s,%s,%s,%s,%s,1.000000,%.6f\r\n", t, ch,
                              src, kind, dom, meth, j);
    }
}

static void reader_node(void **state)
{
    (void)state;
    static char buf[16384];
    buf[0] = '\0';
    snprintf(buf, sizeof buf, "%s", SAMPLES_HEADER);
    /* measured package 100 W, a GPU model 50 W (no GPU measured), a CPU model (left out: the
     * package measures the CPU) and a component */
    for (int k = 0; k < 4; k++) {
        char r0[128], r1[128], r2[128], r3[128];
        snprintf(r0, sizeof r0, "rapl/package-0,rapl,cpu,total,measured,%d", 100 * k);
        snprintf(r1, sizeof r1, "model/gpu0,model,gpu,total,estimated,%d", 50 * k);
        snprintf(r2, sizeof r2, "model/cpu0,model,cpu,total,estimated,%d", 7 * k);
        snprintf(r3, sizeof r3, "rapl/core-0,rapl,cpu,component,measured,%d", 30 * k);
        const char *rows[] = {r0, r1, r2, r3};
        tick_rows(buf, sizeof buf, 100 + k, rows, 4);
    }
    tu_put("samples.csv", buf);
    tu_put("marks.csv", MARKS_HEADER "1,begin,1,early,99.000000,7,a,,,\r\n"
                                     "1,begin,2,mid,100.500000,7,a,,,\r\n"
                                     "1,begin,3,late,103.500000,7,a,,,\r\n");
    struct live_reader rd;
    struct carma_err e = {0};
    assert_int_equal(live_reader_open(&rd, tu_dir, &e), 0);
    memset(&view, 0, sizeof view);
    assert_int_equal(live_reader_poll(&rd, &view, &e), 0);
    assert_int_equal(view.nwindows, 3);
    /* running (no manifest): the last tick is whole once the next one begins: tick 102's */
    tu_assert_near(view.window[0].energy_j, 300, 1e-6);
    tu_assert_near(view.window[1].energy_j, 225, 1e-6);
    assert_true(view.window[1].estimated);
    assert_true(isnan(view.window[2].energy_j));
    /* ended: the last tick counts, and the late window's begin has one after it */
    {
        char r0[] = "rapl/package-0,rapl,cpu,total,measured,400";
        char r1[] = "model/gpu0,model,gpu,total,estimated,200";
        char r2[] = "model/cpu0,model,cpu,total,estimated,28";
        char r3[] = "rapl/core-0,rapl,cpu,component,measured,120";
        const char *rows[] = {r0, r1, r2, r3};
        tick_rows(buf, sizeof buf, 104, rows, 4);
    }
    tu_put("samples.csv", buf);
    tu_put("manifest.json", "{\"status\": \"complete\"}");
    assert_int_equal(live_reader_poll(&rd, &view, &e), 0);
    assert_true(view.finished);
    tu_assert_near(view.window[0].energy_j, 600, 1e-6);
    tu_assert_near(view.window[1].energy_j, 525, 1e-6);
    tu_assert_near(view.window[2].energy_j, 75, 1e-6);
    tu_assert_near(view.window[2].open_s, 0.5, 1e-9); /* to the last tick, the run ended */
    live_reader_close(&rd);

    /* a wall meter: the node's figure alone */
    snprintf(buf, sizeof buf, "%s", SAMPLES_HEADER);
    for (int k = 0; k < 3; k++) {
        char r0[128], r1[128];
        snprintf(r0, sizeof r0, "meter/wattsup,meter,system,total,measured,%d", 400 * k);
        snprintf(r1, sizeof r1, "rapl/package-0,rapl,cpu,total,measured,%d", 100 * k);
        const char *rows[] = {r0, r1};
        tick_rows(buf, sizeof buf, 100 + k, rows, 2);
    }
    tu_put("samples.csv", buf);
    assert_int_equal(live_reader_open(&rd, tu_dir, &e), 0);
    assert_int_equal(live_reader_poll(&rd, &view, &e), 0);
    tu_assert_near(view.window[0].energy_j, 800, 1e-6);
    tu_assert_near(view.window[1].energy_j, 600, 1e-6);
    assert_false(view.window[1].estimated);
    live_reader_close(&rd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_file, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(open_and_close, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(torn_when_ended, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(odd_rows, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(bounded, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(energy_at_begin, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(reader_node, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
