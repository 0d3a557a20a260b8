/*
 * crash: what `carma run` leaves for `carma cleanup` (docs/formats.md): the lock it holds on
 * its run directory for its whole life (run.lock), and the finishing of a directory whose carma
 * was killed (the torn last line of a file cut back to the last whole one).
 *
 * run.lock holds the pid of the carma that writes the directory, and carma holds an exclusive
 * flock(2) on it (O_CLOEXEC: no workload inherits it; the kernel drops it when carma dies,
 * however it dies). Another process that takes it without waiting learns whether that carma
 * is still alive, and which it is.
 * Nothing here prints.
 */
#ifndef CARMA_RUNDIR_CRASH_H
#define CARMA_RUNDIR_CRASH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"

#define RUNDIR_LOCK_NAME "run.lock"

/*
 * Takes the lock of the run directory dir without waiting: creates dir/run.lock when create
 * (and writes the caller's pid into it), else opens the one there. Returns the lock's fd
 * (O_CLOEXEC; the lock lasts until it is closed), or a negative errno with e set: -EWOULDBLOCK
 * when another process holds it (*holder, when not NULL, the pid written in the file, 0 when
 * it cannot be read), -ENOENT when there is no run.lock and not create.
 */
int rundir_crash_lock(const char *dir, int create, pid_t *holder, struct carma_err *e);

/*
 * Cuts the torn last line of dir/name (bytes after the last line end: a row a killed writer
 * did not finish) off the file. Returns 1 when a torn line was cut (*dropped: its bytes), 0
 * when the file ends with a line end or is empty, or a negative errno with e set ("PATH:
 * cannot ...: REASON").
 */
int rundir_crash_trim(const char *dir, const char *name, size_t *dropped, struct carma_err *e);

#endif
