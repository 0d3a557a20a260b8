/*
 * carma import-nsys: per-process GPU kernel busy time from Nsight Systems SQLite exports
 * (import/nsys.h), as nsys_gpu.csv: on stdout (or -o FILE) cut on a fixed grid, or into a run
 * directory (--run), cut on the run's sample ticks, after which the run's GPU energy is split
 * again by kernel busy time (import/nsys_run.h).
 */
#include "cli/import_nsys.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "core/file.h"
#include "core/fmt.h"
#include "core/jsonutil.h"
#include "core/parse.h"
#include "import/nsys.h"
#include "import/nsys_run.h"

static void help(void)
{
    printf("usage: carma import-nsys [OPTIONS] FILE.sqlite...\n\n"
           "Reads Nsight Systems SQLite exports (nsys profile --export=sqlite, or nsys export\n"
           "--type sqlite) and writes each process's GPU kernel busy time per device and\n"
           "interval as CSV: interval_start_unix,interval_end_unix,gpu,pid,workload,busy_s\n"
           "(the union of the process's kernels: concurrent kernels count once). A summary per\n"
           "process goes to stderr (--json: to stdout). Exit status: 0, 1 when a file cannot be\n"
           "used, 2 for usage.\n\n"
           "options:\n"
           "  --run DIR           write DIR/nsys_gpu.csv for the carma run in DIR (intervals =\n"
           "                      its sample ticks, gpu = its NVML index by UUID, workload by\n"
           "                      pid) and split the run's GPU energy again by kernel busy time\n"
           "                      (attribution.csv, report.json; the NVML split is kept as\n"
           "                      attribution_nvml.csv)\n"
           "  --workload NAME     with --run: every process of the files is workload NAME's\n"
           "                      (default: DIR/logs/NAME.sqlite is NAME's, else by pid)\n"
           "  --interval T        without --run: the intervals' length (default 100ms)\n"
           "  -o, --output FILE   without --run: write the CSV to FILE, not stdout\n"
           "  --json              the summary (and with --run the GPUs' new split) as one JSON\n"
           "                      document on stdout instead of the tables on stderr; needs -o\n"
           "                      or --run (else the CSV is on stdout)\n"
           "  -q, --quiet         no summary on stderr (--json still prints its document)\n"
           "  -h, --help          show this help\n");
}

/* One (pid, gpu) of a file: its kernels, and its busy seconds and workload in the rows added. */
struct proc_sum {
    uint32_t pid;
    int gpu;
    size_t kernels;
    double busy_s;
    const char *workload; /* NULL: none (without --run) */
};

/* The (pid, gpu) pairs of p's kernels in the order they first appear, with their busy time in
 * the rows [r0, r1) of s: *ret (malloc'd, *ret_n entries). Returns 0 or -ENOMEM. */
static int proc_sums(const struct nsys_profile *p, const struct nsys_busy_set *s, size_t r0,
                     size_t r1, struct proc_sum **ret, size_t *ret_n)
{
    struct proc_sum *v = NULL;
    size_t n = 0, cap = 0, last = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct nsys_kernel *k = &p->k[i];
        size_t j = last;
        if (j >= n || v[j].pid != k->pid || v[j].gpu != k->index)
            for (j = 0; j < n && (v[j].pid != k->pid || v[j].gpu != k->index); j++)
                ;
        if (j == n) {
            if (n == cap) {
                size_t nc = cap ? 2 * cap : 16;
                struct proc_sum *nv = realloc(v, nc * sizeof *nv);
                if (!nv) {
                    free(v);
                    return -ENOMEM;
                }
                v = nv;
                cap = nc;
            }
            v[n++] = (struct proc_sum){.pid = k->pid, .gpu = k->index};
        }
        v[j].kernels++;
        last = j;
    }
    for (size_t r = r0; r < r1; r++)
        for (size_t j = 0; j < n; j++)
            if (s->rows[r].pid == v[j].pid && s->rows[r].gpu == v[j].gpu) {
                v[j].busy_s += s->rows[r].busy_s;
                v[j].workload = s->rows[r].workload;
                break;
            }
    *ret = v;
    *ret_n = n;
    return 0;
}

