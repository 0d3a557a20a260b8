/*
 * experiment: load and check an experiment file (see experiment.h and docs/experiment.md).
 *
 * jansson parses the document (rejecting duplicate keys); the checks then walk it section by
 * section with the path of the current field kept on a small stack. Each problem is located in
 * the original text by experiment_locate, a tokenizer that follows the same path, and the
 * problems are printed sorted by position, so the user reads them in document order.
 */
#include "workload/experiment.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/parse.h"
#include "core/table.h"
#include "core/timeutil.h"
#include "analysis/carbon.h"
#include "analysis/split.h"
#include "sampler/sampler.h"
#include "sources/meter.h"
#include "sources/source.h"

/* ---- locator ---- */

struct cursor {
    const char *p, *end;
    int line, col; /* of the last character consumed (col 0: none yet on this line) */
};

static void cur_adv(struct cursor *c)
{
    unsigned char ch = (unsigned char)*c->p++;
    if (ch == '\n') {
        c->line++;
        c->col = 0;
    } else if (ch < 0x80 || ch >= 0xC0) { /* not a UTF-8 continuation byte */
        c->col++;
    }
}

static bool cur_at(const struct cursor *c, char ch)
{
    return c->p < c->end && *c->p == ch;
}

static void skip_ws(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        cur_adv(c);
}

static int hex4(const char *p, const char *end, unsigned *ret)
{
    if (end - p < 4)
        return -EINVAL;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9')
            v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f')
            v |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F')
            v |= (unsigned)(h - 'A' + 10);
        else
            return -EINVAL;
    }
    *ret = v;
    return 0;
}

/* Compares one decoded byte with want[*i]; a mismatch sticks. */
static void match_byte(const char *want, size_t *i, bool *match, unsigned char b)
{
    if (!want || !*match)
        return;
    if ((unsigned char)want[*i] != b || want[*i] == '\0')
        *match = false;
    else
        (*i)++;
}

/*
 * Consumes the string at the cursor (which is at its opening quote), decoding its escapes and
 * comparing the result with want (when not NULL): *match tells whether they are equal.
 */
static int scan_string(struct cursor *c, const char *want, bool *match)
{
    size_t i = 0;
    bool m = true;
    cur_adv(c); /* the opening quote */
    for (;;) {
        if (c->p >= c->end)
            return -EINVAL;
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '"') {
            cur_adv(c);
            break;
        }
        if (ch != '\\') {
            match_byte(want, &i, &m, ch);
            cur_adv(c);
            continue;
        }
        cur_adv(c);
        if (c->p >= c->end)
            return -EINVAL;
        char e = *c->p;
        cur_adv(c);
        unsigned cp;
        switch (e) {
        case '"':
        case '\\':
        case '/':
            cp = (unsigned char)e;
            break;
        case 'b':
            cp = '\b';
            break;
        case 'f':
            cp = '\f';
            break;
        case 'n':
            cp = '\n';
            break;
        case 'r':
            cp = '\r';
            break;
        case 't':
            cp = '\t';
            break;
        case 'u':
            if (hex4(c->p, c->end, &cp) < 0)
                return -EINVAL;
            for (int k = 0; k < 4; k++)
                cur_adv(c);
            if (cp >= 0xD800 && cp < 0xDC00) { /* high surrogate: a low one follows */
                unsigned lo;
                if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' ||
                    hex4(c->p + 2, c->end, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
                    return -EINVAL;
                for (int k = 0; k < 6; k++)
                    cur_adv(c);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            break;
        default:
            return -EINVAL;
        }
        unsigned char u[4];
        size_t n;
        if (cp < 0x80) {
            u[0] = (unsigned char)cp;
            n = 1;
        } else if (cp < 0x800) {
            u[0] = (unsigned char)(0xC0 | (cp >> 6));
            u[1] = (unsigned char)(0x80 | (cp & 0x3F));
            n = 2;
        } else if (cp < 0x10000) {
            u[0] = (unsigned char)(0xE0 | (cp >> 12));
            u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[2] = (unsigned char)(0x80 | (cp & 0x3F));
            n = 3;
        } else {
            u[0] = (unsigned char)(0xF0 | (cp >> 18));
            u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[3] = (unsigned char)(0x80 | (cp & 0x3F));
            n = 4;
        }
        for (size_t k = 0; k < n; k++)
            match_byte(want, &i, &m, u[k]);
    }
    if (match)
        *match = m && want && want[i] == '\0';
    return 0;
}

static int skip_value(struct cursor *c);

/* Consumes the members of an object or the elements of an array (the cursor is at its opening
 * bracket) up to and including its closing bracket. */
static int skip_container(struct cursor *c, char close, bool object)
{
    cur_adv(c);
    skip_ws(c);
    if (cur_at(c, close)) {
        cur_adv(c);
        return 0;
    }
    for (;;) {
        skip_ws(c);
        if (object) {
            if (!cur_at(c, '"') || scan_string(c, NULL, NULL) < 0)
                return -EINVAL;
            skip_ws(c);
            if (!cur_at(c, ':'))
                return -EINVAL;
            cur_adv(c);
            skip_ws(c);
        }
        if (skip_value(c) < 0)
            return -EINVAL;
        skip_ws(c);
        if (cur_at(c, ',')) {
            cur_adv(c);
            continue;
        }
        if (cur_at(c, close)) {
            cur_adv(c);
            return 0;
        }
        return -EINVAL;
    }
}

static int skip_value(struct cursor *c)
{
    if (c->p >= c->end)
        return -EINVAL;
    switch (*c->p) {
    case '"':
        return scan_string(c, NULL, NULL);
    case '{':
        return skip_container(c, '}', true);
    case '[':
        return skip_container(c, ']', false);
    default: {
        const char *start = c->p;
        /* a NUL is part of the token (jansson ends a number at it and goes on): strchr would
         * match the set's own terminator */
        while (c->p < c->end && (*c->p == '\0' || !strchr(",]} \t\r\n", *c->p)))
            cur_adv(c);
        return c->p > start ? 0 : -EINVAL;
    }
    }
}

int experiment_locate(const char *text, size_t len, const struct json_path_step *path, size_t n,
                      bool at_key, int *ret_line, int *ret_col)
{
    struct cursor c = {text, text + len, 1, 0};
    skip_ws(&c);
    for (size_t i = 0; i < n; i++) {
        if (c.p >= c.end)
            return -EINVAL;
        if (path[i].key) {
            if (*c.p != '{')
                return -ENOENT;
            cur_adv(&c);
            for (;;) {
                skip_ws(&c);
                if (cur_at(&c, '}'))
                    return -ENOENT;
                if (!cur_at(&c, '"'))
                    return -EINVAL;
                int key_line = c.line, key_col = c.col + 1;
                bool match = false;
                if (scan_string(&c, path[i].key, &match) < 0)
                    return -EINVAL;
                skip_ws(&c);
                if (!cur_at(&c, ':'))
                    return -EINVAL;
                cur_adv(&c);
                skip_ws(&c);
                if (match) {
                    if (at_key && i + 1 == n) {
                        *ret_line = key_line;
                        *ret_col = key_col;
                        return 0;
                    }
                    break;
                }
                if (skip_value(&c) < 0)
                    return -EINVAL;
                skip_ws(&c);
                if (cur_at(&c, ','))
                    cur_adv(&c);
                else if (cur_at(&c, '}'))
                    return -ENOENT;
                else
                    return -EINVAL;
            }
        } else {
            if (*c.p != '[')
                return -ENOENT;
            cur_adv(&c);
            for (size_t k = 0;; k++) {
                skip_ws(&c);
                if (c.p >= c.end)
                    return -EINVAL;
                if (*c.p == ']')
                    return -ENOENT;
                if (k == path[i].index)
                    break;
                if (skip_value(&c) < 0)
                    return -EINVAL;
                skip_ws(&c);
                if (cur_at(&c, ','))
                    cur_adv(&c);
                else if (cur_at(&c, ']'))
                    return -ENOENT;
                else
                    return -EINVAL;
            }
        }
    }
    if (c.p >= c.end)
        return -EINVAL;
    *ret_line = c.line;
    *ret_col = c.col + 1;
    return 0;
}

/* ---- problems ---- */

#define PATH_DEPTH_MAX 8
#define QUOTE_MAX      100 /* bytes of a user's string shown in a message */
#define EXPERIMENT_DURATION_MAX_NS                                                                 \
    10000000000000000LL /* 1e7 s, a sanity cap on delay_s, timeout_s */

struct problem {
    int line, col;
    size_t seq;
    char *msg; /* "PATH: message" */
};

struct loader {
    const char *file; /* as given, for messages */
    const char *text;
    size_t len;
    const char *dir; /* absolute */
    struct json_path_step path[PATH_DEPTH_MAX];
    size_t depth;
    struct problem *pb;
    size_t npb, cap;
    bool oom;
    char quoted[4][2 * QUOTE_MAX + 16];
    unsigned next_quote;
};

static void push_key(struct loader *ld, const char *key)
{
    if (ld->depth < PATH_DEPTH_MAX)
        ld->path[ld->depth] = (struct json_path_step){key, 0};
    ld->depth++;
}

static void push_index(struct loader *ld, size_t index)
{
    if (ld->depth < PATH_DEPTH_MAX)
        ld->path[ld->depth] = (struct json_path_step){NULL, index};
    ld->depth++;
}

static void pop(struct loader *ld)
{
    ld->depth--;
}

/* Appends s to buf (of cap bytes, NUL-terminated, *len used) with '"', '\\' and control
 * characters escaped, stopping after about max bytes (at a character boundary) with "...". */
static void append_escaped(char *buf, size_t cap, size_t *len, const char *s, size_t max)
{
    size_t start = *len;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*len - start >= max && (*p & 0xC0) != 0x80) {
            *len += (size_t)snprintf(buf + *len, cap - *len, "...");
            break;
        }
        if (*len + 8 >= cap)
            break;
        if (*p == '"' || *p == '\\')
            *len += (size_t)snprintf(buf + *len, cap - *len, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7F)
            *len += (size_t)snprintf(buf + *len, cap - *len, "\\u%04x", *p);
        else
            buf[(*len)++] = (char)*p;
    }
    buf[*len] = '\0';
}

