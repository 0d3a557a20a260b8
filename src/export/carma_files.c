/*
 * carma_files: CARMA's run-directory files from carma's own (see carma_files.h and
 * docs/formats.md). Each converter reads one of the run's files and appends the CARMA file's
 * bytes to a stream; carma_files_write reads the run directory and replaces each CARMA file
 * whole.
 */
#include "export/carma_files.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "core/csv.h"
#include "core/file.h"
#include "core/journal.h"
#include "core/jsonutil.h"
#include "rundir/rundir.h"

/* The most workloads followed in perf.log (features.csv's rows name them). */
#define CARMA_FILES_JOBS_MAX 4096

/* A number field: finite, into *ret. Empty or not a number: false. */
static bool num(const char *s, double *ret)
{
    if (!s || !*s)
        return false;
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v))
        return false;
    *ret = v;
    return true;
}

/* An unsigned integer field. Empty or not one: false. */
static bool u64(const char *s, uint64_t *ret)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno)
        return false;
    *ret = v;
    return true;
}

/* Iterates the records of a CSV text: the header first (checked for the columns wanted). */
struct reader {
    char *text;
    size_t len, pos, line;
    const char *name;
    struct csv_fields f;
    struct carma_err *e;
};

static int next(struct reader *r)
{
    return csv_split(r->text, r->len, &r->pos, &r->line, r->name, &r->f, r->e);
}

/* Reads the header and finds the n columns of want into col. Returns 1, 0 for an empty
 * text, or a negative errno (e set). */
static int header(struct reader *r, const char *const *want, int *col, size_t n)
{
    int k = next(r);
    if (k <= 0)
        return k;
    for (size_t i = 0; i < n; i++) {
        col[i] = csv_column(&r->f.row, want[i]);
        if (col[i] < 0)
            return carma_err_set(r->e, -EINVAL, "%s:%zu: no column %s", r->name, r->f.row.line,
                                 want[i]);
    }
    return 1;
}

static const char *field(const struct reader *r, int col)
{
    return (size_t)col < r->f.row.n ? r->f.row.fields[col] : "";
}

