/*
 * test_strays: what a child subreaper inherits is ended at the end. This test is the
 * subreaper; a helper child starts a daemon (double fork, setsid) and exits, so the daemon is
 * reparented here. strays_end() finds it (its pid and command), sends SIGTERM and, when it
 * ignores that, SIGKILL after the grace period; a child listed in keep is left alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "workload/strays.h"

/* Starts a daemon as a grandchild that is orphaned at once (so it is this test's child now),
 * named comm, ignoring SIGTERM when told. Returns its pid. */
static pid_t start_daemon(const char *comm, bool ignore_term)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t mid = fork();
    assert_true(mid >= 0);
    if (mid == 0) {
        close(p[0]);
        if (fork() == 0) {
            setsid();
            prctl(PR_SET_NAME, comm, 0, 0, 0);
            if (ignore_term)
                signal(SIGTERM, SIG_IGN);
            pid_t self = getpid(); /* once it is set up */
            ssize_t w = write(p[1], &self, sizeof self);
            (void)w;
            close(p[1]);
            for (;;)
                pause();
        }
        _exit(0);
    }
    close(p[1]);
    pid_t d = 0;
    assert_int_equal(read(p[0], &d, sizeof d), (ssize_t)sizeof d);
    close(p[0]);
    assert_int_equal(waitpid(mid, NULL, 0), mid); /* d is this test's (the subreaper's) now */
    return d;
}

static void test_term_ignored(void **state)
{
    (void)state;
    pid_t d = start_daemon("daemon.sh", true);
    struct stray found[4];
    assert_int_equal(strays_find("/proc", NULL, 0, found, 4), 1);
    assert_int_equal(found[0].pid, d);
    struct strays st;
    int64_t t0 = time_mono_ns();
    assert_int_equal(strays_end("/proc", NULL, 0, 300 * NS_PER_MS, &st), 1);
    int64_t took = time_mono_ns() - t0;
    assert_int_equal(st.n, 1);
    assert_int_equal(st.total, 1);
    assert_int_equal(st.s[0].pid, d);
    assert_string_equal(st.s[0].comm, "daemon.sh");
    assert_true(st.s[0].needed_kill);
    assert_true(took >= 300 * NS_PER_MS && took < 3 * NS_PER_S);
    assert_true(kill(d, 0) < 0 && errno == ESRCH); /* dead and reaped */
    assert_int_equal(strays_find("/proc", NULL, 0, found, 4), 0);
}

static void test_term_obeyed(void **state)
{
    (void)state;
    pid_t d = start_daemon("obedient", false);
    struct strays st;
    int64_t t0 = time_mono_ns();
    assert_int_equal(strays_end("/proc", NULL, 0, 5 * NS_PER_S, &st), 1);
    assert_true(time_mono_ns() - t0 < 2 * NS_PER_S); /* no need to wait out the grace */
    assert_int_equal(st.s[0].pid, d);
    assert_false(st.s[0].needed_kill);
    assert_true(kill(d, 0) < 0);
}

static void test_keep(void **state)
{
    (void)state;
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        for (;;)
            pause();
    }
    struct strays st;
    assert_int_equal(strays_end("/proc", &child, 1, 100 * NS_PER_MS, &st), 0);
    assert_int_equal(kill(child, 0), 0); /* a workload's main process is the caller's */
    kill(child, SIGKILL);
    assert_int_equal(waitpid(child, NULL, 0), child);
    assert_int_equal(strays_end("/proc", NULL, 0, 100 * NS_PER_MS, &st), 0);
}

int main(void)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_term_ignored),
        cmocka_unit_test(test_term_obeyed),
        cmocka_unit_test(test_keep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
