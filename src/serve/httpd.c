/*
 * serve/httpd: the exporter's HTTP server (libmicrohttpd) and its listening socket.
 *
 * MHD's pool of polling threads answers the requests from the latest snapshot of a metrics
 * store; a connection guard (serve/connguard.h) and the lingering of connections closed with
 * unread input keep one host from locking the others out (serve/httpd.h says how).
 */
#include "serve/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "serve/connguard.h"

/* MHD's polling threads (each an epoll loop over its share of the connections): one per
 * connection of a 16-scraper load, so that a thread the scheduler holds back delays one
 * connection, not a CPU's share of them (measured: a lower p99 than one per CPU on a busy
 * 2-CPU machine); idle threads cost nothing but their stacks */
#define HTTPD_THREADS 16
/* places kept free: past CONN_MAX - CONN_RESERVE connections, a new one drops the oldest
 * still waiting for its request (serve/connguard.h); likewise for one address's */
#define HTTPD_CONN_RESERVE   128
#define HTTPD_PER_IP_MAX     64 /* connections at once from one address */
#define HTTPD_PER_IP_RESERVE 16
/* a request must be complete within this of the accept, or of the last response */
#define HTTPD_REQUEST_DEADLINE_NS (10 * NS_PER_S)
#define HTTPD_CONN_TIMEOUT_S      60    /* a connection silent this long is closed */
#define HTTPD_CONN_MEMORY         32768 /* per connection: the request's headers must fit */
#define HTTPD_FD_SPARE            256   /* descriptors beyond the connections' */
/* a connection closed with request bytes unread (an error response: 431) is held this long,
 * its input read and discarded, so that the client reads the response, not a reset */
#define HTTPD_LINGER_MAX 32
#define HTTPD_LINGER_NS  (2 * NS_PER_S)
#define HTTPD_DRAIN_NS   (5 * NS_PER_S) /* responses in flight get this long to end */

struct httpd {
    struct metrics_store *store;
    httpd_log_fn log;
    void *log_cls;
    atomic_uint_fast64_t scrapes;
    atomic_int inflight; /* requests answered whose response is not finished */
    struct MHD_Daemon *d;
    struct conn_guard *guard;
    pthread_mutex_t linger_lock;
    struct {
        int fd; /* a duplicate of the closed connection's socket */
        int64_t until;
    } linger[HTTPD_LINGER_MAX];
    unsigned nlinger;
    unsigned conn_max; /* HTTPD_CONN_MAX, or fewer where descriptors are short */
    struct MHD_Response *r_ok, *r_wait, *r_404, *r_405, *r_index;
};

/* Marks a request counted in inflight (its *req_cls). */
static int inflight_marker;

static const char index_html[] =
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>carma exporter</title></head>\n"
    "<body><h1>carma exporter</h1>\n<ul>\n"
    "<li><a href=\"/metrics\">/metrics</a>: this node's power, energy and utilization</li>\n"
    "<li><a href=\"/healthz\">/healthz</a>: ok once the first sample is taken</li>\n"
    "</ul>\n</body></html>\n";

/* ---- the listening address ---- */

/* Parses a port: 0 to 65535, digits only. */
static int parse_port(const char *p, uint16_t *ret)
{
    if (!*p || strlen(p) > 5)
        return -EINVAL;
    unsigned long v = 0;
    for (const char *q = p; *q; q++) {
        if (*q < '0' || *q > '9')
            return -EINVAL;
        v = v * 10 + (unsigned long)(*q - '0');
    }
    if (v > 65535)
        return -ERANGE;
    *ret = (uint16_t)v;
    return 0;
}

/* A numeric host of family af into ss: dotted quad only for IPv4 (not inet_aton's "1.2.3"),
 * any IPv6 form with an optional scope (fe80::1%eth0). */
