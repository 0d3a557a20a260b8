/*
 * live: the live view of a run (`carma run` on a terminal, `carma top RUN_DIR`): per job the
 * power now, the energy (Wh) and operational CO2e so far; the node's power by domain; the
 * elapsed time. `carma run` fills the view from its own state; `carma top` reads it from a run
 * directory (event_summaries.jsonl's last line, samples.csv's last whole tick, manifest.json's
 * status) with live_reader, reading only what was appended since its last look.
 */
#ifndef CARMA_REPORT_LIVE_H
#define CARMA_REPORT_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/err.h"
#include "rundir/rundir.h"

#define LIVE_JOBS_MAX    64
#define LIVE_DOMAINS_MAX 8

struct live_job {
    char name[129];
    double power_w;  /* over the last second; NAN when unknown */
    double energy_j; /* so far */
    double g_co2e;   /* operational, so far */
    bool ended;
    bool estimated;
};

struct live_domain {
    char kind[16];  /* cpu, dram, soc, gpu, system, other */
    double power_w; /* the total-domain channels of that kind at the last tick */
    int channels;
    bool estimated; /* some of them are estimated */
};

struct live_view {
    char title[300]; /* the run directory */
    double elapsed_s;
    double updated_unix; /* the time of the figures */
    size_t njobs;
    struct live_job job[LIVE_JOBS_MAX];
    double idle_j, other_j, unattributed_j; /* NAN when unknown */
    size_t ndomains;
    struct live_domain domain[LIVE_DOMAINS_MAX];
    double node_w; /* the node now: its system meter when it has one, else the sum */
    bool finished; /* the run has ended */
    /* the pid of the run's carma, when it is gone although manifest.json still says "running"
     * (killed: the run ended without finishing; finished is then true too); 0 otherwise */
    long writer_gone_pid;
    bool have_jobs; /* an event summary was read */
};

/*
 * Writes the view to f. ansi: a terminal (the previous frame, *lines lines long, is
 * overwritten in place; *lines is set to this frame's length); else plain lines, one block a
 * frame, ending with a blank line. width: the terminal's columns (0: 100).
 */
void live_render(FILE *f, const struct live_view *v, bool ansi, int width, int *lines);

/* A run directory being watched. */
struct live_reader {
    char *dir;
    off_t ev_off;            /* how far event_summaries.jsonl was read */
    off_t s_off;             /* how far samples.csv was read (whole lines) */
    size_t s_line;           /* and its lines */
    struct rundir_samples s; /* samples.csv's columns and the state of its row rules */
    double tick_t;           /* the tick being gathered, and its sums */
    struct live_domain tick[LIVE_DOMAINS_MAX];
    size_t ntick;
    bool torn_said;
    /* a warning for the caller to print once (a torn last line of samples.csv, rundir.h),
     * "" when none; the caller clears it */
    char warning[4400];
};

/* Starts watching dir. 0, or a negative errno with e naming what is missing. */
int live_reader_open(struct live_reader *r, const char *dir, struct carma_err *e);

/*
 * Reads what was appended since the last call into v (which keeps what it had where nothing
 * new came). The first call reads the last 256 KiB of event_summaries.jsonl and the whole of
 * samples.csv, whose every row passes rundir.h's rules (as for carma report and model fit); a
 * last line without its line end is awaited while the run runs and skipped, with r->warning
 * set, once it has ended. Returns 0, or a negative errno with e set (a file gone, a malformed
 * header, a row that breaks a rule: "PATH:LINE: ...").
 */
int live_reader_poll(struct live_reader *r, struct live_view *v, struct carma_err *e);

void live_reader_close(struct live_reader *r);

#endif
