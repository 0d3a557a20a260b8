/*
 * srt/hostmerge: srt-slurm's host collector, head-node side (see hostmerge.h).
 */
#include "srt/hostmerge.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/array.h"
#include "core/csv.h"
#include "core/file.h"
#include "core/pyjson.h"

#define MAX_FILE_BYTES    ((size_t)1 << 34) /* 16 GiB: one node's samples */
#define WARNINGS_PER_FILE 10

static const char *const hdr_v3[] = {
    "schema_version", "timestamp_unix", "timestamp_local", "hostname",      "source",
    "sensor",         "socket_id",      "power_w",         "total_power_w", "cpu_util_total",
    "cpu_util_user",  "cpu_util_nice",  "cpu_util_sys",    "cpu_util_irq",  NULL};
static const char *const hdr_v4[] = {"schema_version", "timestamp_unix", "timestamp_local",
                                     "hostname",       "source",         "sensor",
                                     "socket_id",      "power_w",        "cpu_rail_w",
                                     "soc_w",          "dram_w",         "total_power_w",
                                     "cpu_util_total", "cpu_util_user",  "cpu_util_nice",
                                     "cpu_util_sys",   "cpu_util_irq",   NULL};

#define COL_HOST   3
#define COL_SENSOR 5

const char *const *hostmerge_header(int schema)
{
    return schema == 3 ? hdr_v3 : schema == 4 ? hdr_v4 : NULL;
}

/* ---- names ---- */

static int names_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

bool hostmerge_names_has(const struct hostmerge_names *s, const char *name)
{
    return s->n && bsearch(&name, s->v, s->n, sizeof *s->v, names_cmp) != NULL;
}

int hostmerge_names_add(struct hostmerge_names *s, const char *name)
{
    if (hostmerge_names_has(s, name))
        return 0;
    if (array_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v) < 0)
        return -ENOMEM;
    char *c = strdup(name);
    if (!c)
        return -ENOMEM;
    size_t at = s->n;
    while (at > 0 && strcmp(s->v[at - 1], name) > 0) {
        s->v[at] = s->v[at - 1];
        at--;
    }
    s->v[at] = c;
    s->n++;
    return 0;
}

int hostmerge_names_parse(struct hostmerge_names *s, const char *list, struct carma_err *e)
{
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char name[256];
        if (len == 0 || len >= sizeof name)
            return carma_err_set(e, -EINVAL, "'%s': %s node name", list,
                                 len ? "a too long" : "an empty");
        memcpy(name, p, len);
        name[len] = '\0';
        if (strchr(name, '/') || name[0] == '.')
            return carma_err_set(e, -EINVAL, "'%s' is not a node name (a file name part)", name);
        if (hostmerge_names_add(s, name) < 0)
            return carma_err_set(e, -ENOMEM, "out of memory");
        if (!end)
            return 0;
        p = end + 1;
    }
}

void hostmerge_names_free(struct hostmerge_names *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* The names in DIR/sub that end in suffix, without it, into *ret (sorted). An absent
 * directory is empty. */
static int list_stems(const char *dir, const char *sub, const char *suffix,
                      struct hostmerge_names *ret, struct carma_err *e)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, sub);
    DIR *d = opendir(p);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        return carma_err_set(e, -errno, "cannot read the directory %s: %s", p, strerror(errno));
    }
    size_t sl = strlen(suffix);
    struct dirent *de;
    int r = 0;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n <= sl || de->d_name[0] == '.' || strcmp(de->d_name + n - sl, suffix) != 0)
            continue;
        char stem[256];
        if (n - sl >= sizeof stem)
            continue;
        memcpy(stem, de->d_name, n - sl);
        stem[n - sl] = '\0';
        if (hostmerge_names_add(ret, stem) < 0) {
            r = carma_err_set(e, -ENOMEM, "out of memory");
            break;
        }
    }
    closedir(d);
    return r;
}

