/*
 * Unit tests for core/fsroot: reads below a root directory, error codes, and the
 * CARMA_FAULT hook. Each test builds its own tree under a mkdtemp() directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/fsroot.h"
#include "testutil.h"

/* A test's tree: tu_dir, and a root on it that teardown closes. */
struct tree {
    const char *dir;
    struct fsroot root;
};

static int setup(void **state)
{
    if (tu_setup(state) != 0)
        return -1;
    struct tree *t = calloc(1, sizeof *t);
    if (!t) {
        tu_teardown(state);
        return -1;
    }
    t->dir = tu_dir;
    t->root.dirfd = -1;
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    struct tree *t = *state;
    fsroot_close(&t->root);
    free(t);
    return tu_teardown(state);
}

static void test_open_errors(void **state)
{
    struct tree *t = *state;
    struct fsroot r;
    struct carma_err e = {0};
    char missing[300];
    snprintf(missing, sizeof missing, "%s/nope", t->dir);
    assert_int_equal(fsroot_open(&r, missing, &e), -ENOENT);
    assert_int_equal(e.code, -ENOENT);
    assert_non_null(strstr(e.msg, missing));
    assert_int_equal(r.dirfd, -1);
    fsroot_close(&r);

    tu_put("file", "x");
    char file[300];
    snprintf(file, sizeof file, "%s/file", t->dir);
    memset(&e, 0, sizeof e);
    assert_int_equal(fsroot_open(&r, file, &e), -ENOTDIR);
    assert_non_null(strstr(e.msg, file));

    /* a path that does not fit is refused, not cut to a shorter (existing) one */
    char longpath[5000];
    int n = snprintf(longpath, sizeof longpath, "%s/", t->dir);
    memset(longpath + n, '/', sizeof longpath - (size_t)n - 1);
    longpath[sizeof longpath - 1] = '\0';
    memset(&e, 0, sizeof e);
    assert_int_equal(fsroot_open(&r, longpath, &e), -ENAMETOOLONG);
    assert_int_equal(e.code, -ENAMETOOLONG);
    assert_int_equal(r.dirfd, -1);
}

static void test_close_zeroed_and_twice(void **state)
{
    struct tree *t = *state;
    /* make sure fd 0 is open, then check a zeroed root does not close it */
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(devnull >= 0);
    int saved = dup(0);
    assert_int_equal(dup2(devnull, 0), 0);
    struct fsroot zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    fsroot_close(&zeroed);
    int still_open = fcntl(0, F_GETFD) != -1;
    if (saved >= 0) {
        dup2(saved, 0);
        close(saved);
    }
    close(devnull);
    assert_true(still_open);

    tu_open_root(&t->root, t->dir);
    fsroot_close(&t->root);
    assert_int_equal(t->root.dirfd, -1);
    fsroot_close(&t->root);
    assert_int_equal(t->root.dirfd, -1);
}

