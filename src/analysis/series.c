/*
 * series: windowed energy and power statistics of one channel's samples (see series.h).
 *
 * Bit-exactness with numpy rests on doing the same floating-point operations in the same
 * order, so nothing here may be contracted into fused multiply-adds (numpy's ufuncs never
 * fuse d * s + x): clang is told so with the standard pragma, GCC in ISO C mode does not
 * contract, and is told so again for a GNU mode build.
 */
#include "analysis/series.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define GROW_FIRST 1024

/* ---- the series ---- */

void series_init(struct series *s)
{
    memset(s, 0, sizeof *s);
    s->sorted = true;
}

void series_done(struct series *s)
{
    if (!s)
        return;
    free(s->t);
    free(s->w);
    series_init(s);
}

/*
 * Big arrays are grown into a new block that starts on a 2 MiB boundary (posix_memalign, so
 * free() and realloc() apply as to any malloc'ed array), and the part expected to be filled is
 * marked for transparent huge pages: its first touch then costs one fault per 2 MiB instead of
 * 512 (first-touch faults were ~45 % of `carma report`'s loading in a VM). Only whole 2 MiB
 * pages below the expected fill are marked, so a room estimate that is too high does not make a
 * mostly empty huge page resident; the rest stays in 4 KiB pages.
 */
#define HUGE_PAGE_BYTES ((size_t)2 << 20)
#define HUGE_MIN_BYTES  ((size_t)4 << 20)

int series_array_resize(double **p, size_t n, size_t old_cap, size_t cap, size_t expect)
{
    if (cap > SIZE_MAX / sizeof(double))
        return -ENOMEM;
    size_t bytes = (cap ? cap : 1) * sizeof(double);
    if (cap <= old_cap || bytes < HUGE_MIN_BYTES) {
        double *q = realloc(*p, bytes);
        if (!q)
            return -ENOMEM;
        *p = q;
        return 0;
    }
    void *q;
    if (posix_memalign(&q, HUGE_PAGE_BYTES, bytes) != 0)
        return -ENOMEM;
#ifdef MADV_HUGEPAGE
    size_t huge =
        (expect < cap ? expect : cap) * sizeof(double) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    if (huge > 0)
        (void)madvise(q, huge, MADV_HUGEPAGE); /* a hint: without it, small pages */
#else
    (void)expect;
#endif
    if (n > 0)
        memcpy(q, *p, n * sizeof(double));
    free(*p);
    *p = q;
    return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct series_prefault {
    pthread_t thread;
    atomic_bool stop;
    size_t n;
    struct series_prefault_range r[];
};

static void *prefault_main(void *arg)
{
    struct series_prefault *pf = arg;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (size_t off = 0;; off += HUGE_PAGE_BYTES) {
        bool more = false;
        for (size_t i = 0; i < pf->n; i++) {
            if (atomic_load_explicit(&pf->stop, memory_order_relaxed))
                return NULL;
            if (off >= pf->r[i].bytes)
                continue;
            /* whole pages from the one holding the range's first byte */
            uintptr_t a = ((uintptr_t)pf->r[i].p + off) & ~(page - 1);
            uintptr_t b =
                (uintptr_t)pf->r[i].p + off +
                (pf->r[i].bytes - off < HUGE_PAGE_BYTES ? pf->r[i].bytes - off : HUGE_PAGE_BYTES);
            if (madvise((void *)a, b - a, MADV_POPULATE_WRITE) < 0 && errno == EINVAL)
                return NULL; /* not known to this kernel */
            more = true;
        }
        if (!more)
            return NULL;
    }
}

struct series_prefault *series_prefault_start(const struct series_prefault_range *ranges, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ranges[i].p && ranges[i].bytes > 0;
    if (k == 0)
        return NULL;
    struct series_prefault *pf = malloc(sizeof *pf + k * sizeof pf->r[0]);
    if (!pf)
        return NULL;
    atomic_init(&pf->stop, false);
    pf->n = 0;
    for (size_t i = 0; i < n; i++)
        if (ranges[i].p && ranges[i].bytes > 0)
            pf->r[pf->n++] = ranges[i];
    if (pthread_create(&pf->thread, NULL, prefault_main, pf) != 0) {
        free(pf);
        return NULL;
    }
    return pf;
}

void series_prefault_stop(struct series_prefault *pf)
{
    if (!pf)
        return;
    atomic_store(&pf->stop, true);
    pthread_join(pf->thread, NULL);
    free(pf);
}

/*
 * Resizes both arrays to exactly cap samples (cap >= s->n), expecting about expect of them to
 * be filled. Returns 0 or -ENOMEM.
 */
static int set_cap(struct series *s, size_t cap, size_t expect)
{
    if (cap > SIZE_MAX / sizeof(double))
        return -ENOMEM;
    /* t may end up larger than cap says; w decides */
    if (series_array_resize(&s->t, s->n, s->cap, cap, expect) < 0 ||
        series_array_resize(&s->w, s->n, s->cap, cap, expect) < 0)
        return -ENOMEM;
    s->cap = cap;
    return 0;
}

int series_reserve(struct series *s, size_t n)
{
    if (n <= s->cap)
        return 0;
    /* an estimate: huge pages for its first 15/16 only */
    return set_cap(s, n, n - n / 16);
}

void series_shrink(struct series *s)
{
    if (s->cap > s->n && s->n > 0)
        (void)set_cap(s, s->n, s->n);
}

int series_append(struct series *s, double t_s, double w)
{
    if (!isfinite(t_s) || !isfinite(w))
        return -EINVAL;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : GROW_FIRST;
        /* huge pages only for the samples held so far: the new half may stay empty */
        if (cap < s->cap || set_cap(s, cap, s->n) < 0)
            return -ENOMEM;
    }
    if (s->n > 0 && t_s < s->t[s->n - 1])
        s->sorted = false;
    s->t[s->n] = t_s;
    s->w[s->n] = w;
    s->n++;
    return 0;
}