/* The warnings about one file's devices (stderr, also with --json). */
static void device_warnings(const struct nsys_profile *p, size_t left_unmapped, bool with_run)
{
    if (p->unmapped)
        fprintf(stderr,
                "  warning: %zu kernels on devices the export does not name "
                "(no "
                "TARGET_INFO_CUDA_DEVICE): gpu = their CUDA device number\n",
                p->unmapped);
    if (with_run && left_unmapped)
        fprintf(stderr,
                "  warning: %zu kernels on GPUs whose UUID is not among the run's: gpu = the "
                "export's GPU id\n",
                left_unmapped);
}

/*
 * The summary of one file's processes, from the rows [r0, r1) it added: on stderr, or (files
 * not NULL) appended to the JSON array files. Returns 0 or -ENOMEM.
 */
static int summary(const char *file, const struct nsys_profile *p, const struct nsys_busy_set *s,
                   size_t r0, size_t r1, size_t left_unmapped, bool with_run, json_t *files)
{
    struct proc_sum *v;
    size_t n;
    if (proc_sums(p, s, r0, r1, &v, &n) < 0)
        return -ENOMEM;
    if (files) {
        json_t *o = json_object(), *procs = json_array();
        json_object_set_new(o, "path", json_string(file));
        json_object_set_new(o, "kernels", json_integer((json_int_t)p->n));
        jsonutil_set_num(o, "session_start_unix", (double)p->session_start_unix_ns / 1e9);
        json_object_set_new(o, "skipped_rows", json_integer((json_int_t)p->skipped));
        json_object_set_new(o, "unmapped_kernels", json_integer((json_int_t)p->unmapped));
        if (with_run)
            json_object_set_new(o, "kernels_not_on_run_gpus",
                                json_integer((json_int_t)left_unmapped));
        for (size_t j = 0; j < n; j++) {
            json_t *q = json_object();
            json_object_set_new(q, "pid", json_integer(v[j].pid));
            json_object_set_new(q, "gpu", json_integer(v[j].gpu));
            json_object_set_new(q, "workload",
                                v[j].workload ? json_string(v[j].workload) : json_null());
            json_object_set_new(q, "kernels", json_integer((json_int_t)v[j].kernels));
            jsonutil_set_num(q, "busy_s", v[j].busy_s);
            json_array_append_new(procs, q);
        }
        json_object_set_new(o, "processes", procs);
        json_array_append_new(files, o);
        free(v);
        return 0;
    }
    fprintf(stderr, "%s: %zu kernels, session start %.6f", file, p->n,
            (double)p->session_start_unix_ns / 1e9);
    if (p->skipped)
        fprintf(stderr, ", %zu rows without times skipped", p->skipped);
    fprintf(stderr, "\n");
    device_warnings(p, left_unmapped, with_run);
    /* per (pid, gpu): kernels and busy seconds */
    for (size_t j = 0; j < n; j++) {
        if (j == 4096) {
            fprintf(stderr, "  ... (%zu more)\n", n - j);
            break;
        }
        fprintf(stderr, "  pid %-8" PRIu32 " gpu %-3d %-20s %10zu kernels %14.6f s busy\n",
                v[j].pid, v[j].gpu, v[j].workload ? v[j].workload : "", v[j].kernels, v[j].busy_s);
    }
    free(v);
    return 0;
}

/* Writes buf to path atomically, or to stdout when path is NULL. */
static int write_out(const char *path, const struct csv_buf *b)
{
    if (path) {
        int r = file_replace(path, b->data, b->len);
        if (r < 0)
            cli_error("cannot write %s: %s", path, strerror(-r));
        return r < 0 ? 1 : 0;
    }
    if (fwrite(b->data, 1, b->len, stdout) != b->len || fflush(stdout) != 0) {
        cli_error("cannot write the CSV to stdout: %s", strerror(errno));
        return 1;
    }
    return 0;
}

/* Prints doc on stdout (--json). Returns 0, or 1 after saying why not. */
static int print_doc(const json_t *doc)
{
    cli_print_json(stdout, doc);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("cannot write the JSON to stdout: %s", strerror(errno));
        return 1;
    }
    return 0;
}

