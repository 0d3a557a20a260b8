/*
 * srt/power: carma's GPU samples as srt-slurm's GPU power leg (see power.h).
 *
 * Layout of the work: srt_power_open copies everything the manifest needs, opens samples.csv,
 * writes its header and a "running" manifest, and sizes one row buffer for a scrape of
 * SRT_POWER_DEVICES_MAX rows. A scrape formats its fixed prefix ("2,<ts>,<seq>,<host>,") once
 * in srt_power_scrape_begin; each srt_power_row appends one row to the buffer; and
 * srt_power_scrape_end hands the buffer to the CSV's journal (core/journal.h: one write(2),
 * looping on short writes), so the steady state allocates nothing. A failed write cuts the file
 * back to its last whole scrape, is reported once per failure, and is remembered for the manifest's
 * reason codes.
 *
 * Observed devices (first/last sample time, UUIDs) are updated only for rows that reached the
 * file, so the manifest describes samples.csv as it is. srt_power_finish syncs samples.csv,
 * digests it (SHA-256 of the bytes on disk, read back), and writes the final manifest.
 * The row format, the device bookkeeping, the append, the close and the manifest are
 * srt/gpu_leg's, shared with srt/gpu (the many-host writer); this file keeps the one host, its
 * workloads (expected_devices' assignments) and the manifest's provenance values.
 */
#include "srt/power.h"
#include "core/file.h"
#include "srt/gpu_leg.h"
#include "srt/json.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/csv.h"
#include "core/journal.h"
#include "core/timeutil.h"

#define HOST_MAX 255
#define PATH_CAP 4096

struct expected_dev {
    unsigned gpu_index;
    char *uuid; /* NULL when the caller gave none */
};

struct assignment {
    unsigned gpu_index;
    char *worker_role;
    int worker_index;
    char *worker_process; /* NULL: null */
};

/* One row of the scrape being built: which observed slot and which of its UUIDs (-1: none). */
struct pending_row {
    unsigned slot;
    int uuid;
};

struct srt_power {
    struct journal *csv;
    char dir[PATH_CAP];
    char csv_path[PATH_CAP];
    char manifest_path[PATH_CAP];

    /* manifest values, copied */
    char *hostname;
    char *run_name;
    char *job_id;
    char *producer_version;
    char *source_metric;
    char *power_scope;
    char *util_metric;
    double interval_s;
    int64_t started_us;
    size_t ndev;
    struct expected_dev *dev; /* sorted by gpu_index */
    size_t nassign;
    struct assignment *assign;

    /* samples.csv */
    struct csv_buf host_field;           /* the hostname as a CSV field (quoted when needed) */
    struct csv_buf buf;                  /* rows of the current scrape */
    char prefix[SRT_GPU_LEG_PREFIX_MAX]; /* "2,<timestamp_unix>,<scrape_seq>," of the scrape */
    size_t prefix_len;
    bool in_scrape;
    bool scrape_bad_ts;
    bool scrape_oom;
    int64_t scrape_us;
    size_t npending;
    struct pending_row pending[SRT_POWER_DEVICES_MAX];

    struct srt_gpu_leg_dev obs[SRT_POWER_DEVICES_MAX]; /* the GPUs seen in srt_power_row */
    size_t nobs;

    uint64_t scrape_seq; /* scrapes written = the next scrape's seq */
    uint64_t rows_written;
    int64_t last_scrape_us;
    bool have_last;
    bool non_monotonic;
    int write_error; /* the first failed write's negative errno, 0 when none */
};

/* ---- small helpers ---- */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The node name written in every row: $SLURMD_NODENAME, else gethostname() up to its first
 * '.', as srt-slurm names nodes. Returns 0 or a negative errno. */
