/*
 * timeutil: carma's one time type, int64 nanoseconds.
 *
 * Monotonic time measures intervals (integration, scheduling); realtime stamps records.
 * The two are never mixed in one computation.
 */
#ifndef CARMA_CORE_TIMEUTIL_H
#define CARMA_CORE_TIMEUTIL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define NS_PER_S  1000000000LL
#define NS_PER_MS 1000000LL
#define NS_PER_US 1000LL

/* CLOCK_MONOTONIC in ns. */
int64_t time_mono_ns(void);

/* CLOCK_REALTIME in ns since the Unix epoch. */
int64_t time_real_ns(void);

/* Waits until CLOCK_MONOTONIC time mono_ns or one of the signals of set (blocked by the
 * caller), whichever comes first. Returns the signal that came, or 0 at the time (or on an
 * error of sigtimedwait other than EAGAIN and EINTR). */
int time_wait_signal_until(int64_t mono_ns, const sigset_t *set);

/*
 * Formats realtime t as local ISO 8601 with microseconds and the UTC offset, e.g.
 * "2026-09-01T17:29:03.627448-07:00" (the fraction is left out when it is zero, as Python's
 * isoformat does). Returns the length written (buf is always NUL-terminated), or -EINVAL.
 */
int time_format_local_iso(int64_t real_ns, char *buf, size_t cap);

/*
 * time_format_local_iso with the calendar work done once a second: the date, time and offset
 * of the last whole second are kept in c (zeroed before the first call) and only the fraction
 * changes within it (a time zone changes its offset at whole seconds only). The same text as
 * time_format_local_iso; for a writer of one row per tick (samples.csv at 1 kHz).
 */
struct time_local_cache {
    int64_t sec;     /* the second cached, valid when len > 0 */
    char date[40];   /* "YYYY-MM-DDTHH:MM:SS" */
    char offset[24]; /* "+HH:MM" or "+HH:MM:SS" */
    int len, off_len;
};
int time_format_local_iso_cached(struct time_local_cache *c, int64_t real_ns, char *buf,
                                 size_t cap);

/* Formats a duration in ns as a short human string ("100ms", "1.5s", "250us"). */
void time_format_duration(int64_t ns, char *buf, size_t cap);

#endif
