/*
 * srt/hostmerge: the head-node side of srt-slurm's in-job host collector (telemetry.cpu_power,
 * srt-slurm PR #410, its cpu_power_session.py): the start-up gate (`carma wait-ready`) and the
 * aggregation at teardown (`carma merge`) of the per-node files that one collector per worker
 * node writes under DIR:
 *
 *   DIR/nodes/<host>.csv            the node's samples (srt-slurm's host header v3, or v4)
 *   DIR/nodes/<host>.metadata.json  reader metadata, counts and, at exit, status
 *   DIR/ready/<host>.ready.json     written once the header is written
 *   DIR/ready/<host>.error.json     written when no power source could be opened
 *
 * The merge reads every nodes/<host>.csv in name order; a file whose header is not the current one
 * (v3 by default, v4 with schema 4: a file of the other version is skipped, as srt-slurm
 * compares each file against its collector's own header) is skipped as malformed, a row whose
 * width is not the header's, or whose timestamp_unix is not a finite number, is skipped
 * (counted; a warning names FILE:LINE); the rest is sorted by (timestamp_unix as a number,
 * hostname, sensor; ties in file order) into DIR/samples.csv (the header, then the rows as
 * Python's csv.writer writes them: minimal quoting, CRLF), written atomically (temp + rename).
 *
 * DIR/manifest.json (schema_version 1, Python's json.dumps(indent=2, sort_keys=True), atomic)
 * carries srt-slurm's status flow: starting -> running (every expected node ready) | failed
 * (cpu_power_source_unavailable when a node left error.json, else cpu_power_startup_timeout)
 * -> complete (no reason code) | incomplete. Final reason codes, in this order after the
 * start-up one: interrupted (asked for, or a node's metadata has no ended_at_unix: its collector
 * never finished), cpu_samples_malformed (a file or a row skipped), cpu_node_samples_missing (an
 * expected node without a row), cpu_samples_empty (no row at all), cpu_collector_failed (a
 * node's metadata says status "failed", or the node left error.json: its collector exited
 * early; those nodes are failed_processes). publication_valid = no reason code.
 */
#ifndef CARMA_SRT_HOSTMERGE_H
#define CARMA_SRT_HOSTMERGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

/* A sorted set of node names. An all-zero struct is empty. */
struct hostmerge_names {
    char **v;
    size_t n, cap;
};

/* Adds s (copied) unless it is there already. 0 or -ENOMEM. */
int hostmerge_names_add(struct hostmerge_names *s, const char *s_new);

/* Whether s holds name. */
bool hostmerge_names_has(const struct hostmerge_names *s, const char *name);

/* Adds every name of a comma-separated list ("n1,n2"). -EINVAL (an empty name, or a name with
 * '/' or that starts with '.') with e set naming it, or -ENOMEM. */
int hostmerge_names_parse(struct hostmerge_names *s, const char *list, struct carma_err *e);

void hostmerge_names_free(struct hostmerge_names *s);

/* The header columns of srt-slurm's host collector samples, schema 3 or 4 (NULL otherwise),
 * NULL-terminated. */
const char *const *hostmerge_header(int schema);

struct hostmerge_opts {
    const struct hostmerge_names *expected; /* NULL or empty: the manifest's, else every node
                                               that left a file */
    bool required;
    bool interrupted;     /* the job was cut short: reason code interrupted */
    int schema;           /* 3 (default when 0) or 4 */
    const char *job_id;   /* NULL: the manifest's, else $SLURM_JOB_ID, else null */
    const char *run_name; /* NULL: the manifest's, else null */
    const char *producer; /* e.g. "carma 0.1.0" */
    double now;           /* updated_at_unix; 0: the time now */
    void (*warn)(void *cls, const char *msg);
    void *cls;
};

/* What a node's ready markers say. */
enum hostmerge_ready {
    HOSTMERGE_WAITING,
    HOSTMERGE_READY,
    HOSTMERGE_ERROR, /* error.json (wins over ready.json) */
};

/* The state of each node of nodes into st[i]. 0, or a negative errno with e set (a marker that
 * is there but cannot be read). */
int hostmerge_ready_poll(const char *dir, const struct hostmerge_names *nodes,
                         enum hostmerge_ready *st, struct carma_err *e);

/*
 * Writes DIR/manifest.json of the start-up gate: status "starting" (done false) or, done, "running"
 * when every node of nodes is ready, else "failed" with cpu_power_source_unavailable (a node
 * has error.json) or cpu_power_startup_timeout. st: hostmerge_ready_poll's. Returns 0 or a
 * negative errno with e set.
 */
int hostmerge_gate_write(const char *dir, const struct hostmerge_opts *o,
                         const struct hostmerge_names *nodes, const enum hostmerge_ready *st,
                         bool done, struct carma_err *e);

struct hostmerge_result {
    size_t rows;          /* rows in samples.csv */
    size_t files_read;    /* node CSVs accepted */
    size_t files_skipped; /* their header is not the current one */
    size_t rows_skipped;  /* wrong width or timestamp */
    bool publication_valid;
    json_t *manifest; /* what was written (the caller's reference; json_decref) */
};

/* The merge (see above): DIR/samples.csv and DIR/manifest.json. Returns 0 (whatever the
 * verdict: r->publication_valid), or a negative errno with e set when DIR cannot be read or
 * an output cannot be written. */
int hostmerge_run(const char *dir, const struct hostmerge_opts *o, struct hostmerge_result *r,
                  struct carma_err *e);

#endif
