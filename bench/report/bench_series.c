/*
 * bench_series: the numeric core of `carma report` (src/report/series.c) on a large srt-slurm
 * GPU samples.csv, for bench/report/run.sh to time against a numpy script doing the same.
 *
 *   bench_series gen OUT ROWS [HOSTS] [GPUS]
 *       writes a v2 samples.csv (srt-slurm.md §2.1) of ROWS rows: HOSTS x GPUS devices
 *       (default 2 x 8) scraped once a second from t = 1785168098, power in mW steps.
 *   bench_series run CSV WINDOWS OUT
 *       reads CSV (timestamp_unix, hostname, gpu_index, power_w by header name), one series per
 *       (hostname, gpu_index), sorts them, and for every window "start end" in WINDOWS takes
 *       srt-slurm's snapped window (series_window_snap) and carma's interpolated one of every
 *       device. Writes one line per (window, device) to OUT,
 *         snap <label> <start> <end> <joules> <avg> <mean> <min> <p5> <p50> <p95> <p99> <max> <n>
 *       (and "interp ..." lines), and prints the time of each phase and the peak memory per
 *       sample held as one JSON object on stdout.
 *
 * The CSV reader here is the benchmark's own (read() into a 4 MiB buffer, no mmap, so that
 * resident memory is what the series hold; commas and newlines found eight bytes at a time):
 * decimal numbers of at most 15 significant digits take Clinger's exact fast path (an integer below
 * 2^53 divided by an exact power of ten is correctly rounded), anything else goes to strtod.
 */
#include "report/series.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEVICES 1024
#define MAX_WINDOWS 4096
#define LINE_MAX_B  4096

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- gen ---- */

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t rng_next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int gen(const char *out, long rows, int hosts, int gpus)
{
    FILE *f = fopen(out, "w");
    if (!f) {
        perror(out);
        return 1;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    fputs("schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,"
          "gpu_util_pct,sm_active\r\n",
          f);
    long seq = 0, written = 0;
    while (written < rows) {
        for (int h = 0; h < hosts && written < rows; h++) {
            /* one timestamp per host and scrape, milliseconds, jittered */
            long ms = 1785168098000L + seq * 1000 + h * 13 + (long)(rng_next() % 40);
            for (int g = 0; g < gpus && written < rows; g++, written++) {
                long mw = 100000 + (long)(rng_next() % 600000); /* 100.000 .. 699.999 W */
                unsigned util = (unsigned)(rng_next() % 101);
                fprintf(f, "2,%ld.%03ld,%ld,node-%c,%d,GPU-node-%c%d,%ld.%03ld,%u.0,\r\n",
                        ms / 1000, ms % 1000, seq, 'a' + h, g, 'a' + h, g, mw / 1000, mw % 1000,
                        util);
            }
        }
        seq++;
    }
    if (fclose(f) != 0) {
        perror(out);
        return 1;
    }
    return 0;
}

/* ---- reading ---- */

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* the number in s[0, n); -1 and errno-free failure when it is not one */
static int parse_num(const char *s, size_t n, double *ret)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    uint64_t m = 0;
    int sig = 0, frac = 0; /* significant digits seen, fraction digits kept */
    bool any = false;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        any = true;
        sig += m != 0 || s[i] != '0';
        if (sig <= 15)
            m = m * 10 + (uint64_t)(s[i] - '0');
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            any = true;
            sig += m != 0 || s[i] != '0';
            if (sig <= 15) {
                m = m * 10 + (uint64_t)(s[i] - '0');
                frac++;
            }
        }
    }
    if (any && i == n && sig <= 15 && frac <= 22) {
        double v = (double)m / pow10_exact[frac];
        *ret = neg ? -v : v;
        return 0;
    }
    /* the slow, general way */
    char buf[128];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end != buf + n || !isfinite(v))
        return -1;
    *ret = v;
    return 0;
}

struct device {
    char host[64];
    size_t hlen;
    long gpu;
    struct series s;
};

static struct device devs[MAX_DEVICES];
static size_t ndevs;

/* the device of (host, gpu): the last one seen with that gpu index first, then a search */
static struct device *device_of(const char *host, size_t hlen, long gpu)
{
    static struct device *by_gpu[64];
    struct device *d = gpu >= 0 && gpu < 64 ? by_gpu[gpu] : NULL;
    if (d && d->hlen == hlen && memcmp(d->host, host, hlen) == 0)
        return d;
    d = NULL;
    for (size_t i = 0; i < ndevs && !d; i++)
        if (devs[i].gpu == gpu && devs[i].hlen == hlen && memcmp(devs[i].host, host, hlen) == 0)
            d = &devs[i];
    if (!d) {
        if (ndevs == MAX_DEVICES || hlen >= sizeof devs[0].host)
            return NULL;
        d = &devs[ndevs++];
        memcpy(d->host, host, hlen);
        d->host[hlen] = '\0';
        d->hlen = hlen;
        d->gpu = gpu;
        series_init(&d->s);
    }
    if (gpu >= 0 && gpu < 64)
        by_gpu[gpu] = d;
    return d;
}

