/*
 * model: estimated CPU power from utilization, for machines without a CPU power sensor.
 *
 * Per socket, P = P_idle + (P_max − P_idle) × f(u), u the socket's CPU utilization over the
 * last tick. P_max defaults to the TDP looked up in data/cpu_tdp.csv by the proc/cpuinfo
 * model name (generic row when unknown, and the source says so), P_idle to 0.12 × TDP.
 * f(u) = 2u − u^1.4 (Fan, Weber and Barroso, "Power provisioning for a warehouse-sized
 * computer", ISCA 2007) by default, or f(u) = u (the plain linear model). With a fitted
 * model file (model_opts.model_file, `carma model fit`) the node's P = baseline + coefficient
 * × u for the cpu kind (and dram, as model/dramN channels), given to the sockets by their busy
 * CPUs; the file is read at probe time. Every channel it makes is labelled estimated.
 */
#ifndef CARMA_SOURCES_MODEL_H
#define CARMA_SOURCES_MODEL_H

enum { MODEL_CURVE_FAN, MODEL_CURVE_LINEAR };

#define MODEL_IDLE_FRACTION_DEFAULT 0.12

/* f(u) for the curve, u clamped to [0, 1]. */
double model_curve(int curve, double u);

/* Parses "fan" or "linear" into *ret. Returns 0 or -EINVAL. */
int model_curve_parse(const char *s, int *ret);

/* "fan" or "linear". */
const char *model_curve_name(int curve);

#endif
