/*
 * dcgm: Grace CPU rails and NVIDIA GPUs through NVIDIA DCGM (libdcgm), loaded with dlopen at
 * probe time. Selected by `--sources dcgm`; in the default order after hwmon and nvml.
 *
 * carma builds without any DCGM header: the few DCGM types and constants it uses are declared
 * here with DCGM's values and layouts, under carma's own names where DCGM's are typedefs.
 * Source of the values: NVIDIA/DCGM 4.6, dcgmlib/dcgm_agent.h (signatures),
 * dcgmlib/dcgm_structs.h (return codes, entity groups, struct layouts, version words, blank
 * sentinels) and dcgmlib/dcgm_fields.h (field ids), as collected in the project's DCGM notes;
 * the sizes and offsets below are checked by static assertions. The same declarations serve the
 * fake libdcgm of the tests (tests/fakes/fake_dcgm.c), so both sides agree on the ABI.
 *
 * The library is $CARMA_DCGM_LIBRARY when that is set and not empty, else the first of
 * libdcgm.so.4, libdcgm.so.3, libdcgm.so that loads. With --dcgm-host HOST[:PORT] carma
 * connects to that running nv-hostengine (dcgmConnect); else it starts DCGM's embedded engine
 * (dcgmStartEmbedded, mode auto).
 *
 * Channels (one watch set up at probe; per tick one dcgmUpdateAllFields(h, 0) and one
 * dcgmEntitiesGetLatestValues(..., flags 0, ...), values matched by entity and field):
 *   dcgm/cpu<N>         field 1130, the socket's CPU rail only (not SoC, SysIO or DRAM): kind
 *                       cpu, zone cpu_rail; a total domain when no earlier source measured the
 *                       CPU, else a component (hwmon's socket total contains it)
 *   dcgm/cpu<N>/sysio   field 1132, kind soc, zone sysio, a component
 *   dcgm/cpu<N>/module  field 1133, kind soc, zone module, a component (it covers more than the
 *                       socket: no parent; the rail and SysIO have hwmon's socket total as
 *                       their parent where there is one)
 *   dcgm/gpu<N>         field 156 (energy counter, mJ) when it reads at probe, with 155 (power,
 *                       W) as the gauge beside it; else 155 alone. A GPU that NVML reads
 *                       already (the same UUID, field 54, read once at probe) gets no dcgm
 *                       channel: one physical GPU is one channel.
 * CPU utilization (1100-1104, ratios 0..1 per socket) and GPU utilization (203, %; 1002, SM
 * activity) are read in the same call and kept for dcgm_source_cpu_util and
 * dcgm_source_gpu_util.
 */
#ifndef CARMA_SOURCES_DCGM_H
#define CARMA_SOURCES_DCGM_H

#include <stddef.h>
#include <stdint.h>

#include "sources/source.h"

/* ---- DCGM's own declarations ---- */

typedef int dcgm_return_t;          /* dcgmReturn_t */
typedef uintptr_t dcgm_handle_t;    /* dcgmHandle_t */
typedef uintptr_t dcgm_gpu_grp_t;   /* dcgmGpuGrp_t */
typedef uintptr_t dcgm_field_grp_t; /* dcgmFieldGrp_t */

/* dcgmReturn_t values (dcgm_structs.h). */
#define DCGM_ST_OK                       0
#define DCGM_ST_BADPARAM                 (-1)
#define DCGM_ST_GENERIC_ERROR            (-3)
#define DCGM_ST_NOT_CONFIGURED           (-5)
#define DCGM_ST_NOT_SUPPORTED            (-6)
#define DCGM_ST_INIT_ERROR               (-7)
#define DCGM_ST_NVML_ERROR               (-8)
#define DCGM_ST_UNINITIALIZED            (-10)
#define DCGM_ST_TIMEOUT                  (-11)
#define DCGM_ST_VER_MISMATCH             (-12)
#define DCGM_ST_UNKNOWN_FIELD            (-13)
#define DCGM_ST_NO_DATA                  (-14)
#define DCGM_ST_STALE_DATA               (-15)
#define DCGM_ST_NOT_WATCHED              (-16)
#define DCGM_ST_NO_PERMISSION            (-17)
#define DCGM_ST_GPU_IS_LOST              (-18)
#define DCGM_ST_CONNECTION_NOT_VALID     (-21)
#define DCGM_ST_MAX_LIMIT                (-24)
#define DCGM_ST_DUPLICATE_KEY            (-26)
#define DCGM_ST_INSUFFICIENT_SIZE        (-31)
#define DCGM_ST_FIELD_UNSUPPORTED_BY_API (-32)
#define DCGM_ST_MODULE_NOT_LOADED        (-33)
#define DCGM_ST_IN_USE                   (-34)
#define DCGM_ST_PROFILING_NOT_SUPPORTED  (-36)

