/*
 * rundir: the rules for the files of a carma run directory (`carma run -o DIR`, `carma stat
 * -o DIR`; docs/formats.md), in one place for every reader of them: `carma report` (text, JSON
 * and HTML), `carma top`, `carma model fit/predict` and `carma import-nsys --run`. Each reads
 * the CSV files with the line reader below and each row through the validator of its file, so
 * that every reader accepts and refuses exactly the same rows, with the same message
 * ("PATH:LINE: what is wrong").
 *
 * What carma writes in each file, column by column, is rundir/rows.h's (with writer.h's
 * journals); what a reader accepts of it is said here, once.
 *
 * The rules (docs/report.md, "What a run directory may hold"):
 *  - a JSON file (manifest.json, report.json, summary.json, workloads.json) is read whole, at
 *    most RUNDIR_JSON_MAX bytes (rundir_read_json); a CSV file is read a line at a time
 *    (rundir_lines), of any size, or, by the one reader that keeps it whole (CARMA's files,
 *    export/carma_files.c), at most RUNDIR_CSV_MAX bytes (rundir_read_file): the same limits
 *    in every reader;
 *  - a line ends with LF or CRLF, holds no NUL byte and is at most RUNDIR_LINE_MAX bytes; a
 *    field is RFC 4180 (no line end inside a quoted field: carma never writes one);
 *  - a last line without its line end is torn (carma's writers cut a short write back to the
 *    last whole row, so only a crash or a copy leaves one): it is skipped, and the reader says
 *    so once (rundir_torn_warning); a torn line in the middle of a file shows as a row with the
 *    wrong number of fields or a cell that is no number, and is refused;
 *  - every row has the header's number of fields; numbers are finite; timestamps are Unix times
 *    from 0 to RUNDIR_TIME_MAX and never go back;
 *  - names (channel, job) are 1 to RUNDIR_NAME_MAX - 1 bytes of UTF-8 (the reports hold them as
 *    JSON strings);
 *  - samples.csv: kind, domain and method are the words carma writes; watts are blank or
 *    within [0, the bound of the channel's kind] (channel_kind_power_max_w, docs/sources.md,
 *    the sensors' own bound), joules_total blank or within [0, what that bound draws over the
 *    file's time]: a value no device shows, whose sums would overflow, is refused at its row;
 *  - attribution.csv: a share's joules are finite and within what the largest bound (a wall
 *    meter's) draws over the time since samples.csv's first row;
 *  - node_util.csv: CPU-seconds are finite, at least 0, busy at most total, cpu_util blank or
 *    within [0, 1];
 *  - utilization.csv: a GPU index from 0 to 255, a pid blank or positive, percentages blank or
 *    within [0, 100];
 *  - features.csv and nsys_gpu.csv have no row validator (no value bounds): their readers take
 *    the columns by name (rundir_lines_column), a cell of a row too short for it as blank
 *    (rundir_lines_cell) and the numbers finite (rundir_lines_num); model/features.c and
 *    import/nsys_run.c each check what they need of a row.
 * Nothing here prints or exits.
 */
#ifndef CARMA_RUNDIR_RUNDIR_H
#define CARMA_RUNDIR_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "core/err.h"

#define RUNDIR_LINE_MAX   65536              /* one CSV line */
#define RUNDIR_FIELDS_MAX 32                 /* fields of a CSV line */
#define RUNDIR_NAME_MAX   256                /* a channel or job name, with its NUL */
#define RUNDIR_TIME_MAX   1e11               /* the latest timestamp_unix (the year 5138) */
#define RUNDIR_JSON_MAX   ((size_t)64 << 20) /* a JSON file, read whole */
#define RUNDIR_CSV_MAX    ((size_t)1 << 30)  /* a CSV file read whole */

/* ---- whole files ---- */

/*
 * Reads the JSON file dir/name whole (at most RUNDIR_JSON_MAX bytes; a regular file:
 * file_read_all). Returns the value, or NULL with e set (may be NULL): the read's negative
 * errno with file_input_err's message ("PATH: REASON", "PATH is not a regular file (a FIFO)"),
 * or -EINVAL with "PATH:LINE:COLUMN: problem". je (may be NULL) is jansson's error, or for a
 * read's error its text (strerror, "not a regular file") with line 0, as file_load_json sets
 * it.
 */
