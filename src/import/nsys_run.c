/* nsys_run: nsys kernel busy time in a run directory, and the GPU split redone with it
 * (see nsys_run.h). */
#include "import/nsys_run.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/ledger.h"
#include "analysis/split.h"
#include "core/array.h"
#include "core/csv.h"
#include "core/file.h"
#include "core/fmt.h"
#include "core/jsonutil.h"
#include "rundir/rundir.h"

/* The longest run report.json's duration_s may give (1e9 s, 31 years): 1e18 ns, so that the
 * run's start, its last row less its length, stays within 64-bit nanoseconds. */
#define NSYS_RUN_DURATION_MAX_S 1e9

/* every GPU of a report has a ledger account */
_Static_assert(NSYS_GPUS_MAX <= LEDGER_GPUS_MAX, "a GPU without a ledger account");
/* the bases are gpu_split's, the SM one measured by kernels */
_Static_assert(NSYS_BASIS_N == GPU_BASIS_N, "nsys bases are not gpu_split's");

static const char *const basis_names[NSYS_BASIS_N] = {"kernels", "context", "allocation", "none"};

const char *nsys_run_basis_name(int b)
{
    return b >= 0 && b < NSYS_BASIS_N ? basis_names[b] : "?";
}

/* "1796046823.533260" -> Unix ns; false when it is not such a number. */
static bool parse_unix_ns(const char *s, int64_t *ret)
{
    int64_t sec = 0, frac = 0;
    int nd = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (sec > 100000000000LL)
            return false;
        sec = sec * 10 + (*p - '0');
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (nd < 9) {
                frac = frac * 10 + (*p - '0');
                nd++;
            }
    }
    if (*p || sec > INT64_MAX / 1000000000LL - 1)
        return false; /* past 2262 in ns */
    for (; nd < 9; nd++)
        frac *= 10;
    *ret = sec * 1000000000LL + frac;
    return true;
}

/* dir/name (rundir_read_json); an absent file is "not a complete run directory?", one that does
 * not parse is said with jansson's text. */
static json_t *load_json(const char *dir, const char *name, struct carma_err *e)
{
    json_error_t je;
    struct carma_err re = {0};
    json_t *j = rundir_read_json(dir, name, &je, &re);
    if (!j && re.code == -ESPIPE) {
        if (e)
            *e = re;
    } else if (!j) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        struct stat sb;
        int code = stat(path, &sb) < 0 ? -ENOENT : -EINVAL;
        carma_err_set(e, code, "%s: %s", path,
                      code == -ENOENT ? "no such file (not a complete run directory?)" : je.text);
    }
    return j;
}

static int add_owner(struct nsys_run_info *ri, size_t *cap, uint32_t pid, int job)
{
    for (size_t i = 0; i < ri->nown; i++)
        if (ri->own[i].pid == pid)
            return 0; /* the first claim stands */
    if (array_grow(&ri->own, cap, ri->nown + 1, sizeof *ri->own) < 0)
        return -ENOMEM;
    ri->own[ri->nown++] = (struct nsys_run_owner){.pid = pid, .job = job};
    return 0;
}

static int job_by_name(const struct nsys_run_info *ri, const char *name, size_t len)
{
    for (size_t k = 0; k < ri->njobs; k++)
        if (strlen(ri->job[k]) == len && strncmp(ri->job[k], name, len) == 0)
            return (int)k;
    return -1;
}

/* pstree.log: "name: pgid N ..." then "  PID" lines. Optional. */
static int load_pstree(const char *dir, struct nsys_run_info *ri, size_t *cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/pstree.log", dir);
    int err = 0;
    FILE *f = file_fopen_input(path, &err);
    if (!f)
        return 0;
    char line[4600];
    int job = -1, r = 0;
    while (r == 0 && fgets(line, sizeof line, f)) {
        if (line[0] == '#') {
            job = -1;
        } else if (line[0] == ' ') {
            char *end;
            unsigned long pid = strtoul(line, &end, 10);
            if (job >= 0 && end != line && pid > 0 && pid <= 0xFFFFFF)
                r = add_owner(ri, cap, (uint32_t)pid, job);
        } else {
            const char *m = strstr(line, ": pgid ");
            job = m ? job_by_name(ri, line, (size_t)(m - line)) : -1;
        }
    }
    fclose(f);
    return r;
}

