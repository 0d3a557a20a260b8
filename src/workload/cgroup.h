/*
 * cgroup: a cgroup v2 per workload, where the machine allows it.
 *
 * A workload started in its own cgroup has an exact CPU time (cpu.stat usage_usec, no
 * process scan, no clock-tick rounding), can be told apart from everything else on the
 * node, and can be killed whole (cgroup.kill, or every pid in cgroup.procs) so that no
 * process is left behind. carma creates "carma-<pid>" below its own cgroup v2 (found
 * through /proc/self/mountinfo and /proc/self/cgroup; the v2 hierarchy may be mounted at
 * /sys/fs/cgroup or, on hybrid systems, /sys/fs/cgroup/unified) and one child per
 * workload. Where that fails (no cgroup v2, not writable, not root), callers fall back to
 * following process trees through /proc (proctree.h); the reason is kept for the user.
 * Files are opened once; reads are preads.
 */
#ifndef CARMA_WORKLOAD_CGROUP_H
#define CARMA_WORKLOAD_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"

struct cgroup_dir {
    char path[4096];
    char rel[2048]; /* the same cgroup as /proc/PID/cgroup names it (below the v2 root) */
    int dirfd;
    int procs_fd;  /* cgroup.procs, for writing a pid */
    int stat_fd;   /* cpu.stat */
    int events_fd; /* cgroup.events */
    int kill_fd;   /* cgroup.kill (Linux 5.14+), -1 when absent */
};

#define CGROUP_BASE_TRIES 100 /* names tried for carma's own cgroup */

/*
 * Creates carma's own cgroup ("carma-<pid>" below the calling process's cgroup v2) in *ret.
 * An existing directory is never taken (a run killed before it could remove its cgroup may
 * have left one, with its processes, under a pid now reused): "carma-<pid>-2", "-3", ... up
 * to CGROUP_BASE_TRIES are tried instead. Returns 0, or a negative errno with e saying why
 * cgroups cannot be used here.
 */
int cgroup_base_create(struct cgroup_dir *ret, struct carma_err *e);

/* Creates child name below parent and opens its files. Returns 0 or -errno (e set; -EEXIST
 * when it exists already: a cgroup is never shared). */
int cgroup_child_create(const struct cgroup_dir *parent, const char *name, struct cgroup_dir *ret,
                        struct carma_err *e);

/* Moves pid (0: the caller) into g. Async-signal-safe (usable between fork and exec). */
int cgroup_enter(const struct cgroup_dir *g, pid_t pid);

/* CPU time of every process that ran in g, in ns (cpu.stat usage_usec). 0 or -errno. */
int cgroup_usage_ns(const struct cgroup_dir *g, uint64_t *ret);

/* 1 when a process is in g, 0 when empty, -errno when unknown (cgroup.events). */
int cgroup_populated(const struct cgroup_dir *g);

/* Sends sig to every process in g (SIGKILL through cgroup.kill where it exists). Returns the
 * number of processes signalled (or 1 for cgroup.kill), or -errno. */
int cgroup_signal(const struct cgroup_dir *g, int sig);

/* Closes g's files and removes the directory (it must be empty; -EBUSY otherwise). */
int cgroup_remove(struct cgroup_dir *g);

#endif