static int col_t = -1, col_host = -1, col_gpu = -1, col_w = -1;

static int header(char *line)
{
    int c = 0;
    for (char *tok = strtok(line, ",\r\n"); tok; tok = strtok(NULL, ",\r\n"), c++) {
        if (!strcmp(tok, "timestamp_unix"))
            col_t = c;
        else if (!strcmp(tok, "hostname"))
            col_host = c;
        else if (!strcmp(tok, "gpu_index"))
            col_gpu = c;
        else if (!strcmp(tok, "power_w"))
            col_w = c;
    }
    return col_t < 0 || col_host < 0 || col_gpu < 0 || col_w < 0 ? -1 : 0;
}

static int row(const char *const *f, const size_t *fl, int nf, long lineno)
{
    int need = col_t > col_host ? col_t : col_host;
    need = need > col_gpu ? need : col_gpu;
    need = need > col_w ? need : col_w;
    double t, w, g;
    if (nf <= need || parse_num(f[col_t], fl[col_t], &t) < 0 ||
        parse_num(f[col_w], fl[col_w], &w) < 0 || parse_num(f[col_gpu], fl[col_gpu], &g) < 0) {
        fprintf(stderr, "line %ld: bad row\n", lineno);
        return -1;
    }
    struct device *d = device_of(f[col_host], fl[col_host], (long)g);
    if (!d || series_append(&d->s, t, w) < 0) {
        fprintf(stderr, "line %ld: cannot keep the sample\n", lineno);
        return -1;
    }
    return 0;
}

/* bit 7 of each byte of x that is zero, exactly (no borrow between bytes) */
static inline uint64_t zero_bytes(uint64_t x)
{
    uint64_t y = (x & 0x7f7f7f7f7f7f7f7full) + 0x7f7f7f7f7f7f7f7full;
    return ~(y | x | 0x7f7f7f7f7f7f7f7full);
}

#define MAX_FIELDS 16

/*
 * The rows of the complete lines in p[0, n) (n ends just after a '\n'): commas and newlines
 * are found eight bytes at a time. Returns the rows read, or -1.
 */
static long scan(const char *p, size_t n, long *lineno)
{
    const char *f[MAX_FIELDS];
    size_t fl[MAX_FIELDS];
    int nf = 0;
    long rows = 0;
    const char *fs = p;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x = 0;
        memcpy(&x, p + i, n - i < 8 ? n - i : 8);
        if (n - i < 8) /* the bytes past n are zero, which matches neither */
            x &= ~0ull >> (8 * (8 - (n - i)));
        uint64_t m = zero_bytes(x ^ 0x2c2c2c2c2c2c2c2cull) | zero_bytes(x ^ 0x0a0a0a0a0a0a0a0aull);
        while (m) {
            const char *c = p + i + (__builtin_ctzll(m) >> 3);
            m &= m - 1;
            if (nf < MAX_FIELDS) {
                f[nf] = fs;
                fl[nf] = (size_t)(c - fs);
            }
            nf++;
            fs = c + 1;
            if (*c != '\n')
                continue;
            ++*lineno;
            int k = nf < MAX_FIELDS ? nf : MAX_FIELDS;
            if (fl[k - 1] > 0 && f[k - 1][fl[k - 1] - 1] == '\r')
                fl[k - 1]--;
            if (!(nf == 1 && fl[0] == 0)) { /* not an empty line */
                if (row(f, fl, nf, *lineno) < 0)
                    return -1;
                rows++;
            }
            nf = 0;
        }
    }
    return rows;
}

static int load(const char *path, size_t *ret_rows)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        perror(path);
        close(fd);
        return -1;
    }
    size_t cap = 4u << 20, have = 0, rows = 0;
    char *buf = malloc(cap + 1);
    bool reserved = false;
    long lineno = 0;
    bool first = true, eof = false;
    int rc = 0;
    while (!eof || have > 0) {
        if (!eof) {
            ssize_t got = read(fd, buf + have, cap - have);
            if (got < 0) {
                perror(path);
                rc = -1;
                goto out;
            }
            eof = got == 0;
            have += (size_t)got;
        }
        if (eof && have > 0 && buf[have - 1] != '\n')
            buf[have++] = '\n'; /* a last line without its newline (buf has cap + 1) */
        char *p = buf;
        if (first) {
            char *nl = memchr(buf, '\n', have);
            if (!nl) {
                if (!eof && have < cap)
                    continue;
                fprintf(stderr, "%s: no header line\n", path);
                rc = -1;
                goto out;
            }
            *nl = '\0';
            if (header(buf) < 0) {
                fprintf(stderr, "%s: missing a column\n", path);
                rc = -1;
                goto out;
            }
            lineno = 1;
            first = false;
            p = nl + 1;
        }
        char *last = p;
        for (char *q = buf + have; q > p; q--)
            if (q[-1] == '\n') {
                last = q;
                break;
            }
        if (last == p && have == cap) {
            fprintf(stderr, "%s: a line longer than the buffer\n", path);
            rc = -1;
            goto out;
        }
        long r = scan(p, (size_t)(last - p), &lineno);
        if (r < 0) {
            rc = -1;
            goto out;
        }
        rows += (size_t)r;
        if (!reserved && r > 0) {
            /* size every device's series for the whole file from the first block, as a report
             * would: growing by doubling moves the arrays (mremap), and some VMs charge a
             * page-table refill for every page moved. Room only: the pages are not touched, so
             * they cost nothing resident, and series_shrink gives the rest back. */
            reserved = true;
            double per_row = (double)(size_t)(last - buf) / (double)r;
            size_t est = (size_t)((double)st.st_size / per_row / (double)ndevs * 1.05) + 1024;
            for (size_t i = 0; i < ndevs; i++)
                (void)series_reserve(&devs[i].s, est);
        }
        have = (size_t)(buf + have - last);
        memmove(buf, last, have);
        if (eof && have == 0)
            break;
    }
