/*
 * srt/gpu: srt-slurm's GPU power leg of many hosts (see gpu.h).
 *
 * Layout of the work: srt_gpu_open copies the node names (one host per distinct name: two
 * targets of one node, its carma exporter and its dcgm-exporter, are one host), opens
 * samples.csv and writes a "running" manifest. A cycle's rows go to one buffer; each row is
 * remembered as pending (host, device, UUID, time) and only a cycle that reached the file
 * updates the observed devices, so the manifest describes samples.csv as it is. The row
 * format, the device bookkeeping, the append, the close and the manifest are srt/gpu_leg's,
 * shared with srt/power (the one-host writer); this file keeps the hosts, their timestamps and
 * expected devices, and the manifest's provenance values.
 */
#include "srt/gpu.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"
#include "core/journal.h"
#include "core/parse.h"
#include "core/timeutil.h"
#include "srt/gpu_leg.h"
#include "srt/json.h"

#define PATH_CAP 4096

struct dev {
    struct srt_gpu_leg_dev leg; /* its rows, sample times and UUIDs in samples.csv */
    uint64_t seq_taken;         /* 1 + the cycle whose row it has (0: none yet) */
};

struct host {
    char *name;
    struct csv_buf field; /* the name as a CSV cell */
    size_t position;      /* among the distinct hosts: the assignment's worker_index */
    bool expected_set;    /* its expected devices are known (its first scrape with rows) */
    size_t nexp;
    unsigned exp[SRT_GPU_PER_HOST_MAX];
    size_t ndev;
    struct dev *dev; /* SRT_GPU_PER_HOST_MAX, allocated at its first row */
    uint64_t ts_seq; /* 1 + the cycle whose timestamp ts_us is */
    int64_t ts_us;
};

struct pending {
    struct host *h;
    unsigned dev;
    int uuid; /* -1: none */
    int64_t us;
};

struct srt_gpu {
    struct journal *csv;
    char dir[PATH_CAP];
    char csv_path[PATH_CAP];
    char manifest_path[PATH_CAP];

    char *producer_version, *job_id;
    double interval_s, timeout_s;
    bool required;
    int64_t started_us;

    size_t nnodes;   /* targets */
    size_t *host_of; /* target -> index into hosts */
    size_t nhosts;
    struct host *hosts;

    uint64_t seq;
    bool in_cycle, cycle_oom, cycle_bad;
    struct csv_buf buf;
    struct pending *pend;
    size_t npend, pend_cap;
    bool cycle_src[2]; /* the sources of the cycle's rows */

    uint64_t scrapes; /* cycles written */
    uint64_t rows_written;
    uint64_t src_rows[2];
    bool non_monotonic;
    int write_error;

    struct srt_gpu_reading rd[SRT_GPU_READINGS_MAX]; /* srt_gpu_sink's */
};

/* ---- readings ---- */

size_t srt_gpu_from_dcgm(const struct dcgm_scrape *d, struct srt_gpu_reading *out)
{
    size_t n = 0;
    for (size_t i = 0; d && i < d->n && n < SRT_GPU_READINGS_MAX; i++) {
        const struct dcgm_reading *r = &d->r[i];
        out[n++] = (struct srt_gpu_reading){
            .gpu_index = r->gpu_index,
            .uuid = r->uuid,
            .mig = r->mig,
            .power_w = r->power_w,
            .gpu_util_pct = r->gpu_util_pct,
            .sm_active = r->sm_active,
        };
    }
    return n;
}

static bool label_is(const struct prom_sample *s, const char *name, const char *value)
{
    const char *v = prom_label_value(s, name);
    return v && strcmp(v, value) == 0;
}

