/*
 * srt/host: srt-slurm's host collector files (see host.h).
 *
 * The sensors are fixed when the writer opens: each cycle walks them in name order, formats the
 * rows into one buffer (grown at open to hold a cycle of every sensor) and hands it to the CSV's
 * journal. The part every row of a cycle shares ("3,<unix>,<local>,<host>,<source>,") is
 * formatted once per cycle.
 */
#include "srt/host.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/file.h"
#include "core/fmt.h"
#include "core/journal.h"
#include "core/pyjson.h"
#include "core/timeutil.h"
#include "sources/dcgm.h"
#include "srt/json.h"

#define EOL     "\r\n"
#define EOL_LEN 2

#define HEADER_V3                                                                                  \
    "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"      \
    "total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq" EOL
#define HEADER_V4                                                                                  \
    "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"      \
    "cpu_rail_w,soc_w,dram_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,"            \
    "cpu_util_sys,cpu_util_irq" EOL

#define PATH_CAP 4200

/* Room for a row less its host: the prefix (~100), sensor (48), socket (11), up to 10 numbers
 * of 32 and commas. */
#define ROW_MAX 512

const char *srt_host_source_name(enum srt_host_source s)
{
    return s == SRT_HOST_DCGM ? "dcgm" : "acpi";
}

const char *srt_host_header(int schema)
{
    return schema == 3 ? HEADER_V3 : schema == 4 ? HEADER_V4 : NULL;
}

/* ---- sensors ---- */

static const char *kind_suffix(enum hwmon_oem_kind k)
{
    switch (k) {
    case HWMON_OEM_TOTAL:
        return "cpuSidePowerUsageW";
    case HWMON_OEM_CPU_RAIL:
        return "cpuRailPowerUsageW";
    case HWMON_OEM_SOC:
        return "socPowerUsageW";
    case HWMON_OEM_DRAM:
        return "dramPowerUsageW";
    default:
        return NULL;
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct srt_host_sensor *)a)->name,
                  ((const struct srt_host_sensor *)b)->name);
}

/* The socket of "<prefix><N>" + rest (rest "" or "/<kind>"): N, or -1. */
static int name_socket(const char *name, const char *prefix, const char **rest)
{
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0)
        return -1;
    const char *p = name + pl;
    if (*p < '0' || *p > '9')
        return -1;
    long v = 0;
    while (*p >= '0' && *p <= '9' && v <= HWMON_SOCKET_MAX)
        v = 10 * v + (*p++ - '0');
    if (v > HWMON_SOCKET_MAX)
        return -1;
    *rest = p;
    return (int)v;
}

size_t srt_host_sensors(const struct channel_set *set, enum srt_host_source src,
                        struct srt_host_sensor *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; set && i < set->n && n < cap; i++) {
        const struct channel *c = &set->ch[i];
        if (!c->source)
            continue;
        const char *rest = NULL;
        struct srt_host_sensor s = {.channel = i};
        if (src == SRT_HOST_ACPI) {
            if (strcmp(c->source, "hwmon") != 0)
                continue;
            s.socket = name_socket(c->name, "hwmon/power_meter/socket", &rest);
            if (s.socket < 0 || *rest != '/')
                continue;
            bool found = false;
            for (int k = HWMON_OEM_TOTAL; k < HWMON_OEM_OTHER && !found; k++)
                if (strcmp(rest + 1, hwmon_oem_kind_name((enum hwmon_oem_kind)k)) == 0) {
                    s.kind = (enum hwmon_oem_kind)k;
                    found = true;
                }
            if (!found)
                continue; /* a second sensor of the same (socket, kind): "total.hwmon10.power1" */
            snprintf(s.name, sizeof s.name, "CPU%d:%s", s.socket, kind_suffix(s.kind));
        } else {
            if (strcmp(c->source, "dcgm") != 0)
                continue;
            s.socket = name_socket(c->name, "dcgm/cpu", &rest);
            if (s.socket < 0 || *rest)
                continue;
            s.kind = HWMON_OEM_TOTAL;
            snprintf(s.name, sizeof s.name, "CPU%d:cpuPowerUsageW", s.socket);
        }
        out[n++] = s;
    }
    qsort(out, n, sizeof *out, by_name);
    return n;
}

