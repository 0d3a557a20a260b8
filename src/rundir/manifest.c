/* manifest: a run directory's manifest.json and the sampler described as JSON (see manifest.h). */
#include "rundir/manifest.h"

#include <sys/utsname.h>
#include <unistd.h>

#include "core/jsonutil.h"
#include "core/pidlive.h"
#include "sources/meter.h"

json_t *rundir_manifest_meters(const struct sampler *s)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < s->nsrc; i++) {
        struct meter_stats st;
        if (meter_stats_get(&s->src[i], &st) < 0)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "spec", json_string(st.spec));
        json_object_set_new(o, "channel",
                            s->src[i].count ? json_string(s->set.ch[s->src[i].first].name)
                                            : json_null());
        json_object_set_new(o, "records", json_integer((json_int_t)st.records));
        json_object_set_new(o, st.type == METER_CMD ? "failed_runs" : "garbage_lines",
                            json_integer((json_int_t)st.garbage));
        if (st.type == METER_WATTSUP) {
            json_object_set_new(o, "disconnects", json_integer((json_int_t)st.disconnects));
            json_object_set_new(o, "reconnects", json_integer((json_int_t)st.reconnects));
        }
        json_object_set_new(o, "connected", json_boolean(st.connected));
        jsonutil_set_num(o, "last_watts", st.last_watts);
        jsonutil_set_num(o, "last_age_s", st.last_age_s);
        json_object_set_new(o, "last_error",
                            st.last_error[0] ? json_string(st.last_error) : json_null());
        json_array_append_new(arr, o);
    }
    return arr;
}

json_t *rundir_manifest_channels(const struct sampler *s)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < s->set.n; i++) {
        const struct channel *c = &s->set.ch[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(c->name));
        json_object_set_new(o, "source", json_string(c->source));
        json_object_set_new(o, "kind", json_string(channel_kind_name(c->kind)));
        json_object_set_new(o, "zone", json_string(c->zone));
        json_object_set_new(o, "domain", json_string(channel_domain_name(c->domain)));
        json_object_set_new(o, "parent",
                            c->parent >= 0 ? json_string(s->set.ch[c->parent].name) : json_null());
        json_object_set_new(o, "method", json_string(channel_method_name(c->method)));
        json_object_set_new(o, "socket", c->socket >= 0 ? json_integer(c->socket) : json_null());
        json_object_set_new(o, "form", json_string(c->form == FORM_COUNTER ? "counter" : "gauge"));
        if (c->form == FORM_COUNTER) {
            json_object_set_new(o, "counter_unit_j", json_real(c->counter_unit_j));
            json_object_set_new(o, "counter_range",
                                c->counter_range ? json_integer((json_int_t)c->counter_range)
                                                 : json_null());
        }
        json_object_set_new(o, "label", json_string(c->label));
        json_object_set_new(o, "path", json_string(c->path));
        json_array_append_new(arr, o);
    }
    return arr;
}

json_t *rundir_manifest_unavailable(const struct sampler *s)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < s->nsrc; i++) {
        const struct source *src = &s->src[i];
        if (src->status == 0)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "source", json_string(src->ops->name));
        json_object_set_new(o, "reason", json_string(src->reason));
        json_array_append_new(arr, o);
    }
    if (!s->have_util) {
        json_t *o = json_object();
        json_object_set_new(o, "source", json_string("procfs"));
        json_object_set_new(o, "reason", json_string(s->util_err.msg));
        json_array_append_new(arr, o);
    }
    return arr;
}

json_t *rundir_manifest_notes(const struct sampler *s)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < s->nsrc; i++) {
        const struct source *src = &s->src[i];
        if (src->status != 0 || !src->note[0])
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "source", json_string(src->ops->name));
        json_object_set_new(o, "note", json_string(src->note));
        json_array_append_new(arr, o);
    }
    return arr;
}

/* Who writes the run directory, so that a reader can tell a killed run from a running one
 * (core/pidlive.h): pid and pid_start_ticks in m, boot_id in host. */
static void writer_json(json_t *m, json_t *host)
{
    char boot[64];
    if (pid_boot_id(boot, sizeof boot) == 0)
        json_object_set_new(host, "boot_id", json_string(boot));
    json_object_set_new(m, "pid", json_integer(getpid()));
    uint64_t t;
    if (pid_start_ticks(getpid(), &t, NULL) == 0)
        json_object_set_new(m, "pid_start_ticks", json_integer((json_int_t)t));
}

/* The part of manifest.json that every producer shares: up to its notes and meters. */
static json_t *manifest_base(const struct sampler *s, const char *producer, const char *version)
{
    json_t *m = json_object();
    struct utsname u;
    uname(&u);
    json_object_set_new(m, "schema_version", json_integer(1));
    json_object_set_new(m, "producer", json_string(producer));
    json_object_set_new(m, "carma_version", json_string(version));
    json_t *host = json_object();
    json_object_set_new(host, "hostname", json_string(u.nodename));
    json_object_set_new(host, "kernel", json_string(u.release));
    json_object_set_new(host, "machine", json_string(u.machine));
    if (s->have_util) {
        json_object_set_new(host, "cpu_model", json_string(s->util.model_name));
        json_object_set_new(host, "cpus", json_integer(s->util.ncpu));
        json_object_set_new(host, "sockets", json_integer(s->util.nsockets));
    }
    json_object_set_new(m, "host", host);
    writer_json(m, host);
    json_t *opts = json_object();
    json_object_set_new(opts, "root", json_string(s->root.path));
    json_object_set_new(opts, "interval_s", json_real((double)s->interval_ns / 1e9));
    json_object_set_new(m, "options", opts);
    json_object_set_new(m, "channels", rundir_manifest_channels(s));
    json_object_set_new(m, "unavailable", rundir_manifest_unavailable(s));
    json_object_set_new(m, "notes", rundir_manifest_notes(s));
    bool meters = false;
    for (size_t i = 0; i < s->nsrc; i++)
        meters = meters || meter_source_is(&s->src[i]);
    if (meters)
        json_object_set_new(m, "meters", rundir_manifest_meters(s));
    return m;
}

json_t *rundir_manifest_json(const struct sampler *s, const struct rundir_manifest *o)
{
    json_t *m = manifest_base(s, o->producer, o->version);
    json_t *sv = json_object();
    for (const char *const *k = o->schemas; k && *k; k++)
        json_object_set_new(sv, *k, json_integer(1));
    json_object_set_new(m, "schema_versions", sv);
    json_t *opts = json_object_get(m, "options");
    const char *key;
    json_t *v;
    json_object_foreach(o->options, key, v)
    {
        json_object_set(opts, key, v);
    }
    json_decref(o->options);
    if (o->command)
        json_object_set_new(m, "command", o->command);
    json_object_set_new(m, "status", json_string(o->status));
    json_object_set_new(m, "interruption", o->interruption);
    return m;
}
