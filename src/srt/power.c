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
 */
#include "srt/power.h"
#include "core/file.h"
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
#include "core/fmt.h"
#include "core/journal.h"
#include "core/jsonutil.h"
#include "core/timeutil.h"

#define SAMPLES_HEADER                                                                             \
    "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,"   \
    "sm_active"
/* Row end: CRLF, as srt-slurm's csv.writer writes it and as RFC 4180 and carma's other CSVs
 * do (srt-slurm's readers accept CRLF or LF). */
#define EOL     "\r\n"
#define EOL_LEN 2

#define SAMPLES_SCHEMA_VERSION  2
#define MANIFEST_SCHEMA_VERSION 1
#define HOST_MAX                255
#define UUIDS_PER_DEVICE        8 /* distinct UUIDs remembered per gpu_index */
#define PATH_CAP                4096

/* What srt_power_row adds to the buffer besides the prefix, the host and the UUID: gpu_index
 * (10), three numbers (3 × 32), four commas and the row end. */
#define ROW_FIXED_MAX 128

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

/* A GPU seen in srt_power_row; rows counts those that reached samples.csv. */
struct observed_dev {
    unsigned gpu_index;
    uint64_t rows;
    int64_t first_us, last_us;
    size_t nuuid;
    char *uuid[UUIDS_PER_DEVICE];
    bool uuid_written[UUIDS_PER_DEVICE]; /* a row with it reached the file */
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
    double interval_s;
    int64_t started_us;
    size_t ndev;
    struct expected_dev *dev; /* sorted by gpu_index */
    size_t nassign;
    struct assignment *assign;

    /* samples.csv */
    struct csv_buf host_field; /* the hostname as a CSV field (quoted when needed) */
    struct csv_buf buf;        /* rows of the current scrape */
    char prefix[64];           /* "2,<timestamp_unix>,<scrape_seq>," of the current scrape */
    size_t prefix_len;
    bool in_scrape;
    bool scrape_bad_ts;
    bool scrape_oom;
    int64_t scrape_us;
    size_t npending;
    struct pending_row pending[SRT_POWER_DEVICES_MAX];

    struct observed_dev obs[SRT_POWER_DEVICES_MAX];
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

static double us_to_seconds(int64_t us)
{
    return (double)us / 1e6;
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
    struct observed_dev *o = &p->obs[p->nobs];
    memset(o, 0, sizeof *o);
    o->gpu_index = gpu_index;
    return (int)p->nobs++;
}

/* The index of uuid among o's UUIDs, added when new (the one allocation a row may make: a
 * UUID not given at open); -1 when it cannot be remembered. */
static int observed_uuid(struct observed_dev *o, const char *uuid)
{
    for (size_t i = 0; i < o->nuuid; i++)
        if (strcmp(o->uuid[i], uuid) == 0)
            return (int)i;
    if (o->nuuid == UUIDS_PER_DEVICE)
        return -1;
    char *c = strdup(uuid);
    if (!c)
        return -1;
    o->uuid[o->nuuid] = c;
    o->uuid_written[o->nuuid] = false;
    return (int)o->nuuid++;
}

static int cmp_dev(const void *a, const void *b)
{
    unsigned x = ((const struct expected_dev *)a)->gpu_index;
    unsigned y = ((const struct expected_dev *)b)->gpu_index;
    return (x > y) - (x < y);
}

static int cmp_obs(const void *a, const void *b)
{
    unsigned x = (*(const struct observed_dev *const *)a)->gpu_index;
    unsigned y = (*(const struct observed_dev *const *)b)->gpu_index;
    return (x > y) - (x < y);
}

/* ---- manifest ---- */

/* Adds key = v to obj (v may be NULL after a failed allocation: *ok turns false). */
static void put(json_t *obj, const char *key, json_t *v, bool *ok)
{
    if (!v || json_object_set_new(obj, key, v) < 0)
        *ok = false;
}

static json_t *utilization_metrics(bool *ok)
{
    static const char *const m[][3] = {
        {"gpu_util_pct", "nvmlDeviceGetUtilizationRates", "percent"},
        {"sm_active", "DCGM_FI_PROF_SM_ACTIVE", "fraction"},
    };
    json_t *a = json_array();
    if (!a) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        json_t *o = json_object();
        if (!o || json_array_append_new(a, o) < 0) {
            *ok = false;
            break;
        }
        put(o, "column", json_string(m[i][0]), ok);
        put(o, "source_metric", json_string(m[i][1]), ok);
        put(o, "unit", json_string(m[i][2]), ok);
    }
    return a;
}

