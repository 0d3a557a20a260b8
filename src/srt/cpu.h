/*
 * srt/cpu: srt-slurm's head-node CPU power leg, written by `carma collect --srt-cpu` from the
 * CPU families that per-node exporters serve (srt-slurm's own cpu-power-exporter, or `carma
 * exporter --compat srtctl`), so that srt-slurm's power_energy_report reads carma's CPU data
 * as its own.
 *
 * Two halves:
 *   - srt_cpu_parse: srt-slurm's scrape parser (its cpu_parser.py, formats doc §5.6) on a
 *     parsed /metrics body: the ACPI family cpu_power_acpi_watts{type,socket,oem_info} first
 *     (a type outside total/cpu_rail/soc/dram or a bad socket label is re-derived from the
 *     oem_info text with the OEM label rules of §4.2, hwmon_classify_oem; what still does not
 *     classify is dropped), else the DCGM family cpu_power_dcgm_watts{socket}; values must be
 *     finite and >= 0. total_power_w: ACPI = the sum of the total-kind readings (none: no
 *     total), DCGM = the sum of every socket.
 *   - the writer: DIR/samples.csv, srt-slurm's CPU samples schema v1 (schema_version,
 *     timestamp_unix, hostname, source, sensor, socket_id, power_w, total_power_w), one row per
 *     reading in exporter order, total_power_w repeated on every row of a node's scrape (blank
 *     without a total); and DIR/cpu_manifest.json ({schema_version, producer,
 *     producer_git_commit, started_at_unix, stopped_at_unix, nodes: {host: {resolved_mode,
 *     scrape_count, error_count}}}, srt-slurm's keys in its order, written atomically at open
 *     and at finish).
 *
 * Rows end in CRLF (srt-slurm's csv.writer); timestamps have exactly 6 decimals (µs); watts are
 * fixed point with up to 6 decimals and at least one ("150.0", as Python writes floats). A
 * cycle (every node's scrape of one collector cycle) is written with one write(2), so that a
 * killed collector leaves whole cycles; a failed write cuts the file back to its last whole
 * cycle. In the steady state nothing is allocated (the row buffer keeps its largest size).
 */
#ifndef CARMA_SRT_CPU_H
#define CARMA_SRT_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/promparse.h"
#include "collect/scrape.h"
#include "core/err.h"

/* Readings kept per scrape (a Grace node has about 20 power_meter channels); more are
 * dropped and counted. */
#define SRT_CPU_READINGS_MAX 256

enum srt_cpu_mode {
    SRT_CPU_MODE_UNKNOWN, /* neither family gave a reading: the scrape writes no row */
    SRT_CPU_MODE_ACPI,
    SRT_CPU_MODE_DCGM,
};

struct srt_cpu_reading {
    const char *oem_info; /* ACPI: the oem_info label ("" when none), into the doc; DCGM: NULL */
    int socket;           /* >= 0 */
    int kind;             /* ACPI: an enum hwmon_oem_kind (never OTHER); DCGM: -1 */
    double power_w;       /* finite, >= 0 */
};

/* One node's scrape as srt-slurm's parser reads it. Valid while the doc it came from is. */
struct srt_cpu_scrape {
    enum srt_cpu_mode mode;
    size_t n;
    size_t dropped; /* readings beyond SRT_CPU_READINGS_MAX */
    bool has_total; /* false: total_power_w is blank (an ACPI scrape without a total) */
    double total_power_w;
    struct srt_cpu_reading r[SRT_CPU_READINGS_MAX];
};

/* Reads doc (NULL: an unparseable body, mode unknown) into *out as §5.6 says. */
void srt_cpu_parse(const struct prom_doc *doc, struct srt_cpu_scrape *out);

/* "acpi", "dcgm" or "unknown". */
const char *srt_cpu_mode_name(enum srt_cpu_mode mode);

struct srt_cpu;

/*
 * Creates dir (and its parents), dir/samples.csv with its header (replacing one there) and
 * dir/cpu_manifest.json. nodes[0..nnodes) are the hosts scraped, in order (a name listed
 * twice is one node of the manifest); srt_cpu_node takes an index into this list. Returns
 * NULL with e set (naming the file) on failure.
 */
struct srt_cpu *srt_cpu_open(const char *dir, const char *const *nodes, size_t nnodes,
                             struct carma_err *e);

/* Starts a cycle. */
void srt_cpu_cycle_begin(struct srt_cpu *w);

/*
 * Adds node's scrape to the current cycle (ignored outside one): its rows, stamped real_ns
 * (realtime, taken after the body arrived), and counts a poll in the manifest (an error when
 * it gave no row). s NULL: the poll failed (no answer, an HTTP error, an unparseable body):
 * counted as a poll and an error. A poll abandoned at the cycle's deadline is not counted:
 * do not call this for it.
 */
void srt_cpu_node(struct srt_cpu *w, size_t node, int64_t real_ns, const struct srt_cpu_scrape *s);

/*
 * Writes the cycle's rows with one write(2) (none: nothing). Returns 0 or a negative errno
 * with e set naming the file; after a failed write the file is cut back to its last whole
 * cycle and later cycles are tried again.
 */
int srt_cpu_cycle_end(struct srt_cpu *w, struct carma_err *e);

/* Rows written so far. */
uint64_t srt_cpu_rows(const struct srt_cpu *w);

/*
 * Syncs samples.csv, writes the final cpu_manifest.json (stopped_at_unix set) and frees w
 * (NULL-safe). Returns 0 or a negative errno with e set (the first error).
 */
int srt_cpu_finish(struct srt_cpu *w, struct carma_err *e);

/*
 * The writer as collect/scrape's sink (scrape_opts.srt_cpu): open is srt_cpu_open, node reads
 * a scrape's parsed body with srt_cpu_parse (into the writer's own buffer) and adds it with
 * srt_cpu_node, the others are srt_cpu_cycle_begin, srt_cpu_cycle_end and srt_cpu_finish.
 */
extern const struct scrape_sink srt_cpu_sink;

#endif
