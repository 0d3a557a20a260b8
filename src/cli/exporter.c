/*
 * carma exporter: this node's power, energy and utilization as Prometheus metrics over HTTP.
 *
 * Two kinds of threads share one snapshot store (serve/metrics.h). The sampler thread ticks
 * on the sampler's timerfd; after each tick it renders the whole /metrics body into a
 * snapshot and publishes it. libmicrohttpd's pool of polling threads (epoll) answers the
 * requests: a scrape takes a reference to the latest snapshot and hands its bytes to MHD,
 * whose free callback drops the reference when the response is done; it never reads a
 * sensor. The main thread waits for SIGINT/SIGTERM, then stops accepting, lets the responses
 * in flight finish, stops the server and the sampler, and exits 0.
 *
 * So that one host cannot lock the others out, every connection is tracked by a guard
 * (serve/connguard.h): MHD's connection notifications open and close its records, the request
 * handler marks a request complete, and the main thread, while it waits, drops the
 * connections whose request is past its deadline; a new connection near the limits drops the
 * oldest one still waiting, so that a scrape always finds a place.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "core/timeutil.h"
#include "serve/connguard.h"
#include "serve/metrics.h"

#define EXPORTER_PORT_DEFAULT 9405
/* MHD's polling threads (each an epoll loop over its share of the connections): one per
 * connection of a 16-scraper load, so that a thread the scheduler holds back delays one
 * connection, not a CPU's share of them (measured: a lower p99 than one per CPU on a busy
 * 2-CPU machine); idle threads cost nothing but their stacks */
#define EXPORTER_THREADS  16
#define EXPORTER_CONN_MAX 1024 /* connections at once */
/* places kept free: past CONN_MAX - CONN_RESERVE connections, a new one drops the oldest
 * still waiting for its request (serve/connguard.h); likewise for one address's */
#define EXPORTER_CONN_RESERVE   128
#define EXPORTER_PER_IP_MAX     64 /* connections at once from one address */
#define EXPORTER_PER_IP_RESERVE 16
/* a request must be complete within this of the accept, or of the last response */
#define EXPORTER_REQUEST_DEADLINE_NS (10 * NS_PER_S)
#define EXPORTER_SWEEP_MS            250   /* how often the deadline is checked */
#define EXPORTER_CONN_TIMEOUT_S      60    /* a connection silent this long is closed */
#define EXPORTER_CONN_MEMORY         32768 /* per connection: the request's headers must fit */
#define EXPORTER_FD_SPARE            256   /* descriptors beyond the connections' */
/* a connection closed with request bytes unread (an error response: 431) is held this long,
 * its input read and discarded, so that the client reads the response, not a reset */
#define EXPORTER_LINGER_MAX    32
#define EXPORTER_LINGER_NS     (2 * NS_PER_S)
#define EXPORTER_DRAIN_NS      (5 * NS_PER_S) /* responses in flight get this long to end */
#define EXPORTER_ADDR_TEXT_MAX (INET6_ADDRSTRLEN + 16)