/* ---- stable in-place sort (insertion-sorted blocks, then merges) ---- */

/* The merge buffer: 1 MiB when it can be had, else a small one on the stack. */
#define SORT_BUF_N   (1u << 16)
#define SORT_STACK_N 128
#define SORT_BLOCK   20

struct sorter {
    double *t, *w;   /* the series */
    double *bt, *bw; /* buffer, bn samples */
    size_t bn;
};

static void swap_at(struct sorter *S, size_t i, size_t j)
{
    double x = S->t[i];
    S->t[i] = S->t[j];
    S->t[j] = x;
    x = S->w[i];
    S->w[i] = S->w[j];
    S->w[j] = x;
}

static void insertion_sort(struct sorter *S, size_t a, size_t b)
{
    for (size_t i = a + 1; i < b; i++) {
        double kt = S->t[i], kw = S->w[i];
        size_t j = i;
        while (j > a && S->t[j - 1] > kt) {
            S->t[j] = S->t[j - 1];
            S->w[j] = S->w[j - 1];
            j--;
        }
        S->t[j] = kt;
        S->w[j] = kw;
    }
}

static void copy_out(struct sorter *S, size_t from, size_t n)
{
    memcpy(S->bt, S->t + from, n * sizeof(double));
    memcpy(S->bw, S->w + from, n * sizeof(double));
}

/* Exchanges the blocks [a, m) and [m, b). */
static void rotate(struct sorter *S, size_t a, size_t m, size_t b)
{
    size_t n1 = m - a, n2 = b - m;
    if (n1 <= S->bn && n1 <= n2) {
        copy_out(S, a, n1);
        memmove(S->t + a, S->t + m, n2 * sizeof(double));
        memmove(S->w + a, S->w + m, n2 * sizeof(double));
        memcpy(S->t + a + n2, S->bt, n1 * sizeof(double));
        memcpy(S->w + a + n2, S->bw, n1 * sizeof(double));
        return;
    }
    if (n2 <= S->bn) {
        copy_out(S, m, n2);
        memmove(S->t + a + n2, S->t + a, n1 * sizeof(double));
        memmove(S->w + a + n2, S->w + a, n1 * sizeof(double));
        memcpy(S->t + a, S->bt, n2 * sizeof(double));
        memcpy(S->w + a, S->bw, n2 * sizeof(double));
        return;
    }
    /* block swaps (Go's sort.rotate) */
    size_t i = n1, j = n2;
    while (i != j) {
        if (i > j) {
            for (size_t k = 0; k < j; k++)
                swap_at(S, m - i + k, m + k);
            i -= j;
        } else {
            for (size_t k = 0; k < i; k++)
                swap_at(S, m - i + k, m + j - i + k);
            j -= i;
        }
    }
    for (size_t k = 0; k < i; k++)
        swap_at(S, m - i + k, m + k);
}

/*
 * Merges the sorted runs [a, m) and [m, b) stably: linearly through the buffer when the
 * shorter run fits in it, else by Go's SymMerge split (a rotation, then two smaller merges).
 */
