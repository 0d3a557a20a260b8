/* procfs: node CPU utilization from proc/stat (see procfs.h). */
#include "sources/procfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "core/parse.h"

/* cpu numbers at or above this in proc/stat are ignored (the kernel's NR_CPUS is at most
 * 8192 today) */
#define CPUS_MAX 65536

/* The N of a "cpuN" label at p (p just after "cpu", at a digit), or -1 when N is CPUS_MAX or
 * more (no array is that large); *end is set past the digits either way. */
static long cpu_number(const char *p, const char **end)
{
    long idx = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if (idx >= 0 && (idx = idx * 10 + (*p - '0')) >= CPUS_MAX)
            idx = -1; /* stays -1: the number is read to its end, never accumulated further */
    *end = p;
    return idx;
}

/* Parses up to 8 unsigned fields after the label; fields missing in old kernels stay 0. */
static const char *parse_times(const char *p, struct cpu_times *t)
{
    uint64_t v[8] = {0};
    int n = 0;
    while (*p && *p != '\n' && n < 8) {
        while (*p == ' ')
            p++;
        if (*p < '0' || *p > '9')
            break;
        uint64_t x;
        if (!(p = parse_digits_u64(p, &x)))
            return NULL; /* past 64 bits: no tick count is that large, not proc/stat's line */
        v[n++] = x;
    }
    if (n < 4)
        return NULL;
    t->user = v[0];
    t->nice = v[1];
    t->system = v[2];
    t->idle = v[3];
    t->iowait = v[4];
    t->irq = v[5];
    t->softirq = v[6];
    t->steal = v[7];
    while (*p && *p != '\n')
        p++;
    return p;
}

int procstat_parse(const char *text, struct cpu_times *node, struct cpu_times *cpu, int ncpu)
{
    const char *p = text;
    if (strncmp(p, "cpu ", 4) != 0)
        return -EINVAL;
    p = parse_times(p + 4, node);
    if (!p)
        return -EINVAL;
    int seen = 0;
    while (*p == '\n') {
        p++;
        if (strncmp(p, "cpu", 3) != 0 || p[3] < '0' || p[3] > '9')
            break;
        long idx = cpu_number(p + 3, &p);
        struct cpu_times t;
        const char *q = parse_times(p, &t);
        if (!q)
            return -EINVAL;
        /* a cpu number outside the table (none is CPUS_MAX or more) is ignored */
        if (cpu && idx >= 0 && idx < ncpu)
            cpu[idx] = t;
        if (idx >= 0)
            seen++;
        p = q;
    }
    return seen;
}

/* One more than the highest N of the "cpuN" lines (0 when there are none). proc/stat lists
 * online cpus only, so with SMT off or cpus offline the numbers have gaps (cpu0, cpu2, ...):
 * the per-cpu tables are indexed by N, not by line. */
static int cpu_lines_span(const char *text)
{
    long span = 0;
    for (const char *p = text; p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, "cpu", 3) != 0 || p[3] < '0' || p[3] > '9')
            continue;
        long idx = cpu_number(p + 3, &p);
        if (idx >= 0 && idx + 1 > span)
            span = idx + 1;
    }
    return (int)span;
}

static uint64_t busy_of(const struct cpu_times *t)
{
    return t->user + t->nice + t->system + t->irq + t->softirq + t->steal;
}

static uint64_t total_of(const struct cpu_times *t)
{
    return busy_of(t) + t->idle + t->iowait;
}

