/* caveats: the sentences that keep a report honest (see caveats.h). */
#include "cli/caveats.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool workload_wants_gpu(const struct workload_spec *w)
{
    return w->gpu_use == WORKLOAD_GPU_YES || w->n_gpus > 0;
}

bool caveat_has_kind(const struct sampler *s, enum channel_kind k)
{
    for (size_t i = 0; i < s->set.n; i++)
        if (s->set.ch[i].kind == k)
            return true;
    return false;
}

/* Appends to buf (cap bytes, *len used), cutting what does not fit. */
static void add(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len += (size_t)n < cap - *len ? (size_t)n : cap - *len - 1;
}

bool caveat_estimated(const struct sampler *s, const int *node_idx, size_t n, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    bool any = false;
    for (size_t k = 0; k < n; k++) {
        const struct channel *c = &s->set.ch[node_idx[k]];
        if (c->method != METHOD_ESTIMATED)
            continue;
        add(buf, cap, &len, "%s%s", any ? ", " : "estimated, not measured: ", c->name);
        any = true;
    }
    if (!any)
        return false;
    /* the model, its TDP and the better estimate: the estimating sources' notes */
    for (size_t i = 0; i < s->nsrc; i++) {
        const struct source *src = &s->src[i];
        bool estimates = false;
        for (size_t k = 0; k < n; k++) {
            const struct channel *c = &s->set.ch[node_idx[k]];
            estimates = estimates || (c->method == METHOD_ESTIMATED && c->source &&
                                      strcmp(c->source, src->ops->name) == 0);
        }
        static const char said[] = "estimated, not measured: ";
        const char *note = src->note;
        if (strncmp(note, said, sizeof said - 1) == 0)
            note += sizeof said - 1; /* the sentence says it already */
        if (estimates && src->status == 0 && note[0])
            add(buf, cap, &len, " (%s)", note);
    }
    bool none = true;
    for (size_t i = 0; i < s->nsrc; i++) {
        const struct source *src = &s->src[i];
        if (src->status == 0)
            continue;
        add(buf, cap, &len, "%s%s: %s", none ? "; unavailable: " : "; ", src->ops->name,
            src->reason);
        none = false;
    }
    add(buf, cap, &len,
        "; to measure instead: RAPL (Intel/AMD: run carma as root, or make "
        "/sys/class/powercap/*/energy_uj readable), a wall meter (--meter), NVML for NVIDIA "
        "GPUs, or a model fitted on measured runs (carma model fit)");
    return true;
}

void caveat_gpu_missing(const struct sampler *s, const struct workload_spec *w, bool declared,
                        char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    add(buf, cap, &len, "workload %s asks for a GPU", w->name);
    if (w->gpu >= 0)
        add(buf, cap, &len, " (gpu %d)", w->gpu);
    add(buf, cap, &len, " but no GPU is measured on this node");
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].status != 0 && strcmp(s->src[i].ops->name, "nvml") == 0)
            add(buf, cap, &len, " (nvml: %s)", s->src[i].reason);
    add(buf, cap, &len,
        ": its GPU energy is unknown (n/a), not 0, and its energy and carbon "
        "count only what was measured; ");
    if (declared)
        add(buf, cap, &len,
            "the GPU's embodied carbon is the experiment's declared figure "
            "(carbon.embodied), not a measured device's");
    else
        add(buf, cap, &len, "no embodied carbon is charged for a GPU that is not there");
}

/* "baseline: other processes used X of N CPUs over its T s; the static power ... their
 * load" into buf, *len set; false when the load stays below CAVEAT_BASELINE_BUSY_CPUS. */
static bool baseline_load(double busy_cpus, int ncpu, double seconds, char *buf, size_t cap,
                          size_t *len)
{
    *len = 0;
    buf[0] = '\0';
    if (!(busy_cpus >= CAVEAT_BASELINE_BUSY_CPUS))
        return false;
    add(buf, cap, len, "baseline: other processes used %.1f of %d CPUs over its %.1f s", busy_cpus,
        ncpu, seconds);
    add(buf, cap, len, "; the static power measured then includes their load: ");
    return true;
}

bool caveat_baseline(double busy_cpus, int ncpu, double seconds, double other_j, const char *policy,
                     char *buf, size_t cap)
{
    size_t len;
    if (!baseline_load(busy_cpus, ncpu, seconds, buf, cap, &len))
        return false;
    add(buf, cap, &len, "carma split among the workloads only the CPU time above theirs, and ");
    if (other_j > 0)
        add(buf, cap, &len,
            "gave %.3f J of the static power to \"other\" (their load at the run's power per busy "
            "CPU); the rest went by the idle policy (%s)",
            other_j, policy);
    else
        add(buf, cap, &len,
            "could not tell their part of the static power (too little load above the baseline "
            "to learn the power per busy CPU): the idle policy (%s) gave it out with the rest; "
            "measure the baseline on a quiet machine for a better split",
            policy);
    return true;
}

bool caveat_baseline_stat(double busy_cpus, int ncpu, double seconds, char *buf, size_t cap)
{
    size_t len;
    if (!baseline_load(busy_cpus, ncpu, seconds, buf, cap, &len))
        return false;
    add(buf, cap, &len,
        "carma counts the command's dynamic energy above it (so their load's power is not the "
        "command's) and takes their load out of the node's busy time before the command's share; "
        "if their load changed after the baseline, the command's share is off by that change");
    return true;
}
