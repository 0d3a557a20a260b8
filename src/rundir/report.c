/* report: a carma run directory's report.json and report.txt (rundir/report.h). */
#include "rundir/report.h"

#include <math.h>
#include <string.h>

#include "core/fmt.h"
#include "core/jsonutil.h"

/* report.json's energy_by_kind_j and report.txt's columns have kind k: a node channel of that
 * kind, or a GPU asked for by a workload (then unknown where none is measured). */
static bool kind_reported(const struct rundir_report_in *in, int k)
{
    for (size_t i = 0; i < in->nnode; i++)
        if ((int)in->node[i].kind == k)
            return true;
    if (k == KIND_GPU)
        for (size_t j = 0; j < in->njobs; j++)
            if (in->job[j].wants_gpu)
                return true;
    return false;
}

/* The JSON value v referenced (null for NULL). */
static json_t *ref(json_t *v)
{
    return v ? json_incref(v) : json_null();
}

/* Job k's embodied carbon: its grams, the parts into detail. */
static double embodied(const struct rundir_report_in *in, size_t k, json_t *detail)
{
    const struct rundir_report_job *j = &in->job[k];
    int users[RUNDIR_REPORT_GPUS_MAX];
    for (size_t q = 0; q < j->ngpus; q++) {
        users[q] = 0;
        for (size_t m = 0; m < in->njobs; m++) {
            bool uses = false;
            for (size_t t = 0; t < in->job[m].ngpus; t++)
                uses = uses || in->job[m].gpus[t] == j->gpus[q];
            users[q] += uses;
        }
    }
    struct carbon_embodied_use u = {
        .seconds = j->duration_s,
        .cpu_s = j->cpu_s,
        .n_cpus = j->n_cpus,
        .ncpu = in->have_cpus ? in->ncpu : 1,
        .sockets = in->have_cpus ? in->nsockets : 1,
        .gpus = j->gpus,
        .gpu_users = users,
        .ngpus = j->ngpus,
        .gpu_measured = in->gpu_measured,
        .overrides = in->embodied,
        .n_overrides = in->n_embodied,
    };
    struct carbon_embodied_part parts[1 + RUNDIR_REPORT_GPUS_MAX];
    double g = 0;
    size_t n = carbon_embodied_job(&u, parts, sizeof parts / sizeof parts[0], &g);
    for (size_t p = 0; p < n; p++) {
        const struct carbon_embodied_part *c = &parts[p];
        json_t *o = json_object();
        if (c->gpu < 0) {
            json_object_set_new(o, "device", json_string("cpu"));
            json_object_set_new(o, "units", json_integer(c->units));
        } else {
            json_object_set_new(o, "device", json_sprintf("gpu%d", c->gpu));
        }
        json_object_set_new(o, "share", json_real(c->share));
        json_object_set_new(o, "g_co2e", json_real(c->g_co2e));
        json_object_set_new(o, "source", json_string(c->fact.source));
        if (c->declared)
            json_object_set_new(o, "declared", json_true()); /* no such device measured */
        json_array_append_new(detail, o);
    }
    return g;
}

/* report.json's "perf": each counter's value, or null and why. */
static json_t *perf_json(const struct rundir_report_job *j)
{
    json_t *pf = json_object();
    for (int i = 0; i < PERFC_N; i++) {
        if (j->perf_mask & (1u << i)) {
            json_object_set_new(pf, perf_counter_name(i), json_integer((json_int_t)j->perf[i]));
        } else {
            json_object_set_new(pf, perf_counter_name(i), json_null());
            char key[64];
            snprintf(key, sizeof key, "%s_unavailable", perf_counter_name(i));
            json_object_set_new(pf, key, json_string(j->perf_error[i]));
        }
    }
    return pf;
}

/* report.json: "gpus" and "gpu_process_lists" at the top level, "gpu_j" in each workload (ws:
 * the workloads array). */
