/*
 * follow_opt: `--report-follow DIR` and its companions, for the commands that can write
 * srt-slurm's incremental reports while they run (carma collect, carma run): the options, their
 * help text, and the follower thread started and stopped around the command's work
 * (srt/follow).
 */
#ifndef CARMA_CLI_FOLLOW_OPT_H
#define CARMA_CLI_FOLLOW_OPT_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "srt/follow.h"

struct follow_opts {
    const char *dir;         /* --report-follow: an srt-slurm log directory, or NULL */
    const char *cpu_samples; /* --report-cpu-samples */
    int64_t poll_ns;         /* --report-poll (0: 30 s) */
    enum series_edges edges; /* --report-edges */
};

/* getopt_long ids (above every command's own) */
enum { OPT_REPORT_FOLLOW = 480, OPT_REPORT_CPU, OPT_REPORT_POLL, OPT_REPORT_EDGES };

#define FOLLOW_LONG_OPTIONS                                                                        \
    {"report-follow", required_argument, NULL, OPT_REPORT_FOLLOW},                                 \
        {"report-cpu-samples", required_argument, NULL, OPT_REPORT_CPU},                           \
        {"report-poll", required_argument, NULL, OPT_REPORT_POLL},                                 \
    {                                                                                              \
        "report-edges", required_argument, NULL, OPT_REPORT_EDGES                                  \
    }

#define FOLLOW_OPTIONS_HELP                                                                        \
    "  --report-follow DIR write srt-slurm's incremental reports of the log directory DIR\n"       \
    "                      while this runs (as `carma report DIR --follow`): each finished\n"      \
    "                      benchmark window's power_energy_c<N>.json and a JSONL line\n"           \
    "  --report-cpu-samples CSV  the CPU power leg for --report-follow\n"                          \
    "  --report-poll T     --report-follow's period (default 30s)\n"                               \
    "  --report-edges E    interpolate (default) or snap, as carma report --edges\n"

/* The --edges / --report-edges word: "interpolate" or "snap". Returns 0, or -1 for another. */
int report_edges_parse(const char *s, enum series_edges *ret);

/*
 * Handles one of the options above (c, arg) for command cmd. Returns 1 if handled, 0 if c is
 * not one of them, -1 after printing an error about a bad value.
 */
int follow_opt_handle(struct follow_opts *o, const char *cmd, int c, const char *arg);

/* A follower thread and its state. Zero-initialise. */
struct follower {
    struct srt_follow f;
    struct srt_follow_thread *t;
    bool started;
};

/*
 * Starts the follower when o->dir is set (nothing otherwise), with cpu_samples as the CPU leg
 * when o->cpu_samples is NULL (NULL: discovered in the log directory). Returns 0, or -1 after
 * printing why.
 */
int follower_start(struct follower *fw, const struct follow_opts *o, const char *cpu_samples,
                   const char *cmd);

/*
 * Stops it after its final poll (call when the command's own files are flushed), prints a
 * summary line unless quiet, and frees it. Returns 0, or -1 when reports could not be written
 * (said on stderr). Safe on a follower never started.
 */
int follower_stop(struct follower *fw, const char *cmd, bool quiet);

#endif
