/*
 * carma sensors: every power source and channel found below the root, with a current
 * reading taken over a short interval, and for each source that is present but unusable
 * the exact reason and the fix.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "core/jsonutil.h"
#include "core/parse.h"
#include "core/timeutil.h"
#include "rundir/manifest.h"
#include "sources/rapl.h"

static void help(void)
{
    printf("usage: carma sensors [OPTIONS]\n\n"
           "Lists every power source and channel with a current reading (sampled over\n"
           "--sample, default 500ms), its kind, domain (total or component) and method\n"
           "(measured or estimated); for each unusable source, the reason and the fix.\n\n"
           "options:\n" COMMON_OPTIONS_HELP
           "  --sample T          how long to sample for the current reading (default 500ms)\n"
           "  --json              print JSON: {\"channels\":[...],\"unavailable\":[...]}\n");
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {.tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void print_table(const struct sampler *s)
{
    printf("%-7s %-48s %-6s %-9s %-9s %-6s %10s  %s\n", "SOURCE", "CHANNEL", "KIND", "DOMAIN",
           "METHOD", "SOCKET", "WATTS", "READS");
    for (size_t i = 0; i < s->set.n; i++) {
        const struct channel *c = &s->set.ch[i];
        const struct chan_state *st = &s->st[i];
        char sock[16] = "-", watts[32];
        if (c->socket >= 0)
            snprintf(sock, sizeof sock, "%d", c->socket);
        if (isfinite(st->watts))
            snprintf(watts, sizeof watts, "%.3f", st->watts);
        else
            snprintf(watts, sizeof watts, "?");
        printf("%-7s %-48s %-6s %-9s %-9s %-6s %10s  %s", c->source, c->name,
               channel_kind_name(c->kind), channel_domain_name(c->domain),
               channel_method_name(c->method), sock, watts, c->path);
        if (!st->tick_valid)
            printf("  (%s)", reading_error_text(st->last_err));
        if (c->parent >= 0)
            printf("  [part of %s]", s->set.ch[c->parent].name);
        for (size_t k = 0; k < s->nsrc; k++) {
            char path[96];
            if (rapl_channel_read_path(&s->src[k], i, path, sizeof path) &&
                strncmp(path, "perf", 4) == 0)
                printf("  [%s]", path);
        }
        printf("\n");
    }
    if (s->set.n == 0)
        printf("(no power channel found)\n");
    if (s->have_util && s->util.primed)
        printf("\nprocfs  node CPU utilization %.1f%% (user %.1f%%, nice %.1f%%, sys %.1f%%, "
               "irq %.1f%%) over %d CPUs, %d socket(s)%s%s\n",
               100 * s->util.util_total, 100 * s->util.util_user, 100 * s->util.util_nice,
               100 * s->util.util_sys, 100 * s->util.util_irq, s->util.ncpu, s->util.nsockets,
               s->util.model_name[0] ? ", " : "", s->util.model_name);
    bool header = false;
    for (size_t i = 0; i < s->nsrc; i++) {
        const struct source *src = &s->src[i];
        if (src->status == 0)
            continue;
        if (!header)
            printf("\nunavailable:\n");
        header = true;
        printf("  %-6s %s\n", src->ops->name, src->reason);
    }
    if (!s->have_util) {
        if (!header)
            printf("\nunavailable:\n");
        printf("  %-6s %s\n", "procfs", s->util_err.msg);
    }
    header = false;
    for (size_t i = 0; i < s->nsrc; i++) {
        const struct source *src = &s->src[i];
        if (src->status != 0 || !src->note[0])
            continue;
        if (!header)
            printf("\nnotes:\n");
        header = true;
        printf("  %-6s %s\n", src->ops->name, src->note);
    }
    json_t *meters = rundir_manifest_meters(s);
    if (json_array_size(meters)) {
        printf("\nmeters:\n");
        meters_print(stdout, s, "  ");
    }
    json_decref(meters);
}

static json_t *sensors_json(const struct sampler *s)
{
    json_t *root = json_object();
    json_object_set_new(root, "root", json_string(s->root.path));
    json_t *chans = rundir_manifest_channels(s);
    for (size_t i = 0; i < s->set.n; i++) {
        json_t *o = json_array_get(chans, i);
        const struct chan_state *st = &s->st[i];
        jsonutil_set_num(o, "watts", st->watts);
        if (!st->tick_valid)
            json_object_set_new(o, "error", json_string(reading_error_text(st->last_err)));
        for (size_t k = 0; k < s->nsrc; k++) {
            char path[96];
            if (rapl_channel_read_path(&s->src[k], i, path, sizeof path))
                json_object_set_new(o, "read_path", json_string(path));
        }
    }
    json_object_set_new(root, "channels", chans);
    json_object_set_new(root, "unavailable", rundir_manifest_unavailable(s));
    json_object_set_new(root, "notes", rundir_manifest_notes(s));
    json_object_set_new(root, "meters", rundir_manifest_meters(s));
    if (s->have_util) {
        json_t *u = json_object();
        json_object_set_new(u, "cpus", json_integer(s->util.ncpu));
        json_object_set_new(u, "sockets", json_integer(s->util.nsockets));
        json_object_set_new(u, "cpu_model", json_string(s->util.model_name));
        if (s->util.primed) {
            jsonutil_set_num(u, "total", s->util.util_total);
            jsonutil_set_num(u, "user", s->util.util_user);
            jsonutil_set_num(u, "nice", s->util.util_nice);
            jsonutil_set_num(u, "sys", s->util.util_sys);
            jsonutil_set_num(u, "irq", s->util.util_irq);
        }
        json_object_set_new(root, "utilization", u);
    }
    return root;
}

int cmd_sensors(int argc, char **argv)
{
    struct common_opts o;
    common_opts_init(&o);
    int64_t sample_ns = 500 * NS_PER_MS;
    enum { OPT_SAMPLE = OPT_COMMON_LAST + 1, OPT_HELP };
    static const struct option longopts[] = {
        COMMON_LONG_OPTIONS,
        {"sample", required_argument, NULL, OPT_SAMPLE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "qvh", longopts, "sensors")) != -1) {
        int r = common_opts_handle(&o, c, optarg);
        if (r < 0)
            return 2;
        if (r > 0)
            continue;
        if (c == OPT_SAMPLE) {
            if (cli_duration("--sample", optarg, 1, 60 * NS_PER_S, &sample_ns) < 0)
                return 2;
            continue;
        }
        if (c == 'h') {
            help();
            return 0;
        }
        return 2;
    }
    if (optind < argc) {
        cli_error("sensors: unexpected argument '%s'", argv[optind]);
        return 2;
    }
    struct carma_err e = {0};
    struct sampler *s = sampler_new(&o.sampler, &e);
    if (!s) {
        cli_error("%s", e.msg);
        return e.code == -ENOMEM ? 1 : 2;
    }
    /* two ticks sample_ns apart: counters need two readings for a power value */
    sampler_tick(s);
    sleep_ns(sample_ns);
    sampler_tick(s);
    if (o.json) {
        json_t *j = sensors_json(s);
        char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16));
        if (text)
            printf("%s\n", text);
        free(text);
        json_decref(j);
    } else {
        print_table(s);
    }
    sampler_free(s);
    return 0;
}
