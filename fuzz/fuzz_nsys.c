/*
 * libFuzzer harness for the reading of an Nsight Systems SQLite export (import/nsys): what
 * nsys_load makes of the rows its queries return, and what nsys_map_devices, nsys_grid,
 * nsys_busy_add, nsys_busy_sort and nsys_busy_csv make of the kernels.
 *
 * Fuzzing the SQLite file format itself would fuzz SQLite; the input here is instead decoded
 * into the tables an export has (which of them and of their optional columns exist, and their
 * rows) and written as a small database with the SQLite C API, each value of any storage class
 * SQLite allows in any column: NULL, integers small and large (near a real session start, or
 * anywhere in 64 bits), reals, text, blobs. So a kernel time may be text, a GPU id a real.
 *
 * The oracles, besides the sanitizers:
 * - nsys_load: a failure has a message naming the file; on success every kernel row is either
 *   a kernel or counted as skipped, every kernel has start <= end, the GPU strings are
 *   NUL-terminated;
 * - nsys_grid (every 100 ms, or coarser when the kernels span more than 200 of them): the
 *   edges increase by the interval, are multiples of it and cover every kernel; -ERANGE only
 *   when the edges would not fit in 64 bits;
 * - nsys_busy_add and nsys_busy_sort: every row has 0 < busy_s <= its interval, the rows are
 *   sorted without repeated keys, and their sum with outside_s equals a reference union of the
 *   kernels' intervals per (index, pid) (relative error 1e-9);
 * - nsys_busy_csv: csv_parse reads it back, one record per row plus the header.
 *
 * fuzz-sources: src/import/nsys.c src/core/csv.c src/core/err.c src/core/file.c src/core/fmt.c
 * fuzz-libs: -lsqlite3 -ljansson
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/nsys.h"

#define SESSION_NS 1785168098000000000LL /* 2026-07-27, a real session's start */

struct in {
    const uint8_t *p;
    size_t n;
};

static unsigned byte(struct in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static uint64_t bytes(struct in *in, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++)
        v = v << 8 | byte(in);
    return v;
}

/* Binds the next value of the input to parameter col of st. */
static void bind_value(struct in *in, sqlite3_stmt *st, int col)
{
    unsigned t = byte(in) % 9;
    switch (t) {
    case 0:
        sqlite3_bind_null(st, col);
        break;
    case 1: /* a small integer, either sign */
        sqlite3_bind_int64(st, col, (int8_t)byte(in));
        break;
    case 2: /* a time in a session of an hour, ns */
        sqlite3_bind_int64(st, col, (int64_t)(bytes(in, 4) % 3600000000000ULL));
        break;
    case 3: /* near a real session start */
        sqlite3_bind_int64(st, col, SESSION_NS + (int64_t)(int32_t)bytes(in, 4));
        break;
    case 4: /* any 64 bits */
        sqlite3_bind_int64(st, col, (int64_t)bytes(in, 8));
        break;
    case 5: {
        uint64_t u = bytes(in, 8);
        double d;
        memcpy(&d, &u, sizeof d);
        sqlite3_bind_double(st, col, d);
        break;
    }
    case 6: { /* text */
        char s[40];
        size_t k = byte(in) % sizeof s;
        for (size_t i = 0; i < k; i++)
            s[i] = (char)byte(in);
        sqlite3_bind_text(st, col, s, (int)k, SQLITE_TRANSIENT);
        break;
    }
    case 7: { /* a blob */
        uint8_t s[16];
        size_t k = byte(in) % sizeof s;
        for (size_t i = 0; i < k; i++)
            s[i] = (uint8_t)byte(in);
        sqlite3_bind_blob(st, col, s, (int)k, SQLITE_TRANSIENT);
        break;
    }
    default: /* a pid as globalPid encodes it */
        sqlite3_bind_int64(st, col, (int64_t)((bytes(in, 2) + 100) << 24));
        break;
    }
}

static void exec(sqlite3 *db, const char *sql)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        abort();
}

