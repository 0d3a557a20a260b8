/*
 * Unit tests for the rapl source's perf path (sources/rapl.h): the channels a perf group per
 * package gives (the powercap zones' names, kinds and nesting), the probe-time choice between
 * the paths, and every fault path through a fake perf_event_open/read (the rapl_perf_sys seam)
 * on the fixture tree intel-2s-pmu: a refused open (EACCES with perf_event_paranoid, EINVAL,
 * ENOENT, EOPNOTSUPP, ENODEV), a malformed events file, a stub domain that reads 0 J, a short
 * or failed read at tick time, an offline CPU in the cpumask. Then the real kernel: software
 * events described as a PMU (real open and group read, the stub refusal of a dummy event), and
 * the machine's own RAPL PMU where it has one.
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
#include <time.h>
#include <unistd.h>

#include "core/fsroot.h"
#include "sources/rapl.h"
#include "sources/source.h"
#include "testutil.h"

extern const struct source_ops rapl_source_ops;

#define PMU RAPL_PMU_DIR "/"

/* ---- the fake perf system calls ---- */

struct fake_ev {
    uint32_t type;
    uint64_t config;
    int cpu, group_fd, fd;
    bool closed;
};
static struct fake_ev evs[64];
static size_t nevs;
static int open_err[256];   /* by config: the error open returns, 0: success */
static uint64_t value[256]; /* by config: the count a read returns */
static ssize_t read_ret;    /* 0: a whole read; > 0: a short read of this many bytes; < 0 */
static long read_spin_ns;   /* how long a read takes */
static unsigned reads;

static int fake_open(uint32_t type, uint64_t config, int cpu, int group_fd)
{
    assert_true(nevs < 64);
    if (open_err[config & 0xff])
        return open_err[config & 0xff];
    evs[nevs] = (struct fake_ev){type, config, cpu, group_fd, 1000 + (int)nevs, false};
    return evs[nevs++].fd;
}

static ssize_t fake_read(int fd, void *buf, size_t n)
{
    reads++;
    if (read_spin_ns) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do
            clock_gettime(CLOCK_MONOTONIC, &t);
        while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < read_spin_ns);
    }
    if (read_ret < 0)
        return read_ret;
    uint64_t v[16];
    size_t k = 0;
    for (size_t i = 0; i < nevs; i++)
        if (!evs[i].closed && (evs[i].fd == fd || evs[i].group_fd == fd))
            v[1 + k++] = value[evs[i].config & 0xff];
    v[0] = k;
    size_t len = (1 + k) * sizeof v[0];
    if (len > n)
        return -ENOSPC;
    memcpy(buf, v, len);
    return read_ret > 0 ? read_ret : (ssize_t)len;
}

static void fake_close(int fd)
{
    for (size_t i = 0; i < nevs; i++)
        if (evs[i].fd == fd) {
            assert_false(evs[i].closed);
            evs[i].closed = true;
            return;
        }
    fail_msg("close of fd %d, never opened", fd);
}

static int setup(void **state)
{
    memset(evs, 0, sizeof evs);
    nevs = 0;
    memset(open_err, 0, sizeof open_err);
    for (size_t i = 0; i < 256; i++)
        value[i] = 1000000000ULL * (i + 1); /* nonzero: a counting domain */
    read_ret = 0;
    read_spin_ns = 0;
    reads = 0;
    rapl_perf_sys.open = fake_open;
    rapl_perf_sys.read = fake_read;
    rapl_perf_sys.close = fake_close;
    return tu_setup(state);
}

static int teardown(void **state)
{
    rapl_perf_sys = rapl_perf_sys_default;
    return tu_teardown(state);
}

/* ---- probing ---- */

struct probed {
    struct fsroot root;
    struct channel_set *set;
    struct source src;
    int r;
};

static struct probed *probe_mode(const char *dir, enum rapl_path mode)
{
    struct probed *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->set = calloc(1, sizeof *p->set);
    assert_non_null(p->set);
    tu_open_root(&p->root, dir);
    p->src.ops = &rapl_source_ops;
    struct probe_ctx ctx = {.root = &p->root, .set = p->set, .rapl_path = (int)mode};
    p->r = rapl_source_ops.probe(&p->src, &ctx);
    p->src.status = p->r > 0 ? 0 : p->r;
    return p;
}