static void merge(struct sorter *S, size_t a, size_t m, size_t b)
{
    if (a >= m || m >= b || !(S->t[m] < S->t[m - 1]))
        return; /* empty, or already in order */
    size_t n1 = m - a, n2 = b - m;
    double *t = S->t, *w = S->w;
    if (n1 <= S->bn && n1 <= n2) {
        copy_out(S, a, n1);
        size_t i = 0, j = m, k = a;
        while (i < n1 && j < b) {
            if (t[j] < S->bt[i]) { /* ties: the left run first */
                t[k] = t[j];
                w[k++] = w[j++];
            } else {
                t[k] = S->bt[i];
                w[k++] = S->bw[i++];
            }
        }
        for (; i < n1; i++, k++) {
            t[k] = S->bt[i];
            w[k] = S->bw[i];
        }
        return;
    }
    if (n2 <= S->bn) {
        copy_out(S, m, n2);
        size_t i = m, j = n2, k = b;
        while (i > a && j > 0) {
            if (t[i - 1] > S->bt[j - 1]) {
                t[--k] = t[--i];
                w[k] = w[i];
            } else {
                t[--k] = S->bt[--j];
                w[k] = S->bw[j];
            }
        }
        while (j > 0) {
            t[--k] = S->bt[--j];
            w[k] = S->bw[j];
        }
        return;
    }
    /* both runs longer than the buffer (and than 1): SymMerge (Kim & Kutzner) */
    size_t mid = a + (b - a) / 2;
    size_t nn = mid + m, start, r;
    if (m > mid) {
        start = nn - b;
        r = mid;
    } else {
        start = a;
        r = m;
    }
    size_t p = nn - 1;
    while (start < r) {
        size_t c = start + (r - start) / 2;
        if (!(t[p - c] < t[c]))
            start = c + 1;
        else
            r = c;
    }
    size_t end = nn - start;
    if (start < m && m < end)
        rotate(S, start, m, end);
    if (a < start && start < mid)
        merge(S, a, start, mid);
    if (mid < end && end < b)
        merge(S, mid, end, b);
}

void series_sort(struct series *s)
{
    size_t n = s->n;
    size_t i = 1;
    while (i < n && !(s->t[i] < s->t[i - 1]))
        i++;
    if (i >= n) {
        s->sorted = true;
        return;
    }
    double stack_t[SORT_STACK_N], stack_w[SORT_STACK_N];
    struct sorter S = {.t = s->t, .w = s->w, .bt = stack_t, .bw = stack_w, .bn = SORT_STACK_N};
    double *heap = malloc(2 * (size_t)SORT_BUF_N * sizeof(double));
    if (heap) {
        S.bt = heap;
        S.bw = heap + SORT_BUF_N;
        S.bn = SORT_BUF_N;
    }
    for (size_t a = 0; a < n; a += SORT_BLOCK)
        insertion_sort(&S, a, n - a < SORT_BLOCK ? n : a + SORT_BLOCK);
    for (size_t bs = SORT_BLOCK; bs < n; bs *= 2) {
        for (size_t a = 0; a + bs < n; a += 2 * bs) {
            size_t b = n - a < 2 * bs ? n : a + 2 * bs;
            merge(&S, a, a + bs, b);
        }
        if (bs > SIZE_MAX / 4)
            break;
    }
    free(heap);
    s->sorted = true;
}

long series_collapse(struct series *s, enum series_dup how)
{
    if (!s->sorted)
        return -EINVAL;
    size_t out = 0;
    for (size_t i = 0; i < s->n;) {
        double t = s->t[i];
        double v = how == SERIES_DUP_SUM ? 0.0 + s->w[i] : s->w[i];
        size_t j = i + 1;
        for (; j < s->n && s->t[j] == t; j++)
            v = how == SERIES_DUP_SUM ? v + s->w[j] : s->w[j];
        s->t[out] = t;
        s->w[out++] = v;
        i = j;
    }
    long removed = (long)(s->n - out);
    s->n = out;
    return removed;
}

/* ---- numpy's summation ---- */

/*
 * np.add.reduce over a contiguous float64 array: the reduction's iterator hands the inner
 * loop at most its buffer size (8192) elements at a time, each chunk summed pairwise (blocks
 * of <= 128 with 8 accumulators, longer runs halved at a multiple of 8) and added in order to
 * the identity 0.0. Verified bit for bit against numpy 1.24 by tests/unit/test_series.c.
 * TERM(c, i) yields the i-th element, so the trapezoid terms need no array of their own.
 */
#define NP_BUFSIZE   8192
#define NP_PW_BLOCKS 128

