/* follow_opt: --report-follow for carma collect and carma run (see follow_opt.h). */
#include "cli/follow_opt.h"

#include <stdio.h>
#include <string.h>

#include "cli/common.h"
#include "core/parse.h"

int report_edges_parse(const char *s, enum series_edges *ret)
{
    if (strcmp(s, "interpolate") == 0)
        *ret = SERIES_EDGES_INTERPOLATE;
    else if (strcmp(s, "snap") == 0)
        *ret = SERIES_EDGES_SNAP;
    else
        return -1;
    return 0;
}

int follow_opt_handle(struct follow_opts *o, const char *cmd, int c, const char *arg)
{
    switch (c) {
    case OPT_REPORT_FOLLOW:
        o->dir = arg;
        return 1;
    case OPT_REPORT_CPU:
        o->cpu_samples = arg;
        return 1;
    case OPT_REPORT_POLL: {
        char name[64];
        snprintf(name, sizeof name, "%s: --report-poll", cmd);
        if (cli_duration(name, arg, 1, 86400 * 1000000000LL, &o->poll_ns) < 0)
            return -1;
        return 1;
    }
    case OPT_REPORT_EDGES:
        if (report_edges_parse(arg, &o->edges) < 0) {
            cli_error("%s: --report-edges: '%s' is not interpolate or snap", cmd, arg);
            return -1;
        }
        return 1;
    default:
        return 0;
    }
}

int follower_start(struct follower *fw, const struct follow_opts *o, const char *cpu_samples,
                   const char *cmd)
{
    if (!o->dir)
        return 0;
    struct carma_err e = {0};
    const char *cpu = o->cpu_samples ? o->cpu_samples : cpu_samples;
    if (srt_follow_init(&fw->f, o->dir, cpu, 0, o->edges) < 0) {
        cli_error("%s: --report-follow: out of memory", cmd);
        return -1;
    }
    fw->started = true;
    fw->t = srt_follow_thread_start(&fw->f, o->poll_ns, &e);
    if (!fw->t) {
        cli_error("%s: --report-follow: %s", cmd, e.msg);
        return -1;
    }
    return 0;
}

int follower_stop(struct follower *fw, const char *cmd, bool quiet)
{
    if (!fw->started)
        return 0;
    int ret = 0;
    if (fw->t) {
        struct carma_err e = {0};
        if (srt_follow_thread_stop(fw->t, &e) < 0) {
            cli_error("%s: --report-follow: %s", cmd, e.msg);
            ret = -1;
        }
        fw->t = NULL;
        const struct srt_follow *f = &fw->f;
        if (!quiet)
            fprintf(stderr, "carma: %s: %zu benchmark window%s reported in %s%s%s\n", cmd,
                    f->emitted, f->emitted == 1 ? "" : "s", f->log_dir,
                    f->last_error[0] && !f->emitted ? "; last: " : "",
                    f->last_error[0] && !f->emitted ? f->last_error : "");
    }
    srt_follow_done(&fw->f);
    fw->started = false;
    return ret;
}
