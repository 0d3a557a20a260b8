/*
 * alloccount: counts the malloc, calloc and realloc calls of a unit test program (linked only
 * into the programs that check a steady state allocates nothing: tests/meson.build). Not under
 * AddressSanitizer, which owns malloc: there ALLOC_COUNT_AVAILABLE is 0 and the tests skip.
 */
#ifndef CARMA_TESTS_ALLOCCOUNT_H
#define CARMA_TESTS_ALLOCCOUNT_H

#if defined(__SANITIZE_ADDRESS__)
#define ALLOC_COUNT_AVAILABLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALLOC_COUNT_AVAILABLE 0
#endif
#endif
#ifndef ALLOC_COUNT_AVAILABLE
#define ALLOC_COUNT_AVAILABLE 1
#endif

/* Starts counting from 0. */
void alloc_count_start(void);

/* Stops counting; returns the allocations since alloc_count_start. */
int alloc_count_stop(void);

#endif
