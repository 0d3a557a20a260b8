/*
 * libFuzzer harness for serve/markproto: one marks message, any bytes.
 *
 * - markproto_parse never reads past the message's NUL, and either accepts it or says why;
 * - an accepted message has a name that markproto_name_ok accepts (hello: none), counts >= 0
 *   or -1, an event's value finite and the others' NAN;
 * - an accepted message written back in the protocol's form and parsed again gives the same
 *   operation, name, counts and value.
 *
 * fuzz-sources: src/serve/markproto.c src/core/parse.c
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/markproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2048)
        return 0;
    char *msg = malloc(size + 1);
    if (!msg)
        return 0;
    memcpy(msg, data, size);
    msg[size] = '\0';
    struct markproto_msg m;
    char why[160];
    why[0] = '\0';
    if (markproto_parse(msg, &m, why, sizeof why) < 0) {
        if (!why[0])
            abort(); /* a refusal says why */
        free(msg);
        return 0;
    }
    static const char *const ops[] = {"hello", "begin", "end", "event"};
    if (m.op == MARKPROTO_HELLO) {
        if (m.name)
            abort();
        free(msg);
        return 0;
    }
    if (!m.name || !markproto_name_ok(m.name) || m.tokens < -1 || m.requests < -1)
        abort();
    if (m.op == MARKPROTO_EVENT ? !isfinite(m.value) : !isnan(m.value))
        abort();
    /* written back and parsed again */
    char again[1200];
    int n = snprintf(again, sizeof again, "%s\t%s", ops[m.op], m.name);
    if (m.tokens >= 0)
        n += snprintf(again + n, sizeof again - (size_t)n, "\ttokens=%lld", m.tokens);
    if (m.requests >= 0)
        n += snprintf(again + n, sizeof again - (size_t)n, "\trequests=%lld", m.requests);
    if (m.op == MARKPROTO_EVENT)
        snprintf(again + n, sizeof again - (size_t)n, "\tvalue=%.17g", m.value);
    struct markproto_msg m2;
    if (markproto_parse(again, &m2, why, sizeof why) < 0)
        abort();
    if (m2.op != m.op || strcmp(m2.name, m.name) != 0 || m2.tokens != m.tokens ||
        m2.requests != m.requests || (m.op == MARKPROTO_EVENT && m2.value != m.value))
        abort();
    free(msg);
    return 0;
}
