/*
 * srt/log: the input side of `carma report DIR` for an srt-slurm log directory. Everything
 * srt-slurm's power_energy_report does before it integrates anything (formats doc
 * srt-slurm.md §6.2-§6.4), with its exact error messages, so that the report built on top
 * gets the same windows, tokens and series that srt-slurm would:
 *
 *   1. discovery (§6.2): benchmark.out, the power samples.csv files found below the directory
 *      (parent `cpu` or `cpu_power`: the CPU leg, else the GPU leg; --cpu-samples pins the
 *      CPU one), the GPU manifest.json next to the GPU CSV, the benchmark type from the
 *      markers in benchmark.out, and the result artifacts (aiperf
 *      conc_N/aiperf_artifacts/profile_export.jsonl, sa-bench
 *      sa-bench_X/results_concurrency_N_*.json) sorted by (concurrency, path);
 *   2. one window per artifact (§6.3): its [start, end], its token counts (the JSON values as
 *      stored: ints stay ints) and the benchmark's own account of its timing ("reported");
 *   3. the series (§6.4): per GPU (host, index), per GPU node (rows at bit-identical
 *      timestamps summed), per (role, host) from the manifest's expected_devices, per CPU
 *      socket (one sensor per socket: the best-ranked in long files, power_w in wide ones),
 *      per CPU node (total_power_w, one value per timestamp), and the utilization columns,
 *      each sorted by time with a stable sort, all as plain arrays.
 *
 * Paths are printed as Python's pathlib prints them (`a//b/./c/` -> `a/b/c`, `.` joined with
 * `x` -> `x`), because srt-slurm's messages contain them.
 *
 * The CSVs are read as a stream (1 MiB chunks, whole records split in place by core/csv's
 * csv_split: RFC 4180 as csv_parse reads it, no allocation per field), never whole: the files can
 * hold millions of rows. Numbers go through core/fastnum's fastnum_double (correctly rounded, as
 * strtod). Columns are found by name, as srt-slurm's DictReader does. Where srt-slurm would crash
 * (a missing column, a cell that is not a number, `None`, NaN, a row with too few or too many
 * fields, a line cut short) this module returns -EINVAL with the file and line in the message, or,
 * where the intent is clear, skips and says so in srt_log.warnings:
 *   - a last line with no line end and fewer fields than the header (a writer killed mid-row)
 *     is skipped;
 *   - total_power_w `None` (the host collector writes repr(None) when its aggregate is
 *     missing) is read as blank: no node sample at that time;
 *   - an empty CSV (no header) or a header alone gives a leg with no series.
 * Cells srt-slurm's float() would take but carma refuses: nan, inf, digits with `_`.
 *
 * srt-slurm's report does not check what its strict GPU reader (read_samples, §2.1) refuses;
 * neither does this module by default, but it warns about the rows that change numbers: a
 * duplicate (scrape_seq, hostname, gpu_index) (duplicate_sample_row: the report adds both rows
 * into the node series), a device whose timestamps go back in scrape_seq order
 * (timestamp_non_monotonic), a row whose schema_version is not the header's generation; a
 * header that is not samples v1/v2 shows only as gpu_schema 0. SRT_LOG_STRICT makes these
 * errors naming the reason code, and adds the strict reader's other rules (scrape_seq and
 * gpu_index non-negative integers, gpu_uuid present, power_w >= 0) and, for the CPU CSV, a
 * known header and its schema_version on every row.
 *
 * Memory: at most 16 bytes per sample kept (power and each populated utilization cell); a GPU
 * that reports in every scrape of its host keeps only its values (its times are its node
 * series'), and so does a utilization column with a value on every row of its device. The
 * series are sized from the share of the file read after the first 8192 rows, so they are not
 * moved while they grow; big ones are 2 MiB-aligned and ask for transparent huge pages (still
 * malloc'ed), and a helper thread faults their pages in ahead of the rows (series.h).
 * The GPU checks above keep a few numbers per device while each device's rows come in
 * non-decreasing scrape_seq order (the usual file); a device whose scrape_seq goes back is
 * checked again after the load from a second pass over the file, keeping 12 bytes per row of
 * that device only. No global state.
 *
 * Errors (negative errno, message in the struct carma_err, formatted as srt-slurm's):
 *   -ENOENT   something discovery needs is not there (`<path>: not found`, no samples.csv,
 *             no result artifacts, a result file or the aiperf aggregate missing)
 *   -EINVAL   bad content (both/neither markers, several CSVs of one leg, a missing JSON
 *             field, a malformed CSV row, a JSON syntax error, ...)
 *   -ENOMEM, or the errno of a failed open/read.
 */
