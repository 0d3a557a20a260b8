/*
 * Unit tests for serve/httpd: the exporter's HTTP server. --listen parsing (IPv4, bracketed
 * IPv6, ":PORT", and the exact message of each refusal); a server on 127.0.0.1 port 0 that
 * answers /healthz 503 before the first snapshot, then /metrics with the published bytes and
 * the Prometheus content type, 404 for another path, 405 with Allow for another method, and
 * counts the scrapes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "serve/httpd.h"

static void test_listen_parse(void **state)
{
    (void)state;
    struct httpd_listen a;
    struct carma_err e = {0};
    assert_int_equal(httpd_listen_parse("127.0.0.1:9405", &a, &e), 0);
    assert_int_equal(a.ss.ss_family, AF_INET);
    assert_int_equal(ntohs(((struct sockaddr_in *)&a.ss)->sin_port), 9405);
    assert_false(a.any);
    assert_int_equal(httpd_listen_parse("[::1]:0", &a, &e), 0);
    assert_int_equal(a.ss.ss_family, AF_INET6);
    assert_false(a.any);
    assert_int_equal(httpd_listen_parse(":9405", &a, &e), 0);
    assert_int_equal(a.ss.ss_family, AF_INET6);
    assert_true(a.any);

    static const struct {
        const char *arg, *msg;
    } bad[] = {
        {"[::1]", "--listen '[::1]': an IPv6 address is written [ADDR]:PORT, e.g. [::1]:9405"},
        {"[]:80", "--listen '[]:80': '' is not an IPv6 address"},
        {"9405", "--listen '9405': expected ADDR:PORT, [ADDR6]:PORT or :PORT (e.g. "
                 "127.0.0.1:9405, [::1]:9405, :9405)"},
        {"::1:80", "--listen '::1:80': write an IPv6 address in brackets, e.g. [::1]:9405"},
        {":99999", "--listen ':99999': '99999' is not a port number (0 to 65535)"},
        {":9x", "--listen ':9x': '9x' is not a port number (0 to 65535)"},
        {"1.2.3:80", "--listen '1.2.3:80': '1.2.3' is not an IPv4 address (host names are not "
                     "resolved; an IPv6 address goes in brackets: [::1]:9405)"},
        {"[fe80::zz]:80", "--listen '[fe80::zz]:80': 'fe80::zz' is not an IPv6 address"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        carma_err_clear(&e);
        assert_int_equal(httpd_listen_parse(bad[i].arg, &a, &e), -EINVAL);
        assert_string_equal(e.msg, bad[i].msg);
    }
}

/* Sends req to 127.0.0.1:port and reads the whole answer (the server closes an HTTP/1.0
 * connection after its response). */
static char *fetch(unsigned port, const char *req)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    size_t n = strlen(req);
    assert_int_equal(send(fd, req, n, MSG_NOSIGNAL), (ssize_t)n);
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        assert_true(r >= 0);
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    close(fd);
    return buf;
}

static void publish(struct metrics_store *st, const char *body)
{
    struct metrics_snapshot *snap = metrics_store_begin(st);
    assert_non_null(snap);
    size_t n = strlen(body);
    char *p = realloc(snap->text.data, n);
    assert_non_null(p);
    memcpy(p, body, n);
    snap->text.data = p;
    snap->text.len = snap->text.cap = n;
    metrics_store_publish(st, snap);
}

static void test_serve(void **state)
{
    (void)state;
    struct metrics_store st;
    metrics_store_init(&st);
    unsigned long long nofile;
    struct httpd_opts o = {.store = &st, .conn_max = httpd_conn_budget(&nofile)};
    assert_true(o.conn_max > 0);
    struct carma_err e = {0};
    struct httpd *h = httpd_new(&o, &e);
    assert_non_null(h);

    struct httpd_listen a;
    assert_int_equal(httpd_listen_parse("127.0.0.1:0", &a, &e), 0);
    char bound[HTTPD_ADDR_TEXT_MAX];
    int lfd = httpd_listen_open(&a, "127.0.0.1:0", bound, sizeof bound, &e);
    assert_true(lfd >= 0);
    assert_int_equal(strncmp(bound, "127.0.0.1:", 10), 0);
    unsigned port = (unsigned)strtoul(bound + 10, NULL, 10);
    assert_true(port > 0);
    assert_int_equal(httpd_start(h, lfd), 0);

    char *r = fetch(port, "GET /healthz HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(r, " 503 "));
    assert_non_null(strstr(r, "Retry-After: 1\r\n"));
    assert_non_null(strstr(r, "\r\n\r\nno sample yet\n"));
    free(r);

    publish(&st, "# TYPE x gauge\nx 1\n");
    r = fetch(port, "GET /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(r, " 200 "));
    assert_non_null(strstr(r, "Content-Type: " METRICS_CONTENT_TYPE "\r\n"));
    assert_non_null(strstr(r, "\r\n\r\n# TYPE x gauge\nx 1\n"));
    free(r);
    assert_int_equal(httpd_scrapes(h), 1);

    r = fetch(port, "GET /healthz HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(r, " 200 "));
    assert_non_null(strstr(r, "\r\n\r\nok\n"));
    free(r);
    r = fetch(port, "GET /nope HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(r, " 404 "));
    free(r);
    r = fetch(port, "DELETE /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(r, " 405 "));
    assert_non_null(strstr(r, "Allow: GET, HEAD\r\n"));
    free(r);
    r = fetch(port, "GET / HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(r, "<title>carma exporter</title>"));
    free(r);
    assert_int_equal(httpd_scrapes(h), 1);

    httpd_sweep(h, 0);
    httpd_stop(h);
    httpd_stop(h); /* a second stop does nothing */
    httpd_free(h);
    metrics_store_done(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listen_parse),
        cmocka_unit_test(test_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