struct exporter {
    struct common_opts c;
    const char *listen_arg;
    bool compat_srtctl;
    char node[256];
    struct sampler *s;
    struct metrics_renderer *r;
    struct metrics_store store;
    struct metrics_hist hist; /* sampler thread only */
    atomic_uint_fast64_t scrapes;
    atomic_int inflight; /* requests answered whose response is not finished */
    bool render_failed;  /* sampler thread: the out-of-memory warning was given */
    int stopfd;          /* eventfd: the sampler thread ends when it is readable */
    struct MHD_Daemon *d;
    struct conn_guard *guard;
    pthread_mutex_t linger_lock;
    struct {
        int fd; /* a duplicate of the closed connection's socket */
        int64_t until;
    } linger[EXPORTER_LINGER_MAX];
    unsigned nlinger;
    unsigned conn_max; /* EXPORTER_CONN_MAX, or fewer where descriptors are short */
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

static void help(void)
{
    printf("usage: carma exporter [OPTIONS]\n\n"
           "Serves this node's power, energy and CPU/GPU utilization as Prometheus metrics:\n"
           "GET /metrics, /healthz, /. Every channel is sampled on the --interval clock; a\n"
           "scrape sends the latest sample and never reads a sensor. SIGINT/SIGTERM stop it.\n\n"
           "options:\n" COMMON_OPTIONS_HELP
           "  --listen ADDR:PORT  where to listen: 127.0.0.1:9405, [::1]:9405 or :9405 (every\n"
           "                      address, IPv4 and IPv6; the default is :9405); port 0 picks\n"
           "                      a free port\n"
           "  --compat srtctl     also serve srt-slurm's cpu_power_acpi_watts family for the\n"
           "                      ACPI power_meter channels (NVIDIA Grace)\n\n"
           "limits (fixed): 1024 connections at once, 64 from one address; a request must be\n"
           "complete (headers and body) within 10 s of the connection's accept or of its last\n"
           "response, else the connection is closed; past 896 connections (48 from one\n"
           "address) a new one closes the oldest still waiting for its request, so a scrape\n"
           "always finds a place; request headers over 32 KiB get 431; a connection silent\n"
           "for 60 s is closed.\n");
}

/* ---- the listening address ---- */

struct listen_addr {
    struct sockaddr_storage ss;
    socklen_t len;
    bool any; /* ":PORT": every address, IPv6 dual-stack where possible */
};

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
static int numeric_host(const char *host, int af, struct listen_addr *a)
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

/*
 * Parses --listen: "A.B.C.D:PORT", "[IPV6]:PORT" or ":PORT". Returns 0, or -EINVAL after
 * printing what is wrong.
 */
static int parse_listen(const char *arg, struct listen_addr *a)
{
    char host[INET6_ADDRSTRLEN + 32];
    const char *port;
    int af;
    memset(a, 0, sizeof *a);
    if (arg[0] == '[') {
        const char *end = strchr(arg, ']');
        if (!end || end[1] != ':') {
            cli_error("--listen '%s': an IPv6 address is written [ADDR]:PORT, e.g. [::1]:9405",
                      arg);
            return -EINVAL;
        }
        size_t hl = (size_t)(end - arg - 1);
        if (hl == 0 || hl >= sizeof host) {
            cli_error("--listen '%s': '%.*s' is not an IPv6 address", arg, (int)hl, arg + 1);
            return -EINVAL;
        }
        memcpy(host, arg + 1, hl);
        host[hl] = '\0';
        port = end + 2;
        af = AF_INET6;
    } else {
        const char *colon = strrchr(arg, ':');
        if (!colon) {
            cli_error("--listen '%s': expected ADDR:PORT, [ADDR6]:PORT or :PORT (e.g. "
                      "127.0.0.1:9405, [::1]:9405, :9405)",
                      arg);
            return -EINVAL;
        }
        size_t hl = (size_t)(colon - arg);
        if (memchr(arg, ':', hl)) {
            cli_error("--listen '%s': write an IPv6 address in brackets, e.g. [::1]:9405", arg);
            return -EINVAL;
        }
        if (hl >= sizeof host) {
            cli_error("--listen '%s': '%.*s' is not an IPv4 address", arg, (int)hl, arg);
            return -EINVAL;
        }
        memcpy(host, arg, hl);
        host[hl] = '\0';
        port = colon + 1;
        af = hl ? AF_INET : AF_UNSPEC;
    }
    uint16_t p;
    int r = parse_port(port, &p);
    if (r < 0) {
        cli_error("--listen '%s': '%s' is not a port number (0 to 65535)", arg, port);
        return -EINVAL;
    }
    if (af == AF_UNSPEC) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a->ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_addr = in6addr_any;
        s6->sin6_port = htons(p);
        a->len = sizeof *s6;
        a->any = true;
        return 0;
    }
    if (numeric_host(host, af, a) < 0) {
        cli_error("--listen '%s': '%s' is not an %s address%s", arg, host,
                  af == AF_INET ? "IPv4" : "IPv6",
                  af == AF_INET ? " (host names are not resolved; an IPv6 address goes in "
                                  "brackets: [::1]:9405)"
                                : "");
        return -EINVAL;
    }
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

/*
 * Opens the listening socket for a; ":PORT" is IPv6 dual-stack, or IPv4 where the machine has
 * no IPv6. Writes the bound address (the real port when 0 was asked) to text. Returns the fd,
 * or -errno after printing why.
 */
static int listen_on(const struct listen_addr *a, const char *arg, char *text, size_t cap)
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
    if (fd < 0) {
        cli_error("exporter: cannot listen on %s: %s%s", arg, strerror(-fd), listen_hint(fd));
        return fd;
    }
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

static enum MHD_Result send_metrics(struct exporter *x, struct MHD_Connection *conn)
{
    struct metrics_snapshot *snap = metrics_store_acquire(&x->store);
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
    struct exporter *x = cls;
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
        bool ready = atomic_load(&x->store.cur) != NULL;
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
    struct exporter *x = cls;
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
 * the main thread (linger_sweep) until the client closes, for EXPORTER_LINGER_NS at most.
 */
static void linger_maybe(struct exporter *x, int fd)
{
    int unread = 0;
    if (ioctl(fd, FIONREAD, &unread) < 0 || unread <= 0)
        return;
    pthread_mutex_lock(&x->linger_lock);
    if (x->nlinger < EXPORTER_LINGER_MAX) {
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (d >= 0) {
            shutdown(d, SHUT_WR);
            x->linger[x->nlinger].fd = d;
            x->linger[x->nlinger].until = time_mono_ns() + EXPORTER_LINGER_NS;
            x->nlinger++;
        }
    }
    pthread_mutex_unlock(&x->linger_lock);
}

/* Reads and discards the lingering sockets' input; closes those at their end or past their
 * time (all of them when final). */
static void linger_sweep(struct exporter *x, int64_t now, bool final)
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
    struct exporter *x = cls;
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

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    fputs("carma: exporter: http: ", stderr);
    vfprintf(stderr, fmt, ap);
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

static int make_responses(struct exporter *x)
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

static void free_responses(struct exporter *x)
{
    struct MHD_Response **all[] = {&x->r_ok, &x->r_wait, &x->r_404, &x->r_405, &x->r_index};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (*all[i])
            MHD_destroy_response(*all[i]);
        *all[i] = NULL;
    }
}

static struct MHD_Daemon *start_server(struct exporter *x, int fd)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_TURBO;
    if (x->c.verbose > 0)
        flags |= MHD_USE_ERROR_LOG;
    return MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, x, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)EXPORTER_THREADS,
        MHD_OPTION_CONNECTION_LIMIT, x->conn_max, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)EXPORTER_PER_IP_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)EXPORTER_CONN_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)EXPORTER_CONN_MEMORY, MHD_OPTION_NOTIFY_COMPLETED, on_completed, x,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, x, MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1,
        MHD_OPTION_END);
}