static void warnf(const struct hostmerge_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warnf(const struct hostmerge_opts *o, const char *fmt, ...)
{
    if (!o->warn)
        return;
    char buf[4600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    o->warn(o->cls, buf);
}

/* ---- JSON as the host collector writes it (sort_keys=True, indent=2) ---- */

/* A copy of v with every object's keys sorted. */
static json_t *sorted_copy(const json_t *v)
{
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x) json_array_append_new(a, sorted_copy(x));
        return a;
    }
    if (!json_is_object(v))
        return json_deep_copy(v);
    size_t n = json_object_size(v), k = 0;
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    json_t *o = json_object();
    if (!keys || !o) {
        free(keys);
        json_decref(o);
        return NULL;
    }
    const char *key;
    const json_t *x;
    json_object_foreach((json_t *)v, key, x) keys[k++] = key;
    if (n > 1)
        qsort(keys, n, sizeof *keys, names_cmp);
    for (k = 0; k < n; k++)
        json_object_set_new(o, keys[k], sorted_copy(json_object_get(v, keys[k])));
    free(keys);
    return o;
}

static int write_json(const char *path, const json_t *m, struct carma_err *e)
{
    json_t *s = sorted_copy(m);
    char *text = s ? pyjson_dumps(s, 2) : NULL;
    json_decref(s);
    if (!text)
        return carma_err_set(e, -ENOMEM, "out of memory");
    size_t n = strlen(text);
    char *t2 = realloc(text, n + 2);
    if (!t2) {
        free(text);
        return carma_err_set(e, -ENOMEM, "out of memory");
    }
    t2[n] = '\n';
    t2[n + 1] = '\0';
    int r = file_replace(path, t2, n + 1);
    free(t2);
    return r < 0 ? carma_err_set(e, r, "cannot write %s: %s", path, strerror(-r)) : 0;
}

static json_t *names_json(const struct hostmerge_names *s)
{
    json_t *a = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(a, json_string(s->v[i]));
    return a;
}

static json_t *load_json(const char *path, const struct hostmerge_opts *o)
{
    json_error_t je;
    int err = 0;
    json_t *j = file_load_json(path, 0, &je, &err);
    if (!j && err != -ENOENT) {
        if (err == -EINVAL)
            warnf(o, "%s:%d:%d: not JSON: %s", path, je.line, je.column, je.text);
        else
            warnf(o, "%s: cannot read: %s", path, strerror(-err));
    }
    return j;
}

/* The earlier manifest (NULL when there is none or it is not JSON). */
static json_t *old_manifest(const char *dir, const struct hostmerge_opts *o)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    struct stat st;
    if (stat(p, &st) < 0)
        return NULL;
    json_t *m = load_json(p, o);
    if (m && !json_is_object(m)) {
        json_decref(m);
        m = NULL;
    }
    return m;
}

