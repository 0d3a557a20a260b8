/*
 * fake_dcgm: a stand-in for libdcgm.so.4, so that the dcgm source runs on any machine.
 *
 * Exports the DCGM calls carma's dcgm source makes, with DCGM's names, signatures, struct
 * layouts and return codes (src/sources/dcgm.h), and answers them from a scenario file named
 * by $CARMA_FAKE_DCGM_SCENARIO, read at dcgmInit. One statement a line, '#' starts a comment:
 *
 *   cpu N [power V] [sysio V] [module V] [util TOTAL USER NICE SYS IRQ]
 *                            CPU socket N (DCGM_FE_CPU): fields 1130, 1132, 1133 and the
 *                            utilization ratios 1100-1104
 *   gpu N [power V] [energy V] [energy_step MJ] [busy_after U] [busy_step MJ] [util PCT]
 *         [sm RATIO] [lost_after U] [uuid TEXT|none]
 *                            GPU N: fields 155 (W), 156 (mJ), 203 (%), 1002 (ratio), 54
 *                            (UUID: default GPU-fake-N, the fake NVML's default; none: a blank
 *                            string); from the U-th dcgmUpdateAllFields on, every value of the
 *                            GPU has status DCGM_ST_GPU_IS_LOST (the GPU fell off the bus)
 *   profiling no|in_use      watching a field group that holds field 1002 (SM activity, a
 *                            profiling field) is refused: DCGM_ST_PROFILING_NOT_SUPPORTED or
 *                            DCGM_ST_IN_USE (another client holds profiling)
 *   hostengine ADDR          dcgmConnect(ADDR) succeeds (a running nv-hostengine); any other
 *                            address gives DCGM_ST_CONNECTION_NOT_VALID
 *   sysmon no                listing the CPU entities gives DCGM_ST_MODULE_NOT_LOADED
 *   embedded_error CODE      dcgmStartEmbedded returns CODE (e.g. -7 INIT_ERROR)
 *   order given|reverse      the order of the values of dcgmEntitiesGetLatestValues
 *                            (default reverse: never the order asked)
 *
 * A value V is a number, `missing` (status DCGM_ST_BADPARAM with 0.0, as DCGM answers for a
 * sensor that is not there) or `blank` (status OK, the blank sentinel of its type). A field
 * not given is missing. The energy counter reads energy + energy_step x (the number of
 * dcgmUpdateAllFields calls since dcgmInit), so that tests know every value exactly; with
 * busy_after U, the updates after the U-th add busy_step each instead (a GPU busier from then
 * on: above a baseline measured before, for carma run's split).
 *
 * DCGM's rules that the fake enforces: values are only there for watched fields of entities in
 * a watched group (else DCGM_ST_NOT_WATCHED per value); the first latest-values call after a
 * watch has no utilization value yet (DCGM_ST_NO_DATA per value); the LIVE_DATA flag gives
 * DCGM_ST_FIELD_UNSUPPORTED_BY_API for every value of a CPU entity; field-group names are
 * unique (DCGM_ST_DUPLICATE_KEY); a listing buffer too small gives DCGM_ST_INSUFFICIENT_SIZE
 * with the count needed; a value array whose version word is wrong gives DCGM_ST_VER_MISMATCH.
 * A GPU field of a CPU entity, or a CPU field of a GPU, reads blank+2 (not supported).
 *
 * Built twice: libdcgm.so.4 (with the link libdcgm.so), and libfake-dcgm-nosym.so
 * (-DFAKE_OMIT_LATEST) without dcgmEntitiesGetLatestValues, for the "call missing" case.
 */
#include "sources/dcgm.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_ENTS_MAX   16
#define FAKE_GROUPS_MAX 16
#define FAKE_NAMES_MAX  16

/* A field's scenario value. */
enum fake_kind { FV_MISSING, FV_NUMBER, FV_BLANK };
struct fake_value {
    enum fake_kind kind;
    double v;
};

struct fake_cpu {
    bool present;
    struct fake_value power, sysio, module;
    bool has_util;
    double util[5];
};

struct fake_gpu {
    bool present;
    struct fake_value power, energy, util, sm;
    double energy_step;
    unsigned long busy_after; /* 0: never */
    double busy_step;
    unsigned long lost_after; /* 0: never */
    char uuid[96];            /* "" : none */
};

