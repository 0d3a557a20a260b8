/*
 * carma cleanup RUN_DIR: what is left of a `carma run` that was killed (SIGKILL, OOM, a lost
 * node), CARMA's cleanup_all.sh.
 *
 * 1. Refuses a directory that a live carma still writes: its run.lock is held (rundir/crash.h),
 *    or, without one, manifest.json's pid runs with its recorded start time on this boot.
 * 2. Stops what the run left, from processes.jsonl (one line per workload as it started): each
 *    workload's cgroup when it had one (its directory's inode checked: a cgroup of the same
 *    name made since is another's), else its process group; every process signalled is first
 *    checked against the workload's recorded start time (/proc/PID/stat field 22): a process
 *    of the cgroup or group that started before the workload did is not the workload's (its id
 *    was reused), and a group whose leader's pid now names a process that started at another
 *    time is not signalled at all. SIGTERM, --grace, then SIGKILL (cgroup.kill where there is
 *    one); the cgroups emptied are removed, carma's own with them. One line per workload.
 * 3. Finishes a directory whose manifest still says "running": the torn last line of each
 *    journal cut (counted, said), workloads.json from processes.jsonl when carma did not write
 *    it, report.json and report.txt from the samples and splits on disk (report/runreport, as
 *    `carma report` makes them), and manifest.json's status "crashed" with the time of the last
 *    sample, written last.
 * A second cleanup finds nothing to stop nor finish: it says so and exits 0.
 */
#include "cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/common.h"
#include "core/file.h"
#include "core/jsonutil.h"
#include "core/pidlive.h"
#include "core/timeutil.h"
#include "report/runreport.h"
#include "rundir/crash.h"
#include "rundir/rundir.h"

#define CLEANUP_PROCS_MAX 4096 /* processes of one workload stopped */
#define CLEANUP_WL_MAX    256

static void usage(FILE *f)
{
    fprintf(f, "usage: carma cleanup RUN_DIR [--grace T]\n"
               "\n"
               "What is left of a `carma run` that was killed (SIGKILL, out of memory, a lost\n"
               "node): stops the workloads it left running (their cgroups, else their process\n"
               "groups; each process checked against the recorded start time, so that a reused\n"
               "pid is never signalled; SIGTERM, T, then SIGKILL) and finishes RUN_DIR from the\n"
               "files on disk (torn last rows cut, report.json and report.txt written, manifest\n"
               "status \"crashed\"), so that `carma report RUN_DIR` reads it. Run again, it has\n"
               "nothing left to do. A RUN_DIR that a live carma still writes is refused.\n"
               "\n"
               "options:\n"
               "  --grace T    the wait between SIGTERM and SIGKILL (default 5s)\n"
               "  -h, --help\n"
               "\n"
               "Exit status: 0 (also when nothing was left to do), 1 when a process could not be\n"
               "stopped or a file not written, 2 on a usage error, a directory that is not a\n"
               "carma run's, or one that a live carma still writes.\n");
}

/* ---- processes ---- */

struct victim {
    pid_t pid;
    uint64_t start;
};

/* pid's process group and start time from /proc/PID/stat; false when it is gone or a zombie. */
static bool proc_info(pid_t pid, pid_t *pgrp, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return false;
    /* fields 3 (state) .. 22 (starttime) after the command's ')' */
    char *save = NULL, *tok = strtok_r(p + 1, " ", &save);
    for (int field = 3; tok; field++, tok = strtok_r(NULL, " ", &save)) {
        if (field == 3 && (tok[0] == 'Z' || tok[0] == 'X'))
            return false;
        if (field == 5 && pgrp)
            *pgrp = (pid_t)strtol(tok, NULL, 10);
        if (field == 22) {
            *start = strtoull(tok, NULL, 10);
            return true;
        }
    }
    return false;
}

/* The victim v is still the same process (alive, same start time). */
static bool same(const struct victim *v)
{
    uint64_t st;
    return proc_info(v->pid, NULL, &st) && st == v->start;
}

