/*
 * libFuzzer harness for the wall meters' parsers (sources/meter): the Watts Up? byte framer
 * (wattsup_framer_push) and packet parser (wattsup_parse_packet), a cmd meter's output
 * (meter_parse_watts) and the meter spec (meter_spec_parse).
 *
 * The input is a serial line's byte stream, a command's output and a spec at once:
 * - framer: the records and the other packets it completes, byte by byte, must be those of a
 *   reference framer written from meter.h's description (lines cut at CR/LF; a packet runs
 *   from '#' to the first ';' and is cut by a line end or a new '#'; one over
 *   WATTSUP_PACKET_MAX bytes is garbage and the rest of its line skipped), each packet parsed
 *   whole by wattsup_parse_packet; feeding the stream again after a framer_init in two
 *   pieces (cut anywhere) gives the same records;
 * - every record must equal a reference decode of its packet's bytes (fields split at ',',
 *   ASCII digits only, at most 12 of them, "_" for volts or amps): watts = 4th field / 10,
 *   volts = 5th / 10, amps = 6th / 1000, so finite, non-negative and within the protocol's
 *   12 digits;
 * - meter_parse_watts: a result is finite, in [0, 1 MW] (meter.h's bound) and equals strtod of
 *   the digits it stands on, found by a naive scan;
 * - meter_spec_parse: on success the type is the text before the first ':' and the argument
 *   the rest, unchanged; on failure a message and *ret untouched.
 *
 * fuzz-sources: src/sources/meter.c src/sources/source.c src/sources/hwmon.c src/sources/rapl.c
 * fuzz-sources: src/sources/nvml.c src/sources/estimate.c src/sources/modelfile.c
 * fuzz-sources: src/sources/note.c src/sources/dcgm.c src/sources/dynlib.c
 * fuzz-sources: src/core/array.c src/core/csv.c src/core/err.c src/core/file.c src/core/fmt.c
 * fuzz-sources: src/core/fsroot.c src/core/parse.c src/core/table.c src/core/timeutil.c
 * fuzz-sources: build-fuzz/embedded_data.c src/sources/channel.c src/core/channel_kind.c
 * fuzz-sources: src/core/iso8601.c src/core/jsonutil.c
 * fuzz-libs: -ljansson -lpthread -ldl
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/meter.h"

#define EV_MAX 4096

struct ev {
    enum wattsup_event kind; /* WATTSUP_RECORD or WATTSUP_OTHER */
    struct meter_record rec;
};

struct evs {
    struct ev e[EV_MAX];
    size_t n;
};

static void add(struct evs *v, enum wattsup_event kind, const struct meter_record *rec)
{
    if (v->n == EV_MAX)
        return;
    v->e[v->n].kind = kind;
    v->e[v->n].rec = kind == WATTSUP_RECORD ? *rec : (struct meter_record){0, 0, 0};
    v->n++;
}

static bool same_double(double a, double b)
{
    return isnan(a) ? isnan(b) : memcmp(&a, &b, sizeof a) == 0;
}

static void compare(const struct evs *a, const struct evs *b, const char *what)
{
    if (a->n != b->n) {
        fprintf(stderr, "%s: %zu events vs %zu\n", what, a->n, b->n);
        abort();
    }
    for (size_t i = 0; i < a->n; i++) {
        const struct ev *x = &a->e[i], *y = &b->e[i];
        if (x->kind != y->kind || !same_double(x->rec.watts, y->rec.watts) ||
            !same_double(x->rec.volts, y->rec.volts) || !same_double(x->rec.amps, y->rec.amps)) {
            fprintf(stderr, "%s: event %zu differs\n", what, i);
            abort();
        }
    }
}

/* The framer over data[from, to), continuing f. */
static void frame(struct wattsup_framer *f, const uint8_t *data, size_t from, size_t to,
                  struct evs *v)
{
    for (size_t i = from; i < to; i++) {
        struct meter_record rec;
        enum wattsup_event ev = wattsup_framer_push(f, (char)data[i], &rec);
        if (ev == WATTSUP_RECORD || ev == WATTSUP_OTHER)
            add(v, ev, &rec);
    }
}

