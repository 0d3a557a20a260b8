/* writer: a run directory being written, and what could not be (see writer.h). */
#include "rundir/writer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/file.h"
#include "core/jsonutil.h"

void rundir_writer_init(struct rundir_writer *w, void (*say)(void *ctx, const char *msg), void *ctx)
{
    memset(w, 0, sizeof *w);
    w->reserve_fd = -1;
    w->say = say;
    w->ctx = ctx;
}

static void say(const struct rundir_writer *w, const char *msg)
{
    if (w->say)
        w->say(w->ctx, msg);
}

int rundir_writer_create(struct rundir_writer *w, const char *runs, const char *name, time_t now,
                         struct carma_err *e)
{
    char stamp[32];
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    int r = file_mkdirs(runs);
    if (r < 0)
        return carma_err_set(e, r, "cannot create %s: %s", runs, strerror(-r));
    for (int k = 1; k < 1000; k++) {
        if (k == 1)
            snprintf(w->dir, sizeof w->dir, "%s/%s_%s", runs, name, stamp);
        else
            snprintf(w->dir, sizeof w->dir, "%s/%s_%s-%d", runs, name, stamp, k);
        if (mkdir(w->dir, FILE_DIR_MODE) == 0)
            break;
        int err = errno;
        if (err != EEXIST)
            return carma_err_set(e, -err, "cannot create %s: %s", w->dir, strerror(err));
    }
    /* absolute, so that the workloads' logs open from whatever directory they start in */
    char abs[PATH_MAX];
    if (realpath(w->dir, abs))
        snprintf(w->dir, sizeof w->dir, "%s", abs);
    char logs[4200];
    snprintf(logs, sizeof logs, "%s/logs", w->dir);
    if (mkdir(logs, FILE_DIR_MODE) < 0) {
        int err = errno;
        return carma_err_set(e, -err, "cannot create %s: %s", logs, strerror(err));
    }
    return 0;
}

void rundir_writer_use(struct rundir_writer *w, const char *dir)
{
    snprintf(w->dir, sizeof w->dir, "%s", dir);
}

struct journal *rundir_writer_open_journal(struct rundir_writer *w, const char *name,
                                           const char *header, const char *unit)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", w->dir, name);
    struct carma_err e = {0};
    struct journal *j = journal_open(path, header, unit, &e);
    if (!j) {
        say(w, e.msg);
        rundir_writer_failed(w, name);
        return NULL;
    }
    if (w->njournals < RUNDIR_JOURNALS_MAX)
        w->journals[w->njournals++] = j;
    return j;
}

struct samples_csv *rundir_writer_open_samples(struct rundir_writer *w, const struct sampler *s)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/samples.csv", w->dir);
    struct carma_err e = {0};
    struct samples_csv *csv = samples_csv_open(path, s, &e);
    if (!csv) {
        say(w, e.msg);
        rundir_writer_failed(w, "samples.csv");
    }
    return csv;
}

int rundir_writer_append(struct rundir_writer *w, struct journal *j, const void *p, size_t n,
                         uint64_t rows, int64_t first_ns)
{
    struct carma_err warn = {0};
    int e = journal_append(j, p, n, rows, first_ns, &warn);
    if (warn.code)
        say(w, warn.msg); /* once per file and condition; the count at the end */
    return e;
}

void rundir_writer_failed(struct rundir_writer *w, const char *name)
{
    size_t len = strlen(w->incomplete);
    if (strstr(w->incomplete, name) || len + strlen(name) + 3 >= sizeof w->incomplete)
        return;
    snprintf(w->incomplete + len, sizeof w->incomplete - len, "%s%s", len ? ", " : "", name);
}

void rundir_writer_losses(struct rundir_writer *w, const struct journal *first, json_t *warnings)
{
    const struct journal *all[RUNDIR_JOURNALS_MAX + 1];
    size_t n = 0;
    if (first)
        all[n++] = first;
    for (size_t k = 0; k < w->njournals; k++)
        all[n++] = w->journals[k];
    for (size_t k = 0; k < n; k++) {
        char msg[4400];
        if (!journal_loss_text(all[k], msg, sizeof msg))
            continue;
        say(w, msg);
        const char *name = journal_path(all[k]) + strlen(w->dir) + 1;
        rundir_writer_failed(w, name);
        /* the report: the name in the run directory, not its path */
        const char *rel = msg + strlen(w->dir) + 1;
        if (warnings)
            json_array_append_new(warnings,
                                  json_sprintf("%s: the file is incomplete (the rows it holds are "
                                               "whole)",
                                               rel));
    }
}

/* Says that DIR/name could not be written (r: a negative errno) and makes it incomplete. */
static void write_failed(struct rundir_writer *w, const char *name, const char *path, int r)
{
    char msg[4400];
    snprintf(msg, sizeof msg, "cannot write %s: %s", path, strerror(-r));
    say(w, msg);
    rundir_writer_failed(w, name);
}

void rundir_writer_write_json(struct rundir_writer *w, const char *name, json_t *j)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", w->dir, name);
    int e = j ? jsonutil_write_file(j, path) : -ENOMEM;
    if (e < 0)
        write_failed(w, name, path, e);
    json_decref(j);
}

void rundir_writer_write_file(struct rundir_writer *w, const char *name, const char *text,
                              size_t len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", w->dir, name);
    int e = text ? file_replace(path, text, len) : -ENOMEM;
    if (e < 0)
        write_failed(w, name, path, e);
}

void rundir_writer_reserve(struct rundir_writer *w)
{
    w->reserve_fd = -1;
    size_t n = RUNDIR_RESERVE_MAX;
    struct statvfs sv;
    if (statvfs(w->dir, &sv) == 0 && (double)sv.f_bavail * (double)sv.f_frsize / 4 < (double)n)
        n = (size_t)((double)sv.f_bavail * (double)sv.f_frsize / 4) & ~(size_t)4095;
    if (n < RUNDIR_RESERVE_MIN)
        n = RUNDIR_RESERVE_MIN;
    for (; n >= RUNDIR_RESERVE_MIN && w->reserve_fd < 0; n /= 2)
        w->reserve_fd = journal_reserve(w->dir, n);
    if (w->reserve_fd < 0)
        w->reserve_fd = -1;
}

void rundir_writer_release(struct rundir_writer *w)
{
    if (w->reserve_fd >= 0)
        close(w->reserve_fd);
    w->reserve_fd = -1;
}