static void test_read_text(void **state)
{
    struct tree *t = *state;
    tu_put("sys/class/powercap/intel-rapl:0/energy_uj", "123456789\n");
    tu_put("sys/class/powercap/intel-rapl:0/name", "package-0");
    tu_put("spaces", "  lead and trail \t \r\n\n");
    tu_put("empty", "");
    tu_put("newline-only", "\n");
    tu_open_root(&t->root, t->dir);

    char buf[64];
    assert_int_equal(
        fsroot_read_text(&t->root, "sys/class/powercap/intel-rapl:0/energy_uj", buf, sizeof buf),
        9);
    assert_string_equal(buf, "123456789");
    assert_int_equal(
        fsroot_read_text(&t->root, "sys/class/powercap/intel-rapl:0/name", buf, sizeof buf), 9);
    assert_string_equal(buf, "package-0");
    /* a leading '/' is ignored */
    assert_int_equal(
        fsroot_read_text(&t->root, "/sys/class/powercap/intel-rapl:0/name", buf, sizeof buf), 9);
    assert_string_equal(buf, "package-0");
    assert_int_equal(
        fsroot_read_text(&t->root, "///sys/class/powercap/intel-rapl:0/name", buf, sizeof buf), 9);
    assert_int_equal(fsroot_read_text(&t->root, "spaces", buf, sizeof buf), 16);
    assert_string_equal(buf, "  lead and trail");
    assert_int_equal(fsroot_read_text(&t->root, "empty", buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    assert_int_equal(fsroot_read_text(&t->root, "newline-only", buf, sizeof buf), 0);
    assert_string_equal(buf, "");

    /* a NUL byte anywhere: no text (it would read "12\0 34" as 12) */
    static const struct {
        const char *data;
        size_t len;
    } nul[] = {{"12\0 34\n", 7}, {"12\0", 3}, {"\0", 1}, {"1\n\0", 3}};
    for (size_t k = 0; k < sizeof nul / sizeof nul[0]; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/nul", t->dir);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(nul[k].data, 1, nul[k].len, f), nul[k].len);
        fclose(f);
        assert_int_equal(fsroot_read_text(&t->root, "nul", buf, sizeof buf), -EINVAL);
    }
}

static void test_read_limits(void **state)
{
    struct tree *t = *state;
    tu_put("nine", "123456789");
    tu_put("nine-nl", "12345678\n");
    tu_open_root(&t->root, t->dir);

    char buf[16];
    /* 9 bytes fit in cap 10 (cap - 1 bytes), not in cap 9 */
    assert_int_equal(fsroot_read_text(&t->root, "nine", buf, 10), 9);
    assert_string_equal(buf, "123456789");
    assert_int_equal(fsroot_read_text(&t->root, "nine", buf, 9), -EFBIG);
    assert_int_equal(fsroot_read_text(&t->root, "nine-nl", buf, 10), 8);
    assert_string_equal(buf, "12345678");
    assert_int_equal(fsroot_read_text(&t->root, "nine-nl", buf, 9), -EFBIG);

    char big[5000];
    memset(big, '7', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tu_put("big", big);
    char small[64];
    assert_int_equal(fsroot_read_text(&t->root, "big", small, sizeof small), -EFBIG);
}

/* A FIFO or a device where a sysfs file is meant: refused at open (-ESPIPE), at once, never a
 * blocked open or an endless read (alarm: a hang fails the test instead of stalling it). */
static void test_refuses_fifo_and_devices(void **state)
{
    struct tree *t = *state;
    tu_put("ok", "7\n");
    char p[TU_DIR_MAX + 32];
    snprintf(p, sizeof p, "%s/fifo", t->dir);
    assert_int_equal(mkfifo(p, 0644), 0);
    /* an absolute link resolves below the root (no dev/zero there); a device node that is
     * there (made where mknod is allowed: root) is refused */
    snprintf(p, sizeof p, "%s/zero", t->dir);
    assert_int_equal(symlink("/dev/zero", p), 0);
    snprintf(p, sizeof p, "%s/dev", t->dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/dev/zero", t->dir);
    bool have_dev = mknod(p, S_IFCHR | 0666, makedev(1, 5)) == 0;
    tu_open_root(&t->root, t->dir);
    alarm(10);
    char buf[32];
    assert_int_equal(fsroot_open_file(&t->root, "fifo"), -ESPIPE);
    assert_int_equal(fsroot_read_text(&t->root, "fifo", buf, sizeof buf), -ESPIPE);
    int want = have_dev ? -ESPIPE : -ENOENT;
    assert_int_equal(fsroot_open_file(&t->root, "zero"), want);
    assert_int_equal(fsroot_read_text(&t->root, "/zero", buf, sizeof buf), want);
    /* a regular file opens, and blocking (O_NONBLOCK cleared) */
    int fd = fsroot_open_file(&t->root, "ok");
    assert_true(fd >= 0);
    assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), 1);
    assert_string_equal(buf, "7");
    close(fd);
    alarm(0);
}

static void test_missing_and_exists(void **state)
{
    struct tree *t = *state;
    tu_put("a/b", "1\n");
    tu_open_root(&t->root, t->dir);
    char buf[32];
    assert_int_equal(fsroot_read_text(&t->root, "a/missing", buf, sizeof buf), -ENOENT);
    assert_int_equal(fsroot_read_text(&t->root, "/nope/x", buf, sizeof buf), -ENOENT);
    assert_int_equal(fsroot_open_file(&t->root, "missing"), -ENOENT);
    assert_int_equal(fsroot_read_text(&t->root, "a", buf, sizeof buf), -EISDIR);

    assert_int_equal(fsroot_exists(&t->root, "a/b"), 1);
    assert_int_equal(fsroot_exists(&t->root, "/a/b"), 1);
    assert_int_equal(fsroot_exists(&t->root, "a"), 1);
    assert_int_equal(fsroot_exists(&t->root, "/"), 1);
    assert_int_equal(fsroot_exists(&t->root, "a/c"), 0);
    assert_int_equal(fsroot_exists(&t->root, "b"), 0);
}

static void test_open_file_and_pread(void **state)
{
    struct tree *t = *state;
    tu_put("energy_uj", "100\n");
    tu_open_root(&t->root, t->dir);
    int fd = fsroot_open_file(&t->root, "/energy_uj");
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    char buf[32];
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), 3);
    assert_string_equal(buf, "100");
    /* the file changes: pread at offset 0 sees the new value */
    tu_put("energy_uj", "250000\n");
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), 6);
    assert_string_equal(buf, "250000");
    assert_int_equal(fsroot_pread_text(fd, buf, 1), -EINVAL);
    close(fd);
    assert_int_equal(fsroot_pread_text(-1, buf, sizeof buf), -EBADF);
}