/* samples.csv's tick times, read a line at a time (the file can be large), every row by the
 * run directory's rules (rundir.h) as carma report reads it. */
static int load_ticks(const char *dir, struct nsys_run_info *ri, struct carma_err *e)
{
    struct rundir_lines l;
    int r = rundir_lines_open(&l, dir, "samples.csv", 0, 0, e);
    if (r < 0)
        return r;
    struct rundir_samples rs;
    size_t cap = 0;
    r = rundir_samples_header(&rs, &l, e);
    while (r == 0 && (r = rundir_lines_next(&l, e)) == 1) {
        struct rundir_sample row;
        int64_t t;
        if ((r = rundir_samples_row(&rs, &l, &row, e)) < 0)
            break;
        r = 0;
        if (!parse_unix_ns(l.fld[rs.col[RS_T]], &t)) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: timestamp_unix: not a Unix time in seconds",
                              l.path, l.line);
            break;
        }
        if (ri->nticks && t <= ri->ticks[ri->nticks - 1])
            continue; /* the same tick's other channels */
        if (array_grow(&ri->ticks, &cap, ri->nticks + 1, sizeof *ri->ticks) < 0) {
            r = carma_err_set(e, -ENOMEM, "out of memory");
            break;
        }
        ri->ticks[ri->nticks++] = t;
    }
    if (r == 0 && l.torn)
        rundir_torn_warning(&l, ri->warning, sizeof ri->warning);
    if (r == 0 && ri->nticks < 2)
        r = carma_err_set(e, -EINVAL, "%s: fewer than two sample ticks", l.path);
    rundir_lines_close(&l);
    return r < 0 ? r : 0;
}

int nsys_run_info_load(const char *run_dir, struct nsys_run_info *ri, struct carma_err *e)
{
    memset(ri, 0, sizeof *ri);
    json_t *rep = load_json(run_dir, "report.json", e), *wl = NULL;
    int r = 0;
    size_t cap = 0;
    if (!rep)
        return e && e->code ? e->code : -EINVAL;
    wl = load_json(run_dir, "workloads.json", e);
    if (!wl) {
        r = e && e->code ? e->code : -EINVAL;
        goto out;
    }
    json_t *ws = json_object_get(wl, "workloads");
    ri->njobs = json_array_size(ws);
    ri->job = calloc(ri->njobs ? ri->njobs : 1, sizeof *ri->job);
    if (!ri->job) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < ri->njobs; k++) {
        json_t *w = json_array_get(ws, k);
        const char *name = json_string_value(json_object_get(w, "name"));
        ri->job[k] = strdup(name ? name : "");
        if (!ri->job[k]) {
            r = carma_err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
    }
    /* each workload's main process (its process group) first, then pstree.log's */
    for (size_t k = 0; k < ri->njobs && r == 0; k++) {
        json_t *w = json_array_get(ws, k), *v;
        size_t i;
        json_array_foreach(json_object_get(w, "pids"), i, v)
        {
            if (json_is_integer(v) && json_integer_value(v) > 0 && r == 0)
                r = add_owner(ri, &cap, (uint32_t)json_integer_value(v), (int)k);
        }
        v = json_object_get(w, "pgid");
        if (json_is_integer(v) && json_integer_value(v) > 0 && r == 0)
            r = add_owner(ri, &cap, (uint32_t)json_integer_value(v), (int)k);
    }
    if (r == 0)
        r = load_pstree(run_dir, ri, &cap);
    if (r < 0) {
        carma_err_set(e, r, "out of memory");
        goto out;
    }
    json_t *g;
    size_t i;
    json_array_foreach(json_object_get(rep, "gpus"), i, g)
    {
        json_t *ix = json_object_get(g, "index");
        const char *u = json_string_value(json_object_get(g, "uuid"));
        if (!json_is_integer(ix) || json_integer_value(ix) < 0 ||
            json_integer_value(ix) >= NSYS_GPUS_MAX || !u)
            continue;
        size_t x = (size_t)json_integer_value(ix);
        free(ri->uuid_store[x]);
        ri->uuid_store[x] = strdup(u);
        ri->uuid[x] = ri->uuid_store[x];
        if (x + 1 > ri->ngpu)
            ri->ngpu = x + 1;
    }
    r = load_ticks(run_dir, ri, e);
out:
    json_decref(rep);
    json_decref(wl);
    if (r < 0)
        nsys_run_info_free(ri);
    return r;
}

