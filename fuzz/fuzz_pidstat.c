/*
 * libFuzzer harness for the readers of /proc/PID/stat and /proc/PID/cgroup: proctree's
 * proctree_parse_stat (ppid, CPU ticks, start time), pidlive's pid_stat_start_parse (start
 * time, state) and pidowner's lookup (parent pid and process group, the cgroup v2 line),
 * the last on a fake proc directory whose files the input writes.
 *
 * The input is a stat text, optionally followed by a line holding only a form feed ("\f\n")
 * and a cgroup text.
 *
 * - each parser reads an exact-size copy of the text (NUL-terminated), so ASan sees any read
 *   past its end;
 * - when the text is plain (a pid, " (", a comm without ')' or newline, ") ", a state letter,
 *   then at least 19 fields of decimal digits within 63 bits, single spaces between fields,
 *   an optional final newline), all of them must agree with a reference split of the fields:
 *   ppid = field 4, process group = field 5, ticks = fields 14 + 15 + 16 + 17, start = field
 *   22, state = field 3 (proctree refuses a ppid above INT32_MAX: no pid_t);
 * - pidowner_lookup gives -1 or the index of one of its jobs, pidowner_cgroup_of a
 *   NUL-terminated path no longer than asked.
 *
 * fuzz-sources: src/workload/proctree.c src/workload/pidowner.c src/core/pidlive.c
 * fuzz-sources: src/core/parse.c
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "core/pidlive.h"
#include "workload/pidowner.h"
#include "workload/proctree.h"

#define FAKE_PID 4242

struct ref {
    uint64_t f[64];
    int n; /* fields read, numbered from 1 (f[1] the pid) */
    char state;
};

/* The reference split of a plain text; false when it is not plain. */
static bool ref_split(const char *t, size_t len, struct ref *r)
{
    if (len && t[len - 1] == '\n')
        len--;
    size_t i = 0;
    if (i == len || t[i] < '0' || t[i] > '9')
        return false;
    while (i < len && t[i] >= '0' && t[i] <= '9')
        i++;
    if (len - i < 2 || t[i] != ' ' || t[i + 1] != '(')
        return false;
    const char *close = memchr(t + i, ')', len - i);
    if (!close)
        return false;
    for (const char *c = t + i + 2; c < close; c++)
        if (*c == '\n' || *c == '\0')
            return false;
    if (memchr(close + 1, ')', (size_t)(t + len - close - 1)))
        return false; /* a second ')': the comm's end is ambiguous for this reference */
    i = (size_t)(close - t) + 1;
    if (len - i < 3 || t[i] != ' ' || t[i + 1] == ' ' || t[i + 1] == '\0' || t[i + 2] != ' ')
        return false;
    r->state = t[i + 1];
    i += 2;
    r->n = 3;
    while (i < len) {
        if (t[i] != ' ' || i + 1 == len || r->n == 63)
            return false;
        i++;
        uint64_t v = 0;
        size_t d = 0;
        while (i < len && t[i] >= '0' && t[i] <= '9') {
            if (++d > 18)
                return false;
            v = v * 10 + (uint64_t)(t[i++] - '0');
        }
        if (!d)
            return false;
        r->f[++r->n] = v;
    }
    return r->n >= 22;
}

static const char *proc; /* fuzz_root() */

static void put(const char *rel, const char *data, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", proc, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        abort();
    if (len && write(fd, data, len) != (ssize_t)len)
        abort();
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!proc) {
        proc = fuzz_root("pidstat");
        char path[128];
        snprintf(path, sizeof path, "%s/%d", proc, FAKE_PID);
        mkdir(path, 0755);
    }
    const char *sep = memmem(data, size, "\n\f\n", 3);
    size_t slen = sep ? (size_t)(sep - (const char *)data) + 1 : size;
    const char *cg = sep ? sep + 3 : NULL;
    size_t cglen = sep ? size - slen - 2 : 0;

    char *text = malloc(slen + 1);
    if (!text)
        return 0;
    memcpy(text, data, slen);
    text[slen] = '\0';
    size_t tlen = strlen(text); /* the parsers see the text up to a NUL */

    pid_t ppid = -7;
    uint64_t ticks = 7, start = 7, start2 = 7;
    char state = 0;
    int r1 = proctree_parse_stat(text, &ppid, &ticks, &start);
    int r2 = pid_stat_start_parse(text, &start2, &state);
    if ((r1 != 0 && r1 != -EINVAL) || (r2 != 0 && r2 != -EINVAL))
        abort();
    if (r1 == 0 && ppid < 0)
        abort();
    struct ref ref;
    if (ref_split(text, tlen, &ref)) {
        uint64_t want_ticks = ref.f[14] + ref.f[15] + ref.f[16] + ref.f[17];
        /* proctree refuses a parent pid that is no pid_t */
        bool pid_ok = ref.f[4] <= INT32_MAX;
        if (r1 != (pid_ok ? 0 : -EINVAL) || r2 != 0) {
            fprintf(stderr, "a plain stat refused: proctree %d, pidlive %d\n", r1, r2);
            abort();
        }
        if (pid_ok && (uint64_t)ppid != ref.f[4])
            abort();
        if ((pid_ok && (ticks != want_ticks || start != ref.f[22])) || start2 != ref.f[22] ||
            state != ref.state) {
            fprintf(stderr, "ticks %llu/%llu start %llu %llu/%llu state %c/%c\n",
                    (unsigned long long)ticks, (unsigned long long)want_ticks,
                    (unsigned long long)start, (unsigned long long)start2,
                    (unsigned long long)ref.f[22], state, ref.state);
            abort();
        }
    }

    /* pidowner on the fake proc: the stat (and cgroup) of FAKE_PID */
    char rel[64];
    snprintf(rel, sizeof rel, "%d/stat", FAKE_PID);
    put(rel, (const char *)data, slen);
    snprintf(rel, sizeof rel, "%d/cgroup", FAKE_PID);
    put(rel, cg ? cg : "", cglen);
    static struct pidowner o;
    pidowner_init(&o, proc);
    static const pid_t tree[] = {1, FAKE_PID + 1};
    const struct pidowner_job jobs[] = {
        {.cgroup = "/user.slice/carma-12/train", .pid = FAKE_PID + 1},
        {.cgroup = NULL, .pid = 0, .tree = tree, .ntree = 2},
        {.cgroup = "/", .pid = (pid_t)(ref.f[5] & 0x7fffffff)},
    };
    int job = pidowner_lookup(&o, FAKE_PID, jobs, 3);
    if (job < -1 || job >= 3)
        abort();
    if (pidowner_lookup(&o, FAKE_PID, jobs, 3) != job) /* the cache */
        abort();
    char out[16];
    memset(out, 'x', sizeof out);
    if (pidowner_cgroup_of(proc, FAKE_PID, out, sizeof out) && !memchr(out, '\0', sizeof out))
        abort();
    free(text);
    return 0;
}
