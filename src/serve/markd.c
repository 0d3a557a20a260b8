/*
 * markd: the marks socket (see markd.h; the protocol is docs/formats.md, "Marks").
 */
#include "serve/markd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/csv.h"
#include "core/fmt.h"
#include "core/journal.h"
#include "core/timeutil.h"
#include "serve/markproto.h"
#include "workload/proctree.h"

#define MARKS_HEADER                                                                               \
    "schema_version,event,id,name,timestamp_unix,pid,workload,tokens,requests,value\r\n"

/* the node's energy so far: [0] the node, then cpu (cpu and soc channels), gpu, dram */
enum { E_NODE, E_CPU, E_GPU, E_DRAM, E_N };
static const char *const e_key[E_N] = {"energy_j", "cpu_j", "gpu_j", "dram_j"};

struct snap {
    int64_t real_ns; /* the tick's realtime; 0: none yet */
    double j[E_N];   /* energy since the first reading */
    double w[E_N];   /* power over the last tick (0 when unknown) */
    bool have[E_N];  /* a channel of that kind is in the node's figure */
    bool estimated;  /* a model's channel is in it */
};

struct window {
    uint64_t id;
    char name[MARKD_NAME_MAX + 1];
    int64_t t0;                 /* realtime ns of the begin */
    double j0[E_N];             /* the energy at the begin */
    long long tokens, requests; /* -1: not given */
};

struct client {
    int fd;
    pid_t pid;
    char job[64]; /* the pid's job, once found ("" until then: a root may be named later) */
};

struct root {
    pid_t pid;
    char name[64];
};

struct markd {
    char dir[PATH_MAX];
    char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char link[PATH_MAX + 16]; /* DIR/carma.sock when it is a link to sock, else "" */
    char tmpdir[PATH_MAX];    /* the private directory of sock, else "" */
    void (*warn)(void *ctx, const char *msg);
    void *ctx;
    char version[32];
    bool group_set; /* the socket is its group's too (0660) */
    gid_t gid;
    int lfd;     /* the listening socket */
    int stop[2]; /* a pipe: the thread stops when it is readable */
    pthread_t thread;
    bool running;
    struct journal *csv; /* marks.csv, opened at the first mark */
    bool csv_failed;     /* it could not be created (said once) */

    /* the sampling thread's only: the node's channels (sampler_select_node), chosen once */
    int node[CHANNELS_MAX];
    size_t nnode;
    bool have_node;

    pthread_mutex_t lock; /* snap, roots; open and nopen where they change (markd's thread) and
                             where another thread reads them (markd_window_energy) */
    struct snap snap;
    struct root roots[MARKD_ROOTS_MAX];
    size_t nroots;
    struct window *open; /* MARKD_OPEN_MAX */
    size_t nopen;

    /* markd's thread only (and markd_stop after the join) */
    struct client clients[MARKD_CLIENTS_MAX];
    size_t nclients;
    uint64_t next_id;
    bool warned_full;
    uint64_t n_ended, n_events; /* under lock */
};

static void say(struct markd *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct markd *m, const char *fmt, ...)
{
    if (!m->warn)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    m->warn(m->ctx, buf);
}

/* ---- the energy so far ---- */

void markd_publish_sampler(struct markd *m, const struct sampler *s)
{
    if (!m)
        return;
    if (!m->have_node) { /* the channels are probed once: their choice stays */
        m->nnode = sampler_select_node(s, m->node);
        m->have_node = true;
    }
    struct snap sn = {.real_ns = s->real_now};
    for (size_t k = 0; k < m->nnode; k++) {
        const struct channel *ch = &s->set.ch[m->node[k]];
        const struct chan_state *st = &s->st[m->node[k]];
        int kind = ch->kind == KIND_CPU || ch->kind == KIND_SOC ? E_CPU
                   : ch->kind == KIND_GPU                       ? E_GPU
                   : ch->kind == KIND_DRAM                      ? E_DRAM
                                                                : -1;
        double w = isfinite(st->watts) ? st->watts : 0.0;
        sn.j[E_NODE] += st->energy_j;
        sn.w[E_NODE] += w;
        sn.have[E_NODE] = true;
        if (kind >= 0) {
            sn.j[kind] += st->energy_j;
            sn.w[kind] += w;
            sn.have[kind] = true;
        }
        if (ch->method == METHOD_ESTIMATED)
            sn.estimated = true;
    }
    pthread_mutex_lock(&m->lock);
    m->snap = sn;
    pthread_mutex_unlock(&m->lock);
}

