/*
 * dcgm: Grace CPU rails and NVIDIA GPUs through DCGM, loaded with dlopen (sources/dcgm.h).
 *
 * Probe loads the library (RTLD_NOW | RTLD_LOCAL), resolves the calls it needs, initializes
 * DCGM, starts the embedded engine (mode auto), lists the CPU entities (the sysmon module:
 * Grace only) and the supported GPUs, puts them into one group, creates one field group of
 * the fields of dcgm_fields[] (its name carries the pid and a counter: names are unique per
 * process) and watches it. One update and one read at probe decide the channels: a field that
 * reads (status OK and below the blank sentinel) becomes a channel, or part of one.
 *
 * Read makes one dcgmUpdateAllFields(h, 0) and one dcgmEntitiesGetLatestValues with flags 0
 * (LIVE_DATA is refused for CPU entities) into the value array allocated at probe: no
 * allocation, no open. Values come back in any order: each is matched by its own entity and
 * field, and is usable only when its own status is OK and it is not a blank sentinel; a missing
 * sensor (status BADPARAM with 0.0) is missing, never 0 W.
 *
 * DCGM is not a file below --root: with a root other than "/" (a fixture tree) DCGM is not
 * consulted unless CARMA_DCGM_LIBRARY names a library.
 */
#include "sources/dcgm.h"
#include "sources/dynlib.h"
#include "sources/note.h"
#include "sources/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const dcgm_default_libraries[] = {"libdcgm.so.4", "libdcgm.so.3", "libdcgm.so"};
#define DCGM_DEFAULT_LIBRARIES 3

typedef dcgm_return_t (*fn_void)(void);
typedef dcgm_return_t (*fn_start)(int, dcgm_handle_t *);
typedef dcgm_return_t (*fn_stop)(dcgm_handle_t);
typedef dcgm_return_t (*fn_connect)(const char *, dcgm_handle_t *);
typedef dcgm_return_t (*fn_entities)(dcgm_handle_t, int, uint32_t *, int *, unsigned int);
typedef dcgm_return_t (*fn_group_create)(dcgm_handle_t, int, const char *, dcgm_gpu_grp_t *);
typedef dcgm_return_t (*fn_group_add)(dcgm_handle_t, dcgm_gpu_grp_t, int, uint32_t);
typedef dcgm_return_t (*fn_group_destroy)(dcgm_handle_t, dcgm_gpu_grp_t);
typedef dcgm_return_t (*fn_fg_create)(dcgm_handle_t, int, unsigned short *, const char *,
                                      dcgm_field_grp_t *);
typedef dcgm_return_t (*fn_fg_destroy)(dcgm_handle_t, dcgm_field_grp_t);
typedef dcgm_return_t (*fn_watch)(dcgm_handle_t, dcgm_gpu_grp_t, dcgm_field_grp_t, long long,
                                  double, int);
typedef dcgm_return_t (*fn_update)(dcgm_handle_t, int);
typedef dcgm_return_t (*fn_latest)(dcgm_handle_t, struct dcgm_entity_pair *, unsigned int,
                                   unsigned short *, unsigned int, unsigned int,
                                   struct dcgm_field_value_v2 *);
typedef const char *(*fn_error_string)(dcgm_return_t);

/* The DCGM calls carma makes (all required). */
struct dcgm_api {
    fn_void init;
    fn_void shutdown;
    fn_start start_embedded;
    fn_stop stop_embedded;
    fn_connect connect;
    fn_stop disconnect;
    fn_entities entities;
    fn_group_create group_create;
    fn_group_add group_add;
    fn_group_destroy group_destroy;
    fn_fg_create fg_create;
    fn_fg_destroy fg_destroy;
    fn_watch watch;
    fn_update update;
    fn_latest latest;
    fn_error_string error_string;
};

static const struct dcgm_sym {
    size_t offset;
    const char *name;
} dcgm_syms[] = {
    {offsetof(struct dcgm_api, init), "dcgmInit"},
    {offsetof(struct dcgm_api, shutdown), "dcgmShutdown"},
    {offsetof(struct dcgm_api, start_embedded), "dcgmStartEmbedded"},
    {offsetof(struct dcgm_api, stop_embedded), "dcgmStopEmbedded"},
    {offsetof(struct dcgm_api, connect), "dcgmConnect"},
    {offsetof(struct dcgm_api, disconnect), "dcgmDisconnect"},
    {offsetof(struct dcgm_api, entities), "dcgmGetEntityGroupEntities"},
    {offsetof(struct dcgm_api, group_create), "dcgmGroupCreate"},
    {offsetof(struct dcgm_api, group_add), "dcgmGroupAddEntity"},
    {offsetof(struct dcgm_api, group_destroy), "dcgmGroupDestroy"},
    {offsetof(struct dcgm_api, fg_create), "dcgmFieldGroupCreate"},
    {offsetof(struct dcgm_api, fg_destroy), "dcgmFieldGroupDestroy"},
    {offsetof(struct dcgm_api, watch), "dcgmWatchFields"},
    {offsetof(struct dcgm_api, update), "dcgmUpdateAllFields"},
    {offsetof(struct dcgm_api, latest), "dcgmEntitiesGetLatestValues"},
    {offsetof(struct dcgm_api, error_string), "errorString"},
};