static int numeric_host(const char *host, int af, struct httpd_listen *a)
{
    if (af == AF_INET) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&a->ss;
        if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
            return -EINVAL;
        s4->sin_family = AF_INET;
        a->len = sizeof *s4;
        return 0;
    }
    struct addrinfo hints = {.ai_family = af, .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        return -EINVAL;
    memcpy(&a->ss, res->ai_addr, res->ai_addrlen);
    a->len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int httpd_listen_parse(const char *arg, struct httpd_listen *a, struct carma_err *e)
{
    char host[INET6_ADDRSTRLEN + 32];
    const char *port;
    int af;
    memset(a, 0, sizeof *a);
    if (arg[0] == '[') {
        const char *end = strchr(arg, ']');
        if (!end || end[1] != ':')
            return carma_err_set(
                e, -EINVAL,
                "--listen '%s': an IPv6 address is written [ADDR]:PORT, e.g. [::1]:9405", arg);
        size_t hl = (size_t)(end - arg - 1);
        if (hl == 0 || hl >= sizeof host)
            return carma_err_set(e, -EINVAL, "--listen '%s': '%.*s' is not an IPv6 address", arg,
                                 (int)hl, arg + 1);
        memcpy(host, arg + 1, hl);
        host[hl] = '\0';
        port = end + 2;
        af = AF_INET6;
    } else {
        const char *colon = strrchr(arg, ':');
        if (!colon)
            return carma_err_set(e, -EINVAL,
                                 "--listen '%s': expected ADDR:PORT, [ADDR6]:PORT or :PORT (e.g. "
                                 "127.0.0.1:9405, [::1]:9405, :9405)",
                                 arg);
        size_t hl = (size_t)(colon - arg);
        if (memchr(arg, ':', hl))
            return carma_err_set(
                e, -EINVAL, "--listen '%s': write an IPv6 address in brackets, e.g. [::1]:9405",
                arg);
        if (hl >= sizeof host)
            return carma_err_set(e, -EINVAL, "--listen '%s': '%.*s' is not an IPv4 address", arg,
                                 (int)hl, arg);
        memcpy(host, arg, hl);
        host[hl] = '\0';
        port = colon + 1;
        af = hl ? AF_INET : AF_UNSPEC;
    }
    uint16_t p;
    int r = parse_port(port, &p);
    if (r < 0)
        return carma_err_set(e, -EINVAL, "--listen '%s': '%s' is not a port number (0 to 65535)",
                             arg, port);
    if (af == AF_UNSPEC) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a->ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_addr = in6addr_any;
        s6->sin6_port = htons(p);
        a->len = sizeof *s6;
        a->any = true;
        return 0;
    }
    if (numeric_host(host, af, a) < 0)
        return carma_err_set(e, -EINVAL, "--listen '%s': '%s' is not an %s address%s", arg, host,
                             af == AF_INET ? "IPv4" : "IPv6",
                             af == AF_INET ? " (host names are not resolved; an IPv6 address "
                                             "goes in brackets: [::1]:9405)"
                                           : "");
    if (af == AF_INET)
        ((struct sockaddr_in *)&a->ss)->sin_port = htons(p);
    else
        ((struct sockaddr_in6 *)&a->ss)->sin6_port = htons(p);
    return 0;
}

/* "127.0.0.1:9405", "[::1]:9405" */
static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
    char host[INET6_ADDRSTRLEN + 24] = "?";
    unsigned port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
        port = ntohs(s4->sin_port);
        snprintf(buf, cap, "%s:%u", host, port);
    } else {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
        getnameinfo((const struct sockaddr *)s6, sizeof *s6, host, sizeof host, NULL, 0,
                    NI_NUMERICHOST);
        port = ntohs(s6->sin6_port);
        snprintf(buf, cap, "[%s]:%u", host, port);
    }
}