bool srt_host_has_total(const struct srt_host_sensor *sensors, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (sensors[i].kind == HWMON_OEM_TOTAL)
            return true;
    return false;
}

/* ---- cells ---- */

static size_t put2(char *p, int v)
{
    p[0] = (char)('0' + v / 10 % 10);
    p[1] = (char)('0' + v % 10);
    return 2;
}

size_t srt_host_local_time(char *buf, size_t cap, int64_t real_ns)
{
    if (cap < 48 || real_ns < 0)
        return 0;
    time_t sec = (time_t)(real_ns / NS_PER_S);
    int us = (int)(real_ns % NS_PER_S / 1000);
    struct tm tm;
    if (!localtime_r(&sec, &tm) || tm.tm_year + 1900 < 1 || tm.tm_year + 1900 > 9999)
        return 0;
    size_t n = 0;
    int y = tm.tm_year + 1900;
    n += put2(buf + n, y / 100);
    n += put2(buf + n, y % 100);
    buf[n++] = '-';
    n += put2(buf + n, tm.tm_mon + 1);
    buf[n++] = '-';
    n += put2(buf + n, tm.tm_mday);
    buf[n++] = 'T';
    n += put2(buf + n, tm.tm_hour);
    buf[n++] = ':';
    n += put2(buf + n, tm.tm_min);
    buf[n++] = ':';
    n += put2(buf + n, tm.tm_sec);
    if (us) {
        buf[n++] = '.';
        for (int k = 5; k >= 0; k--) {
            buf[n + (size_t)k] = (char)('0' + us % 10);
            us /= 10;
        }
        n += 6;
    }
    long off = tm.tm_gmtoff;
    buf[n++] = off < 0 ? '-' : '+';
    if (off < 0)
        off = -off;
    n += put2(buf + n, (int)(off / 3600));
    buf[n++] = ':';
    n += put2(buf + n, (int)(off / 60 % 60));
    if (off % 60) {
        buf[n++] = ':';
        n += put2(buf + n, (int)(off % 60));
    }
    buf[n] = '\0';
    return n;
}

/* Appends a float cell (nothing for a NaN or infinite value). Room must be reserved. */
static void put_float(struct csv_buf *b, double v)
{
    if (isfinite(v))
        srt_json_float_cell(b, v);
}

