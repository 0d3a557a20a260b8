/*
 * Tests for rundir/crash: the torn last line of a file cut back to its last line end (a CSV
 * row, CRLF or LF; a line longer than the read buffer; a file of one torn line; a whole file
 * and an empty one left as they are; errors named), and run.lock (taken, held against a
 * second taker that learns the holder's pid, released on close, absent without create).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rundir/crash.h"

/* Writes content to tu_dir/name, cuts its torn line and checks what is left and said. */
static void trim_case(const char *name, const char *content, int want_r, const char *want_left)
{
    tu_put(name, content);
    size_t dropped = 99;
    struct carma_err e = {0};
    assert_int_equal(rundir_crash_trim(tu_dir, name, &dropped, &e), want_r);
    assert_int_equal(dropped, strlen(content) - strlen(want_left));
    char path[4200], buf[8192];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    size_t n = tu_slurp(path, buf, sizeof buf);
    assert_int_equal(n, strlen(want_left));
    assert_memory_equal(buf, want_left, n);
}

static void trim_rows(void **state)
{
    (void)state;
    /* a CSV of CRLF rows, the last one cut in the middle of a number */
    trim_case("samples.csv", "t,channel,watts\r\n1.0,a,2.5\r\n1.1,a,2", 1,
              "t,channel,watts\r\n1.0,a,2.5\r\n");
    /* cut between the CR and the LF: the CR alone is a torn line */
    trim_case("cr.csv", "h\r\n1\r", 1, "h\r\n");
    /* LF lines (a journal of JSON lines) */
    trim_case("e.jsonl", "{\"a\":1}\n{\"a\":", 1, "{\"a\":1}\n");
    /* whole files and an empty one are left as they are */
    trim_case("whole.csv", "h\r\n1\r\n", 0, "h\r\n1\r\n");
    trim_case("whole.jsonl", "{}\n", 0, "{}\n");
    trim_case("empty.csv", "", 0, "");
    /* a file of one torn line (a header cut): nothing is left */
    trim_case("header.csv", "timestamp_un", 1, "");
}

static void trim_long_line(void **state)
{
    (void)state;
    /* a torn line longer than the 64 KiB read back at a time */
    size_t n = 200000;
    char *s = malloc(n + 16);
    assert_non_null(s);
    memcpy(s, "h\r\n", 3);
    memset(s + 3, 'x', n - 3);
    s[n] = '\0';
    tu_put("long.csv", s);
    size_t dropped = 0;
    struct carma_err e = {0};
    assert_int_equal(rundir_crash_trim(tu_dir, "long.csv", &dropped, &e), 1);
    assert_int_equal(dropped, n - 3);
    char path[4200];
    snprintf(path, sizeof path, "%s/long.csv", tu_dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 3);
    /* again: nothing more to cut */
    assert_int_equal(rundir_crash_trim(tu_dir, "long.csv", &dropped, &e), 0);
    assert_int_equal(dropped, 0);
    free(s);
}

static void trim_errors(void **state)
{
    (void)state;
    size_t dropped;
    struct carma_err e = {0};
    assert_int_equal(rundir_crash_trim(tu_dir, "absent.csv", &dropped, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "absent.csv: cannot open"));
    tu_mkdirs("adir.csv");
    assert_true(rundir_crash_trim(tu_dir, "adir.csv", &dropped, &e) < 0);
    assert_non_null(strstr(e.msg, "adir.csv"));
}

static void lock(void **state)
{
    (void)state;
    struct carma_err e = {0};
    pid_t holder = -1;
    /* no run.lock: -ENOENT unless created */
    assert_int_equal(rundir_crash_lock(tu_dir, 0, &holder, &e), -ENOENT);
    int fd = rundir_crash_lock(tu_dir, 1, NULL, &e);
    assert_true(fd >= 0);
    char path[4200], buf[64];
    snprintf(path, sizeof path, "%s/%s", tu_dir, RUNDIR_LOCK_NAME);
    size_t n = tu_slurp(path, buf, sizeof buf);
    buf[n] = '\0';
    assert_int_equal(atol(buf), (long)getpid());
    /* another process cannot take it, and learns who holds it (a flock of another open file
     * description: a child's own open) */
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        pid_t h = 0;
        struct carma_err ce = {0};
        int r = rundir_crash_lock(tu_dir, 0, &h, &ce);
        _exit(r == -EWOULDBLOCK && h == getppid() && strstr(ce.msg, "held") ? 0 : 1);
    }
    int ws;
    assert_int_equal(waitpid(c, &ws, 0), c);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    /* released when closed: taken again */
    close(fd);
    fd = rundir_crash_lock(tu_dir, 0, &holder, &e);
    assert_true(fd >= 0);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(trim_rows, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(trim_long_line, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(trim_errors, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(lock, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