/* The workload a file names as DIR/logs/<name>.sqlite, or -1. */
static int workload_of_file(const struct nsys_run_info *ri, const char *run_dir, const char *file)
{
    char want[4200];
    for (size_t k = 0; k < ri->njobs; k++) {
        snprintf(want, sizeof want, "%s/logs/%s.sqlite", run_dir, ri->job[k]);
        char *a = realpath(want, NULL), *b = realpath(file, NULL);
        bool same = a && b && strcmp(a, b) == 0;
        free(a);
        free(b);
        if (same)
            return (int)k;
    }
    return -1;
}

static void print_reattr(const struct nsys_reattr *ra)
{
    fprintf(stderr, "%-14s %11s %11s %11s %11s %11s  %s\n", "GPU (nsys)", "energy J", "workloads J",
            "idle J", "other J", "unattr. J", "split by (seconds)");
    for (size_t g = 0; g < ra->ngpu; g++) {
        const struct nsys_reattr_gpu *v = &ra->gpu[g];
        char basis[160] = "";
        size_t bl = 0;
        for (int k = 0; k < NSYS_BASIS_N; k++)
            if (v->basis_s[k] >= 0.05)
                bl += (size_t)snprintf(basis + bl, sizeof basis - bl, "%s%s %.1fs", bl ? ", " : "",
                                       nsys_run_basis_name(k), v->basis_s[k]);
        fprintf(stderr, "%-14s %11.3f %11.3f %11.3f %11.3f %11.3f  %s\n", v->channel,
                fmt_round_zero(v->energy_j, 3), fmt_round_zero(v->jobs_j, 3),
                fmt_round_zero(v->idle_j, 3), fmt_round_zero(v->other_j, 3),
                fmt_round_zero(v->unattributed_j, 3), basis);
    }
}

/* The GPUs' new split as JSON rows (--json). */
static json_t *reattr_json(const struct nsys_reattr *ra)
{
    json_t *arr = json_array();
    for (size_t g = 0; g < ra->ngpu; g++) {
        const struct nsys_reattr_gpu *v = &ra->gpu[g];
        json_t *o = json_object(), *basis = json_object();
        json_object_set_new(o, "channel", json_string(v->channel));
        json_object_set_new(o, "index", json_integer(v->index));
        jsonutil_set_num(o, "energy_j", v->energy_j);
        jsonutil_set_num(o, "workloads_j", v->jobs_j);
        jsonutil_set_num(o, "idle_j", v->idle_j);
        jsonutil_set_num(o, "other_j", v->other_j);
        jsonutil_set_num(o, "unattributed_j", v->unattributed_j);
        for (int k = 0; k < NSYS_BASIS_N; k++)
            jsonutil_set_num(basis, nsys_run_basis_name(k), v->basis_s[k]);
        json_object_set_new(o, "basis", basis);
        json_array_append_new(arr, o);
    }
    return arr;
}

