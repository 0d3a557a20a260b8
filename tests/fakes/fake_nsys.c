/*
 * carma-fake-nsys: a stand-in for Nsight Systems' `nsys profile`, for the tests (install it as
 * `nsys` in a directory of PATH).
 *
 *   nsys profile [--output=BASE | -o BASE] [--export=sqlite] [--OPTION=VALUE]... CMD [ARGS...]
 *
 * Runs CMD (its exit status becomes nsys's, 128 + the signal when it was killed) and, with
 * --export=sqlite, writes BASE.sqlite (nsys_db.h) with kernels of CMD's process over its whole
 * life: every 10 ms, two kernels on two streams that overlap, their union
 * CARMA_FAKE_NSYS_DUTY (0 to 1, default 1) of the 10 ms, on the CUDA device
 * CARMA_FAKE_NSYS_DEVICE (default 0), which TARGET_INFO_CUDA_DEVICE maps to the GPU of
 * TARGET_INFO_GPU with the UUID CARMA_FAKE_NSYS_UUID (default GPU-0000). The session starts
 * when the fake starts. Also writes an empty BASE.nsys-rep. Unknown options are ignored;
 * usage errors exit with 2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsys_db.h"

static int64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int64_t t0 = real_ns();
    if (argc < 2 || strcmp(argv[1], "profile") != 0) {
        fprintf(stderr, "carma-fake-nsys: only `nsys profile ... CMD` is faked\n");
        return 2;
    }
    const char *base = "report1";
    int sqlite = 0, i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strncmp(argv[i], "--output=", 9) == 0)
            base = argv[i] + 9;
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            base = argv[++i];
        else if (strcmp(argv[i], "--export=sqlite") == 0)
            sqlite = 1;
    }
    if (i >= argc) {
        fprintf(stderr, "carma-fake-nsys: no command to profile\n");
        return 2;
    }
    double duty = getenv("CARMA_FAKE_NSYS_DUTY") ? atof(getenv("CARMA_FAKE_NSYS_DUTY")) : 1.0;
    int device = getenv("CARMA_FAKE_NSYS_DEVICE") ? atoi(getenv("CARMA_FAKE_NSYS_DEVICE")) : 0;
    const char *uuid = getenv("CARMA_FAKE_NSYS_UUID") ? getenv("CARMA_FAKE_NSYS_UUID") : "GPU-0000";
    if (duty < 0 || duty > 1) {
        fprintf(stderr, "carma-fake-nsys: CARMA_FAKE_NSYS_DUTY must be from 0 to 1\n");
        return 2;
    }
    int64_t start = real_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("carma-fake-nsys: fork");
        return 1;
    }
    if (pid == 0) {
        execvp(argv[i], argv + i);
        fprintf(stderr, "carma-fake-nsys: %s: %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    int64_t end = real_ns();
    int status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    if (!sqlite)
        return status;
    const int64_t period = 10000000; /* 10 ms */
    size_t n = duty > 0 ? (size_t)((end - start) / period + 1) * 2 : 0;
    struct nsysdb_kernel *k = calloc(n ? n : 1, sizeof *k);
    if (!k)
        return 1;
    size_t nk = 0;
    for (int64_t t = start; duty > 0 && t < end && nk + 2 <= n; t += period) {
        int64_t busy = (int64_t)(duty * (double)period);
        int64_t stop = t + busy < end ? t + busy : end;
        int64_t mid = t + (stop - t) * 3 / 4, q = t + (stop - t) / 4;
        k[nk++] = (struct nsysdb_kernel){t - t0, mid - t0, device, (uint32_t)pid, 7};
        k[nk++] = (struct nsysdb_kernel){q - t0, stop - t0, device, (uint32_t)pid, 13};
    }
    struct nsysdb_gpu gpu = {.id = 0, .uuid = uuid};
    struct nsysdb_cudadev dev = {.gpu = 0, .cuda = device, .pid = (uint32_t)pid};
    struct nsysdb_opts o = {
        .session_start_ns = t0, .k = k, .nk = nk, .gpu = &gpu, .ngpu = 1, .dev = &dev, .ndev = 1};
    char path[4200];
    snprintf(path, sizeof path, "%s.sqlite", base);
    int r = nsysdb_write(path, &o);
    free(k);
    snprintf(path, sizeof path, "%s.nsys-rep", base);
    FILE *f = fopen(path, "we");
    if (f)
        fclose(f);
    return r < 0 ? 1 : status;
}