/* nvidia-smi's timestamp: local time "YYYY/MM/DD HH:MM:SS.mmm". */
static void nvsmi_time(char *buf, size_t cap, double t)
{
    double ms_total = floor(t * 1000.0 + 0.5);
    time_t s = (time_t)floor(ms_total / 1000.0);
    int ms = (int)(ms_total - (double)s * 1000.0);
    struct tm tm;
    localtime_r(&s, &tm);
    snprintf(buf, cap, "%04d/%02d/%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

/* The converters: *done counts the rows written by earlier calls on the same output (the
 * header goes before the first); each returns the rows it wrote, or a negative errno. */
static int nvsmi_conv(char *text, size_t len, const char *name, long *done, FILE *out,
                      struct carma_err *e)
{
    static const char *const want[] = {"timestamp_unix", "gpu_index", "power_w", "gpu_util_pct"};
    int col[4];
    struct reader r = {.text = text, .len = len, .line = 1, .name = name, .e = e};
    int k = header(&r, want, col, 4), rows = 0;
    while (k > 0 && (k = next(&r)) > 0) {
        double t, w, u;
        uint64_t gpu;
        if (!num(field(&r, col[0]), &t) || !u64(field(&r, col[1]), &gpu)) {
            k = carma_err_set(e, -EINVAL, "%s:%zu: bad timestamp_unix or gpu_index", name,
                              r.f.row.line);
            break;
        }
        if ((*done)++ == 0)
            fputs("timestamp, index, power.draw [W], utilization.gpu [%]\n", out);
        char ts[64];
        nvsmi_time(ts, sizeof ts, t);
        fprintf(out, "%s, %llu, ", ts, (unsigned long long)gpu);
        if (num(field(&r, col[2]), &w))
            fprintf(out, "%.2f W, ", w);
        else
            fputs("[N/A], ", out);
        if (num(field(&r, col[3]), &u))
            fprintf(out, "%.0f %%\n", u);
        else
            fputs("[N/A]\n", out);
        rows++;
    }
    csv_fields_free(&r.f);
    if (k < 0)
        return k;
    return ferror(out) ? carma_err_set(e, -EIO, "%s: write error", name) : rows;
}

int carma_nvsmi_write(char *text, size_t len, const char *name, FILE *out, struct carma_err *e)
{
    long done = 0;
    return nvsmi_conv(text, len, name, &done, out, e);
}

/* meter: the meter channel followed ("" until the first is seen; cap 256). */
static int wattsup_conv(char *text, size_t len, const char *name, char *meter, long *done,
                        FILE *out, struct carma_err *e)
{
    static const char *const want[] = {"timestamp_unix", "channel", "watts"};
    int col[3];
    struct reader r = {.text = text, .len = len, .line = 1, .name = name, .e = e};
    int k = header(&r, want, col, 3), rows = 0;
    while (k > 0 && (k = next(&r)) > 0) {
        const char *ch = field(&r, col[1]);
        if (strncmp(ch, "meter/", 6) != 0)
            continue;
        if (!meter[0])
            snprintf(meter, 256, "%s", ch);
        else if (strcmp(meter, ch) != 0)
            continue;
        double t, w;
        if (!num(field(&r, col[2]), &w))
            continue; /* no reading at this tick */
        if (!num(field(&r, col[0]), &t)) {
            k = carma_err_set(e, -EINVAL, "%s:%zu: bad timestamp_unix", name, r.f.row.line);
            break;
        }
        if ((*done)++ == 0)
            fputs("timestamp_unix,watts,volts,amps\n", out);
        fprintf(out, "%.6f,%.1f,,\n", t, w);
        rows++;
    }
    csv_fields_free(&r.f);
    if (k < 0)
        return k;
    return ferror(out) ? carma_err_set(e, -EIO, "%s: write error", name) : rows;
}

int carma_wattsup_write(char *text, size_t len, const char *name, FILE *out, struct carma_err *e)
{
    char meter[256] = "";
    long done = 0;
    return wattsup_conv(text, len, name, meter, &done, out, e);
}

/* perf.log: a workload's counts at its last row. */
struct perf_job {
    char *name;
    uint64_t v[3];
    bool seen;
};

static struct perf_job *perf_job(struct perf_job **jobs, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*jobs)[i].name, name) == 0)
            return &(*jobs)[i];
    if (*n == CARMA_FILES_JOBS_MAX)
        return NULL;
    struct perf_job *v = realloc(*jobs, (*n + 1) * sizeof *v);
    if (!v)
        return NULL;
    *jobs = v;
    struct perf_job *j = &v[(*n)++];
    memset(j, 0, sizeof *j);
    j->name = strdup(name);
    if (!j->name) {
        (*n)--;
        return NULL;
    }
    return j;
}

/* perf.log's state between calls: the workloads' last counts, the last two row times. */
struct perf_state {
    struct perf_job *jobs;
    size_t njobs;
    double prev_t, cur_t; /* the event before the current row's, and the current one */
};

static void perf_state_init(struct perf_state *ps, double t0_unix)
{
    memset(ps, 0, sizeof *ps);
    ps->prev_t = ps->cur_t = t0_unix;
}

static void perf_state_done(struct perf_state *ps)
{
    for (size_t i = 0; i < ps->njobs; i++)
        free(ps->jobs[i].name);
    free(ps->jobs);
    memset(ps, 0, sizeof *ps);
}

