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

#include <stddef.h>
#include <stdint.h>

/*
 * The run of ASCII digits at p as an unsigned 64-bit number: *ret and the byte after the run
 * (p itself, *ret 0, when p is not at a digit), or NULL when the number does not fit. For the
 * sampling path's loops over proc/stat and /proc/PID/stat: the first 19 digits always fit and
 * are taken without a check, so a digit costs a load, a compare and a multiply-add.
 */
static inline const char *parse_digits_u64(const char *p, uint64_t *ret)
{
    uint64_t v = 0;
    unsigned d;
    for (int left = 19; left > 0 && (d = (unsigned)(unsigned char)*p - '0') <= 9; left--) {
        v = v * 10 + d;
        p++;
    }
    for (; (d = (unsigned)(unsigned char)*p - '0') <= 9; p++) {
        if (v > (UINT64_MAX - d) / 10)
            return NULL;
        v = v * 10 + d;
    }
    *ret = v;
    return p;
}

/* Unsigned decimal integer; a leading '+' or '-' is rejected. */
int parse_u64(const char *s, uint64_t *ret);

/* The same, fitting an unsigned int (-ERANGE above UINT_MAX): an index such as a GPU's or a
 * socket's in a label. */
int parse_uint(const char *s, unsigned *ret);

/* Signed decimal integer. */
int parse_i64(const char *s, int64_t *ret);

/* Finite decimal floating point number (strtod syntax, C locale; no "inf" or "nan"). */
int parse_double(const char *s, double *ret);

/*
 * A duration, with one rule for every option and experiment field: a plain number is seconds
 * ("1.5" is 1.5 s, "0.1" is 100 ms), or a number followed directly by a unit: ns, us (or µs),
 * ms, s, m or h ("100ms", "2s", "1m"). Units are case-sensitive. Zero, negative and non-finite
 * durations are rejected with -EINVAL (so is one that rounds to 0 ns); over a day with -ERANGE.
 */
int parse_duration_ns(const char *s, int64_t *ret);

/*
 * The same rule, where 0 is allowed when min_ns is 0: -EINVAL when s is not a duration,
 * -ERANGE when it lies outside [min_ns, max_ns].
 */
int parse_duration_range_ns(const char *s, int64_t min_ns, int64_t max_ns, int64_t *ret);

/*
 * Writes the rule for a message into buf: "a duration from 1ms to 60s: a plain number is
 * seconds (1.5 = 1.5 s), or give a unit: ns, us, ms, s, m or h (e.g. 100ms, 2s, 1m)".
 * Returns the length snprintf would write.
 */
size_t parse_duration_rule(char *buf, size_t cap, int64_t min_ns, int64_t max_ns);

/* The offset of the first byte of s[0, n) that is not part of well-formed UTF-8 (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or n when there is none. */
size_t parse_utf8_bad_at(const char *s, size_t n);

#endif
