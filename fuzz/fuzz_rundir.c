/*
 * libFuzzer harness for the readers of a run directory (what `carma run -o DIR` and `carma stat
 * -o DIR` write, read back by a later command): `carma report`'s runreport_build and
 * runreport_timeline_load (report/runreport), `carma top`'s live reader (report/live), `carma
 * model fit`'s fx_run_load (model/features) and `carma import-nsys --run`'s
 * nsys_run_info_load and nsys_run_reattribute (import/nsys_run).
 *
 * The input is a directory in the framing `head` prints for several files: a line
 * "==> NAME <==" starts file NAME, whose content runs to the "\n" before the next such line
 * (so `head -c 100000 manifest.json samples.csv ...` of a run directory is a seed). Only the
 * names a run directory holds are written (manifest.json, samples.csv, attribution.csv,
 * attribution_nvml.csv, node_util.csv, utilization.csv, features.csv, nsys_gpu.csv,
 * workloads.json, report.json, summary.json, pstree.log, event_summaries.jsonl, marks.csv); the
 * directory (on a tmpfs when there is one) is emptied before each input.
 *
 * The oracles, besides the sanitizers and the leak checker: a reader that fails says why (a
 * message, naming the file when the failure is a file's); a report is a JSON array whose
 * numbers are all finite and whose text form ends with a newline; a timeline's bins and
 * channel watts are finite; the live view's open windows are at most LIVE_WINDOWS_MAX, each
 * open for NAN or a finite time of at least 0 s, its energy NAN or finite and at least 0; a model
 * run's intervals are ordered (t0 < t1) and its measured
 * powers finite or NAN; a re-attribution's joules are finite.
 *
 * fuzz-sources: src/report/runreport.c src/analysis/series.c src/report/live.c
 * fuzz-sources: src/model/features.c src/import/nsys_run.c src/analysis/carbon.c
 * fuzz-sources: src/analysis/split.c src/analysis/ledger.c src/core/array.c src/core/csv.c
 * fuzz-sources: src/core/err.c src/core/file.c src/core/fmt.c src/core/parse.c src/core/pidlive.c
 * fuzz-sources: src/core/pyjson.c src/core/table.c build-fuzz/embedded_data.c
 * fuzz-sources: src/rundir/rundir.c src/sources/channel.c src/core/channel_kind.c
 * fuzz-sources: src/core/iso8601.c src/core/jsonutil.c src/core/timeutil.c
 * fuzz-libs: -ljansson -lm
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "import/nsys_run.h"
#include "model/features.h"
#include "report/live.h"
#include "report/runreport.h"

static const char *const names[] = {
    "manifest.json",         "samples.csv",     "attribution.csv", "attribution_nvml.csv",
    "node_util.csv",         "utilization.csv", "features.csv",    "nsys_gpu.csv",
    "workloads.json",        "report.json",     "summary.json",    "pstree.log",
    "event_summaries.jsonl", "marks.csv",
};
#define NNAMES (sizeof names / sizeof names[0])

static char dir[PATH_MAX]; /* below fuzz_root(), made afresh for every input */

static void fresh_dir(void)
{
    fuzz_rm_tree(dir);
    if (mkdir(dir, 0755) != 0)
        abort();
}

static void put(const char *name, const char *data, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        abort();
    if (len && write(fd, data, len) != (ssize_t)len)
        abort();
    close(fd);
}

/* Writes the files of the input; returns how many. */
static int unpack(const char *t, size_t n)
{
    static const char open_[] = "==> ", close_[] = " <==\n";
    int files = 0;
    size_t i = 0;
    /* the first header must start the input */
    while (i + 4 <= n && memcmp(t + i, open_, 4) == 0) {
        const char *eol = memchr(t + i, '\n', n - i);
        if (!eol)
            break;
        size_t hlen = (size_t)(eol + 1 - (t + i));
        if (hlen < 4 + 5 || memcmp(eol + 1 - 5, close_, 5) != 0)
            break;
        const char *name = t + i + 4;
        size_t nlen = hlen - 4 - 5;
        size_t body = i + hlen, end = n, next = n;
        for (size_t k = body; k + 5 <= n; k++) {
            if (t[k] == '\n' && memcmp(t + k + 1, open_, 4) == 0) {
                end = k; /* the "\n" before the next header is the framing's */
                next = k + 1;
                break;
            }
        }
        for (size_t k = 0; k < NNAMES; k++) {
            if (strlen(names[k]) == nlen && memcmp(names[k], name, nlen) == 0) {
                put(names[k], t + body, end - body);
                files++;
            }
        }
        i = next;
    }
    return files;
}

/* FUZZ_RUNDIR_TRACE=1 prints each reader's result (to see what a seed reaches). */
static int trace = -1;

static void check_msg(const struct carma_err *e, int r)
{
    if (trace < 0)
        trace = getenv("FUZZ_RUNDIR_TRACE") != NULL;
    if (trace)
        fprintf(stderr, "  %d %s\n", r, r < 0 ? e->msg : "");
    if (r >= 0)
        return;
    if (!e->msg[0]) {
        fprintf(stderr, "error %d without a message\n", r);
        abort();
    }
}

/* Every number in j is finite (jansson cannot hold NaN or Inf; this checks its doubles). */
static void check_finite(const json_t *j, const char *where)
{
    if (json_is_real(j) && !isfinite(json_real_value(j))) {
        fprintf(stderr, "%s: a non-finite number\n", where);
        abort();
    }
    if (json_is_array(j)) {
        size_t i;
        const json_t *v;
        json_array_foreach(j, i, v) check_finite(v, where);
    } else if (json_is_object(j)) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)j, k, v) check_finite(v, where);
    }
}

