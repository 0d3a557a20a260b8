/*
 * err: the one way carma's library code reports what went wrong.
 *
 * Functions return 0 (or a count) on success and a negative errno on failure. The human
 * detail (which file, which field, what to do about it) travels in a struct carma_err that
 * the caller passes down; the CLI prints it once. Library code never prints and never exits.
 *
 * Fixed meanings for sources: -ENOENT absent, -EACCES unreadable, -EAGAIN transient,
 * -EINVAL bad content.
 */
#ifndef CARMA_CORE_ERR_H
#define CARMA_CORE_ERR_H

#include <stddef.h>

#define CARMA_ERR_MSG_MAX 1024

struct carma_err {
    int code;                    /* negative errno, 0 when nothing was set */
    char msg[CARMA_ERR_MSG_MAX]; /* one line, no trailing newline */
};

/*
 * Records code (a negative errno) and a printf-style message in e (which may be NULL).
 * Returns code, so that callers can write `return carma_err_set(e, -EINVAL, "...")`.
 */
int carma_err_set(struct carma_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears e (NULL-safe). */
void carma_err_clear(struct carma_err *e);

#endif