#define DEFINE_NP_SUM(name, ctx_t, TERM)                                                           \
    static double name##_pw(const ctx_t *c, size_t lo, size_t n)                                   \
    {                                                                                              \
        if (n < 8) {                                                                               \
            double res = -0.0;                                                                     \
            for (size_t i = 0; i < n; i++)                                                         \
                res += TERM(c, lo + i);                                                            \
            return res;                                                                            \
        }                                                                                          \
        if (n <= NP_PW_BLOCKS) {                                                                   \
            double r[8];                                                                           \
            for (size_t j = 0; j < 8; j++)                                                         \
                r[j] = TERM(c, lo + j);                                                            \
            size_t i = 8;                                                                          \
            for (; i < n - (n % 8); i += 8)                                                        \
                for (size_t j = 0; j < 8; j++)                                                     \
                    r[j] += TERM(c, lo + i + j);                                                   \
            double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));        \
            for (; i < n; i++)                                                                     \
                res += TERM(c, lo + i);                                                            \
            return res;                                                                            \
        }                                                                                          \
        size_t n2 = n / 2;                                                                         \
        n2 -= n2 % 8;                                                                              \
        return name##_pw(c, lo, n2) + name##_pw(c, lo + n2, n - n2);                               \
    }                                                                                              \
    static double name(const ctx_t *c, size_t n)                                                   \
    {                                                                                              \
        double res = 0.0;                                                                          \
        for (size_t lo = 0; lo < n; lo += NP_BUFSIZE)                                              \
            res += name##_pw(c, lo, n - lo < NP_BUFSIZE ? n - lo : NP_BUFSIZE);                    \
        return res;                                                                                \
    }

/* plain array */
struct arr_ctx {
    const double *v;
};
#define ARR_TERM(c, i) ((c)->v[i])
DEFINE_NP_SUM(np_sum_arr, struct arr_ctx, ARR_TERM)

/* numpy's trapz term: d * (y[1:] + y[:-1]) / 2.0, evaluated left to right */
static inline double trap_term(double x0, double x1, double y0, double y1)
{
    return ((x1 - x0) * (y1 + y0)) / 2.0;
}

struct xy_ctx {
    const double *x, *y;
};
#define XY_TERM(c, i) trap_term((c)->x[i], (c)->x[(i) + 1], (c)->y[i], (c)->y[(i) + 1])
DEFINE_NP_SUM(np_trapz_xy, struct xy_ctx, XY_TERM)

/*
 * The interpolated path: point 0 is (x0, y0), points 1..m-2 are samples a.., the last point is
 * (x1, y1); m = inner + 2 points.
 */
struct path_ctx {
    const double *t, *w; /* the samples, from the first inner one */
    size_t m;
    double x0, y0, x1, y1;
};

static inline double path_x(const struct path_ctx *c, size_t j)
{
    return j == 0 ? c->x0 : j == c->m - 1 ? c->x1 : c->t[j - 1];
}

static inline double path_y(const struct path_ctx *c, size_t j)
{
    return j == 0 ? c->y0 : j == c->m - 1 ? c->y1 : c->w[j - 1];
}

#define PATH_TERM(c, i)                                                                            \
    trap_term(path_x(c, i), path_x(c, (i) + 1), path_y(c, i), path_y(c, (i) + 1))
DEFINE_NP_SUM(np_trapz_path, struct path_ctx, PATH_TERM)

double series_sum(const double *v, size_t n)
{
    struct arr_ctx c = {v};
    return np_sum_arr(&c, n);
}

double series_trapz(const double *x, const double *y, size_t n)
{
    if (n < 2)
        return 0.0;
    struct xy_ctx c = {x, y};
    return np_trapz_xy(&c, n - 1);
}

/* ---- percentiles ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void swap_d(double *v, size_t i, size_t j)
{
    double x = v[i];
    v[i] = v[j];
    v[j] = x;
}

/*
 * Rearranges v[lo, hi) so that each of the nr ranks r[] (ascending, within [lo, hi)) holds the
 * value a full sort would put there: quickselect on all ranks at once (Hoare partition around
 * a median of three, which splits runs of equal values evenly), a heap-free fallback to qsort
 * past a depth limit so that the worst case stays O(n log n).
 */
