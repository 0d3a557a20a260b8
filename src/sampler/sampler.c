/* sampler: the tick loop that reads all sources and integrates energy (see sampler.h). */
#include "sampler/sampler.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "sources/meter.h"

static bool selected(const char *list, const char *name)
{
    if (!list)
        return true;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

static int check_source_list(const char *list, struct carma_err *e)
{
    if (!list)
        return 0;
    if (!*list)
        return carma_err_set(e, -EINVAL, "--sources: empty list");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!source_find(tok)) {
            char known[128] = "";
            for (size_t i = 0; i < source_table_len; i++) {
                strncat(known, source_table[i]->name, sizeof known - strlen(known) - 3);
                if (i + 1 < source_table_len)
                    strncat(known, ", ", sizeof known - strlen(known) - 1);
            }
            return carma_err_set(e, -EINVAL, "--sources: unknown source '%s' (known: %s)", tok,
                                 known);
        }
    }
    return 0;
}

static bool measured_cpu_side(const struct channel_set *set, size_t from)
{
    for (size_t i = from; i < set->n; i++) {
        const struct channel *c = &set->ch[i];
        if (c->method == METHOD_MEASURED && c->domain == DOMAIN_TOTAL &&
            (c->kind == KIND_CPU || c->kind == KIND_SYSTEM))
            return true;
    }
    return false;
}

struct sampler *sampler_new(const struct sampler_opts *o, struct carma_err *e)
{
    int64_t interval = o->interval_ns ? o->interval_ns : SAMPLER_INTERVAL_DEFAULT_NS;
    if (interval < SAMPLER_INTERVAL_MIN_NS || interval > SAMPLER_INTERVAL_MAX_NS) {
        carma_err_set(e, -ERANGE, "--interval must be between 1ms and 60s");
        return NULL;
    }
    if (check_source_list(o->sources, e) < 0)
        return NULL;
    struct sampler *s = calloc(1, sizeof *s);
    if (!s) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    s->timerfd = -1;
    s->interval_ns = interval;
    if (fsroot_open(&s->root, o->root ? o->root : "/", e) < 0) {
        free(s);
        return NULL;
    }
    s->have_util = procstat_open(&s->util, &s->root, &s->util_err) == 0;
    if (!s->have_util)
        procstat_close(&s->util);
    struct probe_ctx ctx = {
        .root = &s->root,
        .set = &s->set,
        .util = s->have_util ? &s->util : NULL,
        .model = &o->model,
        .dcgm_host = o->dcgm_host,
        .interval_ns = interval,
        .rapl_path = o->rapl_path,
    };
    for (size_t i = 0; i < source_table_len && s->nsrc < SAMPLER_SOURCES_MAX; i++) {
        const struct source_ops *ops = source_table[i];
        if (!selected(o->sources, ops->name))
            continue;
        struct source *src = &s->src[s->nsrc++];
        src->ops = ops;
        src->first = s->set.n;
        ctx.forced = o->sources != NULL;
        ctx.have_measured_cpu = measured_cpu_side(&s->set, 0);
        ctx.probed = s->src;
        ctx.n_probed = s->nsrc - 1;
        int r = ops->probe(src, &ctx);
        if (r <= 0) {
            /* drop whatever a failed probe may have appended */
            s->set.n = src->first;
            src->count = 0;
            src->status = r == 0 ? -ENOENT : r;
            if (!src->reason[0])
                snprintf(src->reason, sizeof src->reason, "%s", strerror(-src->status));
            if (ops->close)
                ops->close(src);
        } else {
            src->status = 0;
            src->count = s->set.n - src->first;
        }
    }
    /* the meters last: they are no measured CPU-side channel for the model to step aside for */
    for (size_t k = 0; k < o->n_meters && k < SAMPLER_METERS_MAX; k++) {
        if (s->nsrc >= SAMPLER_SOURCES_MAX)
            break;
        struct source *src = &s->src[s->nsrc++];
        src->ops = &meter_source_ops;
        src->first = s->set.n;
        ctx.forced = true;
        ctx.spec = o->meters[k];
        int r = meter_source_ops.probe(src, &ctx);
        ctx.spec = NULL;
        if (r <= 0) {
            s->set.n = src->first;
            src->count = 0;
            src->status = r == 0 ? -ENOENT : r;
            meter_source_ops.close(src);
        } else {
            src->status = 0;
            src->count = s->set.n - src->first;
        }
    }
    for (size_t i = 0; i < s->set.n; i++) {
        const struct channel *c = &s->set.ch[i];
        struct chan_state *st = &s->st[i];
        energy_counter_init(&st->ctr, c->counter_range, c->counter_unit_j, channel_power_max_w(c));
        st->watts = NAN;
        st->min_w = INFINITY;
        st->max_w = -INFINITY;
    }
    return s;
}

void sampler_free(struct sampler *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].status == 0 && s->src[i].ops->close)
            s->src[i].ops->close(&s->src[i]);
    if (s->have_util)
        procstat_close(&s->util);
    if (s->timerfd >= 0)
        close(s->timerfd);
    fsroot_close(&s->root);
    free(s);
}

