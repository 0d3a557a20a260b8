/*
 * serve/connguard: see connguard.h. Two intrusive lists under one lock: every tracked
 * connection (for the per-address count), and those waiting for a complete request in the
 * order their wait began (the oldest first: the deadline sweep and the reserve both take from
 * the head). At most max_open connections are tracked, so the per-address scan is short.
 */
#include "serve/connguard.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct guarded_conn {
    struct guarded_conn *prev, *next;   /* every tracked connection */
    struct guarded_conn *wprev, *wnext; /* waiting, oldest first */
    int fd;
    int family; /* AF_INET, AF_INET6 or 0 (not counted per address) */
    unsigned char addr[16];
    int64_t since; /* waiting since (when waiting) */
    bool waiting;
    bool dropped; /* shut down by the guard: no longer counted */
};

struct conn_guard {
    pthread_mutex_t lock;
    struct conn_guard_opts o;
    conn_drop_fn drop;
    void *cls;
    struct guarded_conn *head;          /* every tracked connection */
    struct guarded_conn *whead, *wtail; /* waiting */
    struct conn_guard_stats st;
};

struct conn_guard *conn_guard_new(const struct conn_guard_opts *o, conn_drop_fn drop, void *cls)
{
    struct conn_guard *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    if (pthread_mutex_init(&g->lock, NULL) != 0) {
        free(g);
        return NULL;
    }
    g->o = *o;
    g->drop = drop;
    g->cls = cls;
    return g;
}

void conn_guard_free(struct conn_guard *g)
{
    if (!g)
        return;
    for (struct guarded_conn *c = g->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    pthread_mutex_destroy(&g->lock);
    free(g);
}

static void wait_unlink(struct conn_guard *g, struct guarded_conn *c)
{
    if (!c->waiting)
        return;
    if (c->wprev)
        c->wprev->wnext = c->wnext;
    else
        g->whead = c->wnext;
    if (c->wnext)
        c->wnext->wprev = c->wprev;
    else
        g->wtail = c->wprev;
    c->wprev = c->wnext = NULL;
    c->waiting = false;
    g->st.waiting--;
}

static void wait_append(struct conn_guard *g, struct guarded_conn *c, int64_t now)
{
    c->since = now;
    c->waiting = true;
    c->wnext = NULL;
    c->wprev = g->wtail;
    if (g->wtail)
        g->wtail->wnext = c;
    else
        g->whead = c;
    g->wtail = c;
    g->st.waiting++;
}

/* Shuts c down (it stays tracked until the server closes it, uncounted). */
static void drop(struct conn_guard *g, struct guarded_conn *c, enum conn_drop_reason why)
{
    wait_unlink(g, c);
    c->dropped = true;
    g->st.open--;
    g->st.dropped[why]++;
    g->drop(g->cls, c->fd);
}

static bool same_addr(const struct guarded_conn *a, const struct guarded_conn *b)
{
    return a->family != 0 && a->family == b->family &&
           memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

/* The oldest waiting connection from c's address (other than c), or NULL; n: how many
 * connections from that address are counted. */
static struct guarded_conn *oldest_of_addr(struct conn_guard *g, const struct guarded_conn *c,
                                           unsigned *n)
{
    *n = 0;
    for (const struct guarded_conn *p = g->head; p; p = p->next)
        if (p != c && !p->dropped && same_addr(p, c))
            (*n)++;
    for (struct guarded_conn *p = g->whead; p; p = p->wnext)
        if (p != c && same_addr(p, c))
            return p;
    return NULL;
}

struct guarded_conn *conn_guard_open(struct conn_guard *g, int fd, const struct sockaddr *addr,
                                     int64_t now)
{
    struct guarded_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = fd;
    if (addr && addr->sa_family == AF_INET) {
        c->family = AF_INET;
        memcpy(c->addr, &((const struct sockaddr_in *)addr)->sin_addr, 4);
    } else if (addr && addr->sa_family == AF_INET6) {
        c->family = AF_INET6;
        memcpy(c->addr, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
    }
    pthread_mutex_lock(&g->lock);
    if (g->o.per_ip_max > 0 && c->family != 0) {
        unsigned limit =
            g->o.per_ip_max > g->o.per_ip_reserve ? g->o.per_ip_max - g->o.per_ip_reserve : 1;
        unsigned n;
        struct guarded_conn *old = oldest_of_addr(g, c, &n);
        if (n >= limit && old)
            drop(g, old, CONN_DROP_PER_IP);
    }
    unsigned limit = g->o.max_open > g->o.reserve ? g->o.max_open - g->o.reserve : 1;
    if (g->st.open >= limit && g->whead)
        drop(g, g->whead, CONN_DROP_RESERVE);
    c->next = g->head;
    if (g->head)
        g->head->prev = c;
    g->head = c;
    wait_append(g, c, now);
    g->st.open++;
    g->st.opened++;
    pthread_mutex_unlock(&g->lock);
    return c;
}

void conn_guard_answered(struct conn_guard *g, struct guarded_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    wait_unlink(g, c);
    pthread_mutex_unlock(&g->lock);
}

void conn_guard_idle(struct conn_guard *g, struct guarded_conn *c, int64_t now)
{
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    if (!c->dropped) {
        wait_unlink(g, c);
        wait_append(g, c, now);
    }
    pthread_mutex_unlock(&g->lock);
}

bool conn_guard_close(struct conn_guard *g, struct guarded_conn *c)
{
    if (!c)
        return false;
    pthread_mutex_lock(&g->lock);
    bool dropped = c->dropped;
    wait_unlink(g, c);
    if (!c->dropped)
        g->st.open--;
    if (c->prev)
        c->prev->next = c->next;
    else
        g->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&g->lock);
    free(c);
    return dropped;
}

unsigned conn_guard_sweep(struct conn_guard *g, int64_t now)
{
    unsigned n = 0;
    pthread_mutex_lock(&g->lock);
    /* the list is in the order the waits began: stop at the first still in time (waits begun
     * from several threads may be out of order by microseconds, not by a deadline) */
    while (g->whead && now - g->whead->since >= g->o.deadline_ns) {
        drop(g, g->whead, CONN_DROP_DEADLINE);
        n++;
    }
    pthread_mutex_unlock(&g->lock);
    return n;
}

void conn_guard_stats(struct conn_guard *g, struct conn_guard_stats *st)
{
    pthread_mutex_lock(&g->lock);
    *st = g->st;
    pthread_mutex_unlock(&g->lock);
}
