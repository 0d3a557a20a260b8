/*
 * promparse: the Prometheus text exposition format (0.0.4) parsed line by line into samples.
 *
 * One pass over the body. Lines are found with memchr; each line is parsed by hand (no regex,
 * no recursion, every read checked against the line's end). Strings (names, unescaped label
 * values, HELP text) and the label arrays of the samples go into an arena of a few large
 * blocks that the document owns; samples and families are two growing arrays. A sample's name
 * and labels reuse the previous sample's strings when they are equal, which is the common case
 * in exporter output, so the arena stays well below the body's size.
 *
 * Metric names (of samples and of HELP/TYPE lines) are interned in an open-addressing hash
 * table keyed by SipHash-1-3 with a random key (per process), so that a hostile body cannot
 * make lookups quadratic. A sample is linked to its family at the end, when every HELP line
 * has been seen (HELP may follow the samples; TYPE may not).
 *
 * Values follow Go's strconv.ParseFloat without hexadecimal floats and '_' digit separators,
 * as Prometheus' own parsers do: exact decimals take Clinger's fast path, the rest go to
 * strtod_l in the C locale (correctly rounded either way); overflow is an error, underflow is
 * not.
 */
#include "collect/promparse.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

const struct prom_limits prom_limits_default = {
    .max_bytes = (size_t)16 << 20,
    .max_samples = 200000,
    .max_labels = 64,
    .max_line = (size_t)64 << 10,
    .max_families = 10000,
};

#define NONE       SIZE_MAX
#define UNRESOLVED (SIZE_MAX - 1)

/* ---- arena ---- */

#define ARENA_MIN_BLOCK ((size_t)4 << 10)
#define ARENA_MAX_BLOCK ((size_t)4 << 20)

struct arena_block {
    struct arena_block *next;
    size_t size;
    size_t used;
    size_t pad_; /* keeps data 16-byte aligned */
    unsigned char data[];
};

/* What prom_doc.mem points to. */
struct prom_store {
    struct arena_block *blocks; /* newest first */
    struct prom_sample *samples;
    struct prom_family *families;
};

/* ---- parser state ---- */

/* A metric name seen in a sample or a HELP/TYPE line. */
struct name_ent {
    const char *name; /* in the arena, NUL-terminated */
    size_t len;
    uint64_t hash;
    size_t family;      /* family with exactly this name, or NONE */
    size_t resolved;    /* family its samples link to; UNRESOLVED until the end */
    size_t sample_line; /* first sample with this name; 0: none */
    size_t help_line;
    size_t type_line;
};

/* A label of the sample being parsed (or of the one before it). */
struct lab {
    const char *name;
    const char *value;
    size_t nlen;
    size_t vlen;
};

struct parser {
    const struct prom_limits *lim;
    struct carma_err *e;
    size_t line;
    struct prom_store *st;
    size_t next_block;

    struct prom_sample *samples;
    size_t nsamples, cap_samples;
    struct prom_family *families;
    size_t nfamilies, cap_families;

    struct name_ent *ents;
    size_t nents, cap_ents;
    uint64_t *slots; /* (hash's high half << 32) | (entry index + 1); 0: empty */
    size_t mask;
    uint64_t k0, k1;

    struct lab *cur, *prev; /* labels of this sample and of the previous one */
    size_t cap_labs, nprev;
    const struct prom_label *prev_arr;
    const char *prev_src; /* name of the previous sample, in the body */
    size_t prev_src_len;
    size_t prev_ent;

    char *tmp; /* scratch: suffixed names, numbers for strtod */
    size_t cap_tmp;
    locale_t cloc;
};

/* ---- small helpers ---- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha_(char c)
{
    return (unsigned char)((c | 0x20) - 'a') < 26 || c == '_';
}

static bool is_mstart(char c)
{
    return is_alpha_(c) || c == ':';
}

static bool is_mcont(char c)
{
    return is_alpha_(c) || is_digit(c) || c == ':';
}

static bool is_lcont(char c)
{
    return is_alpha_(c) || is_digit(c);
}

static const char *skip_blank(const char *s, const char *end)
{
    while (s < end && is_blank(*s))
        s++;
    return s;
}

/* s in a message: 'c' when printable, else \xNN; "end of line" at end. */
static const char *show_char(char buf[16], const char *s, const char *end)
{
    if (s >= end)
        return "end of line";
    unsigned char c = (unsigned char)*s;
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02x", c);
    return buf;
}

