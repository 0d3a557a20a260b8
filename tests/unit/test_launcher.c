/*
 * Unit tests for workload/launcher: exit statuses, exec and set-up errors, the command's own
 * process group, output redirection, and the signalfd that carma's loop waits on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "workload/launcher.h"

static pid_t spawn(char *const *argv, struct carma_err *e)
{
    struct launch_opts o = {.argv = argv};
    pid_t pid = -1;
    int r = launcher_spawn(&o, &pid, e);
    if (r < 0)
        fail_msg("spawn %s: %d %s", argv[0], r, e->msg);
    assert_true(pid > 0);
    return pid;
}

static int wait_status(pid_t pid)
{
    int st;
    pid_t r;
    do
        r = waitpid(pid, &st, 0);
    while (r < 0 && errno == EINTR);
    assert_int_equal(r, pid);
    return launcher_exit_status(st);
}

/* No child of this process is left (reaped or never started). */
static void assert_no_children(void)
{
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void test_exit_status_values(void **state)
{
    (void)state;
    /* wait statuses as the kernel encodes them */
    assert_int_equal(launcher_exit_status(0), 0);
    assert_int_equal(launcher_exit_status(3 << 8), 3);
    assert_int_equal(launcher_exit_status(255 << 8), 255);
    assert_int_equal(launcher_exit_status(SIGTERM), 143);
    assert_int_equal(launcher_exit_status(SIGKILL), 137);
    assert_int_equal(launcher_exit_status(SIGSEGV | 0x80), 128 + SIGSEGV); /* core dumped */
}

static void test_exit_code(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "exit 3", NULL};
    struct carma_err e = {0};
    pid_t pid = spawn(argv, &e);
    assert_int_equal(wait_status(pid), 3);
    char *ok[] = {"true", NULL};
    assert_int_equal(wait_status(spawn(ok, &e)), 0);
    assert_no_children();
}

static void test_killed_by_signal(void **state)
{
    (void)state;
    char *argv[] = {"sleep", "30", NULL};
    struct carma_err e = {0};
    pid_t pid = spawn(argv, &e);
    assert_int_equal(kill(pid, SIGTERM), 0);
    assert_int_equal(wait_status(pid), 143);
    /* a shell that kills itself */
    char *self[] = {"sh", "-c", "kill -KILL $$", NULL};
    assert_int_equal(wait_status(spawn(self, &e)), 137);
}

static void test_not_found(void **state)
{
    (void)state;
    char *argv[] = {"carma-no-such-command-3f9a", "arg", NULL};
    struct launch_opts o = {.argv = argv};
    struct carma_err e = {0};
    pid_t pid = 12345;
    assert_int_equal(launcher_spawn(&o, &pid, &e), -ENOENT);
    assert_int_equal(e.code, -ENOENT);
    assert_string_equal(e.msg, "carma-no-such-command-3f9a: command not found");
    assert_int_equal(pid, 12345); /* not written */
    assert_no_children();         /* the failed child has been reaped */

    /* a path that does not exist */
    char *path[] = {"/nonexistent/carma-cmd", NULL};
    o.argv = path;
    assert_int_equal(launcher_spawn(&o, &pid, &e), -ENOENT);
    assert_string_equal(e.msg, "/nonexistent/carma-cmd: command not found");
    assert_no_children();
}

static void test_not_executable(void **state)
{
    (void)state;
    char file[400];
    snprintf(file, sizeof file, "%s/script.sh", tu_dir);
    tu_put("script.sh", "#!/bin/sh\nexit 0\n");
    assert_int_equal(chmod(file, 0644), 0);
    char *argv[] = {file, NULL};
    struct launch_opts o = {.argv = argv};
    struct carma_err e = {0};
    pid_t pid;
    if (geteuid() != 0) {
        assert_int_equal(launcher_spawn(&o, &pid, &e), -EACCES);
        char want[600];
        snprintf(want, sizeof want, "%s: %s", file, strerror(EACCES));
        assert_string_equal(e.msg, want);
    }
    /* a directory cannot be executed, even by root */
    char *d[] = {tu_dir, NULL};
    o.argv = d;
    assert_int_equal(launcher_spawn(&o, &pid, &e), -EACCES);
    assert_no_children();
}

static void test_own_process_group(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "sleep 30 & wait", NULL};
    struct carma_err e = {0};
    pid_t pid = spawn(argv, &e);
    assert_int_equal(getpgid(pid), pid);
    assert_true(getpgid(pid) != getpgrp());
    /* the whole group can be signalled at once */
    assert_int_equal(kill(-pid, SIGTERM), 0);
    assert_int_equal(wait_status(pid), 143);
}

