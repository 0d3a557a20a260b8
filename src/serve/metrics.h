/*
 * metrics: what `carma exporter` serves. After every sampler tick the exporter renders the
 * node's channels (power, energy), node sums, CPU and GPU utilization and its own cost into
 * one immutable snapshot in the Prometheus text exposition format (version 0.0.4), and
 * publishes it; a scrape only takes a reference to the latest snapshot and sends its bytes.
 *
 * The renderer is prepared once from the probed sampler (every label block escaped and kept
 * ready), so a render is copies and number formatting into a buffer that is reused from tick
 * to tick: it allocates only when the text outgrows the buffer (the first renders). Nothing
 * is rendered or allocated per scrape.
 *
 * The store hands snapshots from the one publishing thread (the sampler's) to any number of
 * scraping threads without a lock: the latest snapshot is an atomic pointer, each snapshot
 * counts the references scrapes hold, and the publisher renders only into a snapshot that is
 * neither the latest nor referenced. A scrape that takes a reference re-checks that the
 * snapshot is still the latest, so it never keeps one that the publisher may be rewriting.
 */
#ifndef CARMA_SERVE_METRICS_H
#define CARMA_SERVE_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "sampler/sampler.h"

/* The Content-Type of the text format. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* Label values longer than this (in bytes, before escaping) are cut (at a UTF-8 boundary). */
#define METRICS_LABEL_VALUE_MAX 256

/* ---- a growable text buffer ---- */

struct metrics_buf {
    char *data; /* not NUL-terminated */
    size_t len, cap;
    bool oom; /* an append failed for want of memory: the text is incomplete */
};

/* Frees the buffer's memory and empties it (safe on a zeroed buffer). */
void metrics_buf_done(struct metrics_buf *b);

/*
 * Appends v as a label value of the text format: `\` as `\\`, `"` as `\"`, LF as `\n`; bytes
 * that are not valid UTF-8 become U+FFFD; at most METRICS_LABEL_VALUE_MAX bytes of v are
 * used. Sets b->oom when memory runs out.
 */
void metrics_escape_label(struct metrics_buf *b, const char *v);

/* ---- the exporter's own cost: a histogram of durations ---- */

#define METRICS_HIST_BUCKETS 16

/* Upper bounds of the buckets in ns (the +Inf bucket is the count), ascending. */
extern const int64_t metrics_hist_bounds_ns[METRICS_HIST_BUCKETS];

struct metrics_hist {
    uint64_t bucket[METRICS_HIST_BUCKETS]; /* observations in each bucket (not cumulative) */
    uint64_t count;
    int64_t sum_ns;
};

/* Counts one duration (negative ones as 0). */
void metrics_hist_observe(struct metrics_hist *h, int64_t ns);

/* ---- rendering ---- */

/* srt-slurm's CPU family (its exporter serves exactly one per process lifetime). */
enum metrics_srt_family {
    METRICS_SRT_ACPI, /* cpu_power_acpi_watts: the ACPI power_meter channels of hwmon */
    METRICS_SRT_DCGM, /* cpu_power_dcgm_watts: the dcgm source's CPU rails (field 1130) */
};

struct metrics_opts {
    const char *node;    /* the node label: $SLURMD_NODENAME or the short host name */
    const char *version; /* carma's version, for carma_build_info */
    bool compat_srtctl;  /* also srt-slurm's CPU family, srt_family */
    enum metrics_srt_family srt_family;
};

/* What --srt-source asks for. */
enum metrics_srt_source {
    METRICS_SRT_SOURCE_AUTO, /* ACPI when a socket-total sensor reads > 0, else DCGM */
    METRICS_SRT_SOURCE_ACPI,
    METRICS_SRT_SOURCE_DCGM,
};

/* The family chosen at start, and why (one line, for the exporter's log). */
struct metrics_srt_choice {
    enum metrics_srt_family family;
    char why[512];
};

/*
 * Chooses srt-slurm's CPU family for the probed sampler s after one tick (the readings at
 * start), as srt-slurm's exporter does (its later rule, srt-slurm #481):
 * - ACPI: always cpu_power_acpi_watts (also without any ACPI power_meter channel);
 * - DCGM: cpu_power_dcgm_watts; the dcgm source must be usable with at least one CPU rail
 *   channel (dcgm/cpu<N>), else -ENODEV ("DCGM unavailable: <why>"), and at least one of them
 *   must have read a positive value, else -ENODATA ("DCGM yielded no live data: <what was
 *   read>"); -EINVAL when --sources left the dcgm source out;
 * - AUTO: ACPI when an ACPI power_meter socket-total channel read a positive value, else DCGM
 *   when it would be chosen as above, else -ENODATA naming both reasons.
 * Returns 0 with *out filled, or the negative errno with e's message (without a prefix).
 */
