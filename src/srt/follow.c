/*
 * srt/follow: incremental per-window reports of an srt-slurm log directory (see follow.h).
 */
#include "srt/follow.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "core/periodic.h"
#include "core/pyjson.h"
#include "srt/report.h"

int srt_follow_init(struct srt_follow *f, const char *log_dir, const char *cpu_samples,
                    unsigned flags, enum series_edges edges)
{
    *f = (struct srt_follow){.flags = flags, .edges = edges};
    f->log_dir = strdup(log_dir);
    f->cpu_samples = cpu_samples ? strdup(cpu_samples) : NULL;
    if (!f->log_dir || (cpu_samples && !f->cpu_samples)) {
        srt_follow_done(f);
        return -ENOMEM;
    }
    return 0;
}

void srt_follow_done(struct srt_follow *f)
{
    if (!f)
        return;
    free(f->log_dir);
    free(f->cpu_samples);
    for (size_t i = 0; i < f->nsrc; i++)
        free(f->src[i].path);
    free(f->src);
    *f = (struct srt_follow){0};
}

/* The follower's record of a source (added when first seen); NULL when out of memory. */
static struct srt_follow_source *source_of(struct srt_follow *f, const struct srt_log_source *s)
{
    for (size_t i = 0; i < f->nsrc; i++)
        if (strcmp(f->src[i].path, s->path) == 0)
            return &f->src[i];
    if (f->nsrc == f->cap) {
        size_t nc = f->cap ? 2 * f->cap : 16;
        struct srt_follow_source *p = realloc(f->src, nc * sizeof *p);
        if (!p)
            return NULL;
        f->src = p;
        f->cap = nc;
    }
    char *path = strdup(s->path);
    if (!path)
        return NULL;
    f->src[f->nsrc] = (struct srt_follow_source){.path = path, .concurrency = s->concurrency};
    return &f->src[f->nsrc++];
}

/* The newest power sample of any series loaded (-INFINITY when none). */
static double newest_sample(const struct srt_log *log)
{
    const struct srt_log_series_set *sets[] = {&log->cpu_sockets, &log->cpu_nodes,
                                               &log->gpu_devices, &log->gpu_nodes};
    double t = -INFINITY;
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++)
        for (size_t i = 0; i < sets[k]->n; i++)
            if (sets[k]->v[i].n && sets[k]->v[i].t[sets[k]->v[i].n - 1] > t)
                t = sets[k]->v[i].t[sets[k]->v[i].n - 1];
    return t;
}

static char *report_path(const char *artifact, long long concurrency);

/* Writes the payload next to its artifact and appends its line to the JSONL file. */
static int emit(const struct srt_follow *f, const char *artifact, long long concurrency,
                json_t *payload, struct carma_err *e)
{
    char *pretty = pyjson_dumps(payload, 2), *line = pyjson_dumps(payload, -1);
    char *path = NULL, *jsonl = NULL;
    int r = 0;
    if (!pretty || !line)
        goto nomem;
    if (!(path = report_path(artifact, concurrency)))
        goto nomem;
    if (asprintf(&jsonl, "%s/power_energy_report.jsonl", f->log_dir) < 0) {
        jsonl = NULL;
        goto nomem;
    }
    size_t n = strlen(pretty);
    pretty[n] = '\n'; /* the NUL becomes the final newline */
    r = file_replace(path, pretty, n + 1);
    if (r < 0) {
        carma_err_set(e, r, "cannot write %s: %s", path, strerror(-r));
        goto out;
    }
    n = strlen(line);
    line[n] = '\n';
    int fd = file_create(jsonl, O_APPEND);
    if (fd < 0) {
        r = fd;
        carma_err_set(e, r, "cannot open %s: %s", jsonl, strerror(-r));
        goto out;
    }
    /* one write: O_APPEND puts the whole line at the end, never interleaved with another */
    ssize_t w = write(fd, line, n + 1);
    if (w != (ssize_t)(n + 1)) {
        r = w < 0 ? -errno : -EIO;
        /* a short append leaves a torn line: cut it off so the file stays whole lines */
        if (w > 0) {
            off_t end = lseek(fd, 0, SEEK_END);
            if (end >= w && ftruncate(fd, end - w) < 0)
                r = -errno;
        }
        carma_err_set(e, r, "cannot append to %s: %s", jsonl, strerror(-r));
    }
    if (close(fd) < 0 && r == 0) {
        r = -errno;
        carma_err_set(e, r, "cannot write %s: %s", jsonl, strerror(-r));
    }
    goto out;
nomem:
    r = carma_err_set(e, -ENOMEM, "out of memory");
out:
    free(pretty);
    free(line);
    free(path);
    free(jsonl);
    return r;
}

/* The path of the report next to source s (malloc'ed), or NULL when out of memory. */
static char *report_path(const char *artifact, long long concurrency)
{
    const char *slash = strrchr(artifact, '/');
    char *path;
    if (asprintf(&path, "%.*s/power_energy_c%lld.json", slash ? (int)(slash - artifact) : 1,
                 slash ? artifact : ".", concurrency) < 0)
        return NULL;
    return path;
}

