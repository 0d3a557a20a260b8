/*
 * srt_json: srt-slurm's JSON files as its Python writes them (json.dumps(indent=2) and a final
 * newline, \uXXXX escapes in lowercase), replaced atomically: a temporary file, fsync, rename,
 * then a best-effort fsync of the directory. Shared by the GPU and CPU leg writers.
 */
#ifndef CARMA_EXPORT_SRT_JSON_H
#define CARMA_EXPORT_SRT_JSON_H

#include <jansson.h>

#include "core/err.h"

/* Writes m (consumed: its reference is released) to tmp_path, then renames it over path; dir
 * is the directory holding both. Returns 0 or a negative errno with e set (naming the file);
 * the old file at path is left as it was on failure. */
int srt_json_replace(json_t *m, const char *dir, const char *tmp_path, const char *path,
                     struct carma_err *e);

#endif
