/*
 * collectreport: `carma report DIR` of a `carma collect -o DIR` directory: energy, average
 * power and power statistics per window, per channel, per node (its total only, nothing counted
 * twice), per device kind and for the job; perf/W and J/token for windows with tokens; carbon
 * per node; coverage and the nodes that were down (docs/report.md, "carma collect
 * directories").
 *
 * samples.csv and nodes.csv are read once, line by line (rundir/rundir.c's reader: its row
 * rules and "PATH:LINE: what" errors); each (node, target) keeps one time array and each
 * channel one array of watts (and one of joules where the exporter published its counter), so
 * that a row costs about 8 bytes, plus 8 for a counter, plus 8 / channels for the time.
 *
 * The code: collectreport.c and the collectreport_*.c files beside it (collectreport.c's
 * comment says which piece is where).
 */
#ifndef CARMA_REPORT_COLLECTREPORT_H
#define CARMA_REPORT_COLLECTREPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/series.h"
#include "core/err.h"

#define COLLECTREPORT_NAME_MAX 128

/* A window the user names: [start, end] in Unix seconds, tokens/requests NAN when not given. */
struct collectreport_window {
    char name[COLLECTREPORT_NAME_MAX];
    double start, end;
    double tokens, requests;
};

/* --region NODE=CODE (node NULL: the default region, --region CODE). */
struct collectreport_region {
    const char *node;
    const char *code;
};

struct collectreport_opts {
    enum series_edges edges;
    const struct collectreport_window *windows; /* --window, in order */
    size_t nwindows;
    const char *windows_file; /* --windows FILE, NULL: none */
    const struct collectreport_region *regions;
    size_t nregions;
    double pue;       /* <= 0: 1.0 */
    double max_gap_s; /* <= 0: the default, max(3 s, 3 x the collect interval) */
    bool no_srt;      /* do not look for an srt-slurm log directory */
};

/*
 * Parses `NAME=START,END` (START, END: Unix seconds or ISO 8601 with a UTC offset, END after
 * START) into *ret. Returns 0 or -EINVAL with e saying what is wrong with spec.
 */
int collectreport_window_parse(const char *spec, struct collectreport_window *ret,
                               struct carma_err *e);

/*
 * Parses `NODE=CODE` or `CODE` (--region) into *ret, pointing into spec (which must outlive
 * it). Returns 0 or -EINVAL with e set (an empty node or code).
 */
int collectreport_region_parse(char *spec, struct collectreport_region *ret, struct carma_err *e);

/*
 * Reads a windows file: CSV with a header naming name, start, end (and optionally tokens,
 * requests), or a JSON list of {"name", "start", "end", "tokens"?, "requests"?}. Appends the
 * windows to *v (n of them, cap room; realloc'ed). Returns the number read, or a negative
 * errno with e saying "FILE:LINE: field: what".
 */
int collectreport_windows_load(const char *path, struct collectreport_window **v, size_t *n,
                               size_t *cap, struct carma_err *e);

/*
 * Builds the report of the collect directory dir: *ret = {"kind": "collect", "windows": [...],
 * "coverage": [...], "warnings": [...], ...} (docs/report.md). o NULL: the defaults. Returns 0,
 * or a negative errno with e naming the file and line (nothing in *ret): -ENOENT (samples.csv
 * or manifest.json absent), -EINVAL (a malformed row, header or schema version; a bad windows
 * file; a window that is not after its start; an unknown region), -ENOMEM. A torn last line
 * is skipped with a warning. The caller owns *ret.
 */
int collectreport_build(const char *dir, const struct collectreport_opts *o, json_t **ret,
                        struct carma_err *e);

/* A node's power over the whole collect run, for pictures (report/html). */
struct collectreport_node_tl {
    const char *node; /* borrowed from the timeline */
    size_t n;
    double *t, *w; /* w NAN where the line breaks (a gap over the limit, a part not covering) */
};

/* A collect directory's report and its nodes' power over time (collectreport_timeline_load). */
struct collectreport_timeline {
    json_t *report; /* collectreport_build's object, owned */
    size_t nnodes;
    struct collectreport_node_tl *nodes; /* sorted by node name, as the report's nodes */
    double t0, t1;                       /* the run window */
    double max_gap_s;
    void *priv; /* the loaded directory */
};

/*
 * Builds the report as collectreport_build does (the same errors) and each node's power at
 * the sample times of its first part (its nodes.csv total, or its first total channel), the
 * other parts interpolated there. Free with collectreport_timeline_free (*ret is zeroed on
 * failure).
 */
int collectreport_timeline_load(const char *dir, const struct collectreport_opts *o,
                                struct collectreport_timeline *ret, struct carma_err *e);

/* Frees what collectreport_timeline_load filled (a zeroed struct is fine). */
void collectreport_timeline_free(struct collectreport_timeline *tl);

/*
 * --follow: a collect directory that is still being written, read as it grows. Each poll reads
 * what samples.csv and nodes.csv gained since the last one (a last line without its line end
 * is left for the next poll, except in the final one, which skips it with a warning) and
 * builds the report of everything read so far, as collectreport_build. o's arrays must outlive
 * the follower. NULL when out of memory.
 */
struct collectreport_follow;
struct collectreport_follow *collectreport_follow_new(const char *dir,
                                                      const struct collectreport_opts *o);

/* Returns 0 and *ret (the caller's), -ENODATA with e saying what is missing yet (no
 * samples.csv, no header, fewer than two scrapes), or collectreport_build's other errors. */
int collectreport_follow_poll(struct collectreport_follow *f, bool final, json_t **ret,
                              struct carma_err *e);

/* Frees f (NULL-safe). */
void collectreport_follow_free(struct collectreport_follow *f);

/*
 * Writes rep as DIR/report.json (indent 2 and a newline) and DIR/report.txt (its text), and to
 * json_out (NULL: none) too, each atomically. Returns 0 or a negative errno with e naming the
 * file.
 */
int collectreport_follow_write(const char *dir, const json_t *rep, const char *json_out,
                               struct carma_err *e);

/*
 * A follower on its own thread (which takes no signal), for `carma collect --report-follow`
 * of its own directory: every period_ns (0: 30 s) a poll and its report written
 * (collectreport_follow_write), and at collectreport_follow_thread_stop a final one. f must
 * outlive the thread. NULL with e set when no thread can be had.
 */
struct collectreport_follow_thread;
struct collectreport_follow_thread *
collectreport_follow_thread_start(struct collectreport_follow *f, int64_t period_ns,
                                  const char *json_out, struct carma_err *e);

/*
 * Stops the thread after its final poll and frees it (NULL-safe); *ret_written (may be NULL):
 * the reports written. Returns 0, or the last poll's error (a malformed row, a file that could
 * not be written; "nothing to report yet" only when the final poll had nothing) with e set.
 */
int collectreport_follow_thread_stop(struct collectreport_follow_thread *t, size_t *ret_written,
                                     struct carma_err *e);

/* The text form of a report built by collectreport_build, malloc'ed, ending with '\n'; NULL
 * when out of memory. */
char *collectreport_text(const json_t *report);

#endif
