/* supervise: a killed carma's workloads are killed too (see supervise.h). */
#include "workload/supervise.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fmt.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* Linux 5.3, every architecture */
#endif
#ifndef SYS_close_range
#define SYS_close_range 436 /* Linux 5.9 */
#endif

/* One message from carma: op 'W' (watch pgid), 'F' (forget pgid) or 'Q' (stop). */
struct sup_msg {
    int32_t op;
    int32_t pid;
};

/* ---- the supervisor's side: async-signal-safe only ---- */

struct sup_state {
    pid_t carma;
    int rfd, pidfd;
    bool have_base;
    char base[sizeof((struct cgroup_dir *)0)->path];
    pid_t groups[SUPERVISE_GROUPS_MAX];
    size_t ngroups;
    char hint[SUPERVISE_HINT_MAX]; /* the line said after carma's death ("" for none) */
};

static char sup_hint[SUPERVISE_HINT_MAX];

static void put(char *buf, size_t cap, size_t *len, const char *s)
{
    while (*s && *len + 1 < cap)
        buf[(*len)++] = *s++;
    buf[*len] = '\0';
}

static void put_u64(char *buf, size_t cap, size_t *len, uint64_t v)
{
    char num[24];
    size_t n = fmt_u64(num, v);
    num[n] = '\0';
    put(buf, cap, len, num);
}

/* dir + "/" + name into out; false when it does not fit. */
static bool join(char *out, size_t cap, const char *dir, const char *name)
{
    size_t len = 0;
    put(out, cap, &len, dir);
    put(out, cap, &len, "/");
    put(out, cap, &len, name);
    return len + 1 < cap;
}

static void nap_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Applies the messages in buf[0..n); returns true when one said stop. */
static bool apply(struct sup_state *st, const struct sup_msg *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (m[i].op == 'Q')
            return true;
        if (m[i].op == 'W' && m[i].pid > 0 && st->ngroups < SUPERVISE_GROUPS_MAX)
            st->groups[st->ngroups++] = m[i].pid;
        if (m[i].op == 'F')
            for (size_t k = 0; k < st->ngroups; k++)
                if (st->groups[k] == m[i].pid) {
                    st->groups[k] = st->groups[--st->ngroups];
                    break;
                }
    }
    return false;
}

/* Reads the messages waiting (one at most when blocking); returns 1 on stop, 0 at end of file
 * (or on an error), 2 when more may come. */
static int drain(struct sup_state *st, bool nonblocking)
{
    for (;;) {
        struct sup_msg m;
        ssize_t r = read(st->rfd, &m, sizeof m); /* a datagram each (SOCK_SEQPACKET) */
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return 2;
        if (r <= 0)
            return 0;
        if (r == (ssize_t)sizeof m && apply(st, &m, 1))
            return 1;
        if (!nonblocking)
            return 2;
    }
}

/* SIGKILL to every pid listed in the cgroup.procs of dir; returns how many. */
static int kill_procs(const char *dir)
{
    char path[sizeof((struct cgroup_dir *)0)->path + 32];
    if (!join(path, sizeof path, dir, "cgroup.procs"))
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[4096];
    int count = 0;
    uint64_t pid = 0;
    bool digits = false;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] >= '0' && buf[i] <= '9') {
                pid = pid * 10 + (uint64_t)(buf[i] - '0');
                digits = pid < (1u << 30);
            } else {
                if (digits && pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
                    count++;
                pid = 0;
                digits = false;
            }
        }
    }
    if (digits && pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
        count++;
    close(fd);
    return count;
}

/* Calls fn on each child cgroup (subdirectory) of dir, then on dir itself. */
static void each_cgroup(const char *dir, int (*fn)(const char *))
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        char buf[4096];
        long n;
        while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
            for (long off = 0; off < n;) {
                struct dirent64 *d = (struct dirent64 *)(buf + off);
                off += d->d_reclen;
                if (d->d_type != DT_DIR || strcmp(d->d_name, ".") == 0 ||
                    strcmp(d->d_name, "..") == 0)
                    continue;
                char sub[sizeof((struct cgroup_dir *)0)->path];
                if (join(sub, sizeof sub, dir, d->d_name))
                    fn(sub);
            }
        }
        close(dfd);
    }
    fn(dir);
}

