/*
 * hwmon: power gauges and energy counters of Linux hwmon devices (sys/class/hwmon/hwmon*).
 *
 * ACPI power meters (device name "power_meter") on NVIDIA Grace name each channel in
 * powerN_oem_info ("Grace Power Socket 0", "CPU Power Socket 0", "SysIO Power Socket 0",
 * ...). hwmon_classify_oem() maps such a text to a socket total, a CPU rail, a SoC rail or a
 * DRAM rail with its socket number; the source turns totals into the socket's channel and
 * rails into components of it.
 */
#ifndef CARMA_SOURCES_HWMON_H
#define CARMA_SOURCES_HWMON_H

#include "sources/source.h"

/* What an OEM label says a power_meter channel measures. */
enum hwmon_oem_kind {
    HWMON_OEM_TOTAL,    /* the complete CPU-side socket envelope: the socket's figure */
    HWMON_OEM_CPU_RAIL, /* CPU rail: part of the socket total */
    HWMON_OEM_SOC,      /* SoC / SysIO rail: part of the socket total */
    HWMON_OEM_DRAM,     /* DRAM rail: part of the socket total */
    HWMON_OEM_OTHER,    /* anything else (output rails, energies, throttles, modules, ...) */
};

/* Socket numbers above this are not believed: such a label classifies as if it had none. */
#define HWMON_SOCKET_MAX 4095

/*
 * Classifies an OEM label (powerN_oem_info or powerN_label of a power_meter device).
 * Matching is ASCII case-insensitive and any run of whitespace in the label matches the one
 * space between words of a needle. The needles are tried in a fixed order (all totals, then
 * CPU rails, SoC rails, DRAM rails); for each, the first occurrence in the label is found and
 * the maximal run of digits right after it is the socket. A needle that occurs without digits
 * after it (or with a number above HWMON_SOCKET_MAX) passes to the next needle; when none
 * gives a socket the label is HWMON_OEM_OTHER with socket -1. So "Grace Power Socket 1 CPU
 * Power" is a total of socket 1 and `CPU Power Socket "x` is other.
 *
 * Returns 1 when classified, 0 for other, and writes *ret_kind and *ret_socket in both cases;
 * -EINVAL (nothing written) when label is NULL.
 */
int hwmon_classify_oem(const char *label, enum hwmon_oem_kind *ret_kind, int *ret_socket);

/* "total", "cpu_rail", "soc", "dram" or "other" (also the channel zone of each kind). */
const char *hwmon_oem_kind_name(enum hwmon_oem_kind kind);

/* The hwmon source: probe, read and close as source.h describes; channels named
 * hwmon/power_meter/socket<N>/<zone>, hwmon/power_meter/<hwmonX> (a plain ACPI meter) or
 * hwmon/<device>/<hwmonX>/<powerN|energyN>. */
extern const struct source_ops hwmon_source_ops;

#endif