#ifndef CARMA_SRT_LOG_H
#define CARMA_SRT_LOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

/* Refuse (instead of warn about) what srt-slurm's strict samples readers refuse; see above. */
#define SRT_LOG_STRICT 0x1u
/* srt_log_discover: the benchmark windows only (a reader with power samples of its own, carma
 * report of a collect directory): the power CSVs below the log directory are not looked for,
 * so that none, or several, is no error (cpu_csv and gpu_csv stay NULL). */
#define SRT_LOG_WINDOWS_ONLY 0x2u

/* The longest CSV record, JSONL record or benchmark.out line read whole (longer log lines are
 * cut there; longer CSV/JSONL records are an error). */
#define SRT_LOG_LINE_MAX (16u << 20)

enum srt_log_bench {
    SRT_LOG_BENCH_NONE = 0,
    SRT_LOG_BENCH_SA_BENCH, /* "sa-bench" */
    SRT_LOG_BENCH_AIPERF,   /* "aiperf" */
};

/* "sa-bench", "aiperf" (srt-slurm's benchmark_type strings), or "" for NONE. */
const char *srt_log_bench_name(enum srt_log_bench b);

struct srt_log_opts {
    const char *cpu_samples; /* --cpu-samples: this CSV is the CPU leg; NULL: discover it */
    unsigned flags;          /* SRT_LOG_STRICT, SRT_LOG_WINDOWS_ONLY */
};

/* One result artifact: one report per source, in this order. */
struct srt_log_source {
    long long concurrency;
    char *path; /* as srt-slurm prints it (below log_dir) */
};

/*
 * The benchmark's own account of its window (§6.3 "reported"): informational, never used to
 * integrate. source is "sa-bench-json", "aiperf-json", "aiperf-phase-log" or "unavailable";
 * each number is valid only when its has_ flag is set (null in srt-slurm's JSON otherwise);
 * note is NULL when there is none.
 */
struct srt_log_reported {
    const char *source; /* static string */
    bool has_start, has_end, has_duration;
    double start_unix, end_unix, duration_s;
    char *note;
};

/*
 * One concurrency point's window and tokens (§6.3). start/end/output_tokens/input_tokens are
 * the values srt-slurm puts in its JSON (`start_unix`, `end_unix`, `output_tokens`,
 * `input_tokens`): for sa-bench the result JSON's own values, passed through (an int stays an
 * int), for aiperf reals (ns / 1e9) and the aggregate's avg values. Each is a JSON number
 * (integer or real), owned by the window (one reference). The doubles are the same numbers as
 * json_number_value() gives them, for arithmetic.
 */
struct srt_log_window {
    enum srt_log_bench type;
    long long concurrency;
    const char *path; /* the source artifact (points into srt_log.sources) */
    json_t *start, *end;
    json_t *output_tokens, *input_tokens;
    double start_unix, end_unix;
    double output_tokens_n, input_tokens_n;
    struct srt_log_reported reported;
};

