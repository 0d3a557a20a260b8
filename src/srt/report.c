/*
 * srt/report: srt-slurm's per-concurrency report assembly and text form (see report.h;
 * formats doc srt-slurm.md §6.6-§6.8). Arithmetic on the values srt-slurm passes through from
 * the result files follows Python's: int - int stays an int, anything with a float is a float,
 * true division is always a float, sum() starts from the integer 0 and adds left to right.
 */
#include "srt/report.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"
#include "core/jsonutil.h"
#include "core/pyjson.h"
#include "core/threads.h"

/* ---- Python-style numbers as JSON values ---- */

static double num(const json_t *v)
{
    return json_number_value(v);
}

/* a - b as Python computes it for ints and floats. */
static json_t *py_sub(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b))
        return json_integer(json_integer_value(a) - json_integer_value(b));
    return json_real(num(a) - num(b));
}

/* a + b as Python computes it. */
static json_t *py_add(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b))
        return json_integer(json_integer_value(a) + json_integer_value(b));
    return json_real(num(a) + num(b));
}

/* Sets key to v (consumed); returns -ENOMEM when v is NULL or the set fails. */
static int put(json_t *o, const char *key, json_t *v)
{
    if (!v)
        return -ENOMEM;
    return json_object_set_new(o, key, v) == 0 ? 0 : -ENOMEM;
}

static int push(json_t *a, json_t *v)
{
    if (!v)
        return -ENOMEM;
    return json_array_append_new(a, v) == 0 ? 0 : -ENOMEM;
}

/* ---- breakdown rows ---- */

/* A row B (§6.7) from a window's numbers. */
static json_t *row_json(const char *label, const struct series_window *w)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int r = 0;
    r |= put(o, "label", json_string(label));
    r |= put(o, "joules", json_real(w->joules));
    r |= put(o, "avg_power_w", json_real(w->avg_power_w));
    r |= put(o, "sample_start_unix", json_real(w->sample_start_unix));
    r |= put(o, "sample_end_unix", json_real(w->sample_end_unix));
    r |= put(o, "samples", json_integer((json_int_t)w->samples));
    r |= put(o, "mean_w", json_real(w->mean_w));
    r |= put(o, "min_w", json_real(w->min_w));
    r |= put(o, "p5_w", json_real(w->p5_w));
    r |= put(o, "p50_w", json_real(w->p50_w));
    r |= put(o, "p95_w", json_real(w->p95_w));
    r |= put(o, "p99_w", json_real(w->p99_w));
    r |= put(o, "max_w", json_real(w->max_w));
    if (r) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The window of one power series by the chosen edges. */
static int window_of(const struct srt_log_series *x, double start, double end,
                     enum series_edges edges, struct series_scratch *sc, struct series_window *w,
                     struct carma_err *e)
{
    /* A read-only view: the series functions do not write through a const series. */
    struct series s = {.t = x->t, .w = x->w, .n = x->n, .cap = x->n, .sorted = true};
    if (edges == SERIES_EDGES_SNAP)
        return series_window_snap(&s, start, end, x->label, sc, w, e);
    return series_window_interpolate(&s, start, end, NULL, x->label, sc, w, e);
}

/*
 * Appends one row per series of set to arr; *total = Python's sum of their joules (int 0 when
 * there are none, as sum([]) is). min_start and max_end follow the rows' sample spans.
 */
static int breakdown(const struct srt_log_series_set *set, double start, double end,
                     enum series_edges edges, struct series_scratch *sc, json_t *arr,
                     json_t **total, double *min_start, double *max_end, struct carma_err *e)
{
    double sum = 0.0;
    for (size_t i = 0; i < set->n; i++) {
        struct series_window w;
        int r = window_of(&set->v[i], start, end, edges, sc, &w, e);
        if (r < 0)
            return r;
        if (push(arr, row_json(set->v[i].label, &w)) < 0)
            return carma_err_set(e, -ENOMEM, "out of memory");
        sum += w.joules;
        if (min_start && w.sample_start_unix < *min_start)
            *min_start = w.sample_start_unix;
        if (max_end && w.sample_end_unix > *max_end)
            *max_end = w.sample_end_unix;
    }
    if (total)
        *total = set->n ? json_real(sum) : json_integer(0);
    return 0;
}

