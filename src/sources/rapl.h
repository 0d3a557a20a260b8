/*
 * rapl: the RAPL source's two read paths and what the rest of carma asks of them.
 *
 * RAPL energy is read either through powercap (one energy_uj file per zone, a pread each)
 * or through the kernel's RAPL perf PMU (sys/bus/event_source/devices/power: one perf event
 * group per package, whose one read() returns every domain of the package). Where both work
 * the probe times both and keeps the faster (rapl.c); --rapl-path forces one. The perf calls
 * go through rapl_perf_sys so that unit tests can drive every fault path of the perf path with
 * a fixture tree holding the PMU's sysfs description.
 */
#ifndef CARMA_SOURCES_RAPL_H
#define CARMA_SOURCES_RAPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sources/source.h"

#define RAPL_PMU_DIR "sys/bus/event_source/devices/power"

/* Which read path the probe may use (probe_ctx.rapl_path). */
enum rapl_path { RAPL_PATH_AUTO, RAPL_PATH_POWERCAP, RAPL_PATH_PERF };

/* Parses "auto", "powercap" or "perf". Returns 0 and *ret, or -EINVAL. */
int rapl_path_parse(const char *s, enum rapl_path *ret);

/*
 * The system calls of the perf path (the test seam). open: perf_event_open(2) of event config
 * of PMU type on cpu (pid -1: the whole CPU) in the group of group_fd (-1: a new group, this
 * event its leader), returning the fd or a negative errno. read: read(2) of the group leader,
 * returning the bytes read or a negative errno. close: close(2). Tests replace the members and
 * restore rapl_perf_sys_default afterwards.
 */
struct rapl_perf_sys {
    int (*open)(uint32_t type, uint64_t config, int cpu, int group_fd);
    ssize_t (*read)(int fd, void *buf, size_t n);
    void (*close)(int fd);
};
extern struct rapl_perf_sys rapl_perf_sys;
extern const struct rapl_perf_sys rapl_perf_sys_default;

/* True when s is the rapl source. */
bool rapl_source_is(const struct source *s);

/*
 * How the rapl source s reads channel i of the set (an index in s's range), for people:
 * "powercap pread" or "perf group (N domains, 1 read)". Writes it into buf; returns buf, or
 * NULL when s is not a usable rapl source or i not one of its channels.
 */
const char *rapl_channel_read_path(const struct source *s, size_t i, char *buf, size_t cap);

#endif
