/*
 * test_meter: wall power meters: the spec parser, the Watts Up? record parser and framer
 * (valid records, garbage, partial lines, field counts), the cmd meter's number parser
 * (ipmitool's output), and the source through the sampler: a cmd meter, a Watts Up? on a pty
 * answered by a thread of this test (unplugged: no reading, never 0 W), the node selection
 * with a meter, and the errors that name the device.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "sampler/sampler.h"
#include "sources/meter.h"
#include "testutil.h"

#define REC_1234                                                                                   \
    "#d,-,18,1234,2301,652,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_;" /* 123.4 W, 230.1 V, 0.652 A */

/* ---- specs ---- */

static void test_spec_valid(void **state)
{
    (void)state;
    struct meter_spec sp;
    char err[256];
    assert_int_equal(meter_spec_parse("wattsup:/dev/ttyUSB0", &sp, err, sizeof err), 0);
    assert_int_equal(sp.type, METER_WATTSUP);
    assert_string_equal(sp.arg, "/dev/ttyUSB0");
    /* everything after the first ':' is the command, colons included */
    assert_int_equal(
        meter_spec_parse("cmd:ipmitool dcmi power reading | grep a:b", &sp, err, sizeof err), 0);
    assert_int_equal(sp.type, METER_CMD);
    assert_string_equal(sp.arg, "ipmitool dcmi power reading | grep a:b");
}

static void test_spec_errors(void **state)
{
    (void)state;
    struct meter_spec sp = {.type = METER_CMD, .arg = "untouched"};
    char err[256];
    assert_int_equal(meter_spec_parse("/dev/ttyUSB0", &sp, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "not TYPE:ARGUMENT"));
    assert_int_equal(meter_spec_parse("killawatt:/dev/x", &sp, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "unknown meter type 'killawatt'"));
    assert_int_equal(meter_spec_parse("wattsup:", &sp, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "no device"));
    assert_int_equal(meter_spec_parse("cmd:   ", &sp, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "no command"));
    char longdev[400] = "wattsup:/dev/";
    memset(longdev + strlen(longdev), 'x', 300);
    longdev[sizeof longdev - 1] = '\0';
    assert_int_equal(meter_spec_parse(longdev, &sp, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "longer than"));
    assert_int_equal(meter_spec_parse(NULL, &sp, err, sizeof err), -EINVAL);
    /* *ret untouched on failure */
    assert_int_equal(sp.type, METER_CMD);
    assert_string_equal(sp.arg, "untouched");
}

/* ---- records ---- */

static int parse(const char *pkt, struct meter_record *r)
{
    return wattsup_parse_packet(pkt, strlen(pkt), r);
}

static void test_record_valid(void **state)
{
    (void)state;
    struct meter_record r;
    assert_int_equal(parse(REC_1234, &r), 0);
    tu_assert_near(r.watts, 123.4, 1e-12);
    tu_assert_near(r.volts, 230.1, 1e-12);
    tu_assert_near(r.amps, 0.652, 1e-12);
    /* the count says how many fields follow; a meter set to fewer fields sends fewer */
    assert_int_equal(parse("#d,_,3,5,1200,41;", &r), 0);
    tu_assert_near(r.watts, 0.5, 1e-12);
    tu_assert_near(r.volts, 120.0, 1e-12);
    tu_assert_near(r.amps, 0.041, 1e-12);
    /* volts and amps not selected */
    assert_int_equal(parse("#d,-,18,0,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_;", &r), 0);
    tu_assert_near(r.watts, 0.0, 0);
    assert_true(isnan(r.volts) && isnan(r.amps));
}

