/*
 * runreport: `carma report DIR` for a directory that carma itself wrote (`carma run -o DIR`,
 * `carma stat -o DIR`): energy, power statistics, attribution and carbon per window, where the
 * windows are the whole run and each workload's lifetime (see docs/report.md).
 */
#ifndef CARMA_REPORT_RUNREPORT_H
#define CARMA_REPORT_RUNREPORT_H

#include <jansson.h>
#include <stdbool.h>

#include "core/err.h"

enum report_edges {
    REPORT_EDGES_INTERPOLATE = 0, /* default: linear interpolation at the edges, gaps checked */
    REPORT_EDGES_SNAP,            /* srt-slurm's nearest-sample snapping, 3 s limit */
};

/* True when dir looks like a directory carma wrote (its manifest.json names carma as producer). */
bool runreport_is_run_dir(const char *dir);

struct runreport_opts {
    enum report_edges edges;
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

/* The text form of a report built by runreport_build, malloc'ed, ending with '\n'; NULL when
 * out of memory. One block per window: a header line, its warnings, the node's total, one
 * line per channel, per job, the carbon and the GPU utilization (docs/report.md). */
char *runreport_text(const json_t *report);

#endif