/* One workload of processes.jsonl and what became of it. */
struct wl {
    const char *name;
    pid_t pgid;
    uint64_t start;      /* its leader's start ticks, 0: unknown */
    const char *cgroup;  /* NULL: none */
    uint64_t cgroup_ino; /* 0: unknown */
    double start_unix;
    const char *type;
    struct victim v[CLEANUP_PROCS_MAX];
    size_t nv;
    size_t term, killed, older; /* SIGTERM'd, SIGKILL'd, skipped as started before it */
    bool reused;                /* the leader's pid names another process now */
    bool cg_reused;             /* the cgroup's directory is another's */
    bool cg_used;
    bool unchecked; /* no start time recorded: its process group is not signalled */
};

static void add_victim(struct wl *w, pid_t pid, uint64_t st)
{
    for (size_t k = 0; k < w->nv; k++)
        if (w->v[k].pid == pid && w->v[k].start == st)
            return;
    if (w->nv < CLEANUP_PROCS_MAX)
        w->v[w->nv++] = (struct victim){pid, st};
}

/* A process found in w's cgroup or group: w's when it started at or after w did. */
static void consider(struct wl *w, pid_t pid, uint64_t st)
{
    if (w->start && st < w->start) {
        w->older++;
        return;
    }
    add_victim(w, pid, st);
}

/* w's cgroup exists and is the one the run made. */
static bool cgroup_ours(struct wl *w)
{
    struct stat st;
    if (!w->cgroup || stat(w->cgroup, &st) < 0)
        return false;
    if (w->cgroup_ino && (uint64_t)st.st_ino != w->cgroup_ino) {
        w->cg_reused = true;
        return false;
    }
    return true;
}

/* Adds the live processes of w (its cgroup's, else its process group's) to w->v. */
static void find_processes(struct wl *w)
{
    w->older = 0; /* counted anew at each look */
    if (w->cgroup && !w->cg_reused && cgroup_ours(w)) {
        w->cg_used = true;
        char path[4200];
        snprintf(path, sizeof path, "%s/cgroup.procs", w->cgroup);
        FILE *f = fopen(path, "re");
        if (f) {
            long pid;
            while (fscanf(f, "%ld", &pid) == 1) {
                uint64_t st;
                if (pid > 0 && proc_info((pid_t)pid, NULL, &st))
                    consider(w, (pid_t)pid, st);
            }
            fclose(f);
        }
        return;
    }
    if (w->pgid <= 1 || w->reused || w->unchecked)
        return;
    if (!w->start) {
        w->unchecked = true; /* nothing to tell a reused id by */
        return;
    }
    uint64_t lst;
    if (proc_info(w->pgid, NULL, &lst) && w->start && lst != w->start) {
        w->reused = true; /* the leader's pid is another process's now */
        return;
    }
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        pid_t g;
        uint64_t st;
        if (proc_info((pid_t)pid, &g, &st) && g == w->pgid)
            consider(w, (pid_t)pid, st);
    }
    closedir(d);
}

/* Sends sig to each victim of w still the same process; returns how many. */
static size_t signal_all(struct wl *w, int sig)
{
    size_t n = 0;
    for (size_t k = 0; k < w->nv; k++)
        if (same(&w->v[k]) && kill(w->v[k].pid, sig) == 0)
            n++;
    return n;
}

static size_t alive_count(const struct wl *w)
{
    size_t n = 0;
    for (size_t k = 0; k < w->nv; k++)
        n += same(&w->v[k]);
    return n;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits at most ns for every process of every workload to end (new ones found on the way). */
static void wait_all(struct wl *ws, size_t n, int64_t ns)
{
    int64_t until = time_mono_ns() + ns;
    for (;;) {
        size_t left = 0;
        for (size_t k = 0; k < n; k++)
            left += alive_count(&ws[k]);
        if (!left || time_mono_ns() >= until)
            return;
        nap_ms(20);
    }
}

/* Writes "1" to path (cgroup.kill). */
static bool write_one(const char *path)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = write(fd, "1", 1) == 1;
    close(fd);
    return ok;
}

/* Removes the cgroup directory path and the child cgroups below it, deepest first. */
static void cgroup_rmtree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_type != DT_DIR || de->d_name[0] == '.')
                continue;
            char sub[4200];
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            cgroup_rmtree(sub);
        }
        closedir(d);
    }
    for (int i = 0; i < 50 && rmdir(path) < 0 && errno == EBUSY; i++)
        nap_ms(20);
}

/* ---- processes.jsonl ---- */