json_t *rundir_read_json(const char *dir, const char *name, json_error_t *je, struct carma_err *e);

/*
 * Reads dir/name whole (at most RUNDIR_CSV_MAX bytes) into a new NUL-terminated buffer (*text,
 * caller frees; *len without the NUL). Returns 0, or file_read_all's negative errno with e set:
 * file_input_err's message for -ESPIPE, else "PATH: cannot read: REASON".
 */
int rundir_read_file(const char *dir, const char *name, char **text, size_t *len,
                     struct carma_err *e);

/* ---- the line reader ---- */

struct rundir_lines {
    FILE *f;
    char path[4200];
    char *buf;
    size_t cap;
    size_t line; /* the number of the line last read (1-based; 0 before the first) */
    off_t off;   /* the offset just after the last whole line read */
    off_t size;  /* the file's size when opened: no line is begun at or after it */
    bool follow; /* the file is still being written: a last line without its line end is not
                    yet whole and is left for the next look (carma top) */
    size_t torn; /* the number of a last line without its line end that was skipped, else 0 */
    char *fld[RUNDIR_FIELDS_MAX];
    size_t nf;
};

/*
 * Opens dir/name (a regular file: file_fopen_input) for reading from byte off, where line
 * lines were read before (0, 0 for the start). Returns 0, or a negative errno with e set
 * (file_input_err: "PATH is ...", "PATH: cannot open: ...").
 */
int rundir_lines_open(struct rundir_lines *l, const char *dir, const char *name, off_t off,
                      size_t line, struct carma_err *e);

/*
 * Reads the next non-blank line and splits it into l->fld, l->nf. Returns 1 (a row), 0 at the
 * end (l->torn set when the last line had no line end and was skipped; in follow mode such a
 * line is left unread instead), or -EINVAL with e set: a line over RUNDIR_LINE_MAX, a NUL byte,
 * bad quoting, more than RUNDIR_FIELDS_MAX fields; another negative errno for a read error.
 */
int rundir_lines_next(struct rundir_lines *l, struct carma_err *e);

/* Closes the file and frees the buffer (safe twice, and on a zeroed or failed reader). */
void rundir_lines_close(struct rundir_lines *l);

/*
 * Reads the header line and finds the columns named in names (n of them) into idx, -1 for an
 * absent one; a column in required (bit k for names[k]) that is absent is an error. *nf is the
 * header's width. Returns 0 or -EINVAL (also for an empty file) with e set.
 */
int rundir_lines_header(struct rundir_lines *l, const char *const *names, size_t n,
                        unsigned required, int *idx, size_t *nf, struct carma_err *e);

/* The one warning for a torn last line of l (l->torn != 0) into buf: "PATH:LINE: ...". */
void rundir_torn_warning(const struct rundir_lines *l, char *buf, size_t cap);

/* ---- row validators: each takes a row's fields (path and line for the messages) ---- */

/*
 * A number of column col: finite, parse_double's syntax. Blank: 0 with *ret NAN when blank_ok,
 * else an error. Returns 0 or -EINVAL ("PATH:LINE: COL: 'TEXT' is not a finite number").
 */
int rundir_num(const char *path, size_t line, const char *col, const char *s, bool blank_ok,
               double *ret, struct carma_err *e);

/* A name of column col (channel, job): 0, or -EINVAL when empty, too long or not UTF-8. */
int rundir_name(const char *path, size_t line, const char *col, const char *s, struct carma_err *e);

/* samples.csv */
enum { RS_T, RS_CH, RS_SRC, RS_KIND, RS_DOM, RS_METH, RS_W, RS_J, RS_N };

struct rundir_samples {
    int col[RS_N];  /* the columns; source may be absent (-1: a meter is told by its name) */
    size_t nf;      /* the header's width */
    double t_first; /* the first row's timestamp, NAN before it */
    double t_last;  /* the last row's, -INFINITY before the first */
};

