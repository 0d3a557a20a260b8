/*
 * pyjson: numbers and JSON text byte for byte as CPython 3.11 prints them (see pyjson.h).
 *
 * repr(float) is the shortest decimal string that reads back as the same double, the one
 * nearest to it when several of that length do (David Gay's dtoa mode 0, which CPython uses).
 * Here the C library does the exact work: "%.*e" is correctly rounded and strtod is exact, so
 * for each length we take the nearest decimal and, where the rounding interval is lopsided (a
 * power of two, whose lower neighbour is half as far), its neighbours; a binary search finds
 * the shortest length. The digits are then laid out by CPython's rules (float_repr_style
 * 'short': exponent form when the decimal exponent is < -4 or >= 16).
 *
 * format(x, '[+][,].Nf') is glibc's "%.*f" (also correctly rounded, half to even on exact
 * ties) with the integer digits grouped and CPython's spelling of the non-finite values.
 *
 * json.dumps walks the tree with an explicit stack, so a deep tree cannot overflow the C stack.
 * The text never depends on the locale: digits are taken from printf's output and the decimal
 * point is always written as '.'.
 */
#include "core/pyjson.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"

/* ---- repr(float) ---- */

/* A decimal d1.d2d3...dn × 10^exp with n significant digits (n <= 17). */
struct dec {
    char d[20];
    int n;
    int exp;
};

/*
 * The correctly rounded n-digit decimal of finite, positive x ("%.*e") into out, its digits
 * taken whatever the locale. Returns whether it reads back (strtod, round to nearest) as x.
 */
static bool dec_nearest(double x, int n, struct dec *out)
{
    char s[48];
    snprintf(s, sizeof s, "%.*e", n - 1, x);
    const char *p = s;
    out->n = 0;
    while (*p && *p != 'e') {
        if (*p >= '0' && *p <= '9')
            out->d[out->n++] = *p;
        p++;
    }
    out->exp = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;
    return strtod(s, NULL) == x;
}

/* Whether a reads back as x. */
static bool dec_reads_as(const struct dec *a, double x)
{
    char s[48];
    snprintf(s, sizeof s, "%c.%.*se%d", a->d[0], a->n - 1, a->d + 1, a->exp);
    return strtod(s, NULL) == x;
}

/* a plus one unit in its last digit, carrying (9.99e5 + 0.01e5 = 1.00e6); n stays. */
static void dec_up(struct dec *a)
{
    int i = a->n - 1;
    while (i >= 0 && a->d[i] == '9')
        a->d[i--] = '0';
    if (i >= 0) {
        a->d[i]++;
    } else {
        a->d[0] = '1';
        a->exp++;
    }
}

/*
 * Whether x's rounding interval is lopsided: x is a power of two above the smallest normal, so
 * the next double below is half as far as the next one above.
 */
static bool lopsided(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return (u & 0x000fffffffffffffull) == 0 && (u >> 52 & 0x7ff) > 1;
}

/*
 * An n-digit decimal that reads back as finite, positive x, the nearest one when there are
 * several, into out; false when there is none. The nearest n-digit decimal is that one, unless
 * the interval is lopsided: then it can lie just out below x while the next one up is in (one
 * further down never is, being farther than the nearest, in the narrow side).
 */
static bool dec_try(double x, int n, struct dec *out)
{
    if (dec_nearest(x, n, out))
        return true;
    if (!lopsided(x))
        return false;
    struct dec up = *out;
    dec_up(&up);
    if (!dec_reads_as(&up, x))
        return false;
    *out = up;
    return true;
}

/*
 * The shortest decimal that reads back as finite, positive x (17 digits always do). Having one
 * of n digits is monotone in n (an n-digit decimal is also one of n + 1 digits), so a binary
 * search over 1..17 finds the least n.
 */
