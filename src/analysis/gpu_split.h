/*
 * gpu_split: who used a GPU during a tick, as weights for split_energy (split.h).
 *
 * A GPU's dynamic energy goes to the jobs by their processes' SM utilization on that device
 * (NVML's per-process samples); what processes outside the experiment used is "other". When
 * no process has an SM figure, the jobs with a context on the device (a process in NVML's list)
 * share equally, an outside process counting as one more party. When NVML lists no process
 * (the call is unsupported, processes are hidden as in some containers, or nothing runs), the
 * running jobs whose allocation or CUDA_VISIBLE_DEVICES names the device share equally.
 * Otherwise the dynamic energy stays unattributed.
 */
#ifndef CARMA_ANALYSIS_GPU_SPLIT_H
#define CARMA_ANALYSIS_GPU_SPLIT_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/split.h"

enum gpu_basis { GPU_BASIS_SM, GPU_BASIS_CONTEXT, GPU_BASIS_ALLOCATION, GPU_BASIS_NONE };
#define GPU_BASIS_N 4

/* One process NVML lists on the device. */
struct gpu_proc {
    int job;    /* index of the job it belongs to, -1 for a process outside the experiment */
    int sm_pct; /* its SM utilization, -1 when unknown */
};

struct gpu_weights {
    double job_w[SPLIT_JOBS_MAX];
    bool present[SPLIT_JOBS_MAX]; /* the job used the device in this tick (SPLIT_EQUAL) */
    double node_w;                /* the jobs' weights plus the outside processes' */
    enum gpu_basis basis;
};

/*
 * Weights for njobs jobs from the nprocs processes listed on the device (procs may be NULL
 * when nprocs is 0) and, for the allocation fallback, owns[k] (job k's allocation names the
 * device) and alive[k] (job k has a live process); owns and alive may be NULL.
 */
void gpu_weights(const struct gpu_proc *procs, size_t nprocs, size_t njobs, const bool *owns,
                 const bool *alive, struct gpu_weights *out);

/* The shares of a period of a device's energy. */
struct gpu_shares {
    double f[SPLIT_JOBS_MAX];     /* each job's share, 0 to 1 */
    bool present[SPLIT_JOBS_MAX]; /* the job used the device at either end */
    double node;                  /* 1 when somebody used the device (1 - Σf is other's), else 0 */
    enum gpu_basis basis;         /* the basis of the end that counted most */
};

/*
 * A period's shares from the weights read at its start (prev; NULL when none was read) and at
 * its end (cur). The period has two parts, before and after a workload started or ended in it
 * (its halves when none did): the first goes by prev's shares, the second by cur's, each part
 * weighted by its dynamic energy dyn0, dyn1 (by its duration dur0, dur1 when neither is
 * positive). An end where nobody used the device gives its part to the other; when nobody
 * used it at either end, node is 0 (the energy is unattributed).
 */
void gpu_period_shares(const struct gpu_weights *prev, const struct gpu_weights *cur, size_t njobs,
                       double dyn0, double dyn1, double dur0, double dur1, struct gpu_shares *out);

/* "sm", "context", "allocation", "none". */
const char *gpu_basis_name(enum gpu_basis b);

/*
 * Which of ngpu GPUs (NVML indexes 0..ngpu-1 with their UUIDs, uuid[i] may be "" or NULL)
 * a CUDA_VISIBLE_DEVICES value makes visible: sets visible[i] for each. Entries are indexes
 * or GPU UUIDs ("GPU-..." or a unique prefix of one, as CUDA accepts them); as in CUDA, the
 * list ends at the first entry that names no device. MIG instance UUIDs ("MIG-...") name no
 * whole device and end the list too. Returns how many devices were made visible.
 */
size_t gpu_visible_parse(const char *cvd, const char *const *uuid, size_t ngpu, bool *visible);

#endif