/* ---- utilization (§6.6: gauges, samples with start <= t <= end, no snapping) ---- */

struct util_stat {
    const char *label; /* the device's, or the group's (owned by groups below) */
    const char *column;
    double mean, max;
    size_t samples;
    bool have;
};

struct util_group {
    char *label;
    const char *column;
    double sum_means; /* Python's sum() of the member means, in member order */
    size_t members;
    double max;
    size_t samples;
};

struct util_groups {
    struct util_group *v;
    size_t n, cap;
};

static int group_add(struct util_groups *g, const char *label, const char *column,
                     const struct util_stat *st)
{
    for (size_t i = 0; i < g->n; i++) {
        struct util_group *x = &g->v[i];
        if (strcmp(x->label, label) == 0 && strcmp(x->column, column) == 0) {
            x->sum_means += st->mean;
            x->members++;
            if (st->max > x->max)
                x->max = st->max;
            x->samples += st->samples;
            return 0;
        }
    }
    if (g->n == g->cap) {
        size_t nc = g->cap ? 2 * g->cap : 16;
        struct util_group *p = realloc(g->v, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        g->v = p;
        g->cap = nc;
    }
    char *l = strdup(label);
    if (!l)
        return -ENOMEM;
    g->v[g->n++] = (struct util_group){.label = l,
                                       .column = column,
                                       .sum_means = 0.0 + st->mean,
                                       .members = 1,
                                       .max = st->max,
                                       .samples = st->samples};
    return 0;
}

static void groups_done(struct util_groups *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->v[i].label);
    free(g->v);
    *g = (struct util_groups){0};
}

static int group_cmp(const void *a, const void *b)
{
    const struct util_group *x = a, *y = b;
    int c = strcmp(x->label, y->label);
    return c ? c : strcmp(x->column, y->column);
}

static json_t *util_json(const char *label, const char *column, double mean, double max,
                         size_t samples)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int r = put(o, "label", json_string(label));
    r |= put(o, "column", json_string(column));
    r |= put(o, "mean", json_real(mean));
    r |= put(o, "max", json_real(max));
    r |= put(o, "samples", json_integer((json_int_t)samples));
    if (r) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Appends a warning string; -ENOMEM on failure. */
