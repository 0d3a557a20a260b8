/*
 * live: the live view of a run and its reader of a run directory (see live.h).
 */
#include "report/live.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/file.h"
#include "core/fmt.h"
#include "core/jsonutil.h"
#include "core/pidlive.h"
#include "core/timeutil.h"

#define TAIL_BYTES (256 * 1024)

/* ---- rendering ---- */

static void hms(char *buf, size_t cap, double s)
{
    if (!isfinite(s) || s < 0 || s > 1e12)
        s = 0;
    long t = (long)s;
    snprintf(buf, cap, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* One line: printed, then (ansi) the rest of the terminal line cleared. On a terminal a line
 * is cut to width - 1 columns: a line that wrapped would take two rows, and the next frame,
 * going up by lines, would start too low. */
static void line(FILE *f, bool ansi, int width, int *n, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void line(FILE *f, bool ansi, int width, int *n, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (ansi && width > 1 && strlen(buf) > (size_t)(width - 1))
        buf[width - 1] = '\0'; /* the view is ASCII but for names: a cut name is fine */
    fputs(buf, f);
    fputs(ansi ? "\033[K\n" : "\n", f);
    (*n)++;
}

/* How long a window has been open: "12.3 s" below a minute, else "01:02:03". */
static void duration(char *buf, size_t cap, double s)
{
    if (!isfinite(s))
        snprintf(buf, cap, "-");
    else if (s < 59.95)
        snprintf(buf, cap, "%.1f s", s < 0 ? 0.0 : s);
    else
        hms(buf, cap, s);
}

static void watts(char *buf, size_t cap, double w)
{
    if (isfinite(w))
        snprintf(buf, cap, "%.1f W", fmt_round_zero(w, 1));
    else
        snprintf(buf, cap, "-");
}

void live_render(FILE *f, const struct live_view *v, bool ansi, int width, int *lines)
{
    if (width <= 0)
        width = 100;
    if (ansi && lines && *lines > 0)
        fprintf(f, "\033[%dA\r", *lines);
    int n = 0;
    char el[32], w[32];
    hms(el, sizeof el, v->elapsed_s);
    line(f, ansi, width, &n, "carma  %s  elapsed %s  %s", v->title, el,
         v->writer_gone_pid ? "ended without finishing"
         : v->finished      ? "finished"
                            : "running");
    /* the node by domain */
    char dom[512];
    size_t o = 0;
    watts(w, sizeof w, v->node_w);
    o += (size_t)snprintf(dom + o, sizeof dom - o, "node %s", w);
    for (size_t i = 0; i < v->ndomains && o < sizeof dom; i++) {
        watts(w, sizeof w, v->domain[i].power_w);
        o += (size_t)snprintf(dom + o, sizeof dom - o, "   %s %s%s", v->domain[i].kind, w,
                              v->domain[i].estimated ? " (est.)" : "");
    }
    line(f, ansi, width, &n, "%s", dom);
    bool est = false;
    if (!v->have_jobs) {
        line(f, ansi, width, &n, "(no job figures yet)");
    } else {
        line(f, ansi, width, &n, "%-24s %12s %14s %14s", "job", "power", "energy", "CO2e (op.)");
        int bar_room = width - 24 - 12 - 14 - 14 - 5;
        for (size_t k = 0; k < v->njobs; k++) {
            const struct live_job *j = &v->job[k];
            char name[64], e[32], g[32], bar[128] = "";
            snprintf(name, sizeof name, "%.18s%s%s", j->name, j->ended ? " (ended)" : "",
                     j->estimated ? "*" : "");
            watts(w, sizeof w, j->power_w);
            snprintf(e, sizeof e, "%.4f Wh", fmt_round_zero(j->energy_j / 3600.0, 4));
            snprintf(g, sizeof g, "%.4f g", fmt_round_zero(j->g_co2e, 4));
            if (bar_room > 4 && isfinite(j->power_w) && isfinite(v->node_w) && v->node_w > 0) {
                int len = (int)lround(j->power_w / v->node_w * bar_room);
                len = len < 0 ? 0 : len > bar_room ? bar_room : len;
                len = len > (int)sizeof bar - 1 ? (int)sizeof bar - 1 : len;
                memset(bar, '#', (size_t)len);
                bar[len] = '\0';
            }
            line(f, ansi, width, &n, "%-24s %12s %14s %14s  %s", name, w, e, g, bar);
        }
        for (size_t k = 0; k < v->njobs; k++)
            est |= v->job[k].estimated;
        static const char *const rest[3] = {"idle", "other", "unattributed"};
        const double rj[3] = {v->idle_j, v->other_j, v->unattributed_j};
        for (size_t k = 0; k < 3; k++)
            if (isfinite(rj[k]) && (k == 0 || rj[k] != 0)) {
                char e[32];
                snprintf(e, sizeof e, "%.4f Wh", fmt_round_zero(rj[k] / 3600.0, 4));
                line(f, ansi, width, &n, "%-24s %12s %14s", rest[k], "", e);
            }
    }
    if (v->nwindows) {
        line(f, ansi, width, &n, "%-24s %-16s %10s %14s", "open window", "job", "open",
             "node energy");
        for (size_t k = 0; k < v->nwindows; k++) {
            const struct live_window *x = &v->window[k];
            char name[64], job[32], open[32], e[32];
            bool known = isfinite(x->energy_j);
            snprintf(name, sizeof name, "%.23s%s", x->name, known && x->estimated ? "*" : "");
            snprintf(job, sizeof job, "%.16s", x->workload[0] ? x->workload : "-");
            duration(open, sizeof open, x->open_s);
            if (known)
                snprintf(e, sizeof e, "%.4f Wh", fmt_round_zero(x->energy_j / 3600.0, 4));
            else
                snprintf(e, sizeof e, "-");
            est |= known && x->estimated;
            line(f, ansi, width, &n, "%-24s %-16s %10s %14s", name, job, open, e);
        }
        if (v->windows_more)
            line(f, ansi, width, &n, "+%zu more", v->windows_more);
    }
    if (est)
        line(f, ansi, width, &n, "* estimated (a power model, not a sensor)");
    if (ansi) {
        fputs("\033[J", f); /* what a longer previous frame left below */
    } else {
        fputc('\n', f);
    }
    fflush(f);
    if (lines)
        *lines = n;
}

/* ---- the open windows of marks.csv ---- */

static const struct live_point *point(const struct live_marks *m, size_t k)
{
    return &m->pt[k % LIVE_POINTS];
}

/* w's energy at its begin from the ticks given, once one lies at or after it. */
static void resolve(struct live_marks *m, struct live_open *w)
{
    if (!w->pending || m->npt == 0 || w->t0 > point(m, m->npt - 1)->t)
        return; /* no tick at or after the begin yet */
    w->pending = false;
    m->npending--;
    size_t oldest = m->npt > LIVE_POINTS ? m->npt - LIVE_POINTS : 0;
    size_t b = m->npt - 1; /* the first tick at or after t0 */
    while (b > oldest && point(m, b - 1)->t >= w->t0)
        b--;
    const struct live_point *pb = point(m, b);
    if (b == 0 || pb->t == w->t0) { /* before the first tick (nothing measured before it) */
        w->j0 = pb->j;
        w->what = pb->what;
        w->estimated = pb->estimated;
        return;
    }
    const struct live_point *pa = point(m, b - 1);
    if (b == oldest || pa->t >= w->t0 || pa->what != pb->what)
        return; /* the tick before it is forgotten, or the channels changed: unknown */
    w->j0 = pa->j + (pb->j - pa->j) * (w->t0 - pa->t) / (pb->t - pa->t);
    w->what = pb->what;
    w->estimated = pa->estimated || pb->estimated;
}

void live_marks_point(struct live_marks *m, double t, double j, unsigned what, bool estimated)
{
    m->pt[m->npt % LIVE_POINTS] = (struct live_point){t, j, what, estimated};
    m->npt++;
    for (size_t k = 0; k < m->nopen && m->npending; k++)
        resolve(m, &m->open[k]);
}

void live_marks_reset_points(struct live_marks *m)
{
    m->npt = 0;
}

/* Says the first odd row of marks.csv (it is skipped). */
static void odd_row(struct live_marks *m, const struct rundir_lines *l, long long id,
                    const char *what)
{
    if (m->odd_said)
        return;
    m->odd_said = true;
    snprintf(m->warning, sizeof m->warning, "%s:%zu: id %lld: %s: the row is skipped", l->path,
             l->line, id, what);
}

static void take_mark(struct live_marks *m, const struct rundir_lines *l,
                      const struct rundir_mark_row *row)
{
    if (row->event == RUNDIR_MARK_EVENT)
        return;
    size_t k = m->nopen;
    while (k > 0 && m->open[k - 1].id != row->id)
        k--;
    if (row->event == RUNDIR_MARK_END || row->event == RUNDIR_MARK_UNENDED) {
        /* markd's end and unended rows carry the window's own id and name */
        if (k == 0 || strcmp(m->open[k - 1].name, row->name) != 0) {
            odd_row(m, l, row->id,
                    k ? "an end of another name than its begin's"
                      : "an end of no open window (no begin row before it, or ended already)");
            if (!k)
                m->early_end[m->nearly++ % LIVE_EARLY_MAX] = row->id;
            return;
        }
        if (m->open[k - 1].pending)
            m->npending--;
        memmove(&m->open[k - 1], &m->open[k], (m->nopen - k) * sizeof *m->open);
        m->nopen--;
        return;
    }
    if (k) {
        odd_row(m, l, row->id, "a begin of a window open already");
        return;
    }
    for (size_t q = 0; q < m->nearly && q < LIVE_EARLY_MAX; q++)
        if (m->early_end[q] == row->id) { /* its end came first: it is no open window */
            m->early_end[q] = 0;
            odd_row(m, l, row->id, "a begin after its end");
            return;
        }
    if (m->nopen == LIVE_OPEN_MAX) {
        if (!m->full_said)
            snprintf(m->warning, sizeof m->warning,
                     "%s:%zu: more than %d windows open at once: the newer ones are not shown",
                     l->path, l->line, LIVE_OPEN_MAX);
        m->full_said = true;
        return;
    }
    if (m->nopen == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        struct live_open *o = realloc(m->open, cap * sizeof *o);
        if (!o)
            return; /* out of memory: the window is not shown */
        m->open = o;
        m->cap = cap;
    }
    struct live_open *w = &m->open[m->nopen++];
    memset(w, 0, sizeof *w);
    w->id = row->id;
    snprintf(w->name, sizeof w->name, "%s", row->name);
    snprintf(w->workload, sizeof w->workload, "%s", row->workload);
    w->t0 = row->t;
    w->j0 = NAN;
    w->pending = true;
    m->npending++;
    resolve(m, w);
}

int live_marks_poll(struct live_marks *m, const char *dir, bool follow, struct carma_err *e)
{
    struct rundir_lines l;
    struct carma_err oe = {0};
    int rc = rundir_lines_open(&l, dir, "marks.csv", m->off, m->line, &oe);
    if (rc == -ENOENT)
        return 0; /* no mark yet (a run without marks has no marks.csv) */
    if (rc < 0) {
        if (e)
            *e = oe;
        return rc;
    }
    l.follow = follow;
    if (l.line == 0) { /* from the start: the first look, or a file replaced */
        m->nopen = m->npending = m->nearly = 0;
        rc = rundir_marks_header(&m->h, &l, e);
        if (rc < 0 && l.line == 0 && follow) {
            rc = 0; /* its header is not yet whole: the next look */
            goto out;
        }
        if (rc < 0)
            goto out;
        m->off = l.off;
        m->line = l.line;
    }
    struct rundir_mark_row row;
    while ((rc = rundir_lines_next(&l, e)) == 1) {
        if ((rc = rundir_marks_row(&m->h, &l, &row, e)) < 0)
            goto out;
        take_mark(m, &l, &row);
        m->off = l.off;
        m->line = l.line;
    }
    if (rc == 0) {
        m->off = l.off;
        m->line = l.line;
        if (l.torn && !m->torn_said) {
            rundir_torn_warning(&l, m->warning, sizeof m->warning);
            m->torn_said = true;
        }
    }
out:
    rundir_lines_close(&l);
    return rc;
}

void live_marks_view(const struct live_marks *m, struct live_view *v, double now)
{
    v->nwindows = v->windows_more = 0;
    const struct live_point *last = m->npt ? point(m, m->npt - 1) : NULL;
    for (size_t k = 0; k < m->nopen; k++) {
        if (v->nwindows == LIVE_WINDOWS_MAX) {
            v->windows_more = m->nopen - k;
            break;
        }
        const struct live_open *w = &m->open[k];
        struct live_window *x = &v->window[v->nwindows++];
        x->id = w->id;
        snprintf(x->name, sizeof x->name, "%s", w->name);
        snprintf(x->workload, sizeof x->workload, "%s", w->workload);
        x->begin_unix = w->t0;
        x->open_s = isfinite(now) ? (now > w->t0 ? now - w->t0 : 0.0) : NAN;
        x->energy_j = NAN;
        x->estimated = false;
        if (!w->pending && isfinite(w->j0) && last && last->what == w->what) {
            double d = last->j - w->j0;
            if (d > -1e-6) { /* the counters only grow: a drop is no figure */
                x->energy_j = d > 0 ? d : 0.0;
                x->estimated = w->estimated || last->estimated;
            }
        }
    }
}

void live_marks_free(struct live_marks *m)
{
    free(m->open);
    memset(m, 0, sizeof *m);
}

/* ---- reading a run directory ---- */

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* The bytes of path from *off to its end (at most 8 MiB a call), malloc'ed into *ret and *len;
 * the first time (*off < 0) from TAIL_BYTES before the end. 0, -ENOENT, or -errno. */
static int read_new(const char *path, off_t *off, char **ret, size_t *len)
{
    *ret = NULL;
    *len = 0;
    struct stat st;
    int fd = file_open_input(AT_FDCWD, path, &st);
    if (fd < 0)
        return fd;
    bool first = *off < 0;
    if (first)
        *off = st.st_size > TAIL_BYTES ? st.st_size - TAIL_BYTES : 0;
    if (st.st_size < *off)
        *off = 0; /* the file was replaced */
    size_t want = (size_t)(st.st_size - *off);
    if (want > (8u << 20))
        want = 8u << 20;
    char *buf = malloc(want + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    size_t got = 0;
    while (got < want) {
        ssize_t k = pread(fd, buf + got, want - got, *off + (off_t)got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    buf[got] = '\0';
    size_t skip = 0;
    if (first && *off > 0) { /* from the middle of a line: from the next one */
        char *nl = memchr(buf, '\n', got);
        skip = nl ? (size_t)(nl - buf) + 1 : got;
    }
    memmove(buf, buf + skip, got - skip + 1);
    *off += (off_t)skip;
    *ret = buf;
    *len = got - skip;
    return 0;
}

/* One event_summaries.jsonl line into v. */
static void take_summary(struct live_view *v, const char *s, size_t n)
{
    json_t *o = json_loadb(s, n, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return; /* a line cut short: the next poll has it whole */
    }
    v->have_jobs = true;
    v->elapsed_s = jsonutil_get_num(o, "elapsed_s");
    v->updated_unix = jsonutil_get_num(o, "timestamp_unix");
    v->idle_j = jsonutil_get_num(o, "idle_j");
    v->other_j = jsonutil_get_num(o, "other_j");
    v->unattributed_j = jsonutil_get_num(o, "unattributed_j");
    size_t i;
    const json_t *w;
    v->njobs = 0;
    json_array_foreach(json_object_get(o, "workloads"), i, w)
    {
        if (v->njobs == LIVE_JOBS_MAX)
            break;
        struct live_job *j = &v->job[v->njobs++];
        memset(j, 0, sizeof *j);
        const char *name = json_string_value(json_object_get(w, "name"));
        snprintf(j->name, sizeof j->name, "%s", name ? name : "?");
        j->power_w = jsonutil_get_num(w, "power_w");
        j->energy_j = jsonutil_get_num(w, "energy_j");
        j->g_co2e = jsonutil_get_num(w, "g_co2e");
        const char *m = json_string_value(json_object_get(w, "method"));
        j->estimated = m && strcmp(m, "estimated") == 0;
    }
    json_decref(o);
}

static void add_j(struct live_tick_j *a, const struct live_tick_j *b)
{
    a->j += b->j;
    a->n += b->n;
    a->estimated |= b->estimated;
}

/* The node's energy at the tick gathered, to the marks' windows (sampler_select_node's
 * choice of channels, as markd's figure of a window). */
static void node_point(struct live_reader *r)
{
    struct live_tick_j sum = {0};
    unsigned choice, kinds = 0;
    if (r->tj_meter.n) {
        sum = r->tj_meter;
        choice = 1;
    } else if (r->tj_sys.n) {
        sum = r->tj_sys;
        choice = 2;
    } else {
        choice = 3;
        for (int k = 0; k < CHANNEL_KINDS; k++) {
            const struct live_tick_j *t = r->tj_meas[k].n ? &r->tj_meas[k] : &r->tj_est[k];
            if (t->n) {
                add_j(&sum, t);
                kinds |= (r->tj_meas[k].n ? 1u : 2u) << (2 * k);
            }
        }
    }
    if (sum.n) /* what: the choice, the kinds and the number of channels */
        live_marks_point(&r->marks, r->tick_t, sum.j, choice << 28 | kinds << 16 | (sum.n & 0xffff),
                         sum.estimated);
    memset(&r->tj_meter, 0, sizeof r->tj_meter);
    memset(&r->tj_sys, 0, sizeof r->tj_sys);
    memset(r->tj_meas, 0, sizeof r->tj_meas);
    memset(r->tj_est, 0, sizeof r->tj_est);
}

static void commit_tick(struct live_reader *r, struct live_view *v)
{
    if (r->tick_rows == 0)
        return;
    r->tick_rows = 0;
    node_point(r);
    if (r->ntick == 0)
        return;
    v->ndomains = r->ntick;
    memcpy(v->domain, r->tick, r->ntick * sizeof r->tick[0]);
    double sys = 0, sum = 0;
    bool have_sys = false;
    for (size_t i = 0; i < r->ntick; i++) {
        if (strcmp(r->tick[i].kind, "system") == 0) {
            sys += r->tick[i].power_w;
            have_sys = true;
        } else {
            sum += r->tick[i].power_w;
        }
    }
    v->node_w = have_sys ? sys : sum;
    if (!v->have_jobs)
        v->updated_unix = r->tick_t;
    r->ntick = 0;
}

/* One row of samples.csv (checked by rundir_samples_row) into the tick being gathered. */
static void take_row(struct live_reader *r, struct live_view *v, const struct rundir_sample *row)
{
    if (r->tick_rows > 0 && row->t != r->tick_t)
        commit_tick(r, v);
    r->tick_t = row->t;
    r->tick_rows++;
    struct live_tick_j one = {isfinite(row->j) ? row->j : 0.0, 1, row->estimated};
    if (row->meter)
        add_j(&r->tj_meter, &one);
    else if (row->total && !row->estimated && row->kind_id == KIND_SYSTEM)
        add_j(&r->tj_sys, &one);
    if (!row->meter && row->total && row->kind_id >= 0 && row->kind_id < CHANNEL_KINDS)
        add_j(row->estimated ? &r->tj_est[row->kind_id] : &r->tj_meas[row->kind_id], &one);
    if (!row->total || isnan(row->w))
        return;
    size_t k;
    for (k = 0; k < r->ntick; k++)
        if (strcmp(r->tick[k].kind, row->kind) == 0)
            break;
    if (k == r->ntick) {
        if (r->ntick == LIVE_DOMAINS_MAX)
            return;
        memset(&r->tick[k], 0, sizeof r->tick[k]);
        snprintf(r->tick[k].kind, sizeof r->tick[k].kind, "%s", row->kind);
        r->ntick++;
    }
    r->tick[k].power_w += row->w;
    r->tick[k].channels++;
    if (row->estimated)
        r->tick[k].estimated = true;
}

/* The pid of the carma that wrote manifest m when it was written on this host, is no longer
 * alive and m still says "running"; 0 when it runs, or cannot be told (another host, a
 * manifest without pid). */
static long writer_gone(const json_t *m)
{
    const char *status = json_string_value(json_object_get(m, "status"));
    json_int_t pid = json_integer_value(json_object_get(m, "pid"));
    if (!status || strcmp(status, "running") != 0 || pid <= 0 || pid > INT_MAX)
        return 0;
    const json_t *host = json_object_get(m, "host");
    const char *hostname = json_string_value(json_object_get(host, "hostname"));
    struct utsname u;
    if (!hostname || uname(&u) < 0 || strcmp(hostname, u.nodename) != 0)
        return 0;
    json_int_t ticks = json_integer_value(json_object_get(m, "pid_start_ticks"));
    const char *boot = json_string_value(json_object_get(host, "boot_id"));
    if (pid_writer_alive((pid_t)pid, ticks > 0 ? (uint64_t)ticks : 0, boot))
        return 0;
    return (long)pid;
}

/* dir's manifest.json into v's finished and writer_gone_pid. An absent or unreadable
 * manifest leaves the run running (it is written at the start, atomically); one that is not a
 * regular file is an error (e set). */
static int read_status(const char *dir, struct live_view *v, struct carma_err *e)
{
    struct carma_err re = {0};
    json_t *m = rundir_read_json(dir, "manifest.json", NULL, &re);
    if (!m && re.code == -ESPIPE) {
        if (e)
            *e = re;
        return re.code;
    }
    const char *status = json_string_value(json_object_get(m, "status"));
    v->finished = status && strcmp(status, "running") != 0;
    v->writer_gone_pid = 0;
    long gone = writer_gone(m);
    json_decref(m);
    if (gone) {
        /* it may have written its end and exited between the two looks: look again */
        m = rundir_read_json(dir, "manifest.json", NULL, NULL);
        status = json_string_value(json_object_get(m, "status"));
        if (status && strcmp(status, "running") == 0) {
            v->writer_gone_pid = gone;
            v->finished = true; /* the run has ended, without finishing */
        } else {
            v->finished = status != NULL;
        }
        json_decref(m);
    }
    return 0;
}

int live_reader_open(struct live_reader *r, const char *dir, struct carma_err *e)
{
    memset(r, 0, sizeof *r);
    r->ev_off = -1;
    if (!(r->dir = strdup(dir)))
        return carma_err_set(e, -ENOMEM, "out of memory");
    struct rundir_lines l;
    int err = rundir_lines_open(&l, dir, "samples.csv", 0, 0, e);
    if (err == 0)
        err = rundir_samples_header(&r->s, &l, e);
    r->s_off = l.off;
    r->s_line = l.line;
    rundir_lines_close(&l);
    if (err < 0)
        live_reader_close(r);
    return err;
}

/* samples.csv's rows from r->s_off on into v; follow: the run still runs. */
static int read_samples(struct live_reader *r, struct live_view *v, bool follow,
                        struct carma_err *e)
{
    struct rundir_lines l;
    int rc = rundir_lines_open(&l, r->dir, "samples.csv", r->s_off, r->s_line, e);
    if (rc < 0)
        return rc;
    if (l.line == 0 && r->s_line > 0) { /* the file was replaced: from its header again */
        if ((rc = rundir_samples_header(&r->s, &l, e)) < 0)
            goto out;
        r->ntick = r->tick_rows = 0;
        memset(&r->tj_meter, 0, sizeof r->tj_meter);
        memset(&r->tj_sys, 0, sizeof r->tj_sys);
        memset(r->tj_meas, 0, sizeof r->tj_meas);
        memset(r->tj_est, 0, sizeof r->tj_est);
        live_marks_reset_points(&r->marks);
    }
    l.follow = follow;
    struct rundir_sample row;
    while ((rc = rundir_lines_next(&l, e)) == 1) {
        if ((rc = rundir_samples_row(&r->s, &l, &row, e)) < 0)
            goto out;
        take_row(r, v, &row);
        r->s_off = l.off;
        r->s_line = l.line;
    }
    r->s_off = l.off;
    r->s_line = l.line;
    if (rc == 0 && l.torn && !r->torn_said) {
        rundir_torn_warning(&l, r->warning, sizeof r->warning);
        r->torn_said = true;
    }
out:
    rundir_lines_close(&l);
    return rc;
}

int live_reader_poll(struct live_reader *r, struct live_view *v, struct carma_err *e)
{
    snprintf(v->title, sizeof v->title, "%s", r->dir);
    /* manifest.json: still running? */
    int rc = read_status(r->dir, v, e);
    if (rc < 0)
        return rc;
    /* event_summaries.jsonl: its last whole line */
    char *path = join(r->dir, "event_summaries.jsonl");
    if (!path)
        return carma_err_set(e, -ENOMEM, "out of memory");
    char *buf;
    size_t len;
    rc = read_new(path, &r->ev_off, &buf, &len);
    if (rc == 0) {
        char *last_nl = len ? memrchr(buf, '\n', len) : NULL;
        if (last_nl) {
            char *start = buf;
            char *prev = last_nl > buf ? memrchr(buf, '\n', (size_t)(last_nl - buf)) : NULL;
            if (prev)
                start = prev + 1;
            take_summary(v, start, (size_t)(last_nl - start));
            r->ev_off += (off_t)(last_nl - buf) + 1;
        }
        free(buf);
    } else if (rc != -ENOENT) {
        file_input_err(e, path, rc);
        free(path);
        return rc;
    }
    free(path);
    /* marks.csv before samples.csv: a begin is known before the ticks after it come */
    if ((rc = live_marks_poll(&r->marks, r->dir, !v->finished, e)) < 0)
        return rc;
    /* samples.csv: the ticks appended */
    if ((rc = read_samples(r, v, !v->finished, e)) < 0)
        return rc;
    if (v->finished) {
        commit_tick(r, v); /* no later tick will close it */
        for (size_t k = 0; k < v->njobs; k++)
            v->job[k].ended = true; /* the run has ended: so have its workloads */
    }
    if (!v->have_jobs && isfinite(v->updated_unix))
        v->elapsed_s = NAN;
    /* how long the windows are open: till now while the run runs, else till its last tick */
    double now = (double)time_real_ns() / 1e9;
    if (v->finished)
        now = r->marks.npt ? r->marks.pt[(r->marks.npt - 1) % LIVE_POINTS].t : v->updated_unix;
    live_marks_view(&r->marks, v, now);
    return 0;
}

void live_reader_close(struct live_reader *r)
{
    live_marks_free(&r->marks);
    free(r->dir);
    memset(r, 0, sizeof *r);
}
