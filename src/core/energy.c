/* energy: wrap-safe counters and trapezoid integration (see energy.h). */
#include "energy.h"

#include <math.h>

#include "timeutil.h"

void energy_counter_init(struct energy_counter *c, uint64_t range, double unit_j,
                         double max_power_w)
{
    c->range = range;
    c->unit_j = unit_j;
    c->max_power_w = max_power_w;
    c->last_raw = 0;
    c->primed = false;
    c->wraps = 0;
    c->resets = 0;
    c->implausible = 0;
}

enum energy_step energy_counter_update(struct energy_counter *c, uint64_t raw, int64_t dt_ns,
                                       double *ret_j)
{
    *ret_j = 0.0;
    if (!c->primed) {
        c->primed = true;
        c->last_raw = raw;
        return ENERGY_FIRST;
    }
    enum energy_step kind = ENERGY_OK;
    uint64_t delta;
    if (raw >= c->last_raw) {
        delta = raw - c->last_raw;
    } else if (c->range > 0 && c->last_raw <= c->range && raw <= c->range) {
        /* counted from last_raw up to the range, wrapped to 0, then up to raw (the
         * convention of the powercap ABI: values lie in [0, max_energy_range_uj)) */
        delta = (c->range - c->last_raw) + raw;
        kind = ENERGY_WRAP;
    } else {
        c->last_raw = raw;
        c->resets++;
        return ENERGY_RESET;
    }
    double j = (double)delta * c->unit_j;
    double dt_s = dt_ns > 0 ? (double)dt_ns / (double)NS_PER_S : 0.0;
    /* A step that would need more than max_power_w (with 1 ms of slack for jitter) is a
     * reset or a torn value, not energy. */
    if (c->max_power_w > 0 && j > c->max_power_w * (dt_s + 0.001)) {
        c->last_raw = raw;
        if (kind == ENERGY_WRAP) {
            c->resets++; /* backwards: no wrap explains it */
            return ENERGY_RESET;
        }
        c->implausible++; /* a glitch or a torn value, not energy */
        return ENERGY_IMPLAUSIBLE;
    }
    if (kind == ENERGY_WRAP)
        c->wraps++;
    c->last_raw = raw;
    *ret_j = j;
    return kind;
}

double energy_trapezoid_j(double p0_w, double p1_w, int64_t dt_ns)
{
    return 0.5 * (p0_w + p1_w) * ((double)dt_ns / (double)NS_PER_S);
}

double energy_step_watts(double j, int64_t dt_ns, double max_power_w)
{
    if (dt_ns <= 0)
        return NAN;
    double w = j / ((double)dt_ns / (double)NS_PER_S);
    return max_power_w > 0 && w > max_power_w ? NAN : w;
}
