/*
 * bench_read: what one power-channel read costs, carma's way and the naive way.
 *
 * On a fixture tree (bench/make_fixture.sh: 8 RAPL packages with core, uncore and dram
 * subzones, 32 energy counters) it times, in the same process and in interleaved rounds:
 *   - carma's sampler: sampler_tick() over every channel (the files opened once at probe,
 *     pread at offset 0, strict parse, wrap-safe integration, and the proc/stat read for
 *     utilization when it is due), reported per channel and per tick;
 *   - carma's raw read: fsroot_pread_text() + parse_u64() on fds opened once, which is the
 *     read without the integration;
 *   - the naive peer: open() + read() + close() + strtoull() of each energy_uj path on every
 *     tick, which is what a shell or Python poller and many tools do;
 *   - the floor: one null system call (getppid) per channel, what any reader that makes a
 *     system call per channel pays at least on this machine (it is large on a VM whose kernel
 *     isolates page tables: there it, not the reader, decides the figure).
 * The proc/stat read that the sampler makes for utilization is timed apart, per read.
 * Each figure is the median (and minimum) over the rounds; the ratios are medians of the
 * per-round ratios, so that a noisy neighbour slows both sides of a ratio alike.
 *
 * Three helper modes serve bench/run.sh's CPU-time measurement:
 *   --naive-loop INTERVAL SECONDS  the naive peer as a sampler: every INTERVAL for SECONDS,
 *                                  read the same channel files with open/read/close;
 *   --wake-loop INTERVAL SECONDS   the floor of any sampler that sleeps between ticks: carma's
 *                                  wake-up (timerfd, poll, read) alone, no file read;
 *   --read-loop INTERVAL SECONDS   the floor of carma's tick: the same wake-up, then the
 *                                  sampler's sources read every channel (their read(): pread
 *                                  and parse on the files opened at probe), nothing else: no
 *                                  integration, no proc/stat, no process tree, no output;
 *   --rusage -- CMD [ARGS...]      run CMD, wait for it and print its CPU time (user and
 *                                  system, its waited-for descendants included) and wall time.
 * and one comparison of the rapl source's two read paths:
 *   --perf-group CPU EVENTS        (after --root) one read() of a perf event group on CPU
 *                                  (pid -1, PERF_FORMAT_GROUP: the read the rapl perf path
 *                                  makes per package each tick) against as many preads + parses
 *                                  of the tree's energy_uj files (the powercap path) and as many
 *                                  null system calls; EVENTS is sw:N (N cpu-clock software
 *                                  events, where the machine has no RAPL PMU) or
 *                                  TYPE:CONFIG,CONFIG,... (e.g. the RAPL PMU's type from
 *                                  /sys/bus/event_source/devices/power/type and 0x2,0x1,0x3).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <linux/perf_event.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fsroot.h"
#include "core/parse.h"
#include "core/timeutil.h"
#include "sampler/sampler.h"

#define ROUNDS_DEFAULT  7
#define ROUNDS_MAX      101
#define TICKS_DEFAULT   20000
#define WARMUP_TICKS    1000
#define CHUNK_TICKS     500
#define TARGET_READ_US  2.0
#define POWERCAP_DIR    "sys/class/powercap"
#define NAIVE_FILES_MAX CHANNELS_MAX

enum measure { M_SAMPLER, M_RAW, M_PROCSTAT, M_NAIVE, M_SYSCALL, M_COUNT };

struct bench {
    struct sampler *s;
    size_t nch;                   /* sampler channels */
    int fds[CHANNELS_MAX];        /* the channels' files, opened once (raw read) */
    char *naive[NAIVE_FILES_MAX]; /* absolute energy_uj paths (naive peer) */
    size_t nnaive;
    unsigned long ticks;
    unsigned rounds;
    /* per round: ns per tick of each measurement */
    double tick_ns[M_COUNT][ROUNDS_MAX];
};

