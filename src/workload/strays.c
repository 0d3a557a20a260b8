/* strays: a child subreaper's adopted processes, ended (see strays.h). */
#include "workload/strays.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/parse.h"
#include "core/timeutil.h"

#define SEEN_MAX 1024 /* pids signalled, to count each once */
#define SCAN_MS  20   /* between scans */

static bool listed(const pid_t *v, size_t n, pid_t pid)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == pid)
            return true;
    return false;
}

/* Reads /proc/PID/stat: comm, state and ppid. 0, or -errno (-ENOENT: gone). */
static int read_stat(int proc_fd, const char *name, char *comm, size_t cap, char *state, long *ppid)
{
    char path[64];
    snprintf(path, sizeof path, "%s/stat", name);
    int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return n < 0 ? -errno : -EINVAL;
    buf[n] = '\0';
    /* "PID (COMM) S PPID ...": comm may hold spaces and parentheses; the last ')' ends it */
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    if (!lp || !rp || rp < lp || rp[1] != ' ' || !rp[2] || rp[3] != ' ')
        return -EINVAL;
    size_t cl = (size_t)(rp - lp - 1);
    if (cl >= cap)
        cl = cap - 1;
    memcpy(comm, lp + 1, cl);
    comm[cl] = '\0';
    *state = rp[2];
    char *end;
    errno = 0;
    *ppid = strtol(rp + 4, &end, 10);
    return errno || end == rp + 4 ? -EINVAL : 0;
}

/*
 * The children of the calling process not in keep: living ones into out (up to cap, all
 * counted), zombies reaped. Returns the living count or -errno.
 */
static int scan(const char *proc_dir, const pid_t *keep, size_t nkeep, struct stray *out,
                size_t cap)
{
    DIR *d = opendir(proc_dir);
    if (!d)
        return -errno;
    int proc_fd = dirfd(d);
    long self = (long)getpid();
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        uint64_t pid;
        if (parse_u64(de->d_name, &pid) < 0 || pid == 0 || pid > INT32_MAX)
            continue;
        char comm[sizeof out->comm], state;
        long ppid;
        if (read_stat(proc_fd, de->d_name, comm, sizeof comm, &state, &ppid) < 0 || ppid != self ||
            listed(keep, nkeep, (pid_t)pid))
            continue;
        if (state == 'Z') {
            waitpid((pid_t)pid, NULL, WNOHANG | __WALL);
            continue;
        }
        if ((size_t)count < cap) {
            out[count].pid = (pid_t)pid;
            memcpy(out[count].comm, comm, sizeof comm);
            out[count].needed_kill = false;
        }
        count++;
    }
    closedir(d);
    return count;
}

int strays_find(const char *proc_dir, const pid_t *keep, size_t nkeep, struct stray *out,
                size_t cap)
{
    return scan(proc_dir, keep, nkeep, out, cap);
}

int strays_end(const char *proc_dir, const pid_t *keep, size_t nkeep, int64_t grace_ns,
               struct strays *out)
{
    memset(out, 0, sizeof *out);
    static pid_t seen[SEEN_MAX]; /* signalled ones (a stray ends here, it is not reentrant) */
    size_t nseen = 0;
    struct stray now[STRAYS_MAX];
    int64_t t0 = time_mono_ns(), kill_at = t0 + (grace_ns > 0 ? grace_ns : 0), stop_at = 0;
    for (;;) {
        int n = scan(proc_dir, keep, nkeep, now, STRAYS_MAX);
        if (n < 0)
            return out->total ? (int)out->total : n;
        if (n == 0)
            break;
        int64_t t = time_mono_ns();
        bool killing = t >= kill_at;
        if (killing && !stop_at)
            stop_at = t + STRAYS_KILL_NS;
        if (stop_at && t >= stop_at)
            break;
        for (int i = 0; i < n && i < STRAYS_MAX; i++) {
            pid_t pid = now[i].pid;
            bool known = listed(seen, nseen, pid);
            if (!known) {
                if (nseen < SEEN_MAX)
                    seen[nseen++] = pid;
                if (out->n < STRAYS_MAX)
                    out->s[out->n++] = now[i];
                out->total++;
            }
            /* SIGTERM once; after the grace period SIGKILL to whatever is still there */
            if (killing || !known)
                kill(pid, killing ? SIGKILL : SIGTERM);
            if (killing)
                for (size_t k = 0; k < out->n; k++)
                    if (out->s[k].pid == pid)
                        out->s[k].needed_kill = true;
            waitpid(pid, NULL, WNOHANG | __WALL);
        }
        if (n > STRAYS_MAX) /* more than a scan holds: the rest die at once */
            kill_at = t;
        struct timespec ts = {0, SCAN_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    return (int)out->total;
}
