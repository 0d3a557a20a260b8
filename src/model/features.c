/* features: a run directory read into aligned intervals for power models (see features.h). */
#include "model/features.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/jsonutil.h"
#include "rundir/rundir.h"

#define FX_JOBS_MAX 4096
#define FX_CHAN_MAX 1024
#define FX_GPUS_MAX 256

double fx_node(const struct fx_run *r, size_t i, int f)
{
    double s = 0;
    for (size_t p = 0; p <= r->njobs; p++)
        s += fx_party(r, i, p, f);
    return s;
}

/* Keeps msg as one of r's warnings (a torn last line). 0 or -ENOMEM. */
static int fx_warn(struct fx_run *r, const char *msg)
{
    char *m = strdup(msg);
    char **v = m ? realloc(r->warnings, (r->nwarnings + 1) * sizeof *v) : NULL;
    if (!v) {
        free(m);
        return -ENOMEM;
    }
    r->warnings = v;
    r->warnings[r->nwarnings++] = m;
    return 0;
}

/* Closes l; a torn last line it skipped becomes one warning of r. */
static int fx_lines_done(struct fx_run *r, struct rundir_lines *l, int rc)
{
    if (rc >= 0 && l->torn) {
        char msg[4400];
        rundir_torn_warning(l, msg, sizeof msg);
        if (fx_warn(r, msg) < 0)
            rc = -ENOMEM;
    }
    rundir_lines_close(l);
    return rc;
}

/* The header's column name (rundir_lines_column of the header l just read), or, when required and
 * absent, -EINVAL naming it (-1 otherwise). */
static int fx_col(const struct rundir_lines *l, const char *name, bool required,
                  struct carma_err *e)
{
    int k = rundir_lines_column(l, name);
    if (k < 0 && required)
        return carma_err_set(e, -EINVAL, "%s: no column '%s' in the header", l->path, name);
    return k;
}

/* ---- growable arrays and cumulative series ---- */

/* A cumulative quantity sampled at increasing times: interpolated linearly in between,
 * constant before the first point and after the last. */
struct cum {
    double *t, *v;
    size_t n, cap, capv;
    bool blank; /* a point was blank: the quantity is unavailable */
    size_t blank_line;
};

static int cum_add(struct cum *s, double t, double v)
{
    if (s->n && t < s->t[s->n - 1])
        return 0; /* out of order: the earlier point stands */
    if (array_grow((void **)&s->t, &s->cap, s->n + 1, sizeof *s->t) < 0 ||
        array_grow((void **)&s->v, &s->capv, s->n + 1, sizeof *s->v) < 0)
        return -ENOMEM;
    s->t[s->n] = t;
    s->v[s->n] = v;
    s->n++;
    return 0;
}

