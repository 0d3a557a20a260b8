/*
 * pidlive: whether the process that wrote a run directory is still alive.
 *
 * carma run and carma stat record in their manifest.json their pid, their host name and the
 * start time of their process (pid_start_ticks: field 22 of /proc/PID/stat, clock ticks since
 * boot) and the boot (boot_id). A reader on the same host (carma top) can then tell a run still
 * being measured from one whose carma was killed before it wrote "complete": the pid gone, or
 * reused by a process that started at another time, or a different boot.
 */
#ifndef CARMA_CORE_PIDLIVE_H
#define CARMA_CORE_PIDLIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The start time of process pid (/proc/PID/stat field 22) into *ret, and its state (field 3:
 * R, S, D, Z for a zombie...) into *state when not NULL. 0, or a negative errno (-ENOENT: no
 * such process, -EINVAL: a line it cannot parse). */
int pid_start_ticks(pid_t pid, uint64_t *ret, char *state);

/* pid_start_ticks' reading of the text of a /proc/PID/stat (NUL-terminated): 0 or -EINVAL. */
int pid_stat_start_parse(const char *text, uint64_t *ret, char *state);

/* This boot's id (/proc/sys/kernel/random/boot_id, 36 characters) into buf. 0 or -errno. */
int pid_boot_id(char *buf, size_t cap);

/*
 * Whether the writer pid still runs: 1 alive (or cannot tell for certain), 0 gone (no such
 * process; or start_ticks, when not 0, differs from the process's now; or boot_id, when not
 * NULL nor empty, is not this boot's; or it is a zombie: it has exited). Only meaningful on the
 * host that wrote them.
 */
int pid_writer_alive(pid_t pid, uint64_t start_ticks, const char *boot_id);

#endif
