/* attribution: CPU-side energy of a process tree by CPU-time share (see attribution.h). */
#include "analysis/attribution.h"

#include <string.h>

void cpu_attrib_init(struct cpu_attrib *a, int64_t epoch_ns, double static_w, double static_busy)
{
    memset(a, 0, sizeof *a);
    a->epoch_ns = epoch_ns;
    a->have_static = static_w >= 0;
    a->static_w = a->have_static ? static_w : 0.0;
    a->static_busy = a->have_static && static_busy > 0 ? static_busy : 0.0;
}

static void flush(struct cpu_attrib *a)
{
    /* an empty epoch; CPU time alone (no energy, no elapsed time) still counts */
    if (a->ep_ns == 0 && a->ep_j == 0.0 && a->ep_busy_ns == 0 && a->ep_tree_ns == 0)
        return;
    /* CPU times count in 10 ms clock ticks while the tree's reaped time is exact: a busy time
     * below the tree's own is taken as the tree's */
    if (a->ep_busy_ns < a->ep_tree_ns)
        a->ep_busy_ns = a->ep_tree_ns;
    double share;
    if (a->ep_busy_ns > 0)
        share = (double)a->ep_tree_ns / (double)a->ep_busy_ns;
    else
        share = a->ep_tree_ns > 0 ? 1.0 : 0.0;
    if (share > 1.0)
        share = 1.0;
    a->energy_j += share * a->ep_j;
    a->node_j += a->ep_j;
    if (a->have_static) {
        double dyn = a->ep_j - a->static_w * ((double)a->ep_ns / 1e9);
        if (dyn < 0)
            dyn = 0;
        /* busy time above what the static power already covers */
        double busy_above = (double)a->ep_busy_ns - a->static_busy * (double)a->ep_ns;
        double tree = (double)a->ep_tree_ns;
        if (busy_above < tree)
            busy_above = tree;
        double dyn_share = busy_above > 0 ? tree / busy_above : 0.0;
        if (dyn_share > 1.0)
            dyn_share = 1.0;
        a->dynamic_j += dyn_share * dyn;
        a->node_dyn_j += dyn;
    }
    a->tree_ns += a->ep_tree_ns;
    a->busy_ns += a->ep_busy_ns;
    a->ep_j = a->ep_dyn_j = 0.0;
    a->ep_ns = 0;
    a->ep_busy_ns = a->ep_tree_ns = 0;
}

void cpu_attrib_add(struct cpu_attrib *a, double de_j, int64_t dt_ns, uint64_t busy_ns,
                    uint64_t tree_ns)
{
    a->ep_j += de_j;
    a->ep_ns += dt_ns;
    a->ep_busy_ns += busy_ns;
    a->ep_tree_ns += tree_ns;
    if (a->ep_ns >= a->epoch_ns)
        flush(a);
}

void cpu_attrib_finish(struct cpu_attrib *a)
{
    flush(a);
}

double cpu_attrib_share(const struct cpu_attrib *a)
{
    if (a->busy_ns == 0)
        return a->tree_ns > 0 ? 1.0 : 0.0;
    double s = (double)a->tree_ns / (double)a->busy_ns;
    return s > 1.0 ? 1.0 : s;
}