struct fake_group {
    bool used, watched;
    size_t n;
    struct dcgm_entity_pair ent[2 * FAKE_ENTS_MAX];
};

static struct {
    bool inited, started, connected;
    char hostengine[256];
    int profiling_error; /* 0: profiling fields can be watched */
    int embedded_error;
    bool no_sysmon;
    bool reverse;
    struct fake_cpu cpu[FAKE_ENTS_MAX];
    struct fake_gpu gpu[FAKE_ENTS_MAX];
    unsigned long updates;
    unsigned reads_since_watch;
    bool watched_field[2048];
    struct fake_group group[FAKE_GROUPS_MAX];
    char fg_name[FAKE_NAMES_MAX][64];
    size_t nfg;
} fake;

/* The exported calls (DCGM's prototypes, dcgm_agent.h, with carma's names for its types). */
dcgm_return_t dcgmInit(void);
dcgm_return_t dcgmShutdown(void);
dcgm_return_t dcgmStartEmbedded(int op_mode, dcgm_handle_t *handle);
dcgm_return_t dcgmStopEmbedded(dcgm_handle_t handle);
dcgm_return_t dcgmConnect(const char *address, dcgm_handle_t *handle);
dcgm_return_t dcgmDisconnect(dcgm_handle_t handle);
dcgm_return_t dcgmGetEntityGroupEntities(dcgm_handle_t handle, int entity_group, uint32_t *entities,
                                         int *count, unsigned int flags);
dcgm_return_t dcgmGroupCreate(dcgm_handle_t handle, int type, const char *name,
                              dcgm_gpu_grp_t *group);
dcgm_return_t dcgmGroupAddEntity(dcgm_handle_t handle, dcgm_gpu_grp_t group, int entity_group,
                                 uint32_t entity_id);
dcgm_return_t dcgmGroupDestroy(dcgm_handle_t handle, dcgm_gpu_grp_t group);
dcgm_return_t dcgmFieldGroupCreate(dcgm_handle_t handle, int n, unsigned short *ids,
                                   const char *name, dcgm_field_grp_t *fg);
dcgm_return_t dcgmFieldGroupDestroy(dcgm_handle_t handle, dcgm_field_grp_t fg);
dcgm_return_t dcgmWatchFields(dcgm_handle_t handle, dcgm_gpu_grp_t group, dcgm_field_grp_t fg,
                              long long update_freq_us, double max_keep_age_s,
                              int max_keep_samples);
dcgm_return_t dcgmUpdateAllFields(dcgm_handle_t handle, int wait_for_update);
/* Without it: the same code under a name that is not exported. */
#ifdef FAKE_OMIT_LATEST
#define dcgmEntitiesGetLatestValues fake_latest_not_exported
static __attribute__((unused))
#endif
dcgm_return_t
dcgmEntitiesGetLatestValues(dcgm_handle_t handle, struct dcgm_entity_pair *entities,
                            unsigned int n_entities, unsigned short *fields, unsigned int n_fields,
                            unsigned int flags, struct dcgm_field_value_v2 *values);
const char *errorString(dcgm_return_t r);

/* Field-group ids count from 1 (0 is no group); the watched fields of each are kept. */
static unsigned short fg_fields[FAKE_NAMES_MAX][DCGM_MAX_NUM_FIELDS_PER_GROUP];
static int fg_count[FAKE_NAMES_MAX];

/* Copies the next word of *p into buf and advances *p. Returns 0 at the end of the line. */
static int word(char **p, char *buf, size_t cap)
{
    char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || *s == '\n' || *s == '#')
        return 0;
    size_t n = 0;
    for (; *s && *s != ' ' && *s != '\t' && *s != '\n'; s++)
        if (n + 1 < cap)
            buf[n++] = *s;
    buf[n] = '\0';
    *p = s;
    return 1;
}

static struct fake_value value_of(const char *w)
{
    if (strcmp(w, "missing") == 0)
        return (struct fake_value){.kind = FV_MISSING};
    if (strcmp(w, "blank") == 0)
        return (struct fake_value){.kind = FV_BLANK};
    return (struct fake_value){.kind = FV_NUMBER, .v = strtod(w, NULL)};
}