/* Records "line N: <message>" in p->e; returns code. */
__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, int code, const char *fmt,
                                                      ...)
{
    char msg[CARMA_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return carma_err_set(p->e, code, "line %zu: %s", p->line, msg);
}

static int fail_nomem(struct parser *p)
{
    return carma_err_set(p->e, -ENOMEM, "out of memory parsing the metrics body");
}

/* At most this many bytes of a name or token are quoted in a message. */
#define SHOW_MAX 64
#define SHOW(n)  (int)((n) < SHOW_MAX ? (n) : SHOW_MAX)

/*
 * arr (of elem-byte items, capacity *cap) grown to hold at least need items: doubled from
 * first. Returns the array (arr itself when it is big enough), or NULL with arr untouched.
 */
static void *grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return arr;
    size_t n = *cap ? *cap : first;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem)
            return NULL;
        n *= 2;
    }
    void *q = realloc(arr, n * elem);
    if (q)
        *cap = n;
    return q;
}

/* ---- arena ---- */

static void *arena_alloc(struct parser *p, size_t n, size_t align)
{
    struct arena_block *b = p->st->blocks;
    if (b) {
        size_t off = (b->used + align - 1) & ~(align - 1);
        if (off <= b->size && n <= b->size - off) {
            b->used = off + n;
            return b->data + off;
        }
    }
    size_t sz = p->next_block;
    if (sz < n)
        sz = n;
    if (sz > SIZE_MAX - sizeof *b)
        return NULL;
    b = malloc(sizeof *b + sz);
    if (!b)
        return NULL;
    if (p->next_block < ARENA_MAX_BLOCK)
        p->next_block *= 2;
    b->next = p->st->blocks;
    b->size = sz;
    b->used = n;
    p->st->blocks = b;
    return b->data;
}