static void gpus_json(const struct rundir_report_in *in, json_t *rep, json_t *ws)
{
    const struct ledger *l = in->ledger;
    json_t *arr = json_array();
    for (size_t d = 0; d < in->ngpus; d++) {
        const struct rundir_report_gpu *v = &in->gpu[d];
        json_t *o = json_object();
        json_object_set_new(o, "channel", json_string(v->channel));
        json_object_set_new(o, "index", json_integer(v->index));
        json_object_set_new(o, "uuid", json_string(v->uuid));
        /* the label is "<name> <uuid>" */
        size_t ll = strlen(v->label), ul = strlen(v->uuid);
        if (ul && ll > ul && strcmp(v->label + ll - ul, v->uuid) == 0)
            ll -= ul + 1;
        json_object_set_new(o, "name", json_stringn(v->label, ll));
        json_object_set_new(o, "form", json_string(v->counter ? "counter" : "gauge"));
        const struct ledger_gpu *a = &l->gpu[d];
        json_object_set_new(o, "energy_j", json_real(a->total_j));
        json_object_set_new(o, "covered_s", json_real(v->covered_s));
        json_object_set_new(o, "invalid_samples", json_integer((json_int_t)v->invalid));
        jsonutil_set_num(o, "drift_pct", v->drift_pct);
        /* every power gauge of the GPU against its counter: average powers over the run */
        json_t *gs = json_object();
        jsonutil_set_num(gs, "power_usage", v->drift_pct);
        for (size_t i = 0; i < v->ngauge; i++)
            jsonutil_set_num(gs, v->gauge[i].zone, v->gauge[i].drift_pct);
        json_object_set_new(o, "gauge_drift_pct", gs);
        jsonutil_set_num(o, "static_power_w", v->static_w);
        json_object_set_new(o, "jobs_j", json_real(a->jobs_j));
        json_object_set_new(o, "idle_j", json_real(a->idle_j));
        json_object_set_new(o, "other_j", json_real(a->other_j));
        json_object_set_new(o, "unattributed_j", json_real(a->unattr_j));
        json_t *b = json_object();
        for (int k = 0; k < GPU_BASIS_N; k++)
            json_object_set_new(b, gpu_basis_name((enum gpu_basis)k), json_real(a->basis_s[k]));
        json_object_set_new(o, "basis_s", b);
        json_t *own = json_array();
        for (size_t k = 0; k < in->njobs; k++)
            if (v->owns[k])
                json_array_append_new(own, json_string(in->job[k].name));
        json_object_set_new(o, "owners", own);
        json_array_append_new(arr, o);
    }
    json_object_set_new(rep, "gpus", arr);
    if (in->have_gpu_lists) {
        json_t *q = json_object();
        json_object_set_new(q, "reads", json_integer((json_int_t)in->gpu_list_reads));
        jsonutil_set_num(q, "mean_ms", in->gpu_list_mean_ms);
        json_object_set_new(q, "last_period_ms", json_real(in->gpu_list_period_ms));
        json_object_set_new(rep, "gpu_process_lists", q);
    }
    for (size_t k = 0; k < in->njobs && k < json_array_size(ws); k++) {
        json_t *m = json_object();
        for (size_t d = 0; d < in->ngpus; d++)
            json_object_set_new(m, in->gpu[d].channel, json_real(l->job[k].gpu_j[d]));
        json_object_set_new(json_array_get(ws, k), "gpu_j", m);
    }
}

