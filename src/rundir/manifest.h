/*
 * manifest: a run directory's manifest.json (docs/formats.md), written by `carma run` and
 * `carma stat -o DIR`: who wrote it (producer, version, pid, host and boot), the options, the
 * channels and the sources that could not be used, the schema of each file, how the
 * measurement went. The sampler's parts of it (channels, unavailable sources, notes, meters)
 * are also what `carma sensors --json` and the reports print.
 */
#ifndef CARMA_RUNDIR_MANIFEST_H
#define CARMA_RUNDIR_MANIFEST_H

#include <jansson.h>

#include "sampler/sampler.h"

/* Every channel of the sampler (name, source, kind, zone, domain, parent, method, ...). */
json_t *rundir_manifest_channels(const struct sampler *s);

/* The sources that could not be used ({source, reason}) and the notes of those used
 * ({source, note}), as arrays. */
json_t *rundir_manifest_unavailable(const struct sampler *s);
json_t *rundir_manifest_notes(const struct sampler *s);

/*
 * The meters' counters as a JSON array, one object per meter (spec, channel, records,
 * garbage_lines, disconnects, reconnects, connected, last_watts, last_error), [] when none.
 */
json_t *rundir_manifest_meters(const struct sampler *s);

/* What a producer adds to the manifest that every producer shares. */
struct rundir_manifest {
    const char *producer;       /* "carma run", "carma stat" */
    const char *version;        /* carma_version */
    const char *const *schemas; /* schema_versions: the files at version 1, NULL-ended */
    json_t *options;            /* added to options after root and interval_s (taken; may be
                                   NULL) */
    json_t *command;            /* the command measured (taken), NULL for none */
    const char *status;         /* "running", "complete", "interrupted", "failed" */
    json_t *interruption;       /* the signal that stopped it (taken) */
};

/*
 * manifest.json: schema_version, producer, carma_version, host (with boot_id), pid,
 * pid_start_ticks, options (root, interval_s, then o->options), channels, unavailable, notes,
 * meters (when there is one), then o's schema_versions, command, status and interruption, in
 * that order.
 */
json_t *rundir_manifest_json(const struct sampler *s, const struct rundir_manifest *o);

#endif
