/* ledger: the accounts of an experiment's attribution and its attribution.csv rows (see
 * ledger.h). */
#include "analysis/ledger.h"

#include <errno.h>
#include <string.h>

#include "core/fmt.h"

void ledger_init(struct ledger *l, size_t njobs, const char *const *names, ledger_sink sink,
                 void *ctx)
{
    memset(l, 0, sizeof *l);
    l->njobs = njobs < SPLIT_JOBS_MAX ? njobs : SPLIT_JOBS_MAX;
    for (size_t k = 0; k < l->njobs; k++)
        l->job_name[k] = names[k];
    l->sink = sink;
    l->sink_ctx = ctx;
}

void ledger_done(struct ledger *l)
{
    csv_buf_free(&l->csv);
    l->rows = 0;
}

int ledger_row(struct ledger *l, const char *ts, const char *channel, const char *job,
               const char *joules)
{
    struct csv_buf *b = &l->csv;
    l->rows++;
    if (csv_buf_raw(b, ts, strlen(ts)) < 0 || csv_buf_field(b, channel, 0) < 0 ||
        csv_buf_field(b, job, 0) < 0 || csv_buf_raw(b, ",", 1) < 0 ||
        csv_buf_raw(b, joules, strlen(joules)) < 0 || csv_buf_end_row(b) < 0)
        return -ENOMEM;
    return 0;
}

/* A row of a part of a split: none for a part of 0 J, nor without a sink. */
static int part_row(struct ledger *l, const struct ledger_post *p, const char *job, double j,
                    const struct ledger_time *at)
{
    if (!l->sink || j == 0.0)
        return 0;
    char num[40];
    fmt_fixed6(num, j);
    return ledger_row(l, at->ts, p->channel, job, num);
}

int ledger_post(struct ledger *l, const struct ledger_post *p, const struct split_out *o,
                const struct ledger_time *at)
{
    int r = 0;
    size_t nj = p->njobs < l->njobs ? p->njobs : l->njobs;
    struct ledger_gpu *g = p->gpu >= 0 && p->gpu < LEDGER_GPUS_MAX ? &l->gpu[p->gpu] : NULL;
    for (size_t k = 0; k < nj; k++) {
        double x = o->job_j[k];
        int e = part_row(l, p, l->job_name[k], x, at);
        r = r ? r : e;
        struct ledger_job *j = &l->job[k];
        if (g) {
            g->jobs_j += x;
            j->gpu_j[p->gpu] += x;
        }
        if (p->node) {
            j->energy_j += x;
            j->event_j += x;
            j->by_kind_j[p->kind] += x;
            j->g_op += x * at->g_per_j;
        }
    }
    static const char *const names[] = {"idle", "other", "unattributed"};
    const double parts[] = {o->idle_j, o->other_j, o->unattributed_j};
    for (size_t q = 0; q < 3; q++) {
        int e = part_row(l, p, names[q], parts[q], at);
        r = r ? r : e;
    }
    if (g) {
        g->idle_j += o->idle_j;
        g->other_j += o->other_j;
        g->unattr_j += o->unattributed_j;
        g->total_j += p->de_j;
    }
    if (p->node) {
        l->idle_j += o->idle_j;
        l->other_j += o->other_j;
        l->unattr_j += o->unattributed_j;
        l->idle_g += o->idle_j * at->g_per_j;
        l->other_g += o->other_j * at->g_per_j;
        l->unattr_g += o->unattributed_j * at->g_per_j;
        l->total_j += p->de_j;
    }
    return r;
}

void ledger_basis(struct ledger *l, size_t gpu, enum gpu_basis b, double s)
{
    if (gpu < LEDGER_GPUS_MAX && (int)b >= 0 && b < GPU_BASIS_N)
        l->gpu[gpu].basis_s[b] += s;
}

int ledger_flush(struct ledger *l)
{
    struct csv_buf *b = &l->csv;
    int r = 0;
    if (l->sink && b->len)
        r = l->sink(l->sink_ctx, b->data, b->len, l->rows);
    b->len = 0;
    l->rows = 0;
    return r;
}
