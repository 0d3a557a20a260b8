/* short_run: the "too short to measure" rule and its words (see short_run.h). */
#include "cli/short_run.h"

#include <stdio.h>

#include "core/timeutil.h"
#include "sampler/sampler.h"

bool short_run_is(int64_t duration_ns, int64_t interval_ns)
{
    return duration_ns < 2 * interval_ns;
}

void short_run_text(int64_t duration_ns, int64_t interval_ns, char *buf, size_t cap)
{
    char iv[32];
    time_format_duration(interval_ns, iv, sizeof iv);
    int n = snprintf(buf, cap,
                     "the command ran %.3f s, less than two sampling intervals (2 x %s): too "
                     "short to measure, so its figures are n/a; ",
                     (double)duration_ns / 1e9, iv);
    if (n < 0 || (size_t)n >= cap)
        return;
    if (duration_ns >= 2 * SAMPLER_INTERVAL_MIN_NS && interval_ns > SAMPLER_INTERVAL_MIN_NS)
        snprintf(buf + n, cap - (size_t)n,
                 "measure it with a shorter interval (--interval 1ms) or run it longer "
                 "(several times in a loop: sh -c 'for i in $(seq 100); do CMD; done')");
    else
        snprintf(buf + n, cap - (size_t)n,
                 "run it longer (several times in a loop: sh -c 'for i in $(seq 100); do CMD; "
                 "done')");
}