json_t *rundir_report_json(const struct rundir_report_in *in)
{
    json_t *o = json_object();
    json_object_set_new(o, "experiment", json_string(in->experiment));
    json_object_set_new(o, "run_dir", json_string(in->run_dir));
    json_object_set_new(o, "duration_s", json_real(in->duration_s));
    json_object_set_new(o, "end_unix", json_real(in->end_unix)); /* last tick */
    json_object_set_new(o, "status", json_string(in->status));
    json_object_set_new(o, "interruption", ref(in->interruption));
    json_t *a = json_object();
    json_object_set_new(a, "idle_policy", json_string(in->idle_policy));
    json_object_set_new(a, "static_source",
                        in->static_source ? json_string(in->static_source) : json_null());
    double sw = 0;
    for (size_t k = 0; k < in->nnode; k++)
        sw += isfinite(in->node[k].static_w) ? in->node[k].static_w : 0;
    jsonutil_set_num(a, "static_power_w", in->static_source ? sw : NAN);
    json_object_set_new(a, "cpu_time_source", json_string(in->cpu_time_source));
    if (in->baseline_s > 0) {
        json_t *b = json_object();
        json_object_set_new(b, "duration_s", json_real(in->baseline_s));
        jsonutil_set_num(b, "busy_cpus", in->baseline_busy_cpus);
        json_object_set_new(b, "cpus", in->have_cpus ? json_integer(in->ncpu) : json_null());
        json_object_set_new(b, "other_j", json_real(in->baseline_other_j));
        json_object_set_new(a, "baseline", b);
    }
    json_object_set_new(o, "attribution", a);
    json_t *ws = json_array();
    const struct ledger *l = in->ledger;
    double emb_total = 0, op_total = l->idle_g + l->other_g + l->unattr_g;
    for (size_t k = 0; k < in->njobs; k++) {
        const struct rundir_report_job *j = &in->job[k];
        const struct ledger_job *acc = &l->job[k];
        json_t *w = json_object();
        double dur = j->duration_s;
        json_object_set_new(w, "name", json_string(j->name));
        json_object_set_new(w, "type", j->type ? json_string(j->type) : json_null());
        json_object_set_new(w, "exit_status", json_integer(j->exit_status));
        json_object_set_new(w, "timed_out", json_boolean(j->timed_out));
        json_object_set_new(w, "duration_s", json_real(dur));
        json_object_set_new(w, "energy_j", json_real(acc->energy_j));
        json_t *bk = json_object();
        for (int kk = 0; kk < 6; kk++) {
            if (!kind_reported(in, kk) && acc->by_kind_j[kk] == 0)
                continue; /* no channel of that kind: nothing to say, not 0 */
            bool unknown = kk == KIND_GPU && !in->gpu_measured; /* asked for, not measured */
            json_object_set_new(bk, channel_kind_name((enum channel_kind)kk),
                                unknown ? json_null() : json_real(acc->by_kind_j[kk]));
        }
        json_object_set_new(w, "energy_by_kind_j", bk);
        jsonutil_set_num(w, "avg_power_w", dur > 0 ? acc->energy_j / dur : NAN);
        json_object_set_new(w, "cpu_time_s", json_real(j->cpu_s));
        json_object_set_new(w, "operational_g_co2e", json_real(acc->g_op));
        json_t *detail = json_array();
        double eg = embodied(in, k, detail);
        json_object_set_new(w, "embodied_g_co2e", json_real(eg));
        json_object_set_new(w, "embodied", detail);
        json_object_set_new(w, "method", json_string(in->method));
        json_object_set_new(w, "perf", perf_json(j));
        json_array_append_new(ws, w);
        emb_total += eg;
        op_total += acc->g_op;
    }
    json_object_set_new(o, "workloads", ws);
    gpus_json(in, o, ws);
    json_t *idle = json_object(), *other = json_object(), *un = json_object();
    json_object_set_new(idle, "energy_j", json_real(l->idle_j));
    json_object_set_new(other, "energy_j", json_real(l->other_j));
    json_object_set_new(un, "energy_j", json_real(l->unattr_j));
    json_object_set_new(o, "idle", idle);
    json_object_set_new(o, "other", other);
    json_object_set_new(o, "unattributed", un);
    json_object_set_new(o, "total_energy_j", json_real(l->total_j));
    json_t *nodes = json_array();
    for (size_t k = 0; k < in->nnode; k++)
        json_array_append_new(nodes, json_string(in->node[k].name));
    json_object_set_new(o, "node_channels", nodes);
    if (in->rest_of_system) {
        json_object_set_new(o, "rest_of_system", json_incref(in->rest_of_system));
        json_object_set_new(o, "meters", in->meters ? json_incref(in->meters) : json_array());
    }
    json_t *c = json_object();
    json_object_set_new(c, "g_per_kwh", json_real(in->g_per_kwh));
    json_object_set_new(c, "intensity_source", json_string(in->intensity_source));
    json_object_set_new(c, "pue", json_real(in->pue));
    json_object_set_new(c, "operational_g_co2e", json_real(op_total));
    json_object_set_new(c, "embodied_g_co2e", json_real(emb_total));
    json_object_set_new(o, "carbon", c);
    json_object_set_new(o, "warnings", in->warnings ? json_incref(in->warnings) : json_array());
    return o;
}

