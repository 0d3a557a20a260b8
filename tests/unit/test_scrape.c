/*
 * Unit tests for collect/scrape: the collector's scrape engine, against a serve/httpd server
 * on 127.0.0.1 and a port where nothing listens. Three cycles of 200 ms: the server's rows in
 * samples.csv, blank rows and one "is down" warning (through the callback) for the dead
 * target, its backoff, the totals, the manifest's status, counts and stop reason; a signal
 * pending during the first cycle ends the run after it; a required target down in the first
 * cycle is fatal.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collect/scrape.h"
#include "serve/httpd.h"
#include "testutil.h"

#define MS (1000000LL)

static const char body[] =
    "# TYPE carma_power_watts gauge\n"
    "carma_power_watts{node=\"node-1\",channel=\"rapl/package-0\",source=\"rapl\",kind=\"cpu\","
    "domain=\"total\",method=\"measured\",socket=\"0\"} 31.25\n";

struct warnings {
    char line[16][512];
    size_t n;
};

static void record_warning(void *cls, const char *msg)
{
    struct warnings *w = cls;
    if (w->n < 16)
        snprintf(w->line[w->n], sizeof w->line[0], "%s", msg);
    w->n++;
}

struct server {
    struct metrics_store st;
    struct httpd *h;
    unsigned port;
};

static void server_start(struct server *s)
{
    metrics_store_init(&s->st);
    unsigned long long nofile;
    struct httpd_opts o = {.store = &s->st, .conn_max = httpd_conn_budget(&nofile)};
    struct carma_err e = {0};
    s->h = httpd_new(&o, &e);
    assert_non_null(s->h);
    struct httpd_listen a;
    assert_int_equal(httpd_listen_parse("127.0.0.1:0", &a, &e), 0);
    char bound[HTTPD_ADDR_TEXT_MAX];
    int lfd = httpd_listen_open(&a, "127.0.0.1:0", bound, sizeof bound, &e);
    assert_true(lfd >= 0);
    s->port = (unsigned)strtoul(bound + strlen("127.0.0.1:"), NULL, 10);
    assert_int_equal(httpd_start(s->h, lfd), 0);
    struct metrics_snapshot *snap = metrics_store_begin(&s->st);
    assert_non_null(snap);
    snap->text.data = malloc(sizeof body - 1);
    assert_non_null(snap->text.data);
    memcpy(snap->text.data, body, sizeof body - 1);
    snap->text.len = snap->text.cap = sizeof body - 1;
    metrics_store_publish(&s->st, snap);
}

static void server_stop(struct server *s)
{
    httpd_free(s->h);
    metrics_store_done(&s->st);
}

/* A port of 127.0.0.1 where nothing listens (bound, then closed). */
static unsigned dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t l = sizeof sa;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &l), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static void targets(struct collect_targets *ts, unsigned live, unsigned dead)
{
    char spec[64];
    struct carma_err e = {0};
    memset(ts, 0, sizeof *ts);
    snprintf(spec, sizeof spec, "127.0.0.1:%u", live);
    assert_int_equal(collect_targets_add(ts, spec, 9405, NULL, NULL, &e), 0);
    snprintf(spec, sizeof spec, "127.0.0.1:%u", dead);
    assert_int_equal(collect_targets_add(ts, spec, 9405, NULL, NULL, &e), 0);
}