/* A protocol number by the simplest means: 1 to 12 ASCII digits. */
static bool ref_number(const char *s, size_t n, uint64_t *ret)
{
    if (n < 1 || n > 12)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *ret = v;
    return true;
}

/* A record's packet decoded again from its bytes; the record must match. */
static void check_record(const char *pkt, size_t len, const struct meter_record *r)
{
    const char *f[WATTSUP_PACKET_MAX];
    size_t fl[WATTSUP_PACKET_MAX], n = 0;
    const char *p = pkt + 1, *end = pkt + len - 1;
    for (;;) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        f[n] = p;
        fl[n] = (size_t)((c ? c : end) - p);
        n++;
        if (!c)
            break;
        p = c + 1;
    }
    uint64_t count, w, v = 0, a = 0;
    if (n < 6 || fl[0] != 1 || pkt[1] != 'd' || !ref_number(f[2], fl[2], &count) ||
        count != n - 3 || !ref_number(f[3], fl[3], &w)) {
        fprintf(stderr, "a record from a packet that is not one: %.*s\n", (int)len, pkt);
        abort();
    }
    bool hv = ref_number(f[4], fl[4], &v), ha = ref_number(f[5], fl[5], &a);
    if ((!hv && !(fl[4] == 1 && f[4][0] == '_')) || (!ha && !(fl[5] == 1 && f[5][0] == '_'))) {
        fprintf(stderr, "a record with bad volts or amps: %.*s\n", (int)len, pkt);
        abort();
    }
    if (!same_double(r->watts, (double)w / 10.0) || !same_double(r->volts, hv ? v / 10.0 : NAN) ||
        !same_double(r->amps, ha ? a / 1000.0 : NAN))
        abort();
    if (!isfinite(r->watts) || r->watts < 0 || r->watts > 99999999999.9 ||
        (!isnan(r->volts) && (r->volts < 0 || r->volts > 99999999999.9)) ||
        (!isnan(r->amps) && (r->amps < 0 || r->amps > 999999999.999)))
        abort();
}

/* One packet as the reference framer found it: parsed whole. */
static void ref_packet(const char *pkt, size_t len, struct evs *v)
{
    struct meter_record rec = {0, 0, 0};
    int r = wattsup_parse_packet(pkt, len, &rec);
    if (r == 0) {
        check_record(pkt, len, &rec);
        add(v, WATTSUP_RECORD, &rec);
    } else if (r == -ENOMSG) {
        add(v, WATTSUP_OTHER, &rec);
    } else if (r != -EINVAL) {
        abort();
    }
}

/* The reference framer: line by line, packet by packet. */
static void ref_frame(const uint8_t *data, size_t size, struct evs *v)
{
    const char *s = (const char *)data;
    size_t i = 0;
    while (i < size) {
        size_t le = i;
        while (le < size && s[le] != '\r' && s[le] != '\n')
            le++;
        /* the line [i, le) */
        size_t k = i;
        while (k < le) {
            if (s[k] != '#') {
                k++;
                continue;
            }
            size_t j = k + 1;
            bool skip = false;
            while (j < le && s[j] != '#' && s[j] != ';') {
                if (j - k >= WATTSUP_PACKET_MAX) {
                    skip = true;
                    break;
                }
                j++;
            }
            if (skip)
                break; /* over-long: the rest of the line is skipped */
            if (j < le && s[j] == ';') {
                if (j + 1 - k > WATTSUP_PACKET_MAX)
                    break;
                ref_packet(s + k, j + 1 - k, v);
                k = j + 1;
            } else {
                k = j; /* cut by a '#' (which starts the next) or by the line end */
            }
        }
        i = le + 1;
    }
}