/* dcgm_field_entity_group_t values (dcgm_fields.h). */
#define DCGM_FE_NONE     0
#define DCGM_FE_GPU      1
#define DCGM_FE_VGPU     2
#define DCGM_FE_SWITCH   3
#define DCGM_FE_GPU_I    4
#define DCGM_FE_GPU_CI   5
#define DCGM_FE_LINK     6
#define DCGM_FE_CPU      7
#define DCGM_FE_CPU_CORE 8

/* dcgmGroupType_t, dcgmOperationMode_t, flags. */
#define DCGM_GROUP_DEFAULT            0
#define DCGM_GROUP_EMPTY              1
#define DCGM_OPERATION_MODE_AUTO      1
#define DCGM_GEGE_FLAG_ONLY_SUPPORTED 1u
#define DCGM_FV_FLAG_LIVE_DATA        1u /* GPU entities only: CPU fields give -32 */
#define DCGM_EMBEDDED_HANDLE          0x7fffffffu
#define DCGM_MAX_NUM_FIELDS_PER_GROUP 128 /* dcgmFieldGroupCreate takes 1..128 ids */

/* Field ids (dcgm_fields.h). */
#define DCGM_FI_DEV_UUID                      54   /* string, "GPU-..." as NVML gives it */
#define DCGM_FI_DEV_POWER_USAGE               155  /* double, W */
#define DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION  156  /* int64, mJ since driver load */
#define DCGM_FI_DEV_GPU_UTIL                  203  /* int64, % */
#define DCGM_FI_PROF_SM_ACTIVE                1002 /* double, ratio (profiling) */
#define DCGM_FI_DEV_CPU_UTIL_TOTAL            1100 /* double, ratio 0..1, per socket */
#define DCGM_FI_DEV_CPU_UTIL_USER             1101
#define DCGM_FI_DEV_CPU_UTIL_NICE             1102
#define DCGM_FI_DEV_CPU_UTIL_SYS              1103
#define DCGM_FI_DEV_CPU_UTIL_IRQ              1104
#define DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT    1130 /* double, W: the CPU rail only */
#define DCGM_FI_DEV_SYSIO_POWER_UTIL_CURRENT  1132 /* double, W */
#define DCGM_FI_DEV_MODULE_POWER_UTIL_CURRENT 1133 /* double, W */

/* dcgm_field_type: the ASCII letter of a value's type. */
#define DCGM_FT_DOUBLE    'd'
#define DCGM_FT_INT64     'i'
#define DCGM_FT_STRING    's'
#define DCGM_FT_BINARY    'b'
#define DCGM_FT_TIMESTAMP 't'

/* Blank sentinels: a value at or above is no value (+1 not found, +2 not supported, +3 not
 * permissioned). */
#define DCGM_INT64_BLANK_VALUE 0x7ffffffffffffff0LL
#define DCGM_FP64_BLANK_VALUE  140737488355328.0 /* 2^47 */

/* dcgmGroupEntityPair_t */
struct dcgm_entity_pair {
    uint32_t entity_group_id; /* DCGM_FE_* */
    uint32_t entity_id;
};

/* The value union of dcgmFieldValue_v1/v2 (DCGM_MAX_BLOB_LENGTH 4096). */
union dcgm_value {
    int64_t i64;
    double dbl;
    char str[256];
    char blob[4096];
};

