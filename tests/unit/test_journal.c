/* journal: whole rows only after a failed write, each condition said once, the count. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/journal.h"

#define HEADER "t,name,value\r\n"
#define ROW    "1796000000.000001,a,1.5\r\n"

static void path_of(char *buf, size_t cap, const char *rel)
{
    snprintf(buf, cap, "%s/%s", tu_dir, rel);
}

static off_t size_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

/* Rows go in whole, counted; the header is not a row. */
static void test_append(void **state)
{
    (void)state;
    char path[512];
    path_of(path, sizeof path, "j.csv");
    struct carma_err e = {0};
    struct journal *j = journal_open(path, HEADER, "rows", &e);
    assert_non_null(j);
    assert_int_equal(journal_size(j), strlen(HEADER));
    assert_int_equal(journal_append(j, ROW ROW, 2 * strlen(ROW), 2, 0, &e), 0);
    assert_int_equal(journal_append(j, ROW, strlen(ROW), 1, 0, &e), 0);
    assert_int_equal(e.code, 0);
    assert_int_equal(journal_rows(j), 3);
    int err = 1;
    assert_int_equal(journal_lost(j, &err), 0);
    assert_int_equal(err, 0);
    char msg[256] = "x";
    assert_false(journal_loss_text(j, msg, sizeof msg));
    assert_string_equal(msg, "");
    assert_string_equal(journal_path(j), path);
    assert_false(journal_damaged(j));
    assert_int_equal(journal_sync(j), 0);
    assert_int_equal(journal_close(j), 0);
    char text[512];
    tu_slurp(path, text, sizeof text);
    assert_string_equal(text, HEADER ROW ROW ROW);
    /* NULL-safe; an uncreatable file names itself */
    assert_int_equal(journal_append(NULL, ROW, strlen(ROW), 1, 0, NULL), -EBADF);
    assert_int_equal(journal_rows(NULL), 0);
    assert_false(journal_damaged(NULL));
    assert_int_equal(journal_sync(NULL), 0);
    assert_int_equal(journal_close(NULL), 0);
    path_of(path, sizeof path, "no/such/dir/j.csv");
    assert_null(journal_open(path, HEADER, "rows", &e));
    assert_int_equal(e.code, -ENOENT);
    assert_non_null(strstr(e.msg, path));
}

/* Past the file size limit (SIGXFSZ ignored, as carma does) a batch written in part is cut off
 * again: the file ends at its last whole row; the first failure of the condition fills the
 * warning, the next ones do not; the count names the rows and the reason; with room again the
 * next batch follows the last whole row. */
static void test_short_write_rolled_back(void **state)
{
    (void)state;
    char path[512];
    path_of(path, sizeof path, "j.csv");
    struct carma_err e = {0};
    struct journal *j = journal_open(path, HEADER, "rows", &e);
    assert_non_null(j);
    assert_int_equal(journal_append(j, ROW, strlen(ROW), 1, 0, &e), 0);
    off_t good = size_of(path);
    char batch[10 * sizeof ROW];
    for (int k = 0; k < 10; k++)
        memcpy(batch + k * strlen(ROW), ROW, strlen(ROW));
    size_t blen = 10 * strlen(ROW);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)good + blen / 2; /* room for half the batch: a short write */
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    struct carma_err w1 = {0}, w2 = {0};
    int r1 = journal_append(j, batch, blen, 10, 1796000000123456000LL, &w1);
    off_t after1 = size_of(path);
    int r2 = journal_append(j, batch, blen, 10, 1796000001000000000LL, &w2);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_xfsz);
    assert_int_equal(r1, -EFBIG);
    assert_int_equal(r2, -EFBIG);
    assert_int_equal(after1, good); /* not a byte of the torn batch */
    assert_int_equal(size_of(path), good);
    /* said once: the first failure, with the time of its first row */
    assert_int_equal(w1.code, -EFBIG);
    char want[1024];
    snprintf(want, sizeof want,
             "cannot write %s: %s (rows from t=1796000000.123456 not written; the file keeps its "
             "whole rows; said once, counted at the end)",
             path, strerror(EFBIG));
    assert_string_equal(w1.msg, want);
    assert_int_equal(w2.code, 0);
    assert_string_equal(w2.msg, "");
    int err = 0;
    assert_int_equal(journal_lost(j, &err), 20);
    assert_int_equal(err, -EFBIG);
    assert_int_equal(journal_rows(j), 1);
    char msg[1024];
    assert_true(journal_loss_text(j, msg, sizeof msg));
    snprintf(want, sizeof want, "%s: 20 rows lost to: %s", path, strerror(EFBIG));
    assert_string_equal(msg, want);
    /* with room again, the next batch follows the last whole row */
    assert_int_equal(journal_append(j, ROW, strlen(ROW), 1, 0, &e), 0);
    assert_int_equal(journal_close(j), 0);
    char text[1024];
    tu_slurp(path, text, sizeof text);
    assert_string_equal(text, HEADER ROW ROW);
}

/* A file that cannot be cut back (/dev/full: every write fails with ENOSPC, ftruncate fails
 * too) is written no more: -EIO after, a second condition said once, both counted. */
static void test_cannot_cut_back(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0)
        skip();
    struct carma_err e = {0};
    struct journal *j = journal_open("/dev/full", NULL, "lines", &e);
    assert_non_null(j);
    assert_false(journal_damaged(j));
    struct carma_err w1 = {0}, w2 = {0}, w3 = {0};
    assert_int_equal(journal_append(j, "a\n", 2, 1, -1, &w1), -ENOSPC);
    assert_true(journal_damaged(j));
    assert_int_equal(w1.code, -ENOSPC);
    assert_non_null(strstr(w1.msg, "lines not written; the file ends in a part of a row"));
    assert_int_equal(journal_append(j, "b\nc\n", 4, 2, -1, &w2), -EIO);
    assert_int_equal(w2.code, -EIO);
    assert_int_equal(journal_append(j, "d\n", 2, 1, -1, &w3), -EIO);
    assert_int_equal(w3.code, 0);
    char msg[1024], want[1024];
    assert_true(journal_loss_text(j, msg, sizeof msg));
    snprintf(want, sizeof want, "/dev/full: 4 lines lost to: %s (1), %s (3)", strerror(ENOSPC),
             strerror(EIO));
    assert_string_equal(msg, want);
    int err = 0;
    assert_int_equal(journal_lost(j, &err), 4);
    assert_int_equal(err, -ENOSPC);
    assert_int_equal(journal_sync(j), 0); /* a device that cannot be synced */
    assert_int_equal(journal_close(j), 0);
}

/* The reserve: room allocated to a file with no name in the directory, freed by close. */
static void test_reserve(void **state)
{
    (void)state;
    int fd = journal_reserve(tu_dir, 64 << 10);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(st.st_size == 64 << 10);
    assert_true((off_t)st.st_blocks * 512 >= 64 << 10);
    assert_int_equal(st.st_nlink, 0); /* nothing left in the directory */
    close(fd);
    /* more than any file system holds: an error, no fd */
    int r = journal_reserve(tu_dir, (size_t)1 << 62);
    assert_true(r == -ENOSPC || r == -EFBIG);
    char path[512];
    path_of(path, sizeof path, "no/such/dir");
    assert_true(journal_reserve(path, 4096) < 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_setup, tu_teardown)
    const struct CMUnitTest tests[] = {
        T(test_append),
        T(test_short_write_rolled_back),
        T(test_cannot_cut_back),
        T(test_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
