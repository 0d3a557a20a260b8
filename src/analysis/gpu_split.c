/* gpu_split: weights for splitting a GPU's energy among jobs (see gpu_split.h). */
#include "analysis/gpu_split.h"

#include <ctype.h>
#include <string.h>

void gpu_weights(const struct gpu_proc *procs, size_t nprocs, size_t njobs, const bool *owns,
                 const bool *alive, struct gpu_weights *out)
{
    memset(out, 0, sizeof *out);
    if (njobs > SPLIT_JOBS_MAX)
        njobs = SPLIT_JOBS_MAX;
    out->basis = GPU_BASIS_NONE;

    /* by SM utilization, when any process has a figure above 0 */
    bool any_sm = false;
    for (size_t i = 0; i < nprocs; i++)
        any_sm = any_sm || procs[i].sm_pct > 0;
    if (any_sm) {
        for (size_t i = 0; i < nprocs; i++) {
            double w = procs[i].sm_pct > 0 ? procs[i].sm_pct : 0;
            out->node_w += w;
            int j = procs[i].job;
            if (j >= 0 && (size_t)j < njobs) {
                out->job_w[j] += w;
                out->present[j] = out->present[j] || w > 0;
            }
        }
        out->basis = GPU_BASIS_SM;
        return;
    }
    /* by context: each job with a process on the device, each outside process */
    if (nprocs > 0) {
        for (size_t i = 0; i < nprocs; i++) {
            int j = procs[i].job;
            if (j >= 0 && (size_t)j < njobs) {
                if (!out->present[j]) {
                    out->present[j] = true;
                    out->job_w[j] = 1;
                    out->node_w += 1;
                }
            } else {
                out->node_w += 1;
            }
        }
        out->basis = GPU_BASIS_CONTEXT;
        return;
    }
    /* by allocation, when the process list names nobody */
    if (owns && alive) {
        for (size_t k = 0; k < njobs; k++) {
            if (owns[k] && alive[k]) {
                out->job_w[k] = 1;
                out->present[k] = true;
                out->node_w += 1;
            }
        }
        if (out->node_w > 0)
            out->basis = GPU_BASIS_ALLOCATION;
    }
}

void gpu_period_shares(const struct gpu_weights *prev, const struct gpu_weights *cur, size_t njobs,
                       double dyn0, double dyn1, double dur0, double dur1, struct gpu_shares *out)
{
    memset(out, 0, sizeof *out);
    if (njobs > SPLIT_JOBS_MAX)
        njobs = SPLIT_JOBS_MAX;
    bool v0 = prev && prev->node_w > 0, v1 = cur->node_w > 0;
    out->basis = v1 || !v0 ? cur->basis : prev->basis;
    if (!v0 && !v1)
        return;
    double w0 = dyn0 > 0 ? dyn0 : 0.0, w1 = dyn1 > 0 ? dyn1 : 0.0;
    if (!(w0 + w1 > 0)) {
        w0 = dur0 > 0 ? dur0 : 0.0;
        w1 = dur1 > 0 ? dur1 : 0.0;
    }
    if (!(w0 + w1 > 0))
        w0 = w1 = 1.0;
    if (!v0) {
        w1 += w0;
        w0 = 0;
    }
    if (!v1) {
        w0 += w1;
        w1 = 0;
    }
    if (v0 && v1 && w0 > w1)
        out->basis = prev->basis;
    for (size_t k = 0; k < njobs; k++) {
        double a = v0 ? prev->job_w[k] / prev->node_w : 0.0;
        double b = v1 ? cur->job_w[k] / cur->node_w : 0.0;
        out->f[k] = (a * w0 + b * w1) / (w0 + w1);
        out->present[k] = (v0 && prev->present[k]) || (v1 && cur->present[k]);
    }
    out->node = 1.0;
}

const char *gpu_basis_name(enum gpu_basis b)
{
    static const char *const names[] = {"sm", "context", "allocation", "none"};
    return (unsigned)b < GPU_BASIS_N ? names[b] : "?";
}

/* The device an entry names, or -1. */
static int visible_entry(const char *s, size_t len, const char *const *uuid, size_t ngpu)
{
    if (len == 0)
        return -1;
    bool digits = true;
    for (size_t i = 0; i < len; i++)
        digits = digits && isdigit((unsigned char)s[i]);
    if (digits) {
        if (len > 6)
            return -1;
        unsigned long v = 0;
        for (size_t i = 0; i < len; i++)
            v = v * 10 + (unsigned long)(s[i] - '0');
        return v < ngpu ? (int)v : -1;
    }
    if (len < 5 || strncmp(s, "GPU-", 4) != 0)
        return -1; /* MIG-..., or not a device */
    int found = -1;
    for (size_t i = 0; i < ngpu; i++) {
        if (uuid && uuid[i] && strlen(uuid[i]) >= len && strncmp(uuid[i], s, len) == 0) {
            if (found >= 0)
                return -1; /* ambiguous prefix */
            found = (int)i;
        }
    }
    return found;
}

size_t gpu_visible_parse(const char *cvd, const char *const *uuid, size_t ngpu, bool *visible)
{
    size_t n = 0;
    if (!cvd)
        return 0;
    const char *p = cvd;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *a = p;
        while (len && isspace((unsigned char)*a))
            a++, len--;
        while (len && isspace((unsigned char)a[len - 1]))
            len--;
        int d = visible_entry(a, len, uuid, ngpu);
        if (d < 0)
            break;
        if (!visible[d])
            n++;
        visible[d] = true;
        if (!end)
            break;
        p = end + 1;
    }
    return n;
}
