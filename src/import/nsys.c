/* nsys: GPU kernel busy time per process from an Nsight Systems SQLite export (see nsys.h). */
#include "import/nsys.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/file.h"
#include "core/fmt.h"

#define T_SESSION "TARGET_INFO_SESSION_START_TIME"
#define T_KERNEL  "CUPTI_ACTIVITY_KIND_KERNEL"
#define T_CUDADEV "TARGET_INFO_CUDA_DEVICE"
#define T_GPU     "TARGET_INFO_GPU"

uint32_t nsys_pid(int64_t global_pid)
{
    return (uint32_t)(((uint64_t)global_pid >> 24) & 0xFFFFFFu);
}

/* 1 when the table (or view) exists, 0 when not, -1 on an SQLite error. */
static int has_table(sqlite3 *db, const char *table)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') "
                           "AND name = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* 1 when table has the column, 0 when not, -1 on an SQLite error. */
static int has_column(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* The error of the last SQLite call on db, as "path: what" (-EINVAL). */
static int db_error(sqlite3 *db, const char *path, const char *doing, struct carma_err *e)
{
    int code = db ? sqlite3_errcode(db) : SQLITE_ERROR;
    const char *msg = db ? sqlite3_errmsg(db) : "cannot open";
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
        return carma_err_set(e, -EINVAL, "%s: not a readable SQLite database (%s)", path, msg);
    if (code == SQLITE_NOMEM)
        return carma_err_set(e, -ENOMEM, "%s: out of memory", path);
    return carma_err_set(e, -EINVAL, "%s: %s: %s", path, doing, msg);
}

/* Checks that table has every column of cols (NULL-ended). */
static int need_columns(sqlite3 *db, const char *path, const char *table, const char *const *cols,
                        struct carma_err *e)
{
    for (size_t i = 0; cols[i]; i++) {
        int h = has_column(db, table, cols[i]);
        if (h < 0)
            return db_error(db, path, "reading the schema", e);
        if (h == 0)
            return carma_err_set(e, -EINVAL,
                                 "%s: table %s has no column %s: not an Nsight Systems SQLite "
                                 "export of a known schema",
                                 path, table, cols[i]);
    }
    return 0;
}

static void copy_text(char *dst, size_t cap, const unsigned char *s)
{
    snprintf(dst, cap, "%s", s ? (const char *)s : "");
}

/* TARGET_INFO_GPU, when present: the GPUs with their UUIDs and names. */
static int load_gpus(sqlite3 *db, const char *path, struct nsys_profile *p, struct carma_err *e)
{
    int h = has_table(db, T_GPU);
    if (h <= 0)
        return h < 0 ? db_error(db, path, "reading the schema", e) : 0;
    int hid = has_column(db, T_GPU, "id"), hu = has_column(db, T_GPU, "uuid"),
        hn = has_column(db, T_GPU, "name");
    if (hid < 0 || hu < 0 || hn < 0)
        return db_error(db, path, "reading the schema", e);
    if (!hid)
        return 0; /* nothing to join on */
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT id, %s, %s FROM " T_GPU " ORDER BY id", hu ? "uuid" : "''",
             hn ? "name" : "''");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_error(db, path, "reading " T_GPU, e);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) == SQLITE_NULL || p->ngpus >= NSYS_GPUS_MAX)
            continue;
        struct nsys_gpu *g = &p->gpus[p->ngpus++];
        g->id = sqlite3_column_int(st, 0);
        copy_text(g->uuid, sizeof g->uuid, sqlite3_column_text(st, 1));
        copy_text(g->name, sizeof g->name, sqlite3_column_text(st, 2));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(db, path, "reading " T_GPU, e);
}

struct devmap {
    int64_t pid; /* -1: the export gives no pid (the mapping holds for every process) */
    int cuda, gpu;
};

