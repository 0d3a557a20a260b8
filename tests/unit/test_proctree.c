/*
 * Unit tests for workload/proctree: parsing /proc/PID/stat, and the CPU time of real process
 * trees (a child and a grandchild that burn a known amount of CPU) read from this machine's
 * /proc, with members that end, are reaped, and whose time must never be lost.
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
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "workload/proctree.h"
#include "testutil.h"

#define S_NS 1000000000ULL

/* ---- parsing ---- */

static void test_parse_stat(void **state)
{
    (void)state;
    pid_t ppid = 0;
    uint64_t ticks = 0, start = 0;
    /* a comm with spaces and parentheses: fields are counted from the last ')' */
    static const char line[] =
        "42 ((a) b)) S 7 42 42 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 1 0 5555 1000 200 "
        "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";
    assert_int_equal(proctree_parse_stat(line, &ppid, &ticks, &start), 0);
    assert_int_equal(ppid, 7);
    assert_true(ticks == 11 + 22 + 33 + 44);
    assert_true(start == 5555);

    /* a comm that looks like fields */
    static const char tricky[] = "9 (x) R 1 2 3 4 5 6 7 8 9 10) Z 3 9 9 0 -1 0 0 0 0 0 1 2 3 4 "
                                 "20 0 1 0 77 0 0";
    assert_int_equal(proctree_parse_stat(tricky, &ppid, &ticks, &start), 0);
    assert_int_equal(ppid, 3);
    assert_true(ticks == 10);
    assert_true(start == 77);

    /* exactly up to starttime is enough */
    assert_int_equal(proctree_parse_stat("1 (init) S 0 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 9",
                                         &ppid, &ticks, &start),
                     0);
    assert_int_equal(ppid, 0);
    assert_true(ticks == 11);
    assert_true(start == 9);

    /* negative cutime / cstime (never seen, but signed in the kernel) count as 0 */
    assert_int_equal(proctree_parse_stat("5 (n) S 1 1 1 0 -1 0 0 0 0 0 3 4 -1 -2 20 0 1 0 8", &ppid,
                                         &ticks, &start),
                     0);
    assert_true(ticks == 7);
}

static void test_parse_stat_rejects(void **state)
{
    (void)state;
    pid_t ppid = 123;
    uint64_t ticks = 456, start = 789;
    static const char *const bad[] = {
        "",
        "42 (no closing paren S 7 1 2",
        "42 (x) S 7 42 42 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0", /* ends before starttime */
        "42 (x) S 7 42 42 0 -1 0 0 0 0 0 1 2 3 4 20 0 1",
        "42 (x) S abc 42 42 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 5",
        "42 (x) S 7 42 42 0 -1 0 0 0 0 0 u 2 3 4 20 0 1 0 5",
        "42 (x)",
        /* a parent pid that no pid_t holds (it wrapped to pid 1 once) */
        "42 (x) S 4294967297 42 42 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 5",
        /* a tick count past 64 bits */
        "42 (x) S 7 42 42 0 -1 0 0 0 0 0 18446744073709551616 2 3 4 20 0 1 0 5",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        if (proctree_parse_stat(bad[k], &ppid, &ticks, &start) != -EINVAL)
            fail_msg("accepted: \"%s\"", bad[k]);
    /* nothing written on failure */
    assert_int_equal(ppid, 123);
    assert_true(ticks == 456 && start == 789);
}

static void test_parse_own_stat(void **state)
{
    (void)state;
    char buf[1024];
    tu_slurp("/proc/self/stat", buf, sizeof buf);
    pid_t ppid;
    uint64_t ticks, start;
    assert_int_equal(proctree_parse_stat(buf, &ppid, &ticks, &start), 0);
    assert_int_equal(ppid, getppid());
    assert_true(start > 0);
}

/* ---- real trees ---- */

/* Spends s seconds of CPU time in this process. */
static void burn(double s)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    volatile uint64_t x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += (uint64_t)i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < s);
}

/* Reads one pid_t from fd (written by a child when it is ready). */
static pid_t wait_ready(int fd)
{
    pid_t p = 0;
    ssize_t n;
    do
        n = read(fd, &p, sizeof p);
    while (n < 0 && errno == EINTR);
    assert_int_equal(n, (ssize_t)sizeof p);
    return p;
}

static void tell_ready(int fd)
{
    pid_t me = getpid();
    ssize_t n = write(fd, &me, sizeof me);
    (void)n;
}

/*
 * Forks a child that spends s seconds of CPU time, writes its pid into a pipe whose read end
 * is returned in *ready, and then exits, or with stay waits to be killed.
 */
static pid_t fork_burner(double s, bool stay, int *ready)
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        burn(s);
        tell_ready(pfd[1]);
        if (!stay)
            _exit(0);
        for (;;)
            pause();
    }
    close(pfd[1]);
    *ready = pfd[0];
    return pid;
}