static void select_ranks(double *v, size_t lo, size_t hi, const size_t *r, size_t nr, int depth)
{
    while (nr > 0) {
        size_t len = hi - lo;
        if (len <= 16) {
            for (size_t i = lo + 1; i < hi; i++) {
                double x = v[i];
                size_t j = i;
                while (j > lo && v[j - 1] > x) {
                    v[j] = v[j - 1];
                    j--;
                }
                v[j] = x;
            }
            return;
        }
        if (depth-- <= 0) {
            qsort(v + lo, len, sizeof(double), cmp_double);
            return;
        }
        size_t mid = lo + len / 2;
        if (v[mid] < v[lo])
            swap_d(v, mid, lo);
        if (v[hi - 1] < v[mid]) {
            swap_d(v, hi - 1, mid);
            if (v[mid] < v[lo])
                swap_d(v, mid, lo);
        }
        double x = v[mid];
        size_t i = lo, j = hi - 1;
        for (;;) {
            while (v[i] < x)
                i++;
            while (v[j] > x)
                j--;
            if (i >= j)
                break;
            swap_d(v, i, j);
            i++;
            j--;
        }
        /* [lo, j] <= x <= [j + 1, hi), both sides non-empty */
        size_t k = 0;
        while (k < nr && r[k] <= j)
            k++;
        if (k > 0)
            select_ranks(v, lo, j + 1, r, k, depth);
        r += k;
        nr -= k;
        lo = j + 1;
    }
}

#define HIST_MIN_N   4096
#define HIST_BUCKETS 2048

/* x's bucket: monotone in x (a rounded subtraction and product by a positive scale are) */
static inline size_t bucket_of(double x, double mn, double scale)
{
    double f = (x - mn) * scale;
    return f < HIST_BUCKETS ? (size_t)f : HIST_BUCKETS - 1;
}

/*
 * The values of ranks r[0..nr) (ascending, < n) of v[0..n) into out[], min and max of v known;
 * v is scratch and is overwritten. Above a few thousand values one counting pass over linear
 * buckets between min and max finds each rank's bucket (buckets hold value ranges in order, so
 * a rank's value lies in its bucket, at a rank known from the counts), a second pass moves the
 * buckets that hold ranks to the front, and the search goes on among those alone: about two
 * cheap passes where partitioning would take five. When that does not narrow the search (the
 * values are bunched, or a far outlier stretches the buckets) quickselect takes over.
 */
static void select_values(double *v, size_t n, double mn, double mx, const size_t *r, size_t nr,
                          double *out, int depth)
{
    if (mn == mx) { /* all equal */
        for (size_t k = 0; k < nr; k++)
            out[k] = mn;
        return;
    }
    double scale = HIST_BUCKETS / (mx - mn);
    if (n < HIST_MIN_N || depth <= 0 || !isfinite(scale) || !(scale > 0)) {
        int qd = 8;
        for (size_t m = n; m > 1; m /= 2)
            qd += 2;
        select_ranks(v, 0, n, r, nr, qd);
        for (size_t k = 0; k < nr; k++)
            out[k] = v[r[k]];
        return;
    }
    size_t count[HIST_BUCKETS] = {0};
    for (size_t i = 0; i < n; i++)
        count[bucket_of(v[i], mn, scale)]++;
    /* each rank's bucket, and the distinct ones (ascending) */
    size_t rb[8], tb[8], ntb = 0, below = 0, b = 0;
    unsigned char target[HIST_BUCKETS] = {0};
    for (size_t k = 0; k < nr; k++) {
        while (below + count[b] <= r[k])
            below += count[b++];
        rb[k] = b;
        if (!target[b])
            tb[ntb++] = b;
        target[b] = 1;
    }
    size_t kept = 0;
    for (size_t i = 0; i < ntb; i++)
        kept += count[tb[i]];
    if (kept > n / 2) {
        select_values(v, n, mn, mx, r, nr, out, 0); /* quickselect */
        return;
    }
    size_t j = 0;
    double nmn = mx, nmx = mn;
    for (size_t i = 0; i < n; i++) {
        double x = v[i];
        if (target[bucket_of(x, mn, scale)]) {
            v[j++] = x;
            nmn = x < nmn ? x : nmn;
            nmx = x > nmx ? x : nmx;
        }
    }
    /* rank r of v, in bucket c, is rank r - (values below c) + (kept values below c) of the
     * kept ones */
    size_t nr2[8];
    below = 0;
    b = 0;
    for (size_t k = 0; k < nr; k++) {
        while (b < rb[k])
            below += count[b++];
        size_t kept_below = 0;
        for (size_t i = 0; i < ntb && tb[i] < rb[k]; i++)
            kept_below += count[tb[i]];
        nr2[k] = r[k] - below + kept_below;
    }
    select_values(v, j, nmn, nmx, nr2, nr, out, depth - 1);
}

