/*
 * carma merge and carma wait-ready: the head-node side of srt-slurm's in-job host collector
 * (srt/hostmerge.h): the start-up gate of a job's per-node collectors, and the aggregation of
 * their files at teardown into DIR/samples.csv and DIR/manifest.json, fail-closed with
 * --required; carma merge also joins the per-node carma recordings DIR/carma/<host>/ into one
 * collect directory (collect/join.h).
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/common.h"
#include "collect/collector.h"
#include "collect/join.h"
#include "core/parse.h"
#include "core/timeutil.h"
#include "srt/hostmerge.h"

#define DEFAULT_READY_TIMEOUT_NS (30 * NS_PER_S)
#define READY_POLL_NS            (100 * NS_PER_MS)

static void warn_line(void *cls, const char *msg)
{
    const char *cmd = cls;
    cli_error("%s: warning: %s", cmd, msg);
}

/* The nodes of the current Slurm job (collect/collector's expansion of SLURM_JOB_NODELIST). */
static int slurm_nodes(const char *cmd, struct hostmerge_names *ret)
{
    struct collect_targets ts = {0};
    struct carma_err e = {0};
    int r = collect_slurm_targets(&ts, COLLECT_DEFAULT_PORT, 0, NULL, &e);
    if (r < 0) {
        cli_error("%s: %s", cmd, e.msg);
        collect_targets_free(&ts);
        return -1;
    }
    for (size_t i = 0; i < ts.n && r >= 0; i++)
        r = hostmerge_names_add(ret, ts.t[i].node);
    collect_targets_free(&ts);
    if (r < 0) {
        cli_error("%s: out of memory", cmd);
        return -1;
    }
    return 0;
}

static int parse_schema(const char *cmd, const char *arg, int *ret)
{
    if (strcmp(arg, "3") != 0 && strcmp(arg, "4") != 0) {
        cli_error("%s: --srt-schema: '%s' is not 3 or 4 (srt-slurm's host collector headers)", cmd,
                  arg);
        return -1;
    }
    *ret = arg[0] - '0';
    return 0;
}

/* ---- carma merge ---- */

static void merge_help(void)
{
    printf("usage: carma merge DIR [--expected-nodes N1,N2,... | --slurm] [OPTIONS]\n\n"
           "At the end of a job, merges the files that srt-slurm's in-job host collector (one\n"
           "per worker node: carma record, or srt-slurm's own) left in DIR: every\n"
           "DIR/nodes/<host>.csv into DIR/samples.csv, rows sorted by (timestamp_unix,\n"
           "hostname, sensor), and DIR/manifest.json with srt-slurm's status (complete or\n"
           "incomplete), expected, observed and missing nodes, reason codes and\n"
           "publication_valid. A file whose header is not the current one is skipped as\n"
           "malformed, as is a row of the wrong width (a warning names FILE:LINE). The\n"
           "per-node carma recordings DIR/carma/<host>/ are joined into one collect\n"
           "directory, DIR/carma_merged/, that carma report reads.\n\n"
           "options:\n"
           "  --expected-nodes L  the nodes that must have samples, comma-separated (default:\n"
           "                      those of carma wait-ready's manifest, else every node that\n"
           "                      left a file)\n"
           "  --slurm             the expected nodes are the current Slurm job's\n"
           "                      (SLURM_JOB_NODELIST, expanded with scontrol show hostnames)\n"
           "  --required          fail closed: exit 1 when the merge is not publication-valid\n"
           "                      (without it, warnings and exit 0)\n"
           "  --srt-schema 3|4    the current header: srt-slurm's host collector v3 (default)\n"
           "                      or v4 (one row per socket, with cpu_rail_w, soc_w, dram_w)\n"
           "  --interrupted       the job was cut short (reason code interrupted)\n"
           "  --job-id ID         the manifest's job_id (default: the earlier manifest's, else\n"
           "                      SLURM_JOB_ID)\n"
           "  --run-name NAME     the manifest's run_name (default: the earlier manifest's)\n"
           "  --no-carma          do not join DIR/carma/<host>/\n"
           "  -q, --quiet         no warnings, no summary\n");
}

