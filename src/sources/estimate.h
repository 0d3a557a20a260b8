/*
 * estimate: estimated CPU power from utilization, for machines without a CPU power sensor. The
 * source is named "model" (`--sources model`, its channels model/cpuN and model/dramN).
 *
 * Per socket, P = P_idle + (P_max − P_idle) × f(u), u the socket's CPU utilization over the
 * last tick. P_max defaults to the TDP looked up in data/cpu_tdp.csv by the proc/cpuinfo
 * model name (generic row when unknown, and the source says so), P_idle to 0.12 × TDP.
 * f(u) = 2u − u^1.4 (Fan, Weber and Barroso, "Power provisioning for a warehouse-sized
 * computer", ISCA 2007) by default, or f(u) = u (the plain linear model). With a fitted
 * model file (estimate_opts.model_file, `carma model fit`, read through sources/modelfile) the
 * node's P = baseline + coefficient × u for the cpu kind (and dram, as model/dramN channels),
 * given to the sockets by their busy CPUs; the file is read at probe time. Every channel it makes
 * is labelled estimated.
 */
#ifndef CARMA_SOURCES_ESTIMATE_H
#define CARMA_SOURCES_ESTIMATE_H

enum { ESTIMATE_CURVE_FAN, ESTIMATE_CURVE_LINEAR };

#define ESTIMATE_IDLE_FRACTION_DEFAULT 0.12

/* f(u) for the curve, u clamped to [0, 1]. */
double estimate_curve(int curve, double u);

/* Parses "fan" or "linear" into *ret. Returns 0 or -EINVAL. */
int estimate_curve_parse(const char *s, int *ret);

/* "fan" or "linear". */
const char *estimate_curve_name(int curve);

#endif
