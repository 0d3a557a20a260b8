/*
 * sampler: one clock, one tick. Probes the sources once, then on every tick reads every
 * channel, turns readings into energy (wrap-safe counters, trapezoid on gauges), updates
 * node utilization, and hands the tick to whoever listens (samples.csv, attribution).
 *
 * The tick path allocates nothing and opens nothing. The clock is a timerfd on
 * CLOCK_MONOTONIC; integration uses monotonic time and records carry realtime stamps.
 */
#ifndef CARMA_SAMPLER_SAMPLER_H
#define CARMA_SAMPLER_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/energy.h"
#include "core/err.h"
#include "core/fsroot.h"
#include "sources/procfs.h"
#include "sources/source.h"

#define SAMPLER_INTERVAL_MIN_NS     1000000LL     /* 1 ms */
#define SAMPLER_INTERVAL_MAX_NS     60000000000LL /* 60 s */
#define SAMPLER_INTERVAL_DEFAULT_NS 100000000LL   /* 100 ms */
#define SAMPLER_METERS_MAX          4             /* --meter given at most this often */
#define SAMPLER_SOURCES_MAX         (8 + SAMPLER_METERS_MAX)
/* proc/stat counts in clock ticks of 10 ms (USER_HZ 100) and is costly to generate (the
 * kernel sums every interrupt counter): it is re-read at most this often. */
#define SAMPLER_UTIL_PERIOD_NS 10000000LL

struct sampler_opts {
    const char *root;      /* "/" when NULL */
    int64_t interval_ns;   /* 0: default */
    const char *sources;   /* comma-separated names, NULL: all in priority order */
    const char *dcgm_host; /* the dcgm source's nv-hostengine, "HOST[:PORT]"; NULL: embedded */
    int rapl_path;         /* the rapl source's read path: RAPL_PATH_* (sources/rapl.h), 0 auto */
    struct estimate_opts model;
    /* wall meters (src/sources/meter.h): "wattsup:DEVICE", "cmd:COMMAND"; probed after the
     * sources above, whatever --sources says, one meter source each */
    const char *meters[SAMPLER_METERS_MAX];
    size_t n_meters;
};

/* Per-channel integration state and running figures. */
struct chan_state {
    struct energy_counter ctr;
    int64_t last_t; /* mono time of the last valid reading */
    double last_power_w;
    bool have_last;
    double energy_j;      /* since the first valid reading */
    int64_t covered_ns;   /* time spanned by the integrated steps (gaps, resets excluded) */
    double tick_energy_j; /* energy of the last tick (0 if unknown) */
    double watts;         /* power over the last tick, NAN when unknown */
    bool tick_valid;      /* this tick's reading was valid */
    uint64_t samples;     /* valid readings */
    uint64_t invalid;     /* missing readings */
    int last_err;         /* negative errno of the last missing reading */
    uint64_t wraps, resets;
    double min_w, max_w; /* over the window (sampler_window_start) */
    /* figures at the start of the window */
    double win_energy_j;
    int64_t win_covered_ns;
    double win_xgauge_j, win_xcounter_j;
    /* counter channels with a gauge beside them: both integrated over the same steps */
    bool have_gauge;
    double xgauge_j, xcounter_j;
    uint64_t win_samples, win_invalid, win_wraps, win_resets;
};

struct sampler {
    struct fsroot root;
    struct procstat util;
    bool have_util;
    bool util_fresh;   /* util was re-read on this tick (its deltas are this tick's) */
    int64_t util_last; /* monotonic time of the last re-read */
    struct carma_err util_err;
    struct source src[SAMPLER_SOURCES_MAX];
    size_t nsrc;
    struct channel_set set;
    struct reading readings[CHANNELS_MAX];
    int64_t read_t[CHANNELS_MAX]; /* monotonic time each channel's source was read this tick
                                   * (a counter's steps are timed by it) */
    struct chan_state st[CHANNELS_MAX];
    int64_t interval_ns;
    int timerfd;
    int64_t t_first, t_prev, t_now; /* monotonic */
    int64_t real_first, real_now;   /* realtime of the first and the current tick */
    uint64_t ticks;
    int64_t t_win, real_win; /* monotonic and realtime of the window's first tick */
    uint64_t overruns;       /* timer expirations missed */
};

/*
 * Allocates a sampler, opens the root, probes the selected sources. Returns NULL with e set
 * on a fatal error (bad root, unknown source name, out of memory). A source that is absent
 * or unusable is not fatal: it is kept with its status and reason for `carma sensors`.
 */
struct sampler *sampler_new(const struct sampler_opts *o, struct carma_err *e);

/* Closes every source and frees the sampler (NULL-safe). */
void sampler_free(struct sampler *s);

/* Arms the timer (first expiry one interval from now). Returns 0 or -errno. */
int sampler_start(struct sampler *s);

/* The timer's fd, readable when a tick is due (for poll). */
int sampler_fd(const struct sampler *s);

/* Consumes the timer expirations (call when sampler_fd() is readable). */
void sampler_ack(struct sampler *s);

/* Takes one tick now: reads every channel and integrates. No allocation, no open. */
void sampler_tick(struct sampler *s);

/* Re-reads proc/stat now if this tick did not (so that its deltas end at this tick). */
void sampler_refresh_util(struct sampler *s);

/* Seconds of monotonic time between the first tick and the current one. */
double sampler_elapsed_s(const struct sampler *s);

/*
 * Starts a new reporting window at the current tick (the first tick starts one): the
 * window figures below count from here (e.g. after a baseline measurement).
 */
void sampler_window_start(struct sampler *s);

/* Seconds of monotonic time since the window's first tick. */
double sampler_window_s(const struct sampler *s);

/* Energy of channel i since the window's first tick, in joules. */
double sampler_window_energy_j(const struct sampler *s, size_t i);

/*
 * For a counter channel whose source also reads a power gauge (NVML): how far the integrated
 * gauge drifts from the counter over the window, in % of the counter's energy over the same
 * steps; NAN when there is no gauge or nothing to compare.
 */
double sampler_window_drift_pct(const struct sampler *s, size_t i);

/*
 * Seconds of the window that channel i's energy covers (less than the window when readings
 * were missing at its ends or a counter reset was skipped; 0 when nothing was integrated).
 */
double sampler_window_covered_s(const struct sampler *s, size_t i);

/*
 * Which channels to add up, so that nothing is counted twice and measured and estimated
 * figures are not mixed: writes the chosen indexes to out (capacity CHANNELS_MAX) and
 * returns how many.
 * - node: the wall meters' channels when there are any (several meters: separate feeds, such
 *   as the two power supplies of a server, added up); else total-domain channels: when a
 *   measured whole-system channel (psys, ACPI meter) exists, only those; otherwise all
 *   measured totals, plus the estimated totals of kinds of device that no measured channel
 *   covers (the CPU model beside measured GPUs).
 * - metered: what a wall meter's figure contains and is compared with ("rest of system" =
 *   meters - these): the node's selection without the meters, measured channels only.
 * - cpu: total-domain channels of kind cpu, dram and soc (or system when there are none, a
 *   wall meter never), measured ones when any exists, else estimated ones.
 */
size_t sampler_select_node(const struct sampler *s, int *out);
size_t sampler_select_metered(const struct sampler *s, int *out);
size_t sampler_select_cpu(const struct sampler *s, int *out);

#endif