static bool same_str(const json_t *v, const char *s)
{
    const char *t = json_string_value(v);
    return t && strcmp(t, s) == 0;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* The common keys of both stages' manifests. */
static json_t *manifest_base(const struct hostmerge_opts *o, const json_t *old)
{
    json_t *m = json_object();
    json_object_set_new(m, "schema_version", json_integer(1));
    const char *job = o->job_id;
    json_t *oj = old ? json_object_get(old, "job_id") : NULL;
    if (!job && !json_is_string(oj)) {
        const char *env = getenv("SLURM_JOB_ID");
        job = env && *env ? env : NULL;
    }
    json_object_set_new(m, "job_id",
                        job                  ? json_string(job)
                        : json_is_string(oj) ? json_copy(oj)
                                             : json_null());
    json_t *orn = old ? json_object_get(old, "run_name") : NULL;
    json_object_set_new(m, "run_name",
                        o->run_name           ? json_string(o->run_name)
                        : json_is_string(orn) ? json_copy(orn)
                                              : json_null());
    json_object_set_new(m, "required", json_boolean(o->required));
    json_object_set_new(m, "producer", str_or_null(o->producer));
    json_object_set_new(m, "producer_git_commit", json_null());
    double now = o->now;
    if (now == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    }
    json_object_set_new(m, "updated_at_unix", json_real(now));
    return m;
}

/* ---- the start-up gate ---- */

int hostmerge_ready_poll(const char *dir, const struct hostmerge_names *nodes,
                         enum hostmerge_ready *st, struct carma_err *e)
{
    for (size_t i = 0; i < nodes->n; i++) {
        char p[4200];
        struct stat sb;
        snprintf(p, sizeof p, "%s/ready/%s.error.json", dir, nodes->v[i]);
        if (stat(p, &sb) == 0) {
            st[i] = HOSTMERGE_ERROR;
            continue;
        }
        if (errno != ENOENT)
            return carma_err_set(e, -errno, "cannot read %s: %s", p, strerror(errno));
        snprintf(p, sizeof p, "%s/ready/%s.ready.json", dir, nodes->v[i]);
        if (stat(p, &sb) == 0) {
            st[i] = HOSTMERGE_READY;
            continue;
        }
        if (errno != ENOENT)
            return carma_err_set(e, -errno, "cannot read %s: %s", p, strerror(errno));
        st[i] = HOSTMERGE_WAITING;
    }
    return 0;
}

/* The start-up reason code of states st of n nodes, NULL when all are ready. */
static const char *gate_reason(const enum hostmerge_ready *st, size_t n)
{
    bool waiting = false;
    for (size_t i = 0; i < n; i++) {
        if (st[i] == HOSTMERGE_ERROR)
            return "cpu_power_source_unavailable";
        waiting |= st[i] == HOSTMERGE_WAITING;
    }
    return waiting ? "cpu_power_startup_timeout" : NULL;
}

int hostmerge_gate_write(const char *dir, const struct hostmerge_opts *o,
                         const struct hostmerge_names *nodes, const enum hostmerge_ready *st,
                         bool done, struct carma_err *e)
{
    json_t *old = old_manifest(dir, o);
    json_t *m = manifest_base(o, old);
    json_decref(old);
    const char *reason = done ? gate_reason(st, nodes->n) : NULL;
    struct hostmerge_names ready = {0}, missing = {0};
    for (size_t i = 0; i < nodes->n; i++)
        if (hostmerge_names_add(st[i] == HOSTMERGE_READY ? &ready : &missing, nodes->v[i]) < 0) {
            json_decref(m);
            hostmerge_names_free(&ready);
            hostmerge_names_free(&missing);
            return carma_err_set(e, -ENOMEM, "out of memory");
        }
    json_object_set_new(m, "status",
                        json_string(!done    ? "starting"
                                    : reason ? "failed"
                                             : "running"));
    json_object_set_new(m, "startup_status",
                        done ? json_string(reason ? "failed" : "running") : json_null());
    json_object_set_new(m, "requested_source", json_null());
    json_object_set_new(m, "sample_interval_seconds", json_null());
    json_object_set_new(m, "expected_nodes", names_json(nodes));
    json_object_set_new(m, "observed_nodes", names_json(&ready));
    json_object_set_new(m, "missing_nodes", names_json(&missing));
    json_object_set_new(m, "sample_row_count", json_integer(0));
    json_t *rc = json_array();
    if (reason)
        json_array_append_new(rc, json_string(reason));
    json_object_set_new(m, "reason_codes", rc);
    json_object_set_new(m, "failed_processes", json_array());
    json_object_set_new(m, "node_metadata", json_object());
    json_object_set_new(m, "publication_valid", json_boolean(reason == NULL));
    hostmerge_names_free(&ready);
    hostmerge_names_free(&missing);
    char p[4200];
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    int r = write_json(p, m, e);
    json_decref(m);
    return r;
}

/* ---- the merge ---- */

struct mrow {
    double ts;
    const char *host, *sensor; /* into the file's text */
    size_t seq;                /* order read */
    size_t off, len;           /* the row as written, in the output buffer */
};

static int mrow_cmp(const void *pa, const void *pb)
{
    const struct mrow *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    int c = strcmp(a->host, b->host);
    if (c)
        return c;
    c = strcmp(a->sensor, b->sensor);
    if (c)
        return c;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* float(s) as Python reads it, finite only. */
static bool py_float(const char *s, double *ret)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (end == s || *end || !isfinite(v))
        return false;
    *ret = v;
    return true;
}

struct merge_state {
    char **texts;
    size_t ntexts, texts_cap;
    struct mrow *rows;
    size_t nrows, rows_cap;
    struct csv_buf body; /* every accepted row, serialized */
    struct hostmerge_names observed;
    json_t *skipped_files; /* [name] */
};

/* Reads nodes/<stem>.csv into m. Returns 0 or -ENOMEM (anything else is a warning). */
static int read_node_csv(const char *dir, const char *stem, const char *const *hdr, size_t width,
                         struct merge_state *m, const struct hostmerge_opts *o,
                         struct hostmerge_result *r)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/nodes/%s.csv", dir, stem);
    char *text = NULL;
    size_t len = 0;
    int rr = file_read_all(p, MAX_FILE_BYTES, &text, &len);
    if (rr < 0) {
        if (rr == -ENOMEM)
            return rr;
        warnf(o, "%s: cannot read: %s (skipped as malformed)", p, strerror(-rr));
        r->files_skipped++;
        json_array_append_new(m->skipped_files, json_sprintf("%s.csv", stem));
        return 0;
    }
    if (array_grow((void **)&m->texts, &m->texts_cap, m->ntexts + 1, sizeof *m->texts) < 0) {
        free(text);
        return -ENOMEM;
    }
    m->texts[m->ntexts++] = text;
    struct csv_fields f = {0};
    struct carma_err e = {0};
    size_t pos = 0, line = 1, bad = 0, good = 0;
    int s = csv_split(text, len, &pos, &line, p, &f, &e);
    bool hdr_ok = s > 0 && f.row.n == width;
    for (size_t k = 0; hdr_ok && k < width; k++)
        hdr_ok = strcmp(f.row.fields[k], hdr[k]) == 0;
    if (!hdr_ok) {
        if (s == -ENOMEM) {
            csv_fields_free(&f);
            return s;
        }
        warnf(o,
              "%s:1: %s (skipped as malformed: the current header is srt-slurm's host "
              "collector schema %d, %s,...,%s, %zu columns)",
              p,
              s < 0    ? e.msg
              : s == 0 ? "empty file, no header"
                       : "not the current header",
              width == 14 ? 3 : 4, hdr[0], hdr[width - 1], width);
        r->files_skipped++;
        json_array_append_new(m->skipped_files, json_sprintf("%s.csv", stem));
        csv_fields_free(&f);
        return 0;
    }
    r->files_read++;
    for (;;) {
        s = csv_split(text, len, &pos, &line, p, &f, &e);
        if (s == 0)
            break;
        if (s == -ENOMEM) {
            csv_fields_free(&f);
            return s;
        }
        const char *why = NULL;
        char whybuf[128];
        double ts = 0;
        if (s < 0) {
            why = e.msg;
        } else if (f.row.n != width) {
            snprintf(whybuf, sizeof whybuf, "%zu fields, the header has %zu", f.row.n, width);
            why = whybuf;
        } else if (!py_float(f.row.fields[1], &ts)) {
            snprintf(whybuf, sizeof whybuf, "timestamp_unix '%.40s' is not a number",
                     f.row.fields[1]);
            why = whybuf;
        }
        if (why) {
            r->rows_skipped++;
            if (bad++ < WARNINGS_PER_FILE && s < 0)
                warnf(o, "%s (row skipped, and the rest of the file)", why);
            else if (bad <= WARNINGS_PER_FILE)
                warnf(o, "%s:%zu: %s (row skipped)", p, f.row.line, why);
            if (s < 0)
                break; /* the split cannot go on past a broken record */
            continue;
        }
        size_t off = m->body.len;
        for (size_t k = 0; k < width; k++)
            if (csv_buf_field(&m->body, f.row.fields[k], k == 0) < 0) {
                csv_fields_free(&f);
                return -ENOMEM;
            }
        if (csv_buf_end_row(&m->body) < 0 ||
            array_grow((void **)&m->rows, &m->rows_cap, m->nrows + 1, sizeof *m->rows) < 0) {
            csv_fields_free(&f);
            return -ENOMEM;
        }
        m->rows[m->nrows] = (struct mrow){.ts = ts,
                                          .host = f.row.fields[COL_HOST],
                                          .sensor = f.row.fields[COL_SENSOR],
                                          .seq = m->nrows,
                                          .off = off,
                                          .len = m->body.len - off};
        m->nrows++;
        good++;
    }
    if (bad > WARNINGS_PER_FILE)
        warnf(o, "%s: %zu more rows skipped", p, bad - WARNINGS_PER_FILE);
    csv_fields_free(&f);
    if (good && hostmerge_names_add(&m->observed, stem) < 0)
        return -ENOMEM;
    return 0;
}

