/*
 * lttb: largest-triangle-three-buckets downsampling (see lttb.h).
 */
#include "report/lttb.h"

#include <math.h>

size_t lttb(const double *x, const double *y, size_t n, size_t m, size_t *idx)
{
    if (m < 3)
        m = 3;
    if (n <= m) {
        for (size_t i = 0; i < n; i++)
            idx[i] = i;
        return n;
    }
    size_t k = 0;
    idx[k++] = 0;
    size_t a = 0; /* the point kept last */
    double every = (double)(n - 2) / (double)(m - 2);
    for (size_t b = 0; b < m - 2; b++) {
        size_t lo = (size_t)((double)b * every) + 1;
        size_t hi = (size_t)((double)(b + 1) * every) + 1;
        if (hi > n - 1)
            hi = n - 1;
        if (lo >= hi)
            lo = hi - 1;
        /* the mean of the next bucket (the last point for the last bucket) */
        size_t nlo = hi;
        size_t nhi = (size_t)((double)(b + 2) * every) + 1;
        if (nhi > n)
            nhi = n;
        if (nlo >= nhi)
            nlo = nhi - 1;
        double mx = 0, my = 0;
        for (size_t i = nlo; i < nhi; i++) {
            mx += x[i];
            my += y[i];
        }
        mx /= (double)(nhi - nlo);
        my /= (double)(nhi - nlo);
        double best = -1;
        size_t pick = lo;
        for (size_t i = lo; i < hi; i++) {
            double area =
                fabs((x[a] - mx) * (y[i] - y[a]) - (x[a] - x[i]) * (my - y[a])); /* x2 area */
            if (area > best) {
                best = area;
                pick = i;
            }
        }
        idx[k++] = pick;
        a = pick;
    }
    idx[k++] = n - 1;
    return k;
}

size_t lttb_gaps_room(const double *y, size_t n, size_t m)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += !isfinite(y[i]);
    return (m < 3 ? 3 : m) + 3 * bad + 2;
}

size_t lttb_gaps(const double *x, const double *y, size_t n, size_t m, size_t *idx)
{
    size_t good = 0;
    for (size_t i = 0; i < n; i++)
        good += isfinite(y[i]) != 0;
    size_t k = 0;
    size_t i = 0;
    while (i < n) {
        if (!isfinite(y[i])) {
            if (k > 0 && isfinite(y[idx[k - 1]]))
                idx[k++] = i; /* one break per gap */
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && isfinite(y[j]))
            j++;
        size_t len = j - i;
        /* this run's share of m, at least its ends */
        size_t share = good > 0 ? (size_t)((double)m * (double)len / (double)good) : len;
        if (share < 2)
            share = 2;
        if (len <= share || share < 3) {
            if (len <= 2 || len <= share) {
                for (size_t q = i; q < j; q++)
                    idx[k++] = q;
            } else {
                idx[k++] = i;
                idx[k++] = j - 1;
            }
        } else {
            size_t got = lttb(x + i, y + i, len, share, idx + k);
            for (size_t q = 0; q < got; q++)
                idx[k + q] += i;
            k += got;
        }
        i = j;
    }
    return k;
}
