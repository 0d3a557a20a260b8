/*
 * periodic: a function called on a thread of its own every period (see periodic.h).
 */
#include "core/periodic.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct periodic {
    periodic_fn fn;
    void *arg;
    int64_t period_ns;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    int last_r; /* the last call's error, or 0 */
    struct carma_err last_e;
};

static void *periodic_main(void *arg)
{
    struct periodic *t = arg;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        int64_t ns = (int64_t)until.tv_nsec + t->period_ns % 1000000000LL;
        until.tv_sec += (time_t)(t->period_ns / 1000000000LL + ns / 1000000000LL);
        until.tv_nsec = (long)(ns % 1000000000LL);
        while (!t->stop && pthread_cond_timedwait(&t->wake, &t->lock, &until) == 0)
            ;
        bool final = t->stop;
        pthread_mutex_unlock(&t->lock);
        struct carma_err e = {0};
        int r = t->fn(t->arg, final, &e);
        pthread_mutex_lock(&t->lock);
        t->last_r = r < 0 ? r : 0;
        if (r < 0)
            t->last_e = e;
        if (final)
            break;
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

struct periodic *periodic_start(int64_t period_ns, periodic_fn fn, void *arg, const char *what,
                                struct carma_err *e)
{
    struct periodic *t = calloc(1, sizeof *t);
    if (!t) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    t->fn = fn;
    t->arg = arg;
    t->period_ns = period_ns;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, &ca);
    pthread_condattr_destroy(&ca);
    /* The thread takes no signal: the command waits for its signals (signalfd, sigtimedwait)
     * with them blocked, and one delivered to a thread that does not block it is lost. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = pthread_create(&t->thread, NULL, periodic_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        pthread_cond_destroy(&t->wake);
        pthread_mutex_destroy(&t->lock);
        free(t);
        carma_err_set(e, -r, "cannot start the %s thread: %s", what, strerror(r));
        return NULL;
    }
    return t;
}

int periodic_stop(struct periodic *t, struct carma_err *e)
{
    if (!t)
        return 0;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    int r = t->last_r;
    if (r < 0 && e)
        *e = t->last_e;
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    free(t);
    return r;
}
