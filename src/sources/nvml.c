/*
 * nvml: NVIDIA GPU energy and power through NVML, loaded with dlopen.
 *
 * Probe loads the library (RTLD_NOW | RTLD_LOCAL), resolves the calls it needs (versioned
 * names first, as NVML renames a call when its arguments change), initializes NVML and makes
 * one channel per GPU. A GPU whose energy counter answers at probe is read as a 64-bit mJ
 * counter, and its power gauge, when it answers too, is read beside it as a cross-check;
 * otherwise the gauge (mW) is the channel. A GPU in MIG mode stays one channel: its counter
 * covers the whole board, and the note says that the instances are not split.
 *
 * NVML is not a file below --root: with a root other than "/" (a fixture tree) the real
 * driver is not consulted unless CARMA_NVML_LIBRARY names a library, so that tests on fixture
 * trees see the same channels on every machine.
 *
 * Read calls the resolved functions on the handles kept at probe: no allocation, no open. A
 * call that fails makes the value invalid with its error (-ENODEV for a lost GPU, -EIO for any
 * other NVML error), never 0 W.
 */
#include "sources/nvml.h"
#include "sources/dynlib.h"
#include "sources/note.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"

typedef nvml_return_t (*fn_void)(void);
typedef nvml_return_t (*fn_count)(unsigned int *);
typedef nvml_return_t (*fn_handle)(unsigned int, nvml_device_t *);
typedef nvml_return_t (*fn_text)(nvml_device_t, char *, unsigned int);
typedef const char *(*fn_error_string)(nvml_return_t);
typedef nvml_return_t (*fn_u64)(nvml_device_t, unsigned long long *);
typedef nvml_return_t (*fn_uint)(nvml_device_t, unsigned int *);
typedef nvml_return_t (*fn_util)(nvml_device_t, struct nvml_utilization *);
typedef nvml_return_t (*fn_procs)(nvml_device_t, unsigned int *, struct nvml_process_info *);
typedef nvml_return_t (*fn_proc_util)(nvml_device_t, struct nvml_process_sample *, unsigned int *,
                                      unsigned long long);
typedef nvml_return_t (*fn_mig)(nvml_device_t, unsigned int *, unsigned int *);
typedef nvml_return_t (*fn_fields)(nvml_device_t, int, struct nvml_field_value *);

/* The NVML calls carma makes. */
struct nvml_api {
    fn_void init;
    fn_void shutdown;
    fn_count device_count;
    fn_handle device_handle;
    fn_text device_name;
    fn_text device_uuid;
    fn_error_string error_string;
    fn_u64 total_energy;    /* optional */
    fn_uint power_usage;    /* optional */
    fn_util utilization;    /* optional */
    fn_procs processes;     /* optional */
    fn_proc_util proc_util; /* optional */
    fn_mig mig_mode;        /* optional */
    fn_fields fields;       /* optional */
};

