/* common: shared options and output helpers of the subcommands (see common.h). */
#include "cli/common.h"

#include <errno.h>
#include <grp.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonutil.h"
#include "core/parse.h"
#include "sources/estimate.h"
#include "sources/meter.h"
#include "sources/rapl.h"

void common_opts_init(struct common_opts *o)
{
    memset(o, 0, sizeof *o);
    o->sampler.root = "/";
    o->sampler.interval_ns = SAMPLER_INTERVAL_DEFAULT_NS;
    o->sampler.model.tdp_w = 0;
    o->sampler.model.idle_w = -1;
    o->sampler.model.idle_fraction = ESTIMATE_IDLE_FRACTION_DEFAULT;
    o->sampler.model.curve = ESTIMATE_CURVE_FAN;
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("carma: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_say(void *ctx, const char *msg)
{
    (void)ctx;
    cli_error("%s", msg);
}

static int positive_watts(const char *opt, const char *arg, double *ret, bool allow_zero)
{
    double v;
    if (parse_double(arg, &v) < 0 || v < 0 || (!allow_zero && v == 0) || v > 100000) {
        cli_error("%s: '%s' is not a valid power in watts", opt, arg);
        return -1;
    }
    *ret = v;
    return 1;
}

int common_opts_handle(struct common_opts *o, int c, const char *arg)
{
    switch (c) {
    case OPT_ROOT:
        o->sampler.root = arg;
        return 1;
    case OPT_INTERVAL: {
        int64_t ns;
        if (cli_duration("--interval", arg, SAMPLER_INTERVAL_MIN_NS, SAMPLER_INTERVAL_MAX_NS, &ns) <
            0)
            return -1;
        o->sampler.interval_ns = ns;
        return 1;
    }
    case OPT_SOURCES:
        o->sampler.sources = arg;
        return 1;
    case OPT_DCGM_HOST: {
        const char *colon = strrchr(arg, ':');
        long port = 5555;
        char *end = NULL;
        if (colon)
            port = strtol(colon + 1, &end, 10);
        if (!arg[0] || arg[0] == ':' || strlen(arg) >= 256 || strpbrk(arg, " \t/") ||
            (colon && (end == colon + 1 || *end || port < 1 || port > 65535))) {
            cli_error("--dcgm-host: '%s' is not HOST or HOST:PORT (a port 1..65535; "
                      "nv-hostengine listens on 5555)",
                      arg);
            return -1;
        }
        o->sampler.dcgm_host = arg;
        return 1;
    }
    case OPT_RAPL_PATH: {
        enum rapl_path rp;
        if (rapl_path_parse(arg, &rp) < 0) {
            cli_error("--rapl-path: '%s' is not auto, powercap or perf", arg);
            return -1;
        }
        o->sampler.rapl_path = (int)rp;
        return 1;
    }
    case OPT_CPU_TDP:
        return positive_watts("--cpu-tdp", arg, &o->sampler.model.tdp_w, false);
    case OPT_CPU_IDLE:
        return positive_watts("--cpu-idle", arg, &o->sampler.model.idle_w, true);
    case OPT_MODEL_CURVE:
        if (estimate_curve_parse(arg, &o->sampler.model.curve) < 0) {
            cli_error("--model-curve: '%s' is not fan or linear", arg);
            return -1;
        }
        return 1;
    case OPT_CPU_TABLE:
        o->sampler.model.table_path = arg;
        return 1;
    case OPT_MODEL_FILE:
        o->sampler.model.model_file = arg;
        return 1;
    case OPT_JSON:
        o->json = true;
        return 1;
    case OPT_METER: {
        struct meter_spec spec;
        char err[512];
        if (meter_spec_parse(arg, &spec, err, sizeof err) < 0) {
            cli_error("--meter: %s", err);
            return -1;
        }
        if (o->sampler.n_meters >= SAMPLER_METERS_MAX) {
            cli_error("--meter: at most %d meters", SAMPLER_METERS_MAX);
            return -1;
        }
        o->sampler.meters[o->sampler.n_meters++] = arg;
        return 1;
    }
    case 'q':
        o->verbose = -1;
        return 1;
    case 'v':
        o->verbose = 1;
        return 1;
    default:
        return 0;
    }
}

const char *reading_error_text(int err)
{
    switch (err) {
    case 0:
        return "ok";
    case -EINVAL:
        return "content is not a valid number";
    case -ERANGE:
        return "implausible value: more power than the device can draw (see docs/sources.md)";
    case -ENODEV:
        return "device vanished (ENODEV)";
    case -ENOENT:
        return "file vanished (ENOENT)";
    case -EIO:
        return "I/O error reading the sensor";
    case -EACCES:
    case -EPERM:
        return "permission denied";
    case -EAGAIN:
        return "no reading yet (a counter or utilization needs two readings a clock tick apart)";
    case -ETIMEDOUT:
        return "no fresh reading (the meter's latest record is too old)";
    default:
        return strerror(-err);
    }
}

void cli_print_json(FILE *f, const json_t *j)
{
    json_dumpf(j, f, JSONUTIL_DUMP_FLAGS);
    fputc('\n', f);
}

int common_meters_check(const struct sampler *s, const char *option)
{
    int r = 0;
    for (size_t i = 0; i < s->nsrc; i++) {
        if (!meter_source_is(&s->src[i]) || s->src[i].status == 0)
            continue;
        cli_error("%s %s", option, s->src[i].reason);
        r = -1;
    }
    return r;
}

void meters_print(FILE *f, const struct sampler *s, const char *prefix)
{
    for (size_t i = 0; i < s->nsrc; i++) {
        struct meter_stats st;
        if (meter_stats_get(&s->src[i], &st) < 0)
            continue;
        fprintf(f, "%s%s: %llu records", prefix, st.spec, (unsigned long long)st.records);
        if (st.type == METER_WATTSUP)
            fprintf(f, ", %llu garbage line%s skipped, %llu disconnect%s, %llu reconnect%s",
                    (unsigned long long)st.garbage, st.garbage == 1 ? "" : "s",
                    (unsigned long long)st.disconnects, st.disconnects == 1 ? "" : "s",
                    (unsigned long long)st.reconnects, st.reconnects == 1 ? "" : "s");
        else
            fprintf(f, ", %llu failed run%s", (unsigned long long)st.garbage,
                    st.garbage == 1 ? "" : "s");
        if (!st.connected)
            fprintf(f, ", not connected now");
        if (st.last_error[0])
            fprintf(f, " (last problem: %s)", st.last_error);
        fprintf(f, "\n");
    }
}

json_t *rest_of_system_json(const struct sampler *s)
{
    int node[CHANNELS_MAX], parts[CHANNELS_MAX];
    size_t nn = sampler_select_node(s, node);
    if (nn == 0 || !channel_is_meter(&s->set.ch[node[0]]))
        return NULL;
    size_t np = sampler_select_metered(s, parts);
    double meter_j = 0, parts_j = 0;
    bool known = true;
    json_t *j = json_object(), *meters = json_array(), *chans = json_array();
    for (size_t k = 0; k < nn; k++) {
        size_t i = (size_t)node[k];
        json_array_append_new(meters, json_string(s->set.ch[i].name));
        known = known && sampler_window_covered_s(s, i) > 0;
        meter_j += sampler_window_energy_j(s, i);
    }
    double mj = known ? meter_j : NAN;
    for (size_t k = 0; k < np; k++) {
        size_t i = (size_t)parts[k];
        json_array_append_new(chans, json_string(s->set.ch[i].name));
        known = known && sampler_window_covered_s(s, i) > 0;
        parts_j += sampler_window_energy_j(s, i);
    }
    jsonutil_set_num(j, "energy_j", known ? meter_j - parts_j : NAN);
    jsonutil_set_num(j, "meter_energy_j", mj);
    jsonutil_set_num(j, "metered_energy_j", known ? parts_j : NAN);
    json_object_set_new(j, "meters", meters);
    json_object_set_new(j, "channels", chans);
    json_object_set_new(j, "method", json_string("measured"));
    return j;
}

void rest_of_system_print(FILE *f, const json_t *j)
{
    if (!j)
        return;
    json_t *e = json_object_get(j, "energy_j");
    json_t *meters = json_object_get(j, "meters"), *chans = json_object_get(j, "channels");
    if (json_is_real(e))
        fprintf(f, "  rest of system %.3f J = %.6f Wh (measured: ", json_real_value(e),
                json_real_value(e) / 3600.0);
    else
        fprintf(f, "  rest of system ? (a channel has no reading: ");
    for (size_t k = 0; k < json_array_size(meters); k++)
        fprintf(f, "%s%s", k ? " + " : "", json_string_value(json_array_get(meters, k)));
    if (json_array_size(chans) == 0)
        fprintf(f, "; no measured CPU or GPU channel to take from it");
    for (size_t k = 0; k < json_array_size(chans); k++)
        fprintf(f, " - %s", json_string_value(json_array_get(chans, k)));
    fprintf(f, ")\n");
    if (json_is_real(e) && json_real_value(e) < 0)
        fprintf(f, "                 negative: the meter read less than the channels it should "
                   "contain (is it on this node's feed? a second supply on another meter?)\n");
}

size_t common_dcgm_cpus(const struct sampler *s, struct common_dcgm_cpus *ret)
{
    *ret = (struct common_dcgm_cpus){0};
    for (size_t i = 0; i < s->nsrc && !ret->src; i++) {
        const struct source *src = &s->src[i];
        if (src->ops != &dcgm_source_ops || src->status != 0)
            continue;
        ret->n = dcgm_source_cpu_ids(src, ret->socket, DCGM_SRC_CPUS_MAX);
        /* ascending, as DCGM usually lists them already */
        for (size_t a = 1; a < ret->n; a++)
            for (size_t k = a; k > 0 && ret->socket[k - 1] > ret->socket[k]; k--) {
                unsigned t = ret->socket[k];
                ret->socket[k] = ret->socket[k - 1];
                ret->socket[k - 1] = t;
            }
        if (ret->n)
            ret->src = src;
    }
    return ret->n;
}

int cli_socket_group(const char *cmd, const char *arg, gid_t *gid)
{
    struct group *g = *arg ? getgrnam(arg) : NULL;
    uint64_t v;
    if (g) {
        *gid = g->gr_gid;
        return 0;
    }
    if (*arg && parse_u64(arg, &v) == 0 && v < (gid_t)-1) {
        *gid = (gid_t)v;
        return 0;
    }
    cli_error("%s: --socket-group: no group '%s'", cmd, arg);
    return -1;
}

int cli_duration(const char *opt, const char *arg, int64_t min_ns, int64_t max_ns, int64_t *ret)
{
    if (parse_duration_range_ns(arg, min_ns, max_ns, ret) == 0)
        return 0;
    char rule[256];
    parse_duration_rule(rule, sizeof rule, min_ns, max_ns);
    cli_error("%s: '%s' is not %s", opt, arg, rule);
    return -1;
}

/* The optimal string alignment distance of a and b (edits, with a swap of neighbours as one). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb];
}

size_t cli_suggest(const char *typed, const char *const *names, size_t n, const char *prefix,
                   char *buf, size_t cap)
{
    size_t len = strlen(typed), found = 0, best = SIZE_MAX;
    size_t pick[4];
    /* an abbreviation: every name it begins */
    for (size_t i = 0; i < n && len > 0; i++)
        if (strncmp(names[i], typed, len) == 0 && found < 4)
            pick[found++] = i;
    if (found == 0) {
        /* a typo: the nearest names, near enough to be meant */
        size_t limit = 1 + len / 4;
        for (size_t i = 0; i < n; i++) {
            size_t dist = edit_distance(typed, names[i]);
            if (dist > limit || dist >= len || dist > best)
                continue;
            if (dist < best)
                found = 0;
            best = dist;
            if (found < 4)
                pick[found++] = i;
        }
    }
    if (cap)
        buf[0] = '\0';
    size_t w = 0;
    for (size_t k = 0; k < found && w < cap; k++) {
        int r = snprintf(buf + w, cap - w, "%s'%s%s'",
                         k == 0           ? ""
                         : k + 1 == found ? " or "
                                          : ", ",
                         prefix, names[pick[k]]);
        if (r < 0)
            break;
        w += (size_t)r;
    }
    return found;
}

/* The long option's name typed in argument a ("--name" or "--name=value"), into buf. */
static const char *typed_long_name(const char *a, char *buf, size_t cap)
{
    if (!a || strncmp(a, "--", 2) != 0)
        return NULL;
    size_t n = strcspn(a + 2, "=");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, a + 2, n);
    buf[n] = '\0';
    return buf;
}