static void test_cycles(void **state)
{
    (void)state;
    struct server srv;
    server_start(&srv);
    unsigned dead = dead_port();
    struct collect_targets ts;
    targets(&ts, srv.port, dead);
    struct warnings w = {0};
    struct scrape_opts o = {.interval_ns = 200 * MS,
                            .duration_ns = 500 * MS,
                            .version = "9.9.9",
                            .warn = record_warning,
                            .warn_cls = &w};
    struct carma_err e = {0};
    struct scrape *s = scrape_new(&ts, &o, &e);
    assert_non_null(s);
    assert_false(scrape_started(s));
    assert_int_equal(scrape_open(s, tu_dir, &e), 0);
    assert_true(scrape_started(s));
    json_t *m = scrape_manifest(s, &(struct scrape_end){0}, NULL);
    assert_string_equal(json_string_value(json_object_get(m, "status")), "running");
    assert_string_equal(json_string_value(json_object_get(m, "carma_version")), "9.9.9");
    json_decref(m);
    assert_int_equal(scrape_http_init(s, &e), 0);

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGUSR1);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    int sig = -1;
    assert_int_equal(scrape_run(s, &sigs, &sig), 0);
    assert_int_equal(sig, 0);
    scrape_close(s);
    assert_false(scrape_write_failed(s));

    struct scrape_totals t;
    scrape_totals_get(s, &t);
    assert_int_equal(t.cycles, 3);
    assert_int_equal(t.missed, 0);
    /* the dead target: scraped in cycle 0, skipped in 1 (backoff), scraped in 2 */
    assert_int_equal(t.scrapes, 5);
    assert_int_equal(t.errors, 2);
    assert_int_equal(w.n, 1);
    char want[128];
    snprintf(want, sizeof want, "collect: warning: 127.0.0.1:%u (node 127.0.0.1) is down: ", dead);
    assert_int_equal(strncmp(w.line[0], want, strlen(want)), 0);

    char path[TU_DIR_MAX + 32], buf[8192];
    snprintf(path, sizeof path, "%s/samples.csv", tu_dir);
    assert_true(tu_slurp(path, buf, sizeof buf) > 0);
    size_t rows = 0, live_rows = 0;
    char live[64];
    snprintf(live, sizeof live, ",127.0.0.1:%u,rapl/package-0,rapl,cpu,total,measured,31.25,",
             srv.port);
    for (char *p = strstr(buf, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        rows++;
        char *end = strstr(p + 2, "\r\n");
        assert_non_null(end);
        if (memmem(p + 2, (size_t)(end - p - 2), live, strlen(live)))
            live_rows++;
    }
    assert_int_equal(rows, 6); /* 2 targets x 3 cycles */
    assert_int_equal(live_rows, 3);

    m = scrape_manifest(s, &(struct scrape_end){.final = true}, NULL);
    assert_string_equal(json_string_value(json_object_get(m, "status")), "incomplete");
    assert_string_equal(json_string_value(json_object_get(m, "stop_reason")), "duration");
    assert_int_equal(json_integer_value(json_object_get(m, "cycles")), 3);
    assert_int_equal(json_integer_value(json_object_get(m, "sample_row_count")), 6);
    assert_true(json_is_null(json_object_get(m, "interruption")));
    json_t *tg = json_object_get(m, "targets");
    assert_int_equal(json_array_size(tg), 2);
    assert_true(json_is_true(json_object_get(json_array_get(tg, 0), "up")));
    assert_true(json_is_false(json_object_get(json_array_get(tg, 1), "up")));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(tg, 1), "skipped_count")),
                     1);
    json_decref(m);

    scrape_free(s);
    collect_targets_free(&ts);
    server_stop(&srv);
}

static void test_signal_and_required(void **state)
{
    (void)state;
    struct server srv;
    server_start(&srv);
    struct collect_targets ts;
    targets(&ts, srv.port, dead_port());
    struct warnings w = {0};
    struct scrape_opts o = {.interval_ns = 100 * MS,
                            .required = true,
                            .quiet = true,
                            .version = "9.9.9",
                            .warn = record_warning,
                            .warn_cls = &w};
    struct carma_err e = {0};
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGUSR1);
    sigprocmask(SIG_BLOCK, &sigs, NULL);

    /* a signal pending during the first cycle ends the run after it, and comes back */
    struct scrape_opts free_run = o;
    free_run.required = false;
    struct scrape *s = scrape_new(&ts, &free_run, &e);
    assert_non_null(s);
    assert_int_equal(scrape_open(s, tu_dir, &e), 0);
    assert_int_equal(scrape_http_init(s, &e), 0);
    raise(SIGUSR1);
    int sig = 0;
    assert_int_equal(scrape_run(s, &sigs, &sig), 0);
    assert_int_equal(sig, SIGUSR1);
    scrape_close(s);
    struct scrape_totals t;
    scrape_totals_get(s, &t);
    assert_int_equal(t.cycles, 1);
    assert_int_equal(w.n, 0); /* quiet: no "is down" */
    json_t *m = scrape_manifest(s, &(struct scrape_end){.final = true, .sig = sig},
                                json_string("interruption"));
    assert_string_equal(json_string_value(json_object_get(m, "stop_reason")), "signal");
    assert_string_equal(json_string_value(json_object_get(m, "interruption")), "interruption");
    json_decref(m);
    scrape_free(s);

    /* the dead target is required: fatal after the first cycle, warned even when quiet */
    s = scrape_new(&ts, &o, &e);
    assert_non_null(s);
    assert_int_equal(scrape_open(s, tu_dir, &e), 0);
    assert_int_equal(scrape_http_init(s, &e), 0);
    assert_int_equal(scrape_run(s, &sigs, &sig), 1);
    assert_int_equal(sig, 0);
    scrape_close(s);
    assert_int_equal(w.n, 1);
    assert_int_equal(strncmp(w.line[0], "collect: required target 127.0.0.1:", 35), 0);
    m = scrape_manifest(s, &(struct scrape_end){.final = true, .fatal = true}, NULL);
    assert_string_equal(json_string_value(json_object_get(m, "status")), "failed");
    assert_string_equal(json_string_value(json_object_get(m, "stop_reason")),
                        "required_target_down");
    json_decref(m);
    scrape_free(s);

    collect_targets_free(&ts);
    server_stop(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cycles, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_signal_and_required, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