static const char *listen_hint(int err)
{
    switch (err) {
    case -EADDRINUSE:
        return " (another process listens on that port: choose another with --listen)";
    case -EADDRNOTAVAIL:
        return " (no interface of this machine has that address)";
    case -EACCES:
        return " (ports below 1024 need privileges: choose a higher port)";
    default:
        return "";
    }
}

/* A listening socket on a (v6only as asked). Returns the fd or -errno. */
static int open_listener(const struct sockaddr_storage *ss, socklen_t len, bool dual)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    int r = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
        r = -errno;
    if (r == 0 && ss->ss_family == AF_INET6) {
        int v6only = dual ? 0 : 1;
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) < 0)
            r = -errno;
    }
    if (r == 0 && bind(fd, (const struct sockaddr *)ss, len) < 0)
        r = -errno;
    if (r == 0 && listen(fd, 1024) < 0)
        r = -errno;
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

int httpd_listen_open(const struct httpd_listen *a, const char *arg, char *text, size_t cap,
                      struct carma_err *e)
{
    int fd = open_listener(&a->ss, a->len, a->any);
    if (fd < 0 && a->any && (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)) {
        struct sockaddr_storage ss4;
        memset(&ss4, 0, sizeof ss4);
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss4;
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(INADDR_ANY);
        s4->sin_port = ((const struct sockaddr_in6 *)&a->ss)->sin6_port;
        fd = open_listener(&ss4, sizeof *s4, false);
    }
    if (fd < 0)
        return carma_err_set(e, fd, "exporter: cannot listen on %s: %s%s", arg, strerror(-fd),
                             listen_hint(fd));
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    if (getsockname(fd, (struct sockaddr *)&bound, &bl) < 0)
        memcpy(&bound, &a->ss, sizeof bound);
    addr_text(&bound, text, cap);
    return fd;
}

/* ---- HTTP ---- */

static void snapshot_done(void *cls)
{
    metrics_snapshot_release(cls);
}

static enum MHD_Result send_metrics(struct httpd *x, struct MHD_Connection *conn)
{
    struct metrics_snapshot *snap = metrics_store_acquire(x->store);
    if (!snap)
        return MHD_queue_response(conn, MHD_HTTP_SERVICE_UNAVAILABLE, x->r_wait);
    struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback_cls(
        snap->text.len, snap->text.data, snapshot_done, snap);
    if (!resp) {
        metrics_snapshot_release(snap);
        return MHD_NO;
    }
    enum MHD_Result ret =
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
    if (ret == MHD_YES)
        ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    if (ret == MHD_YES)
        atomic_fetch_add(&x->scrapes, 1);
    /* the snapshot is released when MHD is done with the response */
    MHD_destroy_response(resp);
    return ret;
}

