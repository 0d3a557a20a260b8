/*
 * markproto: one message of the marks protocol parsed (docs/formats.md, "Marks"): the
 * operation, the window's name and its key=value fields. No I/O, no allocation: markd's
 * thread calls it on every packet, and fuzz/fuzz_markproto.c on anything.
 */
#ifndef CARMA_SERVE_MARKPROTO_H
#define CARMA_SERVE_MARKPROTO_H

#include <stdbool.h>
#include <stddef.h>

#define MARKPROTO_NAME_MAX   200 /* bytes of a window's name */
#define MARKPROTO_FIELDS_MAX 8   /* fields of one message */

enum markproto_op { MARKPROTO_HELLO, MARKPROTO_BEGIN, MARKPROTO_END, MARKPROTO_EVENT };

struct markproto_msg {
    enum markproto_op op;
    const char *name;           /* into the message (NULL for hello) */
    long long tokens, requests; /* -1: not given */
    double value;               /* an event's; NAN otherwise */
};

/* A window's name: 1 to MARKPROTO_NAME_MAX bytes, no control character. */
bool markproto_name_ok(const char *s);

/*
 * Parses the NUL-terminated message msg in place (its TABs become NULs; out->name points into
 * it). Returns 0, or -EINVAL with why (cap bytes) set to the `error` reply's text: an unknown
 * operation, a bad name, a field that is not KEY=VALUE or not one of the operation's (tokens
 * and requests for begin and end, value for event, which needs it), a count that is not a
 * non-negative integer, a value that is not a finite number, too many fields.
 */
int markproto_parse(char *msg, struct markproto_msg *out, char *why, size_t cap);

#endif