void nsys_run_info_free(struct nsys_run_info *ri)
{
    for (size_t k = 0; ri->job && k < ri->njobs; k++)
        free(ri->job[k]);
    free(ri->job);
    free(ri->own);
    free(ri->ticks);
    for (size_t i = 0; i < NSYS_GPUS_MAX; i++)
        free(ri->uuid_store[i]);
    memset(ri, 0, sizeof *ri);
}

int nsys_run_owner_of(const struct nsys_run_info *ri, uint32_t pid)
{
    for (size_t i = 0; i < ri->nown; i++)
        if (ri->own[i].pid == pid)
            return ri->own[i].job;
    return -1;
}

/* ---- the re-attribution ---- */

struct arow { /* a row of attribution.csv, its cells as the file has them (load_attr's text) */
    const char *ts, *channel, *job, *joules;
    int64_t ts_ns;
    double j;
    int gpu;     /* the GPU (report.json gpus[]) whose channel it is, -1 */
    long period; /* its period among that GPU's, -1 */
    bool first;  /* the first row of its period */
};

struct brow { /* a row of nsys_gpu.csv */
    int64_t t0, t1;
    int gpu, job; /* job -1: other */
    double busy_s;
};

struct period {
    int64_t t0, t1;
    double de;
    double *out; /* njobs + 3: each job's, idle, other, unattributed */
};

/* Appends s with its NUL to the text *t (length *n, room *cap). 0 or -ENOMEM. */
static int text_put(char **t, size_t *n, size_t *cap, const char *s)
{
    size_t len = strlen(s) + 1;
    if (array_grow(t, cap, *n + len, 1) < 0)
        return -ENOMEM;
    memcpy(*t + *n, s, len);
    *n += len;
    return 0;
}

/*
 * The rows of the NVML split (attribution.csv or attribution_nvml.csv, dir/name), each by the
 * run directory's rules (rundir.h) as carma report reads it; t0 is samples.csv's first tick.
 * Each row's timestamp_unix, channel, job and joules cells, as the file has them, go into
 * *ret_text (caller frees), which the rows point into. A torn last line is skipped and said in
 * warning.
 */
static int load_attr(const char *dir, const char *name, double t0, struct arow **ret, size_t *ret_n,
                     char **ret_text, char *warning, size_t wcap, struct carma_err *e)
{
    struct rundir_lines l;
    int r = rundir_lines_start(&l, dir, name, e);
    if (r < 0)
        return r;
    size_t n = 0, cap = 0, tn = 0, tcap = 0;
    struct arow *a = NULL;
    char *text = NULL;
    struct rundir_attr ra;
    if ((r = rundir_attr_header(&ra, t0, &l, e)) < 0)
        goto out;
    while ((r = rundir_lines_next(&l, e)) == 1) {
        struct rundir_attr_row row;
        if ((r = rundir_attr_row(&ra, &l, &row, e)) < 0)
            goto out;
        if (array_grow(&a, &cap, n + 1, sizeof *a) < 0) {
            r = carma_err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        const char *ts = l.fld[ra.col[0]];
        struct arow *w = &a[n++];
        *w = (struct arow){.j = row.j, .gpu = -1, .period = -1};
        if (!parse_unix_ns(ts, &w->ts_ns)) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: timestamp_unix: not a Unix time in seconds",
                              l.path, l.line);
            goto out;
        }
        if (text_put(&text, &tn, &tcap, ts) < 0 || text_put(&text, &tn, &tcap, row.channel) < 0 ||
            text_put(&text, &tn, &tcap, row.job) < 0 ||
            text_put(&text, &tn, &tcap, l.fld[ra.col[3]]) < 0) {
            r = carma_err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
    }
    if (r < 0)
        goto out;
    r = 0;
    if (l.torn)
        rundir_torn_warning(&l, warning, wcap);
    const char *p = text;
    for (size_t i = 0; i < n; i++) { /* the text is whole: each row's four cells, in order */
        a[i].ts = p;
        a[i].channel = a[i].ts + strlen(a[i].ts) + 1;
        a[i].job = a[i].channel + strlen(a[i].channel) + 1;
        a[i].joules = a[i].job + strlen(a[i].job) + 1;
        p = a[i].joules + strlen(a[i].joules) + 1;
    }
    *ret = a;
    *ret_n = n;
    *ret_text = text;
    a = NULL;
    text = NULL;
out:
    rundir_lines_close(&l);
    free(a);
    free(text);
    return r;
}

