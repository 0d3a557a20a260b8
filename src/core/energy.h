/*
 * energy: turning sensor readings into joules.
 *
 * Energy counters (RAPL energy_uj, hwmon energy*_input, NVML mJ) wrap at a known range and
 * are accumulated wrap-safely into 64-bit totals. A counter step that no wrap can explain is
 * a reset: it is flagged and that step is not integrated; so is a forward step implying more
 * power than the channel can draw (ENERGY_IMPLAUSIBLE). Power gauges are integrated with
 * the trapezoid rule on monotonic time.
 */
#ifndef CARMA_CORE_ENERGY_H
#define CARMA_CORE_ENERGY_H

#include <stdbool.h>
#include <stdint.h>

enum energy_step {
    ENERGY_FIRST, /* first reading: nothing to integrate yet */
    ENERGY_OK,    /* counter moved forward */
    ENERGY_WRAP,  /* counter wrapped once, delta computed across the wrap */
    ENERGY_RESET, /* backwards beyond what a wrap explains (or a wrap too large): not integrated */
    ENERGY_IMPLAUSIBLE, /* forward by more than max_power_w allows: an invalid reading, not
                           integrated; the next step is measured from it */
};

struct energy_counter {
    uint64_t range;     /* counter wraps at this value (max_energy_range); 0 = unknown */
    double unit_j;      /* joules per counter unit (1e-6 for µJ, 1e-3 for mJ) */
    double max_power_w; /* a step implying more power than this is not integrated */
    uint64_t last_raw;
    bool primed;
    uint64_t wraps;
    uint64_t resets;
    uint64_t implausible; /* forward steps implying more than max_power_w */
};

/* Initialises c for a counter in units of unit_j joules that wraps at range (0 = unknown). */
void energy_counter_init(struct energy_counter *c, uint64_t range, double unit_j,
                         double max_power_w);

/*
 * Feeds one raw reading taken dt_ns after the previous one. Writes the energy step in
 * joules to *ret_j (0 for FIRST and RESET) and returns what kind of step it was.
 */
enum energy_step energy_counter_update(struct energy_counter *c, uint64_t raw, int64_t dt_ns,
                                       double *ret_j);

/*
 * The power of a counter step of j joules over dt_ns > 0: j / dt, or NAN when that is more than
 * max_power_w (> 0; 0: no bound). A step within the counter's 1 ms jitter slack over a short dt
 * (a late tick, then one on time) is energy, but no power the device drew: its watts are left
 * unknown, so that no sample shows a power beyond the channel's bound (the readers of a run
 * directory refuse one, src/rundir).
 */
double energy_step_watts(double j, int64_t dt_ns, double max_power_w);

/* Trapezoid energy in joules between two power readings dt_ns apart. */
double energy_trapezoid_j(double p0_w, double p1_w, int64_t dt_ns);

#endif
