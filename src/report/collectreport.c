/*
 * collectreport: carma report of a carma collect directory (see collectreport.h): the report
 * object of what is loaded, collectreport_build, the timeline for pictures, --region and the
 * follower's polls. The pieces, each its own file:
 *   - collectreport_load.c: samples.csv and nodes.csv read into series (also as they grow), and
 *     the nodes made of them;
 *   - collectreport_window.c: --window, --windows files, srt-slurm's benchmark windows;
 *   - collectreport_figures.c: the figures of each window, the coverage, a node's power;
 *   - collectreport_text.c: the report's text form;
 *   - collectreport_follow.c: report.json and report.txt written as the directory grows, and the
 *     thread that does it for `carma collect --report-follow`.
 *
 * The numbers (docs/report.md, "carma collect directories", has them for users):
 *   - a channel's samples are its rows with a finite watts cell; two consecutive samples at
 *     most max_gap_s apart cover the time between them, a longer gap covers nothing (the
 *     energy there is missing, never interpolated); a window's energy is that of the covered
 *     part of it, and covered_s says how much that is;
 *   - energy_j is the exporter's counter difference (joules_total; series_window_counter, a
 *     step where it goes down is a reset: counted, not integrated) where the channel has one,
 *     else the trapezoid of the watts (series_window_interpolate, or series_window_snap for
 *     --edges snap); the trapezoid is kept beside a counter as its cross-check (drift_pct);
 *   - statistics (mean, min, p5..p99, max) are over the samples inside the window (np.percentile's
 *     linear method); for a sum of parts (a node of several, a kind, the job) over the first
 *     part's sample times, the other parts interpolated there, an instant skipped where a part
 *     with samples in the window does not cover it;
 *   - a node is its nodes.csv total (the carma exporter's own node figure) where it has one,
 *     else the sum of its total-domain channels; a dcgm-exporter GPU channel (source "dcgm")
 *     is added to a node that has no GPU channel from a carma exporter.
 */
#include "report/collectreport.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/carbon.h"
#include "core/file.h"
#include "core/jsonutil.h"
#include "report/collectreport_figures.h"
#include "report/collectreport_load.h"
#include "report/collectreport_window.h"

int collectreport_region_parse(char *spec, struct collectreport_region *ret, struct carma_err *e)
{
    char *eq = strchr(spec, '=');
    if (!eq) {
        if (!spec[0])
            return carma_err_set(e, -EINVAL, "--region: an empty region code");
        *ret = (struct collectreport_region){NULL, spec};
        return 0;
    }
    if (eq == spec || !eq[1])
        return carma_err_set(e, -EINVAL, "--region '%s': want CODE or NODE=CODE", spec);
    *eq = '\0';
    *ret = (struct collectreport_region){spec, eq + 1};
    return 0;
}

/* The report of what cr holds (nodes, carbon, windows made again: a follower calls it after
 * every collectreport_load_read). */
static int cr_report(struct cr *crp, const struct collectreport_opts *o, json_t **ret,
                     struct carma_err *e)
{
    const char *dir = crp->dir;
    json_decref(crp->warnings);
    crp->warnings = json_copy(crp->load_warnings);
    struct cr_win *wins = NULL;
    size_t nw = 0;
    json_t *report = NULL;
    int r = 0;
    if (!crp->warnings) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    /* the manifest: the interval */
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/manifest.json", dir);
    json_error_t je;
    int ferr = 0;
    json_t *man = file_load_json(mp, JSON_REJECT_DUPLICATES, &je, &ferr);
    if (!man) {
        r = ferr ? file_input_err(e, mp, ferr)
                 : carma_err_set(e, -EINVAL, "%s:%d:%d: %s", mp, je.line, je.column, je.text);
        goto out;
    }
    crp->interval_s = jsonutil_get_num(json_object_get(man, "options"), "interval_s");
    json_t *job_id = json_incref(json_object_get(man, "job_id"));
    json_t *status = json_incref(json_object_get(man, "status"));
    json_decref(man);
    crp->gap = o->max_gap_s > 0 ? o->max_gap_s
               : isfinite(crp->interval_s) && 3 * crp->interval_s > SERIES_MAX_GAP_S
                   ? 3 * crp->interval_s
                   : SERIES_MAX_GAP_S;
    collectreport_load_nodes_free(crp);
    if (crp->rn.absent && (r = collectreport_load_warn(
                               crp,
                               "%s/nodes.csv: absent: each node is the sum of its total-domain "
                               "channels",
                               dir)) < 0)
        goto out_j;
    if ((r = collectreport_load_nodes(crp)) < 0) {
        r = carma_err_set(e, r, "out of memory");
        goto out_j;
    }
    /* carbon per node */
    const char *def_region = NULL;
    for (size_t i = 0; i < o->nregions; i++) {
        if (!o->regions[i].node)
            def_region = o->regions[i].code;
        else if (collectreport_load_node_find(crp, o->regions[i].node) < 0 &&
                 (r = collectreport_load_warn(crp, "--region %s=%s: no node %s in %s",
                                              o->regions[i].node, o->regions[i].code,
                                              o->regions[i].node, dir)) < 0)
            goto out_j;
    }
    for (size_t ni = 0; ni < crp->nnodes; ni++) {
        const char *code = def_region;
        for (size_t i = 0; i < o->nregions; i++)
            if (o->regions[i].node && strcmp(o->regions[i].node, crp->nodes[ni].name) == 0)
                code = o->regions[i].code;
        if ((r = carbon_intensity_resolve(code, 0, &crp->nodes[ni].ci, e)) < 0)
            goto out_j;
    }
    /* windows: the run, --window, --windows, srt-slurm's */
    if ((r = collectreport_window_list(crp, o, &wins, &nw, e)) < 0)
        goto out_j;
    report = json_object();
    json_t *jwins = json_array();
    json_object_set_new(report, "kind", json_string("collect"));
    json_object_set_new(report, "dir", json_string(dir));
    json_object_set_new(report, "job_id", job_id ? job_id : json_null());
    job_id = NULL;
    json_object_set_new(report, "collect_status", status ? status : json_null());
    status = NULL;
    json_object_set_new(report, "edges",
                        json_string(crp->edges == SERIES_EDGES_SNAP ? "snap" : "interpolate"));
    jsonutil_set_num(report, "interval_s", crp->interval_s);
    jsonutil_set_num(report, "max_gap_s", crp->gap);
    json_object_set_new(report, "windows", jwins);
    for (size_t i = 0; i < nw; i++)
        if ((r = collectreport_figures_window(crp, &wins[i], jwins, e)) < 0)
            goto out_j;
    json_object_set_new(report, "coverage", collectreport_figures_coverage(crp));
    json_object_set_new(report, "warnings", json_incref(crp->warnings));
    *ret = report;
    report = NULL;
    r = 0;
out_j:
    json_decref(job_id);
    json_decref(status);
out:
    json_decref(report);
    free(wins);
    return r;
}

