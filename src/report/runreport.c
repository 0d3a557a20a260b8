/*
 * runreport: `carma report DIR` for a run directory carma wrote itself (`carma run -o DIR`,
 * `carma stat -o DIR`). It reads the directory's files (docs/formats.md), cuts them into
 * windows (the whole run, then each workload's lifetime) and gives, per window, each channel's
 * energy and power statistics (series.h), the node's, the attributed energy of each job, the
 * carbon and the GPU utilization, as a JSON array and as text (docs/report.md, "carma run
 * directories").
 *
 * Everything is read once into memory as series (16 bytes a sample); CSV files are streamed a
 * line at a time, so a long run costs its samples, not its text. Nothing here prints or exits:
 * errors are a negative errno with the detail ("FILE:LINE: field: problem") in a carma_err;
 * problems that only touch one window (no samples over it) are warnings inside that window.
 */
#include "report/runreport.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "analysis/carbon.h"
#include "core/file.h"
#include "core/fmt.h"
#include "core/jsonutil.h"
#include "core/parse.h"
#include "core/pyjson.h"
#include "analysis/series.h"
#include "rundir/rundir.h"

/* Limits on what the files may hold (a run directory comes from a user). */
#define RR_NAME_MAX    RUNDIR_NAME_MAX /* a channel or job name */
#define RR_CHANNEL_MAX 1024            /* channels of samples.csv */
#define RR_JOBS_MAX    4096            /* jobs named in workloads.json and attribution.csv */

/* The "job" values of attribution.csv that are not workloads. */
enum { RR_IDLE = -1, RR_OTHER = -2, RR_UNATTR = -3 };

struct rr_chan {
    char name[RR_NAME_MAX];
    char kind[32], domain[32], method[32];
    struct series w;   /* watts */
    struct series cum; /* joules_total */
    bool node;         /* added into the node's energy */
};

struct rr_job {
    char name[RR_NAME_MAX];
    bool workload;          /* named in workloads.json (else only in attribution.csv) */
    double start, end;      /* NAN when unknown */
    bool end_missing;       /* workloads.json had no end_unix (null or absent) */
    double embodied_g;      /* from report.json, NAN when unknown */
    char type[RR_NAME_MAX]; /* workloads.json's "type" (the experiment's kind); "" when none */
};

struct rr_attr {
    double t, t_prev; /* the split period (t_prev, t] the energy belongs to */
    size_t ch;
    int job; /* index into jobs, or RR_IDLE / RR_OTHER / RR_UNATTR */
    double j;
};

static const char *const util_cols[2] = {"gpu_util_pct", "mem_util_pct"};

struct rr_gpu {
    long long index;
    struct series col[2]; /* gpu_util_pct, mem_util_pct */
};

/* How far a workload's or a mark's edge may lie outside the run's ticks and still be one of
 * them: a clock read to the µs beside a tick's (build_window). */
#define RR_EDGE_SLACK_S 1e-3

struct rr {
    const char *dir;
    enum series_edges edges;
    bool is_run;
    json_t *manifest, *report, *summary;
    double interval_s;
    struct series_opts sopts;
    /* samples.csv */
    struct rr_chan *ch;
    size_t nch;
    double *ticks; /* distinct tick times, in order */
    size_t nticks, cap_ticks;
    json_t *node_names; /* borrowed from report.json / summary.json, or NULL */
    size_t nnode_listed;
    struct series node_w;   /* per tick: the sum of the node channels' watts */
    struct series node_cum; /* per tick: the sum of their joules_total */
    /* the run */
    double run_start, run_end;
    json_t *run_warn;
    /* workloads.json, attribution.csv */
    struct rr_job *jobs;
    size_t njobs;
    bool have_attr;
    struct rr_attr *attr;
    size_t nattr, cap_attr;
    double max_period;
    /* utilization.csv */
    struct rr_gpu *gpu;
    size_t ngpu;
    /* marks.csv */
    struct rundir_mark *marks;
    size_t nmarks;
    /* carbon */
    double g_per_kwh, pue;
    const char *ci_source; /* borrowed from report/summary json */
    struct series_scratch sc;
    struct carma_err *e; /* where a window's sum that overflowed is said (-ERANGE) */
};

/* A sum of a window that is no longer finite (rows within their bounds never give one): the
 * report's error, never a null or a key left out of its JSON. 0 or -ERANGE (rr->e set). */
static int rr_sum(struct rr *rr, double sum, const char *file, const char *what, const char *name)
{
    if (!isinf(sum))
        return 0;
    char w[600];
    snprintf(w, sizeof w, "%s/%s: %s%s%.256s", rr->dir, file, what, name ? " of " : "",
             name ? name : "");
    return rundir_sum_check(sum, w, rr->e);
}

/* ---- small helpers ---- */