static void put_raw(struct csv_buf *b, const char *s, size_t n)
{
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

static void put_comma(struct csv_buf *b)
{
    b->data[b->len++] = ',';
}

static void put_util(struct csv_buf *b, enum srt_host_source src, const struct srt_host_value *v)
{
    for (size_t k = 0; k < SRT_HOST_UTIL; k++) {
        put_comma(b);
        if (src == SRT_HOST_DCGM)
            put_float(b, v->util[k]);
    }
}

/* The start of a row: prefix, sensor, socket, power. */
static void row_start(struct csv_buf *b, const char *prefix, size_t plen,
                      const struct srt_host_sensor *s, double power_w)
{
    put_raw(b, prefix, plen);
    put_raw(b, s->name, strlen(s->name));
    put_comma(b);
    b->len += fmt_u64(b->data + b->len, (uint64_t)s->socket);
    put_comma(b);
    put_float(b, power_w);
}

static void row_end(struct csv_buf *b)
{
    put_raw(b, EOL, EOL_LEN);
    b->data[b->len] = '\0';
}

/* The valid reading of the (socket, kind) sensor among s[0 .. n), or NAN. */
static double rail(const struct srt_host_sensor *s, const struct srt_host_value *v, size_t n,
                   int socket, enum hwmon_oem_kind kind)
{
    for (size_t i = 0; i < n; i++)
        if (s[i].socket == socket && s[i].kind == kind)
            return v[i].valid ? v[i].power_w : NAN;
    return NAN;
}

int srt_host_rows(struct csv_buf *b, int schema, enum srt_host_source src, const char *host,
                  int64_t real_ns, const struct srt_host_sensor *s, const struct srt_host_value *v,
                  size_t n)
{
    size_t hlen = strlen(host);
    if (csv_buf_reserve(b, n * (hlen + ROW_MAX) + 1) < 0)
        return -ENOMEM;
    char prefix[160];
    size_t plen = 0;
    prefix[plen++] = (char)('0' + schema);
    prefix[plen++] = ',';
    plen += fmt_unix_us(prefix + plen, real_ns);
    prefix[plen++] = ',';
    plen += srt_host_local_time(prefix + plen, sizeof prefix - plen - 8, real_ns);
    prefix[plen++] = ',';

    /* the total: v3 ACPI every total-kind sensor, v3 DCGM the valid sockets, v4 the rows */
    double total = 0;
    bool total_ok = true;
    int rows = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].kind != HWMON_OEM_TOTAL)
            continue;
        if (v[i].valid) {
            total += v[i].power_w;
            rows++;
        } else if (src == SRT_HOST_ACPI && schema == 3) {
            total_ok = false;
        }
    }
    if (src == SRT_HOST_DCGM || schema == 4)
        total_ok = rows > 0;
    char tcell[40];
    size_t tlen = 0;
    if (total_ok) {
        struct csv_buf tb = {tcell, 0, sizeof tcell};
        srt_json_float_cell(&tb, total);
        tlen = tb.len;
    }

    size_t start = b->len;
    rows = 0;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].valid || (schema == 4 && s[i].kind != HWMON_OEM_TOTAL))
            continue;
        put_raw(b, prefix, plen);
        put_raw(b, host, hlen);
        put_comma(b);
        put_raw(b, srt_host_source_name(src), 4);
        put_comma(b);
        row_start(b, "", 0, &s[i], v[i].power_w);
        put_comma(b);
        if (schema == 4) {
            static const enum hwmon_oem_kind rails[] = {HWMON_OEM_CPU_RAIL, HWMON_OEM_SOC,
                                                        HWMON_OEM_DRAM};
            for (size_t k = 0; k < 3; k++) {
                if (src == SRT_HOST_ACPI)
                    put_float(b, rail(s, v, n, s[i].socket, rails[k]));
                put_comma(b);
            }
        }
        put_raw(b, tcell, tlen);
        put_util(b, src, &v[i]);
        row_end(b);
        rows++;
    }
    if (rows == 0)
        b->len = start;
    return rows;
}

/* ---- the writer ---- */

struct srt_host {
    struct journal *csv;
    char csv_path[PATH_CAP], meta_path[PATH_CAP];
    struct csv_buf host; /* the host as a CSV field */
    struct csv_buf buf;
    int schema;
    enum srt_host_source source;
    const char *requested;
    char host_name[256];
    int64_t interval_ns, started_ns;
    size_t n;
    struct srt_host_sensor s[SRT_HOST_SENSORS_MAX];
    json_t *reader; /* the reader's metadata (sensors, domains, ...) */
    uint64_t rows, failures;
};

static json_t *jpath(const char *root, const char *rel)
{
    char p[PATH_CAP];
    if (!root || strcmp(root, "/") == 0)
        snprintf(p, sizeof p, "/%s", rel);
    else
        snprintf(p, sizeof p, "%s/%s", root, rel);
    return json_string(p);
}

static const char *domain_of(enum hwmon_oem_kind k)
{
    switch (k) {
    case HWMON_OEM_TOTAL:
        return "cpu_side_socket_total";
    case HWMON_OEM_CPU_RAIL:
        return "cpu_rail";
    case HWMON_OEM_SOC:
        return "soc_rail";
    case HWMON_OEM_DRAM:
        return "dram_rail";
    default:
        return "other";
    }
}

