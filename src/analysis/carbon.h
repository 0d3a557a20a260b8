/*
 * carbon: emissions of a workload, operational and embodied, always kept apart.
 *
 * Operational: g = kWh × PUE × CI. The carbon intensity CI comes from, in order: a time
 * series file (start,end,g_per_kwh rows; each part of a run is charged at the intensity of
 * the interval it falls in), a constant given by the user, a region code looked up in
 * data/grid_intensity.csv (annual averages with their source and year), or the world average
 * row (475 g/kWh, IEA 2019). The source of the number is always kept so that outputs can
 * print it.
 *
 * Embodied: the manufacturing footprint of each device used, written off linearly over its
 * lifetime, g = kg × 1000 / lifetime_s × seconds × share, with the facts from
 * data/embodied.csv (see core/table.h) or from an experiment's overrides.
 */
#ifndef CARMA_ANALYSIS_CARBON_H
#define CARMA_ANALYSIS_CARBON_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "core/table.h"

/* The largest intensity file carbon_series_load reads. */
#define CARBON_SERIES_MAX_BYTES (64u << 20)

/* One row of an intensity file: [start_s, end_s) in Unix seconds, at g_per_kwh. */
struct carbon_interval {
    double start_s;
    double end_s;
    double g_per_kwh;
};

/* A carbon intensity time series: n intervals, sorted, non-overlapping (gaps allowed). */
struct carbon_series {
    struct carbon_interval *v;
    size_t n;
};

/*
 * Reads the intensity file at path: a CSV file (RFC 4180, LF or CRLF, quoted fields) whose
 * header names the columns start, end and g_per_kwh (in any order; other columns are
 * ignored). Times are Unix seconds (a decimal number) or ISO 8601 with a UTC offset
 * ("2026-11-30T08:00:00+00:00", "...Z", optional fraction of a second); rows must be sorted,
 * must not overlap, must have start < end and a finite g_per_kwh >= 0; there must be at least
 * one row. Returns 0 and fills ret (free with carbon_series_free), or a negative errno with e
 * saying "FILE:LINE: field: problem": -ENOENT / -EACCES when the file cannot be opened,
 * -EFBIG over CARBON_SERIES_MAX_BYTES, -EINVAL for bad content, -ENOMEM. ret is written only
 * on success.
 */
int carbon_series_load(const char *path, struct carbon_series *ret, struct carma_err *e);

/* Frees the intervals of s and zeroes it (safe on a zeroed series). */
void carbon_series_free(struct carbon_series *s);

/*
 * The intensity at instant t_unix: that of the interval [start, end) holding it, else that of
 * the nearest interval (before the first: the first; after the last: the last; in a gap: the
 * closer of the two neighbours, the later one at the midpoint). For per-tick accounting: it
 * allocates nothing and takes O(log n). NAN for an empty series or a non-finite t_unix.
 */
double carbon_series_at(const struct carbon_series *s, double t_unix);

/*
 * Grams CO2e of energy_j joules drawn uniformly over [t0_unix, t1_unix] at the given PUE:
 * each part of the span is charged at the intensity of the interval it falls in; parts outside
 * every interval (before, after, in gaps) at the nearest interval's, as carbon_series_at.
 * *ret_covered (may be NULL) is set to 1 when the series covered the whole span, 0 when some
 * part of it used a nearest interval's value. t0 == t1 charges the energy at the instant.
 * NAN (and *ret_covered 0) for an empty series, non-finite times or t1 < t0.
 */
double carbon_series_energy_g(const struct carbon_series *s, double t0_unix, double t1_unix,
                              double energy_j, double pue, int *ret_covered);

/* The duration-weighted mean intensity of the intervals (gaps not counted); NAN when empty. */
double carbon_series_mean_g_per_kwh(const struct carbon_series *s);

enum carbon_intensity_kind {
    CARBON_CI_SERIES,   /* a time series file */
    CARBON_CI_CONSTANT, /* a constant given by the user */
    CARBON_CI_REGION,   /* a row of data/grid_intensity.csv (the world row by default) */
};

struct carbon_intensity {
    enum carbon_intensity_kind kind;
    double g_per_kwh; /* the constant, the region's, or the series' duration-weighted mean */
    char region[16];  /* "" for a constant or a series */
    char source[640]; /* where the number comes from, for humans */
    struct carbon_series series; /* CARBON_CI_SERIES only, else empty; owned */
};

/*
 * Resolves the intensity, the first of: the time series file series_path (when not NULL or
 * ""), a positive g_per_kwh (given by the user), region (when not NULL), the world average.
 * Returns 0 or a negative errno with e saying what is wrong (carbon_series_load's errors, or
 * an unknown region with what to give instead). ret is written only on success; release it
 * with carbon_intensity_done (it owns the series).
 */
