/*
 * collectreport_load: a collect directory's samples.csv and nodes.csv read into series, and the
 * nodes made of them; the state (struct cr) that the collectreport_*.c files share. Internal to
 * report/collectreport (collectreport.h is the API).
 *
 * Each file is read line by line through rundir/rundir.c's reader (its row rules and
 * "PATH:LINE: what" errors), from where the last read stopped (a follower reads what a file
 * gained). Each (node, target) keeps one time array and each channel one array of watts (and
 * one of joules where the exporter published its counter), so that a row costs about 8 bytes,
 * plus 8 for a counter, plus 8 / channels for the time.
 */
#ifndef CARMA_REPORT_COLLECTREPORT_LOAD_H
#define CARMA_REPORT_COLLECTREPORT_LOAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/carbon.h"
#include "analysis/series.h"
#include "core/err.h"
#include "report/collectreport.h"

/* A channel's methods (cr_chan.methods): measured, estimated, another one. */
#define M_MEAS 1u
#define M_EST  2u
#define M_OTH  4u

/* A channel of a (node, target): its readings at the group's times. */
struct cr_chan {
    char *channel, *source, *kind, *domain;
    unsigned methods;
    size_t grp;
    double *w, *j; /* per time of the group; NAN where no reading; j NULL: never a counter */
    size_t n, cap;
};

/* A (node, target): its times (one a scrape), its blank rows and its channels. */
struct cr_grp {
    char *node, *target;
    double *t;
    size_t n, cap;
    uint64_t last_seq;
    bool has_last;
    double *blank_t; /* the times of blank rows */
    size_t nblank, blank_cap;
    size_t *chans;
    size_t nch;
    size_t hint;
};

/* One file's groups and channels (samples.csv, or nodes.csv with one "node" channel a group). */
struct cr_tab {
    struct cr_grp *g;
    size_t ng;
    struct cr_chan *c;
    size_t nc;
    size_t cur; /* the group of the last row */
};

/* A part of a node: a channel of samples.csv or nodes.csv's total. */
struct cr_part {
    const struct cr_tab *tab;
    size_t ch;
};

/* A node: its parts (by the rule in collectreport.c's comment), its carbon intensity. */
struct cr_node {
    char *name;
    struct cr_part *parts;
    size_t nparts;
    bool from_nodes_csv;
    size_t dcgm_added;
    struct carbon_intensity ci;
    const char *region; /* borrowed: the --region code, NULL: default */
};

/* Where the reading of one file stands (follow: the next poll goes on from there). */
struct cr_reader {
    off_t off;   /* just after the last whole line read */
    size_t line; /* lines read */
    bool header; /* the header was read and checked */
    bool absent; /* nodes.csv: not there (yet) */
};

/* A collect directory as read so far, and the scratch its figures use. */
struct cr {
    const char *dir;
    const char *samples; /* the samples file's name (collect_samples_name) */
    struct cr_reader rs, rn;
    json_t *load_warnings; /* of the reading (a torn last line): kept across polls */
    struct cr_tab s, n;    /* samples.csv, nodes.csv */
    struct cr_node *nodes;
    size_t nnodes;
    double gap;
    enum series_edges edges;
    double pue;
    double interval_s;
    struct series_scratch sc;
    double *stat_v;
    size_t stat_cap;
    json_t *warnings;
};

/* A follower (collectreport_follow_new): the directory, the options and what it has read. */
struct collectreport_follow {
    char *dir;
    struct collectreport_opts o;
    struct cr cr;
    bool init;
};

/* Makes *cr empty for dir (collectreport_load_free it, whatever this returns). */
int collectreport_load_init(struct cr *cr, const char *dir, const struct collectreport_opts *o,
                            struct carma_err *e);

/*
 * Reads what samples.csv and nodes.csv hold past where the last call stopped. follow: an
 * absent samples.csv, or one without its header yet, is -ENODATA, and a last line without its
 * line end is left for the next call; else that line is skipped with a warning
 * (cr->load_warnings). An absent nodes.csv is no error (cr->rn.absent). Returns 0 or a negative
 * errno with e naming the file and line.
 */
int collectreport_load_read(struct cr *cr, bool follow, struct carma_err *e);

/* Frees what cr holds and zeroes it. */
void collectreport_load_free(struct cr *cr);

/* Appends a warning (printf-style) to cr->warnings. Returns 0 or -ENOMEM. */
int collectreport_load_warn(struct cr *cr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Makes cr->nodes (sorted by name) and their parts, by the rule in collectreport.c's comment.
 * Returns 0 or -ENOMEM. */
int collectreport_load_nodes(struct cr *cr);

/* Frees cr->nodes. */
void collectreport_load_nodes_free(struct cr *cr);

/* The index of the node named name in cr->nodes, or -1. */
long collectreport_load_node_find(struct cr *cr, const char *name);

/* Whether samples.csv channel c counts in its kind: total domain, and a dcgm one only where
 * its node takes it. */
bool collectreport_load_in_kind(const struct cr *cr, size_t c);

#endif