static void dec_shortest(double x, struct dec *out)
{
    int lo = 1, hi = 17;
    struct dec cand;
    bool found = false;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (dec_try(x, mid, &cand)) {
            *out = cand;
            found = true;
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    if (!found)
        dec_nearest(x, 17, out);
    /* never needed (the least n has no trailing 0), kept so the text is shortest whatever */
    while (out->n > 1 && out->d[out->n - 1] == '0')
        out->n--;
}

/* Appends n bytes of s at *pp. */
static void put(char **pp, const char *s, size_t n)
{
    memcpy(*pp, s, n);
    *pp += n;
}

size_t pyjson_repr(double x, char *buf)
{
    char *p = buf;
    if (isnan(x)) {
        strcpy(buf, "nan"); /* CPython drops the sign of a NaN */
        return 3;
    }
    if (signbit(x)) {
        *p++ = '-';
        x = -x;
    }
    if (isinf(x)) {
        put(&p, "inf", 3);
    } else if (x == 0) {
        put(&p, "0.0", 3);
    } else {
        struct dec a;
        dec_shortest(x, &a);
        if (a.exp < -4 || a.exp >= 16) {
            *p++ = a.d[0];
            if (a.n > 1) {
                *p++ = '.';
                put(&p, a.d + 1, (size_t)a.n - 1);
            }
            p += sprintf(p, "e%c%02d", a.exp < 0 ? '-' : '+', abs(a.exp));
        } else if (a.exp < 0) {
            put(&p, "0.", 2);
            for (int i = 0; i < -a.exp - 1; i++)
                *p++ = '0';
            put(&p, a.d, (size_t)a.n);
        } else {
            int ip = a.exp + 1; /* integer digits */
            for (int i = 0; i < ip; i++)
                *p++ = i < a.n ? a.d[i] : '0';
            *p++ = '.';
            if (a.n > ip)
                put(&p, a.d + ip, (size_t)(a.n - ip));
            else
                *p++ = '0';
        }
    }
    *p = '\0';
    return (size_t)(p - buf);
}

/* ---- format(x, '[+][,].Nf') ---- */

size_t pyjson_format(double x, int decimals, bool commas, bool plus, char *buf)
{
    char *p = buf;
    if (decimals < 0)
        decimals = 0;
    if (decimals > 20)
        decimals = 20;
    if (isnan(x)) { /* CPython: never "-nan" */
        if (plus)
            *p++ = '+';
        put(&p, "nan", 4); /* with its NUL */
        return (size_t)(p - 1 - buf);
    }
    if (signbit(x))
        *p++ = '-';
    else if (plus)
        *p++ = '+';
    if (isinf(x)) {
        put(&p, "inf", 4); /* with its NUL */
        return (size_t)(p - 1 - buf);
    }

    char s[PYJSON_NUM_MAX];
    snprintf(s, sizeof s, "%.*f", decimals, fabs(x));
    size_t nint = strspn(s, "0123456789");
    for (size_t i = 0; i < nint; i++) {
        if (commas && i > 0 && (nint - i) % 3 == 0)
            *p++ = ',';
        *p++ = s[i];
    }
    if (decimals > 0) {
        const char *f = s + nint; /* the decimal point, whatever the locale spells it */
        while (*f && (*f < '0' || *f > '9'))
            f++;
        *p++ = '.';
        put(&p, f, strspn(f, "0123456789"));
    }
    *p = '\0';
    return (size_t)(p - buf);
}

/* ---- json.dumps ---- */

static int out_str(struct csv_buf *b, const char *s)
{
    return csv_buf_raw(b, s, strlen(s));
}

/*
 * The code point of the UTF-8 sequence at s (n bytes left) and its length in *len; -1 (length
 * 1) for a byte that does not start a well-formed sequence (overlong, surrogate, > U+10FFFF,
 * truncated).
 */
static int32_t utf8_next(const unsigned char *s, size_t n, size_t *len)
{
    static const int32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    unsigned c = s[0];
    size_t k = c >= 0xf5 ? 0 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    *len = 1;
    if (k == 0 || k > n)
        return -1;
    int32_t cp = (int32_t)(c & (0x7f >> k));
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *len = k;
    return cp;
}

/*
 * s (n bytes of UTF-8) as a JSON string literal with ensure_ascii, as CPython's
 * c_encode_basestring_ascii writes it. jansson keeps its strings valid UTF-8; a byte that is
 * not (json_stringn_nocheck) is written as \ufffd, one for each such byte.
 */
static int out_json_string(struct csv_buf *b, const char *s, size_t n)
{
    /* the worst case is 12 bytes ("\ud83d\ude00") per 4 input bytes, or 6 per byte */
    if (n > (SIZE_MAX - 2) / 6 || csv_buf_reserve(b, 6 * n + 2) < 0)
        return -ENOMEM;
    char *p = b->data + b->len;
    *p++ = '"';
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c >= 0x20 && c <= 0x7e && c != '"' && c != '\\') {
            *p++ = (char)c;
            i++;
            continue;
        }
        const char *esc = c == '"'    ? "\\\""
                          : c == '\\' ? "\\\\"
                          : c == '\n' ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                          : c == '\b' ? "\\b"
                          : c == '\f' ? "\\f"
                                      : NULL;
        if (esc) {
            put(&p, esc, 2);
            i++;
            continue;
        }
        size_t len = 1;
        int32_t cp = c < 0x80 ? (int32_t)c : utf8_next(u + i, n - i, &len);
        if (cp < 0)
            cp = 0xfffd;
        i += len;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            p += sprintf(p, "\\u%04x\\u%04x", (unsigned)(0xd800 | cp >> 10),
                         (unsigned)(0xdc00 | (cp & 0x3ff)));
        } else {
            p += sprintf(p, "\\u%04x", (unsigned)cp);
        }
    }
    *p++ = '"';
    *p = '\0';
    b->len = (size_t)(p - b->data);
    return 0;
}

