/*
 * collector: the parts of `carma collect` (the head-node collector) that need no network:
 * the targets (HOST:PORT, [v6addr]:PORT and URLs; a targets file; the nodes of the current
 * Slurm job), the rows a scrape gives in samples.csv and nodes.csv, and the retry backoff of a
 * target that is down. The HTTP side (libcurl) is collect/scrape.c.
 *
 * samples.csv (schema 1): schema_version, timestamp_unix, scrape_seq, node, target, channel,
 * source, kind, domain, method, watts, joules_total: one row per carma_power_watts sample of a
 * scrape, joules_total from the carma_energy_joules_total sample with the same labels; one row
 * with blank channel..joules_total cells for a target that gave none (down, skipped, an
 * unparseable body, or a body without that family).
 * nodes.csv (schema 1): schema_version, timestamp_unix, scrape_seq, node, target, method, watts,
 * joules_total, cpu_util_total, cpu_util_user, cpu_util_nice, cpu_util_sys, cpu_util_irq: one
 * row per carma_node_power_watts sample (joules from carma_node_energy_joules_total with the
 * same labels, utilization from carma_cpu_utilization_ratio{mode} of the same node), or one
 * row with blank cells.
 * Both: CRLF row ends, RFC 4180 quoting, timestamps with 6 decimals, numbers fixed point with
 * up to 6 decimals (a NaN or infinite value is a blank cell), one write(2) per file per cycle
 * (a failed write cuts the file back to its last whole cycle; later cycles are tried again).
 * The rows of one target are written together, targets in the order they are given.
 */
#ifndef CARMA_COLLECT_COLLECTOR_H
#define CARMA_COLLECT_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/dcgm.h"
#include "collect/promparse.h"
#include "core/err.h"
#include "sampler/sampler.h"

#define COLLECT_DEFAULT_PORT 9405
#define COLLECT_DCGM_PORT    9400 /* dcgm-exporter's default port */
#define COLLECT_TARGETS_MAX  4096
#define COLLECT_HOST_MAX     255

struct collect_target {
    char *name; /* as the rows show it: "host:port", "[v6addr]:port", or the URL as given */
    char *url;  /* what is fetched, e.g. "http://[::1]:9405/metrics" */
    char *node; /* the node: the Slurm host name, else the host (an IPv6 address unbracketed) */
    bool node_given; /* node was given (a Slurm node name): it names the rows, not the exporter */
    bool dcgm;       /* named a dcgm-exporter target ("dcgm:HOST[:PORT]") */
};

struct collect_targets {
    struct collect_target *t;
    size_t n, cap;
};

/*
 * Parses one target into *ret (free with collect_target_done): "HOST", "HOST:PORT",
 * "dcgm:TARGET" (TARGET any of the forms below: a dcgm-exporter, COLLECT_DCGM_PORT when it names
 * no port; its name keeps the "dcgm:"; "dcgm:" followed by digits only is the host "dcgm" and a
 * port, a plain target),
 * "[V6ADDR]", "[V6ADDR]:PORT", a bare IPv6 address ("::1": no port can follow one), or an
 * "http://" / "https://" URL (a URL without a port gets default_port too, without a path
 * "/metrics"). HOST is a DNS name or an IPv4 address; a zone in an IPv6 address ("fe80::1%eth0")
 * is written %25 in the URL. node NULL: the host (node_given false). Returns 0 or -EINVAL with
 * e saying what is wrong with spec.
 */
int collect_target_parse(const char *spec, unsigned default_port, const char *node,
                         struct collect_target *ret, struct carma_err *e);

void collect_target_done(struct collect_target *t);

/* Parses spec and appends it to ts. where (NULL: none) prefixes error messages ("F:3: ").
 * Returns 0, -EINVAL (a bad target, or one listed twice: same URL), -E2BIG (over
 * COLLECT_TARGETS_MAX), -ENOMEM, with e set. */
int collect_targets_add(struct collect_targets *ts, const char *spec, unsigned default_port,
                        const char *node, const char *where, struct carma_err *e);

/* Reads a targets file: one target per line; '#' starts a comment; blank lines are skipped.
 * Errors name the file and line ("targets.txt:3: bad target 'x:y': ..."). Returns the number of
 * targets added, or a negative errno with e set. */
int collect_targets_file(struct collect_targets *ts, const char *path, unsigned default_port,
                         struct carma_err *e);

/*
 * The nodes of the current Slurm job at port (and, dcgm_port not 0, their dcgm-exporters at
 * dcgm_port, "dcgm:NODE:PORT" targets added after all the others): $SLURM_JOB_NODELIST (else
 * $SLURM_NODELIST) expanded by `scontrol show hostnames LIST` (the program scontrol, NULL:
 * "scontrol", looked up in PATH), each added with its host name as node. Returns the number added,
 * or -ENOENT (not in a job, or no scontrol), -EIO (scontrol failed: its exit status and last stderr
 * line in e), -EINVAL (an output line that is not a host name), with e set.
 */
int collect_slurm_targets(struct collect_targets *ts, unsigned port, unsigned dcgm_port,
                          const char *scontrol, struct carma_err *e);

