/*
 * Unit tests for sampler/sampler and sampler/samples_csv: options, probing, counter
 * integration (deltas, wraps, resets, invalid readings and gaps), gauge integration by the
 * trapezoid rule, which channels are added up, and the samples journal.
 *
 * Each test copies a fixture tree into a mkdtemp() directory and rewrites its files in place
 * between ticks (the sources keep their files open and pread them at offset 0).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/energy.h"
#include "core/fmt.h"
#include "core/timeutil.h"
#include "sampler/sampler.h"
#include "sampler/samples_csv.h"
#include "testutil.h"

#define PC         "sys/class/powercap/"
#define PKG0       PC "intel-rapl:0/energy_uj"
#define PKG0_START 81234567890ULL
#define PKG_RANGE  262143328850ULL

/* The time the source was read on the tick before the last tick(): a channel's steps are
 * timed by its source's reads (sampler.h read_t), not by the tick's own time. */
static int64_t read_prev;

/* A tick a few ms after the previous one, so that every dt is well above zero. */
static void tick(struct sampler *s)
{
    tu_pause_ms(3);
    read_prev = s->read_t[0];
    sampler_tick(s);
}

static struct sampler *new_on(const char *sources)
{
    struct sampler_opts o = {.root = tu_dir, .sources = sources};
    o.model.idle_w = -1;
    o.model.idle_fraction = 0.12;
    return tu_sampler_new(&o);
}

static double dt_s(int64_t a, int64_t b)
{
    return (double)(b - a) / (double)NS_PER_S;
}

static void assert_rel(double got, double want)
{
    if (!(fabs(got - want) <= 1e-9 * fabs(want)))
        fail_msg("got %.17g, want %.17g", got, want);
}

/* ---- options ---- */

static void test_new_errors(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct carma_err e = {0};
    struct sampler_opts o = {.root = tu_dir, .sources = "rapl,foo"};
    assert_null(sampler_new(&o, &e));
    assert_int_equal(e.code, -EINVAL);
    assert_string_equal(e.msg,
                        "--sources: unknown source 'foo' (known: rapl, hwmon, nvml, dcgm, model)");

    memset(&e, 0, sizeof e);
    o.sources = "";
    assert_null(sampler_new(&o, &e));
    assert_int_equal(e.code, -EINVAL);

    /* interval bounds: 1 ms .. 60 s */
    o.sources = "rapl";
    static const int64_t bad[] = {999999, -1, SAMPLER_INTERVAL_MAX_NS + 1};
    for (size_t k = 0; k < 3; k++) {
        memset(&e, 0, sizeof e);
        o.interval_ns = bad[k];
        assert_null(sampler_new(&o, &e));
        assert_int_equal(e.code, -ERANGE);
        assert_non_null(strstr(e.msg, "--interval"));
    }
    static const int64_t good[] = {SAMPLER_INTERVAL_MIN_NS, SAMPLER_INTERVAL_MAX_NS, 0};
    static const int64_t got[] = {SAMPLER_INTERVAL_MIN_NS, SAMPLER_INTERVAL_MAX_NS,
                                  SAMPLER_INTERVAL_DEFAULT_NS};
    for (size_t k = 0; k < 3; k++) {
        o.interval_ns = good[k];
        struct sampler *s = sampler_new(&o, &e);
        assert_non_null(s);
        assert_int_equal(s->interval_ns, got[k]);
        sampler_free(s);
    }

    /* a root that does not exist */
    char missing[400];
    snprintf(missing, sizeof missing, "%s/nowhere", tu_dir);
    memset(&e, 0, sizeof e);
    o.root = missing;
    o.interval_ns = 0;
    assert_null(sampler_new(&o, &e));
    assert_int_equal(e.code, -ENOENT);
    assert_non_null(strstr(e.msg, missing));
    sampler_free(NULL);
}