/* The watched fields, in the order of the field group and of the values of one entity. */
enum {
    F_CPU_POWER,
    F_SYSIO,
    F_MODULE,
    F_UTIL_TOTAL,
    F_UTIL_USER,
    F_UTIL_NICE,
    F_UTIL_SYS,
    F_UTIL_IRQ,
    F_GPU_POWER,
    F_GPU_ENERGY,
    F_GPU_UTIL,
    F_SM_ACTIVE,
    F_UUID, /* read at probe only: the fields of a tick are those before it */
    F_COUNT
};
#define F_TICK F_UUID
_Static_assert(F_COUNT <= DCGM_SRC_FIELDS, "dcgm_fields fits");
static unsigned short dcgm_fields[F_COUNT] = {
    DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT,
    DCGM_FI_DEV_SYSIO_POWER_UTIL_CURRENT,
    DCGM_FI_DEV_MODULE_POWER_UTIL_CURRENT,
    DCGM_FI_DEV_CPU_UTIL_TOTAL,
    DCGM_FI_DEV_CPU_UTIL_USER,
    DCGM_FI_DEV_CPU_UTIL_NICE,
    DCGM_FI_DEV_CPU_UTIL_SYS,
    DCGM_FI_DEV_CPU_UTIL_IRQ,
    DCGM_FI_DEV_POWER_USAGE,
    DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION,
    DCGM_FI_DEV_GPU_UTIL,
    DCGM_FI_PROF_SM_ACTIVE,
    DCGM_FI_DEV_UUID,
};

#define DCGM_ENTS_MAX (DCGM_SRC_CPUS_MAX + DCGM_SRC_GPUS_MAX)
/* "no channel" for a field of an entity */
#define NO_CH ((size_t)-1)

/* One CPU socket or GPU: its channels and the latest usable value of each field. */
struct dcgm_ent {
    struct dcgm_entity_pair id;
    size_t ch_main;   /* CPU rail or GPU channel (offset among the source's), NO_CH if none */
    size_t ch_sysio;  /* CPU only */
    size_t ch_module; /* CPU only */
    bool counter;     /* GPU: the channel is the 156 counter */
    bool ok[F_COUNT]; /* this tick's value of field f is usable */
    double v[F_COUNT];
    int err[F_COUNT]; /* negative errno when not usable */
    char uuid[96];    /* GPU: field 54 as read at probe, "" when it gave none */
};

struct dcgm_priv {
    void *lib;
    bool initialized, started, connected, group_made, fg_made;
    struct dcgm_api api;
    dcgm_handle_t h;
    dcgm_gpu_grp_t group;
    dcgm_field_grp_t fg;
    size_t n; /* entities */
    struct dcgm_ent ent[DCGM_ENTS_MAX];
    struct dcgm_entity_pair pairs[DCGM_ENTS_MAX];
    struct dcgm_field_value_v2 *values; /* n × F_COUNT, allocated at probe */
    size_t nfields; /* the fields of the next sample: F_COUNT at probe, then F_TICK */
};

static unsigned dcgm_fg_serial; /* makes the field-group names unique within the process */

static const char *error_text(const struct dcgm_priv *p, dcgm_return_t r)
{
    const char *t = p->api.error_string ? p->api.error_string(r) : NULL;
    return t ? t : "unknown DCGM error";
}

/* Writes s->reason "WHAT: DCGM's text (DCGM error R)[: FIX]" and returns the negative errno of
 * the failure: -EACCES for a permission refused, else -EIO. */
static int fail(struct source *s, const struct dcgm_priv *p, dcgm_return_t r, const char *what,
                const char *fix)
{
    snprintf(s->reason, sizeof s->reason, "%s: %s (DCGM error %d)%s%s", what, error_text(p, r), r,
             fix ? ": " : "", fix ? fix : "");
    return r == DCGM_ST_NO_PERMISSION ? -EACCES : -EIO;
}

