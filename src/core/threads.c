/* threads: how many threads parallel work may use (see threads.h). */
#include "core/threads.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/parse.h"

size_t threads_wanted(const char *name, size_t max_auto)
{
    size_t n = 0;
    if (threads_env(name, &n) == 0 && n > 0)
        return n;
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                            : sysconf(_SC_NPROCESSORS_ONLN);
    n = cpus < 1 ? 1 : (size_t)cpus;
    return n > max_auto ? (max_auto ? max_auto : 1) : n;
}

int threads_env(const char *name, size_t *ret)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        *ret = 0;
        return 0;
    }
    uint64_t n;
    if (parse_u64(v, &n) < 0 || n < 1 || n > THREADS_MAX)
        return -EINVAL;
    *ret = (size_t)n;
    return 0;
}