/* TARGET_INFO_CUDA_DEVICE, when present: (pid, cudaId) -> gpuId. *ret NULL when absent. */
static int load_devmap(sqlite3 *db, const char *path, struct devmap **ret, size_t *ret_n,
                       struct carma_err *e)
{
    *ret = NULL;
    *ret_n = 0;
    int h = has_table(db, T_CUDADEV);
    if (h <= 0)
        return h < 0 ? db_error(db, path, "reading the schema", e) : 0;
    int hg = has_column(db, T_CUDADEV, "gpuId"), hc = has_column(db, T_CUDADEV, "cudaId"),
        hp = has_column(db, T_CUDADEV, "pid");
    if (hg < 0 || hc < 0 || hp < 0)
        return db_error(db, path, "reading the schema", e);
    if (!hg || !hc)
        return 0;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT %s, cudaId, gpuId FROM " T_CUDADEV, hp ? "pid" : "-1");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_error(db, path, "reading " T_CUDADEV, e);
    size_t n = 0, cap = 0;
    struct devmap *m = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 1) == SQLITE_NULL || sqlite3_column_type(st, 2) == SQLITE_NULL)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            if (nc > 65536)
                break; /* more processes than anyone profiles: keep the first */
            struct devmap *t = realloc(m, nc * sizeof *m);
            if (!t) {
                sqlite3_finalize(st);
                free(m);
                return carma_err_set(e, -ENOMEM, "%s: out of memory", path);
            }
            m = t;
            cap = nc;
        }
        m[n++] = (struct devmap){
            .pid = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0),
            .cuda = sqlite3_column_int(st, 1),
            .gpu = sqlite3_column_int(st, 2),
        };
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        free(m);
        return db_error(db, path, "reading " T_CUDADEV, e);
    }
    *ret = m;
    *ret_n = n;
    return 0;
}

/* The GPU of a kernel of pid on its CUDA device cuda, or -1 when the mapping does not say. */
static int devmap_gpu(const struct devmap *m, size_t n, uint32_t pid, int cuda)
{
    int any = -1;
    bool ambiguous = false;
    for (size_t i = 0; i < n; i++) {
        if (m[i].cuda != cuda)
            continue;
        if (m[i].pid == (int64_t)pid)
            return m[i].gpu;
        if (m[i].pid < 0) {
            if (any >= 0 && any != m[i].gpu)
                ambiguous = true;
            any = m[i].gpu;
        }
    }
    return ambiguous ? -1 : any;
}

static int load_kernels(sqlite3 *db, const char *path, struct nsys_profile *p,
                        const struct devmap *m, size_t nm, struct carma_err *e)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT start, end, deviceId, globalPid FROM " T_KERNEL, -1, &st,
                           NULL) != SQLITE_OK)
        return db_error(db, path, "reading " T_KERNEL, e);
    size_t cap = 0;
    int rc, r = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bool null = false;
        for (int c = 0; c < 4; c++)
            null = null || sqlite3_column_type(st, c) == SQLITE_NULL;
        int64_t s = sqlite3_column_int64(st, 0), en = sqlite3_column_int64(st, 1);
        int64_t us, ue;
        /* 0 and 0: CUPTI could not time the kernel; a time past 2262 (a damaged file): skipped
         * as well */
        if (null || (s == 0 && en == 0) || en < s ||
            __builtin_add_overflow(p->session_start_unix_ns, s, &us) ||
            __builtin_add_overflow(p->session_start_unix_ns, en, &ue)) {
            p->skipped++;
            continue;
        }
        if (p->n >= NSYS_KERNELS_MAX) {
            r = carma_err_set(e, -EFBIG, "%s: more than %u kernels", path, NSYS_KERNELS_MAX);
            break;
        }
        if (p->n == cap) {
            size_t nc = cap ? cap * 2 : 1024;
            struct nsys_kernel *t = realloc(p->k, nc * sizeof *t);
            if (!t) {
                r = carma_err_set(e, -ENOMEM, "%s: out of memory", path);
                break;
            }
            p->k = t;
            cap = nc;
        }
        struct nsys_kernel *k = &p->k[p->n++];
        k->start_ns = us;
        k->end_ns = ue;
        k->pid = nsys_pid(sqlite3_column_int64(st, 3));
        k->device = sqlite3_column_int(st, 2);
        int g = m ? devmap_gpu(m, nm, k->pid, k->device) : -1;
        if (g < 0 && p->ngpus == 1)
            g = p->gpus[0].id;
        if (g < 0) {
            g = k->device;
            p->unmapped++;
        }
        k->gpu = g;
        k->index = g;
    }
    if (!r && rc != SQLITE_DONE)
        r = db_error(db, path, "reading " T_KERNEL, e);
    sqlite3_finalize(st);
    return r;
}