/* The rows of nsys_gpu.csv (an empty file has none). A torn last line is skipped and said in
 * warning unless warning already holds one. */
static int load_busy(const char *dir, const struct nsys_run_info *ri, struct brow **ret,
                     size_t *ret_n, char *warning, size_t wcap, struct carma_err *e)
{
    static const char *const name = "nsys_gpu.csv";
    struct rundir_lines l;
    int r = rundir_lines_start(&l, dir, name, e);
    if (r < 0)
        return r;
    size_t n = 0, cap = 0;
    struct brow *b = NULL;
    int c[6] = {0};
    static const char *const cols[] = {
        "interval_start_unix", "interval_end_unix", "gpu", "pid", "workload", "busy_s"};
    if ((r = rundir_lines_next(&l, e)) == 1) /* the header */
        for (int i = 0; i < 6; i++)
            if ((c[i] = rundir_lines_column(&l, cols[i])) < 0) {
                r = carma_err_set(e, -EINVAL, "%s: no column %s", name, cols[i]);
                goto out;
            }
    while (r == 1 && (r = rundir_lines_next(&l, e)) == 1) {
        bool ok = true;
        for (int i = 0; i < 6; i++)
            ok = ok && c[i] < (int)l.nf;
        int64_t t0 = 0, t1 = 0;
        char *e1 = NULL, *e2 = NULL;
        long gpu = 0;
        double busy = 0;
        if (ok) {
            gpu = strtol(l.fld[c[2]], &e1, 10);
            busy = strtod(l.fld[c[5]], &e2);
            ok = parse_unix_ns(l.fld[c[0]], &t0) && parse_unix_ns(l.fld[c[1]], &t1) && t1 > t0 &&
                 e1 != l.fld[c[2]] && !*e1 && e2 != l.fld[c[5]] && !*e2 && isfinite(busy) &&
                 busy >= 0;
        }
        if (!ok) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: not a row of nsys_gpu.csv", name, l.line);
            goto out;
        }
        if (array_grow(&b, &cap, n + 1, sizeof *b) < 0) {
            r = carma_err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        const char *wname = l.fld[c[4]];
        b[n++] = (struct brow){.t0 = t0,
                               .t1 = t1,
                               .gpu = (int)gpu,
                               .job = job_by_name(ri, wname, strlen(wname)),
                               .busy_s = busy};
    }
    if (r < 0)
        goto out;
    r = 0;
    if (l.torn && !warning[0])
        rundir_torn_warning(&l, warning, wcap);
    *ret = b;
    *ret_n = n;
    b = NULL;
out:
    rundir_lines_close(&l);
    free(b);
    return r;
}

static int brow_cmp(const void *x, const void *y)
{
    const struct brow *a = x, *b = y;
    return a->t0 < b->t0 ? -1 : a->t0 > b->t0 ? 1 : 0;
}

static bool is_node_channel(json_t *rep, const char *ch)
{
    json_t *v;
    size_t i;
    json_array_foreach(json_object_get(rep, "node_channels"), i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), ch) == 0)
            return true;
    }
    return false;
}

static void add_num(json_t *o, const char *key, double d)
{
    double v = jsonutil_get_num(o, key);
    json_object_set_new(o, key, json_real((isfinite(v) ? v : 0.0) + d));
}

/* The redone split of GPU gi (NVML index) over its periods; fills the periods' out and the
 * seconds of each basis in l's account gi. */