struct rundir_sample {
    double t;
    const char *channel, *kind, *domain, *method; /* the row's fields */
    int kind_id;                                  /* enum channel_kind */
    bool total;                                   /* domain total */
    bool estimated;                               /* method estimated */
    bool meter;                                   /* a wall meter's (source meter) */
    double max_w;                                 /* the channel's bound */
    double w, j;                                  /* NAN when blank */
};

/* Reads samples.csv's header from l into s (every column carma writes but source required). */
int rundir_samples_header(struct rundir_samples *s, struct rundir_lines *l, struct carma_err *e);

/* Checks the row fld[0..nf) of samples.csv (line of path) against s's rules and state, into
 * *ret. 0, or -EINVAL (-ERANGE for a value beyond its bound) with e saying what is wrong. */
int rundir_samples_check(struct rundir_samples *s, const char *path, size_t line, char *const *fld,
                         size_t nf, struct rundir_sample *ret, struct carma_err *e);

/* rundir_samples_check on the row l just read. */
int rundir_samples_row(struct rundir_samples *s, const struct rundir_lines *l,
                       struct rundir_sample *ret, struct carma_err *e);

/* attribution.csv */
struct rundir_attr {
    int col[4]; /* timestamp_unix, channel, job, joules */
    size_t nf;
    double t0;     /* samples.csv's first timestamp (NAN: unknown, the file's first row's) */
    double t_last; /* -INFINITY before the first row */
};

struct rundir_attr_row {
    double t;
    const char *channel, *job;
    double j;
};

/* Reads attribution.csv's header from l into a; t0: samples.csv's first timestamp or NAN. */
int rundir_attr_header(struct rundir_attr *a, double t0, struct rundir_lines *l,
                       struct carma_err *e);
int rundir_attr_check(struct rundir_attr *a, const char *path, size_t line, char *const *fld,
                      size_t nf, struct rundir_attr_row *ret, struct carma_err *e);
int rundir_attr_row(struct rundir_attr *a, const struct rundir_lines *l,
                    struct rundir_attr_row *ret, struct carma_err *e);

/* node_util.csv */
struct rundir_util {
    int col[4]; /* timestamp_unix, busy_cpu_s, total_cpu_s, cpu_util (may be absent) */
    size_t nf;
    double t_last;
};

struct rundir_util_row {
    double t, busy_s, total_s, util; /* util NAN when blank or absent */
};

int rundir_util_header(struct rundir_util *u, struct rundir_lines *l, struct carma_err *e);
int rundir_util_check(struct rundir_util *u, const char *path, size_t line, char *const *fld,
                      size_t nf, struct rundir_util_row *ret, struct carma_err *e);
int rundir_util_row(struct rundir_util *u, const struct rundir_lines *l,
                    struct rundir_util_row *ret, struct carma_err *e);

/* marks.csv (docs/formats.md, "Marks") */
enum rundir_mark_event {
    RUNDIR_MARK_BEGIN,
    RUNDIR_MARK_END,
    RUNDIR_MARK_EVENT,
    RUNDIR_MARK_UNENDED
};

struct rundir_marks {
    int col[10]; /* schema_version .. value */
    size_t nf;
};

struct rundir_mark_row {
    enum rundir_mark_event event;
    long long id;               /* -1 for an event */
    const char *name;           /* borrowed from the reader's line */
    double t;                   /* Unix s */
    long long pid;              /* -1 when blank */
    const char *workload;       /* "" when blank */
    long long tokens, requests; /* -1 when blank */
    double value;               /* NAN when blank */
};

/* A window of marks.csv (its begin and end paired by id), or an event (id -1, t1 = t0). */
struct rundir_mark {
    char name[RUNDIR_NAME_MAX];
    long long id;                       /* -1: an event */
    double t0, t1;                      /* NAN t1: never ended (no end row: carma was killed) */
    bool unended;                       /* closed by carma at the end (an unended row) */
    long long pid;                      /* of the begin (the event's); -1 when blank */
    char workload[RUNDIR_NAME_MAX];     /* the job that began it ("" when none) */
    char end_workload[RUNDIR_NAME_MAX]; /* the job that ended it, when another ("") */
    long long tokens, requests;         /* -1: not given (the end's replace the begin's) */
    double value;                       /* an event's */
};

#define RUNDIR_MARKS_MAX 100000 /* windows and events of one measurement */

