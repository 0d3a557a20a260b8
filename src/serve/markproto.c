/*
 * markproto: the marks protocol's messages parsed (see markproto.h).
 */
#include "serve/markproto.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parse.h"

bool markproto_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MARKPROTO_NAME_MAX)
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

static int bad(char *why, size_t cap, const char *fmt, const char *op, const char *s)
{
    snprintf(why, cap, fmt, op, s);
    return -EINVAL;
}

int markproto_parse(char *msg, struct markproto_msg *out, char *why, size_t cap)
{
    *out = (struct markproto_msg){.tokens = -1, .requests = -1, .value = NAN};
    char *f[MARKPROTO_FIELDS_MAX + 1];
    size_t nf = 0;
    for (char *p = msg;;) {
        if (nf == MARKPROTO_FIELDS_MAX + 1)
            break;
        f[nf++] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            break;
        *tab = '\0';
        p = tab + 1;
    }
    static const char *const ops[] = {"hello", "begin", "end", "event"};
    int op = 0;
    while (op < 4 && strcmp(f[0], ops[op]) != 0)
        op++;
    if (op == 4)
        return bad(why, cap, "unknown message '%.40s'%s", f[0], " (begin, end, event, hello)");
    out->op = (enum markproto_op)op;
    const char *o = ops[op];
    if (nf > MARKPROTO_FIELDS_MAX)
        return bad(why, cap, "%s: more than %s fields", o, "8");
    if (out->op == MARKPROTO_HELLO)
        return nf == 1 ? 0 : bad(why, cap, "%s: %s", o, "no fields after hello");
    if (nf < 2 || !markproto_name_ok(f[1])) {
        snprintf(why, cap, "%s: the name must be 1 to %d bytes without control characters", o,
                 MARKPROTO_NAME_MAX);
        return -EINVAL;
    }
    out->name = f[1];
    bool event = out->op == MARKPROTO_EVENT;
    for (size_t k = 2; k < nf; k++) {
        char *eq = strchr(f[k], '=');
        if (!eq)
            return bad(why, cap, "%s: field '%.40s' is not KEY=VALUE", o, f[k]);
        *eq = '\0';
        const char *key = f[k], *v = eq + 1;
        if (!event && (strcmp(key, "tokens") == 0 || strcmp(key, "requests") == 0)) {
            uint64_t x;
            if (parse_u64(v, &x) < 0 || x > LLONG_MAX) {
                snprintf(why, cap, "%s: %s=%.40s: not a non-negative integer", o, key, v);
                return -EINVAL;
            }
            *(strcmp(key, "tokens") == 0 ? &out->tokens : &out->requests) = (long long)x;
        } else if (event && strcmp(key, "value") == 0) {
            double x;
            if (parse_double(v, &x) < 0) {
                snprintf(why, cap, "%s: value=%.40s: not a finite number", o, v);
                return -EINVAL;
            }
            out->value = x;
        } else {
            return bad(why, cap, "%s: unknown field '%.40s'", o, key);
        }
    }
    if (event && isnan(out->value))
        return bad(why, cap, "%s: %s", o, "value=X is missing");
    return 0;
}