static void test_probe_all_sources(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct sampler *s = new_on(NULL);
    assert_int_equal(s->nsrc, 5);
    assert_string_equal(s->src[0].ops->name, "rapl");
    assert_int_equal(s->src[0].status, 0);
    assert_int_equal(s->src[0].first, 0);
    assert_int_equal(s->src[0].count, 6);
    assert_string_equal(s->src[1].ops->name, "hwmon");
    assert_int_equal(s->src[1].status, -ENOENT);
    assert_int_equal(s->src[1].count, 0);
    assert_true(s->src[1].reason[0] != '\0');
    assert_string_equal(s->src[2].ops->name, "nvml");
    assert_int_equal(s->src[2].status, -ENOENT);
    assert_int_equal(s->src[2].count, 0);
    assert_true(s->src[2].reason[0] != '\0');
    assert_string_equal(s->src[3].ops->name, "dcgm");
    assert_int_equal(s->src[3].status, -ENOENT);
    assert_non_null(strstr(s->src[3].reason, "DCGM is not read below --root"));
    assert_string_equal(s->src[4].ops->name, "model");
    assert_int_equal(s->src[4].status, -ENOENT);
    assert_non_null(strstr(s->src[4].reason, "not needed"));
    assert_int_equal(s->set.n, 6);
    assert_true(s->have_util);
    for (size_t i = 0; i < s->set.n; i++) {
        assert_true(isnan(s->st[i].watts));
        assert_true(s->st[i].ctr.range == s->set.ch[i].counter_range);
        assert_true(s->st[i].ctr.max_power_w == channel_power_max_w(&s->set.ch[i]));
    }
    sampler_free(s);
}

/* ---- counters ---- */

static void test_counter_delta(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct sampler *s = new_on("rapl");
    int i = tu_channel_index(&s->set, "rapl/package-0");
    int d = tu_channel_index(&s->set, "rapl/package-1/dram");
    assert_int_equal(i, 0);
    sampler_tick(s);
    assert_int_equal(s->ticks, 1);
    assert_true(s->t_first == s->t_now && s->t_prev == s->t_now);
    assert_true(sampler_elapsed_s(s) == 0.0);
    /* the first reading only primes the counter */
    assert_true(s->st[i].tick_valid);
    assert_true(isnan(s->st[i].watts));
    assert_true(s->st[i].energy_j == 0.0);
    assert_int_equal(s->st[i].samples, 1);

    tu_put_u64(PKG0, PKG0_START + 1234567);
    tu_put_u64(PC "intel-rapl:1:1/energy_uj", 8234567890ULL + 250000);
    tick(s);
    double j = 1234567 * 1e-6;
    double dt = dt_s(read_prev, s->read_t[0]);
    assert_true(dt > 0);
    assert_true(s->st[i].tick_energy_j == j);
    assert_true(s->st[i].energy_j == j);
    assert_rel(s->st[i].watts, j / dt);
    assert_rel(s->st[d].energy_j, 0.25);
    assert_rel(s->st[d].watts, 0.25 / dt);
    /* unchanged counters: 0 W, measured */
    int core = tu_channel_index(&s->set, "rapl/package-0/core");
    assert_true(s->st[core].watts == 0.0);
    assert_true(s->st[core].energy_j == 0.0);

    int64_t t2 = s->read_t[0];
    tu_put_u64(PKG0, PKG0_START + 1234567 + 3000000);
    tick(s);
    double dt3 = dt_s(t2, s->read_t[0]);
    assert_rel(s->st[i].tick_energy_j, 3.0);
    assert_rel(s->st[i].energy_j, j + 3.0);
    assert_rel(s->st[i].watts, 3.0 / dt3);
    assert_int_equal(s->st[i].samples, 3);
    assert_int_equal(s->st[i].invalid, 0);
    assert_int_equal(s->st[i].wraps, 0);
    assert_int_equal(s->st[i].resets, 0);
    /* min and max over the ticks with a power figure */
    assert_true(s->st[i].min_w == fmin(j / dt, 3.0 / dt3));
    assert_true(s->st[i].max_w == fmax(j / dt, 3.0 / dt3));
    assert_int_equal(s->ticks, 3);
    assert_rel(sampler_elapsed_s(s), dt_s(s->t_first, s->t_now));
    assert_true(s->real_now >= s->real_first);
    sampler_free(s);
}

static void test_counter_wrap(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    tu_put_u64(PKG0, PKG_RANGE - 500000);
    struct sampler *s = new_on("rapl");
    sampler_tick(s);
    tu_put_u64(PKG0, 700000);
    tick(s);
    double dt = dt_s(read_prev, s->read_t[0]);
    /* 0.5 J up to the range, 0.7 J after it */
    assert_rel(s->st[0].tick_energy_j, 1.2);
    assert_rel(s->st[0].energy_j, 1.2);
    assert_rel(s->st[0].watts, 1.2 / dt);
    assert_int_equal(s->st[0].wraps, 1);
    assert_int_equal(s->st[0].resets, 0);
    tu_put_u64(PKG0, 900000);
    tick(s);
    assert_rel(s->st[0].energy_j, 1.4);
    assert_int_equal(s->st[0].wraps, 1);
    sampler_free(s);
}