static int perf_conv(char *text, size_t len, const char *name, double t0_unix,
                     const char *const *names, const double *starts_unix, size_t n,
                     struct perf_state *ps, FILE *out, struct carma_err *e)
{
    static const char *const want[] = {"timestamp_unix", "workload", "task_clock_ns",
                                       "instructions", "cycles"};
    int col[5];
    struct reader r = {.text = text, .len = len, .line = 1, .name = name, .e = e};
    int k = header(&r, want, col, 5), lines = 0;
    while (k > 0 && (k = next(&r)) > 0) {
        double t;
        if (!num(field(&r, col[0]), &t)) {
            k = carma_err_set(e, -EINVAL, "%s:%zu: bad timestamp_unix", name, r.f.row.line);
            break;
        }
        if (t != ps->cur_t) {
            ps->prev_t = ps->cur_t;
            ps->cur_t = t;
        }
        const char *wl = field(&r, col[1]);
        struct perf_job *j = perf_job(&ps->jobs, &ps->njobs, wl);
        if (!j) {
            k = carma_err_set(e, -ENOMEM, "%s:%zu: too many workloads", name, r.f.row.line);
            break;
        }
        uint64_t v[3];
        bool have[3];
        for (int c = 0; c < 3; c++) {
            have[c] = u64(field(&r, col[2 + c]), &v[c]);
            /* counts are cumulative from the workload's start: the interval's is the rise */
            if (have[c] && j->seen && v[c] < j->v[c])
                have[c] = false;
        }
        uint64_t d[3];
        for (int c = 0; c < 3; c++)
            d[c] = have[c] ? v[c] - (j->seen ? j->v[c] : 0) : 0;
        double from = ps->prev_t;
        for (size_t q = 0; !j->seen && q < n; q++)
            if (strcmp(names[q], wl) == 0 && isfinite(starts_unix[q]) && starts_unix[q] > from &&
                starts_unix[q] <= t)
                from = starts_unix[q];
        double span_s = t - from;
        uint64_t run_ns = span_s > 0 ? (uint64_t)llround(span_s * 1e9) : 0;
        double rel = t - t0_unix;
        char ts[48];
        snprintf(ts, sizeof ts, "%.9f", rel > 0 ? rel : 0.0);
        if (have[0]) {
            fprintf(out, "%s,%.2f,msec,task-clock,%s,%llu,100.00,", ts, (double)d[0] / 1e6, wl,
                    (unsigned long long)run_ns);
            if (run_ns)
                fprintf(out, "%.3f,CPUs utilized\n", (double)d[0] / (double)run_ns);
            else
                fputs(",\n", out);
            lines++;
        }
        if (have[1]) {
            fprintf(out, "%s,%llu,,instructions,%s,%llu,100.00,", ts, (unsigned long long)d[1], wl,
                    (unsigned long long)run_ns);
            if (have[2] && d[2] > 0)
                fprintf(out, "%.2f,insn per cycle\n", (double)d[1] / (double)d[2]);
            else
                fputs(",\n", out);
            lines++;
        }
        if (have[2]) {
            fprintf(out, "%s,%llu,,cycles,%s,%llu,100.00,", ts, (unsigned long long)d[2], wl,
                    (unsigned long long)run_ns);
            if (have[0] && d[0] > 0)
                fprintf(out, "%.3f,GHz\n", (double)d[2] / (double)d[0]);
            else
                fputs(",\n", out);
            lines++;
        }
        for (int c = 0; c < 3; c++)
            if (have[c])
                j->v[c] = v[c];
        j->seen = true;
    }
    csv_fields_free(&r.f);
    if (k < 0)
        return k;
    return ferror(out) ? carma_err_set(e, -EIO, "%s: write error", name) : lines;
}

int carma_perf_write(char *text, size_t len, const char *name, double t0_unix,
                     const char *const *names, const double *starts_unix, size_t n, FILE *out,
                     struct carma_err *e)
{
    struct perf_state ps;
    perf_state_init(&ps, t0_unix);
    int r = perf_conv(text, len, name, t0_unix, names, starts_unix, n, &ps, out, e);
    perf_state_done(&ps);
    return r;
}

/* A number for a CSV cell: %.6f, or empty when unknown. */
static void cell(FILE *out, double v, bool last)
{
    if (isfinite(v))
        fprintf(out, "%.6f", v);
    if (!last)
        fputc(',', out);
}