static struct probed *probe_fixture(enum rapl_path mode)
{
    char dir[512];
    tu_fixture_path(dir, sizeof dir, "intel-2s-pmu");
    return probe_mode(dir, mode);
}

/* Closes the source: every fake fd it opened must be closed by then. */
static void probed_free(struct probed *p)
{
    rapl_source_ops.close(&p->src);
    assert_null(p->src.priv);
    for (size_t i = 0; i < nevs; i++)
        assert_true(evs[i].closed);
    fsroot_close(&p->root);
    free(p->set);
    free(p);
}

static void contains(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("'%s' is not in '%s'", want, text);
}

static const char *read_path(const struct probed *p, const char *name)
{
    static char buf[96];
    int i = tu_channel_index(p->set, name);
    assert_true(i >= 0);
    const char *r = rapl_channel_read_path(&p->src, (size_t)i, buf, sizeof buf);
    assert_non_null(r);
    return r;
}

/* The six channels of intel-2s under the perf path: names, nesting, units. */
static void check_perf_channels(const struct probed *p)
{
    static const struct {
        const char *name, *zone, *label, *parent;
        enum channel_kind kind;
        enum channel_domain domain;
        int socket, cpu;
    } w[] = {
        {"rapl/package-0", "package", "energy-pkg", "", KIND_CPU, DOMAIN_TOTAL, 0, 0},
        {"rapl/package-0/core", "core", "energy-cores", "rapl/package-0", KIND_CPU,
         DOMAIN_COMPONENT, 0, 0},
        {"rapl/package-0/dram", "dram", "energy-ram", "", KIND_DRAM, DOMAIN_TOTAL, 0, 0},
        {"rapl/package-1", "package", "energy-pkg", "", KIND_CPU, DOMAIN_TOTAL, 1, 36},
        {"rapl/package-1/core", "core", "energy-cores", "rapl/package-1", KIND_CPU,
         DOMAIN_COMPONENT, 1, 36},
        {"rapl/package-1/dram", "dram", "energy-ram", "", KIND_DRAM, DOMAIN_TOTAL, 1, 36},
    };
    assert_int_equal(p->r, 6);
    assert_int_equal(p->set->n, 6);
    assert_int_equal(p->src.count, 6);
    for (size_t i = 0; i < 6; i++) {
        const struct channel *c = &p->set->ch[i];
        assert_string_equal(c->name, w[i].name);
        assert_string_equal(c->source, "rapl");
        assert_string_equal(c->zone, w[i].zone);
        assert_string_equal(c->label, w[i].label);
        assert_int_equal(c->kind, w[i].kind);
        assert_int_equal(c->domain, w[i].domain);
        assert_int_equal(c->socket, w[i].socket);
        if (w[i].parent[0])
            assert_string_equal(p->set->ch[c->parent].name, w[i].parent);
        else
            assert_int_equal(c->parent, -1);
        assert_int_equal(c->form, FORM_COUNTER);
        assert_true(c->counter_range == 0); /* 64-bit from 0: a backwards step is a reset */
        assert_true(c->counter_unit_j == 0x1p-32);
        assert_int_equal(c->method, METHOD_MEASURED);
        char path[CHANNEL_PATH_MAX];
        snprintf(path, sizeof path, "perf power/%s on CPU %d", w[i].label, w[i].cpu);
        assert_string_equal(c->path, path);
        assert_string_equal(read_path(p, w[i].name), "perf group (3 domains, 1 read)");
    }
}

