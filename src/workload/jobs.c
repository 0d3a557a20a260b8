/* jobs: launching, waiting, reaping, the stop/kill escalation and the baseline (see jobs.h). */
#include "workload/jobs.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/timeutil.h"

int jobs_open(struct jobs *t)
{
    t->sigfd = launcher_signals_open(&t->old_mask);
    return t->sigfd < 0 ? t->sigfd : 0;
}

void jobs_close(struct jobs *t)
{
    if (t->sigfd >= 0)
        close(t->sigfd);
    t->sigfd = -1;
}

int jobs_add(struct jobs *t, struct job_proc *p)
{
    if (t->n >= JOBS_MAX)
        return -ENOSPC;
    t->p[t->n++] = p;
    return 0;
}

int jobs_spawn(struct jobs *t, struct job_proc *p, const struct launch_opts *lo,
               struct carma_err *e)
{
    p->started = true;
    p->start_mono = time_mono_ns();
    p->start_real = time_real_ns();
    int r = launcher_spawn(lo, &p->pid, e);
    if (r < 0) {
        p->exited = p->done = true;
        p->exit_status = r == -ENOENT ? 127 : 126;
        p->end_mono = p->start_mono;
        p->end_real = p->start_real;
        return r;
    }
    if (t->sup)
        supervisor_watch(t->sup, p->pid);
    return 0;
}

bool jobs_alive(const struct job_proc *p)
{
    if (!p->started || p->done)
        return false;
    if (!p->exited)
        return true;
    if (p->have_cg)
        return cgroup_populated(&p->cg) == 1;
    return kill(-p->pid, 0) == 0;
}

void jobs_signal(const struct job_proc *p, int sig)
{
    if (!p->started || p->done)
        return;
    if (p->pid > 0)
        kill(-p->pid, sig);
    if (p->have_cg)
        cgroup_signal(&p->cg, sig);
}

uint64_t jobs_cpu_ns(struct job_proc *p, int64_t now_mono)
{
    if (p->have_cg) {
        uint64_t v;
        return cgroup_usage_ns(&p->cg, &v) == 0 ? v : 0;
    }
    return p->tree ? proctree_update(p->tree, now_mono, false) : 0;
}

void jobs_reap(struct jobs *t)
{
    for (;;) {
        int ws;
        struct rusage ru;
        pid_t pid = wait4(-1, &ws, WNOHANG, &ru);
        if (pid <= 0)
            break;
        bool is_main = false;
        for (size_t k = 0; k < t->n; k++) {
            struct job_proc *p = t->p[k];
            if (p->tree)
                proctree_reaped(p->tree, pid, &ru);
            is_main = is_main || p->pid == pid;
            if (p->pid == pid && !p->exited) {
                p->exited = true;
                p->wstatus = ws;
                p->exit_status = launcher_exit_status(ws);
                p->end_mono = time_mono_ns();
                p->end_real = time_real_ns();
                /* what the command left running may finish within the grace period; then
                 * it gets SIGTERM, and SIGKILL after another grace period */
                if (t->linger && jobs_alive(p))
                    p->linger_deadline = p->end_mono + t->grace_ns;
            }
        }
        if (!is_main)
            t->orphans++;
    }
}

/* A terminating signal: told, then forwarded (the first) or SIGKILL (the next ones). */
static void stop(struct jobs *t, int sig)
{
    t->signals++;
    if (t->on_stop)
        t->on_stop(t->ctx, sig);
    for (size_t k = 0; k < t->n; k++) {
        struct job_proc *p = t->p[k];
        if (!p->started) {
            p->started = p->exited = p->done = true; /* never launched */
            p->exit_status = 128 + sig;
            continue;
        }
        if (t->signals >= 2) {
            jobs_signal(p, SIGKILL);
        } else {
            jobs_signal(p, sig);
            p->kill_deadline = time_mono_ns() + t->grace_ns;
        }
    }
}

void jobs_signals(struct jobs *t)
{
    struct signalfd_siginfo si;
    while (t->sigfd >= 0 && read(t->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD)
            jobs_reap(t);
        else
            stop(t, sig);
    }
}