static void test_counter_reset(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct sampler *s = new_on("rapl");
    sampler_tick(s);
    /* back to 0: a wrap would mean 180908 J within milliseconds, far above 20 kW */
    tu_put(PKG0, "0\n");
    tick(s);
    assert_int_equal(s->st[0].resets, 1);
    assert_int_equal(s->st[0].wraps, 0);
    assert_true(s->st[0].tick_valid);
    assert_true(s->st[0].energy_j == 0.0);
    assert_true(s->st[0].tick_energy_j == 0.0);
    assert_true(isnan(s->st[0].watts));
    int64_t t2 = s->read_t[0];
    /* integration goes on from the new value */
    tu_put_u64(PKG0, 2000000);
    tick(s);
    assert_rel(s->st[0].energy_j, 2.0);
    assert_rel(s->st[0].watts, 2.0 / dt_s(t2, s->read_t[0]));
    assert_int_equal(s->st[0].resets, 1);
    assert_int_equal(s->st[0].samples, 3);
    sampler_free(s);
}

/* Missing values are invalid readings: nothing added, and the next valid reading integrates
 * across the gap. */
static void test_counter_invalid(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct sampler *s = new_on("rapl");
    sampler_tick(s);
    int64_t t1 = s->read_t[0];
    static const char *const bad[] = {
        "abc\n",
        "",
        "99999999999999999999999999\n",
        "1234567890123456789012345678901234567890\n",
    };
    for (size_t k = 0; k < 4; k++) {
        tu_put(PKG0, bad[k]);
        tick(s);
        assert_false(s->st[0].tick_valid);
        assert_int_equal(s->st[0].invalid, k + 1);
        assert_int_equal(s->st[0].last_err, -EINVAL);
        assert_true(isnan(s->st[0].watts));
        assert_true(s->st[0].tick_energy_j == 0.0);
        assert_true(s->st[0].energy_j == 0.0);
        assert_int_equal(s->readings[0].valid, 0);
        /* the other channels go on */
        assert_true(s->st[1].tick_valid);
    }
    tu_put_u64(PKG0, PKG0_START + 3000000);
    tick(s);
    assert_true(s->st[0].tick_valid);
    assert_rel(s->st[0].energy_j, 3.0);
    assert_rel(s->st[0].watts, 3.0 / dt_s(t1, s->read_t[0]));
    assert_int_equal(s->st[0].samples, 2);
    assert_int_equal(s->st[0].invalid, 4);
    assert_int_equal(s->st[0].resets, 0);
    sampler_free(s);
}

static void test_counter_enodev(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    setenv("CARMA_FAULT", "enodev@2:" PKG0, 1);
    struct sampler *s = new_on("rapl");
    unsetenv("CARMA_FAULT");
    sampler_tick(s);
    tu_put_u64(PKG0, PKG0_START + 1000000);
    tick(s);
    assert_true(s->st[0].tick_valid);
    assert_rel(s->st[0].energy_j, 1.0);
    tu_put_u64(PKG0, PKG0_START + 5000000);
    tick(s);
    assert_false(s->st[0].tick_valid);
    assert_int_equal(s->st[0].last_err, -ENODEV);
    assert_int_equal(s->st[0].invalid, 1);
    assert_rel(s->st[0].energy_j, 1.0);
    tick(s);
    assert_int_equal(s->st[0].invalid, 2);
    assert_int_equal(s->st[0].samples, 2);
    assert_true(s->st[1].tick_valid);
    sampler_free(s);
}

/* ---- gauges ---- */

#define METER "sys/class/hwmon/hwmon0/"

static void meter_tree(void)
{
    tu_copy_fixture("vm-empty");
    tu_put(METER "name", "power_meter\n");
    tu_put(METER "power1_average", "100000000\n");
}