void collect_targets_free(struct collect_targets *ts);

/* What collect_out_target found in a body. */
struct collect_scrape_info {
    size_t power_rows;      /* carma_power_watts samples written */
    size_t node_rows;       /* carma_node_power_watts samples written */
    size_t negative;        /* power samples below 0 W, written as missing (blank) */
    bool srt_cpu;           /* the body has cpu_power_acpi_watts or cpu_power_dcgm_watts */
    const char *node_label; /* the first non-empty node label (into the doc), or NULL */
};

struct collect_out;

/*
 * The name of the samples file of a collect directory: samples.csv for carma collect's own,
 * COLLECT_HOST_SAMPLES (carma_samples.csv) for carma record's per-node recordings and carma
 * merge's join of them. Those live inside an srt-slurm log directory (cpu_power/carma/...),
 * and srt-slurm's power report takes every file named samples.csv below the log directory
 * as a power series: another name keeps its discovery as it was.
 */
#define COLLECT_SAMPLES      "samples.csv"
#define COLLECT_HOST_SAMPLES "carma_samples.csv"

/* The samples file of the collect directory dir: COLLECT_SAMPLES when it is there, else
 * COLLECT_HOST_SAMPLES when that is, else COLLECT_SAMPLES (for the reader's "not found"). */
const char *collect_samples_name(const char *dir);

/* Creates dir/SAMPLES (COLLECT_SAMPLES or COLLECT_HOST_SAMPLES) and dir/nodes.csv (replacing
 * them) with their headers. dir must exist. Returns NULL with e set naming the file. */
struct collect_out *collect_out_open(const char *dir, const char *samples, struct carma_err *e);

/* Starts the rows of cycle seq. */
void collect_out_cycle_begin(struct collect_out *o, uint64_t seq);

/*
 * Adds the rows of one target's scrape, stamped real_ns: doc NULL gives the blank rows of a
 * target that gave nothing. node: the node column; with label_wins, a sample's own non-empty
 * node label goes there instead (and the first such label names the blank rows of a body
 * without samples). target: the target column. info (may be NULL) says what the body held.
 */
void collect_out_target(struct collect_out *o, int64_t real_ns, const char *node, bool label_wins,
                        const char *target, const struct prom_doc *doc,
                        struct collect_scrape_info *info);

/*
 * Adds the rows of one dcgm-exporter target's scrape (d: its body read by collect/dcgm),
 * stamped real_ns: one samples.csv row per reading, in body order: a GPU as channel
 * "dcgm/gpu<N>" (N its gpu label), source "dcgm", kind "gpu", domain "total", method "measured",
 * watts its DCGM_FI_DEV_POWER_USAGE, joules_total its DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION in J
 * (blank cells when absent); a MIG instance as "dcgm/gpu<N>/mig<GPU_I_ID>" with domain
 * "component" (the figures dcgm-exporter repeats on it are its GPU's: never added to a node's
 * total). No reading: one row with blank cells. nodes.csv: one row with blank cells (a
 * dcgm-exporter gives no node power). node names the rows (never the exporter's Hostname
 * label). info (may be NULL): power_rows = the rows written, node_label NULL.
 */
void collect_out_dcgm(struct collect_out *o, int64_t real_ns, const char *node, const char *target,
                      const struct dcgm_scrape *d, struct collect_scrape_info *info);

/*
 * Adds the rows of this node's own sampler s at its current tick (`carma record`), stamped with
 * the tick's realtime: one samples.csv row per channel (channel, source, kind, domain, method as
 * `carma exporter` labels them, watts over the last tick, blank when unknown, joules_total its
 * energy since the first reading), and one nodes.csv row: method (measured, estimated or
 * measured+estimated), the node's watts (sampler_select_node; blank unless every channel of it
 * read), joules and CPU utilization (blank before two reads of proc/stat). node and target name
 * the rows. Allocates nothing once the buffers have grown to a cycle.
 */
void collect_out_sampler(struct collect_out *o, const char *node, const char *target,
                         const struct sampler *s);

/* Writes the cycle's rows (one write(2) per file). Returns 0 or a negative errno with e set
 * naming the file; the rows written before stay. */
int collect_out_cycle_end(struct collect_out *o, struct carma_err *e);

/* Rows written so far to samples.csv. */
uint64_t collect_out_rows(const struct collect_out *o);

/* Syncs and closes the files and frees o (NULL-safe). Returns 0 or a negative errno, e set. */
int collect_out_close(struct collect_out *o, struct carma_err *e);

/*
 * Retry backoff of a target: after its f-th failure in a row the next min(2^(f-1), max_skip)
 * cycles are skipped (1, 2, 4, ...); a success resets it.
 */
struct collect_backoff {
    unsigned failures; /* in a row */
    uint64_t next_seq; /* the first cycle it is tried again */
};

/* Whether the target is scraped in cycle seq. */
bool collect_backoff_due(const struct collect_backoff *b, uint64_t seq);

/* Records the outcome of the scrape of cycle seq. */
void collect_backoff_record(struct collect_backoff *b, uint64_t seq, bool ok, uint64_t max_skip);

#endif
