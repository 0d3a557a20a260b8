/*
 * srt/json: the files both srt-slurm legs write: JSON files as its Python writes them
 * (json.dumps(indent=2) and a final newline, \uXXXX escapes in lowercase), replaced atomically: a
 * temporary file, fsync, rename, then a best-effort fsync of the directory. Shared by the GPU and
 * CPU leg writers.
 */
#ifndef CARMA_SRT_JSON_H
#define CARMA_SRT_JSON_H

#include <jansson.h>

#include "core/csv.h"
#include "core/err.h"
#include "core/journal.h"

/* Writes m (consumed: its reference is released) as path with file_replace() (core/file.h): a
 * temporary file of a new random name created with O_EXCL (a file or link planted there is
 * never opened), fsync, rename, a best-effort fsync of the directory. Returns 0 or a negative
 * errno with e set (naming the file); the old file at path is left as it was on failure. */
int srt_json_replace(json_t *m, const char *path, struct carma_err *e);

/*
 * Makes dir (with its parents) and creates (or truncates) the CSV file csv_path in it, holding
 * header, as a journal of whole rows (core/journal.h). Returns the journal, or NULL with e set
 * (naming the directory or the file).
 */
struct journal *srt_json_csv_create(const char *dir, const char *csv_path, const char *header,
                                    struct carma_err *e);

/* Appends a float cell as srt-slurm's Python writes one: v with up to 6 decimals and at least
 * one ("150.0"), never "-0.0". The buffer must have room for it (csv_buf_reserve). */
void srt_json_float_cell(struct csv_buf *b, double v);

/* The SHA-256 of the file at path (samples_sha256) as 64 lowercase hex digits in out[65].
 * Returns 0, -ENOTSUP without libcrypto, or a negative errno. */
int srt_json_file_sha256(const char *path, char out[65]);

#endif
