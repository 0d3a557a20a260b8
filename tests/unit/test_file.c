/*
 * Unit tests for core/file's directory claim: a new directory (and its parents) is made and
 * claimed, an empty one is taken, one that holds anything is refused and left as it was, and of
 * many processes claiming the same directory at once exactly one wins.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "core/file.h"
#include "testutil.h"

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void test_claim_new(void **state)
{
    (void)state;
    char dir[400], claim[500];
    snprintf(dir, sizeof dir, "%s/a/b/run", tu_dir);
    bool created = false;
    assert_int_equal(file_claim_dir(dir, "manifest.json", NULL, &created), 0);
    assert_true(created);
    snprintf(claim, sizeof claim, "%s/manifest.json", dir);
    assert_true(exists(claim));
    /* claimed once: a second claim of the same directory is refused */
    assert_int_equal(file_claim_dir(dir, "manifest.json", NULL, &created), -ENOTEMPTY);
    /* undone: the directory made by the claim goes too */
    file_unclaim_dir(dir, "manifest.json", true);
    assert_false(exists(dir));
}

static void test_claim_empty_existing(void **state)
{
    (void)state;
    char dir[400];
    snprintf(dir, sizeof dir, "%s/empty", tu_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    bool created = true;
    assert_int_equal(file_claim_dir(dir, "manifest.json", NULL, &created), 0);
    assert_false(created);
    file_unclaim_dir(dir, "manifest.json", false);
    assert_true(exists(dir)); /* not made by the claim: kept */
}

static void test_claim_refuses_what_is_there(void **state)
{
    (void)state;
    char dir[400], path[500], buf[64];
    snprintf(dir, sizeof dir, "%s/old", tu_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    tu_put("old/samples.csv", "earlier rows\n");
    bool created;
    assert_int_equal(file_claim_dir(dir, "manifest.json", NULL, &created), -ENOTEMPTY);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    assert_false(exists(path));
    snprintf(path, sizeof path, "%s/samples.csv", dir);
    tu_slurp(path, buf, sizeof buf);
    assert_string_equal(buf, "earlier rows\n");
    /* a hidden file counts too */
    snprintf(dir, sizeof dir, "%s/hidden", tu_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    tu_put("hidden/.x", "");
    assert_int_equal(file_claim_dir(dir, "manifest.json", NULL, &created), -ENOTEMPTY);
    /* with the measurement's outputs named: only they (and the claim) count, other files stay */
    static const char *const outs[] = {"manifest.json", "samples.csv", "power", NULL};
    snprintf(dir, sizeof dir, "%s/old", tu_dir);
    assert_int_equal(file_claim_dir(dir, "manifest.json", outs, &created), -ENOTEMPTY);
    snprintf(dir, sizeof dir, "%s/hidden", tu_dir);
    tu_put("hidden/logs/job.out", "a job's log\n");
    assert_int_equal(file_claim_dir(dir, "manifest.json", outs, &created), 0);
    assert_false(created);
    assert_int_equal(file_claim_dir(dir, "manifest.json", outs, &created), -ENOTEMPTY);
    snprintf(dir, sizeof dir, "%s/withpower", tu_dir);
    tu_put("withpower/power/cpu/samples.csv", "rows\n");
    assert_int_equal(file_claim_dir(dir, "manifest.json", outs, &created), -ENOTEMPTY);
    /* a file is not a directory; the trailing slash is fine */
    tu_put("file", "x");
    snprintf(path, sizeof path, "%s/file", tu_dir);
    assert_int_equal(file_claim_dir(path, "manifest.json", NULL, &created), -ENOTDIR);
    snprintf(path, sizeof path, "%s/file/sub", tu_dir);
    assert_int_equal(file_claim_dir(path, "manifest.json", NULL, &created), -ENOTDIR);
    snprintf(path, sizeof path, "%s/slash/", tu_dir);
    assert_int_equal(file_claim_dir(path, "manifest.json", NULL, &created), 0);
    assert_true(created);
}

/* Many processes claim one path (new, then empty) at the same moment: exactly one wins. */
static void race(const char *dir)
{
    enum { N = 8 };
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid[N];
    for (int k = 0; k < N; k++) {
        pid[k] = fork();
        assert_true(pid[k] >= 0);
        if (pid[k] == 0) {
            close(go[1]);
            char c;
            if (read(go[0], &c, 1) < 0)
                _exit(3);
            bool created;
            int r = file_claim_dir(dir, "manifest.json", NULL, &created);
            _exit(r == 0 ? 0 : r == -ENOTEMPTY ? 1 : 2);
        }
    }
    close(go[0]);
    close(go[1]); /* every child starts now */
    int won = 0, lost = 0;
    for (int k = 0; k < N; k++) {
        int st;
        assert_int_equal(waitpid(pid[k], &st, 0), pid[k]);
        assert_true(WIFEXITED(st));
        won += WEXITSTATUS(st) == 0;
        lost += WEXITSTATUS(st) == 1;
    }
    assert_int_equal(won, 1);
    assert_int_equal(lost, N - 1);
}

static void test_claim_race(void **state)
{
    (void)state;
    char dir[400];
    for (int round = 0; round < 20; round++) {
        snprintf(dir, sizeof dir, "%s/new%d", tu_dir, round);
        race(dir);
        snprintf(dir, sizeof dir, "%s/empty%d", tu_dir, round);
        assert_int_equal(mkdir(dir, 0755), 0);
        race(dir);
    }
}

/* A FIFO (like /dev/null or /dev/stdout: not a regular file) is written to, never replaced by
 * a regular file; a directory is refused. */
static void test_replace_special(void **state)
{
    (void)state;
    char fifo[400];
    snprintf(fifo, sizeof fifo, "%s/fifo", tu_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    assert_true(rd >= 0);
    assert_int_equal(file_replace(fifo, "hello\n", 6), 0);
    char buf[16] = {0};
    assert_int_equal(read(rd, buf, sizeof buf), 6);
    assert_string_equal(buf, "hello\n");
    close(rd);
    struct stat st;
    assert_int_equal(stat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(file_replace(tu_dir, "x", 1), -EISDIR);
    /* a regular file is still replaced whole */
    char reg[400];
    snprintf(reg, sizeof reg, "%s/reg", tu_dir);
    assert_int_equal(file_replace(reg, "one", 3), 0);
    assert_int_equal(file_replace(reg, "22", 2), 0);
    assert_int_equal(stat(reg, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, 2);
}

/* file_tmp_rand for the tests: clash[0 .. n_clash) then 0xf00d forever. */
static uint64_t clash[4];
static size_t n_clash, n_drawn;

static uint64_t fixed_rand(void)
{
    return n_drawn < n_clash ? clash[n_drawn++] : 0xf00d;
}

static void tmp_name(char *buf, size_t cap, const char *path, uint64_t v)
{
    snprintf(buf, cap, "%s.tmp.%d.%016llx", path, (int)getpid(), (unsigned long long)v);
}

/* The files in tu_dir whose name starts with prefix. */
static int count_prefix(const char *prefix)
{
    DIR *d = opendir(tu_dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* A temporary name that exists already (left by a crashed run, or a link planted to make carma
 * write elsewhere) is never opened: another name is drawn, and what was there is left alone. */
static void test_replace_leftover_temporary(void **state)
{
    (void)state;
    char path[400], victim[400], old_style[500], left[500], link2[500], buf[64];
    snprintf(path, sizeof path, "%s/report.json", tu_dir);
    snprintf(victim, sizeof victim, "%s/victim", tu_dir);
    tu_put("victim", "victim\n");
    tu_put("report.json", "old\n");
    /* the name an earlier carma used (no random part), and the first two names drawn */
    snprintf(old_style, sizeof old_style, "%s.tmp.%d", path, (int)getpid());
    assert_int_equal(symlink(victim, old_style), 0);
    tmp_name(left, sizeof left, path, 0xabc);
    int lfd = open(left, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(lfd >= 0);
    close(lfd);
    tmp_name(link2, sizeof link2, path, 0xdef);
    assert_int_equal(symlink(victim, link2), 0);
    clash[0] = 0xabc;
    clash[1] = 0xdef;
    n_clash = 2;
    n_drawn = 0;
    uint64_t (*random_bits)(void) = file_tmp_rand;
    file_tmp_rand = fixed_rand;
    assert_int_equal(file_replace(path, "new\n", 4), 0);
    assert_int_equal(n_drawn, 2);
    tu_slurp(path, buf, sizeof buf);
    assert_string_equal(buf, "new\n");
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    tu_slurp(victim, buf, sizeof buf);
    assert_string_equal(buf, "victim\n");
    assert_int_equal(lstat(left, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, 0);
    assert_int_equal(lstat(link2, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(old_style, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    /* report.json, and the three names that were there before: no temporary of this call */
    assert_int_equal(count_prefix("report.json"), 4);

    /* every name drawn is taken: -EEXIST, and nothing changes */
    for (size_t k = 0; k < 4; k++)
        clash[k] = 0xabc;
    n_clash = 4;
    n_drawn = 0;
    /* past clash[] fixed_rand gives 0xf00d: make that one taken too */
    char f00d[500];
    tmp_name(f00d, sizeof f00d, path, 0xf00d);
    assert_int_equal(symlink(victim, f00d), 0);
    assert_int_equal(file_replace(path, "newer\n", 6), -EEXIST);
    tu_slurp(path, buf, sizeof buf);
    assert_string_equal(buf, "new\n");
    tu_slurp(victim, buf, sizeof buf);
    assert_string_equal(buf, "victim\n");
    assert_int_equal(count_prefix("report.json"), 5);
    file_tmp_rand = random_bits;
}

/* The mode of every file and directory created: FILE_MODE and FILE_DIR_MODE less the umask,
 * never more (umask 000 gives 0644 and 0755, not 0666 and 0777). */
static void test_create_modes(void **state)
{
    (void)state;
    static const mode_t masks[] = {0, 022, 077, 027};
    for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
        mode_t old = umask(masks[k]);
        mode_t want_f = FILE_MODE & ~masks[k], want_d = FILE_DIR_MODE & ~masks[k];
        char p[5][500];
        for (int i = 0; i < 5; i++)
            snprintf(p[i], sizeof p[i], "%s/m%zu-%d", tu_dir, k, i);
        int fd = file_create(p[0], O_TRUNC);
        assert_true(fd >= 0);
        close(fd);
        fd = file_create(p[1], O_APPEND | O_EXCL);
        assert_true(fd >= 0);
        close(fd);
        FILE *f = file_fopen_w(p[2]);
        assert_non_null(f);
        fclose(f);
        assert_int_equal(file_replace(p[3], "x", 1), 0);
        assert_int_equal(file_mkdirs(p[4]), 0);
        umask(old);
        struct stat st;
        for (int i = 0; i < 4; i++) {
            assert_int_equal(stat(p[i], &st), 0);
            if ((st.st_mode & 07777) != want_f)
                fail_msg("%s: mode %04o under umask %03o, expected %04o", p[i],
                         (unsigned)(st.st_mode & 07777), (unsigned)masks[k], (unsigned)want_f);
        }
        assert_int_equal(stat(p[4], &st), 0);
        if ((st.st_mode & 07777) != want_d)
            fail_msg("%s: mode %04o under umask %03o, expected %04o", p[4],
                     (unsigned)(st.st_mode & 07777), (unsigned)masks[k], (unsigned)want_d);
    }
}

/* Makes the inputs of the kinds that are not regular files in tu_dir: fifo, zero (a symlink to
 * /dev/zero), null (to /dev/null), dir, sock (a bound socket), dangling (a symlink to nothing). */
static void make_odd_inputs(void)
{
    char p[TU_DIR_MAX + 32];
    snprintf(p, sizeof p, "%s/fifo", tu_dir);
    assert_int_equal(mkfifo(p, 0644), 0);
    snprintf(p, sizeof p, "%s/zero", tu_dir);
    assert_int_equal(symlink("/dev/zero", p), 0);
    snprintf(p, sizeof p, "%s/null", tu_dir);
    assert_int_equal(symlink("/dev/null", p), 0);
    snprintf(p, sizeof p, "%s/dir", tu_dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/dangling", tu_dir);
    assert_int_equal(symlink("nothing-here", p), 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s/sock", tu_dir);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(s >= 0);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    close(s);
}

static void test_open_input_kinds(void **state)
{
    (void)state;
    make_odd_inputs();
    tu_put("reg", "abc\n");
    alarm(10); /* a blocked open of the FIFO fails the test instead of stalling it */
    char p[TU_DIR_MAX + 32];
    static const char *const refused[] = {"fifo", "zero", "null", "sock"};
    for (size_t k = 0; k < sizeof refused / sizeof *refused; k++) {
        snprintf(p, sizeof p, "%s/%s", tu_dir, refused[k]);
        assert_int_equal(file_open_input(AT_FDCWD, p, NULL), -ESPIPE);
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(file_read_all(p, 1u << 20, &text, &len), -ESPIPE);
        assert_null(text);
        int err = 0;
        assert_null(file_fopen_input(p, &err));
        assert_int_equal(err, -ESPIPE);
    }
    snprintf(p, sizeof p, "%s/dir", tu_dir);
    assert_int_equal(file_open_input(AT_FDCWD, p, NULL), -EISDIR);
    snprintf(p, sizeof p, "%s/dangling", tu_dir);
    assert_int_equal(file_open_input(AT_FDCWD, p, NULL), -ENOENT);
    /* relative to a directory fd */
    int dfd = open(tu_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dfd >= 0);
    assert_int_equal(file_open_input(dfd, "fifo", NULL), -ESPIPE);
    struct stat st;
    int fd = file_open_input(dfd, "reg", &st);
    assert_true(fd >= 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, 4);
    assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0); /* cleared */
    close(fd);
    close(dfd);
    snprintf(p, sizeof p, "%s/reg", tu_dir);
    int err = 0;
    FILE *f = file_fopen_input(p, &err);
    assert_non_null(f);
    char line[16];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "abc\n");
    fclose(f);
    alarm(0);
}

static void test_input_messages(void **state)
{
    (void)state;
    make_odd_inputs();
    static const struct {
        const char *name, *kind;
    } cases[] = {
        {"fifo", "a FIFO"},
        {"zero", "a character device"},
        {"sock", "a socket"},
    };
    char p[TU_DIR_MAX + 32], want[TU_DIR_MAX + 128];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        snprintf(p, sizeof p, "%s/%s", tu_dir, cases[k].name);
        struct carma_err e = {0};
        assert_int_equal(file_input_err(&e, p, -ESPIPE), -ESPIPE);
        snprintf(want, sizeof want, "%s is not a regular file (%s)", p, cases[k].kind);
        assert_string_equal(e.msg, want);
        assert_string_equal(file_kind_at(AT_FDCWD, p), cases[k].kind);
    }
    snprintf(p, sizeof p, "%s/dangling", tu_dir);
    assert_string_equal(file_kind_at(AT_FDCWD, p), "a dangling symbolic link");
    struct carma_err e = {0};
    snprintf(p, sizeof p, "%s/missing", tu_dir);
    file_input_err(&e, p, -ENOENT);
    snprintf(want, sizeof want, "%s: %s", p, strerror(ENOENT));
    assert_string_equal(e.msg, want);
    /* file_load_json: the read's error, then a parse error */
    snprintf(p, sizeof p, "%s/fifo", tu_dir);
    json_error_t je;
    int err = 0;
    assert_null(file_load_json(p, 0, &je, &err));
    assert_int_equal(err, -ESPIPE);
    assert_string_equal(je.text, "not a regular file");
    tu_put("bad.json", "{\"a\": ");
    snprintf(p, sizeof p, "%s/bad.json", tu_dir);
    assert_null(file_load_json(p, 0, &je, &err));
    assert_int_equal(err, -EINVAL);
    assert_int_equal(je.line, 1);
    tu_put("ok.json", "{\"a\": 5}");
    snprintf(p, sizeof p, "%s/ok.json", tu_dir);
    json_t *j = file_load_json(p, 0, NULL, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "a")), 5);
    json_decref(j);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_setup, tu_teardown)
    const struct CMUnitTest tests[] = {
        T(test_claim_new),    T(test_claim_empty_existing), T(test_claim_refuses_what_is_there),
        T(test_claim_race),   T(test_replace_special),      T(test_replace_leftover_temporary),
        T(test_create_modes), T(test_open_input_kinds),     T(test_input_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
