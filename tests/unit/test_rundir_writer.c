/*
 * Tests for rundir/writer: a run directory's naming (NAME_YYYYmmdd-HHMMSS, then -2, -3 in the
 * same second, with logs/), samples.csv, its journals (opened, appended to, what they lost said
 * and counted at the end), the list of incomplete outputs, its JSON and text files, the room kept
 * for the final files, and that every message goes through the caller's say callback, in order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rundir/writer.h"
#include "sampler/sampler.h"

/* What the writer said, each message followed by "\n". */
struct said {
    char text[8192];
    int n;
};

static void say(void *ctx, const char *msg)
{
    struct said *s = ctx;
    size_t len = strlen(s->text);
    snprintf(s->text + len, sizeof s->text - len, "%s\n", msg);
    s->n++;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directory name for name at now, as the writer makes it (k > 1: with "-k"). */
static void expected_name(char *buf, size_t cap, const char *name, time_t now, int k)
{
    char stamp[32];
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    if (k > 1)
        snprintf(buf, cap, "/%s_%s-%d", name, stamp, k);
    else
        snprintf(buf, cap, "/%s_%s", name, stamp);
}

static bool ends_with(const char *s, const char *end)
{
    size_t a = strlen(s), b = strlen(end);
    return a >= b && strcmp(s + a - b, end) == 0;
}

static void create_names(void **state)
{
    (void)state;
    struct said said = {0};
    struct rundir_writer w, w2, w3;
    struct carma_err e = {0};
    char runs[512], want[128], logs[4200];
    snprintf(runs, sizeof runs, "%s/runs/deeper", tu_dir); /* made with its parents */
    time_t now = 1796046807;
    rundir_writer_init(&w, say, &said);
    assert_int_equal(w.reserve_fd, -1);
    assert_string_equal(w.dir, "");
    assert_int_equal(rundir_writer_create(&w, runs, "exp", now, &e), 0);
    expected_name(want, sizeof want, "exp", now, 1);
    assert_true(ends_with(w.dir, want));
    assert_true(w.dir[0] == '/'); /* absolute */
    assert_true(is_dir(w.dir));
    snprintf(logs, sizeof logs, "%s/logs", w.dir);
    assert_true(is_dir(logs));
    /* a second and a third in the same second */
    rundir_writer_init(&w2, say, &said);
    assert_int_equal(rundir_writer_create(&w2, runs, "exp", now, &e), 0);
    expected_name(want, sizeof want, "exp", now, 2);
    assert_true(ends_with(w2.dir, want));
    snprintf(logs, sizeof logs, "%s/logs", w2.dir);
    assert_true(is_dir(logs));
    rundir_writer_init(&w3, say, &said);
    assert_int_equal(rundir_writer_create(&w3, runs, "exp", now, &e), 0);
    expected_name(want, sizeof want, "exp", now, 3);
    assert_true(ends_with(w3.dir, want));
    /* the next second is a name of its own again */
    assert_int_equal(rundir_writer_create(&w3, runs, "exp", now + 1, &e), 0);
    expected_name(want, sizeof want, "exp", now + 1, 1);
    assert_true(ends_with(w3.dir, want));
    assert_int_equal(said.n, 0); /* nothing said */
    assert_int_equal(e.code, 0);
}

static void create_fails(void **state)
{
    (void)state;
    struct rundir_writer w;
    struct carma_err e = {0};
    char runs[512], want[1024];
    tu_put("file", "x\n");
    snprintf(runs, sizeof runs, "%s/file/runs", tu_dir); /* below a file */
    rundir_writer_init(&w, NULL, NULL);
    assert_int_equal(rundir_writer_create(&w, runs, "exp", time(NULL), &e), -ENOTDIR);
    snprintf(want, sizeof want, "cannot create %s: %s", runs, strerror(ENOTDIR));
    assert_string_equal(e.msg, want);
}

static void journals_and_incomplete(void **state)
{
    (void)state;
    struct said said = {0};
    struct rundir_writer w;
    rundir_writer_init(&w, say, &said);
    rundir_writer_use(&w, tu_dir);
    assert_string_equal(w.dir, tu_dir);
    struct journal *j = rundir_writer_open_journal(&w, "a.csv", "t,v\r\n", "rows");
    assert_non_null(j);
    assert_int_equal(w.njournals, 1);
    assert_int_equal(rundir_writer_append(&w, j, "1,2\r\n3,4\r\n", 10, 2, 0), 0);
    assert_true(rundir_writer_append(&w, NULL, "x\r\n", 3, 1, 0) < 0); /* NULL: nothing */
    assert_int_equal(said.n, 0);
    /* a journal that cannot be opened: said, and incomplete */
    assert_null(rundir_writer_open_journal(&w, "no/such.csv", "t\r\n", "rows"));
    assert_int_equal(w.njournals, 1);
    assert_int_equal(said.n, 1);
    char want[8192];
    snprintf(want, sizeof want, "%s/no/such.csv", tu_dir);
    assert_non_null(strstr(said.text, want));
    assert_string_equal(w.incomplete, "no/such.csv");
    /* each name once, in the order they failed */
    rundir_writer_failed(&w, "report.txt");
    rundir_writer_failed(&w, "no/such.csv");
    rundir_writer_failed(&w, "power/samples.csv");
    rundir_writer_failed(&w, "report.txt");
    assert_string_equal(w.incomplete, "no/such.csv, report.txt, power/samples.csv");
    /* nothing lost: the count says nothing */
    json_t *warnings = json_array();
    rundir_writer_losses(&w, NULL, warnings);
    assert_int_equal(said.n, 1);
    assert_int_equal(json_array_size(warnings), 0);
    assert_int_equal(journal_close(j), 0);
    char path[4200], text[256];
    snprintf(path, sizeof path, "%s/a.csv", tu_dir);
    tu_slurp(path, text, sizeof text);
    assert_string_equal(text, "t,v\r\n1,2\r\n3,4\r\n");
    json_decref(warnings);
}

/* Past the file size limit a journal loses rows: the first failure is said once, the count at
 * the end, which makes the file incomplete and adds its warning. */
static void losses(void **state)
{
    (void)state;
    struct said said = {0};
    struct rundir_writer w;
    rundir_writer_init(&w, say, &said);
    rundir_writer_use(&w, tu_dir);
    struct journal *j = rundir_writer_open_journal(&w, "b.csv", "t\r\n", "rows");
    assert_non_null(j);
    assert_int_equal(rundir_writer_append(&w, j, "1\r\n", 3, 1, 0), 0);
    static const char batch[] = "2\r\n3\r\n4\r\n5\r\n6\r\n7\r\n8\r\n9\r\n";
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 3 + 3 + 6; /* the header, the first row and half the batch */
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int r1 = rundir_writer_append(&w, j, batch, strlen(batch), 8, 1796000000000000000LL);
    int r2 = rundir_writer_append(&w, j, batch, strlen(batch), 8, 1796000001000000000LL);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_xfsz);
    assert_int_equal(r1, -EFBIG);
    assert_int_equal(r2, -EFBIG);
    assert_int_equal(said.n, 1); /* once per condition */
    char path[4200], want[8192];
    snprintf(path, sizeof path, "%s/b.csv", tu_dir);
    snprintf(want, sizeof want,
             "cannot write %s: %s (rows from t=1796000000.000000 not written; the file keeps its "
             "whole rows; said once, counted at the end)\n",
             path, strerror(EFBIG));
    assert_string_equal(said.text, want);
    json_t *warnings = json_array();
    rundir_writer_losses(&w, NULL, warnings);
    assert_int_equal(said.n, 2);
    size_t len = strlen(want);
    snprintf(want + len, sizeof want - len, "%s: 16 rows lost to: %s\n", path, strerror(EFBIG));
    assert_string_equal(said.text, want);
    assert_string_equal(w.incomplete, "b.csv");
    assert_int_equal(json_array_size(warnings), 1);
    snprintf(want, sizeof want,
             "b.csv: 16 rows lost to: %s: the file is incomplete (the rows it holds are whole)",
             strerror(EFBIG));
    assert_string_equal(json_string_value(json_array_get(warnings, 0)), want);
    json_decref(warnings);
    assert_int_equal(journal_close(j), 0);
}

