/*
 * collect/join: the per-node carma recordings of a job joined into one collect directory (see
 * join.h).
 */
#include "collect/join.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/collector.h"
#include "core/array.h"
#include "core/csv.h"
#include "core/file.h"
#include "core/jsonutil.h"

#define MAX_FILE_BYTES ((size_t)1 << 34)
#define WARNINGS_MAX   10

static const char *const SAMPLES_COLS[] = {
    "schema_version", "timestamp_unix", "scrape_seq", "node",  "target",       "channel", "source",
    "kind",           "domain",         "method",     "watts", "joules_total", NULL};
static const char *const NODES_COLS[] = {"schema_version", "timestamp_unix",
                                         "scrape_seq",     "node",
                                         "target",         "method",
                                         "watts",          "joules_total",
                                         "cpu_util_total", "cpu_util_user",
                                         "cpu_util_nice",  "cpu_util_sys",
                                         "cpu_util_irq",   NULL};

static const char *const MARKS_COLS[] = {"schema_version", "event", "id",       "name",
                                         "timestamp_unix", "pid",   "workload", "tokens",
                                         "requests",       "value", NULL};

struct jrow {
    double ts;
    size_t seq, off, len;
};

/* The rows of one file kind (samples.csv or nodes.csv) of every input. */
struct jtab {
    const char *const *cols;
    const char *what; /* for the header's warning */
    size_t ts_col;    /* timestamp_unix */
    /* marks.csv: the id column, renumbered (each input's ids after the previous inputs'
     * largest, since each carma numbers its windows from 1), and the rows kept in input
     * order (an end follows its begin whatever the clocks said) */
    bool marks;
    long long id_base, id_max;
    struct jrow *rows;
    size_t n, cap;
    struct csv_buf body;
    bool any; /* an input had the file */
};

struct warner {
    void (*fn)(void *cls, const char *msg);
    void *cls;
    size_t count;
};

