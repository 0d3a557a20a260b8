/*
 * collect/scrape: the collector's scrape engine (libcurl). Scrapes the /metrics of many
 * exporters on one clock and writes what they serve through collect/collector (samples.csv,
 * nodes.csv) and, with sinks, srt-slurm's CPU power leg (srt/cpu: power/cpu/) and GPU power leg
 * (srt/gpu: power/). A target named "dcgm:" or whose body has dcgm-exporter's families is read
 * by collect/dcgm into GPU rows (collect_out_dcgm).
 *
 * The clock: cycle k starts at start + k x interval on CLOCK_MONOTONIC (absolute, so nothing
 * drifts); a cycle that could not start within its slot is counted as missed, and its
 * scrape_seq is left out. Each cycle starts one HTTP request per target at once through one
 * libcurl multi handle and waits for all of them up to the request timeout (at most 95 % of the
 * interval: the cycle never takes longer than the interval); a request still running then is
 * abandoned. The easy handles are made once and re-added every cycle, so that connections are
 * kept alive in the multi handle's cache; each target's body buffer keeps its largest size.
 * Bodies are parsed under prom_limits_default (the download is capped at its max_bytes).
 *
 * A target that fails (no answer, an HTTP status other than 200, a body too large or
 * unparseable) gets a row with blank cells, a warning when it goes down and a note when it
 * comes back (nothing in between), and is retried with exponential backoff (cycles skipped: 1,
 * 2, 4, ... up to 30 s worth), never holding up the others. The signals given to scrape_run
 * are waited for between cycles (sigtimedwait is the sleep): one that arrives during a cycle
 * ends the run after it.
 *
 * Nothing here prints: errors come back in a struct carma_err, warnings (one line each, the
 * text that follows "carma: ") through the warn callback.
 */
#ifndef CARMA_COLLECT_SCRAPE_H
#define CARMA_COLLECT_SCRAPE_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/collector.h"
#include "collect/dcgm.h"
#include "core/err.h"

struct scrape_opts;

/* One line of warning or note, e.g. "collect: warning: host:9405 (node n1) is down: ...". */
typedef void (*scrape_warn_fn)(void *cls, const char *msg);

/*
 * A second writer of every cycle's scrapes, beside samples.csv: srt-slurm's CPU power leg
 * (srt/cpu's srt_cpu_sink, which the command hands in). All called on the engine's thread.
 *   open         at scrape_open: dir the directory to write (DIR/power/cpu), nodes[0..n) the
 *                targets' node names in order; the writer, or NULL with e set naming the file;
 *   cycle_begin  before a cycle's scrapes;
 *   node         target i's scrape of the cycle, stamped real_ns: doc its parsed body, NULL
 *                when the poll failed (no answer, an HTTP error, an unparseable body); not
 *                called for a poll abandoned at the cycle's deadline, nor for a dcgm-exporter
 *                (a "dcgm:" target, or a body with dcgm-exporter's families);
 *   cycle_end    writes the cycle: 0, or a negative errno with e set naming the file;
 *   finish       flushes, closes and frees w (NULL-safe; e may be NULL): 0, or a negative errno
 *                with e set (the first error).
 */
struct scrape_sink {
    void *(*open)(const char *dir, const char *const *nodes, size_t n, struct carma_err *e);
    void (*cycle_begin)(void *w);
    void (*node)(void *w, size_t i, int64_t real_ns, const struct prom_doc *doc);
    int (*cycle_end)(void *w, struct carma_err *e);
    int (*finish)(void *w, struct carma_err *e);
};

/*
 * A writer of every cycle's GPU readings: srt-slurm's GPU power leg (srt/gpu's srt_gpu_sink).
 * All called on the engine's thread.
 *   open         at scrape_open: dir the directory to write (DIR/power), nodes[0..n) the
 *                targets' node names in order, o the engine's options (interval, timeout,
 *                required, version); the writer, or NULL with e set naming the file;
 *   cycle_begin  before a cycle's scrapes; seq the cycle's scrape_seq (samples.csv's);
 *   node         target i's scrape of the cycle: the HTTP request started at start_ns and
 *                settled (its answer complete) at settle_ns (realtime); doc its parsed body,
 *                dcgm that body read by collect/dcgm when it is a dcgm-exporter's (a "dcgm:"
 *                target, or a body with dcgm-exporter's families), else NULL; only called for
 *                a scrape that gave a parsed body;
 *   cycle_end    writes the cycle: 0, or a negative errno with e set naming the file;
 *   finish       flushes, closes and frees w (NULL-safe; e may be NULL), status the run's as
 *                srt-slurm names them ("complete", "incomplete", "failed"): 0, or a negative
 *                errno with e set (the first error).
 */
