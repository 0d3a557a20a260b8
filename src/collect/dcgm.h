/*
 * dcgm: a dcgm-exporter /metrics body (NVIDIA's DCGM exporter, default port 9400), already
 * parsed by collect/promparse, read into one reading per GPU for carma: its board power, its
 * energy counter, its utilization and its SM activity.
 *
 * Families read (any order, interleaved or grouped; label order is not fixed either):
 *   DCGM_FI_DEV_POWER_USAGE               W, a double field         -> power_w
 *   DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION  mJ counter, int64 field   -> energy_j (J, a counter)
 *   DCGM_FI_DEV_GPU_UTIL                  %, int64 field, 0..100    -> gpu_util_pct
 *   DCGM_FI_PROF_SM_ACTIVE                ratio, double, 0..1       -> sm_active
 * DCGM_FI_PROF_SM_ACTIVE is off in dcgm-exporter's default counters: then NAN (a blank cell).
 * Every other family is ignored, the CPU families (DCGM_FI_DEV_CPU_*, labelled `cpu` or
 * `cpucore`, no `gpu`) included: the only thing said of them is that a 0.000000 of
 * DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT with a `cpu` label is DCGM's missing sensor (status
 * BADPARAM with 0.0), not a reading; such samples are counted (cpu_zero) and nothing else.
 *
 * Labels: `gpu` (the GPU's index, a decimal integer >= 0, required), `UUID` or `uuid` (older and
 * newer exporters), `Hostname` or `hostname` (dcgm-exporter HEAD renamed it), `pci_bus_id`,
 * `device`, `modelName`. The samples of one GPU are matched by (gpu, UUID); a sample without a
 * UUID matches others without one. MIG rows (a `GPU_I_PROFILE` or `GPU_I_ID` label; GPU_I_ID
 * must then be an integer >= 0) are readings of their own, keyed by (gpu, UUID, GPU_I_ID),
 * flagged mig, and left out of device_power_w: each instance repeats its GPU's board figures,
 * so srt-slurm's GPU leg skips them; a caller keeps them in carma's own samples and skips them
 * for the device total.
 *
 * No reading, per field (the reading stays, the field is NAN; never clamped):
 *   - DCGM's blank sentinels, as old exporters print them: for the int64 fields a value of
 *     DCGM_INT64_BLANK (0x7ffffffffffffff0 = 9223372036854775792, dcgm_structs.h) or more, which
 *     covers its NOT_FOUND (+1), NOT_SUPPORTED (+2, the 9223372036854775794 exporters print) and
 *     NOT_PERMISSIONED (+3); such text parses to the double 2^63, so the test is on doubles. For
 *     the double fields DCGM_FP64_BLANK (140737488355328.0 = 2^47) or more. Counted in blank.
 *   - a value out of its range: non-finite, power or energy below 0, utilization outside 0..100,
 *     SM activity outside 0..1. Counted in out_of_range.
 *   - a second sample of the same field for the same reading: the field is ambiguous and
 *     dropped (srt-slurm rejects a duplicated rider too). Counted in duplicates.
 * A sample of a read family without a usable `gpu` label (or with a bad GPU_I_ID) is counted in
 * bad_labels.
 *
 * Bounded: at most DCGM_GPUS_MAX GPUs and DCGM_MIG_MAX MIG instances per body, in the order of
 * their first sample; the samples of any further one are counted in dropped. Nothing is
 * allocated (the caller gives the struct), nothing printed; strings point into the doc.
 */
#ifndef CARMA_COLLECT_DCGM_H
#define CARMA_COLLECT_DCGM_H

#include <stdbool.h>
#include <stddef.h>

#include "collect/promparse.h"

#define DCGM_GPUS_MAX     64
#define DCGM_MIG_PER_GPU  7 /* an A100/H100 splits into at most 7 GPU instances */
#define DCGM_MIG_MAX      (DCGM_GPUS_MAX * DCGM_MIG_PER_GPU)
#define DCGM_READINGS_MAX (DCGM_GPUS_MAX + DCGM_MIG_MAX)

/* One GPU (or one MIG instance of it). Strings point into the doc; NULL when the label is
 * absent. Numbers are NAN when there is no reading. */
struct dcgm_reading {
    unsigned gpu_index;
    const char *uuid;
    const char *hostname; /* the exporter's own label, not necessarily the node's name */
    const char *pci_bus_id;
    const char *device; /* "nvidia0" */
    const char *model;  /* modelName */
    bool mig;
    unsigned mig_id;         /* GPU_I_ID (mig only) */
    const char *mig_profile; /* GPU_I_PROFILE ("1g.6gb"; mig only, NULL when absent) */
    double power_w;          /* finite, >= 0 */
    double energy_j;         /* the counter's value in J (mJ / 1000), >= 0 */
    double gpu_util_pct;     /* 0..100 */
    double sm_active;        /* 0..1 */
    unsigned seen_, dup_;    /* private: fields seen once, fields seen twice */
};

struct dcgm_scrape {
    size_t n;              /* readings in r, GPUs and MIG instances in body order */
    size_t ngpus;          /* of which not mig */
    size_t nmig;           /* of which mig */
    double device_power_w; /* the sum of the non-MIG readings' power_w; NAN when none has one */
    size_t dropped;        /* samples of GPUs or MIG instances past the bounds */
    size_t blank;          /* sentinel values */
    size_t out_of_range;   /* values outside their field's range */
    size_t duplicates;     /* second (and later) samples of a field of one reading */
    size_t bad_labels;     /* samples of a read family without a usable gpu or GPU_I_ID label */
    size_t cpu_zero;       /* 0.000000 of DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT{cpu}: no sensor */
    struct dcgm_reading r[DCGM_READINGS_MAX];
};

/* Whether doc is a dcgm-exporter body: a sample, or a HELP/TYPE family, named
 * DCGM_FI_DEV_POWER_USAGE, DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, DCGM_FI_DEV_GPU_UTIL or
 * DCGM_FI_PROF_SM_ACTIVE. NULL: false. */
bool dcgm_is_body(const struct prom_doc *doc);

/* Reads doc (NULL: an empty scrape) into *out as the header says. out stays valid while doc
 * is. Allocates nothing; linear in the samples times the readings of one body. */
void dcgm_parse(const struct prom_doc *doc, struct dcgm_scrape *out);

#endif