static json_t *expected_devices(const struct srt_power *p, bool *ok)
{
    json_t *a = json_array();
    if (!a) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < p->ndev; i++) {
        json_t *d = json_object();
        if (!d || json_array_append_new(a, d) < 0) {
            *ok = false;
            break;
        }
        put(d, "hostname", json_string(p->hostname), ok);
        put(d, "gpu_index", json_integer(p->dev[i].gpu_index), ok);
        json_t *as = json_array();
        put(d, "assignments", as, ok);
        for (size_t k = 0; as && k < p->nassign; k++) {
            const struct assignment *s = &p->assign[k];
            if (s->gpu_index != p->dev[i].gpu_index)
                continue;
            json_t *o = json_object();
            if (!o || json_array_append_new(as, o) < 0) {
                *ok = false;
                break;
            }
            put(o, "worker_role", json_string(s->worker_role), ok);
            put(o, "worker_index", json_integer(s->worker_index), ok);
            put(o, "worker_process", jsonutil_str(s->worker_process), ok);
            put(o, "het_group", json_null(), ok);
        }
    }
    return a;
}

static json_t *observed_devices(const struct srt_power *p, bool *ok)
{
    const struct observed_dev *sorted[SRT_POWER_DEVICES_MAX];
    size_t n = 0;
    for (size_t i = 0; i < p->nobs; i++)
        if (p->obs[i].rows)
            sorted[n++] = &p->obs[i];
    qsort(sorted, n, sizeof sorted[0], cmp_obs);
    json_t *a = json_array();
    if (!a) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const struct observed_dev *o = sorted[i];
        json_t *d = json_object();
        if (!d || json_array_append_new(a, d) < 0) {
            *ok = false;
            break;
        }
        put(d, "hostname", json_string(p->hostname), ok);
        put(d, "gpu_index", json_integer(o->gpu_index), ok);
        json_t *u = json_array();
        put(d, "gpu_uuids", u, ok);
        for (size_t k = 0; u && k < o->nuuid; k++)
            if (o->uuid_written[k] && json_array_append_new(u, json_string(o->uuid[k])) < 0)
                *ok = false;
        put(d, "first_sample_time_unix", json_real(us_to_seconds(o->first_us)), ok);
        put(d, "last_sample_time_unix", json_real(us_to_seconds(o->last_us)), ok);
    }
    return a;
}

/* The reason codes of the current state (see srt_power.h); n of them in out. */
static size_t reason_codes(const struct srt_power *p, const char *out[4])
{
    size_t n = 0;
    if (p->write_error)
        out[n++] = "samples_write_failed";
    if (p->non_monotonic)
        out[n++] = "timestamp_non_monotonic";
    if (p->rows_written == 0)
        out[n++] = "samples_empty";
    return n;
}

/*
 * The manifest as srt-slurm's GPU manifest schema 1, keys in its order. final: written by
 * srt_power_finish (stopped_at_unix, samples_sha256 and the reason codes are set). Returns
 * NULL when out of memory.
 */
