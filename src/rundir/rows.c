/* rows: the rows of the run-directory files carma run writes (see rows.h). */
#include "rundir/rows.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fmt.h"
#include "core/jsonutil.h"

/* ---- features.csv ---- */

void rundir_rows_features(FILE *f, const char *ts, const char *workload, double cpu_time_s,
                          const uint64_t *v, unsigned mask)
{
    fprintf(f, "%s,%s,%.6f", ts, workload, cpu_time_s);
    for (int i = 0; i < RUNDIR_FEATURES_COUNTERS; i++) {
        if (mask & (1u << i))
            fprintf(f, ",%llu", (unsigned long long)v[i]);
        else
            fputs(",", f);
    }
    fputs("\r\n", f);
}

/* ---- node_util.csv ---- */

size_t rundir_rows_node_util(char *row, size_t cap, const char *ts, double busy_cpu_s,
                             double total_cpu_s, double cpu_util)
{
    int n = snprintf(row, cap, "%s,%.6f,%.6f,", ts, busy_cpu_s, total_cpu_s);
    if (n > 0 && (size_t)n < cap && !isnan(cpu_util))
        n += snprintf(row + n, cap - (size_t)n, "%.6f", cpu_util);
    if (n <= 0 || (size_t)n + 2 >= cap)
        return 0;
    memcpy(row + n, "\r\n", 2);
    return (size_t)n + 2;
}

/* ---- cpu_util.csv ---- */

size_t rundir_rows_cpu_util(char *row, size_t cap, const char *ts, unsigned socket,
                            const char *source, const double *util)
{
    int n = snprintf(row, cap, "%s,%u,%s", ts, socket, source);
    if (n <= 0 || (size_t)n >= cap)
        return 0;
    size_t len = (size_t)n;
    for (int k = 0; k < RUNDIR_CPU_UTIL_FIGURES; k++) {
        char t[40];
        size_t tl = isnan(util[k]) ? 0 : fmt_fixed6(t, util[k]);
        if (len + 1 + tl + 2 >= cap)
            return 0;
        row[len++] = ',';
        memcpy(row + len, t, tl);
        len += tl;
    }
    memcpy(row + len, "\r\n", 2);
    len += 2;
    row[len] = '\0';
    return len;
}

/* ---- utilization.csv ---- */

/* Each append is made even after one failed (-ENOMEM), as the rows always were: the first
 * failure is the result. */
static void add(int *r, int rc)
{
    if (*r == 0)
        *r = rc;
}

/* ",V" (fmt_fixed6), or "," for a blank cell (NAN) */
static void num_cell(struct csv_buf *b, double v, int *r)
{
    char t[40];
    add(r, csv_buf_raw(b, ",", 1));
    if (!isnan(v))
        add(r, csv_buf_raw(b, t, fmt_fixed6(t, v)));
}

/* "TS,GPU,UUID" */
static void gpu_lead(struct csv_buf *b, const char *ts, size_t tl, unsigned gpu, const char *uuid,
                     int *r)
{
    char idx[24];
    size_t il = fmt_u64(idx, gpu);
    add(r, csv_buf_raw(b, ts, tl));
    add(r, csv_buf_raw(b, ",", 1));
    add(r, csv_buf_raw(b, idx, il));
    add(r, csv_buf_field(b, uuid, 0));
}

int rundir_rows_gpu_device(struct csv_buf *b, const char *ts, size_t tl, unsigned gpu,
                           const char *uuid, double gpu_util_pct, double mem_util_pct)
{
    int r = 0;
    gpu_lead(b, ts, tl, gpu, uuid, &r);
    add(&r, csv_buf_raw(b, ",,", 2));
    num_cell(b, gpu_util_pct, &r);
    num_cell(b, mem_util_pct, &r);
    add(&r, csv_buf_raw(b, ",,", 2));
    add(&r, csv_buf_end_row(b));
    return r;
}