/* s in double quotes, escaped and shortened for a one-line message (valid until four more
 * calls). */
static const char *quote(struct loader *ld, const char *s)
{
    char *b = ld->quoted[ld->next_quote++ % 4];
    size_t cap = sizeof ld->quoted[0], len = 1;
    b[0] = '"';
    append_escaped(b, cap, &len, s, QUOTE_MAX);
    snprintf(b + len, cap - len, "\"");
    return b;
}

static bool plain_key(const char *k)
{
    if (!*k)
        return false;
    for (const char *p = k; *p; p++)
        if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9') &&
            *p != '_')
            return false;
    return true;
}

/* The current path as text: workloads[1].env.HOME, workloads[0].env["A B"], (top level). */
static void path_text(const struct loader *ld, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    size_t n = ld->depth < PATH_DEPTH_MAX ? ld->depth : PATH_DEPTH_MAX;
    for (size_t i = 0; i < n && len + 16 < cap; i++) {
        const struct json_path_step *s = &ld->path[i];
        if (!s->key) {
            len += (size_t)snprintf(buf + len, cap - len, "[%zu]", s->index);
        } else if (plain_key(s->key)) {
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "." : "", s->key);
        } else {
            len += (size_t)snprintf(buf + len, cap - len, "[\"");
            append_escaped(buf, cap - 4, &len, s->key, 64);
            len += (size_t)snprintf(buf + len, cap - len, "\"]");
        }
        if (len >= cap)
            len = cap - 1;
    }
    if (n == 0)
        snprintf(buf, cap, "(top level)");
}

enum where { AT_VALUE, AT_KEY, AT_PARENT };

static void locate(const struct loader *ld, size_t n, bool key, int *line, int *col)
{
    if (n > PATH_DEPTH_MAX)
        n = PATH_DEPTH_MAX;
    while (experiment_locate(ld->text, ld->len, ld->path, n, key, line, col) < 0) {
        if (n == 0) {
            *line = *col = 1;
            return;
        }
        n--;
        key = false;
    }
}

/* Records a problem with the current field: at its value, at its key, or at the object that
 * holds it (a missing field). */