/* 1 when a process is in the cgroup dir or below it, 0 when none, -1 when unknown. */
static int populated(const char *dir)
{
    char path[sizeof((struct cgroup_dir *)0)->path + 32];
    if (!join(path, sizeof path, dir, "cgroup.events"))
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strstr(buf, "populated ");
    return p ? p[10] != '0' : -1;
}

static int remove_dir(const char *dir)
{
    return rmdir(dir);
}

/* Kills what carma left and removes its cgroups; msg gets the line to say ("" for none). */
static void sup_cleanup(struct sup_state *st, char *msg, size_t cap)
{
    int groups = 0;
    for (size_t k = 0; k < st->ngroups; k++)
        if (kill(-st->groups[k], SIGKILL) == 0)
            groups++;
    bool cg_killed = false, cg_removed = false, cg_held = false;
    if (st->have_base) {
        cg_held = populated(st->base) != 0;
        char path[sizeof st->base + 32];
        int fd = join(path, sizeof path, st->base, "cgroup.kill") ? open(path, O_WRONLY | O_CLOEXEC)
                                                                  : -1;
        bool by_kill = fd >= 0 && write(fd, "1", 1) == 1;
        if (fd >= 0)
            close(fd);
        int64_t deadline = mono_ns() + SUPERVISE_DRAIN_NS;
        for (;;) {
            if (!by_kill)
                each_cgroup(st->base, kill_procs);
            int p = populated(st->base);
            if (p == 0) {
                cg_killed = true;
                break;
            }
            if (p < 0 || mono_ns() >= deadline)
                break;
            nap_ms(10);
        }
        each_cgroup(st->base, remove_dir);
        cg_removed = access(st->base, F_OK) < 0;
    }
    size_t len = 0;
    msg[0] = '\0';
    if (!groups && !cg_held)
        return; /* nothing was left running */
    put(msg, cap, &len, "carma: carma (pid ");
    put_u64(msg, cap, &len, (uint64_t)st->carma);
    put(msg, cap, &len, ") ended with its workloads running: SIGKILL to ");
    put_u64(msg, cap, &len, (uint64_t)groups);
    put(msg, cap, &len, groups == 1 ? " process group" : " process groups");
    if (st->have_base) {
        put(msg, cap, &len, cg_killed ? ", every process of cgroup " : ", cgroup ");
        put(msg, cap, &len, st->base);
        put(msg, cap, &len,
            cg_killed ? (cg_removed ? " (removed)" : " (could not be removed)")
                      : " still holds processes");
    }
    put(msg, cap, &len, "\n");
    if (st->hint[0]) {
        put(msg, cap, &len, "carma: ");
        put(msg, cap, &len, st->hint);
        put(msg, cap, &len, "\n");
    }
}

/* Closes every fd from 3 up but a and b (either may be -1). */
static void close_except(int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    if (lo < 0)
        lo = hi;
    unsigned from = 3;
    int keep[2] = {lo, hi};
    for (int i = 0; i < 2; i++) {
        if (keep[i] < 3 || (unsigned)keep[i] < from)
            continue;
        if ((unsigned)keep[i] > from &&
            syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0) < 0)
            for (unsigned fd = from; fd < (unsigned)keep[i]; fd++)
                close((int)fd);
        from = (unsigned)keep[i] + 1;
    }
    if (syscall(SYS_close_range, from, ~0U, 0) < 0)
        for (unsigned fd = from; fd < 4096; fd++)
            close((int)fd);
}

/* The supervisor itself, in the grandchild; never returns. */
static void sup_main(struct sup_state *st)
{
    setsid(); /* out of carma's process group and session: no terminal signal reaches it */
    prctl(PR_SET_NAME, "carma-supervise", 0, 0, 0);
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGPIPE, SIGTSTP,
                        SIGTTIN, SIGTTOU, SIGXFSZ, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &ign, NULL);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    /* nothing of carma's kept open (its end of the socket above all) but stderr */
    close_except(st->rfd, st->pidfd);
    bool stop = false;
    for (;;) {
        struct pollfd p[2] = {{.fd = st->rfd, .events = POLLIN},
                              {.fd = st->pidfd, .events = POLLIN}};
        int k = poll(p, st->pidfd >= 0 ? 2 : 1, -1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            break;
        if (p[0].revents) {
            int d = drain(st, false);
            if (d != 2) {
                stop = d == 1;
                break;
            }
        }
        if (st->pidfd >= 0 && p[1].revents) {
            /* carma has exited: what it said before is in the socket */
            fcntl(st->rfd, F_SETFL, O_NONBLOCK);
            stop = drain(st, true) == 1;
            break;
        }
    }
    if (!stop) {
        char msg[sizeof st->base + SUPERVISE_HINT_MAX + 256];
        sup_cleanup(st, msg, sizeof msg);
        if (msg[0]) {
            ssize_t w = write(2, msg, strlen(msg));
            (void)w;
        }
    }
    _exit(0);
}

