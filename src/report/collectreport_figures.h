/*
 * collectreport_figures: the figures of a collect directory's report, over what
 * collectreport_load read: per window, each channel's, node's, kind's and the job's energy,
 * average power and power statistics, the nodes' carbon, down time and warnings; the coverage of
 * each node; a node's power over the run, for pictures. Internal to report/collectreport.
 */
#ifndef CARMA_REPORT_COLLECTREPORT_FIGURES_H
#define CARMA_REPORT_COLLECTREPORT_FIGURES_H

#include <jansson.h>

#include "core/err.h"
#include "report/collectreport.h"
#include "report/collectreport_load.h"
#include "report/collectreport_window.h"

/*
 * Appends the report of window w to the array out: {"name", "source", ..., "channels",
 * "nodes", "kinds", "job", "warnings"} (docs/report.md); a node's down time also goes to
 * cr->warnings. Returns 0 or a negative errno with e set (-ENOMEM; a series' error).
 */
int collectreport_figures_window(struct cr *cr, const struct cr_win *w, json_t *out,
                                 struct carma_err *e);

/* The report's "coverage": each node's targets, first and last sample, largest gap, scrapes and
 * blank rows. */
json_t *collectreport_figures_coverage(const struct cr *cr);

/*
 * The node's power at the sample times of its first part (the others interpolated there), NAN
 * where a part does not cover an instant, with a NAN point where a gap over the limit breaks
 * the line. Fills *ret (its arrays malloc'ed, the caller's); returns 0 or -ENOMEM.
 */
int collectreport_figures_node_tl(struct cr *cr, const struct cr_node *nd,
                                  struct collectreport_node_tl *ret);

#endif
