/*
 * libFuzzer harness for the JSON and log readers of srt/log: a sa-bench
 * results_concurrency_*.json, aiperf's profile_export.jsonl and its aggregate
 * profile_export_aiperf.json (srt_log_load_window), and benchmark.out (srt_log_detect_bench,
 * srt_log_phase_log_timing, and the phase-log fallback of an aiperf window).
 *
 * Each input is written, in a directory of this process's own, as
 *   - sa-bench_a/results_concurrency_4_x.json, read as a sa-bench window;
 *   - conc_2/aiperf_artifacts/profile_export.jsonl beside a good aggregate that has no timing
 *     of its own, so that the input is also read as benchmark.out for the phase-log fallback;
 *   - conc_3/aiperf_artifacts/profile_export_aiperf.json beside good records;
 *   - benchmark.out, read by srt_log_detect_bench and srt_log_phase_log_timing.
 * A window that loads must hold JSON numbers for its start, end and tokens, the same values as
 * its doubles, finite, tokens >= 0, a known reported source with finite figures; one that fails
 * must name one of its files in the message. The benchmark type is sa-bench or aiperf, or a
 * "matched both/neither" error naming benchmark.out; the phase log gives a finite duration >= 0
 * or none.
 *
 * fuzz-sources: src/srt/log.c src/analysis/series.c src/core/array.c src/core/csv.c
 * fuzz-sources: src/core/err.c src/core/file.c src/core/parse.c src/core/csvstream.c
 * fuzz-sources: src/core/pathwalk.c src/core/threads.c
 * fuzz-sources: src/core/iso8601.c src/core/idmap.c src/core/strtab.c src/core/linereader.c
 * fuzz-libs: -ljansson -lpthread
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_file.h"
#include "srt/log.h"

static char dir[PATH_MAX], bench_out[PATH_MAX + 32];
static char sa_path[PATH_MAX + 64], jsonl2[PATH_MAX + 64], agg2[PATH_MAX + 64];
static char jsonl3[PATH_MAX + 64], agg3[PATH_MAX + 64];

static void setup(void)
{
    if (dir[0])
        return;
    snprintf(dir, sizeof dir, "%s", fuzz_dir());
    static const char *const dirs[] = {"sa-bench_a", "conc_2", "conc_2/aiperf_artifacts", "conc_3",
                                       "conc_3/aiperf_artifacts"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        fuzz_mkdir(dirs[i]);
    snprintf(bench_out, sizeof bench_out, "%s/benchmark.out", dir);
    snprintf(sa_path, sizeof sa_path, "%s/sa-bench_a/results_concurrency_4_x.json", dir);
    snprintf(jsonl2, sizeof jsonl2, "%s/conc_2/aiperf_artifacts/profile_export.jsonl", dir);
    snprintf(agg2, sizeof agg2, "%s/conc_2/aiperf_artifacts/profile_export_aiperf.json", dir);
    snprintf(jsonl3, sizeof jsonl3, "%s/conc_3/aiperf_artifacts/profile_export.jsonl", dir);
    snprintf(agg3, sizeof agg3, "%s/conc_3/aiperf_artifacts/profile_export_aiperf.json", dir);
    static const char agg[] = "{\"total_osl\": {\"avg\": 128.5}, \"total_isl\": {\"avg\": 1024}}\n";
    static const char recs[] =
        "{\"metadata\": {\"benchmark_phase\": \"warmup\", \"request_start_ns\": 1, "
        "\"request_end_ns\": 2}}\n"
        "{\"metadata\": {\"benchmark_phase\": \"profiling\", \"request_start_ns\": "
        "1785168098000000000, \"request_end_ns\": 1785168099500000000}}\n"
        "{\"metadata\": {\"benchmark_phase\": \"profiling\", \"request_start_ns\": 1.7851681e18, "
        "\"request_end_ns\": 1785168100000000000}, \"error\": null}\n";
    fuzz_put("conc_2/aiperf_artifacts/profile_export_aiperf.json", agg, sizeof agg - 1);
    fuzz_put("conc_3/aiperf_artifacts/profile_export.jsonl", recs, sizeof recs - 1);
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void check_number(const json_t *v, double d, bool count)
{
    if (!json_is_integer(v) && !json_is_real(v))
        abort();
    if (json_number_value(v) != d && !(isnan(d) && isnan(json_number_value(v))))
        abort();
    if (!isfinite(d) || (count && d < 0))
        abort();
}

static void check_reported(const struct srt_log_reported *r)
{
    static const char *const sources[] = {"sa-bench-json", "aiperf-json", "aiperf-phase-log",
                                          "unavailable"};
    bool known = false;
    for (size_t i = 0; i < 4; i++)
        known |= r->source && strcmp(r->source, sources[i]) == 0;
    if (!known)
        abort();
    if ((r->has_start && !isfinite(r->start_unix)) || (r->has_end && !isfinite(r->end_unix)) ||
        (r->has_duration && !isfinite(r->duration_s)))
        abort();
    if (r->note)
        (void)strlen(r->note);
}

/* Loads the window of source path (concurrency conc); a failure must name one of files. */
static void window(const char *path, long long conc, const char *const *files, size_t nfiles)
{
    struct srt_log_source src = {conc, (char *)path};
    struct srt_log log;
    memset(&log, 0, sizeof log);
    log.log_dir = dir;
    log.benchmark_out = bench_out;
    log.sources = &src;
    log.nsources = 1;
    struct srt_log_window w;
    struct carma_err e = {0};
    int r = srt_log_load_window(&log, 0, &w, &e);
    if (r < 0) {
        if (e.code != r || !e.msg[0])
            abort();
        bool named = false;
        for (size_t i = 0; i < nfiles; i++)
            named |= starts_with(e.msg, files[i]);
        if (!named && r != -ENOMEM) {
            fprintf(stderr, "an error naming none of its files: %s\n", e.msg);
            abort();
        }
        return;
    }
    if (r != 0 || w.concurrency != conc || w.path != src.path)
        abort();
    check_number(w.start, w.start_unix, false);
    check_number(w.end, w.end_unix, false);
    check_number(w.output_tokens, w.output_tokens_n, true);
    check_number(w.input_tokens, w.input_tokens_n, true);
    check_reported(&w.reported);
    srt_log_window_done(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    fuzz_put("sa-bench_a/results_concurrency_4_x.json", data, size);
    fuzz_put("conc_2/aiperf_artifacts/profile_export.jsonl", data, size);
    fuzz_put("conc_3/aiperf_artifacts/profile_export_aiperf.json", data, size);
    fuzz_put("benchmark.out", data, size);

    window(sa_path, 4, (const char *const[]){sa_path}, 1);
    window(jsonl2, 2, (const char *const[]){jsonl2, agg2, bench_out}, 3);
    window(jsonl3, 3, (const char *const[]){jsonl3, agg3, bench_out}, 3);

    enum srt_log_bench b = SRT_LOG_BENCH_NONE;
    struct carma_err e = {0};
    int r = srt_log_detect_bench(bench_out, &b, &e);
    if (r == 0) {
        if (b != SRT_LOG_BENCH_SA_BENCH && b != SRT_LOG_BENCH_AIPERF)
            abort();
    } else if (r != -EINVAL || !starts_with(e.msg, bench_out) ||
               (!strstr(e.msg, "matched both") && !strstr(e.msg, "matched neither"))) {
        fprintf(stderr, "srt_log_detect_bench: %d %s\n", r, e.msg);
        abort();
    }

    struct srt_log_reported rep;
    if (srt_log_phase_log_timing(bench_out, &rep, &e) != 0)
        abort();
    check_reported(&rep);
    if (rep.has_duration && !(rep.duration_s >= 0))
        abort();
    if (strcmp(rep.source, "aiperf-phase-log") == 0 && (!rep.has_duration || !rep.note))
        abort();
    free(rep.note);
    return 0;
}
