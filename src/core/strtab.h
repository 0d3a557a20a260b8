/*
 * strtab: a string table, each distinct name given an id in order of first appearance (0, 1,
 * ...), found again through a core/idmap index.
 */
#ifndef CARMA_CORE_STRTAB_H
#define CARMA_CORE_STRTAB_H

#include <stdbool.h>
#include <stddef.h>

#include "core/idmap.h"

/* names[id] are the table's own copies. An all-zero struct is an empty table. */
struct strtab {
    char **names;
    size_t n, cap;
    struct idmap map;
};

/* The id of s, added (copied) when new (*ret_new, may be NULL, says so). 0 or -ENOMEM (the
 * table as it was). */
int strtab_id(struct strtab *t, const char *s, size_t *ret, bool *ret_new);

/* The id of s, or SIZE_MAX when the table does not hold it. */
size_t strtab_find(const struct strtab *t, const char *s);

/* Frees the names and the index and leaves the table empty. */
void strtab_free(struct strtab *t);

#endif