/* ---- carma's side ---- */

void supervisor_hint(const char *line)
{
    snprintf(sup_hint, sizeof sup_hint, "%s", line ? line : "");
}

int supervisor_start(struct supervisor *s, const struct cgroup_dir *base, struct carma_err *e)
{
    s->fd = -1;
    s->pid = 0;
    static struct sup_state st; /* copied into the supervisor by fork */
    memset(&st, 0, sizeof st);
    st.carma = getpid();
    memcpy(st.hint, sup_hint, sizeof st.hint);
    st.have_base = base && base->path[0];
    if (st.have_base)
        memcpy(st.base, base->path, sizeof st.base);
    int pfd[2]; /* a socket, not a pipe: carma's sends never raise SIGPIPE (MSG_NOSIGNAL) */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pfd) < 0)
        return carma_err_set(e, -errno, "cannot make the supervisor's socket: %s", strerror(errno));
    st.rfd = pfd[0];
    st.pidfd = (int)syscall(SYS_pidfd_open, st.carma, 0); /* -1 before Linux 5.3: EOF only */
    int sync[2];
    if (pipe2(sync, O_CLOEXEC) < 0) {
        int r = -errno;
        close(pfd[0]);
        close(pfd[1]);
        if (st.pidfd >= 0)
            close(st.pidfd);
        return carma_err_set(e, r, "cannot make the supervisor's pipe: %s", strerror(-r));
    }
    pid_t mid = fork();
    if (mid == 0) {
        /* the intermediate: the supervisor is its child, and orphaned at once */
        close(pfd[1]);
        close(sync[0]);
        pid_t sup = fork();
        if (sup == 0) {
            close(sync[1]);
            sup_main(&st);
        }
        int32_t v = (int32_t)sup;
        ssize_t w = write(sync[1], &v, sizeof v);
        _exit(w == (ssize_t)sizeof v && sup > 0 ? 0 : 1);
    }
    int r = mid < 0 ? -errno : 0;
    close(pfd[0]);
    close(sync[1]);
    if (st.pidfd >= 0)
        close(st.pidfd);
    int32_t sup = 0;
    if (mid > 0) {
        ssize_t n;
        do
            n = read(sync[0], &sup, sizeof sup);
        while (n < 0 && errno == EINTR);
        int ws = 0;
        while (waitpid(mid, &ws, 0) < 0 && errno == EINTR)
            ;
        if (n != (ssize_t)sizeof sup || sup <= 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
            r = -ECHILD;
    }
    close(sync[0]);
    if (r < 0) {
        close(pfd[1]);
        return carma_err_set(e, r, "cannot start the supervisor: %s", strerror(-r));
    }
    s->fd = pfd[1];
    s->pid = (pid_t)sup;
    return 0;
}

static int send_msg(struct supervisor *s, int op, pid_t pid)
{
    if (!s || s->fd < 0)
        return 0;
    struct sup_msg m = {.op = op, .pid = (int32_t)pid};
    ssize_t w;
    do
        w = send(s->fd, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT); /* never waits for it */
    while (w < 0 && errno == EINTR);
    return w == (ssize_t)sizeof m ? 0 : -(w < 0 ? errno : EIO);
}

int supervisor_watch(struct supervisor *s, pid_t pgid)
{
    return send_msg(s, 'W', pgid);
}

int supervisor_forget(struct supervisor *s, pid_t pgid)
{
    return send_msg(s, 'F', pgid);
}

void supervisor_stop(struct supervisor *s)
{
    if (!s || s->fd < 0)
        return;
    send_msg(s, 'Q', 0);
    close(s->fd);
    s->fd = -1;
    s->pid = 0;
}