/* dcgmFieldValue_v2: what dcgmEntitiesGetLatestValues fills, one per entity × field. */
struct dcgm_field_value_v2 {
    unsigned int version; /* DCGM_FIELD_VALUE_VERSION_2 */
    uint32_t entity_group_id;
    uint32_t entity_id;
    unsigned short field_id;
    unsigned short field_type; /* DCGM_FT_* */
    int status;                /* dcgmReturn_t of this value */
    unsigned int unused;
    int64_t ts; /* µs since the epoch */
    union dcgm_value value;
};

/* version word = sizeof(T) | (version << 24) */
#define DCGM_FIELD_VALUE_VERSION_2 ((unsigned)sizeof(struct dcgm_field_value_v2) | (2u << 24))

_Static_assert(sizeof(struct dcgm_entity_pair) == 8, "dcgmGroupEntityPair_t is 8 bytes");
_Static_assert(sizeof(struct dcgm_field_value_v2) == 4128, "dcgmFieldValue_v2 is 4128 bytes");
_Static_assert(offsetof(struct dcgm_field_value_v2, field_id) == 12, "fieldId at 12");
_Static_assert(offsetof(struct dcgm_field_value_v2, status) == 16, "status at 16");
_Static_assert(offsetof(struct dcgm_field_value_v2, ts) == 24, "ts at 24");
_Static_assert(offsetof(struct dcgm_field_value_v2, value) == 32, "value at 32");

/* ---- the source ---- */

/* At most this many CPU sockets and GPUs are looked at (dcgmGetAllSupportedDevices: 32). */
#define DCGM_SRC_CPUS_MAX 16
#define DCGM_SRC_GPUS_MAX 32

/* The fields watched, in the order of the field group. */
#define DCGM_SRC_FIELDS 13

/* The start of the dcgm source's reason when DCGM works but none of its readings at probe is
 * usable (followed by ": " and what was read). */
#define DCGM_SRC_NO_READING "DCGM gives no power reading of its own"

/* The dcgm source: probe, read and close as source.h describes. */
extern const struct source_ops dcgm_source_ops;

/* DCGM's CPU utilization of one socket as of the last read: ratios 0..1, NAN where DCGM had no
 * value (the first read after the watch has none). */
struct dcgm_cpu_util {
    double total, user, nice, sys, irq;
};

/*
 * The utilization of CPU socket number socket (DCGM's CPU entity id) of a probed dcgm source s,
 * as of its last read, into *ret. Returns 0; -EINVAL when s is not a usable dcgm source or the
 * socket is not one of its CPUs; -ENODATA when DCGM gave none of the five values.
 */
int dcgm_source_cpu_util(const struct source *s, unsigned socket, struct dcgm_cpu_util *ret);

/* The CPU entity ids (sockets) of a probed dcgm source s, in DCGM's order, into ids[0 .. cap).
 * Returns how many there are (0 when s is not a usable dcgm source). */
size_t dcgm_source_cpu_ids(const struct source *s, unsigned *ids, size_t cap);

/* DCGM's utilization of one GPU as of the last read: NAN where DCGM had no value (SM activity
 * needs profiling, off unless asked for). */
struct dcgm_gpu_util {
    double gpu_pct;   /* field 203, percent */
    double sm_active; /* field 1002, ratio 0..1 */
};

/*
 * The utilization of GPU number gpu (DCGM's GPU entity id) of a probed dcgm source s, as of its
 * last read, into *ret. Returns 0; -EINVAL when s is not a usable dcgm source or gpu is not
 * one of its GPUs with a channel; -ENODATA when DCGM gave neither value.
 */
int dcgm_source_gpu_util(const struct source *s, unsigned gpu, struct dcgm_gpu_util *ret);

/* The UUID DCGM gave GPU number gpu (DCGM's GPU entity id) of a probed dcgm source s at probe
 * ("" when it gave none), or NULL when s is not a usable dcgm source or gpu is not one of its
 * GPUs with a channel. */
const char *dcgm_source_gpu_uuid(const struct source *s, unsigned gpu);

#endif