/*
 * One power series: n samples, t (unix seconds) sorted non-decreasing, w watts; t and w are
 * malloc'ed arrays (NULL when n is 0) that a caller may take over (set them to NULL and n to 0
 * before srt_log_done).
 *   GPU device:  label gpu/<host>/gpu<index>, index = gpu_index, roles = its roles from the
 *                manifest (sorted, unique; what its utilization rolls up into)
 *   GPU node:    label gpu/<host>, index -1
 *   GPU role:    label gpu/<host>/<role>, role set, index -1
 *   CPU socket:  label cpu/<host>/socket<N>, index = socket_id, sensor = the sensor chosen for
 *                it (long layout: best-ranked, see srt_log_sensor_rank; wide layout:
 *                "power_w"), other_sensors = the ones not chosen, in rank order
 *   CPU node:    label cpu/<host>, index -1 (from total_power_w)
 */
struct srt_log_series {
    char *label;
    char *host;
    long long index;
    char *role;   /* GPU role series, else NULL */
    char *sensor; /* CPU socket series, else NULL */
    char **other_sensors;
    size_t n_other;
    char **roles; /* GPU device series */
    size_t n_roles;
    size_t n;
    double *t, *w;
    /*
     * GPU device series: t is the t array of its host's node series (gpu_nodes), whose first n
     * times are exactly the device's, not a copy: the GPUs of one host share each scrape's
     * timestamp, so a device that reported in every scrape from the first holds 8 bytes a
     * sample, not 16. Never free such a t; it lives as long as the node series' t.
     */
    bool t_shared;
};

/* One utilization column of one GPU or socket (§6.4): values v at times t (sorted, stable),
 * only non-blank cells; a column never populated for that device has no entry. */
struct srt_log_util {
    char *label;        /* the device's label (gpu/<host>/gpu<i>, cpu/<host>/socket<N>) */
    const char *column; /* static: gpu_util_pct, sm_active, cpu_util_total, ... */
    size_t series;      /* index of the device in gpu_devices / cpu_sockets */
    size_t n;
    double *t, *v;
    /*
     * t is the device series' own t array (same n, same times), not a copy: a GPU column with
     * a value on every row of its device holds 8 bytes a sample, not 16. Never free such a t;
     * it lives as long as the device series' t (a caller that takes over that one must copy
     * t first).
     */
    bool t_shared;
};

struct srt_log_series_set {
    struct srt_log_series *v;
    size_t n;
};

struct srt_log_util_set {
    struct srt_log_util *v;
    size_t n;
};

struct srt_log {
    unsigned flags;
    /* discovery (srt_log_discover) */
    char *log_dir;       /* as srt-slurm prints it */
    char *benchmark_out; /* <log_dir>/benchmark.out */
    char *cpu_csv;       /* NULL: no CPU leg */
    char *gpu_csv;       /* NULL: no GPU leg */
    char *gpu_manifest;  /* manifest.json next to gpu_csv when it is a file, else NULL */
    enum srt_log_bench type;
    struct srt_log_source *sources;
    size_t nsources;
    /* windows (srt_log_load_windows): one per source, same order */
    struct srt_log_window *windows;
    size_t nwindows;
    /* CPU leg (srt_log_load_cpu) */
    bool cpu_loaded;
    bool cpu_wide;          /* header has cpu_rail_w, soc_w and dram_w: one row per socket */
    const char *cpu_layout; /* which known header: "scraper-v1/host-v1", "scraper-v2",
                               "scraper-v2-module", "host-v2", "host-v3", "host-v4",
                               "empty" or "unknown" */
    struct srt_log_series_set cpu_sockets; /* sorted by (host, socket) */
    struct srt_log_series_set cpu_nodes;   /* sorted by host */
    struct srt_log_util_set cpu_util;      /* sorted by (host, socket), then column name */
    /* GPU leg (srt_log_load_gpu) */
    bool gpu_loaded;
    bool gpu_roles_known; /* a manifest was read (roles may still be empty) */
    int gpu_schema;       /* 1 or 2: the header is samples v1/v2 exactly; 0: something else */
    struct srt_log_series_set gpu_devices; /* sorted by (host, index) */
    struct srt_log_series_set gpu_nodes;   /* sorted by host */
    struct srt_log_series_set gpu_roles;   /* sorted by role, then host */
    struct srt_log_util_set gpu_util;      /* sorted by (host, index), then column name */
    /* what was skipped or is suspicious, one line each, in the order met */
    char **warnings;
    size_t nwarnings;
};