/* The reader metadata of §3.2 (keys sorted when written). */
static json_t *reader_json(const struct srt_host_opts *o)
{
    json_t *m = json_object();
    json_t *sensors = json_array();
    for (size_t i = 0; i < o->n; i++) {
        const struct srt_host_sensor *s = &o->sensors[i];
        const struct channel *c = &o->set->ch[s->channel];
        json_t *j = json_object();
        json_object_set_new(j, "name", json_string(s->name));
        if (o->source == SRT_HOST_ACPI) {
            json_object_set_new(j, "socket_id", json_integer(s->socket));
            json_object_set_new(j, "domain_kind", json_string(hwmon_oem_kind_name(s->kind)));
            json_object_set_new(j, "domain", json_string(domain_of(s->kind)));
            json_object_set_new(j, "label", json_string(c->label));
            json_object_set_new(j, "path", jpath(o->root, c->path));
            json_object_set_new(j, "accuracy", json_null());
            json_object_set_new(j, "average_interval_ms",
                                c->gauge_window_ns > 0 ? json_real((double)c->gauge_window_ns / 1e6)
                                                       : json_null());
        } else {
            json_object_set_new(j, "cpu_entity_id", json_integer(s->socket));
        }
        json_array_append_new(sensors, j);
    }
    json_object_set_new(m, "sensors", sensors);
    if (o->source == SRT_HOST_ACPI) {
        json_object_set_new(m, "source", json_string("acpi"));
        json_object_set_new(m, "driver", json_string("Linux ACPI power_meter hwmon"));
        json_object_set_new(m, "semantics",
                            json_string("power_meter average power in watts; the socket total "
                                        "is the CPU-side socket envelope, rails are parts of it"));
        json_t *dom = json_array();
        for (size_t i = 0; i < o->set->n; i++) {
            const struct channel *c = &o->set->ch[i];
            if (!c->source || strcmp(c->source, "hwmon") != 0 ||
                strncmp(c->name, "hwmon/power_meter/", 18) != 0)
                continue;
            json_t *j = json_object();
            json_object_set_new(j, "name", json_string(c->label[0] ? c->label : c->name));
            json_object_set_new(j, "path", jpath(o->root, c->path));
            json_array_append_new(dom, j);
        }
        json_object_set_new(m, "available_power_domains", dom);
        json_object_set_new(m, "total_method",
                            json_string("sum of the socket totals when every one read"));
        json_object_set_new(m, "aggregate_scope", json_string("cpu_side_socket_total"));
    } else {
        json_object_set_new(m, "source", json_string("dcgm"));
        json_object_set_new(m, "field_id", json_integer(1130));
        json_object_set_new(m, "field_name", json_string("DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT"));
        json_object_set_new(m, "semantics", json_string("instantaneous power usage in watts"));
        json_object_set_new(m, "total_method", json_string("sum of the valid sockets"));
        json_object_set_new(m, "aggregate_scope", json_string("cpu_rail_only"));
        static const char *const cols[] = {"cpu_util_total", "cpu_util_user", "cpu_util_nice",
                                           "cpu_util_sys", "cpu_util_irq"};
        static const char *const names[] = {
            "DCGM_FI_DEV_CPU_UTIL_TOTAL", "DCGM_FI_DEV_CPU_UTIL_USER", "DCGM_FI_DEV_CPU_UTIL_NICE",
            "DCGM_FI_DEV_CPU_UTIL_SYS", "DCGM_FI_DEV_CPU_UTIL_IRQ"};
        json_t *u = json_array();
        for (int k = 0; k < SRT_HOST_UTIL; k++) {
            json_t *j = json_object();
            json_object_set_new(j, "column", json_string(cols[k]));
            json_object_set_new(j, "field_id", json_integer(DCGM_FI_DEV_CPU_UTIL_TOTAL + k));
            json_object_set_new(j, "field_name", json_string(names[k]));
            json_array_append_new(u, j);
        }
        json_object_set_new(m, "utilization_fields", u);
        json_object_set_new(m, "utilization_unit",
                            json_string("fraction of socket CPU time (0-1)"));
    }
    return m;
}