/* import_nsys_into_run; with doc, the summaries go into it (--json) instead of stderr. */
static int import_run(const char *run_dir, char *const *files, const char *const *workload,
                      size_t n, bool reattribute, bool skip_unreadable, bool quiet, json_t *doc)
{
    struct nsys_run_info ri;
    struct carma_err e = {0};
    struct nsys_busy_set set = {0};
    struct csv_buf buf = {0};
    int status = 1;
    char path[4200];
    json_t *jfiles = NULL;
    if (nsys_run_info_load(run_dir, &ri, &e) < 0) {
        cli_error("%s", e.msg);
        return 1;
    }
    if (ri.warning[0])
        fprintf(stderr, "warning: %s\n", ri.warning);
    snprintf(path, sizeof path, "%s/nsys_gpu.csv", run_dir);
    if (doc) {
        json_object_set_new(doc, "run_dir", json_string(run_dir));
        json_object_set_new(doc, "csv", json_string(path));
        jfiles = json_array();
        json_object_set_new(doc, "files", jfiles); /* doc keeps it: appended to below */
    }
    for (size_t f = 0; f < n; f++) {
        struct nsys_profile p;
        carma_err_clear(&e);
        if (nsys_load(files[f], &p, &e) < 0) {
            if (!skip_unreadable) {
                cli_error("%s", e.msg);
                goto out;
            }
            if (!quiet)
                fprintf(stderr, "carma: note: %s; no GPU busy time from it\n", e.msg);
            continue;
        }
        size_t left = nsys_map_devices(&p, ri.uuid, ri.ngpu);
        size_t r0 = set.n;
        if (nsys_busy_add(&p, ri.ticks, ri.nticks, &set) < 0) {
            cli_error("out of memory");
            nsys_profile_free(&p);
            goto out;
        }
        int forced = -1;
        if (workload && workload[f]) {
            for (size_t k = 0; k < ri.njobs; k++)
                if (strcmp(ri.job[k], workload[f]) == 0)
                    forced = (int)k;
            if (forced < 0) {
                cli_error("--workload: the run in %s has no workload '%s'", run_dir, workload[f]);
                nsys_profile_free(&p);
                goto out;
            }
        } else {
            forced = workload_of_file(&ri, run_dir, files[f]);
        }
        for (size_t r = r0; r < set.n; r++) {
            int k = forced >= 0 ? forced : nsys_run_owner_of(&ri, set.rows[r].pid);
            set.rows[r].workload = k >= 0 ? ri.job[k] : "other";
        }
        if (doc && !quiet)
            device_warnings(&p, left, true);
        if ((doc || !quiet) && summary(files[f], &p, &set, r0, set.n, left, true, jfiles) < 0) {
            cli_error("out of memory");
            nsys_profile_free(&p);
            goto out;
        }
        nsys_profile_free(&p);
    }
    if (set.outside_s > 0 && !quiet)
        fprintf(stderr,
                "carma: note: %.6f s of kernel busy time outside the run's samples left "
                "out\n",
                set.outside_s);
    if (doc)
        jsonutil_set_num(doc, "outside_run_s", set.outside_s);
    nsys_busy_sort(&set);
    if (nsys_busy_csv(&set, &buf) < 0) {
        cli_error("out of memory");
        goto out;
    }
    if (write_out(path, &buf) != 0)
        goto out;
    if (reattribute) {
        struct nsys_reattr ra;
        carma_err_clear(&e);
        int r = nsys_run_reattribute(run_dir, &ra, &e);
        if (r == -ENODATA) {
            if (!quiet)
                fprintf(stderr, "carma: note: %s: nothing to split again\n", e.msg);
            if (doc)
                json_object_set_new(doc, "gpus", json_null());
        } else if (r < 0) {
            cli_error("%s", e.msg);
            goto out;
        }
        if (r == 0 && ra.warning[0])
            fprintf(stderr, "warning: %s\n", ra.warning);
        if (r == 0 && doc) {
            json_object_set_new(doc, "split_periods", json_integer((json_int_t)ra.periods));
            json_object_set_new(doc, "gpus", reattr_json(&ra));
        } else if (r == 0 && !quiet) {
            print_reattr(&ra);
        }
    }
    status = doc ? print_doc(doc) : 0;
out:
    nsys_busy_free(&set);
    csv_buf_free(&buf);
    nsys_run_info_free(&ri);
    return status;
}

int import_nsys_into_run(const char *run_dir, char *const *files, const char *const *workload,
                         size_t n, bool reattribute, bool skip_unreadable, bool quiet)
{
    return import_run(run_dir, files, workload, n, reattribute, skip_unreadable, quiet, NULL);
}

/* Without a run: a fixed grid, gpu = the export's GPU id, a blank workload; with doc (and
 * output), the summaries go into it (--json) instead of stderr. */