/* Where each call is found in struct nvml_api, and its names in the order they are tried. */
static const struct nvml_sym {
    size_t offset;
    bool required;
    const char *names[3];
} nvml_syms[] = {
    {offsetof(struct nvml_api, init), true, {"nvmlInit_v2", "nvmlInit", NULL}},
    {offsetof(struct nvml_api, shutdown), true, {"nvmlShutdown", NULL, NULL}},
    {offsetof(struct nvml_api, device_count), true, {"nvmlDeviceGetCount_v2", NULL, NULL}},
    {offsetof(struct nvml_api, device_handle), true, {"nvmlDeviceGetHandleByIndex_v2", NULL, NULL}},
    {offsetof(struct nvml_api, device_name), true, {"nvmlDeviceGetName", NULL, NULL}},
    {offsetof(struct nvml_api, device_uuid), true, {"nvmlDeviceGetUUID", NULL, NULL}},
    {offsetof(struct nvml_api, error_string), true, {"nvmlErrorString", NULL, NULL}},
    {offsetof(struct nvml_api, total_energy),
     false,
     {"nvmlDeviceGetTotalEnergyConsumption", NULL, NULL}},
    {offsetof(struct nvml_api, power_usage), false, {"nvmlDeviceGetPowerUsage", NULL, NULL}},
    {offsetof(struct nvml_api, utilization), false, {"nvmlDeviceGetUtilizationRates", NULL, NULL}},
    {offsetof(struct nvml_api, processes),
     false,
     {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2", NULL}},
    {offsetof(struct nvml_api, proc_util), false, {"nvmlDeviceGetProcessUtilization", NULL, NULL}},
    {offsetof(struct nvml_api, mig_mode), false, {"nvmlDeviceGetMigMode", NULL, NULL}},
    {offsetof(struct nvml_api, fields), false, {"nvmlDeviceGetFieldValues", NULL, NULL}},
};

/* The power fields read as component channels, in this order. */
static const struct {
    unsigned id;
    const char *sub;
    const char *what;
} nvml_power_fields[] = {
    {NVML_FI_DEV_POWER_INSTANT, "power_instant", "NVML_FI_DEV_POWER_INSTANT"},
    {NVML_FI_DEV_POWER_AVERAGE, "power_average", "NVML_FI_DEV_POWER_AVERAGE"},
};
#define NVML_POWER_FIELDS 2

/* The latest per-process utilization NVML gave for one process. */
struct nvml_seen {
    uint32_t pid;
    unsigned sm;
    unsigned long long ts_us; /* NVML's sample time stamp */
};

struct nvml_gpu {
    nvml_device_t dev;
    unsigned index;
    bool counter; /* the energy counter answered at probe: the channel is a counter */
    bool gauge;   /* the power gauge answered at probe */
    size_t ch;    /* its channel's offset among the source's */
    /* the power fields that answered at probe, with their channels' offsets */
    unsigned nfields;
    unsigned field_id[NVML_POWER_FIELDS];
    size_t field_ch[NVML_POWER_FIELDS];
    char uuid[NVML_DEVICE_UUID_BUFFER_SIZE];
    /* per-process utilization: the last sample time asked from, and each process's latest */
    unsigned long long last_seen_us, newest_us;
    size_t nseen;
    struct nvml_seen seen[NVML_PROCS_MAX];
};

struct nvml_priv {
    void *lib;
    bool initialized;
    struct nvml_api api;
    size_t n;
    struct nvml_gpu gpu[NVML_GPUS_MAX];
};

/* The negative errno for an NVML error in the sampling and query paths. */
static int nvml_errno(nvml_return_t r)
{
    switch (r) {
    case NVML_ERROR_GPU_IS_LOST:
        return -ENODEV;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return -EOPNOTSUPP;
    case NVML_ERROR_NO_PERMISSION:
        return -EACCES;
    default:
        return -EIO;
    }
}

static const char *error_text(const struct nvml_priv *p, nvml_return_t r)
{
    const char *t = p->api.error_string ? p->api.error_string(r) : NULL;
    return t ? t : "unknown NVML error";
}

/* Resolves the calls of nvml_syms. Returns 0, or -EINVAL with the missing call in s->reason. */
static int resolve(struct source *s, struct nvml_priv *p, const char *libname)
{
    for (size_t i = 0; i < sizeof nvml_syms / sizeof nvml_syms[0]; i++) {
        const struct nvml_sym *y = &nvml_syms[i];
        void *f = NULL;
        for (size_t k = 0; k < 3 && y->names[k] && !f; k++)
            f = dlsym(p->lib, y->names[k]);
        if (!f && y->required) {
            note_add(s->reason, sizeof s->reason,
                     "%s lacks the NVML call %s%s%s%s: not an NVML library, or one too old",
                     libname, y->names[0], y->names[1] ? " (or " : "",
                     y->names[1] ? y->names[1] : "", y->names[1] ? ")" : "");
            return -EINVAL;
        }
        /* function and object pointers share a representation on every POSIX system */
        memcpy((char *)&p->api + y->offset, &f, sizeof f);
    }
    return 0;
}

static void nvml_close(struct source *s)
{
    struct nvml_priv *p = s->priv;
    if (!p)
        return;
    if (p->initialized)
        p->api.shutdown();
    if (p->lib)
        dlclose(p->lib);
    free(p);
    s->priv = NULL;
}

/* The watts of a power field value (NVML gives mW), or -EIO when it holds none. */
static int field_watts(const struct nvml_field_value *v, double *ret)
{
    if (v->nvml_return != NVML_SUCCESS)
        return -EIO;
    double mw;
    switch (v->value_type) {
    case NVML_VALUE_TYPE_DOUBLE:
        mw = v->value.d;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        mw = v->value.ui;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        mw = (double)v->value.ul;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        mw = (double)v->value.ull;
        break;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        mw = (double)v->value.sll;
        break;
    case NVML_VALUE_TYPE_SIGNED_INT:
        mw = v->value.si;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
        mw = v->value.us;
        break;
    default:
        return -EIO;
    }
    if (!(mw >= 0) || mw > 1e8)
        return -EIO;
    *ret = mw / 1e3;
    return 0;
}

/* Looks at GPU number index and adds its channel. Returns 1 when added, 0 when the GPU is
 * skipped (the note says why), -ENOSPC when the set is full. */
static int add_gpu(struct source *s, struct probe_ctx *ctx, struct nvml_priv *p, unsigned index,
                   const char *libname)
{
    const struct nvml_api *a = &p->api;
    nvml_device_t dev;
    nvml_return_t r = a->device_handle(index, &dev);
    if (r != NVML_SUCCESS) {
        note_add(s->note, sizeof s->note, "GPU %u skipped: %s", index, error_text(p, r));
        return 0;
    }
    struct nvml_gpu g = {.dev = dev, .index = index};
    unsigned long long mj;
    unsigned int mw;
    g.counter = a->total_energy && a->total_energy(dev, &mj) == NVML_SUCCESS;
    g.gauge = a->power_usage && a->power_usage(dev, &mw) == NVML_SUCCESS;
    if (!g.counter && !g.gauge) {
        note_add(s->note, sizeof s->note, "GPU %u reports neither energy nor power", index);
        return 0;
    }
    char name[NVML_DEVICE_NAME_BUFFER_SIZE] = "";
    char uuid[NVML_DEVICE_UUID_BUFFER_SIZE] = "";
    if (a->device_name(dev, name, sizeof name) != NVML_SUCCESS)
        snprintf(name, sizeof name, "NVIDIA GPU");
    if (a->device_uuid(dev, uuid, sizeof uuid) != NVML_SUCCESS)
        uuid[0] = '\0';
    name[sizeof name - 1] = '\0';
    uuid[sizeof uuid - 1] = '\0';

    int idx = channel_set_add(ctx->set);
    if (idx < 0)
        return idx;
    struct channel *ch = &ctx->set->ch[idx];
    snprintf(ch->name, sizeof ch->name, "nvml/gpu%u", index);
    ch->source = "nvml";
    ch->kind = KIND_GPU;
    snprintf(ch->zone, sizeof ch->zone, "gpu");
    snprintf(ch->label, sizeof ch->label, "%s%s%s", name, uuid[0] ? " " : "", uuid);
    ch->socket = (int)index;
    ch->domain = DOMAIN_TOTAL;
    ch->parent = -1;
    ch->method = METHOD_MEASURED;
    if (g.counter) {
        ch->form = FORM_COUNTER;
        ch->counter_unit_j = 1e-3;
        ch->counter_range = 0; /* 64-bit mJ: never wraps in practice */
        snprintf(ch->path, sizeof ch->path, "%s: nvmlDeviceGetTotalEnergyConsumption(%u)", libname,
                 index);
    } else {
        ch->form = FORM_GAUGE;
        ch->gauge_window_ns = 0;
        snprintf(ch->path, sizeof ch->path, "%s: nvmlDeviceGetPowerUsage(%u)", libname, index);
        note_add(s->note, sizeof s->note,
                 "GPU %u has no energy counter (before Volta): its power gauge is integrated",
                 index);
    }
    unsigned int cur, pending;
    if (a->mig_mode && a->mig_mode(dev, &cur, &pending) == NVML_SUCCESS &&
        cur == NVML_DEVICE_MIG_ENABLE)
        note_add(s->note, sizeof s->note,
                 "GPU %u is in MIG mode: MIG instances are not split, the whole GPU is one channel",
                 index);
    snprintf(g.uuid, sizeof g.uuid, "%s", uuid);
    g.ch = (size_t)idx - s->first;
    s->count++;
    /* the power fields that answer become component channels beside the GPU's */
    struct nvml_field_value fv[NVML_POWER_FIELDS];
    memset(fv, 0, sizeof fv);
    for (int f = 0; f < NVML_POWER_FIELDS; f++)
        fv[f].field_id = nvml_power_fields[f].id;
    if (a->fields && a->fields(dev, NVML_POWER_FIELDS, fv) == NVML_SUCCESS) {
        for (int f = 0; f < NVML_POWER_FIELDS; f++) {
            double w;
            if (field_watts(&fv[f], &w) < 0)
                continue;
            int k = channel_set_add(ctx->set);
            if (k < 0)
                break;
            struct channel *fc = &ctx->set->ch[k];
            snprintf(fc->name, sizeof fc->name, "nvml/gpu%u/%s", index, nvml_power_fields[f].sub);
            fc->source = "nvml";
            fc->kind = KIND_GPU;
            snprintf(fc->zone, sizeof fc->zone, "%s", nvml_power_fields[f].sub);
            snprintf(fc->label, sizeof fc->label, "%s", ctx->set->ch[idx].label);
            fc->socket = (int)index;
            fc->domain = DOMAIN_COMPONENT;
            fc->parent = idx;
            fc->method = METHOD_MEASURED;
            fc->form = FORM_GAUGE;
            fc->gauge_window_ns =
                nvml_power_fields[f].id == NVML_FI_DEV_POWER_AVERAGE ? 1000000000LL : 0;
            snprintf(fc->path, sizeof fc->path, "%s: nvmlDeviceGetFieldValues(%u, %s)", libname,
                     index, nvml_power_fields[f].what);
            g.field_id[g.nfields] = nvml_power_fields[f].id;
            g.field_ch[g.nfields] = (size_t)k - s->first;
            g.nfields++;
            s->count++;
        }
    }
    p->gpu[p->n++] = g;
    return 1;
}

/*
 * Loads NVML and appends one channel per GPU to ctx->set. Returns the number of channels;
 * -ENOENT when the library is not found, NVML finds no driver or no GPU, or no GPU reports
 * energy or power; -EINVAL when the library lacks a required call; -EACCES or -EIO when
 * nvmlInit fails otherwise. s->reason says why in those cases, s->note what the user should
 * know on success (gauge fallbacks, MIG, GPUs skipped).
 */
static int nvml_probe(struct source *s, struct probe_ctx *ctx)
{
    int ret;
    s->priv = NULL;
    s->first = ctx->set->n;
    s->count = 0;
    s->reason[0] = '\0';
    s->note[0] = '\0';

    const char *named = NULL;
    ret = dynlib_choose(s, ctx, "NVML", "CARMA_NVML_LIBRARY", &named);
    if (ret < 0)
        return ret;

    struct nvml_priv *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(s->reason, sizeof s->reason, "out of memory");
        return -ENOMEM;
    }
    s->priv = p;

    static const char *const names[] = {NVML_DEFAULT_LIBRARY};
    const char *libname = NULL;
    ret = dynlib_open(s, named, names, 1, "no NVIDIA driver; set CARMA_NVML_LIBRARY to its path",
                      NVML_DEFAULT_LIBRARY
                      " not found (no NVIDIA driver; set CARMA_NVML_LIBRARY to its path)",
                      &p->lib, &libname);
    if (ret < 0)
        goto out;
    ret = resolve(s, p, libname);
    if (ret < 0)
        goto out;

    nvml_return_t r = p->api.init();
    if (r != NVML_SUCCESS) {
        snprintf(s->reason, sizeof s->reason, "nvmlInit failed: %s (NVML error %d)%s",
                 error_text(p, r), r,
                 r == NVML_ERROR_DRIVER_NOT_LOADED ? ": the NVIDIA kernel driver is not loaded"
                 : r == NVML_ERROR_LIB_RM_VERSION_MISMATCH
                     ? ": the library and the kernel driver differ in version (reboot or reload "
                       "the driver)"
                     : "");
        ret = r == NVML_ERROR_DRIVER_NOT_LOADED ? -ENOENT
              : r == NVML_ERROR_NO_PERMISSION   ? -EACCES
                                                : -EIO;
        goto out;
    }
    p->initialized = true;

    unsigned int n = 0;
    r = p->api.device_count(&n);
    if (r != NVML_SUCCESS) {
        snprintf(s->reason, sizeof s->reason, "nvmlDeviceGetCount failed: %s", error_text(p, r));
        ret = nvml_errno(r);
        goto out;
    }
    if (n == 0) {
        snprintf(s->reason, sizeof s->reason, "NVML reports no GPU");
        ret = -ENOENT;
        goto out;
    }
    if (n > NVML_GPUS_MAX) {
        note_add(s->note, sizeof s->note, "%u GPUs: only the first %d are measured", n,
                 NVML_GPUS_MAX);
        n = NVML_GPUS_MAX;
    }
    for (unsigned i = 0; i < n; i++) {
        ret = add_gpu(s, ctx, p, i, libname);
        if (ret == -ENOSPC) {
            note_add(s->note, sizeof s->note, "the channel set is full: GPUs from %u left out", i);
            break;
        }
    }
    if (s->count == 0) {
        snprintf(s->reason, sizeof s->reason, "%u GPU%s, none usable: %s", n, n == 1 ? "" : "s",
                 s->note[0] ? s->note : "the channel set is full");
        s->note[0] = '\0';
        ret = -ENOENT;
        goto out;
    }
    ret = (int)s->count;
out:
    if (ret <= 0)
        nvml_close(s);
    return ret;
}

/* Fills out[0 .. s->count): the counter (mJ) of counter channels and the gauge (W) where it
 * answered at probe; a call that fails leaves its value invalid with the error. */
static void nvml_read(struct source *s, struct reading *out)
{
    const struct nvml_priv *p = s->priv;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        const struct nvml_gpu *g = &p->gpu[i];
        struct reading *rd = &out[g->ch];
        rd->valid = 0;
        rd->err = 0;
        rd->energy_raw = 0;
        rd->power_w = 0;
        int err_energy = 0, err_power = 0;
        if (g->counter) {
            unsigned long long mj;
            nvml_return_t r = p->api.total_energy(g->dev, &mj);
            if (r == NVML_SUCCESS) {
                rd->energy_raw = mj;
                rd->valid |= READING_ENERGY;
            } else {
                err_energy = nvml_errno(r);
            }
        }
        if (g->gauge) {
            unsigned int mw;
            nvml_return_t r = p->api.power_usage(g->dev, &mw);
            if (r == NVML_SUCCESS) {
                rd->power_w = (double)mw / 1e3;
                rd->valid |= READING_POWER;
            } else {
                err_power = nvml_errno(r);
            }
        }
        /* the error of the channel's own value first */
        rd->err = g->counter ? (err_energy ? err_energy : err_power) : err_power;
        if (!g->nfields)
            continue;
        struct nvml_field_value fv[NVML_POWER_FIELDS];
        memset(fv, 0, sizeof fv);
        for (unsigned f = 0; f < g->nfields; f++)
            fv[f].field_id = g->field_id[f];
        nvml_return_t r = p->api.fields(g->dev, (int)g->nfields, fv);
        for (unsigned f = 0; f < g->nfields; f++) {
            struct reading *fr = &out[g->field_ch[f]];
            fr->valid = 0;
            fr->energy_raw = 0;
            fr->power_w = 0;
            fr->err = r != NVML_SUCCESS ? nvml_errno(r) : 0;
            double w;
            if (r == NVML_SUCCESS && field_watts(&fv[f], &w) == 0) {
                fr->power_w = w;
                fr->valid = READING_POWER;
            } else if (r == NVML_SUCCESS) {
                fr->err = nvml_errno(fv[f].nvml_return);
            }
        }
    }
}