static void report(struct loader *ld, enum where w, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(struct loader *ld, enum where w, const char *fmt, ...)
{
    int line, col;
    size_t n = ld->depth;
    if (w == AT_PARENT && n > 0)
        n--;
    locate(ld, n, w == AT_KEY && n > 0, &line, &col);
    if (ld->npb == ld->cap) {
        size_t cap = ld->cap ? 2 * ld->cap : 16;
        struct problem *pb = realloc(ld->pb, cap * sizeof *pb);
        if (!pb) {
            ld->oom = true;
            return;
        }
        ld->pb = pb;
        ld->cap = cap;
    }
    char path[512], *what = NULL, *msg = NULL;
    path_text(ld, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&what, fmt, ap);
    va_end(ap);
    if (r < 0 || asprintf(&msg, "%s: %s", path, what) < 0) {
        if (r >= 0)
            free(what);
        ld->oom = true;
        return;
    }
    free(what);
    ld->pb[ld->npb] = (struct problem){line, col, ld->npb, msg};
    ld->npb++;
}

static int problem_cmp(const void *a, const void *b)
{
    const struct problem *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- helpers for the checks ---- */

static const char *type_name(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

/* A number for a message: integers as integers, others with up to 15 significant digits. */
static const char *num_text(char *buf, size_t cap, double v)
{
    snprintf(buf, cap, "%.15g", v);
    return buf;
}

static char *xstrdup(struct loader *ld, const char *s)
{
    char *d = strdup(s);
    if (!d)
        ld->oom = true;
    return d;
}

/* Reports every member of obj whose key is not in known (NULL-terminated). */
static void check_known(struct loader *ld, json_t *obj, const char *const *known)
{
    char list[512];
    size_t len = 0;
    list[0] = '\0';
    for (size_t i = 0; known[i]; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", known[i]);
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        bool ok = false;
        for (size_t i = 0; known[i] && !ok; i++)
            ok = strcmp(key, known[i]) == 0;
        if (!ok) {
            push_key(ld, key);
            report(ld, AT_KEY, "unknown field (known: %s)", list);
            pop(ld);
        }
    }
}

/* The member key of obj; reports it missing when required. */
static json_t *member(struct loader *ld, json_t *obj, const char *key, bool required)
{
    json_t *v = json_object_get(obj, key);
    if (!v && required) {
        push_key(ld, key);
        report(ld, AT_PARENT, "required field missing");
        pop(ld);
    }
    return v;
}

/* The string member key of obj, or NULL when it is absent or wrong (then reported). */
static const char *get_string(struct loader *ld, json_t *obj, const char *key, bool required,
                              bool nonempty)
{
    json_t *v = member(ld, obj, key, required);
    if (!v)
        return NULL;
    const char *s = NULL;
    push_key(ld, key);
    if (!json_is_string(v))
        report(ld, AT_VALUE, "must be a string, not %s", type_name(v));
    else if (nonempty && !*json_string_value(v))
        report(ld, AT_VALUE, "must not be empty");
    else
        s = json_string_value(v);
    pop(ld);
    return s;
}

/* Checks that the number v lies in lo..hi (lo excluded unless lo_incl). The message names
 * the whole range when bounded, else only the bound that v crosses (hi is then a sanity cap,
 * or INFINITY). */
static bool check_range(struct loader *ld, double v, double lo, bool lo_incl, double hi,
                        bool bounded)
{
    if ((lo_incl ? v >= lo : v > lo) && v <= hi)
        return true;
    char a[32], b[32], g[32];
    num_text(a, sizeof a, lo);
    num_text(b, sizeof b, hi);
    num_text(g, sizeof g, v);
    if (bounded)
        report(ld, AT_VALUE, "must be between %s and %s (got %s)", a, b, g);
    else if (v > hi)
        report(ld, AT_VALUE, "must be at most %s (got %s)", b, g);
    else
        report(ld, AT_VALUE, "must be %s %s (got %s)", lo_incl ? ">=" : ">", a, g);
    return false;
}

/* The number member key of obj into *ret (def when absent). Returns false when it is given but
 * wrong (reported). */
static bool get_number(struct loader *ld, json_t *obj, const char *key, bool required, double def,
                       double lo, bool lo_incl, double hi, bool bounded, double *ret)
{
    *ret = def;
    json_t *v = member(ld, obj, key, required);
    if (!v)
        return !required;
    bool ok = false;
    push_key(ld, key);
    if (!json_is_number(v))
        report(ld, AT_VALUE, "must be a number, not %s", type_name(v));
    else if (check_range(ld, json_number_value(v), lo, lo_incl, hi, bounded))
        ok = true;
    pop(ld);
    if (ok)
        *ret = json_number_value(v);
    return ok;
}

/* A duration member key of obj in seconds into *ret (def_s when absent), by the one rule of
 * every duration (core/parse): a number is seconds, a string is "1.5" (seconds) or a number
 * with a unit ("100ms", "2s"). It must lie in min_ns..max_ns. Returns false when it is given
 * but wrong (reported). */
static bool get_duration(struct loader *ld, json_t *obj, const char *key, double def_s,
                         int64_t min_ns, int64_t max_ns, double *ret)
{
    *ret = def_s;
    json_t *v = member(ld, obj, key, false);
    if (!v)
        return true;
    double ns = NAN;
    int64_t n;
    if (json_is_number(v))
        ns = json_number_value(v) * 1e9;
    else if (json_is_string(v) &&
             parse_duration_range_ns(json_string_value(v), 0, INT64_MAX, &n) == 0)
        ns = (double)n;
    push_key(ld, key);
    bool ok = ns >= (double)min_ns && ns <= (double)max_ns;
    if (!ok) {
        char rule[256];
        parse_duration_rule(rule, sizeof rule, min_ns, max_ns);
        if (json_is_string(v))
            report(ld, AT_VALUE, "%s is not %s", quote(ld, json_string_value(v)), rule);
        else if (json_is_number(v))
            report(ld, AT_VALUE, "%g is not %s", json_number_value(v), rule);
        else
            report(ld, AT_VALUE, "must be %s, not %s", rule, type_name(v));
    }
    pop(ld);
    if (ok)
        *ret = ns / 1e9;
    return ok;
}

/* A device or CPU index at the current path: an integer 0..INT_MAX (or null when
 * null_ok). what names what is wanted, for the messages. Returns the index, -1 for null, or
 * -2 when wrong (reported). */
static int get_index_as(struct loader *ld, json_t *v, bool null_ok, const char *what)
{
    char g[32];
    if (json_is_null(v) && null_ok)
        return -1;
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i >= 0 && i <= INT_MAX)
            return (int)i;
        report(ld, AT_VALUE, "must be %s (got %" JSON_INTEGER_FORMAT ")", what, i);
    } else if (json_is_real(v)) {
        report(ld, AT_VALUE, "must be %s (got %s)", what,
               num_text(g, sizeof g, json_real_value(v)));
    } else {
        report(ld, AT_VALUE, "must be %s, not %s", what, type_name(v));
    }
    return -2;
}

static int get_index(struct loader *ld, json_t *v, bool null_ok)
{
    return get_index_as(ld, v, null_ok, null_ok ? "an integer >= 0 or null" : "an integer >= 0");
}

/* A name usable as a directory name: [A-Za-z0-9._-]+, not "." or "..". */
static bool check_name(struct loader *ld, const char *s)
{
    size_t n = strlen(s);
    if (n > EXPERIMENT_NAME_MAX) {
        report(ld, AT_VALUE, "longer than %d characters", EXPERIMENT_NAME_MAX);
        return false;
    }
    for (const char *p = s; *p; p++) {
        if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9') &&
            !strchr("._-", *p)) {
            report(ld, AT_VALUE,
                   "%s is not a valid name: use only letters, digits, '.', '_' and '-'",
                   quote(ld, s));
            return false;
        }
    }
    if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
        report(ld, AT_VALUE, "%s is not a valid name: it must be usable as a directory name",
               quote(ld, s));
        return false;
    }
    return true;
}

/* p made absolute against the experiment's directory (NULL when out of memory). */
static char *resolve_path(struct loader *ld, const char *p)
{
    if (p[0] == '/')
        return xstrdup(ld, p);
    while (p[0] == '.' && p[1] == '/') {
        p += 2;
        while (*p == '/')
            p++;
    }
    if (strcmp(p, ".") == 0 || !*p) /* the directory itself */
        return xstrdup(ld, ld->dir);
    char *r = NULL;
    if (asprintf(&r, "%s%s%s", ld->dir, strcmp(ld->dir, "/") == 0 ? "" : "/", p) < 0) {
        ld->oom = true;
        return NULL;
    }
    return r;
}

/* Reports why the file given as `given` (resolved to abs) cannot be used; want_dir: it must be
 * a directory, else a regular file (executable when exec). Returns true when it is fine. */
