/*
 * Unit tests for workload/jobs: commands launched, waited for and reaped (their exit statuses
 * and end times), one that cannot start, a timeout, the stop/kill escalation (a signal
 * forwarded, SIGKILL after the grace period, a second signal's SIGKILL at once, a command not
 * started that never starts), what outlives a main process (SIGTERM after the grace period)
 * and the baseline, whole and interrupted. This test is the subreaper of what its commands
 * leave, so it reaps them; the signals carma takes are raised at itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "sampler/sampler.h"
#include "testutil.h"
#include "workload/jobs.h"

#define PKG0 "sys/class/powercap/intel-rapl:0/energy_uj"

/* What the callbacks were told. */
struct said {
    int stops, last_stop, kills;
    size_t last_kill;
    int ticks, raise_at; /* the baseline's ticks; at tick raise_at, SIGINT (0: never) */
    struct sampler *s;
};

static void on_stop(void *ctx, int sig)
{
    struct said *w = ctx;
    w->stops++;
    w->last_stop = sig;
}

static void on_kill(void *ctx, size_t k)
{
    struct said *w = ctx;
    w->kills++;
    w->last_kill = k;
}

static void open_table(struct jobs *t, struct said *w, int64_t grace_ns, bool linger)
{
    *t = (struct jobs){
        .sigfd = -1,
        .grace_ns = grace_ns,
        .linger = linger,
        .on_stop = on_stop,
        .on_kill = on_kill,
        .ctx = w,
    };
    assert_int_equal(jobs_open(t), 0);
    assert_true(t->sigfd >= 0);
}