/* numpy's _lerp(a, b, t): a + (b - a) * t, or b - (b - a) * (1 - t) for t >= 0.5 */
static double np_lerp(double a, double b, double g)
{
    double d = b - a;
    double res = a + d * g;
    if (g >= 0.5)
        res = b - d * (1.0 - g);
    return res;
}

static const double pcts[4] = {5.0, 50.0, 95.0, 99.0};

double series_percentile_sorted(const double *v, size_t n, double p)
{
    double h = (double)(n - 1) * (p / 100.0);
    if (h >= (double)(n - 1))
        return v[n - 1];
    size_t lo = (size_t)floor(h);
    return np_lerp(v[lo], v[lo + 1], h - (double)lo);
}

void series_stats(double *v, size_t n, struct series_window *ret)
{
    ret->stat_n = n;
    ret->mean_w = series_sum(v, n) / (double)n;
    double mn = v[0], mx = v[0];
    for (size_t i = 1; i < n; i++) {
        if (v[i] < mn)
            mn = v[i];
        if (v[i] > mx)
            mx = v[i];
    }
    ret->min_w = mn;
    ret->max_w = mx;

    /* the ranks each percentile interpolates between */
    size_t ranks[8], nr = 0;
    double h[4];
    for (int q = 0; q < 4; q++) {
        h[q] = (double)(n - 1) * (pcts[q] / 100.0);
        if (h[q] >= (double)(n - 1))
            continue;
        size_t lo = (size_t)floor(h[q]);
        for (size_t k = lo; k <= lo + 1; k++) {
            size_t at = 0;
            while (at < nr && ranks[at] < k)
                at++;
            if (at < nr && ranks[at] == k)
                continue;
            memmove(ranks + at + 1, ranks + at, (nr - at) * sizeof ranks[0]);
            ranks[at] = k;
            nr++;
        }
    }
    double val[8];
    select_values(v, n, mn, mx, ranks, nr, val, 4);

    double out[4];
    for (int q = 0; q < 4; q++) {
        if (h[q] >= (double)(n - 1)) {
            out[q] = mx;
            continue;
        }
        size_t lo = (size_t)floor(h[q]), k = 0;
        while (ranks[k] != lo)
            k++;
        out[q] = np_lerp(val[k], val[k + 1], h[q] - (double)lo);
    }
    ret->p5_w = out[0];
    ret->p50_w = out[1];
    ret->p95_w = out[2];
    ret->p99_w = out[3];
}

void series_scratch_done(struct series_scratch *sc)
{
    if (!sc)
        return;
    free(sc->v);
    sc->v = NULL;
    sc->cap = 0;
}

/* Room for n doubles in sc (or in tmp when sc is NULL). NULL when out of memory. */
static double *scratch_get(struct series_scratch *sc, struct series_scratch *tmp, size_t n)
{
    struct series_scratch *use = sc ? sc : tmp;
    if (n == 0)
        n = 1;
    if (use->cap < n) {
        if (n > SIZE_MAX / sizeof(double))
            return NULL;
        double *v = realloc(use->v, n * sizeof(double));
        if (!v)
            return NULL;
        use->v = v;
        use->cap = n;
    }
    return use->v;
}

/* ---- windows ---- */

static const char *label_or(const char *label)
{
    return label ? label : "series";
}

/* The checks shared by every window function: samples present, sorted, finite edges. */
static int check_common(const struct series *s, double start, double end, const char *label,
                        const char *what, bool need_order, struct carma_err *err)
{
    if (s->n == 0)
        return carma_err_set(err, -ENODATA, "%s: no %s samples available", label, what);
    if (!s->sorted)
        return carma_err_set(err, -EINVAL, "%s: samples are not sorted by time", label);
    if (!isfinite(start) || !isfinite(end))
        return carma_err_set(err, -EINVAL, "%s: window edge is not a finite number", label);
    if (need_order && !(end > start))
        return carma_err_set(err, -EINVAL, "%s: window end is not after its start", label);
    return 0;
}

/* srt-slurm's nearest(t): searchsorted left, ties to the earlier sample */
static size_t nearest(const double *t, size_t n, double x)
{
    size_t i = series_lower_bound(t, n, x);
    if (i == 0)
        return 0;
    if (i >= n)
        return n - 1;
    return (x - t[i - 1]) <= (t[i] - x) ? i - 1 : i;
}

