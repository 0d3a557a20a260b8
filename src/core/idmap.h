/*
 * idmap: a hash index over ids kept elsewhere (open addressing, linear probing).
 *
 * The map holds (hash, id) pairs only: the caller owns the keys, and idmap_find asks the
 * caller's eq whether the key of an id with the right hash is the one looked for. The lookup
 * is inline, as it sits in per-row loops of the CSV readers.
 */
#ifndef CARMA_CORE_IDMAP_H
#define CARMA_CORE_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Slot = (hash, id + 1), 0 empty; capacity 0 or a power of two, at most half full. An all-zero
 * struct is an empty map. */
struct idmap {
    uint64_t *h;
    size_t *id1;
    size_t cap, n;
};

/* A 64-bit finalizer (splitmix64's): every input bit moves every output bit. */
static inline uint64_t idmap_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* The hash of a NUL-terminated string (FNV-1a, mixed). */
static inline uint64_t idmap_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return idmap_mix64(h);
}

/* Calls eq(ctx, id, key) for each id with hash h until it says yes: that id, or SIZE_MAX. */
static inline size_t idmap_find(const struct idmap *m, uint64_t h,
                                bool (*eq)(const void *ctx, size_t id, const void *key),
                                const void *ctx, const void *key)
{
    if (m->cap == 0)
        return SIZE_MAX;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->id1[i] == 0)
            return SIZE_MAX;
        if (m->h[i] == h && eq(ctx, m->id1[i] - 1, key))
            return m->id1[i] - 1;
    }
}

/* Adds id under hash h (the caller has checked it is not there). 0, or -ENOMEM (the map as it
 * was). */
int idmap_put(struct idmap *m, uint64_t h, size_t id);

/* Frees the map and leaves it empty. */
void idmap_free(struct idmap *m);

#endif