/* Reads the scenario. Returns 0, or -1 when it cannot be read. */
static int load_scenario(void)
{
    const char *path = getenv("CARMA_FAKE_DCGM_SCENARIO");
    if (!path || !path[0])
        return 0; /* an empty machine */
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512], w[64], v[256];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        if (!word(&p, w, sizeof w))
            continue;
        if (strcmp(w, "sysmon") == 0 && word(&p, v, sizeof v)) {
            fake.no_sysmon = strcmp(v, "no") == 0;
        } else if (strcmp(w, "embedded_error") == 0 && word(&p, v, sizeof v)) {
            fake.embedded_error = atoi(v);
        } else if (strcmp(w, "profiling") == 0 && word(&p, v, sizeof v)) {
            fake.profiling_error = strcmp(v, "in_use") == 0 ? DCGM_ST_IN_USE
                                   : strcmp(v, "no") == 0   ? DCGM_ST_PROFILING_NOT_SUPPORTED
                                                            : 0;
        } else if (strcmp(w, "hostengine") == 0 && word(&p, v, sizeof v)) {
            snprintf(fake.hostengine, sizeof fake.hostengine, "%s", v);
        } else if (strcmp(w, "order") == 0 && word(&p, v, sizeof v)) {
            fake.reverse = strcmp(v, "given") != 0;
        } else if (strcmp(w, "cpu") == 0 && word(&p, v, sizeof v)) {
            unsigned long i = strtoul(v, NULL, 10);
            if (i >= FAKE_ENTS_MAX)
                continue;
            struct fake_cpu *c = &fake.cpu[i];
            c->present = true;
            while (word(&p, w, sizeof w) && word(&p, v, sizeof v)) {
                if (strcmp(w, "power") == 0)
                    c->power = value_of(v);
                else if (strcmp(w, "sysio") == 0)
                    c->sysio = value_of(v);
                else if (strcmp(w, "module") == 0)
                    c->module = value_of(v);
                else if (strcmp(w, "util") == 0) {
                    c->has_util = true;
                    c->util[0] = strtod(v, NULL);
                    for (int k = 1; k < 5 && word(&p, v, sizeof v); k++)
                        c->util[k] = strtod(v, NULL);
                }
            }
        } else if (strcmp(w, "gpu") == 0 && word(&p, v, sizeof v)) {
            unsigned long i = strtoul(v, NULL, 10);
            if (i >= FAKE_ENTS_MAX)
                continue;
            struct fake_gpu *g = &fake.gpu[i];
            g->present = true;
            snprintf(g->uuid, sizeof g->uuid, "GPU-fake-%lu", i);
            while (word(&p, w, sizeof w) && word(&p, v, sizeof v)) {
                if (strcmp(w, "power") == 0)
                    g->power = value_of(v);
                else if (strcmp(w, "energy") == 0)
                    g->energy = value_of(v);
                else if (strcmp(w, "energy_step") == 0)
                    g->energy_step = strtod(v, NULL);
                else if (strcmp(w, "busy_after") == 0)
                    g->busy_after = strtoul(v, NULL, 10);
                else if (strcmp(w, "busy_step") == 0)
                    g->busy_step = strtod(v, NULL);
                else if (strcmp(w, "util") == 0)
                    g->util = value_of(v);
                else if (strcmp(w, "sm") == 0)
                    g->sm = value_of(v);
                else if (strcmp(w, "lost_after") == 0)
                    g->lost_after = strtoul(v, NULL, 10);
                else if (strcmp(w, "uuid") == 0)
                    snprintf(g->uuid, sizeof g->uuid, "%s", strcmp(v, "none") == 0 ? "" : v);
            }
        }
    }
    fclose(f);
    return 0;
}

dcgm_return_t dcgmInit(void)
{
    memset(&fake, 0, sizeof fake);
    memset(fg_count, 0, sizeof fg_count);
    fake.reverse = true;
    if (load_scenario() < 0)
        return DCGM_ST_INIT_ERROR;
    fake.inited = true;
    return DCGM_ST_OK;
}

dcgm_return_t dcgmShutdown(void)
{
    fake.inited = false;
    fake.started = false;
    fake.connected = false;
    return DCGM_ST_OK;
}

