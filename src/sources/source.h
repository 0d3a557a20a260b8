/*
 * source: the one interface every power source implements (rapl, hwmon, nvml, model: the
 * estimating source, estimate.c).
 *
 * A source is probed once: it finds its devices below the root, appends one struct channel
 * per physical quantity to the shared channel set and opens the files it will read. Each
 * tick the sampler calls read(), which fills one struct reading per channel by pread() on
 * the files opened at probe time: no allocation, no open, no path formatting.
 *
 * Channels say what they are so that nothing is counted twice: the total-domain channels of
 * a source add up to what that source sees of the node; a component channel is already
 * contained in another (its parent, when that is a channel here) and is never added.
 * A missing value is marked invalid in the reading, never reported as 0 W.
 */
#ifndef CARMA_SOURCES_SOURCE_H
#define CARMA_SOURCES_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/channel_kind.h"
#include "core/err.h"
#include "core/fsroot.h"

enum channel_form { FORM_COUNTER, FORM_GAUGE };
enum channel_method { METHOD_MEASURED, METHOD_ESTIMATED };
/* total: a whole domain, added into node figures; component: part of another domain (its
 * parent when that is a channel here) or an unclassified reading: never added. */
enum channel_domain { DOMAIN_TOTAL, DOMAIN_COMPONENT };

#define CHANNEL_NAME_MAX  96
#define CHANNEL_LABEL_MAX 128
#define CHANNEL_PATH_MAX  256

struct channel {
    char name[CHANNEL_NAME_MAX];   /* unique, "<source>/<device>[/<sub>]", e.g. rapl/package-0 */
    const char *source;            /* static string: "rapl", "hwmon", "model" */
    enum channel_kind kind;        /* the device: cpu, dram, soc, gpu, system, other */
    char zone[32];                 /* the source's own role name: package, core, dram, psys,
                                      total, cpu_rail, soc, ... */
    char label[CHANNEL_LABEL_MAX]; /* raw label as the hardware names it */
    int socket;                    /* socket / package number, -1 when none applies */
    enum channel_domain domain;
    int parent;              /* index (in the set) of the containing channel, -1 if none
                                is a channel here */
    enum channel_form form;  /* native form: energy counter or power gauge */
    uint64_t counter_range;  /* counter wraps here (raw units); 0 = unknown */
    double counter_unit_j;   /* joules per raw counter unit */
    int64_t gauge_window_ns; /* averaging window of a gauge, 0 = unknown/instant */
    enum channel_method method;
    double idle_w;               /* the channel's static power when a model knows it, else
                                    NAN (set by channel_set_add) */
    char path[CHANNEL_PATH_MAX]; /* the file read, relative to the root (or a description) */
};

/* Bits of struct reading.valid. */
#define READING_ENERGY 1u /* energy_raw holds a counter value */
#define READING_POWER  2u /* power_w holds a gauge value */

struct reading {
    unsigned valid;
    int err;             /* negative errno of the last failure when a value is missing */
    uint64_t energy_raw; /* counter value in the channel's raw units */
    double power_w;      /* gauge value in watts */
};

#define CHANNELS_MAX 512

/* All channels of all sources, in probe order. Sources append; indexes are stable. */
struct channel_set {
    struct channel ch[CHANNELS_MAX];
    size_t n;
};

/* Node CPU utilization as the estimating source and the attribution need it (src/sources/procfs).
 */
struct procstat;

struct estimate_opts {
    double tdp_w;  /* per socket; <= 0: look the CPU up in the table */
    double idle_w; /* per socket; < 0: idle_fraction × TDP */
    double idle_fraction;
    int curve;              /* ESTIMATE_CURVE_* (estimate.h) */
    const char *table_path; /* CSV overriding the embedded data/cpu_tdp.csv; NULL = embedded */
    const char *model_file; /* a fitted model (carma model fit) replacing the TDP table; NULL:
                               none */
};