static int warn(json_t *warnings, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int warn(json_t *warnings, const char *fmt, ...)
{
    va_list ap;
    char *s;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    int r = push(warnings, json_string(s));
    free(s);
    return r;
}

/*
 * The utilization summary of one leg: device rows, then group rows sorted by (label, column).
 * gpu selects the grouping: GPU devices roll up into gpu/<host> and gpu/<host>/<role> for each
 * of their roles; CPU sockets into cpu/<host>.
 */
static int utilization(const struct srt_log_util_set *u, const struct srt_log_series_set *devices,
                       bool gpu, double start, double end, json_t *out, json_t *warnings)
{
    struct util_groups g = {0};
    int r = 0;
    for (size_t i = 0; i < u->n && r == 0; i++) {
        const struct srt_log_util *x = &u->v[i];
        struct util_stat st = {.label = x->label, .column = x->column};
        /* the samples inside the window, start <= t <= end: x->t is sorted */
        size_t lo = series_lower_bound(x->t, x->n, start);
        size_t hi = series_upper_bound(x->t, x->n, end);
        if (hi < lo)
            hi = lo;
        if (hi == lo) {
            r = warn(warnings, "%s %s: no samples inside the window, utilization not reported",
                     x->label, x->column);
            continue;
        }
        st.samples = hi - lo;
        st.mean = series_sum(x->v + lo, st.samples) / (double)st.samples;
        st.max = x->v[lo];
        for (size_t k = lo + 1; k < hi; k++)
            if (x->v[k] > st.max)
                st.max = x->v[k];
        r = push(out, util_json(x->label, x->column, st.mean, st.max, st.samples));
        if (r)
            break;
        const struct srt_log_series *d = &devices->v[x->series];
        char *label = NULL;
        if (asprintf(&label, "%s/%s", gpu ? "gpu" : "cpu", d->host) < 0) {
            r = -ENOMEM;
            break;
        }
        r = group_add(&g, label, x->column, &st);
        free(label);
        for (size_t k = 0; gpu && r == 0 && k < d->n_roles; k++) {
            if (asprintf(&label, "gpu/%s/%s", d->host, d->roles[k]) < 0) {
                r = -ENOMEM;
                break;
            }
            r = group_add(&g, label, x->column, &st);
            free(label);
        }
    }
    if (r == 0 && g.n > 1)
        qsort(g.v, g.n, sizeof *g.v, group_cmp);
    for (size_t i = 0; r == 0 && i < g.n; i++) {
        const struct util_group *x = &g.v[i];
        r = push(out, util_json(x->label, x->column, x->sum_means / (double)x->members, x->max,
                                x->samples));
    }
    groups_done(&g);
    return r;
}

/* ---- one window ---- */

/* rate / watts, or null when either is null or the watts are 0 (§6.6). */
static json_t *ratio(const json_t *rate, const json_t *watts)
{
    if (json_is_null(rate) || json_is_null(watts) || num(watts) == 0.0)
        return json_null();
    return jsonutil_real(num(rate) / num(watts));
}

/* x / d as Python's true division (a float), or null when d <= 0. */
static json_t *per(const json_t *x, double d)
{
    return d > 0 ? jsonutil_real(num(x) / d) : json_null();
}

static json_t *timing_json(const struct srt_log_window *w, const json_t *duration, double cov_start,
                           double cov_end, bool have_cov)
{
    json_t *t = json_object(), *c = json_object(), *rep = json_object(), *cov = json_object();
    int r = (!t || !c || !rep || !cov) ? -ENOMEM : 0;
    if (r == 0) {
        r |= put(c, "start_unix", json_deep_copy(w->start));
        r |= put(c, "end_unix", json_deep_copy(w->end));
        r |= put(c, "duration_seconds", json_deep_copy(duration));
        const struct srt_log_reported *p = &w->reported;
        r |= put(rep, "source", json_string(p->source));
        r |= put(rep, "start_unix", p->has_start ? json_real(p->start_unix) : json_null());
        r |= put(rep, "end_unix", p->has_end ? json_real(p->end_unix) : json_null());
        r |= put(rep, "duration_seconds", p->has_duration ? json_real(p->duration_s) : json_null());
        r |= put(rep, "note", p->note ? json_string(p->note) : json_null());
        r |= put(cov, "sample_start_unix", have_cov ? json_real(cov_start) : json_null());
        r |= put(cov, "sample_end_unix", have_cov ? json_real(cov_end) : json_null());
        r |= put(cov, "duration_seconds", have_cov ? json_real(cov_end - cov_start) : json_null());
    }
    if (r == 0) {
        r |= put(t, "computed", c);
        c = NULL;
        r |= put(t, "reported", rep);
        rep = NULL;
        r |= put(t, "coverage", cov);
        cov = NULL;
    }
    json_decref(c);
    json_decref(rep);
    json_decref(cov);
    if (r) {
        json_decref(t);
        return NULL;
    }
    return t;
}

int srt_report_window(const struct srt_log *log, const struct srt_log_window *w,
                      enum series_edges edges, struct series_scratch *sc, json_t **ret,
                      struct carma_err *e)
{
    const double start = w->start_unix, end = w->end_unix;
    const bool cpu_leg = log->cpu_csv != NULL, gpu_leg = log->gpu_csv != NULL;

    json_t *o = json_object();
    json_t *cpu_socket = json_array(), *cpu_node = json_array();
    json_t *gpu_dev = json_array(), *gpu_role = json_array(), *gpu_node = json_array();
    json_t *cpu_util = json_array(), *gpu_util = json_array(), *warnings = json_array();
    json_t *cpu_total = NULL, *gpu_total = NULL, *combined = NULL, *duration = NULL;
    json_t *tokens_total = NULL, *out_rate = NULL, *tot_rate = NULL, *gpu_avg = NULL,
           *comb_avg = NULL;
    int r = 0;
    if (!o || !cpu_socket || !cpu_node || !gpu_dev || !gpu_role || !gpu_node || !cpu_util ||
        !gpu_util || !warnings) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }

    /* energy: sockets, nodes, devices, nodes, roles (each aborts the report on failure) */
    double cov_start = INFINITY, cov_end = -INFINITY;
    r = breakdown(&log->cpu_sockets, start, end, edges, sc, cpu_socket, NULL, NULL, NULL, e);
    if (r == 0)
        r = breakdown(&log->cpu_nodes, start, end, edges, sc, cpu_node, &cpu_total, &cov_start,
                      &cov_end, e);
    if (r == 0)
        r = breakdown(&log->gpu_devices, start, end, edges, sc, gpu_dev, NULL, NULL, NULL, e);
    if (r == 0)
        r = breakdown(&log->gpu_nodes, start, end, edges, sc, gpu_node, &gpu_total, &cov_start,
                      &cov_end, e);
    if (r == 0)
        r = breakdown(&log->gpu_roles, start, end, edges, sc, gpu_role, NULL, NULL, NULL, e);
    if (r < 0)
        goto out;
    if (!cpu_total || !gpu_total) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }

    /* utilization and warnings, in srt-slurm's order */
    if (cpu_leg)
        r = utilization(&log->cpu_util, &log->cpu_sockets, false, start, end, cpu_util, warnings);
    if (r == 0 && gpu_leg && log->gpu_roles.n == 0)
        r = warn(warnings, "%s", SRT_REPORT_WARN_NO_ROLES);
    if (r == 0 && gpu_leg)
        r = utilization(&log->gpu_util, &log->gpu_devices, true, start, end, gpu_util, warnings);
    if (r == 0 && gpu_leg && !cpu_leg)
        r = warn(warnings, "%s", SRT_REPORT_WARN_NO_CPU);
    if (r < 0) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }

    /* totals, per token, perf/W */
    combined = py_add(cpu_total, gpu_total);
    duration = py_sub(w->end, w->start);
    tokens_total = py_add(w->output_tokens, w->input_tokens);
    if (!combined || !duration || !tokens_total) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    const double d = num(duration);
    out_rate = per(w->output_tokens, d);
    tot_rate = per(tokens_total, d);
    gpu_avg = json_array_size(gpu_node) ? per(gpu_total, d) : json_null();
    comb_avg =
        json_array_size(gpu_node) && json_array_size(cpu_node) ? per(combined, d) : json_null();
    const double out_tok = num(w->output_tokens), all_tok = num(tokens_total);

    r |= put(o, "benchmark_type", json_string(srt_log_bench_name(w->type)));
    r |= put(o, "concurrency", json_integer(w->concurrency));
    r |= put(o, "start_unix", json_deep_copy(w->start));
    r |= put(o, "end_unix", json_deep_copy(w->end));
    r |= put(o, "output_tokens", json_deep_copy(w->output_tokens));
    r |= put(o, "input_tokens", json_deep_copy(w->input_tokens));
    r |= put(o, "cpu_per_socket", json_incref(cpu_socket));
    r |= put(o, "cpu_per_node", json_incref(cpu_node));
    r |= put(o, "cpu_total_joules", json_incref(cpu_total));
    r |= put(o, "gpu_per_device", json_incref(gpu_dev));
    r |= put(o, "gpu_per_role", json_incref(gpu_role));
    r |= put(o, "gpu_per_node", json_incref(gpu_node));
    r |= put(o, "gpu_total_joules", json_incref(gpu_total));
    r |= put(o, "combined_total_joules", json_incref(combined));
    r |= put(o, "joules_per_output_token",
             out_tok != 0.0 ? jsonutil_real(num(combined) / out_tok) : json_null());
    r |= put(o, "joules_per_total_token",
             all_tok != 0.0 ? jsonutil_real(num(combined) / all_tok) : json_null());
    r |= put(o, "timing",
             timing_json(w, duration, cov_start, cov_end,
                         json_array_size(cpu_node) + json_array_size(gpu_node) > 0));
    json_t *pw = json_object();
    if (pw) {
        r |= put(pw, "output_tokens_per_second", json_incref(out_rate));
        r |= put(pw, "total_tokens_per_second", json_incref(tot_rate));
        r |= put(pw, "gpu_avg_power_w", json_incref(gpu_avg));
        r |= put(pw, "combined_avg_power_w", json_incref(comb_avg));
        r |= put(pw, "output_tokens_per_second_per_gpu_watt", ratio(out_rate, gpu_avg));
        r |= put(pw, "output_tokens_per_second_per_combined_watt", ratio(out_rate, comb_avg));
        r |= put(pw, "total_tokens_per_second_per_gpu_watt", ratio(tot_rate, gpu_avg));
        r |= put(pw, "total_tokens_per_second_per_combined_watt", ratio(tot_rate, comb_avg));
    }
    r |= put(o, "perf_per_watt", pw);
    r |= put(o, "cpu_utilization", json_incref(cpu_util));
    r |= put(o, "gpu_utilization", json_incref(gpu_util));
    r |= put(o, "warnings", json_incref(warnings));
    if (r)
        r = carma_err_set(e, -ENOMEM, "out of memory");

