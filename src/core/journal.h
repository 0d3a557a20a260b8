/*
 * journal: an append-only file of whole rows (samples.csv, attribution.csv, node_util.csv, the
 * event summaries...) that a full disk or a file size limit never tears.
 *
 * Each batch of rows goes to the file in one write(2) (retried after a short write); when the
 * batch cannot be written whole (-ENOSPC, -EFBIG past `ulimit -f` with SIGXFSZ ignored, -EIO),
 * the file is cut back (ftruncate) to the end of its last whole row, the batch's rows are
 * counted as lost, and later batches are tried again. A reader, or a carma killed at any
 * moment, sees whole rows only. The journal says each condition (an errno) once: the first
 * failure of each fills the caller's warning; journal_loss_text() gives the count at the end.
 */
#ifndef CARMA_CORE_JOURNAL_H
#define CARMA_CORE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"

/* The distinct errors a journal counts its lost rows by (more are counted with the last). */
#define JOURNAL_REASONS_MAX 4

struct journal;

/*
 * Creates (truncates) path with FILE_MODE (core/file.h) and writes header (NULL or "": none)
 * with journal_append's rule. unit names what a batch's rows count in the messages ("rows",
 * "lines", "snapshots"; a static string). Returns the journal (journal_close() frees it), or
 * NULL with e naming the file.
 */
struct journal *journal_open(const char *path, const char *header, const char *unit,
                             struct carma_err *e);

/*
 * Appends the n bytes at p, rows whole rows (ending in a line end), with one write(2). Returns
 * 0; or a negative errno when they were not written: the file is cut back to its last whole
 * row (when even that fails, nothing more is appended to it: -EIO after), the rows are counted
 * lost. first_ns (realtime ns, or < 0 when none) is the time of the batch's first row, for the
 * message. warn (may be NULL) is set only on the first failure of each condition (a distinct
 * errno) of this journal: "cannot write PATH: REASON (UNIT from t=T not written; ...)", to be
 * said once; otherwise it is left as it was. NULL-safe (a journal that could not be opened
 * counts nothing).
 */
int journal_append(struct journal *j, const void *p, size_t n, uint64_t rows, int64_t first_ns,
                   struct carma_err *warn);

/* Rows written (the header not counted) and rows lost so far; NULL-safe (0). *ret_err (may be
 * NULL) gets the first error (a negative errno), 0 when nothing was lost. */
uint64_t journal_rows(const struct journal *j);
uint64_t journal_lost(const struct journal *j, int *ret_err);

/* Bytes of whole rows in the file (the header included). */
off_t journal_size(const struct journal *j);

/* Whether a failed batch could not be cut off: the file ends in part of a row and
 * journal_append writes nothing more (-EIO). NULL-safe (false). */
bool journal_damaged(const struct journal *j);

/* Flushes the file to its disk (fsync). Returns 0 (also where the file cannot be synced: a
 * pipe, a special file), or -errno (a delayed write error). NULL-safe (0). */
int journal_sync(struct journal *j);

/* The path the journal writes. */
const char *journal_path(const struct journal *j);

/* journal_sync then journal_close (NULL-safe: 0). Returns 0, or the first error, with e's message
 * "cannot write PATH: <strerror>". The journal is freed either way. */
int journal_finish(struct journal *j, const char *path, struct carma_err *e);

/*
 * The count at the end, when rows were lost: "PATH: 1234 rows lost to: No space left on
 * device" (several reasons: "... lost to: No space left on device (1200), File too large
 * (34)"). Writes it to buf (size bytes, truncated to fit) and returns true; false (buf
 * empty) when nothing was lost.
 */
bool journal_loss_text(const struct journal *j, char *buf, size_t size);

/* Closes the file and frees the journal (NULL-safe). Returns 0, or -errno from close (an NFS
 * file's delayed write error). */
int journal_close(struct journal *j);

/*
 * Keeps bytes of room on the file system of the directory dir: an unnamed file (O_TMPFILE;
 * else a new file unlinked at once) with that many bytes allocated (posix_fallocate). Closing
 * the returned fd gives the room back, and so does the process's end, however it ends, so
 * nothing is left behind. For the small files written at the end of a measurement, after the
 * journals may have filled the disk. Returns the fd, or a negative errno (-ENOSPC when there
 * is not that much room).
 */
int journal_reserve(const char *dir, size_t bytes);

#endif
