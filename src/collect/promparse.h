/*
 * promparse: the Prometheus text exposition format (version 0.0.4), as exporters serve it on
 * /metrics, parsed into samples under hard limits, for `carma collect`.
 *
 * A scrape body comes from another machine: it may be truncated, hostile or simply wrong. The
 * parser never reads past len, never recurses, bounds every count and length by the limits,
 * and reports the first problem with its line number ("line 12: label value not terminated").
 * Accepted: # HELP and # TYPE lines (other comments are skipped), samples
 * `name{label="value",...} value [timestamp]` with the format's escapes in label values (\\,
 * \", \n) and HELP text (\\, \n), values as Go's ParseFloat reads them (decimal and exponent
 * forms, +Inf, -Inf, NaN), an optional integer timestamp in ms, LF or CRLF line ends, a last
 * line without its newline, blank lines. A label may appear once per sample; a metric's TYPE
 * at most once, before its samples.
 */
#ifndef CARMA_COLLECT_PROMPARSE_H
#define CARMA_COLLECT_PROMPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

enum prom_type {
    PROM_UNTYPED,
    PROM_COUNTER,
    PROM_GAUGE,
    PROM_HISTOGRAM,
    PROM_SUMMARY,
};

struct prom_limits {
    size_t max_bytes;      /* the body */
    size_t max_samples;    /* sample lines */
    size_t max_labels;     /* labels of one sample */
    size_t max_line;       /* bytes of one line */
    size_t max_families;   /* distinct metric names with HELP or TYPE */
};

/* Defaults for scrape bodies: 16 MiB, 200000 samples, 64 labels, 64 KiB lines, 10000
 * families. */
extern const struct prom_limits prom_limits_default;

struct prom_label {
    const char *name;
    const char *value; /* unescaped, NUL-terminated */
};

struct prom_sample {
    const char *name;
    const struct prom_label *labels;
    size_t nlabels;
    double value;
    bool has_timestamp;
    int64_t timestamp_ms;
    size_t family; /* index into prom_doc.families, or SIZE_MAX when the name has no HELP/TYPE */
    size_t line;   /* 1-based line number in the body */
};

struct prom_family {
    const char *name;
    enum prom_type type;
    const char *help; /* unescaped; NULL when there is no HELP line */
};

/* A parsed body. Every string points into memory the document owns. */
struct prom_doc {
    struct prom_sample *samples;
    size_t nsamples;
    struct prom_family *families;
    size_t nfamilies;
    void *mem; /* the parser's storage */
};

/*
 * Parses the len bytes at text (not NUL-terminated; may hold NUL bytes, which are an error)
 * under lim (NULL: prom_limits_default) into *doc. Returns 0, or -EINVAL with e saying the
 * line and the problem, -E2BIG when a limit is exceeded (e says which), -ENOMEM. On error
 * *doc is left empty (prom_doc_free is safe on it either way).
 * A sample whose name belongs to a histogram or summary family (name_bucket, name_sum,
 * name_count, or name itself for summary quantiles) is linked to that family.
 */
int prom_parse(const char *text, size_t len, const struct prom_limits *lim, struct prom_doc *doc,
               struct carma_err *e);

/* Frees what *doc holds and empties it (NULL-safe). */
void prom_doc_free(struct prom_doc *doc);

/* The value of label name of sample s, or NULL when s has no such label. */
const char *prom_label_value(const struct prom_sample *s, const char *name);

/* "counter", "gauge", "histogram", "summary", "untyped". */
const char *prom_type_name(enum prom_type t);

#endif