static bool check_file(struct loader *ld, const char *given, const char *abs, bool want_dir,
                       bool exec)
{
    struct stat st;
    if (stat(abs, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            report(ld, AT_VALUE, "%s%s does not exist", want_dir ? "directory " : "",
                   quote(ld, given));
        else
            report(ld, AT_VALUE, "cannot access %s: %s", quote(ld, given), strerror(errno));
        return false;
    }
    if (want_dir && !S_ISDIR(st.st_mode)) {
        report(ld, AT_VALUE, "%s is not a directory", quote(ld, given));
        return false;
    }
    if (!want_dir && S_ISDIR(st.st_mode)) {
        report(ld, AT_VALUE, "%s is a directory", quote(ld, given));
        return false;
    }
    if (exec && access(abs, X_OK) < 0) {
        report(ld, AT_VALUE,
               "%s is not executable (chmod +x it, or set \"launch\" to \"python\" or \"shell\")",
               quote(ld, given));
        return false;
    }
    return true;
}

/* True when name is an executable file in one of $PATH's directories. */
static bool in_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        char buf[PATH_MAX];
        if (snprintf(buf, sizeof buf, "%.*s/%s", n ? (int)n : 1, n ? p : ".", name) <
            (int)sizeof buf) {
            struct stat st;
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
                return true;
        }
        if (!colon)
            return false;
        p = colon + 1;
    }
}

/* ---- the sections ---- */

static const char *const workload_fields[] = {
    "name",   "type",    "gpu",       "script",     "args",    "cwd", "env",
    "launch", "delay_s", "timeout_s", "allocation", "profile", NULL};

static const char *const launch_names[] = {
    [LAUNCH_EXEC] = "exec", [LAUNCH_PYTHON] = "python", [LAUNCH_SHELL] = "shell"};

const char *experiment_launch_name(enum workload_launch l)
{
    return (unsigned)l < sizeof launch_names / sizeof launch_names[0] ? launch_names[l] : "exec";
}

static bool launch_parse(const char *s, enum workload_launch *ret)
{
    for (size_t i = 0; i < sizeof launch_names / sizeof launch_names[0]; i++) {
        if (strcmp(s, launch_names[i]) == 0) {
            *ret = (enum workload_launch)i;
            return true;
        }
    }
    return false;
}

size_t experiment_spec_gpus(const struct workload_spec *w, int *out, size_t cap)
{
    size_t n = 0;
    if (w->gpu_use == WORKLOAD_GPU_NO)
        return 0;
    if (w->n_gpus) {
        for (size_t q = 0; q < w->n_gpus && n < cap; q++)
            out[n++] = w->gpus[q];
        return n;
    }
    if (w->gpu >= 0) {
        if (cap)
            out[n++] = w->gpu;
        return n;
    }
    if (w->gpu_use != WORKLOAD_GPU_YES)
        return 0;
    static const char key[] = "CUDA_VISIBLE_DEVICES=";
    const char *cvd = NULL;
    for (size_t i = 0; i < w->n_env; i++)
        if (strncmp(w->env[i], key, sizeof key - 1) == 0)
            cvd = w->env[i] + sizeof key - 1;
    for (const char *p = cvd; p && *p && n < cap;) {
        while (*p == ' ' || *p == '\t')
            p++;
        char *end;
        errno = 0;
        long v = (*p >= '0' && *p <= '9') ? strtol(p, &end, 10) : -1;
        if (v < 0 || errno || v > INT_MAX)
            break; /* a UUID, MIG-..., or not a device: CUDA enumerates no further */
        p = end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p && *p != ',')
            break;
        bool dup = false;
        for (size_t k = 0; k < n; k++)
            dup = dup || out[k] == (int)v;
        if (!dup)
            out[n++] = (int)v;
        if (*p == ',')
            p++;
        else
            break;
    }
    return n;
}

/* allocation.cpus / allocation.gpus: an array of indexes into *ret / *ret_n. */
static void load_index_list(struct loader *ld, json_t *alloc, const char *key, int **ret,
                            size_t *ret_n)
{
    json_t *v = member(ld, alloc, key, false);
    if (!v)
        return;
    push_key(ld, key);
    if (!json_is_array(v)) {
        report(ld, AT_VALUE, "must be an array of integers >= 0, not %s", type_name(v));
        pop(ld);
        return;
    }
    size_t n = json_array_size(v);
    int *a = n ? calloc(n, sizeof *a) : NULL;
    if (n && !a)
        ld->oom = true;
    for (size_t i = 0; i < n && a; i++) {
        push_index(ld, i);
        a[i] = get_index(ld, json_array_get(v, i), false);
        pop(ld);
    }
    *ret = a;
    *ret_n = a ? n : 0;
    pop(ld);
}

static void load_env(struct loader *ld, json_t *v, struct workload_spec *ws)
{
    push_key(ld, "env");
    if (!json_is_object(v)) {
        report(ld, AT_VALUE, "must be an object of strings, not %s", type_name(v));
        pop(ld);
        return;
    }
    size_t n = json_object_size(v);
    ws->env = calloc(n + 2, sizeof *ws->env);
    if (!ws->env) {
        ld->oom = true;
        pop(ld);
        return;
    }
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val)
    {
        push_key(ld, key);
        if (!*key || strchr(key, '='))
            report(ld, AT_KEY, "not a valid variable name (empty, or holds '=')");
        else if (!json_is_string(val))
            report(ld, AT_VALUE, "must be a string, not %s", type_name(val));
        else if (asprintf(&ws->env[ws->n_env], "%s=%s", key, json_string_value(val)) < 0)
            ld->oom = true;
        else
            ws->n_env++;
        pop(ld);
    }
    pop(ld);
}

static void load_workload(struct loader *ld, json_t *w, size_t i, json_t *all,
                          struct workload_spec *ws)
{
    ws->gpu = -1;
    if (!json_is_object(w)) {
        report(ld, AT_VALUE, "must be an object, not %s", type_name(w));
        return;
    }
    check_known(ld, w, workload_fields);

    const char *name = get_string(ld, w, "name", true, true);
    if (name) {
        push_key(ld, "name");
        if (check_name(ld, name)) {
            for (size_t j = 0; j < i; j++) {
                json_t *o = json_array_get(all, j);
                json_t *nj = json_is_object(o) ? json_object_get(o, "name") : NULL;
                if (!json_is_string(nj) || strcmp(json_string_value(nj), name) != 0)
                    continue;
                struct json_path_step q[3] = {{"workloads", 0}, {NULL, j}, {"name", 0}};
                int line = 0, col = 0;
                experiment_locate(ld->text, ld->len, q, 3, false, &line, &col);
                report(ld, AT_VALUE, "duplicate name %s (first at line %d)", quote(ld, name), line);
                break;
            }
        }
        pop(ld);
        ws->name = xstrdup(ld, name);
    }

    /* type: the workload's kind, as the user names it (CARMA's meaning) */
    json_t *tj = member(ld, w, "type", false);
    const char *type = tj && !json_is_null(tj) ? get_string(ld, w, "type", false, true) : NULL;
    if (type)
        ws->type = xstrdup(ld, type);