static void warnf(struct warner *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warnf(struct warner *w, const char *fmt, ...)
{
    if (!w->fn || w->count++ >= WARNINGS_MAX)
        return;
    char buf[4600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    w->fn(w->cls, buf);
}

static int jrow_cmp(const void *pa, const void *pb)
{
    const struct jrow *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Reads path into t. Returns the rows taken, -ENOENT when absent, -EPROTO (header; warned),
 * -ENOMEM. */
static long read_tab(const char *path, struct jtab *t, struct warner *w, size_t *skipped)
{
    char *text = NULL;
    size_t len = 0;
    int r = file_read_all(path, MAX_FILE_BYTES, &text, &len);
    if (r == -ENOENT)
        return r;
    if (r < 0) {
        if (r == -ENOMEM)
            return r;
        warnf(w, "%s: cannot read: %s (skipped)", path, strerror(-r));
        return -EPROTO;
    }
    size_t width = 0;
    while (t->cols[width])
        width++;
    /* a last line without its line end is a torn write: left out */
    size_t whole = len;
    while (whole > 0 && text[whole - 1] != '\n')
        whole--;
    struct csv_fields f = {0};
    struct carma_err e = {0};
    size_t pos = 0, line = 1;
    long taken = 0;
    int s = csv_split(text, whole, &pos, &line, path, &f, &e);
    bool ok = s > 0 && f.row.n == width;
    for (size_t k = 0; ok && k < width; k++)
        ok = strcmp(f.row.fields[k], t->cols[k]) == 0;
    if (!ok) {
        warnf(w, "%s:1: not the header of carma's %s (schema 1) (skipped)", path, t->what);
        taken = s == -ENOMEM ? -ENOMEM : -EPROTO;
        goto out;
    }
    t->any = true;
    if (whole < len) {
        size_t torn_line = 1;
        for (size_t i = 0; i < whole; i++)
            torn_line += text[i] == '\n';
        warnf(w, "%s:%zu: the last line has no line end (a torn write; left out)", path, torn_line);
        (*skipped)++;
    }
    while ((s = csv_split(text, whole, &pos, &line, path, &f, &e)) != 0) {
        if (s == -ENOMEM) {
            taken = s;
            goto out;
        }
        if (s < 0) {
            warnf(w, "%s (the rest of the file left out)", e.msg);
            (*skipped)++;
            break;
        }
        char *end = NULL;
        double ts = f.row.n == width ? strtod(f.row.fields[t->ts_col], &end) : NAN;
        if (f.row.n != width || !end || *end || end == f.row.fields[t->ts_col] || !isfinite(ts) ||
            strcmp(f.row.fields[0], "1") != 0) {
            warnf(w,
                  "%s:%zu: %zu fields (the header has %zu), or a bad schema_version or "
                  "timestamp_unix (row left out)",
                  path, f.row.line, f.row.n, width);
            (*skipped)++;
            continue;
        }
        char idbuf[32];
        const char *idcell = NULL;
        if (t->marks) {
            const char *ev = f.row.fields[1], *ic = f.row.fields[2];
            bool is_event = strcmp(ev, "event") == 0;
            bool known = is_event || strcmp(ev, "begin") == 0 || strcmp(ev, "end") == 0 ||
                         strcmp(ev, "unended") == 0;
            long long id = 0;
            end = NULL;
            if (*ic)
                id = strtoll(ic, &end, 10);
            if (!known || (is_event ? *ic != '\0' : (!end || *end || id < 1))) {
                warnf(w, "%s:%zu: a bad event or id (row left out)", path, f.row.line);
                (*skipped)++;
                continue;
            }
            if (!is_event) {
                id += t->id_base;
                if (id > t->id_max)
                    t->id_max = id;
                snprintf(idbuf, sizeof idbuf, "%lld", id);
                idcell = idbuf;
            }
        }
        size_t off = t->body.len;
        for (size_t k = 0; k < width; k++)
            if (csv_buf_field(&t->body, k == 2 && idcell ? idcell : f.row.fields[k], k == 0) < 0) {
                taken = -ENOMEM;
                goto out;
            }
        if (csv_buf_end_row(&t->body) < 0 ||
            array_grow((void **)&t->rows, &t->cap, t->n + 1, sizeof *t->rows) < 0) {
            taken = -ENOMEM;
            goto out;
        }
        t->rows[t->n] = (struct jrow){ts, t->n, off, t->body.len - off};
        t->n++;
        taken++;
    }
out:
    csv_fields_free(&f);
    free(text);
    return taken;
}

static int write_tab(const char *dir, const char *name, struct jtab *t, struct carma_err *e)
{
    if (t->n > 1 && !t->marks) /* rows is NULL when there are none */
        qsort(t->rows, t->n, sizeof *t->rows, jrow_cmp);
    struct csv_buf out = {0};
    int r = 0;
    for (size_t k = 0; t->cols[k] && r == 0; k++)
        r = csv_buf_field(&out, t->cols[k], k == 0);
    if (r == 0)
        r = csv_buf_end_row(&out);
    for (size_t i = 0; i < t->n && r == 0; i++)
        r = csv_buf_raw(&out, t->body.data + t->rows[i].off, t->rows[i].len);
    if (r < 0) {
        csv_buf_free(&out);
        return carma_err_set(e, -ENOMEM, "out of memory");
    }
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    r = file_replace(p, out.data, out.len);
    csv_buf_free(&out);
    return r < 0 ? carma_err_set(e, r, "cannot write %s: %s", p, strerror(-r)) : 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int collect_join_run(const char *dir, const char *out, void (*warn)(void *cls, const char *msg),
                     void *cls, struct collect_join_result *r, struct carma_err *e)
{
    memset(r, 0, sizeof *r);
    char cdir[4200];
    snprintf(cdir, sizeof cdir, "%s/carma", dir);
    snprintf(r->out_dir, sizeof r->out_dir, "%s/%s", dir, out);
    DIR *d = opendir(cdir);
    if (!d)
        return errno == ENOENT ? 0
                               : carma_err_set(e, -errno, "cannot read the directory %s: %s", cdir,
                                               strerror(errno));
    char **hosts = NULL;
    size_t nh = 0, hcap = 0;
    struct dirent *de;
    int ret = 0;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char p[4500];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", cdir, de->d_name);
        size_t pl = strlen(p);
        snprintf(p + pl, sizeof p - pl, "/%s", collect_samples_name(p));
        if (stat(p, &st) < 0)
            continue;
        char *h = strdup(de->d_name);
        if (!h || array_grow((void **)&hosts, &hcap, nh + 1, sizeof *hosts) < 0) {
            free(h);
            ret = carma_err_set(e, -ENOMEM, "out of memory");
            break;
        }
        hosts[nh++] = h;
    }
    closedir(d);
    if (ret < 0 || nh == 0)
        goto out_hosts;
    qsort(hosts, nh, sizeof *hosts, name_cmp);

    struct jtab ts = {.cols = SAMPLES_COLS, .what = "samples", .ts_col = 1},
                tn = {.cols = NODES_COLS, .what = "nodes.csv", .ts_col = 1},
                tm = {.cols = MARKS_COLS, .what = "marks.csv", .ts_col = 4, .marks = true};
    struct warner w = {warn, cls, 0};
    json_t *man = json_object(), *from = json_array(), *nodes = json_array();
    json_t *job = NULL;
    double interval = NAN;
    bool all_complete = true;
    for (size_t i = 0; i < nh; i++) {
        char p[4500];
        snprintf(p, sizeof p, "%s/%s", cdir, hosts[i]);
        size_t pl = strlen(p);
        snprintf(p + pl, sizeof p - pl, "/%s", collect_samples_name(p));
        long n = read_tab(p, &ts, &w, &r->rows_skipped);
        if (n == -ENOMEM) {
            ret = carma_err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        if (n < 0)
            continue;
        snprintf(p, sizeof p, "%s/%s/nodes.csv", cdir, hosts[i]);
        long nn = read_tab(p, &tn, &w, &r->rows_skipped);
        if (nn == -ENOMEM) {
            ret = carma_err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        snprintf(p, sizeof p, "%s/%s/marks.csv", cdir, hosts[i]);
        long nm = read_tab(p, &tm, &w, &r->rows_skipped);
        if (nm == -ENOMEM) {
            ret = carma_err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        tm.id_base = tm.id_max;
        r->inputs++;
        snprintf(p, sizeof p, "%s/%s/manifest.json", cdir, hosts[i]);
        json_error_t je;
        int ferr = 0;
        json_t *m = file_load_json(p, 0, &je, &ferr);
        if (!m)
            warnf(&w, "%s: %s (its interval and status are not known)", p,
                  ferr == -EINVAL ? "not JSON" : strerror(-ferr));
        double iv = jsonutil_get_num(json_object_get(m, "options"), "interval_s");
        if (isfinite(iv) && (isnan(interval) || iv > interval))
            interval = iv;
        if (!job && json_is_string(json_object_get(m, "job_id")))
            job = json_incref(json_object_get(m, "job_id"));
        const char *status = jsonutil_get_str(m, "status");
        if (!status || strcmp(status, "complete") != 0)
            all_complete = false;
        size_t k;
        json_t *x;
        json_array_foreach(json_object_get(m, "nodes"), k, x)
        {
            bool seen = false;
            size_t q;
            json_t *y;
            json_array_foreach(nodes, q, y) seen |= json_equal(x, y);
            if (!seen && json_is_string(x))
                json_array_append(nodes, x);
        }
        json_t *fo = json_object();
        json_object_set_new(fo, "host", json_string(hosts[i]));
        json_object_set_new(fo, "status", status ? json_string(status) : json_null());
        json_object_set_new(fo, "sample_row_count", json_integer(n));
        json_array_append_new(from, fo);
        json_decref(m);
    }
    if (r->inputs == 0)
        goto out;
    if (w.count > WARNINGS_MAX && warn) {
        char buf[128];
        snprintf(buf, sizeof buf, "%zu more warnings about DIR/carma", w.count - WARNINGS_MAX);
        warn(cls, buf);
    }
    int mr = file_mkdirs(r->out_dir);
    if (mr < 0) {
        ret = carma_err_set(e, mr, "cannot create %s: %s", r->out_dir, strerror(-mr));
        goto out;
    }
    if ((ret = write_tab(r->out_dir, COLLECT_HOST_SAMPLES, &ts, e)) < 0 ||
        (tn.any && (ret = write_tab(r->out_dir, "nodes.csv", &tn, e)) < 0) ||
        (tm.any && (ret = write_tab(r->out_dir, "marks.csv", &tm, e)) < 0))
        goto out;
    r->marks = tm.n;
    if (!tm.any) { /* a marks.csv of an earlier merge is not this one's */
        char p[4400];
        snprintf(p, sizeof p, "%s/marks.csv", r->out_dir);
        if (unlink(p) < 0 && errno != ENOENT) {
            ret = carma_err_set(e, -errno, "cannot remove %s: %s", p, strerror(errno));
            goto out;
        }
    }
    r->rows = ts.n;
    json_object_set_new(man, "schema_version", json_integer(1));
    json_object_set_new(man, "producer", json_string("carma merge"));
    json_t *sv = json_object();
    json_object_set_new(sv, "samples_csv", json_integer(1));
    json_object_set_new(sv, "nodes_csv", json_integer(1));
    if (tm.any)
        json_object_set_new(sv, "marks_csv", json_integer(1));
    json_object_set_new(man, "schema_versions", sv);
    json_t *opt = json_object();
    json_object_set_new(opt, "interval_s", jsonutil_real(interval));
    json_object_set_new(man, "options", opt);
    json_object_set_new(man, "job_id", job ? job : json_null());
    job = NULL;
    json_object_set_new(man, "nodes", json_incref(nodes));
    json_object_set_new(man, "sample_row_count", json_integer((json_int_t)ts.n));
    json_object_set_new(man, "skipped_row_count", json_integer((json_int_t)r->rows_skipped));
    json_object_set_new(man, "status",
                        json_string(all_complete && !r->rows_skipped ? "complete" : "incomplete"));
    json_object_set_new(man, "merged_from", json_incref(from));
    char mp[4400];
    snprintf(mp, sizeof mp, "%s/manifest.json", r->out_dir);
    int wr = jsonutil_write_file(man, mp);
    if (wr < 0) {
        ret = carma_err_set(e, wr, "cannot write %s: %s", mp, strerror(-wr));
        goto out;
    }
    ret = 1;
out:
    json_decref(job);
    json_decref(man);
    json_decref(from);
    json_decref(nodes);
    free(ts.rows);
    free(tn.rows);
    free(tm.rows);
    csv_buf_free(&ts.body);
    csv_buf_free(&tn.body);
    csv_buf_free(&tm.body);
out_hosts:
    for (size_t i = 0; i < nh; i++)
        free(hosts[i]);
    free(hosts);
    return ret;
}
