/*
 * Unit tests for serve/connguard: the exporter's connection guard. A request not complete
 * within the deadline is dropped however often its client sends a byte (the deadline runs from
 * the accept, or from the last response of a kept-alive connection, and nothing resets it); an
 * answered request is never dropped; past max_open - reserve connections a new one drops the
 * oldest waiting one; past per_ip_max - per_ip_reserve from one address, that address's
 * oldest waiting one (IPv4 and IPv6 apart, other addresses untouched); the counts, and many
 * threads opening and closing at once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/connguard.h"

#define S (1000000000LL)

/* The drop callback's record: the fds in the order dropped. */
struct drops {
    int fd[4096];
    size_t n;
};

static void record_drop(void *cls, int fd)
{
    struct drops *d = cls;
    if (d->n < sizeof d->fd / sizeof d->fd[0])
        d->fd[d->n] = fd;
    d->n++;
}

static struct sockaddr_in v4(const char *ip)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
    return a;
}

static struct sockaddr_in6 v6(const char *ip)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6};
    assert_int_equal(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
    return a;
}

static struct conn_guard *guard(struct drops *d, unsigned max, unsigned reserve, unsigned ipmax,
                                unsigned ipres)
{
    memset(d, 0, sizeof *d);
    struct conn_guard_opts o = {.max_open = max,
                                .reserve = reserve,
                                .per_ip_max = ipmax,
                                .per_ip_reserve = ipres,
                                .deadline_ns = 10 * S};
    struct conn_guard *g = conn_guard_new(&o, record_drop, d);
    assert_non_null(g);
    return g;
}

#define OPEN(g, fd, addr, t) conn_guard_open(g, fd, (const struct sockaddr *)(addr), t)

static void test_deadline_not_reset(void **state)
{
    (void)state;
    struct drops d;
    struct conn_guard *g = guard(&d, 100, 10, 0, 0);
    struct sockaddr_in a = v4("127.0.0.2");
    struct guarded_conn *slow = OPEN(g, 5, &a, 0);
    struct guarded_conn *later = OPEN(g, 6, &a, 3 * S);
    assert_non_null(slow);
    /* a byte a second changes nothing: the guard sees no bytes, only complete requests */
    for (int64_t t = 0; t < 10 * S; t += S / 4)
        assert_int_equal(conn_guard_sweep(g, t), 0);
    assert_int_equal(conn_guard_sweep(g, 10 * S), 1);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.fd[0], 5);
    assert_int_equal(conn_guard_sweep(g, 13 * S - 1), 0);
    assert_int_equal(conn_guard_sweep(g, 13 * S), 1);
    assert_int_equal(d.fd[1], 6);
    struct conn_guard_stats st;
    conn_guard_stats(g, &st);
    assert_int_equal(st.open, 0);
    assert_int_equal(st.dropped[CONN_DROP_DEADLINE], 2);
    conn_guard_close(g, slow);
    conn_guard_close(g, later);
    conn_guard_stats(g, &st);
    assert_int_equal(st.open, 0);
    assert_int_equal(st.opened, 2);
    conn_guard_free(g);
}

static void test_answered_and_kept_alive(void **state)
{
    (void)state;
    struct drops d;
    struct conn_guard *g = guard(&d, 100, 10, 0, 0);
    struct sockaddr_in a = v4("10.1.2.3");
    struct guarded_conn *c = OPEN(g, 7, &a, 0);
    conn_guard_answered(g, c);
    /* a response that takes long (a slow reader) is not the guard's business */
    assert_int_equal(conn_guard_sweep(g, 100 * S), 0);
    struct conn_guard_stats st;
    conn_guard_stats(g, &st);
    assert_int_equal(st.open, 1);
    assert_int_equal(st.waiting, 0);
    /* kept alive: its next request is due within the deadline of the response's end */
    conn_guard_idle(g, c, 100 * S);
    assert_int_equal(conn_guard_sweep(g, 110 * S - 1), 0);
    conn_guard_answered(g, c);
    conn_guard_idle(g, c, 105 * S);
    assert_int_equal(conn_guard_sweep(g, 115 * S - 1), 0);
    assert_int_equal(conn_guard_sweep(g, 115 * S), 1);
    assert_int_equal(d.fd[0], 7);
    /* a dropped connection is not revived by a late notification */
    conn_guard_idle(g, c, 116 * S);
    assert_int_equal(conn_guard_sweep(g, 200 * S), 0);
    assert_int_equal(d.n, 1);
    conn_guard_close(g, c);
    conn_guard_close(g, NULL);
    conn_guard_free(g);
}

