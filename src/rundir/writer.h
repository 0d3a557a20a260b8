/*
 * writer: a run directory being written (`carma run`, `carma stat -o DIR`; docs/formats.md),
 * in one place: its name (NAME_YYYYmmdd-HHMMSS, -2, -3... when taken, with logs/), its
 * journals (core/journal: whole rows only) and the count of what they lost, the list of the
 * outputs that could not be written whole (the run then ends with exit status 1, naming them),
 * the room kept for the final files, and its JSON and text files.
 *
 * Nothing here prints: what goes wrong while the run goes on (a journal that cannot be opened,
 * the first failure of each condition of a journal's writes, a file that cannot be written, a
 * journal's losses at the end) is said, once, through the caller's say callback, in the order
 * it happens; the caller (cli/) prints it.
 */
#ifndef CARMA_RUNDIR_WRITER_H
#define CARMA_RUNDIR_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "core/err.h"
#include "core/journal.h"
#include "sampler/samples_csv.h"

/* The journals a run writes, at most (samples.csv apart). */
#define RUNDIR_JOURNALS_MAX 8
/* The room kept for the final files: at most MAX, at least MIN (when the file system has that
 * much). */
#define RUNDIR_RESERVE_MAX ((size_t)1 << 20)
#define RUNDIR_RESERVE_MIN ((size_t)16 << 10)

struct rundir_writer {
    char dir[4096];                                /* the run directory ("" before it is made) */
    struct journal *journals[RUNDIR_JOURNALS_MAX]; /* the journals opened (their losses) */
    size_t njournals;
    int reserve_fd;       /* the room kept for the final files, -1 when none */
    char incomplete[512]; /* the outputs that could not be written whole, ", "-separated */
    void (*say)(void *ctx, const char *msg); /* says a message (one line, no newline) */
    void *ctx;
};

/* Sets w up with no directory yet; say (with ctx) says every message. */
void rundir_writer_init(struct rundir_writer *w, void (*say)(void *ctx, const char *msg),
                        void *ctx);

/*
 * Makes a new run directory below runs (created with its parents when absent), named for name
 * and the local time now: runs/NAME_YYYYmmdd-HHMMSS, or with -2, -3... when that is taken; then
 * its logs/. w->dir is then its absolute path. Returns 0, or a negative errno with e set
 * ("cannot create PATH: REASON").
 */
int rundir_writer_create(struct rundir_writer *w, const char *runs, const char *name, time_t now,
                         struct carma_err *e);

/* Writes into dir, a directory the caller made or claimed (carma stat -o DIR), as it is named. */
void rundir_writer_use(struct rundir_writer *w, const char *dir);

/*
 * Creates the journal DIR/name with header (may be NULL; unit: what its rows are called, see
 * journal_open) and keeps it for the count of losses at the end; NULL after saying why (the
 * file is then counted as incomplete).
 */
struct journal *rundir_writer_open_journal(struct rundir_writer *w, const char *name,
                                           const char *header, const char *unit);

/* Opens DIR/samples.csv (sampler/samples_csv) for the channels of s; NULL after saying why
 * (the file is then counted as incomplete). Its journal is rundir_writer_losses' first. */
struct samples_csv *rundir_writer_open_samples(struct rundir_writer *w, const struct sampler *s);

/* Appends the n bytes at p, rows whole rows, to j (NULL: a journal that could not be opened,
 * nothing is written nor said) with journal_append() (first_ns: the realtime ns of the first
 * row, for the message), saying the first failure of each condition. Returns journal_append's
 * result. */
int rundir_writer_append(struct rundir_writer *w, struct journal *j, const void *p, size_t n,
                         uint64_t rows, int64_t first_ns);

/* Notes that the output name (a file of the run directory) is incomplete. */
void rundir_writer_failed(struct rundir_writer *w, const char *name);

/*
 * The count of every journal that lost rows (first, e.g. samples.csv's, may be NULL; then
 * those opened here), said at the end; each makes its file incomplete and, when warnings is
 * not NULL, adds "NAME...: the file is incomplete (the rows it holds are whole)" to it.
 */
void rundir_writer_losses(struct rundir_writer *w, const struct journal *first, json_t *warnings);

/*
 * Writes j as DIR/name (core/jsonutil: jsonutil_write_file) and takes it (NULL: out of
 * memory). A failure is said ("cannot write PATH: REASON") and makes name incomplete.
 */
void rundir_writer_write_json(struct rundir_writer *w, const char *name, json_t *j);

/* Writes the len bytes of text as DIR/name (core/file: file_replace; NULL text: out of memory),
 * the same way. */
void rundir_writer_write_file(struct rundir_writer *w, const char *name, const char *text,
                              size_t len);

/*
 * Keeps room for the small final files (workloads.json, report.json, report.txt,
 * manifest.json...): an unnamed file of the run directory's file system, allocated at the start
 * and freed (rundir_writer_release) just before they are written, so that a disk filled by the
 * journals still takes them. RUNDIR_RESERVE_MAX, or a quarter of the free space when that is
 * less (a small disk keeps most of its room for the measurement), halved while the file system
 * refuses it; none when it refuses RUNDIR_RESERVE_MIN.
 */
void rundir_writer_reserve(struct rundir_writer *w);
void rundir_writer_release(struct rundir_writer *w);

#endif