/* Seconds since the epoch as a float, the whole seconds kept exact (ns / 1e9 would round
 * 1788308943.25 to ...943.2499998). */
static json_t *seconds(int64_t ns)
{
    return json_real((double)(ns / NS_PER_S) + (double)(ns % NS_PER_S) / 1e9);
}

json_t *srt_host_metadata(const struct srt_host *w, bool final, int64_t ended_ns)
{
    json_t *m = json_deep_copy(w->reader);
    if (!m)
        return NULL;
    json_object_set_new(m, "schema_version", json_integer(w->schema));
    json_object_set_new(m, "hostname", json_string(w->host_name));
    json_object_set_new(m, "requested_source", json_string(w->requested));
    json_object_set_new(m, "sample_interval_seconds", seconds(w->interval_ns));
    json_object_set_new(m, "started_at_unix", seconds(w->started_ns));
    if (final) {
        json_object_set_new(m, "ended_at_unix", seconds(ended_ns));
        json_object_set_new(m, "sample_row_count", json_integer((json_int_t)w->rows));
        json_object_set_new(m, "read_failure_count", json_integer((json_int_t)w->failures));
        json_object_set_new(m, "status", json_string(w->rows ? "complete" : "failed"));
    }
    return m;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A copy of j with every object's keys in sorted order (json.dumps(sort_keys=True)). */
static json_t *sorted(const json_t *j)
{
    if (json_is_array(j)) {
        json_t *a = json_array();
        for (size_t i = 0; i < json_array_size(j); i++)
            json_array_append_new(a, sorted(json_array_get(j, i)));
        return a;
    }
    if (!json_is_object(j))
        return json_deep_copy(j);
    size_t n = json_object_size(j);
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    json_t *o = json_object();
    if (!keys || !o) {
        free(keys);
        json_decref(o);
        return NULL;
    }
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)j, key, v) keys[k++] = key;
    if (k > 1)
        qsort(keys, k, sizeof *keys, cmp_key);
    for (size_t i = 0; i < k; i++)
        json_object_set_new(o, keys[i], sorted(json_object_get(j, keys[i])));
    free(keys);
    return o;
}

int srt_host_json_write(json_t *j, const char *path, struct carma_err *e)
{
    json_t *s = j ? sorted(j) : NULL;
    json_decref(j);
    if (!s)
        return carma_err_set(e, -ENOMEM, "cannot write %s: out of memory", path);
    return srt_json_replace(s, path, e);
}

static void free_all(struct srt_host *w)
{
    if (!w)
        return;
    journal_close(w->csv);
    csv_buf_free(&w->host);
    csv_buf_free(&w->buf);
    json_decref(w->reader);
    free(w);
}

