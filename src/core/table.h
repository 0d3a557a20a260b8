/*
 * table: the data/ tables compiled into carma (CPU TDP, grid carbon intensity, embodied
 * carbon of hardware), each row with its source, and their look-ups.
 */
#ifndef CARMA_CORE_TABLE_H
#define CARMA_CORE_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct cpu_tdp_match {
    char pattern[96]; /* the table row that matched ("*" for the fallback) */
    double tdp_w;     /* per socket */
    int cores;        /* 0 when unknown */
    char source[512];
    bool fallback; /* no SKU row matched: the generic row was used */
};

/*
 * Looks model_name (the /proc/cpuinfo "model name") up in the CPU TDP table: text/len, or the
 * embedded data/cpu_tdp.csv when text is NULL. A row matches when its pattern appears in the
 * name as whole tokens (case-insensitive; the characters around it are not letters or
 * digits), so "Gold 6248" never matches "Gold 6248R"; the longest matching pattern wins;
 * with no match the "*" row is used and ret->fallback is set. Returns 0, -EINVAL with e
 * naming the table line when the table is malformed, or -ENOENT when nothing matches and
 * the table has no "*" row. table_name labels errors (ignored when text is NULL).
 */
int table_cpu_tdp_lookup(const char *model_name, const char *text, size_t len,
                         const char *table_name, struct cpu_tdp_match *ret, struct carma_err *e);

struct grid_intensity {
    char region[16];
    char name[96];
    double g_per_kwh;
    int year;
    char source[512];
};

/* The world average used when nothing else is given (data/grid_intensity.csv row WORLD). */
#define GRID_WORLD_REGION "WORLD"

/*
 * Looks region (case-insensitive code, e.g. "FRA", "WORLD") up in the embedded
 * data/grid_intensity.csv. Returns 0, -ENOENT with e listing how to find codes.
 */
int table_grid_lookup(const char *region, struct grid_intensity *ret, struct carma_err *e);

struct embodied_fact {
    char component[16]; /* "gpu", "cpu", "server", "dram", "ssd" */
    char model[64];     /* the row used: a model, or the generic "default" / "per_gb" row */
    double kg_co2e;     /* per unit of scope (per GB when per_gb) */
    double lifetime_years;
    char scope[96]; /* what the number covers ("card", "socket", "per GB", ...) */
    char source[512];
    bool fallback; /* a model was named and no row has it: the generic row was used */
    bool per_gb;   /* kg_co2e is per GB (the scope says "per GB") */
};

/*
 * Looks component/model up in the embedded data/embodied.csv, both case-insensitive: the row
 * of that exact model, else the component's generic row (model "default", or "per_gb" for
 * dram) with ret->fallback set when a model was named. model NULL, "" or "default" asks for
 * the generic row (fallback not set). Returns 0, -ENOENT with e listing the components when
 * the component is unknown (or has no row to fall back to), -EINVAL with e naming the table
 * line when the table is malformed. ret is written only on success.
 */
int table_embodied_lookup(const char *component, const char *model, struct embodied_fact *ret,
                          struct carma_err *e);

#endif
