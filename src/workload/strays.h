/*
 * strays: what a child subreaper inherited, ended at the end of a measurement.
 *
 * carma is the child subreaper of its workloads (PR_SET_CHILD_SUBREAPER): a process whose
 * parent dies is reparented to carma instead of to PID 1. Without cgroups, a daemon that
 * double-forks, calls setsid and ignores SIGTERM has left its workload's process group, and
 * nothing but this parentage ties it to the run. At the end, strays_end() finds the children
 * of the calling process that are not the workloads' main processes (nor zombies), and ends
 * them: SIGTERM, a grace period, SIGKILL. What they leave behind is adopted in turn and ended
 * the same way. The caller says which ones it found.
 *
 * This reads the real /proc (proc_dir is "/proc" but for tests), not --root.
 */
#ifndef CARMA_WORKLOAD_STRAYS_H
#define CARMA_WORKLOAD_STRAYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STRAYS_MAX     64           /* strays recorded (more are ended, and counted) */
#define STRAYS_KILL_NS 1000000000LL /* after SIGKILL: how long adopted ones are looked for */

struct stray {
    pid_t pid;
    char comm[20];    /* /proc/PID/stat's comm (at most 15 characters) */
    bool needed_kill; /* it outlived SIGTERM and the grace period */
};

struct strays {
    struct stray s[STRAYS_MAX];
    size_t n;     /* recorded */
    size_t total; /* found (n or more) */
};

/*
 * Ends every living child of the calling process whose pid is not one of keep[0..nkeep):
 * SIGTERM to each, up to grace_ns for them to end (they are reaped), then SIGKILL; children
 * they leave are adopted and ended the same way (SIGKILL at once after the grace period).
 * Blocks at most grace_ns + STRAYS_KILL_NS (+ scans). Fills out (zeroed first). Returns the
 * number found, or -errno when proc_dir cannot be read.
 */
int strays_end(const char *proc_dir, const pid_t *keep, size_t nkeep, int64_t grace_ns,
               struct strays *out);

/*
 * Fills out[0..cap) with the living children of the calling process (ppid = getpid(), not a
 * zombie) whose pid is not in keep. Returns how many there are (maybe more than cap), or
 * -errno.
 */
int strays_find(const char *proc_dir, const pid_t *keep, size_t nkeep, struct stray *out,
                size_t cap);

#endif
