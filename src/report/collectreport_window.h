/*
 * collectreport_window: the windows of a collect directory's report: --window NAME=START,END
 * (collectreport_window_parse) and --windows files (collectreport_windows_load), both declared
 * in collectreport.h; the benchmark windows of an srt-slurm log directory that holds the collect
 * directory (through srt/log.c); and the list a report covers, the whole run first. Internal to
 * report/collectreport.
 */
#ifndef CARMA_REPORT_COLLECTREPORT_WINDOW_H
#define CARMA_REPORT_COLLECTREPORT_WINDOW_H

#include <stddef.h>

#include "core/err.h"
#include "report/collectreport.h"
#include "report/collectreport_load.h"

/* A window as reported: its name, where it came from, its span and its counts (NAN: none). */
struct cr_win {
    char name[COLLECTREPORT_NAME_MAX];
    const char *source; /* "run", "cli", "file", "mark", "srt" */
    double start, end;
    double tokens, requests, input_tokens;
};

/*
 * The windows of cr's report, in order: "run" (from the first to the last sample of
 * samples.csv), o's --window ones, its --windows file's, the marks of its marks.csv (carma
 * mark on the head node while carma collect ran), and the srt-slurm log directory's
 * (unless o->no_srt; a log whose windows cannot be read is a warning in cr->warnings). *ret
 * (malloc'ed, the caller's) and *ret_n on success. Returns 0, -ENODATA (no run: fewer than two
 * scrapes' samples), a windows file's error, or -ENOMEM, with e set.
 */
int collectreport_window_list(struct cr *cr, const struct collectreport_opts *o,
                              struct cr_win **ret, size_t *ret_n, struct carma_err *e);

#endif
