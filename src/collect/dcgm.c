/*
 * dcgm: a dcgm-exporter body read into per-GPU readings (see dcgm.h).
 *
 * One pass over the samples: a sample of a read family finds its reading by (gpu, UUID, MIG
 * instance) with a linear scan (a body holds a few GPUs; the last match is tried first, since
 * exporters that group by GPU send its families one after another), then its value is checked
 * and stored. A second pass drops the duplicated fields and sums the device power.
 */
#include "collect/dcgm.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/parse.h"

/* dcgm_structs.h: DCGM_INT64_BLANK 0x7ffffffffffffff0, DCGM_FP64_BLANK 140737488355328.0. */
#define INT64_BLANK ((double)0x7ffffffffffffff0LL)
#define FP64_BLANK  140737488355328.0

#define CPU_POWER_FAMILY "DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT"

enum field { F_POWER, F_ENERGY, F_UTIL, F_SM, F_COUNT };

static const struct {
    const char *name;
    bool int64; /* an int64 field: DCGM_INT64_BLANK, else DCGM_FP64_BLANK */
    double min, max;
} fields[F_COUNT] = {
    [F_POWER] = {"DCGM_FI_DEV_POWER_USAGE", false, 0, INFINITY},
    [F_ENERGY] = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", true, 0, INFINITY},
    [F_UTIL] = {"DCGM_FI_DEV_GPU_UTIL", true, 0, 100},
    [F_SM] = {"DCGM_FI_PROF_SM_ACTIVE", false, 0, 1},
};

static int field_of(const char *name)
{
    if (strncmp(name, "DCGM_FI_", 8) != 0)
        return -1;
    for (int f = 0; f < F_COUNT; f++)
        if (strcmp(name, fields[f].name) == 0)
            return f;
    return -1;
}

bool dcgm_is_body(const struct prom_doc *doc)
{
    if (!doc)
        return false;
    for (size_t i = 0; i < doc->nfamilies; i++)
        if (field_of(doc->families[i].name) >= 0)
            return true;
    for (size_t i = 0; i < doc->nsamples; i++)
        if (field_of(doc->samples[i].name) >= 0)
            return true;
    return false;
}

static const char *label2(const struct prom_sample *s, const char *a, const char *b)
{
    const char *v = prom_label_value(s, a);
    return v ? v : prom_label_value(s, b);
}

static bool same_uuid(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The reading of s (gpu, uuid, mig, mig_id), created when new; NULL when past the bounds. */
static struct dcgm_reading *reading_of(struct dcgm_scrape *out, size_t *last,
                                       const struct prom_sample *s, unsigned gpu, bool mig,
                                       unsigned mig_id)
{
    const char *uuid = label2(s, "UUID", "uuid");
    for (size_t k = 0; k < out->n; k++) {
        size_t j = (*last + k) % out->n;
        struct dcgm_reading *r = &out->r[j];
        if (r->gpu_index == gpu && r->mig == mig && (!mig || r->mig_id == mig_id) &&
            same_uuid(r->uuid, uuid)) {
            *last = j;
            return r;
        }
    }
    if (mig ? out->nmig == DCGM_MIG_MAX : out->ngpus == DCGM_GPUS_MAX)
        return NULL;
    *last = out->n;
    struct dcgm_reading *r = &out->r[out->n++];
    if (mig)
        out->nmig++;
    else
        out->ngpus++;
    *r = (struct dcgm_reading){
        .gpu_index = gpu,
        .uuid = uuid,
        .hostname = label2(s, "Hostname", "hostname"),
        .pci_bus_id = prom_label_value(s, "pci_bus_id"),
        .device = prom_label_value(s, "device"),
        .model = prom_label_value(s, "modelName"),
        .mig = mig,
        .mig_id = mig ? mig_id : 0,
        .mig_profile = mig ? prom_label_value(s, "GPU_I_PROFILE") : NULL,
        .power_w = NAN,
        .energy_j = NAN,
        .gpu_util_pct = NAN,
        .sm_active = NAN,
    };
    return r;
}

static double *slot(struct dcgm_reading *r, int f)
{
    switch (f) {
    case F_POWER:
        return &r->power_w;
    case F_ENERGY:
        return &r->energy_j;
    case F_UTIL:
        return &r->gpu_util_pct;
    default:
        return &r->sm_active;
    }
}

/* A 0.000000 of the CPU power family on a `cpu` label: DCGM's missing sensor. */
static bool cpu_zero(const struct prom_sample *s)
{
    return s->value == 0 && strcmp(s->name, CPU_POWER_FAMILY) == 0 &&
           prom_label_value(s, "cpu") != NULL;
}

void dcgm_parse(const struct prom_doc *doc, struct dcgm_scrape *out)
{
    out->n = out->ngpus = out->nmig = 0;
    out->device_power_w = NAN;
    out->dropped = out->blank = out->out_of_range = out->duplicates = out->bad_labels = 0;
    out->cpu_zero = 0;
    if (!doc)
        return;

    size_t last = 0;
    for (size_t i = 0; i < doc->nsamples; i++) {
        const struct prom_sample *s = &doc->samples[i];
        int f = field_of(s->name);
        if (f < 0) {
            if (cpu_zero(s))
                out->cpu_zero++;
            continue;
        }
        unsigned gpu, mig_id = 0;
        const char *mig_id_label = prom_label_value(s, "GPU_I_ID");
        bool mig = mig_id_label || prom_label_value(s, "GPU_I_PROFILE");
        if (parse_uint(prom_label_value(s, "gpu"), &gpu) < 0 ||
            (mig && parse_uint(mig_id_label, &mig_id) < 0)) {
            out->bad_labels++;
            continue;
        }
        struct dcgm_reading *r = reading_of(out, &last, s, gpu, mig, mig_id);
        if (!r) {
            out->dropped++;
            continue;
        }
        unsigned bit = 1u << f;
        if (r->seen_ & bit) {
            r->dup_ |= bit;
            out->duplicates++;
            continue;
        }
        r->seen_ |= bit;
        double v = s->value;
        if (isfinite(v) && v >= (fields[f].int64 ? INT64_BLANK : FP64_BLANK)) {
            out->blank++;
            continue;
        }
        if (!isfinite(v) || v < fields[f].min || v > fields[f].max) {
            out->out_of_range++;
            continue;
        }
        *slot(r, f) = f == F_ENERGY ? v / 1000 : v;
    }

    for (size_t j = 0; j < out->n; j++) {
        struct dcgm_reading *r = &out->r[j];
        for (int f = 0; f < F_COUNT; f++)
            if (r->dup_ & (1u << f))
                *slot(r, f) = NAN;
        if (!r->mig && !isnan(r->power_w))
            out->device_power_w =
                isnan(out->device_power_w) ? r->power_w : out->device_power_w + r->power_w;
    }
}
