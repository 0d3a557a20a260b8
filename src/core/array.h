/*
 * array: the one grower of malloc'ed arrays (count + capacity) that the readers share.
 */
#ifndef CARMA_CORE_ARRAY_H
#define CARMA_CORE_ARRAY_H

#include <stddef.h>

/*
 * Makes room for need elements of size bytes in the malloc'ed array *(void **)pp of *cap
 * elements, doubling (from 8) until it fits; *pp and *cap change only on success. Returns 0,
 * or -ENOMEM (out of memory, or a size past SIZE_MAX).
 */
int array_grow(void *pp, size_t *cap, size_t need, size_t size);

#endif
