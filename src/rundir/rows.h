/*
 * rows: the rows of the run-directory files `carma run` writes as it goes (docs/formats.md),
 * formatted in one place: features.csv, node_util.csv, cpu_util.csv, utilization.csv,
 * event_summaries.jsonl,
 * pstree.log, and the content of workloads.json and workload_pids.json. What readers accept of
 * each file is rundir.h's (its validators); here is what carma writes, column by column.
 *
 * Each formatter takes plain figures (numbers, names, strings already formatted once per row
 * set, such as the timestamp) and appends to the caller's buffer (a csv_buf, a row buffer, a
 * memory stream), so that the caller gathers the figures and hands them over, and the sampling
 * path keeps its buffers: node_util.csv's, cpu_util.csv's and utilization.csv's rows allocate
 * nothing (beyond
 * a csv_buf's growth) and open nothing. Every timestamp_unix is fmt_unix_us's; every CSV row
 * ends with CRLF.
 */
#ifndef CARMA_RUNDIR_ROWS_H
#define CARMA_RUNDIR_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "core/csv.h"

/* ---- features.csv (a journal; read by model/features, export/carma_files' perf.log) ----
 * timestamp_unix,workload,cpu_time_s,task_clock_ns,instructions,cycles: per started workload,
 * at every event summary, cumulative: its CPU time in seconds ("%.6f") and its performance
 * counters (decimal integers; a blank cell where the counter is unavailable). */
#define RUNDIR_FEATURES_HEADER                                                                     \
    "timestamp_unix,workload,cpu_time_s,task_clock_ns,instructions,cycles\r\n"
#define RUNDIR_FEATURES_COUNTERS 3 /* task_clock_ns, instructions, cycles */

/* Writes one features.csv row to f: ts, workload (as it is), cpu_time_s, then counter i of v
 * (RUNDIR_FEATURES_COUNTERS of them) when bit i of mask is set, else a blank cell. */
void rundir_rows_features(FILE *f, const char *ts, const char *workload, double cpu_time_s,
                          const uint64_t *v, unsigned mask);

/* ---- node_util.csv (a journal; rundir.h's rundir_util_* read it) ----
 * timestamp_unix,busy_cpu_s,total_cpu_s,cpu_util: the node's busy and total CPU-seconds
 * ("%.6f"), cumulative from the first row, and the busy share since the previous reading
 * ("%.6f", blank when unknown). */
#define RUNDIR_NODE_UTIL_HEADER "timestamp_unix,busy_cpu_s,total_cpu_s,cpu_util\r\n"

/* Writes one node_util.csv row, CRLF-ended, into row (cap bytes; NUL-terminated only when it
 * fits with room to spare); cpu_util NAN for a blank cell. Returns the row's length, or 0 when
 * it does not fit in cap - 1 bytes (then nothing is to be written). */
size_t rundir_rows_node_util(char *row, size_t cap, const char *ts, double busy_cpu_s,
                             double total_cpu_s, double cpu_util);

/* ---- cpu_util.csv (a journal, with DCGM's CPU entities) ----
 * timestamp_unix,socket,source,util_total,util_user,util_nice,util_sys,util_irq: at every
 * node_util.csv row, one row per CPU socket a source reports the utilization of (DCGM's fields
 * 1100-1104: ratios 0..1 as of its last read); source a plain word (dcgm), the figures
 * fmt_fixed6's, a missing value (NAN) a blank cell. */
#define RUNDIR_CPU_UTIL_HEADER                                                                     \
    "timestamp_unix,socket,source,util_total,util_user,util_nice,util_sys,util_irq\r\n"
#define RUNDIR_CPU_UTIL_FIGURES 5 /* total, user, nice, sys, irq */

/* Writes one cpu_util.csv row, CRLF-ended, into row (cap bytes; NUL-terminated only when it
 * fits with room to spare): ts, socket, source, then the RUNDIR_CPU_UTIL_FIGURES figures of
 * util (NAN: a blank cell). Returns the row's length, or 0 when it does not fit in cap - 1
 * bytes (then nothing is to be written). */
size_t rundir_rows_cpu_util(char *row, size_t cap, const char *ts, unsigned socket,
                            const char *source, const double *util);