static void check_watts(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);
    if (!text)
        return;
    memcpy(text, data, size);
    double w = -1;
    int r = meter_parse_watts(text, size, &w);
    if (r != 0 && r != -EINVAL && r != -ERANGE)
        abort();
    if (r == 0) {
        if (!isfinite(w) || w < 0 || w > 1e6) {
            fprintf(stderr, "meter_parse_watts: %g W\n", w);
            abort();
        }
        /* the first number standing on its own, read by strtod */
        for (size_t i = 0; i < size; i++) {
            bool digit = text[i] >= '0' && text[i] <= '9';
            bool dot = text[i] == '.' && i + 1 < size && text[i + 1] >= '0' && text[i + 1] <= '9';
            if (!digit && !dot)
                continue;
            char prev = i ? text[i - 1] : ' ';
            if ((prev >= '0' && prev <= '9') || (prev >= 'a' && prev <= 'z') ||
                (prev >= 'A' && prev <= 'Z') || prev == '.' || prev == '_' || prev == '-')
                continue;
            char num[80];
            size_t n = size - i < sizeof num - 1 ? size - i : sizeof num - 1;
            memcpy(num, text + i, n);
            num[n] = '\0';
            /* strtod also takes hex, inf and nan: none can start with a digit but "0x" */
            if (num[0] == '0' && (num[1] == 'x' || num[1] == 'X'))
                num[1] = '\0';
            double want = strtod(num, NULL);
            if (!same_double(want, w)) {
                fprintf(stderr, "meter_parse_watts: %.17g, strtod: %.17g\n", w, want);
                abort();
            }
            break;
        }
    }
    free(text);
}

static void check_spec(const uint8_t *data, size_t size)
{
    char *spec = malloc(size + 1);
    if (!spec)
        return;
    memcpy(spec, data, size);
    spec[size] = '\0';
    struct meter_spec sp;
    memset(&sp, 0x5a, sizeof sp);
    struct meter_spec untouched;
    memcpy(&untouched, &sp, sizeof sp);
    char err[256] = "";
    int r = meter_spec_parse(spec, &sp, err, sizeof err);
    if (r == 0) {
        const char *colon = strchr(spec, ':');
        if (!colon)
            abort();
        size_t tlen = (size_t)(colon - spec);
        const char *want = sp.type == METER_WATTSUP ? "wattsup" : "cmd";
        if (sp.type != METER_WATTSUP && sp.type != METER_CMD)
            abort();
        if (tlen != strlen(want) || strncmp(spec, want, tlen) != 0 ||
            strcmp(sp.arg, colon + 1) != 0 || !sp.arg[0])
            abort();
    } else {
        if (r != -EINVAL || !err[0] || memcmp(&sp, &untouched, sizeof sp) != 0)
            abort();
    }
    free(spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct evs got, want, again;
    got.n = want.n = again.n = 0;

    struct wattsup_framer f;
    wattsup_framer_init(&f);
    frame(&f, data, 0, size, &got);
    ref_frame(data, size, &want);
    compare(&got, &want, "framer vs reference");

    /* the same stream in two reads, cut where its first byte says */
    size_t cut = size ? data[0] % (size + 1) : 0;
    wattsup_framer_init(&f);
    frame(&f, data, 0, cut, &again);
    frame(&f, data, cut, size, &again);
    compare(&got, &again, "one read vs two");

    /* a stream holding exactly one packet: the framer's record is the packet's */
    if (size >= 3 && data[0] == '#' && data[size - 1] == ';' && size <= WATTSUP_PACKET_MAX &&
        !memchr(data + 1, '#', size - 1) && !memchr(data, '\n', size) &&
        !memchr(data, '\r', size) && !memchr(data, ';', size - 1)) {
        struct meter_record rec;
        int r = wattsup_parse_packet((const char *)data, size, &rec);
        if ((r == 0) != (got.n == 1 && got.e[0].kind == WATTSUP_RECORD))
            abort();
    }

    check_watts(data, size);
    check_spec(data, size);
    return 0;
}
