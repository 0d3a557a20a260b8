/*
 * collect/join: one collect directory made of the per-node carma recordings of a job,
 * DIR/carma/<host>/ (each a collect directory of one node: carma_samples.csv as carma record
 * writes it, or a samples.csv of carma collect's, and, where there is one, nodes.csv, schema 1
 * of collect/collector.h, and manifest.json), so that `carma report` gives one report across
 * the nodes.
 *
 * The output DIR/<out>/ holds carma_samples.csv (never samples.csv: DIR is an srt-slurm log
 * directory's cpu_power/, see collect_samples_name) and nodes.csv (the rows of every input in
 * timestamp_unix order, ties in input order: host directories by name, rows as read) and
 * manifest.json (producer "carma merge": schema_version 1, options.interval_s the largest of the
 * inputs', job_id the first input's that has one, status "complete" when every input's is, else
 * "incomplete", nodes the inputs' nodes, merged_from one object per input {host, status,
 * sample_row_count}), and marks.csv when an input has one (the marks of every input, input after
 * input, each input's window ids after the previous inputs' largest, since each carma numbers
 * its windows from 1). A row of the wrong width or with a timestamp that is not a number is
 * skipped with a warning naming FILE:LINE, as is a last line without its line end (a torn
 * write); an input whose header is not schema 1's is skipped with a warning.
 */
#ifndef CARMA_COLLECT_JOIN_H
#define CARMA_COLLECT_JOIN_H

#include <stddef.h>

#include "core/err.h"

struct collect_join_result {
    size_t inputs;       /* host directories joined */
    size_t rows;         /* samples.csv rows written */
    size_t rows_skipped; /* rows left out */
    size_t marks;        /* marks.csv rows written */
    char out_dir[4200];  /* DIR/<out> */
};

/*
 * Joins DIR/carma/<host>/ into DIR/out/ (made when absent; its files replaced atomically).
 * warn (may be NULL) is told about each skipped row or input. Returns 1 when something was
 * joined, 0 when DIR/carma holds no recording (nothing written), or a negative errno with e set.
 */
int collect_join_run(const char *dir, const char *out, void (*warn)(void *cls, const char *msg),
                     void *cls, struct collect_join_result *r, struct carma_err *e);

#endif
