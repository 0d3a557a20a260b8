/*
 * threads: how many threads a command's parallel work may use (carma report's reader of a big
 * samples.csv, its windows).
 */
#ifndef CARMA_CORE_THREADS_H
#define CARMA_CORE_THREADS_H

#include <stddef.h>

/* The most threads a knob may ask for. */
#define THREADS_MAX 256

/*
 * The threads parallel work asks for: the environment variable name's count when it holds one
 * (threads_env), else the CPUs this process may run on (its affinity: a Slurm step's or
 * taskset's share, not the machine's; else the CPUs online), at most max_auto; at least 1.
 */
size_t threads_wanted(const char *name, size_t max_auto);

/*
 * The thread count the environment variable name asks for: 0 with *ret = 0 when it is unset or
 * empty, 0 with *ret = N for a whole number N from 1 to THREADS_MAX (surrounding spaces
 * allowed), else -EINVAL (*ret untouched).
 */
int threads_env(const char *name, size_t *ret);

#endif