size_t srt_gpu_from_carma(const struct prom_doc *doc, struct srt_gpu_reading *out, size_t cap)
{
    size_t n = 0;
    if (!doc)
        return 0;
    for (size_t i = 0; i < doc->nsamples && n < cap; i++) {
        const struct prom_sample *s = &doc->samples[i];
        unsigned gpu;
        if (strcmp(s->name, "carma_power_watts") != 0 || !label_is(s, "kind", "gpu") ||
            !label_is(s, "domain", "total") || parse_uint(prom_label_value(s, "socket"), &gpu) < 0)
            continue;
        out[n++] = (struct srt_gpu_reading){
            .gpu_index = gpu,
            .power_w = s->value,
            .gpu_util_pct = NAN,
            .sm_active = NAN,
        };
    }
    /* the UUIDs and utilization of carma_gpu_utilization_ratio{gpu,uuid} */
    for (size_t k = 0; k < n; k++) {
        unsigned seen = 0;
        for (size_t i = 0; i < doc->nsamples; i++) {
            const struct prom_sample *s = &doc->samples[i];
            unsigned gpu;
            if (strcmp(s->name, "carma_gpu_utilization_ratio") != 0 ||
                parse_uint(prom_label_value(s, "gpu"), &gpu) < 0 || gpu != out[k].gpu_index)
                continue;
            if (seen++ == 0) {
                out[k].uuid = prom_label_value(s, "uuid");
                if (isfinite(s->value) && s->value >= 0 && s->value <= 1)
                    out[k].gpu_util_pct = s->value * 100;
            } else {
                out[k].gpu_util_pct = NAN; /* given twice: ambiguous */
            }
        }
    }
    return n;
}

/* ---- the manifest ---- */