/* ---- sampling ---- */

/* One tick, rendered and published; its cost goes into the histogram (next snapshot). */
static void sample_once(struct exporter *x)
{
    int64_t t0 = time_mono_ns();
    sampler_tick(x->s);
    struct metrics_snapshot *snap = metrics_store_begin(&x->store);
    if (snap) {
        struct metrics_self self = {
            .sample_duration = &x->hist,
            .scrapes = (uint64_t)atomic_load(&x->scrapes),
        };
        if (metrics_render(x->r, x->s, &self, &snap->text) == 0)
            metrics_store_publish(&x->store, snap);
        else if (!x->render_failed)
            cli_error("exporter: out of memory rendering the metrics: the last sample is served");
        x->render_failed = x->render_failed || snap->text.oom;
    }
    metrics_hist_observe(&x->hist, time_mono_ns() - t0);
}

static void *sampler_main(void *arg)
{
    struct exporter *x = arg;
    sample_once(x);
    struct pollfd p[2] = {{.fd = sampler_fd(x->s), .events = POLLIN},
                          {.fd = x->stopfd, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            cli_error("exporter: poll: %s", strerror(errno));
            break;
        }
        if (p[1].revents)
            break;
        if (p[0].revents & POLLIN) {
            sampler_ack(x->s);
            sample_once(x);
        }
    }
    return NULL;
}

/* ---- the command ---- */

static void node_name(char *buf, size_t cap)
{
    const char *env = getenv("SLURMD_NODENAME");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return;
    }
    if (gethostname(buf, cap) < 0 || !buf[0])
        snprintf(buf, cap, "localhost");
    buf[cap - 1] = '\0';
    char *dot = strchr(buf, '.');
    if (dot && dot != buf)
        *dot = '\0';
}