/* The user and system time in ru, in ns. */
static uint64_t rusage_ns(const struct rusage *ru)
{
    return ((uint64_t)ru->ru_utime.tv_sec * 1000000ULL + (uint64_t)ru->ru_utime.tv_usec +
            (uint64_t)ru->ru_stime.tv_sec * 1000000ULL + (uint64_t)ru->ru_stime.tv_usec) *
           1000ULL;
}

static void test_child_cpu_time(void **state)
{
    (void)state;
    int ready;
    pid_t pid = fork_burner(0.3, true, &ready);
    struct proctree t;
    assert_int_equal(proctree_init(&t, pid, "/proc", 100 * NS_PER_MS), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.m[0].pid, pid);
    assert_int_equal(wait_ready(ready), pid);
    close(ready);
    uint64_t ns = proctree_update(&t, time_mono_ns(), true);
    if (ns < S_NS / 4 || ns > S_NS / 2)
        fail_msg("tree CPU time %.3f s, want 0.25 .. 0.5", (double)ns / 1e9);
    assert_true(t.total_ns == ns);

    /* gone without being reported reaped: its time stays counted */
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    uint64_t after = proctree_update(&t, time_mono_ns(), true);
    assert_int_equal(t.n, 0);
    assert_true(after == ns);
    proctree_done(&t);
    proctree_done(&t); /* twice is fine */
}

static void test_grandchild(void **state)
{
    (void)state;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the child waits for a grandchild that does the work */
        pid_t gc = fork();
        if (gc == 0) {
            close(pfd[0]);
            burn(0.3);
            tell_ready(pfd[1]);
            for (;;)
                pause();
        }
        int st;
        waitpid(gc, &st, 0);
        _exit(0);
    }
    close(pfd[1]);
    struct proctree t;
    assert_int_equal(proctree_init(&t, pid, "/proc", 100 * NS_PER_MS), 0);
    pid_t gc = wait_ready(pfd[0]);
    close(pfd[0]);
    assert_true(gc > 0 && gc != pid);

    uint64_t ns = proctree_update(&t, time_mono_ns(), false);
    assert_int_equal(t.n, 2); /* the first update scans */
    int found = 0;
    for (int i = 0; i < t.n; i++)
        found += t.m[i].pid == gc;
    assert_int_equal(found, 1);
    if (ns < S_NS / 4 || ns > S_NS / 2)
        fail_msg("tree CPU time %.3f s, want 0.25 .. 0.5", (double)ns / 1e9);

    /* the grandchild ends and is reaped by the child: its time moves into the child's
     * cutime, and the total does not go down at any point */
    kill(gc, SIGKILL);
    int st;
    struct rusage ru;
    assert_int_equal(wait4(pid, &st, 0, &ru), pid);
    assert_true(WIFEXITED(st));
    uint64_t ru_ns = rusage_ns(&ru);
    /* wait4 counts the child and the grandchild it reaped */
    assert_true(ru_ns >= S_NS / 4);
    proctree_reaped(&t, pid, &ru);
    assert_true(t.reaped_ns == ru_ns);
    uint64_t after = proctree_update(&t, time_mono_ns(), true);
    assert_int_equal(t.n, 0);
    assert_true(after >= ns);
    assert_true(after == (ru_ns > ns ? ru_ns : ns));
    proctree_done(&t);
}

static void test_reaped_adds_rusage(void **state)
{
    (void)state;
    int ready;
    pid_t pid = fork_burner(0.2, false, &ready);
    struct proctree t;
    assert_int_equal(proctree_init(&t, pid, "/proc", 100 * NS_PER_MS), 0);
    wait_ready(ready);
    close(ready);
    uint64_t before = proctree_update(&t, time_mono_ns(), true);
    struct rusage ru;
    int st;
    assert_int_equal(wait4(pid, &st, 0, &ru), pid);
    proctree_reaped(&t, pid, &ru);
    assert_int_equal(t.n, 0);
    uint64_t ru_ns = rusage_ns(&ru);
    assert_true(t.reaped_ns == ru_ns);
    uint64_t after = proctree_update(&t, time_mono_ns(), true);
    assert_true(after >= before);
    assert_true(after == (ru_ns > before ? ru_ns : before));
    assert_true(after >= S_NS / 8);

    /* a pid that is not a member is ignored, unless the tree adopts every child */
    struct rusage fake = {.ru_utime = {.tv_sec = 1, .tv_usec = 250000},
                          .ru_stime = {.tv_sec = 0, .tv_usec = 250000}};
    proctree_reaped(&t, 999999, &fake);
    assert_true(t.reaped_ns == ru_ns);
    t.adopter = getpid();
    proctree_reaped(&t, 999999, &fake);
    assert_true(t.reaped_ns == ru_ns + 1500000000ULL);
    assert_true(proctree_update(&t, time_mono_ns(), false) == ru_ns + 1500000000ULL);
    proctree_done(&t);
}