static int import_plain(char *const *files, size_t n, int64_t interval_ns, const char *output,
                        bool quiet, json_t *doc)
{
    json_t *jfiles = NULL;
    if (doc) {
        json_object_set_new(doc, "run_dir", json_null());
        json_object_set_new(doc, "csv", json_string(output));
        json_object_set_new(doc, "interval_s", json_real((double)interval_ns / 1e9));
        jfiles = json_array();
        json_object_set_new(doc, "files", jfiles); /* doc keeps it: appended to below */
    }
    struct nsys_profile *p = calloc(n, sizeof *p);
    const struct nsys_profile **pp = calloc(n, sizeof *pp);
    struct nsys_busy_set set = {0};
    struct csv_buf buf = {0};
    int64_t *edges = NULL;
    size_t ne = 0;
    int status = 1;
    if (!p || !pp) {
        cli_error("out of memory");
        goto out;
    }
    for (size_t f = 0; f < n; f++) {
        struct carma_err e = {0};
        if (nsys_load(files[f], &p[f], &e) < 0) {
            cli_error("%s", e.msg);
            goto out;
        }
        pp[f] = &p[f];
    }
    int r = nsys_grid(pp, n, interval_ns, &edges, &ne);
    if (r < 0) {
        cli_error("the kernels span too many intervals of that length: %s", strerror(-r));
        goto out;
    }
    for (size_t f = 0; f < n; f++) {
        size_t r0 = set.n;
        if (nsys_busy_add(&p[f], edges, ne, &set) < 0) {
            cli_error("out of memory");
            goto out;
        }
        if (doc && !quiet)
            device_warnings(&p[f], 0, false);
        if ((doc || !quiet) && summary(files[f], &p[f], &set, r0, set.n, 0, false, jfiles) < 0) {
            cli_error("out of memory");
            goto out;
        }
    }
    nsys_busy_sort(&set);
    if (nsys_busy_csv(&set, &buf) < 0) {
        cli_error("out of memory");
        goto out;
    }
    status = write_out(output, &buf);
    if (status == 0 && doc)
        status = print_doc(doc);
out:
    for (size_t f = 0; p && f < n; f++)
        nsys_profile_free(&p[f]);
    free(p);
    free(pp);
    free(edges);
    nsys_busy_free(&set);
    csv_buf_free(&buf);
    return status;
}

int cmd_import_nsys(int argc, char **argv)
{
    enum { OPT_RUN = 256, OPT_WORKLOAD, OPT_INTERVAL_NS, OPT_JSON_SUMMARY };
    static const struct option longopts[] = {
        {"run", required_argument, NULL, OPT_RUN},
        {"workload", required_argument, NULL, OPT_WORKLOAD},
        {"interval", required_argument, NULL, OPT_INTERVAL_NS},
        {"output", required_argument, NULL, 'o'},
        {"json", no_argument, NULL, OPT_JSON_SUMMARY},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *run = NULL, *wl = NULL, *output = NULL;
    int64_t interval_ns = 100 * 1000000LL;
    bool interval_given = false, quiet = false, json = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = cli_getopt(argc, argv, "o:qh", longopts, "import-nsys")) != -1) {
        switch (c) {
        case OPT_RUN:
            run = optarg;
            break;
        case OPT_WORKLOAD:
            wl = optarg;
            break;
        case OPT_INTERVAL_NS:
            if (cli_duration("--interval", optarg, 1000000LL, 3600 * 1000000000LL, &interval_ns) <
                0)
                return 2;
            interval_given = true;
            break;
        case 'o':
            output = optarg;
            break;
        case OPT_JSON_SUMMARY:
            json = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            help();
            return 0;
        default:
            return 2;
        }
    }
    if (optind >= argc) {
        cli_error("import-nsys: no file given (usage: carma import-nsys [OPTIONS] "
                  "FILE.sqlite...)");
        return 2;
    }
    size_t n = (size_t)(argc - optind);
    if (json && !run && !output) {
        cli_error("import-nsys: --json prints the summary on stdout, where the CSV goes without "
                  "-o or --run: give -o FILE or --run DIR");
        return 2;
    }
    if (run) {
        if (output || interval_given) {
            cli_error("import-nsys: --run writes DIR/nsys_gpu.csv on the run's ticks: no -o or "
                      "--interval with it");
            return 2;
        }
        const char **w = calloc(n, sizeof *w);
        if (!w)
            return 1;
        for (size_t i = 0; i < n; i++)
            w[i] = wl;
        json_t *doc = json ? json_object() : NULL;
        int st = import_run(run, argv + optind, w, n, true, false, quiet, doc);
        json_decref(doc);
        free(w);
        return st;
    }
    if (wl) {
        cli_error("import-nsys: --workload needs --run (the workloads are the run's)");
        return 2;
    }
    json_t *doc = json ? json_object() : NULL;
    int st = import_plain(argv + optind, n, interval_ns, output, quiet, doc);
    json_decref(doc);
    return st;
}