static void split_gpu(const struct nsys_run_info *ri, json_t *gj, const struct brow *b, size_t nb,
                      struct period *per, size_t np, const double *start, const double *end,
                      enum split_policy policy, struct ledger *l, size_t gi, int index,
                      double *busy_total)
{
    size_t nj = ri->njobs < SPLIT_JOBS_MAX ? ri->njobs : SPLIT_JOBS_MAX;
    double sw = jsonutil_get_num(gj, "static_power_w");
    if (!isfinite(sw) || sw < 0)
        sw = 0;
    bool owns[SPLIT_JOBS_MAX] = {0}, had[SPLIT_JOBS_MAX] = {0};
    json_t *v;
    size_t i;
    json_array_foreach(json_object_get(gj, "owners"), i, v)
    {
        const char *s = json_string_value(v);
        int k = s ? job_by_name(ri, s, strlen(s)) : -1;
        if (k >= 0 && (size_t)k < nj)
            owns[k] = true;
    }
    for (size_t x = 0; x < nb; x++)
        if (b[x].gpu == index && b[x].job >= 0 && (size_t)b[x].job < nj && b[x].busy_s > 0)
            had[b[x].job] = true;
    size_t lo = 0;
    for (size_t p = 0; p < np; p++) {
        struct period *q = &per[p];
        double busy[SPLIT_JOBS_MAX] = {0}, other = 0;
        while (lo < nb && b[lo].t1 <= q->t0)
            lo++;
        /* rows are sorted by start; a row's interval is at most a few ticks long */
        for (size_t x = lo; x < nb && b[x].t0 < q->t1; x++) {
            if (b[x].gpu != index || b[x].t1 <= q->t0)
                continue;
            int64_t a = b[x].t0 > q->t0 ? b[x].t0 : q->t0, z = b[x].t1 < q->t1 ? b[x].t1 : q->t1;
            double part = b[x].busy_s * (double)(z - a) / (double)(b[x].t1 - b[x].t0);
            if (b[x].job >= 0 && (size_t)b[x].job < nj)
                busy[b[x].job] += part;
            else
                other += part;
        }
        double t0s = (double)q->t0 / 1e9, t1s = (double)q->t1 / 1e9;
        bool running[SPLIT_JOBS_MAX] = {0};
        double w[SPLIT_JOBS_MAX] = {0}, node = 0;
        int basis = 3;
        for (size_t k = 0; k < nj; k++) {
            node += busy[k];
            running[k] = busy[k] > 0;
            w[k] = busy[k];
            busy_total[k] += busy[k];
        }
        busy_total[nj] += other;
        node += other;
        if (node > 0) {
            basis = 0;
        } else {
            for (int pass = 1; pass <= 2 && node == 0; pass++) {
                for (size_t k = 0; k < nj; k++) {
                    bool alive =
                        isfinite(start[k]) && start[k] < t1s && (!isfinite(end[k]) || end[k] > t0s);
                    if (alive && (pass == 1 ? had[k] : owns[k])) {
                        w[k] = 1;
                        running[k] = true;
                        node += 1;
                    }
                }
                if (node > 0)
                    basis = pass;
            }
        }
        double dt = (double)(q->t1 - q->t0) / 1e9;
        struct split_in in = {
            .de_j = q->de,
            .static_j = sw * (dt > 0 ? dt : 0),
            .njobs = nj,
            .job_busy = w,
            .running = running,
            .node_busy = node,
            .policy = policy,
        };
        struct split_out o;
        split_energy(&in, &o);
        for (size_t k = 0; k < nj; k++)
            q->out[k] = o.job_j[k];
        q->out[ri->njobs] = o.idle_j;
        q->out[ri->njobs + 1] = o.other_j;
        q->out[ri->njobs + 2] = o.unattributed_j;
        ledger_basis(l, gi, (enum gpu_basis)basis, dt > 0 ? dt : 0);
    }
}

/* Posts period q of GPU gi (its rows stamped ts, channel ch) to the ledger: its rows of
 * attribution.csv and the GPU's account. */
static int post_period(struct ledger *l, const struct nsys_run_info *ri, const struct period *q,
                       size_t gi, const char *ts, const char *ch)
{
    struct split_out o = {0};
    for (size_t k = 0; k < l->njobs; k++)
        o.job_j[k] = q->out[k];
    o.idle_j = q->out[ri->njobs];
    o.other_j = q->out[ri->njobs + 1];
    o.unattributed_j = q->out[ri->njobs + 2];
    struct ledger_post p = {
        .channel = ch,
        .kind = KIND_GPU,
        .node = false, /* the node's totals follow report.json's (below) */
        .gpu = (int)gi,
        .njobs = l->njobs,
        .de_j = q->de,
    };
    struct ledger_time at = {.ts = ts, .g_per_j = 0};
    return ledger_post(l, &p, &o, &at);
}

/* attribution.csv, written whole by the ledger's flush. */
static int write_attr(void *ctx, const char *rows, size_t len, uint64_t nrows)
{
    (void)nrows;
    return file_replace(ctx, rows, len);
}