struct probe_ctx {
    const struct fsroot *root;
    struct channel_set *set;
    const struct procstat *util; /* updated by the sampler before every read */
    const struct estimate_opts *model;
    bool have_measured_cpu; /* a measured CPU-side channel was found by earlier sources */
    bool forced;            /* the user named this source in --sources */
    const char *spec;       /* a source named by a spec (the meter's --meter SPEC), else NULL */
    const struct source *probed; /* the sources probed before this one (status set) */
    size_t n_probed;
    int64_t interval_ns;   /* the sampler's period (0: unknown): sources that refresh on their
                              own (DCGM's watches) refresh at it */
    const char *dcgm_host; /* the dcgm source: a running nv-hostengine, "HOST[:PORT]"; NULL:
                              DCGM's embedded engine */
    int rapl_path;         /* the rapl source's read path: RAPL_PATH_* (sources/rapl.h), 0 auto */
};

struct source;

struct source_ops {
    const char *name;
    /*
     * Finds the source's channels and opens their files. Returns the number of channels
     * added (> 0); 0 or -ENOENT when the source is absent here; another negative errno when
     * it is present but unusable. In every case but success it writes s->reason: what is
     * wrong and how to fix it.
     */
    int (*probe)(struct source *s, struct probe_ctx *ctx);
    /* Fills out[0 .. s->count) for this tick. Must not allocate or open. */
    void (*read)(struct source *s, struct reading *out);
    /* Releases what probe acquired (safe after a failed probe). */
    void (*close)(struct source *s);
};

struct source {
    const struct source_ops *ops;
    void *priv;
    size_t first, count; /* this source's channels in the set */
    int status;          /* 0 usable, -ENOENT absent, other negative errno unusable */
    char reason[768];    /* when not usable: the exact reason and the fix */
    char note[768];      /* when usable: what the user should know (fallbacks, warnings) */
};

/* Static strings for the enums (the kind's: channel_kind_name, core/channel_kind.h). */
const char *channel_method_name(enum channel_method m);
const char *channel_domain_name(enum channel_domain d);

/*
 * The most power a reading of channel c can plausibly show, in watts (docs/sources.md): by
 * device kind, 5 kW for a cpu, soc or gpu (a whole CPU or GPU module, several times the largest
 * made), 2 kW for dram, 20 kW for a system or other reading (a whole node), 1 MW for a wall
 * meter. A gauge above it, or a counter step implying more, is an invalid reading: counted,
 * never integrated.
 */
#define CHANNEL_CPU_MAX_W    5000.0
#define CHANNEL_DRAM_MAX_W   2000.0
#define CHANNEL_GPU_MAX_W    5000.0
#define CHANNEL_SYSTEM_MAX_W 20000.0
#define CHANNEL_METER_MAX_W  1e6
double channel_power_max_w(const struct channel *c);
/* The same bound by kind (meter: a wall meter's channel), for readers of what was written. */
double channel_kind_power_max_w(enum channel_kind kind, bool meter);

/*
 * Appends a zeroed channel to the set and returns its index, or -ENOSPC when the set is
 * full. The caller fills it in.
 */
int channel_set_add(struct channel_set *set);

/* True when channel i is a total domain (contained in no other channel, added to node sums). */
static inline bool channel_is_total(const struct channel_set *set, size_t i)
{
    return set->ch[i].domain == DOMAIN_TOTAL;
}

/*
 * True when channel c is a wall meter's (src/sources/meter.h): a total of the whole node that
 * contains every other channel, the node's figure alone when present, never added to others.
 */
static inline bool channel_is_meter(const struct channel *c)
{
    return c->source && strcmp(c->source, "meter") == 0;
}

/* The list of known sources, in priority order (sources.def). */
extern const struct source_ops *const source_table[];
extern const size_t source_table_len;

/* Finds a source by name, or NULL. */
const struct source_ops *source_find(const char *name);

#endif
