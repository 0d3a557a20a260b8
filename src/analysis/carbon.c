/* carbon: operational CO2e (see carbon.h). */
#include "analysis/carbon.h"

#include <errno.h>
#include <stdio.h>

#include "core/table.h"

int carbon_intensity_resolve(const char *region, double g_per_kwh, struct carbon_intensity *ret,
                             struct carma_err *e)
{
    if (g_per_kwh > 0) {
        ret->g_per_kwh = g_per_kwh;
        ret->region[0] = '\0';
        snprintf(ret->source, sizeof ret->source, "given on the command line");
        return 0;
    }
    struct grid_intensity g;
    int r = table_grid_lookup(region ? region : GRID_WORLD_REGION, &g, e);
    if (r < 0)
        return r;
    ret->g_per_kwh = g.g_per_kwh;
    snprintf(ret->region, sizeof ret->region, "%s", g.region);
    snprintf(ret->source, sizeof ret->source, "%s (%s): %s, %d", g.region, g.name, g.source,
             g.year);
    return 0;
}

double carbon_operational_g(double energy_j, double pue, double g_per_kwh)
{
    return energy_j / 3.6e6 * pue * g_per_kwh;
}