    /* launch: how the script runs; absent, a type of exec, python or shell (carma's earlier
     * files) still names it, else exec */
    bool launch_ok = true;
    ws->launch = LAUNCH_EXEC;
    if (json_object_get(w, "launch")) {
        const char *l = get_string(ld, w, "launch", false, false);
        launch_ok = l != NULL;
        if (l && !launch_parse(l, &ws->launch)) {
            push_key(ld, "launch");
            report(ld, AT_VALUE, "%s is not a launch mode: use exec, python or shell",
                   quote(ld, l));
            pop(ld);
            launch_ok = false;
        }
    } else if (type) {
        launch_parse(type, &ws->launch);
    }

    /* gpu: true/false (CARMA: a GPU workload or not), or a device index (carma) */
    json_t *gpu = member(ld, w, "gpu", false);
    if (gpu) {
        push_key(ld, "gpu");
        if (json_is_boolean(gpu)) {
            ws->gpu_bool = true;
            ws->gpu_use = json_is_true(gpu) ? WORKLOAD_GPU_YES : WORKLOAD_GPU_NO;
            json_t *al = json_object_get(w, "allocation");
            json_t *ag = json_is_object(al) ? json_object_get(al, "gpus") : NULL;
            if (ws->gpu_use == WORKLOAD_GPU_NO && json_array_size(ag) > 0)
                report(ld, AT_VALUE, "false (not a GPU workload), but allocation.gpus names GPUs");
        } else {
            int g = get_index_as(ld, gpu, true, "true, false, an integer >= 0 or null");
            ws->gpu = g >= 0 ? g : -1;
            if (g >= 0)
                ws->gpu_use = WORKLOAD_GPU_YES;
        }
        pop(ld);
    }

    const char *script = get_string(ld, w, "script", true, true);
    if (script && launch_ok) {
        push_key(ld, "script");
        bool exec = ws->launch == LAUNCH_EXEC;
        if (!exec || strchr(script, '/')) {
            char *abs = resolve_path(ld, script);
            if (abs && check_file(ld, script, abs, false, exec))
                ws->script = abs;
            else
                free(abs);
        } else if (!in_path(script)) {
            report(ld, AT_VALUE, "command %s not found in PATH", quote(ld, script));
        } else {
            ws->script = xstrdup(ld, script);
        }
        pop(ld);
    }

    json_t *args = member(ld, w, "args", false);
    size_t nargs = 0;
    if (args) {
        push_key(ld, "args");
        if (!json_is_array(args)) {
            report(ld, AT_VALUE, "must be an array of strings, not %s", type_name(args));
            args = NULL;
        } else {
            nargs = json_array_size(args);
            for (size_t k = 0; k < nargs; k++) {
                json_t *a = json_array_get(args, k);
                push_index(ld, k);
                if (!json_is_string(a))
                    report(ld, AT_VALUE, "must be a string, not %s", type_name(a));
                pop(ld);
            }
        }
        pop(ld);
    }

    const char *cwd = get_string(ld, w, "cwd", false, true);
    if (cwd) {
        push_key(ld, "cwd");
        char *abs = resolve_path(ld, cwd);
        if (abs && check_file(ld, cwd, abs, true, false))
            ws->cwd = abs;
        else
            free(abs);
        pop(ld);
    }

    json_t *env = member(ld, w, "env", false);
    if (env)
        load_env(ld, env, ws);
    bool has_cvd = env && json_is_object(env) && json_object_get(env, "CUDA_VISIBLE_DEVICES");
    if (ws->gpu >= 0 && !has_cvd) {
        if (!ws->env)
            ws->env = calloc(2, sizeof *ws->env);
        if (!ws->env || asprintf(&ws->env[ws->n_env], "CUDA_VISIBLE_DEVICES=%d", ws->gpu) < 0)
            ld->oom = true;
        else
            ws->n_env++;
    }

    get_duration(ld, w, "delay_s", 0, 0, EXPERIMENT_DURATION_MAX_NS, &ws->delay_s);
    if (!json_is_null(json_object_get(w, "timeout_s"))) /* null: none, as when absent */
        get_duration(ld, w, "timeout_s", 0, 1, EXPERIMENT_DURATION_MAX_NS, &ws->timeout_s);

    json_t *alloc = member(ld, w, "allocation", false);
    if (alloc) {
        push_key(ld, "allocation");
        if (!json_is_object(alloc)) {
            report(ld, AT_VALUE, "must be an object, not %s", type_name(alloc));
        } else {
            static const char *const known[] = {"cpus", "gpus", NULL};
            check_known(ld, alloc, known);
            load_index_list(ld, alloc, "cpus", &ws->cpus, &ws->n_cpus);
            load_index_list(ld, alloc, "gpus", &ws->gpus, &ws->n_gpus);
        }
        pop(ld);
    }

    const char *prof = get_string(ld, w, "profile", false, false);
    if (prof) {
        push_key(ld, "profile");
        if (strcmp(prof, "nsys") == 0)
            ws->profile_nsys = true;
        else
            report(ld, AT_VALUE, "%s is not a profiler: use nsys", quote(ld, prof));
        pop(ld);
    }

    /* argv: interpreter (if any), script, args..., NULL; filled in order, so that a failed
     * copy leaves no gap before the terminating NULL */
    if (!ws->script)
        return;
    const char *interp = ws->launch == LAUNCH_PYTHON  ? "python3"
                         : ws->launch == LAUNCH_SHELL ? "/bin/sh"
                                                      : NULL;
    size_t n = (interp ? 1 : 0) + 1 + nargs, k = 0;
    ws->argv = calloc(n + 1, sizeof *ws->argv);
    if (!ws->argv) {
        ld->oom = true;
        return;
    }
    if (interp && !(ws->argv[k++] = xstrdup(ld, interp)))
        return;
    if (!(ws->argv[k++] = xstrdup(ld, ws->script)))
        return;
    for (size_t a = 0; a < nargs; a++) {
        json_t *s = json_array_get(args, a);
        if (!(ws->argv[k++] = xstrdup(ld, json_is_string(s) ? json_string_value(s) : "")))
            return;
    }
}

static void load_workloads(struct loader *ld, json_t *root, struct experiment *x)
{
    json_t *ws = member(ld, root, "workloads", true);
    if (!ws)
        return;
    push_key(ld, "workloads");
    if (!json_is_array(ws)) {
        report(ld, AT_VALUE, "must be an array of workloads, not %s", type_name(ws));
    } else if (json_array_size(ws) == 0) {
        report(ld, AT_VALUE, "must hold at least one workload");
    } else {
        x->n = json_array_size(ws);
        x->w = calloc(x->n, sizeof *x->w);
        if (!x->w) {
            ld->oom = true;
            x->n = 0;
        }
        for (size_t i = 0; i < x->n; i++) {
            push_index(ld, i);
            load_workload(ld, json_array_get(ws, i), i, ws, &x->w[i]);
            pop(ld);
        }
    }
    pop(ld);
}

