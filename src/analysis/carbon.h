/*
 * carbon: operational emissions of measured energy, g = kWh × PUE × CI.
 *
 * The carbon intensity CI comes from a constant given by the user, or a region code looked
 * up in data/grid_intensity.csv (annual averages with their source and year); the default
 * is the world average row (475 g/kWh, IEA 2019). The source of the number is always kept
 * so that outputs can print it.
 */
#ifndef CARMA_ANALYSIS_CARBON_H
#define CARMA_ANALYSIS_CARBON_H

#include "core/err.h"

struct carbon_intensity {
    double g_per_kwh;
    char region[16];  /* "" for a user constant */
    char source[640]; /* where the number comes from, for humans */
};

/*
 * Resolves the intensity: a positive g_per_kwh wins (given by the user); else region (NULL:
 * the world average). Returns 0 or a negative errno with e saying what to give instead.
 */
int carbon_intensity_resolve(const char *region, double g_per_kwh, struct carbon_intensity *ret,
                             struct carma_err *e);

/* Grams CO2e of energy_j joules at the given PUE and intensity. */
double carbon_operational_g(double energy_j, double pue, double g_per_kwh);

#endif
