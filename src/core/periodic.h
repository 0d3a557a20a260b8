/*
 * periodic: a function called on a thread of its own every period, and once more, with final
 * set, when the thread is stopped: the followers' report threads (srt/follow.c,
 * report/collectreport_follow.c) that write their reports while a command does other work.
 */
#ifndef CARMA_CORE_PERIODIC_H
#define CARMA_CORE_PERIODIC_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

/*
 * The work of one period: returns 0 or a negative errno with e set. final: the last call (the
 * thread is being stopped). Called on the thread only, one call at a time.
 */
typedef int (*periodic_fn)(void *arg, bool final, struct carma_err *e);

struct periodic;

/*
 * Starts a thread, which takes no signal, that calls fn(arg, ...) every period_ns (> 0) on
 * CLOCK_MONOTONIC, and at periodic_stop once more with final set. arg must outlive the thread.
 * Returns NULL with e set ("cannot start the WHAT thread: ...", or out of memory).
 */
struct periodic *periodic_start(int64_t period_ns, periodic_fn fn, void *arg, const char *what,
                                struct carma_err *e);

/*
 * Wakes the thread for its final call, waits for it and frees p (NULL-safe: 0). Returns 0 when
 * the last call returned 0, else that call's error, with *e (e may be NULL) its message.
 */
int periodic_stop(struct periodic *p, struct carma_err *e);

#endif