/* Reads processor → physical id pairs and the model name from proc/cpuinfo. */
static void read_cpuinfo(struct procstat *p, const struct fsroot *root)
{
    int fd = fsroot_open_file(root, "proc/cpuinfo");
    if (fd < 0)
        return;
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    while (text) {
        if (len + 4096 > cap) {
            char *t = realloc(text, cap * 2);
            if (!t)
                break;
            text = t;
            cap *= 2;
        }
        ssize_t n = read(fd, text + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (!text)
        return;
    text[len] = '\0';
    int cur = -1;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *val = colon + 1;
        while (*val == ' ' || *val == '\t')
            val++;
        size_t klen = (size_t)(colon - line);
        while (klen && (line[klen - 1] == ' ' || line[klen - 1] == '\t'))
            klen--;
        uint64_t v;
        if (klen == 9 && strncmp(line, "processor", 9) == 0)
            /* a number past the table (or not a number) names no cpu here */
            cur = parse_u64(val, &v) == 0 && v < (uint64_t)p->ncpu ? (int)v : -1;
        else if (klen == 11 && strncmp(line, "physical id", 11) == 0 && parse_u64(val, &v) == 0 &&
                 cur >= 0 && cur < p->ncpu && v < PROCSTAT_SOCKETS_MAX)
            p->cpu_socket[cur] = (int)v;
        else if (klen == 10 && strncmp(line, "model name", 10) == 0 && !p->model_name[0])
            snprintf(p->model_name, sizeof p->model_name, "%s", val);
    }
    free(text);
    p->nsockets = 1;
    for (int i = 0; i < p->ncpu; i++)
        if (p->cpu_socket[i] + 1 > p->nsockets)
            p->nsockets = p->cpu_socket[i] + 1;
}

int procstat_open(struct procstat *p, const struct fsroot *root, struct carma_err *e)
{
    memset(p, 0, sizeof *p);
    p->opened = true;
    p->fd = fsroot_open_file(root, "proc/stat");
    if (p->fd < 0) {
        int r = p->fd;
        p->fd = -1;
        if (r == -ESPIPE)
            return carma_err_set(e, r, "%s/proc/stat is not a regular file (%s)", root->path,
                                 file_kind_at(root->dirfd, "proc/stat"));
        return carma_err_set(e, r, "cannot open %s/proc/stat: %s", root->path, strerror(-r));
    }
    /* Count the cpuN lines once with a generous buffer, then size the tick buffer. */
    size_t cap = 1 << 20;
    char *text = malloc(cap);
    if (!text)
        return carma_err_set(e, -ENOMEM, "out of memory");
    ssize_t n = fsroot_pread_raw(p->fd, text, cap - 1);
    if (n < 0) {
        int r = (int)n;
        free(text);
        return carma_err_set(e, r, "cannot read %s/proc/stat: %s", root->path, strerror(-r));
    }
    text[n] = '\0';
    struct cpu_times node;
    int nlines = procstat_parse(text, &node, NULL, 0);
    int span = nlines < 0 ? 0 : cpu_lines_span(text);
    free(text);
    if (nlines < 0)
        return carma_err_set(e, -EINVAL, "%s/proc/stat: no valid \"cpu\" line", root->path);
    p->ncpu = span > 0 ? span : 1;
    p->buf_cap = 256 + (size_t)p->ncpu * 160;
    p->buf = malloc(p->buf_cap);
    p->cpu_socket = calloc((size_t)p->ncpu, sizeof *p->cpu_socket);
    p->cpu_prev = calloc((size_t)p->ncpu, sizeof *p->cpu_prev);
    p->cpu_cur = calloc((size_t)p->ncpu, sizeof *p->cpu_cur);
    if (!p->buf || !p->cpu_socket || !p->cpu_prev || !p->cpu_cur)
        return carma_err_set(e, -ENOMEM, "out of memory");
    read_cpuinfo(p, root);
    if (p->nsockets < 1)
        p->nsockets = 1;
    int r = procstat_sample(p);
    if (r < 0)
        return carma_err_set(e, r, "%s/proc/stat: cannot parse the cpu lines", root->path);
    return 0;
}

/* Field-wise: *d = max(0, cur - *hw), then *hw = max(*hw, cur). When a field would step by
 * more than PROCSTAT_STEP_MAX, *d is all zero, *hw untouched, and false is returned. */
static bool advance(struct cpu_times *hw, const struct cpu_times *cur, struct cpu_times *d)
{
#define STEP_OK(f) (cur->f <= hw->f || cur->f - hw->f <= PROCSTAT_STEP_MAX)
    if (!(STEP_OK(user) && STEP_OK(nice) && STEP_OK(system) && STEP_OK(idle) && STEP_OK(iowait) &&
          STEP_OK(irq) && STEP_OK(softirq) && STEP_OK(steal))) {
        memset(d, 0, sizeof *d);
        return false;
    }
#undef STEP_OK
#define ADV(f)                                                                                     \
    do {                                                                                           \
        d->f = cur->f > hw->f ? cur->f - hw->f : 0;                                                \
        if (cur->f > hw->f)                                                                        \
            hw->f = cur->f;                                                                        \
    } while (0)
    ADV(user);
    ADV(nice);
    ADV(system);
    ADV(idle);
    ADV(iowait);
    ADV(irq);
    ADV(softirq);
    ADV(steal);
#undef ADV
    return true;
}

static void add_times(struct cpu_times *sum, const struct cpu_times *d)
{
    sum->user += d->user;
    sum->nice += d->nice;
    sum->system += d->system;
    sum->idle += d->idle;
    sum->iowait += d->iowait;
    sum->irq += d->irq;
    sum->softirq += d->softirq;
    sum->steal += d->steal;
}

int procstat_sample(struct procstat *p)
{
    ssize_t n = fsroot_pread_raw(p->fd, p->buf, p->buf_cap - 1);
    if (n < 0) {
        p->valid = false;
        return p->err = (int)n;
    }
    p->buf[n] = '\0';
    /* the buffer holds at least the cpu lines; anything cut off after them is ignored. A cpu
     * missing from this reading (offline) keeps its last values, so it adds nothing. */
    struct cpu_times node;
    int r = procstat_parse(p->buf, &node, p->cpu_cur, p->ncpu);
    if (r < 0) {
        p->valid = false;
        return p->err = r;
    }
    if (r == 0)
        p->cpu_cur[0] = node; /* no per-cpu lines (some containers): the node as one cpu */
    p->valid = true;
    p->err = 0;
    if (!p->have_prev) {
        /* first successful reading: fractions come with the next one */
        p->have_prev = true;
        memcpy(p->cpu_prev, p->cpu_cur, (size_t)p->ncpu * sizeof *p->cpu_cur);
        p->busy_ticks_delta = p->total_ticks_delta = 0;
    }
    /*
     * Deltas are taken per cpu against each field's high-water mark and summed: a counter
     * that steps back (a torn or bogus read, a cpu that went offline) adds nothing, and the
     * time is counted once when the counter passes its old mark again. The node's own line
     * would go back by a whole cpu's lifetime when that cpu goes offline.
     */
    struct cpu_times d_node = {0}, hw_node = {0};
    uint64_t sb[PROCSTAT_SOCKETS_MAX] = {0}, st[PROCSTAT_SOCKETS_MAX] = {0};
    for (int i = 0; i < p->ncpu; i++) {
        struct cpu_times d;
        if (!advance(&p->cpu_prev[i], &p->cpu_cur[i], &d))
            p->skipped_steps++;
        add_times(&d_node, &d);
        add_times(&hw_node, &p->cpu_prev[i]);
        int s = p->cpu_socket[i];
        sb[s] += busy_of(&d);
        st[s] += total_of(&d);
    }
    p->node_prev = p->node_cur;
    p->node_cur = hw_node;
    p->busy_ticks = busy_of(&hw_node);
    uint64_t total = total_of(&d_node);
    p->total_ticks_delta = total;
    p->busy_ticks_delta = busy_of(&d_node);
    if (total > 0) {
        double t = (double)total;
        p->util_total = (double)p->busy_ticks_delta / t;
        p->util_user = (double)d_node.user / t;
        p->util_nice = (double)d_node.nice / t;
        p->util_sys = (double)d_node.system / t;
        p->util_irq = (double)(d_node.irq + d_node.softirq) / t;
        if (p->util_total > 1.0)
            p->util_total = 1.0;
    }
    /* per socket: keep the previous fraction when no tick elapsed on the socket */
    for (int s = 0; s < p->nsockets; s++)
        if (st[s] > 0)
            p->socket_util[s] = (double)sb[s] / (double)st[s];
    /* fractions exist once a clock tick has elapsed between two readings */
    if (total > 0)
        p->primed = true;
    return 0;
}

void procstat_close(struct procstat *p)
{
    if (p->opened && p->fd >= 0)
        close(p->fd);
    free(p->buf);
    free(p->cpu_socket);
    free(p->cpu_prev);
    free(p->cpu_cur);
    memset(p, 0, sizeof *p);
    p->fd = -1;
}