static void close_table(struct jobs *t)
{
    jobs_signals(t); /* nothing left pending for the next test */
    jobs_close(t);
    assert_int_equal(t->sigfd, -1);
    jobs_close(t); /* safe twice */
    jobs_reap_rest();
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void add(struct jobs *t, struct job_proc *p, int64_t timeout_ns)
{
    memset(p, 0, sizeof *p);
    p->timeout_ns = timeout_ns;
    assert_int_equal(jobs_add(t, p), 0);
}

static void spawn(struct jobs *t, struct job_proc *p, char **argv)
{
    struct launch_opts lo = {.argv = argv};
    struct carma_err e = {0};
    if (jobs_spawn(t, p, &lo, &e) < 0)
        fail_msg("spawn %s: %s", argv[0], e.msg);
    assert_true(p->started);
    assert_true(p->pid > 0);
    assert_false(p->exited);
}

/* Tends every job and waits, as carma run's loop does between its ticks, until all are done
 * (fails after limit_ns). */
static void run_until_done(struct jobs *t, int64_t limit_ns)
{
    int64_t end = time_mono_ns() + limit_ns;
    for (;;) {
        int64_t now = time_mono_ns(), next = 0;
        bool all = true;
        for (size_t k = 0; k < t->n; k++) {
            jobs_tend(t, k, now, &next);
            all = all && t->p[k]->done;
        }
        if (all)
            return;
        if (now > end)
            fail_msg("the jobs still run after %lld ms", (long long)(limit_ns / NS_PER_MS));
        /* carma's ticks wake it at least this often (a timeout sets no deadline) */
        if (!next || next > now + 10 * NS_PER_MS)
            next = now + 10 * NS_PER_MS;
        assert_true(jobs_wait(t, -1, next) >= 0);
    }
}

/* Waits (at most 5 s) until the command's process runs comm (its exec is done). */
static void wait_comm(pid_t pid, const char *comm)
{
    char path[64], buf[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(path, "re");
        bool same = f && fgets(buf, sizeof buf, f) && strncmp(buf, comm, strlen(comm)) == 0;
        if (f)
            fclose(f);
        if (same)
            return;
        tu_pause_ms(10);
    }
    fail_msg("pid %d never ran %s", (int)pid, comm);
}

static void test_exit_statuses(void **state)
{
    (void)state;
    struct jobs t;
    struct said w = {0};
    struct job_proc fail, slow;
    open_table(&t, &w, NS_PER_S, true);
    add(&t, &fail, -1);
    add(&t, &slow, -1);
    char *a[] = {"sh", "-c", "exit 3", NULL};
    char *b[] = {"sleep", "0.3", NULL};
    int64_t t0 = time_mono_ns();
    spawn(&t, &fail, a);
    spawn(&t, &slow, b);
    run_until_done(&t, 10 * NS_PER_S);
    assert_true(fail.exited && fail.done && slow.exited && slow.done);
    assert_int_equal(fail.exit_status, 3);
    assert_true(WIFEXITED(fail.wstatus) && WEXITSTATUS(fail.wstatus) == 3);
    assert_int_equal(slow.exit_status, 0);
    assert_false(fail.timed_out || slow.timed_out);
    /* the end times: when each was reaped, in order, after its start */
    assert_true(fail.start_mono >= t0 && fail.end_mono >= fail.start_mono);
    assert_true(slow.end_mono - slow.start_mono >= 250 * NS_PER_MS);
    assert_true(fail.end_mono < slow.end_mono);
    assert_true(fail.end_real >= fail.start_real && slow.end_real > fail.end_real);
    assert_int_equal(fail.linger_deadline, 0);
    assert_int_equal(t.orphans, 0);
    assert_int_equal(w.stops + w.kills, 0);
    assert_int_equal(t.signals, 0);
    close_table(&t);
}

static void test_not_found(void **state)
{
    (void)state;
    struct jobs t;
    struct said w = {0};
    struct job_proc p;
    open_table(&t, &w, NS_PER_S, true);
    add(&t, &p, -1);
    char *argv[] = {"carma-test-no-such-command", NULL};
    struct launch_opts lo = {.argv = argv};
    struct carma_err e = {0};
    assert_int_equal(jobs_spawn(&t, &p, &lo, &e), -ENOENT);
    assert_true(p.started && p.exited && p.done);
    assert_int_equal(p.exit_status, 127);
    assert_true(p.end_mono == p.start_mono && p.end_real == p.start_real);
    assert_false(jobs_alive(&p));
    close_table(&t);
}

static void test_timeout(void **state)
{
    (void)state;
    struct jobs t;
    struct said w = {0};
    struct job_proc p;
    open_table(&t, &w, NS_PER_S, true);
    add(&t, &p, 100 * NS_PER_MS);
    char *argv[] = {"sleep", "5", NULL};
    spawn(&t, &p, argv);
    assert_true(jobs_alive(&p));
    run_until_done(&t, 4 * NS_PER_S);
    assert_true(p.timed_out && p.term_sent);
    assert_int_equal(p.exit_status, 128 + SIGTERM);
    assert_true(WIFSIGNALED(p.wstatus) && WTERMSIG(p.wstatus) == SIGTERM);
    int64_t dur = p.end_mono - p.start_mono;
    assert_true(dur >= 100 * NS_PER_MS && dur < 3 * NS_PER_S);
    assert_int_equal(p.kill_deadline, 0); /* done: no deadline left */
    assert_int_equal(w.kills, 0);
    close_table(&t);
}

/* A SIGTERM carma receives: told, forwarded (the command ignores it), SIGKILL after the grace
 * period; the command not started yet never starts. */
static void test_stop_then_kill(void **state)
{
    (void)state;
    struct jobs t;
    struct said w = {0};
    struct job_proc p, later;
    open_table(&t, &w, 200 * NS_PER_MS, true);
    add(&t, &p, -1);
    add(&t, &later, -1);
    char *argv[] = {"sh", "-c", "trap '' TERM; exec sleep 5", NULL};
    spawn(&t, &p, argv);
    wait_comm(p.pid, "sleep");
    int64_t t0 = time_mono_ns();
    assert_int_equal(raise(SIGTERM), 0);
    assert_int_equal(jobs_wait(&t, -1, 0), 0); /* the signal is readable: no wait */
    assert_int_equal(w.stops, 1);
    assert_int_equal(w.last_stop, SIGTERM);
    assert_int_equal(t.signals, 1);
    assert_true(p.kill_deadline >= t0 + 200 * NS_PER_MS);
    assert_true(later.started && later.exited && later.done);
    assert_int_equal(later.exit_status, 128 + SIGTERM);
    run_until_done(&t, 4 * NS_PER_S);
    assert_int_equal(w.kills, 1);
    assert_int_equal(w.last_kill, 0);
    assert_true(WIFSIGNALED(p.wstatus) && WTERMSIG(p.wstatus) == SIGKILL);
    assert_int_equal(p.exit_status, 128 + SIGKILL);
    assert_true(p.end_mono - t0 >= 200 * NS_PER_MS);
    assert_false(p.timed_out);
    close_table(&t);
}

/* A second signal: SIGKILL at once, long before the grace period ends. */
static void test_second_signal(void **state)
{
    (void)state;
    struct jobs t;
    struct said w = {0};
    struct job_proc p;
    open_table(&t, &w, 30 * NS_PER_S, true);
    add(&t, &p, -1);
    char *argv[] = {"sh", "-c", "trap '' INT; exec sleep 5", NULL};
    spawn(&t, &p, argv);
    wait_comm(p.pid, "sleep");
    int64_t t0 = time_mono_ns();
    assert_int_equal(raise(SIGINT), 0);
    assert_int_equal(jobs_wait(&t, -1, 0), 0);
    assert_int_equal(raise(SIGINT), 0);
    run_until_done(&t, 4 * NS_PER_S);
    assert_int_equal(w.stops, 2);
    assert_int_equal(t.signals, 2);
    assert_int_equal(w.kills, 0); /* the kill deadline never came */
    assert_int_equal(p.exit_status, 128 + SIGKILL);
    assert_true(p.end_mono - t0 < 4 * NS_PER_S);
    close_table(&t);
}

/* What the main process left running gets SIGTERM a grace period after the main one ended;
 * the command ends with its last process. */
static void test_linger(void **state)
{
    (void)state;
    struct jobs t;
    struct said w = {0};
    struct job_proc p;
    open_table(&t, &w, 150 * NS_PER_MS, true);
    add(&t, &p, -1);
    char *argv[] = {"sh", "-c", "sleep 5 & exit 0", NULL};
    spawn(&t, &p, argv);
    run_until_done(&t, 4 * NS_PER_S);
    assert_int_equal(p.exit_status, 0);
    assert_true(WIFEXITED(p.wstatus));
    /* the end is the last process's: a grace period after the start at least */
    assert_true(p.end_mono - p.start_mono >= 150 * NS_PER_MS);
    assert_true(p.end_mono - p.start_mono < 3 * NS_PER_S);
    assert_int_equal(w.kills, 0);
    /* the orphaned sleep was this subreaper's to reap, at once or by the rest */
    jobs_reap_rest();
    jobs_reap(&t);
    close_table(&t);
}

/* Without linger, a main process that ended is the end: what it left runs on (and is killed
 * here). */
static void test_no_linger(void **state)
{
    (void)state;
    struct jobs t;
    struct said w = {0};
    struct job_proc p;
    open_table(&t, &w, 50 * NS_PER_MS, false);
    add(&t, &p, -1);
    char *argv[] = {"sh", "-c", "sleep 5 & exit 4", NULL};
    spawn(&t, &p, argv);
    while (!p.exited)
        assert_true(jobs_wait(&t, -1, time_mono_ns() + NS_PER_S) >= 0);
    assert_int_equal(p.exit_status, 4);
    assert_int_equal(p.linger_deadline, 0);
    assert_true(jobs_alive(&p)); /* its sleep */
    jobs_signal(&p, SIGKILL);
    run_until_done(&t, 4 * NS_PER_S);
    assert_int_equal(t.orphans, 1); /* the sleep, reaped by this subreaper */
    close_table(&t);
}

/* The baseline's rows: counts the ticks, adds a joule to package 0 each time, and raises
 * SIGINT at tick raise_at. */
static void baseline_tick(void *ctx)
{
    struct said *w = ctx;
    w->ticks++;
    char path[TU_DIR_MAX + 64], text[32];
    snprintf(path, sizeof path, "%s/" PKG0, tu_dir);
    tu_slurp(path, text, sizeof text);
    tu_put_u64(PKG0, strtoull(text, NULL, 10) + 1000000);
    if (w->raise_at && w->ticks == w->raise_at)
        raise(SIGINT);
}

static struct sampler *baseline_sampler(void)
{
    tu_copy_fixture("amd-server");
    struct sampler_opts o = {.root = tu_dir, .sources = "rapl", .interval_ns = 10 * NS_PER_MS};
    struct sampler *s = tu_sampler_new(&o);
    assert_int_equal(sampler_start(s), 0);
    sampler_tick(s);
    return s;
}

static void test_baseline(void **state)
{
    (void)state;
    struct jobs t;
    struct said w = {0};
    open_table(&t, &w, NS_PER_S, true);
    struct sampler *s = baseline_sampler();
    int64_t t0 = s->t_now;
    struct jobs_baseline b;
    assert_int_equal(jobs_baseline(&t, s, 80 * NS_PER_MS, baseline_tick, &w, &b), 0);
    assert_true(s->t_now - t0 >= 80 * NS_PER_MS);
    tu_assert_near(b.dt_s, (double)(s->t_now - t0) / 1e9, 1e-12);
    assert_true(w.ticks >= 4);
    /* the package's energy: a joule per tick but the first (before the first joule) */
    double sum = 0;
    for (size_t i = 0; i < s->set.n; i++)
        sum += b.energy_j[i];
    tu_assert_near(sum, w.ticks - 1, 1e-6);
    assert_int_equal(w.stops, 0);
    sampler_free(s);
    close_table(&t);
}

static void test_baseline_interrupted(void **state)
{
    (void)state;
    struct jobs t;
    struct said w = {.raise_at = 3};
    open_table(&t, &w, NS_PER_S, true);
    struct job_proc p;
    add(&t, &p, -1);
    struct sampler *s = baseline_sampler();
    struct jobs_baseline b;
    assert_int_equal(jobs_baseline(&t, s, 10 * NS_PER_S, baseline_tick, &w, &b), -EINTR);
    assert_int_equal(w.ticks, 3);
    assert_int_equal(w.stops, 1);
    assert_int_equal(w.last_stop, SIGINT);
    /* the command was not started and never will be */
    assert_true(p.started && p.done && p.pid == 0);
    assert_int_equal(p.exit_status, 128 + SIGINT);
    sampler_free(s);
    close_table(&t);
}

int main(void)
{
    /* what the commands leave is this process's to reap */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#define T(f) cmocka_unit_test_setup_teardown(f, tu_setup, tu_teardown)
    const struct CMUnitTest tests[] = {
        T(test_exit_statuses),  T(test_not_found),     T(test_timeout),
        T(test_stop_then_kill), T(test_second_signal), T(test_linger),
        T(test_no_linger),      T(test_baseline),      T(test_baseline_interrupted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
