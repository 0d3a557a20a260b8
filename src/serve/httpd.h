/*
 * serve/httpd: the exporter's HTTP server (libmicrohttpd): GET /metrics, /healthz and /.
 *
 * A pool of polling threads (epoll) answers the requests: a scrape takes a reference to the
 * latest snapshot of a metrics store (serve/metrics.h) and hands its bytes to MHD, whose free
 * callback drops the reference when the response is done; it never reads a sensor. Every
 * connection is tracked by a guard (serve/connguard.h): MHD's connection notifications open and
 * close its records, the request handler marks a request complete, and httpd_sweep (called by
 * the owner's thread while it waits) drops the connections whose request is past its deadline;
 * a new connection near the limits drops the oldest one still waiting, so that a scrape always
 * finds a place. A connection closed with request bytes unread (an error response such as 431)
 * lingers a while, its input discarded, so that the client reads the response, not a reset.
 *
 * Also the listening address: parsing --listen and opening the socket. Nothing here prints:
 * errors come back in a struct carma_err, MHD's log through a callback.
 */
#ifndef CARMA_SERVE_HTTPD_H
#define CARMA_SERVE_HTTPD_H

#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/err.h"
#include "serve/metrics.h"

#define HTTPD_CONN_MAX      1024 /* connections at once */
#define HTTPD_ADDR_TEXT_MAX (INET6_ADDRSTRLEN + 16)
#define HTTPD_SWEEP_MS      250 /* how often httpd_sweep should be called */

/* A listening address. */
struct httpd_listen {
    struct sockaddr_storage ss;
    socklen_t len;
    bool any; /* ":PORT": every address, IPv6 dual-stack where possible */
};

/*
 * Parses --listen: "A.B.C.D:PORT", "[IPV6]:PORT" or ":PORT" (port 0 to 65535; host names are
 * not resolved). Returns 0, or -EINVAL with e saying what is wrong ("--listen 'ARG': ...").
 */
int httpd_listen_parse(const char *arg, struct httpd_listen *ret, struct carma_err *e);

/*
 * Opens the listening socket for a; ":PORT" is IPv6 dual-stack, or IPv4 where the machine has
 * no IPv6. Writes the bound address (the real port when 0 was asked) to text ("127.0.0.1:9405",
 * "[::1]:9405"). arg is a's text, for the message. Returns the fd (O_CLOEXEC, non-blocking), or
 * a negative errno with e set ("exporter: cannot listen on ARG: reason (hint)").
 */
int httpd_listen_open(const struct httpd_listen *a, const char *arg, char *text, size_t cap,
                      struct carma_err *e);

/*
 * How many connections the descriptors allow: the soft RLIMIT_NOFILE is raised (up to the hard
 * one) to HTTPD_CONN_MAX and a spare; where the hard limit is lower, fewer connections, and
 * *ret_nofile is the limit (else 0).
 */
unsigned httpd_conn_budget(unsigned long long *ret_nofile);

/* MHD's error log (its own format and ap, lines ending in '\n'). */
typedef void (*httpd_log_fn)(void *cls, const char *fmt, va_list ap);

struct httpd_opts {
    struct metrics_store *store; /* what /metrics serves; outlives the server */
    unsigned conn_max;           /* httpd_conn_budget */
    httpd_log_fn log;            /* NULL: MHD logs nothing */
    void *log_cls;
};

struct httpd;

/* The server's responses and connection guard, not yet serving. NULL with e set (-ENOMEM,
 * "out of memory"). */
struct httpd *httpd_new(const struct httpd_opts *o, struct carma_err *e);

/* Starts serving on the listening socket lfd, which becomes the server's. Returns 0, or
 * -EINVAL when libmicrohttpd refused its options (lfd is still the caller's). */
int httpd_start(struct httpd *h, int lfd);

/* Drops the connections past their deadline and ends the lingering ones (now: mono ns). */
void httpd_sweep(struct httpd *h, int64_t now);

/* The /metrics responses queued so far (any thread). */
uint64_t httpd_scrapes(const struct httpd *h);

/* Stops accepting, lets the responses in flight end (for at most 5 s), stops the server.
 * Nothing when it is not serving. */
void httpd_stop(struct httpd *h);

/* Stops h if it is serving and frees it (NULL-safe). */
void httpd_free(struct httpd *h);

#endif