static void test_forced_perf(void **state)
{
    (void)state;
    struct probed *p = probe_fixture(RAPL_PATH_PERF);
    check_perf_channels(p);
    contains(p->src.note, "read path: perf group (6 domains in 2 reads a tick) (--rapl-path perf)");
    /* two groups: the package leads, cores and ram join it, on the cpumask's CPUs */
    assert_int_equal(nevs, 6);
    static const uint64_t cfg[3] = {2, 1, 3};
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(evs[i].type, 15);
        assert_int_equal(evs[i].config, cfg[i % 3]);
        assert_int_equal(evs[i].cpu, i < 3 ? 0 : 36);
        assert_int_equal(evs[i].group_fd, i % 3 == 0 ? -1 : evs[i - i % 3].fd);
    }
    /* a tick: one read per package fills every domain */
    struct reading rd[6];
    memset(rd, 0, sizeof rd);
    value[2] = 111, value[1] = 22, value[3] = 33;
    unsigned before = reads;
    rapl_source_ops.read(&p->src, rd);
    assert_int_equal(reads - before, 2);
    static const uint64_t want[6] = {111, 22, 33, 111, 22, 33};
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(rd[i].valid, READING_ENERGY);
        assert_int_equal(rd[i].err, 0);
        assert_int_equal(rd[i].energy_raw, want[i]);
    }
    probed_free(p);
}

static void test_auto_perf_faster(void **state)
{
    (void)state;
    struct probed *p = probe_fixture(RAPL_PATH_AUTO);
    check_perf_channels(p);
    contains(p->src.note, "read path: perf group (6 domains in 2 reads a tick) (");
    contains(p->src.note, "µs a tick, the median of 32 at probe time) over powercap pread (");
    probed_free(p);
}

static void test_auto_powercap_faster(void **state)
{
    (void)state;
    read_spin_ns = 200000; /* a group read slower than six preads */
    struct probed *p = probe_fixture(RAPL_PATH_AUTO);
    assert_int_equal(p->r, 6);
    assert_string_equal(p->set->ch[0].path, "sys/class/powercap/intel-rapl:0/energy_uj");
    assert_string_equal(read_path(p, "rapl/package-1/dram"), "powercap pread");
    contains(p->src.note, "read path: powercap pread (");
    contains(p->src.note, "over perf group (6 domains in 2 reads a tick) (");
    for (size_t i = 0; i < nevs; i++) /* the groups are closed once powercap is chosen */
        assert_true(evs[i].closed);
    probed_free(p);
}

static void test_no_pmu(void **state)
{
    (void)state;
    char dir[512];
    tu_fixture_path(dir, sizeof dir, "intel-2s");
    struct probed *p = probe_mode(dir, RAPL_PATH_AUTO);
    assert_int_equal(p->r, 6);
    assert_string_equal(p->src.note, ""); /* silently powercap */
    assert_int_equal(nevs, 0);
    assert_string_equal(read_path(p, "rapl/package-0"), "powercap pread");
    probed_free(p);
    p = probe_mode(dir, RAPL_PATH_PERF);
    assert_int_equal(p->r, -ENOENT);
    contains(p->src.reason, "--rapl-path perf: no RAPL perf PMU at " RAPL_PMU_DIR);
    probed_free(p);
}

static void test_forced_powercap(void **state)
{
    (void)state;
    struct probed *p = probe_fixture(RAPL_PATH_POWERCAP);
    assert_int_equal(p->r, 6);
    assert_int_equal(nevs, 0);
    assert_string_equal(p->src.note, "");
    probed_free(p);
}

static void test_eacces(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++) {
        for (int c = 1; c <= 3; c++)
            open_err[c] = e ? -EPERM : -EACCES;
        struct probed *p = probe_fixture(RAPL_PATH_AUTO);
        assert_int_equal(p->r, 6);
        assert_string_equal(p->set->ch[0].path, "sys/class/powercap/intel-rapl:0/energy_uj");
        contains(p->src.note, "read path: powercap pread; the perf PMU is not used: "
                              "perf_event_open of power/energy-pkg on CPU 0: permission denied");
        contains(p->src.note, e ? "(EPERM;" : "(EACCES;");
        contains(p->src.note, "proc/sys/kernel/perf_event_paranoid is 2");
        contains(p->src.note, "sysctl kernel.perf_event_paranoid=0");
        probed_free(p);
        p = probe_fixture(RAPL_PATH_PERF);
        assert_int_equal(p->r, e ? -EPERM : -EACCES);
        contains(p->src.reason, "perf_event_paranoid is 2");
        probed_free(p);
    }
}