static int cmp_uint(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

static int cmp_host(const void *a, const void *b)
{
    return strcmp((*(const struct host *const *)a)->name, (*(const struct host *const *)b)->name);
}

static int cmp_dev(const void *a, const void *b)
{
    unsigned x = (*(const struct dev *const *)a)->leg.gpu_index;
    unsigned y = (*(const struct dev *const *)b)->leg.gpu_index;
    return (x > y) - (x < y);
}

/* The hosts sorted by name (the caller frees the array), or NULL. */
static struct host **sorted_hosts(const struct srt_gpu *w)
{
    struct host **s = malloc((w->nhosts ? w->nhosts : 1) * sizeof *s);
    if (!s)
        return NULL;
    for (size_t i = 0; i < w->nhosts; i++)
        s[i] = &w->hosts[i];
    qsort(s, w->nhosts, sizeof *s, cmp_host);
    return s;
}

/* For each host, its expected GPUs by index, each assigned to the host's position. */
static json_t *expected_devices(struct host **hs, size_t nh)
{
    bool ok = true;
    json_t *a = hs ? json_array() : NULL;
    for (size_t i = 0; a && ok && i < nh; i++) {
        const struct host *h = hs[i];
        unsigned idx[SRT_GPU_PER_HOST_MAX];
        memcpy(idx, h->exp, h->nexp * sizeof idx[0]);
        qsort(idx, h->nexp, sizeof idx[0], cmp_uint);
        for (size_t k = 0; ok && k < h->nexp; k++)
            srt_gpu_leg_assignment(srt_gpu_leg_expected(a, h->name, idx[k], &ok), "agg",
                                   (json_int_t)h->position, NULL, &ok);
    }
    if (!ok) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* For each host, its GPUs with rows by index. */
static json_t *observed_devices(struct host **hs, size_t nh)
{
    bool ok = true;
    json_t *a = hs ? json_array() : NULL;
    for (size_t i = 0; a && ok && i < nh; i++) {
        const struct host *h = hs[i];
        const struct dev *ds[SRT_GPU_PER_HOST_MAX];
        size_t n = 0;
        for (size_t k = 0; k < h->ndev; k++)
            if (h->dev[k].leg.rows)
                ds[n++] = &h->dev[k];
        qsort(ds, n, sizeof ds[0], cmp_dev);
        for (size_t k = 0; ok && k < n; k++)
            srt_gpu_leg_observed(a, h->name, &ds[k]->leg, &ok);
    }
    if (!ok) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* Writes the manifest over manifest.json atomically (final: see srt_gpu_leg_manifest_write).
 * Returns 0 or a negative errno with e set. */
static int manifest_write(const struct srt_gpu *w, const char *status, bool final,
                          int64_t stopped_us, const char *sha256, struct carma_err *e)
{
    bool dcgm = w->src_rows[SRT_GPU_SOURCE_DCGM] || !w->src_rows[SRT_GPU_SOURCE_CARMA];
    bool carma = w->src_rows[SRT_GPU_SOURCE_CARMA] > 0;
    struct host **hs = sorted_hosts(w);
    struct srt_gpu_leg_manifest m = {
        .producer = "carma collect",
        .producer_version = w->producer_version,
        .source_metric = dcgm && carma ? "DCGM_FI_DEV_POWER_USAGE+carma_power_watts"
                         : dcgm        ? "DCGM_FI_DEV_POWER_USAGE"
                                       : "carma_power_watts",
        .power_scope = dcgm && carma ? "gpu_device_board_as_reported_by_dcgm_or_nvml"
                       : dcgm        ? "gpu_device_board_as_reported_by_dcgm"
                                     : "gpu_device_board_as_reported_by_nvml",
        .util_metric = "DCGM_FI_DEV_GPU_UTIL",
        .timestamp_source = "head_node_unix_clock",
        .job_id = w->job_id,
        .run_name = NULL,
        .interval_s = w->interval_s,
        .timeout_s = w->timeout_s,
        .required = w->required,
        .started_us = w->started_us,
        .scrapes = w->scrapes,
        .rows = w->rows_written,
        .write_failed = w->write_error != 0,
        .non_monotonic = w->non_monotonic,
        .expected = expected_devices(hs, w->nhosts),
        .observed = observed_devices(hs, w->nhosts),
    };
    free(hs);
    return srt_gpu_leg_manifest_write(&m, status, final, stopped_us, sha256, w->manifest_path, e);
}

/* ---- the writer ---- */

static void free_all(struct srt_gpu *w)
{
    if (!w)
        return;
    journal_close(w->csv);
    for (size_t i = 0; w->hosts && i < w->nhosts; i++) {
        struct host *h = &w->hosts[i];
        free(h->name);
        csv_buf_free(&h->field);
        for (size_t k = 0; h->dev && k < h->ndev; k++)
            srt_gpu_leg_dev_free(&h->dev[k].leg);
        free(h->dev);
    }
    free(w->hosts);
    free(w->host_of);
    free(w->pend);
    free(w->producer_version);
    free(w->job_id);
    csv_buf_free(&w->buf);
    free(w);
}

struct srt_gpu *srt_gpu_open(const struct srt_gpu_opts *o, struct carma_err *e)
{
    if (!o || !o->dir || !*o->dir) {
        carma_err_set(e, -EINVAL, "srt-slurm GPU export: no directory");
        return NULL;
    }
    struct srt_gpu *w = calloc(1, sizeof *w);
    if (!w) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    if (strlen(o->dir) + sizeof "/manifest.json" > sizeof w->dir) {
        carma_err_set(e, -ENAMETOOLONG, "cannot create %s: %s", o->dir, strerror(ENAMETOOLONG));
        goto fail;
    }
    snprintf(w->dir, sizeof w->dir, "%s", o->dir);
    snprintf(w->csv_path, sizeof w->csv_path, "%s/samples.csv", o->dir);
    snprintf(w->manifest_path, sizeof w->manifest_path, "%s/manifest.json", o->dir);
    const char *job = o->job_id ? o->job_id : getenv("SLURM_JOB_ID");
    w->producer_version = o->producer_version ? strdup(o->producer_version) : NULL;
    w->job_id = job && *job ? strdup(job) : NULL;
    w->interval_s = o->interval_s;
    w->timeout_s = o->timeout_s;
    w->required = o->required;
    w->started_us = time_real_ns() / NS_PER_US;
    w->nnodes = o->nnodes;
    w->host_of = calloc(o->nnodes ? o->nnodes : 1, sizeof *w->host_of);
    w->hosts = calloc(o->nnodes ? o->nnodes : 1, sizeof *w->hosts);
    if (!w->host_of || !w->hosts || (o->producer_version && !w->producer_version) ||
        (job && *job && !w->job_id)) {
        carma_err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < o->nnodes; i++) {
        const char *name = o->nodes[i];
        if (!name || !*name) {
            carma_err_set(e, -EINVAL, "srt-slurm GPU export: empty host name");
            goto fail;
        }
        size_t k = 0;
        while (k < w->nhosts && strcmp(w->hosts[k].name, name) != 0)
            k++;
        if (k == w->nhosts) {
            struct host *h = &w->hosts[w->nhosts++];
            h->position = k;
            if (!(h->name = strdup(name)) || csv_buf_field(&h->field, name, 1) < 0) {
                carma_err_set(e, -ENOMEM, "out of memory");
                goto fail;
            }
        }
        w->host_of[i] = k;
    }
    if (csv_buf_reserve(&w->buf, 1 << 14) < 0) {
        carma_err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    w->csv = srt_json_csv_create(w->dir, w->csv_path, SRT_GPU_LEG_HEADER, e);
    if (!w->csv)
        goto fail;
    if (manifest_write(w, "running", false, 0, NULL, e) < 0)
        goto fail;
    return w;
fail:
    free_all(w);
    return NULL;
}

void srt_gpu_cycle_begin(struct srt_gpu *w, uint64_t seq)
{
    if (!w)
        return;
    w->seq = seq;
    w->in_cycle = true;
    w->cycle_oom = w->cycle_bad = false;
    w->buf.len = 0;
    w->npend = 0;
    w->cycle_src[0] = w->cycle_src[1] = false;
}

/* The device slot of gpu_index in h, made when new; -1 when there is no room. */
static int dev_of(struct host *h, unsigned gpu_index)
{
    for (size_t k = 0; k < h->ndev; k++)
        if (h->dev[k].leg.gpu_index == gpu_index)
            return (int)k;
    if (!h->dev && !(h->dev = calloc(SRT_GPU_PER_HOST_MAX, sizeof *h->dev)))
        return -1;
    if (h->ndev == SRT_GPU_PER_HOST_MAX)
        return -1;
    h->dev[h->ndev].leg.gpu_index = gpu_index;
    return (int)h->ndev++;
}

void srt_gpu_host(struct srt_gpu *w, size_t node, int64_t start_ns, int64_t settle_ns,
                  enum srt_gpu_source src, const struct srt_gpu_reading *r, size_t n)
{
    if (!w || !w->in_cycle || node >= w->nnodes)
        return;
    struct host *h = &w->hosts[w->host_of[node]];
    /* the midpoint of the request's start and settle; one per host per cycle */
    int64_t mid_us = (start_ns + (settle_ns - start_ns) / 2) / NS_PER_US;
    size_t written = 0;
    unsigned first[SRT_GPU_PER_HOST_MAX];
    for (size_t i = 0; i < n; i++) {
        const struct srt_gpu_reading *g = &r[i];
        if (g->mig || !isfinite(g->power_w) || g->power_w < 0 || g->power_w >= 9e12)
            continue;
        int di = dev_of(h, g->gpu_index);
        if (di < 0)
            continue;
        struct dev *d = &h->dev[di];
        if (d->seq_taken == w->seq + 1)
            continue; /* a second row of this GPU in this cycle */
        int64_t us = h->ts_seq == w->seq + 1 ? h->ts_us : mid_us;
        if (us < 0 || us >= (int64_t)9e15) {
            w->cycle_bad = true;
            continue;
        }
        if (d->leg.rows && us < d->leg.last_us) {
            w->non_monotonic = true;
            continue;
        }
        const char *uuid = g->uuid && *g->uuid ? g->uuid : NULL;
        if (w->npend == w->pend_cap) {
            size_t cap = w->pend_cap ? 2 * w->pend_cap : 256;
            struct pending *p = realloc(w->pend, cap * sizeof *p);
            if (!p) {
                w->cycle_oom = true;
                return;
            }
            w->pend = p;
            w->pend_cap = cap;
        }
        char prefix[SRT_GPU_LEG_PREFIX_MAX];
        size_t plen = srt_gpu_leg_prefix(prefix, us, w->seq);
        if (srt_gpu_leg_row(&w->buf, prefix, plen, &h->field, g->gpu_index, uuid, g->power_w,
                            g->gpu_util_pct, g->sm_active) < 0) {
            w->cycle_oom = true;
            return;
        }
        d->seq_taken = w->seq + 1;
        w->pend[w->npend++] =
            (struct pending){h, (unsigned)di, uuid ? srt_gpu_leg_dev_uuid(&d->leg, uuid) : -1, us};
        h->ts_seq = w->seq + 1;
        h->ts_us = us;
        if (written < SRT_GPU_PER_HOST_MAX)
            first[written] = g->gpu_index;
        written++;
        w->cycle_src[src] = true;
    }
    /* the host's first scrape with rows gives its expected devices */
    if (written && !h->expected_set) {
        h->expected_set = true;
        h->nexp = written < SRT_GPU_PER_HOST_MAX ? written : SRT_GPU_PER_HOST_MAX;
        memcpy(h->exp, first, h->nexp * sizeof first[0]);
    }
}

int srt_gpu_cycle_end(struct srt_gpu *w, struct carma_err *e)
{
    if (!w || !w->in_cycle)
        return carma_err_set(e, -EINVAL, "srt-slurm GPU export: cycle ended before it began");
    w->in_cycle = false;
    if (w->cycle_oom) {
        if (!w->write_error)
            w->write_error = -ENOMEM;
        return carma_err_set(e, -ENOMEM, "cannot write %s: out of memory (cycle %llu dropped)",
                             w->csv_path, (unsigned long long)w->seq);
    }
    if (w->cycle_bad && w->npend == 0)
        return carma_err_set(e, -EINVAL, "cannot write %s: scrape timestamp out of range",
                             w->csv_path);
    if (w->npend == 0)
        return 0;
    int r = srt_gpu_leg_append(w->csv, w->csv_path, &w->buf, w->npend, "cycle", &w->write_error, e);
    if (r < 0) {
        /* the rows were not written: their GPUs may be written again */
        for (size_t i = 0; i < w->npend; i++)
            w->pend[i].h->dev[w->pend[i].dev].seq_taken = 0;
        return r;
    }
    for (size_t i = 0; i < w->npend; i++) {
        const struct pending *p = &w->pend[i];
        srt_gpu_leg_dev_written(&p->h->dev[p->dev].leg, p->us, p->uuid);
    }
    for (int s = 0; s < 2; s++)
        if (w->cycle_src[s])
            w->src_rows[s]++;
    w->rows_written += w->npend;
    w->scrapes++;
    w->npend = 0;
    return 0;
}

uint64_t srt_gpu_rows(const struct srt_gpu *w)
{
    return w ? w->rows_written : 0;
}

int srt_gpu_finish(struct srt_gpu *w, const char *status, struct carma_err *e)
{
    if (!w)
        return 0;
    char sha[65];
    int ret = srt_gpu_leg_close("srt-slurm GPU export", &status, w->csv, w->csv_path,
                                &w->write_error, sha, e);
    w->csv = NULL;
    struct carma_err me = {0};
    int r = manifest_write(w, status, true, time_real_ns() / NS_PER_US, sha[0] ? sha : NULL, &me);
    if (r < 0 && !ret)
        ret = carma_err_set(e, r, "%s", me.msg);
    free_all(w);
    return ret;
}

/* ---- the sink ---- */

static void *sink_open(const char *dir, const char *const *nodes, size_t n,
                       const struct scrape_opts *o, struct carma_err *e)
{
    struct srt_gpu_opts go = {
        .dir = dir,
        .nodes = nodes,
        .nnodes = n,
        .interval_s = (double)o->interval_ns / 1e9,
        .timeout_s = (double)o->timeout_ns / 1e9,
        .required = o->required,
        .producer_version = o->version,
    };
    return srt_gpu_open(&go, e);
}

static void sink_cycle_begin(void *w, uint64_t seq)
{
    srt_gpu_cycle_begin(w, seq);
}

static void sink_node(void *wp, size_t i, int64_t start_ns, int64_t settle_ns,
                      const struct prom_doc *doc, const struct dcgm_scrape *dcgm)
{
    struct srt_gpu *w = wp;
    size_t n = dcgm ? srt_gpu_from_dcgm(dcgm, w->rd)
                    : srt_gpu_from_carma(doc, w->rd, SRT_GPU_READINGS_MAX);
    srt_gpu_host(w, i, start_ns, settle_ns, dcgm ? SRT_GPU_SOURCE_DCGM : SRT_GPU_SOURCE_CARMA,
                 w->rd, n);
}

static int sink_cycle_end(void *w, struct carma_err *e)
{
    return srt_gpu_cycle_end(w, e);
}

static int sink_finish(void *w, const char *status, struct carma_err *e)
{
    return srt_gpu_finish(w, status, e);
}

const struct scrape_gpu_sink srt_gpu_sink = {
    .open = sink_open,
    .cycle_begin = sink_cycle_begin,
    .node = sink_node,
    .cycle_end = sink_cycle_end,
    .finish = sink_finish,
};