int series_window_snap(const struct series *s, double start, double end, const char *label,
                       struct series_scratch *sc, struct series_window *ret, struct carma_err *err)
{
    label = label_or(label);
    int rc = check_common(s, start, end, label, "power", false, err);
    if (rc < 0)
        return rc;
    const double *t = s->t, *w = s->w;
    size_t si = nearest(t, s->n, start), ei = nearest(t, s->n, end);
    double gap = fabs(t[si] - start);
    if (gap > SERIES_SNAP_MAX_GAP_S)
        return carma_err_set(err, -ENODATA,
                             "%s: nearest sample to window start is %.3fs away, no coverage", label,
                             gap);
    gap = fabs(t[ei] - end);
    if (gap > SERIES_SNAP_MAX_GAP_S)
        return carma_err_set(err, -ENODATA,
                             "%s: nearest sample to window end is %.3fs away, no coverage", label,
                             gap);
    if (ei <= si)
        return carma_err_set(err, -ENODATA, "%s: window narrower than the sample spacing", label);

    size_t cnt = ei - si + 1;
    struct series_scratch tmp = {0};
    double *v = scratch_get(sc, &tmp, cnt);
    if (!v)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", label);
    struct series_window o = {0};
    o.joules = series_trapz(t + si, w + si, cnt);
    double duration = end - start;
    o.avg_power_w = duration > 0 ? o.joules / duration : 0.0;
    o.sample_start_unix = t[si];
    o.sample_end_unix = t[ei];
    o.samples = cnt;
    memcpy(v, w + si, cnt * sizeof(double));
    series_stats(v, cnt, &o);
    series_scratch_done(&tmp);
    *ret = o;
    return 0;
}

struct series_opts series_opts_default(void)
{
    return (struct series_opts){.max_gap_s = SERIES_MAX_GAP_S, .edge_tol_s = SERIES_EDGE_TOL_S};
}

/*
 * Where [start, end] lies in the samples, after the coverage and gap checks:
 * a = first sample after start, b = first sample at or after end (inner samples: [a, b));
 * kl..kr = the samples whose steps the window overlaps (kl <= start's bracket, kr >= end's).
 */
struct span {
    size_t a, b, kl, kr;
};

static int locate(const struct series *s, double start, double end, const struct series_opts *o,
                  const char *label, struct span *sp, struct carma_err *err)
{
    const double *t = s->t;
    size_t n = s->n;
    double tol = o->edge_tol_s;
    if (t[0] - start > tol)
        return carma_err_set(err, -ENODATA,
                             "%s: first sample is %.3fs after window start, no coverage", label,
                             t[0] - start);
    if (end - t[n - 1] > tol)
        return carma_err_set(err, -ENODATA,
                             "%s: last sample is %.3fs before window end, no coverage", label,
                             end - t[n - 1]);
    sp->a = series_upper_bound(t, n, start);
    sp->b = series_lower_bound(t, n, end);
    sp->kl = sp->a == 0 ? 0 : sp->a - 1;
    sp->kr = sp->b == n ? n - 1 : sp->b;
    for (size_t k = sp->kl; k < sp->kr; k++) {
        double gap = t[k + 1] - t[k];
        if (gap > o->max_gap_s)
            return carma_err_set(err, -ENODATA,
                                 "%s: %.3fs gap between samples at %.3f and %.3f, over the "
                                 "%.3fs limit",
                                 label, gap, t[k], t[k + 1], o->max_gap_s);
    }
    return 0;
}

/* numpy's interp between samples k0 < k1 at x, t[k0] < x < t[k1]: slope * (x - t0) + w0 */
static double interp_at(const double *t, const double *w, size_t k0, size_t k1, double x)
{
    double slope = (w[k1] - w[k0]) / (t[k1] - t[k0]);
    return slope * (x - t[k0]) + w[k0];
}

int series_window_interpolate(const struct series *s, double start, double end,
                              const struct series_opts *opts, const char *label,
                              struct series_scratch *sc, struct series_window *ret,
                              struct carma_err *err)
{
    label = label_or(label);
    struct series_opts o = opts ? *opts : series_opts_default();
    int rc = check_common(s, start, end, label, "power", true, err);
    if (rc < 0)
        return rc;
    struct span sp;
    rc = locate(s, start, end, &o, label, &sp, err);
    if (rc < 0)
        return rc;
    const double *t = s->t, *w = s->w;
    size_t n = s->n, a = sp.a, b = sp.b;

    /* the curve's value just after start and just before end */
    double ws, we;
    if (a == 0)
        ws = w[0];
    else if (a == n || t[a - 1] == start)
        ws = w[a - 1];
    else
        ws = interp_at(t, w, a - 1, a, start);
    if (b == n)
        we = w[n - 1];
    else if (b == 0 || t[b] == end)
        we = w[b];
    else
        we = interp_at(t, w, b - 1, b, end);