static int job_conv(const char *text, size_t len, const char *name, const char *workload,
                    double start_unix, double end_unix, double embodied_g, long *done, FILE *out,
                    struct carma_err *e)
{
    int rows = 0;
    size_t line = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        line++;
        json_error_t je;
        json_t *ev = n ? json_loadb(text + pos, n, 0, &je) : NULL;
        pos += n + (nl ? 1 : 0);
        if (!n)
            continue;
        const json_t *ws = json_object_get(ev, "workloads");
        double t = jsonutil_get_num(ev, "timestamp_unix");
        if (!ev || !json_is_array(ws) || !isfinite(t)) {
            json_decref(ev);
            if (!nl && pos >= len)
                break; /* a last line cut short by a killed run */
            return carma_err_set(e, -EINVAL, "%s:%zu: not an event summary", name, line);
        }
        size_t i;
        const json_t *w;
        json_array_foreach(ws, i, w)
        {
            const char *wn = json_string_value(json_object_get(w, "name"));
            if (!wn || strcmp(wn, workload) != 0)
                continue;
            if ((*done)++ == 0)
                fputs("timestamp_unix,elapsed_s,power_w,energy_j,operational_g_co2e,"
                      "embodied_g_co2e,method\n",
                      out);
            double emb = NAN;
            if (isfinite(start_unix) && isfinite(end_unix) && isfinite(embodied_g)) {
                double f = end_unix > start_unix ? (t - start_unix) / (end_unix - start_unix) : 1;
                emb = embodied_g * (f < 0 ? 0 : f > 1 ? 1 : f);
            }
            cell(out, t, false);
            cell(out, jsonutil_get_num(ev, "elapsed_s"), false);
            cell(out, jsonutil_get_num(w, "power_w"), false);
            cell(out, jsonutil_get_num(w, "energy_j"), false);
            cell(out, jsonutil_get_num(w, "g_co2e"), false);
            cell(out, emb, false);
            const char *m = json_string_value(json_object_get(w, "method"));
            fprintf(out, "%s\n", m ? m : "");
            rows++;
        }
        json_decref(ev);
    }
    return ferror(out) ? carma_err_set(e, -EIO, "%s: write error", name) : rows;
}

int carma_job_write(const char *text, size_t len, const char *name, const char *workload,
                    double start_unix, double end_unix, double embodied_g, FILE *out,
                    struct carma_err *e)
{
    long done = 0;
    return job_conv(text, len, name, workload, start_unix, end_unix, embodied_g, &done, out, e);
}

/* ---- the run directory ---- */

/* Reads dir/rel into *ret (NUL-terminated; rundir_read_file: samples.csv of a long run at a
 * fast interval is the largest). Returns 0, -ENOENT when absent, another negative errno (e set)
 * otherwise. */
static int slurp(const char *dir, const char *rel, char **ret, size_t *len, struct carma_err *e)
{
    struct carma_err re = {0};
    int r = rundir_read_file(dir, rel, ret, len, &re);
    if (r < 0 && r != -ENOENT && e)
        *e = re;
    return r;
}

/* The text in *buf (from open_memstream) as dir/rel, when rows > 0. Returns 1 when written,
 * 0 when there was nothing, or a negative errno (e set). */
static int put(const char *dir, const char *rel, char *buf, size_t len, int rows,
               struct carma_err *e)
{
    if (rows <= 0)
        return rows;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    int r = file_replace(path, buf, len);
    return r < 0 ? carma_err_set(e, r, "%s: cannot write: %s", path, strerror(-r)) : 1;
}

/* Runs one converter into a memory stream and writes its result as dir/rel. */
#define CONVERT(rel, call)                                                                         \
    do {                                                                                           \
        char *mb = NULL;                                                                           \
        size_t ml = 0;                                                                             \
        FILE *out = open_memstream(&mb, &ml);                                                      \
        int rows = out ? (call) : carma_err_set(&er, -ENOMEM, "out of memory");                    \
        if (out && fclose(out) != 0 && rows > 0)                                                   \
            rows = carma_err_set(&er, -ENOMEM, "out of memory");                                   \
        int pr = put(dir, rel, mb, ml, rows, &er);                                                 \
        free(mb);                                                                                  \
        if (pr > 0)                                                                                \
            written++;                                                                             \
        else if (pr < 0 && !first.code)                                                            \
            first = er;                                                                            \
    } while (0)

