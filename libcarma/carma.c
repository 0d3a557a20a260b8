/*
 * libcarma: the client side of carma's marks socket (carma.h; the protocol is
 * docs/formats.md, "Marks"). libc only.
 */
#include "carma.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MSG_MAX        1024
#define NAME_MAX_BYTES 200

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int conn_fd = -1;
static pid_t conn_pid; /* the process that opened conn_fd */
static bool off;       /* marks are off in this process */
static pid_t off_pid;  /* the process that found them off (a child tries again) */
static char last_error[256];
static pid_t self_pid; /* this process's pid, 0 until known: cleared in a child after fork */

/* The messages sent without waiting (carma_begin_nowait, carma_end_nowait) whose replies are
 * not read yet, in order; and the names of the begins that carma refused, for the end of that
 * name to answer without closing another window of the name */
#define PENDING_MAX 64
#define REFUSED_MAX 16
static struct {
    bool end;
    char name[NAME_MAX_BYTES + 1];
} pending[PENDING_MAX];
static unsigned npending;
static struct {
    char name[NAME_MAX_BYTES + 1];
    char why[160];
} refused[REFUSED_MAX];
static unsigned nrefused;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* fork(): the lock is held across it, so that the child's copy is not left locked by a thread
 * of the parent, and the child forgets the parent's pid (getpid() once, not at every call) */
static void fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

static void fork_child(void)
{
    self_pid = 0;
    npending = nrefused = 0; /* the parent's connection's, not the child's */
    pthread_mutex_unlock(&lock);
}

static void init_once(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Takes the lock (registering the fork handlers the first time). */
static void lock_calls(void)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lock);
}

/* This process's pid. Under lock. */
static pid_t self(void)
{
    if (!self_pid)
        self_pid = getpid();
    return self_pid;
}

