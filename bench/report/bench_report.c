/*
 * bench_report: `carma report DIR`'s input side (src/srt/log.c) and numeric core
 * (src/analysis/series.c) end to end on a generated srt-slurm log directory, for
 * bench/report/run.sh to time against numpy_srtlog.py doing the same work.
 *
 *   bench_report gen DIR ROWS [HOSTS] [GPUS]
 *       writes a whole srt-slurm log directory: DIR/benchmark.out (sa-bench's "Serving
 *       Benchmark Result"), DIR/sa-bench_isl_1024_osl_1024/results_concurrency_N_*.json for
 *       ten windows that together cover the run (concurrency 1, 2, 4, ... 512), and
 *       DIR/power/samples.csv (v2, ROWS rows, HOSTS x GPUS devices, default 2 x 8, one scrape
 *       a second from t = 1785168098, power in mW steps, gpu_util_pct set, sm_active blank)
 *       with DIR/power/manifest.json (expected_devices: the first host's GPUs are prefill
 *       workers, the others' decode workers, GPU 0 of every host also an agg worker).
 *   bench_report run DIR OUT
 *       srt_log_discover, srt_log_load_windows, srt_log_load_cpu/gpu (what srt_log_open does),
 *       then srt-slurm's snapped window (series_window_snap) of every GPU device, node and role
 *       series for every window. Writes one line per (window, series) to OUT,
 *         snap <label> <start> <end> <joules> <avg> <mean> <min> <p5> <p50> <p95> <p99> <max> <n>
 *       and prints the time of each phase, the samples held (device, node, role and
 *       utilization series) and the peak memory per sample held as one JSON object.
 *
 *   bench_report parse FILE
 *       the bare parse: reads FILE in 1 MiB blocks and only finds its line ends and field
 *       separators; prints the time, rows and fields as JSON (the floor of any reader).
 *
 * run.sh times it beside `carma report DIR --edges snap --json-out OUT` (the same loading and
 * windows, plus the JSON and text): its phases show where the time goes.
 */
#include "analysis/series.h"
#include "core/threads.h"
#include "srt/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NWINDOWS 10

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- gen ---- */

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t rng_next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static FILE *open_w(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        perror(path);
    return f;
}