static int default_hostname(char *buf, size_t cap)
{
    const char *s = getenv("SLURMD_NODENAME");
    if (s && *s) {
        snprintf(buf, cap, "%s", s);
        return 0;
    }
    if (gethostname(buf, cap) < 0)
        return -errno;
    buf[cap - 1] = '\0';
    char *dot = strchr(buf, '.');
    if (dot && dot != buf)
        *dot = '\0';
    return 0;
}

/* Seconds to whole microseconds (timestamps are written with µs resolution). */
static int64_t seconds_to_us(double s)
{
    return (int64_t)llround(s * 1e6);
}

static const char *expected_uuid(const struct srt_power *p, unsigned gpu_index)
{
    for (size_t i = 0; i < p->ndev; i++)
        if (p->dev[i].gpu_index == gpu_index)
            return p->dev[i].uuid;
    return NULL;
}

/* The observed slot of gpu_index, made when new; -1 when every slot is taken. */
static int observed_slot(struct srt_power *p, unsigned gpu_index)
{
    for (size_t i = 0; i < p->nobs; i++)
        if (p->obs[i].gpu_index == gpu_index)
            return (int)i;
    if (p->nobs == SRT_POWER_DEVICES_MAX)
        return -1;
    struct srt_gpu_leg_dev *o = &p->obs[p->nobs];
    memset(o, 0, sizeof *o);
    o->gpu_index = gpu_index;
    return (int)p->nobs++;
}

static int cmp_dev(const void *a, const void *b)
{
    unsigned x = ((const struct expected_dev *)a)->gpu_index;
    unsigned y = ((const struct expected_dev *)b)->gpu_index;
    return (x > y) - (x < y);
}

static int cmp_obs(const void *a, const void *b)
{
    unsigned x = (*(const struct srt_gpu_leg_dev *const *)a)->gpu_index;
    unsigned y = (*(const struct srt_gpu_leg_dev *const *)b)->gpu_index;
    return (x > y) - (x < y);
}

/* ---- manifest ---- */

