/* estimate: the estimating CPU power source, `--sources model` (see estimate.h). */
#include "sources/estimate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/table.h"
#include "sources/modelfile.h"
#include "sources/procfs.h"
#include "sources/source.h"

struct estimate_priv {
    const struct procstat *util;
    int curve;
    double idle_w, max_w; /* per socket */
    int sockets;
    /* with a fitted model file: the node's P = base_w + slope_w × u per kind (cpu, dram) */
    bool fitted;
    bool has_dram;
    double base_w[2], slope_w[2];
    double cpu_weight[PROCSTAT_SOCKETS_MAX]; /* each socket's share of the CPUs */
};

/*
 * Loads a fitted model (carma model fit) for the source: kind cpu is required, dram is used
 * when present, and their delta may use cpu_util only (the one feature a sampler reads).
 * Writes the note. Returns 0 or a negative errno with s->reason set.
 */
static int estimate_load_fitted(struct source *s, struct estimate_priv *p, const char *path)
{
    struct power_model *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    struct carma_err e = {0};
    int r = modelfile_load(path, m, &e);
    if (r < 0) {
        snprintf(s->reason, sizeof s->reason, "--model-file: %s", e.msg);
        goto out;
    }
    char text[400] = "";
    for (int q = 0; q < 2; q++) {
        int kind = q == 0 ? KIND_CPU : KIND_DRAM;
        const struct pm_kind *k = modelfile_find_kind(m, kind);
        if (!k) {
            if (kind == KIND_CPU) {
                r = -EINVAL;
                snprintf(s->reason, sizeof s->reason,
                         "--model-file %s: no model of kind cpu (the model source estimates "
                         "CPU power)",
                         path);
                goto out;
            }
            continue;
        }
        for (size_t j = 0; j < k->nfeat; j++)
            if (k->feat[j] != FX_CPU_UTIL) {
                r = -EINVAL;
                snprintf(s->reason, sizeof s->reason,
                         "--model-file %s: kind %s uses feature '%s', which the model source "
                         "cannot read while sampling (only cpu_util): fit it with --features "
                         "cpu_util",
                         path, channel_kind_name((enum channel_kind)kind),
                         modelfile_feature_name(k->feat[j]));
                goto out;
            }
        p->base_w[q] = k->baseline_w;
        p->slope_w[q] = k->nfeat ? k->coef[0] : 0.0;
        p->has_dram = p->has_dram || q == 1;
        size_t used = strlen(text);
        snprintf(text + used, sizeof text - used, "%s%s P = %.4g + %.4g x u W", q ? "; " : "",
                 channel_kind_name((enum channel_kind)kind), p->base_w[q], p->slope_w[q]);
    }
    p->fitted = true;
    snprintf(s->note, sizeof s->note,
             "estimated, not measured: fitted model %s (carma model fit on %zu run%s): %s, u the "
             "node's CPU utilization, given to the %d socket%s by their busy CPUs%s",
             path, m->nruns, m->nruns == 1 ? "" : "s", text, p->sockets, p->sockets == 1 ? "" : "s",
             m->ncpu > 0 && m->ncpu != p->util->ncpu ? "; the model was fitted on a machine with "
                                                       "another CPU count"
                                                     : "");
    r = 0;
out:
    free(m);
    return r;
}

double estimate_curve(int curve, double u)
{
    if (!(u > 0.0))
        return 0.0;
    if (u > 1.0)
        u = 1.0;
    return curve == ESTIMATE_CURVE_LINEAR ? u : 2.0 * u - pow(u, 1.4);
}

int estimate_curve_parse(const char *s, int *ret)
{
    if (strcmp(s, "fan") == 0)
        *ret = ESTIMATE_CURVE_FAN;
    else if (strcmp(s, "linear") == 0)
        *ret = ESTIMATE_CURVE_LINEAR;
    else
        return -EINVAL;
    return 0;
}

const char *estimate_curve_name(int curve)
{
    return curve == ESTIMATE_CURVE_LINEAR ? "linear" : "fan";
}

/* One channel per socket (model/cpuN), and per socket model/dramN with a fitted dram model. */
static int estimate_add_channels(struct source *s, struct probe_ctx *ctx, struct estimate_priv *p)
{
    s->first = ctx->set->n;
    for (int q = 0; q < (p->has_dram ? 2 : 1); q++) {
        for (int k = 0; k < p->sockets; k++) {
            int idx = channel_set_add(ctx->set);
            if (idx < 0)
                return idx;
            struct channel *c = &ctx->set->ch[idx];
            snprintf(c->name, sizeof c->name, "model/%s%d", q ? "dram" : "cpu", k);
            c->source = "model";
            c->kind = q ? KIND_DRAM : KIND_CPU;
            snprintf(c->zone, sizeof c->zone, "%s", q ? "dram" : "cpu");
            if (p->fitted)
                snprintf(c->label, sizeof c->label, "socket %d, fitted model", k);
            else
                snprintf(c->label, sizeof c->label, "socket %d, %s curve", k,
                         estimate_curve_name(p->curve));
            c->socket = k;
            c->domain = DOMAIN_TOTAL;
            c->form = FORM_GAUGE;
            c->method = METHOD_ESTIMATED;
            c->idle_w = p->fitted ? p->base_w[q] / p->sockets : p->idle_w;
            snprintf(c->path, sizeof c->path, "proc/stat");
        }
    }
    s->count = ctx->set->n - s->first;
    return (int)s->count;
}