/* monitoring.sources: comma-separated names of known sources. */
static void check_sources(struct loader *ld, const char *list)
{
    char known[128] = "";
    for (size_t i = 0; i < source_table_len; i++) {
        strncat(known, source_table[i]->name, sizeof known - strlen(known) - 3);
        if (i + 1 < source_table_len)
            strncat(known, ", ", sizeof known - strlen(known) - 1);
    }
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char name[64];
        if (n == 0) {
            report(ld, AT_VALUE, "empty source name in %s (known: %s)", quote(ld, list), known);
            return;
        }
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        if (n >= sizeof name || !source_find(name)) {
            report(ld, AT_VALUE, "unknown source %s (known: %s)", quote(ld, name), known);
            return;
        }
        if (!comma)
            return;
        p = comma + 1;
    }
}

static void load_monitoring(struct loader *ld, json_t *root, struct experiment *x)
{
    json_t *m = member(ld, root, "monitoring", false);
    x->baseline_s = 3;
    if (!m)
        return;
    push_key(ld, "monitoring");
    if (!json_is_object(m)) {
        report(ld, AT_VALUE, "must be an object, not %s", type_name(m));
        pop(ld);
        return;
    }
    static const char *const known[] = {"interval", "sources", "baseline_s", "meter", NULL};
    check_known(ld, m, known);
    if (json_object_get(m, "interval")) {
        double iv;
        if (get_duration(ld, m, "interval", 0, SAMPLER_INTERVAL_MIN_NS, SAMPLER_INTERVAL_MAX_NS,
                         &iv))
            x->interval_ns = (int64_t)llround(iv * 1e9);
    }
    const char *sources = get_string(ld, m, "sources", false, true);
    if (sources) {
        push_key(ld, "sources");
        check_sources(ld, sources);
        pop(ld);
        x->sources = xstrdup(ld, sources);
    }
    get_duration(ld, m, "baseline_s", 3, 0, 600 * 1000000000LL, &x->baseline_s);
    const char *meter = get_string(ld, m, "meter", false, true);
    if (meter) {
        push_key(ld, "meter");
        struct meter_spec spec;
        char err[512];
        if (meter_spec_parse(meter, &spec, err, sizeof err) < 0)
            report(ld, AT_VALUE, "%s", err);
        else
            x->meter = xstrdup(ld, meter);
        pop(ld);
    }
    pop(ld);
}

static void load_embodied(struct loader *ld, json_t *e, struct experiment *x)
{
    push_key(ld, "embodied");
    if (!json_is_array(e)) {
        report(ld, AT_VALUE, "must be an array of objects, not %s", type_name(e));
        pop(ld);
        return;
    }
    size_t n = json_array_size(e);
    x->embodied = n ? calloc(n, sizeof *x->embodied) : NULL;
    if (n && !x->embodied) {
        ld->oom = true;
        pop(ld);
        return;
    }
    x->n_embodied = n;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(e, i);
        struct carbon_embodied_override *eo = &x->embodied[i];
        push_index(ld, i);
        if (!json_is_object(o)) {
            report(ld, AT_VALUE, "must be an object, not %s", type_name(o));
            pop(ld);
            continue;
        }
        static const char *const known[] = {"component", "model", "kg_co2e", "lifetime_years",
                                            NULL};
        check_known(ld, o, known);
        const char *comp = get_string(ld, o, "component", true, false);
        if (comp) {
            static const char *const comps[] = {"gpu", "cpu", "server", "dram", "ssd"};
            bool ok = false;
            for (size_t k = 0; k < sizeof comps / sizeof comps[0] && !ok; k++)
                ok = strcmp(comp, comps[k]) == 0;
            push_key(ld, "component");
            if (ok)
                snprintf(eo->component, sizeof eo->component, "%s", comp);
            else
                report(ld, AT_VALUE, "%s is not a component: use gpu, cpu, server, dram or ssd",
                       quote(ld, comp));
            pop(ld);
        }
        const char *model = get_string(ld, o, "model", false, false);
        if (model) {
            push_key(ld, "model");
            if (strlen(model) >= sizeof eo->model)
                report(ld, AT_VALUE, "longer than %zu characters", sizeof eo->model - 1);
            else
                snprintf(eo->model, sizeof eo->model, "%s", model);
            pop(ld);
        }
        get_number(ld, o, "kg_co2e", true, 0, 0, false, INFINITY, false, &eo->kg_co2e);
        get_number(ld, o, "lifetime_years", true, 0, 0, false, INFINITY, false,
                   &eo->lifetime_years);
        pop(ld);
    }
    pop(ld);
}

static void load_carbon(struct loader *ld, json_t *root, struct experiment *x)
{
    json_t *c = member(ld, root, "carbon", false);
    x->pue = 1;
    if (!c)
        return;
    push_key(ld, "carbon");
    if (!json_is_object(c)) {
        report(ld, AT_VALUE, "must be an object, not %s", type_name(c));
        pop(ld);
        return;
    }
    static const char *const known[] = {"region", "g_per_kwh", "intensity_file",
                                        "pue",    "embodied",  NULL};
    check_known(ld, c, known);

    const char *region = get_string(ld, c, "region", false, true);
    if (region) {
        struct grid_intensity gi;
        push_key(ld, "region");
        if (table_grid_lookup(region, &gi, NULL) < 0)
            report(ld, AT_VALUE,
                   "unknown region %s: use an ISO 3166 alpha-3 code from "
                   "data/grid_intensity.csv (e.g. USA, FRA, DEU) or WORLD",
                   quote(ld, region));
        else
            x->region = xstrdup(ld, gi.region);
        pop(ld);
    }
    get_number(ld, c, "g_per_kwh", false, 0, 0, false, INFINITY, false, &x->g_per_kwh);
    const char *file = get_string(ld, c, "intensity_file", false, true);
    if (file) {
        push_key(ld, "intensity_file");
        char *abs = resolve_path(ld, file);
        if (abs && check_file(ld, file, abs, false, false))
            x->intensity_file = abs;
        else
            free(abs);
        pop(ld);
    }

    /* at most one intensity: every one after the first in the document is reported */
    static const char *const one_of[] = {"region", "g_per_kwh", "intensity_file"};
    const char *first = NULL;
    int first_line = 0, first_col = 0;
    for (size_t k = 0; k < 3; k++) {
        if (!json_object_get(c, one_of[k]))
            continue;
        int line, col;
        push_key(ld, one_of[k]);
        locate(ld, ld->depth, false, &line, &col);
        pop(ld);
        if (!first || line < first_line || (line == first_line && col < first_col)) {
            first = one_of[k];
            first_line = line;
            first_col = col;
        }
    }
    for (size_t k = 0; k < 3 && first; k++) {
        if (!json_object_get(c, one_of[k]) || one_of[k] == first)
            continue;
        push_key(ld, one_of[k]);
        report(ld, AT_VALUE,
               "give only one of region, g_per_kwh and intensity_file (%s is at line %d)", first,
               first_line);
        pop(ld);
    }

    get_number(ld, c, "pue", false, 1, 1, true, 5, true, &x->pue);
    json_t *e = member(ld, c, "embodied", false);
    if (e)
        load_embodied(ld, e, x);
    pop(ld);
}

