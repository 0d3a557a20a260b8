/*
 * srt/follow: crash-safe incremental reports of an srt-slurm log directory while its benchmark
 * runs (srt-slurm's incremental_power, formats doc srt-slurm.md §6.9). Each poll discovers the
 * run again, reads the CSVs tolerantly (text after the last line end is a row still being
 * written: dropped), and for each result artifact not yet reported builds its window's report
 * with the same code as `carma report` (srt/report). A report that succeeds is written
 *
 *   - as `power_energy_c<N>.json` next to its artifact (the sa-bench_* directory, or
 *     conc_<N>/aiperf_artifacts/), atomically (temporary file, fsync, rename), json.dumps
 *     indent 2 and a final newline;
 *   - as one line appended to `<log_dir>/power_energy_report.jsonl` (one write(2) with
 *     O_APPEND: whole lines; consumers keep the latest emitted_at_unix per concurrency);
 *
 * both the terminal report's object plus "schema_version": 1 and "emitted_at_unix". So a job
 * killed at its walltime leaves the report of every window that had finished. A window whose
 * power_energy_c<N>.json exists already (a follower restarted on the same run) is not
 * reported again.
 *
 * A window whose report fails is retried at the next poll (its artifact may be half written,
 * its samples may not reach the window's end yet) until the newest power sample is more than
 * 3.0 s past the window's end: then it is dead, and its last error is kept in the warnings.
 */
#ifndef CARMA_SRT_FOLLOW_H
#define CARMA_SRT_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/series.h"
#include "core/err.h"
#include "srt/log.h"

/* How far past a window's end the samples must reach before a failing window is given up. */
#define SRT_FOLLOW_DEAD_AFTER_S 3.0

struct srt_follow_source {
    char *path; /* the artifact, as srt/log names it */
    long long concurrency;
    bool emitted, dead;
};

struct srt_follow {
    char *log_dir;
    char *cpu_samples; /* --cpu-samples, or NULL */
    unsigned flags;    /* SRT_LOG_STRICT */
    enum series_edges edges;
    struct srt_follow_source *src;
    size_t nsrc, cap;
    size_t emitted, dead;               /* counts over the follower's life */
    char last_error[CARMA_ERR_MSG_MAX]; /* why the last poll found nothing new ("" if it did) */
};

/* Sets f up for log_dir. Returns 0 or -ENOMEM. */
int srt_follow_init(struct srt_follow *f, const char *log_dir, const char *cpu_samples,
                    unsigned flags, enum series_edges edges);

/*
 * One poll at wall time now (unix seconds, for emitted_at_unix). A window is reported once
 * some power sample lies at or after its end (so that a sample still to come cannot change
 * it), or, when final is set (the last poll, when the run stops), as soon as its report can
 * be built. Returns the number of windows
 * emitted by this poll (>= 0), or a negative errno when a report that was built could not be
 * written (a full disk: e names the file; the window stays pending and is retried). A run that
 * is not ready yet is not an error: 0, with the reason in f->last_error.
 */
int srt_follow_poll(struct srt_follow *f, double now, bool final, struct carma_err *e);

/* Frees what f holds (NULL-safe). */
void srt_follow_done(struct srt_follow *f);

/*
 * A follower on its own thread, for commands that have other work on their main thread
 * (`carma collect --report-follow`): it polls every period_ns and, at srt_follow_thread_stop, once
 * more with final set, so the report of every finished window is written before the command
 * exits. f stays owned by the caller and must outlive the thread; read its counters after the
 * stop. Returns NULL with e set when the thread cannot be started.
 */
struct srt_follow_thread;
struct srt_follow_thread *srt_follow_thread_start(struct srt_follow *f, long long period_ns,
                                                  struct carma_err *e);

/*
 * Stops the thread after its final poll and frees it (NULL-safe). Returns 0, or the negative
 * errno of the last poll that could not write its reports, with e set (the message names the
 * file).
 */
int srt_follow_thread_stop(struct srt_follow_thread *t, struct carma_err *e);

#endif
