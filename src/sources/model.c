/* model: the estimated CPU power source (see model.h). */
#include "sources/model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/table.h"
#include "sources/procfs.h"
#include "sources/source.h"

struct model_priv {
    const struct procstat *util;
    int curve;
    double idle_w, max_w; /* per socket */
    int sockets;
};

double model_curve(int curve, double u)
{
    if (!(u > 0.0))
        return 0.0;
    if (u > 1.0)
        u = 1.0;
    return curve == MODEL_CURVE_LINEAR ? u : 2.0 * u - pow(u, 1.4);
}

int model_curve_parse(const char *s, int *ret)
{
    if (strcmp(s, "fan") == 0)
        *ret = MODEL_CURVE_FAN;
    else if (strcmp(s, "linear") == 0)
        *ret = MODEL_CURVE_LINEAR;
    else
        return -EINVAL;
    return 0;
}

const char *model_curve_name(int curve)
{
    return curve == MODEL_CURVE_LINEAR ? "linear" : "fan";
}

static int model_probe(struct source *s, struct probe_ctx *ctx)
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
    const struct model_opts *o = ctx->model;
    struct model_priv *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    s->priv = p;
    p->util = ctx->util;
    p->curve = o ? o->curve : MODEL_CURVE_FAN;
    p->sockets = ctx->util->nsockets > 0 ? ctx->util->nsockets : 1;
    double idle_fraction =
        o && o->idle_fraction > 0 ? o->idle_fraction : MODEL_IDLE_FRACTION_DEFAULT;
    char basis[600];
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
             p->curve == MODEL_CURVE_LINEAR ? "u (linear)" : "2u - u^1.4 (Fan et al. 2007)", basis);
    s->first = ctx->set->n;
    for (int k = 0; k < p->sockets; k++) {
        int idx = channel_set_add(ctx->set);
        if (idx < 0)
            return idx;
        struct channel *c = &ctx->set->ch[idx];
        snprintf(c->name, sizeof c->name, "model/cpu%d", k);
        c->source = "model";
        c->kind = KIND_CPU;
        snprintf(c->zone, sizeof c->zone, "cpu");
        snprintf(c->label, sizeof c->label, "socket %d, %s curve", k, model_curve_name(p->curve));
        c->socket = k;
        c->domain = DOMAIN_TOTAL;
        c->form = FORM_GAUGE;
        c->method = METHOD_ESTIMATED;
        c->idle_w = p->idle_w;
        snprintf(c->path, sizeof c->path, "proc/stat");
    }
    s->count = ctx->set->n - s->first;
    return (int)s->count;
}

static void model_read(struct source *s, struct reading *out)
{
    struct model_priv *p = s->priv;
    for (int k = 0; k < p->sockets; k++) {
        if (!p->util->primed || !p->util->valid) {
            out[k].valid = 0;
            out[k].err = p->util->valid ? -EAGAIN : p->util->err;
            continue;
        }
        double u = p->util->socket_util[k];
        out[k].valid = READING_POWER;
        out[k].err = 0;
        out[k].power_w = p->idle_w + (p->max_w - p->idle_w) * model_curve(p->curve, u);
    }
}

static void model_close(struct source *s)
{
    free(s->priv);
    s->priv = NULL;
}

const struct source_ops model_source_ops = {
    .name = "model",
    .probe = model_probe,
    .read = model_read,
    .close = model_close,
};
