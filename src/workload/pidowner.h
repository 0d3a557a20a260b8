/*
 * pidowner: which workload a process belongs to, for processes that another component names
 * by pid (the processes NVML lists on a GPU).
 *
 * In order: the process's cgroup v2 path (/proc/PID/cgroup) lies in a workload's cgroup; its
 * process group is a workload's (each workload leads its own); one of its ancestors (through
 * /proc/PID/stat's parent pids) is a workload's main process or a member of its tree.
 * A cache keeps the answers, so that a process is looked up once while it lives.
 */
#ifndef CARMA_WORKLOAD_PIDOWNER_H
#define CARMA_WORKLOAD_PIDOWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PIDOWNER_CACHE 256
#define PIDOWNER_DEPTH 64 /* ancestors looked at */

/* What is known of one workload. */
struct pidowner_job {
    const char *cgroup; /* its cgroup v2, relative to the hierarchy's root as /proc/PID/cgroup
                           writes it ("/user.slice/carma-12/train"), NULL when none */
    pid_t pid;          /* its main process, also its process group; <= 0 before it starts */
    const pid_t *tree;  /* members of its process tree when followed through /proc, or NULL */
    size_t ntree;
};

struct pidowner_entry {
    pid_t pid;
    int job;
    uint64_t seen; /* generation of the last lookup */
};

struct pidowner {
    const char *proc; /* "/proc" (tests: a fixture tree) */
    struct pidowner_entry cache[PIDOWNER_CACHE];
    size_t n;
    uint64_t gen;
};

void pidowner_init(struct pidowner *o, const char *proc);

/* Starts a new generation: entries not looked up since the previous one are dropped at the
 * next (their pids may be reused). */
void pidowner_next(struct pidowner *o);

/* The index of the job pid belongs to, or -1 (outside the experiment, or gone). */
int pidowner_lookup(struct pidowner *o, pid_t pid, const struct pidowner_job *jobs, size_t njobs);

/* The cgroup v2 of pid relative to the hierarchy's root (the "0::" line of PROC/PID/cgroup)
 * into out; false when unknown. */
bool pidowner_cgroup_of(const char *proc, pid_t pid, char *out, size_t cap);

#endif