/* Prints "unknown option '--typed'" with the nearest names of longopts. */
static void unknown_long(const char *cmd, const char *typed, const struct option *longopts)
{
    const char *names[128];
    size_t n = 0;
    for (size_t i = 0; longopts[i].name && n < 128; i++)
        names[n++] = longopts[i].name;
    char near[512];
    if (cli_suggest(typed, names, n, "--", near, sizeof near) > 0)
        cli_error("%s: unknown option '--%s': did you mean %s?", cmd, typed, near);
    else
        cli_error("%s: unknown option '--%s' (carma %s --help lists the options)", cmd, typed, cmd);
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               const char *cmd)
{
    /* ':' first (after a '+' or '-') makes a missing value ':' rather than '?' */
    char opts[128];
    size_t lead = (shortopts[0] == '+' || shortopts[0] == '-') ? 1 : 0;
    snprintf(opts, sizeof opts, "%.*s:%s", (int)lead, shortopts, shortopts + lead);
    opterr = 0;
    int idx = -1;
    int c = getopt_long(argc, argv, opts, longopts, &idx);
    char name[128];
    if (c == -1)
        return -1;
    if (c != '?' && c != ':') {
        if (idx < 0)
            return c; /* a short option */
        /* getopt_long takes an unambiguous abbreviation for the whole name: carma does not */
        const char *a = optarg && optind >= 2 && argv[optind - 1] == optarg ? argv[optind - 2]
                                                                            : argv[optind - 1];
        const char *typed = typed_long_name(a, name, sizeof name);
        if (typed && strcmp(typed, longopts[idx].name) != 0) {
            unknown_long(cmd, typed, longopts);
            return '?';
        }
        return c;
    }
    const char *last = optind >= 1 && optind <= argc ? argv[optind - 1] : NULL;
    const char *typed = typed_long_name(last, name, sizeof name);
    bool exact = false;
    for (size_t i = 0; typed && longopts[i].name; i++)
        exact = exact || strcmp(longopts[i].name, typed) == 0;
    if (typed && !exact) {
        unknown_long(cmd, typed, longopts);
        return '?';
    }
    if (c == ':') {
        if (typed)
            cli_error("%s: option '--%s' needs a value", cmd, typed);
        else
            cli_error("%s: option '-%c' needs a value", cmd, optopt);
        return '?';
    }
    /* a value given to a long option that takes none: --json=x (and not a bad short option
     * in a cluster after a good --name=value) */
    for (size_t i = 0; typed && strchr(last, '=') && longopts[i].name; i++) {
        if (strcmp(longopts[i].name, typed) == 0 && longopts[i].has_arg == no_argument &&
            longopts[i].val == optopt) {
            cli_error("%s: option '--%s' takes no value", cmd, typed);
            return '?';
        }
    }
    if (optopt > 0 && optopt < 256)
        cli_error("%s: unknown option '-%c' (carma %s --help lists the options)", cmd, optopt, cmd);
    else
        cli_error("%s: unknown option '%s' (carma %s --help lists the options)", cmd,
                  last ? last : "?", cmd);
    return '?';
}