static void test_record_bad(void **state)
{
    (void)state;
    struct meter_record r = {.watts = -1};
    /* field counts */
    assert_int_equal(parse("#d,-,18,1234,2301,652;", &r), -EINVAL);
    assert_int_equal(parse("#d,-,2,1234,2301,652;", &r), -EINVAL);
    assert_int_equal(parse("#d,-,18,1234;", &r), -EINVAL);
    assert_int_equal(parse("#d;", &r), -EINVAL);
    /* more fields than a record has (a 256-byte packet of commas from a noisy line): refused,
     * not written past the parser's field table */
    char many[WATTSUP_PACKET_MAX + 1];
    many[0] = '#';
    many[1] = 'd';
    memset(many + 2, ',', WATTSUP_PACKET_MAX - 3);
    many[WATTSUP_PACKET_MAX - 1] = ';';
    many[WATTSUP_PACKET_MAX] = '\0';
    assert_int_equal(wattsup_parse_packet(many, WATTSUP_PACKET_MAX, &r), -EINVAL);
    /* numbers: ASCII digits only; watts required */
    assert_int_equal(parse("#d,-,3,12.5,2301,652;", &r), -EINVAL);
    assert_int_equal(parse("#d,-,3,-5,2301,652;", &r), -EINVAL);
    assert_int_equal(parse("#d,-,3,_,2301,652;", &r), -EINVAL);
    assert_int_equal(parse("#d,-,3,,2301,652;", &r), -EINVAL);
    assert_int_equal(parse("#d,-,3,15,2x01,652;", &r), -EINVAL);
    assert_int_equal(parse("#d,-,x,15,2301,652;", &r), -EINVAL);
    /* framing */
    assert_int_equal(parse("#d,-,3,15,2301,652", &r), -EINVAL);
    assert_int_equal(parse("d,-,3,15,2301,652;", &r), -EINVAL);
    assert_int_equal(parse("#;", &r), -EINVAL);
    assert_int_equal(parse("#dd,-,3,15,2301,652;", &r), -EINVAL);
    /* a reply of the meter, not a data record */
    assert_int_equal(parse("#s,-,1,1;", &r), -ENOMSG);
    assert_int_equal(parse("#h,-,18,W,V,A,WH,Cost,WH/Mo,Cost/Mo,Wmax,Vmax,Amax,Wmin,Vmin,Amin,PF,"
                           "DC,PC,HZ,VA;",
                           &r),
                     -ENOMSG);
    tu_assert_near(r.watts, -1, 0); /* untouched */
}

/* A NUL byte from a noisy line inside a packet: garbage, not a record whose last field ends at
 * the NUL (found by fuzz/fuzz_wattsup.c). */
static void test_record_nul(void **state)
{
    (void)state;
    struct meter_record r = {.watts = -1};
    static const char pkt[] = "#d,-,3,1234,2301,652\0junk,x,y;";
    assert_int_equal(wattsup_parse_packet(pkt, sizeof pkt - 1, &r), -EINVAL);
    static const char reply[] = "#s,-,1,1\0x;";
    assert_int_equal(wattsup_parse_packet(reply, sizeof reply - 1, &r), -EINVAL);
    tu_assert_near(r.watts, -1, 0);
    /* through the framer too */
    struct wattsup_framer f;
    wattsup_framer_init(&f);
    int records = 0, garbage = 0;
    for (size_t i = 0; i < sizeof pkt - 1; i++) {
        enum wattsup_event ev = wattsup_framer_push(&f, pkt[i], &r);
        records += ev == WATTSUP_RECORD;
        garbage += ev == WATTSUP_GARBAGE;
    }
    assert_int_equal(records, 0);
    assert_int_equal(garbage, 1);
}

struct feed_result {
    int records, garbage, other;
    double watts[16];
};

static struct feed_result feed(struct wattsup_framer *f, const char *text)
{
    struct feed_result res = {0};
    for (const char *p = text; *p; p++) {
        struct meter_record r;
        switch (wattsup_framer_push(f, *p, &r)) {
        case WATTSUP_RECORD:
            if (res.records < 16)
                res.watts[res.records] = r.watts;
            res.records++;
            break;
        case WATTSUP_GARBAGE:
            res.garbage++;
            break;
        case WATTSUP_OTHER:
            res.other++;
            break;
        case WATTSUP_NONE:
            break;
        }
    }
    return res;
}