static void files(void **state)
{
    (void)state;
    struct said said = {0};
    struct rundir_writer w;
    rundir_writer_init(&w, say, &said);
    rundir_writer_use(&w, tu_dir);
    json_t *j = json_object();
    json_object_set_new(j, "b", json_integer(1));
    json_object_set_new(j, "a", json_real(0.5));
    rundir_writer_write_json(&w, "x.json", j); /* taken */
    rundir_writer_write_file(&w, "x.txt", "hello\n", 6);
    char path[4200], text[256];
    snprintf(path, sizeof path, "%s/x.json", tu_dir);
    tu_slurp(path, text, sizeof text);
    assert_string_equal(text, "{\n  \"b\": 1,\n  \"a\": 0.5\n}\n");
    snprintf(path, sizeof path, "%s/x.txt", tu_dir);
    tu_slurp(path, text, sizeof text);
    assert_string_equal(text, "hello\n");
    assert_int_equal(said.n, 0);
    assert_string_equal(w.incomplete, "");
    /* out of memory (NULL) and a directory that is not there: said, and incomplete */
    rundir_writer_write_json(&w, "y.json", NULL);
    rundir_writer_write_file(&w, "none/z.txt", "z", 1);
    char want[8192];
    snprintf(want, sizeof want, "cannot write %s/y.json: %s\ncannot write %s/none/z.txt: %s\n",
             tu_dir, strerror(ENOMEM), tu_dir, strerror(ENOENT));
    assert_string_equal(said.text, want);
    assert_string_equal(w.incomplete, "y.json, none/z.txt");
}

