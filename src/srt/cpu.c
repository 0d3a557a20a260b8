/*
 * srt/cpu: srt-slurm's head-node CPU power leg (see cpu.h).
 *
 * srt_cpu_parse walks the samples of a parsed body once per family, in body order, and keeps
 * what srt-slurm's cpu_parser.py keeps. It looks labels up itself (a short linear scan) and
 * classifies OEM texts with the hwmon source's table (hwmon_classify_oem), so that both sides
 * of carma read a Grace label the same way.
 *
 * The writer keeps one row buffer for the cycle: each srt_cpu_node appends the node's rows
 * (the fixed part "1,<timestamp>,<host>,<source>," formatted once per node), and
 * srt_cpu_cycle_end hands the buffer to the CSV's journal (core/journal.h: one write(2),
 * looping on short writes). Per node it
 * counts polls and errors and remembers the mode of its last scrape that gave rows, for
 * cpu_manifest.json.
 */
#include "srt/cpu.h"
#include "core/file.h"
#include "srt/json.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/csv.h"
#include "core/fmt.h"
#include "core/journal.h"
#include "core/parse.h"
#include "core/timeutil.h"
#include "sources/hwmon.h"

#define SAMPLES_HEADER                                                                             \
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w"
#define EOL     "\r\n"
#define EOL_LEN 2

#define SAMPLES_SCHEMA_VERSION  1
#define MANIFEST_SCHEMA_VERSION 1
#define PATH_CAP                4096

#define ACPI_FAMILY "cpu_power_acpi_watts"
#define DCGM_FAMILY "cpu_power_dcgm_watts"

/* A row's cells besides the host and the sensor: "1," (2), a timestamp (32), "acpi," (5), a
 * socket (11), two numbers (2 × 32), commas and the row end. */
#define ROW_FIXED_MAX 128

/* ---- the parser (srt-slurm's cpu_parser.py) ---- */

static const char *label(const struct prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}

/* A socket label: a decimal integer >= 0 that fits an int (as Python's int() of the text, less
 * its exotic forms). Returns it, or -1. */
static int socket_label(const char *s)
{
    uint64_t v;
    if (!s || parse_u64(s, &v) < 0 || v > INT_MAX)
        return -1;
    return (int)v;
}

/* The kind named by a type label, or -1 for anything but total, cpu_rail, soc and dram. */
static int kind_label(const char *s)
{
    static const enum hwmon_oem_kind kinds[] = {HWMON_OEM_TOTAL, HWMON_OEM_CPU_RAIL, HWMON_OEM_SOC,
                                                HWMON_OEM_DRAM};
    for (size_t i = 0; s && i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(s, hwmon_oem_kind_name(kinds[i])) == 0)
            return (int)kinds[i];
    return -1;
}

static void add_reading(struct srt_cpu_scrape *out, const char *oem_info, int socket, int kind,
                        double w)
{
    if (out->n == SRT_CPU_READINGS_MAX) {
        out->dropped++;
        return;
    }
    struct srt_cpu_reading *r = &out->r[out->n++];
    r->oem_info = oem_info;
    r->socket = socket;
    r->kind = kind;
    r->power_w = w;
}

void srt_cpu_parse(const struct prom_doc *doc, struct srt_cpu_scrape *out)
{
    out->mode = SRT_CPU_MODE_UNKNOWN;
    out->n = 0;
    out->dropped = 0;
    out->has_total = false;
    out->total_power_w = 0;
    if (!doc)
        return;

    for (size_t i = 0; i < doc->nsamples; i++) {
        const struct prom_sample *s = &doc->samples[i];
        if (strcmp(s->name, ACPI_FAMILY) != 0 || !isfinite(s->value) || s->value < 0)
            continue;
        const char *oem = label(s, "oem_info");
        int kind = kind_label(label(s, "type"));
        int socket = socket_label(label(s, "socket"));
        if (kind < 0 || socket < 0) {
            enum hwmon_oem_kind k;
            if (!oem || hwmon_classify_oem(oem, &k, &socket) != 1)
                continue; /* unclassified: dropped */
            kind = (int)k;
        }
        add_reading(out, oem ? oem : "", socket, kind, s->value);
        if (kind == HWMON_OEM_TOTAL) {
            out->total_power_w += s->value;
            out->has_total = true;
        }
    }
    if (out->n || out->dropped) {
        out->mode = SRT_CPU_MODE_ACPI;
        return;
    }

    for (size_t i = 0; i < doc->nsamples; i++) {
        const struct prom_sample *s = &doc->samples[i];
        if (strcmp(s->name, DCGM_FAMILY) != 0 || !isfinite(s->value) || s->value < 0)
            continue;
        int socket = socket_label(label(s, "socket"));
        if (socket < 0)
            continue;
        add_reading(out, NULL, socket, -1, s->value);
        out->total_power_w += s->value;
    }
    if (out->n || out->dropped) {
        out->mode = SRT_CPU_MODE_DCGM;
        out->has_total = true;
    }
}