static double cum_at(const struct cum *s, double t)
{
    if (!s->n)
        return 0;
    if (t <= s->t[0])
        return s->v[0];
    if (t >= s->t[s->n - 1])
        return s->v[s->n - 1];
    size_t lo = 0, hi = s->n - 1;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (s->t[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    double dt = s->t[hi] - s->t[lo];
    return dt > 0 ? s->v[lo] + (s->v[hi] - s->v[lo]) * (t - s->t[lo]) / dt : s->v[hi];
}

static void cum_free(struct cum *s)
{
    free(s->t);
    free(s->v);
}

/* ---- the run ---- */

struct tick {
    double t;
    double w[FX_KINDS]; /* sum of the kind's total channels' watts */
    int valid[FX_KINDS];
};

struct loader {
    struct fx_run *r;
    struct fx_opts o;
    struct carma_err *e;
    struct tick *ticks;
    size_t nt, capt;
    char (*chan)[128];
    int *chan_kind; /* -1: not a total-domain channel */
    size_t nchan, capc, capck;
    int nkind[FX_KINDS];
    struct cum node_busy, node_total;
    struct cum *job_cpu, *job_ins, *job_cyc; /* per workload */
    double *feat_times;                      /* features.csv timestamps */
    double t_first;                          /* samples.csv's first timestamp */
    size_t nft, capft;
};

static int job_index(const struct fx_run *r, const char *name)
{
    for (size_t k = 0; k < r->njobs; k++)
        if (strcmp(r->jobs[k], name) == 0)
            return (int)k;
    return -1;
}

static int load_workloads(struct loader *L)
{
    struct fx_run *r = L->r;
    char path[4200];
    snprintf(path, sizeof path, "%s/workloads.json", r->dir);
    json_error_t je;
    struct carma_err re = {0};
    json_t *j = rundir_read_json(r->dir, "workloads.json", &je, &re);
    if (!j && re.code == -EINVAL)
        return carma_err_set(L->e, -EINVAL, "%s:%d: %s", path, je.line, je.text);
    if (!j && re.code != -ESPIPE)
        return carma_err_set(L->e, -ENOENT, "%s: cannot open: %s (is %s a carma run directory?)",
                             path, strerror(-re.code), r->dir);
    if (!j) {
        *L->e = re;
        return re.code;
    }
    json_t *ws = json_object_get(j, "workloads");
    int rc = 0;
    if (!json_is_array(ws) || json_array_size(ws) > FX_JOBS_MAX) {
        rc = carma_err_set(L->e, -EINVAL, "%s: workloads: not an array (of at most %d)", path,
                           FX_JOBS_MAX);
        goto out;
    }
    r->njobs = json_array_size(ws);
    r->jobs = calloc(r->njobs + 1, sizeof *r->jobs);
    r->job_start = calloc(r->njobs + 1, sizeof *r->job_start);
    r->job_end = calloc(r->njobs + 1, sizeof *r->job_end);
    if (!r->jobs || !r->job_start || !r->job_end) {
        rc = -ENOMEM;
        goto out;
    }
    r->first_start = NAN;
    for (size_t k = 0; k < r->njobs; k++) {
        json_t *w = json_array_get(ws, k);
        const char *name = json_string_value(json_object_get(w, "name"));
        if (!name) {
            rc = carma_err_set(L->e, -EINVAL, "%s: workloads[%zu].name: missing", path, k);
            goto out;
        }
        r->jobs[k] = strdup(name);
        if (!r->jobs[k]) {
            rc = -ENOMEM;
            goto out;
        }
        json_t *s = json_object_get(w, "start_unix"), *en = json_object_get(w, "end_unix");
        r->job_start[k] = jsonutil_num(s);
        r->job_end[k] = jsonutil_num(en);
        if (isfinite(r->job_start[k]) && !(r->job_start[k] >= r->first_start))
            r->first_start = r->job_start[k];
    }
out:
    json_decref(j);
    return rc;
}

static void load_manifest(struct loader *L)
{
    struct fx_run *r = L->r;
    json_t *j = rundir_read_json(r->dir, "manifest.json", NULL, NULL);
    if (!j)
        return; /* optional: the CPU count then comes from the samples' absence of it */
    json_t *cpus = json_object_get(json_object_get(j, "host"), "cpus");
    if (json_is_integer(cpus) && json_integer_value(cpus) > 0 && json_integer_value(cpus) < 1 << 20)
        r->ncpu = (int)json_integer_value(cpus);
    const char *p =
        json_string_value(json_object_get(json_object_get(j, "options"), "idle_policy"));
    if (p)
        snprintf(r->policy, sizeof r->policy, "%s", p);
    json_decref(j);
}

static int chan_find(struct loader *L, const char *name)
{
    for (size_t k = 0; k < L->nchan; k++)
        if (strcmp(L->chan[k], name) == 0)
            return (int)k;
    return -1;
}

static int load_samples(struct loader *L)
{
    struct fx_run *r = L->r;
    struct rundir_lines l;
    int rc = rundir_lines_open(&l, r->dir, "samples.csv", 0, 0, L->e);
    if (rc < 0)
        return rc;
    struct rundir_samples rs;
    if ((rc = rundir_samples_header(&rs, &l, L->e)) < 0)
        goto out;
    while ((rc = rundir_lines_next(&l, L->e)) == 1) {
        struct rundir_sample row;
        if ((rc = rundir_samples_row(&rs, &l, &row, L->e)) < 0)
            goto out;
        double t = row.t, w = row.w;
        const char *name = row.channel;
        int ch = chan_find(L, name);
        if (ch < 0) {
            if (L->nchan >= FX_CHAN_MAX) {
                rc = carma_err_set(L->e, -EINVAL, "%s:%zu: more than %d channels", l.path, l.line,
                                   FX_CHAN_MAX);
                goto out;
            }
            if (array_grow((void **)&L->chan, &L->capc, L->nchan + 1, sizeof *L->chan) < 0 ||
                array_grow((void **)&L->chan_kind, &L->capck, L->nchan + 1, sizeof *L->chan_kind) <
                    0) {
                rc = -ENOMEM;
                goto out;
            }
            ch = (int)L->nchan++;
            snprintf(L->chan[ch], sizeof L->chan[ch], "%s", name);
            int kind = row.kind_id;
            bool total = row.total;
            L->chan_kind[ch] = total ? kind : -1;
            if (total) {
                L->nkind[kind]++;
                r->has_kind[kind] = true;
                size_t used = strlen(r->kind_channels[kind]);
                snprintf(r->kind_channels[kind] + used, sizeof r->kind_channels[kind] - used,
                         "%s%s", used ? "," : "", name);
                if (row.estimated) {
                    char *est = r->kind_estimated_channels[kind];
                    size_t eu = strlen(est);
                    snprintf(est + eu, sizeof r->kind_estimated_channels[kind] - eu, "%s%s",
                             eu ? "," : "", name);
                    r->kind_estimated[kind] = true;
                }
            }
        }
        if (!L->nt || L->ticks[L->nt - 1].t != t) {
            if (array_grow((void **)&L->ticks, &L->capt, L->nt + 1, sizeof *L->ticks) < 0) {
                rc = -ENOMEM;
                goto out;
            }
            memset(&L->ticks[L->nt], 0, sizeof L->ticks[L->nt]);
            L->ticks[L->nt++].t = t;
        }
        int kind = L->chan_kind[ch];
        if (kind >= 0 && isfinite(w)) {
            L->ticks[L->nt - 1].w[kind] += w;
            L->ticks[L->nt - 1].valid[kind]++;
        }
    }
    if (rc < 0)
        goto out;
    if (L->nt < 2)
        rc = carma_err_set(L->e, -EINVAL, "%s: fewer than two ticks: nothing to model", l.path);
    L->t_first = L->nt ? L->ticks[0].t : NAN;
out:
    return fx_lines_done(r, &l, rc);
}

static int load_node_util(struct loader *L)
{
    struct rundir_lines l;
    int rc = rundir_lines_open(&l, L->r->dir, "node_util.csv", 0, 0, L->e);
    if (rc == -ENOENT)
        return 0;
    if (rc < 0)
        return rc;
    struct rundir_util ru;
    if ((rc = rundir_util_header(&ru, &l, L->e)) < 0)
        goto out;
    while ((rc = rundir_lines_next(&l, L->e)) == 1) {
        struct rundir_util_row row;
        if ((rc = rundir_util_row(&ru, &l, &row, L->e)) < 0)
            goto out;
        if (cum_add(&L->node_busy, row.t, row.busy_s) < 0 ||
            cum_add(&L->node_total, row.t, row.total_s) < 0) {
            rc = -ENOMEM;
            goto out;
        }
    }
    if (rc == 0)
        L->r->node_util = L->node_busy.n >= 2;
out:
    return fx_lines_done(L->r, &l, rc);
}

static int load_features(struct loader *L)
{
    struct fx_run *r = L->r;
    struct rundir_lines c;
    size_t nf;
    for (size_t k = 0; k < r->njobs; k++) {
        /* every workload starts at 0 at its start */
        if (isfinite(r->job_start[k]) && (cum_add(&L->job_cpu[k], r->job_start[k], 0) < 0 ||
                                          cum_add(&L->job_ins[k], r->job_start[k], 0) < 0 ||
                                          cum_add(&L->job_cyc[k], r->job_start[k], 0) < 0))
            return -ENOMEM;
    }
    int rc = rundir_lines_start(&c, r->dir, "features.csv", L->e);
    if (rc == -ENOENT) {
        for (int f = FX_CPU_UTIL; f <= FX_CYCLES; f++)
            snprintf(r->feat_missing[f], sizeof r->feat_missing[f], "%s/features.csv: absent",
                     r->dir);
        return 0;
    }
    if (rc < 0)
        return rc;
    if ((rc = rundir_lines_header(&c, NULL, 0, 0, NULL, &nf, L->e)) < 0)
        goto out;
    int kt = fx_col(&c, "timestamp_unix", true, L->e), kw = fx_col(&c, "workload", true, L->e),
        kc = fx_col(&c, "cpu_time_s", true, L->e), ki = fx_col(&c, "instructions", false, L->e),
        ky = fx_col(&c, "cycles", false, L->e);
    if (kt < 0 || kw < 0 || kc < 0) {
        rc = -EINVAL;
        goto out;
    }
    while ((rc = rundir_lines_next(&c, L->e)) == 1) {
        double t, cpu, ins, cyc;
        if ((rc = rundir_lines_num(&c, kt, "timestamp_unix", false, &t, L->e)) < 0 ||
            (rc = rundir_lines_num(&c, kc, "cpu_time_s", false, &cpu, L->e)) < 0 ||
            (rc = rundir_lines_num(&c, ki, "instructions", true, &ins, L->e)) < 0 ||
            (rc = rundir_lines_num(&c, ky, "cycles", true, &cyc, L->e)) < 0)
            goto out;
        if (!L->nft || L->feat_times[L->nft - 1] != t) {
            if (array_grow((void **)&L->feat_times, &L->capft, L->nft + 1, sizeof *L->feat_times) <
                0) {
                rc = -ENOMEM;
                goto out;
            }
            L->feat_times[L->nft++] = t;
        }
        int k = job_index(r, rundir_lines_cell(&c, kw));
        if (k < 0)
            continue; /* not a workload of workloads.json */
        if (cum_add(&L->job_cpu[k], t, cpu) < 0 ||
            (isfinite(ins) && cum_add(&L->job_ins[k], t, ins * 1e-9) < 0) ||
            (isfinite(cyc) && cum_add(&L->job_cyc[k], t, cyc * 1e-9) < 0)) {
            rc = -ENOMEM;
            goto out;
        }
        if (!isfinite(ins) && !L->job_ins[k].blank) {
            L->job_ins[k].blank = true;
            L->job_ins[k].blank_line = c.line;
        }
        if (!isfinite(cyc) && !L->job_cyc[k].blank) {
            L->job_cyc[k].blank = true;
            L->job_cyc[k].blank_line = c.line;
        }
    }
    if (rc < 0)
        goto out;
    rc = 0;
    r->has_feat[FX_CPU_UTIL] = true;
    r->has_feat[FX_INSTRUCTIONS] = r->has_feat[FX_CYCLES] = true;
    for (size_t k = 0; k < r->njobs; k++) {
        if (L->job_ins[k].blank && r->has_feat[FX_INSTRUCTIONS]) {
            r->has_feat[FX_INSTRUCTIONS] = false;
            snprintf(r->feat_missing[FX_INSTRUCTIONS], sizeof r->feat_missing[FX_INSTRUCTIONS],
                     "%s:%zu: instructions is blank (the perf event was unavailable: "
                     "report.json perf.instructions_unavailable says why)",
                     c.path, L->job_ins[k].blank_line);
        }
        if (L->job_cyc[k].blank && r->has_feat[FX_CYCLES]) {
            r->has_feat[FX_CYCLES] = false;
            snprintf(r->feat_missing[FX_CYCLES], sizeof r->feat_missing[FX_CYCLES],
                     "%s:%zu: cycles is blank (the perf event was unavailable: report.json "
                     "perf.cycles_unavailable says why)",
                     c.path, L->job_cyc[k].blank_line);
        }
    }
    if (ki < 0 && r->has_feat[FX_INSTRUCTIONS]) {
        r->has_feat[FX_INSTRUCTIONS] = false;
        snprintf(r->feat_missing[FX_INSTRUCTIONS], sizeof r->feat_missing[FX_INSTRUCTIONS],
                 "%s: no instructions column", c.path);
    }
    if (ky < 0 && r->has_feat[FX_CYCLES]) {
        r->has_feat[FX_CYCLES] = false;
        snprintf(r->feat_missing[FX_CYCLES], sizeof r->feat_missing[FX_CYCLES],
                 "%s: no cycles column", c.path);
    }
out:
    return fx_lines_done(r, &c, rc);
}

/* Cuts the ticks into intervals: returns the tick indexes of the cuts in *ret (count *n). */
static int cut_intervals(struct loader *L, size_t **ret, size_t *n)
{
    const struct fx_run *r = L->r;
    size_t *cut = malloc((L->nt + 1) * sizeof *cut);
    if (!cut)
        return -ENOMEM;
    size_t nc = 0, f = 0;
    cut[nc++] = 0;
    double w = L->o.window_s;
    for (size_t k = 1; k < L->nt; k++) {
        double t = L->ticks[k].t, last = L->ticks[cut[nc - 1]].t;
        bool at_feature = false;
        while (f < L->nft && L->feat_times[f] < t - 1e-7)
            f++;
        if (f < L->nft && fabs(L->feat_times[f] - t) <= 1e-7)
            at_feature = true;
        /* the last tick before the first workload started ends the baseline phase */
        bool phase_end = isfinite(r->first_start) && t <= r->first_start &&
                         (k + 1 == L->nt || L->ticks[k + 1].t > r->first_start);
        bool last_tick = k + 1 == L->nt;
        if (phase_end || last_tick || t - last >= w - 1e-6 || (at_feature && t - last >= 0.5 * w))
            cut[nc++] = k;
    }
    *ret = cut;
    *n = nc;
    return 0;
}

static int load_utilization(struct loader *L)
{
    struct fx_run *r = L->r;
    struct rundir_lines c;
    int rc = rundir_lines_open(&c, r->dir, "utilization.csv", 0, 0, L->e);
    if (rc == -ENOENT) {
        for (int f = FX_GPU_SM; f <= FX_GPU_MEM; f++)
            snprintf(r->feat_missing[f], sizeof r->feat_missing[f],
                     "%s/utilization.csv: absent (no NVML GPU in the run)", r->dir);
        return 0;
    }
    if (rc < 0)
        return rc;
    struct rundir_gpu rg;
    if ((rc = rundir_gpu_header(&rg, &c, L->e)) < 0)
        return fx_lines_done(r, &c, rc);
    size_t np = r->njobs + 1;
    /* per group (timestamp, gpu): the device's utilization, then its processes */
    double gt = NAN, dev_u = NAN, dev_m = NAN;
    int gg = -1;
    double *sm = calloc(np, sizeof *sm);
    int *procs = calloc(np, sizeof *procs);
    /* per interval: sums of the groups' shares and the count of timestamps */
    double *acc = calloc(r->nint * np * 3, sizeof *acc);
    size_t *nts = calloc(r->nint, sizeof *nts);
    double *last_ts = malloc(r->nint * sizeof *last_ts);
    if (!sm || !procs || !acc || !nts || !last_ts) {
        rc = -ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < r->nint; i++)
        last_ts[i] = NAN;
    size_t iv = 0;
    bool more = true;
    while (more) {
        int nr = rundir_lines_next(&c, L->e);
        if (nr < 0) {
            rc = nr;
            goto done;
        }
        more = nr == 1;
        struct rundir_gpu_row row = {.t = NAN};
        if (more && (rc = rundir_gpu_row(&rg, &c, &row, L->e)) < 0)
            goto done;
        double t = row.t, g = more ? row.gpu : NAN;
        if (!more || t != gt || (int)g != gg) {
            /* close the group (gt, gg) */
            if (gg >= 0) {
                while (iv < r->nint && r->t1[iv] < gt)
                    iv++;
                if (iv < r->nint && gt > r->t0[iv]) {
                    double tot = 0;
                    int nproc = 0;
                    for (size_t p = 0; p < np; p++) {
                        tot += sm[p];
                        nproc += procs[p];
                    }
                    for (size_t p = 0; p < np; p++) {
                        double share = tot > 0 ? sm[p] / tot
                                       : nproc ? (double)procs[p] / nproc
                                               : (p == r->njobs ? 1.0 : 0.0);
                        double *a = &acc[(iv * np + p) * 3];
                        a[0] += sm[p] / 100.0;
                        if (isfinite(dev_u))
                            a[1] += dev_u / 100.0 * share;
                        if (isfinite(dev_m))
                            a[2] += dev_m / 100.0 * share;
                    }
                    if (last_ts[iv] != gt) {
                        nts[iv]++;
                        last_ts[iv] = gt;
                    }
                }
            }
            memset(sm, 0, np * sizeof *sm);
            memset(procs, 0, np * sizeof *procs);
            gt = t;
            gg = isfinite(g) && g >= 0 && g < FX_GPUS_MAX ? (int)g : -1;
            dev_u = dev_m = NAN;
        }
        if (!more)
            break;
        if (!row.pid) { /* the device row */
            dev_u = row.util_pct;
            dev_m = row.mem_pct;
        } else {
            double s = row.sm_pct;
            int k = job_index(r, row.workload);
            size_t p = k >= 0 ? (size_t)k : r->njobs;
            procs[p]++;
            if (isfinite(s))
                sm[p] += s;
        }
    }
    for (size_t i = 0; i < r->nint; i++)
        for (size_t p = 0; p < np; p++) {
            double *a = &acc[(i * np + p) * 3];
            double *fv = &r->feat[(i * np + p) * FX_N];
            fv[FX_GPU_SM] = nts[i] ? a[0] / (double)nts[i] : NAN;
            fv[FX_GPU_UTIL] = nts[i] ? a[1] / (double)nts[i] : NAN;
            fv[FX_GPU_MEM] = nts[i] ? a[2] / (double)nts[i] : NAN;
        }
    r->has_feat[FX_GPU_SM] = r->has_feat[FX_GPU_UTIL] = r->has_feat[FX_GPU_MEM] = true;
    rc = 0;
done:
    free(sm);
    free(procs);
    free(acc);
    free(nts);
    free(last_ts);
    return fx_lines_done(r, &c, rc);
}

static int load_nsys(struct loader *L)
{
    struct fx_run *r = L->r;
    struct rundir_lines c;
    size_t np = r->njobs + 1, nf;
    int rc = rundir_lines_start(&c, r->dir, "nsys_gpu.csv", L->e);
    if (rc == -ENOENT) {
        snprintf(r->feat_missing[FX_GPU_BUSY], sizeof r->feat_missing[FX_GPU_BUSY],
                 "%s/nsys_gpu.csv: absent (carma import-nsys writes it)", r->dir);
        return 0;
    }
    if (rc < 0)
        return rc;
    if ((rc = rundir_lines_header(&c, NULL, 0, 0, NULL, &nf, L->e)) < 0)
        goto out;
    int ks = fx_col(&c, "interval_start_unix", true, L->e),
        ke = fx_col(&c, "interval_end_unix", true, L->e), kw = fx_col(&c, "workload", true, L->e),
        kb = fx_col(&c, "busy_s", true, L->e);
    if (ks < 0 || ke < 0 || kw < 0 || kb < 0) {
        rc = -EINVAL;
        goto out;
    }
    for (size_t i = 0; i < r->nint; i++)
        for (size_t p = 0; p < np; p++)
            r->feat[(i * np + p) * FX_N + FX_GPU_BUSY] = 0;
    while ((rc = rundir_lines_next(&c, L->e)) == 1) {
        double s, en, b;
        if ((rc = rundir_lines_num(&c, ks, "interval_start_unix", false, &s, L->e)) < 0 ||
            (rc = rundir_lines_num(&c, ke, "interval_end_unix", false, &en, L->e)) < 0 ||
            (rc = rundir_lines_num(&c, kb, "busy_s", false, &b, L->e)) < 0)
            goto out;
        if (!(en > s) || b < 0) {
            rc = carma_err_set(L->e, -EINVAL,
                               "%s:%zu: interval_end_unix must follow interval_start_unix and "
                               "busy_s be >= 0",
                               c.path, c.line);
            goto out;
        }
        int k = job_index(r, rundir_lines_cell(&c, kw));
        size_t p = k >= 0 ? (size_t)k : r->njobs;
        for (size_t i = 0; i < r->nint; i++) {
            double lo = fmax(s, r->t0[i]), hi = fmin(en, r->t1[i]);
            if (hi > lo)
                r->feat[(i * np + p) * FX_N + FX_GPU_BUSY] +=
                    b * (hi - lo) / (en - s) / (r->t1[i] - r->t0[i]);
        }
    }
    if (rc < 0)
        goto out;
    rc = 0;
    r->has_feat[FX_GPU_BUSY] = true;
out:
    return fx_lines_done(r, &c, rc);
}

static int load_attribution(struct loader *L)
{
    struct fx_run *r = L->r;
    size_t nm = r->njobs + 2;
    struct rundir_lines l;
    int rc = rundir_lines_open(&l, r->dir, "attribution.csv", 0, 0, L->e);
    if (rc == -ENOENT)
        return 0;
    if (rc < 0)
        return rc;
    struct rundir_attr ra;
    if ((rc = rundir_attr_header(&ra, L->t_first, &l, L->e)) < 0)
        goto out;
    for (size_t i = 0; i < r->nint * nm * FX_KINDS; i++)
        r->meas_w[i] = 0;
    size_t iv = 0;
    while ((rc = rundir_lines_next(&l, L->e)) == 1) {
        struct rundir_attr_row row;
        if ((rc = rundir_attr_row(&ra, &l, &row, L->e)) < 0)
            goto out;
        double t = row.t, j = row.j;
        int ch = chan_find(L, row.channel);
        if (ch < 0) {
            rc = carma_err_set(L->e, -EINVAL, "%s:%zu: channel '%.100s' is not in samples.csv",
                               l.path, l.line, row.channel);
            goto out;
        }
        if (L->chan_kind[ch] < 0)
            continue; /* a component channel: contained in a total one */
        while (iv < r->nint && r->t1[iv] < t)
            iv++;
        if (iv >= r->nint || t <= r->t0[iv])
            continue;
        const char *job = row.job;
        int k = job_index(r, job);
        size_t p = k >= 0                      ? (size_t)k
                   : strcmp(job, "idle") == 0  ? r->njobs + 1
                   : strcmp(job, "other") == 0 ? r->njobs
                                               : SIZE_MAX;
        if (p == SIZE_MAX)
            continue; /* unattributed */
        r->meas_w[(iv * nm + p) * FX_KINDS + (size_t)L->chan_kind[ch]] +=
            j / (r->t1[iv] - r->t0[iv]);
    }
    if (rc < 0)
        goto out;
    rc = 0;
    r->attribution = true;
out:
    return fx_lines_done(r, &l, rc);
}

static int build_intervals(struct loader *L)
{
    struct fx_run *r = L->r;
    size_t *cut = NULL, nc = 0;
    int rc = cut_intervals(L, &cut, &nc);
    if (rc < 0)
        return rc;
    size_t np = r->njobs + 1, nm = r->njobs + 2;
    r->t0 = calloc(nc, sizeof *r->t0);
    r->t1 = calloc(nc, sizeof *r->t1);
    r->baseline = calloc(nc, sizeof *r->baseline);
    r->power_w = calloc(nc * FX_KINDS, sizeof *r->power_w);
    r->feat = calloc(nc * np * FX_N, sizeof *r->feat);
    r->meas_w = calloc(nc * nm * FX_KINDS, sizeof *r->meas_w);
    if (!r->t0 || !r->t1 || !r->baseline || !r->power_w || !r->feat || !r->meas_w) {
        free(cut);
        return -ENOMEM;
    }
    size_t n = 0;
    for (size_t c = 1; c < nc; c++) {
        size_t a = cut[c - 1], b = cut[c];
        double t0 = L->ticks[a].t, t1 = L->ticks[b].t, dt = t1 - t0;
        if (dt < L->o.min_interval_s)
            continue;
        r->t0[n] = t0;
        r->t1[n] = t1;
        r->baseline[n] = !isfinite(r->first_start) || t1 <= r->first_start + 1e-7;
        for (int k = 0; k < FX_KINDS; k++) {
            double e = 0;
            bool ok = L->nkind[k] > 0;
            for (size_t m = a + 1; m <= b && ok; m++) {
                ok = L->ticks[m].valid[k] == L->nkind[k];
                e += L->ticks[m].w[k] * (L->ticks[m].t - L->ticks[m - 1].t);
            }
            r->power_w[n * FX_KINDS + (size_t)k] = ok ? e / dt : NAN;
        }
        double *fv = &r->feat[n * np * FX_N];
        for (size_t q = 0; q < np * FX_N; q++)
            fv[q] = NAN;
        double total = r->ncpu > 0 ? r->ncpu * dt : NAN, busy = NAN;
        if (r->node_util) {
            total = cum_at(&L->node_total, t1) - cum_at(&L->node_total, t0);
            busy = cum_at(&L->node_busy, t1) - cum_at(&L->node_busy, t0);
        }
        double jobs = 0;
        for (size_t k = 0; k < r->njobs; k++) {
            double *p = &fv[k * FX_N];
            double cpu = cum_at(&L->job_cpu[k], t1) - cum_at(&L->job_cpu[k], t0);
            p[FX_CPU_UTIL] = total > 0 ? cpu / total : NAN;
            jobs += p[FX_CPU_UTIL];
            p[FX_INSTRUCTIONS] = (cum_at(&L->job_ins[k], t1) - cum_at(&L->job_ins[k], t0)) / dt;
            p[FX_CYCLES] = (cum_at(&L->job_cyc[k], t1) - cum_at(&L->job_cyc[k], t0)) / dt;
        }
        double *o = &fv[r->njobs * FX_N];
        /* the background: the node's busy time the workloads did not use (unknown without
         * node_util.csv: then 0, and the model says so) */
        o[FX_CPU_UTIL] = r->node_util ? (total > 0 ? fmax(0.0, busy / total - jobs) : NAN) : 0.0;
        o[FX_INSTRUCTIONS] = o[FX_CYCLES] = 0; /* not counted outside the workloads */
        n++;
    }
    free(cut);
    r->nint = n;
    if (!n)
        return carma_err_set(L->e, -EINVAL,
                             "%s/samples.csv: the run is too short for one interval of %.3g s",
                             r->dir, L->o.min_interval_s);
    if (!r->node_util && r->ncpu <= 0)
        r->has_feat[FX_CPU_UTIL] = false;
    return 0;
}

int fx_run_load(const char *dir, const struct fx_opts *o, struct fx_run *ret, struct carma_err *e)
{
    struct fx_run *r = ret;
    memset(r, 0, sizeof *r);
    struct loader L = {.r = r, .e = e};
    L.o.window_s = o && o->window_s > 0 ? o->window_s : 1.0;
    L.o.min_interval_s = o && o->min_interval_s > 0 ? o->min_interval_s : L.o.window_s / 4;
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    size_t n = strlen(r->dir);
    while (n > 1 && r->dir[n - 1] == '/')
        r->dir[--n] = '\0';
    int rc;
    if ((rc = load_workloads(&L)) < 0)
        goto out;
    load_manifest(&L);
    L.job_cpu = calloc(r->njobs + 1, sizeof *L.job_cpu);
    L.job_ins = calloc(r->njobs + 1, sizeof *L.job_ins);
    L.job_cyc = calloc(r->njobs + 1, sizeof *L.job_cyc);
    if (!L.job_cpu || !L.job_ins || !L.job_cyc) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = load_samples(&L)) < 0 || (rc = load_node_util(&L)) < 0 ||
        (rc = load_features(&L)) < 0 || (rc = build_intervals(&L)) < 0 ||
        (rc = load_utilization(&L)) < 0 || (rc = load_nsys(&L)) < 0 ||
        (rc = load_attribution(&L)) < 0)
        goto out;
    if (!r->has_feat[FX_CPU_UTIL] && !r->feat_missing[FX_CPU_UTIL][0])
        snprintf(r->feat_missing[FX_CPU_UTIL], sizeof r->feat_missing[FX_CPU_UTIL],
                 "%s: neither node_util.csv nor manifest.json host.cpus: the node's CPU time "
                 "is unknown",
                 r->dir);
    if (!r->attribution)
        for (size_t i = 0; i < r->nint * (r->njobs + 2) * FX_KINDS; i++)
            r->meas_w[i] = NAN;
    rc = 0;
out:
    for (size_t k = 0; L.job_cpu && k <= r->njobs; k++) {
        cum_free(&L.job_cpu[k]);
        cum_free(&L.job_ins[k]);
        cum_free(&L.job_cyc[k]);
    }
    free(L.job_cpu);
    free(L.job_ins);
    free(L.job_cyc);
    cum_free(&L.node_busy);
    cum_free(&L.node_total);
    free(L.ticks);
    free(L.chan);
    free(L.chan_kind);
    free(L.feat_times);
    if (rc < 0)
        fx_run_free(r);
    return rc;
}

void fx_run_free(struct fx_run *r)
{
    for (size_t k = 0; r->jobs && k < r->njobs; k++)
        free(r->jobs[k]);
    free(r->jobs);
    free(r->job_start);
    free(r->job_end);
    free(r->t0);
    free(r->t1);
    free(r->baseline);
    free(r->power_w);
    free(r->feat);
    free(r->meas_w);
    for (size_t k = 0; k < r->nwarnings; k++)
        free(r->warnings[k]);
    free(r->warnings);
    memset(r, 0, sizeof *r);
}
