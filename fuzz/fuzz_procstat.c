/*
 * libFuzzer harness for proc/stat (sources/procfs): procstat_parse, and procstat_open and
 * procstat_sample on a temporary root whose proc/stat and proc/cpuinfo the input writes.
 *
 * The input is up to three parts separated by lines holding only a form feed ("\f\n"): the
 * first proc/stat, the second (the next tick's; the first again when absent) and proc/cpuinfo.
 *
 * - procstat_parse of each proc/stat text into per-cpu tables of 0, 1, 4 and 64 entries, each
 *   its own heap block (so that ASan sees any index outside): the same return value for each
 *   size; on success the node line and each cpuN line in range equal a reference parse when
 *   the line is plain (a label, then 4 to 8 space-separated decimal numbers within 64 bits);
 * - procstat_open, then procstat_sample after the second text replaced the first: on success
 *   every fraction (total, user, nice, sys, irq, per socket) is finite and within [0, 1], the
 *   socket count within [1, PROCSTAT_SOCKETS_MAX] and busy ticks never above total ticks.
 *
 * fuzz-sources: src/sources/procfs.c src/core/err.c src/core/file.c src/core/fsroot.c
 * fuzz-sources: src/core/parse.c
 * fuzz-libs: -ljansson
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "sources/procfs.h"

/* A plain line: label then 4..8 numbers, single spaces or more, nothing else. Returns the
 * number of fields (0 when not plain) into v. */
static int ref_line(const char *p, const char *end, const char *label_end, uint64_t v[8])
{
    p = label_end;
    int n = 0;
    while (p < end) {
        if (*p != ' ')
            return 0;
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        if (*p < '0' || *p > '9' || n == 8)
            return 0;
        char num[32];
        size_t k = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (k == sizeof num - 1)
                return 0;
            num[k++] = *p++;
        }
        num[k] = '\0';
        errno = 0;
        unsigned long long x = strtoull(num, NULL, 10);
        if (errno == ERANGE)
            return 0;
        v[n++] = x;
    }
    return n >= 4 ? n : 0;
}

static bool same_times(const struct cpu_times *t, const uint64_t v[8], int n)
{
    uint64_t w[8] = {0};
    memcpy(w, v, (size_t)n * sizeof v[0]);
    return t->user == w[0] && t->nice == w[1] && t->system == w[2] && t->idle == w[3] &&
           t->iowait == w[4] && t->irq == w[5] && t->softirq == w[6] && t->steal == w[7];
}

static void check_parse(const char *text)
{
    static const int sizes[] = {0, 1, 4, 64};
    int first = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int ncpu = sizes[s];
        struct cpu_times *cpu = ncpu ? malloc((size_t)ncpu * sizeof *cpu) : NULL;
        bool *set = calloc((size_t)ncpu + 1, sizeof *set);
        if ((ncpu && !cpu) || !set)
            abort();
        if (ncpu)
            memset(cpu, 0xa5, (size_t)ncpu * sizeof *cpu);
        struct cpu_times node;
        int r = procstat_parse(text, &node, cpu, ncpu);
        if (s == 0)
            first = r;
        else if (r != first)
            abort();
        if (r < 0 && r != -EINVAL)
            abort();
        if (r >= 0 && ncpu == 64) {
            /* the reference, line by line while lines are cpu lines */
            const char *p = text;
            bool head = true;
            while (*p) {
                const char *le = strchr(p, '\n');
                if (!le)
                    le = p + strlen(p);
                if (strncmp(p, "cpu", 3) != 0 || (!head && (p[3] < '0' || p[3] > '9')))
                    break;
                const char *lab = p + 3;
                long idx = -1;
                if (!head) {
                    idx = 0;
                    while (lab < le && *lab >= '0' && *lab <= '9') {
                        if (idx < 1000000)
                            idx = idx * 10 + (*lab - '0');
                        lab++;
                    }
                }
                uint64_t v[8];
                int n = ref_line(p, le, lab, v);
                if (head && n && !same_times(&node, v, n))
                    abort();
                if (!head && n && idx < ncpu) {
                    /* a later line with the same number wins: only check the last one */
                    bool later = false;
                    for (const char *q = *le ? le + 1 : le; *q && !later;) {
                        const char *qe = strchr(q, '\n');
                        if (!qe)
                            qe = q + strlen(q);
                        if (strncmp(q, "cpu", 3) != 0 || q[3] < '0' || q[3] > '9')
                            break;
                        long j = 0;
                        for (const char *d = q + 3; d < qe && *d >= '0' && *d <= '9'; d++)
                            j = j < 1000000 ? j * 10 + (*d - '0') : j;
                        later = j == idx;
                        q = *qe ? qe + 1 : qe;
                    }
                    if (!later && !same_times(&cpu[idx], v, n))
                        abort();
                }
                head = false;
                if (!*le)
                    break;
                p = le + 1;
            }
        }
        free(cpu);
        free(set);
    }
}

