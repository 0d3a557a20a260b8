/*
 * parse: strict number parsing for sensor files, command-line options and data tables.
 *
 * Every parser accepts surrounding ASCII whitespace (sysfs values end in '\n') and nothing
 * else: an empty string, trailing garbage, a sign where none is allowed, a non-finite value or
 * an overflow is an error. They return 0 and write *ret only on success, else -EINVAL
 * (not a number) or -ERANGE (a number that does not fit).
 */
#ifndef CARMA_CORE_PARSE_H
#define CARMA_CORE_PARSE_H

#include <stdint.h>

/* Unsigned decimal integer; a leading '+' or '-' is rejected. */
int parse_u64(const char *s, uint64_t *ret);

/* Signed decimal integer. */
int parse_i64(const char *s, int64_t *ret);

/* Finite decimal floating point number (strtod syntax, C locale; no "inf" or "nan"). */
int parse_double(const char *s, double *ret);

/*
 * A duration such as "100ms", "1s", "250us", "1.5s", "2m", "500ns" into nanoseconds.
 * A unit is required (a bare "100" is rejected: it is ambiguous). Negative, zero and
 * non-finite durations are rejected with -EINVAL; over a day with -ERANGE.
 */
int parse_duration_ns(const char *s, int64_t *ret);

#endif
