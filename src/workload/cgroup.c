/* cgroup: one cgroup v2 per workload (see cgroup.h). */
#include "workload/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fmt.h"
#include "core/parse.h"

/* Finds the cgroup2 mount point in /proc/self/mountinfo. */
static int find_mount(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -errno;
    char line[4096];
    int r = -ENOENT;
    while (fgets(line, sizeof line, f)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
        char *sep = strstr(line, " - ");
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
            continue;
        char root[1024], mnt[2048];
        if (sscanf(line, "%*s %*s %*s %1023s %2047s", root, mnt) != 2)
            continue;
        snprintf(buf, cap, "%s", mnt);
        r = 0;
        break;
    }
    fclose(f);
    return r;
}

/* The calling process's cgroup v2 path ("0::/path" in /proc/self/cgroup). */
static int own_path(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return -errno;
    char line[4096];
    int r = -ENOENT;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) != 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        snprintf(buf, cap, "%s", line + 3);
        r = 0;
        break;
    }
    fclose(f);
    return r;
}

static void close_all(struct cgroup_dir *g)
{
    int *fds[] = {&g->procs_fd, &g->stat_fd, &g->events_fd, &g->kill_fd, &g->dirfd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

static int open_files(struct cgroup_dir *g, struct carma_err *e)
{
    g->dirfd = open(g->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g->dirfd < 0)
        return carma_err_set(e, -errno, "cannot open %s: %s", g->path, strerror(errno));
    g->procs_fd = openat(g->dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    g->stat_fd = openat(g->dirfd, "cpu.stat", O_RDONLY | O_CLOEXEC);
    g->events_fd = openat(g->dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
    g->kill_fd = openat(g->dirfd, "cgroup.kill", O_WRONLY | O_CLOEXEC);
    if (g->procs_fd < 0 || g->stat_fd < 0 || g->events_fd < 0) {
        int err = errno;
        close_all(g);
        return carma_err_set(e, -err, "%s: cannot open cgroup.procs, cpu.stat or cgroup.events: %s",
                             g->path, strerror(err));
    }
    return 0;
}

static void init_dir(struct cgroup_dir *g)
{
    memset(g, 0, sizeof *g);
    g->dirfd = g->procs_fd = g->stat_fd = g->events_fd = g->kill_fd = -1;
}

int cgroup_base_create(struct cgroup_dir *ret, struct carma_err *e)
{
    init_dir(ret);
    char mnt[2048], own[2048];
    int r = find_mount(mnt, sizeof mnt);
    if (r < 0)
        return carma_err_set(e, r, "no cgroup v2 hierarchy is mounted (/proc/self/mountinfo)");
    r = own_path(own, sizeof own);
    if (r < 0)
        return carma_err_set(e, r,
                             "this process is in no cgroup v2 (/proc/self/cgroup has no 0:: line)");
    /* never an existing directory: one left by a carma that was killed (its processes may
     * still run there) under a pid now reused is not this run's */
    const char *sep = own[strlen(own) - 1] == '/' ? "" : "/";
    for (int k = 1;; k++) {
        char name[48];
        if (k == 1)
            snprintf(name, sizeof name, "carma-%d", (int)getpid());
        else
            snprintf(name, sizeof name, "carma-%d-%d", (int)getpid(), k);
        snprintf(ret->path, sizeof ret->path, "%s%s%s%s", mnt, own, sep, name);
        snprintf(ret->rel, sizeof ret->rel, "%s%s%s", own, sep, name);
        if (mkdir(ret->path, 0755) == 0)
            break;
        if (errno != EEXIST || k == CGROUP_BASE_TRIES)
            return carma_err_set(
                e, -errno, "cannot create cgroup %s: %s%s", ret->path, strerror(errno),
                errno == EACCES || errno == EPERM || errno == EROFS
                    ? " (run as root, or delegate a cgroup subtree to this user)"
                : errno == EEXIST ? " (and every other name tried: cgroups of runs that were "
                                    "killed are left there)"
                                  : "");
    }
    r = open_files(ret, e);
    if (r < 0)
        rmdir(ret->path);
    return r;
}

int cgroup_child_create(const struct cgroup_dir *parent, const char *name, struct cgroup_dir *ret,
                        struct carma_err *e)
{
    init_dir(ret);
    if (strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return carma_err_set(e, -EINVAL, "bad cgroup name '%s'", name);
    snprintf(ret->path, sizeof ret->path, "%s/%s", parent->path, name);
    snprintf(ret->rel, sizeof ret->rel, "%s/%s", parent->rel, name);
    if (mkdirat(parent->dirfd, name, 0755) < 0)
        return carma_err_set(e, -errno, "cannot create cgroup %s: %s", ret->path,
                             strerror(errno)); /* EEXIST too: never a cgroup in use */
    int r = open_files(ret, e);
    if (r < 0)
        unlinkat(parent->dirfd, name, AT_REMOVEDIR);
    return r;
}

int cgroup_enter(const struct cgroup_dir *g, pid_t pid)
{
    char buf[24];
    size_t n = fmt_u64(buf, (uint64_t)(pid > 0 ? pid : 0)); /* no locale, no allocation */
    buf[n++] = '\n';
    return write(g->procs_fd, buf, n) == (ssize_t)n ? 0 : -errno;
}

/* Reads "key value" lines of an fd and returns the value of key. */
static int read_key(int fd, const char *key, uint64_t *ret)
{
    char buf[1024];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    size_t kl = strlen(key);
    for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
            char val[32];
            size_t vl = strcspn(p + kl + 1, "\n");
            if (vl >= sizeof val)
                return -EINVAL;
            memcpy(val, p + kl + 1, vl);
            val[vl] = '\0';
            return parse_u64(val, ret);
        }
    }
    return -ENOENT;
}

int cgroup_usage_ns(const struct cgroup_dir *g, uint64_t *ret)
{
    uint64_t us;
    int r = read_key(g->stat_fd, "usage_usec", &us);
    if (r < 0)
        return r;
    *ret = us * 1000ULL;
    return 0;
}

int cgroup_populated(const struct cgroup_dir *g)
{
    uint64_t v;
    int r = read_key(g->events_fd, "populated", &v);
    return r < 0 ? r : v != 0;
}

int cgroup_signal(const struct cgroup_dir *g, int sig)
{
    if (sig == SIGKILL && g->kill_fd >= 0 && write(g->kill_fd, "1", 1) == 1)
        return 1;
    int fd = openat(g->dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    int count = 0;
    for (char *p = strtok(buf, "\n"); p; p = strtok(NULL, "\n")) {
        uint64_t pid;
        /* a pid that no pid_t holds would wrap, to -1 (every process) for 4294967295 */
        if (parse_u64(p, &pid) == 0 && pid > 0 && pid <= (uint64_t)INT32_MAX &&
            kill((pid_t)pid, sig) == 0)
            count++;
    }
    return count;
}

int cgroup_remove(struct cgroup_dir *g)
{
    close_all(g);
    if (!g->path[0])
        return 0;
    if (rmdir(g->path) < 0)
        return -errno;
    g->path[0] = '\0';
    return 0;
}
