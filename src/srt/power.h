/*
 * srt/power: carma's GPU samples written as srt-slurm's GPU power leg, so that srt-slurm's
 * tooling (power_energy_report and friends) reads carma's GPU data as its own.
 *
 * Writes DIR/samples.csv (srt-slurm samples schema v2: schema_version, timestamp_unix,
 * scrape_seq, hostname, gpu_index, gpu_uuid, power_w, gpu_util_pct, sm_active) and
 * DIR/manifest.json (srt-slurm GPU manifest schema 1, its keys in its order), as
 * docs/formats.md describes. Rows end in CRLF like srt-slurm's own csv.writer output (its
 * readers accept CRLF or LF); numbers are fixed point with up to 6 decimals, timestamps with
 * exactly 6 (µs). One scrape = the rows of every GPU at one timestamp, written with one
 * write(2) so that a killed carma leaves whole scrapes; scrape_seq counts scrapes from 0.
 * The manifest is written (atomically: temp file + rename) at open with status "running" and
 * again at finish with the final status, the observed devices and the SHA-256 of samples.csv.
 *
 * A row whose power is not finite or is negative is not written (srt-slurm's strict reader
 * rejects it), nor a second row for the same GPU in one scrape (a duplicate_sample_row there);
 * a utilization that is NAN, negative or above its maximum is a blank cell.
 *
 * After srt_power_scrape_begin, rows and srt_power_scrape_end allocate nothing (the buffer is
 * sized at open for SRT_POWER_DEVICES_MAX rows), except that a row with a UUID not given at
 * open for its GPU copies it once (for observed_devices).
 */
#ifndef CARMA_SRT_POWER_H
#define CARMA_SRT_POWER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define SRT_POWER_DEVICES_MAX 64

/* A workload (a "backend process" in srt-slurm's words) using one GPU. */
struct srt_power_assignment {
    unsigned gpu_index;
    const char *worker_role;    /* srt-slurm: prefill | decode | agg; carma writes "agg" */
    int worker_index;           /* the workload's index in the experiment */
    const char *worker_process; /* the workload's name */
};

struct srt_power_opts {
    const char *dir;      /* created when missing (with its parents) */
    const char *hostname; /* NULL: $SLURMD_NODENAME, else gethostname() up to its first '.' */
    const char *run_name; /* the experiment's name */
    const char *job_id;   /* NULL: $SLURM_JOB_ID when set, else null in the manifest */
    double interval_s;    /* sample_interval_seconds */
    const char *producer_version;
    const char *source_metric; /* what power_w is, e.g. "nvmlDeviceGetTotalEnergyConsumption" */
    const char *power_scope;   /* e.g. "gpu_device_board_as_reported_by_nvml" */
    const char *util_metric;   /* what gpu_util_pct is; NULL: "nvmlDeviceGetUtilizationRates" */
    /* the GPUs (expected_devices, written sorted by index), with their UUIDs (NULL: none) */
    size_t ndev;
    const unsigned *gpu_index;
    const char *const *gpu_uuid;
    /* who uses them (expected_devices[].assignments) */
    size_t nassign;
    const struct srt_power_assignment *assign;
};

struct srt_power;

/* Creates the directory, samples.csv with its header (replacing any samples.csv there) and
 * manifest.json (status "running").
 * Returns NULL with e set (naming the file) on failure; -EINVAL for more than
 * SRT_POWER_DEVICES_MAX GPUs, a GPU listed twice, or an assignment to a GPU not listed. */
struct srt_power *srt_power_open(const struct srt_power_opts *o, struct carma_err *e);

/* Starts a scrape at timestamp_unix (seconds, realtime). */
void srt_power_scrape_begin(struct srt_power *p, double timestamp_unix);

/* Adds one GPU's row to the current scrape (ignored outside one). uuid NULL or "": the UUID
 * given at open for gpu_index, else a blank cell. gpu_util_pct in 0..100 and sm_active in
 * 0..1, NAN when unknown (blank cell). */
void srt_power_row(struct srt_power *p, unsigned gpu_index, const char *uuid, double power_w,
                   double gpu_util_pct, double sm_active);

/* Writes the scrape's rows (one write) and advances scrape_seq; a scrape with no row writes
 * nothing and does not advance it. Returns 0 or a negative errno with e set. A failed write
 * (disk full) cuts samples.csv back to its last whole scrape, does not advance scrape_seq, and
 * is remembered: the final manifest lists "samples_write_failed" in its reason codes. Later
 * scrapes are still attempted. */
int srt_power_scrape_end(struct srt_power *p, struct carma_err *e);

/* Syncs samples.csv, writes the final manifest.json with status ("complete", "incomplete" or
 * "failed"; anything else is written as "failed" and returns -EINVAL), the observed devices,
 * the counts and samples.csv's SHA-256 (null without libcrypto), and frees p (NULL-safe).
 * publication_valid is true only for "complete" with at least one row and no reason code
 * (samples_write_failed, timestamp_non_monotonic, samples_empty). Returns 0 or a negative
 * errno with e set (the first error; the manifest is written whenever possible). */
int srt_power_finish(struct srt_power *p, const char *status, struct carma_err *e);

#endif
