/*
 * escaped: at the end of `carma run`, what left its workload's process group and is still
 * alive as carma's adopted child (workload/strays.h) is ended, and said on stderr:
 *   carma: 1 process escaped its workload's process group: pid 1234 (daemon.sh): killed
 */
#ifndef CARMA_CLI_ESCAPED_H
#define CARMA_CLI_ESCAPED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Notes carma's children now, before it starts anything: escaped_end() leaves them alone. */
void escaped_begin(void);

/* Ends carma's children other than keep[0..nkeep) (and those escaped_begin() found) (SIGTERM,
 * grace_ns, SIGKILL) and says which ones on stderr. Returns how many there were. */
size_t escaped_end(const pid_t *keep, size_t nkeep, int64_t grace_ns);

#endif