static void warn(json_t *arr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(json_t *arr, const char *fmt, ...)
{
    char buf[CARMA_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(arr, json_string(buf));
}

static bool file_exists(const char *dir, const char *name)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* ---- streaming CSV lines (rundir.h: the run directory's one line reader and row rules) ---- */

static int lines_open(struct rundir_lines *l, const char *dir, const char *name,
                      struct carma_err *e)
{
    return rundir_lines_open(l, dir, name, 0, 0, e);
}

/* Closes l; a torn last line it skipped is one warning of the run. */
static void lines_done(struct rr *rr, struct rundir_lines *l)
{
    if (l->torn) {
        char msg[4400];
        rundir_torn_warning(l, msg, sizeof msg);
        warn(rr->run_warn, "%s", msg);
    }
    rundir_lines_close(l);
}

/* ---- samples.csv ---- */

static bool node_listed(const struct rr *rr, const char *name, const char *domain)
{
    if (!rr->node_names)
        return strcmp(domain, "total") == 0;
    size_t k;
    json_t *v;
    json_array_foreach(rr->node_names, k, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

static long find_chan(const struct rr *rr, const char *name, size_t hint)
{
    if (hint < rr->nch && strcmp(rr->ch[hint].name, name) == 0)
        return (long)hint;
    for (size_t k = 0; k < rr->nch; k++)
        if (strcmp(rr->ch[k].name, name) == 0)
            return (long)k;
    return -1;
}

static int add_tick(struct rr *rr, double t)
{
    if (rr->nticks == rr->cap_ticks) {
        size_t cap = rr->cap_ticks ? rr->cap_ticks * 2 : 1024;
        double *v = realloc(rr->ticks, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        rr->ticks = v;
        rr->cap_ticks = cap;
    }
    rr->ticks[rr->nticks++] = t;
    return 0;
}

/* The tick just read, summed over the node channels: power and cumulative energy, each
 * when every node channel had that number at the tick. */
struct tick_acc {
    double t, w, cum;
    size_t nw, ncum;
};

static int flush_tick(struct rr *rr, const struct tick_acc *a)
{
    size_t want = 0;
    for (size_t k = 0; k < rr->nch; k++)
        want += rr->ch[k].node;
    if (want == 0 || want < rr->nnode_listed)
        return 0;
    int r = 0;
    if (a->nw == want)
        r = series_append(&rr->node_w, a->t, a->w);
    if (r == 0 && a->ncum == want)
        r = series_append(&rr->node_cum, a->t, a->cum);
    return r;
}

static int load_samples(struct rr *rr, struct carma_err *e)
{
    struct rundir_lines l;
    int r = lines_open(&l, rr->dir, "samples.csv", e);
    if (r < 0)
        return r;
    struct rundir_samples rs;
    r = rundir_samples_header(&rs, &l, e);
    struct tick_acc acc = {0};
    size_t hint = 0;
    while (r == 0 && (r = rundir_lines_next(&l, e)) == 1) {
        struct rundir_sample row;
        if ((r = rundir_samples_row(&rs, &l, &row, e)) < 0)
            break;
        double t = row.t, w = row.w, j = row.j;
        bool wb = isnan(w), jb = isnan(j);
        if (!rr->nticks || t != rr->ticks[rr->nticks - 1]) {
            if (rr->nticks && (r = flush_tick(rr, &acc)) < 0)
                break;
            if ((r = add_tick(rr, t)) < 0)
                break;
            acc = (struct tick_acc){.t = t};
        }
        long c = find_chan(rr, row.channel, hint);
        if (c < 0) {
            if (rr->nch == RR_CHANNEL_MAX) {
                r = carma_err_set(e, -EINVAL, "%s:%zu: more than %d channels", l.path, l.line,
                                  RR_CHANNEL_MAX);
                break;
            }
            struct rr_chan *v = realloc(rr->ch, (rr->nch + 1) * sizeof *v);
            if (!v) {
                r = -ENOMEM;
                break;
            }
            rr->ch = v;
            struct rr_chan *ch = &rr->ch[rr->nch];
            memset(ch, 0, sizeof *ch);
            series_init(&ch->w);
            series_init(&ch->cum);
            rr->nch++;
            snprintf(ch->name, sizeof ch->name, "%s", row.channel);
            snprintf(ch->kind, sizeof ch->kind, "%s", row.kind);
            snprintf(ch->domain, sizeof ch->domain, "%s", row.domain);
            snprintf(ch->method, sizeof ch->method, "%s", row.method);
            ch->node = node_listed(rr, ch->name, ch->domain);
            c = (long)(rr->nch - 1);
        }
        hint = (size_t)c + 1;
        struct rr_chan *ch = &rr->ch[c];
        if (!wb && (r = series_append(&ch->w, t, w)) < 0)
            break;
        if (!jb && (r = series_append(&ch->cum, t, j)) < 0)
            break;
        if (!wb && ch->node) {
            acc.w += w;
            acc.nw++;
        }
        if (!jb && ch->node) {
            acc.cum += j;
            acc.ncum++;
        }
        if (!isfinite(acc.w) || !isfinite(acc.cum)) {
            r = carma_err_set(e, -ERANGE,
                              "%s:%zu: %s: the node channels' sum at this tick overflows a double "
                              "(no power or energy is that large)",
                              l.path, l.line, isfinite(acc.w) ? "joules_total" : "watts");
            break;
        }
    }
    if (r == -ENOMEM)
        carma_err_set(e, r, "out of memory");
    if (r == 0 && rr->nticks)
        r = flush_tick(rr, &acc);
    if (r == 0 && !rr->nticks)
        r = carma_err_set(e, -EINVAL, "%s: no samples", l.path);
    lines_done(rr, &l);
    return r < 0 ? r : 0;
}

/* ---- workloads.json ---- */

static long find_job(const struct rr *rr, const char *name)
{
    for (size_t k = 0; k < rr->njobs; k++)
        if (strcmp(rr->jobs[k].name, name) == 0)
            return (long)k;
    return -1;
}

static int add_job(struct rr *rr, const char *name, bool workload)
{
    if (rr->njobs == RR_JOBS_MAX)
        return -E2BIG;
    struct rr_job *v = realloc(rr->jobs, (rr->njobs + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    rr->jobs = v;
    struct rr_job *j = &rr->jobs[rr->njobs++];
    memset(j, 0, sizeof *j);
    snprintf(j->name, sizeof j->name, "%s", name);
    j->workload = workload;
    j->start = j->end = j->embodied_g = NAN;
    return 0;
}

/* A time of workloads.json: a number, or null/absent (NAN). Anything else is an error. */
static int wl_time(const json_t *w, const char *key, const char *path, size_t k, double *ret,
                   bool *missing, struct carma_err *e)
{
    const json_t *v = json_object_get(w, key);
    *missing = !v || json_is_null(v);
    *ret = NAN;
    if (*missing)
        return 0;
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return carma_err_set(e, -EINVAL, "%s: workloads[%zu].%s: not a number", path, k, key);
    *ret = json_number_value(v);
    return 0;
}

static int load_workloads(struct rr *rr, struct carma_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/workloads.json", rr->dir);
    json_t *root = rundir_read_json(rr->dir, "workloads.json", NULL, e);
    if (!root)
        return e->code;
    int r = 0;
    const json_t *arr = json_object_get(root, "workloads");
    if (!json_is_array(arr)) {
        r = carma_err_set(e, -EINVAL, "%s: no \"workloads\" array", path);
        goto out;
    }
    size_t k;
    const json_t *w;
    json_array_foreach(arr, k, w)
    {
        const char *name = json_string_value(json_object_get(w, "name"));
        if (!name || !*name || strlen(name) >= RR_NAME_MAX) {
            r = carma_err_set(e, -EINVAL, "%s: workloads[%zu].name: not a name", path, k);
            goto out;
        }
        if (find_job(rr, name) >= 0) {
            r = carma_err_set(e, -EINVAL, "%s: workloads[%zu].name: '%s' named twice", path, k,
                              name);
            goto out;
        }
        if ((r = add_job(rr, name, true)) < 0) {
            carma_err_set(e, r, "%s: %s", path,
                          r == -E2BIG ? "too many workloads" : "out of memory");
            goto out;
        }
        struct rr_job *j = &rr->jobs[rr->njobs - 1];
        const char *type = json_string_value(json_object_get(w, "type"));
        if (type)
            snprintf(j->type, sizeof j->type, "%s", type);
        bool miss;
        if ((r = wl_time(w, "start_unix", path, k, &j->start, &miss, e)) < 0 ||
            (r = wl_time(w, "end_unix", path, k, &j->end, &j->end_missing, e)) < 0)
            goto out;
    }
out:
    json_decref(root);
    return r;
}

/* ---- attribution.csv ---- */

static int load_attribution(struct rr *rr, struct carma_err *e)
{
    struct rundir_lines l;
    int r = lines_open(&l, rr->dir, "attribution.csv", e);
    if (r < 0)
        return r;
    struct rundir_attr ra;
    r = rundir_attr_header(&ra, rr->nticks ? rr->ticks[0] : NAN, &l, e);
    /* per channel: the time of its current split and of the one before */
    double *cur = malloc((rr->nch ? rr->nch : 1) * sizeof *cur);
    double *prev = malloc((rr->nch ? rr->nch : 1) * sizeof *prev);
    if (!cur || !prev)
        r = carma_err_set(e, -ENOMEM, "out of memory");
    for (size_t k = 0; r == 0 && k < rr->nch; k++)
        cur[k] = prev[k] = NAN;
    size_t hint = 0;
    while (r == 0 && (r = rundir_lines_next(&l, e)) == 1) {
        struct rundir_attr_row row;
        if ((r = rundir_attr_row(&ra, &l, &row, e)) < 0)
            break;
        double t = row.t, j = row.j;
        long c = find_chan(rr, row.channel, hint);
        if (c < 0) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: channel '%.100s' is not in samples.csv", l.path,
                              l.line, row.channel);
            break;
        }
        hint = (size_t)c;
        const char *job = row.job;
        int ji;
        if (strcmp(job, "idle") == 0) {
            ji = RR_IDLE;
        } else if (strcmp(job, "other") == 0) {
            ji = RR_OTHER;
        } else if (strcmp(job, "unattributed") == 0) {
            ji = RR_UNATTR;
        } else {
            long f = find_job(rr, job);
            if (f < 0) {
                if ((r = add_job(rr, job, false)) < 0) {
                    carma_err_set(e, r, "%s:%zu: %s", l.path, l.line,
                                  r == -E2BIG ? "too many jobs" : "out of memory");
                    break;
                }
                f = (long)rr->njobs - 1;
            }
            ji = (int)f;
        }
        if (!(t == cur[c])) {
            prev[c] = isnan(cur[c]) ? rr->run_start : cur[c];
            cur[c] = t;
        }
        if (rr->nattr == rr->cap_attr) {
            size_t cap = rr->cap_attr ? rr->cap_attr * 2 : 1024;
            struct rr_attr *v = realloc(rr->attr, cap * sizeof *v);
            if (!v) {
                r = carma_err_set(e, -ENOMEM, "out of memory");
                break;
            }
            rr->attr = v;
            rr->cap_attr = cap;
        }
        /* a split before the run's start (not written by carma) counts at its instant */
        double tp = prev[c] < t ? prev[c] : t;
        rr->attr[rr->nattr++] =
            (struct rr_attr){.t = t, .t_prev = tp, .ch = (size_t)c, .job = ji, .j = j};
        if (t - tp > rr->max_period)
            rr->max_period = t - tp;
    }
    free(cur);
    free(prev);
    lines_done(rr, &l);
    return r < 0 ? r : 0;
}

/* ---- marks.csv ---- */

static int load_marks(struct rr *rr, struct carma_err *e)
{
    char torn[4400];
    int r = rundir_marks_load(rr->dir, &rr->marks, &rr->nmarks, torn, sizeof torn, e);
    if (r == 0 && torn[0])
        warn(rr->run_warn, "%s", torn);
    return r;
}

/* ---- utilization.csv ---- */

static int load_utilization(struct rr *rr, struct carma_err *e)
{
    struct rundir_lines l;
    int r = lines_open(&l, rr->dir, "utilization.csv", e);
    if (r < 0)
        return r;
    struct rundir_gpu rg;
    r = rundir_gpu_header(&rg, &l, e);
    while (r == 0 && (r = rundir_lines_next(&l, e)) == 1) {
        struct rundir_gpu_row row;
        if ((r = rundir_gpu_row(&rg, &l, &row, e)) < 0)
            break;
        if (row.pid)
            continue; /* a process row: no device utilization */
        double t = row.t;
        long long gi = row.gpu;
        size_t g = 0;
        while (g < rr->ngpu && rr->gpu[g].index != gi)
            g++;
        if (g == rr->ngpu) {
            struct rr_gpu *v = realloc(rr->gpu, (rr->ngpu + 1) * sizeof *v);
            if (!v) {
                r = carma_err_set(e, -ENOMEM, "out of memory");
                break;
            }
            rr->gpu = v;
            rr->gpu[g].index = gi;
            series_init(&rr->gpu[g].col[0]);
            series_init(&rr->gpu[g].col[1]);
            rr->ngpu++;
        }
        const double col[2] = {row.util_pct, row.mem_pct};
        for (int c = 0; c < 2; c++) {
            if (!isnan(col[c]) && (r = series_append(&rr->gpu[g].col[c], t, col[c])) < 0) {
                carma_err_set(e, r, "out of memory");
                break;
            }
        }
    }
    lines_done(rr, &l);
    if (r < 0)
        return r;
    /* GPUs by index; each column by time (rows are written in time order, but be sure) */
    for (size_t a = 1; a < rr->ngpu; a++)
        for (size_t b = a; b > 0 && rr->gpu[b - 1].index > rr->gpu[b].index; b--) {
            struct rr_gpu tmp = rr->gpu[b];
            rr->gpu[b] = rr->gpu[b - 1];
            rr->gpu[b - 1] = tmp;
        }
    for (size_t g = 0; g < rr->ngpu; g++)
        for (int c = 0; c < 2; c++)
            series_sort(&rr->gpu[g].col[c]);
    return 0;
}

/* ---- the run window ---- */

/* The index of the tick nearest to t (ties to the earlier one). */
static size_t nearest_tick(const struct rr *rr, double t)
{
    size_t lo = series_lower_bound(rr->ticks, rr->nticks, t);
    if (lo == 0)
        return 0;
    if (lo == rr->nticks)
        return rr->nticks - 1;
    return t - rr->ticks[lo - 1] <= rr->ticks[lo] - t ? lo - 1 : lo;
}

/* t moved onto the nearest tick when one is within tol seconds. */
static double onto_tick(const struct rr *rr, double t, double tol)
{
    double k = rr->ticks[nearest_tick(rr, t)];
    return fabs(k - t) <= tol ? k : t;
}

static void find_run_window(struct rr *rr)
{
    double first = rr->ticks[0], last = rr->ticks[rr->nticks - 1];
    rr->run_start = first;
    rr->run_end = last;
    if (!rr->is_run) {
        /* summary.json: start_unix (the tick opening the window) .. end_unix (the last
         * tick), printed from the same clock readings with µs rounding */
        double s = jsonutil_get_num(rr->summary, "start_unix"),
               t = jsonutil_get_num(rr->summary, "end_unix");
        if (isfinite(s) && isfinite(t) && t > s) {
            rr->run_start = onto_tick(rr, s, 1e-5);
            rr->run_end = onto_tick(rr, t, 1e-5);
        } else {
            warn(rr->run_warn, "summary.json has no window (start_unix, end_unix): the window "
                               "is the whole of samples.csv, baseline included");
        }
        return;
    }
    /* carma run: the last tick ends the run; report.json's duration_s (monotonic clock)
     * reaches back to the tick that ended the baseline. A samples.csv cut short (a full disk)
     * ends before the run did: report.json's end_unix (its last tick's time) says when. */
    double end = jsonutil_get_num(rr->report, "end_unix");
    if (isfinite(end) && end > last + rr->interval_s / 2) {
        warn(rr->run_warn,
             "samples.csv ends at %.6f, %.3f s before the run did (report.json's end_unix): "
             "its ticks after that are missing",
             last, end - last);
        last = rr->run_end = end;
    }
    double d = jsonutil_get_num(rr->report, "duration_s");
    if (isfinite(d) && d >= 0) {
        double want = last - d;
        double k = onto_tick(rr, want, rr->interval_s / 2);
        if (k == want && rr->ticks[nearest_tick(rr, want)] != want)
            warn(rr->run_warn,
                 "no tick of samples.csv at the run's start (last tick - duration_s = %.6f): "
                 "the window starts there",
                 want);
        rr->run_start = k;
        return;
    }
    /* no report.json (a killed run): the tick at or before the first workload's start */
    double s0 = INFINITY;
    for (size_t k = 0; k < rr->njobs; k++)
        if (rr->jobs[k].workload && rr->jobs[k].start < s0)
            s0 = rr->jobs[k].start;
    if (isfinite(s0)) {
        size_t k = nearest_tick(rr, s0);
        if (rr->ticks[k] > s0 && k > 0)
            k--;
        rr->run_start = rr->ticks[k];
        warn(rr->run_warn, "report.json has no duration_s: the run's window starts at the tick "
                           "before the first workload started");
    } else {
        warn(rr->run_warn, "report.json has no duration_s and no workload started: the window "
                           "is the whole of samples.csv, baseline included");
    }
}

/* ---- one window ---- */

/* A B row: label, the window's figures (NULL: unknown), then kind/domain/method. */
static json_t *brow(const char *label, const struct series_window *w, const char *kind,
                    const char *domain, const char *method)
{
    json_t *o = json_object();
    json_object_set_new(o, "label", json_string(label));
    json_object_set_new(o, "joules", jsonutil_real(w ? w->joules : NAN));
    json_object_set_new(o, "avg_power_w", jsonutil_real(w ? w->avg_power_w : NAN));
    json_object_set_new(o, "sample_start_unix", jsonutil_real(w ? w->sample_start_unix : NAN));
    json_object_set_new(o, "sample_end_unix", jsonutil_real(w ? w->sample_end_unix : NAN));
    json_object_set_new(o, "samples", w ? json_integer((json_int_t)w->samples) : json_null());
    bool st = w && w->stat_n > 0;
    json_object_set_new(o, "mean_w", jsonutil_real(st ? w->mean_w : NAN));
    json_object_set_new(o, "min_w", jsonutil_real(st ? w->min_w : NAN));
    json_object_set_new(o, "p5_w", jsonutil_real(st ? w->p5_w : NAN));
    json_object_set_new(o, "p50_w", jsonutil_real(st ? w->p50_w : NAN));
    json_object_set_new(o, "p95_w", jsonutil_real(st ? w->p95_w : NAN));
    json_object_set_new(o, "p99_w", jsonutil_real(st ? w->p99_w : NAN));
    json_object_set_new(o, "max_w", jsonutil_real(st ? w->max_w : NAN));
    json_object_set_new(o, "kind", jsonutil_str(kind));
    json_object_set_new(o, "domain", jsonutil_str(domain));
    json_object_set_new(o, "method", jsonutil_str(method));
    return o;
}

/* One channel's (or the node's) figures over [a, b] by the chosen edges. Returns 0, or a
 * negative errno with e's message for the window's warnings. */
static int chan_window(struct rr *rr, const struct series *watts, const struct series *cum,
                       const char *label, double a, double b, struct series_window *ret,
                       struct carma_err *e)
{
    if (rr->edges == SERIES_EDGES_SNAP)
        return series_window_snap(watts, a, b, label, &rr->sc, ret, e);
    if (cum->n || !watts->n)
        return series_window_counter(cum, a, b, &rr->sopts, label, &rr->sc, ret, e);
    return series_window_interpolate(watts, a, b, &rr->sopts, label, &rr->sc, ret, e);
}

static const char *node_method(const struct rr *rr)
{
    bool meas = false, est = false;
    for (size_t k = 0; k < rr->nch; k++) {
        if (!rr->ch[k].node)
            continue;
        meas = meas || strcmp(rr->ch[k].method, "measured") == 0;
        est = est || strcmp(rr->ch[k].method, "estimated") == 0;
    }
    return meas && est ? "measured+estimated" : meas ? "measured" : est ? "estimated" : NULL;
}

/* per_channel and per_node of [a, b]; returns the node's energy (NAN when unknown). */
static double energy_part(struct rr *rr, json_t *win, double a, double b, json_t *warns, int *err)
{
    json_t *pc = json_array();
    double node_j = 0;
    size_t node_known = 0, node_n = 0;
    for (size_t k = 0; k < rr->nch; k++) {
        struct rr_chan *ch = &rr->ch[k];
        struct series_window w;
        struct carma_err e = {0};
        int r = chan_window(rr, &ch->w, &ch->cum, ch->name, a, b, &w, &e);
        if (r == 0 && w.resets)
            warn(warns, "%s: %zu counter resets skipped in the window", ch->name, w.resets);
        if (r < 0)
            warn(warns, "%s", e.msg);
        json_array_append_new(pc,
                              brow(ch->name, r == 0 ? &w : NULL, ch->kind, ch->domain, ch->method));
        if (ch->node) {
            node_n++;
            if (r == 0) {
                node_known++;
                node_j += w.joules;
            }
        }
        if (r == 0 && !*err)
            *err = rr_sum(rr, w.joules, "samples.csv", "the energy", ch->name);
    }
    json_object_set_new(win, "per_channel", pc);
    /* the node: energy as the sum of its channels (a partial sum would understate it), power
     * statistics over the per-tick sums */
    if (node_n < rr->nnode_listed)
        warn(warns, "node: %zu of the %zu node channels named by %s are not in samples.csv",
             rr->nnode_listed - node_n, rr->nnode_listed,
             rr->is_run ? "report.json" : "summary.json");
    bool known = node_n > 0 && node_known == node_n && node_n >= rr->nnode_listed;
    if (!known)
        node_j = NAN;
    struct series_window nw;
    struct carma_err e = {0};
    int r = node_n ? chan_window(rr, &rr->node_w, &rr->node_cum, "node", a, b, &nw, &e) : -ENODATA;
    if (rr->edges == SERIES_EDGES_SNAP) {
        /* srt-slurm's node row: the per-tick sums integrated as they are */
        node_j = r == 0 ? nw.joules : NAN;
    } else if (r == 0) {
        nw.joules = node_j;
        nw.avg_power_w = b > a ? node_j / (b - a) : 0.0;
    }
    if (r < 0 && node_n)
        warn(warns, "%s", e.msg);
    json_t *pn = json_array();
    if (node_n) {
        struct series_window only = {0};
        only.joules = node_j;
        only.avg_power_w = b > a ? node_j / (b - a) : 0.0;
        only.sample_start_unix = only.sample_end_unix = NAN;
        json_t *row = brow("node",
                           r == 0  ? &nw
                           : known ? &only
                                   : NULL,
                           NULL, "total", node_method(rr));
        if (r < 0)
            json_object_set_new(row, "samples", json_null());
        json_array_append_new(pn, row);
    }
    json_object_set_new(win, "per_node", pn);
    if (!*err)
        *err = rr_sum(rr, node_j, "samples.csv", "the node's energy", NULL);
    json_object_set_new(win, "node_total_joules", jsonutil_real(node_j));
    return node_j;
}

/*
 * The part of a row's energy that falls inside [a, b], 0..1: the energy is spread evenly over
 * the row's split period (t_prev, t], or for a workload's row over the part of that period
 * when the workload was alive (its start_unix..end_unix), where its energy must have been.
 */
static double attr_fraction(const struct rr *rr, const struct rr_attr *x, double a, double b,
                            bool lifetime)
{
    double p0 = x->t_prev, p1 = x->t;
    if (x->job >= 0 && lifetime) {
        const struct rr_job *j = &rr->jobs[x->job];
        double l0 = j->start > p0 ? j->start : p0, l1 = j->end < p1 ? j->end : p1;
        if (l1 > l0) {
            p0 = l0;
            p1 = l1;
        }
    }
    if (!(p1 > p0))
        return p1 >= a && p1 <= b ? 1.0 : 0.0;
    double lo = p0 > a ? p0 : a, hi = p1 < b ? p1 : b;
    if (hi <= lo)
        return 0.0;
    return hi >= p1 && lo <= p0 ? 1.0 : (hi - lo) / (p1 - p0);
}

static int attribution_part(struct rr *rr, json_t *win, double a, double b, json_t *warns)
{
    json_t *jobs = json_array();
    if (!rr->have_attr) {
        json_object_set_new(win, "jobs", jobs);
        json_object_set_new(win, "idle_joules", json_null());
        json_object_set_new(win, "other_joules", json_null());
        json_object_set_new(win, "unattributed_joules", json_null());
        return 0;
    }
    size_t nj = rr->njobs, nc = rr->nch;
    double *by = calloc((nj ? nj : 1) * (nc ? nc : 1), sizeof *by);
    bool *seen = calloc((nj ? nj : 1) * (nc ? nc : 1), sizeof *seen);
    double *tot = calloc(nj ? nj : 1, sizeof *tot);
    if (!by || !seen || !tot) {
        free(by);
        free(seen);
        free(tot);
        json_decref(jobs);
        return -ENOMEM;
    }
    double rest[3] = {0, 0, 0}; /* idle, other, unattributed */
    /* one split period's rows (the same t) at a time, per channel: its energy in the window
     * (spread evenly, as the samples' is), the jobs' part (spread over their lifetimes), and
     * the rest's, which gets what the jobs leave, so that the parts add up to the node */
    double *tin = calloc(nc ? nc : 1, sizeof *tin), *jin = calloc(nc ? nc : 1, sizeof *jin);
    double(*rin)[3] = calloc(nc ? nc : 1, sizeof *rin);
    if (!tin || !jin || !rin) {
        free(tin);
        free(jin);
        free(rin);
        free(by);
        free(seen);
        free(tot);
        json_decref(jobs);
        return -ENOMEM;
    }
    /* rows are in time order: start at the first that ends after a, stop when every later
     * period starts at or after b */
    size_t lo = 0, hi = rr->nattr;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rr->attr[mid].t <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    double group_t = NAN;
    for (size_t k = lo;; k++) {
        const struct rr_attr *x = k < rr->nattr ? &rr->attr[k] : NULL;
        if (x && x->t - rr->max_period > b)
            x = NULL;
        if (!x || x->t != group_t) { /* the period's rows are all read: the rest's part */
            for (size_t c = 0; c < nc; c++) {
                double r3 = rin[c][0] + rin[c][1] + rin[c][2], want = tin[c] - jin[c];
                double scale = r3 > 0 && want >= 0 ? want / r3 : 1.0;
                for (int q = 0; q < 3; q++)
                    rest[q] += rin[c][q] * scale;
                tin[c] = jin[c] = rin[c][0] = rin[c][1] = rin[c][2] = 0;
            }
            if (!x)
                break;
            group_t = x->t;
        }
        if (!rr->ch[x->ch].node && x->job < 0)
            continue;
        double fu = attr_fraction(rr, x, a, b, false);
        double f = x->job >= 0 ? attr_fraction(rr, x, a, b, true) : fu;
        bool node = rr->ch[x->ch].node;
        if (node)
            tin[x->ch] += x->j * fu;
        if (f <= 0)
            continue;
        double j = x->j * f;
        if (x->job >= 0) {
            by[(size_t)x->job * nc + x->ch] += j;
            seen[(size_t)x->job * nc + x->ch] = true;
            if (node) {
                tot[x->job] += j;
                jin[x->ch] += j;
            }
        } else {
            rin[x->ch][-x->job - 1] += j;
        }
    }
    free(tin);
    free(jin);
    free(rin);
    double all = rest[0] + rest[1] + rest[2];
    for (size_t k = 0; k < nj; k++)
        all += tot[k];
    int r =
        rr_sum(rr, isnan(all) ? INFINITY : all, "attribution.csv", "the attributed energy", NULL);
    for (size_t k = 0; r == 0 && k < nj * nc; k++)
        r = rr_sum(rr, by[k], "attribution.csv", "the energy", rr->jobs[k / nc].name);
    if (r < 0) {
        free(by);
        free(seen);
        free(tot);
        json_decref(jobs);
        return r;
    }
    for (size_t k = 0; k < nj; k++) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(rr->jobs[k].name));
        json_object_set_new(o, "joules", json_real(tot[k]));
        json_object_set_new(o, "share", all > 0 ? json_real(tot[k] / all) : json_null());
        json_t *bc = json_object();
        for (size_t c = 0; c < nc; c++)
            if (seen[k * nc + c])
                json_object_set_new(bc, rr->ch[c].name, json_real(by[k * nc + c]));
        json_object_set_new(o, "by_channel", bc);
        json_array_append_new(jobs, o);
    }
    json_object_set_new(win, "jobs", jobs);
    json_object_set_new(win, "idle_joules", json_real(rest[0]));
    json_object_set_new(win, "other_joules", json_real(rest[1]));
    json_object_set_new(win, "unattributed_joules", json_real(rest[2]));
    (void)warns;
    free(by);
    free(seen);
    free(tot);
    return 0;
}

static int carbon_part(struct rr *rr, json_t *win, double node_j, double embodied_g)
{
    double op = carbon_operational_g(node_j, rr->pue, rr->g_per_kwh);
    int r = rr_sum(rr, op, rr->is_run ? "report.json" : "summary.json",
                   "carbon: the operational CO2e (energy x pue x g_per_kwh)", NULL);
    if (r < 0)
        return r;
    json_t *c = json_object();
    json_object_set_new(c, "g_per_kwh", jsonutil_real(rr->g_per_kwh));
    json_object_set_new(c, "pue", jsonutil_real(rr->pue));
    json_object_set_new(c, "intensity_source",
                        rr->ci_source ? json_string(rr->ci_source) : json_null());
    json_object_set_new(c, "operational_g_co2e", jsonutil_real(op));
    json_object_set_new(c, "embodied_g_co2e", jsonutil_real(embodied_g));
    json_object_set_new(win, "carbon", c);
    return 0;
}

static int utilization_part(struct rr *rr, json_t *win, double a, double b, json_t *warns)
{
    json_t *arr = json_array();
    for (size_t g = 0; g < rr->ngpu; g++) {
        char label[64];
        snprintf(label, sizeof label, "nvml/gpu%lld", rr->gpu[g].index);
        for (int c = 0; c < 2; c++) {
            const struct series *s = &rr->gpu[g].col[c];
            size_t i = 0;
            while (i < s->n && s->t[i] < a)
                i++;
            size_t k = i;
            double mx = -INFINITY;
            while (k < s->n && s->t[k] <= b) {
                if (s->w[k] > mx)
                    mx = s->w[k];
                k++;
            }
            if (k == i) {
                warn(warns, "%s %s: no samples inside the window, utilization not reported", label,
                     util_cols[c]);
                continue;
            }
            json_t *o = json_object();
            json_object_set_new(o, "label", json_string(label));
            json_object_set_new(o, "column", json_string(util_cols[c]));
            json_object_set_new(o, "mean",
                                json_real(series_sum(s->w + i, k - i) / (double)(k - i)));
            json_object_set_new(o, "max", json_real(mx));
            json_object_set_new(o, "samples", json_integer((json_int_t)(k - i)));
            json_array_append_new(arr, o);
        }
    }
    json_object_set_new(win, "gpu_utilization", arr);
    return 0;
}

/*
 * One window object. job NULL: the run's; else the workload's. have: its times are known
 * (a workload that never started has none).
 */
/* The part of the window [a, b] that lies outside the ticks it holds (interpolated within a
 * tick), as a fraction of its length: 1 when no tick falls inside. */
static double interpolated_fraction(const struct rr *rr, double a, double b)
{
    size_t lo = 0, hi = rr->nticks;
    while (lo < hi) { /* the first tick >= a */
        size_t mid = (lo + hi) / 2;
        if (rr->ticks[mid] < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == rr->nticks || rr->ticks[lo] > b)
        return 1.0;
    size_t last = lo;
    while (last + 1 < rr->nticks && rr->ticks[last + 1] <= b)
        last++;
    return ((rr->ticks[lo] - a) + (b - rr->ticks[last])) / (b - a);
}

/* A mark's own part of its window: who marked it, its counts, the marking job's energy. */
static void mark_part(struct rr *rr, const struct rundir_mark *m, json_t *win, json_t *warns,
                      double a, double b)
{
    json_object_set_new(win, "mark_id", json_integer(m->id));
    json_object_set_new(win, "workload", m->workload[0] ? json_string(m->workload) : json_null());
    json_object_set_new(win, "pid", m->pid > 0 ? json_integer(m->pid) : json_null());
    if (m->end_workload[0])
        json_object_set_new(win, "ended_by", json_string(m->end_workload));
    json_object_set_new(win, "unended", json_boolean(m->unended || isnan(m->t1)));
    if (m->unended)
        warn(warns, "never ended: carma closed it when the measurement ended");
    else if (isnan(m->t1))
        warn(warns, "marks.csv has no end for it (carma was killed?): it ends at the run's last "
                    "tick");
    double node_j = jsonutil_get_num(win, "node_total_joules");
    double job_j = NAN, others = 0;
    size_t k;
    const json_t *v;
    json_array_foreach(json_object_get(win, "jobs"), k, v)
    {
        const char *n = json_string_value(json_object_get(v, "name"));
        double j = jsonutil_get_num(v, "joules");
        if (n && m->workload[0] && strcmp(n, m->workload) == 0)
            job_j = j;
        else if (isfinite(j))
            others += j;
    }
    bool jobs = json_array_size(json_object_get(win, "jobs")) > 0;
    json_object_set_new(win, "job_joules", jsonutil_real(jobs ? (isnan(job_j) ? 0 : job_j) : NAN));
    json_object_set_new(win, "other_jobs_joules", jsonutil_real(jobs ? others : NAN));
    json_object_set_new(win, "tokens", m->tokens >= 0 ? json_integer(m->tokens) : json_null());
    json_object_set_new(win, "requests",
                        m->requests >= 0 ? json_integer(m->requests) : json_null());
    double tok = m->tokens > 0 ? (double)m->tokens : NAN;
    json_object_set_new(win, "joules_per_token", jsonutil_real(node_j / tok));
    json_object_set_new(win, "job_joules_per_token",
                        jsonutil_real(jobs ? (isnan(job_j) ? 0 : job_j) / tok : NAN));
    /* tokens/s over the average watts: tokens per joule */
    json_object_set_new(win, "tokens_per_s_per_w", jsonutil_real(tok / node_j));
    double f = b > a ? interpolated_fraction(rr, a, b) : 1.0;
    json_object_set_new(win, "interpolated_fraction", jsonutil_real(f));
    if (b - a < 2 * rr->interval_s)
        warn(warns,
             "%.3f s is shorter than two sampling intervals (2 x %g s): %.0f%% of its energy is "
             "interpolated within ticks, not measured apart; mark longer windows or sample "
             "faster (--interval)",
             b - a, rr->interval_s, 100 * f);
}

/* The events (marks.csv: event rows) within the window [a, b]. */
static void events_part(const struct rr *rr, json_t *win, double a, double b)
{
    json_t *arr = json_array();
    for (size_t k = 0; k < rr->nmarks; k++) {
        const struct rundir_mark *m = &rr->marks[k];
        if (m->id >= 0 || !(m->t0 >= a && m->t0 <= b))
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(m->name));
        json_object_set_new(o, "time_unix", jsonutil_real(m->t0));
        json_object_set_new(o, "value", jsonutil_real(m->value));
        json_object_set_new(o, "workload", m->workload[0] ? json_string(m->workload) : json_null());
        json_array_append_new(arr, o);
    }
    json_object_set_new(win, "events", arr);
}

static int build_window(struct rr *rr, const struct rr_job *job, const struct rundir_mark *mark,
                        json_t *out)
{
    json_t *win = json_object();
    json_t *warns = json_array();
    double a = job ? job->start : rr->run_start, b = job ? job->end : rr->run_end;
    if (mark) {
        a = mark->t0;
        b = isnan(mark->t1) ? rr->run_end : mark->t1;
    }
    if (!job && !mark) {
        size_t k;
        json_t *v;
        json_array_foreach(rr->run_warn, k, v) json_array_append(warns, v);
    } else if (job && isfinite(a) && job->end_missing) {
        b = rr->run_end;
        warn(warns,
             "workloads.json has no end_unix for %s (a killed run?): its window ends at the run's "
             "last tick",
             job->name);
    }
    /* a workload's or a mark's time (its own clock reading, to the µs) may fall a µs after the
     * run's last tick that followed it, or before the first: the window is cut to the tick
     * (the rest of the report treats a window beyond the ticks as uncovered, and a µs of it
     * would be the last power carried past the end, which no account holds) */
    if ((job || mark) && isfinite(a) && isfinite(b) && b > a) {
        if (b > rr->run_end && b - rr->run_end <= RR_EDGE_SLACK_S && a < rr->run_end)
            b = rr->run_end;
        if (a < rr->run_start && rr->run_start - a <= RR_EDGE_SLACK_S && b > rr->run_start)
            a = rr->run_start;
    }
    bool have = isfinite(a) && isfinite(b) && b > a;
    if (job && !isfinite(a))
        warn(warns, "%s never started (workloads.json has no start_unix): nothing to report",
             job->name);
    else if (!have)
        warn(warns, "the window is empty (end_unix %.6f is not after start_unix %.6f)", b, a);
    json_object_set_new(win, "window", json_string(mark ? "mark" : job ? "workload" : "run"));
    json_object_set_new(win, "name",
                        mark  ? json_string(mark->name)
                        : job ? json_string(job->name)
                              : json_null());
    if (job && job->type[0])
        json_object_set_new(win, "type", json_string(job->type));
    json_object_set_new(win, "start_unix", jsonutil_real(a));
    json_object_set_new(win, "end_unix", jsonutil_real(b));
    json_object_set_new(win, "duration_seconds", jsonutil_real(b - a));
    json_object_set_new(win, "edges",
                        json_string(rr->edges == SERIES_EDGES_SNAP ? "snap" : "interpolate"));
    double node_j = NAN;
    int r = 0;
    if (have) {
        node_j = energy_part(rr, win, a, b, warns, &r);
        if (r == 0)
            r = attribution_part(rr, win, a, b, warns);
    } else {
        json_object_set_new(win, "per_channel", json_array());
        json_object_set_new(win, "per_node", json_array());
        json_object_set_new(win, "node_total_joules", json_null());
        json_object_set_new(win, "jobs", json_array());
        json_object_set_new(win, "idle_joules", json_null());
        json_object_set_new(win, "other_joules", json_null());
        json_object_set_new(win, "unattributed_joules", json_null());
    }
    if (mark && r == 0)
        mark_part(rr, mark, win, warns, a, b);
    events_part(rr, win, a, b);
    double emb = NAN;
    if (job) {
        emb = job->embodied_g;
    } else if (mark) {
        emb = NAN; /* the embodied share is a job's, over its lifetime */
    } else if (rr->report) {
        emb = jsonutil_get_num(json_object_get(rr->report, "carbon"), "embodied_g_co2e");
    }
    if (r == 0)
        r = carbon_part(rr, win, node_j, emb);
    if (have && r == 0)
        r = utilization_part(rr, win, a, b, warns);
    else
        json_object_set_new(win, "gpu_utilization", json_array());
    json_object_set_new(win, "warnings", warns);
    json_array_append_new(out, win);
    return r;
}

/* ---- the report ---- */

bool runreport_is_run_dir(const char *dir)
{
    if (!dir || !file_exists(dir, "manifest.json"))
        return false;
    json_t *m = NULL;
    struct carma_err e = {0};
    if (!(m = rundir_read_json(dir, "manifest.json", NULL, &e)))
        return false;
    const char *p = json_string_value(json_object_get(m, "producer"));
    bool ok = p && (strcmp(p, "carma run") == 0 || strcmp(p, "carma stat") == 0);
    json_decref(m);
    return ok;
}

static void rr_free(struct rr *rr)
{
    json_decref(rr->manifest);
    json_decref(rr->report);
    json_decref(rr->summary);
    json_decref(rr->run_warn);
    for (size_t k = 0; k < rr->nch; k++) {
        series_done(&rr->ch[k].w);
        series_done(&rr->ch[k].cum);
    }
    free(rr->ch);
    free(rr->ticks);
    series_done(&rr->node_w);
    series_done(&rr->node_cum);
    free(rr->jobs);
    free(rr->attr);
    for (size_t g = 0; g < rr->ngpu; g++) {
        series_done(&rr->gpu[g].col[0]);
        series_done(&rr->gpu[g].col[1]);
    }
    free(rr->gpu);
    free(rr->marks);
    series_scratch_done(&rr->sc);
}

/* What manifest.json's status says of how the run ended, as a warning of the whole run: one
 * stopped by a signal (status "interrupted", docs/formats.md), or one carma never finished. */
static void status_warning(struct rr *rr)
{
    const char *st = json_string_value(json_object_get(rr->manifest, "status"));
    if (st && strcmp(st, "interrupted") == 0) {
        const json_t *in = json_object_get(rr->manifest, "interruption");
        const char *sig = json_string_value(json_object_get(in, "signal"));
        const char *when = json_string_value(json_object_get(in, "time_utc"));
        json_int_t num = json_integer_value(json_object_get(in, "signal_number"));
        if (sig && when)
            warn(rr->run_warn,
                 "interrupted by %s (signal %lld) at %s: the run was cut short, its figures "
                 "cover it up to then",
                 sig, (long long)num, when);
        else
            warn(rr->run_warn, "interrupted by a signal: the run was cut short, its figures "
                               "cover it up to then");
    } else if (st && strcmp(st, "crashed") == 0) {
        const json_t *c = json_object_get(rr->manifest, "crash");
        const char *last = json_string_value(json_object_get(c, "last_sample_utc"));
        const char *when = json_string_value(json_object_get(c, "cleanup_utc"));
        warn(rr->run_warn,
             "manifest.json says \"crashed\": carma run was killed before it finished, and carma "
             "cleanup finished the directory from its files%s%s: its figures end with the last "
             "sample%s%s",
             when ? " at " : "", when ? when : "", last ? " at " : "", last ? last : "");
    } else if (st && strcmp(st, "failed") == 0) {
        warn(rr->run_warn, "manifest.json says \"failed\": the command could not be started "
                           "(carma's message said why), nothing of it was measured");
    } else if (st && strcmp(st, "running") == 0) {
        warn(rr->run_warn, "manifest.json says \"running\": carma is still measuring, or was "
                           "killed before it could finish (its figures end with the last samples)");
    }
}

/* Loads an optional JSON file: absent is fine (NULL, with a warning when warn_absent). */
static int load_optional(struct rr *rr, const char *name, json_t **ret, bool warn_absent,
                         struct carma_err *e)
{
    *ret = NULL;
    if (!file_exists(rr->dir, name)) {
        if (warn_absent)
            warn(rr->run_warn, "%s is missing (a run that was killed?)", name);
        return 0;
    }
    *ret = rundir_read_json(rr->dir, name, NULL, e);
    return *ret ? 0 : e->code;
}

/* Loads the run directory dir into rr (zeroed by it; rr_free in every case). 0 or a negative
 * errno with e set (runreport_build's). */
static int rr_load(struct rr *rr, const char *dir, const struct runreport_opts *o,
                   struct carma_err *e)
{
    memset(rr, 0, sizeof *rr);
    rr->dir = dir;
    rr->e = e;
    rr->edges = o ? o->edges : SERIES_EDGES_INTERPOLATE;
    series_init(&rr->node_w);
    series_init(&rr->node_cum);
    rr->run_warn = json_array();
    rr->manifest = rundir_read_json(dir, "manifest.json", NULL, e);
    if (!rr->manifest)
        return e->code;
    int r = 0;
    const char *prod = json_string_value(json_object_get(rr->manifest, "producer"));
    if (!prod || (strcmp(prod, "carma run") != 0 && strcmp(prod, "carma stat") != 0)) {
        r = carma_err_set(e, -EINVAL,
                          "%s/manifest.json: producer is %s%s%s, not \"carma run\" or \"carma "
                          "stat\": not a run directory of carma run or carma stat",
                          dir, prod ? "\"" : "", prod ? prod : "missing", prod ? "\"" : "");
        return r;
    }
    rr->is_run = strcmp(prod, "carma run") == 0;
    status_warning(rr);
    rr->interval_s = jsonutil_get_num(json_object_get(rr->manifest, "options"), "interval_s");
    if (!(rr->interval_s > 0))
        rr->interval_s = 0.1;
    /* the gap limit: srt-slurm's 3 s, or 2.5 sampling intervals when they are longer */
    rr->sopts = series_opts_default();
    if (2.5 * rr->interval_s > rr->sopts.max_gap_s) {
        rr->sopts.max_gap_s = 2.5 * rr->interval_s;
        rr->sopts.edge_tol_s = rr->sopts.max_gap_s / 2;
    }
    json_t *carbon = NULL;
    if (rr->is_run) {
        if ((r = load_optional(rr, "report.json", &rr->report, true, e)) < 0)
            return r;
        rr->node_names = json_object_get(rr->report, "node_channels");
        carbon = json_object_get(rr->report, "carbon");
    } else {
        if ((r = load_optional(rr, "summary.json", &rr->summary, true, e)) < 0)
            return r;
        rr->node_names = json_object_get(json_object_get(rr->summary, "node"), "channels");
        carbon = json_object_get(rr->summary, "carbon");
    }
    if (!json_is_array(rr->node_names))
        rr->node_names = NULL; /* then: the channels of domain "total" */
    /* what carma run / stat said about its numbers (estimated power, a GPU not measured, a
     * busy baseline): the run window's warnings, so every report repeats them */
    size_t wk;
    json_t *wv;
    json_array_foreach(json_object_get(rr->is_run ? rr->report : rr->summary, "warnings"), wk,
                       wv) if (json_is_string(wv)) json_array_append(rr->run_warn, wv);
    rr->nnode_listed = json_array_size(rr->node_names);
    rr->g_per_kwh = jsonutil_get_num(carbon, "g_per_kwh");
    rr->pue = jsonutil_get_num(carbon, "pue");
    rr->ci_source = json_string_value(json_object_get(carbon, "intensity_source"));
    if ((r = load_samples(rr, e)) < 0)
        return r;
    if (rr->is_run) {
        if (file_exists(dir, "workloads.json")) {
            if ((r = load_workloads(rr, e)) < 0)
                return r;
        } else {
            warn(rr->run_warn, "workloads.json is missing (a run that was killed?): no "
                               "workload windows");
        }
    }
    find_run_window(rr);
    if ((r = load_marks(rr, e)) < 0)
        return r;
    if (rr->is_run) {
        if (file_exists(dir, "attribution.csv")) {
            if ((r = load_attribution(rr, e)) < 0)
                return r;
            rr->have_attr = true;
        } else {
            warn(rr->run_warn, "attribution.csv is missing: no per-job energies");
        }
        if (file_exists(dir, "utilization.csv") && (r = load_utilization(rr, e)) < 0)
            return r;
        const json_t *ws = json_object_get(rr->report, "workloads");
        size_t k;
        const json_t *w;
        json_array_foreach(ws, k, w)
        {
            const char *name = json_string_value(json_object_get(w, "name"));
            long f = name ? find_job(rr, name) : -1;
            if (f >= 0)
                rr->jobs[f].embodied_g = jsonutil_get_num(w, "embodied_g_co2e");
        }
    }
    return 0;
}

/* The windows of a loaded run: *ret = the report's array. 0 or -ENOMEM (e set). */
static int rr_windows(struct rr *rr, json_t **ret, struct carma_err *e)
{
    json_t *out = json_array();
    int r = 0;
    if (!out || (r = build_window(rr, NULL, NULL, out)) < 0)
        goto oom;
    for (size_t k = 0; k < rr->njobs; k++)
        if (rr->jobs[k].workload && (r = build_window(rr, &rr->jobs[k], NULL, out)) < 0)
            goto oom;
    for (size_t k = 0; k < rr->nmarks; k++)
        if (rr->marks[k].id >= 0 && (r = build_window(rr, NULL, &rr->marks[k], out)) < 0)
            goto oom;
    *ret = out;
    return 0;
oom:
    json_decref(out);
    if (r == -ERANGE)
        return r; /* a sum that overflowed: rr_sum said which */
    return carma_err_set(e, -ENOMEM, "out of memory");
}

int runreport_build(const char *dir, const struct runreport_opts *o, json_t **ret,
                    struct carma_err *e)
{
    struct rr rr;
    int r = rr_load(&rr, dir, o, e);
    if (r == 0)
        r = rr_windows(&rr, ret, e);
    rr_free(&rr);
    return r;
}

/* ---- the timeline (report/html) ---- */

/*
 * Spreads j joules of the period (a, b] over the bins (t0 + i·dt, t0 + (i+1)·dt], i < n, pro
 * rata, in times relative to t0 (Unix times differ from each other exactly, they do not divide
 * well); a period inside one bin goes there whole, and the last bin a period reaches inside the
 * range takes what the others left, so that a period within the range keeps its joules exactly.
 */
static void bin_spread(double *bins, size_t n, double t0, double dt, double a, double b, double j)
{
    double ra = a - t0, rb = b - t0, end = (double)n * dt;
    if (!(rb > ra)) {
        /* an instant: all of it in the bin holding b */
        double q = ceil(rb / dt);
        if (q >= 1 && q <= (double)n)
            bins[(size_t)q - 1] += j;
        return;
    }
    double lo = fmax(ra, 0), hi = fmin(rb, end);
    if (!(hi > lo))
        return;
    /* the bins touched, [i0, i1) within [0, n) whatever the rounding of lo / dt and hi / dt */
    size_t i0 = (size_t)(lo / dt), i1 = (size_t)ceil(hi / dt);
    if (i0 > n - 1)
        i0 = n - 1;
    if (i1 > n)
        i1 = n;
    if (i1 <= i0)
        i1 = i0 + 1;
    bool whole = ra >= 0 && rb <= end; /* the period lies in the range */
    if (i1 - i0 == 1) {
        bins[i0] += whole ? j : j * (hi - lo) / (rb - ra);
        return;
    }
    double given = 0;
    for (size_t i = i0; i < i1; i++) {
        double s0 = fmax((double)i * dt, lo), s1 = fmin((double)(i + 1) * dt, hi);
        double part = i + 1 == i1 && whole ? j - given : j * fmax(s1 - s0, 0) / (rb - ra);
        bins[i] += part;
        given += part;
    }
}

int runreport_timeline_load(const char *dir, const struct runreport_opts *o, size_t nbins,
                            struct runreport_timeline *ret, struct carma_err *e)
{
    memset(ret, 0, sizeof *ret);
    struct rr *rr = malloc(sizeof *rr);
    if (!rr)
        return carma_err_set(e, -ENOMEM, "out of memory");
    int r = rr_load(rr, dir, o, e);
    if (r == 0)
        r = rr_windows(rr, &ret->report, e);
    ret->priv = rr;
    if (r < 0) {
        runreport_timeline_free(ret);
        return r;
    }
    ret->manifest = rr->manifest;
    ret->run_json = rr->is_run ? rr->report : rr->summary;
    ret->is_run = rr->is_run;
    ret->t0 = rr->run_start;
    ret->t1 = rr->run_end;
    ret->interval_s = rr->interval_s;
    ret->g_per_kwh = rr->g_per_kwh;
    ret->pue = rr->pue;
    ret->nmarks = rr->nmarks;
    ret->marks = rr->marks;
    if (!(ret->ch = calloc(rr->nch ? rr->nch : 1, sizeof *ret->ch)))
        goto oom;
    ret->nch = rr->nch;
    for (size_t k = 0; k < rr->nch; k++) {
        const struct rr_chan *c = &rr->ch[k];
        ret->ch[k] = (struct runreport_chan_tl){c->name, c->kind, c->domain, c->method,
                                                c->node, c->w.n,  c->w.t,    c->w.w};
    }
    if (!rr->have_attr || !(ret->t1 > ret->t0))
        return 0;
    if (nbins < 2)
        nbins = 2;
    if (nbins > 100000)
        nbins = 100000;
    if (rr->nticks > 1 && nbins > rr->nticks)
        nbins = rr->nticks;
    double dt = (ret->t1 - ret->t0) / (double)nbins;
    size_t nj = rr->njobs + 3;
    if (!(ret->bin_t = malloc(nbins * sizeof *ret->bin_t)) ||
        !(ret->jobs = calloc(nj, sizeof *ret->jobs)))
        goto oom;
    ret->nbins = nbins;
    ret->njobs = nj; /* for runreport_timeline_free, until the empty rows are dropped */
    for (size_t i = 0; i < nbins; i++)
        ret->bin_t[i] = ret->t0 + (double)(i + 1) * dt;
    for (size_t k = 0; k < nj; k++)
        if (!(ret->jobs[k].w = calloc(nbins, sizeof(double))))
            goto oom;
    static const char *const extra[3] = {"idle", "other", "unattributed"};
    for (size_t k = 0; k < nj; k++) {
        ret->jobs[k].name = k < rr->njobs ? rr->jobs[k].name : extra[k - rr->njobs];
        ret->jobs[k].workload = k < rr->njobs && rr->jobs[k].workload;
    }
    for (size_t k = 0; k < rr->nattr; k++) {
        const struct rr_attr *x = &rr->attr[k];
        if (!rr->ch[x->ch].node)
            continue; /* a component's energy is in its parent's already */
        /* a workload's share of a period falls in its lifetime (as attr_fraction has it) */
        double p0 = x->t_prev, p1 = x->t;
        if (x->job >= 0) {
            const struct rr_job *jb = &rr->jobs[x->job];
            double l0 = jb->start > p0 ? jb->start : p0, l1 = jb->end < p1 ? jb->end : p1;
            if (l1 > l0) {
                p0 = l0;
                p1 = l1;
            }
        }
        size_t jk = x->job >= 0          ? (size_t)x->job
                    : x->job == RR_IDLE  ? rr->njobs
                    : x->job == RR_OTHER ? rr->njobs + 1
                                         : rr->njobs + 2;
        bin_spread(ret->jobs[jk].w, nbins, ret->t0, dt, p0, p1, x->j);
    }
    /* joules per bin -> watts; drop the extra rows that stayed empty */
    size_t keep = 0;
    for (size_t k = 0; k < nj; k++) {
        struct runreport_job_tl *j = &ret->jobs[k];
        j->energy_j = 0;
        for (size_t i = 0; i < nbins; i++) {
            j->energy_j += j->w[i];
            j->w[i] /= dt;
        }
        if (k >= rr->njobs && j->energy_j == 0) {
            free(j->w);
            continue;
        }
        ret->jobs[keep++] = *j;
    }
    ret->njobs = keep;
    return 0;
oom:
    runreport_timeline_free(ret);
    return carma_err_set(e, -ENOMEM, "out of memory");
}

void runreport_timeline_free(struct runreport_timeline *tl)
{
    if (!tl)
        return;
    json_decref(tl->report);
    free(tl->ch);
    free(tl->bin_t);
    if (tl->jobs) {
        /* njobs counts the kept rows; freed rows were cleared from the array */
        for (size_t k = 0; k < tl->njobs; k++)
            free(tl->jobs[k].w);
    }
    free(tl->jobs);
    if (tl->priv) {
        rr_free(tl->priv);
        free(tl->priv);
    }
    memset(tl, 0, sizeof *tl);
}

/* ---- the text form ---- */

/* x as Python's format(x, ",.<dec>f") (commas) or format(x, ".<dec>f"), "n/a" for NAN (null).
 * buf holds PYJSON_NUM_MAX bytes. */
static const char *fnum(char *buf, double x, int dec, bool commas)
{
    if (isnan(x)) {
        memcpy(buf, "n/a", 4);
        return buf;
    }
    pyjson_format(fmt_round_zero(x, dec), dec, commas, false, buf); /* never "-0.00" */
    return buf;
}

/* A member's number (NAN for null or absent). */
static double tnum(const json_t *o, const char *key)
{
    return jsonutil_get_num(o, key);
}

#define F2(b, x) fnum(b, x, 2, true)

static void text_brow(FILE *f, const json_t *row)
{
    char j[PYJSON_NUM_MAX], avg[PYJSON_NUM_MAX], p50[PYJSON_NUM_MAX], p95[PYJSON_NUM_MAX],
        p99[PYJSON_NUM_MAX], mx[PYJSON_NUM_MAX];
    const char *method = json_string_value(json_object_get(row, "method"));
    fprintf(f, "    %s: %s J (%s W avg; p50=%s p95=%s p99=%s max=%s W)%s%s%s\n",
            json_string_value(json_object_get(row, "label")), F2(j, tnum(row, "joules")),
            F2(avg, tnum(row, "avg_power_w")), F2(p50, tnum(row, "p50_w")),
            F2(p95, tnum(row, "p95_w")), F2(p99, tnum(row, "p99_w")), F2(mx, tnum(row, "max_w")),
            method ? " [" : "", method ? method : "", method ? "]" : "");
}

static void text_window(FILE *f, const json_t *w)
{
    char a[PYJSON_NUM_MAX], b[PYJSON_NUM_MAX], c[PYJSON_NUM_MAX], d[PYJSON_NUM_MAX],
        g[PYJSON_NUM_MAX], h[PYJSON_NUM_MAX];
    const char *name = json_string_value(json_object_get(w, "name"));
    const char *type = json_string_value(json_object_get(w, "type"));
    fprintf(f, "[%s%s%s%s%s%s] window=%ss start=%s end=%s edges=%s\n",
            json_string_value(json_object_get(w, "window")), name ? " " : "", name ? name : "",
            type ? " (" : "", type ? type : "", type ? ")" : "",
            fnum(a, tnum(w, "duration_seconds"), 2, false),
            fnum(b, tnum(w, "start_unix"), 3, false), fnum(c, tnum(w, "end_unix"), 3, false),
            json_string_value(json_object_get(w, "edges")));
    size_t k;
    const json_t *v;
    json_array_foreach(json_object_get(w, "warnings"), k, v)
        fprintf(f, "  warning: %s\n", json_string_value(v));
    const json_t *node = json_array_get(json_object_get(w, "per_node"), 0);
    const char *nmethod = node ? json_string_value(json_object_get(node, "method")) : NULL;
    fprintf(f, "  node total: %s J", F2(h, tnum(w, "node_total_joules")));
    if (node)
        fprintf(f, " (%s W avg; p50=%s p95=%s p99=%s max=%s W)", F2(b, tnum(node, "avg_power_w")),
                F2(c, tnum(node, "p50_w")), F2(d, tnum(node, "p95_w")), F2(g, tnum(node, "p99_w")),
                F2(h, tnum(node, "max_w")));
    if (nmethod)
        fprintf(f, " [%s]", nmethod);
    fprintf(f, "\n");
    json_array_foreach(json_object_get(w, "per_channel"), k, v) text_brow(f, v);
    if (strcmp(json_string_value(json_object_get(w, "window")), "mark") == 0) {
        const char *wl = json_string_value(json_object_get(w, "workload"));
        const char *by = json_string_value(json_object_get(w, "ended_by"));
        fprintf(f, "  marked by %s%s%s%s", wl ? "workload " : "", wl ? wl : "no workload",
                by ? ", ended by " : "", by ? by : "");
        if (json_is_number(json_object_get(w, "job_joules")))
            fprintf(f, ": its energy %s J, the other jobs' %s J", F2(a, tnum(w, "job_joules")),
                    F2(b, tnum(w, "other_jobs_joules")));
        fprintf(f, "; %s%% interpolated within ticks\n",
                F2(c, 100 * tnum(w, "interpolated_fraction")));
        if (json_is_integer(json_object_get(w, "tokens")))
            fprintf(f, "  tokens=%lld: %s J/token (node), %s J/token (job), %s tokens/s per W\n",
                    (long long)json_integer_value(json_object_get(w, "tokens")),
                    F2(a, tnum(w, "joules_per_token")), F2(b, tnum(w, "job_joules_per_token")),
                    F2(c, tnum(w, "tokens_per_s_per_w")));
    }
    json_array_foreach(json_object_get(w, "events"), k, v)
        fprintf(f, "  event %s at %s: %s%s%s\n", json_string_value(json_object_get(v, "name")),
                fnum(a, tnum(v, "time_unix"), 3, false), fnum(b, tnum(v, "value"), 6, false),
                json_is_string(json_object_get(v, "workload")) ? " by " : "",
                json_is_string(json_object_get(v, "workload"))
                    ? json_string_value(json_object_get(v, "workload"))
                    : "");
    json_array_foreach(json_object_get(w, "jobs"), k, v)
    {
        double share = tnum(v, "share");
        fprintf(f, "  job %s: %s J (%s%%)\n", json_string_value(json_object_get(v, "name")),
                F2(a, tnum(v, "joules")), F2(b, share * 100.0));
    }
    if (json_array_size(json_object_get(w, "jobs")))
        fprintf(f, "  idle: %s J, other: %s J, unattributed: %s J\n", F2(a, tnum(w, "idle_joules")),
                F2(b, tnum(w, "other_joules")), F2(c, tnum(w, "unattributed_joules")));
    const json_t *cb = json_object_get(w, "carbon");
    const char *src = json_string_value(json_object_get(cb, "intensity_source"));
    fprintf(f,
            "  carbon: operational %s g CO2e (%s g/kWh x PUE %s), embodied %s g CO2e; "
            "intensity: %s\n",
            fnum(a, tnum(cb, "operational_g_co2e"), 4, true), F2(b, tnum(cb, "g_per_kwh")),
            F2(c, tnum(cb, "pue")), fnum(d, tnum(cb, "embodied_g_co2e"), 4, true),
            src ? src : "n/a");
    /* utilization: one line per label, its columns in order */
    const json_t *ua = json_object_get(w, "gpu_utilization");
    for (size_t i = 0; i < json_array_size(ua); i++) {
        const json_t *u = json_array_get(ua, i);
        const char *label = json_string_value(json_object_get(u, "label"));
        if (i > 0 && strcmp(label, json_string_value(
                                       json_object_get(json_array_get(ua, i - 1), "label"))) == 0)
            continue;
        fprintf(f, "    %s utilization:", label);
        for (size_t m = i; m < json_array_size(ua); m++) {
            const json_t *um = json_array_get(ua, m);
            if (strcmp(json_string_value(json_object_get(um, "label")), label) != 0)
                break;
            fprintf(f, "%s %s mean=%s max=%s", m > i ? ";" : "",
                    json_string_value(json_object_get(um, "column")), F2(a, tnum(um, "mean")),
                    F2(b, tnum(um, "max")));
        }
        fprintf(f, "\n");
    }
}

char *runreport_text(const json_t *report)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    size_t k;
    const json_t *w;
    json_array_foreach(report, k, w) text_window(f, w);
    if (json_array_size(report) == 0)
        fprintf(f, "no windows\n");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