int carma_files_write(const char *dir, struct carma_err *e)
{
    struct carma_err er = {0}, first = {0};
    int written = 0;
    char *text = NULL;
    size_t len = 0;
    double t0 = NAN;

    /* workloads.json: the workloads' names and lifetimes; report.json: their embodied
     * carbon */
    json_t *wl = rundir_read_json(dir, "workloads.json", NULL, NULL);
    json_t *rep = rundir_read_json(dir, "report.json", NULL, NULL);
    const json_t *wls = json_object_get(wl, "workloads");
    size_t nw = json_array_size(wls);
    const char **names = nw ? calloc(nw, sizeof *names) : NULL;
    double *starts = nw ? calloc(nw, sizeof *starts) : NULL;
    if (nw && (!names || !starts))
        nw = 0;
    for (size_t i = 0; i < nw; i++) {
        const char *wn = json_string_value(json_object_get(json_array_get(wls, i), "name"));
        names[i] = wn ? wn : "";
        starts[i] = jsonutil_get_num(json_array_get(wls, i), "start_unix");
    }

    /* samples.csv: the meter's rows, and the run's first sample (perf.log's time 0) */
    int r = slurp(dir, "samples.csv", &text, &len, &er);
    if (r == 0) {
        const char *comma = strchr(text, '\n');
        if (comma)
            t0 = strtod(comma + 1, NULL);
        CONVERT("wattsup_log.csv", carma_wattsup_write(text, len, "samples.csv", out, &er));
        free(text);
    } else if (r != -ENOENT && !first.code) {
        first = er;
    }
    if ((r = slurp(dir, "power/samples.csv", &text, &len, &er)) == 0) {
        CONVERT("nvidia_smi_power.csv",
                carma_nvsmi_write(text, len, "power/samples.csv", out, &er));
        free(text);
    } else if (r != -ENOENT && !first.code) {
        first = er;
    }
    if ((r = slurp(dir, "features.csv", &text, &len, &er)) == 0) {
        if (!isfinite(t0)) /* no samples.csv: the first row's time */
            t0 = strchr(text, '\n') ? strtod(strchr(text, '\n') + 1, NULL) : 0;
        CONVERT("perf.log",
                carma_perf_write(text, len, "features.csv", t0, names, starts, nw, out, &er));
        free(text);
    } else if (r != -ENOENT && !first.code) {
        first = er;
    }

    /* the workloads' CSVs */
    if (wl && (r = slurp(dir, "event_summaries.jsonl", &text, &len, &er)) == 0) {
        size_t i;
        const json_t *w;
        json_array_foreach(json_object_get(wl, "workloads"), i, w)
        {
            const char *wn = json_string_value(json_object_get(w, "name"));
            if (!wn || !*wn || strchr(wn, '/') || strcmp(wn, ".") == 0 || strcmp(wn, "..") == 0)
                continue;
            double emb = NAN;
            size_t q;
            const json_t *rw;
            json_array_foreach(json_object_get(rep, "workloads"), q, rw)
            {
                const char *rn = json_string_value(json_object_get(rw, "name"));
                if (rn && strcmp(rn, wn) == 0)
                    emb = jsonutil_get_num(rw, "embodied_g_co2e");
            }
            char rel[512];
            snprintf(rel, sizeof rel, "%s_power_carbon.csv", wn);
            CONVERT(rel, carma_job_write(text, len, "event_summaries.jsonl", wn,
                                         jsonutil_get_num(w, "start_unix"),
                                         jsonutil_get_num(w, "end_unix"), emb, out, &er));
        }
        free(text);
    } else if (wl && r != -ENOENT && !first.code) {
        first = er;
    }
    free(names);
    free(starts);
    json_decref(wl);
    json_decref(rep);
    if (first.code) {
        if (e)
            *e = first;
        return first.code;
    }
    return written;
}

/* ---- following a run as it goes ---- */

/* The most bytes of an input read by one carma_files_follow call. */
#define CARMA_FILES_FOLLOW_MAX ((size_t)64 << 20)
/* The most workloads given a CSV while following (the end of the run writes them all). */
#define CARMA_FILES_FOLLOW_JOBS 256

struct follow_in {
    const char *rel;
    off_t off;    /* bytes consumed */
    char *header; /* the first line, with its line end; NULL until read (CSV inputs) */
    size_t header_len;
};

struct follow_out {
    struct journal *j; /* NULL until it has something */
    long done;
};

