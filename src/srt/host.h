/*
 * srt/host: srt-slurm's in-job host collector (its `python3 -m srtctl.core.cpu_power`, PR #410,
 * samples schema 3; schema 4 of its PR #453), written by `carma record` on each worker node:
 * nodes/<host>.csv, nodes/<host>.metadata.json and the ready markers ready/<host>.ready.json or
 * ready/<host>.error.json, which srt-slurm's head node (or `carma merge`) aggregates.
 *
 * Sensors (chosen once, from the sampler's channel set, sorted by name as the host collector
 * orders its rows):
 *   - ACPI: the hwmon source's first power_meter channel of each (socket, kind), the channels
 *     hwmon/power_meter/socket<N>/<total|cpu_rail|soc|dram> (the hwmon source keeps the first of
 *     each in hwmon directory order, as the host reader does), named CPU<N>:cpuSidePowerUsageW,
 *     CPU<N>:cpuRailPowerUsageW, CPU<N>:socPowerUsageW and CPU<N>:dramPowerUsageW.
 *   - DCGM: the dcgm source's channels dcgm/cpu<N> (field 1130), named CPU<N>:cpuPowerUsageW,
 *     with DCGM's utilization of socket N (fields 1100-1104).
 *
 * Rows, schema 3: one per valid reading (finite, >= 0 W), columns schema_version,
 * timestamp_unix, timestamp_local, hostname, source, sensor, socket_id, power_w, total_power_w,
 * cpu_util_total, cpu_util_user, cpu_util_nice, cpu_util_sys, cpu_util_irq. total_power_w: ACPI
 * = the sum of the total-kind readings when every total-kind sensor read (else blank: srt-slurm
 * writes the text `None` there, which its own energy report cannot read), DCGM = the sum of the
 * valid sockets. Utilization cells: DCGM only, each blank where DCGM gave no value.
 * Schema 4: one row per socket with a valid primary reading (ACPI total, DCGM value): sensor,
 * socket_id, power_w, cpu_rail_w, soc_w, dram_w (ACPI rails, blank for DCGM or a rail that did
 * not read), total_power_w = the sum of power_w over the rows of the cycle, utilization.
 * A cycle without any row is a read failure (counted, nothing written).
 *
 * Cells: timestamp_unix with 6 decimals (µs), timestamp_local = Python's
 * datetime.fromtimestamp(ts).astimezone().isoformat() of the same µs (".ffffff" left out when it
 * is 0, the offset as +HH:MM, +HH:MM:SS when it has seconds), watts and ratios with up to 6
 * decimals and at least one. Rows end in CRLF. A cycle is written with one write(2) (core/journal:
 * a failed write is cut back to the last whole cycle); in the steady state nothing is allocated or
 * opened. JSON files: json.dumps(indent=2, sort_keys=True) + newline, replaced atomically.
 */
#ifndef CARMA_SRT_HOST_H
#define CARMA_SRT_HOST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/csv.h"
#include "core/err.h"
#include "sources/hwmon.h"
#include "sources/source.h"

#define SRT_HOST_SENSORS_MAX 64
#define SRT_HOST_UTIL        5 /* total, user, nice, sys, irq */
#define SRT_HOST_SCHEMA_MIN  3
#define SRT_HOST_SCHEMA_MAX  4

enum srt_host_source { SRT_HOST_ACPI, SRT_HOST_DCGM };

struct srt_host_sensor {
    char name[48];            /* CPU<n>:cpuSidePowerUsageW, ... */
    int socket;               /* >= 0 */
    enum hwmon_oem_kind kind; /* ACPI: the kind; DCGM: HWMON_OEM_TOTAL (the socket's figure) */
    size_t channel;           /* its index in the channel set */
};

/* One sensor's reading of a cycle. */
struct srt_host_value {
    bool valid; /* a finite reading >= 0 */
    double power_w;
    double util[SRT_HOST_UTIL]; /* DCGM: ratios 0..1, NAN where DCGM gave none; ACPI: unused */
};