/* With an adopter, its children join the tree (orphans reparented to a subreaper). */
static void test_adopter(void **state)
{
    (void)state;
    pid_t root = fork();
    assert_true(root >= 0);
    if (root == 0) {
        for (;;)
            pause();
    }
    int ready;
    pid_t other = fork_burner(0.1, true, &ready);
    wait_ready(ready);
    close(ready);
    struct proctree t;
    assert_int_equal(proctree_init(&t, root, "/proc", 100 * NS_PER_MS), 0);
    proctree_update(&t, time_mono_ns(), true);
    assert_int_equal(t.n, 1); /* other is not in root's tree */
    t.adopter = getpid();
    uint64_t ns = proctree_update(&t, time_mono_ns(), true);
    assert_int_equal(t.n, 2);
    assert_true(ns >= S_NS / 20);
    kill(root, SIGKILL);
    kill(other, SIGKILL);
    waitpid(root, NULL, 0);
    waitpid(other, NULL, 0);
    proctree_done(&t);
}

/* Scans happen when due, or when forced. */
/* A child born to a member is found at the next update, from the pids created since the last
 * one (/proc/loadavg); where that cannot be read, by a full scan every scan_every_ns. */
static void scan_case(bool loadavg)
{
    int go[2], ready[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        close(ready[0]);
        char c;
        ssize_t n = read(go[0], &c, 1); /* wait until told to fork */
        (void)n;
        pid_t gc = fork();
        if (gc == 0) {
            tell_ready(ready[1]);
            for (;;)
                pause();
        }
        for (;;)
            pause();
    }
    close(go[0]);
    close(ready[1]);
    struct proctree t;
    int64_t now = 1000 * NS_PER_MS;
    assert_int_equal(proctree_init(&t, pid, "/proc", 100 * NS_PER_MS), 0);
    if (!loadavg) {
        close(t.loadavg_fd);
        t.loadavg_fd = -1;
    }
    proctree_update(&t, now, false);
    assert_int_equal(t.n, 1);
    uint64_t scans = t.scans;
    assert_int_equal(write(go[1], "x", 1), 1);
    pid_t gc = wait_ready(ready[0]);
    proctree_update(&t, now + 50 * NS_PER_MS, false); /* a full scan is not due */
    int n_early = t.n;
    proctree_update(&t, now + 100 * NS_PER_MS, false); /* due */
    int n_due = t.n;
    kill(gc, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(go[1]);
    close(ready[0]);
    if (loadavg) {
        assert_int_equal(n_early, 2); /* found at once, without a full scan */
        assert_int_equal(t.scans, scans);
    } else {
        assert_int_equal(n_early, 1);
        assert_int_equal(n_due, 2);
        assert_true(t.scans > scans);
    }
    proctree_done(&t);
}

static void test_new_member_at_once(void **state)
{
    (void)state;
    scan_case(true);
}

static void test_scan_period_without_loadavg(void **state)
{
    (void)state;
    scan_case(false);
}

static void test_init_errors(void **state)
{
    (void)state;
    int before = tu_count_fds();
    struct proctree t;
    /* a pid that does not exist (above the kernel's pid_max limit) */
    assert_int_equal(proctree_init(&t, 4194305 + 7, "/proc", NS_PER_S), -ENOENT);
    proctree_done(&t);
    assert_int_equal(proctree_init(&t, getpid(), "/nonexistent-proc", NS_PER_S), -ENOENT);
    proctree_done(&t);
    /* a failed init holds no descriptor, even when the caller does not call done */
    assert_int_equal(proctree_init(&t, 4194305 + 7, "/proc", NS_PER_S), -ENOENT);
    assert_int_equal(tu_count_fds(), before);

    /* this process as the root: a tree of one, its own CPU time */
    assert_int_equal(proctree_init(&t, getpid(), "/proc", NS_PER_S), 0);
    burn(0.05);
    uint64_t a = proctree_update(&t, time_mono_ns(), true);
    burn(0.05);
    uint64_t b = proctree_update(&t, time_mono_ns(), true);
    assert_true(b >= a);
    assert_true(b > 0);
    proctree_done(&t);
    assert_int_equal(tu_count_fds(), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_stat),
        cmocka_unit_test(test_parse_stat_rejects),
        cmocka_unit_test(test_parse_own_stat),
        cmocka_unit_test(test_child_cpu_time),
        cmocka_unit_test(test_grandchild),
        cmocka_unit_test(test_reaped_adds_rusage),
        cmocka_unit_test(test_adopter),
        cmocka_unit_test(test_new_member_at_once),
        cmocka_unit_test(test_scan_period_without_loadavg),
        cmocka_unit_test(test_init_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