/* A number of the text report: "n/a" for an unknown one, never "-0.000" (a tiny negative
 * part of a split rounds to 0). */
static void text_num(FILE *f, int width, int dec, double v)
{
    if (!isfinite(v))
        fprintf(f, " %*s", width, "n/a");
    else
        fprintf(f, " %*.*f", width, dec, fmt_round_zero(v, dec));
}

/* report.txt: the workloads' types (the experiment's "type"), when any has one. */
static void types_text(FILE *f, const json_t *ws)
{
    size_t k, n = 0;
    json_t *w;
    json_array_foreach(ws, k, w)
    {
        const char *t = json_string_value(json_object_get(w, "type"));
        if (t)
            fprintf(f, "%s%s %s",
                    n++ ? ", " : "workload types: ", json_string_value(json_object_get(w, "name")),
                    t);
    }
    if (n)
        fputc('\n', f);
}

/* a figure printed with 3 decimals: never "-0.000" */
#define Z3(x) fmt_round_zero((x), 3)

/* report.txt: the GPU lines. */
static void gpus_text(const struct rundir_report_in *in, FILE *f)
{
    if (!in->ngpus)
        return;
    const struct ledger *l = in->ledger;
    fprintf(f, "\n%-14s %11s %11s %11s %11s %11s %9s  %s\n", "GPU", "energy J", "workloads J",
            "idle J", "other J", "unattr. J", "drift %", "split by (seconds)");
    for (size_t d = 0; d < in->ngpus; d++) {
        const struct rundir_report_gpu *v = &in->gpu[d];
        const struct ledger_gpu *a = &l->gpu[d];
        double drift = v->drift_pct;
        char dr[24] = "-";
        if (isfinite(drift))
            snprintf(dr, sizeof dr, "%+.3f", drift);
        char basis[160] = "";
        size_t bl = 0;
        for (int k = 0; k < GPU_BASIS_N; k++)
            if (a->basis_s[k] >= 0.05)
                bl += (size_t)snprintf(basis + bl, sizeof basis - bl, "%s%s %.1fs", bl ? ", " : "",
                                       k == GPU_BASIS_SM && v->nsys_split
                                           ? "kernels"
                                           : gpu_basis_name((enum gpu_basis)k),
                                       a->basis_s[k]);
        fprintf(f, "%-14s %11.3f %11.3f %11.3f %11.3f %11.3f %9s  %s%s\n", v->channel,
                Z3(a->total_j), Z3(a->jobs_j), Z3(a->idle_j), Z3(a->other_j), Z3(a->unattr_j), dr,
                basis, v->invalid ? " (readings missing)" : "");
        for (size_t k = 0; k < in->njobs; k++)
            if (l->job[k].gpu_j[d] != 0)
                fprintf(f, "%-14s   %-20s %11.3f J\n", "", in->job[k].name, Z3(l->job[k].gpu_j[d]));
    }
    /* whose gauge: NVML's, DCGM's, or both sources' */
    bool nvml = false, dcgm = false;
    for (size_t d = 0; d < in->ngpus; d++) {
        bool is_dcgm = in->gpu[d].source && strcmp(in->gpu[d].source, "dcgm") == 0;
        dcgm = dcgm || is_dcgm;
        nvml = nvml || !is_dcgm;
    }
    fprintf(f, "drift: %s power gauge integrated over the run against its energy counter\n",
            nvml && dcgm ? "each GPU's (NVML's or DCGM's)"
            : dcgm       ? "DCGM's"
                         : "NVML's");
}