int nsys_run_reattribute(const char *run_dir, struct nsys_reattr *out, struct carma_err *e)
{
    memset(out, 0, sizeof *out);
    struct nsys_run_info ri;
    int r = nsys_run_info_load(run_dir, &ri, e);
    if (r < 0)
        return r;
    json_t *rep = NULL, *wl = NULL;
    char *atext = NULL;
    size_t na = 0, nb = 0, nper_all = 0;
    struct arow *a = NULL;
    struct brow *b = NULL;
    struct period *per = NULL;
    double *outs = NULL, *start = NULL, *end = NULL;
    struct ledger *l = NULL;
    char apath[4200];
    size_t *gfirst = NULL, *gcount = NULL;

    rep = load_json(run_dir, "report.json", e);
    wl = load_json(run_dir, "workloads.json", e);
    if (!rep || !wl) {
        r = e && e->code ? e->code : -EINVAL;
        goto out;
    }
    json_t *gpus = json_object_get(rep, "gpus");
    size_t ng = json_array_size(gpus);
    if (ng == 0) {
        r = carma_err_set(e, -ENODATA, "%s: the run split no GPU's energy (no NVML GPU)", run_dir);
        goto out;
    }
    if (ng > NSYS_GPUS_MAX)
        ng = NSYS_GPUS_MAX;
    enum split_policy policy = SPLIT_IDLE;
    const char *pol =
        json_string_value(json_object_get(json_object_get(rep, "attribution"), "idle_policy"));
    if (pol && split_policy_parse(pol, &policy) < 0) {
        r = carma_err_set(e, -EINVAL, "%s/report.json: unknown idle policy \"%s\"", run_dir, pol);
        goto out;
    }
    /* the run's length, which dates its first period's start (absent: from the epoch); a
     * negative one, or one past NSYS_RUN_DURATION_MAX_S, is no run's and would take the start
     * out of 64-bit nanoseconds */
    double duration = jsonutil_get_num(rep, "duration_s");
    if (isfinite(duration) && !(duration >= 0 && duration <= NSYS_RUN_DURATION_MAX_S)) {
        r = carma_err_set(e, -EINVAL,
                          "%s/report.json: duration_s: %g s is no run's length (0 to %g s)",
                          run_dir, duration, NSYS_RUN_DURATION_MAX_S);
        goto out;
    }
    json_t *rws = json_object_get(rep, "workloads");
    if (json_array_size(rws) != ri.njobs) {
        r = carma_err_set(e, -EINVAL, "%s: report.json and workloads.json differ in workloads",
                          run_dir);
        goto out;
    }

    /* the NVML split: attribution_nvml.csv when an import was made before */
    char path[4200];
    snprintf(path, sizeof path, "%s/attribution_nvml.csv", run_dir);
    struct stat sb;
    bool have_nvml = stat(path, &sb) == 0;
    const char *aname = have_nvml ? "attribution_nvml.csv" : "attribution.csv";
    if ((r = load_attr(run_dir, aname, (double)ri.ticks[0] / 1e9, &a, &na, &atext, out->warning,
                       sizeof out->warning, e)) < 0 ||
        (r = load_busy(run_dir, &ri, &b, &nb, out->warning, sizeof out->warning, e)) < 0)
        goto out;
    qsort(b, nb, sizeof *b, brow_cmp);

    start = calloc(ri.njobs + 1, sizeof *start);
    end = calloc(ri.njobs + 1, sizeof *end);
    gfirst = calloc(ng, sizeof *gfirst);
    gcount = calloc(ng, sizeof *gcount);
    l = malloc(sizeof *l);
    if (!start || !end || !gfirst || !gcount || !l) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    snprintf(apath, sizeof apath, "%s/attribution.csv", run_dir);
    ledger_init(l, ri.njobs, (const char *const *)ri.job, write_attr, apath);
    json_t *wsj = json_object_get(wl, "workloads");
    for (size_t k = 0; k < ri.njobs; k++) {
        start[k] = jsonutil_num(json_object_get(json_array_get(wsj, k), "start_unix"));
        end[k] = jsonutil_num(json_object_get(json_array_get(wsj, k), "end_unix"));
    }

    /* the periods: each GPU's rows grouped by their split's timestamp */
    int64_t last_ts = 0;
    for (size_t i = 0; i < na; i++)
        if (a[i].ts_ns > last_ts)
            last_ts = a[i].ts_ns;
    int64_t window0 = isfinite(duration) ? last_ts - (int64_t)llround(duration * 1e9) : 0;
    for (size_t i = 0; i < na; i++) {
        for (size_t g = 0; g < ng; g++) {
            const char *ch = json_string_value(json_object_get(json_array_get(gpus, g), "channel"));
            if (ch && strcmp(ch, a[i].channel) == 0) {
                a[i].gpu = (int)g;
                break;
            }
        }
    }
    for (size_t g = 0; g < ng; g++) {
        int64_t prev_ts = INT64_MIN;
        for (size_t i = 0; i < na; i++) {
            if (a[i].gpu != (int)g)
                continue;
            if (a[i].ts_ns != prev_ts) {
                gcount[g]++;
                a[i].first = true;
                prev_ts = a[i].ts_ns;
            }
        }
    }
    for (size_t g = 0; g < ng; g++) {
        gfirst[g] = nper_all;
        nper_all += gcount[g];
    }
    size_t width = ri.njobs + 3;
    per = calloc(nper_all ? nper_all : 1, sizeof *per);
    outs = calloc((nper_all ? nper_all : 1) * width, sizeof *outs);
    if (!per || !outs) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    for (size_t g = 0; g < ng; g++) {
        long p = -1;
        int64_t prev = window0;
        for (size_t i = 0; i < na; i++) {
            if (a[i].gpu != (int)g)
                continue;
            if (a[i].first) {
                p++;
                struct period *q = &per[gfirst[g] + (size_t)p];
                q->t0 = prev < a[i].ts_ns ? prev : a[i].ts_ns;
                q->t1 = a[i].ts_ns;
                q->out = &outs[(gfirst[g] + (size_t)p) * width];
                prev = a[i].ts_ns;
            }
            a[i].period = p;
            per[gfirst[g] + (size_t)p].de += a[i].j;
        }
    }

    /* the new split, per GPU */
    double *busy_total = calloc(ng * (ri.njobs + 1), sizeof *busy_total);
    if (!busy_total) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    out->ngpu = ng;
    for (size_t g = 0; g < ng; g++) {
        json_t *gj = json_array_get(gpus, g);
        struct nsys_reattr_gpu *rg = &out->gpu[g];
        snprintf(rg->channel, sizeof rg->channel, "%s",
                 json_string_value(json_object_get(gj, "channel"))
                     ? json_string_value(json_object_get(gj, "channel"))
                     : "");
        json_t *ix = json_object_get(gj, "index");
        rg->index = json_is_integer(ix) ? (int)json_integer_value(ix) : -1;
        split_gpu(&ri, gj, b, nb, &per[gfirst[g]], gcount[g], start, end, policy, l, g, rg->index,
                  &busy_total[g * (ri.njobs + 1)]);
        out->periods += gcount[g];
    }

    /* attribution.csv: the GPU rows anew (posted to the ledger), every other row as it was */
    r = csv_buf_raw(&l->csv, "timestamp_unix,channel,job,joules\r\n", 35);
    for (size_t i = 0; i < na && r == 0; i++) {
        if (a[i].gpu < 0)
            r = ledger_row(l, a[i].ts, a[i].channel, a[i].job, a[i].joules);
        else if (a[i].first)
            r = post_period(l, &ri, &per[gfirst[a[i].gpu] + (size_t)a[i].period], (size_t)a[i].gpu,
                            a[i].ts, a[i].channel);
    }
    for (size_t g = 0; g < ng; g++) {
        const struct ledger_gpu *lg = &l->gpu[g];
        struct nsys_reattr_gpu *rg = &out->gpu[g];
        rg->energy_j = lg->total_j;
        rg->jobs_j = lg->jobs_j;
        rg->idle_j = lg->idle_j;
        rg->other_j = lg->other_j;
        rg->unattributed_j = lg->unattr_j;
        memcpy(rg->basis_s, lg->basis_s, sizeof rg->basis_s);
    }
    if (r < 0) {
        free(busy_total);
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }

    /* report.json: per workload and per GPU, from the new totals */
    double tot = jsonutil_get_num(rep, "total_energy_j");
    double opg =
        jsonutil_num(json_object_get(json_object_get(rep, "carbon"), "operational_g_co2e"));
    double g_per_j = isfinite(tot) && tot > 0 && isfinite(opg) ? opg / tot : 0.0;
    for (size_t g = 0; g < ng; g++) {
        json_t *gj = json_array_get(gpus, g);
        struct nsys_reattr_gpu *rg = &out->gpu[g];
        bool node = is_node_channel(rep, rg->channel);
        for (size_t k = 0; k < ri.njobs; k++) {
            double nj = k < l->njobs ? l->job[k].gpu_j[g] : 0.0;
            json_t *w = json_array_get(rws, k);
            json_t *gm = json_object_get(w, "gpu_j");
            if (!json_is_object(gm)) {
                gm = json_object();
                json_object_set_new(w, "gpu_j", gm);
            }
            double old = jsonutil_get_num(gm, rg->channel);
            double d = nj - (isfinite(old) ? old : 0.0);
            json_object_set_new(gm, rg->channel, json_real(nj));
            if (node && d != 0.0) {
                add_num(w, "energy_j", d);
                json_t *bk = json_object_get(w, "energy_by_kind_j");
                if (json_is_object(bk))
                    add_num(bk, "gpu", d);
                add_num(w, "operational_g_co2e", d * g_per_j);
                double dur = jsonutil_get_num(w, "duration_s");
                double en = jsonutil_get_num(w, "energy_j");
                if (isfinite(dur) && dur > 0)
                    json_object_set_new(w, "avg_power_w", json_real(en / dur));
            }
        }
        static const char *const keys[] = {"idle", "other", "unattributed"};
        double nv[3] = {rg->idle_j, rg->other_j, rg->unattributed_j};
        for (int t = 0; t < 3; t++) {
            char key[32];
            snprintf(key, sizeof key, "%s_j", keys[t]);
            double old = jsonutil_get_num(gj, key);
            if (node) {
                json_t *top = json_object_get(rep, keys[t]);
                if (json_is_object(top))
                    add_num(top, "energy_j", nv[t] - (isfinite(old) ? old : 0.0));
            }
            json_object_set_new(gj, key, json_real(nv[t]));
        }
        json_object_set_new(gj, "jobs_j", json_real(rg->jobs_j));
        json_object_set_new(gj, "attribution", json_string("nsys"));
        json_t *bs = json_object();
        for (int k = 0; k < NSYS_BASIS_N; k++)
            json_object_set_new(bs, basis_names[k], json_real(rg->basis_s[k]));
        json_object_set_new(gj, "nsys_basis_s", bs);
        json_t *bu = json_object();
        for (size_t k = 0; k <= ri.njobs; k++)
            json_object_set_new(bu, k < ri.njobs ? ri.job[k] : "other",
                                json_real(busy_total[g * (ri.njobs + 1) + k]));
        json_object_set_new(gj, "nsys_busy_s", bu);
    }
    free(busy_total);
    json_t *att = json_object_get(rep, "attribution");
    if (json_is_object(att))
        json_object_set_new(att, "gpu", json_string("nsys"));

    /* the files: attribution_nvml.csv kept once, then attribution.csv and report.json */
    if (!have_nvml && rename(apath, path) < 0) {
        r = carma_err_set(e, -errno, "cannot rename %s to %s: %s", apath, path, strerror(errno));
        goto out;
    }
    if ((r = ledger_flush(l)) < 0) {
        carma_err_set(e, r, "%s: cannot write: %s (the NVML split is in %s)", apath, strerror(-r),
                      path);
        goto out;
    }
    char *text = json_dumps(rep, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16));
    if (!text) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    size_t tl = strlen(text);
    text[tl] = '\n';
    snprintf(apath, sizeof apath, "%s/report.json", run_dir);
    r = file_replace(apath, text, tl + 1);
    free(text);
    if (r < 0)
        carma_err_set(e, r, "%s: cannot write: %s (attribution.csv was rewritten)", apath,
                      strerror(-r));
out:
    if (l)
        ledger_done(l);
    free(l);
    free(gfirst);
    free(gcount);
    free(per);
    free(outs);
    free(start);
    free(end);
    free(a);
    free(b);
    free(atext);
    json_decref(rep);
    json_decref(wl);
    nsys_run_info_free(&ri);
    return r;
}
