/*
 * splitter: the per-tick attribution of an experiment's channels, posted to a ledger
 * (ledger.h).
 *
 * Each tick's energy of every channel is kept pending until the caller splits it, when fresh
 * CPU times are read (or, in epoch mode, once the pending time reaches an epoch: `carma stat`,
 * whose jiffy-based times are coarse). A channel is split by one of three rules:
 * - by CPU time (split.h): its static part (static power × Δt) by the idle policy, the
 *   dynamic rest by the jobs' busy time above the baseline's; on CPU-side channels (cpu, dram,
 *   soc, system) a baseline measured while other processes ran also holds their power, and
 *   the part of it their load explains (the channel's power per busy CPU learnt from the run
 *   so far × the baseline's busy CPUs) goes to "other" (with background on); other kinds'
 *   energy has no busy time to go by and goes to idle or stays unattributed;
 * - by process, for a GPU (gpu_split.h): its pending energy on its own clock, split by the
 *   jobs' processes' utilization of the device read at the period's two ends;
 * - not at all: a reading only compared (a GPU's component gauges).
 * A wall meter as the node's channel is split like the measured channels inside it were since
 * its last split, so that what it sees beyond them follows them; while a GPU inside it is yet
 * to be split, the meter's energy waits for it. Nothing here allocates: a tick's work is
 * arithmetic on the pending sums.
 */
#ifndef CARMA_ANALYSIS_SPLITTER_H
#define CARMA_ANALYSIS_SPLITTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/gpu_split.h"
#include "analysis/ledger.h"
#include "analysis/split.h"
#include "core/channel_kind.h"
#include "sources/source.h"

enum splitter_rule { SPLITTER_CPU_TIME, SPLITTER_GPU, SPLITTER_NONE };

/* The GPUs split by process, at most this many: GPU d is the ledger's account d. */
#define SPLITTER_GPUS_MAX 16
_Static_assert(SPLITTER_GPUS_MAX <= LEDGER_GPUS_MAX, "a GPU without a ledger account");

struct splitter_channel {
    const char *name; /* the caller's string */
    enum channel_kind kind;
    enum splitter_rule rule;
    bool node;        /* one of the node's channels (ledger.h) */
    bool metered;     /* inside the wall meter that is the node's channel */
    double static_w;  /* from the baseline or a model, NAN when unknown */
    double pend_j;    /* energy not yet split (rule SPLITTER_CPU_TIME) */
    double sum_dyn_j; /* energy above the static power so far (CPU-side) */
};

/* A GPU split by process: its energy pending since the last read of its process lists. */
struct splitter_gpu {
    size_t ch;
    double pend_j;
    int64_t pend_ns;
    /* a workload started or ended during the pending period: the energy and time before */
    bool have_tau;
    double pend_before_j;
    int64_t pend_before_ns;
    /* the shares read at the start of the pending period (the previous read) */
    struct gpu_weights prev;
    bool have_prev;
};

struct splitter {
    size_t njobs;
    enum split_policy policy;
    size_t nch;
    struct splitter_channel ch[CHANNELS_MAX];
    double static_busy;               /* CPUs busy on average during the baseline */
    bool background;                  /* give "other" the static power its load explains */
    double busy_unit_ns;              /* the busy times' unit: 1e9 for seconds, 1 for nanoseconds */
    int64_t epoch_ns;                 /* epoch mode: split once this much time is pending; 0: off */
    int64_t pend_ns;                  /* time not yet split (rule SPLITTER_CPU_TIME) */
    double sum_above, sum_above_next; /* busy CPU time above the baseline's so far */
    double bg_other_j;                /* static energy of the node's channels given to "other" */
    /* the wall meter as the node: its parts' splits since it was last split */
    bool meter_node;
    bool meter_has_gpu; /* a GPU is inside the meter: its split waits for the GPUs' */
    bool mw_gpu_seen;   /* a GPU inside the meter was split since the meter last was */
    double mw_job[SPLIT_JOBS_MAX], mw_idle, mw_other, mw_unattr;
    size_t ngpu;
    struct splitter_gpu gpu[SPLITTER_GPUS_MAX];
};

/*
 * Starts a splitter for njobs jobs (at most SPLIT_JOBS_MAX) and the idle policy, without
 * channels: busy times in seconds, background on, no epochs.
 */
void splitter_init(struct splitter *sp, size_t njobs, enum split_policy policy);

/* Adds the next channel (split by CPU time, its static power unknown); returns its index, or
 * -1 past CHANNELS_MAX. name is kept, not copied. */
int splitter_add_channel(struct splitter *sp, const char *name, enum channel_kind kind);

/* Channel ch counts in the node. */
void splitter_node(struct splitter *sp, size_t ch);

/* The node's channel is a wall meter holding the nparts channels parts[]. */
void splitter_meter(struct splitter *sp, const int *parts, size_t nparts);

/* Channel ch is a GPU split by process; returns its GPU index (its ledger account), -1 when
 * SPLITTER_GPUS_MAX GPUs are split already. */
int splitter_add_gpu(struct splitter *sp, size_t ch);

/* Channel ch is never split (a reading only compared). */
void splitter_skip(struct splitter *sp, size_t ch);

/* The static power of each channel (static_w[0..nch-1], NAN unknown) and the CPUs busy on
 * average while it was measured (0 for a model's idle power). */
void splitter_set_static(struct splitter *sp, const double *static_w, double static_busy);

/* Adds one tick: tick_j[i] is channel i's energy (all nch channels; the GPUs' go through
 * splitter_gpu_tick), over dt_ns. */
void splitter_tick(struct splitter *sp, const double *tick_j, int64_t dt_ns);

/*
 * Whether the pending energy is split now: always when final; in epoch mode when an epoch is
 * pending; else when fresh (the jobs' CPU times were read again).
 */
bool splitter_due(const struct splitter *sp, bool fresh, bool final);

/* The busy times of the pending time, in the splitter's unit: per job, and the node's (at
 * least the jobs' sum). running[k]: job k was running (SPLIT_EQUAL). */
struct splitter_busy {
    const double *job;
    const bool *running;
    double node;
};

/*
 * Splits the energy pending on the channels split by CPU time and posts each split to l at
 * time at. A wall meter waits for the GPUs inside it to be split first, unless final. The
 * caller flushes l's rows.
 */
void splitter_split(struct splitter *sp, struct ledger *l, const struct splitter_busy *b,
                    bool final, const struct ledger_time *at);

/* Adds one tick of GPU gpu: tick_j over dt_ns, a workload starting or ending tau_ns into the
 * tick (0: none did). */
void splitter_gpu_tick(struct splitter *sp, size_t gpu, double tick_j, int64_t dt_ns,
                       int64_t tau_ns);

/*
 * Splits the energy pending on GPU gpu by the nprocs processes now listed on it (gpu_split.h;
 * owns[k]: job k's allocation names the device, alive[k]: it has a live process) and the
 * previous list, and posts the split to l at time at (its basis seconds too).
 */
void splitter_gpu_split(struct splitter *sp, struct ledger *l, size_t gpu,
                        const struct gpu_proc *procs, size_t nprocs, const bool *owns,
                        const bool *alive, const struct ledger_time *at);

#endif