static void test_gauge_trapezoid(void **state)
{
    (void)state;
    meter_tree();
    struct sampler *s = new_on("hwmon");
    assert_int_equal(s->set.n, 1);
    assert_string_equal(s->set.ch[0].name, "hwmon/power_meter/hwmon0");
    assert_int_equal(s->set.ch[0].form, FORM_GAUGE);
    assert_int_equal(s->set.ch[0].kind, KIND_SYSTEM);
    sampler_tick(s);
    /* a gauge has a power figure at once, energy from the second reading */
    assert_true(s->st[0].watts == 100.0);
    assert_true(s->st[0].energy_j == 0.0);
    int64_t t1 = s->t_now;

    tu_put(METER "power1_average", "200000000\n");
    tick(s);
    int64_t t2 = s->t_now;
    double e2 = energy_trapezoid_j(100.0, 200.0, t2 - t1);
    assert_rel(e2, 150.0 * dt_s(t1, t2));
    assert_true(s->st[0].watts == 200.0);
    assert_true(s->st[0].tick_energy_j == e2);
    assert_true(s->st[0].energy_j == e2);

    /* a missing value: nothing added, then the trapezoid spans the gap */
    tu_put(METER "power1_average", "oops\n");
    tick(s);
    assert_false(s->st[0].tick_valid);
    assert_int_equal(s->st[0].last_err, -EINVAL);
    assert_true(isnan(s->st[0].watts));
    assert_true(s->st[0].energy_j == e2);
    tu_put(METER "power1_average", "300000000\n");
    tick(s);
    double e4 = energy_trapezoid_j(200.0, 300.0, s->t_now - t2);
    assert_true(s->st[0].tick_energy_j == e4);
    assert_rel(s->st[0].energy_j, e2 + e4);
    assert_true(s->st[0].watts == 300.0);
    assert_true(s->st[0].min_w == 100.0);
    assert_true(s->st[0].max_w == 300.0);
    assert_int_equal(s->st[0].samples, 3);
    assert_int_equal(s->st[0].invalid, 1);
    sampler_free(s);
}

/* Writes len bytes (NULs included) into rel below tu_dir. */
static void put_bytes(const char *rel, const char *data, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* A gauge above what the device kind can draw (docs/sources.md), or with a NUL byte in it,
 * is an invalid reading: counted, never integrated; the trapezoid spans the gap. */
static void test_gauge_implausible(void **state)
{
    (void)state;
    meter_tree();
    struct sampler *s = new_on("hwmon");
    assert_int_equal(s->set.ch[0].kind, KIND_SYSTEM);
    assert_true(channel_power_max_w(&s->set.ch[0]) == CHANNEL_SYSTEM_MAX_W);
    sampler_tick(s);
    int64_t t1 = s->t_now;
    static const char *const bad[] = {
        "4294967296000000\n",     /* 4.29 GW */
        "262144000000\n",         /* 262 kW */
        "20000000001\n",          /* just above 20 kW */
        "18446744073709551615\n", /* the largest u64 */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tu_put(METER "power1_average", bad[k]);
        tick(s);
        assert_false(s->st[0].tick_valid);
        assert_int_equal(s->st[0].last_err, -ERANGE);
        assert_int_equal(s->st[0].invalid, k + 1);
        assert_true(isnan(s->st[0].watts));
        assert_true(s->st[0].energy_j == 0.0);
    }
    /* "12\0 34": read as nothing, not as 12 µW */
    put_bytes(METER "power1_average", "12\0 34\n", 7);
    tick(s);
    assert_false(s->st[0].tick_valid);
    assert_int_equal(s->st[0].last_err, -EINVAL);
    assert_int_equal(s->st[0].invalid, 5);
    /* 20 kW itself is plausible for a whole node */
    tu_put(METER "power1_average", "20000000000\n");
    tick(s);
    assert_true(s->st[0].tick_valid);
    assert_true(s->st[0].watts == 20000.0);
    assert_rel(s->st[0].energy_j, energy_trapezoid_j(100.0, 20000.0, s->t_now - t1));
    assert_true(s->st[0].max_w == 20000.0);
    assert_int_equal(s->st[0].samples, 2);
    sampler_free(s);
}

/* A counter step implying more than the kind's bound (5 kW for a cpu package) is invalid:
 * not integrated, counted, and the next step is measured from the value after it. */
static void test_counter_implausible(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct sampler *s = new_on("rapl");
    assert_int_equal(s->set.ch[0].kind, KIND_CPU);
    assert_true(s->st[0].ctr.max_power_w == CHANNEL_CPU_MAX_W);
    sampler_tick(s);
    /* 100 kJ within a few ms: far above 5 kW, and no wrap or reset */
    tu_put_u64(PKG0, PKG0_START + 100000000000ULL);
    tick(s);
    assert_false(s->st[0].tick_valid);
    assert_int_equal(s->st[0].invalid, 1);
    assert_int_equal(s->st[0].last_err, -ERANGE);
    assert_int_equal(s->st[0].resets, 0);
    assert_true(s->st[0].energy_j == 0.0);
    assert_true(isnan(s->st[0].watts));
    int64_t t2 = s->read_t[0];
    tu_put_u64(PKG0, PKG0_START + 100000000000ULL + 2000000);
    tick(s);
    assert_true(s->st[0].tick_valid);
    assert_rel(s->st[0].energy_j, 2.0);
    assert_rel(s->st[0].watts, 2.0 / dt_s(t2, s->read_t[0]));
    assert_int_equal(s->st[0].samples, 2);
    assert_int_equal(s->st[0].invalid, 1);
    sampler_free(s);
}

/* ---- what is added up ---- */

static void names_of(const struct sampler *s, const int *idx, size_t n, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        if (k)
            strncat(buf, " ", cap - strlen(buf) - 1);
        strncat(buf, s->set.ch[idx[k]].name, cap - strlen(buf) - 1);
    }
}

