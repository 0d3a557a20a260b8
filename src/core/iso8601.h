/*
 * iso8601: reading ISO 8601 date-times as Unix seconds, and writing one in UTC.
 *
 * One field scanner (YYYY-MM-DD, HH[:MM[:SS[(.|,)digits]]], a ±HH[[:]MM] offset) and one
 * proleptic Gregorian day count serve two entry points, which differ on purpose:
 *   - iso8601_parse_aware, for carma's own inputs (the intensity file): a time of at least
 *     HH:MM after 'T', 't' or a space, and a UTC offset (Z, z, ±HH:MM, ±HHMM or ±HH) always;
 *     the fraction is kept to the nanosecond; a failure says why.
 *   - iso8601_parse_fromisoformat, for srt-slurm's stamps: what Python's
 *     datetime.fromisoformat(s).astimezone().timestamp() does: a date alone (midnight), any one
 *     character before the time, HH alone, an offset Z, ±HH[MM] or ±HH:MM[:SS[.ffffff]], and a
 *     naive stamp in this host's local time; the fraction is kept to the microsecond and a
 *     year 0000 is refused.
 */
#ifndef CARMA_CORE_ISO8601_H
#define CARMA_CORE_ISO8601_H

#include <stddef.h>

/*
 * Parses YYYY-MM-DD(T|t| )HH:MM[:SS[(.|,)digits]](Z|z|±HH:MM|±HHMM|±HH), the whole string
 * (digits past the ninth of a fraction are read and dropped). Returns 0 and the Unix time in
 * *ret, or -EINVAL with *why set to a phrase that follows the text in a message ("is not a
 * valid date and time", "has no UTC offset (add Z or +HH:MM)", ...).
 */
int iso8601_parse_aware(const char *s, double *ret, const char **why);

/*
 * Parses an ISO 8601 date-time as Python's datetime.fromisoformat(s).astimezone().timestamp()
 * does (naive: local time of this host, an ambiguous or missing time resolved as CPython does
 * for fold=0). Returns 0 and *ret, or -EINVAL.
 */
int iso8601_parse_fromisoformat(const char *s, double *ret);

/*
 * Formats Unix time t (rounded down to the second) as UTC ISO 8601, "2026-11-30T08:00:00Z";
 * a time gmtime cannot show is written as the number (%.17g).
 */
void iso8601_format_utc(double t, char *buf, size_t cap);

#endif