struct recs {
    json_t *lines; /* the parsed lines */
    struct wl *w;
    size_t nw;
    const char *base; /* carma's cgroup (the supervisor's line), NULL: none */
    uint64_t base_ino;
    bool base_removed; /* carma's cgroup was left, and is removed */
};

static uint64_t ju64(const json_t *o, const char *key)
{
    json_int_t v = json_integer_value(json_object_get(o, key));
    return v > 0 ? (uint64_t)v : 0;
}

/* Reads dir/processes.jsonl (absent: none; a torn or bad line skipped) into rc. */
static int read_records(const char *dir, struct recs *rc)
{
    memset(rc, 0, sizeof *rc);
    rc->lines = json_array();
    rc->w = calloc(CLEANUP_WL_MAX, sizeof *rc->w);
    if (!rc->w || !rc->lines)
        return -ENOMEM;
    char path[4200], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/processes.jsonl", dir);
    int r = file_read_all(path, RUNDIR_JSON_MAX, &text, &len);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line + strlen(line) == text + len && text[len - 1] != '\n')
            break; /* torn */
        json_t *o = json_loads(line, 0, NULL);
        if (!json_is_object(o)) {
            json_decref(o);
            continue;
        }
        json_array_append_new(rc->lines, o);
        const char *role = json_string_value(json_object_get(o, "role"));
        if (role && strcmp(role, "supervisor") == 0) {
            rc->base = json_string_value(json_object_get(o, "cgroup"));
            rc->base_ino = ju64(o, "cgroup_ino");
        } else if (role && strcmp(role, "workload") == 0 && rc->nw < CLEANUP_WL_MAX) {
            const char *name = json_string_value(json_object_get(o, "name"));
            if (!name)
                continue;
            struct wl *w = &rc->w[rc->nw++];
            w->name = name;
            w->type = json_string_value(json_object_get(o, "type"));
            w->pgid = (pid_t)ju64(o, "pgid");
            w->start = ju64(o, "pid_start_ticks");
            w->cgroup = json_string_value(json_object_get(o, "cgroup"));
            w->cgroup_ino = ju64(o, "cgroup_ino");
            w->start_unix = jsonutil_get_num(o, "start_unix");
        }
    }
    free(text);
    return 0;
}

/* Stops what is left of rc's workloads, one line each for those that had something left.
 * Returns the number of processes stopped, or -1 when some still run. */
static long stop_all(struct recs *rc, int64_t grace_ns, bool each)
{
    for (size_t k = 0; k < rc->nw; k++) {
        find_processes(&rc->w[k]);
        rc->w[k].term = signal_all(&rc->w[k], SIGTERM);
    }
    size_t found = 0;
    for (size_t k = 0; k < rc->nw; k++)
        found += rc->w[k].nv;
    if (found)
        wait_all(rc->w, rc->nw, grace_ns);
    /* what outlived the grace period, and what was forked meanwhile */
    for (int round = 0; found && round < 3; round++) {
        for (size_t k = 0; k < rc->nw; k++) {
            struct wl *w = &rc->w[k];
            size_t before = w->nv;
            find_processes(w);
            if (w->cg_used) {
                char path[4200];
                snprintf(path, sizeof path, "%s/cgroup.kill", w->cgroup);
                size_t n = alive_count(w);
                if (n && write_one(path))
                    w->killed += n;
                else
                    w->killed += signal_all(w, SIGKILL);
            } else {
                w->killed += signal_all(w, SIGKILL);
            }
            found += w->nv - before;
        }
        wait_all(rc->w, rc->nw, 2 * (int64_t)1000000000);
    }
    long stopped = 0;
    bool left = false;
    for (size_t k = 0; k < rc->nw; k++) {
        struct wl *w = &rc->w[k];
        size_t alive = alive_count(w);
        char where[4400];
        if (w->cg_used)
            snprintf(where, sizeof where, "cgroup %s", w->cgroup);
        else
            snprintf(where, sizeof where, "process group %d", (int)w->pgid);
        if (w->reused)
            printf("%s: pid %d now names another process (started at another time than the "
                   "workload: the pid was reused): not signalled\n",
                   w->name, (int)w->pgid);
        if (w->unchecked)
            printf("%s: no start time recorded for process group %d: not signalled (a reused "
                   "id could not be told)\n",
                   w->name, (int)w->pgid);
        if (w->cg_reused)
            printf("%s: cgroup %s is not the run's (made again since): not used\n", w->name,
                   w->cgroup);
        if (w->older)
            printf("%s: %zu process%s of %s started before the workload did (a reused id): not "
                   "signalled\n",
                   w->name, w->older, w->older == 1 ? "" : "es", where);
        if (!w->nv) {
            if (each && !w->reused && !w->cg_reused && !w->older && !w->unchecked)
                printf("%s: nothing left running\n", w->name);
            continue;
        }
        stopped += (long)w->nv;
        printf("%s: stopped %zu process%s of %s (SIGTERM", w->name, w->nv, w->nv == 1 ? "" : "es",
               where);
        if (w->killed)
            printf(", then SIGKILL after %s", "the grace period");
        printf(")\n");
        if (alive) {
            cli_error("cleanup: %s: %zu process%s of %s still running after SIGKILL", w->name,
                      alive, alive == 1 ? "" : "es", where);
            left = true;
        }
    }
    fflush(stdout);
    /* the cgroups the run made, emptied: removed, carma's own with them */
    for (size_t k = 0; k < rc->nw; k++)
        if (rc->w[k].cgroup && !rc->w[k].cg_reused && cgroup_ours(&rc->w[k]))
            cgroup_rmtree(rc->w[k].cgroup);
    struct stat st;
    if (rc->base && stat(rc->base, &st) == 0 &&
        (!rc->base_ino || (uint64_t)st.st_ino == rc->base_ino)) {
        cgroup_rmtree(rc->base);
        if (access(rc->base, F_OK) == 0) {
            cli_error("cleanup: carma's cgroup %s could not be removed", rc->base);
            left = true;
        } else {
            printf("removed carma's cgroup %s\n", rc->base);
            rc->base_removed = true;
        }
    }
    return left ? -1 : stopped;
}