/* fixture NULL: the tree is in place already */
static void check_select(const char *fixture, const char *sources, const char *node,
                         const char *cpu)
{
    if (fixture)
        tu_copy_fixture(fixture);
    struct sampler *s = new_on(sources);
    int idx[CHANNELS_MAX];
    char got[1024];
    size_t n = sampler_select_node(s, idx);
    names_of(s, idx, n, got, sizeof got);
    assert_string_equal(got, node);
    n = sampler_select_cpu(s, idx);
    names_of(s, idx, n, got, sizeof got);
    assert_string_equal(got, cpu);
    sampler_free(s);
}

static void test_select_intel_2s(void **state)
{
    (void)state;
    static const char both[] =
        "rapl/package-0 rapl/package-0/dram rapl/package-1 rapl/package-1/dram";
    check_select("intel-2s", NULL, both, both);
}

static void test_select_intel_2s_with_model(void **state)
{
    (void)state;
    /* asked for, the model runs beside RAPL but is not mixed into measured figures */
    static const char both[] =
        "rapl/package-0 rapl/package-0/dram rapl/package-1 rapl/package-1/dram";
    check_select("intel-2s", "rapl,model", both, both);
}

static void test_select_amd(void **state)
{
    (void)state;
    check_select("amd-server", NULL, "rapl/package-0 rapl/package-1",
                 "rapl/package-0 rapl/package-1");
}

static void test_select_laptop(void **state)
{
    (void)state;
    /* psys contains the package and dram: no cpu/dram/soc total is left, so psys */
    check_select("laptop", NULL, "rapl/psys", "rapl/psys");
}

static void test_select_vm(void **state)
{
    (void)state;
    check_select("vm-empty", NULL, "model/cpu0", "model/cpu0");
}

static void test_select_meter_and_model(void **state)
{
    (void)state;
    /* a measured whole-system meter is the node figure, and the CPU-side one too: measured
     * figures come before the model's estimate (which is not even probed unless asked for) */
    meter_tree();
    check_select(NULL, "hwmon,model", "hwmon/power_meter/hwmon0", "hwmon/power_meter/hwmon0");
    struct sampler *s = new_on(NULL);
    assert_int_equal(s->set.n, 1);
    assert_int_equal(s->src[2].status, -ENOENT);
    sampler_free(s);
}

/* ---- the timer ---- */

static void test_timer(void **state)
{
    (void)state;
    tu_copy_fixture("amd-server");
    struct sampler_opts o = {.root = tu_dir, .sources = "rapl", .interval_ns = 2 * NS_PER_MS};
    struct carma_err e = {0};
    struct sampler *s = sampler_new(&o, &e);
    assert_non_null(s);
    assert_int_equal(sampler_fd(s), -1);
    assert_int_equal(sampler_start(s), 0);
    int fd = sampler_fd(s);
    assert_true(fd >= 0);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, 1000), 1);
    tu_pause_ms(20);
    sampler_ack(s);
    /* several expirations went by while we slept: all but one are overruns */
    assert_true(s->overruns >= 5);
    sampler_free(s);
}

/* ---- samples.csv ---- */

/* The file at path (its first MiB), NUL-terminated, in a buffer the caller frees. */
static char *slurp(const char *path, size_t *len)
{
    char *buf = calloc(1, 1 << 20);
    assert_non_null(buf);
    *len = tu_slurp(path, buf, 1 << 20);
    return buf;
}

/* The timestamp cells of the current tick: "sec.usec,local-iso". */
static void stamp(const struct sampler *s, char *buf, size_t cap)
{
    char local[64];
    assert_true(time_format_local_iso(s->real_now, local, sizeof local) > 0);
    snprintf(buf, cap, "%" PRId64 ".%06" PRId64 ",%s", (int64_t)(s->real_now / NS_PER_S),
             (int64_t)((s->real_now % NS_PER_S) / NS_PER_US), local);
}