/* last_error = the message; with off, marks are off in this process: said once, on stderr */
static void set_error_off(bool go_off, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error_off(bool go_off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    if (!go_off)
        return;
    off = true;
    off_pid = self();
    const char *q = getenv("CARMA_MARKS_QUIET");
    if (!q || strcmp(q, "1") != 0)
        fprintf(stderr, "carma: marks off: %s\n", last_error);
}

/* The connection of this process, opened when needed; -1 when marks are off. Under lock. */
static int connection(void)
{
    pid_t me = self();
    if (off && off_pid == me)
        return -1;
    if (conn_fd >= 0 && conn_pid == me)
        return conn_fd;
    if (conn_fd >= 0) /* the parent's, after fork: not ours to use (nor to close) */
        conn_fd = -1;
    npending = nrefused = 0;
    off = false;
    const char *path = getenv("CARMA_SOCKET");
    if (!path || !*path) {
        set_error_off(
            true, "CARMA_SOCKET is not set (run the program under carma run or carma stat -o DIR)");
        return -1;
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        set_error_off(true, "CARMA_SOCKET=%s: longer than a socket address", path);
        return -1;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        set_error_off(true, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        set_error_off(true, "cannot connect to %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    conn_fd = fd;
    conn_pid = me;
    return fd;
}

/* The connection failed: marks go off. Returns -EIO. Under lock. */
static int lost(int fd, ssize_t n)
{
    set_error_off(true, "carma went away (%s)", n == 0 ? "the socket was closed" : strerror(errno));
    close(fd);
    conn_fd = -1;
    npending = nrefused = 0;
    return -EIO;
}

/* Reads the replies of the messages sent without waiting: the names of the begins carma
 * refused are kept, an end's refusal becomes last_error. Returns 0 or -EIO. Under lock, fd
 * connected. */
static int drain(int fd)
{
    char buf[MSG_MAX + 1];
    for (unsigned k = 0; k < npending; k++) {
        ssize_t n;
        do
            n = recv(fd, buf, sizeof buf - 1, 0);
        while (n < 0 && errno == EINTR);
        if (n <= 0)
            return lost(fd, n);
        buf[n] = '\0';
        if (strncmp(buf, "ok", 2) == 0 && (buf[2] == '\0' || buf[2] == '\t'))
            continue;
        const char *why = strncmp(buf, "error\t", 6) == 0 ? buf + 6 : buf;
        if (pending[k].end) {
            set_error_off(false, "end %s: %s", pending[k].name, why);
            continue;
        }
        if (nrefused == REFUSED_MAX) /* the oldest goes */
            memmove(&refused[0], &refused[1], (REFUSED_MAX - 1) * sizeof refused[0]);
        else
            nrefused++;
        snprintf(refused[nrefused - 1].name, sizeof refused[0].name, "%s", pending[k].name);
        snprintf(refused[nrefused - 1].why, sizeof refused[0].why, "%s", why);
    }
    npending = 0;
    return 0;
}

/* Sends msg and reads the reply into buf (after the pending begins' replies). Returns 0,
 * CARMA_OFF, or -EIO (the connection is then dropped and marks go off). Under lock. */
static int exchange(const char *msg, size_t len, char *buf, size_t cap)
{
    int fd = connection();
    if (fd < 0)
        return CARMA_OFF;
    if (npending && drain(fd) < 0)
        return -EIO;
    ssize_t n = send(fd, msg, len, MSG_NOSIGNAL);
    if (n == (ssize_t)len) {
        do
            n = recv(fd, buf, cap - 1, 0);
        while (n < 0 && errno == EINTR);
    } else {
        n = -1;
    }
    if (n <= 0)
        return lost(fd, n);
    buf[n] = '\0';
    return 0;
}

static bool name_ok(const char *name)
{
    if (!name) {
        set_error_off(false, "no name");
        return false;
    }
    size_t n = strlen(name);
    if (n == 0 || n > NAME_MAX_BYTES) {
        set_error_off(false, "name of %zu bytes (1 to %d)", n, NAME_MAX_BYTES);
        return false;
    }
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            set_error_off(false, "a control character in the name");
            return false;
        }
    return true;
}

/* "op\tname[\ttokens=N][\trequests=N]" */
static size_t counts(char *buf, size_t cap, const char *op, const char *name, long long tokens,
                     long long requests)
{
    int n = snprintf(buf, cap, "%s\t%s", op, name);
    if (tokens >= 0)
        n += snprintf(buf + n, cap - (size_t)n, "\ttokens=%lld", tokens);
    if (requests >= 0)
        n += snprintf(buf + n, cap - (size_t)n, "\trequests=%lld", requests);
    return (size_t)n;
}

/* The value of key in a reply's fields ("k=v" after TABs), or NULL. */
static const char *field(const char *reply, const char *key, char *val, size_t cap)
{
    size_t kl = strlen(key);
    for (const char *p = strchr(reply, '\t'); p; p = strchr(p + 1, '\t')) {
        if (strncmp(p + 1, key, kl) == 0 && p[1 + kl] == '=') {
            const char *v = p + 2 + kl, *end = strchr(v, '\t');
            size_t n = end ? (size_t)(end - v) : strlen(v);
            if (n >= cap)
                n = cap - 1;
            memcpy(val, v, n);
            val[n] = '\0';
            return val;
        }
    }
    return NULL;
}

static double num(const char *reply, const char *key)
{
    char v[64];
    if (!field(reply, key, v, sizeof v) || !*v)
        return NAN;
    return strtod(v, NULL);
}

/* 0 for an "ok" reply; else -EINVAL (-ENOENT for no open window) with the message kept. */
static int verdict(const char *reply)
{
    if (strncmp(reply, "ok", 2) == 0 && (reply[2] == '\0' || reply[2] == '\t'))
        return 0;
    const char *msg = strncmp(reply, "error\t", 6) == 0 ? reply + 6 : reply;
    set_error_off(false, "%s", msg);
    return strncmp(msg, "no open window", 14) == 0 ? -ENOENT : -EINVAL;
}

long long carma_begin(const char *name, long long tokens, long long requests)
{
    if (!name_ok(name))
        return -EINVAL;
    char msg[MSG_MAX], rep[MSG_MAX + 1];
    size_t n = counts(msg, sizeof msg, "begin", name, tokens, requests);
    lock_calls();
    int r = exchange(msg, n, rep, sizeof rep);
    long long id = 0;
    if (r == 0 && (r = verdict(rep)) == 0) {
        char v[32];
        id = field(rep, "id", v, sizeof v) ? strtoll(v, NULL, 10) : 0;
    }
    pthread_mutex_unlock(&lock);
    return r == CARMA_OFF ? 0 : r < 0 ? r : id;
}

int carma_begin_nowait(const char *name, long long tokens, long long requests)
{
    if (!name_ok(name))
        return -EINVAL;
    char msg[MSG_MAX];
    size_t n = counts(msg, sizeof msg, "begin", name, tokens, requests);
    lock_calls();
    int r = 0, fd = connection();
    if (fd < 0)
        r = CARMA_OFF;
    else if (npending == PENDING_MAX && drain(fd) < 0)
        r = -EIO;
    else if (send(fd, msg, n, MSG_NOSIGNAL) != (ssize_t)n)
        r = lost(fd, -1);
    else {
        pending[npending].end = false;
        memcpy(pending[npending++].name, name, strlen(name) + 1);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* A refusal of a begin of name sent without waiting, taken from the list: -EINVAL with
 * last_error saying why; 0 when none. Under lock, after drain. */
static int refusal(const char *name)
{
    for (unsigned k = nrefused; k-- > 0;) {
        if (strcmp(refused[k].name, name) != 0)
            continue;
        set_error_off(false, "begin %s was refused: %s", name, refused[k].why);
        memmove(&refused[k], &refused[k + 1], (nrefused - k - 1) * sizeof refused[0]);
        nrefused--;
        return -EINVAL;
    }
    return 0;
}

int carma_end_nowait(const char *name, long long tokens, long long requests)
{
    if (!name_ok(name))
        return -EINVAL;
    char msg[MSG_MAX];
    size_t n = counts(msg, sizeof msg, "end", name, tokens, requests);
    lock_calls();
    int r = 0, fd = connection();
    if (fd < 0) {
        pthread_mutex_unlock(&lock);
        return CARMA_OFF;
    }
    /* a begin of the name not answered yet: its answer first (there by now, mostly), so that
     * an end never closes another window of the name in place of a refused one */
    bool begun = false;
    for (unsigned k = 0; k < npending && !begun; k++)
        begun = !pending[k].end && strcmp(pending[k].name, name) == 0;
    if ((begun || npending == PENDING_MAX) && drain(fd) < 0)
        r = -EIO;
    if (r == 0 && nrefused)
        r = refusal(name);
    if (r == 0 && send(fd, msg, n, MSG_NOSIGNAL) != (ssize_t)n)
        r = lost(fd, -1);
    if (r == 0) {
        pending[npending].end = true;
        memcpy(pending[npending++].name, name, strlen(name) + 1);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

int carma_end(const char *name, long long tokens, long long requests, struct carma_energy *out)
{
    if (out)
        *out = (struct carma_energy){.t0 = NAN,
                                     .t1 = NAN,
                                     .energy_j = NAN,
                                     .cpu_j = NAN,
                                     .gpu_j = NAN,
                                     .dram_j = NAN,
                                     .method = "none"};
    if (!name_ok(name))
        return -EINVAL;
    char msg[MSG_MAX], rep[MSG_MAX + 1];
    size_t n = counts(msg, sizeof msg, "end", name, tokens, requests);
    lock_calls();
    int r = 0;
    if (npending && conn_fd >= 0 && conn_pid == self() && drain(conn_fd) < 0)
        r = -EIO;
    if (r == 0 && nrefused)
        r = refusal(name);
    if (r == 0)
        r = exchange(msg, n, rep, sizeof rep);
    if (r == 0 && (r = verdict(rep)) == 0 && out) {
        char v[32];
        out->id = field(rep, "id", v, sizeof v) ? strtoull(v, NULL, 10) : 0;
        out->t0 = num(rep, "t0");
        out->t1 = num(rep, "t1");
        out->energy_j = num(rep, "energy_j");
        out->cpu_j = num(rep, "cpu_j");
        out->gpu_j = num(rep, "gpu_j");
        out->dram_j = num(rep, "dram_j");
        if (field(rep, "method", v, sizeof v))
            snprintf(out->method, sizeof out->method, "%s", v);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

int carma_event(const char *name, double value)
{
    if (!name_ok(name))
        return -EINVAL;
    if (!isfinite(value)) {
        set_error_off(false, "the value is not a finite number");
        return -EINVAL;
    }
    char msg[MSG_MAX], rep[MSG_MAX + 1];
    int n = snprintf(msg, sizeof msg, "event\t%s\tvalue=%.17g", name, value);
    lock_calls();
    int r = exchange(msg, (size_t)n, rep, sizeof rep);
    if (r == 0)
        r = verdict(rep);
    pthread_mutex_unlock(&lock);
    return r;
}

const char *carma_last_error(void)
{
    return last_error;
}