out:
    free(buf);
    close(fd);
    *ret_rows = rows;
    return rc;
}

/* ---- run ---- */

static int cmp_dev(const void *a, const void *b)
{
    const struct device *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    return c ? c : (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

static void put_row(FILE *o, const char *mode, const char *label, double start, double end,
                    const struct series_window *r)
{
    fprintf(o, "%s %s %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %zu\n",
            mode, label, start, end, r->joules, r->avg_power_w, r->mean_w, r->min_w, r->p5_w,
            r->p50_w, r->p95_w, r->p99_w, r->max_w, r->samples);
}

static int run(const char *csv, const char *wpath, const char *outp)
{
    static double ws[MAX_WINDOWS], we[MAX_WINDOWS];
    size_t nw = 0;
    FILE *wf = fopen(wpath, "r");
    if (!wf) {
        perror(wpath);
        return 1;
    }
    while (nw < MAX_WINDOWS && fscanf(wf, "%lf %lf", &ws[nw], &we[nw]) == 2)
        nw++;
    fclose(wf);

    double t0 = now_s();
    size_t rows;
    if (load(csv, &rows) < 0)
        return 1;
    double t1 = now_s();
    size_t held = 0;
    for (size_t i = 0; i < ndevs; i++) {
        series_sort(&devs[i].s);
        series_shrink(&devs[i].s);
        held += devs[i].s.n;
    }
    qsort(devs, ndevs, sizeof devs[0], cmp_dev);
    double t2 = now_s();

    FILE *o = fopen(outp, "w");
    if (!o) {
        perror(outp);
        return 1;
    }
    struct series_scratch sc = {0};
    size_t ok = 0, failed = 0;
    double snap_s = 0, interp_s = 0;
    for (int pass = 0; pass < 2; pass++) {
        double a = now_s();
        for (size_t k = 0; k < nw; k++) {
            for (size_t i = 0; i < ndevs; i++) {
                char label[96];
                snprintf(label, sizeof label, "gpu/%s/gpu%ld", devs[i].host, devs[i].gpu);
                struct series_window r;
                struct carma_err e = {0};
                int rc = pass == 0
                             ? series_window_snap(&devs[i].s, ws[k], we[k], label, &sc, &r, &e)
                             : series_window_interpolate(&devs[i].s, ws[k], we[k], NULL, label, &sc,
                                                         &r, &e);
                if (rc < 0) {
                    fprintf(o, "%s error %s\n", pass ? "interp" : "snap", e.msg);
                    failed++;
                    continue;
                }
                put_row(o, pass ? "interp" : "snap", label, ws[k], we[k], &r);
                ok++;
            }
        }
        *(pass ? &interp_s : &snap_s) = now_s() - a;
    }
    fclose(o);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double peak = (double)ru.ru_maxrss * 1024.0;
    printf("{\"rows\": %zu, \"devices\": %zu, \"windows\": %zu, \"load_s\": %.6f, "
           "\"sort_s\": %.6f, \"snap_s\": %.6f, \"interp_s\": %.6f, \"ok\": %zu, "
           "\"failed\": %zu, \"peak_rss_bytes\": %.0f, \"bytes_per_sample\": %.2f, "
           "\"scratch_bytes\": %zu}\n",
           rows, ndevs, nw, t1 - t0, t2 - t1, snap_s, interp_s, ok, failed, peak,
           held ? peak / (double)held : 0.0, sc.cap * sizeof(double));
    series_scratch_done(&sc);
    for (size_t i = 0; i < ndevs; i++)
        series_done(&devs[i].s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "gen"))
        return gen(argv[2], atol(argv[3]), argc > 4 ? atoi(argv[4]) : 2,
                   argc > 5 ? atoi(argv[5]) : 8);
    if (argc == 5 && !strcmp(argv[1], "run"))
        return run(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: bench_series gen OUT ROWS [HOSTS] [GPUS]\n"
                    "       bench_series run CSV WINDOWS OUT\n");
    return 2;
}