static void test_cwd_and_redirect(void **state)
{
    (void)state;
    char out[400], err[400], real[PATH_MAX], buf[PATH_MAX + 16];
    snprintf(out, sizeof out, "%s/out.txt", tu_dir);
    snprintf(err, sizeof err, "%s/err.txt", tu_dir);
    assert_non_null(realpath(tu_dir, real));
    /* an old file is truncated */
    tu_put("out.txt", "old content that is longer than the new one\n");
    char *argv[] = {"sh", "-c", "pwd; echo oops >&2; exit 4", NULL};
    struct launch_opts o = {.argv = argv, .cwd = tu_dir, .stdout_path = out, .stderr_path = err};
    struct carma_err e = {0};
    pid_t pid;
    assert_int_equal(launcher_spawn(&o, &pid, &e), 0);
    assert_int_equal(wait_status(pid), 4);
    tu_slurp(out, buf, sizeof buf);
    char want[PATH_MAX + 2];
    snprintf(want, sizeof want, "%s\n", real);
    assert_string_equal(buf, want);
    tu_slurp(err, buf, sizeof buf);
    assert_string_equal(buf, "oops\n");
}

/* A set-up step that fails says which: not "command not found" for a missing directory. */
static void test_setup_errors(void **state)
{
    (void)state;
    char missing[400], out[500];
    snprintf(missing, sizeof missing, "%s/no-such-dir", tu_dir);
    snprintf(out, sizeof out, "%s/out.txt", missing);
    char *argv[] = {"true", NULL};
    struct carma_err e = {0};
    pid_t pid;

    struct launch_opts o = {.argv = argv, .cwd = missing};
    assert_int_equal(launcher_spawn(&o, &pid, &e), -ENOENT);
    char want[800];
    snprintf(want, sizeof want, "cannot change to directory %s: %s", missing, strerror(ENOENT));
    assert_string_equal(e.msg, want);
    assert_no_children();

    struct launch_opts o2 = {.argv = argv, .stdout_path = out};
    assert_int_equal(launcher_spawn(&o2, &pid, &e), -ENOENT);
    snprintf(want, sizeof want, "cannot open %s: %s", out, strerror(ENOENT));
    assert_string_equal(e.msg, want);
    assert_no_children();

    struct launch_opts o3 = {.argv = argv, .stderr_path = out};
    assert_int_equal(launcher_spawn(&o3, &pid, &e), -ENOENT);
    assert_string_equal(e.msg, want);
    assert_no_children();
}

static struct signalfd_siginfo next_signal(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 10000), 1);
    struct signalfd_siginfo si;
    assert_int_equal(read(fd, &si, sizeof si), (ssize_t)sizeof si);
    return si;
}

