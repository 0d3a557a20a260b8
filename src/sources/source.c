/* source: the table of sources and the helpers every source uses. */
#include "sources/source.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define SOURCE(n) extern const struct source_ops n##_source_ops;
#include "sources/sources.def"
#undef SOURCE

const struct source_ops *const source_table[] = {
#define SOURCE(n) &n##_source_ops,
#include "sources/sources.def"
#undef SOURCE
};
const size_t source_table_len = sizeof source_table / sizeof source_table[0];

const struct source_ops *source_find(const char *name)
{
    for (size_t i = 0; i < source_table_len; i++)
        if (strcmp(source_table[i]->name, name) == 0)
            return source_table[i];
    return NULL;
}

const char *channel_kind_name(enum channel_kind k)
{
    static const char *const names[] = {"cpu", "dram", "soc", "gpu", "system", "other"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "other";
}

const char *channel_method_name(enum channel_method m)
{
    return m == METHOD_ESTIMATED ? "estimated" : "measured";
}

const char *channel_domain_name(enum channel_domain d)
{
    return d == DOMAIN_COMPONENT ? "component" : "total";
}

int channel_kind_parse(const char *name)
{
    for (int k = KIND_CPU; k <= KIND_OTHER; k++)
        if (strcmp(name, channel_kind_name((enum channel_kind)k)) == 0)
            return k;
    return -1;
}

double channel_kind_power_max_w(enum channel_kind kind, bool meter)
{
    if (meter)
        return CHANNEL_METER_MAX_W;
    switch (kind) {
    case KIND_CPU:
    case KIND_SOC:
        return CHANNEL_CPU_MAX_W;
    case KIND_DRAM:
        return CHANNEL_DRAM_MAX_W;
    case KIND_GPU:
        return CHANNEL_GPU_MAX_W;
    case KIND_SYSTEM:
    case KIND_OTHER:
        break;
    }
    return CHANNEL_SYSTEM_MAX_W;
}

double channel_power_max_w(const struct channel *c)
{
    return channel_kind_power_max_w(c->kind, channel_is_meter(c));
}

int channel_set_add(struct channel_set *set)
{
    if (set->n >= CHANNELS_MAX)
        return -ENOSPC;
    struct channel *c = &set->ch[set->n];
    memset(c, 0, sizeof *c);
    c->socket = -1;
    c->parent = -1;
    c->idle_w = NAN;
    return (int)set->n++;
}
