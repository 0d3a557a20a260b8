/*
 * nsys: per-process GPU kernel busy time from an Nsight Systems SQLite export.
 *
 * `nsys profile --export=sqlite` (or `nsys export --type sqlite`) writes one table per kind of
 * event. What is read here (docs/formats.md, "nsys_gpu.csv"):
 *
 *   TARGET_INFO_SESSION_START_TIME(utcEpochNs)   the session's start, ns since the Unix epoch;
 *                                                every event time is ns since that start
 *   CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, globalPid)
 *                                                one row per kernel execution; the process id
 *                                                is (globalPid >> 24) & 0xFFFFFF; deviceId is
 *                                                the CUDA device ordinal seen by that process
 *   TARGET_INFO_CUDA_DEVICE(gpuId, cudaId[, pid]) optional: which GPU (TARGET_INFO_GPU.id) a
 *                                                process's CUDA device is (CUDA_VISIBLE_DEVICES
 *                                                renumbers devices per process)
 *   TARGET_INFO_GPU(id[, uuid, name])            optional: the GPUs, with their UUIDs
 *
 * A kernel's GPU is found through TARGET_INFO_CUDA_DEVICE (pid, cudaId = deviceId), else the
 * only GPU of TARGET_INFO_GPU when there is one, else deviceId itself (counted in `unmapped`).
 * nsys_map_devices then numbers the GPUs as NVML does in a run, by UUID.
 *
 * The busy time of a process on a GPU is the union of its kernels' intervals: kernels that
 * overlap (concurrent streams) count once. It is cut at the given interval edges.
 * The library opens the file read-only, prints nothing and allocates what it returns.
 */
#ifndef CARMA_IMPORT_NSYS_H
#define CARMA_IMPORT_NSYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/csv.h"
#include "core/err.h"

/* The most kernel rows read from one export (more: -EFBIG). */
#define NSYS_KERNELS_MAX (32u * 1024u * 1024u)
/* The most GPUs described by one export that are kept. */
#define NSYS_GPUS_MAX 64
/* The most interval edges of a grid (more: -E2BIG). */
#define NSYS_EDGES_MAX (16u * 1024u * 1024u)

struct nsys_kernel {
    int64_t start_ns, end_ns; /* Unix time, ns */
    uint32_t pid;
    int device; /* deviceId as in the export (the process's CUDA ordinal) */
    int gpu;    /* TARGET_INFO_GPU.id it resolved to (or deviceId when unmapped) */
    int index;  /* the output device number: gpu, or the run's NVML index (nsys_map_devices) */
};

struct nsys_gpu {
    int id;
    char uuid[96]; /* "" when the export does not say */
    char name[96];
};

struct nsys_profile {
    int64_t session_start_unix_ns;
    struct nsys_kernel *k;
    size_t n;
    struct nsys_gpu gpus[NSYS_GPUS_MAX];
    size_t ngpus;
    size_t skipped;  /* kernel rows without usable times (NULL, both 0, end before start) */
    size_t unmapped; /* kernels whose GPU the export does not name: gpu = deviceId */
};

/*
 * Loads the export at path. Returns 0 and fills *ret (release with nsys_profile_free), else a
 * negative errno with e naming the file: -ENOENT (no such file), -EACCES, -EINVAL (not an
 * SQLite database, damaged, a required table or column missing, no session start row: the
 * message names the table and column), -ENODATA (no CUPTI_ACTIVITY_KIND_KERNEL table: the
 * profile recorded no CUDA kernel), -EFBIG (more than NSYS_KERNELS_MAX kernels), -ENOMEM.
 * An empty kernel table is not an error (n = 0).
 */
int nsys_load(const char *path, struct nsys_profile *ret, struct carma_err *e);

/* Releases what nsys_load allocated and zeroes p (NULL-safe, safe on a zeroed struct). */
void nsys_profile_free(struct nsys_profile *p);

/* The process id a globalPid (or globalTid) encodes. */
uint32_t nsys_pid(int64_t global_pid);

/*
 * Numbers the kernels' GPUs as the run does: every kernel whose GPU has a UUID equal to
 * uuid[i] (compared without a "GPU-" prefix and case) gets index i; uuid has n entries, each
 * may be NULL or "". The others keep index = gpu. Returns the number of kernels left so.
 */
size_t nsys_map_devices(struct nsys_profile *p, const char *const *uuid, size_t n);

/*
 * Interval edges every interval_ns (> 0) on the Unix-time grid (multiples of interval_ns)
 * that cover every kernel of the profiles: *ret (malloc'd) gets *ret_n edges, none (and 0)
 * when no kernel. Returns 0, -EINVAL, -E2BIG (more than NSYS_EDGES_MAX), -ERANGE (an edge
 * would not fit in 64 bits of ns: kernels of a damaged export in 2262 or before 1970) or
 * -ENOMEM.
 */
int nsys_grid(const struct nsys_profile *const *p, size_t np, int64_t interval_ns, int64_t **ret,
              size_t *ret_n);

/* One row of nsys_gpu.csv. */
struct nsys_busy {
    int64_t t0_ns, t1_ns; /* the interval, Unix time */
    int gpu;              /* the kernels' index (nsys_map_devices) */
    uint32_t pid;
    double busy_s;        /* > 0 */
    const char *workload; /* the caller's; NULL: a blank cell */
};

struct nsys_busy_set {
    struct nsys_busy *rows;
    size_t n, cap;
    double outside_s; /* busy time outside the edges (not counted in any row) */
};

/*
 * Adds to *out the busy time of each (index, pid) of p in each interval [edges[i],
 * edges[i+1]) (nedges >= 2, increasing): the union of the kernels' intervals, clipped to the
 * interval. Rows are appended (workload NULL); call nsys_busy_sort once every profile is in.
 * Returns 0 or -ENOMEM (out keeps what it had).
 */
int nsys_busy_add(const struct nsys_profile *p, const int64_t *edges, size_t nedges,
                  struct nsys_busy_set *out);

/* Sorts the rows by interval, gpu, pid, merging rows of the same key (their busy time added). */
void nsys_busy_sort(struct nsys_busy_set *s);

/* Frees the rows (safe on a zeroed set). */
void nsys_busy_free(struct nsys_busy_set *s);

/* The header of nsys_gpu.csv (without the line end). */
#define NSYS_GPU_CSV_HEADER "interval_start_unix,interval_end_unix,gpu,pid,workload,busy_s"

/* Appends the header (CRLF) and every row of s to b. Returns 0 or -ENOMEM. */
int nsys_busy_csv(const struct nsys_busy_set *s, struct csv_buf *b);

#endif