static void test_open_dir(void **state)
{
    struct tree *t = *state;
    tu_put("sys/class/hwmon/hwmon0/name", "k10temp\n");
    tu_put("sys/class/hwmon/hwmon1/name", "amdgpu\n");
    tu_open_root(&t->root, t->dir);
    DIR *d = NULL;
    assert_int_equal(fsroot_open_dir(&t->root, "/sys/class/hwmon", &d), 0);
    assert_non_null(d);
    int seen = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, "hwmon0") == 0)
            seen |= 1;
        else if (strcmp(de->d_name, "hwmon1") == 0)
            seen |= 2;
    }
    closedir(d);
    assert_int_equal(seen, 3);
    d = NULL;
    assert_int_equal(fsroot_open_dir(&t->root, "sys/class/nope", &d), -ENOENT);
    assert_null(d);
    assert_int_equal(fsroot_open_dir(&t->root, "sys/class/hwmon/hwmon0/name", &d), -ENOTDIR);
}

static void test_fault_eacces(void **state)
{
    struct tree *t = *state;
    tu_put("a/b", "1\n");
    tu_put("a/c", "2\n");
    setenv("CARMA_FAULT", "eacces:a/b", 1);
    tu_open_root(&t->root, t->dir);
    char buf[32];
    assert_int_equal(fsroot_open_file(&t->root, "a/b"), -EACCES);
    assert_int_equal(fsroot_open_file(&t->root, "/a/b"), -EACCES);
    assert_int_equal(fsroot_read_text(&t->root, "a/b", buf, sizeof buf), -EACCES);
    assert_int_equal(fsroot_read_text(&t->root, "a/c", buf, sizeof buf), 1);
    assert_string_equal(buf, "2");
    assert_int_equal(fsroot_exists(&t->root, "a/b"), 1);

    /* the hook is read when a root is opened: once unset, the file reads */
    fsroot_close(&t->root);
    unsetenv("CARMA_FAULT");
    tu_open_root(&t->root, t->dir);
    assert_int_equal(fsroot_read_text(&t->root, "a/b", buf, sizeof buf), 1);
}

static void test_fault_enodev_after_reads(void **state)
{
    struct tree *t = *state;
    tu_put("a/b", "17\n");
    setenv("CARMA_FAULT", "enodev@2:a/b", 1);
    tu_open_root(&t->root, t->dir);
    char buf[32];
    int fd = fsroot_open_file(&t->root, "a/b");
    assert_true(fd >= 0);
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), 2);
    assert_string_equal(buf, "17");
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), 2);
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), -ENODEV);
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), -ENODEV);
    close(fd);
}

