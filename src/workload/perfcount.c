/* perfcount: per-workload perf_event counters (see perfcount.h). */
#include "workload/perfcount.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct {
    uint32_t type;
    uint64_t config;
    const char *name;
} events[PERFC_N] = {
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "task_clock_ns"},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "instructions"},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "cycles"},
};

const char *perf_counter_name(int i)
{
    return i >= 0 && i < PERFC_N ? events[i].name : "?";
}

const char *perf_counter_error_text(const struct perf_counters *p, int i)
{
    switch (p->err[i]) {
    case 0:
        return "available";
    case -ENOENT:
    case -EOPNOTSUPP:
        return "this CPU exposes no such event (a virtual machine without a virtual PMU?)";
    case -EACCES:
    case -EPERM:
        return "not permitted: run as root or lower /proc/sys/kernel/perf_event_paranoid";
    case -ENOSYS:
        return "the kernel has no perf_event_open";
    case -ENODEV:
        return "not opened (the workload did not start)";
    default:
        return strerror(-p->err[i]);
    }
}

void perf_counters_init(struct perf_counters *p)
{
    for (int i = 0; i < PERFC_N; i++) {
        p->fd[i] = -1;
        p->err[i] = -ENODEV;
    }
}

static int open_event(int i, pid_t pid, int exclude_kernel)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = events[i].type;
    a.config = events[i].config;
    a.inherit = 1;
    a.exclude_hv = 1;
    a.exclude_kernel = (unsigned)exclude_kernel;
    long fd = syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

void perf_counters_open(struct perf_counters *p, pid_t pid)
{
    perf_counters_init(p);
    for (int i = 0; i < PERFC_N; i++) {
        int fd = open_event(i, pid, 0);
        if (fd == -EACCES || fd == -EPERM)
            fd = open_event(i, pid, 1); /* user space only, as perf_event_paranoid allows */
        if (fd >= 0) {
            p->fd[i] = fd;
            p->err[i] = 0;
        } else {
            p->err[i] = fd;
        }
    }
}

unsigned perf_counters_read(const struct perf_counters *p, uint64_t v[PERFC_N])
{
    unsigned mask = 0;
    for (int i = 0; i < PERFC_N; i++) {
        v[i] = 0;
        if (p->fd[i] < 0)
            continue;
        uint64_t x;
        if (read(p->fd[i], &x, sizeof x) == (ssize_t)sizeof x) {
            v[i] = x;
            mask |= 1u << i;
        }
    }
    return mask;
}

void perf_counters_close(struct perf_counters *p)
{
    for (int i = 0; i < PERFC_N; i++) {
        if (p->fd[i] >= 0)
            close(p->fd[i]);
        p->fd[i] = -1;
    }
}