/* The energy so far at realtime t: the last tick's, its power carried to t. */
static void energy_at(struct markd *m, int64_t t, double *j, struct snap *out)
{
    pthread_mutex_lock(&m->lock);
    struct snap sn = m->snap;
    pthread_mutex_unlock(&m->lock);
    double dt = sn.real_ns ? (double)(t - sn.real_ns) / 1e9 : 0.0;
    for (int k = 0; k < E_N; k++)
        j[k] = sn.j[k] + sn.w[k] * dt;
    if (out)
        *out = sn;
}

void markd_stats(struct markd *m, struct markd_stats *out)
{
    *out = (struct markd_stats){0};
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    *out = (struct markd_stats){m->nopen, m->n_ended, m->n_events};
    pthread_mutex_unlock(&m->lock);
}

int markd_window_energy(struct markd *m, uint64_t id, int64_t now_real_ns, double *j,
                        bool *estimated)
{
    *j = NAN;
    *estimated = false;
    if (!m)
        return -ENOENT;
    double j0 = 0;
    bool found = false;
    pthread_mutex_lock(&m->lock);
    for (size_t k = m->nopen; k-- > 0 && !found;)
        if (m->open[k].id == id) {
            j0 = m->open[k].j0[E_NODE];
            found = true;
        }
    pthread_mutex_unlock(&m->lock);
    if (!found)
        return -ENOENT;
    double j1[E_N];
    struct snap sn;
    energy_at(m, now_real_ns, j1, &sn);
    if (!sn.have[E_NODE])
        return -ENODATA;
    *j = j1[E_NODE] - j0;
    *estimated = sn.estimated;
    return 0;
}

/* ---- the pid's job ---- */

static pid_t parent_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    pid_t ppid;
    uint64_t ticks, start;
    return proctree_parse_stat(buf, &ppid, &ticks, &start) == 0 ? ppid : -1;
}

static void job_of(struct markd *m, pid_t pid, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int hops = 0; pid > 1 && hops < 64; hops++) {
        pthread_mutex_lock(&m->lock);
        for (size_t k = 0; k < m->nroots; k++)
            if (m->roots[k].pid == pid) {
                snprintf(buf, cap, "%s", m->roots[k].name);
                pthread_mutex_unlock(&m->lock);
                return;
            }
        pthread_mutex_unlock(&m->lock);
        pid = parent_of(pid);
    }
}

void markd_add_root(struct markd *m, pid_t pid, const char *name)
{
    if (!m || pid <= 0)
        return;
    pthread_mutex_lock(&m->lock);
    if (m->nroots < MARKD_ROOTS_MAX) {
        m->roots[m->nroots].pid = pid;
        snprintf(m->roots[m->nroots].name, sizeof m->roots[m->nroots].name, "%s", name);
        m->nroots++;
    }
    pthread_mutex_unlock(&m->lock);
}

/* ---- marks.csv ---- */

static void put_num(struct csv_buf *b, long long v)
{
    char t[32];
    int n = v >= 0 ? snprintf(t, sizeof t, "%lld", v) : 0;
    csv_buf_raw(b, ",", 1);
    csv_buf_raw(b, t, (size_t)n);
}

/* One row of marks.csv; pid <= 0 and NULL workload: empty cells; value NAN: empty. */
static void write_row(struct markd *m, const char *event, uint64_t id, const char *name, int64_t t,
                      pid_t pid, const char *workload, long long tokens, long long requests,
                      double value)
{
    struct csv_buf b = {0};
    char t_s[40];
    csv_buf_raw(&b, "1,", 2);
    csv_buf_field(&b, event, 1);
    put_num(&b, id ? (long long)id : -1);
    csv_buf_field(&b, name, 0);
    size_t n = fmt_unix_us(t_s, t);
    csv_buf_raw(&b, ",", 1);
    csv_buf_raw(&b, t_s, n);
    put_num(&b, pid > 0 ? pid : -1);
    csv_buf_field(&b, workload ? workload : "", 0);
    put_num(&b, tokens);
    put_num(&b, requests);
    csv_buf_raw(&b, ",", 1);
    if (isfinite(value)) {
        n = fmt_double(t_s, sizeof t_s, value);
        csv_buf_raw(&b, t_s, n);
    }
    csv_buf_end_row(&b);
    if (!m->csv && !m->csv_failed) {
        /* at the first mark: a run without marks leaves no marks.csv */
        char path[PATH_MAX + 16];
        struct carma_err oe = {0};
        snprintf(path, sizeof path, "%s/marks.csv", m->dir);
        m->csv = journal_open(path, MARKS_HEADER, "marks", &oe);
        if (!m->csv) {
            m->csv_failed = true;
            say(m, "%s (the marks are answered, not recorded)", oe.msg);
        }
    }
    if (b.data && m->csv) {
        struct carma_err w = {0};
        if (journal_append(m->csv, b.data, b.len, 1, t, &w) < 0 && w.code)
            say(m, "%s", w.msg);
    } else if (!b.data) {
        say(m, "%s/marks.csv: out of memory: a mark not written", m->dir);
    }
    csv_buf_free(&b);
}