/* The negative errno of a DCGM status. */
static int dcgm_errno(dcgm_return_t r)
{
    switch (r) {
    case DCGM_ST_NO_DATA:
    case DCGM_ST_STALE_DATA:
        return -ENODATA;
    case DCGM_ST_BADPARAM: /* a value of 0.0 with BADPARAM: no such sensor */
    case DCGM_ST_NOT_SUPPORTED:
    case DCGM_ST_FIELD_UNSUPPORTED_BY_API:
        return -EOPNOTSUPP;
    case DCGM_ST_NO_PERMISSION:
        return -EACCES;
    case DCGM_ST_NOT_WATCHED:
        return -ENODATA;
    case DCGM_ST_GPU_IS_LOST:
        return -ENODEV;
    case DCGM_ST_CONNECTION_NOT_VALID:
        return -ENOTCONN;
    default:
        return -EIO;
    }
}

static void dcgm_close(struct source *s)
{
    struct dcgm_priv *p = s->priv;
    if (!p)
        return;
    if (p->fg_made)
        p->api.fg_destroy(p->h, p->fg);
    if (p->group_made)
        p->api.group_destroy(p->h, p->group);
    if (p->started)
        p->api.stop_embedded(p->h);
    if (p->connected)
        p->api.disconnect(p->h);
    if (p->initialized)
        p->api.shutdown();
    if (p->lib)
        dlclose(p->lib);
    free(p->values);
    free(p);
    s->priv = NULL;
}

/* Resolves the calls of dcgm_syms. Returns 0, or -EINVAL with the missing call in s->reason. */
static int resolve(struct source *s, struct dcgm_priv *p, const char *libname)
{
    for (size_t i = 0; i < sizeof dcgm_syms / sizeof dcgm_syms[0]; i++) {
        void *f = dlsym(p->lib, dcgm_syms[i].name);
        if (!f) {
            snprintf(s->reason, sizeof s->reason,
                     "%s lacks the DCGM call %s: not a DCGM library, or one too old (DCGM 3 or "
                     "later is needed)",
                     libname, dcgm_syms[i].name);
            return -EINVAL;
        }
        /* function and object pointers share a representation on every POSIX system */
        memcpy((char *)&p->api + dcgm_syms[i].offset, &f, sizeof f);
    }
    return 0;
}

/* Lists the entities of group (DCGM_FE_CPU or DCGM_FE_GPU) into p->ent. Returns the DCGM
 * status. */
static dcgm_return_t list_entities(struct source *s, struct dcgm_priv *p, int group, int cap,
                                   unsigned flags)
{
    uint32_t ids[DCGM_SRC_GPUS_MAX > DCGM_SRC_CPUS_MAX ? DCGM_SRC_GPUS_MAX : DCGM_SRC_CPUS_MAX];
    int n = cap;
    dcgm_return_t r = p->api.entities(p->h, group, ids, &n, flags);
    if (r == DCGM_ST_INSUFFICIENT_SIZE) {
        note_add(s->note, sizeof s->note, "%d %s: only the first %d are measured", n,
                 group == DCGM_FE_CPU ? "CPU sockets" : "GPUs", cap);
        n = cap;
        r = DCGM_ST_OK;
    }
    if (r != DCGM_ST_OK)
        return r;
    if (n > cap)
        n = cap;
    for (int i = 0; i < n; i++) {
        struct dcgm_ent *e = &p->ent[p->n++];
        e->id = (struct dcgm_entity_pair){(uint32_t)group, ids[i]};
        e->ch_main = e->ch_sysio = e->ch_module = NO_CH;
    }
    return DCGM_ST_OK;
}

/* Takes the values of the last latest-values call into the entities: each value by its own
 * entity and field, usable when its status is OK and it is below the blank sentinel. */
static void take_values(struct dcgm_priv *p)
{
    for (size_t i = 0; i < p->n; i++)
        for (size_t f = 0; f < p->nfields; f++) {
            p->ent[i].ok[f] = false;
            p->ent[i].err[f] = -ENODATA;
        }
    size_t total = p->n * p->nfields;
    for (size_t k = 0; k < total; k++) {
        const struct dcgm_field_value_v2 *v = &p->values[k];
        size_t i = 0;
        while (i < p->n && (p->ent[i].id.entity_group_id != v->entity_group_id ||
                            p->ent[i].id.entity_id != v->entity_id))
            i++;
        int f = 0;
        while (f < (int)p->nfields && dcgm_fields[f] != v->field_id)
            f++;
        if (i == p->n || f == (int)p->nfields)
            continue;
        struct dcgm_ent *e = &p->ent[i];
        if (v->status != DCGM_ST_OK) {
            e->err[f] = dcgm_errno(v->status);
            continue;
        }
        double x;
        if (f == F_UUID) {
            /* a string: "GPU-..."; DCGM's blank strings start with '<' ("<<<NULL>>>") */
            if (v->field_type == DCGM_FT_STRING && v->value.str[0] && v->value.str[0] != '<') {
                snprintf(e->uuid, sizeof e->uuid, "%.*s", (int)sizeof e->uuid - 1, v->value.str);
                e->ok[f] = true;
                e->err[f] = 0;
            } else {
                e->err[f] = -EOPNOTSUPP;
            }
            continue;
        }
        if (v->field_type == DCGM_FT_DOUBLE) {
            x = v->value.dbl;
            if (!(x < DCGM_FP64_BLANK_VALUE)) {
                e->err[f] = -EOPNOTSUPP;
                continue;
            }
        } else if (v->field_type == DCGM_FT_INT64) {
            if (v->value.i64 >= DCGM_INT64_BLANK_VALUE) {
                e->err[f] = -EOPNOTSUPP;
                continue;
            }
            x = (double)v->value.i64;
        } else {
            e->err[f] = -EIO;
            continue;
        }
        if (!(x >= 0)) {
            e->err[f] = -EIO;
            continue;
        }
        e->v[f] = x;
        e->ok[f] = true;
        e->err[f] = 0;
    }
}

