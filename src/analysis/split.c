/* split: one channel's tick energy apportioned to jobs, idle and other (see split.h). */
#include "analysis/split.h"

#include <errno.h>
#include <string.h>

void split_energy(const struct split_in *in, struct split_out *out)
{
    memset(out, 0, sizeof *out);
    size_t n = in->njobs < SPLIT_JOBS_MAX ? in->njobs : SPLIT_JOBS_MAX;
    double de = in->de_j > 0 ? in->de_j : 0.0;
    if (in->de_j < 0) {
        /* energy does not run backwards: nothing to give, keep the sum exact */
        out->unattributed_j = in->de_j;
        return;
    }
    double s = in->static_j > 0 ? in->static_j : 0.0;
    if (s > de)
        s = de;
    double d = de - s;

    /* dynamic part: by busy time; the node's busy time covers at least the jobs' */
    double jobs_busy = 0;
    for (size_t i = 0; i < n; i++)
        jobs_busy += in->job_busy[i] > 0 ? in->job_busy[i] : 0.0;
    double busy = in->node_busy > jobs_busy ? in->node_busy : jobs_busy;
    double other_busy = busy - jobs_busy;
    if (busy > 0) {
        double given = 0;
        for (size_t i = 0; i < n; i++) {
            double b = in->job_busy[i] > 0 ? in->job_busy[i] : 0.0;
            out->job_j[i] = d * (b / busy);
            given += out->job_j[i];
        }
        out->other_j = d - given; /* the remainder: the sum stays exact */
    } else {
        out->unattributed_j = d;
    }

    /* static part: by the policy */
    switch (in->policy) {
    case SPLIT_PROPORTIONAL:
        if (busy > 0) {
            double given = 0;
            for (size_t i = 0; i < n; i++) {
                double b = in->job_busy[i] > 0 ? in->job_busy[i] : 0.0;
                double part = s * (b / busy);
                out->job_j[i] += part;
                given += part;
            }
            out->other_j += other_busy > 0 ? s - given : 0.0;
            if (!(other_busy > 0))
                out->idle_j += s - given; /* rounding residue only */
        } else {
            out->idle_j = s;
        }
        break;
    case SPLIT_EQUAL: {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            k += in->running && in->running[i];
        if (k == 0) {
            out->idle_j = s;
            break;
        }
        double part = s / (double)k, given = 0;
        size_t last = 0;
        for (size_t i = 0; i < n; i++) {
            if (in->running[i]) {
                out->job_j[i] += part;
                given += part;
                last = i;
            }
        }
        out->job_j[last] += s - given; /* rounding residue */
        break;
    }
    case SPLIT_IDLE:
    default:
        out->idle_j = s;
        break;
    }
}

const char *split_policy_name(enum split_policy p)
{
    switch (p) {
    case SPLIT_PROPORTIONAL:
        return "proportional";
    case SPLIT_EQUAL:
        return "equal";
    case SPLIT_IDLE:
        return "idle";
    default:
        return "?";
    }
}

int split_policy_parse(const char *s, enum split_policy *ret)
{
    static const enum split_policy all[] = {SPLIT_IDLE, SPLIT_PROPORTIONAL, SPLIT_EQUAL};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(s, split_policy_name(all[i])) == 0) {
            *ret = all[i];
            return 0;
        }
    }
    return -EINVAL;
}