static json_t *expected_devices(const struct srt_power *p)
{
    bool ok = true;
    json_t *a = json_array();
    for (size_t i = 0; a && i < p->ndev; i++) {
        json_t *as = srt_gpu_leg_expected(a, p->hostname, p->dev[i].gpu_index, &ok);
        for (size_t k = 0; as && k < p->nassign; k++) {
            const struct assignment *s = &p->assign[k];
            if (s->gpu_index == p->dev[i].gpu_index)
                srt_gpu_leg_assignment(as, s->worker_role, s->worker_index, s->worker_process, &ok);
        }
    }
    if (!ok) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static json_t *observed_devices(const struct srt_power *p)
{
    const struct srt_gpu_leg_dev *sorted[SRT_POWER_DEVICES_MAX];
    size_t n = 0;
    for (size_t i = 0; i < p->nobs; i++)
        if (p->obs[i].rows)
            sorted[n++] = &p->obs[i];
    qsort(sorted, n, sizeof sorted[0], cmp_obs);
    bool ok = true;
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        srt_gpu_leg_observed(a, p->hostname, sorted[i], &ok);
    if (!ok) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* Writes the manifest (srt-slurm's GPU manifest schema 1) over manifest.json atomically.
 * final: written by srt_power_finish (stopped_at_unix, samples_sha256 and the reason codes are
 * set). Returns 0 or a negative errno with e set. */
static int manifest_write(const struct srt_power *p, const char *status, bool final,
                          int64_t stopped_us, const char *sha256, struct carma_err *e)
{
    struct srt_gpu_leg_manifest m = {
        .producer = "carma",
        .producer_version = p->producer_version,
        .source_metric = p->source_metric,
        .power_scope = p->power_scope,
        .util_metric = p->util_metric,
        .timestamp_source = "local_unix_clock",
        .job_id = p->job_id,
        .run_name = p->run_name,
        .interval_s = p->interval_s,
        .timeout_s = NAN,
        .required = false,
        .started_us = p->started_us,
        .scrapes = p->scrape_seq,
        .rows = p->rows_written,
        .write_failed = p->write_error != 0,
        .non_monotonic = p->non_monotonic,
        .expected = expected_devices(p),
        .observed = observed_devices(p),
    };
    return srt_gpu_leg_manifest_write(&m, status, final, stopped_us, sha256, p->manifest_path, e);
}

/* ---- the writer ---- */

static void free_all(struct srt_power *p)
{
    if (!p)
        return;
    journal_close(p->csv);
    free(p->hostname);
    free(p->run_name);
    free(p->job_id);
    free(p->producer_version);
    free(p->source_metric);
    free(p->power_scope);
    free(p->util_metric);
    for (size_t i = 0; p->dev && i < p->ndev; i++)
        free(p->dev[i].uuid);
    free(p->dev);
    for (size_t i = 0; p->assign && i < p->nassign; i++) {
        free(p->assign[i].worker_role);
        free(p->assign[i].worker_process);
    }
    free(p->assign);
    for (size_t i = 0; i < p->nobs; i++)
        srt_gpu_leg_dev_free(&p->obs[i]);
    csv_buf_free(&p->host_field);
    csv_buf_free(&p->buf);
    free(p);
}

/* Checks o and copies what the manifest needs into p. Returns 0 or a negative errno, e set. */
static int copy_opts(struct srt_power *p, const struct srt_power_opts *o, struct carma_err *e)
{
    if (o->ndev > SRT_POWER_DEVICES_MAX)
        return carma_err_set(e, -EINVAL, "srt-slurm power export: %zu GPUs, at most %d", o->ndev,
                             SRT_POWER_DEVICES_MAX);
    if (o->ndev && !o->gpu_index)
        return carma_err_set(e, -EINVAL, "srt-slurm power export: no GPU indices");
    if (o->nassign && !o->assign)
        return carma_err_set(e, -EINVAL, "srt-slurm power export: no assignments");

    char host[HOST_MAX + 1];
    if (o->hostname) {
        if (strlen(o->hostname) > HOST_MAX)
            return carma_err_set(e, -EINVAL, "srt-slurm power export: host name over %d bytes",
                                 HOST_MAX);
        snprintf(host, sizeof host, "%s", o->hostname);
    } else {
        int r = default_hostname(host, sizeof host);
        if (r < 0)
            return carma_err_set(e, r, "cannot get the host name: %s", strerror(-r));
    }
    if (!host[0])
        return carma_err_set(e, -EINVAL, "srt-slurm power export: empty host name");
    const char *job = o->job_id ? o->job_id : getenv("SLURM_JOB_ID");
    if (job && !*job)
        job = NULL;

    p->interval_s = o->interval_s;
    p->hostname = strdup(host);
    p->run_name = dup_or_null(o->run_name);
    p->job_id = dup_or_null(job);
    p->producer_version = dup_or_null(o->producer_version);
    p->source_metric = dup_or_null(o->source_metric);
    p->power_scope = dup_or_null(o->power_scope);
    p->util_metric = strdup(o->util_metric ? o->util_metric : "nvmlDeviceGetUtilizationRates");
    p->dev = calloc(o->ndev ? o->ndev : 1, sizeof *p->dev);
    p->assign = calloc(o->nassign ? o->nassign : 1, sizeof *p->assign);
    if (!p->hostname || (o->run_name && !p->run_name) || (job && !p->job_id) ||
        (o->producer_version && !p->producer_version) || (o->source_metric && !p->source_metric) ||
        (o->power_scope && !p->power_scope) || !p->util_metric || !p->dev || !p->assign)
        return carma_err_set(e, -ENOMEM, "out of memory");

    for (size_t i = 0; i < o->ndev; i++) {
        for (size_t k = 0; k < i; k++)
            if (o->gpu_index[k] == o->gpu_index[i])
                return carma_err_set(e, -EINVAL, "srt-slurm power export: GPU %u listed twice",
                                     o->gpu_index[i]);
        p->dev[i].gpu_index = o->gpu_index[i];
        const char *u = o->gpu_uuid ? o->gpu_uuid[i] : NULL;
        if (u && *u && !(p->dev[i].uuid = strdup(u)))
            return carma_err_set(e, -ENOMEM, "out of memory");
        p->ndev = i + 1;
    }
    qsort(p->dev, p->ndev, sizeof *p->dev, cmp_dev);

    for (size_t i = 0; i < o->nassign; i++) {
        const struct srt_power_assignment *a = &o->assign[i];
        bool known = false;
        for (size_t k = 0; k < p->ndev; k++)
            known |= p->dev[k].gpu_index == a->gpu_index;
        if (!known)
            return carma_err_set(e, -EINVAL,
                                 "srt-slurm power export: workload %s uses GPU %u, which is not "
                                 "among the GPUs sampled",
                                 a->worker_process ? a->worker_process : "?", a->gpu_index);
        struct assignment *s = &p->assign[i];
        s->gpu_index = a->gpu_index;
        s->worker_index = a->worker_index;
        s->worker_role = strdup(a->worker_role && *a->worker_role ? a->worker_role : "agg");
        s->worker_process = dup_or_null(a->worker_process);
        p->nassign = i + 1;
        if (!s->worker_role || (a->worker_process && !s->worker_process))
            return carma_err_set(e, -ENOMEM, "out of memory");
    }
    return 0;
}

struct srt_power *srt_power_open(const struct srt_power_opts *o, struct carma_err *e)
{
    if (!o || !o->dir || !*o->dir) {
        carma_err_set(e, -EINVAL, "srt-slurm power export: no directory");
        return NULL;
    }
    struct srt_power *p = calloc(1, sizeof *p);
    if (!p) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    if (strlen(o->dir) + sizeof "/manifest.json" > sizeof p->dir) {
        carma_err_set(e, -ENAMETOOLONG, "cannot create %s: %s", o->dir, strerror(ENAMETOOLONG));
        goto fail;
    }
    snprintf(p->dir, sizeof p->dir, "%s", o->dir);
    snprintf(p->csv_path, sizeof p->csv_path, "%s/samples.csv", o->dir);
    snprintf(p->manifest_path, sizeof p->manifest_path, "%s/manifest.json", o->dir);

    if (copy_opts(p, o, e) < 0)
        goto fail;
    p->started_us = time_real_ns() / NS_PER_US;
    /* the expected GPUs and their UUIDs get their observed slots now, so that their rows copy
     * nothing */
    for (size_t i = 0; i < p->ndev; i++) {
        int slot = observed_slot(p, p->dev[i].gpu_index);
        if (slot >= 0 && p->dev[i].uuid &&
            srt_gpu_leg_dev_uuid(&p->obs[slot], p->dev[i].uuid) < 0) {
            carma_err_set(e, -ENOMEM, "out of memory");
            goto fail;
        }
    }

    /* the row buffer: a scrape of SRT_POWER_DEVICES_MAX rows of the usual size (UUIDs of up to
     * 96 bytes, as NVML's buffer) without growing */
    if (csv_buf_field(&p->host_field, p->hostname, 1) < 0 ||
        csv_buf_reserve(&p->buf, SRT_POWER_DEVICES_MAX *
                                     SRT_GPU_LEG_ROW_MAX(sizeof p->prefix, p->host_field.len, 96)) <
            0) {
        carma_err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }

    p->csv = srt_json_csv_create(p->dir, p->csv_path, SRT_GPU_LEG_HEADER, e);
    if (!p->csv)
        goto fail;
    if (manifest_write(p, "running", false, 0, NULL, e) < 0)
        goto fail;
    return p;
fail:
    free_all(p);
    return NULL;
}

void srt_power_scrape_begin(struct srt_power *p, double timestamp_unix)
{
    if (!p)
        return;
    p->in_scrape = true;
    p->npending = 0;
    p->buf.len = 0;
    p->scrape_oom = false;
    p->scrape_bad_ts = !(isfinite(timestamp_unix) && timestamp_unix >= 0 &&
                         timestamp_unix < 9e12); /* µs in an int64, with room */
    p->scrape_us = p->scrape_bad_ts ? 0 : seconds_to_us(timestamp_unix);
    p->prefix_len = srt_gpu_leg_prefix(p->prefix, p->scrape_us, p->scrape_seq);
}

void srt_power_row(struct srt_power *p, unsigned gpu_index, const char *uuid, double power_w,
                   double gpu_util_pct, double sm_active)
{
    if (!p || !p->in_scrape)
        return;
    /* skipped: power that srt-slurm's reader rejects; a second row for one GPU in one scrape
     * (a duplicate_sample_row there); a GPU beyond SRT_POWER_DEVICES_MAX distinct ones */
    if (!isfinite(power_w) || power_w < 0 || power_w >= 9e12)
        return;
    for (size_t i = 0; i < p->npending; i++)
        if (p->obs[p->pending[i].slot].gpu_index == gpu_index)
            return;
    int slot = observed_slot(p, gpu_index);
    if (slot < 0)
        return;
    if (!uuid || !*uuid)
        uuid = expected_uuid(p, gpu_index);
    int ui = uuid ? srt_gpu_leg_dev_uuid(&p->obs[slot], uuid) : -1;

    if (srt_gpu_leg_row(&p->buf, p->prefix, p->prefix_len, &p->host_field, gpu_index, uuid, power_w,
                        gpu_util_pct, sm_active) < 0) {
        p->scrape_oom = true;
        return;
    }
    p->pending[p->npending].slot = (unsigned)slot;
    p->pending[p->npending].uuid = ui;
    p->npending++;
}

int srt_power_scrape_end(struct srt_power *p, struct carma_err *e)
{
    if (!p || !p->in_scrape)
        return carma_err_set(e, -EINVAL, "srt-slurm power export: scrape ended before it began");
    p->in_scrape = false;
    if (p->scrape_oom) {
        if (!p->write_error)
            p->write_error = -ENOMEM;
        return carma_err_set(e, -ENOMEM, "cannot write %s: out of memory (scrape %llu dropped)",
                             p->csv_path, (unsigned long long)p->scrape_seq);
    }
    if (p->scrape_bad_ts && p->npending)
        return carma_err_set(e, -EINVAL, "cannot write %s: scrape timestamp out of range",
                             p->csv_path);
    if (p->npending == 0)
        return 0;
    int r =
        srt_gpu_leg_append(p->csv, p->csv_path, &p->buf, p->npending, "scrape", &p->write_error, e);
    if (r < 0)
        return r;
    if (p->have_last && p->scrape_us < p->last_scrape_us)
        p->non_monotonic = true;
    p->last_scrape_us = p->scrape_us;
    p->have_last = true;
    for (size_t i = 0; i < p->npending; i++)
        srt_gpu_leg_dev_written(&p->obs[p->pending[i].slot], p->scrape_us, p->pending[i].uuid);
    p->rows_written += p->npending;
    p->scrape_seq++;
    p->npending = 0;
    return 0;
}

int srt_power_finish(struct srt_power *p, const char *status, struct carma_err *e)
{
    if (!p)
        return 0;
    char sha[65];
    int ret = srt_gpu_leg_close("srt-slurm power export", &status, p->csv, p->csv_path,
                                &p->write_error, sha, e);
    p->csv = NULL;
    struct carma_err me = {0};
    int r = manifest_write(p, status, true, time_real_ns() / NS_PER_US, sha[0] ? sha : NULL, &me);
    if (r < 0 && !ret)
        ret = carma_err_set(e, r, "%s", me.msg);
    free_all(p);
    return ret;
}