static volatile uint64_t sink;

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_read --root DIR [--rounds N] [--ticks N] [--json | --json-out FILE]\n"
               "       bench_read --root DIR --naive-loop INTERVAL SECONDS\n"
               "       bench_read --wake-loop INTERVAL SECONDS\n"
               "       bench_read --root DIR --read-loop INTERVAL SECONDS\n"
               "       bench_read --root DIR [--rounds N] [--ticks N] --perf-group CPU EVENTS\n"
               "       bench_read --rusage -- CMD [ARGS...]\n");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, size_t n)
{
    double tmp[ROUNDS_MAX];
    memcpy(tmp, v, n * sizeof *v);
    qsort(tmp, n, sizeof *tmp, cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2.0;
}

static double minimum(const double *v, size_t n)
{
    double m = v[0];
    for (size_t i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

/* Lists ROOT/sys/class/powercap/intel-rapl:N/energy_uj as absolute paths, the way a script
 * globs them. Returns how many, or a negative errno. */
static int naive_list(const char *root, char **out, size_t cap)
{
    char dir[4200];
    int len = snprintf(dir, sizeof dir, "%s/%s", root, POWERCAP_DIR);
    if (len < 0 || (size_t)len >= sizeof dir)
        return -ENAMETOOLONG;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    size_t n = 0;
    struct dirent *de;
    int r = 0;
    while ((de = readdir(d)) && n < cap) {
        if (strncmp(de->d_name, "intel-rapl:", 11) != 0)
            continue;
        char path[4400];
        int plen = snprintf(path, sizeof path, "%s/%s/energy_uj", dir, de->d_name);
        if (plen < 0 || (size_t)plen >= sizeof path || access(path, R_OK) != 0)
            continue;
        if (!(out[n] = strdup(path))) {
            r = -ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    if (r < 0) {
        while (n)
            free(out[--n]);
        return r;
    }
    qsort(out, n, sizeof *out, cmp_str);
    return (int)n;
}

/* The naive read of one counter: open, read, close, strtoull. */
static uint64_t naive_read(const char *path)
{
    char buf[32];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtoull(buf, NULL, 10);
}

static void run_sampler(struct bench *b, unsigned long ticks)
{
    for (unsigned long t = 0; t < ticks; t++)
        sampler_tick(b->s);
    sink += (uint64_t)b->s->ticks;
}

static void run_raw(struct bench *b, unsigned long ticks)
{
    char buf[32];
    uint64_t acc = 0;
    for (unsigned long t = 0; t < ticks; t++) {
        for (size_t i = 0; i < b->nch; i++) {
            uint64_t v;
            if (fsroot_pread_text(b->fds[i], buf, sizeof buf) > 0 && parse_u64(buf, &v) == 0)
                acc += v;
        }
    }
    sink += acc;
}

static void run_procstat(struct bench *b, unsigned long ticks)
{
    for (unsigned long t = 0; t < ticks; t++)
        procstat_sample(&b->s->util);
    sink += b->s->util.busy_ticks;
}

static void run_naive(struct bench *b, unsigned long ticks)
{
    uint64_t acc = 0;
    for (unsigned long t = 0; t < ticks; t++)
        for (size_t i = 0; i < b->nnaive; i++)
            acc += naive_read(b->naive[i]);
    sink += acc;
}

static void run_syscall(struct bench *b, unsigned long ticks)
{
    long acc = 0;
    for (unsigned long t = 0; t < ticks; t++)
        for (size_t i = 0; i < b->nch; i++)
            acc += syscall(SYS_getppid);
    sink += (uint64_t)acc;
}

static void run_one(struct bench *b, enum measure m, unsigned long ticks)
{
    switch (m) {
    case M_SAMPLER:
        run_sampler(b, ticks);
        break;
    case M_RAW:
        run_raw(b, ticks);
        break;
    case M_PROCSTAT:
        if (b->s->have_util)
            run_procstat(b, ticks);
        break;
    case M_NAIVE:
        run_naive(b, ticks);
        break;
    case M_SYSCALL:
        run_syscall(b, ticks);
        break;
    case M_COUNT:
        break;
    }
}

/* Each round runs every measurement for b->ticks ticks, in chunks of CHUNK_TICKS that take
 * turns (in a rotating order), so that a burst of load elsewhere falls on all of them. */
static void measure_all(struct bench *b)
{
    for (int m = 0; m < M_COUNT; m++)
        run_one(b, (enum measure)m, WARMUP_TICKS);
    for (unsigned r = 0; r < b->rounds; r++) {
        int64_t total[M_COUNT] = {0};
        unsigned long done = 0;
        for (unsigned c = 0; done < b->ticks; c++) {
            unsigned long n = b->ticks - done < CHUNK_TICKS ? b->ticks - done : CHUNK_TICKS;
            for (int k = 0; k < M_COUNT; k++) {
                enum measure m = (enum measure)((r + c + (unsigned)k) % M_COUNT);
                int64_t t0 = time_mono_ns();
                run_one(b, m, n);
                total[m] += time_mono_ns() - t0;
            }
            done += n;
        }
        for (int m = 0; m < M_COUNT; m++)
            b->tick_ns[m][r] = (double)total[m] / (double)b->ticks;
    }
}

struct figures {
    double med[M_COUNT], min[M_COUNT]; /* ns per tick */
    double ratio_sampler, ratio_raw;   /* naive / carma, median of per-round ratios */
    double sampler_ch_us, raw_ch_us, naive_ch_us, floor_ch_us;
    double sampler_ch_min_us, raw_ch_min_us, naive_ch_min_us, floor_ch_min_us;
    double procstat_us; /* per proc/stat read */
    double rest_us;     /* per tick: sampler minus the channel reads, median of the rounds */
};

static void figures_of(const struct bench *b, struct figures *f)
{
    double rs[ROUNDS_MAX], rr[ROUNDS_MAX], rest[ROUNDS_MAX];
    size_t n = b->rounds;
    for (int m = 0; m < M_COUNT; m++) {
        f->med[m] = median(b->tick_ns[m], n);
        f->min[m] = minimum(b->tick_ns[m], n);
    }
    for (size_t r = 0; r < n; r++) {
        double naive_ch = b->tick_ns[M_NAIVE][r] / (double)b->nnaive;
        rs[r] = naive_ch / (b->tick_ns[M_SAMPLER][r] / (double)b->nch);
        rr[r] = naive_ch / (b->tick_ns[M_RAW][r] / (double)b->nch);
        rest[r] = b->tick_ns[M_SAMPLER][r] - b->tick_ns[M_RAW][r];
    }
    f->ratio_sampler = median(rs, n);
    f->ratio_raw = median(rr, n);
    double ch = (double)b->nch, nv = (double)b->nnaive;
    f->sampler_ch_us = f->med[M_SAMPLER] / ch / 1e3;
    f->raw_ch_us = f->med[M_RAW] / ch / 1e3;
    f->naive_ch_us = f->med[M_NAIVE] / nv / 1e3;
    f->sampler_ch_min_us = f->min[M_SAMPLER] / ch / 1e3;
    f->raw_ch_min_us = f->min[M_RAW] / ch / 1e3;
    f->naive_ch_min_us = f->min[M_NAIVE] / nv / 1e3;
    f->floor_ch_us = f->med[M_SYSCALL] / ch / 1e3;
    f->floor_ch_min_us = f->min[M_SYSCALL] / ch / 1e3;
    f->procstat_us = f->med[M_PROCSTAT] / 1e3;
    f->rest_us = median(rest, n) / 1e3;
}

static void print_text(const struct bench *b, const struct figures *f, const char *root)
{
    bool met = f->sampler_ch_us <= TARGET_READ_US;
    printf("bench_read: %zu channels, fixture %s\n", b->nch, root);
    printf("  %u rounds x %lu ticks, median [min] per channel read\n\n", b->rounds, b->ticks);
    printf("  %-46s %8.3f us [%.3f]\n", "carma sampler_tick (read, parse, integrate)",
           f->sampler_ch_us, f->sampler_ch_min_us);
    printf("  %-46s %8.3f us [%.3f]\n", "carma raw read (pread + parse_u64)", f->raw_ch_us,
           f->raw_ch_min_us);
    printf("  %-46s %8.3f us [%.3f]\n", "naive open/read/close + strtoull", f->naive_ch_us,
           f->naive_ch_min_us);
    printf("  %-46s %8.3f us [%.3f]\n", "floor: one null system call", f->floor_ch_us,
           f->floor_ch_min_us);
    printf("\n  per tick: sampler %.1f us = %zu channel reads %.1f us + the rest %.1f us"
           " (integration, clocks, proc/stat when due)\n",
           f->med[M_SAMPLER] / 1e3, b->nch, f->med[M_RAW] / 1e3, f->rest_us);
    printf("  proc/stat read + parse: %.1f us per read\n", f->procstat_us);
    printf("  ratio naive / carma sampler: %.2fx   naive / carma raw read: %.2fx\n",
           f->ratio_sampler, f->ratio_raw);
    printf("  carma raw read / floor: %.2fx\n", f->raw_ch_us / f->floor_ch_us);
    printf("  target <= %.1f us per channel read (sampler, everything included): %s (%.3f us)\n",
           TARGET_READ_US, met ? "met" : "MISSED", f->sampler_ch_us);
    if (!met && f->floor_ch_us > TARGET_READ_US)
        printf("  note: a null system call alone costs %.3f us here, above the target: no reader "
               "that makes one system call per channel can meet it on this machine\n",
               f->floor_ch_us);
}

/* Writes s as a JSON string. */
static void json_str(FILE *o, const char *s)
{
    fputc('"', o);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(o, "\\%c", c);
        else if (c < 0x20)
            fprintf(o, "\\u%04x", c);
        else
            fputc(c, o);
    }
    fputc('"', o);
}

static void print_json(FILE *o, const struct bench *b, const struct figures *f, const char *root)
{
    fprintf(o, "{\"benchmark\":\"bench_read\",\"fixture\":");
    json_str(o, root);
    fprintf(o, ",\"channels\":%zu,\"naive_files\":%zu,\"rounds\":%u,\"ticks\":%lu,\n", b->nch,
            b->nnaive, b->rounds, b->ticks);
    fprintf(o, " \"sampler_us_per_channel\":{\"median\":%.4f,\"min\":%.4f},\n", f->sampler_ch_us,
            f->sampler_ch_min_us);
    fprintf(o, " \"raw_read_us_per_channel\":{\"median\":%.4f,\"min\":%.4f},\n", f->raw_ch_us,
            f->raw_ch_min_us);
    fprintf(o, " \"naive_us_per_channel\":{\"median\":%.4f,\"min\":%.4f},\n", f->naive_ch_us,
            f->naive_ch_min_us);
    fprintf(o, " \"syscall_floor_us\":{\"median\":%.4f,\"min\":%.4f},\n", f->floor_ch_us,
            f->floor_ch_min_us);
    fprintf(o,
            " \"sampler_us_per_tick\":%.3f,\"reads_us_per_tick\":%.3f,\"rest_us_per_tick\":%.3f,"
            "\"procstat_us_per_read\":%.3f,\n",
            f->med[M_SAMPLER] / 1e3, f->med[M_RAW] / 1e3, f->rest_us, f->procstat_us);
    fprintf(o,
            " \"ratio_naive_over_sampler\":%.3f,\"ratio_naive_over_raw\":%.3f,"
            "\"ratio_raw_over_floor\":%.3f,\n",
            f->ratio_sampler, f->ratio_raw, f->raw_ch_us / f->floor_ch_us);
    fprintf(o, " \"target_us_per_channel\":%.1f,\"target_met\":%s}\n", TARGET_READ_US,
            f->sampler_ch_us <= TARGET_READ_US ? "true" : "false");
}

static int parse_count(const char *s, unsigned long lo, unsigned long hi, unsigned long *ret)
{
    uint64_t v;
    if (parse_u64(s, &v) < 0 || v < lo || v > hi)
        return -EINVAL;
    *ret = (unsigned long)v;
    return 0;
}

/* The naive peer as a sampler: every interval for the given time, read every file. */
static int naive_loop(const char *root, const char *interval, const char *seconds)
{
    int64_t every_ns;
    unsigned long secs;
    if (parse_duration_ns(interval, &every_ns) < 0 || parse_count(seconds, 0, 86400, &secs) < 0) {
        fprintf(stderr, "bench_read: --naive-loop wants INTERVAL (e.g. 1ms) and SECONDS\n");
        return 2;
    }
    char *files[NAIVE_FILES_MAX];
    int n = naive_list(root, files, NAIVE_FILES_MAX);
    if (n <= 0) {
        fprintf(stderr, "bench_read: no readable energy_uj below %s/%s\n", root, POWERCAP_DIR);
        return 1;
    }
    int64_t next = time_mono_ns();
    int64_t end = next + (int64_t)secs * NS_PER_S;
    uint64_t acc = 0, ticks = 0;
    for (;;) {
        next += every_ns;
        if (next > end)
            break;
        struct timespec ts = {.tv_sec = next / NS_PER_S, .tv_nsec = next % NS_PER_S};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        for (int i = 0; i < n; i++)
            acc += naive_read(files[i]);
        ticks++;
    }
    sink += acc;
    for (int i = 0; i < n; i++)
        free(files[i]);
    fprintf(stderr, "naive-loop: %llu ticks of %d files\n", (unsigned long long)ticks, n);
    return 0;
}

/* The floor of a sampler that sleeps between its ticks: carma's wake-up (a periodic timerfd,
 * poll, the timerfd's read) every interval for the given time, and nothing else; with s, each
 * wake-up is followed by the reads of s's sources (their read(), into s's readings) alone. */
static int wake_loop(struct sampler *s, const char *interval, const char *seconds)
{
    int64_t every_ns;
    unsigned long secs;
    const char *mode = s ? "read-loop" : "wake-loop";
    if (parse_duration_ns(interval, &every_ns) < 0 || parse_count(seconds, 0, 86400, &secs) < 0) {
        fprintf(stderr, "bench_read: --%s wants INTERVAL (e.g. 1ms) and SECONDS\n", mode);
        return 2;
    }
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    struct itimerspec its = {
        .it_interval = {.tv_sec = every_ns / NS_PER_S, .tv_nsec = every_ns % NS_PER_S},
        .it_value = {.tv_sec = every_ns / NS_PER_S, .tv_nsec = every_ns % NS_PER_S},
    };
    if (fd < 0 || timerfd_settime(fd, 0, &its, NULL) < 0) {
        perror("bench_read: timerfd");
        return 1;
    }
    int64_t end = time_mono_ns() + (int64_t)secs * NS_PER_S;
    uint64_t ticks = 0;
    while (time_mono_ns() + every_ns <= end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            break;
        uint64_t n;
        if (read(fd, &n, sizeof n) == (ssize_t)sizeof n)
            ticks += n;
        for (size_t k = 0; s && k < s->nsrc; k++)
            if (s->src[k].status == 0 && s->src[k].count)
                s->src[k].ops->read(&s->src[k], &s->readings[s->src[k].first]);
    }
    close(fd);
    fprintf(stderr, "%s: %llu ticks\n", mode, (unsigned long long)ticks);
    return 0;
}

/* --read-loop: carma's wake-up and its sources' reads of the channels below root. */
static int read_loop(const char *root, const char *interval, const char *seconds)
{
    struct sampler_opts so = {.root = root, .sources = "rapl"};
    struct carma_err e = {0};
    struct sampler *s = sampler_new(&so, &e);
    if (!s) {
        fprintf(stderr, "bench_read: %s\n", e.msg);
        return 1;
    }
    int r = s->set.n ? wake_loop(s, interval, seconds) : 1;
    if (!s->set.n)
        fprintf(stderr, "bench_read: no RAPL channel below %s\n", root);
    sampler_free(s);
    return r;
}

#define PG_MAX 16

static double ns_per_tick(int64_t t0, int64_t t1, unsigned long ticks)
{
    return (double)(t1 - t0) / (double)ticks;
}

/* --perf-group: a perf group read against the same number of powercap preads (see the top). */
static int perf_group(const char *root, const char *cpu_s, const char *events, unsigned long rounds,
                      unsigned long ticks)
{
    uint32_t type = PERF_TYPE_SOFTWARE;
    uint64_t cfg[PG_MAX];
    size_t n = 0;
    unsigned long cpu;
    if (parse_count(cpu_s, 0, 65535, &cpu) < 0)
        return fprintf(stderr, "bench_read: --perf-group: '%s' is not a CPU\n", cpu_s), 2;
    if (strncmp(events, "sw:", 3) == 0) {
        unsigned long k;
        if (parse_count(events + 3, 1, PG_MAX, &k) < 0)
            return fprintf(stderr, "bench_read: --perf-group: sw:1..%d\n", PG_MAX), 2;
        for (n = 0; n < k; n++)
            cfg[n] = PERF_COUNT_SW_CPU_CLOCK;
    } else {
        char *end;
        type = (uint32_t)strtoul(events, &end, 0);
        if (*end != ':')
            return fprintf(stderr,
                           "bench_read: --perf-group: '%s' is not sw:N or "
                           "TYPE:CONFIG,...\n",
                           events),
                   2;
        while (*end == ':' || *end == ',') {
            if (n == PG_MAX)
                return fprintf(stderr, "bench_read: --perf-group: at most %d events\n", PG_MAX), 2;
            cfg[n++] = strtoull(end + 1, &end, 0);
        }
        if (*end)
            return fprintf(stderr,
                           "bench_read: --perf-group: '%s' is not sw:N or "
                           "TYPE:CONFIG,...\n",
                           events),
                   2;
    }
    int fds[PG_MAX], pfds[PG_MAX];
    for (size_t i = 0; i < n; i++) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = type;
        a.config = cfg[i];
        a.read_format = PERF_FORMAT_GROUP;
        long fd =
            syscall(SYS_perf_event_open, &a, -1, (int)cpu, i ? fds[0] : -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0)
            return fprintf(stderr, "bench_read: perf_event_open of %u:0x%llx on CPU %lu: %s\n",
                           type, (unsigned long long)cfg[i], cpu, strerror(errno)),
                   1;
        fds[i] = (int)fd;
    }
    struct fsroot r;
    struct carma_err e = {0};
    if (fsroot_open(&r, root, &e) < 0)
        return fprintf(stderr, "bench_read: %s\n", e.msg), 1;
    char *files[NAIVE_FILES_MAX];
    int nf = naive_list(root, files, NAIVE_FILES_MAX);
    if (nf <= 0)
        return fprintf(stderr, "bench_read: no energy_uj file below %s\n", root), 1;
    for (size_t i = 0; i < n; i++) {
        const char *rel = files[i % (size_t)nf] + strlen(root);
        while (*rel == '/')
            rel++;
        pfds[i] = fsroot_open_file(&r, rel);
        if (pfds[i] < 0)
            return fprintf(stderr, "bench_read: cannot open %s\n", rel), 1;
    }
    double g[ROUNDS_MAX], p[ROUNDS_MAX], sc[ROUNDS_MAX];
    uint64_t buf[1 + PG_MAX];
    char text[32];
    for (unsigned long k = 0; k < rounds; k++) {
        int64_t t0 = time_mono_ns();
        for (unsigned long t = 0; t < ticks; t++) {
            if (read(fds[0], buf, (1 + n) * sizeof buf[0]) != (ssize_t)((1 + n) * sizeof buf[0]))
                return fprintf(stderr, "bench_read: group read: %s\n", strerror(errno)), 1;
            sink += buf[1];
        }
        int64_t t1 = time_mono_ns();
        for (unsigned long t = 0; t < ticks; t++)
            for (size_t i = 0; i < n; i++) {
                uint64_t v = 0;
                if (fsroot_pread_text(pfds[i], text, sizeof text) > 0 && parse_u64(text, &v) == 0)
                    sink += v;
            }
        int64_t t2 = time_mono_ns();
        for (unsigned long t = 0; t < ticks; t++)
            for (size_t i = 0; i < n; i++)
                sink += (uint64_t)syscall(SYS_getppid);
        int64_t t3 = time_mono_ns();
        g[k] = ns_per_tick(t0, t1, ticks);
        p[k] = ns_per_tick(t1, t2, ticks);
        sc[k] = ns_per_tick(t2, t3, ticks);
    }
    printf("perf group of %zu events (type %u) on CPU %lu, %lu rounds of %lu ticks; per tick, "
           "median (min) ns:\n",
           n, type, cpu, rounds, ticks);
    printf("  one group read()          %10.0f (%.0f)\n", median(g, rounds), minimum(g, rounds));
    printf("  %2zu powercap preads+parse  %10.0f (%.0f)\n", n, median(p, rounds),
           minimum(p, rounds));
    printf("  %2zu null system calls      %10.0f (%.0f)\n", n, median(sc, rounds),
           minimum(sc, rounds));
    for (size_t i = 0; i < n; i++) {
        close(fds[i]);
        close(pfds[i]);
    }
    for (int i = 0; i < nf; i++)
        free(files[i]);
    fsroot_close(&r);
    return 0;
}

/* Runs argv, waits for it and prints its CPU and wall time. Returns its exit status. */
static int rusage_run(char **argv)
{
    int64_t t0 = time_mono_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench_read: fork");
        return 1;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        perror(argv[0]);
        _exit(127);
    }
    int ws;
    struct rusage ru;
    while (wait4(pid, &ws, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("bench_read: wait4");
            return 1;
        }
    }
    int64_t t1 = time_mono_ns();
    double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    int status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    printf("rusage user_s=%.6f sys_s=%.6f wall_s=%.6f status=%d\n", user, sys,
           (double)(t1 - t0) / 1e9, status);
    fflush(stdout);
    return status;
}

int main(int argc, char **argv)
{
    const char *root = NULL;
    unsigned long rounds = ROUNDS_DEFAULT, ticks = TICKS_DEFAULT;
    bool json = false;
    const char *json_out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (strcmp(a, "--rusage") == 0) {
            if (i + 2 < argc && strcmp(argv[i + 1], "--") == 0)
                return rusage_run(argv + i + 2);
            usage(stderr);
            return 2;
        } else if (strcmp(a, "--root") == 0 && more) {
            root = argv[++i];
        } else if (strcmp(a, "--rounds") == 0 && more) {
            if (parse_count(argv[++i], 1, ROUNDS_MAX, &rounds) < 0) {
                fprintf(stderr, "bench_read: --rounds wants 1..%d\n", ROUNDS_MAX);
                return 2;
            }
        } else if (strcmp(a, "--ticks") == 0 && more) {
            if (parse_count(argv[++i], 1, 100000000, &ticks) < 0) {
                fprintf(stderr, "bench_read: --ticks wants 1..100000000\n");
                return 2;
            }
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--json-out") == 0 && more) {
            json_out = argv[++i];
        } else if (strcmp(a, "--naive-loop") == 0 && i + 2 < argc) {
            if (!root) {
                fprintf(stderr, "bench_read: --root comes before --naive-loop\n");
                return 2;
            }
            return naive_loop(root, argv[i + 1], argv[i + 2]);
        } else if (strcmp(a, "--perf-group") == 0 && i + 2 < argc) {
            if (!root) {
                fprintf(stderr, "bench_read: --root comes before --perf-group\n");
                return 2;
            }
            return perf_group(root, argv[i + 1], argv[i + 2], rounds, ticks);
        } else if (strcmp(a, "--wake-loop") == 0 && i + 2 < argc) {
            return wake_loop(NULL, argv[i + 1], argv[i + 2]);
        } else if (strcmp(a, "--read-loop") == 0 && i + 2 < argc) {
            if (!root) {
                fprintf(stderr, "bench_read: --root comes before --read-loop\n");
                return 2;
            }
            return read_loop(root, argv[i + 1], argv[i + 2]);
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!root) {
        usage(stderr);
        return 2;
    }

    int status = 1;
    struct bench *b = calloc(1, sizeof *b);
    if (!b) {
        fprintf(stderr, "bench_read: out of memory\n");
        return 1;
    }
    b->rounds = (unsigned)rounds;
    b->ticks = ticks;
    struct sampler_opts so = {.root = root, .sources = "rapl"};
    struct carma_err e = {0};
    b->s = sampler_new(&so, &e);
    if (!b->s) {
        fprintf(stderr, "bench_read: %s\n", e.msg);
        goto out;
    }
    b->nch = b->s->set.n;
    if (b->nch == 0) {
        fprintf(stderr, "bench_read: no RAPL channel below %s (make it with make_fixture.sh)\n",
                root);
        goto out;
    }
    for (size_t i = 0; i < b->nch; i++) {
        b->fds[i] = fsroot_open_file(&b->s->root, b->s->set.ch[i].path);
        if (b->fds[i] < 0) {
            fprintf(stderr, "bench_read: cannot open %s: %s\n", b->s->set.ch[i].path,
                    strerror(-b->fds[i]));
            b->nch = i;
            goto out;
        }
    }
    int nn = naive_list(root, b->naive, NAIVE_FILES_MAX);
    if (nn <= 0) {
        fprintf(stderr, "bench_read: the naive peer found no energy_uj file\n");
        goto out;
    }
    b->nnaive = (size_t)nn;
    if (b->nnaive != b->nch)
        fprintf(stderr, "bench_read: note: naive peer reads %zu files, the sampler %zu\n",
                b->nnaive, b->nch);
    if (!b->s->have_util)
        fprintf(stderr, "bench_read: note: no proc/stat below the root: ticks read no "
                        "utilization\n");
    measure_all(b);
    struct figures f;
    figures_of(b, &f);
    if (json)
        print_json(stdout, b, &f, root);
    else
        print_text(b, &f, root);
    status = 0;
    if (json_out) {
        FILE *o = fopen(json_out, "w");
        if (o)
            print_json(o, b, &f, root);
        if (!o || fclose(o) != 0) {
            fprintf(stderr, "bench_read: cannot write %s: %s\n", json_out, strerror(errno));
            status = 1;
        }
    }
out:
    for (size_t i = 0; i < b->nch; i++)
        close(b->fds[i]);
    for (size_t i = 0; i < b->nnaive; i++)
        free(b->naive[i]);
    sampler_free(b->s);
    free(b);
    return status;
}
