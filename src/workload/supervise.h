/*
 * supervise: nothing of a measurement outlives a carma that was killed.
 *
 * carma's own SIGKILL (or a crash) gives it no chance to stop its workloads. A supervisor
 * does it for it: a small process started before the first workload, outside carma's
 * process group and not carma's child (double fork: carma's SIGCHLD, wait4(-1) and child
 * subreaper accounting never see it), that holds one end of a socket pair whose other end only
 * carma holds (O_CLOEXEC). carma tells it each workload's process group as the workload starts and
 * forgets it when the group is empty. When carma exits without having said "stop" first (its pidfd
 * becomes readable; or, before Linux 5.3, the socket reaches end of file: the kernel closes a
 * dead process's files, however it died), the supervisor
 * sends SIGKILL to every process group it still knows, writes "1" to cgroup.kill of carma's
 * cgroup (every workload's cgroup and every process in them, those that left their process
 * group included) or, without cgroup.kill, SIGKILL to each pid of each child cgroup's
 * cgroup.procs, waits (at most SUPERVISE_DRAIN_NS) for the cgroups to empty and removes them.
 * It then says on stderr what it did, in one line, and exits.
 *
 * Besides, launcher_spawn() sets each workload's PR_SET_PDEATHSIG to SIGKILL: the kernel
 * kills a workload's main process when carma's thread that started it ends, even if the
 * supervisor was killed too.
 *
 * Without cgroups, a process that left its workload's process group (setsid) cannot be told
 * apart after carma's death; carma ends those itself at a normal end (strays.h).
 *
 * The supervisor runs only async-signal-safe code (it may be forked from a process with
 * threads): no allocation, no stdio.
 */
#ifndef CARMA_WORKLOAD_SUPERVISE_H
#define CARMA_WORKLOAD_SUPERVISE_H

#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"
#include "workload/cgroup.h"

#define SUPERVISE_GROUPS_MAX 256          /* process groups watched at once */
#define SUPERVISE_DRAIN_NS   3000000000LL /* how long it waits for the cgroups to empty */
#define SUPERVISE_HINT_MAX   4608         /* the hint's line, with its NUL */

struct supervisor {
    int fd;    /* carma's end of the socket (O_CLOEXEC), -1 when none is running */
    pid_t pid; /* the supervisor's pid (not a child of carma's), 0 when none */
};

/*
 * Starts a supervisor for the calling process (its pid is the one watched). base (may be
 * NULL: no cgroups) is the cgroup whose every process dies with carma; it is removed
 * afterwards with its child cgroups. Returns 0, or a negative errno with e set (then
 * s->fd is -1 and the other calls do nothing).
 */
int supervisor_start(struct supervisor *s, const struct cgroup_dir *base, struct carma_err *e);

/* A line (no newline; NULL or "": none) the supervisors started from now on say, after
 * "carma: ", below their message when they killed something (how to finish the run). */
void supervisor_hint(const char *line);

/* Tells the supervisor that process group pgid belongs to the measurement. 0 or -errno. */
int supervisor_watch(struct supervisor *s, pid_t pgid);

/* Tells it that pgid has ended (its id may be reused from now on). 0 or -errno. */
int supervisor_forget(struct supervisor *s, pid_t pgid);

/* Ends supervision normally: the supervisor exits without killing anything. NULL-safe. */
void supervisor_stop(struct supervisor *s);

#endif
