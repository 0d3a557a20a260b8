/*
 * runreport: `carma report DIR` for a directory that carma itself wrote (`carma run -o DIR`,
 * `carma stat -o DIR`): energy, power statistics, attribution and carbon per window, where the
 * windows are the whole run and each workload's lifetime (see docs/report.md).
 */
#ifndef CARMA_REPORT_RUNREPORT_H
#define CARMA_REPORT_RUNREPORT_H

#include <jansson.h>
#include <stdbool.h>

#include "analysis/series.h"
#include "core/err.h"

/* True when dir looks like a directory carma wrote (its manifest.json names carma as producer). */
bool runreport_is_run_dir(const char *dir);

struct runreport_opts {
    enum series_edges edges;
};

/*
 * Builds the report of the run directory dir: *ret = a JSON array, one object per window (the
 * whole run first, then each workload in workloads.json order; a `carma stat` directory has
 * the run window only). o NULL: the defaults (interpolated edges). Returns 0, or a negative
 * errno with e naming the file, line or field (nothing in *ret):
 *   -ENOENT  manifest.json or samples.csv absent (the optional files may be missing: a
 *            warning in the run window says so)
 *   -EINVAL  a malformed file ("DIR/attribution.csv:145: the last line has no line end (the
 *            file is cut short)", "DIR/samples.csv:8: watts: 'nan' is not a finite number",
 *            "DIR/workloads.json:22:5: ..."), or a manifest whose producer is not carma run/stat
 *   -ENOMEM
 * A window that the samples do not cover is not an error: its channels get null numbers and
 * the window a warning. The caller owns *ret (json_decref).
 */
int runreport_build(const char *dir, const struct runreport_opts *o, json_t **ret,
                    struct carma_err *e);

/* A channel over time: its watts at each tick where it had a reading (borrowed arrays). */
struct runreport_chan_tl {
    const char *name, *kind, *domain, *method;
    bool node; /* counted in the node's energy */
    size_t n;
    const double *t, *w;
};

/* A job's attributed power over the timeline's bins (workloads, then idle, other,
 * unattributed when they have energy). */
struct runreport_job_tl {
    const char *name;
    bool workload;
    double *w;       /* per bin: the job's joules in the bin / the bin's width */
    double energy_j; /* the sum over the run window (= the bins' joules) */
};

struct rundir_mark;

/*
 * A run directory's data over time, for pictures (report/html): the report (runreport_build's
 * array), the run window, every channel's watts, and the node channels' attribution binned
 * into nbins equal bins across the run window (each attribution.csv row spread pro rata over
 * its split period, a workload's over the part of it the workload lived, as the windows cut
 * them), so that a stacked plot of the jobs adds up to the run window's figures exactly.
 */
struct runreport_timeline {
    json_t *report;   /* owned */
    json_t *manifest; /* borrowed from the loaded run (NULL when absent) */
    json_t *run_json; /* report.json (carma run) or summary.json (carma stat); may be NULL */
    bool is_run;
    double t0, t1; /* the run window (Unix s) */
    double interval_s;
    size_t nch;
    struct runreport_chan_tl *ch;
    size_t nbins;  /* 0 without attribution.csv */
    double *bin_t; /* bin ends, nbins of them; the bins are (t0 + i·Δ, t0 + (i+1)·Δ] */
    size_t njobs;
    struct runreport_job_tl *jobs;
    double g_per_kwh, pue; /* NAN when unknown */
    size_t nmarks;
    const struct rundir_mark *marks; /* marks.csv's windows and events (rundir/rundir.h) */
    void *priv;                      /* the loaded run, owning the arrays */
};

/*
 * Loads dir as runreport_build does (the same errors) and fills *ret (nbins: 2 to 100000;
 * fewer when the run has fewer ticks). runreport_timeline_free releases it.
 */
int runreport_timeline_load(const char *dir, const struct runreport_opts *o, size_t nbins,
                            struct runreport_timeline *ret, struct carma_err *e);

/* Frees what runreport_timeline_load filled (a zeroed struct is fine). */
void runreport_timeline_free(struct runreport_timeline *tl);

/* The text form of a report built by runreport_build, malloc'ed, ending with '\n'; NULL when
 * out of memory. One block per window: a header line, its warnings, the node's total, one
 * line per channel, per job, the carbon and the GPU utilization (docs/report.md). */
char *runreport_text(const json_t *report);

#endif