/* ---- the protocol ---- */

static void reply(int fd, const char *msg)
{
    /* a client that went away: its connection is closed at its next poll */
    (void)send(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void fmt_energy(char *buf, size_t cap, const double *j, const struct snap *sn)
{
    for (int k = 0; k < E_N; k++) {
        if (sn->have[k])
            fmt_append(buf, cap, "\t%s=%.3f", e_key[k], fmt_round_zero(j[k], 3));
        else
            fmt_append(buf, cap, "\t%s=", e_key[k]);
    }
    fmt_append(buf, cap, "\tmethod=%s",
               !sn->have[E_NODE] ? "none"
               : sn->estimated   ? "estimated"
                                 : "measured");
}

/* The reply goes before marks.csv's row: the client waits for the first, not the second (the
 * row is written at once all the same; a crash between them loses that one mark). */
static void handle(struct markd *m, struct client *c, char *msg)
{
    int64_t now = time_real_ns();
    char out[MARKD_MSG_MAX], why[160], ts[32], job[64];
    fmt_unix_us(ts, now);
    struct markproto_msg pm;
    if (markproto_parse(msg, &pm, why, sizeof why) < 0) {
        snprintf(out, sizeof out, "error\t%s", why);
        reply(c->fd, out);
        return;
    }
    if (pm.op == MARKPROTO_HELLO) {
        snprintf(out, sizeof out, "ok\tcarma=%s\tprotocol=%d\tdir=%s", m->version, MARKD_PROTOCOL,
                 m->dir);
        reply(c->fd, out);
        return;
    }
    bool is_begin = pm.op == MARKPROTO_BEGIN, is_event = pm.op == MARKPROTO_EVENT;
    long long tokens = pm.tokens, requests = pm.requests;
    double value = pm.value;
    const char *name = pm.name;
    if (!c->job[0])
        job_of(m, c->pid, c->job, sizeof c->job);
    snprintf(job, sizeof job, "%s", c->job);
    if (is_event) {
        snprintf(out, sizeof out, "ok\tt=%s", ts);
        reply(c->fd, out);
        pthread_mutex_lock(&m->lock);
        m->n_events++;
        pthread_mutex_unlock(&m->lock);
        write_row(m, "event", 0, name, now, c->pid, job, -1, -1, value);
        return;
    }
    if (is_begin) {
        if (m->nopen >= MARKD_OPEN_MAX) {
            snprintf(out, sizeof out, "error\tbegin: %d windows are open already", MARKD_OPEN_MAX);
            reply(c->fd, out);
            return;
        }
        struct window w = {.id = ++m->next_id, .t0 = now, .tokens = tokens, .requests = requests};
        snprintf(w.name, sizeof w.name, "%s", name);
        energy_at(m, now, w.j0, NULL);
        pthread_mutex_lock(&m->lock);
        m->open[m->nopen++] = w;
        pthread_mutex_unlock(&m->lock);
        snprintf(out, sizeof out, "ok\tid=%llu\tt=%s", (unsigned long long)w.id, ts);
        reply(c->fd, out);
        write_row(m, "begin", w.id, w.name, now, c->pid, job, tokens, requests, NAN);
        return;
    }
    /* end: the most recent open window of that name */
    size_t k = m->nopen;
    while (k > 0 && strcmp(m->open[k - 1].name, name) != 0)
        k--;
    if (k == 0) {
        snprintf(out, sizeof out, "error\tno open window '%s'", name);
        reply(c->fd, out);
        return;
    }
    struct window w = m->open[k - 1];
    pthread_mutex_lock(&m->lock);
    memmove(&m->open[k - 1], &m->open[k], (m->nopen - k) * sizeof *m->open);
    m->nopen--;
    m->n_ended++;
    pthread_mutex_unlock(&m->lock);
    if (tokens < 0)
        tokens = w.tokens;
    if (requests < 0)
        requests = w.requests;
    double j1[E_N], d[E_N];
    struct snap sn;
    energy_at(m, now, j1, &sn);
    for (int q = 0; q < E_N; q++)
        d[q] = j1[q] - w.j0[q];
    char t0[32];
    fmt_unix_us(t0, w.t0);
    snprintf(out, sizeof out, "ok\tid=%llu\tt0=%s\tt1=%s", (unsigned long long)w.id, t0, ts);
    fmt_energy(out, sizeof out, d, &sn);
    reply(c->fd, out);
    write_row(m, "end", w.id, w.name, now, c->pid, job, tokens, requests, NAN);
}

static void drop_client(struct markd *m, size_t k)
{
    close(m->clients[k].fd);
    m->clients[k] = m->clients[--m->nclients];
}

static void accept_client(struct markd *m)
{
    int fd = accept4(m->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    if (m->nclients >= MARKD_CLIENTS_MAX) {
        if (!m->warned_full)
            say(m, "marks: %d connections at once: the next ones are refused", MARKD_CLIENTS_MAX);
        m->warned_full = true;
        close(fd);
        return;
    }
    struct ucred cr = {0};
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        cr.pid = 0;
    m->clients[m->nclients++] = (struct client){.fd = fd, .pid = cr.pid};
}

static void *thread_main(void *arg)
{
    struct markd *m = arg;
    struct pollfd p[MARKD_CLIENTS_MAX + 2];
    char msg[MARKD_MSG_MAX + 1];
    for (;;) {
        p[0] = (struct pollfd){.fd = m->stop[0], .events = POLLIN};
        p[1] = (struct pollfd){.fd = m->lfd, .events = POLLIN};
        size_t n = m->nclients;
        for (size_t k = 0; k < n; k++)
            p[2 + k] = (struct pollfd){.fd = m->clients[k].fd, .events = POLLIN};
        if (poll(p, n + 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            say(m, "marks: poll: %s: the socket stops answering", strerror(errno));
            return NULL;
        }
        if (p[0].revents)
            return NULL;
        /* clients first (from the last: drop_client moves the last one into the gap) */
        for (size_t k = n; k-- > 0;) {
            if (!p[2 + k].revents)
                continue;
            ssize_t r = recv(m->clients[k].fd, msg, sizeof msg, MSG_TRUNC | MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                drop_client(m, k);
                continue;
            }
            if (r < 0)
                continue;
            if ((size_t)r > MARKD_MSG_MAX) {
                char out[96];
                snprintf(out, sizeof out, "error\tmessage of %zd bytes (at most %d)", r,
                         MARKD_MSG_MAX);
                reply(m->clients[k].fd, out);
                continue;
            }
            msg[r] = '\0';
            if (memchr(msg, '\0', (size_t)r)) {
                reply(m->clients[k].fd, "error\ta NUL byte in the message");
                continue;
            }
            handle(m, &m->clients[k], msg);
        }
        if (p[1].revents & POLLIN)
            accept_client(m);
    }
}

/* ---- start, stop ---- */

static int bind_socket(struct markd *m, struct carma_err *e)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char want[PATH_MAX + 16];
    snprintf(want, sizeof want, "%s/carma.sock", m->dir);
    if (strlen(want) < sizeof a.sun_path) {
        snprintf(m->sock, sizeof m->sock, "%s", want);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(m->tmpdir, sizeof m->tmpdir, "%s/carma-XXXXXX",
                 tmp && *tmp && strlen(tmp) < 64 ? tmp : "/tmp");
        if (!mkdtemp(m->tmpdir)) {
            int err = errno;
            m->tmpdir[0] = '\0';
            return carma_err_set(e, -err,
                                 "%s: too long for a socket, and no directory "
                                 "for it below /tmp: %s",
                                 want, strerror(err));
        }
        snprintf(m->sock, sizeof m->sock, "%s/carma.sock", m->tmpdir);
    }
    m->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (m->lfd < 0)
        return carma_err_set(e, -errno, "marks: socket: %s", strerror(errno));
    snprintf(a.sun_path, sizeof a.sun_path, "%s", m->sock);
    mode_t old = umask(077); /* mode 0600 from the start */
    int r = bind(m->lfd, (struct sockaddr *)&a, sizeof a);
    int err = errno;
    umask(old);
    if (r < 0)
        return carma_err_set(e, -err, "cannot listen on %s: %s", m->sock, strerror(err));
    if (chmod(m->sock, 0600) < 0) /* umask 077 gave 0700 */
        return carma_err_set(e, -errno, "%s: chmod: %s", m->sock, strerror(errno));
    /* the group's too: the socket 0660, its private directory (if any) 0710 */
    if (m->group_set && ((m->tmpdir[0] && (chown(m->tmpdir, (uid_t)-1, m->gid) < 0 ||
                                           chmod(m->tmpdir, 0710) < 0)) ||
                         chown(m->sock, (uid_t)-1, m->gid) < 0 || chmod(m->sock, 0660) < 0))
        return carma_err_set(e, -errno, "%s: cannot give it to group %lu: %s", m->sock,
                             (unsigned long)m->gid, strerror(errno));
    if (listen(m->lfd, 64) < 0)
        return carma_err_set(e, -errno, "cannot listen on %s: %s", m->sock, strerror(errno));
    if (m->tmpdir[0]) {
        if (symlink(m->sock, want) < 0)
            say(m, "cannot link %s to %s: %s (CARMA_SOCKET names the socket)", want, m->sock,
                strerror(errno));
        else
            snprintf(m->link, sizeof m->link, "%s", want);
    }
    return 0;
}

static void cleanup(struct markd *m)
{
    if (m->lfd >= 0)
        close(m->lfd);
    for (size_t k = 0; k < m->nclients; k++)
        close(m->clients[k].fd);
    m->nclients = 0;
    if (m->sock[0])
        unlink(m->sock);
    if (m->link[0])
        unlink(m->link);
    if (m->tmpdir[0])
        rmdir(m->tmpdir);
    for (int k = 0; k < 2; k++)
        if (m->stop[k] >= 0)
            close(m->stop[k]);
    pthread_mutex_destroy(&m->lock);
    free(m->open);
    free(m);
}

struct markd *markd_start(const struct markd_opts *o, struct carma_err *e)
{
    struct markd *m = calloc(1, sizeof *m);
    if (!m) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    m->lfd = m->stop[0] = m->stop[1] = -1;
    pthread_mutex_init(&m->lock, NULL);
    /* absolute: CARMA_SOCKET must name the socket from any working directory */
    char cwd[PATH_MAX];
    if (o->dir[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(m->dir, sizeof m->dir, "%s/%s", cwd, o->dir);
    else
        snprintf(m->dir, sizeof m->dir, "%s", o->dir);
    snprintf(m->version, sizeof m->version, "%s", o->version ? o->version : "");
    m->warn = o->warn;
    m->group_set = o->group_set;
    m->gid = o->gid;
    m->ctx = o->ctx;
    m->open = calloc(MARKD_OPEN_MAX, sizeof *m->open);
    if (!m->open) {
        carma_err_set(e, -ENOMEM, "out of memory");
        cleanup(m);
        return NULL;
    }
    if (bind_socket(m, e) < 0) {
        cleanup(m);
        return NULL;
    }
    if (pipe2(m->stop, O_CLOEXEC) < 0) {
        carma_err_set(e, -errno, "marks: pipe: %s", strerror(errno));
        cleanup(m);
        return NULL;
    }
    /* the thread takes no signal: a process that reads its signals from a signalfd (carma
     * run, stat) has them blocked in its main thread, and a signal sent to the process
     * would otherwise go to this thread and be lost (SIGCHLD ignored, the exit unseen) */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = pthread_create(&m->thread, NULL, thread_main, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        carma_err_set(e, -r, "marks: cannot start its thread: %s", strerror(r));
        cleanup(m);
        return NULL;
    }
    m->running = true;
    return m;
}

const char *markd_socket(const struct markd *m)
{
    return m->sock;
}

int markd_stop(struct markd *m, int64_t last_real_ns, struct carma_err *e)
{
    if (!m)
        return 0;
    if (m->running) {
        (void)!write(m->stop[1], "x", 1);
        pthread_join(m->thread, NULL);
    }
    int left = (int)m->nopen;
    for (size_t k = 0; k < m->nopen; k++) {
        const struct window *w = &m->open[k];
        write_row(m, "unended", w->id, w->name, last_real_ns > w->t0 ? last_real_ns : w->t0, 0,
                  NULL, w->tokens, w->requests, NAN);
    }
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/marks.csv", m->dir);
    uint64_t lost = journal_lost(m->csv, NULL);
    int r = m->csv ? journal_finish(m->csv, path, e) : 0;
    if (r == 0 && lost)
        r = carma_err_set(e, -EIO, "%s: %llu marks not written", path, (unsigned long long)lost);
    cleanup(m);
    return r < 0 ? r : left;
}