/* A domain the kernel refuses: left out; auto keeps powercap, which reads it. */
static void test_refused_domain(void **state)
{
    (void)state;
    static const struct {
        int err;
        const char *name;
    } errs[] = {{-EINVAL, "EINVAL"}, {-ENOENT, "ENOENT"}, {-EOPNOTSUPP, "EOPNOTSUPP"}};
    for (size_t e = 0; e < 3; e++) {
        nevs = 0;
        open_err[3] = errs[e].err; /* energy-ram */
        struct probed *p = probe_fixture(RAPL_PATH_AUTO);
        assert_int_equal(p->r, 6);
        assert_string_equal(read_path(p, "rapl/package-0/dram"), "powercap pread");
        contains(p->src.note,
                 "read path: powercap pread; the perf PMU lacks rapl/package-0/dram, which "
                 "powercap reads.");
        char want[160];
        snprintf(want, sizeof want,
                 "perf_event_open of power/energy-ram (type 15, event=0x03) on CPU 0: %s: the "
                 "kernel does not count this domain here.",
                 errs[e].name);
        contains(p->src.note, want);
        probed_free(p);
        nevs = 0;
        p = probe_fixture(RAPL_PATH_PERF);
        assert_int_equal(p->r, 4);
        assert_int_equal(tu_channel_index(p->set, "rapl/package-0/dram"), -1);
        assert_string_equal(read_path(p, "rapl/package-1"), "perf group (2 domains, 1 read)");
        contains(p->src.note, want);
        probed_free(p);
    }
}

static void test_enodev(void **state)
{
    (void)state;
    for (int c = 1; c <= 3; c++)
        open_err[c] = -ENODEV;
    struct probed *p = probe_fixture(RAPL_PATH_PERF);
    assert_int_equal(p->r, -ENODEV);
    contains(p->src.reason, "perf_event_open of power/energy-pkg on CPU 0: ENODEV (the CPU is "
                            "offline).");
    probed_free(p);
}

/* A malformed description names the file and its text; auto keeps powercap. */
static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *file, *text, *want;
    } bad[] = {
        {"events/energy-pkg", "event=zz\n", PMU "events/energy-pkg: 'event=zz' is not event=0x.."},
        {"events/energy-ram", "config=0x03\n",
         PMU "events/energy-ram: 'config=0x03' is not event=0x.."},
        {"events/energy-pkg.scale", "lots\n",
         PMU "events/energy-pkg.scale: 'lots' is not a scale in joules"},
        {"events/energy-cores.unit", "Watts\n",
         PMU "events/energy-cores.unit: 'Watts' is not Joules"},
        {"cpumask", "0-\n", PMU "cpumask: '0-' is not a list of CPUs"},
        {"type", "power\n", PMU "type: not a PMU type number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[TU_DIR_MAX + 32];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'/*", tu_dir);
        assert_int_equal(system(cmd), 0);
        tu_copy_fixture("intel-2s-pmu");
        char rel[256];
        snprintf(rel, sizeof rel, PMU "%s", bad[i].file);
        tu_put(rel, bad[i].text);
        struct probed *p = probe_mode(tu_dir, RAPL_PATH_AUTO);
        assert_int_equal(p->r, 6);
        contains(p->src.note, "read path: powercap pread; the perf PMU is not used: ");
        contains(p->src.note, bad[i].want);
        assert_int_equal(nevs, 0);
        probed_free(p);
        p = probe_mode(tu_dir, RAPL_PATH_PERF);
        assert_int_equal(p->r, -EINVAL);
        contains(p->src.reason, bad[i].want);
        probed_free(p);
    }
}

