/*
 * attribution: the share of the node's CPU-side energy that a process tree spent.
 *
 * Per epoch, the CPU-side energy ΔE is split by the tree's share of the node's CPU busy
 * time (share = Δtree / Δbusy, at most 1). When the node's static power is known, the
 * dynamic part ΔE − P_static·Δt is split by the tree's share of the busy time that the
 * static power does not already pay for: a model's idle power is the power of an idle node,
 * so every busy tick counts (Δtree / Δbusy); a baseline measured before the command also
 * holds the power of the background load it saw (static_busy CPUs busy on average), so
 * that load is taken out of the node's busy time first: Δtree / max(Δtree, Δbusy −
 * static_busy·Δt). Jiffy-based CPU times are
 * coarse (10 ms), so ticks are grouped into epochs of at least epoch_ns before splitting.
 */
#ifndef CARMA_ANALYSIS_ATTRIBUTION_H
#define CARMA_ANALYSIS_ATTRIBUTION_H

#include <stdbool.h>
#include <stdint.h>

struct cpu_attrib {
    int64_t epoch_ns;
    double static_w; /* node CPU-side static power, valid when have_static */
    bool have_static;
    double static_busy; /* CPUs busy on average while static_w was measured (0 for a model) */
    /* the open epoch */
    double ep_j, ep_dyn_j;
    int64_t ep_ns;
    uint64_t ep_busy_ns, ep_tree_ns;
    /* results */
    double energy_j;   /* CPU-side energy attributed to the tree */
    double dynamic_j;  /* of which above the static power */
    double node_j;     /* CPU-side energy of the node over the same ticks */
    double node_dyn_j; /* of which above the static power */
    uint64_t tree_ns, busy_ns;
};

/*
 * Starts an attribution with the given epoch length; static_w < 0 means unknown;
 * static_busy = CPUs busy on average while static_w was measured (0 when it is an idle
 * power from a model).
 */
void cpu_attrib_init(struct cpu_attrib *a, int64_t epoch_ns, double static_w, double static_busy);

/* Adds one tick: energy dE_j over dt_ns, node busy and tree CPU time deltas in ns. */
void cpu_attrib_add(struct cpu_attrib *a, double de_j, int64_t dt_ns, uint64_t busy_ns,
                    uint64_t tree_ns);

/* Closes the open epoch (call once at the end). */
void cpu_attrib_finish(struct cpu_attrib *a);

/* The tree's share of the node's busy time over everything added. */
double cpu_attrib_share(const struct cpu_attrib *a);

#endif