out:
    json_decref(cpu_socket);
    json_decref(cpu_node);
    json_decref(gpu_dev);
    json_decref(gpu_role);
    json_decref(gpu_node);
    json_decref(cpu_util);
    json_decref(gpu_util);
    json_decref(warnings);
    json_decref(cpu_total);
    json_decref(gpu_total);
    json_decref(combined);
    json_decref(duration);
    json_decref(tokens_total);
    json_decref(out_rate);
    json_decref(tot_rate);
    json_decref(gpu_avg);
    json_decref(comb_avg);
    if (r < 0) {
        json_decref(o);
        return r;
    }
    *ret = o;
    return 0;
}

/*
 * The windows' reports on several threads: each window's report is its own (read-only series,
 * its own JSON values and percentile scratch), so they are made in any order and put in the list
 * in source order. Threads take the windows in increasing order; the first window that fails
 * (the lowest index) gives the error, as the one-thread loop would, and no window after it is
 * started.
 */
struct build {
    const struct srt_log *log;
    enum series_edges edges;
    json_t **one; /* per window: its report, or NULL */
    pthread_mutex_t mu;
    size_t next;   /* the next window to take */
    size_t failed; /* the lowest window that failed (nwindows: none) */
    struct carma_err e;
};

static void *build_main(void *arg)
{
    struct build *B = arg;
    struct series_scratch sc = {0};
    for (;;) {
        pthread_mutex_lock(&B->mu);
        size_t k = B->next;
        if (k >= B->log->nwindows || k > B->failed) {
            pthread_mutex_unlock(&B->mu);
            break;
        }
        B->next++;
        pthread_mutex_unlock(&B->mu);
        struct carma_err e = {0};
        json_t *one = NULL;
        if (srt_report_window(B->log, &B->log->windows[k], B->edges, &sc, &one, &e) < 0) {
            pthread_mutex_lock(&B->mu);
            if (k < B->failed) {
                B->failed = k;
                B->e = e;
            }
            pthread_mutex_unlock(&B->mu);
            continue;
        }
        B->one[k] = one;
    }
    series_scratch_done(&sc);
    return NULL;
}

