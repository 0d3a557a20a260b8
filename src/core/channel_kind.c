/* channel_kind: the kinds of device a channel measures and their names (see channel_kind.h). */
#include "core/channel_kind.h"

#include <string.h>

static const char *const names[CHANNEL_KINDS] = {"cpu", "dram", "soc", "gpu", "system", "other"};

_Static_assert(KIND_OTHER + 1 == CHANNEL_KINDS, "CHANNEL_KINDS counts enum channel_kind");

const char *channel_kind_name(enum channel_kind k)
{
    return (unsigned)k < CHANNEL_KINDS ? names[k] : "other";
}

int channel_kind_parse(const char *name)
{
    for (int k = KIND_CPU; k < CHANNEL_KINDS; k++)
        if (strcmp(name, names[k]) == 0)
            return k;
    return -1;
}
