/*
 * test_cgroup: a cgroup v2 per workload. Skipped where the machine has no writable cgroup v2
 * (not root, no v2 hierarchy); on this project's machines (root, v2 at /sys/fs/cgroup or
 * /sys/fs/cgroup/unified) it runs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload/cgroup.h"
#include "testutil.h"

static struct cgroup_dir base;

static int setup(void **state)
{
    (void)state;
    struct carma_err e = {0};
    if (cgroup_base_create(&base, &e) < 0) {
        print_message("cgroup v2 not usable here: %s\n", e.msg);
        base.path[0] = '\0';
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (base.path[0])
        cgroup_remove(&base);
    return 0;
}

static void spin(double seconds)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (volatile int i = 0; i < 100000; i++)
            ;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

/* A child that enters the cgroup and burns CPU, with a grandchild: the cgroup's usage equals
 * the child's rusage (its own time and its waited grandchild's) to the scheduler's rounding */
static void test_usage(void **state)
{
    (void)state;
    if (!base.path[0])
        skip();
    struct cgroup_dir g;
    struct carma_err e = {0};
    assert_int_equal(cgroup_child_create(&base, "job", &g, &e), 0);
    uint64_t ns = 1;
    assert_int_equal(cgroup_usage_ns(&g, &ns), 0);
    assert_true(ns == 0);
    assert_int_equal(cgroup_populated(&g), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (cgroup_enter(&g, 0) < 0)
            _exit(3);
        spin(0.3);
        pid_t gc = fork(); /* a grandchild is counted too */
        if (gc == 0) {
            spin(0.1);
            _exit(0);
        }
        waitpid(gc, NULL, 0);
        _exit(0);
    }
    int ws;
    struct rusage ru;
    assert_int_equal(wait4(pid, &ws, 0, &ru), pid);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    assert_int_equal(cgroup_usage_ns(&g, &ns), 0);
    double used = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                  (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    assert_true(used > 0.05);
    tu_assert_near((double)ns / 1e9, used, 0.02);
    assert_int_equal(cgroup_populated(&g), 0);
    assert_int_equal(cgroup_remove(&g), 0);
    struct stat st;
    assert_int_equal(stat(g.path, &st), -1);
}

/* Every process of the cgroup is killed, a forked grandchild included */
static void test_signal_all(void **state)
{
    (void)state;
    if (!base.path[0])
        skip();
    struct cgroup_dir g;
    struct carma_err e = {0};
    assert_int_equal(cgroup_child_create(&base, "kill", &g, &e), 0);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        if (cgroup_enter(&g, 0) < 0)
            _exit(3);
        signal(SIGTERM, SIG_IGN); /* only SIGKILL will do */
        if (fork() == 0) {
            for (;;)
                pause();
        }
        ssize_t w = write(ready[1], "x", 1);
        (void)w;
        for (;;)
            pause();
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    assert_int_equal(cgroup_populated(&g), 1);
    assert_true(cgroup_signal(&g, SIGKILL) >= 1);
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
    /* the grandchild was reparented and killed too: the cgroup empties */
    int populated = 1;
    for (int i = 0; i < 200 && populated == 1; i++) {
        usleep(10000);
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        populated = cgroup_populated(&g);
    }
    assert_int_equal(populated, 0);
    assert_int_equal(cgroup_remove(&g), 0);
}

/* cgroup.procs as a bad file could hold it: no number wraps to a pid of -1 (every process)
 * or 0 (the caller's group). Signal 0 only checks, so nothing is hurt if it did. Runs
 * without cgroups: the directory is a plain one. */
static void test_signal_bad_pids(void **state)
{
    (void)state;
    char dir[] = "/tmp/carma-cgprocs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("4294967295\n18446744073709551615\n4294967296\n0\n-1\nabc\n", f);
    fclose(f);
    struct cgroup_dir g;
    memset(&g, 0, sizeof g);
    g.procs_fd = g.stat_fd = g.events_fd = g.kill_fd = -1;
    g.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(g.dirfd >= 0);
    assert_int_equal(cgroup_signal(&g, 0), 0);
    /* a real pid in the same file is signalled */
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "4294967295\n%d\n", (int)getpid());
    fclose(f);
    assert_int_equal(cgroup_signal(&g, 0), 1);
    close(g.dirfd);
    unlink(path);
    rmdir(dir);
}

static void test_bad_name(void **state)
{
    (void)state;
    if (!base.path[0])
        skip();
    struct cgroup_dir g;
    struct carma_err e = {0};
    assert_int_equal(cgroup_child_create(&base, "../x", &g, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "bad cgroup name"));
}

/* A directory "carma-<pid>" left by a killed run under the pid now reused is never taken:
 * the run gets "carma-<pid>-2" (checked in a child, whose pid names the stale directory) */
static void test_stale_base(void **state)
{
    (void)state;
    if (!base.path[0])
        skip();
    char parent[sizeof base.path];
    snprintf(parent, sizeof parent, "%s", base.path);
    *strrchr(parent, '/') = '\0';
    int res[2];
    assert_int_equal(pipe(res), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(res[0]);
        char stale[sizeof parent + 64], want[sizeof parent + 64];
        snprintf(stale, sizeof stale, "%s/carma-%d", parent, (int)getpid());
        snprintf(want, sizeof want, "%s/carma-%d-2", parent, (int)getpid());
        int code = 0;
        struct cgroup_dir g;
        struct carma_err e = {0};
        if (mkdir(stale, 0755) < 0)
            code = 10;
        else if (cgroup_base_create(&g, &e) < 0)
            code = 11;
        else {
            code = strcmp(g.path, want) == 0 ? 0 : 12;
            if (cgroup_remove(&g) < 0)
                code = 13;
        }
        struct stat st;
        if (code != 10 && (stat(stale, &st) < 0 || rmdir(stale) < 0))
            code = 14; /* the stale one is left alone */
        ssize_t w = write(res[1], &code, sizeof code);
        _exit(w == (ssize_t)sizeof code ? 0 : 1);
    }
    close(res[1]);
    int code = -1;
    assert_int_equal(read(res[0], &code, sizeof code), (ssize_t)sizeof code);
    close(res[0]);
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_int_equal(code, 0);
}

/* A child cgroup that exists already is refused, not shared */
static void test_child_exists(void **state)
{
    (void)state;
    if (!base.path[0])
        skip();
    struct cgroup_dir g, again;
    struct carma_err e = {0};
    assert_int_equal(cgroup_child_create(&base, "twice", &g, &e), 0);
    assert_int_equal(cgroup_child_create(&base, "twice", &again, &e), -EEXIST);
    assert_non_null(strstr(e.msg, "twice"));
    assert_int_equal(cgroup_remove(&g), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage),           cmocka_unit_test(test_signal_all),
        cmocka_unit_test(test_signal_bad_pids), cmocka_unit_test(test_bad_name),
        cmocka_unit_test(test_stale_base),      cmocka_unit_test(test_child_exists),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
