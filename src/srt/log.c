/*
 * srt/log: an srt-slurm log directory read as srt-slurm's power_energy_report reads it before it
 * integrates (see log.h; formats doc srt-slurm.md §6.2-§6.4). The sections below follow the
 * report's own order: the directory walk (pathlib's paths and rglob: core/pathwalk),
 * benchmark.out, windows and tokens, the CSV files (read through core/csvstream), the series
 * containers, the CPU leg, the GPU leg, the public entry points.
 *
 * Python behaviour reproduced on purpose, where it shows in numbers or messages: pathlib's
 * path text and its component-wise ordering, rglob not descending into symlinked directories,
 * universal newlines in benchmark.out, re's \b \w \s on ASCII (bytes >= 0x80 count as word
 * characters), dict semantics of node series (a repeated timestamp overwrites or adds in file
 * order, starting from 0.0), stable sorts.
 */
#include "srt/log.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include "core/csv.h"
#include "core/csvstream.h"
#include "core/fastnum.h"
#include "core/file.h"
#include "core/idmap.h"
#include "core/iso8601.h"
#include "core/linereader.h"
#include "core/parse.h"
#include "core/pathwalk.h"
#include "core/strtab.h"
#include "core/threads.h"
#include "core/array.h"
#include "analysis/series.h"

/* How much of a cell an error message quotes. */
#define CELL_QUOTE 40

/* ---- small helpers ---- */

/* qsort, which must not see a NULL base even for no elements. */
static void sort_n(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *str_printf(const char *fmt, ...)
{
    va_list ap;
    char *s;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

static int oom(struct carma_err *e)
{
    return carma_err_set(e, -ENOMEM, "out of memory");
}

static bool is_word(unsigned char c)
{
    return c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z') || c >= 0x80;
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Python's str.isspace() on ASCII (what re's \s and str.strip() take). */
static bool is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* A cell for an error message: at most CELL_QUOTE bytes of it. */
static const char *quote_cell(const char *s, char buf[CELL_QUOTE + 4])
{
    size_t n = strlen(s);
    if (n <= CELL_QUOTE)
        return s;
    memcpy(buf, s, CELL_QUOTE);
    memcpy(buf + CELL_QUOTE, "...", 4);
    return buf;
}

/* The error for a name cell (hostname, sensor) that is not UTF-8: it would become a label of
 * the report's JSON, which holds UTF-8 only. */
static int bad_utf8(struct carma_err *e, const char *path, size_t line, const char *col,
                    const char *s, size_t n)
{
    size_t at = parse_utf8_bad_at(s, n);
    return carma_err_set(e, -EILSEQ,
                         "%s:%zu: %s is not valid UTF-8 (byte 0x%02x at offset %zu of the cell)",
                         path, line, col, at < n ? (unsigned)(unsigned char)s[at] : 0u, at);
}

/* A power cell (W) beyond this is no reading of a GPU, socket or node: it would overflow the
 * sums (1e308 on every row made every total inf) and is refused with its file and line. */
#define SRT_POWER_MAX_W 1e9

static int power_range(const char *path, size_t line, const char *col, double w,
                       struct carma_err *e)
{
    if (fabs(w) <= SRT_POWER_MAX_W)
        return 0;
    return carma_err_set(e, -ERANGE, "%s:%zu: %s %g W is no plausible power (over %g W)", path,
                         line, col, w, SRT_POWER_MAX_W);
}

static int add_warning(struct srt_log *log, char *msg)
{
    if (!msg)
        return -ENOMEM;
    char **p = realloc(log->warnings, (log->nwarnings + 1) * sizeof *p);
    if (!p) {
        free(msg);
        return -ENOMEM;
    }
    log->warnings = p;
    log->warnings[log->nwarnings++] = msg;
    return 0;
}

/* A kind of suspicious row: how many, and the first one's text. */
struct issue {
    size_t count;
    char *first;
};

static int issue_note(struct issue *is, char *text)
{
    if (is->count++ == 0) {
        if (!text)
            return -ENOMEM;
        is->first = text;
    } else {
        free(text);
    }
    return 0;
}

/* Moves the issue into log's warnings: "<first> (N such rows)" when more than one. */
static int issue_flush(struct srt_log *log, struct issue *is)
{
    int r = 0;
    if (is->count == 1)
        r = add_warning(log, is->first);
    else if (is->count > 1) {
        r = add_warning(log, str_printf("%s (%zu such rows)", is->first, is->count));
        free(is->first);
    }
    is->first = NULL;
    is->count = 0;
    return r;
}

static void issue_free(struct issue *is)
{
    free(is->first);
    is->first = NULL;
}

/* ---- Python's repr ---- */

/* Appends Python's repr() of s (a str) to *buf. */
static int py_repr_append(char **buf, size_t *len, size_t *cap, const char *s)
{
    char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    size_t n = strlen(s);
    if (array_grow(buf, cap, *len + 4 * n + 3, 1) < 0)
        return -ENOMEM;
    char *o = *buf + *len;
    *o++ = q;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\' || *p == (unsigned char)q) {
            *o++ = '\\';
            *o++ = (char)*p;
        } else if (*p == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        } else if (*p == '\r') {
            *o++ = '\\';
            *o++ = 'r';
        } else if (*p == '\t') {
            *o++ = '\\';
            *o++ = 't';
        } else if (*p < 0x20 || *p == 0x7f) {
            o += sprintf(o, "\\x%02x", *p);
        } else {
            *o++ = (char)*p;
        }
    }
    *o++ = q;
    *o = '\0';
    *len = (size_t)(o - *buf);
    return 0;
}

/* ---- the directory walk (rglob: core/pathwalk) ---- */

struct strvec {
    char **v;
    size_t n, cap;
};

static int strvec_push(struct strvec *sv, char *s)
{
    if (!s || array_grow(&sv->v, &sv->cap, sv->n + 1, sizeof *sv->v) < 0) {
        free(s);
        return -ENOMEM;
    }
    sv->v[sv->n++] = s;
    return 0;
}

static void strvec_free(struct strvec *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        free(sv->v[i]);
    free(sv->v);
    memset(sv, 0, sizeof *sv);
}

struct srcvec {
    struct srt_log_source *v;
    size_t n, cap;
};

static int srcvec_push(struct srcvec *sv, long long conc, char *path)
{
    if (!path || array_grow(&sv->v, &sv->cap, sv->n + 1, sizeof *sv->v) < 0) {
        free(path);
        return -ENOMEM;
    }
    sv->v[sv->n].concurrency = conc;
    sv->v[sv->n].path = path;
    sv->n++;
    return 0;
}

static void srcvec_free(struct srcvec *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        free(sv->v[i].path);
    free(sv->v);
    memset(sv, 0, sizeof *sv);
}

static int source_cmp(const void *x, const void *y)
{
    const struct srt_log_source *a = x, *b = y;
    if (a->concurrency != b->concurrency)
        return a->concurrency < b->concurrency ? -1 : 1;
    return pathwalk_cmp(a->path, b->path);
}

struct walk {
    struct strvec samples; /* every samples.csv */
    struct srcvec aiperf;  /* conc_N/aiperf_artifacts/profile_export.jsonl */
    struct srcvec sabench; /* sa-bench_X/results_concurrency_N_*.json */
};

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The digits of s up to end (a run of at least one digit) as a concurrency; -1 when they do
 * not fit. */
