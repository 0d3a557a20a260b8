/*
 * test_supervise: a carma that is killed takes its workloads with it. A fake carma (a forked
 * child of this test) starts a supervisor and a workload (a process group of two), tells the
 * supervisor, and kills itself with SIGKILL: the workload's processes die within seconds and,
 * with cgroups (root, cgroup v2), so does one that left the process group, and carma's cgroup
 * is removed. A carma that stopped supervision first, or said the group ended, kills nothing.
 * This test is the subreaper of what the fake carma leaves, so it reaps it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload/cgroup.h"
#include "workload/supervise.h"

enum mode { KILLED, STOPPED, FORGOTTEN };

struct fake {
    int code; /* 0, or where the fake carma failed */
    pid_t w, g, sup;
    char base[1024];
};

static bool cgroups_usable(void)
{
    struct cgroup_dir g;
    struct carma_err e = {0};
    if (cgroup_base_create(&g, &e) < 0)
        return false;
    cgroup_remove(&g);
    return true;
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* The fake carma's workloads are forks that never exec, so they keep its end of the
 * supervisor's pipe open: only a pidfd (Linux 5.3) tells the supervisor that the fake carma
 * died. Without one (an older kernel, valgrind 3.19, which lacks the syscall) the tests of a
 * killed carma skip. */
static bool pidfd_usable(void)
{
    int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* True once pid is gone (reaped here when it was reparented to this test). */
static bool dead(pid_t pid)
{
    if (waitpid(pid, NULL, WNOHANG) == pid)
        return true;
    if (kill(pid, 0) < 0)
        return true;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'Z';
}

static bool wait_dead(pid_t pid, int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        if (dead(pid))
            return true;
        usleep(10000);
    }
    return dead(pid);
}

static void read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        assert_true(r > 0);
        p += r;
        n -= (size_t)r;
    }
}

/* The fake carma: supervisor, workload w (a group leader) with a child g (with cgroups: in
 * its own session, out of w's group, TERM ignored), then SIGKILL to itself. */
static void fake_carma(enum mode mode, bool cg, struct fake *ret)
{
    int info[2];
    assert_int_equal(pipe(info), 0);
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        close(info[0]);
        struct fake out = {0};
        struct supervisor s = {.fd = -1};
        static struct cgroup_dir base, job;
        struct carma_err e = {0};
        int up[2] = {-1, -1};
        if (cg &&
            (cgroup_base_create(&base, &e) < 0 || cgroup_child_create(&base, "w", &job, &e) < 0))
            out.code = 1;
        else if (supervisor_start(&s, cg ? &base : NULL, &e) < 0)
            out.code = 2;
        else if (pipe(up) < 0)
            out.code = 3;
        if (out.code) {
            ssize_t wr = write(info[1], &out, sizeof out);
            _exit(wr > 0 ? 1 : 2);
        }
        pid_t w = fork();
        if (w == 0) {
            close(up[0]);
            setpgid(0, 0);
            if (cg && cgroup_enter(&job, 0) < 0)
                _exit(5);
            pid_t g = fork();
            if (g == 0) {
                if (cg)
                    setsid(); /* out of w's group: only the cgroup holds it */
                signal(SIGTERM, SIG_IGN);
                for (;;)
                    pause();
            }
            pid_t v[2] = {getpid(), g};
            ssize_t wr = write(up[1], v, sizeof v);
            (void)wr;
            for (;;)
                pause();
        }
        setpgid(w, w);
        close(up[1]);
        pid_t v[2] = {0, 0};
        if (read(up[0], v, sizeof v) != (ssize_t)sizeof v)
            out.code = 6;
        supervisor_watch(&s, w);
        if (mode == FORGOTTEN)
            supervisor_forget(&s, w);
        out.w = v[0];
        out.g = v[1];
        out.sup = s.pid;
        if (cg)
            snprintf(out.base, sizeof out.base, "%s", base.path);
        if (mode != KILLED)
            supervisor_stop(&s);
        ssize_t wr = write(info[1], &out, sizeof out);
        (void)wr;
        kill(getpid(), SIGKILL);
        _exit(9);
    }
    close(info[1]);
    read_all(info[0], ret, sizeof *ret);
    close(info[0]);
    int ws;
    assert_int_equal(waitpid(c, &ws, 0), c);
    assert_int_equal(ret->code, 0);
    assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
    assert_true(ret->w > 0 && ret->g > 0 && ret->sup > 0);
}

static void cleanup(const struct fake *f)
{
    kill(-f->w, SIGKILL);
    kill(f->w, SIGKILL);
    kill(f->g, SIGKILL);
    wait_dead(f->w, 2000);
    wait_dead(f->g, 2000);
    wait_dead(f->sup, 2000);
    if (f->base[0]) {
        char sub[1100];
        snprintf(sub, sizeof sub, "%s/w", f->base);
        rmdir(sub);
        rmdir(f->base);
    }
}

static void test_killed(void **state)
{
    (void)state;
    if (!pidfd_usable())
        skip();
    struct fake f;
    fake_carma(KILLED, false, &f);
    bool w = wait_dead(f.w, 5000), g = wait_dead(f.g, 1000);
    bool sup = wait_dead(f.sup, 2000); /* it exits once done */
    cleanup(&f);
    assert_true(w);
    assert_true(g);
    assert_true(sup);
}

static void test_stopped(void **state)
{
    (void)state;
    struct fake f;
    fake_carma(STOPPED, false, &f);
    bool sup = wait_dead(f.sup, 2000);
    usleep(300000);
    bool w = dead(f.w), g = dead(f.g);
    cleanup(&f);
    assert_true(sup);
    assert_false(w);
    assert_false(g);
}

static void test_forgotten(void **state)
{
    (void)state;
    struct fake f;
    fake_carma(FORGOTTEN, false, &f);
    bool sup = wait_dead(f.sup, 2000); /* it had nothing left to kill */
    usleep(100000);
    bool w = dead(f.w), g = dead(f.g);
    cleanup(&f);
    assert_true(sup);
    assert_false(w);
    assert_false(g);
}

static void test_killed_cgroup(void **state)
{
    (void)state;
    if (!cgroups_usable() || !pidfd_usable())
        skip();
    struct fake f;
    fake_carma(KILLED, true, &f);
    bool w = wait_dead(f.w, 5000), g = wait_dead(f.g, 2000);
    bool sup = wait_dead(f.sup, 5000);
    struct stat st;
    bool removed = stat(f.base, &st) < 0 && errno == ENOENT;
    cleanup(&f);
    assert_true(w);
    assert_true(g); /* it left the process group: the cgroup got it */
    assert_true(sup);
    assert_true(removed);
}

int main(void)
{
    /* what the fake carma leaves is reparented here, to be reaped */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed),
        cmocka_unit_test(test_stopped),
        cmocka_unit_test(test_forgotten),
        cmocka_unit_test(test_killed_cgroup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