int cmd_merge(int argc, char **argv)
{
    enum {
        OPT_EXPECTED = 256,
        OPT_SLURM,
        OPT_REQUIRED,
        OPT_SCHEMA,
        OPT_INTERRUPTED,
        OPT_JOB_ID,
        OPT_RUN_NAME,
        OPT_NO_CARMA,
    };
    static const struct option longopts[] = {
        {"expected-nodes", required_argument, NULL, OPT_EXPECTED},
        {"slurm", no_argument, NULL, OPT_SLURM},
        {"required", no_argument, NULL, OPT_REQUIRED},
        {"srt-schema", required_argument, NULL, OPT_SCHEMA},
        {"interrupted", no_argument, NULL, OPT_INTERRUPTED},
        {"job-id", required_argument, NULL, OPT_JOB_ID},
        {"run-name", required_argument, NULL, OPT_RUN_NAME},
        {"no-carma", no_argument, NULL, OPT_NO_CARMA},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct hostmerge_names expected = {0};
    struct hostmerge_opts o = {
        .schema = 3, .producer = "carma " CARMA_VERSION, .warn = warn_line, .cls = "merge"};
    bool slurm = false, given = false, quiet = false, no_carma = false;
    int ret = 2, c;
    struct carma_err e = {0};
    optind = 1;
    while ((c = cli_getopt(argc, argv, "qh", longopts, "merge")) != -1) {
        switch (c) {
        case OPT_EXPECTED:
            given = true;
            if (hostmerge_names_parse(&expected, optarg, &e) < 0) {
                cli_error("merge: --expected-nodes: %s", e.msg);
                goto out;
            }
            break;
        case OPT_SLURM:
            slurm = true;
            break;
        case OPT_REQUIRED:
            o.required = true;
            break;
        case OPT_SCHEMA:
            if (parse_schema("merge", optarg, &o.schema) < 0)
                goto out;
            break;
        case OPT_INTERRUPTED:
            o.interrupted = true;
            break;
        case OPT_JOB_ID:
            o.job_id = optarg;
            break;
        case OPT_RUN_NAME:
            o.run_name = optarg;
            break;
        case OPT_NO_CARMA:
            no_carma = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            merge_help();
            ret = 0;
            goto out;
        default:
            goto out;
        }
    }
    if (optind + 1 != argc) {
        cli_error(optind == argc ? "merge: no directory: carma merge DIR"
                                 : "merge: one directory only (carma merge DIR)");
        goto out;
    }
    if (slurm && given) {
        cli_error("merge: --slurm and --expected-nodes both name the expected nodes: give one");
        goto out;
    }
    if (slurm && slurm_nodes("merge", &expected) < 0)
        goto out;
    const char *dir = argv[optind];
    if (quiet)
        o.warn = NULL;
    o.expected = &expected;
    struct hostmerge_result r = {.publication_valid = true};
    ret = 1;
    /* a directory with carma's recordings only: no host collector to merge, unless asked */
    char sub[4200];
    struct stat sb;
    bool srt = given || slurm || o.required;
    static const char *const srt_files[] = {"nodes", "ready", "manifest.json"};
    for (size_t i = 0; i < 3 && !srt; i++) {
        snprintf(sub, sizeof sub, "%s/%s", dir, srt_files[i]);
        srt = stat(sub, &sb) == 0;
    }
    if (srt && hostmerge_run(dir, &o, &r, &e) < 0) {
        cli_error("merge: %s", e.msg);
        goto out;
    }
    int carma_rc = 0;
    struct collect_join_result jr = {0};
    if (!no_carma) {
        carma_rc = collect_join_run(dir, "carma_merged", o.warn, o.cls, &jr, &e);
        if (carma_rc < 0)
            cli_error("merge: %s", e.msg);
    }
    if (!quiet && srt) {
        json_t *rc = json_object_get(r.manifest, "reason_codes");
        char codes[1024] = "";
        size_t i, len = 0;
        json_t *x;
        json_array_foreach(rc, i, x) len +=
            (size_t)snprintf(codes + len, len < sizeof codes ? sizeof codes - len : 0, "%s%s",
                             i ? ", " : "", json_string_value(x));
        fprintf(stderr,
                "carma: merge: %zu rows from %zu node file%s (%zu skipped as malformed, %zu "
                "rows skipped) into %s/samples.csv; status %s%s%s%s\n",
                r.rows, r.files_read, r.files_read == 1 ? "" : "s", r.files_skipped, r.rows_skipped,
                dir, json_string_value(json_object_get(r.manifest, "status")), codes[0] ? " (" : "",
                codes, codes[0] ? ")" : "");
        if (!r.publication_valid)
            cli_error("merge: %s: not publication-valid%s", dir,
                      o.required ? " (--required: exit 1)" : "");
    }
    if (!quiet) {
        if (!srt)
            fprintf(stderr,
                    "carma: merge: %s has no nodes/, ready/ or manifest.json: no host "
                    "collector files to merge\n",
                    dir);
        if (carma_rc > 0) {
            char marks[48] = "";
            if (jr.marks)
                snprintf(marks, sizeof marks, ", %zu mark row%s", jr.marks,
                         jr.marks == 1 ? "" : "s");
            fprintf(stderr, "carma: merge: %zu carma recording%s (%zu rows%s) joined into %s\n",
                    jr.inputs, jr.inputs == 1 ? "" : "s", jr.rows, marks, jr.out_dir);
        }
    }
    ret = (o.required && !r.publication_valid) || carma_rc < 0 ? 1 : 0;
    json_decref(r.manifest);
out:
    hostmerge_names_free(&expected);
    return ret;
}

/* ---- carma wait-ready ---- */

static void wait_help(void)
{
    printf("usage: carma wait-ready DIR (--nodes N1,N2,... | --slurm) [OPTIONS]\n\n"
           "srt-slurm's start-up gate of its in-job host collector: waits until every node\n"
           "has DIR/ready/<host>.ready.json (exit 0, DIR/manifest.json status running), or\n"
           "one has DIR/ready/<host>.error.json or the timeout passes (status failed, reason\n"
           "cpu_power_source_unavailable or cpu_power_startup_timeout; exit 1 with\n"
           "--required, else a warning and exit 0). carma merge goes on from that status.\n\n"
           "options:\n"
           "  --nodes L           the nodes, comma-separated\n"
           "  --slurm             the current Slurm job's nodes (SLURM_JOB_NODELIST)\n"
           "  --timeout T         how long to wait (default 30s)\n"
           "  --required          fail closed: exit 1 when a node is not ready\n"
           "  --job-id ID         the manifest's job_id (default: SLURM_JOB_ID)\n"
           "  --run-name NAME     the manifest's run_name\n"
           "  -q, --quiet         no warnings\n");
}

int cmd_wait_ready(int argc, char **argv)
{
    enum {
        OPT_NODES = 256,
        OPT_SLURM,
        OPT_TIMEOUT,
        OPT_REQUIRED,
        OPT_JOB_ID,
        OPT_RUN_NAME,
    };
    static const struct option longopts[] = {
        {"nodes", required_argument, NULL, OPT_NODES},
        {"slurm", no_argument, NULL, OPT_SLURM},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"required", no_argument, NULL, OPT_REQUIRED},
        {"job-id", required_argument, NULL, OPT_JOB_ID},
        {"run-name", required_argument, NULL, OPT_RUN_NAME},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct hostmerge_names nodes = {0};
    struct hostmerge_opts o = {.producer = "carma " CARMA_VERSION};
    int64_t timeout_ns = DEFAULT_READY_TIMEOUT_NS;
    bool slurm = false, given = false, quiet = false;
    enum hostmerge_ready *st = NULL;
    int ret = 2, c;
    struct carma_err e = {0};
    optind = 1;
    while ((c = cli_getopt(argc, argv, "qh", longopts, "wait-ready")) != -1) {
        switch (c) {
        case OPT_NODES:
            given = true;
            if (hostmerge_names_parse(&nodes, optarg, &e) < 0) {
                cli_error("wait-ready: --nodes: %s", e.msg);
                goto out;
            }
            break;
        case OPT_SLURM:
            slurm = true;
            break;
        case OPT_TIMEOUT:
            if (cli_duration("wait-ready: --timeout", optarg, 0, 24 * 3600 * NS_PER_S,
                             &timeout_ns) < 0)
                goto out;
            break;
        case OPT_REQUIRED:
            o.required = true;
            break;
        case OPT_JOB_ID:
            o.job_id = optarg;
            break;
        case OPT_RUN_NAME:
            o.run_name = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            wait_help();
            ret = 0;
            goto out;
        default:
            goto out;
        }
    }
    if (optind + 1 != argc) {
        cli_error(optind == argc ? "wait-ready: no directory: carma wait-ready DIR --nodes L"
                                 : "wait-ready: one directory only");
        goto out;
    }
    if (slurm == given) {
        cli_error(slurm ? "wait-ready: --slurm and --nodes both name the nodes: give one"
                        : "wait-ready: no nodes: give --nodes N1,N2,... or --slurm");
        goto out;
    }
    if (slurm && slurm_nodes("wait-ready", &nodes) < 0)
        goto out;
    const char *dir = argv[optind];
    ret = 1;
    st = calloc(nodes.n ? nodes.n : 1, sizeof *st);
    if (!st) {
        cli_error("wait-ready: out of memory");
        goto out;
    }
    if (hostmerge_ready_poll(dir, &nodes, st, &e) < 0 ||
        hostmerge_gate_write(dir, &o, &nodes, st, false, &e) < 0) {
        cli_error("wait-ready: %s", e.msg);
        goto out;
    }
    int64_t start = time_mono_ns();
    for (;;) {
        if (hostmerge_ready_poll(dir, &nodes, st, &e) < 0) {
            cli_error("wait-ready: %s", e.msg);
            goto out;
        }
        bool all = true, err = false;
        for (size_t i = 0; i < nodes.n; i++) {
            all &= st[i] == HOSTMERGE_READY;
            err |= st[i] == HOSTMERGE_ERROR;
        }
        if (all || err || time_mono_ns() - start >= timeout_ns)
            break;
        struct timespec ts = {0, READY_POLL_NS};
        nanosleep(&ts, NULL);
    }
    if (hostmerge_gate_write(dir, &o, &nodes, st, true, &e) < 0) {
        cli_error("wait-ready: %s", e.msg);
        goto out;
    }
    size_t nready = 0;
    char list[1024] = "";
    size_t len = 0;
    bool err = false;
    for (size_t i = 0; i < nodes.n; i++) {
        if (st[i] == HOSTMERGE_READY) {
            nready++;
            continue;
        }
        err |= st[i] == HOSTMERGE_ERROR;
        len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0, "%s%s%s",
                                len ? ", " : "", nodes.v[i],
                                st[i] == HOSTMERGE_ERROR ? " (error.json)" : "");
    }
    if (nready == nodes.n) {
        ret = 0;
        goto out;
    }
    if (!quiet || o.required)
        cli_error("wait-ready: %s: %zu of %zu nodes not ready%s: %s; status failed (%s)%s", dir,
                  nodes.n - nready, nodes.n, err ? "" : " in time", list,
                  err ? "cpu_power_source_unavailable" : "cpu_power_startup_timeout",
                  o.required ? " (--required: exit 1)" : "");
    ret = o.required ? 1 : 0;
out:
    free(st);
    hostmerge_names_free(&nodes);
    return ret;
}