static void test_reserve_drops_oldest_waiting(void **state)
{
    (void)state;
    struct drops d;
    struct conn_guard *g = guard(&d, 10, 3, 0, 0);
    struct guarded_conn *c[20];
    char ip[32];
    /* 7 = max_open - reserve, each from its own address */
    for (int i = 0; i < 7; i++) {
        snprintf(ip, sizeof ip, "127.0.1.%d", i + 1);
        struct sockaddr_in a = v4(ip);
        c[i] = OPEN(g, 100 + i, &a, i);
    }
    assert_int_equal(d.n, 0);
    conn_guard_answered(g, c[0]); /* being answered: never dropped */
    struct sockaddr_in a = v4("127.0.2.1");
    c[7] = OPEN(g, 107, &a, 7);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.fd[0], 101); /* the oldest waiting, not the answered 100 */
    c[8] = OPEN(g, 108, &a, 8);
    assert_int_equal(d.n, 2);
    assert_int_equal(d.fd[1], 102);
    struct conn_guard_stats st;
    conn_guard_stats(g, &st);
    assert_int_equal(st.open, 7);
    assert_int_equal(st.dropped[CONN_DROP_RESERVE], 2);
    /* the newest (a scrape) survives a stream of newer slow ones for a while: it is dropped
     * only when every older waiting one is gone */
    for (int i = 9; i < 14; i++)
        c[i] = OPEN(g, 100 + i, &a, i);
    assert_int_equal(d.n, 7);
    for (size_t k = 0; k < d.n; k++)
        assert_true(d.fd[k] != 100 && d.fd[k] != 108);
    /* closed by the server afterwards: counts stay right */
    for (int i = 0; i < 14; i++)
        conn_guard_close(g, c[i]);
    conn_guard_stats(g, &st);
    assert_int_equal(st.open, 0);
    assert_int_equal(st.waiting, 0);
    conn_guard_free(g);
}

static void test_per_ip(void **state)
{
    (void)state;
    struct drops d;
    struct conn_guard *g = guard(&d, 1000, 10, 8, 3);
    struct sockaddr_in a = v4("127.0.0.2"), b = v4("127.0.0.3");
    struct sockaddr_in6 m = v6("::ffff:127.0.0.2"), m2 = v6("::ffff:127.0.0.4");
    struct guarded_conn *c[40];
    int n = 0;
    for (int i = 0; i < 5; i++) /* 5 = per_ip_max - per_ip_reserve */
        c[n++] = OPEN(g, 10 + i, &a, i);
    c[n++] = OPEN(g, 50, &b, 5);
    c[n++] = OPEN(g, 60, &m, 5); /* a v4-mapped IPv6 address is another key than the IPv4 */
    c[n++] = OPEN(g, 61, &m2, 5);
    assert_int_equal(d.n, 0);
    c[n++] = OPEN(g, 15, &a, 6);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.fd[0], 10);
    c[n++] = OPEN(g, 16, &a, 7);
    assert_int_equal(d.fd[1], 11);
    for (int i = 0; i < 4; i++)
        c[n++] = OPEN(g, 62 + i, &m, 8);
    assert_int_equal(d.n, 2);
    c[n++] = OPEN(g, 66, &m, 9);
    assert_int_equal(d.n, 3);
    assert_int_equal(d.fd[2], 60);
    struct conn_guard_stats st;
    conn_guard_stats(g, &st);
    assert_int_equal(st.dropped[CONN_DROP_PER_IP], 3);
    assert_int_equal(st.dropped[CONN_DROP_RESERVE], 0);
    for (int i = 0; i < n; i++)
        conn_guard_close(g, c[i]);
    conn_guard_free(g);
}

struct churn {
    struct conn_guard *g;
    int base;
};

static void *churn_main(void *arg)
{
    struct churn *ch = arg;
    struct sockaddr_in a = v4("127.0.0.9");
    for (int i = 0; i < 20000; i++) {
        struct guarded_conn *c = OPEN(ch->g, ch->base + i % 50, &a, i);
        if (i % 3 == 0)
            conn_guard_answered(ch->g, c);
        if (i % 5 == 0)
            conn_guard_sweep(ch->g, i);
        conn_guard_close(ch->g, c);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    struct drops d;
    struct conn_guard *g = guard(&d, 64, 8, 16, 4);
    pthread_t t[4];
    struct churn ch[4];
    for (int i = 0; i < 4; i++) {
        ch[i] = (struct churn){g, 1000 * i};
        assert_int_equal(pthread_create(&t[i], NULL, churn_main, &ch[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    struct conn_guard_stats st;
    conn_guard_stats(g, &st);
    assert_int_equal(st.open, 0);
    assert_int_equal(st.waiting, 0);
    assert_int_equal(st.opened, 80000);
    conn_guard_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deadline_not_reset),
        cmocka_unit_test(test_answered_and_kept_alive),
        cmocka_unit_test(test_reserve_drops_oldest_waiting),
        cmocka_unit_test(test_per_ip),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
