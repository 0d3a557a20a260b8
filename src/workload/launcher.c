/* launcher: process groups, signal routing and exit statuses (see launcher.h). */
#include "workload/launcher.h"

#include <stdlib.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/file.h"

int launcher_signals_open(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    if (sigprocmask(SIG_BLOCK, &set, old) < 0)
        return -errno;
    launcher_signals_take(&set);
    int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    return fd < 0 ? -errno : fd;
}

void launcher_signals_take(const sigset_t *set)
{
    /* a process started in the background by a non-interactive shell inherits SIGINT and
     * SIGQUIT ignored (and nohup ignores SIGHUP); an ignored signal may be dropped, and a
     * SIGCHLD ignored would reap the children behind carma's back */
    struct sigaction sa = {.sa_handler = SIG_DFL};
    sigemptyset(&sa.sa_mask);
    for (int s = 1; s < NSIG; s++)
        if (sigismember(set, s) == 1)
            sigaction(s, &sa, NULL);
}

/* In the child: every signal's disposition back to the default, and nothing blocked, whatever
 * carma inherited or set for itself. */
static void signals_default(void)
{
    struct sigaction sa = {.sa_handler = SIG_DFL};
    sigemptyset(&sa.sa_mask);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &sa, NULL); /* fails, harmlessly, for the few libc keeps */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static int redirect(const char *path, int target)
{
    int fd = file_create(path, O_TRUNC);
    if (fd < 0)
        return -1;
    int r = dup2(fd, target);
    close(fd);
    return r < 0 ? -1 : 0;
}

/* Sets every "KEY=VALUE" of env in the (child's) environment. */
static int putenv_all(char *const *env)
{
    for (char *const *p = env; *p; p++) {
        const char *eq = strchr(*p, '=');
        if (!eq || eq == *p) {
            errno = EINVAL;
            return -1;
        }
        char key[256];
        size_t kl = (size_t)(eq - *p);
        if (kl >= sizeof key) {
            errno = EINVAL;
            return -1;
        }
        memcpy(key, *p, kl);
        key[kl] = '\0';
        if (setenv(key, eq + 1, 1) < 0)
            return -1;
    }
    return 0;
}

/* whether the last spawn handed the terminal on stdin to the command */
static bool tty_taken;

/* The step of the child's set-up that failed, sent to the parent with its errno. */
enum { STEP_EXEC, STEP_CWD, STEP_STDOUT, STEP_STDERR, STEP_CGROUP, STEP_ENV };

int launcher_spawn(const struct launch_opts *o, pid_t *ret_pid, struct carma_err *e)
{
    tty_taken = o->foreground && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return carma_err_set(e, -errno, "pipe: %s", strerror(errno));
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int r = -errno;
        close(pfd[0]);
        close(pfd[1]);
        return carma_err_set(e, r, "fork: %s", strerror(-r));
    }
    if (pid == 0) {
        close(pfd[0]);
        /* the kernel kills the command when the thread that started it ends, however carma
         * ends (kept across exec, cleared by a set-user-ID one); carma may have died already */
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent)
            _exit(127);
        setpgid(0, 0);
        if (tty_taken) {
            signal(SIGTTOU, SIG_IGN);
            tcsetpgrp(STDIN_FILENO, getpid());
            signal(SIGTTOU, SIG_DFL);
        }
        /* what failed, and its errno, for the parent's message */
        int fail[2] = {STEP_EXEC, 0};
        int r;
        if (o->cgroup && (r = cgroup_enter(o->cgroup, 0)) < 0) {
            fail[0] = STEP_CGROUP;
            errno = -r;
        } else if (o->env && putenv_all(o->env) < 0)
            fail[0] = STEP_ENV;
        else if (o->cwd && chdir(o->cwd) < 0)
            fail[0] = STEP_CWD;
        else if (o->stdout_path && redirect(o->stdout_path, 1) < 0)
            fail[0] = STEP_STDOUT;
        else if (o->stderr_path && redirect(o->stderr_path, 2) < 0)
            fail[0] = STEP_STDERR;
        if (fail[0] != STEP_EXEC) {
            fail[1] = errno;
        } else {
            signals_default();
            execvp(o->argv[0], o->argv);
            fail[1] = errno;
        }
        ssize_t w = write(pfd[1], fail, sizeof fail);
        (void)w;
        _exit(127);
    }
    setpgid(pid, pid); /* also in the parent, so the group exists before we signal it */
    if (tty_taken) {
        void (*old)(int) = signal(SIGTTOU, SIG_IGN);
        tcsetpgrp(STDIN_FILENO, pid);
        signal(SIGTTOU, old);
    }
    close(pfd[1]);
    int fail[2] = {0, 0};
    ssize_t n;
    do
        n = read(pfd[0], fail, sizeof fail);
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    if (n == (ssize_t)sizeof fail) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        launcher_reclaim_tty();
        int err = fail[1] > 0 ? fail[1] : EIO;
        switch (fail[0]) {
        case STEP_CWD:
            return carma_err_set(e, -err, "cannot change to directory %s: %s", o->cwd,
                                 strerror(err));
        case STEP_CGROUP:
            return carma_err_set(e, -err, "cannot move the command into cgroup %s: %s",
                                 o->cgroup->path, strerror(err));
        case STEP_ENV:
            return carma_err_set(e, -err, "cannot set the command's environment: %s",
                                 strerror(err));
        case STEP_STDOUT:
        case STEP_STDERR:
            return carma_err_set(e, -err, "cannot open %s: %s",
                                 fail[0] == STEP_STDOUT ? o->stdout_path : o->stderr_path,
                                 strerror(err));
        default:
            if (err == ENOENT)
                return carma_err_set(e, -ENOENT, "%s: command not found", o->argv[0]);
            return carma_err_set(e, -err, "%s: %s", o->argv[0], strerror(err));
        }
    }
    *ret_pid = pid;
    return 0;
}

void launcher_reclaim_tty(void)
{
    if (!tty_taken)
        return;
    void (*old)(int) = signal(SIGTTOU, SIG_IGN);
    tcsetpgrp(STDIN_FILENO, getpgrp());
    signal(SIGTTOU, old);
    tty_taken = false;
}

int launcher_exit_status(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 1;
}
