/*
 * test_tickpath: the sampling path allocates nothing and opens nothing.
 *
 * This program is linked with -Wl,--wrap for malloc, calloc, realloc, open64, openat64, fopen64
 * and fdopendir (the names the calls take with _FILE_OFFSET_BITS=64), so every call that carma's
 * own code makes to them goes through the counters below. After the sources are probed and the
 * samples journal is open, many ticks of the sampler and of the journal must not move the counters,
 * for every source (rapl, hwmon, model, procfs; nvml in test_nvml.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "sampler/sampler.h"
#include "collect/collector.h"
#include "sampler/samples_csv.h"
#include "srt/host.h"
#include "testutil.h"

static int counting;
static int allocs, opens;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
/* with _FILE_OFFSET_BITS=64 the calls land on the 64-bit names */
int __real_open64(const char *path, int flags, ...);
int __real_openat64(int dirfd, const char *path, int flags, ...);
FILE *__real_fopen64(const char *path, const char *mode);
DIR *__real_fdopendir(int fd);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
int __wrap_open64(const char *path, int flags, ...);
int __wrap_openat64(int dirfd, const char *path, int flags, ...);
FILE *__wrap_fopen64(const char *path, const char *mode);
DIR *__wrap_fdopendir(int fd);

void *__wrap_malloc(size_t n)
{
    allocs += counting;
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    allocs += counting;
    return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    allocs += counting;
    return __real_realloc(p, n);
}

int __wrap_open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = (flags & O_CREAT) ? va_arg(ap, int) : 0;
    va_end(ap);
    opens += counting;
    return __real_open64(path, flags, mode);
}

int __wrap_openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = (flags & O_CREAT) ? va_arg(ap, int) : 0;
    va_end(ap);
    opens += counting;
    return __real_openat64(dirfd, path, flags, mode);
}

FILE *__wrap_fopen64(const char *path, const char *mode)
{
    opens += counting;
    return __real_fopen64(path, mode);
}

DIR *__wrap_fdopendir(int fd)
{
    opens += counting;
    return __real_fdopendir(fd);
}

/* Probes the fixture with the given sources, then counts what 200 ticks allocate and open. */
static void ticks_on(const char *fixture, const char *sources, size_t want_channels)
{
    tu_copy_fixture(fixture);
    struct sampler_opts o = {
        .root = tu_dir, .interval_ns = SAMPLER_INTERVAL_MIN_NS, .sources = sources};
    o.model.idle_w = -1;
    struct sampler *s = tu_sampler_new(&o);
    assert_int_equal(s->set.n, want_channels);
    char path[4200];
    snprintf(path, sizeof path, "%s/samples.csv", tu_dir);
    struct carma_err e = {0};
    struct samples_csv *w = samples_csv_open(path, s, &e);
    assert_non_null(w);
    sampler_tick(s); /* the first tick, like every later one, must not allocate either */
    allocs = opens = 0;
    counting = 1;
    for (int i = 0; i < 200; i++) {
        sampler_tick(s);
        assert_int_equal(samples_csv_write_tick(w, s, &e), 0);
    }
    counting = 0;
    assert_int_equal(allocs, 0);
    assert_int_equal(opens, 0);
    assert_int_equal(samples_csv_rows(w), 201 * want_channels - want_channels);
    assert_int_equal(samples_csv_close(w), 0);
    sampler_free(s);
}

static void test_rapl(void **state)
{
    (void)state;
    ticks_on("intel-2s", "rapl", 6);
}

/* The rapl perf path (one group read() a package): software events described as the RAPL PMU,
 * read through the real kernel, where CPU-wide events are allowed. */
