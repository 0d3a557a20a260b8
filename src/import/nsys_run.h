/*
 * nsys_run: Nsight Systems kernel busy time brought into a `carma run` directory.
 *
 * nsys_run_info_load reads what the import needs from a run directory: the run's GPUs (index
 * and UUID, report.json gpus[]), its workloads and their processes (workloads.json pids and
 * pgid, pstree.log), their start and end, and the sample ticks (samples.csv), on which
 * nsys_gpu.csv is cut.
 *
 * nsys_run_reattribute splits the energy of every GPU of the run again with nsys_gpu.csv: per
 * split period of attribution.csv (the energy of each period is kept, only its shares change),
 * the static part (the GPU's static_power_w × the period) by the run's idle policy, the dynamic
 * rest by the workloads' kernel busy time on that GPU in the period, busy time of processes of
 * no workload going to "other". A period without any busy time goes, as the NVML split does
 * without SM figures, to the workloads running then that had kernels on the GPU in the run
 * (equal shares, basis "context"), else to the running workloads whose allocation names the
 * GPU ("allocation"), else stays unattributed ("none"). It keeps the NVML split as
 * attribution_nvml.csv (once: a second import starts again from it), rewrites the GPU rows of
 * attribution.csv and updates report.json (docs/formats.md lists the fields): the sums
 * jobs + idle + other + unattributed = energy, per GPU and per run, still hold.
 */
#ifndef CARMA_IMPORT_NSYS_RUN_H
#define CARMA_IMPORT_NSYS_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "import/nsys.h"

struct nsys_run_owner {
    uint32_t pid;
    int job;
};

struct nsys_run_info {
    size_t njobs;
    char **job; /* the workloads' names, in the run's order */
    struct nsys_run_owner *own;
    size_t nown;
    const char *uuid[NSYS_GPUS_MAX]; /* by NVML index; NULL where the run has no such GPU */
    char *uuid_store[NSYS_GPUS_MAX];
    size_t ngpu;    /* GPUs split by the run (report.json gpus[]) */
    int64_t *ticks; /* the sample ticks, Unix ns, increasing */
    size_t nticks;
    char warning[4400]; /* samples.csv's torn last line, skipped (rundir.h); "" when none */
};

/*
 * Reads run_dir's report.json, workloads.json, pstree.log (optional) and samples.csv into
 * *ri (release with nsys_run_info_free). Returns 0 or a negative errno with e naming the file
 * (-ENOENT: not a complete run directory).
 */
int nsys_run_info_load(const char *run_dir, struct nsys_run_info *ri, struct carma_err *e);

/* Frees what nsys_run_info_load allocated (safe on a zeroed struct). */
void nsys_run_info_free(struct nsys_run_info *ri);

/* The workload whose process pid was (its main process, process group or one seen in
 * pstree.log), or -1. */
int nsys_run_owner_of(const struct nsys_run_info *ri, uint32_t pid);

#define NSYS_BASIS_N 4 /* "kernels", "context", "allocation", "none" */

struct nsys_reattr_gpu {
    char channel[64];
    int index;
    double energy_j, jobs_j, idle_j, other_j, unattributed_j;
    double basis_s[NSYS_BASIS_N];
};

struct nsys_reattr {
    size_t ngpu;
    struct nsys_reattr_gpu gpu[NSYS_GPUS_MAX];
    size_t periods;     /* split periods redone, all GPUs */
    char warning[4400]; /* the NVML split's torn last line, skipped and left out of the new
                           attribution.csv (rundir.h), or else nsys_gpu.csv's; "" when none */
};

/* The name of basis b of nsys_reattr_gpu.basis_s. */
const char *nsys_run_basis_name(int b);

/*
 * Re-attributes run_dir's GPU energy with run_dir/nsys_gpu.csv (above). Fills *out. Returns 0,
 * -ENODATA when the run split no GPU (nothing is changed), or another negative errno with e
 * naming the file (nothing is changed unless writing the new files fails halfway, which e
 * says).
 */
int nsys_run_reattribute(const char *run_dir, struct nsys_reattr *out, struct carma_err *e);

#endif
