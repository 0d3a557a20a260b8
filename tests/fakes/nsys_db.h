/*
 * nsys_db: writes small Nsight Systems SQLite exports with the SQLite C API, for the tests
 * (tests/unit/test_nsys.c) and the fake nsys (fake_nsys.c). The tables and columns are those of
 * a real export (`nsys export --type sqlite`), the few that carma reads and some it does not:
 * TARGET_INFO_SESSION_START_TIME(utcEpochNs, utcTime, localTime), TARGET_INFO_GPU(id, name,
 * busLocation, uuid, ...), TARGET_INFO_CUDA_DEVICE(gpuId, cudaId, pid, uuid, ...),
 * CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId, correlationId,
 * globalPid, demangledName, shortName, ...) and StringIds(id, value).
 */
#ifndef CARMA_TESTS_NSYS_DB_H
#define CARMA_TESTS_NSYS_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nsysdb_kernel {
    int64_t start, end; /* ns since the session's start */
    int device;         /* the process's CUDA device number */
    uint32_t pid;
    int stream;
};

struct nsysdb_gpu {
    int id;
    const char *uuid; /* NULL: no uuid */
};

struct nsysdb_cudadev {
    int gpu, cuda;
    uint32_t pid;
};

struct nsysdb_opts {
    int64_t session_start_ns; /* 0: the table holds no row */
    bool no_session_table, no_kernel_table;
    const char *drop_kernel_column; /* the kernel table without this column */
    const char *drop_session_column;
    const struct nsysdb_kernel *k;
    size_t nk;
    const struct nsysdb_gpu *gpu; /* NULL, ngpu 0: no TARGET_INFO_GPU */
    size_t ngpu;
    const struct nsysdb_cudadev *dev; /* NULL, ndev 0: no TARGET_INFO_CUDA_DEVICE */
    size_t ndev;
};

/* The globalPid nsys writes for pid (hardware and VM ids in the high bits, tid 0). */
int64_t nsysdb_global_pid(uint32_t pid);

/* Creates (replaces) the export at path. Returns 0, or -1 after printing the SQLite error. */
int nsysdb_write(const char *path, const struct nsysdb_opts *o);

#endif
