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