static int gen(const char *dir, long rows, int hosts, int gpus)
{
    char sub[4096];
    const char *dirs[] = {"", "/power", "/sa-bench_isl_1024_osl_1024"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(sub, sizeof sub, "%s%s", dir, dirs[i]);
        if (mkdir(sub, 0777) < 0 && errno != EEXIST) {
            perror(sub);
            return 1;
        }
    }
    FILE *f = open_w(dir, "benchmark.out");
    if (!f)
        return 1;
    fputs("Starting sa-bench\n============ Serving Benchmark Result ============\n"
          "Successful requests:                     1000\n",
          f);
    fclose(f);

    /* ten windows that together cover the run: the scrapes are one a second */
    long scrapes = (rows + hosts * gpus - 1) / (hosts * gpus);
    double base = 1785168098.0, span = (double)scrapes;
    for (int k = 0; k < NWINDOWS; k++) {
        char name[256];
        snprintf(name, sizeof name,
                 "sa-bench_isl_1024_osl_1024/results_concurrency_%d_gpus_%d.json", 1 << k,
                 hosts * gpus);
        if (!(f = open_w(dir, name)))
            return 1;
        double s = base + k * span / NWINDOWS + 0.5, e = base + (k + 1) * span / NWINDOWS - 0.5;
        fprintf(f,
                "{\"backend\": \"dynamo\", \"max_concurrency\": %d, \"duration\": %.17g, "
                "\"benchmark_start_time_unix\": %.17g, \"benchmark_end_time_unix\": %.17g, "
                "\"total_input_tokens\": %ld, \"total_output_tokens\": %ld}\n",
                1 << k, e - s, s, e, 1024L * 1000 * (k + 1), 1024L * 1000 * (k + 1));
        fclose(f);
    }

    if (!(f = open_w(dir, "power/manifest.json")))
        return 1;
    fputs("{\"schema_version\": 1, \"producer\": \"srt-slurm.dcgm-power\", \"source_metric\": "
          "\"DCGM_FI_DEV_POWER_USAGE\", \"unit\": \"W\", \"samples_schema_version\": 2, "
          "\"status\": \"complete\", \"expected_devices\": [",
          f);
    for (int h = 0; h < hosts; h++)
        for (int g = 0; g < gpus; g++) {
            const char *role = h == 0 ? "prefill" : "decode";
            fprintf(f,
                    "%s{\"hostname\": \"node-%c\", \"gpu_index\": %d, \"assignments\": "
                    "[{\"worker_role\": \"%s\", \"worker_index\": %d, \"worker_process\": %d, "
                    "\"het_group\": 0}",
                    h || g ? ", " : "", 'a' + h, g, role, g / 4, g);
            if (g == 0)
                fputs(", {\"worker_role\": \"agg\", \"worker_index\": 0, \"worker_process\": 99, "
                      "\"het_group\": 0}",
                      f);
            fputs("]}", f);
        }
    fputs("]}\n", f);
    fclose(f);

    if (!(f = open_w(dir, "power/samples.csv")))
        return 1;
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    fputs("schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,"
          "gpu_util_pct,sm_active\r\n",
          f);
    long seq = 0, written = 0;
    while (written < rows) {
        for (int h = 0; h < hosts && written < rows; h++) {
            /* one timestamp per host and scrape, milliseconds, jittered */
            long ms = 1785168098000L + seq * 1000 + h * 13 + (long)(rng_next() % 40);
            for (int g = 0; g < gpus && written < rows; g++, written++) {
                long mw = 100000 + (long)(rng_next() % 600000); /* 100.000 .. 699.999 W */
                unsigned util = (unsigned)(rng_next() % 101);
                fprintf(f, "2,%ld.%03ld,%ld,node-%c,%d,GPU-node-%c%d,%ld.%03ld,%u.0,\r\n",
                        ms / 1000, ms % 1000, seq, 'a' + h, g, 'a' + h, g, mw / 1000, mw % 1000,
                        util);
            }
        }
        seq++;
    }
    if (fclose(f) != 0) {
        perror("samples.csv");
        return 1;
    }
    return 0;
}

/* ---- run ---- */

static size_t held(const struct srt_log_series_set *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->v[i].n;
    return n;
}

static size_t held_util(const struct srt_log_util_set *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->v[i].n;
    return n;
}

static int snap_set(FILE *o, const struct srt_log_series_set *set, const struct srt_log_window *w,
                    struct series_scratch *sc, size_t *failed)
{
    for (size_t i = 0; i < set->n; i++) {
        const struct srt_log_series *x = &set->v[i];
        struct series s = {.t = x->t, .w = x->w, .n = x->n, .cap = x->n, .sorted = true};
        struct series_window r;
        struct carma_err e = {0};
        if (series_window_snap(&s, w->start_unix, w->end_unix, x->label, sc, &r, &e) < 0) {
            fprintf(o, "snap error %s\n", e.msg);
            ++*failed;
            continue;
        }
        fprintf(o,
                "snap %s %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %zu\n",
                x->label, w->start_unix, w->end_unix, r.joules, r.avg_power_w, r.mean_w, r.min_w,
                r.p5_w, r.p50_w, r.p95_w, r.p99_w, r.max_w, r.samples);
    }
    return 0;
}