struct srt_host *srt_host_open(const struct srt_host_opts *o, struct carma_err *e)
{
    const char *header = srt_host_header(o->schema);
    if (!header) {
        carma_err_set(e, -EINVAL, "srt-slurm host collector: schema %d is not 3 or 4", o->schema);
        return NULL;
    }
    if (o->n == 0 || o->n > SRT_HOST_SENSORS_MAX) {
        carma_err_set(e, -EINVAL, "srt-slurm host collector: %zu sensors (1 to %d)", o->n,
                      SRT_HOST_SENSORS_MAX);
        return NULL;
    }
    struct srt_host *w = calloc(1, sizeof *w);
    if (!w) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    w->schema = o->schema;
    w->source = o->source;
    w->requested = o->requested_source ? o->requested_source : "auto";
    w->interval_ns = o->interval_ns;
    w->started_ns = o->started_ns;
    w->n = o->n;
    if (o->n)
        memcpy(w->s, o->sensors, o->n * sizeof *w->s);
    snprintf(w->host_name, sizeof w->host_name, "%s", o->host);
    if ((size_t)snprintf(w->csv_path, sizeof w->csv_path, "%s/%s.csv", o->nodes_dir, o->host) >=
            sizeof w->csv_path ||
        (size_t)snprintf(w->meta_path, sizeof w->meta_path, "%s/%s.metadata.json", o->nodes_dir,
                         o->host) >= sizeof w->meta_path) {
        carma_err_set(e, -ENAMETOOLONG, "cannot create %s/%s.csv: %s", o->nodes_dir, o->host,
                      strerror(ENAMETOOLONG));
        goto fail;
    }
    w->reader = reader_json(o);
    if (!w->reader || csv_buf_field(&w->host, o->host, 1) < 0 ||
        csv_buf_reserve(&w->buf, o->n * (w->host.len + ROW_MAX) + 1) < 0) {
        carma_err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    w->csv = srt_json_csv_create(o->nodes_dir, w->csv_path, header, e);
    if (!w->csv)
        goto fail;
    if (srt_host_json_write(srt_host_metadata(w, false, 0), w->meta_path, e) < 0)
        goto fail;
    return w;
fail:
    free_all(w);
    return NULL;
}

int srt_host_cycle(struct srt_host *w, int64_t real_ns, const struct srt_host_value *v,
                   struct carma_err *e)
{
    w->buf.len = 0;
    int rows = srt_host_rows(&w->buf, w->schema, w->source, w->host.data, real_ns, w->s, v, w->n);
    if (rows < 0)
        return carma_err_set(e, rows, "cannot write %s: out of memory", w->csv_path);
    if (rows == 0) {
        w->failures++;
        return 0;
    }
    if (journal_damaged(w->csv))
        return carma_err_set(e, -EIO, "cannot write %s: it ends in part of a cycle", w->csv_path);
    int r = journal_append(w->csv, w->buf.data, w->buf.len, (uint64_t)rows, -1, NULL);
    if (r < 0)
        return carma_err_set(e, r, "cannot write %s: %s (the rows written before are kept)",
                             w->csv_path, strerror(-r));
    w->rows += (uint64_t)rows;
    return rows;
}

uint64_t srt_host_row_count(const struct srt_host *w)
{
    return w ? w->rows : 0;
}

uint64_t srt_host_failure_count(const struct srt_host *w)
{
    return w ? w->failures : 0;
}

int srt_host_finish(struct srt_host *w, struct carma_err *e)
{
    if (!w)
        return 0;
    int ret = journal_finish(w->csv, w->csv_path, e);
    w->csv = NULL;
    struct carma_err me = {0};
    int r = srt_host_json_write(srt_host_metadata(w, true, time_real_ns()), w->meta_path, &me);
    if (r < 0 && !ret)
        ret = carma_err_set(e, r, "%s", me.msg);
    free_all(w);
    return ret;
}

static int marker(const char *ready_dir, const char *host, const char *suffix, json_t *j,
                  struct carma_err *e)
{
    char path[PATH_CAP];
    if ((size_t)snprintf(path, sizeof path, "%s/%s%s", ready_dir, host, suffix) >= sizeof path) {
        json_decref(j);
        return carma_err_set(e, -ENAMETOOLONG, "cannot create %s/%s%s: %s", ready_dir, host, suffix,
                             strerror(ENAMETOOLONG));
    }
    int r = file_mkdirs(ready_dir);
    if (r < 0) {
        json_decref(j);
        return carma_err_set(e, r, "cannot create %s: %s", ready_dir, strerror(-r));
    }
    return srt_host_json_write(j, path, e);
}

int srt_host_ready(const char *ready_dir, const char *host, const char *source, int64_t real_ns,
                   struct carma_err *e)
{
    json_t *j = json_object();
    json_object_set_new(j, "hostname", json_string(host));
    json_object_set_new(j, "source", json_string(source));
    json_object_set_new(j, "ready_at_unix", seconds(real_ns));
    return marker(ready_dir, host, ".ready.json", j, e);
}

int srt_host_error(const char *ready_dir, const char *host, const char *error, struct carma_err *e)
{
    json_t *j = json_object();
    json_object_set_new(j, "hostname", json_string(host));
    json_object_set_new(j, "error", json_string(error));
    return marker(ready_dir, host, ".error.json", j, e);
}
