/*
 * report: a `carma run` directory's report.json and report.txt (docs/formats.md), made from
 * plain figures: the run's settings, each workload's outcome and accounts (analysis/ledger.h),
 * the GPUs split by process, the node's channels and the carbon figures. The caller gathers
 * them (cli/run.c, cli/run_gpu.c); what is said in the command's words (the warnings, the
 * interruption, the workloads' outcomes, the rest of the system and the meters) comes in
 * ready made. Embodied carbon per workload is analysis/carbon.h's carbon_embodied_job.
 */
#ifndef CARMA_RUNDIR_REPORT_H
#define CARMA_RUNDIR_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/carbon.h"
#include "analysis/ledger.h"
#include "analysis/split.h"
#include "analysis/splitter.h"
#include "core/channel_kind.h"
#include "workload/perfcount.h"

/* The GPUs a workload names, and the GPUs split by process, at most this many. */
#define RUNDIR_REPORT_GPUS_MAX SPLITTER_GPUS_MAX
/* A GPU's power gauges other than its counter (report.json's gauge_drift_pct), at most. */
#define RUNDIR_REPORT_GAUGES_MAX 8

/* One workload: its outcome, its use of the node, its performance counters. */
struct rundir_report_job {
    const char *name;
    const char *type; /* the experiment's "type", NULL for none */
    int exit_status;
    bool timed_out;
    double duration_s; /* from its start to its end */
    double cpu_s;      /* its processes' CPU time */
    size_t n_cpus;     /* its allocation's CPUs, 0 for none */
    bool wants_gpu;    /* it asks for a GPU (a GPU column even when none is measured) */
    int gpus[RUNDIR_REPORT_GPUS_MAX]; /* the GPUs it names (experiment_spec_gpus) */
    size_t ngpus;
    uint64_t perf[PERFC_N];          /* perf_counters_read's values */
    unsigned perf_mask;              /* and which are valid (1 << PERFC_*) */
    const char *perf_error[PERFC_N]; /* why one is not (perf_counter_error_text) */
};

/* One of the node's channels (what the node total covers). */
struct rundir_report_node {
    const char *name;
    enum channel_kind kind;
    double static_w; /* its static power (baseline or model), NAN when unknown */
};

/* A GPU's power gauge against its energy counter: the average powers' difference (%). */
struct rundir_report_gauge {
    const char *zone;
    double drift_pct; /* NAN when unknown */
};

/* One GPU split by process (cli/run_gpu.c): GPU d is the ledger's GPU account d. */
struct rundir_report_gpu {
    const char *channel; /* its channel's name */
    const char *source;  /* its channel's source ("nvml", "dcgm"); NULL: "nvml" */
    unsigned index;      /* NVML's index or DCGM's GPU id */
    const char *uuid;    /* "" when unknown */
    const char *label;   /* the channel's label: "<name> <uuid>" */
    bool counter;        /* its channel is an energy counter (else a power gauge) */
    double covered_s;    /* the run's seconds its readings cover */
    uint64_t invalid;    /* readings missing */
    double drift_pct;    /* its power gauge against its counter, NAN when unknown */
    struct rundir_report_gauge gauge[RUNDIR_REPORT_GAUGES_MAX]; /* its component gauges */
    size_t ngauge;
    double static_w;           /* its static power, NAN when unknown */
    bool owns[SPLIT_JOBS_MAX]; /* the workloads it belongs to */
    bool nsys_split;           /* split again by Nsight kernels: report.txt says "kernels" */
};

/* Everything report.json and report.txt say. The pointers are the caller's (JSON values are
 * referenced by report.json, not copied); NULL strings where the comments allow it. */
struct rundir_report_in {
    const char *experiment;
    const char *run_dir;
    double duration_s;             /* the measurement window */
    double end_unix;               /* the last tick */
    const char *status;            /* "complete", "interrupted" */
    json_t *interruption;          /* its object, or null (NULL: null) */
    const char *interruption_text; /* "SIGINT (signal 2) at ...", NULL when not interrupted */
    /* the attribution's settings */
    const char *idle_policy;
    const char *method;          /* "measured", "estimated", "measured+estimated", "none" */
    const char *static_source;   /* "baseline", "model", NULL for none */
    const char *cpu_time_source; /* "cgroup", "proc" */
    double baseline_s;           /* 0: no baseline */
    double baseline_busy_cpus;   /* NAN when proc/stat was not read */
    double baseline_other_j;     /* the background's energy during the baseline */
    bool have_cpus;              /* proc/stat was read: ncpu and nsockets are the node's */
    int ncpu, nsockets;
    /* the embodied facts' overrides (the experiment's carbon.embodied) */
    const struct carbon_embodied_override *embodied;
    size_t n_embodied;
    bool gpu_measured; /* a channel of kind gpu is measured on the node */
    /* the workloads, and their accounts and the node's (job k is the ledger's job k) */
    const struct rundir_report_job *job;
    size_t njobs;
    const struct ledger *ledger;
    /* the GPUs split by process; have_gpu_lists: their process lists were read */
    const struct rundir_report_gpu *gpu;
    size_t ngpus;
    bool have_gpu_lists;
    uint64_t gpu_list_reads;
    double gpu_list_mean_ms; /* NAN when none was read */
    double gpu_list_period_ms;
    const struct rundir_report_node *node;
    size_t nnode;
    json_t *rest_of_system; /* NULL without a wall meter; then meters is not used */
    json_t *meters;
    /* carbon */
    double g_per_kwh;
    const char *intensity_source;
    double pue;
    json_t *warnings; /* strings */
    /* report.txt's lines in the command's words, NULL for none: the rest of the system and
     * the meters (with rest_of_system), the workloads that did not end well */
    const char *system_text;
    const char *outcome_text;
};

/* report.json (a new object). */
json_t *rundir_report_json(const struct rundir_report_in *in);

/*
 * report.txt to f: the run's line, the warnings, the workloads' table from rep (report.json,
 * as made by rundir_report_json or split again since), the node's parts from in->ledger, the
 * GPUs' split, the carbon figures' sources.
 */
void rundir_report_text(const struct rundir_report_in *in, const json_t *rep, FILE *f);

#endif