static json_t *manifest_json(const struct srt_power *p, const char *status, bool final,
                             int64_t stopped_us, const char *sha256)
{
    bool ok = true;
    json_t *m = json_object();
    if (!m)
        return NULL;
    const char *codes[4];
    size_t ncodes = final ? reason_codes(p, codes) : 0;
    bool valid = final && strcmp(status, "complete") == 0 && p->rows_written > 0 && ncodes == 0;

    put(m, "schema_version", json_integer(MANIFEST_SCHEMA_VERSION), &ok);
    put(m, "producer", json_string("carma"), &ok);
    put(m, "producer_version", jsonutil_str(p->producer_version), &ok);
    put(m, "producer_git_commit", json_null(), &ok);
    put(m, "source_metric", jsonutil_str(p->source_metric), &ok);
    put(m, "unit", json_string("W"), &ok);
    put(m, "power_scope", jsonutil_str(p->power_scope), &ok);
    put(m, "samples_schema_version", json_integer(SAMPLES_SCHEMA_VERSION), &ok);
    put(m, "utilization_metrics", utilization_metrics(&ok), &ok);
    put(m, "timestamp_source", json_string("local_unix_clock"), &ok);
    put(m, "job_id", jsonutil_str(p->job_id), &ok);
    put(m, "run_name", jsonutil_str(p->run_name), &ok);
    put(m, "sample_interval_seconds", jsonutil_real(p->interval_s), &ok);
    put(m, "request_timeout_seconds", json_null(), &ok);
    put(m, "max_scrape_duration_seconds", json_null(), &ok);
    put(m, "required", json_false(), &ok);
    put(m, "started_at_unix", json_real(us_to_seconds(p->started_us)), &ok);
    put(m, "stopped_at_unix", final ? json_real(us_to_seconds(stopped_us)) : json_null(), &ok);
    put(m, "status", json_string(status), &ok);
    put(m, "publication_valid", json_boolean(valid), &ok);
    put(m, "dcgm_exporter", json_null(), &ok);
    put(m, "expected_devices", expected_devices(p, &ok), &ok);
    put(m, "observed_devices", observed_devices(p, &ok), &ok);
    put(m, "expected_windows", json_array(), &ok);
    put(m, "scrape_count", json_integer((json_int_t)p->scrape_seq), &ok);
    put(m, "sample_row_count", json_integer((json_int_t)p->rows_written), &ok);
    put(m, "samples_sha256", jsonutil_str(sha256), &ok);
    put(m, "window_validations", json_array(), &ok);

    json_t *errs = json_array();
    put(m, "artifact_errors", errs, &ok);
    if (errs && p->write_error && final) {
        json_t *o = json_object();
        if (!o || json_array_append_new(errs, o) < 0)
            ok = false;
        else {
            put(o, "path", json_string("samples.csv"), &ok);
            json_t *rc = json_array();
            put(o, "reason_codes", rc, &ok);
            if (rc && json_array_append_new(rc, json_string("samples_write_failed")) < 0)
                ok = false;
        }
    }
    json_t *rc = json_array();
    put(m, "reason_codes", rc, &ok);
    for (size_t i = 0; rc && i < ncodes; i++)
        if (json_array_append_new(rc, json_string(codes[i])) < 0)
            ok = false;
    if (!ok) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* Writes the manifest over manifest.json atomically. Returns 0 or a negative errno with e
 * set. */
static int manifest_write(const struct srt_power *p, const char *status, bool final,
                          int64_t stopped_us, const char *sha256, struct carma_err *e)
{
    return srt_json_replace(manifest_json(p, status, final, stopped_us, sha256), p->manifest_path,
                            e);
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
    for (size_t i = 0; p->dev && i < p->ndev; i++)
        free(p->dev[i].uuid);
    free(p->dev);
    for (size_t i = 0; p->assign && i < p->nassign; i++) {
        free(p->assign[i].worker_role);
        free(p->assign[i].worker_process);
    }
    free(p->assign);
    for (size_t i = 0; i < p->nobs; i++)
        for (size_t k = 0; k < p->obs[i].nuuid; k++)
            free(p->obs[i].uuid[k]);
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
    p->dev = calloc(o->ndev ? o->ndev : 1, sizeof *p->dev);
    p->assign = calloc(o->nassign ? o->nassign : 1, sizeof *p->assign);
    if (!p->hostname || (o->run_name && !p->run_name) || (job && !p->job_id) ||
        (o->producer_version && !p->producer_version) || (o->source_metric && !p->source_metric) ||
        (o->power_scope && !p->power_scope) || !p->dev || !p->assign)
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
        if (slot >= 0 && p->dev[i].uuid && observed_uuid(&p->obs[slot], p->dev[i].uuid) < 0) {
            carma_err_set(e, -ENOMEM, "out of memory");
            goto fail;
        }
    }

    /* the row buffer: a scrape of SRT_POWER_DEVICES_MAX rows of the usual size (UUIDs of up to
     * 96 bytes, as NVML's buffer) without growing */
    if (csv_buf_field(&p->host_field, p->hostname, 1) < 0 ||
        csv_buf_reserve(&p->buf, SRT_POWER_DEVICES_MAX * (sizeof p->prefix + p->host_field.len +
                                                          2 * 96 + 3 + ROW_FIXED_MAX)) < 0) {
        carma_err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }

    p->csv = srt_json_csv_create(p->dir, p->csv_path, SAMPLES_HEADER EOL, e);
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
    char *s = p->prefix;
    size_t n = 0;
    s[n++] = (char)('0' + SAMPLES_SCHEMA_VERSION);
    s[n++] = ',';
    n += fmt_u64(s + n, (uint64_t)(p->scrape_us / 1000000));
    s[n++] = '.';
    for (int64_t us = p->scrape_us % 1000000, k = 5; k >= 0; k--, us /= 10)
        s[n + (size_t)k] = (char)('0' + us % 10);
    n += 6;
    s[n++] = ',';
    n += fmt_u64(s + n, p->scrape_seq);
    s[n++] = ',';
    p->prefix_len = n;
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
    int ui = uuid ? observed_uuid(&p->obs[slot], uuid) : -1;

    struct csv_buf *b = &p->buf;
    size_t ulen = uuid ? strlen(uuid) : 0;
    if (csv_buf_reserve(b, p->prefix_len + p->host_field.len + 2 * ulen + 3 + ROW_FIXED_MAX) < 0) {
        p->scrape_oom = true;
        return;
    }
    memcpy(b->data + b->len, p->prefix, p->prefix_len);
    b->len += p->prefix_len;
    memcpy(b->data + b->len, p->host_field.data, p->host_field.len);
    b->len += p->host_field.len;
    b->data[b->len++] = ',';
    b->len += fmt_u64(b->data + b->len, gpu_index);
    b->data[b->len++] = ',';
    if (uuid)
        csv_buf_field(b, uuid, 1); /* room reserved above: cannot fail */
    b->data[b->len++] = ',';
    srt_json_float_cell(b, power_w);
    b->data[b->len++] = ',';
    if (isfinite(gpu_util_pct) && gpu_util_pct >= 0 && gpu_util_pct <= 100)
        srt_json_float_cell(b, gpu_util_pct);
    b->data[b->len++] = ',';
    if (isfinite(sm_active) && sm_active >= 0 && sm_active <= 1)
        srt_json_float_cell(b, sm_active);
    memcpy(b->data + b->len, EOL, EOL_LEN);
    b->len += EOL_LEN;
    b->data[b->len] = '\0';
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
    if (journal_damaged(p->csv))
        return carma_err_set(e, -EIO, "cannot write %s: it ends in part of a scrape", p->csv_path);
    /* never leave part of a scrape: a failed one is cut off the file */
    int r = journal_append(p->csv, p->buf.data, p->buf.len, p->npending, -1, NULL);
    if (r < 0) {
        if (!p->write_error)
            p->write_error = r;
        return carma_err_set(e, r, "cannot write %s: %s (the rows written before are kept)",
                             p->csv_path, strerror(-r));
    }
    if (p->have_last && p->scrape_us < p->last_scrape_us)
        p->non_monotonic = true;
    p->last_scrape_us = p->scrape_us;
    p->have_last = true;
    for (size_t i = 0; i < p->npending; i++) {
        struct observed_dev *o = &p->obs[p->pending[i].slot];
        if (o->rows == 0 || p->scrape_us < o->first_us)
            o->first_us = p->scrape_us;
        if (o->rows == 0 || p->scrape_us > o->last_us)
            o->last_us = p->scrape_us;
        o->rows++;
        if (p->pending[i].uuid >= 0)
            o->uuid_written[p->pending[i].uuid] = true;
    }
    p->rows_written += p->npending;
    p->scrape_seq++;
    p->npending = 0;
    return 0;
}