static void test_fault_counts_reads_of_the_path(void **state)
{
    struct tree *t = *state;
    tu_put("a/b", "17\n");
    tu_put("other", "5\n");
    /* N counts reads of REL however it is read: through read_text (open, read, close) too */
    setenv("CARMA_FAULT", "enodev@2:a/b", 1);
    tu_open_root(&t->root, t->dir);
    char buf[32];
    assert_int_equal(fsroot_read_text(&t->root, "a/b", buf, sizeof buf), 2);
    assert_int_equal(fsroot_read_text(&t->root, "/a/b", buf, sizeof buf), 2);
    assert_int_equal(fsroot_read_text(&t->root, "a/b", buf, sizeof buf), -ENODEV);
    int fd = fsroot_open_file(&t->root, "a/b");
    assert_true(fd >= 0);
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), -ENODEV);
    close(fd);
    /* other files read normally */
    assert_int_equal(fsroot_read_text(&t->root, "other", buf, sizeof buf), 1);
    assert_string_equal(buf, "5");
}

static void test_fault_not_inherited_by_reused_fd(void **state)
{
    struct tree *t = *state;
    tu_put("x", "1\n");
    tu_put("y", "2\n");
    setenv("CARMA_FAULT", "eio@0:x", 1);
    tu_open_root(&t->root, t->dir);
    char buf[32];
    int fdx = fsroot_open_file(&t->root, "x");
    assert_true(fdx >= 0);
    assert_int_equal(fsroot_pread_text(fdx, buf, sizeof buf), -EIO);
    close(fdx);
    /* y gets the number x had: its reads must not fail */
    int fdy = fsroot_open_file(&t->root, "y");
    assert_int_equal(fdy, fdx);
    assert_int_equal(fsroot_pread_text(fdy, buf, sizeof buf), 1);
    assert_string_equal(buf, "2");
    close(fdy);
    /* nor through read_text */
    assert_int_equal(fsroot_read_text(&t->root, "x", buf, sizeof buf), -EIO);
    assert_int_equal(fsroot_read_text(&t->root, "y", buf, sizeof buf), 1);
}

static void test_fault_eio_and_lists(void **state)
{
    struct tree *t = *state;
    tu_put("x", "1\n");
    tu_put("sys/class/powercap/intel-rapl:0/energy_uj", "1000\n");
    tu_put("sys/class/powercap/intel-rapl:1/energy_uj", "2000\n");
    tu_put("p", "3\n");
    setenv("CARMA_FAULT",
           "eio@0:x;enodev@1:/sys/class/powercap/intel-rapl:0/energy_uj;bogus:p;eio@z:p;"
           "eacces:sys/class/powercap/intel-rapl:1/energy_uj",
           1);
    tu_open_root(&t->root, t->dir);
    char buf[32];
    int fd = fsroot_open_file(&t->root, "x");
    assert_true(fd >= 0);
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), -EIO);
    close(fd);

    fd = fsroot_open_file(&t->root, "sys/class/powercap/intel-rapl:0/energy_uj");
    assert_true(fd >= 0);
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), 4);
    assert_string_equal(buf, "1000");
    assert_int_equal(fsroot_pread_text(fd, buf, sizeof buf), -ENODEV);
    close(fd);

    assert_int_equal(fsroot_open_file(&t->root, "sys/class/powercap/intel-rapl:1/energy_uj"),
                     -EACCES);
    /* malformed entries are ignored */
    assert_int_equal(fsroot_read_text(&t->root, "p", buf, sizeof buf), 1);
    assert_int_equal(fsroot_read_text(&t->root, "p", buf, sizeof buf), 1);
}

static void test_fault_reset_on_reopen_of_root(void **state)
{
    struct tree *t = *state;
    tu_put("x", "1\n");
    setenv("CARMA_FAULT", "eio@1:x", 1);
    tu_open_root(&t->root, t->dir);
    char buf[32];
    assert_int_equal(fsroot_read_text(&t->root, "x", buf, sizeof buf), 1);
    assert_int_equal(fsroot_read_text(&t->root, "x", buf, sizeof buf), -EIO);
    fsroot_close(&t->root);
    /* re-reading the hook starts the count again */
    tu_open_root(&t->root, t->dir);
    assert_int_equal(fsroot_read_text(&t->root, "x", buf, sizeof buf), 1);
    assert_int_equal(fsroot_read_text(&t->root, "x", buf, sizeof buf), -EIO);
}

