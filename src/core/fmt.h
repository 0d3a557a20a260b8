/*
 * fmt: fast, locale-independent number formatting for the sampling path.
 *
 * samples.csv is written at up to 1 kHz × every channel, so its numbers are printed with
 * integer arithmetic, not printf: fixed point with up to 6 decimals (µW / µJ resolution,
 * finer than any sensor this tool reads), trailing zeros removed, never in exponent form.
 * Elsewhere (summaries, JSON) fmt_double() gives the shortest string that round-trips.
 */
#ifndef CARMA_CORE_FMT_H
#define CARMA_CORE_FMT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Writes v rounded to 1e-6 as printf("%.6f") rounds (the stored binary value decides, exact
 * halves go to even) into buf (cap >= 32), e.g. "150.5", "0.000123", "-3", and
 * returns the length. Non-finite values and |v| >= 9e12 are written as "" (blank cell):
 * callers should not produce them. No allocation, no locale.
 */
size_t fmt_fixed6(char *buf, double v);

/* Writes realtime ns as seconds since the epoch with 6 decimals ("1796032424.837549"),
 * returns the length (cap >= 32). Every timestamp_unix column is written with it. */
size_t fmt_unix_us(char *buf, int64_t real_ns);

/* Writes unsigned v in decimal, returns the length (cap >= 21). */
size_t fmt_u64(char *buf, uint64_t v);

/*
 * Writes the shortest "%.*g" form of v (up to 17 digits) that reads back as v. C locale
 * only (carma never calls setlocale). Returns the length; non-finite → "null" is the
 * caller's business: this writes "nan"/"inf" as printf would.
 */
size_t fmt_double(char *buf, size_t cap, double v);

/*
 * v, or +0.0 when v rounds to zero at dec decimals (a tiny negative, or -0.0): printf would
 * write it "-0.000". Every fixed-point figure a report prints goes through it. NAN and
 * infinities are returned as they are.
 */
double fmt_round_zero(double v, int dec);

/* Appends what printf makes of fmt to the NUL-terminated text in buf (cap bytes in all),
 * truncated to fit; nothing when buf is full. For messages, not the sampling path. */
void fmt_append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void fmt_vappend(char *buf, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
