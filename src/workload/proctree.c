/* proctree: CPU time of a process tree from /proc (see proctree.h). */
#include "workload/proctree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/parse.h"

int proctree_parse_stat(const char *text, pid_t *ppid, uint64_t *ticks, uint64_t *start)
{
    const char *p = strrchr(text, ')');
    if (!p)
        return -EINVAL;
    p++;
    /* fields after the comm: 3 state, 4 ppid, ... 14 utime 15 stime 16 cutime 17 cstime
     * ... 22 starttime */
    uint64_t f[23] = {0};
    int field = 3;
    while (*p && field <= 22) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        if (field == 3) {
            p++;
        } else {
            bool neg = *p == '-';
            if (neg)
                p++;
            if (*p < '0' || *p > '9')
                return -EINVAL;
            uint64_t v;
            if (!(p = parse_digits_u64(p, &v)))
                return -EINVAL; /* past 64 bits: not the kernel's */
            f[field] = neg ? 0 : v;
        }
        while (*p && *p != ' ')
            p++;
        field++;
    }
    if (field <= 22 || f[4] > (uint64_t)INT32_MAX)
        return -EINVAL; /* a parent pid must be a pid_t */
    *ppid = (pid_t)f[4];
    *ticks = f[14] + f[15] + f[16] + f[17];
    *start = f[22];
    return 0;
}

static int read_stat(int fd, pid_t *ppid, uint64_t *ticks, uint64_t *start)
{
    char buf[1024];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return n < 0 ? -errno : -ESRCH;
    buf[n] = '\0';
    return proctree_parse_stat(buf, ppid, ticks, start);
}

static int find(const struct proctree *t, pid_t pid)
{
    for (int i = 0; i < t->n; i++)
        if (t->m[i].pid == pid)
            return i;
    return -1;
}

static int add(struct proctree *t, pid_t pid, int fd, uint64_t ticks, uint64_t start)
{
    if (t->n >= PROCTREE_MAX) {
        t->dropped++;
        close(fd);
        return -ENOSPC;
    }
    t->m[t->n++] = (struct proctree_member){.pid = pid, .fd = fd, .ticks = ticks, .start = start};
    return 0;
}

static void remove_at(struct proctree *t, int i)
{
    close(t->m[i].fd);
    t->m[i] = t->m[--t->n];
}