dcgm_return_t dcgmStartEmbedded(int op_mode, dcgm_handle_t *handle)
{
    if (!fake.inited)
        return DCGM_ST_UNINITIALIZED;
    if (op_mode != DCGM_OPERATION_MODE_AUTO && op_mode != 2)
        return DCGM_ST_BADPARAM;
    if (fake.embedded_error)
        return fake.embedded_error;
    if (!handle)
        return DCGM_ST_BADPARAM;
    *handle = DCGM_EMBEDDED_HANDLE;
    fake.started = true;
    return DCGM_ST_OK;
}

dcgm_return_t dcgmStopEmbedded(dcgm_handle_t handle)
{
    if (handle != DCGM_EMBEDDED_HANDLE || !fake.started)
        return DCGM_ST_BADPARAM;
    fake.started = false;
    return DCGM_ST_OK;
}

/* The handle of a connection to the (pretended) host engine. */
#define FAKE_REMOTE_HANDLE 0x5555u

dcgm_return_t dcgmConnect(const char *address, dcgm_handle_t *handle)
{
    if (!fake.inited)
        return DCGM_ST_UNINITIALIZED;
    if (!address || !handle)
        return DCGM_ST_BADPARAM;
    if (!fake.hostengine[0] || strcmp(address, fake.hostengine) != 0)
        return DCGM_ST_CONNECTION_NOT_VALID;
    *handle = FAKE_REMOTE_HANDLE;
    fake.connected = true;
    return DCGM_ST_OK;
}

dcgm_return_t dcgmDisconnect(dcgm_handle_t handle)
{
    if (handle != FAKE_REMOTE_HANDLE || !fake.connected)
        return DCGM_ST_BADPARAM;
    fake.connected = false;
    return DCGM_ST_OK;
}

static bool handle_ok(dcgm_handle_t h)
{
    return fake.inited && ((fake.started && h == DCGM_EMBEDDED_HANDLE) ||
                           (fake.connected && h == FAKE_REMOTE_HANDLE));
}

dcgm_return_t dcgmGetEntityGroupEntities(dcgm_handle_t handle, int entity_group, uint32_t *entities,
                                         int *count, unsigned int flags)
{
    (void)flags;
    if (!handle_ok(handle))
        return DCGM_ST_CONNECTION_NOT_VALID;
    if (!count || *count < 0)
        return DCGM_ST_BADPARAM;
    if (entity_group == DCGM_FE_CPU && fake.no_sysmon)
        return DCGM_ST_MODULE_NOT_LOADED;
    int n = 0;
    for (uint32_t i = 0; i < FAKE_ENTS_MAX; i++) {
        bool there = entity_group == DCGM_FE_CPU   ? fake.cpu[i].present
                     : entity_group == DCGM_FE_GPU ? fake.gpu[i].present
                                                   : false;
        if (!there)
            continue;
        if (n < *count && entities)
            entities[n] = i;
        n++;
    }
    bool small = n > *count;
    *count = n;
    return small ? DCGM_ST_INSUFFICIENT_SIZE : DCGM_ST_OK;
}

dcgm_return_t dcgmGroupCreate(dcgm_handle_t handle, int type, const char *name,
                              dcgm_gpu_grp_t *group)
{
    if (!handle_ok(handle))
        return DCGM_ST_CONNECTION_NOT_VALID;
    if (type != DCGM_GROUP_EMPTY || !name || !group)
        return DCGM_ST_BADPARAM; /* the fake knows only empty groups */
    for (size_t i = 0; i < FAKE_GROUPS_MAX; i++) {
        if (!fake.group[i].used) {
            fake.group[i] = (struct fake_group){.used = true};
            *group = i + 1;
            return DCGM_ST_OK;
        }
    }
    return DCGM_ST_MAX_LIMIT;
}

static struct fake_group *group_at(dcgm_gpu_grp_t g)
{
    if (g < 1 || g > FAKE_GROUPS_MAX || !fake.group[g - 1].used)
        return NULL;
    return &fake.group[g - 1];
}

dcgm_return_t dcgmGroupAddEntity(dcgm_handle_t handle, dcgm_gpu_grp_t group, int entity_group,
                                 uint32_t entity_id)
{
    if (!handle_ok(handle))
        return DCGM_ST_CONNECTION_NOT_VALID;
    struct fake_group *g = group_at(group);
    if (!g || entity_id >= FAKE_ENTS_MAX)
        return DCGM_ST_BADPARAM;
    bool there = entity_group == DCGM_FE_CPU   ? fake.cpu[entity_id].present
                 : entity_group == DCGM_FE_GPU ? fake.gpu[entity_id].present
                                               : false;
    if (!there || g->n == sizeof g->ent / sizeof g->ent[0])
        return DCGM_ST_BADPARAM;
    g->ent[g->n++] = (struct dcgm_entity_pair){(uint32_t)entity_group, entity_id};
    return DCGM_ST_OK;
}

