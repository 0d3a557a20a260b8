/* strtab: names to ids in order of first appearance (see strtab.h). */
#include "core/strtab.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"

static bool name_eq(const void *ctx, size_t id, const void *key)
{
    const struct strtab *t = ctx;
    return strcmp(t->names[id], key) == 0;
}

size_t strtab_find(const struct strtab *t, const char *s)
{
    return idmap_find(&t->map, idmap_hash_str(s), name_eq, t, s);
}

int strtab_id(struct strtab *t, const char *s, size_t *ret, bool *ret_new)
{
    uint64_t h = idmap_hash_str(s);
    size_t id = idmap_find(&t->map, h, name_eq, t, s);
    if (ret_new)
        *ret_new = id == SIZE_MAX;
    if (id != SIZE_MAX) {
        *ret = id;
        return 0;
    }
    if (array_grow(&t->names, &t->cap, t->n + 1, sizeof *t->names) < 0)
        return -ENOMEM;
    char *copy = strdup(s);
    if (!copy)
        return -ENOMEM;
    if (idmap_put(&t->map, h, t->n) < 0) {
        free(copy);
        return -ENOMEM;
    }
    t->names[t->n] = copy;
    *ret = t->n++;
    return 0;
}

void strtab_free(struct strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    idmap_free(&t->map);
    memset(t, 0, sizeof *t);
}
