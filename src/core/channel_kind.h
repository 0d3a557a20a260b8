/*
 * channel_kind: the kinds of device a power channel measures (cpu, dram, soc, gpu, system,
 * other) and their names, the one table of them: samples.csv's kind column, the run report's
 * energy_by_kind_j keys, the model file's kinds. In core/ so that every layer that names a
 * kind (sources/, rundir/, model/, report/) includes it without the source interface.
 */
#ifndef CARMA_CORE_CHANNEL_KIND_H
#define CARMA_CORE_CHANNEL_KIND_H

enum channel_kind { KIND_CPU, KIND_DRAM, KIND_SOC, KIND_GPU, KIND_SYSTEM, KIND_OTHER };

/* How many kinds there are (KIND_OTHER + 1): the size of a per-kind array. */
#define CHANNEL_KINDS 6

/* The kind's name: "cpu", "dram", "soc", "gpu", "system", "other" ("other" out of range). */
const char *channel_kind_name(enum channel_kind k);

/* The kind named name (as channel_kind_name gives them), or -1. */
int channel_kind_parse(const char *name);

#endif
