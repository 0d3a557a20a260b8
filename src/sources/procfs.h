/*
 * procfs: node CPU utilization from proc/stat below the root, per tick.
 *
 * proc/stat is opened once and re-read with pread each tick; the per-CPU lines are grouped
 * by socket (physical id in proc/cpuinfo) so that the model source can estimate each
 * socket's power. Utilization is a fraction of all CPU time over the last tick, split into
 * total, user, nice, sys and irq (irq + softirq). Busy time (everything but idle and
 * iowait) is kept in clock ticks for the attribution of CPU energy to process trees.
 */
#ifndef CARMA_SOURCES_PROCFS_H
#define CARMA_SOURCES_PROCFS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/fsroot.h"

#define PROCSTAT_SOCKETS_MAX 64
/* The most clock ticks one counter of one cpu may step between two readings (2^40: 348 years
 * at 100 Hz); a cpu with a larger step (a bogus or torn proc/stat) counts for nothing that
 * tick, its marks untouched, so that the node's sums over up to 65536 cpus cannot wrap. */
#define PROCSTAT_STEP_MAX ((uint64_t)1 << 40)

struct cpu_times {
    uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
};

struct procstat {
    bool opened; /* procstat_open was called: close releases */
    int fd;
    char *buf; /* read buffer sized at open for the cpu lines */
    size_t buf_cap;
    int ncpu;
    int nsockets;
    int *cpu_socket;                      /* socket of each cpu index (0 when unknown) */
    struct cpu_times node_prev, node_cur; /* node sums of the per-cpu high-water marks */
    struct cpu_times *cpu_prev, *cpu_cur; /* per cpu: high-water marks, last reading */
    bool have_prev;                       /* one good reading taken */
    bool primed; /* a clock tick elapsed between two readings: the fractions are valid */
    bool valid;  /* the last read succeeded */
    int err;     /* negative errno of the last failed read */
    /* over the last tick, fractions of all CPU time of the node (0..1) */
    double util_total, util_user, util_nice, util_sys, util_irq;
    double socket_util[PROCSTAT_SOCKETS_MAX];
    uint64_t busy_ticks_delta, total_ticks_delta; /* node, clock ticks, last tick */
    uint64_t busy_ticks;                          /* node, since boot */
    uint64_t skipped_steps; /* cpu readings that stepped by more than PROCSTAT_STEP_MAX */
    char model_name[128];   /* from proc/cpuinfo, "" if none */
};

/*
 * Opens proc/stat and reads proc/cpuinfo below root. Returns 0, or a negative errno with e
 * naming the file. Takes a first reading (utilization becomes valid after the next).
 */
int procstat_open(struct procstat *p, const struct fsroot *root, struct carma_err *e);

/* Re-reads proc/stat and updates the fractions. No allocation. Returns 0 or -errno. */
int procstat_sample(struct procstat *p);

/* Frees what procstat_open acquired (safe on a zeroed struct). */
void procstat_close(struct procstat *p);

/*
 * Parses the "cpu" / "cpuN" lines of proc/stat text into node and per-cpu times (cpu may be
 * NULL; lines beyond ncpu are ignored). Returns the number of cpuN lines seen, or -EINVAL
 * when the node line is missing or malformed.
 */
int procstat_parse(const char *text, struct cpu_times *node, struct cpu_times *cpu, int ncpu);

#endif
