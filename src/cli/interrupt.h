/*
 * interrupt: how a measurement ended by a signal is recorded. The first terminating signal
 * carma receives (SIGINT, SIGTERM, SIGHUP, SIGQUIT) and when it came are kept; manifest.json
 * then has "status": "interrupted" and an "interruption" object, and every report says so
 * (docs/formats.md).
 */
#ifndef CARMA_CLI_INTERRUPT_H
#define CARMA_CLI_INTERRUPT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct interruption {
    int sig;         /* 0: none received */
    int64_t real_ns; /* when the first one came (CLOCK_REALTIME) */
    int count;       /* how many came */
};

/* Notes that sig came now: the first one is kept, the others counted. */
void interruption_note(struct interruption *in, int sig);

/* "SIGINT", "SIGTERM", ... (sigabbrev), or "signal N" for one without a name. */
const char *interruption_signal_name(int sig, char *buf, size_t cap);

/*
 * {"signal": "SIGINT", "signal_number": 2, "time_utc": "2026-12-01T21:30:00.123Z",
 *  "time_unix": 1796160600.123, "signals_received": 1}, or null when none came.
 */
json_t *interruption_json(const struct interruption *in);

/* "SIGINT (signal 2) at 2026-12-01T21:30:00.123Z" into buf. */
void interruption_text(const struct interruption *in, char *buf, size_t cap);

#endif