const char *srt_cpu_mode_name(enum srt_cpu_mode mode)
{
    switch (mode) {
    case SRT_CPU_MODE_ACPI:
        return "acpi";
    case SRT_CPU_MODE_DCGM:
        return "dcgm";
    default:
        return "unknown";
    }
}

/* ---- the writer ---- */

struct node {
    char *host;
    size_t slot;            /* the manifest's node (a host listed twice shares one) */
    struct csv_buf field;   /* the host as a CSV cell */
    enum srt_cpu_mode mode; /* of its last scrape that gave rows */
    uint64_t scrapes, errors;
};

struct srt_cpu {
    struct journal *csv;
    char dir[PATH_CAP];
    char csv_path[PATH_CAP];
    char manifest_path[PATH_CAP];
    int64_t started_ns;

    size_t nnodes;
    struct node *nodes;

    struct csv_buf buf;           /* rows of the current cycle */
    struct srt_cpu_scrape parsed; /* the scrape being added (srt_cpu_sink) */
    bool in_cycle;
    bool cycle_oom;
    uint64_t rows_pending, rows_written;
};

/* ---- cpu_manifest.json ---- */

static void put(json_t *obj, const char *key, json_t *v, bool *ok)
{
    if (!v || json_object_set_new(obj, key, v) < 0)
        *ok = false;
}

