/*
 * caveats: what a report must say about numbers that are not what they seem, on a machine
 * that lacks something. Each function writes one sentence (a warning of report.json /
 * summary.json "warnings", printed as "warning: ..." by run and stat, shown by `carma report`
 * and the HTML page) or nothing:
 *
 *   - the node's power is estimated by a model: which channels, the model and its TDP (the
 *     source's note), why nothing was measured (every unavailable source's reason) and how to
 *     measure instead;
 *   - a workload asks for a GPU where no GPU is measured: its GPU energy is unknown, not 0;
 *   - the baseline ran while other processes kept CPUs busy: how many, and what carma did.
 */
#ifndef CARMA_CLI_CAVEATS_H
#define CARMA_CLI_CAVEATS_H

#include <stdbool.h>
#include <stddef.h>

#include "sampler/sampler.h"
#include "workload/experiment.h"

/* True when the workload asks for a GPU ("gpu": true or an index, or GPUs allocated). */
bool workload_wants_gpu(const struct workload_spec *w);

/* True when the sampler has a channel of kind k (any domain). */
bool caveat_has_kind(const struct sampler *s, enum channel_kind k);

/*
 * Why the node's figures are estimated: when one of the node's channels (node_idx, n) is
 * estimated, writes "estimated, not measured: ..." into buf (cap bytes) and returns true;
 * false (buf empty) when every node channel is measured.
 */
bool caveat_estimated(const struct sampler *s, const int *node_idx, size_t n, char *buf,
                      size_t cap);

/*
 * A workload that asks for a GPU on a node where no GPU is measured (no channel of kind gpu):
 * the sentence for workload w into buf. declared: the experiment's carbon.embodied gives the
 * GPU's embodied carbon (then charged and labelled declared), else none is charged.
 */
void caveat_gpu_missing(const struct sampler *s, const struct workload_spec *w, bool declared,
                        char *buf, size_t cap);

/* CPUs busy on average during a baseline from which carma says so (other processes' load). */
#define CAVEAT_BASELINE_BUSY_CPUS 0.2

/*
 * The baseline's load: when busy_cpus (CPUs busy on average over the baseline's seconds, from
 * proc/stat) reaches CAVEAT_BASELINE_BUSY_CPUS, writes "baseline: other processes used X of N
 * CPUs ..." with what carma did about it into buf and returns true. other_j: the part of the
 * static power given to "other" for that load (0 when carma could not tell it); policy: the
 * idle policy's name.
 */
bool caveat_baseline(double busy_cpus, int ncpu, double seconds, double other_j, const char *policy,
                     char *buf, size_t cap);

/* The same for `carma stat --baseline`, with what stat does with the load (analysis/splitter.h). */
bool caveat_baseline_stat(double busy_cpus, int ncpu, double seconds, char *buf, size_t cap);

#endif
