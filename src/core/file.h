/*
 * file: reading a whole (small) file into memory, with a size limit (the files a user gives
 * carma: experiments, intensity series, CPU tables; sysfs/procfs go through fsroot instead),
 * writing a buffer whole, making a directory with its parents, and claiming a directory for a
 * new measurement.
 */
#ifndef CARMA_CORE_FILE_H
#define CARMA_CORE_FILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Reads path whole into a new NUL-terminated buffer (*ret, caller frees; *ret_len without the
 * NUL). Returns 0, or a negative errno: from open/read, -EISDIR for a directory, -EFBIG when
 * the file holds more than max bytes, -ENOMEM. *ret is written only on success.
 */
int file_read_all(const char *path, size_t max, char **ret, size_t *ret_len);

/* Writes the n bytes at p to fd, retrying after EINTR and short writes. Returns 0, or a
 * negative errno (-EIO when write returns 0). */
int file_write_all(int fd, const void *p, size_t n);

/* mkdir -p: makes path and its missing parents (mode 0755). Returns 0 (also when path is a
 * directory already), -ENOTDIR when path exists and is not one, or another negative errno. */
int file_mkdirs(const char *path);

/*
 * Replaces path with the n bytes at p atomically: they are written to `<path>.tmp.<pid>` in the
 * same directory, fsync'ed, renamed over path, and the directory is fsync'ed (best effort), so
 * that a reader, or a crash, sees the old file or the new one whole. Returns 0 or a negative
 * errno (the temporary file is removed on failure; the old file is left as it was). A path
 * that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is written to as it
 * is, never replaced; a directory is -EISDIR.
 */
int file_replace(const char *path, const void *p, size_t n);

/*
 * Claims path as the directory of a new measurement, so that nothing already there is ever
 * overwritten: makes it (with its missing parents) or takes an existing directory only when
 * none of the names in outputs (NULL-terminated: the files the measurement will write; NULL:
 * the directory must be empty) exists in it, and creates the (empty) file claim in it with
 * O_EXCL. Other entries (a job's logs/) are left alone. Of two processes claiming the same path
 * at once, one wins (its mkdir, or its O_EXCL create) and the other gets -ENOTEMPTY. Returns 0
 * (*ret_created: whether path was made here), -ENOTEMPTY when path holds claim or one of
 * outputs (or anything, with outputs NULL), -ENOTDIR when it is not a directory, or another
 * negative errno.
 */
int file_claim_dir(const char *path, const char *claim, const char *const *outputs,
                   bool *ret_created);

/* Undoes file_claim_dir while nothing else was written: removes the claim file, and path when
 * it was made by the claim (created). */
void file_unclaim_dir(const char *path, const char *claim, bool created);

#endif