/* The GPU with NVML index gpu of a usable nvml source, or NULL. */
static struct nvml_gpu *find_gpu(const struct source *s, unsigned gpu,
                                 const struct nvml_priv **ret_p)
{
    if (!s || s->ops != &nvml_source_ops || s->status != 0 || !s->priv)
        return NULL;
    struct nvml_priv *p = s->priv;
    for (size_t i = 0; i < p->n; i++) {
        if (p->gpu[i].index == gpu) {
            *ret_p = p;
            return &p->gpu[i];
        }
    }
    return NULL;
}

const char *nvml_device_uuid(const struct source *s, unsigned gpu)
{
    const struct nvml_priv *p;
    const struct nvml_gpu *g = find_gpu(s, gpu, &p);
    return g ? g->uuid : NULL;
}

/* Takes the per-process samples NVML has gathered since the last call into g->seen. */
static void take_samples(const struct nvml_priv *p, struct nvml_gpu *g)
{
    struct nvml_process_sample util[NVML_PROCS_MAX];
    unsigned int nu = NVML_PROCS_MAX;
    nvml_return_t r = p->api.proc_util(g->dev, util, &nu, g->last_seen_us);
    if (r != NVML_SUCCESS)
        return; /* NOT_FOUND: nothing new since last_seen; others: keep what is known */
    if (nu > NVML_PROCS_MAX)
        nu = NVML_PROCS_MAX;
    for (unsigned i = 0; i < nu; i++) {
        const struct nvml_process_sample *u = &util[i];
        if (u->time_stamp_us > g->newest_us)
            g->newest_us = u->time_stamp_us;
        size_t k = 0;
        while (k < g->nseen && g->seen[k].pid != u->pid)
            k++;
        if (k == g->nseen) {
            if (g->nseen == NVML_PROCS_MAX) {
                /* full: the oldest entry makes room */
                k = 0;
                for (size_t m = 1; m < g->nseen; m++)
                    if (g->seen[m].ts_us < g->seen[k].ts_us)
                        k = m;
            } else {
                g->nseen++;
            }
            g->seen[k] = (struct nvml_seen){.pid = u->pid, .ts_us = 0};
        }
        if (u->time_stamp_us >= g->seen[k].ts_us) {
            g->seen[k].sm = u->sm_util > 100 ? 100 : u->sm_util;
            g->seen[k].ts_us = u->time_stamp_us;
        }
    }
    g->last_seen_us = g->newest_us;
}

