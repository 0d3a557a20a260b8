/*
 * serve/connguard: the exporter's defence against clients that hold connections open without
 * finishing a request (slow headers, slow bodies, idle sockets).
 *
 * The guard tracks every open connection of the HTTP server with the time since which it has
 * been waiting for a complete request (from its accept, or from the end of its last response
 * on a kept-alive connection). It drops a connection, through the drop callback (the exporter
 * shuts its socket down; the server then closes it), when:
 *   - its request is not complete within the deadline (conn_guard_sweep): a deadline for the
 *     whole request, not an idle timeout that each byte would reset;
 *   - a new connection would leave fewer than the reserve of free places below max_open: the
 *     oldest waiting connection goes, so that a new client (a scrape) always finds a place;
 *   - a new connection is the per_ip_max - per_ip_reserve'th or later from its address: that
 *     address's oldest waiting connection goes.
 * A connection whose request is complete and is being answered is never dropped.
 *
 * Thread-safe: every call takes the guard's lock; drop is called with the lock held (it must
 * not call back into the guard). The server's close notification (conn_guard_close) must
 * come before the socket is closed, so that drop never touches a reused descriptor.
 */
#ifndef CARMA_SERVE_CONNGUARD_H
#define CARMA_SERVE_CONNGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct conn_guard_opts {
    unsigned max_open;       /* the server's connection limit */
    unsigned reserve;        /* places kept free below max_open */
    unsigned per_ip_max;     /* the server's per-address limit (0: none) */
    unsigned per_ip_reserve; /* places kept free below per_ip_max for each address */
    int64_t deadline_ns;     /* a request must be complete this long after its wait began */
};

enum conn_drop_reason {
    CONN_DROP_DEADLINE, /* request not complete within the deadline */
    CONN_DROP_RESERVE,  /* the oldest waiting connection, to keep the reserve free */
    CONN_DROP_PER_IP,   /* the oldest waiting connection of an address at its limit */
    CONN_DROP_NREASONS,
};

struct conn_guard_stats {
    uint64_t opened;
    uint64_t dropped[CONN_DROP_NREASONS];
    unsigned open;    /* tracked and not dropped */
    unsigned waiting; /* of those, waiting for a complete request */
};

typedef void (*conn_drop_fn)(void *cls, int fd);

struct conn_guard;
struct guarded_conn;

/* NULL when out of memory. */
struct conn_guard *conn_guard_new(const struct conn_guard_opts *o, conn_drop_fn drop, void *cls);
void conn_guard_free(struct conn_guard *g);

/*
 * A new connection on fd from addr (AF_INET or AF_INET6; another family is not counted per
 * address), waiting from now; drops others as the reserves require. NULL when out of memory
 * (the connection is then not guarded).
 */
struct guarded_conn *conn_guard_open(struct conn_guard *g, int fd, const struct sockaddr *addr,
                                     int64_t now);
/* Its request is complete: it is being answered, and not dropped. */
void conn_guard_answered(struct conn_guard *g, struct guarded_conn *c);
/* Its response is done; it waits for the next request from now (a kept-alive connection). */
void conn_guard_idle(struct conn_guard *g, struct guarded_conn *c, int64_t now);
/* The server closes it: forgotten and freed. Returns whether the guard had dropped it (false
 * for NULL, which is ignored). */
bool conn_guard_close(struct conn_guard *g, struct guarded_conn *c);
/* Drops every connection whose request is not complete by its deadline; returns how many. */
unsigned conn_guard_sweep(struct conn_guard *g, int64_t now);
void conn_guard_stats(struct conn_guard *g, struct conn_guard_stats *st);

#endif