int srt_report_build(const struct srt_log *log, enum series_edges edges, json_t **ret,
                     struct carma_err *e)
{
    const size_t n = log->nwindows;
    struct build B = {.log = log, .edges = edges, .failed = n};
    json_t *list = json_array();
    if (!list || !(B.one = calloc(n ? n : 1, sizeof *B.one))) {
        json_decref(list);
        return carma_err_set(e, -ENOMEM, "out of memory");
    }
    /* CARMA_REPORT_THREADS when set, else the CPUs this process may run on; at most
     * SRT_REPORT_THREADS (the variable may ask for more) and one a window; this thread is one
     * of them */
    size_t nth = threads_wanted("CARMA_REPORT_THREADS", SRT_REPORT_THREADS), started = 0;
    if (nth > SRT_REPORT_THREADS)
        nth = SRT_REPORT_THREADS;
    pthread_t th[SRT_REPORT_THREADS];
    pthread_mutex_init(&B.mu, NULL);
    /* jansson's hash seed is set once, before any thread makes an object */
    if (nth > 1 && n > 1)
        json_object_seed(0);
    for (; started + 1 < nth && started + 1 < n; started++)
        if (pthread_create(&th[started], NULL, build_main, &B) != 0)
            break;
    build_main(&B);
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&B.mu);
    int r = B.failed < n ? carma_err_set(e, B.e.code, "%s", B.e.msg) : 0;
    for (size_t i = 0; i < n; i++) {
        if (r == 0 && json_array_append_new(list, B.one[i]) != 0)
            r = carma_err_set(e, -ENOMEM, "out of memory");
        else if (r < 0)
            json_decref(B.one[i]);
    }
    free(B.one);
    if (r < 0) {
        json_decref(list);
        return r;
    }
    *ret = list;
    return 0;
}