/* One update and one latest-values call. Returns the DCGM status of the call. */
static dcgm_return_t sample(struct dcgm_priv *p, int wait)
{
    p->api.update(p->h, wait);
    for (size_t k = 0; k < p->n * p->nfields; k++)
        p->values[k].version = DCGM_FIELD_VALUE_VERSION_2;
    dcgm_return_t r = p->api.latest(p->h, p->pairs, (unsigned)p->n, dcgm_fields,
                                    (unsigned)p->nfields, 0, p->values);
    if (r == DCGM_ST_OK) {
        take_values(p);
    } else {
        for (size_t i = 0; i < p->n; i++)
            for (size_t f = 0; f < p->nfields; f++) {
                p->ent[i].ok[f] = false;
                p->ent[i].err[f] = dcgm_errno(r);
            }
    }
    return r;
}

/* Appends a channel and fills what all of this source's share. Returns its index or -ENOSPC. */
static int add_channel(struct probe_ctx *ctx, enum channel_kind kind, int socket)
{
    int idx = channel_set_add(ctx->set);
    if (idx < 0)
        return idx;
    struct channel *c = &ctx->set->ch[idx];
    c->source = "dcgm";
    c->kind = kind;
    c->socket = socket;
    c->parent = -1;
    c->method = METHOD_MEASURED;
    c->form = FORM_GAUGE;
    c->gauge_window_ns = 0;
    return idx;
}

/* Whether the set already holds GPU channels of the nvml source. */
static bool nvml_gpus_present(const struct channel_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->ch[i].source && strcmp(set->ch[i].source, "nvml") == 0 &&
            set->ch[i].kind == KIND_GPU)
            return true;
    return false;
}

/* The index of an earlier source's total channel of CPU socket socket (hwmon's `total` zone: the
 * socket's whole envelope), or -1. */
static int socket_total_of(const struct channel_set *set, int socket)
{
    for (size_t i = 0; i < set->n; i++) {
        const struct channel *c = &set->ch[i];
        if (c->source && strcmp(c->source, "dcgm") != 0 && c->kind == KIND_CPU &&
            c->domain == DOMAIN_TOTAL && c->socket == socket && strcmp(c->zone, "total") == 0)
            return (int)i;
    }
    return -1;
}

/* The index of the NVML GPU channel (a total) of the GPU whose UUID is uuid, or -1. */
static int nvml_channel_of(const struct probe_ctx *ctx, const char *uuid)
{
    const struct source *nv = NULL;
    for (size_t k = 0; k < ctx->n_probed && ctx->probed; k++)
        if (ctx->probed[k].ops == &nvml_source_ops && ctx->probed[k].status == 0)
            nv = &ctx->probed[k];
    if (!nv || !uuid[0])
        return -1;
    for (size_t i = nv->first; i < nv->first + nv->count && i < ctx->set->n; i++) {
        const struct channel *c = &ctx->set->ch[i];
        if (c->kind != KIND_GPU || c->domain != DOMAIN_TOTAL || c->socket < 0)
            continue;
        const char *u = nvml_device_uuid(nv, (unsigned)c->socket);
        if (u && strcmp(u, uuid) == 0)
            return (int)i;
    }
    return -1;
}

