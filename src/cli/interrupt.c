/* interrupt: recording a measurement ended by a signal (see interrupt.h). */
#include "cli/interrupt.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/timeutil.h"

void interruption_note(struct interruption *in, int sig)
{
    if (!in->count++) {
        in->sig = sig;
        in->real_ns = time_real_ns();
    }
}

const char *interruption_signal_name(int sig, char *buf, size_t cap)
{
    const char *abbrev = sig > 0 && sig < NSIG ? sigabbrev_np(sig) : NULL;
    if (abbrev)
        snprintf(buf, cap, "SIG%s", abbrev);
    else
        snprintf(buf, cap, "signal %d", sig);
    return buf;
}

/* "2026-12-01T21:30:00.123Z" */
static void utc_iso(int64_t real_ns, char *buf, size_t cap)
{
    time_t t = (time_t)(real_ns / NS_PER_S);
    struct tm tm;
    char s[32] = "";
    if (gmtime_r(&t, &tm))
        strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%03dZ", s, (int)(real_ns % NS_PER_S / NS_PER_MS));
}

json_t *interruption_json(const struct interruption *in)
{
    if (!in->sig)
        return json_null();
    char name[32], when[48];
    json_t *o = json_object();
    json_object_set_new(o, "signal",
                        json_string(interruption_signal_name(in->sig, name, sizeof name)));
    json_object_set_new(o, "signal_number", json_integer(in->sig));
    utc_iso(in->real_ns, when, sizeof when);
    json_object_set_new(o, "time_utc", json_string(when));
    json_object_set_new(o, "time_unix", json_real((double)(in->real_ns / NS_PER_MS) / 1e3));
    json_object_set_new(o, "signals_received", json_integer(in->count));
    return o;
}

void interruption_text(const struct interruption *in, char *buf, size_t cap)
{
    char name[32], when[48];
    utc_iso(in->real_ns, when, sizeof when);
    snprintf(buf, cap, "%s (signal %d) at %s", interruption_signal_name(in->sig, name, sizeof name),
             in->sig, when);
}