static void merge_state_free(struct merge_state *m)
{
    for (size_t i = 0; i < m->ntexts; i++)
        free(m->texts[i]);
    free(m->texts);
    free(m->rows);
    csv_buf_free(&m->body);
    hostmerge_names_free(&m->observed);
    json_decref(m->skipped_files);
}

/* Writes DIR/samples.csv: the header, the rows sorted. */
static int write_samples(const char *dir, const char *const *hdr, struct merge_state *m,
                         struct carma_err *e)
{
    if (m->nrows > 1) /* rows is NULL when there are none */
        qsort(m->rows, m->nrows, sizeof *m->rows, mrow_cmp);
    struct csv_buf out = {0};
    int r = 0;
    for (size_t k = 0; hdr[k] && r == 0; k++)
        r = csv_buf_field(&out, hdr[k], k == 0);
    if (r == 0)
        r = csv_buf_end_row(&out);
    if (r == 0)
        r = csv_buf_reserve(&out, m->body.len);
    for (size_t i = 0; i < m->nrows && r == 0; i++)
        r = csv_buf_raw(&out, m->body.data + m->rows[i].off, m->rows[i].len);
    if (r < 0) {
        csv_buf_free(&out);
        return carma_err_set(e, -ENOMEM, "out of memory");
    }
    char p[4200];
    snprintf(p, sizeof p, "%s/samples.csv", dir);
    r = file_replace(p, out.data ? out.data : "", out.len);
    csv_buf_free(&out);
    return r < 0 ? carma_err_set(e, r, "cannot write %s: %s", p, strerror(-r)) : 0;
}