static const char *const csv_mids[] = {
    "rapl/package-0,rapl,cpu,total,measured",
    "rapl/package-0/core,rapl,cpu,component,measured",
    "rapl/package-0/dram,rapl,dram,total,measured",
    "rapl/package-1,rapl,cpu,total,measured",
    "rapl/package-1/core,rapl,cpu,component,measured",
    "rapl/package-1/dram,rapl,dram,total,measured",
};

/* Appends the rows a tick must have written: watts and joules cells given per channel. */
static void want_tick(char *want, const struct sampler *s, const char *const *watts,
                      const char *const *joules)
{
    char st[128], line[512];
    stamp(s, st, sizeof st);
    for (int k = 0; k < 6; k++) {
        snprintf(line, sizeof line, "%s,%s,%s,%s\r\n", st, csv_mids[k], watts[k], joules[k]);
        strcat(want, line);
    }
}

static void test_samples_csv(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct sampler *s = new_on("rapl");
    char path[400];
    snprintf(path, sizeof path, "%s/samples.csv", tu_dir);
    struct carma_err e = {0};
    struct samples_csv *w = samples_csv_open(path, s, &e);
    assert_non_null(w);
    assert_int_equal(samples_csv_rows(w), 0);
    char *want = calloc(1, 1 << 16);
    assert_non_null(want);
    strcat(want, "timestamp_unix,timestamp_local,channel,source,kind,domain,method,watts,"
                 "joules_total\r\n");

    /* tick 1: counters primed (0 J, no power yet); package-0 unreadable: both cells blank */
    tu_put(PKG0, "garbage\n");
    sampler_tick(s);
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_int_equal(samples_csv_rows(w), 6);
    {
        const char *wt[] = {"", "", "", "", "", ""};
        const char *jl[] = {"", "0", "0", "0", "0", "0"};
        want_tick(want, s, wt, jl);
    }

    /* tick 2: package-0 valid again (primes it), the core used 1.5 J */
    tu_put_u64(PKG0, PKG0_START);
    tu_put_u64(PC "intel-rapl:0:0/energy_uj", 41234567890ULL + 1500000);
    tick(s);
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    char core_w[40];
    fmt_fixed6(core_w, s->st[1].watts);
    assert_true(strtod(core_w, NULL) > 0);
    assert_null(strpbrk(core_w, "eE"));
    {
        const char *wt[] = {"", core_w, "0", "0", "0", "0"};
        const char *jl[] = {"0", "1.5", "0", "0", "0", "0"};
        want_tick(want, s, wt, jl);
    }

    /* tick 3: package-0 missing after a valid reading: blank watts, its energy so far */
    tu_put(PKG0, "");
    tick(s);
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_int_equal(samples_csv_rows(w), 18);
    {
        const char *wt[] = {"", "0", "0", "0", "0", "0"};
        const char *jl[] = {"0", "1.5", "0", "0", "0", "0"};
        want_tick(want, s, wt, jl);
    }
    assert_int_equal(samples_csv_close(w), 0);

    size_t len;
    char *text = slurp(path, &len);
    assert_int_equal(strlen(text), len);
    assert_string_equal(text, want);
    /* 1 header + 18 rows, every line ends in CRLF */
    int lines = 0;
    for (const char *q = text; (q = strchr(q, '\n')); q++) {
        assert_true(q > text && q[-1] == '\r');
        lines++;
    }
    assert_int_equal(lines, 19);
    free(want);
    free(text);
    sampler_free(s);
}