static void test_signals_fd(void **state)
{
    (void)state;
    sigset_t old;
    int fd = launcher_signals_open(&old);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    assert_true(sigismember(&now, SIGCHLD));
    assert_true(sigismember(&now, SIGTERM));
    assert_true(sigismember(&now, SIGINT));
    assert_true(sigismember(&now, SIGHUP));
    assert_true(sigismember(&now, SIGQUIT));
    assert_false(sigismember(&old, SIGTERM));

    /* nothing pending yet */
    struct signalfd_siginfo si;
    assert_int_equal(read(fd, &si, sizeof si), -1);
    assert_int_equal(errno, EAGAIN);

    /* a command that ends: SIGCHLD arrives on the fd */
    char *argv[] = {"true", NULL};
    struct launch_opts o = {.argv = argv};
    struct carma_err e = {0};
    pid_t pid;
    assert_int_equal(launcher_spawn(&o, &pid, &e), 0);
    si = next_signal(fd);
    assert_int_equal(si.ssi_signo, SIGCHLD);
    assert_int_equal((pid_t)si.ssi_pid, pid);
    assert_int_equal(wait_status(pid), 0);

    /* the command starts with nothing blocked: SIGTERM still kills it */
    char *sl[] = {"sleep", "30", NULL};
    o.argv = sl;
    assert_int_equal(launcher_spawn(&o, &pid, &e), 0);
    assert_int_equal(kill(pid, SIGTERM), 0);
    assert_int_equal(wait_status(pid), 143);
    si = next_signal(fd);
    assert_int_equal(si.ssi_signo, SIGCHLD);

    /* SIGTERM to carma itself is a message on the fd, not death */
    assert_int_equal(kill(getpid(), SIGTERM), 0);
    si = next_signal(fd);
    assert_int_equal(si.ssi_signo, SIGTERM);

    close(fd);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The hex value of /proc status line "KEY:\t..." in text; ~0 when absent. */
static unsigned long long status_mask(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    if (!p)
        return ~0ULL;
    return strtoull(p + strlen(key), NULL, 16);
}

/* Whatever carma ignores or blocks (inherited from a shell, or its own signalfd's set), the
 * command starts with every signal's default disposition and an empty mask. */
static void test_child_signals_default(void **state)
{
    (void)state;
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit, old_usr1, old_pipe;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    sigaction(SIGUSR1, &ign, &old_usr1);
    sigaction(SIGPIPE, &ign, &old_pipe);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigaddset(&block, SIGALRM);
    sigprocmask(SIG_BLOCK, &block, &old);
    int fd = launcher_signals_open(NULL); /* blocks SIGINT, SIGTERM, ... too */
    assert_true(fd >= 0);

    char out[400], buf[8192];
    snprintf(out, sizeof out, "%s/status.txt", tu_dir);
    char *argv[] = {"cat", "/proc/self/status", NULL};
    struct launch_opts o = {.argv = argv, .stdout_path = out};
    struct carma_err e = {0};
    pid_t pid;
    assert_int_equal(launcher_spawn(&o, &pid, &e), 0);
    assert_int_equal(wait_status(pid), 0);
    tu_slurp(out, buf, sizeof buf);
    /* the signals glibc keeps for itself (32 and 33: SIGCANCEL, SIGSETXID; below SIGRTMIN)
     * cannot be set by a program through sigaction: one inherited ignored stays so */
    unsigned long long glibc_own = 0;
    for (int s = 32; s < SIGRTMIN; s++)
        glibc_own |= 1ULL << (s - 1);
    if ((status_mask(buf, "SigIgn:") & ~glibc_own) != 0 || status_mask(buf, "SigBlk:") != 0)
        print_error("the command's /proc/self/status:\n%s\n", buf);
    assert_true((status_mask(buf, "SigIgn:") & ~glibc_own) == 0);
    assert_true(status_mask(buf, "SigBlk:") == 0);

    close(fd);
    sigprocmask(SIG_SETMASK, &old, NULL);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    sigaction(SIGUSR1, &old_usr1, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
}

/* carma started with SIGINT and SIGCHLD ignored (a script's background job, a parent that set
 * SIGCHLD to SIG_IGN) still takes SIGINT on its fd and still reaps its commands itself. */
static void test_signals_taken_when_ignored(void **state)
{
    (void)state;
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_chld, now;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGCHLD, &ign, &old_chld);
    sigset_t old;
    int fd = launcher_signals_open(&old);
    assert_true(fd >= 0);
    sigaction(SIGINT, NULL, &now);
    assert_true(now.sa_handler == SIG_DFL);
    sigaction(SIGCHLD, NULL, &now);
    assert_true(now.sa_handler == SIG_DFL);

    assert_int_equal(kill(getpid(), SIGINT), 0);
    struct signalfd_siginfo si = next_signal(fd);
    assert_int_equal(si.ssi_signo, SIGINT);
    /* with SIGCHLD ignored the kernel would reap the command: no exit status to report */
    char *argv[] = {"sh", "-c", "exit 9", NULL};
    struct carma_err e = {0};
    pid_t pid;
    assert_int_equal(launcher_spawn(&(struct launch_opts){.argv = argv}, &pid, &e), 0);
    assert_int_equal(wait_status(pid), 9);

    close(fd);
    struct timespec zero = {0, 0};
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    while (sigtimedwait(&chld, NULL, &zero) > 0)
        ;
    sigprocmask(SIG_SETMASK, &old, NULL);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGCHLD, &old_chld, NULL);
}

/* True when pid has ended (gone, or a zombie of whoever adopted it). */
static bool ended(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return !p || (p[1] == ' ' && p[2] == 'Z');
}

/* The command dies with the process that started it, even by SIGKILL (PR_SET_PDEATHSIG) */
static void test_dies_with_parent(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t parent = fork();
    assert_true(parent >= 0);
    if (parent == 0) {
        close(p[0]);
        char *argv[] = {"sleep", "30", NULL};
        struct launch_opts o = {.argv = argv};
        pid_t pid = -1;
        struct carma_err e = {0};
        if (launcher_spawn(&o, &pid, &e) < 0)
            _exit(3);
        ssize_t w = write(p[1], &pid, sizeof pid);
        (void)w;
        kill(getpid(), SIGKILL);
        _exit(4);
    }
    close(p[1]);
    pid_t pid = 0;
    assert_int_equal(read(p[0], &pid, sizeof pid), (ssize_t)sizeof pid);
    close(p[0]);
    int ws;
    assert_int_equal(waitpid(parent, &ws, 0), parent);
    assert_true(WIFSIGNALED(ws));
    bool gone = false;
    for (int i = 0; i < 300 && !gone; i++) {
        gone = ended(pid);
        if (!gone)
            usleep(10000);
    }
    if (!gone)
        kill(pid, SIGKILL);
    assert_true(gone);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_setup, tu_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_status_values),
        cmocka_unit_test(test_exit_code),
        cmocka_unit_test(test_killed_by_signal),
        cmocka_unit_test(test_not_found),
        T(test_not_executable),
        cmocka_unit_test(test_own_process_group),
        T(test_cwd_and_redirect),
        T(test_setup_errors),
        cmocka_unit_test(test_signals_fd),
        T(test_child_signals_default),
        cmocka_unit_test(test_signals_taken_when_ignored),
        cmocka_unit_test(test_dies_with_parent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