/* ---- text (§6.8) ---- */

struct text {
    struct csv_buf b;
    int err;
};

static void tput(struct text *t, const char *s)
{
    if (!t->err && csv_buf_raw(&t->b, s, strlen(s)) < 0)
        t->err = -ENOMEM;
}

static void tprintf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tprintf(struct text *t, const char *fmt, ...)
{
    va_list ap;
    char *s;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->err = -ENOMEM;
        return;
    }
    tput(t, s);
    free(s);
}

/* format(x, spec) of a JSON number, or "n/a" for null / absent. buf: PYJSON_NUM_MAX bytes. */
static const char *fmt(const json_t *v, int decimals, bool commas, bool plus, char *buf)
{
    if (!v || !json_is_number(v))
        return "n/a";
    pyjson_format(num(v), decimals, commas, plus, buf);
    return buf;
}

#define F2(v, buf)  fmt((v), 2, true, false, (buf))
#define U3(v, buf)  fmt((v), 3, false, false, (buf))
#define D2(v, buf)  fmt((v), 2, false, false, (buf))
#define P4(v, buf)  fmt((v), 4, false, false, (buf))
#define DP2(v, buf) fmt((v), 2, false, true, (buf))

static const json_t *path(const json_t *o, const char *a, const char *b)
{
    return json_object_get(json_object_get(o, a), b);
}

static void text_reported(struct text *t, const json_t *rep, const json_t *computed_duration)
{
    char b1[PYJSON_NUM_MAX], b2[PYJSON_NUM_MAX], b3[PYJSON_NUM_MAX];
    const char *source = json_string_value(json_object_get(rep, "source"));
    const json_t *note = json_object_get(rep, "note");
    if (!source || strcmp(source, "unavailable") == 0) {
        tput(t, "reported: n/a");
        if (json_is_string(note))
            tprintf(t, " (%s)", json_string_value(note));
        return;
    }
    tprintf(t, "reported[%s]", source);
    const json_t *s = json_object_get(rep, "start_unix"), *en = json_object_get(rep, "end_unix");
    if (json_is_number(s) || json_is_number(en))
        tprintf(t, " start=%s end=%s", U3(s, b1), U3(en, b2));
    const json_t *d = json_object_get(rep, "duration_seconds");
    if (json_is_number(d)) {
        json_t *diff = json_real(num(computed_duration) - num(d));
        tprintf(t, " duration=%ss (computed-reported=%ss)", D2(d, b1), DP2(diff, b3));
        json_decref(diff);
    }
}

