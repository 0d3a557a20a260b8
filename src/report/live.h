/*
 * live: the live view of a run (`carma run` on a terminal, `carma top RUN_DIR`): per job the
 * power now, the energy (Wh) and operational CO2e so far; the node's power by domain; the
 * elapsed time; the mark windows open now (marks.csv). `carma run` fills the view from its own
 * state and its directory's marks.csv (live_marks); `carma top` reads it from a run directory
 * (event_summaries.jsonl's last line, samples.csv's last whole tick, manifest.json's status,
 * marks.csv) with live_reader, reading only what was appended since its last look.
 */
#ifndef CARMA_REPORT_LIVE_H
#define CARMA_REPORT_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/channel_kind.h"
#include "core/err.h"
#include "rundir/rundir.h"

#define LIVE_JOBS_MAX    64
#define LIVE_DOMAINS_MAX 8
#define LIVE_WINDOWS_MAX 8    /* open windows shown; the rest are counted */
#define LIVE_OPEN_MAX    4096 /* open windows followed at once (markd's MARKD_OPEN_MAX) */
#define LIVE_POINTS      64   /* the node's energy at the last ticks, for a late begin row */
#define LIVE_EARLY_MAX   32   /* ends before their begins remembered */

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

/* A mark window open now (marks.csv: begun, not yet ended). */
struct live_window {
    long long id;
    char name[RUNDIR_NAME_MAX];
    char workload[RUNDIR_NAME_MAX]; /* the job whose process began it; "" when none */
    double begin_unix;
    double open_s;   /* how long it has been open */
    double energy_j; /* the node's since its begin; NAN when unknown (no guess) */
    bool estimated;  /* a model's channel is in energy_j */
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
    /* the open windows, the oldest first, at most LIVE_WINDOWS_MAX; windows_more: the newer
     * ones not shown */
    size_t nwindows;
    struct live_window window[LIVE_WINDOWS_MAX];
    size_t windows_more;
};

/*
 * Writes the view to f. ansi: a terminal (the previous frame, *lines lines long, is
 * overwritten in place; *lines is set to this frame's length); else plain lines, one block a
 * frame, ending with a blank line. width: the terminal's columns (0: 100).
 */
void live_render(FILE *f, const struct live_view *v, bool ansi, int width, int *lines);

/* ---- the open windows of marks.csv ---- */

/* The node's energy at a tick (live_marks_point). */
struct live_point {
    double t, j;
    unsigned what; /* which channels j adds up: equal for two ticks when the sets are */
    bool estimated;
};

struct live_open {
    long long id;
    char name[RUNDIR_NAME_MAX];
    char workload[RUNDIR_NAME_MAX];
    double t0;
    double j0;     /* the node's energy at t0, NAN when it cannot be known */
    unsigned what; /* j0's channels (live_point) */
    bool estimated;
    bool pending; /* j0 awaits the first tick at or after t0 */
};

/*
 * marks.csv followed (docs/formats.md, "Marks"): its rows read as they are appended, whole
 * lines only, each through rundir_marks_row's rules; a begin opens a window, an end or unended
 * row closes the open window of its id and name (markd writes the window's own id and name in
 * both). An end of no open window, a second begin of an open id, a begin whose end came
 * before it are skipped, with a warning (carma report refuses such a file: the view shows what
 * it can). A zeroed struct is a tracker that has read nothing. The node's energy at a
 * window's begin comes from the ticks the caller gives it (live_marks_point): carma top gives
 * samples.csv's.
 */
struct live_marks {
    off_t off;   /* how far marks.csv was read (whole lines) */
    size_t line; /* and its lines; 0: its header is still to be read */
    struct rundir_marks h;
    struct live_open *open; /* in the order of their begin rows */
    size_t nopen, cap;
    size_t npending;
    struct live_point pt[LIVE_POINTS]; /* a ring: the last LIVE_POINTS ticks given */
    size_t npt;                        /* ticks given in all */
    /* the ids of the last end rows that closed no open window: a begin of one of them that
     * comes after its end is no open window either */
    long long early_end[LIVE_EARLY_MAX];
    size_t nearly; /* end rows of no open window in all */
    bool torn_said, odd_said, full_said;
    /* a warning for the caller to print once (a torn last line; an end row of no open window,
     * a begin of an id open already, more than LIVE_OPEN_MAX open: skipped), "" when none; the
     * caller clears it */
    char warning[4400];
};

/*
 * Reads what dir/marks.csv gained since the last call. follow: the run still runs (a last line
 * without its line end is awaited; else it is skipped, with the warning set). No marks.csv: no
 * windows (0). A file replaced by a shorter one is read again from its start. Returns 0, or a
 * negative errno with e set ("PATH:LINE: ..." for a row that breaks rundir_marks_row's rules,
 * a header without marks.csv's columns).
 */
int live_marks_poll(struct live_marks *m, const char *dir, bool follow, struct carma_err *e);

/* The node's energy so far at tick t (in order of time): j joules, made of the channels what
 * names (any number, changed when the set is), estimated when a model's channel is among them.
 * A window whose begin lies at or before t gets its energy at the begin, interpolated between
 * this tick and the one before (the first tick's energy for a begin before it). */
void live_marks_point(struct live_marks *m, double t, double j, unsigned what, bool estimated);

/* Forgets the ticks given (their file was replaced): the windows awaiting one keep waiting. */
void live_marks_reset_points(struct live_marks *m);

/*
 * The open windows into v (nwindows, window, windows_more), each open for now - its begin
 * (now: Unix seconds), its energy the last tick's less its begin's where both are known and
 * made of the same channels, else NAN.
 */
void live_marks_view(const struct live_marks *m, struct live_view *v, double now);

/* Frees what m holds and zeroes it. */
void live_marks_free(struct live_marks *m);

/* ---- a run directory being watched ---- */

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
    size_t tick_rows; /* the rows of that tick read */
    /* the node's energy at that tick, by sampler_select_node's choice (sampler.h): the wall
     * meters' channels; else the measured system totals; else the measured totals and the
     * estimated ones of the kinds no measured one covers (j: joules_total, blank as 0) */
    struct live_tick_j {
        double j;
        unsigned n;
        bool estimated;
    } tj_meter, tj_sys, tj_meas[CHANNEL_KINDS], tj_est[CHANNEL_KINDS];
    struct live_marks marks; /* marks.csv, its warning the caller's as warning's */
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
 * samples.csv and marks.csv, whose every row passes rundir.h's rules (as for carma report and
 * model fit); a last line without its line end is awaited while the run runs and skipped, with
 * r->warning (r->marks.warning) set, once it has ended. The open windows' energy is the node's
 * from samples.csv's joules_total, to the tick. Returns 0, or a negative errno with e set (a
 * file gone, a malformed header, a row that breaks a rule: "PATH:LINE: ...").
 */
int live_reader_poll(struct live_reader *r, struct live_view *v, struct carma_err *e);

void live_reader_close(struct live_reader *r);

#endif