static void test_rapl_perf(void **state)
{
    (void)state;
    char para[16] = "";
    if (geteuid() != 0 &&
        (tu_slurp("/proc/sys/kernel/perf_event_paranoid", para, sizeof para) == 0 ||
         atoi(para) > 0)) {
        print_message("[  SKIP    ] CPU-wide perf events need root or perf_event_paranoid <= 0\n");
        skip();
    }
    static const char *const ev[][2] = {{"energy-pkg", "event=0x00\n"},
                                        {"energy-cores", "event=0x00\n"}};
    tu_put("sys/bus/event_source/devices/power/type", "1\n");
    tu_put("sys/bus/event_source/devices/power/cpumask", "0\n");
    for (size_t i = 0; i < 2; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "sys/bus/event_source/devices/power/events/%s", ev[i][0]);
        tu_put(rel, ev[i][1]);
        snprintf(rel, sizeof rel, "sys/bus/event_source/devices/power/events/%s.scale", ev[i][0]);
        tu_put(rel, "2.3283064365386962890625e-10\n");
        snprintf(rel, sizeof rel, "sys/bus/event_source/devices/power/events/%s.unit", ev[i][0]);
        tu_put(rel, "Joules\n");
    }
    ticks_on("vm-empty", "rapl", 2);
}

static void test_hwmon(void **state)
{
    (void)state;
    ticks_on("grace", "hwmon", 28);
}

static void test_model(void **state)
{
    (void)state;
    ticks_on("vm-empty", "model", 1);
}

/* carma record's cycle: the sampler's tick, srt-slurm's host collector rows and carma's own
 * collect rows (collect_out_sampler) allocate and open nothing after the first cycle. */
static void test_record(void **state)
{
    (void)state;
    tu_copy_fixture("grace");
    struct sampler_opts o = {
        .root = tu_dir, .interval_ns = SAMPLER_INTERVAL_MIN_NS, .sources = "hwmon"};
    struct sampler *s = tu_sampler_new(&o);
    static struct srt_host_sensor sensors[SRT_HOST_SENSORS_MAX];
    static struct srt_host_value v[SRT_HOST_SENSORS_MAX];
    size_t n = srt_host_sensors(&s->set, SRT_HOST_ACPI, sensors, SRT_HOST_SENSORS_MAX);
    assert_int_equal(n, 8);
    char nodes[4200];
    snprintf(nodes, sizeof nodes, "%s/out/nodes", tu_dir);
    struct srt_host_opts ho = {.nodes_dir = nodes,
                               .host = "gh-01",
                               .schema = 3,
                               .source = SRT_HOST_ACPI,
                               .requested_source = "auto",
                               .interval_ns = SAMPLER_INTERVAL_MIN_NS,
                               .set = &s->set,
                               .sensors = sensors,
                               .n = n};
    struct carma_err e = {0};
    struct srt_host *w = srt_host_open(&ho, &e);
    assert_non_null(w);
    struct collect_out *co = collect_out_open(tu_dir, COLLECT_HOST_SAMPLES, &e);
    assert_non_null(co);
    tzset();
    for (int i = 0; i < 201; i++) {
        if (i == 1) {
            allocs = opens = 0;
            counting = 1;
        }
        sampler_tick(s);
        for (size_t k = 0; k < n; k++) {
            const struct reading *r = &s->readings[sensors[k].channel];
            v[k].valid = (r->valid & READING_POWER) != 0;
            v[k].power_w = r->power_w;
        }
        assert_int_equal(srt_host_cycle(w, s->real_now, v, &e), 8);
        collect_out_cycle_begin(co, (uint64_t)i);
        collect_out_sampler(co, "gh-01", "local", s);
        assert_int_equal(collect_out_cycle_end(co, &e), 0);
    }
    counting = 0;
    assert_int_equal(allocs, 0);
    assert_int_equal(opens, 0);
    assert_int_equal(srt_host_row_count(w), 201 * 8);
    assert_int_equal(collect_out_rows(co), 201 * 28);
    assert_int_equal(srt_host_finish(w, &e), 0);
    assert_int_equal(collect_out_close(co, &e), 0);
    sampler_free(s);
}

/* The counters do count: a probe allocates and opens. */
static void test_counters_work(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct sampler_opts o = {.root = tu_dir, .sources = "rapl"};
    allocs = opens = 0;
    counting = 1;
    struct sampler *s = tu_sampler_new(&o);
    counting = 0;
    assert_true(allocs > 0);
    assert_true(opens > 0);
    sampler_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counters_work, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_rapl, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_rapl_perf, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_hwmon, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_model, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_record, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