/* A domain that reads 0 J over the probe is a stub: left out, never shown as 0 W. */
static void test_stub(void **state)
{
    (void)state;
    value[3] = 0; /* energy-ram */
    struct probed *p = probe_fixture(RAPL_PATH_PERF);
    assert_int_equal(p->r, 4);
    assert_int_equal(tu_channel_index(p->set, "rapl/package-1/dram"), -1);
    contains(p->src.note, "power/energy-ram on CPU 0 read 0 J over 1");
    contains(p->src.note, " ms: a virtual machine's stub PMU, left out.");
    /* the stub stays in its group (read with it) but fills no reading */
    struct reading rd[4];
    memset(rd, 0, sizeof rd);
    rapl_source_ops.read(&p->src, rd);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(rd[i].valid, READING_ENERGY);
    assert_int_equal(rd[1].energy_raw, value[1]);
    assert_int_equal(rd[3].energy_raw, value[1]);
    probed_free(p);
    /* every domain a stub: unusable, with the reason */
    nevs = 0;
    value[1] = value[2] = 0;
    p = probe_fixture(RAPL_PATH_PERF);
    assert_int_equal(p->r, -ENODEV);
    contains(p->src.reason, "power/energy-pkg on CPU 0 read 0 J over");
    contains(p->src.reason, "power/energy-ram on CPU 36 read 0 J over");
    probed_free(p);
    /* auto: powercap reads */
    nevs = 0;
    p = probe_fixture(RAPL_PATH_AUTO);
    assert_int_equal(p->r, 6);
    contains(p->src.note, "read path: powercap pread; the perf PMU is not used: power/energy-pkg "
                          "on CPU 0 read 0 J");
    probed_free(p);
}

/* A short or failed read at tick time: that package's readings are invalid for the tick. */
static void test_tick_read_fails(void **state)
{
    (void)state;
    struct probed *p = probe_fixture(RAPL_PATH_PERF);
    assert_int_equal(p->r, 6);
    struct reading rd[6];
    static const ssize_t rets[] = {8, 16, -EIO, -ENODEV};
    static const int errs[] = {-EIO, -EIO, -EIO, -ENODEV};
    for (size_t t = 0; t < 4; t++) {
        read_ret = rets[t];
        memset(rd, 0xff, sizeof rd);
        rapl_source_ops.read(&p->src, rd);
        for (size_t i = 0; i < 6; i++) {
            assert_int_equal(rd[i].valid, 0);
            assert_int_equal(rd[i].err, errs[t]);
        }
    }
    read_ret = 0;
    rapl_source_ops.read(&p->src, rd);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(rd[i].valid, READING_ENERGY);
    probed_free(p);
}

static void test_offline_cpu(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s-pmu");
    tu_put("sys/devices/system/cpu/cpu36/online", "0\n");
    struct probed *p = probe_mode(tu_dir, RAPL_PATH_PERF);
    assert_int_equal(p->r, 3);
    assert_int_equal(tu_channel_index(p->set, "rapl/package-1"), -1);
    contains(p->src.note, PMU "cpumask names CPU 36, which is offline "
                              "(sys/devices/system/cpu/cpu36/online reads 0)");
    for (size_t i = 0; i < nevs; i++)
        assert_int_equal(evs[i].cpu, 0);
    probed_free(p);
    /* auto: the perf path lacks package-1, powercap reads */
    nevs = 0;
    p = probe_mode(tu_dir, RAPL_PATH_AUTO);
    assert_int_equal(p->r, 6);
    contains(p->src.note, "the perf PMU lacks rapl/package-1");
    probed_free(p);
}

static void test_path_parse(void **state)
{
    (void)state;
    enum rapl_path m = RAPL_PATH_PERF;
    assert_int_equal(rapl_path_parse("auto", &m), 0);
    assert_int_equal(m, RAPL_PATH_AUTO);
    assert_int_equal(rapl_path_parse("powercap", &m), 0);
    assert_int_equal(m, RAPL_PATH_POWERCAP);
    assert_int_equal(rapl_path_parse("perf", &m), 0);
    assert_int_equal(m, RAPL_PATH_PERF);
    assert_int_equal(rapl_path_parse("Perf", &m), -EINVAL);
    assert_int_equal(rapl_path_parse("", &m), -EINVAL);
    assert_int_equal(m, RAPL_PATH_PERF);
}

/* ---- the real kernel ---- */