/* Inserts rows of ncols values each. */
static size_t insert(sqlite3 *db, struct in *in, const char *sql, int ncols, size_t nrows)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        abort();
    size_t k = 0;
    for (; k < nrows && in->n; k++) {
        for (int c = 1; c <= ncols; c++)
            bind_value(in, st, c);
        if (sqlite3_step(st) != SQLITE_DONE)
            abort();
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return k;
}

static char path[80];

/* Writes the export the input describes; returns the number of kernel rows (-1: no table). */
static long build(struct in *in)
{
    unlink(path);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        abort();
    exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN");
    unsigned f = byte(in);
    if (!(f & 1)) {
        exec(db, "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime "
                 "INTEGER, localTime INTEGER)");
        insert(db, in, "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, 0, 0)", 1,
               (f & 2) ? 0 : 1 + byte(in) % 2);
    }
    if (f & 4) {
        exec(db, (f & 8) ? "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, uuid TEXT)"
                         : "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT)");
        insert(db, in,
               (f & 8) ? "INSERT INTO TARGET_INFO_GPU VALUES (?, ?, ?)"
                       : "INSERT INTO TARGET_INFO_GPU VALUES (?, ?)",
               (f & 8) ? 3 : 2, byte(in) % 6);
    }
    if (f & 16) {
        exec(db, (f & 32) ? "CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId "
                            "INTEGER, pid INTEGER)"
                          : "CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId "
                            "INTEGER)");
        insert(db, in,
               (f & 32) ? "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?, ?, ?)"
                        : "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?, ?)",
               (f & 32) ? 3 : 2, byte(in) % 6);
    }
    long nk = -1;
    if (!(f & 64)) {
        exec(db, "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER "
                 "NOT NULL, deviceId INTEGER, globalPid INTEGER, shortName INTEGER)");
        nk = (long)insert(db, in,
                          "INSERT OR IGNORE INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, "
                          "0)",
                          4, 512);
        /* NOT NULL rows that were ignored are not rows */
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", -1, &st,
                               NULL) != SQLITE_OK ||
            sqlite3_step(st) != SQLITE_ROW)
            abort();
        nk = (long)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    exec(db, "COMMIT");
    sqlite3_close(db);
    return nk;
}

static int key_cmp(const void *a, const void *b)
{
    const struct nsys_kernel *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return 0;
}

/* The reference: the length of the union of the kernels' intervals per (index, pid), summed. */
static long double ref_union_s(const struct nsys_profile *p)
{
    struct nsys_kernel *k = malloc((p->n ? p->n : 1) * sizeof *k);
    if (!k)
        abort();
    memcpy(k, p->k, p->n * sizeof *k);
    qsort(k, p->n, sizeof *k, key_cmp);
    long double sum = 0;
    for (size_t i = 0; i < p->n;) {
        size_t j = i;
        __int128 a = k[i].start_ns, b = k[i].end_ns;
        for (j = i + 1; j < p->n && k[j].index == k[i].index && k[j].pid == k[i].pid; j++) {
            if (k[j].start_ns <= b) {
                if (k[j].end_ns > b)
                    b = k[j].end_ns;
                continue;
            }
            sum += (long double)(b - a) / 1e9L;
            a = k[j].start_ns;
            b = k[j].end_ns;
        }
        sum += (long double)(b - a) / 1e9L;
        i = j;
    }
    free(k);
    return sum;
}

