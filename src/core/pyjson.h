/*
 * pyjson: JSON text and numbers exactly as Python prints them, for the outputs that srt-slurm's
 * users compare byte for byte (`carma report`'s JSON is json.dumps(..., indent=2) of the same
 * values; its text table uses str.format specs).
 *
 *   pyjson_dumps      a jansson tree as Python's json.dumps(v, indent=N) (N >= 0) or
 *                     json.dumps(v) (N < 0: one line, separators ", " and ": "); keys in the
 *                     object's insertion order, ensure_ascii (non-ASCII as \uXXXX, surrogate
 *                     pairs above U+FFFF), integers as integers, reals as repr(float) (shortest
 *                     round-trip digits; "1.0", "1e-05", "1e+16", "NaN", "Infinity").
 *   pyjson_repr       repr(float) of one double.
 *   pyjson_format     str.format of one double with a spec of the form [+][,].<P>f
 *                     ("{:,.2f}", "{:.3f}", "{:+.2f}", "{:,.0f}", "{:.4f}").
 */
#ifndef CARMA_CORE_PYJSON_H
#define CARMA_CORE_PYJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Enough for any repr(float) or pyjson_format of a double with up to 20 decimals, and its NUL. */
#define PYJSON_NUM_MAX 448

/* repr(x) into buf (PYJSON_NUM_MAX bytes). Returns the length written (without the NUL). */
size_t pyjson_repr(double x, char *buf);

/*
 * format(x, spec) for spec = [+][,].<decimals>f into buf (PYJSON_NUM_MAX bytes): plus adds '+'
 * to non-negative numbers, commas groups the integer digits by three with ','. Correctly
 * rounded (half to even on exact ties), as Python's. "nan", "inf", "-inf" as Python prints
 * them. decimals 0..20. Returns the length written.
 */
size_t pyjson_format(double x, int decimals, bool commas, bool plus, char *buf);

/*
 * The JSON text of v as Python's json.dumps (see above), malloc'ed and NUL-terminated, without
 * a final newline; the caller frees it. NULL when out of memory, when v is NULL, or when a
 * container holds itself (Python: "Circular reference detected"). Any depth is fine (no
 * recursion). A jansson real is always finite (json_real(NAN) is NULL), so "NaN" and
 * "Infinity" cannot come out of a tree; a string byte that is not UTF-8 is written as \ufffd.
 */
char *pyjson_dumps(const json_t *v, int indent);

#endif
