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
#include "analysis/split.h"
#include "cli/interrupt.h"
#include "core/csv.h"
#include "core/journal.h"
#include "sampler/samples_csv.h"
#include "sampler/sampler.h"
#include "sources/nvml.h"
#include "workload/cgroup.h"
#include "workload/experiment.h"
#include "workload/jobs.h"
#include "workload/perfcount.h"
#include "workload/pidowner.h"
#include "workload/proctree.h"

/* The GPUs whose energy is split by process, at most this many. */
#define RUN_GPUS_MAX 16

struct run_gpu;

/* The journals a run writes, at most (samples.csv apart). */
#define RUN_JOURNALS_MAX 8
/* The room kept for the final files (run.c): at most MAX, at least MIN (when the file system
 * has that much). */
#define RUN_RESERVE_MAX ((size_t)1 << 20)
#define RUN_RESERVE_MIN ((size_t)16 << 10)

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
    double energy_j, by_kind_j[6], g_op, event_j;
    double last_w;              /* power over the last event period */
    double gpu_j[RUN_GPUS_MAX]; /* energy of each split GPU given to the job */
};

struct run {
    struct experiment x;
    struct sampler *s;
    struct job *jobs;
    size_t njobs;
    char dir[4096];
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
    double pend_j[CHANNELS_MAX]; /* energy not yet split (ticks without fresh CPU times) */
    int64_t pend_ns;
    int node_idx[CHANNELS_MAX];
    size_t nnode;
    bool in_node[CHANNELS_MAX];
    /* With a wall meter as the node: the measured channels it contains, and their attributed
     * energy since the meter was last split (its split follows these shares). */
    bool meter_node;
    bool in_metered[CHANNELS_MAX];
    double mw_job[SPLIT_JOBS_MAX], mw_idle, mw_other, mw_unattr;
    bool meter_has_gpu; /* a GPU is inside the meter: its split waits for the GPUs' */
    bool mw_gpu_seen;   /* a GPU inside the meter was split since the meter last was */
    double idle_j, other_j, unattr_j, idle_g, other_g, unattr_g;
    double total_j;
    struct carbon_intensity ci;
    int64_t t_start, last_event, last_pstree;
    struct interruption stop; /* the signal that stopped the run, if one did */
    bool tty;
    bool live;                        /* the live view on stdout (a terminal): report/live */
    int live_lines;                   /* the last frame's length */
    long clk_tck;                     /* proc/stat's clock ticks per second */
    bool pstree_due;                  /* a workload started: snapshot the trees at the next tick */
    struct csv_buf attr_buf;          /* the rows of the current split */
    double sum_dyn_j[CHANNELS_MAX];   /* per channel: energy above the baseline so far */
    double sum_above, sum_above_next; /* busy CPU-seconds above the baseline's so far */
    bool gpu_split[CHANNELS_MAX];     /* the channel's energy is split by run_gpu.c */
    struct run_gpu *gpu;              /* NULL when no GPU is split by process */
    struct journal *node_util;        /* node_util.csv: the node's CPU time at every tick */
    uint64_t nu_busy0, nu_total0;     /* node_util.csv: proc/stat ticks at its first row */
    bool nu_started;
    /* what the reports must say (cli/caveats.h): the baseline's figures, the warnings */
    double baseline_s, baseline_busy_cpus;      /* NAN busy when proc/stat was not read */
    double bg_other_j;                          /* static power given to "other" for its load */
    json_t *warnings;                           /* strings, for report.json and report.txt */
    uint64_t attr_rows;                         /* rows in attr_buf */
    struct journal *journals[RUN_JOURNALS_MAX]; /* the journals opened (their losses) */
    size_t njournals;
    int reserve_fd;       /* the room kept for the final files (run.c), -1 when none */
    char incomplete[512]; /* the outputs that could not be written whole, ", "-separated */
};

/* attribution.csv: one row of the current split (kept for one write per split). */
void run_attr_row(struct run *r, size_t ch, const char *job, double joules);
void run_attr_flush(struct run *r);
/* Grams of CO2e per joule at the current tick (intensity × PUE). */
double run_g_per_j(const struct run *r);
/* Creates the journal DIR/name with header (may be NULL; unit: what its rows are called, see
 * journal_open) and keeps it for the count of losses at the end; NULL after printing an error
 * (the file is then counted as incomplete). */
struct journal *run_open_journal(struct run *r, const char *name, const char *header,
                                 const char *unit);
/* Appends rows to j (NULL: nothing) with journal_append(), saying the first failure of each
 * condition on stderr. Returns journal_append's result. */
int run_journal_append(struct run *r, struct journal *j, const void *p, size_t n, uint64_t rows);
/* Notes that the output name (a file of the run directory) is incomplete: the run ends with
 * exit status 1, naming it. */
void run_output_failed(struct run *r, const char *name);

/*
 * The GPU side of a run (run_gpu.c): the channels of NVML's GPUs are split among the workloads
 * by their processes' utilization of each device (at most every RUN_GPU_PERIOD_NS), and
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
 * when final). */
void run_gpu_tick(struct run *r, bool final);
/* report.json: "gpus" at the top level, "gpu_j" in each workload (ws: the workloads array). */
void run_gpu_report(struct run *r, json_t *rep, json_t *ws);
/* report.txt: the GPU lines. */
void run_gpu_text(struct run *r, FILE *f);
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

/*
 * A split of a channel that the wall meter contains (r->in_metered): its shares are added to
 * the weights of the meter's next split. No-op without a meter as the node.
 */
void run_metered_add(struct run *r, size_t ch, const struct split_out *o);

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