/* ---- the report ---- */

/* collectreport_build, leaving what it loaded in *crp (collectreport_load_free it, whatever
 * this returns). */
static int build_keep(const char *dir, const struct collectreport_opts *o, struct cr *crp,
                      json_t **ret, struct carma_err *e)
{
    struct collectreport_opts def = {0};
    if (!o)
        o = &def;
    int r = collectreport_load_init(crp, dir, o, e);
    if (r == 0)
        r = collectreport_load_read(crp, false, e);
    if (r == 0)
        r = cr_report(crp, o, ret, e);
    return r;
}

int collectreport_build(const char *dir, const struct collectreport_opts *o, json_t **ret,
                        struct carma_err *e)
{
    struct cr cr;
    int r = build_keep(dir, o, &cr, ret, e);
    collectreport_load_free(&cr);
    return r;
}

void collectreport_timeline_free(struct collectreport_timeline *tl)
{
    if (!tl)
        return;
    json_decref(tl->report);
    for (size_t i = 0; i < tl->nnodes; i++) {
        free(tl->nodes[i].t);
        free(tl->nodes[i].w);
    }
    free(tl->nodes);
    if (tl->priv) {
        collectreport_load_free(tl->priv);
        free(tl->priv);
    }
    memset(tl, 0, sizeof *tl);
}

int collectreport_timeline_load(const char *dir, const struct collectreport_opts *o,
                                struct collectreport_timeline *ret, struct carma_err *e)
{
    memset(ret, 0, sizeof *ret);
    struct cr *cr = calloc(1, sizeof *cr);
    if (!cr)
        return carma_err_set(e, -ENOMEM, "out of memory");
    ret->priv = cr;
    int r = build_keep(dir, o, cr, &ret->report, e);
    if (r == 0 && !(ret->nodes = calloc(cr->nnodes ? cr->nnodes : 1, sizeof *ret->nodes)))
        r = carma_err_set(e, -ENOMEM, "out of memory");
    for (size_t i = 0; r == 0 && i < cr->nnodes; i++) {
        ret->nnodes++;
        if (collectreport_figures_node_tl(cr, &cr->nodes[i], &ret->nodes[i]) < 0)
            r = carma_err_set(e, -ENOMEM, "out of memory");
    }
    if (r == 0) {
        const json_t *run = json_array_get(json_object_get(ret->report, "windows"), 0);
        ret->t0 = jsonutil_get_num(run, "start_unix");
        ret->t1 = jsonutil_get_num(run, "end_unix");
        ret->max_gap_s = cr->gap;
    }
    if (r < 0)
        collectreport_timeline_free(ret);
    return r;
}

/* ---- --follow: the polls (the files and the thread: collectreport_follow.c) ---- */

struct collectreport_follow *collectreport_follow_new(const char *dir,
                                                      const struct collectreport_opts *o)
{
    struct collectreport_follow *f = calloc(1, sizeof *f);
    if (!f || !(f->dir = strdup(dir))) {
        free(f);
        return NULL;
    }
    if (o)
        f->o = *o;
    return f;
}

int collectreport_follow_poll(struct collectreport_follow *f, bool final, json_t **ret,
                              struct carma_err *e)
{
    int r = 0;
    if (!f->init) {
        if ((r = collectreport_load_init(&f->cr, f->dir, &f->o, e)) < 0)
            return r;
        f->init = true;
    }
    if ((r = collectreport_load_read(&f->cr, !final, e)) < 0)
        return r;
    return cr_report(&f->cr, &f->o, ret, e);
}

void collectreport_follow_free(struct collectreport_follow *f)
{
    if (!f)
        return;
    if (f->init)
        collectreport_load_free(&f->cr);
    free(f->dir);
    free(f);
}