/* Returns 0 to go on, 1 after --help, -1 (usage error, printed) otherwise. */
static int parse_args(struct exporter *x, int argc, char **argv)
{
    enum { OPT_LISTEN = OPT_COMMON_LAST + 1, OPT_COMPAT };
    static const struct option longopts[] = {
        COMMON_LONG_OPTIONS,
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"compat", required_argument, NULL, OPT_COMPAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "qvh", longopts, "exporter")) != -1) {
        int r = common_opts_handle(&x->c, c, optarg);
        if (r < 0)
            return -1;
        if (r > 0)
            continue;
        switch (c) {
        case OPT_LISTEN:
            x->listen_arg = optarg;
            break;
        case OPT_COMPAT:
            if (strcmp(optarg, "srtctl") != 0) {
                cli_error("--compat: '%s' is not known (known: srtctl)", optarg);
                return -1;
            }
            x->compat_srtctl = true;
            break;
        case 'h':
            help();
            return 1;
        default:
            return -1;
        }
    }
    if (x->c.json) {
        cli_error("exporter: --json is not an option of exporter (it serves the Prometheus text "
                  "format)");
        return -1;
    }
    if (optind < argc) {
        cli_error("exporter: unexpected argument '%s'", argv[optind]);
        return -1;
    }
    return 0;
}

/* Says why nothing can be exported: every source's reason. */
static void no_channels(const struct sampler *s)
{
    cli_error("exporter: no power channel to export below %s:", s->root.path);
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].status != 0)
            fprintf(stderr, "  %-6s %s\n", s->src[i].ops->name, s->src[i].reason);
}

static void describe(const struct exporter *x)
{
    const struct sampler *s = x->s;
    fprintf(stderr, "carma: exporter: node %s, %zu channels, every %.3f s\n", x->node, s->set.n,
            (double)s->interval_ns / 1e9);
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].status != 0)
            fprintf(stderr, "  unavailable: %-6s %s\n", s->src[i].ops->name, s->src[i].reason);
}

/* Waits for SIGINT or SIGTERM on fd; meanwhile drops the connections past their deadline. */
static int wait_signal(struct exporter *x, int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    struct signalfd_siginfo si;
    for (;;) {
        int r = poll(&p, 1, EXPORTER_SWEEP_MS);
        if (r < 0 && errno != EINTR)
            return -errno;
        int64_t now = time_mono_ns();
        conn_guard_sweep(x->guard, now);
        linger_sweep(x, now, false);
        if (r <= 0)
            continue;
        ssize_t n = read(fd, &si, sizeof si);
        if (n == (ssize_t)sizeof si)
            return (int)si.ssi_signo;
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return -errno;
    }
}

/*
 * How many connections the descriptors allow: the soft RLIMIT_NOFILE is raised (up to the
 * hard one) to EXPORTER_CONN_MAX + EXPORTER_FD_SPARE; where the hard limit is lower, fewer
 * connections, said with -v.
 */