static void text_row(struct text *t, const json_t *row)
{
    char b[6][PYJSON_NUM_MAX];
    tprintf(t, "    %s: %s J (%s W avg; p50=%s p95=%s p99=%s max=%s W)\n",
            json_string_value(json_object_get(row, "label")),
            F2(json_object_get(row, "joules"), b[0]), F2(json_object_get(row, "avg_power_w"), b[1]),
            F2(json_object_get(row, "p50_w"), b[2]), F2(json_object_get(row, "p95_w"), b[3]),
            F2(json_object_get(row, "p99_w"), b[4]), F2(json_object_get(row, "max_w"), b[5]));
}

/* Utilization lines: one per label, in first-appearance order over both lists. */
static void text_util(struct text *t, const json_t *cpu, const json_t *gpu)
{
    const json_t *lists[2] = {cpu, gpu};
    size_t total = json_array_size(cpu) + json_array_size(gpu);
    if (total == 0)
        return;
    bool *done = calloc(total, sizeof *done);
    if (!done) {
        t->err = -ENOMEM;
        return;
    }
    char b1[PYJSON_NUM_MAX], b2[PYJSON_NUM_MAX];
    size_t base = 0;
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; i < json_array_size(lists[l]); i++) {
            if (done[base + i])
                continue;
            const char *label =
                json_string_value(json_object_get(json_array_get(lists[l], i), "label"));
            tprintf(t, "    %s utilization: ", label ? label : "");
            /* every entry with this label, in order, across both lists from here on */
            bool first = true;
            size_t b2base = base;
            for (int m = l; m < 2; m++) {
                for (size_t k = (m == l ? i : 0); k < json_array_size(lists[m]); k++) {
                    const json_t *u = json_array_get(lists[m], k);
                    const char *lk = json_string_value(json_object_get(u, "label"));
                    if (!lk || !label || strcmp(lk, label) != 0)
                        continue;
                    done[b2base + k] = true;
                    tprintf(t, "%s%s mean=%s max=%s", first ? "" : "; ",
                            json_string_value(json_object_get(u, "column")),
                            F2(json_object_get(u, "mean"), b1), F2(json_object_get(u, "max"), b2));
                    first = false;
                }
                b2base += json_array_size(lists[m]);
            }
            tput(t, "\n");
        }
        base += json_array_size(lists[l]);
    }
    free(done);
}