static void test_framer_stream(void **state)
{
    (void)state;
    struct wattsup_framer f;
    wattsup_framer_init(&f);
    struct feed_result r = feed(&f, "\r\n" REC_1234 "\r\n"
                                    "hello noise\r\n"                 /* garbage line */
                                    "#d,-,18,1500,2301\r\n"           /* cut by the line end */
                                    "#d,-,3,99,1,2;#d,-,3,100,1,2;\n" /* two on one line */
                                    "#s,-,1,1;\r\n"                   /* a reply: ignored */
                                    "junk #d,-,3,7,1,2;\r\n"          /* junk, then a record */
                                    "#d,-,3,xx,1,2;\r\n"              /* malformed record */
                                    "   \t\r\n\r\n");                 /* blank lines: nothing */
    assert_int_equal(r.records, 4);
    tu_assert_near(r.watts[0], 123.4, 1e-12);
    tu_assert_near(r.watts[1], 9.9, 1e-12);
    tu_assert_near(r.watts[2], 10.0, 1e-12);
    tu_assert_near(r.watts[3], 0.7, 1e-12);
    assert_int_equal(r.garbage, 4);
    assert_int_equal(r.other, 1);
}

static void test_framer_partial(void **state)
{
    (void)state;
    struct wattsup_framer f;
    wattsup_framer_init(&f);
    /* a record arriving in pieces (serial reads cut anywhere) */
    struct feed_result r = feed(&f, "#d,-,3,4");
    assert_int_equal(r.records + r.garbage, 0);
    r = feed(&f, "21,2300,");
    assert_int_equal(r.records + r.garbage, 0);
    r = feed(&f, "1830;");
    assert_int_equal(r.records, 1);
    tu_assert_near(r.watts[0], 42.1, 1e-12);
    /* a packet interrupted by the next one: the first is garbage, the second counts */
    r = feed(&f, "#d,-,3,1#d,-,3,20,1,2;");
    assert_int_equal(r.garbage, 1);
    assert_int_equal(r.records, 1);
    tu_assert_near(r.watts[0], 2.0, 1e-12);
    /* an endless packet: one garbage line, then the stream recovers at the next line */
    char big[WATTSUP_PACKET_MAX * 3];
    big[0] = '#';
    memset(big + 1, '1', sizeof big - 2);
    big[sizeof big - 1] = '\0';
    r = feed(&f, big);
    assert_int_equal(r.garbage, 1);
    r = feed(&f, ";;;\r\n#d,-,3,30,1,2;\r\n");
    assert_int_equal(r.garbage, 0);
    assert_int_equal(r.records, 1);
    tu_assert_near(r.watts[0], 3.0, 1e-12);
}

/* ---- the cmd meter's number ---- */

static int watts(const char *text, double *w)
{
    return meter_parse_watts(text, strlen(text), w);
}

static void test_parse_watts(void **state)
{
    (void)state;
    double w = -1;
    const char *ipmitool = "    Instantaneous power reading:                   220 Watts\n"
                           "    Minimum during sampling period:                 58 Watts\n"
                           "    Maximum during sampling period:                275 Watts\n"
                           "    Average power reading over sample period:      214 Watts\n"
                           "    IPMI timestamp:                           Thu Jan  1 00:00:00 "
                           "2020\n"
                           "    Sampling period:                          00000001 Seconds.\n"
                           "    Power reading state is:                   activated\n";
    assert_int_equal(watts(ipmitool, &w), 0);
    tu_assert_near(w, 220, 0);
    assert_int_equal(watts("123.5\n", &w), 0);
    tu_assert_near(w, 123.5, 1e-12);
    assert_int_equal(watts("P=1.5e2W", &w), 0);
    tu_assert_near(w, 150, 1e-12);
    assert_int_equal(watts(".5 kW", &w), 0);
    tu_assert_near(w, 0.5, 1e-12);
    /* digits inside a word are not the number */
    assert_int_equal(watts("sensor2 psu_1 v1.5: 87 W", &w), 0);
    tu_assert_near(w, 87, 0);
    /* "e" not followed by digits ends the number */
    assert_int_equal(watts("42e W", &w), 0);
    tu_assert_near(w, 42, 0);
    w = -1;
    assert_int_equal(watts("no number here", &w), -EINVAL);
    assert_int_equal(watts("", &w), -EINVAL);
    assert_int_equal(watts("2000000 W", &w), -ERANGE);
    assert_int_equal(watts("1e400", &w), -ERANGE);
    tu_assert_near(w, -1, 0); /* untouched */
    /* only len bytes are read */
    assert_int_equal(meter_parse_watts("abc 77", 4, &w), -EINVAL);
    /* no meter draws negative watts: "-5 W" holds no reading */
    assert_int_equal(watts("-5 W", &w), -EINVAL);
}