int sampler_start(struct sampler *s)
{
    if (s->timerfd < 0) {
        s->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (s->timerfd < 0)
            return -errno;
    }
    struct itimerspec its = {
        .it_interval = {.tv_sec = s->interval_ns / NS_PER_S, .tv_nsec = s->interval_ns % NS_PER_S},
        .it_value = {.tv_sec = s->interval_ns / NS_PER_S, .tv_nsec = s->interval_ns % NS_PER_S},
    };
    if (timerfd_settime(s->timerfd, 0, &its, NULL) < 0)
        return -errno;
    return 0;
}

int sampler_fd(const struct sampler *s)
{
    return s->timerfd;
}

void sampler_ack(struct sampler *s)
{
    uint64_t n;
    if (read(s->timerfd, &n, sizeof n) == (ssize_t)sizeof n && n > 1)
        s->overruns += n - 1;
}

/* t: the tick's time (a gauge is integrated over the ticks: the times samples.csv stamps);
 * t_read: when the channel's source was read (a counter's steps are timed by its reads). */
static void integrate(struct sampler *s, size_t i, int64_t t, int64_t t_read)
{
    const struct channel *c = &s->set.ch[i];
    const struct reading *rd = &s->readings[i];
    struct chan_state *st = &s->st[i];
    st->tick_energy_j = 0.0;
    st->watts = NAN;
    st->tick_valid = false;
    unsigned want = c->form == FORM_COUNTER ? READING_ENERGY : READING_POWER;
    /* a gauge the channel cannot physically show (docs/sources.md): invalid, not integrated */
    double max_w = st->ctr.max_power_w;
    unsigned valid = rd->valid;
    if ((valid & READING_POWER) && !(rd->power_w >= 0.0 && rd->power_w <= max_w))
        valid &= ~READING_POWER;
    if (!(valid & want)) {
        st->invalid++;
        if (rd->valid & want)
            st->last_err = -ERANGE; /* read, but implausible */
        else
            st->last_err = rd->err ? rd->err : -EAGAIN;
        return;
    }
    if (c->form == FORM_COUNTER) {
        t = t_read;
        int64_t dt = st->have_last ? t - st->last_t : 0;
        double j;
        enum energy_step step = energy_counter_update(&st->ctr, rd->energy_raw, dt, &j);
        st->wraps = st->ctr.wraps;
        st->resets = st->ctr.resets;
        if (step == ENERGY_IMPLAUSIBLE) {
            /* more energy than the channel can draw in the time: invalid; the next step is
             * measured from this value and this time */
            st->invalid++;
            st->last_err = -ERANGE;
            st->have_gauge = false;
            st->have_last = true;
            st->last_t = t;
            return;
        }
        st->tick_valid = true;
        st->samples++;
        if ((step == ENERGY_OK || step == ENERGY_WRAP) && dt > 0) {
            st->tick_energy_j = j;
            st->energy_j += j;
            st->covered_ns += dt;
            st->watts = energy_step_watts(j, dt, max_w);
            /* a gauge read beside the counter: integrated over the same steps, as a
             * cross-check of the counter (drift) */
            if ((valid & READING_POWER) && st->have_gauge) {
                st->xgauge_j += energy_trapezoid_j(st->last_power_w, rd->power_w, dt);
                st->xcounter_j += j;
            }
        }
        st->have_gauge = (valid & READING_POWER) != 0;
        if (st->have_gauge)
            st->last_power_w = rd->power_w;
    } else {
        st->tick_valid = true;
        st->samples++;
        if (st->have_last && t > st->last_t) {
            double j = energy_trapezoid_j(st->last_power_w, rd->power_w, t - st->last_t);
            st->tick_energy_j = j;
            st->energy_j += j;
            st->covered_ns += t - st->last_t;
        }
        st->watts = rd->power_w;
        st->last_power_w = rd->power_w;
    }
    st->have_last = true;
    st->last_t = t;
    if (isfinite(st->watts)) {
        if (st->watts < st->min_w)
            st->min_w = st->watts;
        if (st->watts > st->max_w)
            st->max_w = st->watts;
    }
}

void sampler_tick(struct sampler *s)
{
    int64_t t = time_mono_ns();
    s->real_now = time_real_ns();
    if (s->ticks == 0) {
        s->t_first = s->t_win = t;
        s->real_first = s->real_win = s->real_now;
        s->t_prev = t;
    } else {
        s->t_prev = s->t_now;
    }
    s->t_now = t;
    s->util_fresh = false;
    if (s->have_util && (s->ticks == 0 || t - s->util_last >= SAMPLER_UTIL_PERIOD_NS)) {
        procstat_sample(&s->util);
        s->util_last = t;
        s->util_fresh = true;
    }
    /* a counter's steps are timed by its source's reads, not by the tick: the tick's own time
     * is taken before /proc/stat and the earlier sources, and a thread preempted there would
     * shift a step by the stall (a 100 W counter read 16 ms late on a 100 ms tick shows 116 W,
     * then 84 W). A gauge is integrated over the ticks, the times samples.csv stamps its
     * joules_total with. */
    for (size_t k = 0; k < s->nsrc; k++) {
        struct source *src = &s->src[k];
        if (!src->count)
            continue;
        int64_t tr = t;
        if (src->status == 0) {
            tr = time_mono_ns();
            src->ops->read(src, &s->readings[src->first]);
        }
        for (size_t i = src->first; i < src->first + src->count; i++)
            s->read_t[i] = tr;
    }
    for (size_t i = 0; i < s->set.n; i++)
        integrate(s, i, t, s->read_t[i]);
    s->ticks++;
}