struct scrape_gpu_sink {
    void *(*open)(const char *dir, const char *const *nodes, size_t n, const struct scrape_opts *o,
                  struct carma_err *e);
    void (*cycle_begin)(void *w, uint64_t seq);
    void (*node)(void *w, size_t i, int64_t start_ns, int64_t settle_ns, const struct prom_doc *doc,
                 const struct dcgm_scrape *dcgm);
    int (*cycle_end)(void *w, struct carma_err *e);
    int (*finish)(void *w, const char *status, struct carma_err *e);
};

struct scrape_opts {
    int64_t interval_ns;
    int64_t timeout_ns;  /* 0: min(interval, 5 s); never more than 95 % of the interval */
    int64_t duration_ns; /* 0: until a signal */
    bool required;       /* a target down in the first cycle ends the run */
    const struct scrape_sink *srt_cpu;     /* also srt-slurm's CPU power leg (NULL: none) */
    const struct scrape_gpu_sink *srt_gpu; /* also srt-slurm's GPU power leg (NULL: none) */
    bool quiet;                            /* no warnings about targets */
    const char *version;                   /* carma's, for the User-Agent and the manifest */
    scrape_warn_fn warn;
    void *warn_cls;
};

/* How a run ended, for the manifest. */
struct scrape_end {
    bool final; /* the run is over (else the manifest says "running") */
    bool fatal; /* a required target was down */
    int sig;    /* the signal that ended it (0: none) */
};

/* What the run did, for the last line. */
struct scrape_totals {
    uint64_t cycles, missed, scrapes, errors, negative;
};

struct scrape;

/* An engine for the targets ts (which outlive it), nothing opened yet. NULL with e set
 * (-ENOMEM, "out of memory"). */
struct scrape *scrape_new(const struct collect_targets *ts, const struct scrape_opts *o,
                          struct carma_err *e);

/* Opens the output files in dir (which exists): samples.csv, nodes.csv, with srt_cpu
 * power/cpu/ (its open), with srt_gpu power/ (its open). Returns 0 or a negative errno with e set
 * naming the file. */
int scrape_open(struct scrape *s, const char *dir, struct carma_err *e);

/* Whether scrape_open succeeded (the run has a start time, and a manifest to write). */
bool scrape_started(const struct scrape *s);

/* Makes the libcurl multi handle and one easy handle per target. Returns 0 or a negative errno
 * with e set ("cannot initialize libcurl..."). */
int scrape_http_init(struct scrape *s, struct carma_err *e);

/*
 * Runs the clock: a cycle per slot until duration, a signal of sigs (blocked by the caller), or
 * a required target down in the first cycle (each such target warned about). *ret_sig: the
 * signal that ended it, or 0. Returns 1 when a required target was down, else 0.
 */
int scrape_run(struct scrape *s, const sigset_t *sigs, int *ret_sig);

/* Takes every signal of set that is pending (blocked, not waited for). Returns the first, or
 * 0 when none was. */
int scrape_signal_pending(const sigset_t *set);

/* How the run ended, before scrape_close: the GPU leg's final status comes from it (without
 * it, "incomplete"). */
void scrape_set_end(struct scrape *s, const struct scrape_end *end);

/* Flushes and closes the output files; a failure is warned about ("collect: ..."). */
void scrape_close(struct scrape *s);

/* Whether writing samples.csv, the CPU leg or the GPU leg ever failed. */
bool scrape_write_failed(const struct scrape *s);

/*
 * manifest.json's content (a new reference): options, targets with their counts and last
 * error, times, cycles, status, stop reason, reason codes; interruption (stolen; json null when
 * none) is its "interruption". NULL when out of memory.
 */
json_t *scrape_manifest(struct scrape *s, const struct scrape_end *end, json_t *interruption);

/* The totals over every target. */
void scrape_totals_get(const struct scrape *s, struct scrape_totals *ret);

/* Closes what is open and frees s (NULL-safe). */
void scrape_free(struct scrape *s);

#endif