int nsys_load(const char *path, struct nsys_profile *ret, struct carma_err *e)
{
    memset(ret, 0, sizeof *ret);
    /* SQLite would create nothing read-only, but says only "unable to open": tell why first */
    int fd = file_open_input(AT_FDCWD, path, NULL);
    if (fd == -ESPIPE)
        return file_input_err(e, path, fd);
    if (fd < 0)
        return carma_err_set(e, fd, "%s: cannot open: %s", path, strerror(-fd));
    char magic[16] = {0};
    ssize_t got = read(fd, magic, sizeof magic);
    close(fd);
    if (got != (ssize_t)sizeof magic || memcmp(magic, "SQLite format 3", 16) != 0)
        return carma_err_set(e, -EINVAL,
                             "%s: not an SQLite database (export the report with `nsys export "
                             "--type sqlite` or profile with --export=sqlite)",
                             path);
    sqlite3 *db = NULL;
    struct devmap *m = NULL;
    size_t nm = 0;
    int r;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        r = db_error(db, path, "cannot open", e);
        goto out;
    }
    int h = has_table(db, T_SESSION);
    if (h < 0) {
        r = db_error(db, path, "reading the schema", e);
        goto out;
    }
    if (h == 0) {
        r = carma_err_set(e, -EINVAL,
                          "%s: no table " T_SESSION ": not an Nsight Systems SQLite export (its "
                          "times cannot be aligned to wall time)",
                          path);
        goto out;
    }
    static const char *const scols[] = {"utcEpochNs", NULL};
    if ((r = need_columns(db, path, T_SESSION, scols, e)) < 0)
        goto out;
    h = has_table(db, T_KERNEL);
    if (h < 0) {
        r = db_error(db, path, "reading the schema", e);
        goto out;
    }
    if (h == 0) {
        r = carma_err_set(e, -ENODATA,
                          "%s: no table " T_KERNEL ": the profile recorded no CUDA kernel (was "
                          "it taken with --trace=cuda, and did the program launch kernels?)",
                          path);
        goto out;
    }
    static const char *const kcols[] = {"start", "end", "deviceId", "globalPid", NULL};
    if ((r = need_columns(db, path, T_KERNEL, kcols, e)) < 0)
        goto out;

    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT utcEpochNs FROM " T_SESSION " LIMIT 1", -1, &st, NULL) !=
        SQLITE_OK) {
        r = db_error(db, path, "reading " T_SESSION, e);
        goto out;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
        ret->session_start_unix_ns = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        r = db_error(db, path, "reading " T_SESSION, e);
        goto out;
    }
    if (ret->session_start_unix_ns <= 0) {
        r = carma_err_set(e, -EINVAL, "%s: " T_SESSION ".utcEpochNs holds no start time", path);
        goto out;
    }
    if ((r = load_gpus(db, path, ret, e)) < 0 || (r = load_devmap(db, path, &m, &nm, e)) < 0)
        goto out;
    r = load_kernels(db, path, ret, m, nm, e);
out:
    free(m);
    sqlite3_close(db);
    if (r < 0)
        nsys_profile_free(ret);
    return r;
}

void nsys_profile_free(struct nsys_profile *p)
{
    if (!p)
        return;
    free(p->k);
    memset(p, 0, sizeof *p);
}

/* The UUID without a "GPU-" prefix. */
static const char *uuid_core(const char *u)
{
    return strncasecmp(u, "GPU-", 4) == 0 ? u + 4 : u;
}