void sampler_refresh_util(struct sampler *s)
{
    if (!s->have_util || s->util_fresh)
        return;
    procstat_sample(&s->util);
    s->util_last = s->t_now;
    s->util_fresh = true;
}

double sampler_elapsed_s(const struct sampler *s)
{
    return (double)(s->t_now - s->t_first) / (double)NS_PER_S;
}

void sampler_window_start(struct sampler *s)
{
    s->t_win = s->t_now;
    s->real_win = s->real_now;
    for (size_t i = 0; i < s->set.n; i++) {
        struct chan_state *st = &s->st[i];
        st->win_energy_j = st->energy_j;
        st->win_covered_ns = st->covered_ns;
        st->win_xgauge_j = st->xgauge_j;
        st->win_xcounter_j = st->xcounter_j;
        st->win_samples = st->samples;
        st->win_invalid = st->invalid;
        st->win_wraps = st->wraps;
        st->win_resets = st->resets;
        st->min_w = INFINITY;
        st->max_w = -INFINITY;
        if (st->tick_valid && isfinite(st->watts))
            st->min_w = st->max_w = st->watts;
    }
}

double sampler_window_s(const struct sampler *s)
{
    return (double)(s->t_now - s->t_win) / (double)NS_PER_S;
}

double sampler_window_energy_j(const struct sampler *s, size_t i)
{
    return s->st[i].energy_j - s->st[i].win_energy_j;
}

double sampler_window_drift_pct(const struct sampler *s, size_t i)
{
    const struct chan_state *st = &s->st[i];
    double c = st->xcounter_j - st->win_xcounter_j, g = st->xgauge_j - st->win_xgauge_j;
    return c > 0 ? 100.0 * (g - c) / c : NAN;
}

double sampler_window_covered_s(const struct sampler *s, size_t i)
{
    return (double)(s->st[i].covered_ns - s->st[i].win_covered_ns) / (double)NS_PER_S;
}

static size_t pick(const struct sampler *s, int *out, enum channel_method m, bool system_only,
                   bool cpu_only)
{
    size_t n = 0;
    for (size_t i = 0; i < s->set.n; i++) {
        const struct channel *c = &s->set.ch[i];
        /* a wall meter contains every other channel: it is chosen alone, or not at all */
        if (c->domain != DOMAIN_TOTAL || c->method != m || channel_is_meter(c))
            continue;
        if (system_only && c->kind != KIND_SYSTEM)
            continue;
        if (cpu_only && c->kind != KIND_CPU && c->kind != KIND_DRAM && c->kind != KIND_SOC)
            continue;
        out[n++] = (int)i;
    }
    return n;
}

size_t sampler_select_node(const struct sampler *s, int *out)
{
    size_t n = 0;
    for (size_t i = 0; i < s->set.n; i++)
        if (channel_is_meter(&s->set.ch[i]))
            out[n++] = (int)i;
    if (n)
        return n;
    n = pick(s, out, METHOD_MEASURED, true, false);
    if (n)
        return n;
    n = pick(s, out, METHOD_MEASURED, false, false);
    /* an estimate stands in for a kind of device that nothing measures (the CPU model beside
     * measured GPUs): the node is not understated, and each channel keeps its label */
    bool measured_kind[KIND_OTHER + 1] = {false};
    for (size_t k = 0; k < n; k++)
        measured_kind[s->set.ch[out[k]].kind] = true;
    int est[CHANNELS_MAX];
    size_t m = pick(s, est, METHOD_ESTIMATED, false, false);
    for (size_t k = 0; k < m; k++)
        if (!measured_kind[s->set.ch[est[k]].kind])
            out[n++] = est[k];
    return n;
}

size_t sampler_select_metered(const struct sampler *s, int *out)
{
    size_t n = pick(s, out, METHOD_MEASURED, true, false);
    return n ? n : pick(s, out, METHOD_MEASURED, false, false);
}

size_t sampler_select_cpu(const struct sampler *s, int *out)
{
    static const enum channel_method order[] = {METHOD_MEASURED, METHOD_ESTIMATED};
    for (size_t k = 0; k < 2; k++) {
        size_t n = pick(s, out, order[k], false, true);
        if (n)
            return n;
        n = pick(s, out, order[k], true, false);
        if (n)
            return n;
    }
    return 0;
}