/* The guard's record of a connection (set when it was accepted), or NULL. */
static struct guarded_conn *guarded(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    struct httpd *x = cls;
    (void)version;
    (void)upload_data;
    bool get_or_head =
        strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (!*req_cls) {
        *req_cls = &inflight_marker;
        atomic_fetch_add(&x->inflight, 1);
        /* another method is refused at once, its body unread (MHD then closes the
         * connection); GET and HEAD are answered at the next call, once the request is
         * complete, so that the connection is kept alive */
        if (!get_or_head) {
            conn_guard_answered(x->guard, guarded(conn));
            return MHD_queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, x->r_405);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* a body sent with GET is not for us: discarded */
        return MHD_YES;
    }
    /* the request is complete (headers and body): the deadline no longer applies */
    conn_guard_answered(x->guard, guarded(conn));
    if (strcmp(url, "/metrics") == 0)
        return send_metrics(x, conn);
    if (strcmp(url, "/healthz") == 0) {
        bool ready = atomic_load(&x->store->cur) != NULL;
        return MHD_queue_response(conn, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                                  ready ? x->r_ok : x->r_wait);
    }
    if (strcmp(url, "/") == 0)
        return MHD_queue_response(conn, MHD_HTTP_OK, x->r_index);
    return MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, x->r_404);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode why)
{
    struct httpd *x = cls;
    /* a kept-alive connection waits for its next request from now */
    if (why == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        conn_guard_idle(x->guard, guarded(conn), time_mono_ns());
    if (*req_cls == &inflight_marker) {
        atomic_fetch_sub(&x->inflight, 1);
        *req_cls = NULL;
    }
}

/*
 * MHD closes a connection (its response, an error one such as 431, is sent): where request
 * bytes are still unread, closing the socket would send a reset, and the client, still
 * sending, could lose the response. A duplicate of the socket keeps it open instead: its
 * output is shut (the client reads the end of the response), its input read and discarded by
 * the main thread (linger_sweep) until the client closes, for HTTPD_LINGER_NS at most.
 */
static void linger_maybe(struct httpd *x, int fd)
{
    int unread = 0;
    if (ioctl(fd, FIONREAD, &unread) < 0 || unread <= 0)
        return;
    pthread_mutex_lock(&x->linger_lock);
    if (x->nlinger < HTTPD_LINGER_MAX) {
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (d >= 0) {
            shutdown(d, SHUT_WR);
            x->linger[x->nlinger].fd = d;
            x->linger[x->nlinger].until = time_mono_ns() + HTTPD_LINGER_NS;
            x->nlinger++;
        }
    }
    pthread_mutex_unlock(&x->linger_lock);
}

/* Reads and discards the lingering sockets' input; closes those at their end or past their
 * time (all of them when final). */
static void linger_sweep(struct httpd *x, int64_t now, bool final)
{
    static char sink[65536];
    pthread_mutex_lock(&x->linger_lock);
    for (unsigned i = 0; i < x->nlinger;) {
        bool done = final || now >= x->linger[i].until;
        for (int k = 0; !done && k < 16; k++) {
            ssize_t n = recv(x->linger[i].fd, sink, sizeof sink, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                done = true;
            if (n < 0)
                break;
        }
        if (done) {
            close(x->linger[i].fd);
            x->linger[i] = x->linger[--x->nlinger];
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&x->linger_lock);
}

/* Accepted and closed connections, for the guard (closed: before MHD closes the socket). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct httpd *x = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *peer =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        *socket_context = fd ? conn_guard_open(x->guard, fd->connect_fd,
                                               peer ? peer->client_addr : NULL, time_mono_ns())
                             : NULL;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        bool dropped = conn_guard_close(x->guard, *socket_context);
        *socket_context = NULL;
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!dropped && fd)
            linger_maybe(x, fd->connect_fd);
    }
}

/* The guard drops a connection: its socket is shut down, and MHD, reading the end of the
 * stream, closes it in its own thread (the descriptor stays valid: MHD tells the guard of a
 * close before it closes the socket). */
static void drop_connection(void *cls, int fd)
{
    (void)cls;
    shutdown(fd, SHUT_RDWR);
}

/* MHD's log, handed to the owner's callback. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct httpd *x = cls;
    if (x->log)
        x->log(x->log_cls, fmt, ap);
}

/* A response with a constant body, kept for the server's life. NULL on failure. */
static struct MHD_Response *static_response(const char *body, const char *type)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    if (r && MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES) {
        MHD_destroy_response(r);
        r = NULL;
    }
    return r;
}

static int make_responses(struct httpd *x)
{
    x->r_ok = static_response("ok\n", "text/plain; charset=utf-8");
    x->r_wait = static_response("no sample yet\n", "text/plain; charset=utf-8");
    x->r_404 = static_response("Not Found\n", "text/plain; charset=utf-8");
    x->r_405 = static_response("Method Not Allowed\n", "text/plain; charset=utf-8");
    x->r_index = static_response(index_html, "text/html; charset=utf-8");
    if (!x->r_ok || !x->r_wait || !x->r_404 || !x->r_405 || !x->r_index)
        return -ENOMEM;
    if (MHD_add_response_header(x->r_405, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES ||
        MHD_add_response_header(x->r_wait, MHD_HTTP_HEADER_RETRY_AFTER, "1") != MHD_YES)
        return -ENOMEM;
    return 0;
}

static void free_responses(struct httpd *x)
{
    struct MHD_Response **all[] = {&x->r_ok, &x->r_wait, &x->r_404, &x->r_405, &x->r_index};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (*all[i])
            MHD_destroy_response(*all[i]);
        *all[i] = NULL;
    }
}

int httpd_start(struct httpd *x, int fd)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_TURBO;
    if (x->log)
        flags |= MHD_USE_ERROR_LOG;
    x->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, x, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, x,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)HTTPD_THREADS,
        MHD_OPTION_CONNECTION_LIMIT, x->conn_max, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)HTTPD_PER_IP_MAX, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTPD_CONN_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTPD_CONN_MEMORY, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, x, MHD_OPTION_NOTIFY_CONNECTION, on_connection, x,
        MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1, MHD_OPTION_END);
    return x->d ? 0 : -EINVAL;
}