struct follow_job {
    char *name;
    struct follow_out out;
};

struct carma_files {
    char *dir;
    struct follow_in in[4]; /* samples.csv, power/samples.csv, features.csv, events */
    struct follow_out watt, nvsmi, perf;
    char meter[256];
    double t0;
    bool perf_started;
    struct perf_state ps;
    struct follow_job *jobs;
    size_t njobs;
};

struct carma_files *carma_files_open(const char *dir)
{
    struct carma_files *cf = calloc(1, sizeof *cf);
    if (!cf || !(cf->dir = strdup(dir))) {
        free(cf);
        return NULL;
    }
    static const char *const rel[4] = {"samples.csv", "power/samples.csv", "features.csv",
                                       "event_summaries.jsonl"};
    for (int i = 0; i < 4; i++)
        cf->in[i].rel = rel[i];
    cf->t0 = NAN;
    return cf;
}

void carma_files_free(struct carma_files *cf)
{
    if (!cf)
        return;
    for (int i = 0; i < 4; i++)
        free(cf->in[i].header);
    struct follow_out *outs[3] = {&cf->watt, &cf->nvsmi, &cf->perf};
    for (int i = 0; i < 3; i++)
        journal_close(outs[i]->j);
    for (size_t i = 0; i < cf->njobs; i++) {
        journal_close(cf->jobs[i].out.j);
        free(cf->jobs[i].name);
    }
    free(cf->jobs);
    perf_state_done(&cf->ps);
    free(cf->dir);
    free(cf);
}

/*
 * The complete lines appended to in since the last call, after its header line (kept from
 * the first call, and put again in front, so that the text reads as a whole file): *ret
 * (malloc'd, NUL-terminated; NULL with 0 when nothing new). Returns 0 or a negative errno.
 */
static int follow_read(const char *dir, struct follow_in *in, bool csv, char **ret, size_t *len)
{
    *ret = NULL;
    *len = 0;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, in->rel);
    struct stat st;
    int fd = file_open_input(AT_FDCWD, path, &st);
    if (fd < 0)
        return fd == -ENOENT ? 0 : fd;
    int r = 0;
    if (st.st_size <= in->off)
        goto out;
    size_t want = (size_t)(st.st_size - in->off);
    if (want > CARMA_FILES_FOLLOW_MAX)
        want = CARMA_FILES_FOLLOW_MAX;
    size_t hl = in->header ? in->header_len : 0;
    char *buf = malloc(hl + want + 1);
    if (!buf) {
        r = -ENOMEM;
        goto out;
    }
    ssize_t n = pread(fd, buf + hl, want, in->off);
    if (n <= 0) {
        free(buf);
        r = n < 0 ? -errno : 0;
        goto out;
    }
    /* complete lines only */
    size_t got = (size_t)n;
    while (got && buf[hl + got - 1] != '\n')
        got--;
    if (!got) {
        free(buf);
        goto out;
    }
    in->off += (off_t)got;
    if (csv && !in->header) {
        char *nl = memchr(buf, '\n', got);
        in->header_len = (size_t)(nl - buf) + 1;
        in->header = strndup(buf, in->header_len);
        if (!in->header) {
            free(buf);
            r = -ENOMEM;
            goto out;
        }
    } else if (hl) {
        memcpy(buf, in->header, hl);
    }
    buf[hl + got] = '\0';
    *ret = buf;
    *len = hl + got;
out:
    close(fd);
    return r;
}

/* Appends what conv wrote into a memory stream to the followed output rel, whole lines or
 * nothing (core/journal: a full disk cuts a torn append off again). */
static int follow_put(const char *dir, const char *rel, struct follow_out *o, const char *buf,
                      size_t len)
{
    if (!len)
        return 0;
    if (!o->j) {
        char path[4400];
        struct carma_err e = {0};
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        o->j = journal_open(path, NULL, "lines", &e);
        if (!o->j)
            return e.code;
    }
    uint64_t lines = 0;
    for (const char *p = buf; (p = memchr(p, '\n', len - (size_t)(p - buf))); p++)
        lines++;
    return journal_append(o->j, buf, len, lines, -1, NULL);
}