static bool report_exists(const struct srt_log_source *s)
{
    char *path = report_path(s->path, s->concurrency);
    bool yes = path && access(path, F_OK) == 0;
    free(path);
    return yes;
}

/*
 * Source i of log, if it is still to be reported: its window is read alone (a result file
 * still being written holds back only its own window), reported when the samples reach its end
 * (or final), and written. Returns 1 when it was written, 0 when not (why: f->last_error), or
 * a negative errno with e set when a built report could not be written.
 */
static int poll_source(struct srt_follow *f, const struct srt_log *log, size_t i, double newest,
                       bool final, double now, struct series_scratch *sc, struct carma_err *e)
{
    struct srt_follow_source *fs = source_of(f, &log->sources[i]);
    if (!fs)
        return carma_err_set(e, -ENOMEM, "out of memory");
    if (fs->emitted || fs->dead)
        return 0;
    if (report_exists(&log->sources[i])) {
        /* written by an earlier follower of this run (a restart): not again */
        fs->emitted = true;
        return 0;
    }
    struct srt_log_window w;
    struct carma_err we = {0};
    if (srt_log_load_window(log, i, &w, &we) < 0) {
        snprintf(f->last_error, sizeof f->last_error, "%s", we.msg);
        return 0;
    }
    int r = 0;
    json_t *rep = NULL;
    if (!final && !(newest >= w.end_unix)) {
        /* no sample at or past the window's end yet: a later one may still change it */
        snprintf(f->last_error, sizeof f->last_error,
                 "%s: samples reach %.3f, the window ends at %.3f", fs->path, newest, w.end_unix);
    } else if (srt_report_window(log, &w, f->edges, sc, &rep, &we) < 0) {
        snprintf(f->last_error, sizeof f->last_error, "%s", we.msg);
        if (newest > w.end_unix + SRT_FOLLOW_DEAD_AFTER_S) {
            fs->dead = true;
            f->dead++;
        }
    } else if (json_object_set_new(rep, "schema_version", json_integer(1)) != 0 ||
               json_object_set_new(rep, "emitted_at_unix", json_real(now)) != 0) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
    } else if ((r = emit(f, fs->path, fs->concurrency, rep, e)) == 0) {
        fs->emitted = true;
        f->emitted++;
        r = 1;
    }
    json_decref(rep);
    srt_log_window_done(&w);
    return r;
}

int srt_follow_poll(struct srt_follow *f, double now, bool final, struct carma_err *e)
{
    struct srt_log log;
    struct carma_err le = {0};
    struct srt_log_opts o = {.cpu_samples = f->cpu_samples, .flags = f->flags};
    f->last_error[0] = '\0';
    int r = srt_log_discover(&log, f->log_dir, &o, &le);
    if (r == 0 && log.cpu_csv)
        r = srt_log_load_cpu(&log, log.cpu_csv, &le);
    if (r == 0 && log.gpu_csv)
        r = srt_log_load_gpu(&log, log.gpu_csv, log.gpu_manifest, &le);
    if (r < 0) {
        /* not ready: the run has not written what discovery needs yet */
        snprintf(f->last_error, sizeof f->last_error, "%s", le.msg);
        srt_log_done(&log);
        return 0;
    }
    if ((log.cpu_csv && log.cpu_sockets.n + log.cpu_nodes.n == 0) ||
        (log.gpu_csv && log.gpu_devices.n + log.gpu_nodes.n == 0)) {
        snprintf(f->last_error, sizeof f->last_error, "%s: no samples yet",
                 log.gpu_csv && log.gpu_devices.n == 0 ? log.gpu_csv : log.cpu_csv);
        srt_log_done(&log);
        return 0;
    }
    const double newest = newest_sample(&log);
    struct series_scratch sc = {0};
    int emitted = 0;
    r = 0;
    for (size_t i = 0; i < log.nsources && r >= 0; i++) {
        r = poll_source(f, &log, i, newest, final, now, &sc, e);
        emitted += r > 0;
    }
    series_scratch_done(&sc);
    srt_log_done(&log);
    return r < 0 ? r : emitted;
}

/* ---- on a thread (core/periodic) ---- */

struct srt_follow_thread {
    struct srt_follow *f;
    struct periodic *p;
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One period's poll (periodic_fn). */
static int srt_follow_tick(void *arg, bool final, struct carma_err *e)
{
    struct srt_follow_thread *t = arg;
    return srt_follow_poll(t->f, wall_now(), final, e);
}

struct srt_follow_thread *srt_follow_thread_start(struct srt_follow *f, long long period_ns,
                                                  struct carma_err *e)
{
    struct srt_follow_thread *t = calloc(1, sizeof *t);
    if (!t) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    t->f = f;
    t->p =
        periodic_start(period_ns > 0 ? period_ns : 30000000000LL, srt_follow_tick, t, "report", e);
    if (!t->p) {
        free(t);
        return NULL;
    }
    return t;
}

int srt_follow_thread_stop(struct srt_follow_thread *t, struct carma_err *e)
{
    if (!t)
        return 0;
    int r = periodic_stop(t->p, e);
    free(t);
    return r;
}