unsigned httpd_conn_budget(unsigned long long *ret_nofile)
{
    const rlim_t want = HTTPD_CONN_MAX + HTTPD_FD_SPARE;
    struct rlimit rl;
    *ret_nofile = 0;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return HTTPD_CONN_MAX;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        struct rlimit up = {
            .rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max,
            .rlim_max = rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl.rlim_cur = up.rlim_cur;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
        return HTTPD_CONN_MAX;
    *ret_nofile = (unsigned long long)rl.rlim_cur;
    return rl.rlim_cur > 2 * HTTPD_FD_SPARE ? (unsigned)(rl.rlim_cur - HTTPD_FD_SPARE)
                                            : HTTPD_THREADS;
}

struct httpd *httpd_new(const struct httpd_opts *o, struct carma_err *e)
{
    struct httpd *x = calloc(1, sizeof *x);
    if (!x) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    x->store = o->store;
    x->log = o->log;
    x->log_cls = o->log_cls;
    x->conn_max = o->conn_max;
    atomic_init(&x->scrapes, 0);
    atomic_init(&x->inflight, 0);
    pthread_mutex_init(&x->linger_lock, NULL);
    struct conn_guard_opts go = {
        .max_open = x->conn_max,
        .reserve = x->conn_max / 8 < HTTPD_CONN_RESERVE ? x->conn_max / 8 : HTTPD_CONN_RESERVE,
        .per_ip_max = HTTPD_PER_IP_MAX,
        .per_ip_reserve = HTTPD_PER_IP_RESERVE,
        .deadline_ns = HTTPD_REQUEST_DEADLINE_NS,
    };
    if (make_responses(x) < 0 || !(x->guard = conn_guard_new(&go, drop_connection, x))) {
        httpd_free(x);
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    return x;
}

void httpd_sweep(struct httpd *h, int64_t now)
{
    conn_guard_sweep(h->guard, now);
    linger_sweep(h, now, false);
}

uint64_t httpd_scrapes(const struct httpd *h)
{
    return (uint64_t)atomic_load(&h->scrapes);
}

void httpd_stop(struct httpd *x)
{
    if (!x->d)
        return;
    MHD_socket lfd = MHD_quiesce_daemon(x->d);
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd);
    int64_t deadline = time_mono_ns() + HTTPD_DRAIN_NS;
    while (atomic_load(&x->inflight) > 0 && time_mono_ns() < deadline) {
        struct timespec ts = {0, 5 * NS_PER_MS};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(x->d);
    x->d = NULL;
}

void httpd_free(struct httpd *x)
{
    if (!x)
        return;
    httpd_stop(x);
    free_responses(x);
    linger_sweep(x, 0, true);
    pthread_mutex_destroy(&x->linger_lock);
    conn_guard_free(x->guard);
    free(x);
}