int carbon_intensity_resolve_series(const char *series_path, const char *region, double g_per_kwh,
                                    struct carbon_intensity *ret, struct carma_err *e);

/* carbon_intensity_resolve_series without a series file: constant, region, world average. */
int carbon_intensity_resolve(const char *region, double g_per_kwh, struct carbon_intensity *ret,
                             struct carma_err *e);

/* Frees what ci owns (its series); safe on a zeroed or constant/region intensity. */
void carbon_intensity_done(struct carbon_intensity *ci);

/*
 * Grams CO2e of energy_j joules drawn uniformly over [t0_unix, t1_unix] with intensity ci:
 * through carbon_series_energy_g for a series (with its *ret_covered), else at ci->g_per_kwh
 * (*ret_covered 1; the times are not used). ret_covered may be NULL.
 */
double carbon_intensity_energy_g(const struct carbon_intensity *ci, double t0_unix, double t1_unix,
                                 double energy_j, double pue, int *ret_covered);

/* Grams CO2e of energy_j joules at the given PUE and intensity. */
double carbon_operational_g(double energy_j, double pue, double g_per_kwh);

/*
 * Embodied grams CO2e charged to a use of seconds at share (0..1) of a device whose
 * manufacture emitted kg_co2e over a lifetime of lifetime_years (of 365.25 days):
 * kg × 1000 / (lifetime_years × 365.25 × 86400) × seconds × share. For a per-GB fact (dram)
 * kg_co2e is the fact times the GB. NAN when lifetime_years <= 0 or an input is negative or
 * not finite.
 */
double carbon_embodied_g(double kg_co2e, double lifetime_years, double seconds, double share);

/* An experiment's replacement for one row of data/embodied.csv. */
struct carbon_embodied_override {
    char component[16]; /* "gpu", "cpu", "dram", ... (case-insensitive) */
    char model[64];     /* a model, or the component's generic row ("default", "per_gb") */
    double kg_co2e;
    double lifetime_years;
};

/*
 * The embodied fact for component/model: an override whose component and model match
 * (case-insensitive) wins; else the table row (table_embodied_lookup), and when that is the
 * component's generic row, an override of that generic row wins over it (ret->fallback
 * stays set). An override keeps the table's scope and per_gb for the same row when the table
 * has one, and its source is "experiment override". overrides may be NULL when n is 0.
 * Returns 0, -EINVAL with e when the chosen override has a negative or non-finite kg or a
 * lifetime that is not positive, or table_embodied_lookup's errors. ret is written only on
 * success.
 */
int carbon_embodied_resolve(const char *component, const char *model,
                            const struct carbon_embodied_override *overrides, size_t n,
                            struct embodied_fact *ret, struct carma_err *e);

/* The fact is the experiment's own (an override), not the table's. */
bool carbon_embodied_declared(const struct embodied_fact *f);

/* A workload's use of the node's devices, for its embodied carbon. */
struct carbon_embodied_use {
    double seconds;       /* how long it ran */
    double cpu_s;         /* its CPU time */
    size_t n_cpus;        /* its allocation's CPUs, 0 for none */
    int ncpu;             /* the node's CPUs */
    int sockets;          /* and CPU packages */
    const int *gpus;      /* the GPUs it names */
    const int *gpu_users; /* how many workloads name each (itself included) */
    size_t ngpus;
    bool gpu_measured; /* a GPU is measured on the node (else only a declared fact counts) */
    const struct carbon_embodied_override *overrides;
    size_t n_overrides;
};

/* One device's part of a workload's embodied carbon. */
struct carbon_embodied_part {
    int gpu;      /* -1: the CPUs; else the GPU's index */
    int units;    /* the CPU packages charged (the CPUs only) */
    double share; /* of the device's time */
    double g_co2e;
    bool declared;             /* a GPU no channel measures: charged by the experiment's fact */
    struct embodied_fact fact; /* its source */
};

/*
 * A workload's embodied carbon: the CPUs at its allocation's share of the CPUs, else its CPU
 * time's share of the node's CPU time over its duration (at most 1), times the packages; each
 * GPU it names at an equal share among the workloads naming it, when a GPU is measured or the
 * GPU's fact is declared. Writes the parts (at most cap: 1 + u->ngpus suffice; a fact that
 * does not resolve makes none) and returns how many; *ret_g is their grams' sum.
 */
size_t carbon_embodied_job(const struct carbon_embodied_use *u, struct carbon_embodied_part *out,
                           size_t cap, double *ret_g);

#endif
