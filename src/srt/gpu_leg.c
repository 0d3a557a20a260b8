/*
 * srt/gpu_leg: what srt/power and srt/gpu write alike of srt-slurm's GPU power leg (see
 * gpu_leg.h).
 *
 * The manifest is built with jansson, whose objects keep their keys in insertion order, so the
 * order of the put() calls below is the order of srt-slurm's GPU manifest schema 1; a failed
 * allocation anywhere turns ok false and no manifest is written (srt_json_replace reports it).
 */
#include "srt/gpu_leg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fmt.h"
#include "core/jsonutil.h"
#include "srt/json.h"

#define SAMPLES_SCHEMA_VERSION  2
#define MANIFEST_SCHEMA_VERSION 1
#define EOL                     "\r\n"
#define EOL_LEN                 2

/* ---- devices ---- */

int srt_gpu_leg_dev_uuid(struct srt_gpu_leg_dev *d, const char *uuid)
{
    for (size_t i = 0; i < d->nuuid; i++)
        if (strcmp(d->uuid[i], uuid) == 0)
            return (int)i;
    if (d->nuuid == SRT_GPU_LEG_UUIDS || !(d->uuid[d->nuuid] = strdup(uuid)))
        return -1;
    d->uuid_written[d->nuuid] = false;
    return (int)d->nuuid++;
}

void srt_gpu_leg_dev_written(struct srt_gpu_leg_dev *d, int64_t us, int uuid)
{
    if (d->rows == 0 || us < d->first_us)
        d->first_us = us;
    if (d->rows == 0 || us > d->last_us)
        d->last_us = us;
    d->rows++;
    if (uuid >= 0)
        d->uuid_written[uuid] = true;
}

void srt_gpu_leg_dev_free(struct srt_gpu_leg_dev *d)
{
    for (size_t i = 0; i < d->nuuid; i++)
        free(d->uuid[i]);
    d->nuuid = 0;
}

/* ---- rows ---- */

size_t srt_gpu_leg_prefix(char *s, int64_t us, uint64_t seq)
{
    size_t n = 0;
    s[n++] = (char)('0' + SAMPLES_SCHEMA_VERSION);
    s[n++] = ',';
    n += fmt_u64(s + n, (uint64_t)(us / 1000000));
    s[n++] = '.';
    for (int64_t f = us % 1000000, k = 5; k >= 0; k--, f /= 10)
        s[n + (size_t)k] = (char)('0' + f % 10);
    n += 6;
    s[n++] = ',';
    n += fmt_u64(s + n, seq);
    s[n++] = ',';
    return n;
}

int srt_gpu_leg_row(struct csv_buf *b, const char *prefix, size_t prefix_len,
                    const struct csv_buf *host, unsigned gpu_index, const char *uuid,
                    double power_w, double gpu_util_pct, double sm_active)
{
    size_t ulen = uuid ? strlen(uuid) : 0;
    if (csv_buf_reserve(b, SRT_GPU_LEG_ROW_MAX(prefix_len, host->len, ulen)) < 0)
        return -ENOMEM;
    memcpy(b->data + b->len, prefix, prefix_len);
    b->len += prefix_len;
    memcpy(b->data + b->len, host->data, host->len);
    b->len += host->len;
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
    return 0;
}

/* ---- samples.csv ---- */

int srt_gpu_leg_append(struct journal *csv, const char *csv_path, const struct csv_buf *b,
                       size_t rows, const char *unit, int *write_error, struct carma_err *e)
{
    if (journal_damaged(csv))
        return carma_err_set(e, -EIO, "cannot write %s: it ends in part of a %s", csv_path, unit);
    /* never leave part of a scrape: a failed one is cut off the file */
    int r = journal_append(csv, b->data, b->len, rows, -1, NULL);
    if (r < 0) {
        if (!*write_error)
            *write_error = r;
        return carma_err_set(e, r, "cannot write %s: %s (the rows written before are kept)",
                             csv_path, strerror(-r));
    }
    return 0;
}

