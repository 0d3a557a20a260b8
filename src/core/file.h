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
#include <stdint.h>
#include <stdio.h>

/*
 * The modes of everything carma writes (docs/formats.md, "File modes"): files FILE_MODE and
 * directories FILE_DIR_MODE, less what the umask takes away (umask 077 gives 0600 and 0700); a
 * umask never adds to them (umask 000 still gives 0644 and 0755). Every output file is created
 * through file_create(), file_createat(), file_fopen_w() or file_replace(), every directory
 * with mkdir(..., FILE_DIR_MODE) or file_mkdirs().
 */
#define FILE_MODE     0644
#define FILE_DIR_MODE 0755

/*
 * Reads path whole into a new NUL-terminated buffer (*ret, caller frees; *ret_len without the
 * NUL). Returns 0, or a negative errno: from open/read, -EISDIR for a directory, -EFBIG when
 * the file holds more than max bytes, -ENOMEM. *ret is written only on success.
 */
int file_read_all(const char *path, size_t max, char **ret, size_t *ret_len);

/* Writes the n bytes at p to fd, retrying after EINTR and short writes. Returns 0, or a
 * negative errno (-EIO when write returns 0). */
int file_write_all(int fd, const void *p, size_t n);

/*
 * Opens path for writing, creating it with FILE_MODE when absent: O_WRONLY | O_CREAT |
 * O_CLOEXEC | O_NOCTTY and the extra flags (O_TRUNC, O_APPEND, O_EXCL). Returns the fd or a
 * negative errno. file_createat: path relative to the directory fd dfd.
 */
int file_create(const char *path, int flags);
int file_createat(int dfd, const char *path, int flags);

/* fopen(path, "we") through file_create(path, O_TRUNC). Returns NULL with errno set. */
FILE *file_fopen_w(const char *path);

/* mkdir -p: makes path and its missing parents (FILE_DIR_MODE). Returns 0 (also when path is a
 * directory already), -ENOTDIR when path exists and is not one, or another negative errno. */
int file_mkdirs(const char *path);

/*
 * Replaces path with the n bytes at p atomically: they are written to a new file
 * `<path>.tmp.<pid>.<16 random hex digits>` in the same directory (created with O_EXCL, so a
 * file or link of that name, left by a crashed run or put there, is never opened: another name
 * is tried, FILE_TMP_TRIES in all, then -EEXIST), fsync'ed, renamed over path, and the directory
 * is fsync'ed (best effort), so that a reader, or a crash, sees the old file or the new one
 * whole. Returns 0 or a negative errno (the temporary file is removed on failure; the old file
 * is left as it was). A path that exists and is not a regular file (/dev/null, /dev/stdout, a
 * FIFO) is written to as it is, never replaced; a directory is -EISDIR.
 */
int file_replace(const char *path, const void *p, size_t n);

#define FILE_TMP_TRIES 16

/* The random bits of file_replace's temporary names (tests replace it to force a clash). */
extern uint64_t (*file_tmp_rand)(void);

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