static void load_attribution(struct loader *ld, json_t *root, struct experiment *x)
{
    json_t *a = member(ld, root, "attribution", false);
    x->idle_policy = SPLIT_IDLE;
    if (!a)
        return;
    push_key(ld, "attribution");
    if (!json_is_object(a)) {
        report(ld, AT_VALUE, "must be an object, not %s", type_name(a));
        pop(ld);
        return;
    }
    static const char *const known[] = {"idle_policy", "gpu", NULL};
    check_known(ld, a, known);
    const char *g = get_string(ld, a, "gpu", false, false);
    if (g) {
        push_key(ld, "gpu");
        if (strcmp(g, "nsys") == 0)
            x->gpu_attribution = GPU_ATTR_NSYS;
        else if (strcmp(g, "nvml") != 0)
            report(ld, AT_VALUE, "%s is not a GPU attribution: use nvml or nsys", quote(ld, g));
        bool profiled = false;
        for (size_t i = 0; i < x->n; i++)
            profiled = profiled || x->w[i].profile_nsys;
        if (x->gpu_attribution == GPU_ATTR_NSYS && !profiled)
            report(ld, AT_VALUE,
                   "\"nsys\" splits the GPUs by the kernels of profiled workloads: give at "
                   "least one workload \"profile\": \"nsys\"");
        pop(ld);
    }
    const char *p = get_string(ld, a, "idle_policy", false, false);
    if (p) {
        push_key(ld, "idle_policy");
        if (split_policy_parse(p, &x->idle_policy) < 0)
            report(ld, AT_VALUE, "%s is not an idle policy: use idle, proportional or equal",
                   quote(ld, p));
        pop(ld);
    }
    pop(ld);
}

/* ---- the resolved document ---- */

static json_t *int_array(const int *a, size_t n)
{
    json_t *j = json_array();
    for (size_t i = 0; j && i < n; i++)
        json_array_append_new(j, json_integer(a[i]));
    return j;
}

/* The document with defaults filled in and paths absolute: itself a valid experiment file.
 * NULL when out of memory. */
static json_t *resolved_json(const struct experiment *x, json_t *root)
{
    json_t *r = json_object();
    json_t *ws = json_array();
    if (!r || !ws) {
        json_decref(r);
        json_decref(ws);
        return NULL;
    }
    json_object_set_new(r, "experiment_name", json_string(x->name));
    if (x->description)
        json_object_set_new(r, "description", json_string(x->description));
    json_t *wsrc = json_object_get(root, "workloads");
    for (size_t i = 0; i < x->n; i++) {
        const struct workload_spec *w = &x->w[i];
        json_t *o = json_object(), *env = json_object();
        json_t *args = json_deep_copy(json_object_get(json_array_get(wsrc, i), "args"));
        json_object_set_new(o, "name", json_string(w->name));
        json_object_set_new(o, "type", w->type ? json_string(w->type) : json_null());
        json_object_set_new(o, "launch", json_string(experiment_launch_name(w->launch)));
        json_object_set_new(o, "gpu",
                            w->gpu_bool   ? json_boolean(w->gpu_use == WORKLOAD_GPU_YES)
                            : w->gpu >= 0 ? json_integer(w->gpu)
                                          : json_null());
        json_object_set_new(o, "script", json_string(w->script));
        json_object_set_new(o, "args", args ? args : json_array());
        json_object_set_new(o, "cwd", json_string(w->cwd ? w->cwd : x->dir));
        for (size_t k = 0; k < w->n_env; k++) {
            const char *eq = strchr(w->env[k], '=');
            char *key = strndup(w->env[k], (size_t)(eq - w->env[k]));
            if (key)
                json_object_set_new(env, key, json_string(eq + 1));
            free(key);
        }
        json_object_set_new(o, "env", env);
        json_object_set_new(o, "delay_s", json_real(w->delay_s));
        json_object_set_new(o, "timeout_s",
                            w->timeout_s > 0 ? json_real(w->timeout_s) : json_null());
        if (w->profile_nsys)
            json_object_set_new(o, "profile", json_string("nsys"));
        json_t *alloc = json_object_get(json_array_get(wsrc, i), "allocation");
        if (alloc) {
            json_t *a = json_object();
            if (json_object_get(alloc, "cpus"))
                json_object_set_new(a, "cpus", int_array(w->cpus, w->n_cpus));
            if (json_object_get(alloc, "gpus"))
                json_object_set_new(a, "gpus", int_array(w->gpus, w->n_gpus));
            json_object_set_new(o, "allocation", a);
        }
        json_array_append_new(ws, o);
    }
    json_object_set_new(r, "workloads", ws);

    json_t *m = json_object();
    json_t *msrc = json_object_get(root, "monitoring");
    if (x->interval_ns)
        json_object_set(m, "interval", json_object_get(msrc, "interval"));
    if (x->sources)
        json_object_set_new(m, "sources", json_string(x->sources));
    if (x->meter)
        json_object_set_new(m, "meter", json_string(x->meter));
    json_object_set_new(m, "baseline_s", json_real(x->baseline_s));
    json_object_set_new(r, "monitoring", m);

    json_t *c = json_object();
    if (x->region)
        json_object_set_new(c, "region", json_string(x->region));
    if (x->g_per_kwh > 0)
        json_object_set_new(c, "g_per_kwh", json_real(x->g_per_kwh));
    if (x->intensity_file)
        json_object_set_new(c, "intensity_file", json_string(x->intensity_file));
    json_object_set_new(c, "pue", json_real(x->pue));
    if (x->embodied) {
        json_t *e = json_array();
        for (size_t i = 0; i < x->n_embodied; i++) {
            const struct carbon_embodied_override *eo = &x->embodied[i];
            json_t *o = json_object();
            json_object_set_new(o, "component", json_string(eo->component));
            if (eo->model[0])
                json_object_set_new(o, "model", json_string(eo->model));
            json_object_set_new(o, "kg_co2e", json_real(eo->kg_co2e));
            json_object_set_new(o, "lifetime_years", json_real(eo->lifetime_years));
            json_array_append_new(e, o);
        }
        json_object_set_new(c, "embodied", e);
    }
    json_object_set_new(r, "carbon", c);

    json_t *a = json_object();
    json_object_set_new(a, "idle_policy", json_string(split_policy_name(x->idle_policy)));
    if (x->gpu_attribution == GPU_ATTR_NSYS)
        json_object_set_new(a, "gpu", json_string("nsys"));
    json_object_set_new(r, "attribution", a);
    return r;
}

/* ---- loading ---- */

static int read_text(const char *path, char **ret, size_t *ret_len)
{
    return file_read_all(path, EXPERIMENT_FILE_MAX, ret, ret_len);
}

/* The absolute directory holding path. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *d = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!d)
        return NULL;
    char *abs = realpath(d, NULL);
    free(d);
    return abs;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n", s[i]))
            return false;
    return true;
}

/* What carma run refuses in a file that loads: more workloads than it can split, a baseline
 * shorter than two of the file's sampling intervals, an intensity file whose content is bad.
 * Checked here so that carma validate says it, with the line and column, before a run. */