static void text_one(struct text *t, const json_t *r)
{
    char b[8][PYJSON_NUM_MAX];
    const json_t *start = json_object_get(r, "start_unix"), *end = json_object_get(r, "end_unix");
    json_t *win = json_real(num(end) - num(start));
    tprintf(t, "[%s concurrency=%lld] window=%ss\n",
            json_string_value(json_object_get(r, "benchmark_type")),
            (long long)json_integer_value(json_object_get(r, "concurrency")), D2(win, b[0]));
    json_decref(win);
    const json_t *warnings = json_object_get(r, "warnings");
    for (size_t i = 0; i < json_array_size(warnings); i++)
        tprintf(t, "  warning: %s\n", json_string_value(json_array_get(warnings, i)));
    tprintf(t, "  cpu total:      %s J\n", F2(json_object_get(r, "cpu_total_joules"), b[0]));
    tprintf(t, "  gpu total:      %s J\n", F2(json_object_get(r, "gpu_total_joules"), b[0]));
    tprintf(t, "  combined total: %s J\n", F2(json_object_get(r, "combined_total_joules"), b[0]));
    tprintf(t, "  tokens: output=%s input=%s\n",
            fmt(json_object_get(r, "output_tokens"), 0, true, false, b[0]),
            fmt(json_object_get(r, "input_tokens"), 0, true, false, b[1]));
    tprintf(t, "  J/output-token: %s\n", F2(json_object_get(r, "joules_per_output_token"), b[0]));
    tprintf(t, "  J/total-token:  %s\n", F2(json_object_get(r, "joules_per_total_token"), b[0]));

    const json_t *c = path(r, "timing", "computed");
    tprintf(t, "  timing: computed start=%s end=%s duration=%ss | ",
            U3(json_object_get(c, "start_unix"), b[0]), U3(json_object_get(c, "end_unix"), b[1]),
            D2(json_object_get(c, "duration_seconds"), b[2]));
    text_reported(t, path(r, "timing", "reported"), json_object_get(c, "duration_seconds"));
    const json_t *cov = path(r, "timing", "coverage");
    if (json_is_number(json_object_get(cov, "sample_start_unix")))
        tprintf(t, " | samples cover %s..%s (%ss)",
                U3(json_object_get(cov, "sample_start_unix"), b[0]),
                U3(json_object_get(cov, "sample_end_unix"), b[1]),
                D2(json_object_get(cov, "duration_seconds"), b[2]));
    tput(t, "\n");

    const json_t *pw = json_object_get(r, "perf_per_watt");
    tprintf(t, "  perf/W: output=%s tok/s total=%s tok/s | ",
            F2(json_object_get(pw, "output_tokens_per_second"), b[0]),
            F2(json_object_get(pw, "total_tokens_per_second"), b[1]));
    const json_t *g = json_object_get(pw, "gpu_avg_power_w");
    if (json_is_number(g))
        tprintf(t, "gpu avg=%s W -> output %s tok/s/W, total %s tok/s/W", F2(g, b[0]),
                P4(json_object_get(pw, "output_tokens_per_second_per_gpu_watt"), b[1]),
                P4(json_object_get(pw, "total_tokens_per_second_per_gpu_watt"), b[2]));
    else
        tput(t, "gpu: n/a");
    tput(t, " | ");
    const json_t *cb = json_object_get(pw, "combined_avg_power_w");
    if (json_is_number(cb))
        tprintf(t, "combined avg=%s W -> output %s tok/s/W, total %s tok/s/W", F2(cb, b[0]),
                P4(json_object_get(pw, "output_tokens_per_second_per_combined_watt"), b[1]),
                P4(json_object_get(pw, "total_tokens_per_second_per_combined_watt"), b[2]));
    else
        tput(t, "combined: n/a");
    tput(t, "\n");

    static const char *const rows[] = {"cpu_per_socket", "gpu_per_device", "gpu_per_role"};
    for (size_t k = 0; k < 3; k++) {
        const json_t *a = json_object_get(r, rows[k]);
        for (size_t i = 0; i < json_array_size(a); i++)
            text_row(t, json_array_get(a, i));
    }
    text_util(t, json_object_get(r, "cpu_utilization"), json_object_get(r, "gpu_utilization"));
}

char *srt_report_text(const json_t *reports)
{
    struct text t = {0};
    double total = 0.0;
    for (size_t i = 0; i < json_array_size(reports); i++) {
        const json_t *r = json_array_get(reports, i);
        text_one(&t, r);
        total += num(json_object_get(r, "combined_total_joules"));
    }
    char b[PYJSON_NUM_MAX];
    pyjson_format(total, 2, true, false, b);
    tprintf(&t, "\ntotal energy across all concurrency points: %s J\n", b);
    if (!t.err && csv_buf_raw(&t.b, "", 1) < 0) /* the NUL */
        t.err = -ENOMEM;
    if (t.err) {
        csv_buf_free(&t.b);
        return NULL;
    }
    return t.b.data;
}
