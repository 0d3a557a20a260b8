/*
 * bench_batch: one tick's reads as N pread(2)s against one io_uring submission of the same N
 * reads, on the files given (a fixture's regular files, or real kernfs/sysfs and procfs
 * attributes of this machine).
 *
 * usage: bench_batch [--rounds R] [--ticks T] [--label TEXT] FILE...
 *
 * Every file is opened once. Per tick, each way reads every file at offset 0 into its own
 * buffer:
 *   - pread:  N pread(2) calls;
 *   - uring:  N IORING_OP_READ_FIXED on registered files and registered buffers, one
 *             io_uring_submit_and_wait(N) (one io_uring_enter), then the N completions;
 *   - uring-async: the same with IOSQE_ASYNC (every read in an io-wq worker), which is what
 *             a file without non-blocking reads (kernfs) gets anyway after a first try.
 * The ways take turns in chunks of 200 ticks, R rounds of T ticks each; the figures are
 * medians over the rounds of wall time per tick and of CPU time per tick (getrusage
 * RUSAGE_SELF: the io-wq workers are threads of this process, so their CPU time is in it).
 * It also reports whether the ring's reads completed inline: the number of io-wq worker
 * threads (/proc/self/task) seen after the uring rounds, and the bytes read agree with the
 * pread's (every file, every tick).
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#define FILES_MAX  256
#define BUF_SIZE   64
#define ROUNDS_MAX 101
#define CHUNK      200
#define CHUNK_GAP  10

enum way { W_PREAD, W_URING, W_URING_ASYNC, W_SLEEP, W_COUNT };
static const char *const way_name[W_COUNT] = {"pread", "uring", "uring-async", "sleep only"};

struct batch {
    int fds[FILES_MAX];
    size_t n;
    char buf[FILES_MAX][BUF_SIZE];
    ssize_t len_pread[FILES_MAX]; /* the lengths the first pread tick got */
    struct io_uring ring;
    unsigned long mismatches;
    unsigned long errors;
};

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

static void tick_pread(struct batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        ssize_t r = pread(b->fds[i], b->buf[i], BUF_SIZE, 0);
        if (r < 0)
            b->errors++;
        else if (b->len_pread[i] < 0)
            b->len_pread[i] = r;
    }
}

static void tick_uring(struct batch *b, bool async)
{
    for (size_t i = 0; i < b->n; i++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
        io_uring_prep_read_fixed(sqe, (int)i, b->buf[i], BUF_SIZE, 0, (int)i);
        sqe->flags |= IOSQE_FIXED_FILE | (async ? IOSQE_ASYNC : 0);
        sqe->user_data = i;
    }
    if (io_uring_submit_and_wait(&b->ring, (unsigned)b->n) < 0) {
        b->errors++;
        return;
    }
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&b->ring, head, cqe)
    {
        size_t i = (size_t)cqe->user_data;
        if (cqe->res < 0)
            b->errors++;
        else if (i < b->n && b->len_pread[i] >= 0 && cqe->res != b->len_pread[i])
            b->mismatches++;
        seen++;
    }
    io_uring_cq_advance(&b->ring, seen);
    if (seen != b->n)
        b->errors++;
}

static long gap_ns; /* --gap: a sleep before each tick (cold caches, as a 10 Hz sampler's) */