static void check_for_run(struct loader *ld, json_t *root, struct experiment *x)
{
    json_t *w = json_object_get(root, "workloads");
    if (json_is_array(w) && json_array_size(w) > SPLIT_JOBS_MAX) {
        push_key(ld, "workloads");
        report(ld, AT_VALUE, "%zu workloads: carma run splits the energy of at most %d",
               json_array_size(w), SPLIT_JOBS_MAX);
        pop(ld);
    }
    json_t *m = json_object_get(root, "monitoring");
    int64_t interval_ns = x->interval_ns ? x->interval_ns : SAMPLER_INTERVAL_DEFAULT_NS;
    if (json_is_object(m) && json_object_get(m, "baseline_s") && x->baseline_s > 0 &&
        llround(x->baseline_s * 1e9) < 2 * interval_ns) {
        char iv[32];
        time_format_duration(interval_ns, iv, sizeof iv);
        push_key(ld, "monitoring");
        push_key(ld, "baseline_s");
        report(ld, AT_VALUE,
               "the baseline must be at least two sampling intervals (2 x %s%s), or 0 for none", iv,
               x->interval_ns ? "" : ", the default interval");
        pop(ld);
        pop(ld);
    }
    json_t *c = json_object_get(root, "carbon");
    const char *file = json_string_value(json_object_get(c, "intensity_file"));
    if (x->intensity_file && file) {
        struct carbon_series series = {0};
        struct carma_err e = {0};
        if (carbon_series_load(x->intensity_file, &series, &e) < 0) {
            /* the message names the file as the experiment writes it, not its absolute path */
            size_t n = strlen(x->intensity_file);
            const char *msg = e.msg;
            bool abs_first = strncmp(msg, x->intensity_file, n) == 0;
            push_key(ld, "carbon");
            push_key(ld, "intensity_file");
            report(ld, AT_VALUE, "%s%s", abs_first ? file : "", abs_first ? msg + n : msg);
            pop(ld);
            pop(ld);
        }
        carbon_series_free(&series);
    }
}

int experiment_load(const char *path, struct experiment *ret, char **errors)
{
    struct experiment x = {0};
    struct loader ld = {.file = path};
    char *text = NULL, *out = NULL;
    size_t len = 0;
    json_t *root = NULL;
    int r;

    memset(ret, 0, sizeof *ret);
    if (errors)
        *errors = NULL;
    r = read_text(path, &text, &len);
    if (r == -ENOMEM)
        goto out;
    if (r == -ESPIPE) {
        struct carma_err fe;
        file_input_err(&fe, path, r);
        if (asprintf(&out, "%s\n", fe.msg) < 0)
            out = NULL;
        goto out;
    }
    if (r < 0) {
        if (asprintf(&out, "%s: cannot read: %s%s\n", path, strerror(-r),
                     r == -EFBIG ? " (the limit is 1 MiB)" : "") < 0)
            out = NULL;
        goto out;
    }
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        /* jansson reads "12\0" as 12: the file is not text */
        struct cursor c = {text, nul, 1, 0};
        while (c.p < c.end)
            cur_adv(&c);
        r = -EINVAL;
        if (asprintf(&out, "%s:%d:%d: JSON syntax: a NUL byte (not text)\n", path, c.line,
                     c.col + 1) < 0)
            out = NULL;
        goto out;
    }
    if (blank(text, len)) {
        r = -EINVAL;
        if (asprintf(&out, "%s:1:1: JSON syntax: the file is empty\n", path) < 0)
            out = NULL;
        goto out;
    }
    json_error_t je;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!root) {
        /* jansson quotes the token where it stopped, which may hold a line end: escaped, so
         * that the problem stays one line */
        char msg[6 * sizeof je.text + 1];
        size_t k = 0;
        for (const unsigned char *p = (const unsigned char *)je.text; *p; p++)
            k += (size_t)(*p < 0x20 || *p == 0x7F ? snprintf(msg + k, sizeof msg - k, "\\u%04x", *p)
                                                  : snprintf(msg + k, sizeof msg - k, "%c", *p));
        msg[k] = '\0';
        r = -EINVAL;
        if (asprintf(&out, "%s:%d:%d: JSON syntax: %s\n", path, je.line > 0 ? je.line : 1,
                     je.column > 0 ? je.column : 1, msg) < 0)
            out = NULL;
        goto out;
    }

    ld.text = text;
    ld.len = len;
    x.path = strdup(path);
    x.dir = dir_of(path);
    if (!x.path || !x.dir) {
        r = x.path && errno != ENOMEM ? -errno : -ENOMEM;
        if (r != -ENOMEM && asprintf(&out, "%s: cannot read: %s\n", path, strerror(-r)) < 0)
            out = NULL;
        goto out;
    }
    ld.dir = x.dir;

    if (!json_is_object(root)) {
        report(&ld, AT_VALUE, "must be an object, not %s", type_name(root));
    } else {
        static const char *const known[] = {
            "experiment_name", "description", "workloads", "monitoring",
            "carbon",          "attribution", NULL};
        check_known(&ld, root, known);
        const char *name = get_string(&ld, root, "experiment_name", true, true);
        if (name) {
            push_key(&ld, "experiment_name");
            check_name(&ld, name);
            pop(&ld);
            x.name = xstrdup(&ld, name);
        }
        const char *desc = get_string(&ld, root, "description", false, false);
        if (desc)
            x.description = xstrdup(&ld, desc);
        load_workloads(&ld, root, &x);
        load_monitoring(&ld, root, &x);
        load_carbon(&ld, root, &x);
        load_attribution(&ld, root, &x);
        check_for_run(&ld, root, &x);
    }
    if (ld.oom) {
        r = -ENOMEM;
        goto out;
    }
    if (ld.npb > 0) {
        r = -EINVAL;
        qsort(ld.pb, ld.npb, sizeof *ld.pb, problem_cmp);
        size_t size = 0;
        FILE *f = open_memstream(&out, &size);
        if (!f) {
            r = -ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < ld.npb; i++)
            fprintf(f, "%s:%d:%d: %s\n", path, ld.pb[i].line, ld.pb[i].col, ld.pb[i].msg);
        if (fclose(f) != 0) {
            free(out);
            out = NULL;
            r = -ENOMEM;
        }
        goto out;
    }
    x.resolved = resolved_json(&x, root);
    if (!x.resolved) {
        r = -ENOMEM;
        goto out;
    }
    *ret = x;
    memset(&x, 0, sizeof x);
    r = 0;
out:
    for (size_t i = 0; i < ld.npb; i++)
        free(ld.pb[i].msg);
    free(ld.pb);
    json_decref(root);
    free(text);
    experiment_free(&x);
    if (errors)
        *errors = out;
    else
        free(out);
    return r;
}

static void free_strv(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void experiment_free(struct experiment *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->n && x->w; i++) {
        struct workload_spec *w = &x->w[i];
        free(w->name);
        free(w->type);
        free(w->script);
        if (w->argv) {
            for (size_t k = 0; w->argv[k]; k++)
                free(w->argv[k]);
            free(w->argv);
        }
        free(w->cwd);
        free_strv(w->env, w->n_env);
        free(w->cpus);
        free(w->gpus);
    }
    free(x->w);
    free(x->path);
    free(x->dir);
    free(x->name);
    free(x->description);
    free(x->sources);
    free(x->meter);
    free(x->region);
    free(x->intensity_file);
    free(x->embodied);
    json_decref(x->resolved);
    memset(x, 0, sizeof *x);
}
