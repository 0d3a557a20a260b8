/*
 * file: reading a whole (small) file into memory, with a size limit (the files a user gives
 * carma: experiments, intensity series, CPU tables; sysfs/procfs go through fsroot instead),
 * writing a buffer whole, making a directory with its parents, and claiming a directory for a
 * new measurement.
 */
#ifndef CARMA_CORE_FILE_H
#define CARMA_CORE_FILE_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "err.h"

/*
 * Opens path (relative to dirfd unless absolute; AT_FDCWD for the working directory) to read
 * an input that is meant to be a regular file: O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
 * so that opening a FIFO with no writer never blocks; then fstat's it and refuses anything
 * but a regular file (-EISDIR for a directory, -ESPIPE for a FIFO, socket or device such as
 * /dev/zero, which would never end), and clears O_NONBLOCK. Reading a regular file always ends:
 * at its end, or at the caller's size cap. Returns the fd (the caller closes it) and *st (when
 * not NULL), or a negative errno. Every input carma reads (run directories, experiments,
 * intensity series, models, nsys exports) is opened through here; sysfs/procfs through fsroot,
 * which applies the same rule.
 */
int file_open_input(int dirfd, const char *path, struct stat *st);

/* The check of file_open_input() on an fd opened with O_NONBLOCK: refuses (closing fd) a
 * directory (-EISDIR, unless dirs_ok) and anything but a regular file or directory (-ESPIPE),
 * clears O_NONBLOCK. Returns fd and *ret_st (when not NULL), or a negative errno. */
int file_check_input(int fd, bool dirs_ok, struct stat *ret_st);

/* file_open_input() as a stdio stream (mode "r", close-on-exec). Returns NULL with *err (a
 * negative errno) set. */
FILE *file_fopen_input(const char *path, int *err);

/* The kind of file mode names, for a message: "a FIFO", "a directory", "a character device",
 * "a block device", "a socket", "a symbolic link", "a regular file" or "an unknown file". */
const char *file_kind(mode_t mode);

/* The kind (file_kind()) of path below dirfd, following symbolic links ("a dangling symbolic
 * link" when its target is absent; "an unreadable file" when it cannot be stat'ed). */
const char *file_kind_at(int dirfd, const char *path);

/* The most file_load_json() reads: a run directory's JSON files are far smaller. */
#define FILE_JSON_MAX ((size_t)64 << 20)

/*
 * Parses the JSON file at path, read with file_read_all() (at most FILE_JSON_MAX bytes), with
 * jansson's flags. Returns the value, or NULL with *err (may be NULL) a negative errno: the
 * read's (je->text then holds its strerror, je->line 0), or -EINVAL for bad JSON (je as
 * json_loadb() sets it).
 */
struct json_t;
struct json_error_t;
struct json_t *file_load_json(const char *path, size_t flags, struct json_error_t *je, int *err);

/*
 * Sets e to the message for error r of file_open_input() or file_read_all() on path: "PATH is
 * not a regular file (a FIFO)" for -ESPIPE (a FIFO, socket or device), "PATH: STRERROR"
 * otherwise.
 * Returns r.
 */
int file_input_err(struct carma_err *e, const char *path, int r);

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
 * NUL), opened with file_open_input(). Returns 0, or a negative errno: from open/read, -EISDIR
 * for a directory, -ESPIPE for another file that is not a regular one, -EFBIG when
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