/* A newline and level × indent spaces when indenting, else sep (", " between items or ""). */
static int out_break(struct csv_buf *b, int indent, size_t level, const char *sep)
{
    if (indent < 0)
        return out_str(b, sep);
    size_t n = (size_t)indent * level;
    if (csv_buf_reserve(b, n + 1) < 0)
        return -ENOMEM;
    b->data[b->len++] = '\n';
    memset(b->data + b->len, ' ', n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* An open array or object of the walk: the next index, or the next object iterator. */
struct frame {
    const json_t *c;
    size_t i;
    void *iter;
};

struct walk {
    struct frame *f;
    size_t n, cap;
};

/*
 * Writes scalar v, or the opening bracket of container v and pushes it (an empty one is
 * written whole). -ENOMEM, or -ELOOP for a container that holds itself (CPython raises
 * "Circular reference detected").
 */
static int out_value(struct csv_buf *b, struct walk *w, const json_t *v)
{
    char num[PYJSON_NUM_MAX];
    switch (json_typeof(v)) {
    case JSON_OBJECT:
    case JSON_ARRAY: {
        bool obj = json_is_object(v);
        if (obj ? json_object_size(v) == 0 : json_array_size(v) == 0)
            return out_str(b, obj ? "{}" : "[]");
        if (w->n > 0) {
            /*
             * A cycle makes the walk descend forever, the path repeating with some period L
             * from some depth D on. Comparing with one ancestor, at index 2^j - 1 for depths
             * 2^j .. 2^(j+1) - 1, finds the repeat once 2^j > D and 2^j >= L: O(1) a step, and
             * a match is always a container inside itself.
             */
            size_t k = 1;
            while (k <= w->n / 2)
                k *= 2;
            if (w->f[k - 1].c == v)
                return -ELOOP;
        }
        if (w->n == w->cap) {
            size_t cap = w->cap ? 2 * w->cap : 16;
            struct frame *f = realloc(w->f, cap * sizeof *f);
            if (!f)
                return -ENOMEM;
            w->f = f;
            w->cap = cap;
        }
        /* jansson's iterator API takes a non-const object; it only reads it */
        w->f[w->n++] = (struct frame){.c = v, .iter = obj ? json_object_iter((json_t *)v) : NULL};
        return out_str(b, obj ? "{" : "[");
    }
    case JSON_STRING:
        return out_json_string(b, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return out_str(b, num);
    case JSON_REAL: {
        /* json_real cannot hold NaN or an infinity; json.dumps would write these */
        double x = json_real_value(v);
        if (isnan(x))
            return out_str(b, "NaN");
        if (isinf(x))
            return out_str(b, x < 0 ? "-Infinity" : "Infinity");
        pyjson_repr(x, num);
        return out_str(b, num);
    }
    case JSON_TRUE:
        return out_str(b, "true");
    case JSON_FALSE:
        return out_str(b, "false");
    case JSON_NULL:
        return out_str(b, "null");
    }
    return -EINVAL;
}

/*
 * The body of pyjson_dumps: writes the items of the open containers one at a time until the
 * walk is empty. Returns 0 or a negative errno.
 */
static int out_walk(struct csv_buf *b, struct walk *w, int indent)
{
    int rc = 0;
    while (rc == 0 && w->n > 0) {
        struct frame *f = &w->f[w->n - 1];
        const json_t *c = f->c, *v;
        bool obj = json_is_object(c);
        bool first = f->i == 0;
        bool done = obj ? f->iter == NULL : f->i == json_array_size(c);
        if (done) {
            w->n--;
            rc = out_break(b, indent, w->n, "");
            if (rc == 0)
                rc = out_str(b, obj ? "}" : "]");
            continue;
        }
        f->i++;
        if (!first && (rc = out_str(b, ",")) < 0)
            break;
        if ((rc = out_break(b, indent, w->n, first ? "" : " ")) < 0)
            break;
        if (obj) {
            json_t *o = (json_t *)c; /* the iterator API is not const; nothing is changed */
            const char *key = json_object_iter_key(f->iter);
#if JANSSON_VERSION_HEX >= 0x020e00
            size_t klen = json_object_iter_key_len(f->iter); /* keys may hold NUL since 2.14 */
#else
            size_t klen = strlen(key);
#endif
            v = json_object_iter_value(f->iter);
            f->iter = json_object_iter_next(o, f->iter);
            rc = out_json_string(b, key, klen);
            if (rc == 0)
                rc = out_str(b, ": ");
        } else {
            v = json_array_get(c, f->i - 1);
        }
        if (rc == 0)
            rc = out_value(b, w, v); /* may move w->f: f is not used after this */
    }
    return rc;
}

char *pyjson_dumps(const json_t *v, int indent)
{
    if (!v)
        return NULL;
    struct csv_buf b = {0};
    struct walk w = {0};
    int rc = csv_buf_reserve(&b, 64);
    if (rc == 0)
        rc = out_value(&b, &w, v);
    if (rc == 0)
        rc = out_walk(&b, &w, indent);
    free(w.f);
    if (rc < 0) {
        csv_buf_free(&b);
        return NULL;
    }
    return b.data;
}