size_t nsys_map_devices(struct nsys_profile *p, const char *const *uuid, size_t n)
{
    int index[NSYS_GPUS_MAX];
    for (size_t g = 0; g < p->ngpus; g++) {
        index[g] = -1;
        const char *a = uuid_core(p->gpus[g].uuid);
        for (size_t i = 0; *a && i < n; i++)
            if (uuid && uuid[i] && *uuid[i] && strcasecmp(a, uuid_core(uuid[i])) == 0)
                index[g] = (int)i;
    }
    size_t left = 0;
    for (size_t i = 0; i < p->n; i++) {
        struct nsys_kernel *k = &p->k[i];
        k->index = k->gpu;
        bool found = false;
        for (size_t g = 0; g < p->ngpus && !found; g++) {
            if (p->gpus[g].id == k->gpu && index[g] >= 0) {
                k->index = index[g];
                found = true;
            }
        }
        left += !found;
    }
    return left;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int nsys_grid(const struct nsys_profile *const *p, size_t np, int64_t interval_ns, int64_t **ret,
              size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    if (interval_ns <= 0)
        return -EINVAL;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t f = 0; f < np; f++) {
        for (size_t i = 0; i < p[f]->n; i++) {
            if (p[f]->k[i].start_ns < lo)
                lo = p[f]->k[i].start_ns;
            if (p[f]->k[i].end_ns > hi)
                hi = p[f]->k[i].end_ns;
        }
    }
    if (lo > hi)
        return 0;
    int64_t a = floor_div(lo, interval_ns), b = floor_div(hi, interval_ns), ea, eb, span;
    /* the first and last edges must be 64-bit ns (a damaged export's kernel in 2262 or before
     * 1970 may put them outside); every edge lies between them */
    if (__builtin_mul_overflow(a, interval_ns, &ea) || __builtin_mul_overflow(b, interval_ns, &eb))
        return -ERANGE;
    if (eb < hi || a == b) {
        b++;
        if (__builtin_mul_overflow(b, interval_ns, &eb))
            return -ERANGE;
    }
    if (__builtin_sub_overflow(b, a, &span) || span >= (int64_t)NSYS_EDGES_MAX)
        return -E2BIG;
    size_t n = (size_t)(b - a + 1);
    int64_t *e = malloc(n * sizeof *e);
    if (!e)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        e[i] = (a + (int64_t)i) * interval_ns;
    *ret = e;
    *ret_n = n;
    return 0;
}

static int kernel_cmp(const void *a, const void *b)
{
    const struct nsys_kernel *x = *(const struct nsys_kernel *const *)a,
                             *y = *(const struct nsys_kernel *const *)b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return 0;
}

static int push_row(struct nsys_busy_set *s, const struct nsys_busy *row)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        struct nsys_busy *t = realloc(s->rows, nc * sizeof *t);
        if (!t)
            return -ENOMEM;
        s->rows = t;
        s->cap = nc;
    }
    s->rows[s->n++] = *row;
    return 0;
}

/* Adds the segment [a, b) of (index, pid) to the rows; first is the first row of the group. */
static int add_segment(struct nsys_busy_set *s, size_t first, int index, uint32_t pid, int64_t a,
                       int64_t b, const int64_t *edges, size_t nedges)
{
    int64_t lo = edges[0], hi = edges[nedges - 1];
    if (a < lo) {
        s->outside_s += (double)((b < lo ? b : lo) - a) / 1e9;
        a = lo;
    }
    if (b > hi) {
        s->outside_s += (double)(b - (a > hi ? a : hi)) / 1e9;
        b = hi;
    }
    if (b <= a)
        return 0;
    /* the interval holding a: the last edge <= a */
    size_t l = 0, r = nedges - 1;
    while (r - l > 1) {
        size_t m = l + (r - l) / 2;
        if (edges[m] <= a)
            l = m;
        else
            r = m;
    }
    for (size_t j = l; j + 1 < nedges && edges[j] < b; j++) {
        int64_t x = a > edges[j] ? a : edges[j], y = b < edges[j + 1] ? b : edges[j + 1];
        if (y <= x)
            continue;
        double d = (double)(y - x) / 1e9;
        struct nsys_busy *last = s->n > first ? &s->rows[s->n - 1] : NULL;
        if (last && last->t0_ns == edges[j]) {
            last->busy_s += d;
            continue;
        }
        struct nsys_busy row = {
            .t0_ns = edges[j], .t1_ns = edges[j + 1], .gpu = index, .pid = pid, .busy_s = d};
        if (push_row(s, &row) < 0)
            return -ENOMEM;
    }
    return 0;
}