static long long parse_conc(const char *s, size_t n)
{
    unsigned long long v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (unsigned long long)(LLONG_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    return (long long)v;
}

/* `^conc_(\d+)$` (Python's $ also matches before one final newline); -1: no match. */
static long long match_conc_dir(const char *name)
{
    const char *p = name + 5;
    size_t n = 0;
    while (is_digit((unsigned char)p[n]))
        n++;
    if (n == 0 || !(p[n] == '\0' || (p[n] == '\n' && p[n + 1] == '\0')))
        return -1;
    return parse_conc(p, n);
}

/* `^results_concurrency_(\d+)_`; -1: no match. */
static long long match_result_file(const char *name)
{
    const char *p = name + strlen("results_concurrency_");
    size_t n = 0;
    while (is_digit((unsigned char)p[n]))
        n++;
    if (n == 0 || p[n] != '_')
        return -1;
    return parse_conc(p, n);
}

/* sa-bench_X: its results_concurrency_*.json entries (pathwalk_list's fn). */
static int walk_sabench(void *ud, const char *name, const char *path)
{
    struct walk *w = ud;
    size_t len = strlen(name);
    if (!has_prefix(name, "results_concurrency_") || len < 25 ||
        strcmp(name + len - 5, ".json") != 0)
        return 0;
    long long conc = match_result_file(name);
    if (conc < 0 || !pathwalk_exists(path))
        return 0;
    return srcvec_push(&w->sabench, conc, strdup(path));
}

/* One entry of the walk (pathwalk_rglob's fn, which then descends into the real
 * subdirectories): what matches at it. */
static int walk_entry(void *ud, const char *name, const char *path)
{
    struct walk *w = ud;
    int r;
    if (strcmp(name, "samples.csv") == 0 && pathwalk_exists(path) &&
        (r = strvec_push(&w->samples, strdup(path))) < 0)
        return r;
    if (has_prefix(name, "conc_") && pathwalk_is_dir(path)) {
        char *art = str_printf("%s/aiperf_artifacts", path);
        char *jsonl = art ? str_printf("%s/profile_export.jsonl", art) : NULL;
        if (!jsonl) {
            free(art);
            return -ENOMEM;
        }
        long long conc = match_conc_dir(name);
        if (conc >= 0 && pathwalk_is_dir(art) && pathwalk_exists(jsonl)) {
            r = srcvec_push(&w->aiperf, conc, jsonl);
            free(art);
            if (r < 0)
                return r;
        } else {
            free(jsonl);
            free(art);
        }
    }
    if (has_prefix(name, "sa-bench_") && pathwalk_is_dir(path))
        return pathwalk_list(path, walk_sabench, w);
    return 0;
}

/* ---- benchmark.out ---- */

/* `Phase \w+ \(profiling\) (started|complete)` anywhere in s (re.search). */
static bool has_phase_marker(const char *s, size_t n)
{
    const char *end = s + n;
    for (const char *p = s; (p = memmem(p, (size_t)(end - p), "Phase ", 6)); p++) {
        const char *q = p + 6, *r = q;
        while (r < end && is_word((unsigned char)*r))
            r++;
        if (r == q || (size_t)(end - r) < 13 || memcmp(r, " (profiling) ", 13) != 0)
            continue;
        r += 13;
        if (((size_t)(end - r) >= 7 && memcmp(r, "started", 7) == 0) ||
            ((size_t)(end - r) >= 8 && memcmp(r, "complete", 8) == 0))
            return true;
    }
    return false;
}

/*
 * `^(\d{2}:\d{2}:\d{2}\.\d{3}) NOTICE\s+Phase \w+ \(profiling\) (started|complete)\b(.*)$`:
 * true with the stamp (12 bytes), the event and the rest of the line.
 */
static bool match_phase_line(const char *s, size_t n, const char **stamp, bool *started,
                             const char **rest)
{
    static const char shape[] = "dd:dd:dd.ddd";
    if (n < 12)
        return false;
    for (size_t i = 0; i < 12; i++)
        if (shape[i] == 'd' ? !is_digit((unsigned char)s[i]) : s[i] != shape[i])
            return false;
    const char *p = s + 12, *end = s + n;
    if ((size_t)(end - p) < 7 || memcmp(p, " NOTICE", 7) != 0)
        return false;
    p += 7;
    const char *q = p;
    while (q < end && is_space((unsigned char)*q))
        q++;
    if (q == p || (size_t)(end - q) < 6 || memcmp(q, "Phase ", 6) != 0)
        return false;
    q += 6;
    const char *w = q;
    while (w < end && is_word((unsigned char)*w))
        w++;
    if (w == q || (size_t)(end - w) < 13 || memcmp(w, " (profiling) ", 13) != 0)
        return false;
    w += 13;
    size_t ev;
    if ((size_t)(end - w) >= 7 && memcmp(w, "started", 7) == 0) {
        ev = 7;
        *started = true;
    } else if ((size_t)(end - w) >= 8 && memcmp(w, "complete", 8) == 0) {
        ev = 8;
        *started = false;
    } else {
        return false;
    }
    w += ev;
    if (w < end && is_word((unsigned char)*w))
        return false;
    *stamp = s;
    *rest = w;
    return true;
}

/* `elapsed=(\d+(?:\.\d+)?)s` searched in rest: true and the seconds. */
static bool match_elapsed(const char *rest, double *ret)
{
    for (const char *p = rest; (p = strstr(p, "elapsed=")); p++) {
        const char *q = p + 8, *r = q;
        while (is_digit((unsigned char)*r))
            r++;
        if (r == q)
            continue;
        const char *end = NULL;
        if (*r == '.' && is_digit((unsigned char)r[1])) {
            const char *f = r + 1;
            while (is_digit((unsigned char)*f))
                f++;
            if (*f == 's')
                end = f;
        } else if (*r == 's') {
            end = r;
        }
        if (!end)
            continue;
        char num[64];
        size_t len = (size_t)(end - q);
        if (len >= sizeof num)
            len = sizeof num - 1; /* absurdly long: strtod of the prefix */
        memcpy(num, q, len);
        num[len] = '\0';
        *ret = strtod(num, NULL);
        return true;
    }
    return false;
}

const char *srt_log_bench_name(enum srt_log_bench b)
{
    switch (b) {
    case SRT_LOG_BENCH_SA_BENCH:
        return "sa-bench";
    case SRT_LOG_BENCH_AIPERF:
        return "aiperf";
    default:
        return "";
    }
}

int srt_log_detect_bench(const char *benchmark_out, enum srt_log_bench *ret, struct carma_err *e)
{
    struct linereader l;
    int r = linereader_open(&l, benchmark_out, SRT_LOG_LINE_MAX, true);
    if (r < 0)
        return file_input_err(e, benchmark_out, r);
    bool aiperf = false, sabench = false;
    char *s;
    size_t n;
    while ((r = linereader_next(&l, &s, &n)) > 0) {
        if (has_phase_marker(s, n))
            aiperf = true;
        else if (memmem(s, n, "Serving Benchmark Result", 24) ||
                 memmem(s, n, "Successful requests:", 20))
            sabench = true;
    }
    linereader_close(&l);
    if (r < 0)
        return file_input_err(e, benchmark_out, r);
    if (aiperf && sabench)
        return carma_err_set(e, -EINVAL, "%s: matched both aiperf and sa-bench markers",
                             benchmark_out);
    if (!aiperf && !sabench)
        return carma_err_set(e, -EINVAL, "%s: matched neither aiperf nor sa-bench markers",
                             benchmark_out);
    *ret = aiperf ? SRT_LOG_BENCH_AIPERF : SRT_LOG_BENCH_SA_BENCH;
    return 0;
}

/* Whether "HH:MM:SS.mmm" is a time of day (a leap second allowed). */
static bool is_time_of_day(const char *stamp)
{
    int h = (stamp[0] - '0') * 10 + (stamp[1] - '0');
    int m = (stamp[3] - '0') * 10 + (stamp[4] - '0');
    int s = (stamp[6] - '0') * 10 + (stamp[7] - '0');
    return h <= 23 && m <= 59 && s <= 60;
}

/* "HH:MM:SS.mmm" -> seconds since midnight, as int(h)*3600 + int(m)*60 + float(s). */
static double time_of_day_s(const char *stamp)
{
    int h = (stamp[0] - '0') * 10 + (stamp[1] - '0');
    int m = (stamp[3] - '0') * 10 + (stamp[4] - '0');
    char sec[7];
    memcpy(sec, stamp + 6, 6);
    sec[6] = '\0';
    return (double)(h * 3600 + m * 60) + strtod(sec, NULL);
}

int srt_log_phase_log_timing(const char *benchmark_out, struct srt_log_reported *ret,
                             struct carma_err *e)
{
    struct linereader l;
    int r = linereader_open(&l, benchmark_out, SRT_LOG_LINE_MAX, true);
    if (r < 0)
        return file_input_err(e, benchmark_out, r);
    size_t nstart = 0, ncomplete = 0;
    char start[13] = "", complete[13] = "";
    double elapsed = 0.0;
    bool has_elapsed = false;
    char *s;
    size_t n;
    while ((r = linereader_next(&l, &s, &n)) > 0) {
        const char *stamp, *rest;
        bool started;
        if (!match_phase_line(s, n, &stamp, &started, &rest))
            continue;
        if (started) {
            if (nstart++ == 0)
                memcpy(start, stamp, 12);
        } else if (ncomplete++ == 0) {
            memcpy(complete, stamp, 12);
            has_elapsed = match_elapsed(rest, &elapsed);
        }
    }
    linereader_close(&l);
    if (r < 0)
        return file_input_err(e, benchmark_out, r);
    memset(ret, 0, sizeof *ret);
    ret->source = "unavailable";
    if (nstart == 0 || ncomplete == 0)
        return 0;
    if (nstart != 1 || ncomplete != 1) {
        size_t count = nstart > ncomplete ? nstart : ncomplete;
        ret->note = str_printf("%zu profiling phases in %s; cannot pair them to one concurrency",
                               count, pathwalk_name(benchmark_out));
        return ret->note ? 0 : oom(e);
    }
    double d = elapsed;
    if (!has_elapsed && (!is_time_of_day(start) || !is_time_of_day(complete))) {
        /* srt-slurm's arithmetic would give a negative duration or one over a day */
        ret->note = str_printf("phase started %s, complete %s in %s: not a time of day", start,
                               complete, pathwalk_name(benchmark_out));
        return ret->note ? 0 : oom(e);
    }
    if (!has_elapsed) {
        d = time_of_day_s(complete) - time_of_day_s(start);
        if (d < 0)
            d += 24 * 3600.0;
    }
    ret->source = "aiperf-phase-log";
    ret->has_duration = true;
    ret->duration_s = d;
    ret->note = str_printf("phase started %s, complete %s (time-of-day only)", start, complete);
    return ret->note ? 0 : oom(e);
}

/* ---- windows and tokens (§6.3) ---- */

/* Parses the JSON file at path (any value at the top). NULL with *ret_r and e set (the open
 * errno, -EISDIR, -EIO, or -EINVAL for bad JSON with its line and column). */
static json_t *load_json(const char *path, struct carma_err *e, int *ret_r)
{
    int r = 0;
    FILE *f = file_fopen_input(path, &r);
    if (!f) {
        *ret_r = file_input_err(e, path, r);
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadf(f, JSON_DECODE_ANY, &je);
    int ferr = ferror(f);
    fclose(f);
    if (!root) {
        if (ferr)
            *ret_r = carma_err_set(e, -EIO, "%s: read error", path);
        else
            *ret_r = carma_err_set(e, -EINVAL, "%s: invalid JSON (line %d, column %d): %s", path,
                                   je.line, je.column, je.text);
    }
    return root;
}

/* float(v) as Python computes it: numbers, bools, numeric strings. 0 or -EINVAL. */
static int py_float(const json_t *v, double *ret)
{
    if (json_is_integer(v) || json_is_real(v)) {
        *ret = json_number_value(v);
        return 0;
    }
    if (json_is_boolean(v)) {
        *ret = json_is_true(v) ? 1.0 : 0.0;
        return 0;
    }
    if (json_is_string(v))
        return parse_double(json_string_value(v), ret);
    return -EINVAL;
}

/* Python truthiness of a JSON value. */
static bool py_truthy(const json_t *v)
{
    if (!v)
        return false;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return json_object_size(v) > 0;
    case JSON_ARRAY:
        return json_array_size(v) > 0;
    case JSON_STRING:
        return json_string_length(v) > 0;
    case JSON_INTEGER:
        return json_integer_value(v) != 0;
    case JSON_REAL:
        return json_real_value(v) != 0.0;
    case JSON_TRUE:
        return true;
    default:
        return false;
    }
}

static bool is_number(const json_t *v)
{
    return json_is_integer(v) || json_is_real(v);
}

/* A JSON number as its text says it, for a message: integers as integers. */
static const char *number_text(const json_t *v, char buf[32])
{
    if (json_is_integer(v))
        snprintf(buf, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        snprintf(buf, 32, "%.17g", json_number_value(v));
    return buf;
}

static int sa_bench_window(struct srt_log_window *w, const char *path, struct carma_err *e)
{
    static const char *const keys[] = {"benchmark_start_time_unix", "benchmark_end_time_unix",
                                       "total_input_tokens", "total_output_tokens"};
    int r = 0;
    json_t *root = load_json(path, e, &r);
    if (!root)
        return r;
    if (!json_is_object(root)) {
        r = carma_err_set(e, -EINVAL, "%s: not a JSON object", path);
        goto out;
    }
    for (size_t i = 0; i < 4; i++) {
        const json_t *v = json_object_get(root, keys[i]);
        if (!v) {
            r = carma_err_set(e, -EINVAL, "%s: missing required field '%s'", path, keys[i]);
            goto out;
        }
        if (!is_number(v)) {
            r = carma_err_set(e, -EINVAL, "%s: field '%s' is not a number", path, keys[i]);
            goto out;
        }
        if (i >= 2 && json_number_value(v) < 0) { /* a token count */
            char num[32];
            r = carma_err_set(e, -EINVAL, "%s: field '%s' is negative (%s)", path, keys[i],
                              number_text(v, num));
            goto out;
        }
    }
    w->start = json_incref(json_object_get(root, keys[0]));
    w->end = json_incref(json_object_get(root, keys[1]));
    w->input_tokens = json_incref(json_object_get(root, keys[2]));
    w->output_tokens = json_incref(json_object_get(root, keys[3]));
    w->start_unix = json_number_value(w->start);
    w->end_unix = json_number_value(w->end);
    w->input_tokens_n = json_number_value(w->input_tokens);
    w->output_tokens_n = json_number_value(w->output_tokens);
    w->reported.source = "sa-bench-json";
    w->reported.has_start = w->reported.has_end = true;
    w->reported.start_unix = w->start_unix;
    w->reported.end_unix = w->end_unix;
    const json_t *dur = json_object_get(root, "duration");
    if (dur && !json_is_null(dur)) {
        if (py_float(dur, &w->reported.duration_s) < 0) {
            r = carma_err_set(e, -EINVAL, "%s: field 'duration' is not a number", path);
            goto out;
        }
        w->reported.has_duration = true;
    } else if (!(w->reported.note = strdup("result JSON has no 'duration' field"))) {
        r = oom(e);
    }
out:
    json_decref(root);
    return r;
}

/* aggregate[key]["avg"], a token count, which must be a number >= 0: 0 and a new reference, or
 * -EINVAL. */
static int aggregate_avg(const json_t *agg, const char *key, const char *path, json_t **ret,
                         struct carma_err *e)
{
    const json_t *o = json_object_get(agg, key);
    const json_t *v = json_is_object(o) ? json_object_get(o, "avg") : NULL;
    if (!v)
        return carma_err_set(e, -EINVAL, "%s: missing '%s.avg'", path, key);
    if (!is_number(v))
        return carma_err_set(e, -EINVAL, "%s: '%s.avg' is not a number", path, key);
    if (json_number_value(v) < 0) {
        char num[32];
        return carma_err_set(e, -EINVAL, "%s: '%s.avg' is negative (%s)", path, key,
                             number_text(v, num));
    }
    *ret = json_incref((json_t *)v);
    return 0;
}

/* reported_timing_from_aiperf_json. */
static int aiperf_reported(struct srt_log_reported *rep, const json_t *agg, const char *path,
                           struct carma_err *e)
{
    const json_t *dur = json_object_get(agg, "benchmark_duration");
    if (json_is_object(dur))
        dur = json_object_get(dur, "avg");
    bool has_dur = dur && !json_is_null(dur);
    const json_t *st = json_object_get(agg, "start_time"), *en = json_object_get(agg, "end_time");
    double start = 0, end = 0;
    bool has_start =
        json_is_string(st) && iso8601_parse_fromisoformat(json_string_value(st), &start) == 0;
    bool has_end =
        json_is_string(en) && iso8601_parse_fromisoformat(json_string_value(en), &end) == 0;
    memset(rep, 0, sizeof *rep);
    rep->source = "unavailable";
    if (!has_dur && !has_start && !has_end)
        return 0;
    rep->source = "aiperf-json";
    rep->has_start = has_start;
    rep->has_end = has_end;
    rep->start_unix = start;
    rep->end_unix = end;
    if (has_dur) {
        if (py_float(dur, &rep->duration_s) < 0)
            return carma_err_set(e, -EINVAL, "%s: 'benchmark_duration' is not a number", path);
        rep->has_duration = true;
    }
    rep->note = strdup("start/end are aiperf's naive local ISO stamps converted in this host's "
                       "timezone");
    return rep->note ? 0 : oom(e);
}

/* min/max over JSON numbers, ints compared as ints (Python's exact int comparison). */
struct nsrange {
    bool any, any_int, any_real;
    json_int_t imin, imax;
    double rmin, rmax;
};

static void nsrange_add(struct nsrange *r, const json_t *v, bool is_start)
{
    r->any = true;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (!r->any_int) {
            r->imin = r->imax = x;
            r->any_int = true;
        } else if (is_start ? x < r->imin : x > r->imax) {
            if (is_start)
                r->imin = x;
            else
                r->imax = x;
        }
    } else {
        double x = json_real_value(v);
        if (!r->any_real) {
            r->rmin = r->rmax = x;
            r->any_real = true;
        } else if (is_start ? x < r->rmin : x > r->rmax) {
            if (is_start)
                r->rmin = x;
            else
                r->rmax = x;
        }
    }
}

static double nsrange_value(const struct nsrange *r, bool is_start)
{
    double i = r->any_int ? (double)(is_start ? r->imin : r->imax) : NAN;
    double f = r->any_real ? (is_start ? r->rmin : r->rmax) : NAN;
    if (!r->any_int)
        return f;
    if (!r->any_real)
        return i;
    return is_start ? fmin(i, f) : fmax(i, f);
}

static int aiperf_window(struct srt_log_window *w, const char *path, const char *benchmark_out,
                         struct carma_err *e)
{
    struct linereader l;
    struct nsrange starts = {0}, ends = {0};
    int r = linereader_open(&l, path, SRT_LOG_LINE_MAX, false);
    if (r < 0)
        return file_input_err(e, path, r);
    char *s;
    size_t n;
    while ((r = linereader_next(&l, &s, &n)) > 0) {
        while (n > 0 && is_space((unsigned char)*s)) {
            s++;
            n--;
        }
        while (n > 0 && is_space((unsigned char)s[n - 1]))
            n--;
        if (n == 0)
            continue;
        json_error_t je;
        json_t *rec = json_loadb(s, n, JSON_DECODE_ANY, &je);
        if (!rec) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: invalid JSON (column %d): %s", path, l.lineno,
                              je.column, je.text);
            break;
        }
        const json_t *md = json_is_object(rec) ? json_object_get(rec, "metadata") : NULL;
        if (!json_is_object(rec)) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: not a JSON object", path, l.lineno);
        } else if (py_truthy(json_object_get(rec, "error"))) {
            /* a failed request: not part of the window */
        } else if (md && !json_is_object(md)) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: 'metadata' is not an object", path, l.lineno);
        } else if (md && json_is_string(json_object_get(md, "benchmark_phase")) &&
                   strcmp(json_string_value(json_object_get(md, "benchmark_phase")), "profiling") ==
                       0) {
            const json_t *a = json_object_get(md, "request_start_ns");
            const json_t *b = json_object_get(md, "request_end_ns");
            if (!a || !b)
                r = carma_err_set(e, -EINVAL, "%s:%zu: profiling record has no metadata.%s", path,
                                  l.lineno, !a ? "request_start_ns" : "request_end_ns");
            else if (!is_number(a) || !is_number(b))
                r = carma_err_set(e, -EINVAL, "%s:%zu: metadata.%s is not a number", path, l.lineno,
                                  !is_number(a) ? "request_start_ns" : "request_end_ns");
            else {
                nsrange_add(&starts, a, true);
                nsrange_add(&ends, b, false);
            }
        }
        json_decref(rec);
        if (r < 0)
            break;
    }
    size_t lineno = l.lineno;
    linereader_close(&l);
    if (r == -EFBIG)
        return carma_err_set(e, r, "%s:%zu: a line longer than %u bytes", path, lineno + 1,
                             SRT_LOG_LINE_MAX);
    if (r < 0) {
        if (e && e->code == r)
            return r;
        return carma_err_set(e, r, "%s: %s", path, strerror(-r));
    }
    if (!starts.any)
        return carma_err_set(e, -EINVAL, "%s: no successful profiling-phase records", path);

    char *agg_path = pathwalk_with_name(path, "profile_export_aiperf.json");
    if (!agg_path)
        return oom(e);
    if (!pathwalk_is_file(agg_path)) {
        r = carma_err_set(e, -ENOENT, "%s: not found (expected alongside %s)", agg_path, path);
        free(agg_path);
        return r;
    }
    json_t *agg = load_json(agg_path, e, &r);
    if (!agg) {
        free(agg_path);
        return r;
    }
    if (!json_is_object(agg)) {
        r = carma_err_set(e, -EINVAL, "%s: not a JSON object", agg_path);
        goto out;
    }
    if ((r = aggregate_avg(agg, "total_osl", agg_path, &w->output_tokens, e)) < 0 ||
        (r = aggregate_avg(agg, "total_isl", agg_path, &w->input_tokens, e)) < 0)
        goto out;
    w->output_tokens_n = json_number_value(w->output_tokens);
    w->input_tokens_n = json_number_value(w->input_tokens);
    if ((r = aiperf_reported(&w->reported, agg, agg_path, e)) < 0)
        goto out;
    if (strcmp(w->reported.source, "unavailable") == 0 && pathwalk_is_file(benchmark_out)) {
        free(w->reported.note);
        w->reported.note = NULL;
        if ((r = srt_log_phase_log_timing(benchmark_out, &w->reported, e)) < 0)
            goto out;
    }
    w->start_unix = nsrange_value(&starts, true) / 1e9;
    w->end_unix = nsrange_value(&ends, false) / 1e9;
    w->start = json_real(w->start_unix);
    w->end = json_real(w->end_unix);
    if (!w->start || !w->end)
        r = oom(e);
out:
    json_decref(agg);
    free(agg_path);
    return r;
}

static void window_free(struct srt_log_window *w)
{
    json_decref(w->start);
    json_decref(w->end);
    json_decref(w->output_tokens);
    json_decref(w->input_tokens);
    free(w->reported.note);
    memset(w, 0, sizeof *w);
}

/* ---- the CSV files (core/csvstream) ---- */

/* The index of column name in the header (the last one when repeated, as DictReader), or -1. */
static int col_find(const struct csv_row *h, const char *name)
{
    int idx = -1;
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->fields[i], name) == 0)
            idx = (int)i;
    return idx;
}

/* What one CSV load shares: the file, the header, the warnings it collects. */
struct csvctx {
    struct srt_log *log;
    const char *path;
    struct csv_row header;
    bool have_header;
    struct issue torn;
    const struct csvstream *r; /* the stream, while csv_each runs */
    /*
     * Optional: the data records that csvstream_lines hands out (s, avail bytes; the first at line
     * number line), offered before the first is split: the bytes of the first record when it
     * was taken (line end included; read as fn would read its split row, with the same
     * effects), 0 when fn is to have it split, or a negative errno with e set.
     */
    long (*line_fn)(void *ud, const char *s, size_t avail, size_t line, struct carma_err *e);
    void *line_ud;
    /*
     * Optional, asked before line_fn while it is set: may take the records from the stream's
     * position on some other way (and csvstream_seek past them). 1 when it moved the stream, 0
     * when it did not, or a negative errno with e set. It clears bulk_fn when it is not to be
     * asked again.
     */
    int (*bulk_fn)(void *ud, struct csvstream *r, struct carma_err *e);
};

static int need_col(const struct csvctx *c, int col, const char *name, size_t line,
                    struct carma_err *e)
{
    if (col >= 0)
        return 0;
    return carma_err_set(e, -EINVAL, "%s:%zu: no column '%s' in the header (line 1)", c->path, line,
                         name);
}

static int cell_double(const struct csvctx *c, const struct csv_row *row, int col, const char *name,
                       double *ret, struct carma_err *e)
{
    int r = need_col(c, col, name, row->line, e);
    if (r < 0)
        return r;
    const char *s = row->fields[col];
    if (fastnum_double(s, ret) < 0) {
        char q[CELL_QUOTE + 4];
        return carma_err_set(e, -EINVAL, "%s:%zu: %s '%s' is not a finite number", c->path,
                             row->line, name, quote_cell(s, q));
    }
    return 0;
}

static int cell_int(const struct csvctx *c, const struct csv_row *row, int col, const char *name,
                    long long *ret, struct carma_err *e)
{
    int r = need_col(c, col, name, row->line, e);
    if (r < 0)
        return r;
    const char *s = row->fields[col];
    int64_t v;
    if (fastnum_i64(s, &v) < 0) {
        char q[CELL_QUOTE + 4];
        return carma_err_set(e, -EINVAL, "%s:%zu: %s '%s' is not an integer", c->path, row->line,
                             name, quote_cell(s, q));
    }
    *ret = v;
    return 0;
}

/*
 * Reads the header and then hands each data row to fn (or first, as a plain line, to
 * c->line_fn when there is one). A row whose field count differs from the header's is an error,
 * except a last line without a line end that is short (skipped with a warning). Returns 0 or a
 * negative errno with e set.
 */