int rundir_rows_gpu_process(struct csv_buf *b, const char *ts, size_t tl, unsigned gpu,
                            const char *uuid, uint64_t pid, const char *workload,
                            double sm_util_pct, double used_mem_mib)
{
    char p[24];
    int r = 0;
    gpu_lead(b, ts, tl, gpu, uuid, &r);
    add(&r, csv_buf_raw(b, ",", 1));
    add(&r, csv_buf_raw(b, p, fmt_u64(p, pid)));
    add(&r, csv_buf_field(b, workload, 0));
    add(&r, csv_buf_raw(b, ",,", 2));
    num_cell(b, sm_util_pct, &r);
    num_cell(b, used_mem_mib, &r);
    add(&r, csv_buf_end_row(b));
    return r;
}

/* ---- event_summaries.jsonl ---- */

char *rundir_rows_event(const struct rundir_event *ev, size_t *len)
{
    json_t *o = json_object();
    json_object_set_new(o, "timestamp_unix", json_real(ev->timestamp_unix));
    json_object_set_new(o, "elapsed_s", json_real(ev->elapsed_s));
    json_t *arr = json_array();
    for (size_t k = 0; k < ev->n; k++) {
        const struct rundir_event_workload *a = &ev->w[k];
        json_t *w = json_object();
        json_object_set_new(w, "name", json_string(a->name));
        jsonutil_set_num(w, "power_w", a->power_w);
        json_object_set_new(w, "energy_j", json_real(a->energy_j));
        json_object_set_new(w, "g_co2e", json_real(a->g_co2e));
        json_object_set_new(w, "method", json_string(a->method));
        json_array_append_new(arr, w);
    }
    json_object_set_new(o, "workloads", arr);
    json_object_set_new(o, "idle_j", json_real(ev->idle_j));
    json_object_set_new(o, "other_j", json_real(ev->other_j));
    json_object_set_new(o, "unattributed_j", json_real(ev->unattributed_j));
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16));
    json_decref(o);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    text[n] = '\n'; /* the NUL becomes the line end */
    *len = n + 1;
    return text;
}

/* ---- pstree.log ---- */

void rundir_rows_pstree_begin(FILE *f, double t)
{
    fprintf(f, "# %.6f\n", t);
}

void rundir_rows_pstree_job(FILE *f, const char *name, int pgid, const char *cgroup)
{
    fprintf(f, "%s: pgid %d%s%s\n", name, pgid, cgroup ? " cgroup " : "", cgroup ? cgroup : "");
}

void rundir_rows_pstree_line(FILE *f, const char *line)
{
    fprintf(f, "  %s", line);
}

void rundir_rows_pstree_pid(FILE *f, int pid)
{
    fprintf(f, "  %d\n", pid);
}

/* ---- workloads.json, workload_pids.json ---- */

json_t *rundir_rows_workloads(const struct rundir_workload *w, size_t n)
{
    json_t *wl = json_object(), *arr = json_array();
    for (size_t k = 0; k < n; k++) {
        const struct rundir_workload *j = &w[k];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(j->name));
        json_object_set_new(o, "type", j->type ? json_string(j->type) : json_null());
        json_t *pl = json_array();
        if (j->pid > 0)
            json_array_append_new(pl, json_integer(j->pid));
        json_object_set_new(o, "pids", pl);
        json_object_set_new(o, "pgid", j->pid > 0 ? json_integer(j->pid) : json_null());
        json_object_set_new(o, "cgroup", j->cgroup ? json_string(j->cgroup) : json_null());
        jsonutil_set_num(o, "start_unix", j->start_unix);
        jsonutil_set_num(o, "end_unix", j->end_unix);
        json_object_set_new(o, "exit_status", json_integer(j->exit_status));
        json_object_set_new(o, "signal", j->signal ? json_integer(j->signal) : json_null());
        json_object_set_new(o, "timed_out", json_boolean(j->timed_out));
        json_array_append_new(arr, o);
    }
    json_object_set_new(wl, "workloads", arr);
    return wl;
}

json_t *rundir_rows_workload_pids(const struct rundir_workload *w, size_t n)
{
    json_t *pids = json_object();
    for (size_t k = 0; k < n; k++)
        if (w[k].pid > 0)
            json_object_set_new(pids, w[k].name, json_integer(w[k].pid));
    return pids;
}
