/*
 * collectreport_follow: a collect directory's report.json and report.txt written as it grows
 * (`carma report DIR --follow`), and the thread that writes them for `carma collect
 * --report-follow` (core/periodic). The polls themselves are collectreport.c's
 * (collectreport_follow_poll); see collectreport.h.
 */
#include "report/collectreport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/periodic.h"
#include "core/pyjson.h"
#include "report/collectreport_load.h"

int collectreport_follow_write(const char *dir, const json_t *rep, const char *json_out,
                               struct carma_err *e)
{
    char *js = pyjson_dumps(rep, 2), *text = collectreport_text(rep);
    int r = 0;
    if (!js || !text) {
        r = carma_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    size_t n = strlen(js);
    js[n] = '\n';
    char p[4200], q[4200];
    snprintf(p, sizeof p, "%s/report.json", dir);
    snprintf(q, sizeof q, "%s/report.txt", dir);
    const char *paths[] = {p, json_out, q};
    for (int k = 0; k < 3 && r == 0; k++) {
        if (!paths[k])
            continue;
        r = k < 2 ? file_replace(paths[k], js, n + 1) : file_replace(q, text, strlen(text));
        if (r < 0)
            r = carma_err_set(e, r, "cannot write %s: %s", paths[k], strerror(-r));
    }
out:
    free(js);
    free(text);
    return r;
}

/* ---- on a thread (core/periodic) ---- */

struct collectreport_follow_thread {
    struct collectreport_follow *f;
    const char *json_out;
    size_t written; /* by the thread; read after it stopped */
    struct periodic *p;
};

/* One period's poll and its report written (periodic_fn): "nothing to report yet" is no error
 * but in the final poll. */
static int follow_tick(void *arg, bool final, struct carma_err *e)
{
    struct collectreport_follow_thread *t = arg;
    json_t *rep = NULL;
    int r = collectreport_follow_poll(t->f, final, &rep, e);
    if (r == 0)
        r = collectreport_follow_write(t->f->dir, rep, t->json_out, e);
    json_decref(rep);
    t->written += r == 0;
    return r == -ENODATA && !final ? 0 : r;
}

struct collectreport_follow_thread *
collectreport_follow_thread_start(struct collectreport_follow *f, int64_t period_ns,
                                  const char *json_out, struct carma_err *e)
{
    struct collectreport_follow_thread *t = calloc(1, sizeof *t);
    if (!t) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    t->f = f;
    t->json_out = json_out;
    t->p = periodic_start(period_ns > 0 ? period_ns : 30000000000LL, follow_tick, t, "report", e);
    if (!t->p) {
        free(t);
        return NULL;
    }
    return t;
}

int collectreport_follow_thread_stop(struct collectreport_follow_thread *t, size_t *ret_written,
                                     struct carma_err *e)
{
    if (!t)
        return 0;
    int r = periodic_stop(t->p, e);
    if (ret_written)
        *ret_written = t->written;
    free(t);
    return r;
}