/* ---- the directory ---- */

/* Cuts the torn last line of each journal of dir (and power/): the number of lines cut, or -1
 * after saying what could not be done. */
static long trim_all(const char *dir, const char *sub)
{
    char path[4200];
    snprintf(path, sizeof path, "%s%s%s", dir, sub ? "/" : "", sub ? sub : "");
    DIR *d = opendir(path);
    if (!d)
        return 0;
    long cut = 0;
    bool failed = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        size_t l = strlen(n);
        bool journal = (l > 4 && strcmp(n + l - 4, ".csv") == 0) ||
                       (l > 6 && strcmp(n + l - 6, ".jsonl") == 0) || strcmp(n, "pstree.log") == 0;
        if (!journal || de->d_type != DT_REG)
            continue;
        size_t dropped = 0;
        struct carma_err e = {0};
        int r = rundir_crash_trim(path, n, &dropped, &e);
        if (r < 0) {
            cli_error("cleanup: %s", e.msg);
            failed = true;
        } else if (r == 1) {
            cut++;
            printf("%s%s%s: its torn last row dropped (%zu bytes)\n", sub ? sub : "",
                   sub ? "/" : "", n, dropped);
        }
    }
    closedir(d);
    return failed ? -1 : cut;
}

/* The timestamp of samples.csv's last row, NAN when it has none. */
static double last_sample(const char *dir)
{
    struct rundir_lines l = {0};
    struct carma_err e = {0};
    double t = NAN;
    if (rundir_lines_open(&l, dir, "samples.csv", 0, 0, &e) < 0)
        return NAN;
    int r = rundir_lines_next(&l, &e); /* the header */
    while (r == 1 && (r = rundir_lines_next(&l, &e)) == 1) {
        char *end;
        double v = l.nf ? strtod(l.fld[0], &end) : NAN;
        if (l.nf && end != l.fld[0] && isfinite(v))
            t = v;
    }
    rundir_lines_close(&l);
    return t;
}

static void utc_iso(double t, char *buf, size_t cap)
{
    if (!isfinite(t)) {
        snprintf(buf, cap, "unknown");
        return;
    }
    time_t s = (time_t)floor(t);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03dZ", (int)((t - floor(t)) * 1000));
}

