/*
 * carma_files: the files that the CARMA framework writes in its run directory, written by
 * `carma run` beside its own, in the format of the tool CARMA used, so that scripts written for
 * CARMA's runs read carma's (docs/formats.md, "CARMA's files"):
 *
 *   nvidia_smi_power.csv   nvidia-smi --query-gpu=timestamp,index,power.draw,utilization.gpu
 *                          --format=csv: "timestamp, index, power.draw [W], utilization.gpu [%]"
 *                          then "2026/12/01 21:10:21.806, 0, 162.22 W, 20 %" per GPU per sample
 *                          (local time, ms), from power/samples.csv; "[N/A]" for a value NVML
 *                          did not give. Only when a GPU was measured.
 *   wattsup_log.csv        the wall meter's readings: "timestamp_unix,watts,volts,amps" (the
 *                          fields of a Watts Up? record; carma keeps the watts only, so volts
 *                          and amps are empty), from samples.csv's first meter/ channel. Only
 *                          when a wall meter ran.
 *   perf.log               perf stat -x, -I ... -G <cgroup> lines: "time,counter-value,unit,
 *                          event,cgroup,run-time,pct-running,metric-value,metric-unit", time
 *                          in seconds since the first sample, the workload's name as the
 *                          cgroup, one line per counter that carma read (task-clock in msec,
 *                          instructions, cycles) per workload per event period, from
 *                          features.csv's cumulative counts. Only when a counter was read.
 *   <name>_power_carbon.csv  per workload, its power and carbon over time: "timestamp_unix,
 *                          elapsed_s,power_w,energy_j,operational_g_co2e,embodied_g_co2e,method"
 *                          from event_summaries.jsonl (energy and operational carbon
 *                          cumulative), the embodied carbon of report.json accrued linearly
 *                          over the workload's lifetime (workloads.json's start/end; empty when
 *                          report.json has none).
 *
 * workload_pids.json, pstree.log and event_summaries.jsonl, which CARMA also names, are
 * `carma run`'s own files already. The files are derived from what the run writes and
 * flushes as it goes: followed during the run (carma_files_follow, about every second), and
 * written whole at its end (carma_files_write; a run stopped by a signal too). Lines end in
 * LF, as the tools write them; numbers are printed in the C locale (carma never calls
 * setlocale).
 *
 * The converters take the input file's text and append to an output stream, so that they are
 * tested byte for byte (tests/unit/test_carma_files.c); carma_files_write drives them on a
 * run directory.
 */
#ifndef CARMA_EXPORT_CARMA_FILES_H
#define CARMA_EXPORT_CARMA_FILES_H

#include <stdio.h>

#include "core/err.h"

/*
 * nvidia_smi_power.csv from the text of power/samples.csv (srt-slurm's GPU samples: columns
 * timestamp_unix, gpu_index, power_w, gpu_util_pct). Returns the number of rows written (0:
 * nothing written, not even the header), or -EINVAL with e set (a missing column, a bad
 * timestamp), -EIO when out fails. name labels errors. text (NUL-terminated) is split in
 * place (core/csv.h csv_split): it is left changed.
 */
int carma_nvsmi_write(char *text, size_t len, const char *name, FILE *out, struct carma_err *e);

/*
 * wattsup_log.csv from the text of samples.csv: the rows of the first channel whose name
 * starts with "meter/" and that have watts. Returns the rows written (0: nothing written),
 * or -EINVAL / -EIO as carma_nvsmi_write.
 */
int carma_wattsup_write(char *text, size_t len, const char *name, FILE *out, struct carma_err *e);

/*
 * perf.log from the text of features.csv (timestamp_unix, workload, cpu_time_s,
 * task_clock_ns, instructions, cycles; cumulative per workload, empty when not read). t0_unix:
 * the time that perf's interval times count from. A row's counts are those of the time since
 * the previous row's time (of any workload), or for a workload's first row since its start:
 * starts_unix[i] of the workload names[i] (n of them; NAN or absent: the previous row's time,
 * else t0_unix). Returns the lines written (0: nothing written), or -EINVAL / -EIO.
 */
int carma_perf_write(char *text, size_t len, const char *name, double t0_unix,
                     const char *const *names, const double *starts_unix, size_t n, FILE *out,
                     struct carma_err *e);

/*
 * <name>_power_carbon.csv of workload `workload` from the text of event_summaries.jsonl.
 * start_unix/end_unix: its lifetime, embodied_g: its embodied carbon (any NAN: the column is
 * left empty). Returns the rows written (0: nothing written), or -EINVAL (a line that is not
 * an event summary) / -EIO.
 */
int carma_job_write(const char *text, size_t len, const char *name, const char *workload,
                    double start_unix, double end_unix, double embodied_g, FILE *out,
                    struct carma_err *e);

/*
 * Writes CARMA's files into the run directory dir from its samples.csv, power/samples.csv,
 * features.csv, event_summaries.jsonl, workloads.json and report.json (those that exist).
 * Each file is written whole (replaced atomically). Returns the number of files written, or
 * the first error (negative errno, e set naming the file) after writing the others.
 */
int carma_files_write(const char *dir, struct carma_err *e);

/*
 * Following a run as it goes, so that a run killed outright (SIGKILL, a crash) still leaves
 * CARMA's files up to its last second: carma_files_open(dir) starts following the run
 * directory dir (NULL when out of memory); each carma_files_follow call appends to CARMA's
 * files what the run's files gained since the last call (their complete lines; the workloads'
 * CSVs without the embodied carbon, which is known only at the end); carma_files_write at the
 * end replaces them all whole. carma_files_follow returns 0 or the first negative errno (e
 * set; what could be written is). carma_files_free closes everything (NULL-safe).
 */
struct carma_files;
struct carma_files *carma_files_open(const char *dir);
int carma_files_follow(struct carma_files *cf, struct carma_err *e);
void carma_files_free(struct carma_files *cf);

#endif
