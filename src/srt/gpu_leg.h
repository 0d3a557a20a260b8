/*
 * srt/gpu_leg: srt-slurm's GPU power leg (power/samples.csv v2 and power/manifest.json schema
 * 1, docs/formats.md) as both of carma's writers of it write it: srt/power (one host,
 * `carma run`) and srt/gpu (many hosts, `carma collect --srt-gpu`). What they write alike is
 * here once: a device's observed state (rows, first/last sample, UUIDs), the row formatting,
 * the manifest (its keys in srt-slurm's order, the expected and observed devices, status,
 * publication_valid, reason codes, samples_sha256), a scrape's one append and the closing of
 * samples.csv. What differs (who the hosts are, where timestamps come from, the manifest's
 * provenance values) stays with each writer.
 *
 * Nothing here allocates on the row path: srt_gpu_leg_prefix and srt_gpu_leg_row format into
 * caller buffers (a row grows its buffer only when it lacks room); srt_gpu_leg_dev_uuid copies
 * a UUID the first time it is seen.
 */
#ifndef CARMA_SRT_GPU_LEG_H
#define CARMA_SRT_GPU_LEG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/csv.h"
#include "core/err.h"
#include "core/journal.h"

/* samples.csv's header line, with its row end (CRLF, as srt-slurm's csv.writer writes). */
#define SRT_GPU_LEG_HEADER                                                                         \
    "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,"   \
    "sm_active\r\n"
#define SRT_GPU_LEG_UUIDS      8  /* distinct UUIDs remembered per device */
#define SRT_GPU_LEG_PREFIX_MAX 64 /* room for srt_gpu_leg_prefix's text */
/* The room srt_gpu_leg_row makes in its buffer for a row (a buffer that has it for every row
 * of a scrape never grows): the prefix, the host cell, a UUID of uuid_len bytes, and 128 for
 * gpu_index (10), three numbers (3 x 32), the commas and the row end. */
#define SRT_GPU_LEG_ROW_MAX(prefix_len, host_len, uuid_len)                                        \
    ((prefix_len) + (host_len) + 2 * (uuid_len) + 3 + 128)

/* A device as observed_devices describes it: only rows that reached samples.csv count. */
struct srt_gpu_leg_dev {
    unsigned gpu_index;
    uint64_t rows;             /* rows in samples.csv */
    int64_t first_us, last_us; /* its first and last sample times (µs), when rows > 0 */
    size_t nuuid;
    char *uuid[SRT_GPU_LEG_UUIDS];        /* owned */
    bool uuid_written[SRT_GPU_LEG_UUIDS]; /* a row with it reached the file */
};

/* The index of uuid among d's UUIDs, copied when new (not yet written); -1 when it cannot be
 * remembered (SRT_GPU_LEG_UUIDS taken, or out of memory). */
int srt_gpu_leg_dev_uuid(struct srt_gpu_leg_dev *d, const char *uuid);

/* Counts a row of d at us that reached samples.csv, with its UUID (an index from
 * srt_gpu_leg_dev_uuid, -1: none). */
void srt_gpu_leg_dev_written(struct srt_gpu_leg_dev *d, int64_t us, int uuid);

/* Frees d's UUIDs (d itself is the caller's). */
void srt_gpu_leg_dev_free(struct srt_gpu_leg_dev *d);

/* Writes a row's first three cells, "2,<timestamp_unix>,<scrape_seq>,", into s (room for
 * SRT_GPU_LEG_PREFIX_MAX bytes; not NUL-terminated): us >= 0 microseconds written as seconds
 * with exactly 6 decimals. Returns its length. */
size_t srt_gpu_leg_prefix(char *s, int64_t us, uint64_t seq);

/*
 * Appends one row to b: prefix (from srt_gpu_leg_prefix), host (the hostname as a CSV cell),
 * gpu_index, uuid (NULL: a blank cell), power_w, then gpu_util_pct (0..100) and sm_active
 * (0..1), each a blank cell when not finite or out of its range, and CRLF. Numbers are fixed
 * point with up to 6 decimals (srt_json_float_cell); power_w must be finite, >= 0 and below
 * 9e12. Returns 0, or -ENOMEM (b as it was) when b cannot grow.
 */