static int estimate_probe(struct source *s, struct probe_ctx *ctx)
{
    if (ctx->have_measured_cpu && !ctx->forced) {
        snprintf(s->reason, sizeof s->reason,
                 "not needed: measured CPU power channels exist (to see the estimate beside "
                 "them, add model to --sources)");
        return -ENOENT;
    }
    if (!ctx->util) {
        snprintf(s->reason, sizeof s->reason,
                 "no CPU utilization (proc/stat unreadable below the root): cannot estimate");
        return -ENOENT;
    }
    const struct estimate_opts *o = ctx->model;
    struct estimate_priv *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    s->priv = p;
    p->util = ctx->util;
    p->curve = o ? o->curve : ESTIMATE_CURVE_FAN;
    p->sockets = ctx->util->nsockets > 0 ? ctx->util->nsockets : 1;
    double idle_fraction =
        o && o->idle_fraction > 0 ? o->idle_fraction : ESTIMATE_IDLE_FRACTION_DEFAULT;
    char basis[600];
    if (o && o->model_file) {
        int r = estimate_load_fitted(s, p, o->model_file);
        if (r < 0)
            return r;
        int ncpu = ctx->util->ncpu > 0 ? ctx->util->ncpu : 1;
        for (int c = 0; c < ctx->util->ncpu; c++) {
            int k = ctx->util->cpu_socket ? ctx->util->cpu_socket[c] : 0;
            if (k >= 0 && k < p->sockets && k < PROCSTAT_SOCKETS_MAX)
                p->cpu_weight[k] += 1.0 / ncpu;
        }
        return estimate_add_channels(s, ctx, p);
    }
    if (o && o->tdp_w > 0) {
        p->max_w = o->tdp_w;
        snprintf(basis, sizeof basis, "TDP %.4g W per socket from --cpu-tdp", o->tdp_w);
    } else {
        struct cpu_tdp_match m;
        struct carma_err e = {0};
        char *text = NULL;
        size_t len = 0;
        const char *tname = NULL;
        if (o && o->table_path) {
            int r = file_read_all(o->table_path, 1u << 20, &text, &len);
            if (r == -ESPIPE) {
                snprintf(s->reason, sizeof s->reason, "CPU table %s is not a regular file (%s)",
                         o->table_path, file_kind_at(AT_FDCWD, o->table_path));
                return r;
            }
            if (r < 0) {
                snprintf(s->reason, sizeof s->reason, "cannot open CPU table %s: %s", o->table_path,
                         strerror(-r));
                return r;
            }
            tname = o->table_path;
        }
        int r = table_cpu_tdp_lookup(ctx->util->model_name, text, len, tname, &m, &e);
        free(text);
        if (r < 0) {
            snprintf(s->reason, sizeof s->reason, "%s", e.msg);
            return r;
        }
        p->max_w = m.tdp_w;
        if (m.fallback)
            snprintf(basis, sizeof basis,
                     "CPU model \"%s\" is not in the TDP table: generic TDP %.4g W per socket "
                     "used (%s); give --cpu-tdp W for a better estimate",
                     ctx->util->model_name[0] ? ctx->util->model_name : "unknown", m.tdp_w,
                     m.source);
        else
            snprintf(basis, sizeof basis, "TDP %.4g W per socket for \"%s\" (table row \"%s\": %s)",
                     m.tdp_w, ctx->util->model_name, m.pattern, m.source);
    }
    p->idle_w = o && o->idle_w >= 0 ? o->idle_w : idle_fraction * p->max_w;
    if (p->idle_w > p->max_w)
        p->idle_w = p->max_w;
    snprintf(s->note, sizeof s->note,
             "estimated, not measured: P = %.4g + (%.4g - %.4g) x f(u) W per socket, f(u) = %s; "
             "%s",
             p->idle_w, p->max_w, p->idle_w,
             p->curve == ESTIMATE_CURVE_LINEAR ? "u (linear)" : "2u - u^1.4 (Fan et al. 2007)",
             basis);
    return estimate_add_channels(s, ctx, p);
}

/* With a fitted model: the node's baseline in equal parts, its delta by each socket's busy
 * CPUs, so that the sockets add up to baseline + slope × the node's utilization. */
static void estimate_read_fitted(const struct estimate_priv *p, struct reading *out)
{
    const struct procstat *u = p->util;
    double busy = 0;
    for (int k = 0; k < p->sockets; k++)
        busy += p->cpu_weight[k] * u->socket_util[k];
    for (int q = 0; q < (p->has_dram ? 2 : 1); q++) {
        for (int k = 0; k < p->sockets; k++) {
            struct reading *r = &out[q * p->sockets + k];
            if (!u->primed || !u->valid) {
                r->valid = 0;
                r->err = u->valid ? -EAGAIN : u->err;
                continue;
            }
            double share =
                busy > 0 ? p->cpu_weight[k] * u->socket_util[k] / busy : 1.0 / p->sockets;
            r->valid = READING_POWER;
            r->err = 0;
            r->power_w = p->base_w[q] / p->sockets + p->slope_w[q] * u->util_total * share;
        }
    }
}

static void estimate_read(struct source *s, struct reading *out)
{
    struct estimate_priv *p = s->priv;
    if (p->fitted) {
        estimate_read_fitted(p, out);
        return;
    }
    for (int k = 0; k < p->sockets; k++) {
        if (!p->util->primed || !p->util->valid) {
            out[k].valid = 0;
            out[k].err = p->util->valid ? -EAGAIN : p->util->err;
            continue;
        }
        double u = p->util->socket_util[k];
        out[k].valid = READING_POWER;
        out[k].err = 0;
        out[k].power_w = p->idle_w + (p->max_w - p->idle_w) * estimate_curve(p->curve, u);
    }
}

static void estimate_close(struct source *s)
{
    free(s->priv);
    s->priv = NULL;
}

const struct source_ops estimate_source_ops = {
    .name = "model",
    .probe = estimate_probe,
    .read = estimate_read,
    .close = estimate_close,
};