/*
 * Reads dir/marks.csv into *ret (malloc'ed, the caller's; in the order of the begins and
 * events) and *ret_n. An absent file is no marks (0, *ret NULL). A torn last line is left out,
 * with its warning in torn (cap bytes; "" when none). Returns 0 or a negative errno with e
 * naming FILE:LINE: a bad row, an end without its begin, a window begun or ended twice, more
 * than RUNDIR_MARKS_MAX.
 */
int rundir_marks_load(const char *dir, struct rundir_mark **ret, size_t *ret_n, char *torn,
                      size_t cap, struct carma_err *e);

int rundir_marks_header(struct rundir_marks *m, struct rundir_lines *l, struct carma_err *e);
/* One row: "PATH:LINE: COLUMN: ..." for a bad one (-EINVAL). */
int rundir_marks_row(struct rundir_marks *m, const struct rundir_lines *l,
                     struct rundir_mark_row *ret, struct carma_err *e);

/* utilization.csv (with NVML GPUs): a device row (blank pid) then one row per process */
enum { RG_T, RG_GPU, RG_PID, RG_WL, RG_UTIL, RG_MEM, RG_SM, RG_N };

struct rundir_gpu {
    int col[RG_N];
    size_t nf;
};

struct rundir_gpu_row {
    double t;
    int gpu;              /* the NVML index, 0 to RUNDIR_GPUS_MAX - 1 */
    long long pid;        /* 0 for the device row */
    const char *workload; /* a process row's (a workload's name or "other"), "" for the device */
    double util_pct, mem_pct, sm_pct; /* NAN when blank */
};

#define RUNDIR_GPUS_MAX 256

/* Reads utilization.csv's header (timestamp_unix, gpu, pid, workload, gpu_util_pct,
 * mem_util_pct, sm_util_pct required) from l into g. */
int rundir_gpu_header(struct rundir_gpu *g, struct rundir_lines *l, struct carma_err *e);
/* A row: timestamp_unix a Unix time (the GPUs' rows of a poll are not ordered by time), gpu an
 * index, pid blank or a positive integer, the percentages blank or from 0 to 100. */
int rundir_gpu_check(struct rundir_gpu *g, const char *path, size_t line, char *const *fld,
                     size_t nf, struct rundir_gpu_row *ret, struct carma_err *e);
int rundir_gpu_row(struct rundir_gpu *g, const struct rundir_lines *l, struct rundir_gpu_row *ret,
                   struct carma_err *e);

/*
 * A sum a reader keeps (an energy integral, a per-job total, a model's sum of squares) that is
 * no longer finite: -ERANGE with "WHAT: the sum overflows a double (no power or energy is that
 * large)" in e; 0 while it is finite.
 */
int rundir_sum_check(double sum, const char *what, struct carma_err *e);

/* ---- columns and cells: the files read without a row validator (features.csv, nsys_gpu.csv),
 * and attribution.csv for the nsys re-split ---- */

/*
 * Opens dir/name from its start (rundir_lines_open) for the readers that read the file whole
 * before it was read a line at a time: an error is worded as rundir_read_file words it ("PATH:
 * cannot read: REASON"; file_input_err's message for -ESPIPE). Returns 0 or the negative errno.
 */
int rundir_lines_start(struct rundir_lines *l, const char *dir, const char *name,
                       struct carma_err *e);

/* The index of the field named name in the line l just read (the header), the first of two
 * alike; -1 when it has none. */
int rundir_lines_column(const struct rundir_lines *l, const char *name);

/* Field k of the row l just read; "" when k is -1 (an absent column) or past the row's end (a
 * short row reads as blank cells). */
const char *rundir_lines_cell(const struct rundir_lines *l, int k);

/*
 * The number in field k (rundir_lines_cell) of the row l just read: finite, parse_double's
 * syntax; blank: NAN when blank_ok. Returns 0, or -EINVAL with "PATH:LINE: COL: 'TEXT' is not a
 * number" (col names the column); *ret is always written (NAN on an error).
 */
int rundir_lines_num(const struct rundir_lines *l, int k, const char *col, bool blank_ok,
                     double *ret, struct carma_err *e);

#endif