static int csv_each(struct csvctx *c, int (*fn)(void *, const struct csv_row *, struct carma_err *),
                    void *ud, struct carma_err *e)
{
    struct csvstream r;
    int ret = csvstream_open(&r, c->path, SRT_LOG_LINE_MAX, e);
    if (ret < 0)
        return ret;
    c->r = &r;
    struct csv_row *row = NULL;
    bool torn = false;
    for (;;) {
        const char *ls;
        size_t avail;
        if (c->line_fn && c->have_header && csvstream_lines(&r, &ls, &avail)) {
            if (c->bulk_fn) {
                int b = c->bulk_fn(c->line_ud, &r, e);
                if (b < 0) {
                    ret = b;
                    break;
                }
                if (b > 0)
                    continue;
            }
            long k = c->line_fn(c->line_ud, ls, avail, r.line, e);
            if (k < 0) {
                ret = (int)k;
                break;
            }
            if (k > 0) {
                csvstream_took(&r, (size_t)k);
                continue;
            }
        }
        if ((ret = csvstream_next(&r, &row, &torn, e)) <= 0)
            break;
        if (!c->have_header) {
            if (!(c->header.fields = calloc(row->n, sizeof *c->header.fields))) {
                ret = oom(e);
                break;
            }
            c->header.line = row->line;
            c->have_header = true;
            for (size_t i = 0; i < row->n; i++, c->header.n++)
                if (!(c->header.fields[i] = strdup(row->fields[i])))
                    break;
            if (c->header.n < row->n) {
                ret = oom(e);
                break;
            }
            continue;
        }
        if (row->n != c->header.n) {
            if (torn && row->n < c->header.n) {
                ret = issue_note(&c->torn, str_printf("%s:%zu: the last line has no line end and "
                                                      "%zu of %zu fields (cut short); skipped",
                                                      c->path, row->line, row->n, c->header.n));
                if (ret < 0) {
                    ret = oom(e);
                    break;
                }
                continue;
            }
            ret = carma_err_set(e, -EINVAL, "%s:%zu: %zu fields, the header has %zu", c->path,
                                row->line, row->n, c->header.n);
            break;
        }
        if ((ret = fn(ud, row, e)) < 0)
            break;
    }
    if (ret == 0 && r.torn_unparsed &&
        issue_note(&c->torn, str_printf("%s:%zu: the last line has no line end and an "
                                        "unterminated quoted field (cut short); skipped",
                                        c->path, r.torn_line)) < 0)
        ret = oom(e);
    csvstream_close(&r);
    c->r = NULL;
    if (ret == 0 && !c->have_header)
        ret = add_warning(c->log, str_printf("%s: empty file (no header); no series", c->path));
    if (ret == 0)
        ret = issue_flush(c->log, &c->torn);
    issue_free(&c->torn);
    return ret == -ENOMEM ? oom(e) : ret;
}

static void csvctx_done(struct csvctx *c)
{
    for (size_t i = 0; i < c->header.n; i++)
        free(c->header.fields[i]);
    free(c->header.fields);
    memset(&c->header, 0, sizeof c->header);
}

/* True when the header is exactly cols (NULL-terminated). */
static bool header_is(const struct csv_row *h, const char *const *cols)
{
    size_t i = 0;
    for (; cols[i]; i++)
        if (i >= h->n || strcmp(h->fields[i], cols[i]) != 0)
            return false;
    return i == h->n;
}

/* ---- series containers ---- */

/* Samples in arrival order; sorted says whether t is still non-decreasing. */
struct vec {
    double *t, *w;
    size_t n, cap;
    bool unsorted;
    /* no t of its own (t is NULL): its times are another vec's t[0, n) (a GPU utilization
     * column that has had a value on every row of its device so far) */
    bool shared_t;
};

/* Grows v to room for cap samples (cap > v->cap), about expect of them to be filled. Out of
 * line, so that the appends below inline into the per-row code. */
__attribute__((noinline)) static int vec_grow(struct vec *v, size_t cap, size_t expect)
{
    if ((!v->shared_t && series_array_resize(&v->t, v->n, v->cap, cap, expect) < 0) ||
        series_array_resize(&v->w, v->n, v->cap, cap, expect) < 0)
        return -ENOMEM;
    v->cap = cap;
    return 0;
}

static inline int vec_push(struct vec *v, double t, double w)
{
    /* doubling: huge pages only for the samples held so far, the new half may stay empty */
    if (v->n == v->cap && vec_grow(v, v->cap ? v->cap * 2 : 64, v->n) < 0)
        return -ENOMEM;
    if (v->n > 0 && t < v->t[v->n - 1])
        v->unsorted = true;
    v->t[v->n] = t;
    v->w[v->n] = w;
    v->n++;
    return 0;
}

/* Appends a value to a vec whose times are shared (its owner's next t). 0 or -ENOMEM. */
static inline int vec_push_w(struct vec *v, double w)
{
    if (v->n == v->cap && vec_grow(v, v->cap ? v->cap * 2 : 64, v->n) < 0)
        return -ENOMEM;
    v->w[v->n++] = w;
    return 0;
}

/*
 * Gives a shared-time vec its own copy of its times, t[0, v->n) of its owner (whose unsorted
 * flag, over that prefix, it takes too). 0 or -ENOMEM.
 */
static int vec_unshare(struct vec *v, const double *t, bool unsorted)
{
    if (!v->shared_t)
        return 0;
    if (v->cap > 0 && series_array_resize(&v->t, 0, 0, v->cap, v->n) < 0)
        return -ENOMEM;
    if (v->n > 0)
        memcpy(v->t, t, v->n * sizeof *v->t);
    v->shared_t = false;
    v->unsorted = unsorted;
    return 0;
}

/*
 * Makes room for n samples (room only: pages not written stay out of memory), an estimate of
 * which the first 15/16 are expected to be filled. 0 or -ENOMEM.
 */
static int vec_reserve(struct vec *v, size_t n)
{
    if (n <= v->cap)
        return 0;
    return vec_grow(v, n, n - n / 16);
}

static void vec_free(struct vec *v)
{
    free(v->t);
    free(v->w);
    memset(v, 0, sizeof *v);
}

struct pair {
    double t, w;
};

/* Stable merge sort of p[0, n) by t, with tmp of n. */
static void merge_sort(struct pair *p, struct pair *tmp, size_t n)
{
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = p[j].t < p[i].t ? p[j++] : p[i++];
            while (i < mid)
                tmp[k++] = p[i++];
            while (j < hi)
                tmp[k++] = p[j++];
        }
        memcpy(p, tmp, n * sizeof *p);
    }
}

/* Stable merge sort of the ids idx[0, n) by cmp(ctx, a, b). 0 or -ENOMEM. */
static int sort_idx(size_t *idx, size_t n, int (*cmp)(const void *ctx, size_t a, size_t b),
                    const void *ctx)
{
    if (n < 2)
        return 0;
    size_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return -ENOMEM;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = cmp(ctx, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, n * sizeof *idx);
    }
    free(tmp);
    return 0;
}

/* Sorts v by time, equal times in arrival order. 0 or -ENOMEM. */
static int vec_sort(struct vec *v)
{
    if (!v->unsorted)
        return 0;
    struct pair *p = malloc(v->n * sizeof *p), *tmp = malloc(v->n * sizeof *tmp);
    if (!p || !tmp) {
        free(p);
        free(tmp);
        return -ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++)
        p[i] = (struct pair){v->t[i], v->w[i]};
    merge_sort(p, tmp, v->n);
    for (size_t i = 0; i < v->n; i++) {
        v->t[i] = p[i].t;
        v->w[i] = p[i].w;
    }
    free(p);
    free(tmp);
    v->unsorted = false;
    return 0;
}

/*
 * A series keyed by timestamp, as srt-slurm's dict[float, float]: one sample per distinct
 * timestamp (== on doubles, so 0.0 and -0.0 are one key), kept in first-seen order. While the
 * timestamps arrive increasing (the usual file) lookups are binary searches; the first one out
 * of order builds a hash of every key.
 */
struct tsser {
    struct vec v;
    bool hashed;
    struct idmap map;
};

static uint64_t hash_ts(double t)
{
    if (t == 0.0)
        t = 0.0;
    uint64_t bits;
    memcpy(&bits, &t, sizeof bits);
    return idmap_mix64(bits);
}

static bool tsser_eq(const void *ctx, size_t id, const void *key)
{
    const struct tsser *s = ctx;
    return s->v.t[id] == *(const double *)key;
}

static size_t tsser_find(const struct tsser *s, double t)
{
    const struct vec *v = &s->v;
    if (v->n == 0)
        return SIZE_MAX;
    if (v->t[v->n - 1] == t)
        return v->n - 1;
    if (s->hashed)
        return idmap_find(&s->map, hash_ts(t), tsser_eq, s, &t);
    if (t > v->t[v->n - 1])
        return SIZE_MAX;
    size_t lo = series_lower_bound(v->t, v->n, t);
    return lo < v->n && v->t[lo] == t ? lo : SIZE_MAX;
}

static int tsser_append(struct tsser *s, double t, double w)
{
    struct vec *v = &s->v;
    bool was_unsorted = v->unsorted;
    if (vec_push(v, t, w) < 0)
        return -ENOMEM;
    if (s->hashed)
        return idmap_put(&s->map, hash_ts(t), v->n - 1);
    if (v->unsorted && !was_unsorted) {
        s->hashed = true;
        for (size_t i = 0; i < v->n; i++)
            if (idmap_put(&s->map, hash_ts(v->t[i]), i) < 0)
                return -ENOMEM;
    }
    return 0;
}

/* series[t] = w (last wins). */
static int tsser_set(struct tsser *s, double t, double w)
{
    size_t i = tsser_find(s, t);
    if (i != SIZE_MAX) {
        s->v.w[i] = w;
        return 0;
    }
    return tsser_append(s, t, w);
}

/* series[t] = series.get(t, 0.0) + w. */
static int tsser_add(struct tsser *s, double t, double w)
{
    size_t i = tsser_find(s, t);
    if (i != SIZE_MAX) {
        s->v.w[i] += w;
        return 0;
    }
    return tsser_append(s, t, 0.0 + w);
}

static void tsser_free(struct tsser *s)
{
    vec_free(&s->v);
    idmap_free(&s->map);
    s->hashed = false;
}

/* ---- output series ---- */

static void series_free(struct srt_log_series *s)
{
    free(s->label);
    free(s->host);
    free(s->role);
    free(s->sensor);
    for (size_t i = 0; i < s->n_other; i++)
        free(s->other_sensors[i]);
    free(s->other_sensors);
    for (size_t i = 0; i < s->n_roles; i++)
        free(s->roles[i]);
    free(s->roles);
    if (!s->t_shared)
        free(s->t);
    free(s->w);
    memset(s, 0, sizeof *s);
}

static void series_set_free(struct srt_log_series_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        series_free(&set->v[i]);
    free(set->v);
    memset(set, 0, sizeof *set);
}

static void util_set_free(struct srt_log_util_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        free(set->v[i].label);
        if (!set->v[i].t_shared)
            free(set->v[i].t);
        free(set->v[i].v);
    }
    free(set->v);
    memset(set, 0, sizeof *set);
}

/* Moves a sorted vec into out (t, w, n). 0 or -ENOMEM. */
static int vec_give(struct vec *v, size_t *n, double **t, double **w)
{
    if (vec_sort(v) < 0)
        return -ENOMEM;
    if (v->cap > v->n && v->n > 0) { /* give back the growth slack (a failed shrink keeps it) */
        double *nt = realloc(v->t, v->n * sizeof *nt);
        if (nt)
            v->t = nt;
        double *nw = realloc(v->w, v->n * sizeof *nw);
        if (nw)
            v->w = nw;
    }
    *n = v->n;
    *t = v->t;
    *w = v->w;
    v->t = v->w = NULL;
    v->n = v->cap = 0;
    return 0;
}

/* Appends a new series with label, host, index to set (the rest zero). NULL when out of
 * memory. */
static struct srt_log_series *series_add(struct srt_log_series_set *set, size_t *cap, char *label,
                                         const char *host, long long index)
{
    if (!label || array_grow(&set->v, cap, set->n + 1, sizeof *set->v) < 0) {
        free(label);
        return NULL;
    }
    struct srt_log_series *s = &set->v[set->n];
    memset(s, 0, sizeof *s);
    s->label = label;
    s->index = index;
    if (!(s->host = strdup(host))) {
        free(label);
        s->label = NULL;
        return NULL;
    }
    set->n++;
    return s;
}

/* Moves v into a new utilization entry; shared_t: the device's t array that v's times are. */
static int util_add(struct srt_log_util_set *set, size_t *cap, const char *label,
                    const char *column, size_t series, struct vec *v, double *shared_t)
{
    if (array_grow(&set->v, cap, set->n + 1, sizeof *set->v) < 0)
        return -ENOMEM;
    struct srt_log_util *u = &set->v[set->n];
    memset(u, 0, sizeof *u);
    if (!(u->label = strdup(label)))
        return -ENOMEM;
    u->column = column;
    u->series = series;
    set->n++;
    if (!v->shared_t)
        return vec_give(v, &u->n, &u->t, &u->v);
    if (v->cap > v->n && v->n > 0) { /* the growth slack back, as vec_give does */
        double *nw = realloc(v->w, v->n * sizeof *nw);
        if (nw)
            v->w = nw;
    }
    u->n = v->n;
    u->t = shared_t;
    u->t_shared = true;
    u->v = v->w;
    v->w = NULL;
    v->n = v->cap = 0;
    return 0;
}

/* ---- CPU leg (§6.4 CPU, #453) ---- */

/* srt-slurm's CPU_UTILIZATION_COLUMNS, and the same sorted by name (the output order). */
static const char *const cpu_util_cols[] = {"cpu_util_total", "cpu_util_user", "cpu_util_nice",
                                            "cpu_util_sys", "cpu_util_irq"};
static const int cpu_util_sorted[] = {4, 2, 3, 0, 1};
#define N_CPU_UTIL 5

enum kind { K_TOTAL, K_DCGM, K_CPU_RAIL, K_SOC, K_DRAM, K_MODULE, K_OTHER };

/* One OEM label pattern of cpu_rails.py: words in order, "?w1 w2" an optional group, then
 * \s+(\d+)\b. */
struct label_pattern {
    enum kind kind;
    const char *words[6];
};

static const struct label_pattern label_patterns[] = {
    {K_MODULE, {"Module", "Power", "Socket", NULL}},
    {K_TOTAL, {"Grace", "Power", "Socket", NULL}},
    {K_TOTAL, {"Total", "?Input", "Power", "?in uW", "Socket", NULL}},
    {K_CPU_RAIL, {"CPU", "Rail", "?Input", "Power", "?in uW", "Socket"}},
    {K_SOC, {"SoC", "Rail", "?Input", "Power", "?in uW", "Socket"}},
    {K_DRAM, {"DRAM", "?Input", "Power", "?in uW", "Socket", NULL}},
    {K_CPU_RAIL, {"CPU", "?Input", "Power", "?in uW", "Socket", NULL}},
    {K_SOC, {"SysIO", "Power", "Socket", NULL}},
};

/* A case-insensitive word w (n bytes) at s: the end, or NULL. */
static const char *match_word(const char *s, const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!s[i] || lower((unsigned char)s[i]) != lower((unsigned char)w[i]))
            return NULL;
    return s + n;
}

/* \s+ then word w at s: the end, or NULL. */
static const char *match_sp_word(const char *s, const char *w, size_t n)
{
    const char *p = s;
    while (is_space((unsigned char)*p))
        p++;
    return p == s ? NULL : match_word(p, w, n);
}

/* Matches words[i..] then \s+(\d+)\b at s (after the first word). */
static bool match_rest(const char *s, const char *const *words, size_t i, size_t nw)
{
    if (i == nw || !words[i]) {
        const char *p = s;
        while (is_space((unsigned char)*p))
            p++;
        if (p == s || !is_digit((unsigned char)*p))
            return false;
        while (is_digit((unsigned char)*p))
            p++;
        return !is_word((unsigned char)*p);
    }
    const char *w = words[i];
    if (w[0] == '?') {
        /* an optional group of one or more words separated by spaces */
        const char *p = s, *g = w + 1;
        bool ok = true;
        while (*g) {
            size_t len = strcspn(g, " ");
            if (!(p = match_sp_word(p, g, len))) {
                ok = false;
                break;
            }
            g += len;
            if (*g == ' ')
                g++;
        }
        if (ok && match_rest(p, words, i + 1, nw))
            return true;
        return match_rest(s, words, i + 1, nw);
    }
    const char *p = match_sp_word(s, w, strlen(w));
    return p && match_rest(p, words, i + 1, nw);
}