/* "acpi" or "dcgm". */
const char *srt_host_source_name(enum srt_host_source s);

/*
 * The sensors of source src in set, sorted by name, into out[0 .. cap). Returns how many.
 * ACPI: the hwmon channels named hwmon/power_meter/socket<N>/<kind>; DCGM: dcgm/cpu<N>.
 */
size_t srt_host_sensors(const struct channel_set *set, enum srt_host_source src,
                        struct srt_host_sensor *out, size_t cap);

/* Whether sensors[0 .. n) has a socket total (the host collector's condition for ACPI). */
bool srt_host_has_total(const struct srt_host_sensor *sensors, size_t n);

/* The header line of schema 3 or 4, CRLF included (NULL for another schema). */
const char *srt_host_header(int schema);

/*
 * Writes real_ns (its µs) as Python's datetime.fromtimestamp(t).astimezone().isoformat() in
 * this host's time zone (TZ) into buf (cap >= 48), "2026-09-01T17:29:03.627448-07:00". Returns
 * the length (0 when the time cannot be shown). Call tzset() once before the sampling loop.
 */
size_t srt_host_local_time(char *buf, size_t cap, int64_t real_ns);

/*
 * Appends the rows of one cycle (stamped real_ns) to b: sensors s[0 .. n) with their values
 * v[0 .. n), host already a CSV field (csv_buf_field). Returns the number of rows (0: a read
 * failure), or -ENOMEM (b could not grow; b as it was).
 */
int srt_host_rows(struct csv_buf *b, int schema, enum srt_host_source src, const char *host,
                  int64_t real_ns, const struct srt_host_sensor *s, const struct srt_host_value *v,
                  size_t n);

struct srt_host_opts {
    const char *nodes_dir; /* nodes/ (made with its parents) */
    const char *host;
    int schema;
    enum srt_host_source source;
    const char *requested_source; /* "auto", "acpi", "dcgm" */
    int64_t interval_ns;
    int64_t started_ns; /* realtime */
    const struct channel_set *set;
    const struct srt_host_sensor *sensors; /* sorted, as srt_host_sensors gives them */
    size_t n;
    const char *root; /* the --root, for the sensors' paths ("/" when NULL) */
};

struct srt_host;

/* Creates nodes/<host>.csv with its header and nodes/<host>.metadata.json. Returns NULL with e
 * set (naming the file) on failure. */
struct srt_host *srt_host_open(const struct srt_host_opts *o, struct carma_err *e);

/*
 * One cycle: the rows of v[0 .. n) (n as opened) with one write(2). Returns the rows written
 * (0: a read failure, counted), or a negative errno with e set (the file cut back to its last
 * whole cycle).
 */
int srt_host_cycle(struct srt_host *w, int64_t real_ns, const struct srt_host_value *v,
                   struct carma_err *e);

uint64_t srt_host_row_count(const struct srt_host *w);
uint64_t srt_host_failure_count(const struct srt_host *w);

/* The metadata object (final: with ended_at_unix = ended_ns, the counts and the status). */
json_t *srt_host_metadata(const struct srt_host *w, bool final, int64_t ended_ns);

/* Syncs the CSV, writes the final metadata (ended now) and frees w (NULL-safe). Returns 0 or a
 * negative errno with e set. */
int srt_host_finish(struct srt_host *w, struct carma_err *e);

/* ready/<host>.ready.json {"hostname","ready_at_unix","source"}; ready/<host>.error.json
 * {"error","hostname"} (ready_dir made with its parents). Return 0 or a negative errno, e set. */
int srt_host_ready(const char *ready_dir, const char *host, const char *source, int64_t real_ns,
                   struct carma_err *e);
int srt_host_error(const char *ready_dir, const char *host, const char *error, struct carma_err *e);

/* Writes j (consumed) as path like srt-slurm's host collector: json.dumps(indent=2,
 * sort_keys=True) + newline, atomically. */
int srt_host_json_write(json_t *j, const char *path, struct carma_err *e);

#endif