static int add_reason(json_t *rc, const char *code)
{
    size_t i;
    json_t *x;
    json_array_foreach(rc, i, x) if (strcmp(json_string_value(x), code) == 0) return 0;
    return json_array_append_new(rc, json_string(code));
}

int hostmerge_run(const char *dir, const struct hostmerge_opts *o, struct hostmerge_result *r,
                  struct carma_err *e)
{
    memset(r, 0, sizeof *r);
    int schema = o->schema ? o->schema : 3;
    const char *const *hdr = hostmerge_header(schema);
    if (!hdr)
        return carma_err_set(e, -EINVAL, "schema %d: srt-slurm's host collector header is 3 or 4",
                             schema);
    size_t width = 0;
    while (hdr[width])
        width++;
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
        return carma_err_set(e, -ENOTDIR, "%s: not a directory", dir);
    struct merge_state m = {.skipped_files = json_array()};
    struct hostmerge_names csvs = {0}, metas = {0}, readys = {0}, errors = {0}, expected = {0};
    json_t *old = NULL, *man = NULL;
    int ret = 0;
    if ((ret = list_stems(dir, "nodes", ".csv", &csvs, e)) < 0 ||
        (ret = list_stems(dir, "nodes", ".metadata.json", &metas, e)) < 0 ||
        (ret = list_stems(dir, "ready", ".ready.json", &readys, e)) < 0 ||
        (ret = list_stems(dir, "ready", ".error.json", &errors, e)) < 0)
        goto out;
    for (size_t i = 0; i < csvs.n; i++)
        if ((ret = read_node_csv(dir, csvs.v[i], hdr, width, &m, o, r)) < 0) {
            carma_err_set(e, ret, "out of memory");
            goto out;
        }
    if ((ret = write_samples(dir, hdr, &m, e)) < 0)
        goto out;
    r->rows = m.nrows;

