/*
 * run: the state of one `carma run`, shared by the orchestrator (run.c) and its GPU
 * accounting (run_gpu.c).
 */
#ifndef CARMA_CLI_RUN_H
#define CARMA_CLI_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "analysis/carbon.h"
#include "analysis/gpu_split.h"
#include "analysis/ledger.h"
#include "analysis/split.h"
#include "analysis/splitter.h"
#include "cli/common.h"
#include "cli/interrupt.h"
#include "core/csv.h"
#include "core/journal.h"
#include "rundir/report.h"
#include "rundir/writer.h"
#include "sampler/samples_csv.h"
#include "sampler/sampler.h"
#include "sources/nvml.h"
#include "workload/cgroup.h"
#include "workload/experiment.h"
#include "workload/jobs.h"
#include "workload/perfcount.h"
#include "workload/pidowner.h"
#include "workload/proctree.h"

/* The GPUs whose energy is split by process, at most this many (analysis/splitter.h). */
#define RUN_GPUS_MAX SPLITTER_GPUS_MAX

struct run_gpu;

#define EVENT_PERIOD_NS  NS_PER_S
#define PSTREE_PERIOD_NS (10 * NS_PER_S)

struct job {
    const struct workload_spec *spec;
    struct job_proc proc; /* its processes (workload/jobs) */
    struct proctree tree;
    bool have_tree;
    uint64_t cpu_ns, cpu_prev_ns; /* CPU time of the job's processes, cumulative */
    bool cpu_final;               /* its CPU time was read after it ended */
    struct perf_counters perf;
    double last_w; /* power over the last event period */
};

struct run {
    struct experiment x;
    struct sampler *s;
    struct markd *marks; /* the marks socket (serve/markd.h), or NULL */
    bool socket_group;   /* --socket-group: the socket is group gid's too */
    gid_t gid;
    struct job *jobs;
    size_t njobs;
    struct rundir_writer out; /* the run directory (rundir/writer) */
    const char *dir;          /* out.dir */
    struct samples_csv *csv;
    struct journal *attr, *events, *pstree, *features; /* core/journal: whole rows only */
    struct jobs ctl; /* the workloads' processes, carma's signals (workload/jobs) */
    struct cgroup_dir base;
    bool have_base;
    char cgroup_note[CARMA_ERR_MSG_MAX];
    enum split_policy policy;
    double static_w[CHANNELS_MAX]; /* per channel, from the baseline or the model */
    double static_busy;            /* CPUs busy on average during the baseline */
    const char *static_source;
    int node_idx[CHANNELS_MAX];
    size_t nnode;
    struct splitter split; /* the attribution (analysis/splitter.h) */
    struct ledger ledger;  /* and its accounts: per job, idle, other, the node, the GPUs */
    struct carbon_intensity ci;
    int64_t t_start, last_event, last_pstree;
    struct interruption stop; /* the signal that stopped the run, if one did */
    bool tty;
    bool live;                    /* the live view on stdout (a terminal): report/live */
    int live_lines;               /* the last frame's length */
    long clk_tck;                 /* proc/stat's clock ticks per second */
    bool pstree_due;              /* a workload started: snapshot the trees at the next tick */
    struct run_gpu *gpu;          /* NULL when no GPU is split by process */
    struct journal *node_util;    /* node_util.csv: the node's CPU time at every tick */
    uint64_t nu_busy0, nu_total0; /* node_util.csv: proc/stat ticks at its first row */
    bool nu_started;
    struct common_dcgm_cpus dcgm; /* DCGM's CPU sockets: cpu_util.csv when there are any */
    struct journal *cpu_util;     /* cpu_util.csv: their utilization at every node_util row */
    /* what the reports must say (cli/caveats.h): the baseline's figures, the warnings */
    double baseline_s, baseline_busy_cpus; /* NAN busy when proc/stat was not read */
    json_t *warnings;                      /* strings, for report.json and report.txt */
};

/*
 * The GPU side of a run (run_gpu.c): the channels of NVML's and DCGM's GPUs are split among
 * the workloads by their processes' utilization of each device (at most every
 * RUN_GPU_PERIOD_NS; DCGM's by the workloads that own them, DCGM listing no process), and
 * written to utilization.csv and, in srt-slurm's format, to power/.
 */
#define RUN_GPU_PERIOD_NS      20000000LL   /* process lists are read at most this often */
#define RUN_GPU_PERIOD_MAX_NS  1000000000LL /* and at least this often */
#define RUN_GPU_COST_SHARE     20.0         /* reading them takes at most 1/20 of the time */
#define RUN_GPU_UTIL_PERIOD_NS 100000000LL  /* utilization.csv and power/ rows */
/* Finds the GPUs and which workloads own them, opens the files. Returns 0 (also when there
 * is no GPU) or -1 after printing an error. Call once the run directory exists. */
int run_gpu_setup(struct run *r);
/* Adds this tick's energy of the GPU channels and splits what is pending when due (always
 * when final), posting the splits to r->ledger at time at. */
void run_gpu_tick(struct run *r, bool final, const struct ledger_time *at);
/* The GPUs' figures for report.json and report.txt (rundir/report): into out (RUN_GPUS_MAX),
 * in->gpu pointing to it, and in's process lists' figures. */
void run_gpu_report(struct run *r, struct rundir_report_in *in, struct rundir_report_gpu *out);
/* Closes the files (status for power/manifest.json) and frees the GPU state (NULL-safe). */
void run_gpu_done(struct run *r, const char *status);

/*
 * Workloads profiled with Nsight Systems ("profile": "nsys", run_gpu.c). run_nsys_check: 0, or
 * -1 after printing why when a workload is to be profiled and `nsys` is not in PATH.
 * run_nsys_argv: the command line of job j wrapped in `nsys profile` (malloc'd, NULL-ended,
 * its strings the spec's and static ones: free only the array), NULL when j is not profiled.
 * run_nsys_finish: after the run, imports the profiles (logs/<name>.sqlite) into nsys_gpu.csv
 * and, with attribution.gpu "nsys", splits the GPUs again: *rep is then replaced by the new
 * report.json and the run's totals follow it (call after workloads.json is written).
 */
int run_nsys_check(const struct experiment *x);
char **run_nsys_argv(struct run *r, const struct job *j);
void run_nsys_finish(struct run *r, json_t **rep, bool quiet);

/* Lines of logs/<name>.err shown under a workload that did not end well. */
#define RUN_OUTCOME_TAIL_LINES 10

/*
 * run_outcome_sentence: into buf, what became of job j when it did not end well, in words
 * ("worker-2 failed: exit status 3 after 1.2 s", "w timed out after 10 s (timeout_s), stopped
 * by SIGTERM"); returns its length, 0 (buf untouched) for a workload that exited with 0.
 */
size_t run_outcome_sentence(const struct run *r, const struct job *j, char *buf, size_t cap);

/*
 * run_outcome_text: for each workload that did not end well, its sentence and the last
 * RUN_OUTCOME_TAIL_LINES lines of logs/<name>.err (or that it is empty), after a blank line;
 * nothing when every workload exited with 0.
 */
void run_outcome_text(const struct run *r, FILE *f);

#endif