dcgm_return_t dcgmGroupDestroy(dcgm_handle_t handle, dcgm_gpu_grp_t group)
{
    if (!handle_ok(handle))
        return DCGM_ST_CONNECTION_NOT_VALID;
    struct fake_group *g = group_at(group);
    if (!g)
        return DCGM_ST_BADPARAM;
    g->used = false;
    return DCGM_ST_OK;
}

dcgm_return_t dcgmFieldGroupCreate(dcgm_handle_t handle, int n, unsigned short *ids,
                                   const char *name, dcgm_field_grp_t *fg)
{
    if (!handle_ok(handle))
        return DCGM_ST_CONNECTION_NOT_VALID;
    if (n < 1 || n > DCGM_MAX_NUM_FIELDS_PER_GROUP || !ids || !name || !fg)
        return DCGM_ST_BADPARAM;
    for (size_t i = 0; i < fake.nfg; i++)
        if (fake.fg_name[i][0] && strcmp(fake.fg_name[i], name) == 0)
            return DCGM_ST_DUPLICATE_KEY;
    if (fake.nfg == FAKE_NAMES_MAX)
        return DCGM_ST_MAX_LIMIT;
    snprintf(fake.fg_name[fake.nfg], sizeof fake.fg_name[0], "%s", name);
    memcpy(fg_fields[fake.nfg], ids, (size_t)n * sizeof ids[0]);
    fg_count[fake.nfg] = n;
    *fg = ++fake.nfg;
    return DCGM_ST_OK;
}

dcgm_return_t dcgmFieldGroupDestroy(dcgm_handle_t handle, dcgm_field_grp_t fg)
{
    if (!handle_ok(handle))
        return DCGM_ST_CONNECTION_NOT_VALID;
    if (fg < 1 || fg > fake.nfg || !fake.fg_name[fg - 1][0])
        return DCGM_ST_BADPARAM;
    fake.fg_name[fg - 1][0] = '\0';
    return DCGM_ST_OK;
}

dcgm_return_t dcgmWatchFields(dcgm_handle_t handle, dcgm_gpu_grp_t group, dcgm_field_grp_t fg,
                              long long update_freq_us, double max_keep_age_s, int max_keep_samples)
{
    (void)max_keep_age_s;
    (void)max_keep_samples;
    if (!handle_ok(handle))
        return DCGM_ST_CONNECTION_NOT_VALID;
    struct fake_group *g = group_at(group);
    if (!g || fg < 1 || fg > fake.nfg || !fake.fg_name[fg - 1][0] || update_freq_us <= 0)
        return DCGM_ST_BADPARAM;
    for (int i = 0; i < fg_count[fg - 1] && fake.profiling_error; i++)
        if (fg_fields[fg - 1][i] == DCGM_FI_PROF_SM_ACTIVE)
            return fake.profiling_error;
    g->watched = true;
    for (int i = 0; i < fg_count[fg - 1]; i++)
        if (fg_fields[fg - 1][i] < sizeof fake.watched_field)
            fake.watched_field[fg_fields[fg - 1][i]] = true;
    fake.reads_since_watch = 0;
    return DCGM_ST_OK;
}

dcgm_return_t dcgmUpdateAllFields(dcgm_handle_t handle, int wait_for_update)
{
    (void)wait_for_update;
    if (!handle_ok(handle))
        return DCGM_ST_CONNECTION_NOT_VALID;
    fake.updates++;
    return DCGM_ST_OK;
}

/* Whether entity e is in a watched group. */
static bool entity_watched(const struct dcgm_entity_pair *e)
{
    for (size_t i = 0; i < FAKE_GROUPS_MAX; i++) {
        const struct fake_group *g = &fake.group[i];
        if (!g->used || !g->watched)
            continue;
        for (size_t k = 0; k < g->n; k++)
            if (g->ent[k].entity_group_id == e->entity_group_id &&
                g->ent[k].entity_id == e->entity_id)
                return true;
    }
    return false;
}