static int open_stat(struct proctree *t, pid_t pid)
{
    char rel[32];
    snprintf(rel, sizeof rel, "%d/stat", (int)pid);
    int fd = openat(t->proc_fd, rel, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

static long read_last_pid(const struct proctree *t);

int proctree_init(struct proctree *t, pid_t root, const char *proc_dir, int64_t scan_every_ns)
{
    memset(t, 0, sizeof *t);
    t->clk_tck = sysconf(_SC_CLK_TCK);
    if (t->clk_tck <= 0)
        t->clk_tck = 100;
    t->scan_every_ns = scan_every_ns;
    t->last_scan = -1;
    t->loadavg_fd = -1;
    t->proc_fd = open(proc_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (t->proc_fd < 0)
        return -errno;
    t->loadavg_fd = openat(t->proc_fd, "loadavg", O_RDONLY | O_CLOEXEC);
    t->pid_max = 4194304;
    int pm = openat(t->proc_fd, "sys/kernel/pid_max", O_RDONLY | O_CLOEXEC);
    if (pm >= 0) {
        char buf[32];
        ssize_t n = pread(pm, buf, sizeof buf - 1, 0);
        if (n > 0) {
            buf[n] = '\0';
            /* the kernel's PID_MAX_LIMIT is 4194304: anything else is not pid_max */
            uint64_t v;
            if (parse_u64(buf, &v) == 0 && v > 1 && v <= 4194304)
                t->pid_max = (long)v;
        }
        close(pm);
    }
    t->last_pid = read_last_pid(t);
    int fd = open_stat(t, root);
    if (fd < 0) {
        proctree_done(t); /* a failed init holds nothing */
        return fd;
    }
    pid_t ppid;
    uint64_t ticks, start;
    int r = read_stat(fd, &ppid, &ticks, &start);
    if (r < 0) {
        close(fd);
        proctree_done(t);
        return r;
    }
    return add(t, root, fd, ticks, start);
}

/* The last pid handed out (the 5th field of /proc/loadavg), or -1. */
static long read_last_pid(const struct proctree *t)
{
    if (t->loadavg_fd < 0)
        return -1;
    char buf[128];
    ssize_t n = pread(t->loadavg_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strrchr(buf, ' ');
    if (!p)
        return -1;
    uint64_t v;
    return parse_u64(p + 1, &v) == 0 && v > 0 && v < (uint64_t)t->pid_max ? (long)v : -1;
}

/* Adds pid if its parent is a member (or the adopter). Returns 1 if added. */
static int consider(struct proctree *t, pid_t pid)
{
    if (find(t, pid) >= 0)
        return 0;
    int fd = open_stat(t, pid);
    if (fd < 0)
        return 0;
    pid_t ppid;
    uint64_t ticks, start;
    if (read_stat(fd, &ppid, &ticks, &start) < 0 ||
        (find(t, ppid) < 0 && !(t->adopter > 0 && ppid == t->adopter))) {
        close(fd);
        return 0;
    }
    return add(t, pid, fd, ticks, start) == 0;
}

/* Looks at the pids created after from, up to to (wrapping at pid_max). Returns how many
 * were added, or -1 when the range is too wide to walk (then a full scan is due). */
static int scan_new(struct proctree *t, long from, long to)
{
    long count = to > from ? to - from : (t->pid_max - from) + to;
    if (count > 4096)
        return -1;
    int added = 0;
    /* ascending, so that a parent is usually added before its children; a second pass
     * catches the others */
    for (int pass = 0; pass < 2; pass++) {
        int before = added;
        for (long k = 1, p = from; k <= count; k++) {
            p = p + 1 >= t->pid_max ? 1 : p + 1;
            added += consider(t, (pid_t)p);
        }
        if (added == before)
            break;
    }
    return added;
}

/* One pass over /proc adding processes whose parent is a member. Returns how many. */
static int scan(struct proctree *t)
{
    int dfd = dup(t->proc_fd);
    if (dfd < 0)
        return 0;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0;
    }
    rewinddir(d);
    int added = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        added += consider(t, (pid_t)strtol(de->d_name, NULL, 10));
    }
    closedir(d);
    t->scans++;
    return added;
}

uint64_t proctree_update(struct proctree *t, int64_t now, bool force_scan)
{
    long last = read_last_pid(t);
    bool full =
        force_scan || t->last_scan < 0 || (last < 0 && now - t->last_scan >= t->scan_every_ns);
    if (!full && last >= 0 && t->last_pid >= 0 && last != t->last_pid)
        full = scan_new(t, t->last_pid, last) < 0;
    if (full) {
        /* a second pass catches children listed before their parent was added */
        for (int pass = 0; pass < 4 && scan(t) > 0; pass++)
            ;
        t->last_scan = now;
    }
    t->last_pid = last;
    uint64_t ticks = 0;
    for (int i = 0; i < t->n;) {
        pid_t ppid;
        uint64_t tk, start;
        if (read_stat(t->m[i].fd, &ppid, &tk, &start) < 0) {
            /* gone and reaped: its time now sits in its parent's cutime, or in reaped_ns */
            remove_at(t, i);
            continue;
        }
        if (tk > t->m[i].ticks)
            t->m[i].ticks = tk;
        ticks += t->m[i].ticks;
        i++;
    }
    uint64_t ns = ticks * (1000000000ULL / (uint64_t)t->clk_tck) + t->reaped_ns;
    if (ns > t->total_ns)
        t->total_ns = ns;
    return t->total_ns;
}

void proctree_reaped(struct proctree *t, pid_t pid, const struct rusage *ru)
{
    int i = find(t, pid);
    if (i < 0 && t->adopter <= 0)
        return;
    uint64_t us = (uint64_t)ru->ru_utime.tv_sec * 1000000ULL + (uint64_t)ru->ru_utime.tv_usec +
                  (uint64_t)ru->ru_stime.tv_sec * 1000000ULL + (uint64_t)ru->ru_stime.tv_usec;
    t->reaped_ns += us * 1000ULL;
    if (i >= 0)
        remove_at(t, i);
}

void proctree_done(struct proctree *t)
{
    while (t->n > 0)
        remove_at(t, t->n - 1);
    if (t->loadavg_fd >= 0)
        close(t->loadavg_fd);
    t->loadavg_fd = -1;
    if (t->proc_fd > 0)
        close(t->proc_fd);
    t->proc_fd = -1;
}
