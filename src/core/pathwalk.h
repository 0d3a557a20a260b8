/*
 * pathwalk: paths as Python's pathlib prints, orders and walks them, for readers that must name
 * and order files exactly as a Python tool does (srt-slurm's log directories):
 *
 *   pathwalk_norm      PurePosixPath(s) as text;
 *   pathwalk_join, pathwalk_with_name, pathwalk_name, pathwalk_parent_name
 *                      p / name, p.with_name(name), p.name, p.parent.name;
 *   pathwalk_cmp       pathlib's ordering, part by part ("a/b" < "a-x");
 *   pathwalk_is_file, pathwalk_is_dir, pathwalk_exists
 *                      p.is_file(), p.is_dir(), p.exists() (stat: symlinks followed);
 *   pathwalk_list, pathwalk_rglob
 *                      a directory's entries in readdir order (p.iterdir()), and rglob's walk:
 *                      a directory's entries, then each real subdirectory's in turn (a symlink
 *                      to a directory is not descended into; an unreadable directory is
 *                      skipped, as pathlib does).
 *
 * Paths are text: nothing is resolved or made absolute. The functions that return a path
 * return it malloc'ed (the caller frees it), NULL when out of memory.
 */
#ifndef CARMA_CORE_PATHWALK_H
#define CARMA_CORE_PATHWALK_H

#include <stdbool.h>
#include <stddef.h>

/* PurePosixPath(s) as text: repeated and trailing slashes and "." parts dropped, "" is ".", a
 * leading "//" (exactly two) kept. */
char *pathwalk_norm(const char *s);

/* base / name (name one component, or a relative path already normalised; base "." gives
 * name). */
char *pathwalk_join(const char *base, const char *name);

/* path.with_name(name): the last part of path replaced. */
char *pathwalk_with_name(const char *path, const char *name);

/* The last part of path (after its last '/'; path itself when it has none), into path. */
const char *pathwalk_name(const char *path);

/* The name of the parent directory of path into *ret / *ret_len, pointing into path ("" when
 * the parent is "." or the root). */
void pathwalk_parent_name(const char *path, const char **ret, size_t *ret_len);

/* Compares two paths part by part (pathlib's ordering): < 0, 0 or > 0. */
int pathwalk_cmp(const char *a, const char *b);

/* pathwalk_cmp for qsort over an array of char *. */
int pathwalk_cmp_ptr(const void *a, const void *b);

bool pathwalk_is_file(const char *path);
bool pathwalk_is_dir(const char *path);
bool pathwalk_exists(const char *path);

/* Called with an entry's name and its path (dir / name); both valid during the call only.
 * Returns 0 to go on, a negative errno to stop the walk with it. */
typedef int (*pathwalk_fn)(void *ud, const char *name, const char *path);

/* fn on every entry of dir but "." and "..", in readdir order. An unreadable dir has no
 * entries. Returns 0, fn's negative return, or -ENOMEM. */
int pathwalk_list(const char *dir, pathwalk_fn fn, void *ud);

/* rglob's walk of dir: fn on every entry of dir (as pathwalk_list), then the walk of each of its
 * real subdirectories (lstat: not a symlink) in that order, depth first; dir itself is not
 * offered. Returns 0, fn's negative return, or -ENOMEM. */
int pathwalk_rglob(const char *dir, pathwalk_fn fn, void *ud);

#endif