int metrics_srt_choose(const struct sampler *s, enum metrics_srt_source want,
                       struct metrics_srt_choice *out, struct carma_err *e);

/* What the exporter knows of itself at render time. */
struct metrics_self {
    const struct metrics_hist *sample_duration; /* NULL: no observation yet */
    uint64_t scrapes;                           /* /metrics requests served so far */
    /* the marks socket (--marks-dir), its families served only when there is one */
    bool marks;
    uint64_t marks_open, marks_windows, marks_events; /* open now; ended; events */
};

struct metrics_renderer;

/*
 * Prepares rendering for the channels of the probed sampler s (its channel set must not
 * change afterwards): escapes every label block once, picks the channels of the node sums
 * (sampler_select_node), the GPUs whose utilization NVML reports, and with compat_srtctl the
 * channels of srt-slurm's family: the ACPI power_meter channels in srt-slurm's order, or the
 * dcgm source's CPU rails (dcgm/cpu<N>) in socket order. Returns NULL with e set on -ENOMEM or
 * -EINVAL (o->node or o->version NULL). The renderer copies what it needs of o; it keeps
 * pointers to s's NVML source (for the GPUs' utilization): s must outlive it.
 */
struct metrics_renderer *metrics_renderer_new(const struct sampler *s, const struct metrics_opts *o,
                                              struct carma_err *e);

/* Frees the renderer (NULL-safe). */
void metrics_renderer_free(struct metrics_renderer *r);

/* How many channels srt-slurm's CPU family reports (0 when --compat srtctl is off). */
size_t metrics_renderer_compat_count(const struct metrics_renderer *r);

/*
 * Renders the current state of s (the sampler r was made for, after a tick) and self into
 * out, replacing what out held; out's memory is reused and grows when needed. Families, in
 * order: carma_build_info, carma_power_watts, carma_energy_joules_total,
 * carma_node_power_watts, carma_node_energy_joules_total, carma_cpu_utilization_ratio (when
 * proc/stat is read), carma_gpu_utilization_ratio and carma_gpu_memory_utilization_ratio
 * (with NVML GPUs; asks NVML, from the calling thread), carma_read_errors_total,
 * carma_sample_duration_seconds, carma_scrapes_total, carma_last_sample_timestamp_seconds,
 * then cpu_power_acpi_watts or cpu_power_dcgm_watts with compat_srtctl. A reading that is missing
 * leaves its line out. Returns 0, or -ENOMEM (out then holds an incomplete text).
 */
int metrics_render(struct metrics_renderer *r, const struct sampler *s,
                   const struct metrics_self *self, struct metrics_buf *out);

/* ---- publishing snapshots ---- */

/* Snapshots held at once at most (the latest, and older ones still being sent). */
#define METRICS_SNAPSHOTS_MAX 64

struct metrics_snapshot {
    atomic_uint refs;        /* references held by scrapes */
    struct metrics_buf text; /* the rendered body */
};

struct metrics_store {
    _Atomic(struct metrics_snapshot *) cur; /* the latest published, NULL before the first */
    struct metrics_snapshot *snap[METRICS_SNAPSHOTS_MAX]; /* the publisher's pool */
    size_t n;
};

/* Empties a store (no snapshot published). */
void metrics_store_init(struct metrics_store *st);

/*
 * Publisher: a snapshot to render into, neither the latest nor referenced by a scrape (its
 * text buffer is the one of an earlier render, reused); a new one when every snapshot is in
 * use. NULL when METRICS_SNAPSHOTS_MAX are in use or memory runs out: skip this publication.
 * Only one thread may publish.
 */
struct metrics_snapshot *metrics_store_begin(struct metrics_store *st);

/* Publisher: makes snap (from metrics_store_begin, fully rendered) the latest. */
void metrics_store_publish(struct metrics_store *st, struct metrics_snapshot *snap);

/*
 * Any thread: a reference to the latest snapshot, or NULL before the first publication. The
 * text does not change until the reference is released with metrics_snapshot_release.
 */
struct metrics_snapshot *metrics_store_acquire(struct metrics_store *st);

/* Releases a reference taken by metrics_store_acquire. */
void metrics_snapshot_release(struct metrics_snapshot *snap);

/* Frees every snapshot. No reference may be held any more (the HTTP server is stopped). */
void metrics_store_done(struct metrics_store *st);

#endif
