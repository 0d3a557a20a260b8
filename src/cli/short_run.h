/*
 * short_run: a measurement shorter than two sampling intervals has no figure worth printing
 * (a counter read twice, a gauge read once): the words that say so and what to do.
 */
#ifndef CARMA_CLI_SHORT_RUN_H
#define CARMA_CLI_SHORT_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when duration_ns is shorter than two sampling intervals of interval_ns. */
bool short_run_is(int64_t duration_ns, int64_t interval_ns);

/*
 * Writes into buf why a run of duration_ns at interval_ns is too short and what to do:
 * "the command ran 0.004 s, less than two sampling intervals (2 x 100ms): too short to
 * measure, so its figures are n/a; measure it with a shorter interval (--interval 1ms) or run
 * it longer (several times in a loop)". A run shorter than 2 ms is sent to the loop alone.
 */
void short_run_text(int64_t duration_ns, int64_t interval_ns, char *buf, size_t cap);

#endif