/* samples.csv with its header; a directory that is not there: said, and incomplete */
static void samples(void **state)
{
    (void)state;
    char root[512];
    tu_fixture_path(root, sizeof root, "intel-2s");
    struct sampler_opts o = {.root = root, .sources = "rapl"};
    o.interval_ns = SAMPLER_INTERVAL_DEFAULT_NS;
    struct sampler *s = tu_sampler_new(&o);
    struct said said = {0};
    struct rundir_writer w;
    rundir_writer_init(&w, say, &said);
    rundir_writer_use(&w, tu_dir);
    struct samples_csv *csv = rundir_writer_open_samples(&w, s);
    assert_non_null(csv);
    assert_int_equal(samples_csv_close(csv), 0);
    char path[4200], text[256];
    snprintf(path, sizeof path, "%s/samples.csv", tu_dir);
    tu_slurp(path, text, sizeof text);
    assert_string_equal(text, "timestamp_unix,timestamp_local,channel,source,kind,domain,method,"
                              "watts,joules_total\r\n");
    assert_int_equal(said.n, 0);
    rundir_writer_use(&w, "/nonexistent/carma-test");
    assert_null(rundir_writer_open_samples(&w, s));
    assert_int_equal(said.n, 1);
    assert_non_null(strstr(said.text, "/nonexistent/carma-test/samples.csv"));
    assert_string_equal(w.incomplete, "samples.csv");
    sampler_free(s);
}

static void reserve(void **state)
{
    (void)state;
    struct rundir_writer w;
    rundir_writer_init(&w, NULL, NULL);
    rundir_writer_use(&w, tu_dir);
    int fds = tu_count_fds();
    rundir_writer_reserve(&w);
    assert_true(w.reserve_fd >= 0);
    assert_int_equal(tu_count_fds(), fds + 1);
    struct stat st;
    assert_int_equal(fstat(w.reserve_fd, &st), 0);
    assert_true(st.st_size >= (off_t)RUNDIR_RESERVE_MIN && st.st_size <= (off_t)RUNDIR_RESERVE_MAX);
    rundir_writer_release(&w);
    assert_int_equal(w.reserve_fd, -1);
    assert_int_equal(tu_count_fds(), fds);
    rundir_writer_release(&w); /* twice is fine */
    /* a directory that is not there keeps no room */
    rundir_writer_use(&w, "/nonexistent/carma-test");
    rundir_writer_reserve(&w);
    assert_int_equal(w.reserve_fd, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(create_names, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(create_fails, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(journals_and_incomplete, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(losses, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(files, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(samples, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(reserve, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
