/*
 * perfcount: per-workload performance counters (task-clock, instructions, cycles) through
 * perf_event_open, as features for power models. Counters follow the workload's main process
 * and, by inheritance, the children it forks afterwards (their counts join when they exit).
 * Where an event cannot be opened (no PMU in a VM, perf_event_paranoid, no permission) it is
 * recorded as unavailable with the reason, never as 0.
 */
#ifndef CARMA_WORKLOAD_PERFCOUNT_H
#define CARMA_WORKLOAD_PERFCOUNT_H

#include <stdint.h>
#include <sys/types.h>

enum { PERFC_TASK_CLOCK, PERFC_INSTRUCTIONS, PERFC_CYCLES, PERFC_N };

struct perf_counters {
    int fd[PERFC_N];  /* -1 when unavailable */
    int err[PERFC_N]; /* negative errno of the failed open */
};

/* Opens the counters for pid (and the children it forks from now on). Never fails as a
 * whole: each counter that cannot be opened is marked with its error. */
void perf_counters_open(struct perf_counters *p, pid_t pid);

/* Reads the counters into v; returns a bit mask of the valid ones (1 << PERFC_*). */
unsigned perf_counters_read(const struct perf_counters *p, uint64_t v[PERFC_N]);

/* Closes the counters (safe twice, and on a zeroed struct after perf_counters_init). */
void perf_counters_close(struct perf_counters *p);

/* Marks every counter unavailable (-ENODEV): the state before open. */
void perf_counters_init(struct perf_counters *p);

/* Why counter i is unavailable, for people (from its open error). */
const char *perf_counter_error_text(const struct perf_counters *p, int i);

/* "task_clock_ns", "instructions", "cycles". */
const char *perf_counter_name(int i);

#endif