/* A symbolic link rel below tu_dir with text target. */
static void put_link(const char *rel, const char *target)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    tu_mkdirs(rel);
    assert_int_equal(symlink(target, path), 0);
}

/*
 * Every path resolves below the root (tu_dir/root), links included: the tree beside it
 * (tu_dir/outside) and the host's own /etc/passwd are never reached. walk: through the
 * component-by-component fallback instead of openat2.
 */
static void check_links_stay_in_root(struct tree *t, bool walk)
{
    if (walk)
        setenv("CARMA_FSROOT_RESOLVE", "walk", 1);
    else
        unsetenv("CARMA_FSROOT_RESOLVE");
    char root[600], outside[600];
    snprintf(root, sizeof root, "%s/root", t->dir);
    snprintf(outside, sizeof outside, "%s/outside/secret", t->dir);
    tu_put("outside/secret", "host secret\n");
    tu_put("root/sys/devices/platform/acpi/hwmon/hwmon0/name", "power_meter\n");
    tu_put("root/sys/devices/platform/acpi/hwmon/hwmon0/power1_average", "1000\n");
    /* as sysfs has them: relative links into devices/ */
    put_link("root/sys/class/hwmon/hwmon0", "../../devices/platform/acpi/hwmon/hwmon0");
    put_link("root/sys/devices/platform/acpi/hwmon/hwmon0/device/power1_oem_info", "/etc/passwd");
    put_link("root/sys/devices/platform/acpi/hwmon/hwmon0/device/power2_oem_info", outside);
    put_link("root/a/b/up", "../../../outside/secret"); /* tu_dir/outside/secret */
    put_link("root/a/b/updir", "../../../outside");
    put_link("root/abs-devices", "/sys/devices");
    put_link("root/loop", "loop");
    put_link("root/chain1", "chain2/");
    put_link("root/chain2", "/a/./b/../b");
    tu_open_root(&t->root, root);

    char buf[64];
    /* a relative link inside the root works, for files and directories */
    assert_int_equal(fsroot_read_text(&t->root, "sys/class/hwmon/hwmon0/name", buf, sizeof buf),
                     11);
    assert_string_equal(buf, "power_meter");
    DIR *d = NULL;
    assert_int_equal(fsroot_open_dir(&t->root, "sys/class/hwmon/hwmon0", &d), 0);
    int seen = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        seen += strcmp(de->d_name, "power1_average") == 0;
    closedir(d);
    assert_int_equal(seen, 1);

    /* an absolute link starts again at the root: ROOT/etc/passwd, absent */
    const char *oem = "sys/class/hwmon/hwmon0/device/power1_oem_info";
    assert_int_equal(fsroot_read_text(&t->root, oem, buf, sizeof buf), -ENOENT);
    assert_int_equal(fsroot_open_file(&t->root, oem), -ENOENT);
    assert_int_equal(fsroot_exists(&t->root, oem), 0);
    assert_int_equal(fsroot_read_text(&t->root, "sys/class/hwmon/hwmon0/device/power2_oem_info",
                                      buf, sizeof buf),
                     -ENOENT);
    /* ".." never climbs above the root, in a link or in the path given */
    assert_int_equal(fsroot_read_text(&t->root, "a/b/up", buf, sizeof buf), -ENOENT);
    assert_int_equal(fsroot_read_text(&t->root, "../outside/secret", buf, sizeof buf), -ENOENT);
    assert_int_equal(fsroot_read_text(&t->root, "a/../../outside/secret", buf, sizeof buf),
                     -ENOENT);
    assert_int_equal(fsroot_open_dir(&t->root, "a/b/updir", &d), -ENOENT);
    assert_int_equal(fsroot_exists(&t->root, "a/b/up"), 0);
    assert_int_equal(fsroot_exists(&t->root, "../outside"), 0);
    /* ".." at the root is the root */
    assert_int_equal(fsroot_exists(&t->root, "../../a/b"), 1);
    assert_int_equal(fsroot_open_dir(&t->root, "..", &d), 0);
    closedir(d);

    /* the same names once the root holds them: each is read from inside */
    tu_put("root/etc/passwd", "inside passwd\n");
    tu_put("root/outside/secret", "inside secret\n");
    char own[600];
    snprintf(own, sizeof own, "root%s", outside);
    tu_put(own, "inside secret 2\n");
    assert_int_equal(fsroot_read_text(&t->root, oem, buf, sizeof buf), 13);
    assert_string_equal(buf, "inside passwd");
    assert_int_equal(fsroot_exists(&t->root, oem), 1);
    assert_int_equal(fsroot_read_text(&t->root, "sys/class/hwmon/hwmon0/device/power2_oem_info",
                                      buf, sizeof buf),
                     15);
    assert_string_equal(buf, "inside secret 2");
    assert_int_equal(fsroot_read_text(&t->root, "a/b/up", buf, sizeof buf), 13);
    assert_string_equal(buf, "inside secret");
    assert_int_equal(fsroot_read_text(&t->root, "a/b/updir/secret", buf, sizeof buf), 13);
    assert_int_equal(fsroot_read_text(&t->root, "../outside/secret", buf, sizeof buf), 13);
    assert_string_equal(buf, "inside secret");

    /* an absolute link to a directory, links to links, a trailing '/' and "." in a link */
    assert_int_equal(
        fsroot_read_text(&t->root, "abs-devices/platform/acpi/hwmon/hwmon0/name", buf, sizeof buf),
        11);
    assert_int_equal(fsroot_exists(&t->root, "chain1/up"), 1);
    assert_int_equal(fsroot_read_text(&t->root, "chain1/up", buf, sizeof buf), 13);
    assert_string_equal(buf, "inside secret");
    /* a loop ends in ELOOP; a file used as a directory in ENOTDIR */
    assert_int_equal(fsroot_open_file(&t->root, "loop"), -ELOOP);
    assert_int_equal(fsroot_open_file(&t->root, "etc/passwd/x"), -ENOTDIR);
    assert_int_equal(fsroot_open_dir(&t->root, "etc/passwd", &d), -ENOTDIR);
    unsetenv("CARMA_FSROOT_RESOLVE");
}