static void put_double(struct dcgm_field_value_v2 *v, const struct fake_value *f)
{
    v->field_type = DCGM_FT_DOUBLE;
    switch (f->kind) {
    case FV_MISSING:
        v->status = DCGM_ST_BADPARAM;
        v->value.dbl = 0.0;
        break;
    case FV_BLANK:
        v->value.dbl = DCGM_FP64_BLANK_VALUE;
        break;
    case FV_NUMBER:
        v->value.dbl = f->v;
        break;
    }
}

/* What GPU g's counter has added since dcgmInit (mJ). */
static double energy_added(const struct fake_gpu *g)
{
    unsigned long u = fake.updates;
    if (!g->busy_after || u <= g->busy_after)
        return g->energy_step * (double)u;
    return g->energy_step * (double)g->busy_after + g->busy_step * (double)(u - g->busy_after);
}

static void put_int(struct dcgm_field_value_v2 *v, const struct fake_value *f, double add)
{
    v->field_type = DCGM_FT_INT64;
    switch (f->kind) {
    case FV_MISSING:
        v->status = DCGM_ST_BADPARAM;
        v->value.i64 = 0;
        break;
    case FV_BLANK:
        v->value.i64 = DCGM_INT64_BLANK_VALUE;
        break;
    case FV_NUMBER:
        v->value.i64 = (int64_t)(f->v + add);
        break;
    }
}

/* Fills v for entity e and field id (v->status starts at OK). */
static void fill(struct dcgm_field_value_v2 *v, const struct dcgm_entity_pair *e, unsigned short id,
                 bool first_read)
{
    bool cpu = e->entity_group_id == DCGM_FE_CPU;
    const struct fake_cpu *c = cpu ? &fake.cpu[e->entity_id] : NULL;
    const struct fake_gpu *g = cpu ? NULL : &fake.gpu[e->entity_id];
    const struct fake_value unsupported = {.kind = FV_NUMBER, .v = 0};
    switch (id) {
    case DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT:
    case DCGM_FI_DEV_SYSIO_POWER_UTIL_CURRENT:
    case DCGM_FI_DEV_MODULE_POWER_UTIL_CURRENT:
        if (!cpu) {
            put_double(v, &unsupported);
            v->value.dbl = DCGM_FP64_BLANK_VALUE + 2;
        } else {
            put_double(v, id == DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT     ? &c->power
                          : id == DCGM_FI_DEV_SYSIO_POWER_UTIL_CURRENT ? &c->sysio
                                                                       : &c->module);
        }
        return;
    case DCGM_FI_DEV_CPU_UTIL_TOTAL:
    case DCGM_FI_DEV_CPU_UTIL_USER:
    case DCGM_FI_DEV_CPU_UTIL_NICE:
    case DCGM_FI_DEV_CPU_UTIL_SYS:
    case DCGM_FI_DEV_CPU_UTIL_IRQ:
        v->field_type = DCGM_FT_DOUBLE;
        if (!cpu || !c->has_util) {
            v->value.dbl = DCGM_FP64_BLANK_VALUE + 2;
        } else if (first_read) {
            v->status = DCGM_ST_NO_DATA;
            v->value.dbl = DCGM_FP64_BLANK_VALUE;
        } else {
            v->value.dbl = c->util[id - DCGM_FI_DEV_CPU_UTIL_TOTAL];
        }
        return;
    case DCGM_FI_DEV_POWER_USAGE:
    case DCGM_FI_PROF_SM_ACTIVE:
        if (cpu) {
            put_double(v, &unsupported);
            v->value.dbl = DCGM_FP64_BLANK_VALUE + 2;
        } else {
            put_double(v, id == DCGM_FI_DEV_POWER_USAGE ? &g->power : &g->sm);
        }
        return;
    case DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
    case DCGM_FI_DEV_GPU_UTIL:
        if (cpu) {
            put_int(v, &unsupported, 0);
            v->value.i64 = DCGM_INT64_BLANK_VALUE + 2;
        } else if (id == DCGM_FI_DEV_GPU_UTIL) {
            put_int(v, &g->util, 0);
        } else {
            put_int(v, &g->energy, energy_added(g));
        }
        return;
    case DCGM_FI_DEV_UUID:
        v->field_type = DCGM_FT_STRING;
        snprintf(v->value.str, sizeof v->value.str, "%s",
                 cpu          ? "<<<NOT_SUPPORTED>>>"
                 : g->uuid[0] ? g->uuid
                              : "<<<NULL>>>");
        return;
    default:
        v->status = DCGM_ST_UNKNOWN_FIELD;
        return;
    }
}

