/*
 * html: `carma report DIR --format html`: one self-contained HTML file (inline CSS, charts as
 * inline SVG from report/svg, no script, nothing fetched when it is opened) for a carma run
 * or stat directory (report/runreport) or an srt-slurm log directory (srt/log +
 * srt/report). Charts are downsampled for display; every number in a table comes from
 * the full data (the same figures as `carma report --format json`). docs/report.md describes
 * the page.
 */
#ifndef CARMA_REPORT_HTML_H
#define CARMA_REPORT_HTML_H

#include <jansson.h>
#include <stddef.h>

#include "core/err.h"
#include "report/collectreport.h"
#include "report/runreport.h"
#include "srt/log.h"

struct html_opts {
    size_t max_points;   /* per chart series after downsampling (0: 1500) */
    size_t bins;         /* attribution bins across a run (0: 1500) */
    const char *title;   /* NULL: from the directory */
    const char *version; /* carma's, for the page's footer */
};

/*
 * The HTML report of the carma run or stat directory dir into *ret (malloc'ed, *ret_len bytes
 * without the NUL that ends it); its marks (marks.csv) as a timeline over the power charts and
 * a table. Errors as runreport_build's. Returns 0 or a negative errno.
 */
int html_run(const char *dir, const struct runreport_opts *ro, const struct html_opts *o,
             char **ret, size_t *ret_len, struct carma_err *e);

/*
 * The HTML report of an srt-slurm log directory: log (loaded with srt_log_open) and its
 * reports (srt_report_build's array). Returns 0, or -ENOMEM with e set.
 */
int html_srt(const struct srt_log *log, const json_t *reports, const struct html_opts *o,
             char **ret, size_t *ret_len, struct carma_err *e);

/*
 * The page of a carma collect directory, from collectreport_timeline_load's timeline: the
 * windows (the job's energy, power, carbon, tokens), each node's figures over the run, each
 * node's power over time (one line per node, breaks at gaps over the limit), and per window the
 * energy of each node stacked by device kind (the node's energy not in a kind channel shown as
 * "rest"), the coverage and the warnings; the windows marked on its socket as a timeline over
 * the power chart. Returns 0 and the page (malloc'ed) or -ENOMEM.
 */
int html_collect(const struct collectreport_timeline *tl, const struct html_opts *o, char **ret,
                 size_t *ret_len, struct carma_err *e);

#endif