static void test_links_stay_in_root(void **state)
{
    check_links_stay_in_root(*state, false);
}

static void test_links_stay_in_root_walk(void **state)
{
    check_links_stay_in_root(*state, true);
}

/* The walk's own limits: a path deeper than it follows, and the name length. */
static void test_walk_long_paths(void **state)
{
    struct tree *t = *state;
    setenv("CARMA_FSROOT_RESOLVE", "walk", 1);
    char rel[1200] = "";
    size_t n = 0;
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(rel + n, sizeof rel - n, "d/");
    snprintf(rel + n, sizeof rel - n, "f");
    tu_put(rel, "7\n");
    tu_open_root(&t->root, t->dir);
    char buf[16];
    assert_int_equal(fsroot_read_text(&t->root, rel, buf, sizeof buf), 1);
    assert_string_equal(buf, "7");
    char name[300];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    assert_int_equal(fsroot_open_file(&t->root, name), -ENAMETOOLONG);
    unsetenv("CARMA_FSROOT_RESOLVE");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_open_errors),
        T(test_close_zeroed_and_twice),
        T(test_read_text),
        T(test_read_limits),
        T(test_missing_and_exists),
        T(test_refuses_fifo_and_devices),
        T(test_open_file_and_pread),
        T(test_open_dir),
        T(test_fault_eacces),
        T(test_fault_enodev_after_reads),
        T(test_fault_counts_reads_of_the_path),
        T(test_fault_not_inherited_by_reused_fd),
        T(test_fault_eio_and_lists),
        T(test_fault_reset_on_reopen_of_root),
        T(test_links_stay_in_root),
        T(test_links_stay_in_root_walk),
        T(test_walk_long_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
