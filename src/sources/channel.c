/*
 * channel: the names of a channel's method and domain (its kind's: core/channel_kind), and the
 * bounds of what a sensor of each kind can draw. Apart from the source table (source.c) so that
 * the readers of a run directory (rundir/) and the fuzz harnesses link these without every
 * source.
 */
#include "sources/source.h"

const char *channel_method_name(enum channel_method m)
{
    return m == METHOD_ESTIMATED ? "estimated" : "measured";
}

const char *channel_domain_name(enum channel_domain d)
{
    return d == DOMAIN_COMPONENT ? "component" : "total";
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