void rundir_report_text(const struct rundir_report_in *in, const json_t *rep, FILE *f)
{
    fprintf(f, "experiment %s: %.3f s, idle policy %s, %s\n", in->experiment,
            json_real_value(json_object_get(rep, "duration_s")), in->idle_policy, in->method);
    size_t wi;
    json_t *wv;
    json_array_foreach(json_object_get(rep, "warnings"), wi, wv)
        fprintf(f, "warning: %s\n", json_string_value(wv));
    if (in->interruption_text)
        fprintf(f, "interrupted by %s: the run was cut short, its figures cover it up to then\n",
                in->interruption_text);
    fprintf(f, "\n");
    /* the kinds with a channel (or a GPU asked for): a kind the node lacks has no column */
    static const int kinds[] = {KIND_CPU, KIND_DRAM, KIND_SOC, KIND_SYSTEM, KIND_GPU};
    bool show[5];
    fprintf(f, "%-20s %6s %9s %11s %10s %9s", "workload", "exit", "time s", "energy J", "Wh",
            "avg W");
    for (size_t q = 0; q < 5; q++) {
        show[q] = kind_reported(in, kinds[q]);
        if (show[q]) {
            char h[24];
            snprintf(h, sizeof h, "%s J", channel_kind_name((enum channel_kind)kinds[q]));
            fprintf(f, " %9s", h);
        }
    }
    fprintf(f, " %12s %12s\n", "oper. gCO2e", "embod. gCO2e");
    const json_t *ws = json_object_get(rep, "workloads");
    for (size_t k = 0; k < json_array_size(ws); k++) {
        const json_t *w = json_array_get(ws, k);
        const json_t *bk = json_object_get(w, "energy_by_kind_j");
        double e = json_real_value(json_object_get(w, "energy_j"));
        const json_t *avg = json_object_get(w, "avg_power_w");
        fprintf(f, "%-20s %6d", json_string_value(json_object_get(w, "name")),
                (int)json_integer_value(json_object_get(w, "exit_status")));
        text_num(f, 9, 3, json_real_value(json_object_get(w, "duration_s")));
        text_num(f, 11, 3, e);
        text_num(f, 10, 6, e / 3600.0);
        text_num(f, 9, 3, json_is_real(avg) ? json_real_value(avg) : NAN);
        for (size_t q = 0; q < 5; q++) {
            if (!show[q])
                continue;
            const json_t *v = json_object_get(bk, channel_kind_name((enum channel_kind)kinds[q]));
            text_num(f, 9, 3, jsonutil_num(v));
        }
        text_num(f, 12, 6, json_real_value(json_object_get(w, "operational_g_co2e")));
        text_num(f, 12, 6, json_real_value(json_object_get(w, "embodied_g_co2e")));
        fprintf(f, "\n");
    }
    const struct ledger *l = in->ledger;
    static const char *const rows[] = {"idle", "other processes", "unattributed", "node total"};
    double vals[] = {l->idle_j, l->other_j, l->unattr_j, l->total_j};
    for (size_t q = 0; q < 4; q++) {
        fprintf(f, "%-20s %6s %9s", rows[q], "", "");
        text_num(f, 11, 3, vals[q]);
        text_num(f, 10, 6, vals[q] / 3600);
        fprintf(f, "\n");
    }
    types_text(f, ws);
    if (json_object_get(rep, "rest_of_system")) {
        fprintf(f, "\n");
        if (in->system_text)
            fputs(in->system_text, f);
    }
    if (in->outcome_text)
        fputs(in->outcome_text, f);
    gpus_text(in, f);
    fprintf(f, "\n");
    fprintf(f, "intensity: %.4g g/kWh x PUE %.3g (%s)\n", in->g_per_kwh, in->pue,
            in->intensity_source);
    fprintf(f, "embodied: device manufacture by time share (data/embodied.csv or the "
               "experiment's overrides); operational and embodied are not summed\n");
}
