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
 *
 * The details, as the format's specification and Prometheus' own parsers have them:
 * - Blanks (spaces, tabs) may lead and trail a line and surround every token, in the label set
 *   too (`a { b = "c" , } 1`); the value may follow '}' directly. A label set may be empty
 *   (`a{} 1`) and may end in a comma. Other whitespace (\r inside a line, \v, \f) is not blank.
 * - Values: Go's strconv.ParseFloat syntax without hexadecimal floats and '_' separators
 *   (rejected by Prometheus too): [+-]digits[.digits][(e|E)[+-]digits], Inf/Infinity with an
 *   optional sign and NaN without one, in any case. Correctly rounded; a value past the double
 *   range is an error, one below it becomes 0 or a subnormal. Timestamps: [+-]digits, int64.
 * - "# HELP name [text]" and "# TYPE name type" (the keyword may touch the '#'): a name is
 *   required; a type is exactly one of the lower-case words counter, gauge, histogram, summary,
 *   untyped. HELP text starts after the blanks that follow the name and loses its trailing
 *   blanks; a name may have one HELP line (anywhere) and one TYPE line (before the samples of
 *   that name, and for a histogram or summary also before those of name_bucket/_sum/_count).
 * - Label values and HELP text must be valid UTF-8 (label and metric names are ASCII by their
 *   syntax). Unknown escapes (\t, \x, a lone \) are errors.
 * - Not checked: that a family's lines are grouped together, duplicate series, the le and
 *   quantile labels of histograms and summaries, reserved "__" label names.
 * Limits: a limit of 0 allows none; max_line counts the bytes of a line without its LF or CRLF;
 * a body over max_bytes is refused before anything is read. Every error is -EINVAL (bad
 * content), -E2BIG (a limit) or -ENOMEM, and e->msg starts with "line N: " except for the body
 * size, out of memory and a NULL text.
 *
 * prom_parse is reentrant: documents share nothing and may be parsed on several threads at once.
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
    size_t max_bytes;    /* the body */
    size_t max_samples;  /* sample lines */
    size_t max_labels;   /* labels of one sample */
    size_t max_line;     /* bytes of one line, without its LF or CRLF */
    size_t max_families; /* distinct metric names with HELP or TYPE */
};

/* Defaults for scrape bodies: 16 MiB, 200000 samples, 64 labels, 64 KiB lines, 10000
 * families. */
extern const struct prom_limits prom_limits_default;

/* Strings may be shared between samples (equal labels of consecutive samples): read only. */
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
    size_t family; /* index into prom_doc.families, or SIZE_MAX when the name has no HELP/TYPE
                      (and is not a histogram's or summary's _bucket/_sum/_count) */
    size_t line;   /* 1-based line number in the body */
};

struct prom_family {
    const char *name;
    enum prom_type type;
    const char *help; /* unescaped; NULL when there is no HELP line */
};

/* A parsed body. Every string points into memory the document owns. Samples are in body
 * order; families in the order of their first HELP or TYPE line. */
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
 * name_count, or name itself for summary quantiles) is linked to that family. A family with
 * exactly the sample's name wins (so `# TYPE x_count counter` keeps x_count samples to itself);
 * then a summary or histogram x for x_sum and x_count, a histogram x for x_bucket. Links are
 * made after the whole body, so a HELP line after its samples still gives them a family.
 * Typical exporter output parses at several hundred MB/s; memory is one arena of a few large
 * blocks plus the sample and family arrays (about 64 bytes a sample plus the distinct strings).
 */
int prom_parse(const char *text, size_t len, const struct prom_limits *lim, struct prom_doc *doc,
               struct carma_err *e);

/* Frees what *doc holds and empties it (NULL-safe). */
void prom_doc_free(struct prom_doc *doc);

/* The value of label name of sample s, or NULL when s has no such label (a linear scan). */
const char *prom_label_value(const struct prom_sample *s, const char *name);

/* "counter", "gauge", "histogram", "summary", "untyped". */
const char *prom_type_name(enum prom_type t);

#endif