    old = old_manifest(dir, o);
    /* the expected nodes: given, else the gate's, else every node that left a file */
    bool enomem = false;
    if (o->expected && o->expected->n) {
        for (size_t i = 0; i < o->expected->n; i++)
            enomem |= hostmerge_names_add(&expected, o->expected->v[i]) < 0;
    } else if (old && json_array_size(json_object_get(old, "expected_nodes"))) {
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(old, "expected_nodes"), i, x) if (json_is_string(x))
            enomem |= hostmerge_names_add(&expected, json_string_value(x)) < 0;
    } else {
        struct hostmerge_names *all[] = {&csvs, &metas, &readys, &errors};
        for (size_t k = 0; k < 4; k++)
            for (size_t i = 0; i < all[k]->n; i++)
                enomem |= hostmerge_names_add(&expected, all[k]->v[i]) < 0;
    }
    if (enomem) {
        ret = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }

    man = manifest_base(o, old);
    json_t *rc = json_array();
    json_object_set_new(man, "reason_codes", rc);
    /* the start-up verdict: the gate's when it gave one (its status, or startup_status that
     * an earlier merge carried on), else from the markers now */
    const char *ost = old ? json_string_value(json_object_get(old, "startup_status")) : NULL;
    if (!ost && old)
        ost = json_string_value(json_object_get(old, "status"));
    bool gated = ost && (strcmp(ost, "failed") == 0 || strcmp(ost, "running") == 0);
    if (gated) {
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(old, "reason_codes"), i,
                           x) if (json_is_string(x) &&
                                  strncmp(json_string_value(x), "cpu_power_", 10) == 0)
            add_reason(rc, json_string_value(x));
    } else {
        bool err = false, waiting = false;
        for (size_t i = 0; i < expected.n; i++) {
            err |= hostmerge_names_has(&errors, expected.v[i]);
            waiting |= !hostmerge_names_has(&readys, expected.v[i]);
        }
        if (err || waiting)
            add_reason(rc, err ? "cpu_power_source_unavailable" : "cpu_power_startup_timeout");
    }
    json_object_set_new(man, "startup_status",
                        json_string(gated                 ? ost
                                    : json_array_size(rc) ? "failed"
                                                          : "running"));

    /* node metadata */
    json_t *nm = json_object(), *failed = json_array();
    json_object_set_new(man, "node_metadata", nm);
    json_object_set_new(man, "failed_processes", failed);
    json_t *req_src = NULL, *interval = NULL;
    bool unfinished = false;
    for (size_t i = 0; i < metas.n; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/nodes/%s.metadata.json", dir, metas.v[i]);
        json_t *md = load_json(p, o);
        if (!md)
            continue;
        json_object_set_new(nm, metas.v[i], md);
        if (!req_src && json_is_string(json_object_get(md, "requested_source")))
            req_src = json_object_get(md, "requested_source");
        if (!interval && json_is_number(json_object_get(md, "sample_interval_seconds")))
            interval = json_object_get(md, "sample_interval_seconds");
        const char *mst = json_string_value(json_object_get(md, "status"));
        if (mst && strcmp(mst, "failed") == 0) {
            json_t *fp = json_object();
            json_object_set_new(fp, "hostname", json_string(metas.v[i]));
            json_object_set_new(fp, "status", json_string("failed"));
            json_object_set_new(fp, "error", json_null());
            json_array_append_new(failed, fp);
        } else if (!json_object_get(md, "ended_at_unix")) {
            warnf(o, "%s: no ended_at_unix: the collector of %s never finished", p, metas.v[i]);
            unfinished = true;
        }
    }
    for (size_t i = 0; i < errors.n; i++) {
        bool listed = false;
        size_t k;
        json_t *x;
        json_array_foreach(failed, k, x) listed |=
            same_str(json_object_get(x, "hostname"), errors.v[i]);
        char p[4200];
        snprintf(p, sizeof p, "%s/ready/%s.error.json", dir, errors.v[i]);
        json_t *ej = load_json(p, o);
        const char *msg = ej ? json_string_value(json_object_get(ej, "error")) : NULL;
        warnf(o, "%s: the collector of %s could not open a power source%s%s", p, errors.v[i],
              msg ? ": " : "", msg ? msg : "");
        if (!listed) {
            json_t *fp = json_object();
            json_object_set_new(fp, "hostname", json_string(errors.v[i]));
            json_object_set_new(fp, "status", json_string("error"));
            json_object_set_new(fp, "error", str_or_null(msg));
            json_array_append_new(failed, fp);
        }
        json_decref(ej);
    }
    json_object_set_new(man, "requested_source", req_src ? json_copy(req_src) : json_null());
    json_object_set_new(man, "sample_interval_seconds",
                        interval ? json_copy(interval) : json_null());

    struct hostmerge_names missing = {0};
    for (size_t i = 0; i < expected.n; i++)
        if (!hostmerge_names_has(&m.observed, expected.v[i]))
            enomem |= hostmerge_names_add(&missing, expected.v[i]) < 0;
    if (o->interrupted || unfinished)
        add_reason(rc, "interrupted");
    if (r->files_skipped || r->rows_skipped)
        add_reason(rc, "cpu_samples_malformed");
    if (missing.n)
        add_reason(rc, "cpu_node_samples_missing");
    if (m.nrows == 0)
        add_reason(rc, "cpu_samples_empty");
    if (json_array_size(failed))
        add_reason(rc, "cpu_collector_failed");
    r->publication_valid = json_array_size(rc) == 0;
    json_object_set_new(man, "status",
                        json_string(r->publication_valid ? "complete" : "incomplete"));
    json_object_set_new(man, "expected_nodes", names_json(&expected));
    json_object_set_new(man, "observed_nodes", names_json(&m.observed));
    json_object_set_new(man, "missing_nodes", names_json(&missing));
    json_object_set_new(man, "sample_row_count", json_integer((json_int_t)m.nrows));
    json_object_set_new(man, "skipped_files", json_incref(m.skipped_files));
    json_object_set_new(man, "skipped_row_count", json_integer((json_int_t)r->rows_skipped));
    json_object_set_new(man, "samples_schema_version", json_integer(schema));
    json_object_set_new(man, "publication_valid", json_boolean(r->publication_valid));
    hostmerge_names_free(&missing);
    if (enomem) {
        ret = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    char p[4200];
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    if ((ret = write_json(p, man, e)) < 0)
        goto out;
    r->manifest = json_incref(man);
out:
    json_decref(man);
    json_decref(old);
    merge_state_free(&m);
    hostmerge_names_free(&csvs);
    hostmerge_names_free(&metas);
    hostmerge_names_free(&readys);
    hostmerge_names_free(&errors);
    hostmerge_names_free(&expected);
    return ret;
}