static const char *root; /* fuzz_root() */

static void put(const char *rel, const char *data, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        abort();
    if (len && write(fd, data, len) != (ssize_t)len)
        abort();
    close(fd);
}

static bool fraction(double f)
{
    return isfinite(f) && f >= 0 && f <= 1;
}

static void check_fractions(const struct procstat *p)
{
    if (p->nsockets < 1 || p->nsockets > PROCSTAT_SOCKETS_MAX || p->ncpu < 1)
        abort();
    bool ok = fraction(p->util_total) && fraction(p->util_user) && fraction(p->util_nice) &&
              fraction(p->util_sys) && fraction(p->util_irq);
    for (int s = 0; s < p->nsockets; s++)
        ok = ok && fraction(p->socket_util[s]);
    if (!ok || p->busy_ticks_delta > p->total_ticks_delta) {
        fprintf(stderr,
                "fractions: total %g user %g nice %g sys %g irq %g; busy %llu of %llu ticks\n",
                p->util_total, p->util_user, p->util_nice, p->util_sys, p->util_irq,
                (unsigned long long)p->busy_ticks_delta, (unsigned long long)p->total_ticks_delta);
        abort();
    }
}

static void check_open(const char *s1, size_t n1, const char *s2, size_t n2, const char *info,
                       size_t ninfo)
{
    put("proc/stat", s1, n1);
    put("proc/cpuinfo", info, ninfo);
    struct fsroot r;
    struct carma_err e = {0};
    if (fsroot_open(&r, root, &e) != 0)
        abort();
    struct procstat p;
    int ret = procstat_open(&p, &r, &e);
    if (ret == 0) {
        check_fractions(&p);
        put("proc/stat", s2, n2);
        if (procstat_sample(&p) == 0)
            check_fractions(&p);
        (void)strlen(p.model_name);
    } else if (!e.msg[0]) {
        abort();
    }
    procstat_close(&p);
    fsroot_close(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root) {
        root = fuzz_root("procstat");
        char path[128];
        snprintf(path, sizeof path, "%s/proc", root);
        mkdir(path, 0755);
    }
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    /* the parts */
    const char *part[3] = {text, NULL, NULL};
    size_t len[3] = {size, 0, 0};
    int n = 1;
    for (char *p = text; n < 3 && (p = memmem(p, (size_t)(text + size - p), "\n\f\n", 3));) {
        len[n - 1] = (size_t)(p + 1 - part[n - 1]);
        part[n] = p + 3;
        len[n] = (size_t)(text + size - part[n]);
        p += 3;
        n++;
    }
    if (n < 2) {
        part[1] = part[0];
        len[1] = len[0];
    }
    if (n < 3) {
        part[2] = "";
        len[2] = 0;
    }
    /* procstat_parse reads a NUL-terminated text: each part on its own */
    for (int i = 0; i < 2; i++) {
        char *s = malloc(len[i] + 1);
        if (!s)
            abort();
        memcpy(s, part[i], len[i]);
        s[len[i]] = '\0';
        check_parse(s);
        free(s);
    }
    check_open(part[0], len[0], part[1], len[1], part[2], len[2]);
    free(text);
    return 0;
}