/* Runs one converter on a memory stream, then appends its bytes to the output. */
#define FOLLOW(rel, o, call)                                                                       \
    do {                                                                                           \
        char *mb = NULL;                                                                           \
        size_t ml = 0;                                                                             \
        FILE *out = open_memstream(&mb, &ml);                                                      \
        int rr = out ? (call) : -ENOMEM;                                                           \
        if (out && fclose(out) != 0)                                                               \
            rr = -ENOMEM;                                                                          \
        if (rr >= 0 && (rr = follow_put(cf->dir, rel, o, mb, ml)) < 0)                             \
            carma_err_set(&er, rr, "%s/%s: cannot write: %s", cf->dir, rel, strerror(-rr));        \
        free(mb);                                                                                  \
        if (rr < 0 && !ret)                                                                        \
            ret = rr;                                                                              \
    } while (0)

int carma_files_follow(struct carma_files *cf, struct carma_err *e)
{
    int ret = 0;
    char *t;
    size_t n;
    struct carma_err er = {0};
    if (follow_read(cf->dir, &cf->in[0], true, &t, &n) == 0 && t) {
        if (!isfinite(cf->t0)) {
            const char *nl = strchr(t, '\n');
            if (nl && nl[1])
                cf->t0 = strtod(nl + 1, NULL);
        }
        FOLLOW("wattsup_log.csv", &cf->watt,
               wattsup_conv(t, n, "samples.csv", cf->meter, &cf->watt.done, out, &er));
        free(t);
    }
    if (follow_read(cf->dir, &cf->in[1], true, &t, &n) == 0 && t) {
        FOLLOW("nvidia_smi_power.csv", &cf->nvsmi,
               nvsmi_conv(t, n, "power/samples.csv", &cf->nvsmi.done, out, &er));
        free(t);
    }
    if (isfinite(cf->t0) && follow_read(cf->dir, &cf->in[2], true, &t, &n) == 0 && t) {
        if (!cf->perf_started) {
            perf_state_init(&cf->ps, cf->t0);
            cf->perf_started = true;
        }
        FOLLOW("perf.log", &cf->perf,
               perf_conv(t, n, "features.csv", cf->t0, NULL, NULL, 0, &cf->ps, out, &er));
        free(t);
    }
    if (follow_read(cf->dir, &cf->in[3], false, &t, &n) == 0 && t) {
        /* the workloads named in these summaries, each given its CSV */
        for (const char *p = t; p && *p;) {
            const char *nl = strchr(p, '\n');
            json_error_t je;
            json_t *ev = json_loadb(p, nl ? (size_t)(nl - p) : strlen(p), 0, &je);
            size_t i;
            const json_t *w;
            json_array_foreach(json_object_get(ev, "workloads"), i, w)
            {
                const char *wn = json_string_value(json_object_get(w, "name"));
                bool known = false;
                for (size_t k = 0; wn && k < cf->njobs && !known; k++)
                    known = strcmp(cf->jobs[k].name, wn) == 0;
                if (!wn || known || !*wn || strchr(wn, '/') || strcmp(wn, ".") == 0 ||
                    strcmp(wn, "..") == 0 || cf->njobs == CARMA_FILES_FOLLOW_JOBS)
                    continue;
                struct follow_job *v = realloc(cf->jobs, (cf->njobs + 1) * sizeof *v);
                if (!v)
                    break;
                cf->jobs = v;
                memset(&v[cf->njobs], 0, sizeof v[cf->njobs]);
                if ((v[cf->njobs].name = strdup(wn)))
                    cf->njobs++;
            }
            json_decref(ev);
            p = nl ? nl + 1 : NULL;
        }
        for (size_t k = 0; k < cf->njobs; k++) {
            char rel[512];
            snprintf(rel, sizeof rel, "%s_power_carbon.csv", cf->jobs[k].name);
            FOLLOW(rel, &cf->jobs[k].out,
                   job_conv(t, n, "event_summaries.jsonl", cf->jobs[k].name, NAN, NAN, NAN,
                            &cf->jobs[k].out.done, out, &er));
        }
        free(t);
    }
    if (ret < 0 && e)
        *e = er;
    return ret;
}