/*
 * Discovery (§6.2) of log_dir into *log, which is initialised first (srt_log_done is safe on it
 * whatever this returns). o may be NULL (no --cpu-samples, no flags). The checks run in
 * srt-slurm's order: benchmark.out, the CSVs (--cpu-samples must be a file; several CPU or
 * several GPU candidates; none at all), the benchmark type, the sources. Returns 0 or a
 * negative errno with e set to srt-slurm's message.
 */
int srt_log_discover(struct srt_log *log, const char *log_dir, const struct srt_log_opts *o,
                     struct carma_err *e);

/* Reads the window of every source (§6.3), in order. The first failure stops it: returns 0 or
 * a negative errno with e set. */
int srt_log_load_windows(struct srt_log *log, struct carma_err *e);

/*
 * Reads the window of source i alone into *w (zeroed first; free with srt_log_window_done), for
 * a caller that goes on when one source fails (an incremental report: a result file still
 * being written holds back only its own window). w->path points into log->sources. Returns 0,
 * or a negative errno with e set (*w then holds nothing to free).
 */
int srt_log_load_window(const struct srt_log *log, size_t i, struct srt_log_window *w,
                        struct carma_err *e);

/* Frees what a window read by srt_log_load_window holds (NULL-safe). */
void srt_log_window_done(struct srt_log_window *w);

/*
 * Loads the CPU CSV at path into log's CPU leg (§6.4 CPU, #453 socket selection). Usually
 * path = log->cpu_csv; usable alone on a zeroed log. Returns 0 or a negative errno with e set
 * (the leg is left empty on failure).
 */
int srt_log_load_cpu(struct srt_log *log, const char *path, struct carma_err *e);

/*
 * Loads the GPU CSV at path, with the roles of manifest (NULL: none), into log's GPU leg
 * (§6.4 GPU). Returns 0 or a negative errno with e set (the leg is left empty on failure).
 */
int srt_log_load_gpu(struct srt_log *log, const char *path, const char *manifest,
                     struct carma_err *e);

/*
 * All of it in srt-slurm's order (build_reports): discover, windows, CPU leg, GPU leg.
 * Returns 0 or the first error.
 */
int srt_log_open(struct srt_log *log, const char *log_dir, const struct srt_log_opts *o,
                 struct carma_err *e);

/* Frees everything log holds and zeroes it (NULL-safe, safe on a zeroed log). */
void srt_log_done(struct srt_log *log);

/*
 * The benchmark type from benchmark.out (§6.2 step 4), lines split as Python's text mode does
 * (\n, \r\n or \r). Returns 0 and *ret, or -EINVAL with `<path>: matched both aiperf and
 * sa-bench markers` / `<path>: matched neither aiperf nor sa-bench markers`, or an open/read
 * errno.
 */
int srt_log_detect_bench(const char *benchmark_out, enum srt_log_bench *ret, struct carma_err *e);

/*
 * The phase-log fallback of §6.3 over benchmark.out into *ret (note allocated; free with
 * free(ret->note)). Returns 0, or a negative errno when the file cannot be read.
 */
int srt_log_phase_log_timing(const char *benchmark_out, struct srt_log_reported *ret,
                             struct carma_err *e);

/*
 * srt-slurm's preference of a CPU sensor name in a long-format file (cpu_rails.py): 0 total
 * (`...:cpuSidePowerUsageW`, `Grace Power Socket N`, `Total [Input] Power [in uW] socket N`),
 * 1 dcgm (`...:cpuPowerUsageW`), 2 cpu_rail, 3 soc, 4 dram, 5 module, 6 other. The suffix
 * after the first ':' decides when it is one of the known ones, else the OEM label patterns
 * (case-insensitive, words separated by whitespace, a word boundary before the first word and
 * after the socket number).
 */
int srt_log_sensor_rank(const char *sensor);

#endif