int nvml_device_processes(const struct source *s, unsigned gpu, struct nvml_proc *out, int cap)
{
    const struct nvml_priv *p;
    struct nvml_gpu *g = find_gpu(s, gpu, &p);
    if (!g || cap < 0 || (cap > 0 && !out))
        return -EINVAL;
    if (!p->api.processes)
        return -EOPNOTSUPP;
    struct nvml_process_info info[NVML_PROCS_MAX];
    unsigned int n = NVML_PROCS_MAX;
    nvml_return_t r = p->api.processes(g->dev, &n, info);
    if (r == NVML_ERROR_INSUFFICIENT_SIZE)
        return -ENOBUFS;
    if (r != NVML_SUCCESS)
        return nvml_errno(r);
    if (n > NVML_PROCS_MAX)
        n = NVML_PROCS_MAX;
    if (p->api.proc_util)
        take_samples(p, g);

    int k = 0;
    for (unsigned i = 0; i < n && k < cap; i++, k++) {
        out[k].pid = info[i].pid;
        out[k].used_mem_bytes = info[i].used_gpu_memory == NVML_VALUE_NOT_AVAILABLE
                                    ? UINT64_MAX
                                    : info[i].used_gpu_memory;
        out[k].sm_util_pct = -1;
        for (size_t m = 0; m < g->nseen; m++) {
            if (g->seen[m].pid != info[i].pid)
                continue;
            /* a process whose last sample is much older than the newest sampled nothing
             * since: it has been idle on the GPU */
            out[k].sm_util_pct =
                g->newest_us - g->seen[m].ts_us > NVML_SAMPLE_STALE_US ? 0 : (int)g->seen[m].sm;
        }
    }
    return k;
}

int nvml_device_utilization(const struct source *s, unsigned gpu, struct nvml_util *ret)
{
    const struct nvml_priv *p;
    const struct nvml_gpu *g = find_gpu(s, gpu, &p);
    if (!g || !ret)
        return -EINVAL;
    if (!p->api.utilization)
        return -EOPNOTSUPP;
    struct nvml_utilization u;
    nvml_return_t r = p->api.utilization(g->dev, &u);
    if (r != NVML_SUCCESS)
        return nvml_errno(r);
    ret->gpu_pct = u.gpu;
    ret->mem_pct = u.memory;
    return 0;
}

const struct source_ops nvml_source_ops = {
    .name = "nvml",
    .probe = nvml_probe,
    .read = nvml_read,
    .close = nvml_close,
};