int srt_gpu_leg_close(const char *what, const char **status, struct journal *csv,
                      const char *csv_path, int *write_error, char sha[65], struct carma_err *e)
{
    int ret = 0;
    static const char *const statuses[] = {"complete", "incomplete", "failed"};
    bool known = false;
    for (size_t i = 0; *status && i < sizeof statuses / sizeof statuses[0]; i++)
        known |= strcmp(*status, statuses[i]) == 0;
    if (!known) {
        ret =
            carma_err_set(e, -EINVAL, "%s: bad status \"%s\"", what, *status ? *status : "(null)");
        *status = "failed";
    }

    int r = journal_sync(csv);
    if (r < 0) {
        if (!*write_error)
            *write_error = r;
        if (!ret)
            ret = carma_err_set(e, r, "cannot write %s: %s", csv_path, strerror(-r));
    }
    r = journal_close(csv);
    if (r < 0 && !ret) {
        if (!*write_error)
            *write_error = r;
        ret = carma_err_set(e, r, "cannot write %s: %s", csv_path, strerror(-r));
    }

    r = srt_json_file_sha256(csv_path, sha);
    if (r < 0) {
        sha[0] = '\0';
        if (r != -ENOTSUP && !ret)
            ret = carma_err_set(e, r, "cannot read %s: %s", csv_path, strerror(-r));
    }
    return ret;
}

/* ---- the manifest ---- */

/* Adds key = v to obj (v may be NULL after a failed allocation: *ok turns false). */
static void put(json_t *obj, const char *key, json_t *v, bool *ok)
{
    if (!v || json_object_set_new(obj, key, v) < 0)
        *ok = false;
}

/* A new object appended to a (NULL, with *ok false, when that fails). */
static json_t *append_object(json_t *a, bool *ok)
{
    json_t *o = a ? json_object() : NULL;
    if (!o || json_array_append_new(a, o) < 0) {
        *ok = false;
        return NULL;
    }
    return o;
}

json_t *srt_gpu_leg_expected(json_t *devices, const char *host, unsigned gpu_index, bool *ok)
{
    json_t *d = append_object(devices, ok);
    if (!d)
        return NULL;
    put(d, "hostname", json_string(host), ok);
    put(d, "gpu_index", json_integer(gpu_index), ok);
    json_t *as = json_array();
    put(d, "assignments", as, ok);
    return as;
}

void srt_gpu_leg_assignment(json_t *as, const char *role, json_int_t worker_index,
                            const char *process, bool *ok)
{
    json_t *o = append_object(as, ok);
    if (!o)
        return;
    put(o, "worker_role", json_string(role), ok);
    put(o, "worker_index", json_integer(worker_index), ok);
    put(o, "worker_process", jsonutil_str(process), ok);
    put(o, "het_group", json_null(), ok);
}

void srt_gpu_leg_observed(json_t *devices, const char *host, const struct srt_gpu_leg_dev *d,
                          bool *ok)
{
    json_t *o = append_object(devices, ok);
    if (!o)
        return;
    put(o, "hostname", json_string(host), ok);
    put(o, "gpu_index", json_integer(d->gpu_index), ok);
    json_t *u = json_array();
    put(o, "gpu_uuids", u, ok);
    for (size_t k = 0; u && k < d->nuuid; k++)
        if (d->uuid_written[k] && json_array_append_new(u, json_string(d->uuid[k])) < 0)
            *ok = false;
    put(o, "first_sample_time_unix", json_real((double)d->first_us / 1e6), ok);
    put(o, "last_sample_time_unix", json_real((double)d->last_us / 1e6), ok);
}

static json_t *utilization_metrics(const char *util_metric, bool *ok)
{
    const char *const m[][3] = {
        {"gpu_util_pct", util_metric, "percent"},
        {"sm_active", "DCGM_FI_PROF_SM_ACTIVE", "fraction"},
    };
    json_t *a = json_array();
    if (!a) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        json_t *o = append_object(a, ok);
        if (!o)
            break;
        put(o, "column", json_string(m[i][0]), ok);
        put(o, "source_metric", json_string(m[i][1]), ok);
        put(o, "unit", json_string(m[i][2]), ok);
    }
    return a;
}

