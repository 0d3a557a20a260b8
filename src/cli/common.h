/*
 * common: what every subcommand shares: the common options (--root, --interval, --sources,
 * model overrides, -q/-v), building a sampler from them, error-text helpers and JSON printing.
 */
#ifndef CARMA_CLI_COMMON_H
#define CARMA_CLI_COMMON_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>

#include "sampler/sampler.h"
#include "sources/dcgm.h"

#define CARMA_VERSION "0.1.0"

struct common_opts {
    struct sampler_opts sampler;
    int verbose; /* -1 quiet, 0 normal, 1 verbose */
    bool json;
};

/* getopt_long ids for the common long options (values above 255) */
enum {
    OPT_ROOT = 256,
    OPT_INTERVAL,
    OPT_SOURCES,
    OPT_CPU_TDP,
    OPT_CPU_IDLE,
    OPT_MODEL_CURVE,
    OPT_CPU_TABLE,
    OPT_MODEL_FILE,
    OPT_JSON,
    OPT_METER,
    OPT_DCGM_HOST,
    OPT_RAPL_PATH,
    OPT_COMMON_LAST,
};

#define COMMON_LONG_OPTIONS                                                                        \
    {"root", required_argument, NULL, OPT_ROOT},                                                   \
        {"interval", required_argument, NULL, OPT_INTERVAL},                                       \
        {"sources", required_argument, NULL, OPT_SOURCES},                                         \
        {"cpu-tdp", required_argument, NULL, OPT_CPU_TDP},                                         \
        {"cpu-idle", required_argument, NULL, OPT_CPU_IDLE},                                       \
        {"model-curve", required_argument, NULL, OPT_MODEL_CURVE},                                 \
        {"cpu-table", required_argument, NULL, OPT_CPU_TABLE},                                     \
        {"model-file", required_argument, NULL, OPT_MODEL_FILE},                                   \
        {"json", no_argument, NULL, OPT_JSON}, {"meter", required_argument, NULL, OPT_METER},      \
        {"dcgm-host", required_argument, NULL, OPT_DCGM_HOST},                                     \
        {"rapl-path", required_argument, NULL, OPT_RAPL_PATH}, {"quiet", no_argument, NULL, 'q'},  \
    {                                                                                              \
        "verbose", no_argument, NULL, 'v'                                                          \
    }

#define COMMON_OPTIONS_HELP                                                                        \
    "  --root DIR          read sysfs/procfs below DIR instead of / (fixtures, containers)\n"      \
    "  --interval T        sampling period, 1ms..60s (e.g. 100ms, 1s, 0.5; default 100ms)\n"       \
    "  --sources LIST      comma-separated sources to use: rapl,hwmon,nvml,dcgm,model (default:\n" \
    "                      all)\n"                                                                 \
    "  --dcgm-host H[:P]   dcgm: read through the nv-hostengine at H (port P, default 5555)\n"     \
    "                      instead of DCGM's embedded engine\n"                                    \
    "  --rapl-path P       rapl: read through powercap, perf (the RAPL perf PMU) or auto (the\n"   \
    "                      faster here, timed at start; default auto)\n"                           \
    "  --cpu-tdp W         model: CPU power at full load per socket (default: data table)\n"       \
    "  --cpu-idle W        model: CPU power at idle per socket (default: 0.12 x TDP)\n"            \
    "  --model-curve C     model: fan (2u - u^1.4, default) or linear (u)\n"                       \
    "  --cpu-table FILE    model: a CSV replacing the embedded data/cpu_tdp.csv\n"                 \
    "  --meter SPEC        a wall power meter, the node's figure: wattsup:DEVICE (Watts Up? Pro\n" \
    "                      on a serial line) or cmd:COMMAND (prints watts, run every second);\n"   \
    "                      may be given up to 4 times (separate feeds, added up)\n"                \
    "  --model-file FILE   model: a fitted model (carma model fit) instead of the TDP table\n"     \
    "  -q, --quiet / -v, --verbose\n"

/* Sets the defaults. */
void common_opts_init(struct common_opts *o);

/*
 * Handles one common option returned by getopt_long (c, optarg). Returns 1 if handled,
 * 0 if c is not a common option, -1 after printing an error about a bad value.
 */