/* A NUL-terminated copy of the n bytes at s in the arena. */
static const char *arena_strdup(struct parser *p, const char *s, size_t n)
{
    char *d = arena_alloc(p, n + 1, 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static char *scratch(struct parser *p, size_t n)
{
    char *q = grow(p->tmp, &p->cap_tmp, n, 1, 256);
    if (q)
        p->tmp = q;
    return q;
}

/* ---- SipHash-1-3 ---- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

static uint64_t siphash13(const char *s, size_t n, uint64_t k0, uint64_t k1)
{
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL;
    uint64_t v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL;
    uint64_t v3 = k1 ^ 0x7465646279746573ULL;
    const unsigned char *in = (const unsigned char *)s;
    const unsigned char *stop = in + (n & ~(size_t)7);
    for (; in != stop; in += 8) {
        uint64_t m;
        memcpy(&m, in, 8);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)n << 56;
    for (size_t i = 0; i < (n & 7); i++)
        b |= (uint64_t)in[i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/*
 * The hash key: random, drawn once per process (a getrandom call per document costs more than
 * parsing a small one). Threads that race here each draw a key and one of them stays; a
 * document reads both halves once, under the flag, so any pair it sees is random.
 */
static _Atomic uint64_t key_k0, key_k1;
static _Atomic bool key_set;

static void hash_key(struct parser *p)
{
    if (!atomic_load_explicit(&key_set, memory_order_acquire)) {
        uint64_t k[2];
        if (getrandom(k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            k[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)ts.tv_sec;
            k[1] = (uint64_t)(uintptr_t)p * 0xbf58476d1ce4e5b9ULL ^ (uint64_t)(uintptr_t)&ts;
        }
        atomic_store_explicit(&key_k0, k[0], memory_order_relaxed);
        atomic_store_explicit(&key_k1, k[1], memory_order_relaxed);
        atomic_store_explicit(&key_set, true, memory_order_release);
    }
    p->k0 = atomic_load_explicit(&key_k0, memory_order_relaxed);
    p->k1 = atomic_load_explicit(&key_k1, memory_order_relaxed);
}

/* ---- the name table ---- */

#define SLOT_TAG(h) ((h)&0xffffffff00000000ULL)

/* A slot keeps the high half of its name's hash, so that most probes of other names stop
 * there, without reading the entry (a cache miss in a big table). */
static size_t names_find(const struct parser *p, const char *s, size_t n, uint64_t h)
{
    for (size_t i = h & p->mask;; i = (i + 1) & p->mask) {
        uint64_t v = p->slots[i];
        if (!v)
            return NONE;
        if (SLOT_TAG(v) != SLOT_TAG(h))
            continue;
        const struct name_ent *en = &p->ents[(uint32_t)v - 1];
        if (en->hash == h && en->len == n && memcmp(en->name, s, n) == 0)
            return (uint32_t)v - 1;
    }
}

static size_t names_lookup(const struct parser *p, const char *s, size_t n)
{
    return names_find(p, s, n, siphash13(s, n, p->k0, p->k1));
}

static int names_rehash(struct parser *p, size_t nslots)
{
    uint64_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    size_t mask = nslots - 1;
    for (size_t k = 0; k < p->nents; k++) {
        uint64_t h = p->ents[k].hash;
        size_t i = h & mask;
        while (slots[i])
            i = (i + 1) & mask;
        slots[i] = SLOT_TAG(h) | (uint64_t)(k + 1);
    }
    free(p->slots);
    p->slots = slots;
    p->mask = mask;
    return 0;
}

/* The entry of the name s (n bytes), made when it is new. 0 and *ret, or a negative errno. */
static int names_intern(struct parser *p, const char *s, size_t n, size_t *ret)
{
    uint64_t h = siphash13(s, n, p->k0, p->k1);
    size_t k = names_find(p, s, n, h);
    if (k != NONE) {
        *ret = k;
        return 0;
    }
    if (p->nents >= UINT32_MAX - 1)
        return fail(p, -E2BIG, "too many distinct metric names");
    if ((p->nents + 1) * 2 > p->mask + 1 && names_rehash(p, (p->mask + 1) * 2) < 0)
        return fail_nomem(p);
    struct name_ent *ents = grow(p->ents, &p->cap_ents, p->nents + 1, sizeof *ents, 256);
    if (!ents)
        return fail_nomem(p);
    p->ents = ents;
    const char *name = arena_strdup(p, s, n);
    if (!name)
        return fail_nomem(p);
    k = p->nents++;
    p->ents[k] = (struct name_ent){
        .name = name, .len = n, .hash = h, .family = NONE, .resolved = UNRESOLVED};
    size_t i = h & p->mask;
    while (p->slots[i])
        i = (i + 1) & p->mask;
    p->slots[i] = SLOT_TAG(h) | (uint64_t)(k + 1);
    *ret = k;
    return 0;
}

/* ---- numbers ---- */

static const double pow10_tab[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* s[0..n) equals the lower-case word w, ignoring case. */
static bool word_ieq(const char *s, size_t n, const char *w)
{
    size_t i = 0;
    for (; i < n && w[i]; i++)
        if ((s[i] | 0x20) != w[i])
            return false;
    return i == n && !w[i];
}

/*
 * The value token s[0..n) as Go's strconv.ParseFloat(s, 64) reads it, less hexadecimal floats
 * and '_' separators. 0 and *out, -EINVAL (syntax), -ERANGE (overflow), -ENOMEM.
 */
static int parse_float(struct parser *p, const char *s, size_t n, double *out)
{
    size_t i = 0;
    bool neg = false;
    if (n && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i < n && ((s[i] | 0x20) == 'i' || (s[i] | 0x20) == 'n')) {
        if (word_ieq(s + i, n - i, "inf") || word_ieq(s + i, n - i, "infinity")) {
            *out = neg ? -INFINITY : INFINITY;
            return 0;
        }
        if (i == 0 && word_ieq(s, n, "nan")) {
            *out = NAN;
            return 0;
        }
        return -EINVAL;
    }
    uint64_t mant = 0;
    int64_t nd = 0, ndm = 0, dp = 0;
    bool sawdot = false, sawdig = false, trunc = false;
    for (; i < n; i++) {
        char c = s[i];
        if (is_digit(c)) {
            sawdig = true;
            if (c == '0' && nd == 0) {
                dp--;
                continue;
            }
            nd++;
            if (ndm < 19) {
                mant = mant * 10 + (uint64_t)(c - '0');
                ndm++;
            } else if (c != '0') {
                trunc = true;
            }
        } else if (c == '.' && !sawdot) {
            sawdot = true;
            dp = nd;
        } else {
            break;
        }
    }
    if (!sawdig)
        return -EINVAL;
    if (!sawdot)
        dp = nd;
    if (i < n && (s[i] | 0x20) == 'e') {
        i++;
        int64_t esign = 1;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            esign = s[i++] == '-' ? -1 : 1;
        if (i >= n || !is_digit(s[i]))
            return -EINVAL;
        int64_t ex = 0;
        for (; i < n && is_digit(s[i]); i++)
            if (ex < 100000)
                ex = ex * 10 + (s[i] - '0');
        dp += ex * esign;
    }
    if (i != n)
        return -EINVAL;

    /* exact in double arithmetic: an integer below 2^53 times or over an exact power of 10 */
    int64_t ex = mant ? dp - ndm : 0;
    if (!trunc && (mant >> 53) == 0) {
        double f = (double)mant;
        bool ok = false;
        if (ex == 0) {
            ok = true;
        } else if (ex > 0 && ex <= 15 + 22) {
            if (ex > 22) {
                f *= pow10_tab[ex - 22];
                ex = 22;
            }
            if (f <= 1e15) {
                f *= pow10_tab[ex];
                ok = true;
            }
        } else if (ex < 0 && ex >= -22) {
            f /= pow10_tab[-ex];
            ok = true;
        }
        if (ok) {
            *out = neg ? -f : f;
            return 0;
        }
    }

    /* the syntax is plain decimal now, which strtod reads the same way */
    if (!p->cloc) {
        p->cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        if (!p->cloc)
            return -ENOMEM;
    }
    char *buf = scratch(p, n + 1);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    double v = strtod_l(buf, NULL, p->cloc);
    if (errno == ERANGE && isinf(v))
        return -ERANGE;
    *out = v;
    return 0;
}

/* A decimal int64 with an optional sign (Go's strconv.ParseInt(s, 10, 64)). */
static int parse_ts(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (n && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return -EINVAL;
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    int rc = 0;
    for (; i < n; i++) {
        if (!is_digit(s[i]))
            return -EINVAL;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (lim - d) / 10)
            rc = -ERANGE; /* keep looking for a syntax error */
        else
            v = v * 10 + d;
    }
    if (rc)
        return rc;
    *out = neg ? (v > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return 0;
}

/* ---- text ---- */

/* s[0..n) is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        } else {
            return false;
        }
        if (n - i < len)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                return false;
        i += len;
    }
    return true;
}

/*
 * The label value after the opening quote at *ps, up to its closing quote, unescaped into
 * the arena (or the previous sample's equal value at the same position, prev). Sets *ps past
 * the closing quote, *ret and *ret_len.
 */
static int label_value(struct parser *p, const char **ps, const char *end, const struct lab *prev,
                       const char *lname, size_t lnlen, const char **ret, size_t *ret_len)
{
    const char *s = *ps, *v = s;
    unsigned char hi = 0;
    bool esc = false;
    char cb[16];
    for (;;) {
        if (s >= end)
            return fail(p, -EINVAL, "value of label \"%.*s\" not terminated", SHOW(lnlen), lname);
        char c = *s;
        if (c == '"')
            break;
        if (c == '\\') {
            if (s + 1 >= end)
                return fail(p, -EINVAL, "value of label \"%.*s\" not terminated", SHOW(lnlen),
                            lname);
            if (s[1] != '\\' && s[1] != '"' && s[1] != 'n')
                return fail(p, -EINVAL,
                            "invalid escape sequence '\\' followed by %s in the value of label "
                            "\"%.*s\"",
                            show_char(cb, s + 1, end), SHOW(lnlen), lname);
            esc = true;
            s += 2;
            continue;
        }
        hi |= (unsigned char)c;
        s++;
    }
    size_t raw = (size_t)(s - v);
    *ps = s + 1;
    if ((hi & 0x80) && !utf8_valid((const unsigned char *)v, raw))
        return fail(p, -EINVAL, "value of label \"%.*s\" is not valid UTF-8", SHOW(lnlen), lname);
    if (!esc) {
        if (prev && prev->vlen == raw && memcmp(prev->value, v, raw) == 0) {
            *ret = prev->value;
            *ret_len = raw;
            return 0;
        }
        const char *d = arena_strdup(p, v, raw);
        if (!d)
            return fail_nomem(p);
        *ret = d;
        *ret_len = raw;
        return 0;
    }
    char *d = arena_alloc(p, raw + 1, 1);
    if (!d)
        return fail_nomem(p);
    size_t k = 0;
    for (const char *q = v; q < s; q++) {
        if (*q == '\\') {
            q++;
            d[k++] = *q == 'n' ? '\n' : *q;
        } else {
            d[k++] = *q;
        }
    }
    d[k] = '\0';
    *ret = d;
    *ret_len = k;
    return 0;
}

/* ---- families ---- */

static int family_of(struct parser *p, size_t ent, size_t *ret)
{
    struct name_ent *en = &p->ents[ent];
    if (en->family == NONE) {
        if (p->nfamilies >= p->lim->max_families)
            return fail(p, -E2BIG, "more than %zu metric families", p->lim->max_families);
        struct prom_family *fams =
            grow(p->families, &p->cap_families, p->nfamilies + 1, sizeof *fams, 64);
        if (!fams)
            return fail_nomem(p);
        p->families = fams;
        p->families[p->nfamilies] =
            (struct prom_family){.name = en->name, .type = PROM_UNTYPED, .help = NULL};
        en->family = p->nfamilies++;
    }
    *ret = en->family;
    return 0;
}

static const char *const type_names[] = {
    [PROM_UNTYPED] = "untyped",     [PROM_COUNTER] = "counter", [PROM_GAUGE] = "gauge",
    [PROM_HISTOGRAM] = "histogram", [PROM_SUMMARY] = "summary",
};

/* A TYPE for the name of entry k must not follow samples that it would have typed. */
static int check_no_samples(struct parser *p, size_t k, enum prom_type t)
{
    const struct name_ent *en = &p->ents[k];
    if (en->sample_line)
        return fail(p, -EINVAL, "TYPE line for %.*s after its samples (line %zu)", SHOW(en->len),
                    en->name, en->sample_line);
    if (t != PROM_HISTOGRAM && t != PROM_SUMMARY)
        return 0;
    static const char *const suffixes[] = {"_sum", "_count", "_bucket"};
    size_t nsuf = t == PROM_HISTOGRAM ? 3 : 2;
    char *buf = scratch(p, en->len + 8);
    if (!buf)
        return fail_nomem(p);
    memcpy(buf, en->name, en->len);
    for (size_t i = 0; i < nsuf; i++) {
        size_t sl = strlen(suffixes[i]);
        memcpy(buf + en->len, suffixes[i], sl);
        size_t o = names_lookup(p, buf, en->len + sl);
        if (o != NONE && p->ents[o].sample_line && p->ents[o].family == NONE)
            return fail(p, -EINVAL, "TYPE line for %.*s after the samples of %.*s (line %zu)",
                        SHOW(en->len), en->name, SHOW(en->len + sl), buf, p->ents[o].sample_line);
    }
    return 0;
}

/* "# HELP name text" or "# TYPE name type", from just after the keyword. */
static int meta_line(struct parser *p, const char *s, const char *end, bool help)
{
    const char *kw = help ? "HELP" : "TYPE";
    char cb[16];
    s = skip_blank(s, end);
    if (s == end)
        return fail(p, -EINVAL, "%s line without a metric name", kw);
    const char *name = s;
    if (!is_mstart(*s))
        return fail(p, -EINVAL, "invalid metric name in %s line: unexpected %s", kw,
                    show_char(cb, s, end));
    while (s < end && is_mcont(*s))
        s++;
    size_t nlen = (size_t)(s - name);
    if (s < end && !is_blank(*s))
        return fail(p, -EINVAL, "invalid character %s in the metric name of a %s line",
                    show_char(cb, s, end), kw);
    size_t k, f;
    int rc = names_intern(p, name, nlen, &k);
    if (rc < 0)
        return rc;
    s = skip_blank(s, end);

    if (help) {
        if (p->ents[k].help_line)
            return fail(p, -EINVAL, "second HELP line for %.*s (the first is on line %zu)",
                        SHOW(nlen), name, p->ents[k].help_line);
        while (end > s && is_blank(end[-1]))
            end--;
        size_t raw = (size_t)(end - s);
        unsigned char hi = 0;
        for (const char *q = s; q < end; q++) {
            if (*q == '\\') {
                if (q + 1 >= end)
                    return fail(p, -EINVAL, "HELP text for %.*s ends in a lone backslash",
                                SHOW(nlen), name);
                if (q[1] != '\\' && q[1] != 'n')
                    return fail(p, -EINVAL,
                                "invalid escape sequence '\\' followed by %s in the HELP text "
                                "for %.*s",
                                show_char(cb, q + 1, end), SHOW(nlen), name);
                q++;
            }
            hi |= (unsigned char)*q;
        }
        if ((hi & 0x80) && !utf8_valid((const unsigned char *)s, raw))
            return fail(p, -EINVAL, "HELP text for %.*s is not valid UTF-8", SHOW(nlen), name);
        if ((rc = family_of(p, k, &f)) < 0)
            return rc;
        char *d = arena_alloc(p, raw + 1, 1);
        if (!d)
            return fail_nomem(p);
        size_t o = 0;
        for (const char *q = s; q < end; q++) {
            if (*q == '\\') {
                q++;
                d[o++] = *q == 'n' ? '\n' : '\\';
            } else {
                d[o++] = *q;
            }
        }
        d[o] = '\0';
        p->families[f].help = d;
        p->ents[k].help_line = p->line;
        return 0;
    }

    const char *t = s;
    while (s < end && !is_blank(*s))
        s++;
    size_t tlen = (size_t)(s - t);
    if (!tlen)
        return fail(p, -EINVAL, "TYPE line for %.*s without a type", SHOW(nlen), name);
    if (skip_blank(s, end) != end)
        return fail(p, -EINVAL, "unexpected text after the type in the TYPE line for %.*s",
                    SHOW(nlen), name);
    int type = -1;
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (strlen(type_names[i]) == tlen && memcmp(type_names[i], t, tlen) == 0)
            type = (int)i;
    if (type < 0)
        return fail(p, -EINVAL,
                    "unknown metric type \"%.*s\" for %.*s (counter, gauge, histogram, summary "
                    "or untyped)",
                    SHOW(tlen), t, SHOW(nlen), name);
    if (p->ents[k].type_line)
        return fail(p, -EINVAL, "second TYPE line for %.*s (the first is on line %zu)", SHOW(nlen),
                    name, p->ents[k].type_line);
    if ((rc = check_no_samples(p, k, (enum prom_type)type)) < 0)
        return rc;
    if ((rc = family_of(p, k, &f)) < 0)
        return rc;
    p->families[f].type = (enum prom_type)type;
    p->ents[k].type_line = p->line;
    return 0;
}

/* A line whose first non-blank byte is '#', from just after the '#'. */
static int comment_line(struct parser *p, const char *s, const char *end)
{
    s = skip_blank(s, end);
    const char *t = s;
    while (s < end && !is_blank(*s))
        s++;
    if (s - t == 4 && memcmp(t, "HELP", 4) == 0)
        return meta_line(p, s, end, true);
    if (s - t == 4 && memcmp(t, "TYPE", 4) == 0)
        return meta_line(p, s, end, false);
    return 0; /* any other comment */
}

/* ---- samples ---- */

static int sample_line(struct parser *p, const char *s, const char *end)
{
    char cb[16];
    const char *name = s;
    if (!is_mstart(*s))
        return fail(p, -EINVAL, "invalid metric name: unexpected %s", show_char(cb, s, end));
    while (s < end && is_mcont(*s))
        s++;
    size_t nlen = (size_t)(s - name);
    if (s < end && *s != '{' && !is_blank(*s))
        return fail(p, -EINVAL, "invalid character %s in metric name", show_char(cb, s, end));
    if (p->nsamples >= p->lim->max_samples)
        return fail(p, -E2BIG, "more than %zu samples", p->lim->max_samples);

    size_t ent;
    if (p->prev_src && nlen == p->prev_src_len && memcmp(name, p->prev_src, nlen) == 0) {
        ent = p->prev_ent;
    } else {
        int rc = names_intern(p, name, nlen, &ent);
        if (rc < 0)
            return rc;
        p->prev_src = name;
        p->prev_src_len = nlen;
        p->prev_ent = ent;
    }

    size_t k = 0;
    s = skip_blank(s, end);
    if (s < end && *s == '{') {
        s++;
        for (;;) {
            s = skip_blank(s, end);
            if (s == end)
                return fail(p, -EINVAL, "label set of %.*s not closed", SHOW(nlen), name);
            if (*s == '}') {
                s++;
                break;
            }
            const char *ln = s;
            if (!is_alpha_(*s))
                return fail(p, -EINVAL, "expected a label name or '}' in %.*s, found %s",
                            SHOW(nlen), name, show_char(cb, s, end));
            while (s < end && is_lcont(*s))
                s++;
            size_t lnlen = (size_t)(s - ln);
            s = skip_blank(s, end);
            if (s == end || *s != '=')
                return fail(p, -EINVAL, "expected '=' after label name \"%.*s\", found %s",
                            SHOW(lnlen), ln, show_char(cb, s, end));
            s = skip_blank(s + 1, end);
            if (s == end || *s != '"')
                return fail(p, -EINVAL,
                            "expected '\"' to open the value of label \"%.*s\", found %s",
                            SHOW(lnlen), ln, show_char(cb, s, end));
            s++;
            for (size_t i = 0; i < k; i++)
                if (p->cur[i].nlen == lnlen && memcmp(p->cur[i].name, ln, lnlen) == 0)
                    return fail(p, -EINVAL, "label \"%.*s\" appears twice in a sample of %.*s",
                                SHOW(lnlen), ln, SHOW(nlen), name);
            if (k >= p->lim->max_labels)
                return fail(p, -E2BIG, "more than %zu labels in a sample of %.*s",
                            p->lim->max_labels, SHOW(nlen), name);
            if (k >= p->cap_labs) { /* cur and prev always have the same capacity */
                size_t ncap = p->cap_labs ? p->cap_labs * 2 : 16;
                struct lab *a = realloc(p->cur, ncap * sizeof *a);
                if (!a)
                    return fail_nomem(p);
                p->cur = a;
                struct lab *b = realloc(p->prev, ncap * sizeof *b);
                if (!b)
                    return fail_nomem(p);
                p->prev = b;
                p->cap_labs = ncap;
            }
            const struct lab *pv = k < p->nprev ? &p->prev[k] : NULL;
            struct lab *l = &p->cur[k];
            if (pv && pv->nlen == lnlen && memcmp(pv->name, ln, lnlen) == 0) {
                l->name = pv->name;
            } else if (!(l->name = arena_strdup(p, ln, lnlen))) {
                return fail_nomem(p);
            }
            l->nlen = lnlen;
            if (pv && pv->name != l->name)
                pv = NULL;
            int rc = label_value(p, &s, end, pv, l->name, lnlen, &l->value, &l->vlen);
            if (rc < 0)
                return rc;
            k++;
            s = skip_blank(s, end);
            if (s < end && *s == ',') {
                s++;
                continue;
            }
            if (s < end && *s == '}') {
                s++;
                break;
            }
            return fail(p, -EINVAL,
                        "expected ',' or '}' after the value of label \"%.*s\", found %s",
                        SHOW(lnlen), ln, show_char(cb, s, end));
        }
        s = skip_blank(s, end);
    }

    if (s == end)
        return fail(p, -EINVAL, "sample of %.*s without a value", SHOW(nlen), name);
    const char *v = s;
    while (s < end && !is_blank(*s))
        s++;
    size_t vlen = (size_t)(s - v);
    double value;
    int rc = parse_float(p, v, vlen, &value);
    if (rc == -ENOMEM)
        return fail_nomem(p);
    if (rc == -ERANGE)
        return fail(p, -EINVAL, "value \"%.*s\" of %.*s out of range", SHOW(vlen), v, SHOW(nlen),
                    name);
    if (rc < 0)
        return fail(p, -EINVAL, "invalid value \"%.*s\" for %.*s", SHOW(vlen), v, SHOW(nlen), name);
    s = skip_blank(s, end);
    bool has_ts = false;
    int64_t ts = 0;
    if (s < end) {
        const char *t = s;
        while (s < end && !is_blank(*s))
            s++;
        size_t tlen = (size_t)(s - t);
        rc = parse_ts(t, tlen, &ts);
        if (rc == -ERANGE)
            return fail(p, -EINVAL, "timestamp \"%.*s\" of %.*s out of range", SHOW(tlen), t,
                        SHOW(nlen), name);
        if (rc < 0)
            return fail(p, -EINVAL,
                        "invalid timestamp \"%.*s\" for %.*s (an integer number of milliseconds)",
                        SHOW(tlen), t, SHOW(nlen), name);
        has_ts = true;
        s = skip_blank(s, end);
        if (s < end)
            return fail(p, -EINVAL, "unexpected text after the timestamp of %.*s", SHOW(nlen),
                        name);
    }

    /* the label array: the previous sample's when every string is the same */
    const struct prom_label *arr = NULL;
    if (k) {
        bool same = k == p->nprev;
        for (size_t i = 0; same && i < k; i++)
            same = p->cur[i].name == p->prev[i].name && p->cur[i].value == p->prev[i].value;
        if (same) {
            arr = p->prev_arr;
        } else {
            struct prom_label *a = arena_alloc(p, k * sizeof *a, _Alignof(struct prom_label));
            if (!a)
                return fail_nomem(p);
            for (size_t i = 0; i < k; i++)
                a[i] = (struct prom_label){.name = p->cur[i].name, .value = p->cur[i].value};
            arr = a;
        }
    }
    struct lab *swap = p->prev;
    p->prev = p->cur;
    p->cur = swap;
    p->nprev = k;
    p->prev_arr = arr;

    struct prom_sample *smp = grow(p->samples, &p->cap_samples, p->nsamples + 1, sizeof *smp, 64);
    if (!smp)
        return fail_nomem(p);
    p->samples = smp;
    struct name_ent *en = &p->ents[ent];
    if (!en->sample_line)
        en->sample_line = p->line;
    p->samples[p->nsamples++] = (struct prom_sample){
        .name = en->name,
        .labels = arr,
        .nlabels = k,
        .value = value,
        .has_timestamp = has_ts,
        .timestamp_ms = ts,
        .family = ent, /* the entry, until link_families */
        .line = p->line,
    };
    return 0;
}

/* ---- the end ---- */

static bool has_suffix(const struct name_ent *en, const char *suf, size_t sl)
{
    return en->len > sl && memcmp(en->name + en->len - sl, suf, sl) == 0;
}

/* The family the samples of entry k belong to (see prom_parse). */
static size_t resolve(struct parser *p, size_t k)
{
    struct name_ent *en = &p->ents[k];
    if (en->resolved != UNRESOLVED)
        return en->resolved;
    size_t f = en->family;
    if (f == NONE) {
        size_t base = NONE;
        bool hist_only = false;
        if (has_suffix(en, "_bucket", 7)) {
            base = names_lookup(p, en->name, en->len - 7);
            hist_only = true;
        } else if (has_suffix(en, "_count", 6)) {
            base = names_lookup(p, en->name, en->len - 6);
        } else if (has_suffix(en, "_sum", 4)) {
            base = names_lookup(p, en->name, en->len - 4);
        }
        if (base != NONE && p->ents[base].family != NONE) {
            enum prom_type t = p->families[p->ents[base].family].type;
            if (t == PROM_HISTOGRAM || (t == PROM_SUMMARY && !hist_only))
                f = p->ents[base].family;
        }
    }
    en->resolved = f;
    return f;
}

static void store_free(struct prom_store *st)
{
    if (!st)
        return;
    struct arena_block *b = st->blocks;
    while (b) {
        struct arena_block *n = b->next;
        free(b);
        b = n;
    }
    free(st->samples);
    free(st->families);
    free(st);
}

static void parser_done(struct parser *p)
{
    free(p->ents);
    free(p->slots);
    free(p->cur);
    free(p->prev);
    free(p->tmp);
    if (p->cloc)
        freelocale(p->cloc);
}

static int parse_body(struct parser *p, const char *text, size_t len)
{
    const char *s = text, *end = text + len;
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    size_t max_line = p->lim->max_line;
    while (s < end) {
        p->line++;
        size_t rem = (size_t)(end - s);
        size_t scan = max_line >= rem - 1 ? rem : max_line + 2;
        const char *nl = memchr(s, '\n', scan);
        const char *le = nl ? nl : end;
        if (!nl && scan < rem)
            return fail(p, -E2BIG, "longer than %zu bytes", max_line);
        const char *next = nl ? nl + 1 : end;
        if (le > s && le[-1] == '\r')
            le--;
        if ((size_t)(le - s) > max_line)
            return fail(p, -E2BIG, "longer than %zu bytes", max_line);
        if (nul && nul < next)
            return fail(p, -EINVAL, "NUL byte");
        const char *q = skip_blank(s, le);
        int rc = 0;
        if (q < le)
            rc = *q == '#' ? comment_line(p, q + 1, le) : sample_line(p, q, le);
        if (rc < 0)
            return rc;
        s = next;
    }
    return 0;
}

int prom_parse(const char *text, size_t len, const struct prom_limits *lim, struct prom_doc *doc,
               struct carma_err *e)
{
    *doc = (struct prom_doc){0};
    if (!lim)
        lim = &prom_limits_default;
    if (!text && len)
        return carma_err_set(e, -EINVAL, "no metrics body");
    if (len > lim->max_bytes)
        return carma_err_set(e, -E2BIG, "metrics body of %zu bytes exceeds the limit of %zu bytes",
                             len, lim->max_bytes);

    struct parser p = {.lim = lim, .e = e};
    int rc = -ENOMEM;
    p.st = calloc(1, sizeof *p.st);
    if (!p.st)
        return fail_nomem(&p);
    size_t guess = len / 2;
    p.next_block = guess < ARENA_MIN_BLOCK   ? ARENA_MIN_BLOCK
                   : guess > ARENA_MAX_BLOCK ? ARENA_MAX_BLOCK
                                             : guess;
    hash_key(&p);
    if (names_rehash(&p, 256) < 0) {
        rc = fail_nomem(&p);
        goto out;
    }
    size_t est = len / 48 + 16;
    if (est > lim->max_samples)
        est = lim->max_samples;
    if (est) {
        p.samples = malloc(est * sizeof *p.samples);
        if (!p.samples) {
            rc = fail_nomem(&p);
            goto out;
        }
        p.cap_samples = est;
    }

    rc = parse_body(&p, text, len);
    if (rc < 0)
        goto out;

    for (size_t i = 0; i < p.nsamples; i++)
        p.samples[i].family = resolve(&p, p.samples[i].family);
    if (p.nsamples < p.cap_samples) {
        if (p.nsamples == 0) {
            free(p.samples);
            p.samples = NULL;
        } else {
            struct prom_sample *q = realloc(p.samples, p.nsamples * sizeof *q);
            if (q)
                p.samples = q;
        }
    }
    p.st->samples = p.samples;
    p.st->families = p.families;
    *doc = (struct prom_doc){
        .samples = p.samples,
        .nsamples = p.nsamples,
        .families = p.families,
        .nfamilies = p.nfamilies,
        .mem = p.st,
    };
    p.samples = NULL;
    p.families = NULL;
    p.st = NULL;
    rc = 0;
out:
    if (p.st) {
        p.st->samples = p.samples;
        p.st->families = p.families;
        store_free(p.st);
    }
    parser_done(&p);
    return rc;
}

void prom_doc_free(struct prom_doc *doc)
{
    if (!doc)
        return;
    store_free(doc->mem);
    *doc = (struct prom_doc){0};
}

const char *prom_label_value(const struct prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}

const char *prom_type_name(enum prom_type t)
{
    if ((unsigned)t < sizeof type_names / sizeof type_names[0])
        return type_names[t];
    return "untyped";
}
