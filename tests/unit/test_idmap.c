/*
 * Unit tests for core/idmap: ids found by hash and the caller's key test, colliding hashes
 * told apart, growth past the first capacity, the hashes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>

#include "core/idmap.h"

#define KEYS 1000

static long keys[KEYS];

static bool key_eq(const void *ctx, size_t id, const void *key)
{
    const long *k = ctx;
    return k[id] == *(const long *)key;
}

static void test_put_find(void **state)
{
    (void)state;
    struct idmap m = {0};
    long absent = -1;
    assert_int_equal(idmap_find(&m, 0, key_eq, keys, &absent), SIZE_MAX);
    for (size_t i = 0; i < KEYS; i++) {
        keys[i] = (long)(i * 7919);
        /* every 10th key shares one hash: the key test tells them apart */
        uint64_t h = i % 10 == 0 ? 42 : idmap_mix64((uint64_t)keys[i]);
        assert_int_equal(idmap_put(&m, h, i), 0);
    }
    assert_int_equal(m.n, KEYS);
    assert_true(m.cap >= 2 * KEYS && (m.cap & (m.cap - 1)) == 0);
    for (size_t i = 0; i < KEYS; i++) {
        uint64_t h = i % 10 == 0 ? 42 : idmap_mix64((uint64_t)keys[i]);
        assert_int_equal(idmap_find(&m, h, key_eq, keys, &keys[i]), i);
    }
    long other = 5;
    assert_int_equal(idmap_find(&m, 42, key_eq, keys, &other), SIZE_MAX);
    idmap_free(&m);
    assert_int_equal(m.cap, 0);
    assert_int_equal(idmap_find(&m, 42, key_eq, keys, &keys[0]), SIZE_MAX);
    idmap_free(&m); /* again: an empty map */
}

static void test_hashes(void **state)
{
    (void)state;
    assert_int_equal(idmap_mix64(0), 0);
    assert_true(idmap_mix64(1) != idmap_mix64(2));
    assert_true(idmap_hash_str("a") != idmap_hash_str("b"));
    assert_true(idmap_hash_str("node-1") == idmap_hash_str("node-1"));
    assert_true(idmap_hash_str("") == idmap_mix64(1469598103934665603ULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_find),
        cmocka_unit_test(test_hashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