int common_opts_handle(struct common_opts *o, int c, const char *arg);

/* Prints "carma: " + message to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cli_error("%s", msg): how cli/ says what a lower module says through a callback (ctx unused;
 * e.g. rundir/writer's say). */
void cli_say(void *ctx, const char *msg);

/* A short human text for a reading's negative errno. */
const char *reading_error_text(int err);

/* Prints j to f as carma writes its JSON files (2-space indent, keys in order), and a newline. */
void cli_print_json(FILE *f, const json_t *j);

/*
 * Prints, for every --meter that could not be used, "carma: OPTION: reason" (OPTION e.g.
 * "--meter" or "monitoring.meter") and returns -1; 0 when every meter is usable. A meter that
 * was asked for and is not there must stop a measurement: its figures would be the node's.
 */
int common_meters_check(const struct sampler *s, const char *option);

/*
 * "rest of system" over the sampler's window when a wall meter is the node's figure: an object
 * {energy_j, meter_energy_j, metered_energy_j, meters, channels, method} with energy_j =
 * the meters' energy - the measured channels they contain (sampler_select_metered), null
 * when a figure is missing; NULL when there is no usable meter.
 */
json_t *rest_of_system_json(const struct sampler *s);

/* Prints the "rest of system" line of rest_of_system_json's object j to f (nothing for NULL). */
void rest_of_system_print(FILE *f, const json_t *j);

/* Prints one line per meter (records, garbage lines, reconnects) to f, each after prefix. */
void meters_print(FILE *f, const struct sampler *s, const char *prefix);

/* The CPU sockets of a usable dcgm source (DCGM's CPU entities, whose utilization
 * dcgm_source_cpu_util gives), in ascending order. */
struct common_dcgm_cpus {
    const struct source *src; /* NULL when there is none */
    unsigned socket[DCGM_SRC_CPUS_MAX];
    size_t n;
};

/*
 * Finds the usable dcgm source of s and its CPU sockets into *ret (once, after the probe: the
 * tick path then calls dcgm_source_cpu_util alone). Returns the number of sockets; 0 (ret->src
 * NULL) when no dcgm source is usable or it has no CPU entity.
 */
size_t common_dcgm_cpus(const struct sampler *s, struct common_dcgm_cpus *ret);

/*
 * Parses a duration option's value by the one rule (core/parse: a plain number is seconds, or
 * a number with a unit) into *ret, within [min_ns, max_ns]. On a bad value prints
 * "carma: OPT: 'ARG' is not a duration from MIN to MAX: a plain number is seconds ..." and
 * returns -1; else 0.
 */
int cli_duration(const char *opt, const char *arg, int64_t min_ns, int64_t max_ns, int64_t *ret);

/* The help line of --socket-group, for the commands with a marks socket. */
#define SOCKET_GROUP_HELP                                                                          \
    "  --socket-group G    the marks socket is group G's too (mode 0660; default 0600: yours\n"    \
    "                      alone); G a group name or number\n"

/* --socket-group's argument: a group name or number into *gid. Prints "carma: CMD:
 * --socket-group: no group 'G'" and returns -1 when there is none; else 0. */
int cli_socket_group(const char *cmd, const char *arg, gid_t *gid);

/*
 * getopt_long for every subcommand, with exact long option names only: an abbreviation
 * ("--json" where only --json-out exists, "--int") is refused like an unknown option. Every
 * problem is printed here, once ("carma: CMD: unknown option '--intervl': did you mean
 * '--interval'?", "option '--output' needs a value") and returned as '?'; otherwise returns
 * what getopt_long does (-1 at the end, optarg and optind as it sets them).
 */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               const char *cmd);

/*
 * The names of names[0..n) a person who typed `typed` most likely meant: the names it is the
 * beginning of, else the nearest by edits (within 1 + len/4). Writes them to buf quoted with
 * prefix ("'--json' or '--json-out'") and returns how many (0: none near; buf is "").
 */
size_t cli_suggest(const char *typed, const char *const *names, size_t n, const char *prefix,
                   char *buf, size_t cap);

#endif