static int run(const char *dir, const char *outp)
{
    struct srt_log log;
    struct carma_err e = {0};
    double t0 = now_s();
    int r = srt_log_discover(&log, dir, NULL, &e);
    if (r == 0)
        r = srt_log_load_windows(&log, &e);
    double t1 = now_s();
    if (r == 0 && log.cpu_csv)
        r = srt_log_load_cpu(&log, log.cpu_csv, &e);
    if (r == 0 && log.gpu_csv)
        r = srt_log_load_gpu(&log, log.gpu_csv, log.gpu_manifest, &e);
    double t2 = now_s();
    if (r < 0) {
        fprintf(stderr, "bench_report: %s\n", e.msg);
        srt_log_done(&log);
        return 1;
    }
    FILE *o = fopen(outp, "w");
    if (!o) {
        perror(outp);
        srt_log_done(&log);
        return 1;
    }
    struct series_scratch sc = {0};
    size_t failed = 0;
    for (size_t k = 0; k < log.nwindows; k++) {
        snap_set(o, &log.gpu_devices, &log.windows[k], &sc, &failed);
        snap_set(o, &log.gpu_nodes, &log.windows[k], &sc, &failed);
        snap_set(o, &log.gpu_roles, &log.windows[k], &sc, &failed);
    }
    double t3 = now_s();
    fclose(o);
    size_t n_dev = held(&log.gpu_devices), n_node = held(&log.gpu_nodes),
           n_role = held(&log.gpu_roles), n_util = held_util(&log.gpu_util);
    size_t total = n_dev + n_node + n_role + n_util + held(&log.cpu_sockets) +
                   held(&log.cpu_nodes) + held_util(&log.cpu_util);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double peak = (double)ru.ru_maxrss * 1024.0;
    printf("{\"rows\": %zu, \"devices\": %zu, \"nodes\": %zu, \"roles\": %zu, \"windows\": %zu, "
           "\"discover_s\": %.6f, \"load_s\": %.6f, \"snap_s\": %.6f, \"failed\": %zu, "
           "\"held_device\": %zu, \"held_node\": %zu, \"held_role\": %zu, \"held_util\": %zu, "
           "\"held\": %zu, \"peak_rss_bytes\": %.0f, \"bytes_per_sample\": %.3f, "
           "\"warnings\": %zu}\n",
           n_dev, log.gpu_devices.n, log.gpu_nodes.n, log.gpu_roles.n, log.nwindows, t1 - t0,
           t2 - t1, t3 - t2, failed, n_dev, n_node, n_role, n_util, total, peak,
           total ? peak / (double)total : 0.0, log.nwarnings);
    for (size_t i = 0; i < log.nwarnings; i++)
        fprintf(stderr, "warning: %s\n", log.warnings[i]);
    series_scratch_done(&sc);
    srt_log_done(&log);
    return 0;
}

/* ---- parse: the bare parse, what reading the file can cost at least ---- */

/* Reads FILE in 1 MiB blocks and only tokenises it: finds every line end and every field
 * separator (no number parsed, nothing kept). Prints the time, the rows and fields as JSON. */
static int bare_parse(const char *path)
{
    enum { BLOCK = 1 << 20 };
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "bench_report: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char *buf = malloc(BLOCK);
    if (!buf) {
        close(fd);
        return 1;
    }
    double t0 = now_s();
    uint64_t rows = 0, fields = 0, bytes = 0;
    ssize_t n;
    while ((n = read(fd, buf, BLOCK)) > 0) {
        bytes += (uint64_t)n;
        for (const char *p = buf, *end = buf + n; p < end;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *stop = nl ? nl : end;
            for (const char *q = p; q < stop; q++)
                fields += *q == ',';
            if (!nl)
                break;
            rows++;
            fields++;
            p = nl + 1;
        }
    }
    double t1 = now_s();
    int err = n < 0 ? errno : 0;
    free(buf);
    close(fd);
    if (err) {
        fprintf(stderr, "bench_report: %s: %s\n", path, strerror(err));
        return 1;
    }
    printf("{\"parse_s\": %.6f, \"rows\": %" PRIu64 ", \"fields\": %" PRIu64 ", \"bytes\": %" PRIu64
           "}\n",
           t1 - t0, rows, fields, bytes);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "gen"))
        return gen(argv[2], atol(argv[3]), argc > 4 ? atoi(argv[4]) : 2,
                   argc > 5 ? atoi(argv[5]) : 8);
    if (argc == 4 && !strcmp(argv[1], "run")) {
        size_t n; /* refused as carma report refuses it, not timed with a count it ignored */
        if (threads_env("CARMA_REPORT_THREADS", &n) < 0) {
            fprintf(stderr,
                    "bench_report: CARMA_REPORT_THREADS='%s': a thread count from 1 to %d is "
                    "needed\n",
                    getenv("CARMA_REPORT_THREADS"), THREADS_MAX);
            return 2;
        }
        return run(argv[2], argv[3]);
    }
    if (argc == 3 && !strcmp(argv[1], "parse"))
        return bare_parse(argv[2]);
    fprintf(stderr, "usage: bench_report gen DIR ROWS [HOSTS] [GPUS]\n"
                    "       bench_report run DIR OUT\n"
                    "       bench_report parse FILE\n");
    return 2;
}