/* Makes the channels of the entities from the values read at probe. */
static int add_channels(struct source *s, struct probe_ctx *ctx, struct dcgm_priv *p,
                        const char *libname)
{
    bool nvml = nvml_gpus_present(ctx->set);
    for (size_t i = 0; i < p->n; i++) {
        struct dcgm_ent *e = &p->ent[i];
        unsigned id = e->id.entity_id;
        if (e->id.entity_group_id == DCGM_FE_CPU) {
            static const struct {
                int f;
                enum channel_kind kind;
                const char *sub, *zone, *what;
            } rails[] = {
                {F_CPU_POWER, KIND_CPU, "", "cpu_rail", "CPU rail only, not SoC/SysIO/DRAM"},
                {F_SYSIO, KIND_SOC, "/sysio", "sysio", "SysIO"},
                {F_MODULE, KIND_SOC, "/module", "module", "module"},
            };
            for (size_t k = 0; k < 3; k++) {
                if (!e->ok[rails[k].f])
                    continue;
                int idx = add_channel(ctx, rails[k].kind, (int)id);
                if (idx < 0)
                    return idx;
                struct channel *c = &ctx->set->ch[idx];
                snprintf(c->name, sizeof c->name, "dcgm/cpu%u%s", id, rails[k].sub);
                snprintf(c->zone, sizeof c->zone, "%s", rails[k].zone);
                snprintf(c->label, sizeof c->label, "DCGM CPU %u power: %s", id, rails[k].what);
                /* the rail is the CPU figure only when no earlier source measured the CPU
                 * (hwmon's socket total contains it); SysIO and module are never added */
                c->domain = k == 0 && !ctx->have_measured_cpu ? DOMAIN_TOTAL : DOMAIN_COMPONENT;
                /* the CPU rail and SysIO are inside hwmon's socket total where it has one (the
                 * module reading covers more than the socket: no parent) */
                if (k < 2)
                    c->parent = socket_total_of(ctx->set, (int)id);
                snprintf(c->path, sizeof c->path, "%s: field %u of CPU %u", libname,
                         (unsigned)dcgm_fields[rails[k].f], id);
                size_t off = (size_t)idx - s->first;
                if (k == 0)
                    e->ch_main = off;
                else if (k == 1)
                    e->ch_sysio = off;
                else
                    e->ch_module = off;
                s->count++;
            }
            if (e->ch_main == NO_CH)
                note_add(s->note, sizeof s->note,
                         "CPU %u has no CPU power reading (field 1130: %s)", id,
                         strerror(-e->err[F_CPU_POWER]));
            else if (ctx->have_measured_cpu)
                note_add(s->note, sizeof s->note,
                         "CPU %u: DCGM's CPU rail is a component of the CPU measured already, "
                         "not added",
                         id);
            else
                note_add(s->note, sizeof s->note,
                         "CPU %u: DCGM measures the CPU rail only (not SoC, SysIO or DRAM)", id);
        } else {
            bool counter = e->ok[F_GPU_ENERGY];
            int twin = nvml_channel_of(ctx, e->uuid);
            if (twin >= 0) {
                note_add(s->note, sizeof s->note,
                         "GPU %u (%s) is read by NVML as %s: DCGM does not read it again", id,
                         e->uuid, ctx->set->ch[twin].name);
                continue;
            }
            if (!counter && !e->ok[F_GPU_POWER]) {
                note_add(s->note, sizeof s->note, "GPU %u reports neither energy nor power", id);
                continue;
            }
            int idx = add_channel(ctx, KIND_GPU, (int)id);
            if (idx < 0)
                return idx;
            struct channel *c = &ctx->set->ch[idx];
            snprintf(c->name, sizeof c->name, "dcgm/gpu%u", id);
            snprintf(c->zone, sizeof c->zone, "gpu");
            snprintf(c->label, sizeof c->label, "DCGM GPU %u%s%s", id, e->uuid[0] ? " " : "",
                     e->uuid);
            /* a GPU NVML does not read is DCGM's to measure; one without a UUID cannot be told
             * from NVML's GPUs and is never added beside them */
            c->domain = nvml && !e->uuid[0] ? DOMAIN_COMPONENT : DOMAIN_TOTAL;
            if (nvml && !e->uuid[0])
                note_add(s->note, sizeof s->note,
                         "GPU %u: DCGM gave no UUID, so it cannot be matched to NVML's GPUs: a "
                         "component beside them, never added",
                         id);
            else if (nvml)
                note_add(s->note, sizeof s->note,
                         "GPU %u (%s) is not one NVML reads: DCGM measures it", id, e->uuid);
            if (counter) {
                c->form = FORM_COUNTER;
                c->counter_unit_j = 1e-3;
                c->counter_range = 0; /* 64-bit mJ: never wraps in practice */
                snprintf(c->path, sizeof c->path, "%s: field 156 of GPU %u", libname, id);
            } else {
                snprintf(c->path, sizeof c->path, "%s: field 155 of GPU %u", libname, id);
                note_add(s->note, sizeof s->note,
                         "GPU %u has no energy counter: its power gauge is integrated", id);
            }
            e->counter = counter;
            e->ch_main = (size_t)idx - s->first;
            s->count++;
        }
    }
    return 0;
}

/*
 * Creates the field group (every field of dcgm_fields, SM activity only when with_sm) under a
 * name unique in the process and watches it on the group. Returns the DCGM status; a field
 * group that cannot be made writes s->reason.
 */
