/*
 * jsonutil: the small jansson helpers every reader and writer of carma's JSON files needs.
 *
 * jansson has no NaN (json_real(NAN) is NULL), so a number that is not finite is written as
 * null, and a number that is absent, null or not a number reads as NAN.
 */
#ifndef CARMA_CORE_JSONUTIL_H
#define CARMA_CORE_JSONUTIL_H

#include <jansson.h>

/* The flags of every JSON file and document carma writes: 2-space indent, keys in the order
 * they were set, reals to 16 significant digits. */
#define JSONUTIL_DUMP_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16))

/* Writes j to path with JSONUTIL_DUMP_FLAGS and a final newline, atomically (core/file:
 * file_replace: temp file, fsync, rename). Returns 0 or a negative errno. */
int jsonutil_write_file(const json_t *j, const char *path);

/* A new JSON real, or null when x is not finite (NULL only when out of memory). */
json_t *jsonutil_real(double x);

/* A new JSON string of s, or null when s is NULL (NULL when out of memory or not UTF-8). */
json_t *jsonutil_str(const char *s);

/* Sets key of obj to jsonutil_real(v). */
void jsonutil_set_num(json_t *obj, const char *key, double v);

/* The value of v as a double, NAN when v is NULL or not a number. */
double jsonutil_num(const json_t *v);

/* The number at key of object o (o may be NULL or not an object), NAN when absent or not a
 * number. */
double jsonutil_get_num(const json_t *o, const char *key);

/* The string at key of object o, NULL when absent or not a string (o's, not a copy). */
const char *jsonutil_get_str(const json_t *o, const char *key);

#endif
