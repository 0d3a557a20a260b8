/*
 * bench_marks: the cost of one mark (a window's begin + end, client to carma and back), beside
 * a bare Unix socket round trip and beside what Zeus does per window (the GPUs' energy counter
 * read through NVML at begin and at end). bench/marks/run.sh runs it; docs/benchmarks.md has the
 * figures.
 *
 *   bench_marks carma N       N windows through libcarma (run it under carma stat -o DIR):
 *                             carma_begin_nowait, carma_end
 *   bench_marks carma-wait N  the same with carma_begin (which waits for the window's id)
 *   bench_marks carma-nowait N   carma_begin_nowait, carma_end_nowait (no energy back)
 *   bench_marks bare N        N pairs of round trips on a SOCK_SEQPACKET socket pair to an echo
 *                             thread (the floor: the same packets, no carma)
 *   bench_marks bare-process N   the same to an echo in a child process (the floor between
 *                             two processes, as between a program and carma)
 *   bench_marks nvml N LIB    N windows of Zeus's kind: nvmlDeviceGetTotalEnergyConsumption of
 *                             every GPU at begin and at end (LIB: an NVML library, the tests'
 *                             fake one here)
 * Prints "MODE N us_per_window" (the median of 5 batches of N/5). With BENCH_MARKS_WORK_US=W
 * the program works W us after each call (a training step's begin, its work, its end, the
 * next step) and only the time inside the calls counts.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "carma.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- carma ---- */

/* Each mode's one(half): half 0 the window's begin, half 1 its end. */
static int one_carma(int half)
{
    struct carma_energy e;
    return half == 0 ? carma_begin_nowait("bench", -1, -1) : carma_end("bench", -1, -1, &e);
}

static int one_carma_nowait(int half)
{
    return half == 0 ? carma_begin_nowait("bench", -1, -1) : carma_end_nowait("bench", -1, -1);
}

static int one_carma_wait(int half)
{
    struct carma_energy e;
    if (half == 0)
        return carma_begin("bench", -1, -1) < 1 ? -1 : 0;
    return carma_end("bench", -1, -1, &e);
}

/* ---- bare ---- */

static int pair[2];

static void *echo(void *arg)
{
    (void)arg;
    char buf[1100];
    for (;;) {
        ssize_t n = recv(pair[1], buf, sizeof buf, 0);
        if (n <= 0)
            return NULL;
        const char *rep = "ok\tid=1\tt0=1796000000.000000\tt1=1796000000.100000\tenergy_j=1.000"
                          "\tcpu_j=1.000\tgpu_j=\tdram_j=\tmethod=measured";
        if (send(pair[1], rep, strlen(rep), 0) < 0)
            return NULL;
    }
}

static int one_bare(int half)
{
    char buf[1100];
    const char *msg = half ? "end\tbench" : "begin\tbench";
    return send(pair[0], msg, strlen(msg), 0) < 0 || recv(pair[0], buf, sizeof buf, 0) <= 0 ? -1
                                                                                            : 0;
}

/* ---- nvml ---- */

typedef int (*nvml_init_f)(void);
typedef int (*nvml_count_f)(unsigned *);
typedef int (*nvml_handle_f)(unsigned, void **);
typedef int (*nvml_energy_f)(void *, unsigned long long *);
static nvml_energy_f nvml_energy;
static void *gpus[64];
static unsigned ngpu;

static unsigned long long e0[64];

static int one_nvml(int half)
{
    unsigned long long e1[64];
    for (unsigned g = 0; g < ngpu; g++)
        if (nvml_energy(gpus[g], half ? &e1[g] : &e0[g]) != 0)
            return -1;
    return half == 0 || e1[0] >= e0[0] ? 0 : -1;
}

/* Busy for us microseconds (the program's own work between its calls). */
static void work(double us)
{
    double until = now() + us / 1e6;
    while (now() < until)
        ;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_marks carma|carma-nowait|carma-wait|bare|bare-process|nvml "
                        "N [NVML_LIBRARY]\n");
        return 2;
    }
    long n = atol(argv[2]);
    int (*one)(int) = NULL;
    const char *w = getenv("BENCH_MARKS_WORK_US");
    double work_us = w ? atof(w) : 0.0;
    if (strcmp(argv[1], "carma") == 0) {
        one = one_carma;
    } else if (strcmp(argv[1], "carma-nowait") == 0) {
        one = one_carma_nowait;
    } else if (strcmp(argv[1], "carma-wait") == 0) {
        one = one_carma_wait;
    } else if (strcmp(argv[1], "bare") == 0 || strcmp(argv[1], "bare-process") == 0) {
        /* bare: the echo in a thread of this process; bare-process: in a child process, as
         * carma is to the program that marks (a switch between processes costs more) */
        pthread_t t;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) < 0) {
            perror("bench_marks: socketpair");
            return 1;
        }
        if (argv[1][4] == '-') {
            pid_t pid = fork();
            if (pid < 0) {
                perror("bench_marks: fork");
                return 1;
            }
            if (pid == 0) {
                close(pair[0]);
                echo(NULL);
                _exit(0);
            }
            close(pair[1]);
        } else if (pthread_create(&t, NULL, echo, NULL) != 0) {
            perror("bench_marks: pthread_create");
            return 1;
        }
        one = one_bare;
    } else if (strcmp(argv[1], "nvml") == 0 && argc > 3) {
        void *h = dlopen(argv[3], RTLD_NOW);
        nvml_init_f init = h ? (nvml_init_f)dlsym(h, "nvmlInit_v2") : NULL;
        nvml_count_f count = h ? (nvml_count_f)dlsym(h, "nvmlDeviceGetCount_v2") : NULL;
        nvml_handle_f handle = h ? (nvml_handle_f)dlsym(h, "nvmlDeviceGetHandleByIndex_v2") : NULL;
        nvml_energy = h ? (nvml_energy_f)dlsym(h, "nvmlDeviceGetTotalEnergyConsumption") : NULL;
        if (!init || !count || !handle || !nvml_energy || init() != 0 || count(&ngpu) != 0 ||
            ngpu == 0 || ngpu > 64) {
            fprintf(stderr, "bench_marks: %s: no NVML with a GPU (%s)\n", argv[3], dlerror());
            return 1;
        }
        for (unsigned g = 0; g < ngpu; g++)
            if (handle(g, &gpus[g]) != 0)
                return 1;
        one = one_nvml;
    } else {
        fprintf(stderr, "bench_marks: unknown mode %s\n", argv[1]);
        return 2;
    }
    /* without work, a batch is timed whole; with BENCH_MARKS_WORK_US, the program works that
     * long after each call and only the time inside the calls counts */
    long batch = n / 5 > 0 ? n / 5 : 1;
    double us[5];
    for (int b = 0; b < 5; b++) {
        double t0 = now(), inside = 0.0;
        for (long i = 0; i < batch; i++)
            for (int half = 0; half < 2; half++) {
                double c0 = work_us > 0 ? now() : 0.0;
                if (one(half) != 0) {
                    fprintf(stderr, "bench_marks: %s: a window failed (%s)\n", argv[1],
                            carma_last_error());
                    return 1;
                }
                if (work_us > 0) {
                    inside += now() - c0;
                    work(work_us);
                }
            }
        us[b] = (work_us > 0 ? inside : now() - t0) / (double)batch * 1e6;
    }
    qsort(us, 5, sizeof *us, cmp);
    printf("%s %ld %.3f\n", argv[1], batch * 5, us[2]);
    return 0;
}