static dcgm_return_t watch(struct source *s, struct dcgm_priv *p, bool with_sm, int64_t interval_ns)
{
    if (p->fg_made) {
        p->api.fg_destroy(p->h, p->fg);
        p->fg_made = false;
    }
    unsigned short ids[F_COUNT];
    int n = 0;
    for (int f = 0; f < F_COUNT; f++)
        if (with_sm || f != F_SM_ACTIVE)
            ids[n++] = dcgm_fields[f];
    char name[64];
    snprintf(name, sizeof name, "carma-%ld-%u", (long)getpid(), dcgm_fg_serial++);
    dcgm_return_t r = p->api.fg_create(p->h, n, ids, name, &p->fg);
    if (r != DCGM_ST_OK) {
        fail(s, p, r, "dcgmFieldGroupCreate failed", NULL);
        return r;
    }
    p->fg_made = true;
    /* refreshed at the sampler's period (100 ms when unknown, 1 ms at the least), kept 10 s:
     * each tick then finds one refresh of the energy counter, not several at once (a counter
     * refreshed every 100 ms read every 10 ms would step ten ticks' energy into one) */
    long long us = interval_ns > 0 ? interval_ns / 1000 : 100000;
    if (us < 1000)
        us = 1000;
    return p->api.watch(p->h, p->group, p->fg, us, 10.0, 0);
}

/*
 * Loads DCGM, starts the embedded engine and appends the channels of the CPU sockets and GPUs
 * that read. Returns the number of channels; -ENOENT when the library is not found or DCGM
 * has no CPU entity nor GPU that reads; -EINVAL when the library lacks a call; -EACCES or
 * -EIO when DCGM fails otherwise. s->reason says why, s->note what the user should know.
 */