/* ---- utilization.csv (a journal, with NVML GPUs; rundir.h's rundir_gpu_* read it) ----
 * timestamp_unix,gpu,gpu_uuid,pid,workload,gpu_util_pct,mem_util_pct,sm_util_pct,used_mem_mib:
 * per GPU at every poll, a device row (blank pid, workload, sm_util_pct and used_mem_mib) then
 * one row per process on it (blank gpu_util_pct and mem_util_pct; workload the workload's name
 * or "other"). gpu is NVML's index, gpu_uuid and workload CSV fields (quoted when they must
 * be), the figures fmt_fixed6's, a NAN figure a blank cell. */
#define RUNDIR_UTILIZATION_HEADER                                                                  \
    "timestamp_unix,gpu,gpu_uuid,pid,workload,gpu_util_pct,mem_util_pct,sm_util_pct,"              \
    "used_mem_mib\r\n"

/* Appends GPU gpu's device row to b (ts: tl bytes). Returns 0 or -ENOMEM (csv_buf's: the
 * appends after a failed one are still made). */
int rundir_rows_gpu_device(struct csv_buf *b, const char *ts, size_t tl, unsigned gpu,
                           const char *uuid, double gpu_util_pct, double mem_util_pct);

/* Appends the row of process pid on GPU gpu to b. Returns 0 or -ENOMEM. */
int rundir_rows_gpu_process(struct csv_buf *b, const char *ts, size_t tl, unsigned gpu,
                            const char *uuid, uint64_t pid, const char *workload,
                            double sm_util_pct, double used_mem_mib);

/* ---- event_summaries.jsonl (a journal; read by report/live, export/carma_files) ----
 * One compact JSON object a line, about every second: {"timestamp_unix","elapsed_s",
 * "workloads":[{"name","power_w","energy_j","g_co2e","method"}],"idle_j","other_j",
 * "unattributed_j"}, reals at 16 significant digits; power_w null when unknown. */
struct rundir_event_workload {
    const char *name;
    double power_w; /* over the last period, NAN when unknown (null) */
    double energy_j, g_co2e;
    const char *method; /* "measured", "estimated", "measured+estimated", "none" */
};

struct rundir_event {
    double timestamp_unix, elapsed_s;
    const struct rundir_event_workload *w;
    size_t n;
    double idle_j, other_j, unattributed_j;
};

/* The line of ev, '\n'-ended, in a new buffer (caller frees; *len its length, without a NUL);
 * NULL when out of memory. */
char *rundir_rows_event(const struct rundir_event *ev, size_t *len);

/* ---- pstree.log (a journal of snapshots; read by import/nsys_run) ----
 * A snapshot: "# T\n" (T the Unix time, "%.6f"), then per running workload "NAME: pgid PGID\n"
 * (" cgroup PATH" before the line end when it has a cgroup), each of its processes on a line of
 * its own, indented by two spaces. */
void rundir_rows_pstree_begin(FILE *f, double t);
/* cgroup: the workload's cgroup directory, NULL when it has none. */
void rundir_rows_pstree_job(FILE *f, const char *name, int pgid, const char *cgroup);
/* A process line: two spaces and line as it is (a line of cgroup.procs, with its line end). */
void rundir_rows_pstree_line(FILE *f, const char *line);
/* A process line of pid: "  PID\n". */
void rundir_rows_pstree_pid(FILE *f, int pid);

/* ---- workloads.json, workload_pids.json (written at the end; the readers:
 * report/runreport, model/features) ----
 * workloads.json: {"workloads":[{"name","type","pids","pgid","cgroup","start_unix","end_unix",
 * "exit_status","signal","timed_out"}]}, in the experiment's order; workload_pids.json
 * (CARMA's): {"NAME": pid} for each workload that was started. */
struct rundir_workload {
    const char *name;
    const char *type;   /* the experiment's kind, NULL: null */
    int pid;            /* the process group leader's; <= 0 when never started: pids [], pgid
                           null, not in workload_pids.json */
    const char *cgroup; /* NULL: null */
    double start_unix;  /* NAN: null */
    double end_unix;    /* NAN: null */
    int exit_status;
    int signal; /* the signal that ended it, 0: null */
    bool timed_out;
};

/* workloads.json's document and workload_pids.json's for the n workloads of w. */
json_t *rundir_rows_workloads(const struct rundir_workload *w, size_t n);
json_t *rundir_rows_workload_pids(const struct rundir_workload *w, size_t n);

#endif