/* Software events described as a PMU (type 1: cpu-clock 0x00 counts, dummy 0x09 never does):
 * the real perf_event_open, group read and stub refusal on any Linux that allows CPU-wide
 * events. */
static void test_real_kernel_software_pmu(void **state)
{
    (void)state;
    rapl_perf_sys = rapl_perf_sys_default;
    tu_put(PMU "type", "1\n");
    tu_put(PMU "cpumask", "0\n");
    static const char *const ev[][2] = {{"energy-pkg", "event=0x00"},
                                        {"energy-cores", "event=0x00"},
                                        {"energy-psys", "event=0x09"}};
    for (size_t i = 0; i < 3; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, PMU "events/%s", ev[i][0]);
        tu_put(rel, ev[i][1]);
        snprintf(rel, sizeof rel, PMU "events/%s.scale", ev[i][0]);
        tu_put(rel, "2.3283064365386962890625e-10\n");
        snprintf(rel, sizeof rel, PMU "events/%s.unit", ev[i][0]);
        tu_put(rel, "Joules\n");
    }
    struct probed *p = probe_mode(tu_dir, RAPL_PATH_AUTO);
    if (p->r == -EACCES || p->r == -EPERM) {
        char msg[1024];
        snprintf(msg, sizeof msg, "CPU-wide perf events not allowed here: %s", p->src.reason);
        print_message("[  SKIP    ] %s\n", msg);
        rapl_source_ops.close(&p->src);
        fsroot_close(&p->root);
        free(p->set);
        free(p);
        skip();
        return;
    }
    assert_int_equal(p->r, 2);
    assert_string_equal(p->set->ch[0].name, "rapl/package-0");
    assert_string_equal(p->set->ch[1].name, "rapl/package-0/core");
    assert_string_equal(read_path(p, "rapl/package-0"), "perf group (2 domains, 1 read)");
    contains(p->src.note, "power/energy-psys on CPU 0 read 0 J over");
    contains(p->src.note, "a virtual machine's stub PMU, left out.");
    contains(p->src.note, "read path: perf group (2 domains in 1 read a tick); powercap is not "
                          "used: no RAPL zones");
    struct reading a[2], b[2];
    rapl_source_ops.read(&p->src, a);
    tu_pause_ms(5);
    rapl_source_ops.read(&p->src, b);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(a[i].valid, READING_ENERGY);
        assert_int_equal(b[i].valid, READING_ENERGY);
        assert_true(b[i].energy_raw > a[i].energy_raw); /* cpu-clock: ns since open */
    }
    rapl_source_ops.close(&p->src);
    fsroot_close(&p->root);
    free(p->set);
    free(p);
}

/* This machine's own RAPL PMU, where it has one (a VM may offer a stub: refused as such). */
static void test_real_rapl_pmu(void **state)
{
    (void)state;
    rapl_perf_sys = rapl_perf_sys_default;
    if (access("/" RAPL_PMU_DIR, F_OK) != 0) {
        print_message("[  SKIP    ] no RAPL perf PMU at /%s on this machine\n", RAPL_PMU_DIR);
        skip();
    }
    struct probed *p = probe_mode("/", RAPL_PATH_PERF);
    print_message("rapl perf path here: %d: %s%s\n", p->r, p->src.reason, p->src.note);
    if (p->r > 0) {
        struct reading rd[CHANNELS_MAX];
        rapl_source_ops.read(&p->src, rd);
        for (int i = 0; i < p->r; i++)
            assert_int_equal(rd[i].valid, READING_ENERGY);
    } else {
        assert_true(p->src.reason[0]); /* refused or a stub: said why */
    }
    rapl_source_ops.close(&p->src);
    fsroot_close(&p->root);
    free(p->set);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_forced_perf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auto_perf_faster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auto_powercap_faster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_pmu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forced_powercap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eacces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_domain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enodev, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stub, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tick_read_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offline_cpu, setup, teardown),
        cmocka_unit_test(test_path_parse),
        cmocka_unit_test_setup_teardown(test_real_kernel_software_pmu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_rapl_pmu, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
