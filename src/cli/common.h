/*
 * common: what every subcommand shares: the common options (--root, --interval, --sources,
 * model overrides, -q/-v), building a sampler from them, error-text helpers and JSON output.
 */
#ifndef CARMA_CLI_COMMON_H
#define CARMA_CLI_COMMON_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "sampler/sampler.h"

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
    OPT_JSON,
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
        {"json", no_argument, NULL, OPT_JSON}, {"quiet", no_argument, NULL, 'q'},                  \
    {                                                                                              \
        "verbose", no_argument, NULL, 'v'                                                          \
    }

#define COMMON_OPTIONS_HELP                                                                        \
    "  --root DIR          read sysfs/procfs below DIR instead of / (fixtures, containers)\n"      \
    "  --interval T        sampling period, 1ms..60s (e.g. 100ms, 1s, 2500us; default 100ms)\n"    \
    "  --sources LIST      comma-separated sources to use: rapl,hwmon,model (default: all)\n"      \
    "  --cpu-tdp W         model: CPU power at full load per socket (default: data table)\n"       \
    "  --cpu-idle W        model: CPU power at idle per socket (default: 0.12 x TDP)\n"            \
    "  --model-curve C     model: fan (2u - u^1.4, default) or linear (u)\n"                       \
    "  --cpu-table FILE    model: a CSV replacing the embedded data/cpu_tdp.csv\n"                 \
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

/* A short human text for a reading's negative errno. */
const char *reading_error_text(int err);

/* Adds a real to a JSON object, or null when v is not finite. */
void json_set_num(json_t *obj, const char *key, double v);

/* Writes JSON to path atomically (temp file, fsync, rename). Returns 0 or -errno. */
int json_write_file(const json_t *j, const char *path);

/* Describes every channel of the sampler as JSON (for --json and manifest.json). */
json_t *channels_json(const struct sampler *s);

/*
 * The part of a run directory's manifest.json that every producer shares: schema_version,
 * producer, carma_version, host, options (root, interval_s), channels, unavailable, notes.
 * The caller adds its schema_versions, its own options and the status.
 */
json_t *manifest_base(const struct sampler *s, const char *producer);

/* Describes unusable sources and notes as JSON arrays. */
json_t *unavailable_json(const struct sampler *s);
json_t *notes_json(const struct sampler *s);

#endif