/* classify_acpi_label: the kind of the first pattern found in label, or K_OTHER. */
static enum kind classify_label(const char *label)
{
    size_t nw = sizeof label_patterns[0].words / sizeof label_patterns[0].words[0];
    for (size_t k = 0; k < sizeof label_patterns / sizeof label_patterns[0]; k++) {
        const struct label_pattern *pat = &label_patterns[k];
        const char *first = pat->words[0];
        size_t fl = strlen(first);
        for (const char *p = label; *p; p++) {
            if (p > label && is_word((unsigned char)p[-1]))
                continue;
            const char *q = match_word(p, first, fl);
            if (q && match_rest(q, pat->words, 1, nw))
                return pat->kind;
        }
    }
    return K_OTHER;
}

int srt_log_sensor_rank(const char *sensor)
{
    static const struct {
        const char *suffix;
        enum kind kind;
    } suffixes[] = {
        {"cpuSidePowerUsageW", K_TOTAL}, {"cpuRailPowerUsageW", K_CPU_RAIL},
        {"socPowerUsageW", K_SOC},       {"dramPowerUsageW", K_DRAM},
        {"modulePowerUsageW", K_MODULE}, {"cpuPowerUsageW", K_DCGM},
    };
    const char *colon = strchr(sensor, ':');
    const char *suffix = colon ? colon + 1 : "";
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
        if (strcmp(suffix, suffixes[i].suffix) == 0)
            return (int)suffixes[i].kind;
    return (int)classify_label(sensor);
}

struct csens {
    char *name;
    int rank;
    struct tsser s;
};

struct csock {
    size_t host;
    long long socket;
    struct csens *sens;
    size_t nsens, cap;
    size_t last; /* the sensor of the previous row */
    struct vec util[N_CPU_UTIL];
};

struct cload {
    struct csvctx c;
    bool wide, strict;
    int version; /* strict: the schema_version rows must carry (0: not checked) */
    int col_ts, col_host, col_socket, col_sensor, col_power, col_total, col_schema;
    int col_util[N_CPU_UTIL];
    struct strtab hosts;
    struct csock *socks;
    size_t nsocks, cap;
    struct idmap sockmap;
    size_t last_sock;
    struct tsser *nodes; /* per host id */
    size_t nodes_cap;
    struct issue none_total;
};

struct sockkey {
    size_t host;
    long long socket;
};

static bool sock_eq(const void *ctx, size_t id, const void *key)
{
    const struct cload *L = ctx;
    const struct sockkey *k = key;
    return L->socks[id].host == k->host && L->socks[id].socket == k->socket;
}

static uint64_t hash_pair(size_t a, long long b)
{
    return idmap_mix64((uint64_t)a * 0x9e3779b97f4a7c15ULL ^ idmap_mix64((uint64_t)b));
}

static const char *const cpu_hdr_v1[] = {"schema_version", "timestamp_unix", "hostname",
                                         "source",         "sensor",         "socket_id",
                                         "power_w",        "total_power_w",  NULL};
static const char *const cpu_hdr_scraper_v2[] = {
    "schema_version", "timestamp_unix", "hostname", "source", "sensor",        "socket_id",
    "power_w",        "cpu_rail_w",     "soc_w",    "dram_w", "total_power_w", NULL};
static const char *const cpu_hdr_scraper_v2m[] = {
    "schema_version", "timestamp_unix", "hostname",   "source", "sensor",
    "socket_id",      "power_w",        "cpu_rail_w", "soc_w",  "dram_w",
    "module_w",       "total_power_w",  NULL};
static const char *const cpu_hdr_host_v2[] = {
    "schema_version", "timestamp_unix", "timestamp_local", "hostname",      "source",
    "sensor",         "socket_id",      "power_w",         "total_power_w", NULL};
static const char *const cpu_hdr_host_v3[] = {
    "schema_version", "timestamp_unix", "timestamp_local", "hostname",      "source",
    "sensor",         "socket_id",      "power_w",         "total_power_w", "cpu_util_total",
    "cpu_util_user",  "cpu_util_nice",  "cpu_util_sys",    "cpu_util_irq",  NULL};
static const char *const cpu_hdr_host_v4[] = {"schema_version", "timestamp_unix", "timestamp_local",
                                              "hostname",       "source",         "sensor",
                                              "socket_id",      "power_w",        "cpu_rail_w",
                                              "soc_w",          "dram_w",         "total_power_w",
                                              "cpu_util_total", "cpu_util_user",  "cpu_util_nice",
                                              "cpu_util_sys",   "cpu_util_irq",   NULL};

static const struct {
    const char *name;
    const char *const *cols;
    int version;
} cpu_layouts[] = {
    {"scraper-v1/host-v1", cpu_hdr_v1, 1},
    {"scraper-v2", cpu_hdr_scraper_v2, 2},
    {"scraper-v2-module", cpu_hdr_scraper_v2m, 0},
    {"host-v2", cpu_hdr_host_v2, 2},
    {"host-v3", cpu_hdr_host_v3, 3},
    {"host-v4", cpu_hdr_host_v4, 4},
};

/* The header has just been read: find the columns, the layout. */
static int cpu_header(struct cload *L, struct carma_err *e)
{
    const struct csv_row *h = &L->c.header;
    L->col_ts = col_find(h, "timestamp_unix");
    L->col_host = col_find(h, "hostname");
    L->col_socket = col_find(h, "socket_id");
    L->col_sensor = col_find(h, "sensor");
    L->col_power = col_find(h, "power_w");
    L->col_total = col_find(h, "total_power_w");
    L->col_schema = col_find(h, "schema_version");
    for (size_t i = 0; i < N_CPU_UTIL; i++)
        L->col_util[i] = col_find(h, cpu_util_cols[i]);
    L->wide =
        col_find(h, "cpu_rail_w") >= 0 && col_find(h, "soc_w") >= 0 && col_find(h, "dram_w") >= 0;
    L->c.log->cpu_wide = L->wide;
    L->c.log->cpu_layout = "unknown";
    for (size_t i = 0; i < sizeof cpu_layouts / sizeof cpu_layouts[0]; i++) {
        if (header_is(h, cpu_layouts[i].cols)) {
            L->c.log->cpu_layout = cpu_layouts[i].name;
            L->version = cpu_layouts[i].version;
            return 0;
        }
    }
    if (L->strict)
        return carma_err_set(e, -EINVAL,
                             "%s:1: cpu_samples_csv_header_mismatch: not a known srt-slurm CPU "
                             "samples header",
                             L->c.path);
    return 0;
}

static int cpu_socket(struct cload *L, size_t host, long long socket, struct csock **ret)
{
    if (L->nsocks > 0 && L->socks[L->last_sock].host == host &&
        L->socks[L->last_sock].socket == socket) {
        *ret = &L->socks[L->last_sock];
        return 0;
    }
    struct sockkey k = {host, socket};
    uint64_t h = hash_pair(host, socket);
    size_t id = idmap_find(&L->sockmap, h, sock_eq, L, &k);
    if (id == SIZE_MAX) {
        if (array_grow(&L->socks, &L->cap, L->nsocks + 1, sizeof *L->socks) < 0 ||
            idmap_put(&L->sockmap, h, L->nsocks) < 0)
            return -ENOMEM;
        id = L->nsocks++;
        memset(&L->socks[id], 0, sizeof L->socks[id]);
        L->socks[id].host = host;
        L->socks[id].socket = socket;
    }
    L->last_sock = id;
    *ret = &L->socks[id];
    return 0;
}

static int cpu_sensor(struct csock *s, const char *name, struct csens **ret)
{
    if (s->nsens > 0 && strcmp(s->sens[s->last].name, name) == 0) {
        *ret = &s->sens[s->last];
        return 0;
    }
    for (size_t i = 0; i < s->nsens; i++) {
        if (strcmp(s->sens[i].name, name) == 0) {
            s->last = i;
            *ret = &s->sens[i];
            return 0;
        }
    }
    if (parse_utf8_bad_at(name, strlen(name)) != strlen(name))
        return -EILSEQ;
    if (array_grow(&s->sens, &s->cap, s->nsens + 1, sizeof *s->sens) < 0)
        return -ENOMEM;
    struct csens *c = &s->sens[s->nsens];
    memset(c, 0, sizeof *c);
    if (!(c->name = strdup(name)))
        return -ENOMEM;
    c->rank = srt_log_sensor_rank(name);
    s->last = s->nsens++;
    *ret = c;
    return 0;
}

static int cpu_row(void *ud, const struct csv_row *row, struct carma_err *e)
{
    struct cload *L = ud;
    const char *path = L->c.path;
    double ts;
    int r;
    if (L->strict && L->version > 0) {
        int64_t v;
        if ((r = need_col(&L->c, L->col_schema, "schema_version", row->line, e)) < 0)
            return r;
        if (parse_i64(row->fields[L->col_schema], &v) < 0 || v != L->version)
            return carma_err_set(e, -EINVAL,
                                 "%s:%zu: cpu_samples_csv_malformed: schema_version '%s' in a "
                                 "v%d file",
                                 path, row->line, row->fields[L->col_schema], L->version);
    }
    if ((r = cell_double(&L->c, row, L->col_ts, "timestamp_unix", &ts, e)) < 0 ||
        (r = need_col(&L->c, L->col_host, "hostname", row->line, e)) < 0 ||
        (r = need_col(&L->c, L->col_socket, "socket_id", row->line, e)) < 0)
        return r;
    size_t host;
    bool new_host;
    const char *hname = row->fields[L->col_host];
    if (strtab_id(&L->hosts, hname, &host, &new_host) < 0)
        return oom(e);
    if (new_host && parse_utf8_bad_at(hname, strlen(hname)) != strlen(hname))
        return bad_utf8(e, path, row->line, "hostname", hname, strlen(hname));
    if (row->fields[L->col_socket][0] != '\0') {
        long long socket;
        double w;
        if ((r = cell_int(&L->c, row, L->col_socket, "socket_id", &socket, e)) < 0)
            return r;
        const char *sensor = "power_w";
        if (!L->wide) {
            if ((r = need_col(&L->c, L->col_sensor, "sensor", row->line, e)) < 0)
                return r;
            sensor = row->fields[L->col_sensor];
        }
        if ((r = cell_double(&L->c, row, L->col_power, "power_w", &w, e)) < 0 ||
            (r = power_range(path, row->line, "power_w", w, e)) < 0)
            return r;
        struct csock *s;
        struct csens *c;
        if (cpu_socket(L, host, socket, &s) < 0)
            return oom(e);
        if ((r = cpu_sensor(s, sensor, &c)) == -EILSEQ)
            return bad_utf8(e, path, row->line, "sensor", sensor, strlen(sensor));
        if (r < 0 || tsser_set(&c->s, ts, w) < 0)
            return oom(e);
        for (size_t i = 0; i < N_CPU_UTIL; i++) {
            int col = L->col_util[i];
            if (col < 0 || row->fields[col][0] == '\0')
                continue;
            double v;
            if ((r = cell_double(&L->c, row, col, cpu_util_cols[i], &v, e)) < 0)
                return r;
            if (vec_push(&s->util[i], ts, v) < 0)
                return oom(e);
        }
    }
    if ((r = need_col(&L->c, L->col_total, "total_power_w", row->line, e)) < 0)
        return r;
    const char *total = row->fields[L->col_total];
    if (total[0] == '\0')
        return 0;
    if (strcmp(total, "None") == 0) {
        char *msg = str_printf("%s:%zu: total_power_w 'None' (the host collector's missing "
                               "aggregate) read as blank",
                               path, row->line);
        return issue_note(&L->none_total, msg) < 0 ? oom(e) : 0;
    }
    double tw;
    if ((r = cell_double(&L->c, row, L->col_total, "total_power_w", &tw, e)) < 0 ||
        (r = power_range(path, row->line, "total_power_w", tw, e)) < 0)
        return r;
    if (host >= L->nodes_cap) {
        size_t old = L->nodes_cap;
        if (array_grow(&L->nodes, &L->nodes_cap, host + 1, sizeof *L->nodes) < 0)
            return oom(e);
        memset(L->nodes + old, 0, (L->nodes_cap - old) * sizeof *L->nodes);
    }
    return tsser_set(&L->nodes[host], ts, tw) < 0 ? oom(e) : 0;
}

/* Orders (host, number) pairs: host name, then the number. */
static int cmp_host_index(const struct strtab *hosts, size_t ha, long long ia, size_t hb,
                          long long ib)
{
    int c = strcmp(hosts->names[ha], hosts->names[hb]);
    if (c != 0)
        return c;
    return ia < ib ? -1 : ia > ib;
}

static int cmp_sock(const void *ctx, size_t x, size_t y)
{
    const struct cload *L = ctx;
    const struct csock *a = &L->socks[x], *b = &L->socks[y];
    return cmp_host_index(&L->hosts, a->host, a->socket, b->host, b->socket);
}

/* Orders ids of a string table by their names. */
static int cmp_name_id(const void *ctx, size_t x, size_t y)
{
    const struct strtab *t = ctx;
    return strcmp(t->names[x], t->names[y]);
}

