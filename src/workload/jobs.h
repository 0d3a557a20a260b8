/*
 * jobs: the processes of a measurement, shared by `carma run` and `carma stat`: launching,
 * waiting, reaping, the stop/kill escalation and the baseline before them.
 *
 * A table (struct jobs) knows each launched command (struct job_proc, embedded in the caller's
 * own record) and carma's signals, which are blocked and read from a signalfd. One wait
 * (jobs_wait) sleeps until the sampling timer fires, a signal comes or a deadline passes; the
 * signals it reads are handled here: SIGCHLD reaps every ended child (each command's exit
 * status and end times; the rusage of every child to the process tree followed for its
 * CPU time), and a terminating signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) is first told to the
 * caller (on_stop: what it notes and says), then escalated: the first one is forwarded to every
 * command's process group (and cgroup), which gets SIGKILL after the grace period; a second
 * one sends SIGKILL at once. A command not started yet never starts (exit status 128 + the
 * signal). Nothing here prints: what the commands say goes through the callbacks.
 */
#ifndef CARMA_WORKLOAD_JOBS_H
#define CARMA_WORKLOAD_JOBS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"
#include "sampler/sampler.h"
#include "workload/cgroup.h"
#include "workload/launcher.h"
#include "workload/proctree.h"
#include "workload/supervise.h"

#define JOBS_MAX 64 /* commands in one table */

/* One command: its processes and what became of them. */
struct job_proc {
    pid_t pid; /* its process group's id too; 0 until it started */
    bool started, exited, timed_out, done;
    int wstatus, exit_status;
    int64_t start_mono, end_mono, start_real, end_real;
    struct cgroup_dir cg;
    bool have_cg;
    struct proctree *tree;   /* the caller's tree followed for its CPU time; NULL: none */
    int64_t timeout_ns;      /* SIGTERM this long after its start; negative: never */
    int64_t kill_deadline;   /* SIGKILL the job's processes at this time; 0: none */
    int64_t linger_deadline; /* SIGTERM what outlived the main process; 0: none */
    bool term_sent;
};

struct jobs {
    struct job_proc *p[JOBS_MAX]; /* the caller's, in the order added */
    size_t n;
    int sigfd; /* the signalfd of carma's signals, negative when none */
    sigset_t old_mask;
    int64_t grace_ns;       /* after a forwarded signal or a SIGTERM, the wait before SIGKILL */
    bool linger;            /* what outlives a main process gets SIGTERM grace_ns after it ended */
    bool ticks_first;       /* a due tick is taken before the signals that came with it */
    int signals;            /* terminating signals received */
    size_t orphans;         /* children reaped that were no command's main process */
    struct supervisor *sup; /* told each command's group (may be NULL) */
    /* a terminating signal came (signals counts it); called before it is escalated */
    void (*on_stop)(void *ctx, int sig);
    /* job k still runs past its kill deadline: called before its SIGKILL (may be NULL) */
    void (*on_kill)(void *ctx, size_t k);
    void *ctx;
};

/*
 * Blocks carma's signals and opens the signalfd they go to (launcher_signals_open); the other
 * fields are the caller's, set before. Returns 0, or -errno (then t->sigfd is that value and
 * jobs_wait waits for the timer and deadlines only).
 */
int jobs_open(struct jobs *t);

/* Closes the signalfd (safe twice). */
void jobs_close(struct jobs *t);

/* Adds p (zeroed by the caller but for timeout_ns) to the table. 0, or -ENOSPC when full. */
int jobs_add(struct jobs *t, struct job_proc *p);

/*
 * Starts p (one of t's) with launcher_spawn: its start times, then its pid, told to the
 * supervisor. Returns 0; or launcher_spawn's negative errno with e set, p then ended at once
 * (done, exit status 127 for a command not found, 126 otherwise).
 */
int jobs_spawn(struct jobs *t, struct job_proc *p, const struct launch_opts *lo,
               struct carma_err *e);

/* True while a process of p is alive (its main one, else what is left in its cgroup or
 * process group). */
bool jobs_alive(const struct job_proc *p);

/* Sends sig to p's process group and cgroup, unless p has not started or is done. */
void jobs_signal(const struct job_proc *p, int sig);

/* CPU time of p's processes so far (ns): from its cgroup, else its process tree (updated at
 * now_mono); 0 when neither can tell. */
uint64_t jobs_cpu_ns(struct job_proc *p, int64_t now_mono);

/*
 * Reaps every child that has ended (without blocking). A command's main process: its wait
 * status, exit status and end times; with t->linger, what it left running gets its linger
 * deadline. Any other child counts in t->orphans.
 */
void jobs_reap(struct jobs *t);

/*
 * Reads the signals that came: SIGCHLD reaps (jobs_reap), a terminating signal is counted,
 * told to on_stop and escalated (see the top of this file).
 */
void jobs_signals(struct jobs *t);

/*
 * Waits until tick_fd (the sampling timer) is readable, a signal comes or until (monotonic ns;
 * 0: no limit) passes, and handles the signals that came (jobs_signals). Returns 1 when tick_fd
 * is readable (the caller acknowledges it), 0 otherwise, -errno when poll fails. With
 * t->ticks_first a readable tick_fd returns 1 at once and the signals wait for the next call.
 */
int jobs_wait(struct jobs *t, int tick_fd, int64_t until);

/*
 * Job k's kill deadline at now: when it has passed, on_kill (job k still alive), SIGKILL, no
 * deadline. Lowers *next (0: none yet) to the deadline that is still ahead.
 */
void jobs_kill_step(struct jobs *t, size_t k, int64_t now, int64_t *next);

/*
 * Job k's deadlines at now, in this order: its timeout (timed out: SIGTERM, SIGKILL after the
 * grace period), what outlived it past its linger deadline (SIGTERM), the kill deadline
 * (jobs_kill_step); then its end, once its main process was reaped and nothing of it is left:
 * done, forgotten by the supervisor, its end times those of its last process. Lowers *next to
 * the earliest deadline ahead.
 */
void jobs_tend(struct jobs *t, size_t k, int64_t now, int64_t *next);

/* Ends what is left in p's cgroup (SIGKILL, reaping, at most about 1 s) and removes it. */
void jobs_cgroup_release(struct job_proc *p);

/* Reaps every child left (the zombies of killed commands), waiting at most about 2 s. */
void jobs_reap_rest(void);

/* The node at rest, measured before the commands start. */
struct jobs_baseline {
    double energy_j[CHANNELS_MAX]; /* per channel, the energy of its ticks */
    uint64_t busy_ticks;           /* the node's busy CPU time, proc/stat ticks (with util) */
    double dt_s;                   /* how long it lasted */
};

/*
 * Ticks s until ns have passed since its last tick (after each tick, on_tick(ctx): the
 * caller's rows), adding up each channel's energy and the node's busy ticks into out (zeroed
 * first). The signals are handled as by jobs_wait. Returns 0; -EINTR when a terminating signal
 * came (out then covers the ticks up to it); -errno when poll fails.
 */
int jobs_baseline(struct jobs *t, struct sampler *s, int64_t ns, void (*on_tick)(void *ctx),
                  void *ctx, struct jobs_baseline *out);

#endif