/* ---- the source through the sampler ---- */

static struct sampler *sampler_with(const char *meter, const char *fixture)
{
    static char root[TU_DIR_MAX + 64];
    tu_fixture_path(root, sizeof root, fixture);
    struct sampler_opts o = {.root = root, .interval_ns = 10 * NS_PER_MS};
    o.model.idle_w = -1;
    o.model.idle_fraction = 0.12;
    o.meters[0] = meter;
    o.n_meters = 1;
    return tu_sampler_new(&o);
}

static const struct source *meter_src(const struct sampler *s)
{
    for (size_t i = 0; i < s->nsrc; i++)
        if (meter_source_is(&s->src[i]))
            return &s->src[i];
    fail_msg("no meter source");
    return NULL;
}

static void test_cmd_meter(void **state)
{
    (void)state;
    struct sampler *s =
        sampler_with("cmd:echo 'Instantaneous power reading:   87.5 Watts'", "intel-2s");
    const struct source *src = meter_src(s);
    assert_int_equal(src->status, 0);
    int i = tu_channel_index(&s->set, "meter/cmd");
    const struct channel *c = &s->set.ch[i];
    assert_int_equal(c->kind, KIND_SYSTEM);
    assert_int_equal(c->domain, DOMAIN_TOTAL);
    assert_int_equal(c->form, FORM_GAUGE);
    assert_int_equal(c->method, METHOD_MEASURED);
    sampler_tick(s);
    assert_true(s->st[i].tick_valid);
    tu_assert_near(s->st[i].watts, 87.5, 1e-12);
    /* the node is the meter alone; the RAPL totals are what it contains */
    int idx[CHANNELS_MAX];
    assert_int_equal(sampler_select_node(s, idx), 1);
    assert_int_equal(idx[0], i);
    size_t n = sampler_select_metered(s, idx);
    assert_int_equal(n, 4); /* two packages, two drams */
    for (size_t k = 0; k < n; k++)
        assert_string_equal(s->set.ch[idx[k]].source, "rapl");
    n = sampler_select_cpu(s, idx);
    for (size_t k = 0; k < n; k++)
        assert_int_not_equal(idx[k], i);
    struct meter_stats st;
    assert_int_equal(meter_stats_get(src, &st), 0);
    assert_string_equal(st.spec, "cmd:echo 'Instantaneous power reading:   87.5 Watts'");
    assert_true(st.records >= 1);
    sampler_free(s);
}

/* Without any CPU sensor (a VM), the model estimates the CPU and the meter is no CPU channel. */
static void test_meter_not_cpu(void **state)
{
    (void)state;
    struct sampler *s = sampler_with("cmd:echo 60", "vm-empty");
    int i = tu_channel_index(&s->set, "meter/cmd");
    int idx[CHANNELS_MAX];
    size_t n = sampler_select_cpu(s, idx);
    for (size_t k = 0; k < n; k++) {
        assert_int_not_equal(idx[k], i);
        assert_int_equal(s->set.ch[idx[k]].method, METHOD_ESTIMATED);
    }
    assert_int_equal(sampler_select_metered(s, idx), 0);
    sampler_free(s);
}