static void run(struct batch *b, enum way w, unsigned long ticks)
{
    for (unsigned long t = 0; t < ticks; t++) {
        if (gap_ns) {
            struct timespec ts = {gap_ns / 1000000000, gap_ns % 1000000000};
            nanosleep(&ts, NULL);
        }
        if (w == W_SLEEP)
            continue;
        if (w == W_PREAD)
            tick_pread(b);
        else
            tick_uring(b, w == W_URING_ASYNC);
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    unsigned rounds = 7;
    unsigned long ticks = 5000;
    const char *label = "files";
    static struct batch b;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--ticks") == 0 && i + 1 < argc)
            ticks = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--label") == 0 && i + 1 < argc)
            label = argv[++i];
        else if (strcmp(argv[i], "--gap-ms") == 0 && i + 1 < argc)
            gap_ns = strtol(argv[++i], NULL, 10) * 1000000L;
        else
            break;
    }
    unsigned long chunk = gap_ns ? CHUNK_GAP : CHUNK;
    if (rounds < 1 || rounds > ROUNDS_MAX || ticks < chunk || i >= argc || gap_ns < 0) {
        fprintf(stderr,
                "usage: bench_batch [--rounds 1..%d] [--ticks >=%d] [--gap-ms MS] "
                "[--label TEXT] FILE...\n",
                ROUNDS_MAX, CHUNK);
        return 2;
    }
    for (; i < argc && b.n < FILES_MAX; i++) {
        int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "bench_batch: %s: %s\n", argv[i], strerror(errno));
            return 2;
        }
        b.len_pread[b.n] = -1;
        b.fds[b.n++] = fd;
    }
    int r = io_uring_queue_init((unsigned)b.n < 8 ? 8 : (unsigned)b.n * 2, &b.ring, 0);
    if (r < 0) {
        fprintf(stderr, "bench_batch: io_uring_queue_init: %s\n", strerror(-r));
        return 1;
    }
    struct iovec iov[FILES_MAX];
    for (size_t k = 0; k < b.n; k++)
        iov[k] = (struct iovec){.iov_base = b.buf[k], .iov_len = BUF_SIZE};
    if ((r = io_uring_register_files(&b.ring, b.fds, (unsigned)b.n)) < 0 ||
        (r = io_uring_register_buffers(&b.ring, iov, (unsigned)b.n)) < 0) {
        fprintf(stderr, "bench_batch: io_uring_register: %s\n", strerror(-r));
        return 1;
    }
    int threads_before = threads();
    /* warm-up: the pread lengths first, then each way */
    run(&b, W_PREAD, chunk);
    run(&b, W_URING, chunk);
    int threads_after_uring = threads();
    run(&b, W_URING_ASYNC, chunk);
    int threads_after_async = threads();
    double wall[W_COUNT][ROUNDS_MAX], cpu[W_COUNT][ROUNDS_MAX];
    for (unsigned k = 0; k < rounds; k++) {
        int64_t w_ns[W_COUNT] = {0}, c_ns[W_COUNT] = {0};
        for (unsigned long done = 0; done < ticks; done += chunk)
            for (int w = 0; w < W_COUNT; w++) {
                if (w == W_SLEEP && !gap_ns)
                    continue;
                int64_t t0 = mono_ns(), c0 = cpu_ns();
                run(&b, (enum way)w, chunk);
                w_ns[w] += mono_ns() - t0;
                c_ns[w] += cpu_ns() - c0;
            }
        unsigned long done = (ticks + chunk - 1) / chunk * chunk;
        for (int w = 0; w < W_COUNT; w++) {
            wall[w][k] = (double)w_ns[w] / (double)done / 1e3;
            cpu[w][k] = (double)c_ns[w] / (double)done / 1e3;
        }
    }
    printf("%s: %zu files, %u rounds x %lu ticks%s, µs per tick (median of rounds)\n", label, b.n,
           rounds, ticks, gap_ns ? ", a sleep before each" : "");
    double pw = 0, pc = 0, sleep_c = 0;
    if (gap_ns)
        sleep_c = median(cpu[W_SLEEP], rounds);
    for (int w = 0; w < W_COUNT; w++) {
        if (w == W_SLEEP && !gap_ns)
            continue;
        double mw = median(wall[w], rounds), mc = median(cpu[w], rounds);
        if (w == W_PREAD)
            pw = mw, pc = mc - sleep_c;
        if (gap_ns) {
            /* the sleep's own cost (the wake-up) apart: what the reads add to it */
            printf("  %-12s cpu %8.2f", way_name[w], mc);
            if (w != W_SLEEP)
                printf("  reads %8.2f (%.2f µs per file)", mc - sleep_c,
                       (mc - sleep_c) / (double)b.n);
            if (w != W_PREAD && w != W_SLEEP)
                printf("  pread/this: cpu %.2fx", mc - sleep_c > 0 ? pc / (mc - sleep_c) : 0.0);
            printf("\n");
            continue;
        }
        printf("  %-12s wall %8.2f  cpu %8.2f  (%.2f µs wall per file)", way_name[w], mw, mc,
               mw / (double)b.n);
        if (w != W_PREAD)
            printf("  pread/this: wall %.2fx cpu %.2fx", pw / mw, mc > 0 ? pc / mc : 0.0);
        printf("\n");
    }
    printf("  threads: %d before, %d after the inline ring (io-wq workers: %d), %d after "
           "IOSQE_ASYNC\n",
           threads_before, threads_after_uring, threads_after_uring - threads_before,
           threads_after_async);
    printf("  errors %lu, length mismatches against pread %lu\n", b.errors, b.mismatches);
    io_uring_queue_exit(&b.ring);
    return b.errors || b.mismatches ? 1 : 0;
}