static unsigned connection_budget(const struct exporter *x)
{
    const rlim_t want = EXPORTER_CONN_MAX + EXPORTER_FD_SPARE;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return EXPORTER_CONN_MAX;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        struct rlimit up = {
            .rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max,
            .rlim_max = rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl.rlim_cur = up.rlim_cur;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
        return EXPORTER_CONN_MAX;
    unsigned n = rl.rlim_cur > 2 * EXPORTER_FD_SPARE ? (unsigned)(rl.rlim_cur - EXPORTER_FD_SPARE)
                                                     : EXPORTER_THREADS;
    if (x->c.verbose > 0)
        fprintf(stderr,
                "carma: exporter: open files limited to %llu (ulimit -n): %u connections at "
                "once, not %d\n",
                (unsigned long long)rl.rlim_cur, n, EXPORTER_CONN_MAX);
    return n;
}

/* Stops accepting, lets the responses in flight end (for at most EXPORTER_DRAIN_NS), stops. */
static void stop_server(struct exporter *x)
{
    MHD_socket lfd = MHD_quiesce_daemon(x->d);
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd);
    int64_t deadline = time_mono_ns() + EXPORTER_DRAIN_NS;
    while (atomic_load(&x->inflight) > 0 && time_mono_ns() < deadline) {
        struct timespec ts = {0, 5 * NS_PER_MS};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(x->d);
    x->d = NULL;
}

int cmd_exporter(int argc, char **argv)
{
    struct exporter *x = calloc(1, sizeof *x);
    if (!x) {
        cli_error("out of memory");
        return 1;
    }
    int rc = 1, lfd = -1, sigfd = -1;
    bool thread_started = false;
    pthread_t thr;
    common_opts_init(&x->c);
    x->stopfd = -1;
    pthread_mutex_init(&x->linger_lock, NULL);
    metrics_store_init(&x->store);
    atomic_init(&x->scrapes, 0);
    atomic_init(&x->inflight, 0);

    int pr = parse_args(x, argc, argv);
    if (pr != 0) {
        rc = pr > 0 ? 0 : 2;
        goto out;
    }
    struct listen_addr la;
    char default_listen[16];
    if (!x->listen_arg) {
        snprintf(default_listen, sizeof default_listen, ":%d", EXPORTER_PORT_DEFAULT);
        x->listen_arg = default_listen;
    }
    if (parse_listen(x->listen_arg, &la) < 0)
        goto out;
    node_name(x->node, sizeof x->node);

    struct carma_err e = {0};
    x->s = sampler_new(&x->c.sampler, &e);
    if (!x->s) {
        cli_error("%s", e.msg);
        rc = e.code == -ENOMEM ? 1 : 2;
        goto out;
    }
    if (common_meters_check(x->s, "--meter") < 0) {
        rc = 2;
        goto out;
    }
    if (x->s->set.n == 0) {
        no_channels(x->s);
        goto out;
    }
    struct metrics_opts mo = {
        .node = x->node, .version = CARMA_VERSION, .compat_srtctl = x->compat_srtctl};
    x->r = metrics_renderer_new(x->s, &mo, &e);
    if (!x->r) {
        cli_error("%s", e.msg);
        goto out;
    }
    if (x->compat_srtctl && metrics_renderer_compat_count(x->r) == 0)
        cli_error("exporter: --compat srtctl: no ACPI power_meter channel below %s: "
                  "cpu_power_acpi_watts will have no samples",
                  x->s->root.path);
    if (x->c.verbose > 0)
        describe(x);

    /* SIGINT/SIGTERM are read from a signalfd by the main thread: blocked in every thread
     * (the server's and the sampler's inherit the mask) */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
    x->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (sigfd < 0 || x->stopfd < 0) {
        cli_error("exporter: %s", strerror(errno));
        goto out;
    }
    if (make_responses(x) < 0) {
        cli_error("out of memory");
        goto out;
    }

    x->conn_max = connection_budget(x);
    struct conn_guard_opts go = {
        .max_open = x->conn_max,
        .reserve =
            x->conn_max / 8 < EXPORTER_CONN_RESERVE ? x->conn_max / 8 : EXPORTER_CONN_RESERVE,
        .per_ip_max = EXPORTER_PER_IP_MAX,
        .per_ip_reserve = EXPORTER_PER_IP_RESERVE,
        .deadline_ns = EXPORTER_REQUEST_DEADLINE_NS,
    };
    x->guard = conn_guard_new(&go, drop_connection, x);
    if (!x->guard) {
        cli_error("out of memory");
        goto out;
    }

    char bound[EXPORTER_ADDR_TEXT_MAX];
    lfd = listen_on(&la, x->listen_arg, bound, sizeof bound);
    if (lfd < 0)
        goto out;
    int r = sampler_start(x->s);
    if (r < 0) {
        cli_error("exporter: cannot arm the sampling timer: %s", strerror(-r));
        goto out;
    }
    x->d = start_server(x, lfd);
    if (!x->d) {
        cli_error("exporter: cannot start the HTTP server on %s (libmicrohttpd refused its "
                  "options; run with -v for its log)",
                  bound);
        goto out;
    }
    lfd = -1; /* the server's now */
    r = pthread_create(&thr, NULL, sampler_main, x);
    if (r != 0) {
        cli_error("exporter: cannot start the sampler thread: %s", strerror(r));
        goto out;
    }
    thread_started = true;
    fprintf(stderr, "listening on %s\n", bound);
    fflush(stderr);

    int sig = wait_signal(x, sigfd);
    if (sig < 0)
        cli_error("exporter: waiting for signals: %s", strerror(-sig));
    else if (x->c.verbose > 0)
        fprintf(stderr, "carma: exporter: %s: stopping\n", strsignal(sig));
    rc = sig < 0 ? 1 : 0;
out:
    if (x->d)
        stop_server(x);
    if (thread_started) {
        uint64_t one = 1;
        if (write(x->stopfd, &one, sizeof one) != (ssize_t)sizeof one)
            cli_error("exporter: cannot stop the sampler thread: %s", strerror(errno));
        pthread_join(thr, NULL);
    }
    if (lfd >= 0)
        close(lfd);
    if (sigfd >= 0)
        close(sigfd);
    if (x->stopfd >= 0)
        close(x->stopfd);
    free_responses(x);
    linger_sweep(x, 0, true);
    pthread_mutex_destroy(&x->linger_lock);
    conn_guard_free(x->guard);
    metrics_store_done(&x->store);
    metrics_renderer_free(x->r);
    sampler_free(x->s);
    free(x);
    return rc;
}
