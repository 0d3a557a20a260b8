/*
 * srt/report: srt-slurm's power_energy_report built from an srt/log (formats doc srt-slurm.md
 * §6.5-§6.8): per concurrency window the energy and power statistics per CPU socket and node
 * and per GPU device, node and role, the CPU+GPU totals, J/token, tokens/s per watt, the
 * computed / reported / coverage timelines, utilization means and maxima, and warnings.
 *
 * The reports are jansson trees with srt-slurm's keys in its order and its value types (ints
 * stay ints where Python's arithmetic keeps them ints: a window stored as integers gives an
 * integer duration), so that pyjson_dumps(list, 2) is srt-slurm's --json-out text. The text
 * form is srt-slurm's stdout, line for line.
 *
 * Edges: SERIES_EDGES_SNAP is srt-slurm's nearest-sample snapping (numbers equal to its report);
 * SERIES_EDGES_INTERPOLATE (carma's default) cuts each series exactly at the window's edges and
 * checks every gap inside the window (series_window_interpolate). Any breakdown that fails
 * aborts its window's report, as srt-slurm's does: the error names the series and why.
 */
#ifndef CARMA_SRT_REPORT_H
#define CARMA_SRT_REPORT_H

#include <jansson.h>

#include "core/err.h"
#include "analysis/series.h"
#include "srt/log.h"

/* The fixed text of the warnings srt-slurm's report can give (besides utilization ones). */
#define SRT_REPORT_WARN_NO_ROLES                                                                   \
    "GPU role breakdown unavailable (no manifest.json / expected_devices)"
#define SRT_REPORT_WARN_NO_CPU                                                                     \
    "combined perf/W unavailable: no CPU power leg in this run (GPU-only figures reported)"

/*
 * The report of window w over the series of log (loaded: srt_log_open, or srt_log_load_cpu/gpu
 * with w from srt_log_load_window) into *ret (a new JSON object, srt-slurm §6.7). sc:
 * percentile scratch reused across calls (NULL: one per call). Returns 0, or a negative errno
 * with e set (*ret untouched).
 */
int srt_report_window(const struct srt_log *log, const struct srt_log_window *w,
                      enum series_edges edges, struct series_scratch *sc, json_t **ret,
                      struct carma_err *e);

/* The most threads srt_report_build makes the windows' reports on. */
#define SRT_REPORT_THREADS 8

/*
 * Every window's report, in source order, as a JSON array; the first window's error (in source
 * order) when one fails. The windows are reported on up to SRT_REPORT_THREADS threads
 * (CARMA_REPORT_THREADS when set, else the CPUs the process may run on): the list is the one
 * thread's, byte for byte.
 */
int srt_report_build(const struct srt_log *log, enum series_edges edges, json_t **ret,
                     struct carma_err *e);

/*
 * srt-slurm's text report of a list of reports (§6.8), malloc'ed, ending with '\n'; NULL when
 * out of memory.
 */
char *srt_report_text(const json_t *reports);

#endif