int nsys_busy_add(const struct nsys_profile *p, const int64_t *edges, size_t nedges,
                  struct nsys_busy_set *out)
{
    if (p->n == 0 || nedges < 2)
        return 0;
    const struct nsys_kernel **o = malloc(p->n * sizeof *o);
    if (!o)
        return -ENOMEM;
    for (size_t i = 0; i < p->n; i++)
        o[i] = &p->k[i];
    qsort(o, p->n, sizeof *o, kernel_cmp);
    size_t n0 = out->n;
    double out0 = out->outside_s;
    int r = 0;
    size_t i = 0;
    while (i < p->n && r == 0) {
        int index = o[i]->index;
        uint32_t pid = o[i]->pid;
        size_t first = out->n;
        int64_t a = o[i]->start_ns, b = o[i]->end_ns;
        for (i++; i < p->n && o[i]->index == index && o[i]->pid == pid && r == 0; i++) {
            if (o[i]->start_ns <= b) { /* overlapping or adjacent: one busy stretch */
                if (o[i]->end_ns > b)
                    b = o[i]->end_ns;
                continue;
            }
            r = add_segment(out, first, index, pid, a, b, edges, nedges);
            a = o[i]->start_ns;
            b = o[i]->end_ns;
        }
        if (r == 0)
            r = add_segment(out, first, index, pid, a, b, edges, nedges);
    }
    free(o);
    if (r < 0) {
        out->n = n0;
        out->outside_s = out0;
    }
    return r;
}

static int busy_cmp(const void *a, const void *b)
{
    const struct nsys_busy *x = a, *y = b;
    if (x->t0_ns != y->t0_ns)
        return x->t0_ns < y->t0_ns ? -1 : 1;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return 0;
}

void nsys_busy_sort(struct nsys_busy_set *s)
{
    if (s->n == 0)
        return;
    qsort(s->rows, s->n, sizeof *s->rows, busy_cmp);
    size_t w = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (busy_cmp(&s->rows[w], &s->rows[i]) == 0 && s->rows[w].t1_ns == s->rows[i].t1_ns)
            s->rows[w].busy_s += s->rows[i].busy_s;
        else
            s->rows[++w] = s->rows[i];
    }
    s->n = w + 1;
}

void nsys_busy_free(struct nsys_busy_set *s)
{
    free(s->rows);
    memset(s, 0, sizeof *s);
}

int nsys_busy_csv(const struct nsys_busy_set *s, struct csv_buf *b)
{
    if (csv_buf_raw(b, NSYS_GPU_CSV_HEADER "\r\n", sizeof NSYS_GPU_CSV_HEADER + 1) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        const struct nsys_busy *r = &s->rows[i];
        char t0[40], t1[40], gpu[24], pid[24], busy[40];
        size_t l0 = fmt_unix_us(t0, r->t0_ns), l1 = fmt_unix_us(t1, r->t1_ns);
        int lg = snprintf(gpu, sizeof gpu, "%d", r->gpu);
        size_t lp = fmt_u64(pid, r->pid), lb = fmt_fixed6(busy, r->busy_s);
        if (csv_buf_raw(b, t0, l0) < 0 || csv_buf_raw(b, ",", 1) < 0 ||
            csv_buf_raw(b, t1, l1) < 0 || csv_buf_raw(b, ",", 1) < 0 ||
            csv_buf_raw(b, gpu, (size_t)lg) < 0 || csv_buf_raw(b, ",", 1) < 0 ||
            csv_buf_raw(b, pid, lp) < 0 ||
            csv_buf_field(b, r->workload ? r->workload : "", 0) < 0 || csv_buf_raw(b, ",", 1) < 0 ||
            csv_buf_raw(b, busy, lb) < 0 || csv_buf_end_row(b) < 0)
            return -ENOMEM;
    }
    return 0;
}