/* The reason codes of m; n of them in out. */
static size_t reason_codes(const struct srt_gpu_leg_manifest *m, const char *out[3])
{
    size_t n = 0;
    if (m->write_failed)
        out[n++] = "samples_write_failed";
    if (m->non_monotonic)
        out[n++] = "timestamp_non_monotonic";
    if (m->rows == 0)
        out[n++] = "samples_empty";
    return n;
}

/* The manifest as srt-slurm's GPU manifest schema 1, keys in its order; NULL when out of
 * memory. Consumes m->expected and m->observed. */
static json_t *manifest_json(struct srt_gpu_leg_manifest *m, const char *status, bool final,
                             int64_t stopped_us, const char *sha256)
{
    bool ok = true;
    json_t *j = json_object();
    if (!j) {
        json_decref(m->expected);
        json_decref(m->observed);
        return NULL;
    }
    const char *codes[3];
    size_t ncodes = final ? reason_codes(m, codes) : 0;
    bool valid = final && strcmp(status, "complete") == 0 && m->rows > 0 && ncodes == 0;

    put(j, "schema_version", json_integer(MANIFEST_SCHEMA_VERSION), &ok);
    put(j, "producer", json_string(m->producer), &ok);
    put(j, "producer_version", jsonutil_str(m->producer_version), &ok);
    put(j, "producer_git_commit", json_null(), &ok);
    put(j, "source_metric", jsonutil_str(m->source_metric), &ok);
    put(j, "unit", json_string("W"), &ok);
    put(j, "power_scope", jsonutil_str(m->power_scope), &ok);
    put(j, "samples_schema_version", json_integer(SAMPLES_SCHEMA_VERSION), &ok);
    put(j, "utilization_metrics", utilization_metrics(m->util_metric, &ok), &ok);
    put(j, "timestamp_source", json_string(m->timestamp_source), &ok);
    put(j, "job_id", jsonutil_str(m->job_id), &ok);
    put(j, "run_name", jsonutil_str(m->run_name), &ok);
    put(j, "sample_interval_seconds", jsonutil_real(m->interval_s), &ok);
    put(j, "request_timeout_seconds", jsonutil_real(m->timeout_s), &ok);
    put(j, "max_scrape_duration_seconds", jsonutil_real(m->timeout_s), &ok);
    put(j, "required", json_boolean(m->required), &ok);
    put(j, "started_at_unix", json_real((double)m->started_us / 1e6), &ok);
    put(j, "stopped_at_unix", final ? json_real((double)stopped_us / 1e6) : json_null(), &ok);
    put(j, "status", json_string(status), &ok);
    put(j, "publication_valid", json_boolean(valid), &ok);
    put(j, "dcgm_exporter", json_null(), &ok);
    put(j, "expected_devices", m->expected, &ok);
    put(j, "observed_devices", m->observed, &ok);
    put(j, "expected_windows", json_array(), &ok);
    put(j, "scrape_count", json_integer((json_int_t)m->scrapes), &ok);
    put(j, "sample_row_count", json_integer((json_int_t)m->rows), &ok);
    put(j, "samples_sha256", jsonutil_str(sha256), &ok);
    put(j, "window_validations", json_array(), &ok);

    json_t *errs = json_array();
    put(j, "artifact_errors", errs, &ok);
    if (errs && m->write_failed && final) {
        json_t *o = append_object(errs, &ok);
        if (o) {
            put(o, "path", json_string("samples.csv"), &ok);
            json_t *rc = json_array();
            put(o, "reason_codes", rc, &ok);
            if (rc && json_array_append_new(rc, json_string("samples_write_failed")) < 0)
                ok = false;
        }
    }
    json_t *rc = json_array();
    put(j, "reason_codes", rc, &ok);
    for (size_t i = 0; rc && i < ncodes; i++)
        if (json_array_append_new(rc, json_string(codes[i])) < 0)
            ok = false;
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

int srt_gpu_leg_manifest_write(struct srt_gpu_leg_manifest *m, const char *status, bool final,
                               int64_t stopped_us, const char *sha256, const char *path,
                               struct carma_err *e)
{
    json_t *j = manifest_json(m, status, final, stopped_us, sha256);
    m->expected = m->observed = NULL;
    return srt_json_replace(j, path, e);
}
