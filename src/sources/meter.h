/*
 * meter: wall power meters, a power source named by a spec (--meter, monitoring.meter) rather
 * than found below the root.
 *
 *   wattsup:DEVICE   a Watts Up? Pro on a serial line (115200 8N1): carma sends the external
 *                    logging command "#L,W,3,E,,1;" and reads one "#d,...;" record a second
 *                    (watts = 4th field / 10, volts = 5th / 10, amps = 6th / 1000)
 *   cmd:COMMAND      a command printing watts (`ipmitool dcmi power reading`), run with
 *                    /bin/sh -c once a second; the first number of its output is the power
 *
 * A meter never blocks the sampler: a background thread reads the serial line (or runs the
 * command) and keeps the latest record and its time under a mutex; read() copies it out. A
 * record older than METER_STALE_PERIODS meter periods, or none at all (unplugged), is a
 * missing reading, never 0 W. An unplugged meter is reopened every second, and the logging
 * command sent again; reconnections, disconnections and garbage lines are counted
 * (meter_stats_get).
 *
 * A meter's channel (meter/wattsup, meter/cmd) is kind system, a total of the whole node:
 * when one exists it alone is the node's figure, never added to the CPU, GPU or other totals,
 * which it contains (sampler_select_node).
 */
#ifndef CARMA_SOURCES_METER_H
#define CARMA_SOURCES_METER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sources/source.h"

/* The longest spec (type, ':' and argument), in bytes. */
#define METER_SPEC_MAX 1024
/* The longest Watts Up? packet kept ('#' to ';'); a longer one is garbage. */
#define WATTSUP_PACKET_MAX 256
/* The meter's period: the logging interval asked of a Watts Up?, a cmd meter's rate. */
#define METER_PERIOD_NS 1000000000LL
/* A record older than this many periods is no reading. */
#define METER_STALE_PERIODS 3
/* How long probe waits for a first record. */
#define METER_PROBE_TIMEOUT_NS 4000000000LL
/* How long a cmd meter's command may run before it is killed. */
#define METER_CMD_TIMEOUT_NS 5000000000LL
/* How often an unplugged meter is looked for again. */
#define METER_RETRY_NS 1000000000LL
/* The Watts Up?'s command: external logging ('E'), every second. */
#define WATTSUP_LOG_COMMAND "#L,W,3,E,,1;"

enum meter_type { METER_WATTSUP, METER_CMD };

struct meter_spec {
    enum meter_type type;
    char arg[METER_SPEC_MAX]; /* the device or the command */
};

/*
 * Parses "wattsup:DEVICE" or "cmd:COMMAND" into *ret. Returns 0, or -EINVAL with a message
 * (without the spec's option name) in err (errlen bytes), *ret then untouched.
 */
int meter_spec_parse(const char *spec, struct meter_spec *ret, char *err, size_t errlen);

/* One meter record; volts and amps NAN when the meter does not give them. */
struct meter_record {
    double watts, volts, amps;
};

/*
 * Parses one Watts Up? packet, '#' to ';' included, len bytes:
 * "#d,<flag>,<count>,<watts*10>,<volts*10>,<amps*1000>,...;" with <count> the number of
 * fields after it (18 on a Pro; unavailable fields are "_"). Returns 0 and fills *ret; -ENOMSG
 * for a well-formed packet that is not a data record ("#s,...;", a reply); -EINVAL for a data
 * record that is malformed (wrong field count, watts not a number) and for any packet holding
 * a NUL byte.
 */
int wattsup_parse_packet(const char *pkt, size_t len, struct meter_record *ret);

enum wattsup_event {
    WATTSUP_NONE,    /* nothing yet */
    WATTSUP_RECORD,  /* a data record: *rec filled */
    WATTSUP_GARBAGE, /* a line or packet that is not one: skipped */
    WATTSUP_OTHER,   /* a well-formed packet that is not a data record: ignored */
};

/*
 * Cuts the byte stream of a Watts Up? into packets. Outside a packet, whitespace is ignored
 * and a line with anything else is one garbage line; a packet cut by a line end, a new '#' or
 * longer than WATTSUP_PACKET_MAX is garbage too.
 */
struct wattsup_framer {
    char buf[WATTSUP_PACKET_MAX];
    size_t len;
    bool in_packet;
    bool stray; /* non-blank bytes outside a packet on the current line */
    bool skip;  /* the rest of an over-long packet's line, already counted */
};

/* Starts a framer on a new stream. */
void wattsup_framer_init(struct wattsup_framer *f);

/* Feeds one byte; returns what it completed (rec filled for WATTSUP_RECORD). */
enum wattsup_event wattsup_framer_push(struct wattsup_framer *f, char c, struct meter_record *rec);

/*
 * The power in a cmd meter's output: the first unsigned decimal number of text (len bytes),
 * e.g. 220 in ipmitool's "Instantaneous power reading:   220 Watts". Returns 0 and writes
 * *ret; -EINVAL when there is none, -ERANGE when it is not a plausible power (over 1 MW).
 */
int meter_parse_watts(const char *text, size_t len, double *ret);

/* What a meter has seen since it was probed. */
struct meter_stats {
    char spec[METER_SPEC_MAX + 16]; /* "wattsup:/dev/ttyUSB0" */
    enum meter_type type;
    uint64_t records;     /* valid records */
    uint64_t garbage;     /* garbage lines skipped (wattsup), failed runs (cmd) */
    uint64_t disconnects; /* times the device went away (wattsup) */
    uint64_t reconnects;  /* times it came back (wattsup) */
    bool connected;       /* the device is open now (wattsup; cmd: the last run worked) */
    double last_watts;    /* the latest record's power, NAN when none */
    double last_age_s;    /* its age, NAN when none */
    char last_error[256]; /* the latest failure, "" when none */
};

/* The ops of the meter source (not in sources.def: the sampler probes one per spec). */
extern const struct source_ops meter_source_ops;

/* True when s is a meter. */
bool meter_source_is(const struct source *s);

/* Fills *ret with the counters of the usable meter s. Returns 0, or -EINVAL when s is not one. */
int meter_stats_get(const struct source *s, struct meter_stats *ret);

#endif
