/*
 * nvml: NVIDIA GPUs through the NVML library, loaded with dlopen at probe time.
 *
 * carma builds without any NVIDIA header: the few NVML types and constants it uses are declared
 * here with NVML's layouts (nvml.h of the CUDA toolkit), under carma's own names. The same
 * declarations serve the fake NVML of the tests (tests/fakes/fake_nvml.c), so both sides agree
 * on the ABI.
 *
 * The library is $CARMA_NVML_LIBRARY when that is set and not empty, else libnvidia-ml.so.1.
 * Each GPU is one channel nvml/gpu<index>: an energy counter in mJ when
 * nvmlDeviceGetTotalEnergyConsumption works (Volta and later), else the power gauge of
 * nvmlDeviceGetPowerUsage. Where NVML answers the power field values, the instant and the
 * 1-second averaged power are component channels beside it (nvml/gpu<index>/power_instant,
 * /power_average): never added, read for comparison with the counter.
 */
#ifndef CARMA_SOURCES_NVML_H
#define CARMA_SOURCES_NVML_H

#include <stdint.h>

#include "sources/source.h"

/* ---- NVML's own declarations (values and layouts as in nvml.h) ---- */

typedef int nvml_return_t;                    /* nvmlReturn_t */
typedef struct nvml_device_st *nvml_device_t; /* nvmlDevice_t: an opaque handle */

#define NVML_SUCCESS                       0
#define NVML_ERROR_UNINITIALIZED           1
#define NVML_ERROR_INVALID_ARGUMENT        2
#define NVML_ERROR_NOT_SUPPORTED           3
#define NVML_ERROR_NO_PERMISSION           4
#define NVML_ERROR_NOT_FOUND               6
#define NVML_ERROR_INSUFFICIENT_SIZE       7
#define NVML_ERROR_DRIVER_NOT_LOADED       9
#define NVML_ERROR_TIMEOUT                 10
#define NVML_ERROR_LIBRARY_NOT_FOUND       12
#define NVML_ERROR_FUNCTION_NOT_FOUND      13
#define NVML_ERROR_GPU_IS_LOST             15
#define NVML_ERROR_LIB_RM_VERSION_MISMATCH 18
#define NVML_ERROR_UNKNOWN                 999

#define NVML_DEVICE_NAME_BUFFER_SIZE 96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define NVML_DEVICE_UUID_BUFFER_SIZE 80 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define NVML_DEVICE_MIG_ENABLE       1
#define NVML_VALUE_NOT_AVAILABLE     (~0ULL) /* usedGpuMemory when unknown */

/* nvmlDeviceGetFieldValues: the power fields carma reads (values in mW). */
#define NVML_FI_DEV_POWER_AVERAGE 185 /* averaged over 1 s (Ampere but GA100, and later) */
#define NVML_FI_DEV_POWER_INSTANT 186 /* current power */

/* nvmlValueType_t values. */
#define NVML_VALUE_TYPE_DOUBLE             0
#define NVML_VALUE_TYPE_UNSIGNED_INT       1
#define NVML_VALUE_TYPE_UNSIGNED_LONG      2
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG   4
#define NVML_VALUE_TYPE_SIGNED_INT         5
#define NVML_VALUE_TYPE_UNSIGNED_SHORT     6

/* nvmlValue_t */
union nvml_value {
    double d;
    int si;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    signed long long sll;
    unsigned short us;
};

/* nvmlFieldValue_t */
struct nvml_field_value {
    unsigned int field_id;
    unsigned int scope_id;
    long long timestamp;
    long long latency_us;
    int value_type;  /* nvmlValueType_t */
    int nvml_return; /* nvmlReturn_t */
    union nvml_value value;
};

/* nvmlUtilization_t: percent of the last sample period. */
struct nvml_utilization {
    unsigned int gpu;
    unsigned int memory;
};

/* nvmlProcessInfo_t (and nvmlProcessInfo_v2_t): what the _v2 and _v3 running-process calls
 * fill. */
struct nvml_process_info {
    unsigned int pid;
    unsigned long long used_gpu_memory; /* bytes, NVML_VALUE_NOT_AVAILABLE when unknown */
    unsigned int gpu_instance_id;
    unsigned int compute_instance_id;
};

/* nvmlProcessUtilizationSample_t. */
struct nvml_process_sample {
    unsigned int pid;
    unsigned long long time_stamp_us;
    unsigned int sm_util;
    unsigned int mem_util;
    unsigned int enc_util;
    unsigned int dec_util;
};

/* ---- the source ---- */

/* At most this many GPUs are looked at; more are reported in the source's note. */
#define NVML_GPUS_MAX 64
/* nvml_device_processes looks at most at this many processes per GPU. */
#define NVML_PROCS_MAX 256

/* A process's latest per-process utilization sample counts as current for this long after
 * the newest sample of the GPU; older, the process has been idle on the GPU since (NVML only
 * records samples of processes that ran kernels). */
#define NVML_SAMPLE_STALE_US 2000000ULL

/* One process running on a GPU. */
struct nvml_proc {
    uint32_t pid;
    uint64_t used_mem_bytes; /* UINT64_MAX when NVML does not know it */
    int sm_util_pct;         /* its latest SM utilization sample (0 when that is stale), -1
                                when NVML gave none for it or the call is not supported */
};

/* GPU and memory utilization of one GPU, in percent. */
struct nvml_util {
    unsigned gpu_pct;
    unsigned mem_pct;
};

/* The nvml source: probe, read and close as source.h describes; one channel nvml/gpu<index>
 * per GPU, kind gpu, a total domain, socket = the NVML index. */
extern const struct source_ops nvml_source_ops;

/* The UUID of GPU number gpu of a probed nvml source s ("" when NVML did not tell it), or
 * NULL when s is not a usable nvml source or gpu is not one of its GPUs. */
const char *nvml_device_uuid(const struct source *s, unsigned gpu);

/*
 * The processes running on GPU number gpu (the NVML index) of a probed nvml source s: writes
 * at most cap entries into out and returns how many, 0 when none runs. Returns -EINVAL when s
 * is not a usable nvml source or gpu is not one of its GPUs, -EOPNOTSUPP when the library
 * lacks the call, -ENOBUFS when more than NVML_PROCS_MAX processes run, -ENODEV when the GPU
 * is lost, -EIO for another NVML error. Allocates nothing. Per-process utilization is asked
 * for the samples since the previous call (NVML's lastSeenTimeStamp), and each process keeps
 * its latest sample between calls: NVML samples every few hundred ms, carma may ask every tick.
 */
int nvml_device_processes(const struct source *s, unsigned gpu, struct nvml_proc *out, int cap);

/*
 * The GPU and memory utilization of GPU number gpu of a probed nvml source s into *ret (written
 * only on success). Returns 0, or the errors of nvml_device_processes.
 */
int nvml_device_utilization(const struct source *s, unsigned gpu, struct nvml_util *ret);

#endif
