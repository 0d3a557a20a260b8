/*
 * ledger: the accounts of one experiment's attribution, what every split (split.h) of a
 * channel's energy is posted to.
 *
 * Per job: its energy (the node's channels only), by kind, its operational carbon (joules ×
 * g/J at the split), the energy since the caller last read it (event_j, for the event
 * summaries) and its share of each GPU split by process. For the experiment: the idle, other
 * and unattributed joules and grams of the node's channels and the node's total; per GPU: its
 * energy and how it was split. And the attribution.csv rows of the current split
 * (timestamp_unix,channel,job,joules; a row per non-zero part), kept until ledger_flush hands
 * them to the caller's sink in one piece: the caller owns the file and says its errors.
 */
#ifndef CARMA_ANALYSIS_LEDGER_H
#define CARMA_ANALYSIS_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/gpu_split.h"
#include "analysis/split.h"
#include "core/channel_kind.h"
#include "core/csv.h"

/* The GPUs with an account of their own, at most this many (a report's, import/nsys.h). */
#define LEDGER_GPUS_MAX 64

struct ledger_job {
    double energy_j;                 /* of the node's channels */
    double by_kind_j[CHANNEL_KINDS]; /* the same by the channels' kinds */
    double g_op;                     /* operational carbon: Σ joules × g/J */
    double event_j;                  /* since the caller last set it to 0 */
    double gpu_j[LEDGER_GPUS_MAX];   /* of each GPU account, node channel or not */
};

struct ledger_gpu {
    double jobs_j, idle_j, other_j, unattr_j, total_j;
    double basis_s[GPU_BASIS_N]; /* the seconds split on each basis (gpu_split.h) */
};

/* Receives the rows of a split (whole rows, nrows of them); returns 0 or a negative errno. */
typedef int (*ledger_sink)(void *ctx, const char *rows, size_t len, uint64_t nrows);

struct ledger {
    size_t njobs;
    const char *job_name[SPLIT_JOBS_MAX]; /* the caller's strings: the job column */
    struct ledger_job job[SPLIT_JOBS_MAX];
    struct ledger_gpu gpu[LEDGER_GPUS_MAX];
    /* the node's channels */
    double idle_j, other_j, unattr_j, total_j;
    double idle_g, other_g, unattr_g;
    /* attribution.csv: the rows not yet flushed (kept only with a sink) */
    struct csv_buf csv;
    uint64_t rows;
    ledger_sink sink;
    void *sink_ctx;
};

/* When a split is posted: its timestamp_unix as written (fmt_unix_us) and the grid's grams of
 * CO2e per joule then (intensity × PUE). */
struct ledger_time {
    const char *ts;
    double g_per_j;
};

/* One channel's split, as posted. */
struct ledger_post {
    const char *channel;    /* its name: the channel column */
    enum channel_kind kind; /* for by_kind_j */
    bool node;              /* a node channel: counts in the jobs' energy and the totals */
    int gpu;                /* the GPU account it also goes to, -1 for none */
    size_t njobs;           /* the jobs the split covers: o->job_j[0..njobs-1] */
    double de_j;            /* the energy split (the node's or the GPU's total) */
};

/*
 * Starts empty accounts for njobs jobs (at most SPLIT_JOBS_MAX) named names[k] (kept, not
 * copied). With a sink (NULL: none), the rows of each split are kept for ledger_flush.
 */
void ledger_init(struct ledger *l, size_t njobs, const char *const *names, ledger_sink sink,
                 void *ctx);

/* Frees the rows kept (the accounts stay readable). */
void ledger_done(struct ledger *l);

/*
 * Posts the split o of p's channel at time at: its rows (with a sink), the jobs' energy, grams
 * and GPU shares, the idle, other and unattributed parts. Returns 0, or -ENOMEM when a row
 * could not be kept (the accounts are posted all the same).
 */
int ledger_post(struct ledger *l, const struct ledger_post *p, const struct split_out *o,
                const struct ledger_time *at);

/* Adds one row as given (joules already formatted) to the rows kept; 0 or -ENOMEM. */
int ledger_row(struct ledger *l, const char *ts, const char *channel, const char *job,
               const char *joules);

/* Adds s seconds split on basis b to GPU account gpu. */
void ledger_basis(struct ledger *l, size_t gpu, enum gpu_basis b, double s);

/*
 * Hands the rows kept to the sink in one call (nothing when there are none) and forgets them.
 * Returns the sink's result, 0 when it was not called.
 */
int ledger_flush(struct ledger *l);

#endif