static void check_profile(struct nsys_profile *p, long nk)
{
    if (nk >= 0 && p->n + p->skipped != (size_t)nk) {
        fprintf(stderr, "%ld kernel rows: %zu kernels, %zu skipped\n", nk, p->n, p->skipped);
        abort();
    }
    if (p->ngpus > NSYS_GPUS_MAX)
        abort();
    for (size_t g = 0; g < p->ngpus; g++)
        if (!memchr(p->gpus[g].uuid, '\0', sizeof p->gpus[g].uuid) ||
            !memchr(p->gpus[g].name, '\0', sizeof p->gpus[g].name))
            abort();
    for (size_t i = 0; i < p->n; i++)
        if (p->k[i].start_ns > p->k[i].end_ns)
            abort();
    const char *uuid[3] = {p->ngpus ? p->gpus[0].uuid : NULL, NULL,
                           p->ngpus > 1 ? p->gpus[p->ngpus - 1].uuid : NULL};
    if (nsys_map_devices(p, uuid, 3) > p->n)
        abort();
    if (p->n == 0)
        return;

    __int128 lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < p->n; i++) {
        lo = p->k[i].start_ns < lo ? p->k[i].start_ns : lo;
        hi = p->k[i].end_ns > hi ? p->k[i].end_ns : hi;
    }
    int64_t interval = 100000000;
    if ((hi - lo) / interval > 200)
        interval = (int64_t)((hi - lo) / 200 + 1);
    int64_t *edges = NULL;
    size_t ne = 0;
    const struct nsys_profile *pp = p;
    int r = nsys_grid(&pp, 1, interval, &edges, &ne);
    if (r == -E2BIG || r == -ERANGE) {
        /* only when the edges would not fit in 64 bits */
        __int128 a = lo / interval - 1, b = hi / interval + 1;
        if (r == -ERANGE && a * interval >= INT64_MIN && b * interval <= INT64_MAX)
            abort();
        if (edges || ne)
            abort();
        return;
    }
    if (r != 0 || ne < 2)
        abort();
    for (size_t i = 0; i < ne; i++) {
        if (edges[i] % interval != 0 || (i && (__int128)edges[i] - edges[i - 1] != interval))
            abort();
    }
    if (edges[0] > lo || edges[ne - 1] < hi)
        abort();

    struct nsys_busy_set s = {0};
    if (nsys_busy_add(p, edges, ne, &s) != 0)
        abort();
    nsys_busy_sort(&s);
    long double sum = s.outside_s;
    for (size_t i = 0; i < s.n; i++) {
        const struct nsys_busy *b = &s.rows[i];
        long double width = ((long double)b->t1_ns - b->t0_ns) / 1e9L;
        if (!(b->t0_ns < b->t1_ns) || !(b->busy_s > 0) || b->busy_s > width * (1 + 1e-9L))
            abort();
        if (i) {
            const struct nsys_busy *a = &s.rows[i - 1];
            bool before =
                a->t0_ns < b->t0_ns || (a->t0_ns == b->t0_ns &&
                                        (a->gpu < b->gpu || (a->gpu == b->gpu && a->pid < b->pid)));
            if (!before)
                abort();
        }
        sum += b->busy_s;
    }
    long double want = ref_union_s(p);
    if (fabsl(sum - want) > 1e-9L * (want > 1 ? want : 1) + 1e-6L) {
        fprintf(stderr, "busy %.12Lg s, union %.12Lg s\n", sum, want);
        abort();
    }
    struct csv_buf b = {0};
    if (nsys_busy_csv(&s, &b) != 0)
        abort();
    struct csv_doc doc;
    struct carma_err e = {0};
    if (csv_parse(b.data, b.len, "nsys_gpu.csv", &doc, &e) != 0 || doc.n != s.n + 1)
        abort();
    csv_doc_free(&doc);
    csv_buf_free(&b);
    nsys_busy_free(&s);
    free(edges);
}

static void rm_db(void)
{
    if (path[0])
        unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        struct stat st;
        const char *tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
        snprintf(path, sizeof path, "%s/carma-fuzz-nsys-%d.sqlite", tmp, (int)getpid());
        atexit(rm_db);
    }
    struct in in = {data, size};
    long nk = build(&in);
    struct nsys_profile p;
    struct carma_err e = {0};
    int r = nsys_load(path, &p, &e);
    if (r < 0) {
        if (!strstr(e.msg, path) || p.k || p.n)
            abort();
        return 0;
    }
    if (r != 0)
        abort();
    check_profile(&p, nk);
    nsys_profile_free(&p);
    return 0;
}