/* Numbers are fixed point with at most 6 decimals, whatever their size. */
static void test_samples_csv_fixed_point(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    tu_put_u64(PKG0, 0);
    struct sampler *s = new_on("rapl");
    char path[400];
    snprintf(path, sizeof path, "%s/samples.csv", tu_dir);
    struct carma_err e = {0};
    struct samples_csv *w = samples_csv_open(path, s, &e);
    assert_non_null(w);
    sampler_tick(s);
    /* 1 µJ, then 100 kJ */
    tu_put_u64(PKG0, 1);
    tick(s);
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_true(s->st[0].energy_j == 1e-6);
    s->st[0].energy_j = 123456789.25; /* a long run: must not turn into 1.2345678925e+08 */
    s->st[0].watts = 0.0000004;       /* rounds to 0 */
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_int_equal(samples_csv_close(w), 0);
    size_t len;
    char *text = slurp(path, &len);
    char st[128], line[512];
    stamp(s, st, sizeof st);
    snprintf(line, sizeof line, "\r\n%s,%s,0,123456789.25\r\n", st, csv_mids[0]);
    assert_non_null(strstr(text, line));
    /* the first of the two rows: 1e-6 J written as 0.000001 */
    snprintf(line, sizeof line, "%s,%s,", st, csv_mids[0]);
    const char *row = strstr(text, line);
    assert_non_null(row);
    const char *cells = row + strlen(line);
    const char *comma = strchr(cells, ',');
    assert_non_null(comma);
    assert_true(strncmp(comma, ",0.000001\r\n", 11) == 0);
    /* the last two cells of every row: digits, '.' and '-' only */
    for (const char *q = strstr(text, "\r\n") + 2; *q;) {
        const char *end = strstr(q, "\r\n");
        assert_non_null(end);
        const char *c = end;
        for (int commas = 0; commas < 2; c--)
            if (c[-1] == ',')
                commas++;
        for (; c < end; c++)
            if (*c != ',')
                assert_non_null(strchr("0123456789.-", *c));
        q = end + 2;
    }
    free(text);
    sampler_free(s);
}

static void test_samples_csv_open_errors(void **state)
{
    (void)state;
    tu_copy_fixture("amd-server");
    struct sampler *s = new_on("rapl");
    char path[400];
    snprintf(path, sizeof path, "%s/no/such/dir/samples.csv", tu_dir);
    struct carma_err e = {0};
    assert_null(samples_csv_open(path, s, &e));
    assert_int_equal(e.code, -ENOENT);
    assert_non_null(strstr(e.msg, path));
    assert_int_equal(samples_csv_close(NULL), 0);
    assert_int_equal(samples_csv_rows(NULL), 0);

    /* a writer for a sampler without channels writes only the header */
    snprintf(path, sizeof path, "%s/empty.csv", tu_dir);
    struct sampler_opts o = {.root = tu_dir, .sources = "hwmon"};
    struct sampler *none = sampler_new(&o, &e);
    assert_non_null(none);
    assert_int_equal(none->set.n, 0);
    struct samples_csv *w = samples_csv_open(path, none, &e);
    assert_non_null(w);
    sampler_tick(none);
    assert_int_equal(samples_csv_write_tick(w, none, &e), 0);
    assert_int_equal(samples_csv_rows(w), 0);
    assert_int_equal(samples_csv_close(w), 0);
    size_t len;
    char *text = slurp(path, &len);
    assert_string_equal(text, SAMPLES_CSV_HEADER "\r\n");
    free(text);
    sampler_free(none);
    sampler_free(s);
}

/* Past the file size limit (ulimit -f, SIGXFSZ ignored as carma does) a tick written in part
 * is cut off again: the file keeps whole ticks only, and the writer counts what it lost */
/* At a 1 ms interval the ticks of 100 ms go in one write: nothing on disk until the next tick
 * would make the batch span 100 ms, then every tick held at once; samples_csv_flush writes
 * what is held; a batch that cannot be written counts all its ticks lost; close writes the
 * rest. At 100 ms every tick is written as it comes. */