int srt_power_finish(struct srt_power *p, const char *status, struct carma_err *e)
{
    if (!p)
        return 0;
    int ret = 0;
    static const char *const statuses[] = {"complete", "incomplete", "failed"};
    bool known = false;
    for (size_t i = 0; status && i < sizeof statuses / sizeof statuses[0]; i++)
        known |= strcmp(status, statuses[i]) == 0;
    if (!known) {
        ret = carma_err_set(e, -EINVAL, "srt-slurm power export: bad status \"%s\"",
                            status ? status : "(null)");
        status = "failed";
    }

    int sr = journal_sync(p->csv);
    if (sr < 0) {
        if (!p->write_error)
            p->write_error = sr;
        if (!ret)
            ret = carma_err_set(e, sr, "cannot write %s: %s", p->csv_path, strerror(-sr));
    }
    sr = journal_close(p->csv);
    p->csv = NULL;
    if (sr < 0 && !ret) {
        if (!p->write_error)
            p->write_error = sr;
        ret = carma_err_set(e, sr, "cannot write %s: %s", p->csv_path, strerror(-sr));
    }

    char sha[65];
    int r = srt_json_file_sha256(p->csv_path, sha);
    if (r < 0 && r != -ENOTSUP && !ret)
        ret = carma_err_set(e, r, "cannot read %s: %s", p->csv_path, strerror(-r));
    struct carma_err me = {0};
    r = manifest_write(p, status, true, time_real_ns() / NS_PER_US, r == 0 ? sha : NULL, &me);
    if (r < 0 && !ret)
        ret = carma_err_set(e, r, "%s", me.msg);
    free_all(p);
    return ret;
}
