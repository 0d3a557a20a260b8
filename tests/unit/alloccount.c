/* alloccount: see alloccount.h. */
#include "alloccount.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

static bool counting;
static int allocations;

void alloc_count_start(void)
{
    allocations = 0;
    counting = true;
}

int alloc_count_stop(void)
{
    counting = false;
    return allocations;
}

#if ALLOC_COUNT_AVAILABLE
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n)
{
    if (counting)
        allocations++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (counting)
        allocations++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (counting)
        allocations++;
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}
#endif