static void test_meter_errors(void **state)
{
    (void)state;
    struct {
        const char *spec, *want;
    } cases[] = {
        {"cmd:echo no power here", "printed no number: 'no power here'"},
        {"cmd:echo oops >&2; exit 3", "exited with status 3: oops"},
        {"wattsup:/nonexistent/ttyUSB7", "cannot open /nonexistent/ttyUSB7: No such file"},
        {"wattsup:/dev/null", "/dev/null is not a serial port"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct sampler *s = sampler_with(cases[k].spec, "intel-2s");
        const struct source *src = meter_src(s);
        assert_true(src->status < 0);
        if (!strstr(src->reason, cases[k].want))
            fail_msg("%s: reason '%s' lacks '%s'", cases[k].spec, src->reason, cases[k].want);
        /* the spec leads the reason: the CLI prints it as is */
        assert_int_equal(strncmp(src->reason, cases[k].spec, strlen(cases[k].spec)), 0);
        assert_int_equal(tu_channel_index(&s->set, "meter/cmd") < 0 &&
                             tu_channel_index(&s->set, "meter/wattsup") < 0,
                         1);
        sampler_free(s);
    }
}

/* The meter's side of a pty: answers the logging command with records until told to unplug. */
struct fake_meter {
    int master;
    volatile int unplug;
    int got_command;
};

static void *fake_meter_main(void *arg)
{
    struct fake_meter *fm = arg;
    char cmd[64];
    size_t len = 0;
    while (!fm->got_command) {
        struct pollfd p = {.fd = fm->master, .events = POLLIN};
        if (poll(&p, 1, 5000) <= 0)
            return NULL;
        char c;
        if (read(fm->master, &c, 1) != 1) {
            tu_pause_ms(5);
            continue;
        }
        if (c == '#')
            len = 0;
        if (len + 1 < sizeof cmd)
            cmd[len++] = c;
        cmd[len] = '\0';
        if (strcmp(cmd, WATTSUP_LOG_COMMAND) == 0)
            fm->got_command = 1;
    }
    while (!fm->unplug) {
        const char *rec = "junk\r\n" REC_1234 "\r\n";
        if (write(fm->master, rec, strlen(rec)) < 0)
            break;
        tu_pause_ms(20);
    }
    close(fm->master);
    return NULL;
}

static void test_wattsup_pty(void **state)
{
    (void)state;
    struct fake_meter fm = {0};
    fm.master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    assert_true(fm.master >= 0);
    assert_int_equal(grantpt(fm.master), 0);
    assert_int_equal(unlockpt(fm.master), 0);
    char spec[160] = "wattsup:";
    assert_int_equal(ptsname_r(fm.master, spec + 8, sizeof spec - 8), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fake_meter_main, &fm), 0);
    struct sampler *s = sampler_with(spec, "intel-2s");
    const struct source *src = meter_src(s);
    if (src->status != 0)
        fail_msg("%s", src->reason);
    assert_true(fm.got_command);
    int i = tu_channel_index(&s->set, "meter/wattsup");
    sampler_tick(s);
    assert_true(s->st[i].tick_valid);
    tu_assert_near(s->st[i].watts, 123.4, 1e-12);
    tu_pause_ms(100);
    struct meter_stats st;
    assert_int_equal(meter_stats_get(src, &st), 0);
    assert_true(st.records >= 2);
    assert_true(st.garbage >= 1); /* the "junk" lines */
    assert_true(st.connected);
    /* unplugged: the reading is missing at once (never 0 W), and the loss counted */
    fm.unplug = 1;
    pthread_join(th, NULL);
    bool gone = false;
    for (int k = 0; k < 100 && !gone; k++) {
        tu_pause_ms(10);
        sampler_tick(s);
        gone = !s->st[i].tick_valid;
    }
    assert_true(gone);
    assert_int_equal(s->st[i].last_err, -ENODEV);
    assert_true(isnan(s->st[i].watts));
    assert_true(s->st[i].min_w > 100);
    assert_int_equal(meter_stats_get(src, &st), 0);
    assert_int_equal(st.disconnects, 1);
    assert_false(st.connected);
    sampler_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_valid),     cmocka_unit_test(test_spec_errors),
        cmocka_unit_test(test_record_valid),   cmocka_unit_test(test_record_bad),
        cmocka_unit_test(test_record_nul),     cmocka_unit_test(test_framer_stream),
        cmocka_unit_test(test_framer_partial), cmocka_unit_test(test_parse_watts),
        cmocka_unit_test(test_cmd_meter),      cmocka_unit_test(test_meter_not_cpu),
        cmocka_unit_test(test_meter_errors),   cmocka_unit_test(test_wattsup_pty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