    size_t inner = b - a, m = inner + 2;
    struct series_scratch tmp = {0};
    double *v = scratch_get(sc, &tmp, m);
    if (!v)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", label);
    struct path_ctx pc = {
        .t = t + a, .w = w + a, .m = m, .x0 = start, .y0 = ws, .x1 = end, .y1 = we};
    struct series_window out = {0};
    out.joules = np_trapz_path(&pc, m - 1);
    out.avg_power_w = out.joules / (end - start);
    out.sample_start_unix = t[sp.kl];
    out.sample_end_unix = t[sp.kr];
    out.samples = series_upper_bound(t, n, end) - series_lower_bound(t, n, start);
    v[0] = ws;
    memcpy(v + 1, w + a, inner * sizeof(double));
    v[m - 1] = we;
    series_stats(v, m, &out);
    series_scratch_done(&tmp);
    *ret = out;
    return 0;
}

/* Neumaier's compensated sum */
struct ksum {
    double s, c;
};

static void ksum_add(struct ksum *k, double x)
{
    double t = k->s + x;
    if (fabs(k->s) >= fabs(x))
        k->c += (k->s - t) + x;
    else
        k->c += (x - t) + k->s;
    k->s = t;
}

int series_window_counter(const struct series *s, double start, double end,
                          const struct series_opts *opts, const char *label,
                          struct series_scratch *sc, struct series_window *ret,
                          struct carma_err *err)
{
    label = label_or(label);
    struct series_opts o = opts ? *opts : series_opts_default();
    int rc = check_common(s, start, end, label, "energy", true, err);
    if (rc < 0)
        return rc;
    struct span sp;
    rc = locate(s, start, end, &o, label, &sp, err);
    if (rc < 0)
        return rc;
    const double *t = s->t, *w = s->w;
    size_t n = s->n;

    struct series_scratch tmp = {0};
    double *v = scratch_get(sc, &tmp, sp.kr - sp.kl + 3);
    if (!v)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", label);
    struct series_window out = {0};
    struct ksum e = {0};
    size_t nv = 0;
    bool used_first = false, used_last = false;
    /* from the last sample before start, so that a jump at exactly start (dt = 0) counts */
    size_t k0 = series_lower_bound(t, n, start);
    k0 = k0 > 0 ? k0 - 1 : 0;
    for (size_t k = k0; k < sp.kr; k++) {
        double d = w[k + 1] - w[k], dt = t[k + 1] - t[k];
        double lo = t[k] > start ? t[k] : start, hi = t[k + 1] < end ? t[k + 1] : end;
        if (dt == 0 ? !(start <= t[k] && t[k] < end) : !(hi > lo))
            continue; /* not in the window */
        if (d < 0) {
            out.resets++;
            continue;
        }
        if (dt == 0) {
            ksum_add(&e, d);
            continue;
        }
        ksum_add(&e, lo == t[k] && hi == t[k + 1] ? d : d * ((hi - lo) / dt));
        v[nv++] = d / dt;
        used_first |= k == 0;
        used_last |= k == n - 2;
    }
    /* the parts of the window before the first or after the last sample (within edge_tol_s):
     * held at the power of the step next to them when that step is usable */
    if (start < t[0] && n >= 2) {
        double d = w[1] - w[0], dt = t[1] - t[0];
        if (d >= 0 && dt > 0) {
            double hi = end < t[0] ? end : t[0];
            ksum_add(&e, d / dt * (hi - start));
            if (!used_first)
                v[nv++] = d / dt;
            used_first = true;
        }
    }
    if (end > t[n - 1] && n >= 2) {
        double d = w[n - 1] - w[n - 2], dt = t[n - 1] - t[n - 2];
        if (d >= 0 && dt > 0) {
            double lo = start > t[n - 1] ? start : t[n - 1];
            ksum_add(&e, d / dt * (end - lo));
            if (!used_last && !(n == 2 && used_first))
                v[nv++] = d / dt;
        }
    }
    if (nv == 0) {
        series_scratch_done(&tmp);
        return carma_err_set(err, -ENODATA, "%s: no usable counter step inside the window", label);
    }
    out.joules = e.s + e.c;
    out.avg_power_w = out.joules / (end - start);
    out.sample_start_unix = t[sp.kl];
    out.sample_end_unix = t[sp.kr];
    out.samples = series_upper_bound(t, n, end) - series_lower_bound(t, n, start);
    series_stats(v, nv, &out);
    series_scratch_done(&tmp);
    *ret = out;
    return 0;
}
