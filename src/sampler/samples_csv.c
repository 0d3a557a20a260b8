/* samples_csv: the samples journal writer (see samples_csv.h). */
#include "sampler/samples_csv.h"
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/csv.h"
#include "core/fmt.h"
#include "core/journal.h"
#include "core/timeutil.h"

struct samples_csv {
    struct journal *j;
    char *buf;
    size_t cap;      /* bytes: ticks_max ticks of tick_cap */
    size_t tick_cap; /* the most bytes one tick's rows take */
    size_t len;      /* bytes of the ticks held, not yet written */
    uint64_t held;   /* ticks held */
    uint64_t ticks_max;
    int64_t interval_ns;
    int64_t first_t; /* monotonic time of the first tick held */
    int64_t first_real;
    struct time_local_cache local;
    char **mid; /* per channel: ",channel,source,kind,domain,method," */
    size_t *mid_len;
    size_t n;
    size_t rows_per_tick;
    uint64_t lost; /* ticks that could not be written */
};

struct samples_csv *samples_csv_open(const char *path, const struct sampler *s, struct carma_err *e)
{
    struct samples_csv *w = calloc(1, sizeof *w);
    if (!w) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    w->n = s->set.n;
    w->mid = calloc(w->n ? w->n : 1, sizeof *w->mid);
    w->mid_len = calloc(w->n ? w->n : 1, sizeof *w->mid_len);
    if (!w->mid || !w->mid_len)
        goto oom;
    size_t longest = 0;
    for (size_t i = 0; i < w->n; i++) {
        const struct channel *c = &s->set.ch[i];
        struct csv_buf b = {0};
        if (csv_buf_raw(&b, ",", 1) < 0 || csv_buf_field(&b, c->name, 1) < 0 ||
            csv_buf_field(&b, c->source, 0) < 0 ||
            csv_buf_field(&b, channel_kind_name(c->kind), 0) < 0 ||
            csv_buf_field(&b, channel_domain_name(c->domain), 0) < 0 ||
            csv_buf_field(&b, channel_method_name(c->method), 0) < 0 ||
            csv_buf_raw(&b, ",", 1) < 0) {
            csv_buf_free(&b);
            goto oom;
        }
        w->mid[i] = b.data;
        w->mid_len[i] = b.len;
        if (b.len > longest)
            longest = b.len;
    }
    /* timestamps (~60) + middle + two numbers (~2 × 24) + CRLF per row */
    w->tick_cap = w->n * (longest + 128) + 256;
    /* the ticks of SAMPLES_CSV_BATCH_NS go in one write: at 1 ms, 100 ticks; at 100 ms or
     * slower, each tick as it comes */
    w->interval_ns = s->interval_ns > 0 ? s->interval_ns : SAMPLES_CSV_BATCH_NS;
    w->ticks_max = (uint64_t)(SAMPLES_CSV_BATCH_NS / w->interval_ns);
    if (w->ticks_max < 1)
        w->ticks_max = 1;
    if (w->ticks_max > SAMPLES_CSV_BATCH_TICKS_MAX)
        w->ticks_max = SAMPLES_CSV_BATCH_TICKS_MAX;
    w->cap = w->tick_cap * w->ticks_max;
    w->buf = malloc(w->cap);
    if (!w->buf)
        goto oom;
    w->j = journal_open(path, SAMPLES_CSV_HEADER "\r\n", "rows", e);
    if (!w->j) {
        samples_csv_close(w);
        return NULL;
    }
    return w;
oom:
    carma_err_set(e, -ENOMEM, "out of memory");
    samples_csv_close(w);
    return NULL;
}

/* Writes the ticks held in one write(2) (core/journal: whole rows or none). */
static int flush_held(struct samples_csv *w, struct carma_err *e)
{
    if (!w->held)
        return 0;
    uint64_t rows = w->held * (uint64_t)w->rows_per_tick;
    int r = journal_append(w->j, w->buf, w->len, rows, w->first_real, e);
    if (r < 0)
        w->lost += w->held;
    w->len = 0;
    w->held = 0;
    return r;
}

int samples_csv_write_tick(struct samples_csv *w, const struct sampler *s, struct carma_err *e)
{
    char ts[48], local[64];
    int64_t real = s->real_now;
    size_t tl = fmt_unix_us(ts, real);
    ts[tl++] = ',';
    int ll = time_format_local_iso_cached(&w->local, real, local, sizeof local);
    if (ll < 0)
        ll = 0;
    size_t n = w->n < s->set.n ? w->n : s->set.n;
    w->rows_per_tick = n;
    if (!w->held) {
        w->first_t = s->t_now;
        w->first_real = real;
    }
    size_t len = w->len;
    for (size_t i = 0; i < n; i++) {
        const struct chan_state *st = &s->st[i];
        char *p = w->buf + len;
        memcpy(p, ts, tl);
        p += tl;
        memcpy(p, local, (size_t)ll);
        p += ll;
        memcpy(p, w->mid[i], w->mid_len[i]);
        p += w->mid_len[i];
        if (isfinite(st->watts))
            p += fmt_fixed6(p, st->watts);
        *p++ = ',';
        if (st->have_last)
            p += fmt_fixed6(p, st->energy_j);
        *p++ = '\r';
        *p++ = '\n';
        len = (size_t)(p - w->buf);
    }
    w->len = len;
    w->held++;
    /* never half a tick: the journal cuts a torn batch off again. The batch goes out once
     * the next tick would make it span more than SAMPLES_CSV_BATCH_NS, or not fit. */
    if (w->held < w->ticks_max && s->t_now + w->interval_ns - w->first_t < SAMPLES_CSV_BATCH_NS &&
        w->cap - w->len >= w->tick_cap)
        return 0;
    return flush_held(w, e);
}

int samples_csv_flush(struct samples_csv *w, struct carma_err *e)
{
    return w ? flush_held(w, e) : 0;
}

uint64_t samples_csv_rows(const struct samples_csv *w)
{
    return w ? journal_rows(w->j) : 0;
}

uint64_t samples_csv_lost_ticks(const struct samples_csv *w, int *ret_err)
{
    journal_lost(w ? w->j : NULL, ret_err);
    return w ? w->lost : 0;
}

const struct journal *samples_csv_journal(const struct samples_csv *w)
{
    return w ? w->j : NULL;
}

int samples_csv_close(struct samples_csv *w)
{
    if (!w)
        return 0;
    flush_held(w, NULL);
    int r = journal_close(w->j);
    for (size_t i = 0; w->mid && i < w->n; i++)
        free(w->mid[i]);
    free(w->mid);
    free(w->mid_len);
    free(w->buf);
    free(w);
    return r;
}
