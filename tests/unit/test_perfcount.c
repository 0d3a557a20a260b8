/* test_perfcount: per-workload perf counters (task-clock here; hardware events where a PMU
 * exists, else unavailable with a reason, never 0). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "workload/perfcount.h"

/* A child that burns ~0.2 s of CPU in itself and a grandchild: task-clock, inherited, matches
 * the child's rusage (its own and its waited grandchild's time). */
static void test_task_clock_follows_children(void **state)
{
    (void)state;
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        char c;
        ssize_t n = read(go[0], &c, 1); /* counters are open once this returns */
        (void)n;
        for (volatile long i = 0; i < 150000000; i++)
            ;
        pid_t gc = fork();
        if (gc == 0) {
            for (volatile long i = 0; i < 150000000; i++)
                ;
            _exit(0);
        }
        waitpid(gc, NULL, 0);
        _exit(0);
    }
    close(go[0]);
    struct perf_counters p;
    perf_counters_open(&p, pid);
    assert_int_equal(write(go[1], "x", 1), 1);
    close(go[1]);
    int ws;
    struct rusage ru;
    assert_int_equal(wait4(pid, &ws, 0, &ru), pid);
    uint64_t v[PERFC_N];
    unsigned mask = perf_counters_read(&p, v);
    if (!(mask & (1u << PERFC_TASK_CLOCK))) {
        print_message("task-clock unavailable: %s\n",
                      perf_counter_error_text(&p, PERFC_TASK_CLOCK));
        perf_counters_close(&p);
        skip();
    }
    double used = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                  (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    assert_true(used > 0.05);
    tu_assert_near((double)v[PERFC_TASK_CLOCK] / 1e9, used, 0.03 + 0.05 * used);
    for (int i = 0; i < PERFC_N; i++) {
        if (mask & (1u << i))
            assert_int_equal(p.err[i], 0);
        else
            assert_true(p.err[i] < 0 && strlen(perf_counter_error_text(&p, i)) > 0);
    }
    perf_counters_close(&p);
    perf_counters_close(&p); /* twice is fine */
}

static void test_unopened(void **state)
{
    (void)state;
    struct perf_counters p;
    perf_counters_init(&p);
    uint64_t v[PERFC_N];
    assert_int_equal(perf_counters_read(&p, v), 0);
    assert_non_null(strstr(perf_counter_error_text(&p, PERFC_CYCLES), "not opened"));
    assert_string_equal(perf_counter_name(PERFC_INSTRUCTIONS), "instructions");
    perf_counters_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_clock_follows_children),
        cmocka_unit_test(test_unopened),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