/* workloads.json from processes.jsonl (carma was killed before writing its own). */
static json_t *workloads_doc(const struct recs *rc)
{
    json_t *arr = json_array();
    for (size_t k = 0; k < rc->nw; k++) {
        const struct wl *w = &rc->w[k];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(w->name));
        json_object_set_new(o, "type", jsonutil_str(w->type));
        json_object_set_new(o, "pids", json_pack("[i]", (int)w->pgid));
        json_object_set_new(o, "pgid", json_integer(w->pgid));
        json_object_set_new(o, "cgroup", jsonutil_str(w->cgroup));
        json_object_set_new(o, "start_unix", jsonutil_real(w->start_unix));
        json_object_set_new(o, "end_unix", json_null()); /* unknown: stopped after carma died */
        json_object_set_new(o, "exit_status", json_null());
        json_object_set_new(o, "signal", json_null());
        json_object_set_new(o, "timed_out", json_false());
        json_array_append_new(arr, o);
    }
    return json_pack("{s:o}", "workloads", arr);
}

static bool exists(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* Writes j (taken) as dir/name; false after saying why not. */
static bool put_json(const char *dir, const char *name, json_t *j)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int r = j ? jsonutil_write_file(j, path) : -ENOMEM;
    json_decref(j);
    if (r < 0)
        cli_error("cleanup: cannot write %s: %s", path, strerror(-r));
    return r >= 0;
}

/* Finishes dir (manifest m, status "running", or "crashed" without its report): 0, or 1 when a file
 * could not be written. */
static int finish(const char *dir, json_t *m, const struct recs *rc, long stopped)
{
    int status = 0;
    long cut = trim_all(dir, NULL), cut_power = trim_all(dir, "power");
    if (cut < 0 || cut_power < 0)
        status = 1;
    cut = (cut > 0 ? cut : 0) + (cut_power > 0 ? cut_power : 0);
    double t_last = last_sample(dir);
    char last_utc[64], now_utc[64];
    utc_iso(t_last, last_utc, sizeof last_utc);
    utc_iso((double)time_real_ns() / 1e9, now_utc, sizeof now_utc);
    if (!exists(dir, "workloads.json") && rc->nw &&
        !put_json(dir, "workloads.json", workloads_doc(rc)))
        status = 1;
    /* the manifest first: the report says "crashed" from it (report/runreport) */
    json_object_set_new(m, "status", json_string("crashed"));
    json_t *c = json_object();
    json_object_set_new(c, "last_sample_unix", jsonutil_real(t_last));
    json_object_set_new(c, "last_sample_utc",
                        isfinite(t_last) ? json_string(last_utc) : json_null());
    json_object_set_new(c, "cleanup_utc", json_string(now_utc));
    json_object_set_new(c, "torn_rows_dropped", json_integer(cut));
    json_object_set_new(c, "processes_stopped", json_integer(stopped > 0 ? stopped : 0));
    json_object_set_new(m, "crash", c);
    if (!put_json(dir, "manifest.json", json_incref(m)))
        return 1;
    /* the report from the files, as `carma report` makes it */
    json_t *list = NULL;
    struct carma_err e = {0};
    char *text = NULL;
    if (runreport_build(dir, NULL, &list, &e) < 0) {
        cli_error("cleanup: no report from %s: %s", dir, e.msg);
        status = 1;
    } else {
        text = runreport_text(list);
        json_t *run = json_array_get(list, 0);
        double a = jsonutil_get_num(run, "start_unix"), b = jsonutil_get_num(run, "end_unix");
        json_t *rep = json_object();
        json_t *x = rundir_read_json(dir, "experiment.json", NULL, NULL);
        json_object_set_new(rep, "experiment",
                            jsonutil_str(json_string_value(json_object_get(x, "experiment_name"))));
        json_decref(x);
        json_object_set_new(rep, "run_dir", json_string(dir));
        json_object_set_new(rep, "duration_s",
                            jsonutil_real(isfinite(a) && isfinite(b) && b >= a ? b - a : NAN));
        json_object_set_new(rep, "end_unix", jsonutil_real(t_last));
        json_object_set_new(rep, "status", json_string("crashed"));
        json_object_set_new(rep, "interruption", json_null());
        json_object_set_new(rep, "warnings", json_array());
        json_object_set_new(rep, "windows", list);
        if (!put_json(dir, "report.json", rep))
            status = 1;
        char path[4200];
        snprintf(path, sizeof path, "%s/report.txt", dir);
        int r = text ? file_replace(path, text, strlen(text)) : -ENOMEM;
        if (r < 0) {
            cli_error("cleanup: cannot write %s: %s", path, strerror(-r));
            status = 1;
        }
        free(text);
    }
    printf("%s: finished: status crashed, last sample at %s, %ld torn row%s dropped; `carma "
           "report %s` reads it\n",
           dir, last_utc, cut, cut == 1 ? "" : "s", dir);
    return status;
}

