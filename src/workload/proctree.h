/*
 * proctree: the CPU time of a process tree (a command and every descendant), for
 * attributing node CPU energy to it.
 *
 * The tree is the command carma launched and every process whose parent is in the tree.
 * Members are discovered as they are born: each update reads the last pid the kernel handed
 * out (/proc/loadavg) and looks only at the pids created since the previous update (a
 * process whose parent is a member is a member). A full scan of /proc runs at the start, when
 * asked, when too many pids were created at once, and every scan_every_ns where
 * /proc/loadavg cannot be read. Members' /proc/PID/stat are kept open and re-read with pread. CPU
 * time is utime + stime + cutime + cstime of the live members (so a member reaped by another member
 * moves into its parent's cutime without a gap) plus the rusage of members that carma
 * reaped itself (the command, and orphans when carma is their child subreaper). The total
 * never decreases.
 *
 * This reads the real /proc, not --root: the processes carma launches run on this machine.
 */
#ifndef CARMA_WORKLOAD_PROCTREE_H
#define CARMA_WORKLOAD_PROCTREE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#define PROCTREE_MAX 1024

struct proctree_member {
    pid_t pid;
    int fd;         /* /proc/PID/stat */
    uint64_t ticks; /* utime+stime+cutime+cstime at the last read */
    uint64_t start; /* starttime, to tell a reused pid apart */
};

struct proctree {
    int proc_fd; /* /proc */
    struct proctree_member m[PROCTREE_MAX];
    int n;
    uint64_t reaped_ns; /* CPU time of members carma reaped (from wait4 rusage) */
    uint64_t total_ns;  /* last reported total (monotonic) */
    int64_t last_scan;  /* monotonic ns of the last full scan */
    int loadavg_fd;     /* /proc/loadavg, -1 when unreadable */
    long last_pid;      /* the last pid handed out when last looked */
    long pid_max;       /* /proc/sys/kernel/pid_max */
    uint64_t scans;     /* full scans so far */
    int64_t scan_every_ns;
    long clk_tck;
    uint64_t dropped; /* members not tracked because the table was full */
    pid_t adopter;    /* when > 0: every child of this process is a member (carma as the
                         child subreaper of a single command: orphans of the tree are
                         reparented to it) */
};

/*
 * Starts tracking the tree rooted at pid. proc_dir is "/proc" normally. Returns 0, or -errno
 * with nothing left open (proctree_done() is then optional).
 */
int proctree_init(struct proctree *t, pid_t root, const char *proc_dir, int64_t scan_every_ns);

/*
 * Re-reads the members (and scans for new ones when due or when force_scan) and returns
 * the tree's CPU time in ns.
 */
uint64_t proctree_update(struct proctree *t, int64_t now_mono_ns, bool force_scan);

/* Tells the tree that carma reaped pid with rusage ru (from wait4). */
void proctree_reaped(struct proctree *t, pid_t pid, const struct rusage *ru);

/* Closes every fd (safe twice). */
void proctree_done(struct proctree *t);

/*
 * Parses the text of /proc/PID/stat: ppid, utime+stime+cutime+cstime (clock ticks) and
 * starttime. Returns 0 or -EINVAL. (The command name may hold spaces and parentheses: the
 * fields are counted from the last ')'.)
 */
int proctree_parse_stat(const char *text, pid_t *ppid, uint64_t *ticks, uint64_t *start);

#endif