static void check_report(void)
{
    json_t *rep = NULL;
    struct carma_err e = {0};
    int r = runreport_build(dir, NULL, &rep, &e);
    check_msg(&e, r);
    if (r == 0) {
        if (!json_is_array(rep))
            abort();
        check_finite(rep, "runreport_build");
        char *text = runreport_text(rep);
        if (!text || !*text || text[strlen(text) - 1] != '\n')
            abort();
        free(text);
        json_decref(rep);
    } else if (rep) {
        abort(); /* nothing in *ret on failure */
    }
    struct runreport_opts snap = {.edges = SERIES_EDGES_SNAP};
    rep = NULL;
    struct carma_err e2 = {0};
    r = runreport_build(dir, &snap, &rep, &e2);
    check_msg(&e2, r);
    if (r == 0) {
        check_finite(rep, "runreport_build (snap)");
        json_decref(rep);
    }

    struct runreport_timeline tl;
    memset(&tl, 0, sizeof tl);
    struct carma_err e3 = {0};
    r = runreport_timeline_load(dir, NULL, 40, &tl, &e3);
    check_msg(&e3, r);
    if (r == 0) {
        for (size_t c = 0; c < tl.nch; c++)
            for (size_t k = 0; k < tl.ch[c].n; k++)
                if (!isfinite(tl.ch[c].t[k]) || !isfinite(tl.ch[c].w[k]))
                    abort();
        for (size_t b = 0; b < tl.nbins; b++)
            if (!isfinite(tl.bin_t[b]))
                abort();
        for (size_t j = 0; j < tl.njobs; j++) {
            if (!isfinite(tl.jobs[j].energy_j))
                abort();
            for (size_t b = 0; b < tl.nbins; b++)
                if (!isfinite(tl.jobs[j].w[b]))
                    abort();
        }
    }
    runreport_timeline_free(&tl);
}

static void check_live(void)
{
    struct live_reader lr;
    memset(&lr, 0, sizeof lr);
    struct carma_err e = {0};
    int r = live_reader_open(&lr, dir, &e);
    check_msg(&e, r);
    if (r == 0) {
        static struct live_view v;
        memset(&v, 0, sizeof v);
        struct carma_err e2 = {0};
        int p = live_reader_poll(&lr, &v, &e2);
        check_msg(&e2, p);
        if (p == 0) {
            if (v.njobs > LIVE_JOBS_MAX || v.ndomains > LIVE_DOMAINS_MAX ||
                v.nwindows > LIVE_WINDOWS_MAX || (v.windows_more && v.nwindows < LIVE_WINDOWS_MAX))
                abort();
            for (size_t k = 0; k < v.nwindows; k++) {
                const struct live_window *w = &v.window[k];
                if ((!isnan(w->open_s) && !(w->open_s >= 0 && isfinite(w->open_s))) ||
                    (!isnan(w->energy_j) && !(w->energy_j >= 0 && isfinite(w->energy_j)))) {
                    fprintf(stderr, "window %zu: open %g s, %g J\n", k, w->open_s, w->energy_j);
                    abort();
                }
            }
            FILE *f = fopen("/dev/null", "we");
            if (f) {
                int lines = 0;
                live_render(f, &v, false, 80, &lines);
                live_render(f, &v, true, 80, &lines);
                fclose(f);
            }
        }
        live_reader_close(&lr);
    }
}

static void check_model(void)
{
    struct fx_run run;
    memset(&run, 0, sizeof run);
    struct carma_err e = {0};
    int r = fx_run_load(dir, NULL, &run, &e);
    check_msg(&e, r);
    if (r == 0) {
        for (size_t i = 0; i < run.nint; i++) {
            if (!(run.t0[i] < run.t1[i]))
                abort();
            for (int k = 0; k < FX_KINDS; k++) {
                double w = run.power_w[i * FX_KINDS + (size_t)k];
                if (!isnan(w) && !isfinite(w)) {
                    fprintf(stderr, "interval %zu: power %g\n", i, w);
                    abort();
                }
            }
        }
    }
    fx_run_free(&run);
}

static void check_nsys(void)
{
    struct nsys_run_info ri;
    memset(&ri, 0, sizeof ri);
    struct carma_err e = {0};
    int r = nsys_run_info_load(dir, &ri, &e);
    check_msg(&e, r);
    if (r == 0) {
        for (size_t i = 1; i < ri.nticks; i++)
            if (ri.ticks[i] <= ri.ticks[i - 1])
                abort();
        for (size_t i = 0; i < ri.nown; i++)
            if (ri.own[i].job < 0 || (size_t)ri.own[i].job >= ri.njobs)
                abort();
    }
    nsys_run_info_free(&ri);
    static struct nsys_reattr ra;
    memset(&ra, 0, sizeof ra);
    struct carma_err e2 = {0};
    r = nsys_run_reattribute(dir, &ra, &e2);
    check_msg(&e2, r);
    if (r == 0) {
        if (ra.ngpu > NSYS_GPUS_MAX)
            abort();
        for (size_t g = 0; g < ra.ngpu; g++)
            if (!isfinite(ra.gpu[g].energy_j) || !isfinite(ra.gpu[g].jobs_j))
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0])
        snprintf(dir, sizeof dir, "%s/run", fuzz_root("rundir"));
    fresh_dir();
    if (unpack((const char *)data, size) == 0)
        return 0;
    check_report();
    check_live();
    check_model();
    check_nsys(); /* last: a re-attribution rewrites files of the directory */
    return 0;
}