int srt_gpu_leg_row(struct csv_buf *b, const char *prefix, size_t prefix_len,
                    const struct csv_buf *host, unsigned gpu_index, const char *uuid,
                    double power_w, double gpu_util_pct, double sm_active);

/*
 * Appends a scrape's rows (b, rows of them) to csv with one write (core/journal.h). A failed
 * write cuts the file back to its last whole scrape and is remembered in *write_error (when
 * that is 0); a file that ends in part of one (the cut failed) takes nothing more. unit names
 * the batch in the messages ("scrape", "cycle"). Returns 0 or a negative errno with e set
 * (naming csv_path).
 */
int srt_gpu_leg_append(struct journal *csv, const char *csv_path, const struct csv_buf *b,
                       size_t rows, const char *unit, int *write_error, struct carma_err *e);

/*
 * The end of samples.csv: checks *status (one of "complete", "incomplete", "failed"; anything
 * else becomes "failed" with -EINVAL, the message beginning with what), syncs and closes csv
 * (a failure is remembered in *write_error when that is 0) and digests csv_path into sha
 * (sha[0] == '\0' when it cannot: without libcrypto, or on a read error). Returns 0 or the
 * first negative errno with e set.
 */
int srt_gpu_leg_close(const char *what, const char **status, struct journal *csv,
                      const char *csv_path, int *write_error, char sha[65], struct carma_err *e);

/* Appends an expected device {hostname, gpu_index, assignments} to devices; returns its
 * assignments array, NULL (with *ok false) when out of memory or devices is NULL. */
json_t *srt_gpu_leg_expected(json_t *devices, const char *host, unsigned gpu_index, bool *ok);

/* Appends an assignment {worker_role, worker_index, worker_process (NULL: null), het_group
 * null} to as (NULL: *ok turns false). */
void srt_gpu_leg_assignment(json_t *as, const char *role, json_int_t worker_index,
                            const char *process, bool *ok);

/* Appends d as an observed device {hostname, gpu_index, gpu_uuids (those written),
 * first_sample_time_unix, last_sample_time_unix} to devices (NULL: *ok turns false). */
void srt_gpu_leg_observed(json_t *devices, const char *host, const struct srt_gpu_leg_dev *d,
                          bool *ok);

/* The values of a manifest: what a writer knows, the rest is fixed by srt-slurm's schema. */
struct srt_gpu_leg_manifest {
    const char *producer;         /* "carma", "carma collect" */
    const char *producer_version; /* NULL: null (likewise the other strings) */
    const char *source_metric;    /* what power_w is */
    const char *power_scope;
    const char *util_metric; /* utilization_metrics' source_metric of gpu_util_pct */
    const char *timestamp_source;
    const char *job_id;
    const char *run_name;
    double interval_s; /* sample_interval_seconds; not finite: null */
    double timeout_s;  /* request_timeout_seconds and max_scrape_duration_seconds; NAN: null */
    bool required;
    int64_t started_us;
    uint64_t scrapes, rows;      /* written to samples.csv */
    bool write_failed;           /* a write failed: samples_write_failed */
    bool non_monotonic;          /* timestamp_non_monotonic */
    json_t *expected, *observed; /* the device arrays, consumed (NULL: out of memory) */
};

/*
 * Writes manifest.json at path (atomically, srt_json_replace) from m, with status. final: the
 * last one (stopped_at_unix = stopped_us, samples_sha256 = sha256 (NULL: null), the artifact
 * errors and reason codes; publication_valid for "complete" with rows and no reason code);
 * otherwise they are null or empty. Consumes m->expected and m->observed. Returns 0 or a
 * negative errno with e set (naming path).
 */
int srt_gpu_leg_manifest_write(struct srt_gpu_leg_manifest *m, const char *status, bool final,
                               int64_t stopped_us, const char *sha256, const char *path,
                               struct carma_err *e);

#endif
