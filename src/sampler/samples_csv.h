/*
 * samples_csv: the samples journal, one row per tick per channel (long format):
 *   timestamp_unix,timestamp_local,channel,source,kind,domain,method,watts,joules_total
 * written in whole ticks, one write(2) per batch of the ticks of SAMPLES_CSV_BATCH_NS (every
 * tick at 100 ms or slower; a hundred at 1 ms), so a killed carma leaves complete rows up to at
 * most 100 ms before its end; CRLF line ends (RFC 4180), numbers in fixed point with µW / µJ
 * resolution, a blank cell where a reading was missing. The per-channel middle of each row is built
 * once.
 */
#ifndef CARMA_SAMPLER_SAMPLES_CSV_H
#define CARMA_SAMPLER_SAMPLES_CSV_H

#include <stdint.h>

#include "core/err.h"
#include "core/journal.h"
#include "sampler/sampler.h"

#define SAMPLES_CSV_HEADER                                                                         \
    "timestamp_unix,timestamp_local,channel,source,kind,domain,method,watts,joules_total"

/* The most time one write's ticks span, and the most ticks one write holds. */
#define SAMPLES_CSV_BATCH_NS        (100 * 1000 * 1000LL)
#define SAMPLES_CSV_BATCH_TICKS_MAX 128

struct samples_csv;

/*
 * Creates (truncates) path and writes the header. Sizes the row buffer for the sampler's
 * channels. Returns NULL with e naming the file on failure.
 */
struct samples_csv *samples_csv_open(const char *path, const struct sampler *s,
                                     struct carma_err *e);

/*
 * Adds the current tick's rows to the batch and writes the batch (core/journal) once the
 * next tick would make it span SAMPLES_CSV_BATCH_NS or more. Returns 0, or a negative errno
 * (-ENOSPC for a full disk, -EFBIG past the file size limit, with SIGXFSZ ignored); a tick written
 * in part is cut off again (the file keeps whole rows only), rows written before stay on disk and
 * later ticks are tried again. e is set, naming the file, only at the first failure of each
 * condition (the warning to say once; journal_append()).
 */
int samples_csv_write_tick(struct samples_csv *w, const struct sampler *s, struct carma_err *e);

/* Writes the ticks held now (samples_csv_write_tick's rule and return values); the last
 * tick's writer calls it before anything reads the file. samples_csv_close() does it too. */
int samples_csv_flush(struct samples_csv *w, struct carma_err *e);

/* Rows written so far. */
uint64_t samples_csv_rows(const struct samples_csv *w);

/* Ticks that could not be written so far (NULL-safe); *ret_err (may be NULL) gets the first
 * error, a negative errno, or 0 when none failed. */
uint64_t samples_csv_lost_ticks(const struct samples_csv *w, int *ret_err);

/* The journal the rows go to (its losses: journal_loss_text()); NULL for NULL. */
const struct journal *samples_csv_journal(const struct samples_csv *w);

/* Closes the file and frees the writer (NULL-safe). Returns 0 or -errno from close. */
int samples_csv_close(struct samples_csv *w);

#endif