static void test_samples_csv_batches(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct sampler *s = new_on("rapl");
    char path[400];
    snprintf(path, sizeof path, "%s/samples.csv", tu_dir);
    struct carma_err e = {0};
    s->interval_ns = NS_PER_MS;
    struct samples_csv *w = samples_csv_open(path, s, &e);
    assert_non_null(w);
    sampler_tick(s);
    int64_t t0 = s->t_now;
    /* ticks at 0, 1, ..., 98 ms: held */
    for (int k = 0; k < 99; k++) {
        s->t_now = t0 + k * NS_PER_MS;
        assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
        assert_int_equal(samples_csv_rows(w), 0);
    }
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    off_t header = st.st_size;
    /* the tick at 99 ms: the next would make 100 ms, so the 100 ticks go out */
    s->t_now = t0 + 99 * NS_PER_MS;
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_int_equal(samples_csv_rows(w), 600);
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > header);
    /* two more held, then flushed */
    s->t_now = t0 + 100 * NS_PER_MS;
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    s->t_now = t0 + 101 * NS_PER_MS;
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_int_equal(samples_csv_rows(w), 600);
    assert_int_equal(samples_csv_flush(w, &e), 0);
    assert_int_equal(samples_csv_rows(w), 612);
    assert_int_equal(samples_csv_flush(w, &e), 0); /* nothing held: nothing written */
    assert_int_equal(samples_csv_rows(w), 612);
    /* a stall: a tick 150 ms after the first held one goes out with it at once */
    s->t_now = t0 + 200 * NS_PER_MS;
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    s->t_now = t0 + 350 * NS_PER_MS;
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_int_equal(samples_csv_rows(w), 624);
    /* a batch the file size limit refuses: its three ticks lost, whole rows left */
    assert_int_equal(stat(path, &st), 0);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)st.st_size + 100;
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    for (int k = 0; k < 3; k++) {
        s->t_now = t0 + (400 + k) * NS_PER_MS;
        assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    }
    int r = samples_csv_flush(w, &e);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_xfsz);
    assert_int_equal(r, -EFBIG);
    int err = 0;
    assert_int_equal(samples_csv_lost_ticks(w, &err), 3);
    assert_int_equal(err, -EFBIG);
    assert_int_equal(samples_csv_rows(w), 624);
    /* close writes the ticks held */
    s->t_now = t0 + 500 * NS_PER_MS;
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_int_equal(samples_csv_close(w), 0);
    size_t len;
    char *text = slurp(path, &len);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, 1 + 630);
    assert_true(len >= 2 && text[len - 2] == '\r' && text[len - 1] == '\n');
    free(text);

    /* at 100 ms: every tick written as it comes */
    s->interval_ns = 100 * NS_PER_MS;
    w = samples_csv_open(path, s, &e);
    assert_non_null(w);
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_int_equal(samples_csv_rows(w), 6);
    s->t_now += NS_PER_MS;
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_int_equal(samples_csv_rows(w), 12);
    assert_int_equal(samples_csv_close(w), 0);
    sampler_free(s);
}

static void test_samples_csv_file_size_limit(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct sampler *s = new_on("rapl");
    char path[400];
    snprintf(path, sizeof path, "%s/samples.csv", tu_dir);
    struct carma_err e = {0};
    struct samples_csv *w = samples_csv_open(path, s, &e);
    assert_non_null(w);
    sampler_tick(s);
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    tick(s);
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    off_t two = st.st_size;
    int err = 1;
    assert_int_equal(samples_csv_lost_ticks(w, &err), 0);
    assert_int_equal(err, 0);
    /* room for a third of a tick more */
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)two + (rlim_t)two / 8;
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    tick(s);
    int r3 = samples_csv_write_tick(w, s, &e);
    tick(s);
    struct carma_err e4 = {0}; /* the same condition again: not said again */
    int r4 = samples_csv_write_tick(w, s, &e4);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_xfsz);
    assert_int_equal(r3, -EFBIG);
    assert_int_equal(r4, -EFBIG);
    assert_non_null(strstr(e.msg, path));
    assert_int_equal(e4.code, 0);
    char lost[1024], want[1024];
    assert_true(journal_loss_text(samples_csv_journal(w), lost, sizeof lost));
    snprintf(want, sizeof want, "%s: 12 rows lost to: %s", path, strerror(EFBIG));
    assert_string_equal(lost, want);
    assert_int_equal(samples_csv_lost_ticks(w, &err), 2);
    assert_int_equal(err, -EFBIG);
    assert_int_equal(samples_csv_rows(w), 12);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, two); /* not a byte of the torn tick */
    /* with room again, the next tick follows the last whole one */
    tick(s);
    assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    assert_int_equal(samples_csv_close(w), 0);
    size_t len;
    char *text = slurp(path, &len);
    int lines = 0;
    for (const char *q = text; (q = strchr(q, '\n')); q++) {
        assert_true(q > text && q[-1] == '\r');
        lines++;
    }
    assert_int_equal(lines, 1 + 18);
    assert_true(len > 2 && text[len - 1] == '\n');
    free(text);
    sampler_free(s);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_setup, tu_teardown)
    const struct CMUnitTest tests[] = {
        T(test_new_errors),
        T(test_probe_all_sources),
        T(test_counter_delta),
        T(test_counter_wrap),
        T(test_counter_reset),
        T(test_counter_invalid),
        T(test_counter_implausible),
        T(test_gauge_implausible),
        T(test_counter_enodev),
        T(test_gauge_trapezoid),
        T(test_select_intel_2s),
        T(test_select_intel_2s_with_model),
        T(test_select_amd),
        T(test_select_laptop),
        T(test_select_vm),
        T(test_select_meter_and_model),
        T(test_timer),
        T(test_samples_csv),
        T(test_samples_csv_fixed_point),
        T(test_samples_csv_open_errors),
        T(test_samples_csv_file_size_limit),
        T(test_samples_csv_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