static int cmp_sens(const void *x, const void *y)
{
    const struct csens *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Builds log's CPU sets from L. */
static int cpu_finish(struct cload *L, struct srt_log *log)
{
    size_t *order = malloc((L->nsocks + L->hosts.n + 1) * sizeof *order);
    if (!order)
        return -ENOMEM;
    for (size_t i = 0; i < L->nsocks; i++)
        order[i] = i;
    size_t cap = 0, ucap = 0;
    int r = sort_idx(order, L->nsocks, cmp_sock, L);
    for (size_t k = 0; k < L->nsocks && r == 0; k++) {
        struct csock *s = &L->socks[order[k]];
        const char *host = L->hosts.names[s->host];
        struct srt_log_series *out =
            series_add(&log->cpu_sockets, &cap, str_printf("cpu/%s/socket%lld", host, s->socket),
                       host, s->socket);
        if (!out) {
            r = -ENOMEM;
            break;
        }
        sort_n(s->sens, s->nsens, sizeof *s->sens, cmp_sens);
        struct csens *best = &s->sens[0];
        if (!(out->sensor = strdup(best->name))) {
            r = -ENOMEM;
            break;
        }
        if (s->nsens > 1) {
            if (!(out->other_sensors = calloc(s->nsens - 1, sizeof *out->other_sensors))) {
                r = -ENOMEM;
                break;
            }
            for (size_t i = 1; i < s->nsens; i++)
                if (!(out->other_sensors[out->n_other++] = strdup(s->sens[i].name)))
                    r = -ENOMEM;
        }
        if (r == 0)
            r = vec_give(&best->s.v, &out->n, &out->t, &out->w);
        for (size_t j = 0; j < N_CPU_UTIL && r == 0; j++) {
            int c = cpu_util_sorted[j];
            if (s->util[c].n > 0)
                r = util_add(&log->cpu_util, &ucap, out->label, cpu_util_cols[c],
                             log->cpu_sockets.n - 1, &s->util[c], NULL);
        }
    }
    size_t nh = 0;
    for (size_t h = 0; h < L->hosts.n && h < L->nodes_cap; h++)
        if (L->nodes[h].v.n > 0)
            order[nh++] = h;
    if (r == 0)
        r = sort_idx(order, nh, cmp_name_id, &L->hosts);
    cap = 0;
    for (size_t k = 0; k < nh && r == 0; k++) {
        const char *host = L->hosts.names[order[k]];
        struct srt_log_series *out =
            series_add(&log->cpu_nodes, &cap, str_printf("cpu/%s", host), host, -1);
        if (!out)
            r = -ENOMEM;
        else
            r = vec_give(&L->nodes[order[k]].v, &out->n, &out->t, &out->w);
    }
    free(order);
    return r;
}

static void cload_free(struct cload *L)
{
    for (size_t i = 0; i < L->nsocks; i++) {
        struct csock *s = &L->socks[i];
        for (size_t j = 0; j < s->nsens; j++) {
            free(s->sens[j].name);
            tsser_free(&s->sens[j].s);
        }
        free(s->sens);
        for (size_t j = 0; j < N_CPU_UTIL; j++)
            vec_free(&s->util[j]);
    }
    free(L->socks);
    idmap_free(&L->sockmap);
    for (size_t i = 0; i < L->nodes_cap; i++)
        tsser_free(&L->nodes[i]);
    free(L->nodes);
    strtab_free(&L->hosts);
    issue_free(&L->none_total);
    csvctx_done(&L->c);
}

static void cpu_leg_free(struct srt_log *log)
{
    series_set_free(&log->cpu_sockets);
    series_set_free(&log->cpu_nodes);
    util_set_free(&log->cpu_util);
    log->cpu_loaded = false;
    log->cpu_wide = false;
    log->cpu_layout = NULL;
}

/* csv_each's callback: the first call also reads the header's columns. */
struct rowfn {
    bool started;
    int (*header)(void *, struct carma_err *);
    int (*row)(void *, const struct csv_row *, struct carma_err *);
    void *ud;
};

static int rowfn_call(void *p, const struct csv_row *row, struct carma_err *e)
{
    struct rowfn *f = p;
    if (!f->started) {
        f->started = true;
        int r = f->header(f->ud, e);
        if (r < 0)
            return r;
    }
    return f->row(f->ud, row, e);
}

static int cpu_header_cb(void *ud, struct carma_err *e)
{
    return cpu_header(ud, e);
}

int srt_log_load_cpu(struct srt_log *log, const char *path, struct carma_err *e)
{
    cpu_leg_free(log);
    struct cload L;
    memset(&L, 0, sizeof L);
    L.c.log = log;
    L.c.path = path;
    L.strict = (log->flags & SRT_LOG_STRICT) != 0;
    struct rowfn f = {.header = cpu_header_cb, .row = cpu_row, .ud = &L};
    int r = csv_each(&L.c, rowfn_call, &f, e);
    if (r == 0 && !f.started) {
        if (L.c.have_header)
            r = cpu_header(&L, e); /* a header alone: still known (or refused when strict) */
        else
            log->cpu_layout = "empty";
    }
    if (r == 0 && (r = issue_flush(log, &L.none_total)) < 0)
        r = oom(e);
    if (r == 0 && (r = cpu_finish(&L, log)) < 0)
        r = oom(e);
    cload_free(&L);
    if (r < 0) {
        cpu_leg_free(log);
        return r;
    }
    log->cpu_loaded = true;
    return 0;
}

/* ---- GPU leg (§6.4 GPU) ---- */

static const char *const gpu_hdr_v1[] = {
    "schema_version", "timestamp_unix", "scrape_seq", "hostname",
    "gpu_index",      "gpu_uuid",       "power_w",    NULL};
static const char *const gpu_hdr_v2[] = {
    "schema_version", "timestamp_unix", "scrape_seq",   "hostname",  "gpu_index",
    "gpu_uuid",       "power_w",        "gpu_util_pct", "sm_active", NULL};
static const char *const gpu_util_cols[] = {"gpu_util_pct", "sm_active"}; /* sorted by name */
#define N_GPU_UTIL 2

/* An expected_devices entry of the manifest. */
struct mdev {
    const char *host; /* into the manifest JSON */
    long long index;
    bool matches;  /* gpu_index is a number (else it matches no GPU, as in Python) */
    size_t *roles; /* role ids, unique */
    size_t nroles;
};

/* The first duplicate_sample_row or timestamp_non_monotonic of a device: row b after row a. */
struct gfirst {
    uint64_t seq_a, seq_b;
    uint32_t line_a, line_b;
};

/*
 * The strict reader's duplicate and monotonic checks over one device, kept as its rows arrive
 * while they come in non-decreasing scrape_seq order (the usual file: O(1) per device): the
 * last row's scrape_seq, timestamp and line, how many of each were found and the first of
 * each. The first row whose scrape_seq goes back makes the device broken: its checks are then
 * redone after the load from a second pass over the file that keeps scrape_seq and line of
 * that device's rows only (12 bytes a row).
 */
struct gchk {
    bool seen, broken;
    uint64_t seq;
    double t;
    uint32_t line;
    size_t ndup, nmono;
    int first; /* which was found first: 0 none, 1 duplicate, 2 non-monotonic */
    struct gfirst dup, mono;
};

struct gdev {
    size_t host;
    long long index;
    struct vec p;
    struct gchk chk;
    uint64_t *seq; /* broken devices, second pass: parallel to p */
    uint32_t *line;
    size_t nseq;
    size_t *roles; /* role ids (into gload.roles), sorted by name */
    size_t *rsid;  /* the role series of each (into gload.rs) */
    size_t nroles;
    struct vec util[N_GPU_UTIL];
};

struct rser {
    size_t role, host;
    struct tsser s;
};

/* gpu_index values below this are looked up in a table per host rather than hashed. */
#define DTAB_INDEX 64

/* What gpu_line does with a column (gload.colop). */
enum { GC_SKIP, GC_TS, GC_HOST, GC_INDEX, GC_POWER, GC_SEQ, GC_SCHEMA, GC_UTIL };

/* What gpu_parse reads a plain line with: the header's columns, and the last timestamp_unix
 * cell it parsed (rows of one scrape share it) with its value. One per reading thread. */
struct gparse {
    const unsigned char *colop;
    size_t ncol;
    int gen;
    char last_ts[32];
    size_t last_ts_len;
    double last_ts_v;
};

/* One plain line as gpu_parse read it. */
struct grec {
    double ts, w, util[N_GPU_UTIL];
    uint64_t index, seq;
    uint32_t off;        /* the line's first byte, from its chunk's (the parallel reader) */
    uint32_t hoff, hlen; /* the hostname cell, from the line's first byte */
    unsigned has;        /* bit i: util[i] had a value */
};

struct gload {
    struct csvctx c;
    bool strict, checks;
    int gen; /* 1, 2: the header is samples v1/v2 */
    int col_ts, col_host, col_index, col_power, col_seq, col_schema, col_uuid;
    int col_util[N_GPU_UTIL];
    struct strtab hosts;
    size_t last_host; /* the previous row's host (rows of one host come together) */
    size_t last_host_len;
    size_t prev_host; /* the host before it (two hosts taking turns) */
    size_t prev_host_len;
    bool have_prev_host;
    /* gpu_line reads the plain lines (not strict, the columns it needs present; see gpu_header):
     * what to do with each column of the header */
    bool lines, no_lines; /* no_lines: CARMA_SRTLOG_NO_FAST is set (tests: every row split) */
    unsigned char *colop;
    struct gparse P; /* gpu_line's */
    bool headed;     /* gpu_header has run */
    size_t threads;  /* CARMA_REPORT_THREADS, else the CPUs it may run on (at most BULK_THREADS) */
    size_t bulk_chunk; /* CARMA_REPORT_CHUNK (tests), else BULK_CHUNK */
    struct gdev *devs;
    size_t ndevs, cap;
    struct idmap devmap;
    uint32_t *dtab; /* [host * DTAB_INDEX + gpu_index]: device id + 1, 0 unknown */
    size_t nbroken; /* devices whose scrape_seq went back */
    size_t rows;    /* data rows so far */
    struct tsser *nodes;
    size_t nodes_cap;
    struct strtab roles;
    struct mdev *mdevs;
    size_t nmdevs;
    bool have_manifest;
    struct rser *rs;
    size_t nrs, rscap;
    struct idmap rsmap;
    struct issue schema_mismatch, dup, nonmono, seq_bad;
    struct series_prefault *pf; /* faults in the reserved series while the rows are read */
};

static bool dev_eq(const void *ctx, size_t id, const void *key)
{
    const struct gload *G = ctx;
    const struct sockkey *k = key;
    return G->devs[id].host == k->host && G->devs[id].index == k->socket;
}

static bool rs_eq(const void *ctx, size_t id, const void *key)
{
    const struct gload *G = ctx;
    const size_t *k = key;
    return G->rs[id].role == k[0] && G->rs[id].host == k[1];
}

/* load_gpu_roles: expected_devices[] -> (hostname, gpu_index) -> roles (last entry wins). */
static int load_manifest(struct gload *G, json_t *root, const char *path, struct carma_err *e)
{
    if (!json_is_object(root))
        return carma_err_set(e, -EINVAL, "%s: not a JSON object", path);
    G->have_manifest = true;
    const json_t *ed = json_object_get(root, "expected_devices");
    if (!ed)
        return 0;
    if (!json_is_array(ed))
        return carma_err_set(e, -EINVAL, "%s: 'expected_devices' is not a list", path);
    size_t n = json_array_size(ed);
    if (n == 0)
        return 0;
    if (!(G->mdevs = calloc(n, sizeof *G->mdevs)))
        return oom(e);
    for (size_t i = 0; i < n; i++) {
        const json_t *d = json_array_get(ed, i);
        struct mdev *m = &G->mdevs[G->nmdevs++];
        if (!json_is_object(d))
            return carma_err_set(e, -EINVAL, "%s: expected_devices[%zu] is not an object", path, i);
        const json_t *h = json_object_get(d, "hostname"), *gi = json_object_get(d, "gpu_index");
        const json_t *as = json_object_get(d, "assignments");
        const char *missing = !h ? "hostname" : !gi ? "gpu_index" : !as ? "assignments" : NULL;
        if (missing)
            return carma_err_set(e, -EINVAL, "%s: expected_devices[%zu] has no '%s'", path, i,
                                 missing);
        if (!json_is_string(h))
            return carma_err_set(e, -EINVAL, "%s: expected_devices[%zu].hostname is not a string",
                                 path, i);
        m->host = json_string_value(h);
        if (json_is_integer(gi)) {
            m->index = json_integer_value(gi);
            m->matches = true;
        } else if (json_is_real(gi) && json_real_value(gi) == floor(json_real_value(gi)) &&
                   fabs(json_real_value(gi)) < 9e18) {
            m->index = (long long)json_real_value(gi);
            m->matches = true;
        } else if (json_is_boolean(gi)) {
            m->index = json_is_true(gi);
            m->matches = true;
        } else {
            int r = add_warning(G->c.log, str_printf("%s: expected_devices[%zu].gpu_index is not "
                                                     "a number; that entry matches no GPU",
                                                     path, i));
            if (r < 0)
                return oom(e);
        }
        if (!json_is_array(as))
            return carma_err_set(e, -EINVAL, "%s: expected_devices[%zu].assignments is not a list",
                                 path, i);
        size_t na = json_array_size(as);
        if (na > 0 && !(m->roles = calloc(na, sizeof *m->roles)))
            return oom(e);
        for (size_t j = 0; j < na; j++) {
            const json_t *a = json_array_get(as, j);
            const json_t *role = json_is_object(a) ? json_object_get(a, "worker_role") : NULL;
            if (!json_is_string(role))
                return carma_err_set(e, -EINVAL,
                                     "%s: expected_devices[%zu].assignments[%zu] has no string "
                                     "'worker_role'",
                                     path, i, j);
            size_t id;
            if (strtab_id(&G->roles, json_string_value(role), &id, NULL) < 0)
                return oom(e);
            bool dup = false;
            for (size_t k = 0; k < m->nroles; k++)
                dup |= m->roles[k] == id;
            if (!dup)
                m->roles[m->nroles++] = id;
        }
    }
    return 0;
}

/* The roles of (host, index): the last matching manifest entry's. */
static const struct mdev *manifest_roles(const struct gload *G, const char *host, long long index)
{
    for (size_t i = G->nmdevs; i-- > 0;) {
        const struct mdev *m = &G->mdevs[i];
        if (m->matches && m->index == index && strcmp(m->host, host) == 0)
            return m;
    }
    return NULL;
}

static int gpu_header(void *ud, struct carma_err *e)
{
    struct gload *G = ud;
    const struct csv_row *h = &G->c.header;
    G->col_ts = col_find(h, "timestamp_unix");
    G->col_host = col_find(h, "hostname");
    G->col_index = col_find(h, "gpu_index");
    G->col_power = col_find(h, "power_w");
    G->col_seq = col_find(h, "scrape_seq");
    G->col_schema = col_find(h, "schema_version");
    G->col_uuid = col_find(h, "gpu_uuid");
    for (size_t i = 0; i < N_GPU_UTIL; i++)
        G->col_util[i] = col_find(h, gpu_util_cols[i]);
    G->gen = header_is(h, gpu_hdr_v1) ? 1 : header_is(h, gpu_hdr_v2) ? 2 : 0;
    G->c.log->gpu_schema = G->gen;
    if (G->strict && G->gen == 0)
        return carma_err_set(e, -EINVAL,
                             "%s:1: samples_csv_header_mismatch: not srt-slurm's samples v1 or v2 "
                             "header",
                             G->c.path);
    G->checks = G->col_seq >= 0;
    G->headed = true;
    G->lines = !G->strict && !G->no_lines && G->col_ts >= 0 && G->col_host >= 0 &&
               G->col_index >= 0 && G->col_power >= 0;
    if (G->lines) {
        if (!(G->colop = calloc(h->n, 1)))
            return oom(e);
        G->colop[G->col_ts] = GC_TS;
        G->colop[G->col_host] = GC_HOST;
        G->colop[G->col_index] = GC_INDEX;
        G->colop[G->col_power] = GC_POWER;
        if (G->col_seq >= 0)
            G->colop[G->col_seq] = GC_SEQ;
        if (G->gen > 0 && G->col_schema >= 0)
            G->colop[G->col_schema] = GC_SCHEMA;
        for (size_t i = 0; i < N_GPU_UTIL; i++)
            if (G->col_util[i] >= 0)
                G->colop[G->col_util[i]] = (unsigned char)(GC_UTIL + i);
        G->P.colop = G->colop;
        G->P.ncol = h->n;
        G->P.gen = G->gen;
    }
    return 0;
}

/* The role series (role, host), made when new. 0 or -ENOMEM. */
static int role_series(struct gload *G, size_t role, size_t host, size_t *ret)
{
    size_t key[2] = {role, host};
    uint64_t h = hash_pair(role, (long long)host);
    size_t id = idmap_find(&G->rsmap, h, rs_eq, G, key);
    if (id == SIZE_MAX) {
        if (array_grow(&G->rs, &G->rscap, G->nrs + 1, sizeof *G->rs) < 0 ||
            idmap_put(&G->rsmap, h, G->nrs) < 0)
            return -ENOMEM;
        id = G->nrs++;
        memset(&G->rs[id], 0, sizeof G->rs[id]);
        G->rs[id].role = role;
        G->rs[id].host = host;
    }
    *ret = id;
    return 0;
}

/* The device (host, index), or SIZE_MAX when there is none. */
static size_t gpu_device_find(const struct gload *G, size_t host, long long index)
{
    if (index >= 0 && index < DTAB_INDEX && host < G->nodes_cap) {
        uint32_t id1 = G->dtab[host * DTAB_INDEX + (size_t)index];
        if (id1)
            return id1 - 1;
    }
    struct sockkey k = {host, index};
    return idmap_find(&G->devmap, hash_pair(host, index), dev_eq, G, &k);
}

/* The device (host, index), made when new with its roles and role series. 0 or -ENOMEM. */
static int gpu_device(struct gload *G, size_t host, long long index, struct gdev **ret)
{
    size_t id = gpu_device_find(G, host, index);
    if (id == SIZE_MAX) {
        if (array_grow(&G->devs, &G->cap, G->ndevs + 1, sizeof *G->devs) < 0 ||
            idmap_put(&G->devmap, hash_pair(host, index), G->ndevs) < 0)
            return -ENOMEM;
        id = G->ndevs++;
        struct gdev *d = &G->devs[id];
        memset(d, 0, sizeof *d);
        d->host = host;
        d->index = index;
        for (size_t j = 0; j < N_GPU_UTIL; j++)
            d->util[j].shared_t = true; /* until a row of the device lacks the column */
        d->p.shared_t = true;           /* the node's times, until the device misses a scrape */
        const struct mdev *m = manifest_roles(G, G->hosts.names[host], index);
        if (m && m->nroles > 0) {
            if (!(d->roles = malloc(m->nroles * sizeof *d->roles)) ||
                !(d->rsid = malloc(m->nroles * sizeof *d->rsid)))
                return -ENOMEM;
            memcpy(d->roles, m->roles, m->nroles * sizeof *d->roles);
            d->nroles = m->nroles;
            if (sort_idx(d->roles, d->nroles, cmp_name_id, &G->roles) < 0)
                return -ENOMEM;
            for (size_t i = 0; i < d->nroles; i++)
                if (role_series(G, d->roles[i], host, &d->rsid[i]) < 0)
                    return -ENOMEM;
        }
        if (index >= 0 && index < DTAB_INDEX && id < UINT32_MAX)
            G->dtab[host * DTAB_INDEX + (size_t)index] = (uint32_t)(id + 1);
    }
    *ret = &G->devs[id];
    return 0;
}

/*
 * A device's times: its own, or (d->p.shared_t) the first d->p.n of its host's node series.
 * A device shares them from its first row for as long as each of its rows has the node's next
 * time and the node's times are in order: the node series only ever appends times (its sums
 * change, its times never), so that prefix stays the device's times whatever other devices add.
 */
static inline const double *dev_times(const struct gload *G, const struct gdev *d)
{
    return d->p.shared_t ? G->nodes[d->host].v.t : d->p.t;
}

/* Whether a[0, n) and b[0, n) are the same bytes: for the short cells of a row, where memcmp's
 * call costs more than the loop. */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/*
 * The host id of name (len bytes, no NUL among them; NUL-terminated or not), made when new
 * (with its node series and device table). 0, -EILSEQ (a new name that is not UTF-8) or
 * -ENOMEM.
 */
static int gpu_host(struct gload *G, const char *name, size_t len, size_t *ret)
{
    if (G->hosts.n > 0 && len == G->last_host_len &&
        same_bytes(name, G->hosts.names[G->last_host], len)) {
        *ret = G->last_host;
        return 0;
    }
    if (G->have_prev_host && len == G->prev_host_len &&
        same_bytes(name, G->hosts.names[G->prev_host], len)) {
        size_t h = G->prev_host;
        G->prev_host = G->last_host;
        G->prev_host_len = G->last_host_len;
        G->last_host = h;
        G->last_host_len = len;
        *ret = h;
        return 0;
    }
    char buf[256], *copy = NULL;
    if (name[len] != '\0') {
        copy = len < sizeof buf ? buf : malloc(len + 1);
        if (!copy)
            return -ENOMEM;
        memcpy(copy, name, len);
        copy[len] = '\0';
        name = copy;
    }
    size_t host = 0;
    bool new_host = false;
    /* a name that is not UTF-8 is never added (the caller says so with the line) */
    int r = parse_utf8_bad_at(name, len) != len ? -EILSEQ
                                                : strtab_id(&G->hosts, name, &host, &new_host);
    if (copy != buf)
        free(copy);
    if (r < 0)
        return r == -EILSEQ ? r : -ENOMEM;
    if (new_host && host >= G->nodes_cap) {
        size_t old = G->nodes_cap;
        if (array_grow(&G->nodes, &G->nodes_cap, host + 1, sizeof *G->nodes) < 0)
            return -ENOMEM;
        memset(G->nodes + old, 0, (G->nodes_cap - old) * sizeof *G->nodes);
        uint32_t *dt = realloc(G->dtab, G->nodes_cap * DTAB_INDEX * sizeof *dt);
        if (!dt) {
            G->nodes_cap = old; /* the table covers only the old hosts */
            return -ENOMEM;
        }
        G->dtab = dt;
        memset(dt + old * DTAB_INDEX, 0, (G->nodes_cap - old) * DTAB_INDEX * sizeof *dt);
    }
    if (G->hosts.n > 1) { /* hosts.n > 0 before this one: last_host was set */
        G->prev_host = G->last_host;
        G->prev_host_len = G->last_host_len;
        G->have_prev_host = true;
    }
    G->last_host = host;
    G->last_host_len = strlen(G->hosts.names[host]); /* not len: a NUL in name ends it */
    *ret = host;
    return 0;
}

/* The strict reader's per-row rules (read_samples). */
static int gpu_strict_row(struct gload *G, const struct csv_row *row, struct carma_err *e)
{
    const char *path = G->c.path;
    uint64_t v;
    if (parse_u64(row->fields[G->col_schema], &v) < 0 || v != (uint64_t)G->gen)
        return carma_err_set(e, -EINVAL,
                             "%s:%zu: samples_csv_malformed: schema_version '%s' in a v%d file",
                             path, row->line, row->fields[G->col_schema], G->gen);
    if (parse_u64(row->fields[G->col_seq], &v) < 0)
        return carma_err_set(e, -EINVAL, "%s:%zu: samples_csv_malformed: scrape_seq '%s'", path,
                             row->line, row->fields[G->col_seq]);
    if (parse_u64(row->fields[G->col_index], &v) < 0)
        return carma_err_set(e, -EINVAL, "%s:%zu: samples_csv_malformed: gpu_index '%s'", path,
                             row->line, row->fields[G->col_index]);
    if (row->fields[G->col_uuid][0] == '\0')
        return carma_err_set(e, -EINVAL, "%s:%zu: gpu_uuid_missing", path, row->line);
    double w;
    if (fastnum_double(row->fields[G->col_power], &w) < 0 || w < 0)
        return carma_err_set(e, -EINVAL, "%s:%zu: invalid_power_value: power_w '%s'", path,
                             row->line, row->fields[G->col_power]);
    return 0;
}

/* One row of device d into its checks (see struct gchk). */
static void gchk_row(struct gload *G, struct gdev *d, uint64_t seq, double t, uint32_t line)
{
    struct gchk *c = &d->chk;
    if (c->broken)
        return;
    if (c->seen) {
        if (seq < c->seq) {
            c->broken = true;
            G->nbroken++;
            return;
        }
        struct gfirst f = {c->seq, seq, c->line, line};
        if (seq == c->seq) {
            if (c->ndup++ == 0)
                c->dup = f;
            if (!c->first)
                c->first = 1;
        } else if (t < c->t) {
            if (c->nmono++ == 0)
                c->mono = f;
            if (!c->first)
                c->first = 2;
        }
    }
    c->seen = true;
    c->seq = seq;
    c->t = t;
    c->line = line;
}

/* Data rows read before the series are sized for the whole file. */
#define RESERVE_AFTER 8192

/* A vec that holds n of rows rows so far, made room for the rows expected in all (room only). */
static int vec_expect(struct vec *v, double scale)
{
    return v->n > 0 ? vec_reserve(v, (size_t)((double)v->n * scale) + 1024) : 0;
}

/* The part of v's arrays that the rows still to come are expected to write (vec_reserve's). */
static void vec_unwritten(const struct vec *v, struct series_prefault_range *r, size_t *n)
{
    size_t expect = v->cap - v->cap / 16;
    if (expect <= v->n)
        return;
    size_t bytes = (expect - v->n) * sizeof(double);
    if (v->t && !v->shared_t)
        r[(*n)++] = (struct series_prefault_range){v->t + v->n, bytes};
    r[(*n)++] = (struct series_prefault_range){v->w + v->n, bytes};
}

/* Starts the prefault thread on every series gpu_reserve sized (series.h). */
static void gpu_prefault(struct gload *G)
{
    size_t cap = 2 * (G->ndevs * (1 + N_GPU_UTIL) + G->hosts.n + G->nrs), n = 0;
    struct series_prefault_range *r = malloc(cap * sizeof *r);
    if (!r)
        return; /* only a speed-up */
    for (size_t i = 0; i < G->ndevs; i++) {
        vec_unwritten(&G->devs[i].p, r, &n);
        for (size_t j = 0; j < N_GPU_UTIL; j++)
            vec_unwritten(&G->devs[i].util[j], r, &n);
    }
    for (size_t i = 0; i < G->hosts.n; i++)
        vec_unwritten(&G->nodes[i].v, r, &n);
    for (size_t i = 0; i < G->nrs; i++)
        vec_unwritten(&G->rs[i].s.v, r, &n);
    G->pf = series_prefault_start(r, n);
    free(r);
}

/*
 * Sizes every series for the whole file from the share of it read so far, so that they are
 * not moved while they grow (a realloc that moves copies and, in a VM, refaults every page).
 */
static int gpu_reserve(struct gload *G, double done)
{
    if (!(done > 0.0) || done >= 0.9)
        return 0;
    double scale = 1.05 / done;
    int r = 0;
    for (size_t i = 0; i < G->ndevs; i++) {
        r |= vec_expect(&G->devs[i].p, scale);
        for (size_t j = 0; j < N_GPU_UTIL; j++)
            r |= vec_expect(&G->devs[i].util[j], scale);
    }
    for (size_t i = 0; i < G->hosts.n; i++)
        r |= vec_expect(&G->nodes[i].v, scale);
    for (size_t i = 0; i < G->nrs; i++)
        r |= vec_expect(&G->rs[i].s.v, scale);
    if (r == 0)
        gpu_prefault(G);
    return r;
}

/*
 * The part of a row that does not depend on how it was read: the sample of (host, index) at ts
 * into its device, node and role series, and each utilization column (col_util[i] present:
 * has[i] says whether the cell had a value, util[i]). *ret is the device. 0, -EILSEQ (a host
 * name that is not UTF-8) or -ENOMEM.
 */
static int gpu_add(struct gload *G, const char *hs, size_t hlen, long long index, double ts,
                   double w, const double *util, const bool *has, struct gdev **ret)
{
    size_t host;
    struct gdev *d;
    int r = gpu_host(G, hs, hlen, &host);
    if (r < 0)
        return r;
    if (gpu_device(G, host, index, &d) < 0 || tsser_add(&G->nodes[host], ts, w) < 0)
        return -ENOMEM;
    const struct vec *node = &G->nodes[host].v;
    if (d->p.shared_t) {
        /* still the node's times when they have this one next (node_times_cut) */
        if (!node->unsorted && node->n == d->p.n + 1 && node->t[d->p.n] == ts) {
            if (vec_push_w(&d->p, w) < 0)
                return -ENOMEM;
        } else if (vec_unshare(&d->p, node->t, false) < 0 || vec_push(&d->p, ts, w) < 0) {
            return -ENOMEM;
        }
    } else if (vec_push(&d->p, ts, w) < 0) {
        return -ENOMEM;
    }
    for (size_t i = 0; i < N_GPU_UTIL; i++) {
        if (G->col_util[i] < 0)
            continue;
        struct vec *u = &d->util[i];
        if (!has[i]) {
            /* the first row without the column: from now on its own times */
            if (u->shared_t && vec_unshare(u, dev_times(G, d), d->p.unsorted) < 0)
                return -ENOMEM;
            continue;
        }
        if ((u->shared_t ? vec_push_w(u, util[i]) : vec_push(u, ts, util[i])) < 0)
            return -ENOMEM;
    }
    for (size_t i = 0; i < d->nroles; i++)
        if (tsser_add(&G->rs[d->rsid[i]].s, ts, w) < 0)
            return -ENOMEM;
    *ret = d;
    return 0;
}

static int gpu_row(void *ud, const struct csv_row *row, struct carma_err *e)
{
    struct gload *G = ud;
    int r;
    if (++G->rows == RESERVE_AFTER && gpu_reserve(G, csvstream_progress(G->c.r, 0)) < 0)
        return oom(e);
    if (G->strict && (r = gpu_strict_row(G, row, e)) < 0)
        return r;
    double ts, w, util[N_GPU_UTIL] = {0};
    bool has[N_GPU_UTIL] = {false};
    long long index;
    if ((r = cell_double(&G->c, row, G->col_ts, "timestamp_unix", &ts, e)) < 0 ||
        (r = need_col(&G->c, G->col_host, "hostname", row->line, e)) < 0 ||
        (r = cell_int(&G->c, row, G->col_index, "gpu_index", &index, e)) < 0 ||
        (r = cell_double(&G->c, row, G->col_power, "power_w", &w, e)) < 0)
        return r;
    for (size_t i = 0; i < N_GPU_UTIL; i++) {
        int col = G->col_util[i];
        if (col < 0 || row->fields[col][0] == '\0')
            continue;
        if ((r = cell_double(&G->c, row, col, gpu_util_cols[i], &util[i], e)) < 0)
            return r;
        has[i] = true;
    }
    if ((r = power_range(G->c.path, row->line, "power_w", w, e)) < 0)
        return r;
    const char *hs = row->fields[G->col_host];
    struct gdev *d;
    if ((r = gpu_add(G, hs, strlen(hs), index, ts, w, util, has, &d)) < 0)
        return r == -EILSEQ ? bad_utf8(e, G->c.path, row->line, "hostname", hs, strlen(hs))
                            : oom(e);
    /* what only the strict reader checks: remembered for the checks after the load */
    if (!G->strict && G->gen > 0 && G->col_schema >= 0) {
        const char *sv = row->fields[G->col_schema];
        uint64_t v;
        if (!(sv[0] == '0' + G->gen && sv[1] == '\0') &&
            (fastnum_u64(sv, &v) < 0 || v != (uint64_t)G->gen)) {
            char *msg = str_printf("%s:%zu: schema_version '%s' in a v%d file (srt-slurm's "
                                   "strict reader refuses it; the report reads it)",
                                   G->c.path, row->line, sv, G->gen);
            if (issue_note(&G->schema_mismatch, msg) < 0)
                return oom(e);
        }
    }
    if (G->checks) {
        uint64_t seq;
        if (fastnum_u64(row->fields[G->col_seq], &seq) < 0) {
            G->checks = false;
            char *msg = str_printf("%s:%zu: scrape_seq '%s' is not a number; duplicate and "
                                   "monotonic checks skipped",
                                   G->c.path, row->line, row->fields[G->col_seq]);
            if (issue_note(&G->seq_bad, msg) < 0)
                return oom(e);
            return 0;
        }
        gchk_row(G, d, seq, ts, row->line > UINT32_MAX ? UINT32_MAX : (uint32_t)row->line);
    }
    return 0;
}

/* 1 to max plain digits from p into *ret; the byte after them, or NULL when there are none. */
static inline const char *line_digits(const char *p, int max, uint64_t *ret)
{
    const char *s = p;
    uint64_t v = 0;
    for (; is_digit((unsigned char)*p) && p - s < max; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    *ret = v;
    return p == s ? NULL : p;
}

/* A byte that ends a cell of a plain line (csvstream_lines): comma, line end, a lone CR, or a NUL
 * (which csv_split refuses: gpu_line leaves such a line to it). */
static inline bool cell_end(char c)
{
    return c == ',' || c == '\n' || c == '\r' || c == '\0';
}

/*
 * The plain line at s read in one pass (see csvstream_lines: it ends in a \n that every scan
 * below stops at) into *o, with the same numbers gpu_row gives its split row, when every cell
 * is one that gpu_row reads without a message and by the fast routes (fastnum_double's exact
 * fast path, fastnum_i64's and fastnum_u64's plain digits, schema_version the header's
 * generation as one digit) and the line ends in \n or \r\n after the header's number of fields.
 * Anything else (another field count, a lone CR, a blank or unusual number, a new
 * schema_version, a NUL byte, which ends a cell, ...) is left to gpu_row: 0. Returns the bytes of
 * the line (line end included). Touches nothing but P's timestamp cache and *o.
 */
static inline size_t gpu_parse(struct gparse *P, const char *s, struct grec *o)
{
    const char *p = s, *q = s;
    const unsigned char *op = P->colop;
    size_t ncol = P->ncol;
    o->has = 0;
    o->index = o->seq = 0;
    o->hoff = o->hlen = 0;
    size_t i = 0;
    for (;; p = q + 1) {
        switch (op[i]) {
        case GC_TS: {
            size_t k = P->last_ts_len;
            /* the cached text holds no line end: the comparison stops at s's \n at the latest */
            if (k > 0 && same_bytes(p, P->last_ts, k) && cell_end(p[k])) {
                o->ts = P->last_ts_v;
                q = p + k;
                break;
            }
            if (!fastnum_prefix(p, &q, &o->ts))
                return 0;
            if ((size_t)(q - p) < sizeof P->last_ts) {
                memcpy(P->last_ts, p, (size_t)(q - p));
                P->last_ts_len = (size_t)(q - p);
                P->last_ts_v = o->ts;
            }
            break;
        }
        case GC_POWER:
            if (!fastnum_prefix(p, &q, &o->w) || !(fabs(o->w) <= SRT_POWER_MAX_W))
                return 0; /* an implausible power: gpu_row says so */
            break;
        case GC_INDEX:
            if (!(q = line_digits(p, 18, &o->index)))
                return 0;
            break;
        case GC_SEQ:
            if (!(q = line_digits(p, 19, &o->seq)))
                return 0;
            break;
        case GC_SCHEMA:
            if (*p != '0' + P->gen)
                return 0;
            q = p + 1;
            break;
        case GC_HOST:
            for (q = p; !cell_end(*q); q++)
                ;
            o->hoff = (uint32_t)(p - s);
            o->hlen = (uint32_t)(q - p);
            break;
        case GC_SKIP:
            for (q = p; !cell_end(*q); q++)
                ;
            break;
        default: /* GC_UTIL + i */
            if (cell_end(*p)) {
                q = p;
                break;
            }
            if (!fastnum_prefix(p, &q, &o->util[op[i] - GC_UTIL]))
                return 0;
            o->has |= 1u << (op[i] - GC_UTIL);
            break;
        }
        if (++i == ncol || *q != ',')
            break;
    }
    if (i != ncol)
        return 0; /* fewer fields, or more in a cell than its number */
    /* q: just after the last cell, which must be the line end */
    if (*q == '\n')
        return (size_t)(q + 1 - s);
    if (*q == '\r' && q[1] == '\n')
        return (size_t)(q + 2 - s);
    return 0; /* more in the cell, more fields, a lone CR, a NUL */
}

/*
 * A line gpu_parse read (its first byte at s) into the series and the checks, as gpu_row reads
 * the same row. 0, -EILSEQ (a host name that is not UTF-8: nothing done, gpu_row says so with
 * the line) or -ENOMEM.
 */
static inline int gpu_take(struct gload *G, const char *s, const struct grec *o, size_t line)
{
    bool has[N_GPU_UTIL];
    for (size_t i = 0; i < N_GPU_UTIL; i++)
        has[i] = (o->has >> i) & 1u;
    struct gdev *d;
    int r = gpu_add(G, s + o->hoff, o->hlen, (long long)o->index, o->ts, o->w, o->util, has, &d);
    if (r < 0)
        return r;
    if (G->checks)
        gchk_row(G, d, o->seq, o->ts, line > UINT32_MAX ? UINT32_MAX : (uint32_t)line);
    return 0;
}

/*
 * csv_each's line_fn for the GPU CSV: the row at s (see csvstream_lines) read by gpu_parse and
 * gpu_take, with the same numbers and effects as gpu_row gives its split row; a line gpu_parse
 * leaves, or a host name that is not UTF-8, is left to gpu_row: 0, nothing done. Returns the
 * bytes taken (line end included), or -ENOMEM. Not used when strict (G->lines false): gpu_row
 * then reads every row.
 */
static long gpu_line(void *ud, const char *s, size_t avail, size_t line, struct carma_err *e)
{
    struct gload *G = ud;
    if (!G->lines)
        return 0;
    (void)avail; /* gpu_parse stops at the \n that ends s[0, avail) at the latest */
    struct grec o;
    size_t n = gpu_parse(&G->P, s, &o);
    if (n == 0)
        return 0;
    if (++G->rows == RESERVE_AFTER && gpu_reserve(G, csvstream_progress(G->c.r, n)) < 0)
        return oom(e);
    int r = gpu_take(G, s, &o, line);
    if (r == -EILSEQ)
        return 0;
    if (r < 0)
        return oom(e);
    return (long)n;
}

/*
 * The parallel reader (gpu_bulk): the data rows from the first plain line on are cut into chunks
 * of bulk_chunk bytes; a line belongs to the chunk it starts in. Worker threads each pread a
 * chunk (and up to BULK_TAIL bytes after it, for its last line) and gpu_parse its lines into
 * records, stopping at the first line gpu_parse leaves (or that holds a quote: a quoted field may
 * hold a line end, so nothing after it is known to start a line). The calling thread takes the
 * chunks' records in file order through gpu_take, exactly as gpu_line would have taken the same
 * lines one by one, so every sum, every check and every message is the sequential reader's.
 * What it takes is checked to be contiguous lines from the start; at the first line not taken
 * (left, a read error, a host that is not UTF-8, the end of the file) the stream moves there and
 * the sequential reader goes on from that line (and the parallel one again at the next plain line
 * when it had taken four chunks or more: one odd row does not end it). The records held are
 * those of 2 × workers + 2 chunks (64 bytes a line), not the file's.
 */
#define BULK_CHUNK   (1u << 20)
#define BULK_TAIL    (64u << 10)
#define BULK_THREADS 8

enum { BS_FREE, BS_BUSY, BS_DONE };

struct bslot {
    int state;
    size_t k;          /* the chunk */
    char *buf;         /* from the chunk's first byte (chunk 0) or the byte before it */
    size_t cap;        /* of buf */
    uint64_t base;     /* the file offset of buf[0] */
    struct grec *rec;  /* the records gpu_parse read, in file order */
    size_t nrec, rcap; /* rcap: records rec has room for */
    uint64_t first;    /* the file offset of the first record, when nrec > 0 */
    uint64_t end;      /* just after the last record */
    bool stopped;      /* a line of the chunk was not read (left, or a read error) */
};

struct bulk {
    const struct gparse *P0; /* the header's columns */
    int fd;
    uint64_t start, size, chunk;
    size_t nchunks;
    struct bslot *slots;
    size_t nslots;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t next; /* the next chunk to read */
    bool stop;
};

/* Reads chunk k into slot b (records, first, end, stopped). */
static void bulk_chunk(struct bulk *B, struct gparse *P, struct bslot *b, size_t k)
{
    uint64_t s0 = B->start + (uint64_t)k * B->chunk;
    uint64_t s1 = s0 + B->chunk < B->size ? s0 + B->chunk : B->size;
    uint64_t r0 = k == 0 ? s0 : s0 - 1;
    uint64_t r1 = s1 + BULK_TAIL < B->size ? s1 + BULK_TAIL : B->size;
    size_t want = (size_t)(r1 - r0), len = 0;
    b->nrec = 0;
    b->stopped = false;
    b->base = r0;
    b->first = b->end = s0;
    if (array_grow(&b->buf, &b->cap, want + 1, 1) < 0) {
        b->stopped = true;
        return;
    }
    while (len < want) {
        ssize_t n = pread(B->fd, b->buf + len, want - len, (off_t)(r0 + len));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            b->stopped = true; /* the sequential reader says what went wrong */
            return;
        }
        len += (size_t)n;
    }
    b->buf[len] = '\0';
    /* lim: just after the last \n, the end of what gpu_parse may read */
    const char *nl = memrchr(b->buf, '\n', len);
    size_t lim = nl ? (size_t)(nl - b->buf) + 1 : 0, p = 0;
    if (k > 0) {
        const char *f = memchr(b->buf, '\n', lim);
        if (!f) {
            /* no line starts in the chunk (a line longer than it), or its lines are cut */
            b->first = b->end = s1;
            return;
        }
        p = (size_t)(f - b->buf) + 1;
    }
    const char *qp = memchr(b->buf + p, '"', lim - p);
    size_t qlim = qp ? (size_t)(qp - b->buf) : lim;
    b->first = b->end = r0 + p;
    while (r0 + p < s1) {
        if (b->nrec == b->rcap && array_grow(&b->rec, &b->rcap, b->nrec + 1, sizeof *b->rec) < 0) {
            b->stopped = true;
            break;
        }
        struct grec *o = &b->rec[b->nrec];
        size_t n = p < lim ? gpu_parse(P, b->buf + p, o) : 0;
        if (n == 0 || p + n > qlim) {
            b->stopped = true;
            break;
        }
        o->off = (uint32_t)p;
        b->nrec++;
        p += n;
        b->end = r0 + p;
    }
}

static void *bulk_main(void *arg)
{
    struct bulk *B = arg;
    struct gparse P = *B->P0;
    pthread_mutex_lock(&B->mu);
    for (;;) {
        size_t k = B->next;
        if (B->stop || k >= B->nchunks)
            break;
        struct bslot *b = &B->slots[k % B->nslots];
        if (b->state != BS_FREE) {
            pthread_cond_wait(&B->cv, &B->mu);
            continue;
        }
        B->next++;
        b->state = BS_BUSY;
        b->k = k;
        pthread_mutex_unlock(&B->mu);
        bulk_chunk(B, &P, b, k);
        pthread_mutex_lock(&B->mu);
        b->state = BS_DONE;
        pthread_cond_broadcast(&B->cv);
    }
    pthread_mutex_unlock(&B->mu);
    return NULL;
}

/*
 * csv_each's bulk_fn for the GPU CSV: once the header is read, at the first plain line, the rows
 * of a regular file of at least two chunks read by the parallel reader (see above), then the
 * stream moved to the first line it did not take. 1 when it moved the stream, 0 when it left the
 * rows to gpu_line and gpu_row, or a negative errno with e set.
 */
static int gpu_bulk(void *ud, struct csvstream *r, struct carma_err *e)
{
    struct gload *G = ud;
    if (!G->headed)
        return 0; /* the first data row reads the header's columns (gpu_row) */
    G->c.bulk_fn = NULL;
    struct stat st;
    uint64_t start = r->off + r->pos, chunk = G->bulk_chunk;
    if (!G->lines || G->threads < 2 || fstat(r->fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < start || (uint64_t)st.st_size - start < 2 * chunk)
        return 0;
    struct bulk B;
    memset(&B, 0, sizeof B);
    B.P0 = &G->P;
    B.fd = r->fd;
    B.start = start;
    B.size = (uint64_t)st.st_size;
    B.chunk = chunk;
    B.nchunks = (size_t)((B.size - start + chunk - 1) / chunk);
    size_t workers = G->threads - 1;
    if (workers > B.nchunks)
        workers = B.nchunks;
    B.nslots = 2 * workers + 2;
    pthread_t *th = calloc(workers, sizeof *th);
    if (!th || !(B.slots = calloc(B.nslots, sizeof *B.slots))) {
        free(th);
        return oom(e);
    }
    pthread_mutex_init(&B.mu, NULL);
    pthread_cond_init(&B.cv, NULL);
    size_t nth = 0;
    for (; nth < workers; nth++)
        if (pthread_create(&th[nth], NULL, bulk_main, &B) != 0)
            break;
    uint64_t covered = start; /* the lines in [start, covered) are taken */
    size_t line = r->line;
    int ret = 0;
    bool go = nth > 0;
    for (size_t k = 0; go && k < B.nchunks; k++) {
        struct bslot *b = &B.slots[k % B.nslots];
        pthread_mutex_lock(&B.mu);
        while (b->state != BS_DONE || b->k != k)
            pthread_cond_wait(&B.cv, &B.mu);
        pthread_mutex_unlock(&B.mu);
        if (b->nrec > 0 && b->first != covered)
            go = false; /* not the line after the last one taken: the sequential reader's turn */
        for (size_t i = 0; go && i < b->nrec; i++) {
            const struct grec *o = &b->rec[i];
            const char *s = b->buf + o->off;
            if (++G->rows == RESERVE_AFTER &&
                gpu_reserve(G, (double)(b->base + o->off) / (double)B.size) < 0) {
                ret = oom(e);
                go = false;
                break;
            }
            int t = gpu_take(G, s, o, line);
            if (t == -EILSEQ) {
                go = false; /* gpu_row says so, with the line */
                break;
            }
            if (t < 0) {
                ret = oom(e);
                go = false;
                break;
            }
            line++;
            covered = b->base + o->off +
                      (i + 1 < b->nrec ? b->rec[i + 1].off - o->off : b->end - b->base - o->off);
        }
        if (b->stopped)
            go = false;
        pthread_mutex_lock(&B.mu);
        b->state = BS_FREE;
        if (!go)
            B.stop = true;
        pthread_cond_broadcast(&B.cv);
        pthread_mutex_unlock(&B.mu);
    }
    pthread_mutex_lock(&B.mu);
    B.stop = true;
    pthread_cond_broadcast(&B.cv);
    pthread_mutex_unlock(&B.mu);
    for (size_t i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&B.mu);
    pthread_cond_destroy(&B.cv);
    for (size_t i = 0; i < B.nslots; i++) {
        free(B.slots[i].buf);
        free(B.slots[i].rec);
    }
    free(B.slots);
    free(th);
    if (ret < 0)
        return ret;
    if (covered == start)
        return 0; /* nothing taken: the stream is where it was */
    /* a line left after a long run of taken ones (a rare odd row): once the sequential reader
     * has read it, the next plain line starts the parallel reader again */
    if (covered < B.size && covered - start >= 4 * chunk)
        G->c.bulk_fn = gpu_bulk;
    if ((ret = csvstream_seek(r, covered, line, e)) < 0)
        return ret;
    return 1;
}

static char *dup_msg(const struct gload *G, const struct gdev *d, const struct gfirst *f)
{
    return str_printf("%s:%" PRIu32 ": duplicate_sample_row: scrape_seq %" PRIu64
                      ", %s gpu %lld already at line %" PRIu32 "%s",
                      G->c.path, f->line_b, f->seq_b, G->hosts.names[d->host], d->index, f->line_a,
                      G->strict ? "" : " (srt-slurm's report adds both rows up)");
}

static char *mono_msg(const struct gload *G, const struct gdev *d, const struct gfirst *f)
{
    return str_printf("%s:%" PRIu32 ": timestamp_non_monotonic: %s gpu %lld at scrape_seq "
                      "%" PRIu64 " is earlier than at scrape_seq %" PRIu64 " (line %" PRIu32 ")",
                      G->c.path, f->line_b, G->hosts.names[d->host], d->index, f->seq_b, f->seq_a,
                      f->line_a);
}

/* Notes n issues whose first is text (taking it). 0 or -ENOMEM. */
static int issue_note_n(struct issue *is, char *text, size_t n)
{
    if (!text)
        return -ENOMEM;
    if (is->count == 0)
        is->first = text;
    else
        free(text);
    is->count += n;
    return 0;
}

static int cmp_seq(const void *ctx, size_t a, size_t b)
{
    const uint64_t *seq = ctx;
    return seq[a] < seq[b] ? -1 : seq[a] > seq[b];
}

/* duplicate_sample_row and timestamp_non_monotonic over one broken device, in scrape_seq
 * order, from the seq and line of its rows (second pass). */
static int gpu_check_device(struct gload *G, struct gdev *d, struct carma_err *e)
{
    size_t n = d->p.n;
    size_t *ord = malloc((n ? n : 1) * sizeof *ord);
    if (!ord)
        return oom(e);
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    if (sort_idx(ord, n, cmp_seq, d->seq) < 0) { /* stable: file order within a seq */
        free(ord);
        return oom(e);
    }
    int r = 0;
    for (size_t k = 1; k < n && r == 0; k++) {
        size_t a = ord[k - 1], b = ord[k];
        struct gfirst f = {d->seq[a], d->seq[b], d->line[a], d->line[b]};
        char *msg = NULL;
        struct issue *is = NULL;
        if (d->seq[a] == d->seq[b]) {
            is = &G->dup;
            msg = dup_msg(G, d, &f);
        } else if (dev_times(G, d)[b] < dev_times(G, d)[a]) {
            is = &G->nonmono;
            msg = mono_msg(G, d, &f);
        }
        if (!is)
            continue;
        if (!msg)
            r = oom(e);
        else if (G->strict) {
            r = carma_err_set(e, -EINVAL, "%s", msg);
            free(msg);
        } else if (issue_note(is, msg) < 0) {
            r = oom(e);
        }
    }
    free(ord);
    return r;
}

/* The second pass for broken devices: scrape_seq and line of each of their rows, in file
 * order (the first pass accepted every row, so this one only looks them up). */
static int gpu_second_pass(struct gload *G, struct carma_err *e)
{
    for (size_t i = 0; i < G->ndevs; i++) {
        struct gdev *d = &G->devs[i];
        if (!d->chk.broken)
            continue;
        if (!(d->seq = malloc(d->p.n * sizeof *d->seq)) ||
            !(d->line = malloc(d->p.n * sizeof *d->line)))
            return oom(e);
    }
    struct csvstream r;
    int ret = csvstream_open(&r, G->c.path, SRT_LOG_LINE_MAX, e);
    if (ret < 0)
        return ret;
    struct csv_row *row;
    bool torn, header = true;
    while ((ret = csvstream_next(&r, &row, &torn, e)) > 0) {
        if (header || row->n != G->c.header.n) {
            header = false;
            continue;
        }
        const char *hs = row->fields[G->col_host];
        size_t host = strtab_find(&G->hosts, hs);
        int64_t index;
        if (host == SIZE_MAX || fastnum_i64(row->fields[G->col_index], &index) < 0)
            continue;
        size_t id = gpu_device_find(G, host, index);
        uint64_t seq;
        if (id == SIZE_MAX || !G->devs[id].chk.broken ||
            fastnum_u64(row->fields[G->col_seq], &seq) < 0)
            continue;
        struct gdev *d = &G->devs[id];
        if (d->nseq == d->p.n) {
            ret = carma_err_set(e, -EIO, "%s: changed while it was read", G->c.path);
            break;
        }
        d->seq[d->nseq] = seq;
        d->line[d->nseq++] = row->line > UINT32_MAX ? UINT32_MAX : (uint32_t)row->line;
    }
    csvstream_close(&r);
    for (size_t i = 0; i < G->ndevs && ret == 0; i++)
        if (G->devs[i].chk.broken && G->devs[i].nseq != G->devs[i].p.n)
            ret = carma_err_set(e, -EIO, "%s: changed while it was read", G->c.path);
    return ret;
}

/* The checks after the load, device by device in order of first appearance. */
static int gpu_checks(struct gload *G, struct carma_err *e)
{
    if (!G->checks)
        return 0;
    int r;
    if (G->nbroken > 0 && (r = gpu_second_pass(G, e)) < 0)
        return r;
    for (size_t i = 0; i < G->ndevs; i++) {
        struct gdev *d = &G->devs[i];
        const struct gchk *c = &d->chk;
        if (c->broken) {
            r = gpu_check_device(G, d, e);
            free(d->seq);
            free(d->line);
            d->seq = NULL;
            d->line = NULL;
            if (r < 0)
                return r;
            continue;
        }
        if (!c->first)
            continue;
        if (G->strict) {
            char *msg = c->first == 1 ? dup_msg(G, d, &c->dup) : mono_msg(G, d, &c->mono);
            if (!msg)
                return oom(e);
            r = carma_err_set(e, -EINVAL, "%s", msg);
            free(msg);
            return r;
        }
        if ((c->ndup > 0 && issue_note_n(&G->dup, dup_msg(G, d, &c->dup), c->ndup) < 0) ||
            (c->nmono > 0 && issue_note_n(&G->nonmono, mono_msg(G, d, &c->mono), c->nmono) < 0))
            return oom(e);
    }
    return 0;
}

static int cmp_dev(const void *ctx, size_t x, size_t y)
{
    const struct gload *G = ctx;
    const struct gdev *a = &G->devs[x], *b = &G->devs[y];
    return cmp_host_index(&G->hosts, a->host, a->index, b->host, b->index);
}

static int cmp_rs(const void *ctx, size_t x, size_t y)
{
    const struct gload *G = ctx;
    const struct rser *a = &G->rs[x], *b = &G->rs[y];
    int c = strcmp(G->roles.names[a->role], G->roles.names[b->role]);
    return c ? c : strcmp(G->hosts.names[a->host], G->hosts.names[b->host]);
}

static int gpu_finish(struct gload *G, struct srt_log *log)
{
    size_t nmax = G->ndevs > G->nrs ? G->ndevs : G->nrs;
    if (G->hosts.n > nmax)
        nmax = G->hosts.n;
    size_t *order = malloc((nmax + 1) * sizeof *order);
    double **host_t = calloc(G->hosts.n + 1, sizeof *host_t);
    if (!order || !host_t) {
        free(order);
        free(host_t);
        return -ENOMEM;
    }
    size_t cap = 0, ucap = 0;
    int r = 0;
    /* the node series first: a device that shares its node's times takes the node's final
     * array; a node that is to be sorted first gives its devices their own copies */
    for (size_t i = 0; i < G->ndevs && r == 0; i++) {
        struct gdev *d = &G->devs[i];
        if (d->p.shared_t && G->nodes[d->host].v.unsorted)
            r = vec_unshare(&d->p, G->nodes[d->host].v.t, false);
    }
    for (size_t h = 0; h < G->hosts.n; h++)
        order[h] = h;
    if (r == 0)
        r = sort_idx(order, G->hosts.n, cmp_name_id, &G->hosts);
    for (size_t k = 0; k < G->hosts.n && r == 0; k++) {
        const char *host = G->hosts.names[order[k]];
        struct srt_log_series *out =
            series_add(&log->gpu_nodes, &cap, str_printf("gpu/%s", host), host, -1);
        if (!out)
            r = -ENOMEM;
        else if ((r = vec_give(&G->nodes[order[k]].v, &out->n, &out->t, &out->w)) == 0)
            host_t[order[k]] = out->t;
    }
    cap = 0;
    for (size_t i = 0; i < G->ndevs; i++)
        order[i] = i;
    if (r == 0)
        r = sort_idx(order, G->ndevs, cmp_dev, G);
    for (size_t k = 0; k < G->ndevs && r == 0; k++) {
        struct gdev *d = &G->devs[order[k]];
        const char *host = G->hosts.names[d->host];
        struct srt_log_series *out = series_add(
            &log->gpu_devices, &cap, str_printf("gpu/%s/gpu%lld", host, d->index), host, d->index);
        if (!out) {
            r = -ENOMEM;
            break;
        }
        if (d->nroles > 0) {
            if (!(out->roles = calloc(d->nroles, sizeof *out->roles))) {
                r = -ENOMEM;
                break;
            }
            for (size_t i = 0; i < d->nroles; i++)
                if (!(out->roles[out->n_roles++] = strdup(G->roles.names[d->roles[i]])))
                    r = -ENOMEM;
        }
        /* a device sorted on its own moves its samples: columns sharing its times copy them
         * first and are sorted on their own (the same stable order) */
        for (size_t j = 0; j < N_GPU_UTIL && r == 0; j++)
            if (d->p.unsorted && vec_unshare(&d->util[j], d->p.t, true) < 0)
                r = -ENOMEM;
        if (r == 0 && d->p.shared_t) {
            /* the node's times (in order: see above); only the values are the device's */
            struct vec *v = &d->p;
            if (v->cap > v->n && v->n > 0) {
                double *nw = realloc(v->w, v->n * sizeof *nw);
                if (nw)
                    v->w = nw;
            }
            out->n = v->n;
            out->t = host_t[d->host];
            out->t_shared = true;
            out->w = v->w;
            v->w = NULL;
            v->n = v->cap = 0;
        } else if (r == 0) {
            r = vec_give(&d->p, &out->n, &out->t, &out->w);
        }
        for (size_t j = 0; j < N_GPU_UTIL && r == 0; j++)
            if (d->util[j].n > 0)
                r = util_add(&log->gpu_util, &ucap, out->label, gpu_util_cols[j],
                             log->gpu_devices.n - 1, &d->util[j], out->t);
    }
    for (size_t i = 0; i < G->nrs; i++)
        order[i] = i;
    if (r == 0)
        r = sort_idx(order, G->nrs, cmp_rs, G);
    cap = 0;
    for (size_t k = 0; k < G->nrs && r == 0; k++) {
        struct rser *rs = &G->rs[order[k]];
        const char *host = G->hosts.names[rs->host], *role = G->roles.names[rs->role];
        struct srt_log_series *out =
            series_add(&log->gpu_roles, &cap, str_printf("gpu/%s/%s", host, role), host, -1);
        if (!out || !(out->role = strdup(role)))
            r = -ENOMEM;
        else
            r = vec_give(&rs->s.v, &out->n, &out->t, &out->w);
    }
    free(order);
    free(host_t);
    return r;
}

static void gload_free(struct gload *G)
{
    series_prefault_stop(G->pf);
    for (size_t i = 0; i < G->ndevs; i++) {
        struct gdev *d = &G->devs[i];
        vec_free(&d->p);
        free(d->seq);
        free(d->line);
        free(d->roles);
        free(d->rsid);
        for (size_t j = 0; j < N_GPU_UTIL; j++)
            vec_free(&d->util[j]);
    }
    free(G->devs);
    free(G->colop);
    idmap_free(&G->devmap);
    free(G->dtab);
    for (size_t i = 0; i < G->nodes_cap; i++)
        tsser_free(&G->nodes[i]);
    free(G->nodes);
    for (size_t i = 0; i < G->nrs; i++)
        tsser_free(&G->rs[i].s);
    free(G->rs);
    idmap_free(&G->rsmap);
    for (size_t i = 0; i < G->nmdevs; i++)
        free(G->mdevs[i].roles);
    free(G->mdevs);
    strtab_free(&G->roles);
    strtab_free(&G->hosts);
    issue_free(&G->schema_mismatch);
    issue_free(&G->dup);
    issue_free(&G->nonmono);
    issue_free(&G->seq_bad);
    csvctx_done(&G->c);
}

static void gpu_leg_free(struct srt_log *log)
{
    series_set_free(&log->gpu_devices);
    series_set_free(&log->gpu_nodes);
    series_set_free(&log->gpu_roles);
    util_set_free(&log->gpu_util);
    log->gpu_loaded = false;
    log->gpu_roles_known = false;
    log->gpu_schema = 0;
}

int srt_log_load_gpu(struct srt_log *log, const char *path, const char *manifest,
                     struct carma_err *e)
{
    gpu_leg_free(log);
    struct gload G;
    memset(&G, 0, sizeof G);
    G.c.log = log;
    G.c.path = path;
    G.strict = (log->flags & SRT_LOG_STRICT) != 0;
    json_t *mroot = NULL;
    int r = 0;
    if (manifest) {
        if (!(mroot = load_json(manifest, e, &r)) ||
            (r = load_manifest(&G, mroot, manifest, e)) < 0)
            goto out;
    }
    const char *no_fast = getenv("CARMA_SRTLOG_NO_FAST");
    G.no_lines = no_fast && *no_fast;
    G.c.line_fn = gpu_line;
    G.c.line_ud = &G;
    G.c.bulk_fn = gpu_bulk;
    /* CARMA_REPORT_THREADS when set (1: the sequential reader; carma report refuses a value that
     * is not a count), else the CPUs this process may run on, at most BULK_THREADS */
    G.threads = threads_wanted("CARMA_REPORT_THREADS", BULK_THREADS);
    const char *chunk = getenv("CARMA_REPORT_CHUNK");
    uint64_t cb;
    G.bulk_chunk = chunk && *chunk && parse_u64(chunk, &cb) == 0 && cb > 0 && cb <= (1u << 30)
                       ? (size_t)cb
                       : BULK_CHUNK;
    struct rowfn f = {.header = gpu_header, .row = gpu_row, .ud = &G};
    r = csv_each(&G.c, rowfn_call, &f, e);
    series_prefault_stop(G.pf);
    G.pf = NULL;
    if (r < 0)
        goto out;
    if (!f.started && G.c.have_header && (r = gpu_header(&G, e)) < 0)
        goto out;
    if ((r = gpu_checks(&G, e)) < 0)
        goto out;
    if (issue_flush(log, &G.seq_bad) < 0 || issue_flush(log, &G.schema_mismatch) < 0 ||
        issue_flush(log, &G.dup) < 0 || issue_flush(log, &G.nonmono) < 0 || gpu_finish(&G, log) < 0)
        r = oom(e);
out:
    gload_free(&G);
    json_decref(mroot);
    if (r < 0) {
        gpu_leg_free(log);
        return r;
    }
    log->gpu_loaded = true;
    log->gpu_roles_known = manifest != NULL;
    return 0;
}

/* ---- entry points ---- */

int srt_log_discover(struct srt_log *log, const char *log_dir, const struct srt_log_opts *o,
                     struct carma_err *e)
{
    memset(log, 0, sizeof *log);
    log->flags = o ? o->flags : 0;
    struct walk w;
    memset(&w, 0, sizeof w);
    struct strvec cpu = {0}, gpu = {0};
    char *listing = NULL;
    size_t llen = 0, lcap = 0;
    int r = 0;
    if (!(log->log_dir = pathwalk_norm(log_dir)) ||
        !(log->benchmark_out = pathwalk_join(log->log_dir, "benchmark.out"))) {
        r = oom(e);
        goto out;
    }
    if (!pathwalk_is_file(log->benchmark_out)) {
        r = carma_err_set(e, -ENOENT, "%s: not found", log->benchmark_out);
        goto out;
    }
    if ((r = pathwalk_rglob(log->log_dir, walk_entry, &w)) < 0) {
        r = oom(e);
        goto out;
    }
    sort_n(w.samples.v, w.samples.n, sizeof *w.samples.v, pathwalk_cmp_ptr);
    for (size_t i = 0; i < w.samples.n; i++) {
        const char *pn;
        size_t pl;
        pathwalk_parent_name(w.samples.v[i], &pn, &pl);
        bool is_cpu =
            (pl == 3 && memcmp(pn, "cpu", 3) == 0) || (pl == 9 && memcmp(pn, "cpu_power", 9) == 0);
        if (strvec_push(is_cpu ? &cpu : &gpu, w.samples.v[i]) < 0) {
            w.samples.v[i] = NULL;
            r = oom(e);
            goto out;
        }
        w.samples.v[i] = NULL;
    }
    if (log->flags & SRT_LOG_WINDOWS_ONLY) {
        /* the windows alone: no power CSV is looked for */
    } else if (o && o->cpu_samples) {
        if (!(log->cpu_csv = pathwalk_norm(o->cpu_samples))) {
            r = oom(e);
            goto out;
        }
        if (!pathwalk_is_file(log->cpu_csv)) {
            r = carma_err_set(e, -ENOENT, "%s: not found", log->cpu_csv);
            goto out;
        }
    } else if (cpu.n > 1) {
        for (size_t i = 0; i < cpu.n; i++) {
            size_t n = strlen(cpu.v[i]);
            if (array_grow(&listing, &lcap, llen + n + 3, 1) < 0) {
                r = oom(e);
                goto out;
            }
            if (i > 0) {
                memcpy(listing + llen, ", ", 2);
                llen += 2;
            }
            memcpy(listing + llen, cpu.v[i], n + 1);
            llen += n;
        }
        r = carma_err_set(e, -EINVAL,
                          "multiple CPU power samples.csv found below %s: %s; pick one with "
                          "--cpu-samples",
                          log->log_dir, listing);
        goto out;
    } else if (cpu.n == 1) {
        log->cpu_csv = cpu.v[0];
        cpu.v[0] = NULL;
    }
    if (gpu.n > 1 && !(log->flags & SRT_LOG_WINDOWS_ONLY)) {
        if (array_grow(&listing, &lcap, 2, 1) < 0) {
            r = oom(e);
            goto out;
        }
        listing[0] = '[';
        llen = 1;
        for (size_t i = 0; i < gpu.n; i++) {
            const char *pre = i > 0 ? ", PosixPath(" : "PosixPath(";
            if (array_grow(&listing, &lcap, llen + strlen(pre) + 1, 1) < 0) {
                r = oom(e);
                goto out;
            }
            memcpy(listing + llen, pre, strlen(pre) + 1);
            llen += strlen(pre);
            if (py_repr_append(&listing, &llen, &lcap, gpu.v[i]) < 0 ||
                array_grow(&listing, &lcap, llen + 3, 1) < 0) {
                r = oom(e);
                goto out;
            }
            listing[llen++] = ')';
            listing[llen] = '\0';
        }
        listing[llen++] = ']';
        listing[llen] = '\0';
        r = carma_err_set(e, -EINVAL, "multiple GPU power samples.csv found below %s: %s",
                          log->log_dir, listing);
        goto out;
    }
    if (gpu.n == 1 && !(log->flags & SRT_LOG_WINDOWS_ONLY)) {
        log->gpu_csv = gpu.v[0];
        gpu.v[0] = NULL;
    }
    if (!log->cpu_csv && !log->gpu_csv && !(log->flags & SRT_LOG_WINDOWS_ONLY)) {
        r = carma_err_set(e, -ENOENT, "no power samples.csv (CPU or GPU) found below %s",
                          log->log_dir);
        goto out;
    }
    if (log->gpu_csv) {
        char *m = pathwalk_with_name(log->gpu_csv, "manifest.json");
        if (!m) {
            r = oom(e);
            goto out;
        }
        if (pathwalk_is_file(m))
            log->gpu_manifest = m;
        else
            free(m);
    }
    if ((r = srt_log_detect_bench(log->benchmark_out, &log->type, e)) < 0)
        goto out;
    struct srcvec *src = log->type == SRT_LOG_BENCH_AIPERF ? &w.aiperf : &w.sabench;
    if (src->n == 0) {
        r = carma_err_set(e, -ENOENT, "no %s result artifacts found below %s",
                          srt_log_bench_name(log->type), log->log_dir);
        goto out;
    }
    sort_n(src->v, src->n, sizeof *src->v, source_cmp);
    log->sources = src->v;
    log->nsources = src->n;
    memset(src, 0, sizeof *src);
out:
    free(listing);
    strvec_free(&w.samples);
    srcvec_free(&w.aiperf);
    srcvec_free(&w.sabench);
    strvec_free(&cpu);
    strvec_free(&gpu);
    return r;
}

int srt_log_load_window(const struct srt_log *log, size_t i, struct srt_log_window *w,
                        struct carma_err *e)
{
    memset(w, 0, sizeof *w);
    if (i >= log->nsources)
        return carma_err_set(e, -EINVAL, "no source %zu", i);
    const struct srt_log_source *s = &log->sources[i];
    w->concurrency = s->concurrency;
    w->path = s->path;
    w->reported.source = "unavailable";
    bool aiperf = strcmp(pathwalk_name(s->path), "profile_export.jsonl") == 0;
    w->type = aiperf ? SRT_LOG_BENCH_AIPERF : SRT_LOG_BENCH_SA_BENCH;
    int r =
        aiperf ? aiperf_window(w, s->path, log->benchmark_out, e) : sa_bench_window(w, s->path, e);
    if (r < 0)
        window_free(w);
    return r;
}

void srt_log_window_done(struct srt_log_window *w)
{
    if (w)
        window_free(w);
}

int srt_log_load_windows(struct srt_log *log, struct carma_err *e)
{
    for (size_t i = 0; i < log->nwindows; i++)
        window_free(&log->windows[i]);
    free(log->windows);
    log->windows = NULL;
    log->nwindows = 0;
    if (log->nsources == 0)
        return 0;
    if (!(log->windows = calloc(log->nsources, sizeof *log->windows)))
        return oom(e);
    for (size_t i = 0; i < log->nsources; i++) {
        int r = srt_log_load_window(log, i, &log->windows[i], e);
        if (r < 0)
            return r;
        log->nwindows = i + 1;
    }
    return 0;
}

int srt_log_open(struct srt_log *log, const char *log_dir, const struct srt_log_opts *o,
                 struct carma_err *e)
{
    int r = srt_log_discover(log, log_dir, o, e);
    if (r == 0)
        r = srt_log_load_windows(log, e);
    if (r == 0 && log->cpu_csv)
        r = srt_log_load_cpu(log, log->cpu_csv, e);
    if (r == 0 && log->gpu_csv)
        r = srt_log_load_gpu(log, log->gpu_csv, log->gpu_manifest, e);
    return r;
}

void srt_log_done(struct srt_log *log)
{
    if (!log)
        return;
    free(log->log_dir);
    free(log->benchmark_out);
    free(log->cpu_csv);
    free(log->gpu_csv);
    free(log->gpu_manifest);
    for (size_t i = 0; i < log->nwindows; i++)
        window_free(&log->windows[i]);
    free(log->windows);
    for (size_t i = 0; i < log->nsources; i++)
        free(log->sources[i].path);
    free(log->sources);
    cpu_leg_free(log);
    gpu_leg_free(log);
    for (size_t i = 0; i < log->nwarnings; i++)
        free(log->warnings[i]);
    free(log->warnings);
    memset(log, 0, sizeof *log);
}
