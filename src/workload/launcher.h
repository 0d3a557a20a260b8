/*
 * launcher: start a command in its own process group, with carma's signals routed through a
 * signalfd, and turn its wait status into a shell-like exit status.
 */
#ifndef CARMA_WORKLOAD_LAUNCHER_H
#define CARMA_WORKLOAD_LAUNCHER_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "core/err.h"
#include "workload/cgroup.h"

/*
 * Blocks SIGCHLD, SIGINT, SIGTERM, SIGHUP and SIGQUIT in the calling thread, takes them
 * (launcher_signals_take: also when they were inherited ignored) and returns a signalfd
 * (O_CLOEXEC, non-blocking) that receives them; *old gets the previous mask. Returns the fd
 * or -errno.
 */
int launcher_signals_open(sigset_t *old);

/*
 * Sets the disposition of every signal of set to the default, so that a signal blocked and
 * waited for (signalfd, sigtimedwait) reaches carma even when carma was started with it
 * ignored, as a non-interactive shell starts its background jobs with SIGINT and SIGQUIT.
 * Call with set blocked.
 */
void launcher_signals_take(const sigset_t *set);

struct launch_opts {
    char *const *argv;                     /* argv[0] looked up in PATH */
    const char *cwd;                       /* NULL: inherit */
    const char *stdout_path, *stderr_path; /* NULL: inherit */
    const struct cgroup_dir *cgroup;       /* when set, the command starts in this cgroup */
    char *const *env; /* "KEY=VALUE" set over carma's environment, NULL-ended */
    bool foreground;  /* when stdin is a terminal and carma's group is its foreground group,
                         the command's group takes the terminal (so that it can read it and
                         gets Ctrl-C directly), as a shell does */
};

/* Gives the terminal on stdin back to carma's own process group if launcher_spawn() handed
 * it to a command (call after the command ended). */
void launcher_reclaim_tty(void);

/*
 * Forks and execs the command in a new process group (its pgid = its pid), with every signal's
 * disposition the default and an empty signal mask, whatever carma inherited or blocked, and
 * PR_SET_PDEATHSIG SIGKILL: the command is killed when the calling thread ends (call it from
 * the thread that lives as long as the measurement: carma's main thread). Returns 0
 * and *ret_pid once exec succeeded; when exec fails, returns the negative errno (-ENOENT for a
 * command not found, -EACCES for one that cannot be executed) with a message in e, and the
 * child has already been reaped.
 */
int launcher_spawn(const struct launch_opts *o, pid_t *ret_pid, struct carma_err *e);

/* Shell-like exit status of a wait status: the exit code, or 128 + the signal number. */
int launcher_exit_status(int wstatus);

#endif
