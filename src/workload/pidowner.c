/* pidowner: the workload a pid belongs to (see pidowner.h). */
#include "workload/pidowner.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void pidowner_init(struct pidowner *o, const char *proc)
{
    memset(o, 0, sizeof *o);
    o->proc = proc ? proc : "/proc";
    o->gen = 1;
}

void pidowner_next(struct pidowner *o)
{
    size_t k = 0;
    for (size_t i = 0; i < o->n; i++)
        if (o->cache[i].seen >= o->gen)
            o->cache[k++] = o->cache[i];
    o->n = k;
    o->gen++;
}

static ssize_t read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

/* The cgroup v2 path of pid (the "0::" line), relative to the hierarchy's root. */
static bool cgroup_of(const struct pidowner *o, pid_t pid, char *out, size_t cap)
{
    char path[512], buf[4096];
    snprintf(path, sizeof path, "%s/%d/cgroup", o->proc, (int)pid);
    if (read_small(path, buf, sizeof buf) < 0)
        return false;
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, "0::", 3) == 0) {
            snprintf(out, cap, "%s", line + 3);
            return true;
        }
        line = nl ? nl + 1 : NULL;
    }
    return false;
}

/* True when the cgroup rel (relative to the hierarchy's root) is dir or lies below it. */
static bool cgroup_within(const char *rel, const char *dir)
{
    size_t dl = strlen(dir);
    if (dl <= 1)
        return false; /* the root cgroup contains everything */
    return strncmp(rel, dir, dl) == 0 && (rel[dl] == '\0' || rel[dl] == '/');
}

bool pidowner_cgroup_of(const char *proc, pid_t pid, char *out, size_t cap)
{
    struct pidowner o = {.proc = proc ? proc : "/proc"};
    return cgroup_of(&o, pid, out, cap);
}

/* The parent pid and process group of pid from /proc/PID/stat. */
static bool stat_of(const struct pidowner *o, pid_t pid, pid_t *ppid, pid_t *pgrp)
{
    char path[512], buf[1024];
    snprintf(path, sizeof path, "%s/%d/stat", o->proc, (int)pid);
    if (read_small(path, buf, sizeof buf) < 0)
        return false;
    const char *rp = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    if (!rp)
        return false;
    char state;
    int pp, pg;
    if (sscanf(rp + 1, " %c %d %d", &state, &pp, &pg) != 3)
        return false;
    *ppid = pp;
    *pgrp = pg;
    return true;
}

static int owner_of(struct pidowner *o, pid_t pid, const struct pidowner_job *jobs, size_t njobs)
{
    char rel[4096];
    if (cgroup_of(o, pid, rel, sizeof rel)) {
        for (size_t k = 0; k < njobs; k++)
            if (jobs[k].cgroup && cgroup_within(rel, jobs[k].cgroup))
                return (int)k;
    }
    pid_t ppid, pgrp;
    if (!stat_of(o, pid, &ppid, &pgrp))
        return -1;
    for (size_t k = 0; k < njobs; k++)
        if (jobs[k].pid > 0 && pgrp == jobs[k].pid)
            return (int)k;
    pid_t p = pid;
    for (int depth = 0; depth < PIDOWNER_DEPTH && p > 1; depth++) {
        for (size_t k = 0; k < njobs; k++) {
            if (jobs[k].pid > 0 && p == jobs[k].pid)
                return (int)k;
            for (size_t m = 0; m < jobs[k].ntree; m++)
                if (jobs[k].tree[m] == p)
                    return (int)k;
        }
        if (p != pid && !stat_of(o, p, &ppid, &pgrp))
            return -1;
        p = ppid;
    }
    return -1;
}

int pidowner_lookup(struct pidowner *o, pid_t pid, const struct pidowner_job *jobs, size_t njobs)
{
    for (size_t i = 0; i < o->n; i++) {
        if (o->cache[i].pid == pid) {
            o->cache[i].seen = o->gen;
            return o->cache[i].job;
        }
    }
    int job = owner_of(o, pid, jobs, njobs);
    if (o->n < PIDOWNER_CACHE)
        o->cache[o->n++] = (struct pidowner_entry){.pid = pid, .job = job, .seen = o->gen};
    return job;
}
