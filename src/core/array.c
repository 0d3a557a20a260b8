/*
 * array: the one grower of malloc'ed arrays (see array.h).
 */
#include "core/array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int array_grow(void *pp, size_t *cap, size_t need, size_t size)
{
    void **p = pp;
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / size)
            return -ENOMEM;
        nc *= 2;
    }
    void *q = realloc(*p, nc * size);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = nc;
    return 0;
}
