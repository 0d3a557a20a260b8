/*
 * Unit tests for core/pidlive: the start time and state of a process from /proc/PID/stat
 * (comm with spaces and parentheses too), and whether a run's writer is alive: this process
 * is, a child that exited (zombie, then reaped) is not, nor a pid with another start time or a
 * manifest of another boot.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/pidlive.h"
#include "testutil.h"

static void test_self(void **state)
{
    (void)state;
    uint64_t t = 0;
    char st = 0;
    assert_int_equal(pid_start_ticks(getpid(), &t, &st), 0);
    assert_true(t > 0);
    assert_int_equal(st, 'R');
    assert_int_equal(pid_writer_alive(getpid(), t, NULL), 1);
    assert_int_equal(pid_writer_alive(getpid(), 0, NULL), 1);
    /* the same pid, started at another time: reused, so not the writer */
    assert_int_equal(pid_writer_alive(getpid(), t + 1, NULL), 0);
    char boot[64];
    assert_int_equal(pid_boot_id(boot, sizeof boot), 0);
    assert_int_equal(strlen(boot), 36);
    assert_int_equal(pid_writer_alive(getpid(), t, boot), 1);
    assert_int_equal(pid_writer_alive(getpid(), t, "00000000-0000-0000-0000-000000000000"), 0);
}

/* A comm of spaces and parentheses does not shift the fields. */
static void test_odd_comm(void **state)
{
    (void)state;
    uint64_t before = 0, after = 0;
    assert_int_equal(pid_start_ticks(getpid(), &before, NULL), 0);
    char old[17] = {0};
    prctl(PR_GET_NAME, old);
    prctl(PR_SET_NAME, ") x ) 1 2 3");
    assert_int_equal(pid_start_ticks(getpid(), &after, NULL), 0);
    prctl(PR_SET_NAME, old);
    assert_true(after == before);
}

static void test_exited_child(void **state)
{
    (void)state;
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0)
        _exit(0);
    uint64_t t = 0;
    /* a zombie until reaped: gone already */
    for (int i = 0; i < 500; i++) {
        char st = 0;
        if (pid_start_ticks(c, &t, &st) == 0 && st == 'Z')
            break;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(pid_writer_alive(c, t, NULL), 0);
    int ws;
    assert_int_equal(waitpid(c, &ws, 0), c);
    assert_int_equal(pid_start_ticks(c, &t, NULL), -ENOENT);
    assert_int_equal(pid_writer_alive(c, t, NULL), 0);
    /* a live child is alive */
    c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        pause();
        _exit(0);
    }
    assert_int_equal(pid_start_ticks(c, &t, NULL), 0);
    assert_int_equal(pid_writer_alive(c, t, NULL), 1);
    kill(c, SIGKILL);
    waitpid(c, &ws, 0);
    assert_int_equal(pid_writer_alive(c, t, NULL), 0);
}

/* A text that ends right after the comm is refused without reading past its end: the bytes
 * after its NUL (here a whole stat line) are not the file's (found by fuzz/fuzz_pidstat.c). */
static void test_parse_cut_after_comm(void **state)
{
    (void)state;
    static const char buf[] = "7 (x)\0 R 1 7 7 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 555 0";
    uint64_t t = 1;
    char st = 'x';
    assert_int_equal(pid_stat_start_parse(buf, &t, &st), -EINVAL);
    assert_true(t == 1);
    assert_int_equal(pid_stat_start_parse("7 (x) R", &t, NULL), -EINVAL);
    assert_int_equal(
        pid_stat_start_parse("7 (x) R 1 7 7 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 555 0\n", &t, &st), 0);
    assert_true(t == 555);
    assert_int_equal(st, 'R');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_odd_comm),
        cmocka_unit_test(test_exited_child),
        cmocka_unit_test(test_parse_cut_after_comm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