int jobs_wait(struct jobs *t, int tick_fd, int64_t until)
{
    struct pollfd pfd[2] = {
        {.fd = tick_fd, .events = POLLIN},
        {.fd = t->sigfd, .events = POLLIN},
    };
    int timeout = -1;
    if (until > 0) {
        int64_t left = until - time_mono_ns();
        timeout = left > 0 ? (int)(left / NS_PER_MS) + 1 : 0;
    }
    int n = poll(pfd, 2, timeout);
    if (n < 0 && errno != EINTR)
        return -errno;
    bool tick = n > 0 && (pfd[0].revents & POLLIN);
    if (t->ticks_first) {
        if (tick)
            return 1;
        jobs_signals(t);
        return 0;
    }
    if (n > 0 && (pfd[1].revents & POLLIN))
        jobs_signals(t);
    return tick;
}

/* Lowers *next to deadline (0: none). */
static void earliest(int64_t *next, int64_t deadline)
{
    if (deadline && (!*next || deadline < *next))
        *next = deadline;
}

void jobs_kill_step(struct jobs *t, size_t k, int64_t now, int64_t *next)
{
    struct job_proc *p = t->p[k];
    if (p->kill_deadline && now >= p->kill_deadline) {
        if (t->on_kill && jobs_alive(p))
            t->on_kill(t->ctx, k);
        jobs_signal(p, SIGKILL);
        p->kill_deadline = 0;
    }
    earliest(next, p->kill_deadline);
}

void jobs_tend(struct jobs *t, size_t k, int64_t now, int64_t *next)
{
    struct job_proc *p = t->p[k];
    if (p->started && !p->exited && p->timeout_ns >= 0 && !p->term_sent &&
        now - p->start_mono >= p->timeout_ns) {
        p->timed_out = p->term_sent = true;
        jobs_signal(p, SIGTERM);
        p->kill_deadline = now + t->grace_ns;
    }
    if (p->linger_deadline && now >= p->linger_deadline) {
        p->linger_deadline = 0;
        if (jobs_alive(p)) {
            jobs_signal(p, SIGTERM);
            p->kill_deadline = now + t->grace_ns;
        }
    }
    earliest(next, p->linger_deadline);
    jobs_kill_step(t, k, now, next);
    if (p->started && p->exited && !p->done && !jobs_alive(p)) {
        p->done = true;
        if (t->sup)
            supervisor_forget(t->sup, p->pid);
        p->linger_deadline = p->kill_deadline = 0;
        if (now > p->end_mono) { /* the last of its processes ended now */
            p->end_mono = now;
            p->end_real = time_real_ns();
        }
    }
}

void jobs_cgroup_release(struct job_proc *p)
{
    if (!p->have_cg)
        return;
    if (cgroup_populated(&p->cg) == 1)
        cgroup_signal(&p->cg, SIGKILL);
    for (int w = 0; w < 100 && cgroup_populated(&p->cg) == 1; w++) {
        usleep(10000);
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
    }
    cgroup_remove(&p->cg);
}

void jobs_reap_rest(void)
{
    for (int w = 0; w < 200; w++) {
        pid_t p = waitpid(-1, NULL, WNOHANG);
        if (p > 0)
            continue;
        if (p < 0)
            break; /* no child left */
        usleep(10000);
    }
}

int jobs_baseline(struct jobs *t, struct sampler *s, int64_t ns, void (*on_tick)(void *ctx),
                  void *ctx, struct jobs_baseline *out)
{
    memset(out, 0, sizeof *out);
    int64_t t0 = s->t_now;
    while (s->t_now - t0 < ns) {
        int ev = jobs_wait(t, sampler_fd(s), 0);
        if (ev < 0)
            return ev;
        if (t->signals)
            return -EINTR;
        if (ev == 0)
            continue;
        sampler_ack(s);
        sampler_tick(s);
        if (on_tick)
            on_tick(ctx);
        for (size_t i = 0; i < s->set.n; i++)
            out->energy_j[i] += s->st[i].tick_energy_j;
        if (s->have_util && s->util_fresh)
            out->busy_ticks += s->util.busy_ticks_delta;
    }
    out->dt_s = (double)(s->t_now - t0) / 1e9;
    return 0;
}