static json_t *manifest_json(const struct srt_cpu *w, bool final, int64_t stopped_ns)
{
    bool ok = true;
    json_t *m = json_object();
    if (!m)
        return NULL;
    put(m, "schema_version", json_integer(MANIFEST_SCHEMA_VERSION), &ok);
    put(m, "producer", json_string("carma"), &ok);
    put(m, "producer_git_commit", json_null(), &ok);
    put(m, "started_at_unix", json_real((double)(w->started_ns / NS_PER_US) / 1e6), &ok);
    put(m, "stopped_at_unix",
        final ? json_real((double)(stopped_ns / NS_PER_US) / 1e6) : json_null(), &ok);
    json_t *nodes = json_object();
    put(m, "nodes", nodes, &ok);
    for (size_t i = 0; nodes && i < w->nnodes; i++) {
        const struct node *n = &w->nodes[i];
        if (n->slot != i)
            continue;
        /* the counts of every listing of this host */
        uint64_t scrapes = 0, errors = 0;
        enum srt_cpu_mode mode = SRT_CPU_MODE_UNKNOWN;
        for (size_t k = i; k < w->nnodes; k++) {
            if (w->nodes[k].slot != i)
                continue;
            scrapes += w->nodes[k].scrapes;
            errors += w->nodes[k].errors;
            if (w->nodes[k].mode != SRT_CPU_MODE_UNKNOWN)
                mode = w->nodes[k].mode;
        }
        json_t *o = json_object();
        put(nodes, n->host, o, &ok);
        if (!o)
            break;
        put(o, "resolved_mode", json_string(srt_cpu_mode_name(mode)), &ok);
        put(o, "scrape_count", json_integer((json_int_t)scrapes), &ok);
        put(o, "error_count", json_integer((json_int_t)errors), &ok);
    }
    if (!ok) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* Writes the manifest over cpu_manifest.json atomically. Returns 0 or a negative errno with e
 * set. */
static int manifest_write(const struct srt_cpu *w, bool final, int64_t stopped_ns,
                          struct carma_err *e)
{
    return srt_json_replace(manifest_json(w, final, stopped_ns), w->manifest_path, e);
}

static void free_all(struct srt_cpu *w)
{
    if (!w)
        return;
    journal_close(w->csv);
    for (size_t i = 0; w->nodes && i < w->nnodes; i++) {
        free(w->nodes[i].host);
        csv_buf_free(&w->nodes[i].field);
    }
    free(w->nodes);
    csv_buf_free(&w->buf);
    free(w);
}

struct srt_cpu *srt_cpu_open(const char *dir, const char *const *nodes, size_t nnodes,
                             struct carma_err *e)
{
    if (!dir || !*dir) {
        carma_err_set(e, -EINVAL, "srt-slurm CPU export: no directory");
        return NULL;
    }
    struct srt_cpu *w = calloc(1, sizeof *w);
    if (!w) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    if (strlen(dir) + sizeof "/cpu_manifest.json" > sizeof w->dir) {
        carma_err_set(e, -ENAMETOOLONG, "cannot create %s: %s", dir, strerror(ENAMETOOLONG));
        goto fail;
    }
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    snprintf(w->csv_path, sizeof w->csv_path, "%s/samples.csv", dir);
    snprintf(w->manifest_path, sizeof w->manifest_path, "%s/cpu_manifest.json", dir);
    w->started_ns = time_real_ns();

    w->nodes = calloc(nnodes ? nnodes : 1, sizeof *w->nodes);
    if (!w->nodes) {
        carma_err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    size_t row_bytes = 0;
    for (size_t i = 0; i < nnodes; i++) {
        struct node *n = &w->nodes[i];
        if (!nodes[i] || !*nodes[i]) {
            carma_err_set(e, -EINVAL, "srt-slurm CPU export: empty host name");
            goto fail;
        }
        n->host = strdup(nodes[i]);
        w->nnodes = i + 1;
        if (!n->host || csv_buf_field(&n->field, nodes[i], 1) < 0) {
            carma_err_set(e, -ENOMEM, "out of memory");
            goto fail;
        }
        n->slot = i;
        for (size_t k = 0; k < i; k++)
            if (strcmp(w->nodes[k].host, n->host) == 0) {
                n->slot = w->nodes[k].slot;
                break;
            }
        row_bytes += 8 * (n->field.len + 64 + ROW_FIXED_MAX);
    }
    /* room for a usual cycle (8 readings of 64-byte labels per node) from the start */
    if (csv_buf_reserve(&w->buf, row_bytes + 256) < 0) {
        carma_err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }

    w->csv = srt_json_csv_create(w->dir, w->csv_path, SAMPLES_HEADER EOL, e);
    if (!w->csv)
        goto fail;
    if (manifest_write(w, false, 0, e) < 0)
        goto fail;
    return w;
fail:
    free_all(w);
    return NULL;
}

void srt_cpu_cycle_begin(struct srt_cpu *w)
{
    if (!w)
        return;
    w->in_cycle = true;
    w->cycle_oom = false;
    w->buf.len = 0;
    w->rows_pending = 0;
}

void srt_cpu_node(struct srt_cpu *w, size_t node, int64_t real_ns, const struct srt_cpu_scrape *s)
{
    if (!w || !w->in_cycle || node >= w->nnodes)
        return;
    struct node *n = &w->nodes[node];
    n->scrapes++;
    if (!s || s->mode == SRT_CPU_MODE_UNKNOWN || s->n == 0) {
        n->errors++;
        return;
    }
    n->mode = s->mode;

    /* the part every row of this scrape shares: "1,<timestamp>,<host>,<source>," */
    char prefix[64];
    size_t plen = 0;
    prefix[plen++] = (char)('0' + SAMPLES_SCHEMA_VERSION);
    prefix[plen++] = ',';
    plen += fmt_unix_us(prefix + plen, real_ns);
    prefix[plen++] = ',';
    char total[40];
    size_t tlen = 0;
    if (s->has_total) {
        struct csv_buf tb = {total, 0, sizeof total};
        srt_json_float_cell(&tb, s->total_power_w);
        tlen = tb.len;
    }
    const char *source = srt_cpu_mode_name(s->mode);
    size_t slen = strlen(source);

    struct csv_buf *b = &w->buf;
    for (size_t i = 0; i < s->n; i++) {
        const struct srt_cpu_reading *r = &s->r[i];
        char dcgm[48];
        const char *sensor = r->oem_info;
        if (s->mode == SRT_CPU_MODE_DCGM) {
            snprintf(dcgm, sizeof dcgm, "CPU%d:cpuPowerUsageW", r->socket);
            sensor = dcgm;
        }
        if (!sensor)
            sensor = "";
        if (csv_buf_reserve(b, plen + n->field.len + 2 * strlen(sensor) + 3 + tlen +
                                   ROW_FIXED_MAX) < 0) {
            w->cycle_oom = true;
            return;
        }
        memcpy(b->data + b->len, prefix, plen);
        b->len += plen;
        memcpy(b->data + b->len, n->field.data, n->field.len);
        b->len += n->field.len;
        b->data[b->len++] = ',';
        memcpy(b->data + b->len, source, slen);
        b->len += slen;
        b->data[b->len++] = ',';
        csv_buf_field(b, sensor, 1); /* room reserved: cannot fail */
        b->data[b->len++] = ',';
        b->len += fmt_u64(b->data + b->len, (uint64_t)r->socket);
        b->data[b->len++] = ',';
        srt_json_float_cell(b, r->power_w);
        b->data[b->len++] = ',';
        memcpy(b->data + b->len, total, tlen);
        b->len += tlen;
        memcpy(b->data + b->len, EOL, EOL_LEN);
        b->len += EOL_LEN;
        b->data[b->len] = '\0';
        w->rows_pending++;
    }
}

int srt_cpu_cycle_end(struct srt_cpu *w, struct carma_err *e)
{
    if (!w || !w->in_cycle)
        return carma_err_set(e, -EINVAL, "srt-slurm CPU export: cycle ended before it began");
    w->in_cycle = false;
    if (w->cycle_oom)
        return carma_err_set(e, -ENOMEM, "cannot write %s: out of memory (a cycle dropped)",
                             w->csv_path);
    if (w->buf.len == 0)
        return 0;
    if (journal_damaged(w->csv))
        return carma_err_set(e, -EIO, "cannot write %s: it ends in part of a cycle", w->csv_path);
    /* a failed cycle is cut off the file: its rows written before are kept */
    int r = journal_append(w->csv, w->buf.data, w->buf.len, w->rows_pending, -1, NULL);
    if (r < 0)
        return carma_err_set(e, r, "cannot write %s: %s (the rows written before are kept)",
                             w->csv_path, strerror(-r));
    w->rows_written += w->rows_pending;
    w->rows_pending = 0;
    return 0;
}

uint64_t srt_cpu_rows(const struct srt_cpu *w)
{
    return w ? w->rows_written : 0;
}

int srt_cpu_finish(struct srt_cpu *w, struct carma_err *e)
{
    if (!w)
        return 0;
    int ret = journal_finish(w->csv, w->csv_path, e);
    w->csv = NULL;
    struct carma_err me = {0};
    int r = manifest_write(w, true, time_real_ns(), &me);
    if (r < 0 && !ret)
        ret = carma_err_set(e, r, "%s", me.msg);
    free_all(w);
    return ret;
}

static void *sink_open(const char *dir, const char *const *nodes, size_t n, struct carma_err *e)
{
    return srt_cpu_open(dir, nodes, n, e);
}

static void sink_cycle_begin(void *w)
{
    srt_cpu_cycle_begin(w);
}

static void sink_node(void *w, size_t i, int64_t real_ns, const struct prom_doc *doc)
{
    struct srt_cpu *c = w;
    if (!doc) {
        srt_cpu_node(c, i, real_ns, NULL);
        return;
    }
    srt_cpu_parse(doc, &c->parsed);
    srt_cpu_node(c, i, real_ns, &c->parsed);
}

static int sink_cycle_end(void *w, struct carma_err *e)
{
    return srt_cpu_cycle_end(w, e);
}

static int sink_finish(void *w, struct carma_err *e)
{
    return srt_cpu_finish(w, e);
}

const struct scrape_sink srt_cpu_sink = {
    .open = sink_open,
    .cycle_begin = sink_cycle_begin,
    .node = sink_node,
    .cycle_end = sink_cycle_end,
    .finish = sink_finish,
};