static int dcgm_probe(struct source *s, struct probe_ctx *ctx)
{
    int ret;
    dcgm_return_t r;
    s->priv = NULL;
    s->first = ctx->set->n;
    s->count = 0;
    s->reason[0] = '\0';
    s->note[0] = '\0';

    const char *named = NULL;
    ret = dynlib_choose(s, ctx, "DCGM", "CARMA_DCGM_LIBRARY", &named);
    if (ret < 0)
        return ret;

    struct dcgm_priv *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(s->reason, sizeof s->reason, "out of memory");
        return -ENOMEM;
    }
    s->priv = p;
    const char *libname = NULL;
    ret = dynlib_open(s, named, dcgm_default_libraries, DCGM_DEFAULT_LIBRARIES,
                      "CARMA_DCGM_LIBRARY names a file that is not there",
                      "libdcgm.so.4 (nor .so.3, .so) not found: DCGM is not installed (install "
                      "NVIDIA's datacenter-gpu-manager package, or set CARMA_DCGM_LIBRARY to the "
                      "library's path)",
                      &p->lib, &libname);
    if (ret < 0)
        goto out;
    ret = resolve(s, p, libname);
    if (ret < 0)
        goto out;

    r = p->api.init();
    if (r != DCGM_ST_OK) {
        ret = fail(s, p, r, "dcgmInit failed", NULL);
        goto out;
    }
    p->initialized = true;
    if (ctx->dcgm_host) {
        r = p->api.connect(ctx->dcgm_host, &p->h);
        if (r != DCGM_ST_OK) {
            char what[320];
            snprintf(what, sizeof what, "cannot connect to nv-hostengine at %s", ctx->dcgm_host);
            ret = fail(s, p, r, what,
                       r == DCGM_ST_VER_MISMATCH
                           ? "the library and the host engine differ in version (use the libdcgm "
                             "of the DCGM that runs nv-hostengine)"
                       : r == DCGM_ST_NO_PERMISSION
                           ? "the host engine refuses this user"
                           : "start it (systemctl start nvidia-dcgm, or nv-hostengine), check HOST "
                             "and PORT (default 5555), or leave --dcgm-host out to use DCGM's "
                             "embedded engine");
            goto out;
        }
        p->connected = true;
    } else {
        r = p->api.start_embedded(DCGM_OPERATION_MODE_AUTO, &p->h);
        if (r != DCGM_ST_OK) {
            ret = fail(s, p, r, "the embedded DCGM engine refused to start",
                       r == DCGM_ST_NO_PERMISSION
                           ? "run as root, or give the user access to the NVIDIA devices, or read "
                             "through a running nv-hostengine (--dcgm-host 127.0.0.1)"
                       : r == DCGM_ST_VER_MISMATCH
                           ? "the library and the driver differ in version"
                           : "check that the NVIDIA driver is loaded and that DCGM is installed "
                             "completely (its modules beside the library), or read through a "
                             "running nv-hostengine (--dcgm-host 127.0.0.1)");
            goto out;
        }
        p->started = true;
    }

    r = list_entities(s, p, DCGM_FE_CPU, DCGM_SRC_CPUS_MAX, 0);
    size_t ncpu = p->n;
    if (r == DCGM_ST_MODULE_NOT_LOADED || (r == DCGM_ST_OK && ncpu == 0))
        note_add(s->note, sizeof s->note,
                 "no CPU entity: DCGM's sysmon module is not loaded (not a Grace machine, or a "
                 "CPU that is not NVIDIA's)");
    else if (r != DCGM_ST_OK)
        note_add(s->note, sizeof s->note, "CPU entities not listed: %s (DCGM error %d)",
                 error_text(p, r), r);
    r = list_entities(s, p, DCGM_FE_GPU, DCGM_SRC_GPUS_MAX, DCGM_GEGE_FLAG_ONLY_SUPPORTED);
    if (r != DCGM_ST_OK)
        note_add(s->note, sizeof s->note, "GPUs not listed: %s (DCGM error %d)", error_text(p, r),
                 r);
    if (p->n == 0) {
        snprintf(s->reason, sizeof s->reason, "DCGM sees no CPU entity and no GPU: %s", s->note);
        s->note[0] = '\0';
        ret = -ENOENT;
        goto out;
    }

    char name[64];
    snprintf(name, sizeof name, "carma-%ld-%u", (long)getpid(), dcgm_fg_serial++);
    r = p->api.group_create(p->h, DCGM_GROUP_EMPTY, name, &p->group);
    if (r != DCGM_ST_OK) {
        ret = fail(s, p, r, "dcgmGroupCreate failed", NULL);
        goto out;
    }
    p->group_made = true;
    for (size_t i = 0; i < p->n; i++) {
        p->pairs[i] = p->ent[i].id;
        r = p->api.group_add(p->h, p->group, (int)p->ent[i].id.entity_group_id,
                             p->ent[i].id.entity_id);
        if (r != DCGM_ST_OK) {
            char what[64];
            snprintf(what, sizeof what, "dcgmGroupAddEntity(%s %u) failed",
                     p->ent[i].id.entity_group_id == DCGM_FE_CPU ? "CPU" : "GPU",
                     p->ent[i].id.entity_id);
            ret = fail(s, p, r, what, NULL);
            goto out;
        }
    }
    r = watch(s, p, true, ctx->interval_ns);
    if (r == DCGM_ST_PROFILING_NOT_SUPPORTED || r == DCGM_ST_IN_USE ||
        r == DCGM_ST_MODULE_NOT_LOADED || r == DCGM_ST_NOT_SUPPORTED) {
        /* SM activity is a profiling field: without profiling (or with another client holding
         * it, such as dcgm-exporter's DCP) the whole watch is refused; watched again without */
        note_add(s->note, sizeof s->note,
                 "SM activity (field 1002) is not read: %s (DCGM error %d; profiling is off on "
                 "these GPUs, or another DCGM client holds it)",
                 error_text(p, r), r);
        r = watch(s, p, false, ctx->interval_ns);
    }
    if (r != DCGM_ST_OK) {
        ret = s->reason[0]
                  ? -EIO
                  : fail(s, p, r, "dcgmWatchFields failed",
                         r == DCGM_ST_NO_PERMISSION ? "run as root to watch these fields" : NULL);
        goto out;
    }
    p->values = calloc(p->n * F_COUNT, sizeof *p->values);
    if (!p->values) {
        snprintf(s->reason, sizeof s->reason, "out of memory");
        ret = -ENOMEM;
        goto out;
    }
    p->nfields = F_COUNT; /* the UUIDs too, once */
    r = sample(p, 1);
    p->nfields = F_TICK;
    if (r != DCGM_ST_OK) {
        ret = fail(s, p, r, "dcgmEntitiesGetLatestValues failed",
                   r == DCGM_ST_VER_MISMATCH
                       ? "this libdcgm does not take dcgmFieldValue_v2 as carma declares it "
                         "(4128 bytes, version word 0x02001020); DCGM 3 or later is needed"
                   : r == DCGM_ST_NO_PERMISSION ? "run as root to read these fields"
                                                : NULL);
        goto out;
    }
    ret = add_channels(s, ctx, p, libname);
    if (ret == -ENOSPC)
        note_add(s->note, sizeof s->note, "the channel set is full: channels left out");
    if (s->count == 0) {
        snprintf(s->reason, sizeof s->reason, DCGM_SRC_NO_READING ": %s",
                 s->note[0] ? s->note : "the channel set is full");
        s->note[0] = '\0';
        ret = -ENOENT;
        goto out;
    }
    ret = (int)s->count;
out:
    if (ret <= 0)
        dcgm_close(s);
    return ret;
}

static void reading_set(struct reading *rd, const struct dcgm_ent *e, int f)
{
    if (e->ok[f]) {
        rd->power_w = e->v[f];
        rd->valid |= READING_POWER;
    } else if (!rd->err) {
        rd->err = e->err[f];
    }
}