int cmd_cleanup(int argc, char **argv)
{
    int64_t grace_ns = 5 * (int64_t)1000000000;
    enum { OPT_GRACE = 300 };
    static const struct option longopts[] = {
        {"grace", required_argument, NULL, OPT_GRACE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "h", longopts, "cleanup")) != -1) {
        switch (c) {
        case OPT_GRACE:
            if (cli_duration("--grace", optarg, 0, 3600 * (int64_t)1000000000, &grace_ns) < 0)
                return 2;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return 2;
        }
    }
    if (optind + 1 != argc) {
        cli_error("cleanup: give one run directory (usage: carma cleanup RUN_DIR [--grace T])");
        return 2;
    }
    const char *dir = argv[optind];
    struct carma_err e = {0};
    json_t *m = rundir_read_json(dir, "manifest.json", NULL, &e);
    if (!m) {
        cli_error("cleanup: %s: not a run directory of carma run (%s)", dir, e.msg);
        return 2;
    }
    const char *prod = json_string_value(json_object_get(m, "producer"));
    if (!prod || strcmp(prod, "carma run") != 0) {
        cli_error("cleanup: %s/manifest.json: producer is %s, not \"carma run\"", dir,
                  prod ? prod : "missing");
        json_decref(m);
        return 2;
    }
    pid_t holder = 0;
    int lock = rundir_crash_lock(dir, 0, &holder, &e);
    if (lock == -EWOULDBLOCK) {
        char who[32] = "another process";
        if (holder > 0)
            snprintf(who, sizeof who, "carma (pid %d)", (int)holder);
        cli_error("cleanup: %s is still being written by %s, which holds its run.lock: that run "
                  "is alive (stop it with SIGINT or SIGTERM; it finishes its directory itself)",
                  dir, who);
        json_decref(m);
        return 2;
    }
    if (lock < 0 && lock != -ENOENT) {
        cli_error("cleanup: %s", e.msg);
        json_decref(m);
        return 1;
    }
    const char *status = json_string_value(json_object_get(m, "status"));
    if (lock == -ENOENT && status && strcmp(status, "running") == 0) {
        /* no run.lock (an earlier carma): its pid, start time and boot tell */
        pid_t pid = (pid_t)json_integer_value(json_object_get(m, "pid"));
        uint64_t st = ju64(m, "pid_start_ticks");
        const char *boot =
            json_string_value(json_object_get(json_object_get(m, "host"), "boot_id"));
        if (pid > 0 && st && pid_writer_alive(pid, st, boot) == 1) {
            cli_error("cleanup: %s is still being written by carma (pid %d, manifest.json): that "
                      "run is alive (stop it with SIGINT or SIGTERM)",
                      dir, (int)pid);
            json_decref(m);
            return 2;
        }
    }
    struct recs rc;
    int rv = 0;
    if (read_records(dir, &rc) < 0) {
        cli_error("cleanup: %s/processes.jsonl: cannot read it", dir);
        rv = 1;
    }
    /* running: carma never finished; crashed without report.json: a cleanup that could not
     * write it */
    bool todo = status && (strcmp(status, "running") == 0 ||
                           (strcmp(status, "crashed") == 0 && !exists(dir, "report.json")));
    long stopped = stop_all(&rc, grace_ns, todo);
    if (stopped < 0)
        rv = 1;
    if (todo) {
        if (finish(dir, m, &rc, stopped) != 0)
            rv = 1;
    } else if (stopped == 0 && !rc.base_removed) {
        printf("%s: nothing left to do (status %s, no process of the run left)\n", dir,
               status ? status : "unknown");
    }
    json_decref(rc.lines);
    free(rc.w);
    json_decref(m);
    if (lock >= 0)
        close(lock);
    return rv;
}