dcgm_return_t dcgmEntitiesGetLatestValues(dcgm_handle_t handle, struct dcgm_entity_pair *entities,
                                          unsigned int n_entities, unsigned short *fields,
                                          unsigned int n_fields, unsigned int flags,
                                          struct dcgm_field_value_v2 *values)
{
    if (!handle_ok(handle))
        return DCGM_ST_CONNECTION_NOT_VALID;
    if (!entities || !fields || !values || n_entities == 0 || n_fields == 0)
        return DCGM_ST_BADPARAM;
    if (values[0].version != DCGM_FIELD_VALUE_VERSION_2)
        return DCGM_ST_VER_MISMATCH;
    bool first_read = fake.reads_since_watch == 0;
    fake.reads_since_watch++;
    unsigned total = n_entities * n_fields;
    for (unsigned k = 0; k < total; k++) {
        unsigned slot = fake.reverse ? total - 1 - k : k;
        const struct dcgm_entity_pair *e = &entities[k / n_fields];
        unsigned short id = fields[k % n_fields];
        struct dcgm_field_value_v2 *v = &values[slot];
        memset(v, 0, offsetof(struct dcgm_field_value_v2, value) + sizeof(double));
        v->version = DCGM_FIELD_VALUE_VERSION_2;
        v->entity_group_id = e->entity_group_id;
        v->entity_id = e->entity_id;
        v->field_id = id;
        v->ts = 1700000000000000LL + (int64_t)fake.updates;
        bool known = e->entity_id < FAKE_ENTS_MAX &&
                     ((e->entity_group_id == DCGM_FE_CPU && fake.cpu[e->entity_id].present) ||
                      (e->entity_group_id == DCGM_FE_GPU && fake.gpu[e->entity_id].present));
        if (!known) {
            v->status = DCGM_ST_BADPARAM;
        } else if (!fake.watched_field[id] || !entity_watched(e)) {
            v->status = DCGM_ST_NOT_WATCHED;
        } else if (e->entity_group_id == DCGM_FE_GPU && fake.gpu[e->entity_id].lost_after &&
                   fake.updates >= fake.gpu[e->entity_id].lost_after) {
            v->status = DCGM_ST_GPU_IS_LOST;
        } else if ((flags & DCGM_FV_FLAG_LIVE_DATA) && e->entity_group_id == DCGM_FE_CPU) {
            v->status = DCGM_ST_FIELD_UNSUPPORTED_BY_API;
        } else {
            fill(v, e, id, first_read);
        }
    }
    return DCGM_ST_OK;
}

const char *errorString(dcgm_return_t r)
{
    switch (r) {
    case DCGM_ST_OK:
        return "Success";
    case DCGM_ST_BADPARAM:
        return "Bad parameter passed to function";
    case DCGM_ST_INIT_ERROR:
        return "DCGM initialization error";
    case DCGM_ST_NO_DATA:
        return "No data is available";
    case DCGM_ST_NOT_WATCHED:
        return "Field is not being updated";
    case DCGM_ST_NO_PERMISSION:
        return "Insufficient permission to complete operation";
    case DCGM_ST_GPU_IS_LOST:
        return "GPU is no longer reachable";
    case DCGM_ST_CONNECTION_NOT_VALID:
        return "The connection to the host engine is not valid any longer";
    case DCGM_ST_DUPLICATE_KEY:
        return "A duplicate key was passed to a function";
    case DCGM_ST_INSUFFICIENT_SIZE:
        return "An input argument is not large enough";
    case DCGM_ST_FIELD_UNSUPPORTED_BY_API:
        return "The requested field is not supported by this API";
    case DCGM_ST_MODULE_NOT_LOADED:
        return "This request is serviced by a module of DCGM that is not currently loaded";
    case DCGM_ST_IN_USE:
        return "The requested operation could not be completed because the affected resource is "
               "in use";
    case DCGM_ST_PROFILING_NOT_SUPPORTED:
        return "Profiling is not supported for this group of GPUs or GPU";
    default:
        return "Unknown error from DCGM";
    }
}
