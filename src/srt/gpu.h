/*
 * srt/gpu: srt-slurm's GPU power leg of many hosts, written by `carma collect --srt-gpu` from
 * what the nodes' exporters serve: dcgm-exporter bodies (read by collect/dcgm) and carma
 * exporters' GPU channels, so that srt-slurm's power_energy_report reads a carma-collected
 * directory as its own (with --srt-cpu, both legs). srt/power is the one-host writer of
 * `carma run`; this is the collector's.
 *
 * Writes DIR/samples.csv (srt-slurm samples schema v2: schema_version, timestamp_unix,
 * scrape_seq, hostname, gpu_index, gpu_uuid, power_w, gpu_util_pct, sm_active) and
 * DIR/manifest.json (srt-slurm GPU manifest schema 1, its keys in its order), as
 * docs/formats.md describes:
 *   - scrape_seq: the collector's cycle (samples.csv's scrape_seq), shared by every host; a
 *     cycle in which no host gave a row writes nothing, so its number is left out, as
 *     srt-slurm's collector counts cycles, not rows;
 *   - timestamp_unix: the midpoint of the host's HTTP request start and settle times (µs); all
 *     GPUs of one host in one cycle share it (the first of the host's targets that gave rows
 *     in the cycle sets it);
 *   - hostname: the node name of the target (Slurm's, else the target's host), never the
 *     exporter's Hostname label;
 *   - one row per GPU per host per cycle: MIG readings are skipped, as is a second reading of
 *     a GPU index of one host in one cycle (srt-slurm's duplicate_sample_row), a power that is
 *     not finite or below 0, and a row whose timestamp would go back for its device
 *     (timestamp_non_monotonic, counted in the reason codes);
 *   - utilization riders: blank when not finite, below 0 or above their maximum (100 %, 1.0),
 *     duplicated for the GPU (dropped by collect/dcgm, or here for carma's
 *     carma_gpu_utilization_ratio), or MIG-labelled.
 * Topology: expected_devices = for each host, the GPUs of its first scrape that gave rows
 * (sorted by host, index), each with one assignment {worker_role "agg", worker_index the host's
 * position among the distinct hosts, worker_process null, het_group null}: a collector knows
 * the nodes, not the processes; observed_devices = every (host, gpu_index) with a row in
 * samples.csv, its UUIDs and first/last sample times.
 * Crash safety: a cycle's rows are written with one write(2) (a failed write cuts the file back
 * to its last whole cycle); the manifest is replaced atomically at open ("running") and at
 * finish (the status, publication_valid, the reason codes, samples_sha256).
 * In the steady state nothing is allocated (buffers keep their largest size; a GPU or a UUID
 * seen for the first time is copied once).
 */
#ifndef CARMA_SRT_GPU_H
#define CARMA_SRT_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/dcgm.h"
#include "collect/promparse.h"
#include "collect/scrape.h"
#include "core/err.h"

#define SRT_GPU_PER_HOST_MAX 64 /* GPUs kept per host; rows of further ones are dropped */
#define SRT_GPU_READINGS_MAX DCGM_READINGS_MAX

/* One GPU's reading of one scrape. */
struct srt_gpu_reading {
    unsigned gpu_index;
    const char *uuid; /* NULL: blank cell */
    bool mig;         /* a MIG instance: never written */
    double power_w;
    double gpu_util_pct; /* NAN: blank */
    double sm_active;    /* NAN: blank */
};

/* Where a scrape's readings came from (the manifest's source_metric and power_scope). */
enum srt_gpu_source { SRT_GPU_SOURCE_DCGM, SRT_GPU_SOURCE_CARMA };

/* A dcgm-exporter scrape as readings (DCGM_FI_DEV_POWER_USAGE, DCGM_FI_DEV_GPU_UTIL,
 * DCGM_FI_PROF_SM_ACTIVE; MIG flagged). Returns the number written to out (at most
 * SRT_GPU_READINGS_MAX); pointers into d's doc. */
size_t srt_gpu_from_dcgm(const struct dcgm_scrape *d, struct srt_gpu_reading *out);

/*
 * A carma exporter body's GPU readings: each carma_power_watts sample with kind="gpu",
 * domain="total" and an integer socket label (the GPU's index), its UUID from the
 * carma_gpu_utilization_ratio sample with that gpu label and gpu_util_pct = 100 x its value
 * (blank when absent, out of 0..1, or given twice for the GPU); sm_active blank. Returns the
 * number written to out (at most cap); pointers into doc.
 */
size_t srt_gpu_from_carma(const struct prom_doc *doc, struct srt_gpu_reading *out, size_t cap);

struct srt_gpu_opts {
    const char *dir;          /* created when missing (with its parents) */
    const char *const *nodes; /* the targets' node names, in order (a name may repeat) */
    size_t nnodes;
    double interval_s, timeout_s; /* sample_interval_seconds, request_timeout_seconds */
    bool required;                /* the manifest's "required" */
    const char *producer_version;
    const char *job_id; /* NULL: $SLURM_JOB_ID when set, else null */
};

struct srt_gpu;

/* Creates the directory, samples.csv with its header (replacing one there) and manifest.json
 * (status "running"). NULL with e set (naming the file) on failure. */
struct srt_gpu *srt_gpu_open(const struct srt_gpu_opts *o, struct carma_err *e);

/* Starts collector cycle seq. */
void srt_gpu_cycle_begin(struct srt_gpu *w, uint64_t seq);

/* Adds target node's scrape to the cycle (ignored outside one): r[0..n) its readings, its
 * request started at start_ns and settled at settle_ns (realtime ns). */
void srt_gpu_host(struct srt_gpu *w, size_t node, int64_t start_ns, int64_t settle_ns,
                  enum srt_gpu_source src, const struct srt_gpu_reading *r, size_t n);

/* Writes the cycle's rows with one write(2) (none: nothing). 0 or a negative errno, e set. */
int srt_gpu_cycle_end(struct srt_gpu *w, struct carma_err *e);

/* Rows written so far. */
uint64_t srt_gpu_rows(const struct srt_gpu *w);

/*
 * Syncs samples.csv, writes the final manifest.json (status "complete", "incomplete" or
 * "failed"; anything else is "failed" and -EINVAL; publication_valid only for "complete" with
 * rows and no reason code) and frees w (NULL-safe). 0 or a negative errno with e set.
 */
int srt_gpu_finish(struct srt_gpu *w, const char *status, struct carma_err *e);

/* The writer as collect/scrape's GPU sink (scrape_opts.srt_gpu): a dcgm-exporter body through
 * srt_gpu_from_dcgm, any other through srt_gpu_from_carma. */
extern const struct scrape_gpu_sink srt_gpu_sink;

#endif