static void reading_clear(struct reading *rd)
{
    rd->valid = 0;
    rd->err = 0;
    rd->energy_raw = 0;
    rd->power_w = 0;
}

/* One update and one latest-values call; fills out[0 .. s->count). */
static void dcgm_read(struct source *s, struct reading *out)
{
    struct dcgm_priv *p = s->priv;
    if (!p)
        return;
    sample(p, 0);
    for (size_t i = 0; i < p->n; i++) {
        const struct dcgm_ent *e = &p->ent[i];
        if (e->id.entity_group_id == DCGM_FE_CPU) {
            const size_t ch[3] = {e->ch_main, e->ch_sysio, e->ch_module};
            const int f[3] = {F_CPU_POWER, F_SYSIO, F_MODULE};
            for (int k = 0; k < 3; k++) {
                if (ch[k] == NO_CH)
                    continue;
                reading_clear(&out[ch[k]]);
                reading_set(&out[ch[k]], e, f[k]);
            }
            continue;
        }
        if (e->ch_main == NO_CH)
            continue;
        struct reading *rd = &out[e->ch_main];
        reading_clear(rd);
        if (e->counter) {
            if (e->ok[F_GPU_ENERGY]) {
                rd->energy_raw = (uint64_t)e->v[F_GPU_ENERGY];
                rd->valid |= READING_ENERGY;
            } else {
                rd->err = e->err[F_GPU_ENERGY];
            }
        }
        reading_set(rd, e, F_GPU_POWER);
    }
}

int dcgm_source_cpu_util(const struct source *s, unsigned socket, struct dcgm_cpu_util *ret)
{
    if (!s || s->ops != &dcgm_source_ops || s->status != 0 || !s->priv || !ret)
        return -EINVAL;
    const struct dcgm_priv *p = s->priv;
    for (size_t i = 0; i < p->n; i++) {
        const struct dcgm_ent *e = &p->ent[i];
        if (e->id.entity_group_id != DCGM_FE_CPU || e->id.entity_id != socket)
            continue;
        double v[5];
        bool any = false;
        for (int k = 0; k < 5; k++) {
            v[k] = e->ok[F_UTIL_TOTAL + k] ? e->v[F_UTIL_TOTAL + k] : NAN;
            any = any || e->ok[F_UTIL_TOTAL + k];
        }
        if (!any)
            return -ENODATA;
        *ret = (struct dcgm_cpu_util){v[0], v[1], v[2], v[3], v[4]};
        return 0;
    }
    return -EINVAL;
}

size_t dcgm_source_cpu_ids(const struct source *s, unsigned *ids, size_t cap)
{
    if (!s || s->ops != &dcgm_source_ops || s->status != 0 || !s->priv)
        return 0;
    const struct dcgm_priv *p = s->priv;
    size_t n = 0;
    for (size_t i = 0; i < p->n && n < cap; i++)
        if (p->ent[i].id.entity_group_id == DCGM_FE_CPU)
            ids[n++] = p->ent[i].id.entity_id;
    return n;
}

const char *dcgm_source_gpu_uuid(const struct source *s, unsigned gpu)
{
    if (!s || s->ops != &dcgm_source_ops || s->status != 0 || !s->priv)
        return NULL;
    const struct dcgm_priv *p = s->priv;
    for (size_t i = 0; i < p->n; i++) {
        const struct dcgm_ent *e = &p->ent[i];
        if (e->id.entity_group_id == DCGM_FE_GPU && e->id.entity_id == gpu && e->ch_main != NO_CH)
            return e->uuid;
    }
    return NULL;
}

int dcgm_source_gpu_util(const struct source *s, unsigned gpu, struct dcgm_gpu_util *ret)
{
    if (!s || s->ops != &dcgm_source_ops || s->status != 0 || !s->priv || !ret)
        return -EINVAL;
    const struct dcgm_priv *p = s->priv;
    for (size_t i = 0; i < p->n; i++) {
        const struct dcgm_ent *e = &p->ent[i];
        if (e->id.entity_group_id != DCGM_FE_GPU || e->id.entity_id != gpu || e->ch_main == NO_CH)
            continue;
        if (!e->ok[F_GPU_UTIL] && !e->ok[F_SM_ACTIVE])
            return -ENODATA;
        ret->gpu_pct = e->ok[F_GPU_UTIL] ? e->v[F_GPU_UTIL] : NAN;
        ret->sm_active = e->ok[F_SM_ACTIVE] ? e->v[F_SM_ACTIVE] : NAN;
        return 0;
    }
    return -EINVAL;
}

const struct source_ops dcgm_source_ops = {
    .name = "dcgm",
    .probe = dcgm_probe,
    .read = dcgm_read,
    .close = dcgm_close,
};
