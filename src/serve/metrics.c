/* metrics: the exporter's snapshots in the Prometheus text format (see metrics.h). */
#include "serve/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fmt.h"
#include "sources/dcgm.h"
#include "sources/nvml.h"

/* ---- the buffer ---- */

/* Makes room for need more bytes. Returns false (and sets oom) when memory runs out. */
static bool buf_room(struct metrics_buf *b, size_t need)
{
    if (b->oom)
        return false;
    if (need <= b->cap - b->len)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < need) {
        if (cap > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

static void put(struct metrics_buf *b, const char *s, size_t n)
{
    if (n == 0 || !buf_room(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

#define PUT_LIT(b, lit) put((b), (lit), sizeof(lit) - 1)

static void put_str(struct metrics_buf *b, const char *s)
{
    put(b, s, strlen(s));
}

void metrics_buf_done(struct metrics_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* ---- label values ---- */

/* Length of the valid UTF-8 sequence at p (n bytes available), 0 when it is not one. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t len;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1fu;
        min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3;
        cp = c & 0x0fu;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07u;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[k] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void metrics_escape_label(struct metrics_buf *b, const char *v)
{
    size_t n = strnlen(v, METRICS_LABEL_VALUE_MAX);
    /* a cut inside a multi-byte sequence drops that sequence */
    for (int k = 0; k < 3 && v[n] && n > 0 && ((unsigned char)v[n] & 0xc0) == 0x80; k++)
        n--;
    const unsigned char *p = (const unsigned char *)v;
    size_t i = 0;
    while (i < n) {
        size_t run = 0;
        /* copy a run of bytes that need nothing */
        while (i + run < n) {
            unsigned char c = p[i + run];
            if (c == '\\' || c == '"' || c == '\n' || c >= 0x80)
                break;
            run++;
        }
        put(b, v + i, run);
        i += run;
        if (i >= n)
            break;
        unsigned char c = p[i];
        if (c == '\\') {
            PUT_LIT(b, "\\\\");
            i++;
        } else if (c == '"') {
            PUT_LIT(b, "\\\"");
            i++;
        } else if (c == '\n') {
            PUT_LIT(b, "\\n");
            i++;
        } else {
            size_t len = utf8_seq(p + i, n - i);
            if (len) {
                put(b, v + i, len);
                i += len;
            } else {
                PUT_LIT(b, "\xef\xbf\xbd"); /* U+FFFD */
                i++;
            }
        }
    }
}

/* ---- histogram ---- */

const int64_t metrics_hist_bounds_ns[METRICS_HIST_BUCKETS] = {
    10000,   25000,    50000,    100000,   250000,    500000,    1000000,    2500000,
    5000000, 10000000, 25000000, 50000000, 100000000, 250000000, 1000000000, 5000000000,
};

/* The same bounds in seconds, as the le labels show them. */
static const char *const hist_le[METRICS_HIST_BUCKETS] = {
    "0.00001", "0.000025", "0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
    "0.005",   "0.01",     "0.025",   "0.05",   "0.1",     "0.25",   "1",     "5",
};

void metrics_hist_observe(struct metrics_hist *h, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    for (size_t k = 0; k < METRICS_HIST_BUCKETS; k++) {
        if (ns <= metrics_hist_bounds_ns[k]) {
            h->bucket[k]++;
            break;
        }
    }
    h->count++;
    h->sum_ns += ns;
}

/* ---- the renderer ---- */

/* A piece of the renderer's label text. */
struct span {
    size_t off, len;
};

struct compat_ch {
    int ch;
    char sensor[48]; /* ACPI: "<hwmonN>/<powerM>", the sort key */
    int socket;      /* DCGM: the CPU entity id, the sort key */
    struct span lab;
};

struct gpu_ref {
    const struct source *src;
    unsigned index;
    struct span lab;
};

enum { CPU_MODES = 5 };
static const char *const cpu_modes[CPU_MODES] = {"total", "user", "nice", "system", "irq"};

struct metrics_renderer {
    struct metrics_buf lab; /* every label block, escaped, braces included */
    size_t nch;
    struct span *ch_lab;  /* per channel: {node,channel,source,kind,domain,method,socket} */
    struct span *err_lab; /* per channel: {node,channel} */
    int *node_idx;        /* the channels of the node sums */
    size_t n_node;
    struct span node_lab;
    bool have_util;
    struct span cpu_lab[CPU_MODES];
    struct span build_lab;
    struct gpu_ref gpu[NVML_GPUS_MAX];
    size_t n_gpu;
    bool compat;
    enum metrics_srt_family family;
    struct compat_ch *compat_ch;
    size_t n_compat;
    size_t estimate; /* bytes of a render, roughly: the first reservation */
};

/* Label block builder: "{" name="value" ... "}" appended to r->lab. */
static size_t lab_open(struct metrics_renderer *r)
{
    PUT_LIT(&r->lab, "{");
    return r->lab.len - 1;
}

static void lab_add(struct metrics_renderer *r, const char *name, const char *value)
{
    if (r->lab.len && r->lab.data && r->lab.data[r->lab.len - 1] != '{')
        PUT_LIT(&r->lab, ",");
    put_str(&r->lab, name);
    PUT_LIT(&r->lab, "=\"");
    metrics_escape_label(&r->lab, value);
    PUT_LIT(&r->lab, "\"");
}

static struct span lab_close(struct metrics_renderer *r, size_t off)
{
    PUT_LIT(&r->lab, "}");
    return (struct span){off, r->lab.oom ? 0 : r->lab.len - off};
}

/* The srt-slurm sensor name of an ACPI power_meter power channel, or false when c is not one. */
static bool acpi_sensor(const struct channel *c, char *buf, size_t cap)
{
    static const char class_dir[] = "sys/class/hwmon/";
    if (strcmp(c->source, "hwmon") != 0 || strncmp(c->name, "hwmon/power_meter/", 18) != 0)
        return false;
    if (strncmp(c->path, class_dir, sizeof class_dir - 1) != 0)
        return false;
    const char *dir = c->path + sizeof class_dir - 1;
    const char *slash = strchr(dir, '/');
    const char *file = strrchr(c->path, '/');
    if (!slash || !file)
        return false;
    file++;
    size_t fl = 5;
    if (strncmp(file, "power", 5) != 0)
        return false;
    while (file[fl] >= '0' && file[fl] <= '9')
        fl++;
    if (fl == 5 || file[fl] != '_')
        return false;
    int w = snprintf(buf, cap, "%.*s/%.*s", (int)(slash - dir), dir, (int)fl, file);
    return w > 0 && (size_t)w < cap;
}

/* srt-slurm's type label: the OEM kind, "other" for anything that is not a classified rail. */
static const char *acpi_type(const struct channel *c)
{
    static const char *const kinds[] = {"total", "cpu_rail", "soc", "dram"};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (strcmp(c->zone, kinds[k]) == 0 && c->socket >= 0)
            return kinds[k];
    return "other";
}

/* A dcgm CPU rail channel (dcgm/cpu<N>: field 1130), not its SysIO or module channels. */
static bool dcgm_cpu_rail(const struct channel *c)
{
    if (strcmp(c->source, "dcgm") != 0 || c->kind != KIND_CPU || c->socket < 0 ||
        strncmp(c->name, "dcgm/cpu", 8) != 0 || !c->name[8])
        return false;
    for (const char *p = c->name + 8; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

/* A reading srt-slurm counts as live: valid, finite and above 0. */
static bool live(const struct chan_state *st)
{
    return st->tick_valid && isfinite(st->watts) && st->watts > 0;
}

static int compat_cmp(const void *a, const void *b)
{
    const struct compat_ch *x = a, *y = b;
    int c = strcmp(x->sensor, y->sensor);
    return c ? c : (x->ch > y->ch) - (x->ch < y->ch);
}

/* The source that channel i belongs to. */
static const struct source *source_of(const struct sampler *s, size_t i)
{
    for (size_t k = 0; k < s->nsrc; k++)
        if (s->src[k].status == 0 && i >= s->src[k].first && i < s->src[k].first + s->src[k].count)
            return &s->src[k];
    return NULL;
}

static void prepare_gpus(struct metrics_renderer *r, const struct sampler *s, const char *node)
{
    for (size_t i = 0; i < s->set.n && r->n_gpu < NVML_GPUS_MAX; i++) {
        const struct channel *c = &s->set.ch[i];
        if (strcmp(c->source, "nvml") != 0 || c->kind != KIND_GPU || c->domain != DOMAIN_TOTAL ||
            c->socket < 0)
            continue;
        const struct source *src = source_of(s, i);
        const char *uuid = src ? nvml_device_uuid(src, (unsigned)c->socket) : NULL;
        if (!uuid)
            continue;
        struct gpu_ref *g = &r->gpu[r->n_gpu++];
        char idx[24];
        fmt_u64(idx, (uint64_t)c->socket);
        g->src = src;
        g->index = (unsigned)c->socket;
        size_t off = lab_open(r);
        lab_add(r, "node", node);
        lab_add(r, "gpu", idx);
        lab_add(r, "uuid", uuid);
        g->lab = lab_close(r, off);
    }
}

static int dcgm_cmp(const void *a, const void *b)
{
    const struct compat_ch *x = a, *y = b;
    if (x->socket != y->socket)
        return (x->socket > y->socket) - (x->socket < y->socket);
    return (x->ch > y->ch) - (x->ch < y->ch);
}

/* srt-slurm's DCGM family: one line per CPU entity, {socket="N",source="dcgm"}. */
static void prepare_compat_dcgm(struct metrics_renderer *r, const struct sampler *s)
{
    for (size_t i = 0; i < s->set.n; i++) {
        if (!dcgm_cpu_rail(&s->set.ch[i]))
            continue;
        struct compat_ch *cc = &r->compat_ch[r->n_compat++];
        cc->ch = (int)i;
        cc->socket = s->set.ch[i].socket;
    }
    qsort(r->compat_ch, r->n_compat, sizeof *r->compat_ch, dcgm_cmp);
    for (size_t k = 0; k < r->n_compat; k++) {
        struct compat_ch *cc = &r->compat_ch[k];
        char socket[24];
        fmt_u64(socket, (uint64_t)cc->socket);
        size_t off = lab_open(r);
        lab_add(r, "socket", socket);
        lab_add(r, "source", "dcgm");
        cc->lab = lab_close(r, off);
    }
}

static int prepare_compat(struct metrics_renderer *r, const struct sampler *s)
{
    r->compat_ch = calloc(s->set.n ? s->set.n : 1, sizeof *r->compat_ch);
    if (!r->compat_ch)
        return -ENOMEM;
    if (r->family == METRICS_SRT_DCGM) {
        prepare_compat_dcgm(r, s);
        return 0;
    }
    for (size_t i = 0; i < s->set.n; i++) {
        struct compat_ch *cc = &r->compat_ch[r->n_compat];
        if (!acpi_sensor(&s->set.ch[i], cc->sensor, sizeof cc->sensor))
            continue;
        cc->ch = (int)i;
        r->n_compat++;
    }
    qsort(r->compat_ch, r->n_compat, sizeof *r->compat_ch, compat_cmp);
    for (size_t k = 0; k < r->n_compat; k++) {
        struct compat_ch *cc = &r->compat_ch[k];
        const struct channel *c = &s->set.ch[cc->ch];
        const char *type = acpi_type(c);
        char socket[24] = "";
        if (strcmp(type, "other") != 0)
            fmt_u64(socket, (uint64_t)c->socket);
        size_t off = lab_open(r);
        lab_add(r, "sensor", cc->sensor);
        lab_add(r, "type", type);
        lab_add(r, "socket", socket);
        lab_add(r, "oem_info", c->label);
        lab_add(r, "source", "acpi");
        cc->lab = lab_close(r, off);
    }
    return 0;
}

struct metrics_renderer *metrics_renderer_new(const struct sampler *s, const struct metrics_opts *o,
                                              struct carma_err *e)
{
    if (!o->node || !o->version) {
        carma_err_set(e, -EINVAL, "metrics: the node name and the version are required");
        return NULL;
    }
    struct metrics_renderer *r = calloc(1, sizeof *r);
    size_t n = s->set.n;
    if (r) {
        r->nch = n;
        r->ch_lab = calloc(n ? n : 1, sizeof *r->ch_lab);
        r->err_lab = calloc(n ? n : 1, sizeof *r->err_lab);
        r->node_idx = calloc(CHANNELS_MAX, sizeof *r->node_idx);
    }
    if (!r || !r->ch_lab || !r->err_lab || !r->node_idx)
        goto oom;
    size_t off = lab_open(r);
    lab_add(r, "version", o->version);
    r->build_lab = lab_close(r, off);
    size_t lab_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const struct channel *c = &s->set.ch[i];
        char socket[24] = "";
        if (c->socket >= 0)
            fmt_u64(socket, (uint64_t)c->socket);
        off = lab_open(r);
        lab_add(r, "node", o->node);
        lab_add(r, "channel", c->name);
        lab_add(r, "source", c->source);
        lab_add(r, "kind", channel_kind_name(c->kind));
        lab_add(r, "domain", channel_domain_name(c->domain));
        lab_add(r, "method", channel_method_name(c->method));
        lab_add(r, "socket", socket);
        r->ch_lab[i] = lab_close(r, off);
        off = lab_open(r);
        lab_add(r, "node", o->node);
        lab_add(r, "channel", c->name);
        r->err_lab[i] = lab_close(r, off);
        lab_bytes += 2 * r->ch_lab[i].len + r->err_lab[i].len;
    }
    r->n_node = sampler_select_node(s, r->node_idx);
    bool measured = false, estimated = false;
    for (size_t k = 0; k < r->n_node; k++) {
        if (s->set.ch[r->node_idx[k]].method == METHOD_MEASURED)
            measured = true;
        else
            estimated = true;
    }
    off = lab_open(r);
    lab_add(r, "node", o->node);
    lab_add(r, "method",
            measured && estimated ? "measured+estimated"
            : measured            ? "measured"
                                  : "estimated");
    r->node_lab = lab_close(r, off);
    r->have_util = s->have_util;
    for (size_t k = 0; k < CPU_MODES; k++) {
        off = lab_open(r);
        lab_add(r, "node", o->node);
        lab_add(r, "mode", cpu_modes[k]);
        r->cpu_lab[k] = lab_close(r, off);
    }
    prepare_gpus(r, s, o->node);
    r->compat = o->compat_srtctl;
    r->family = o->srt_family == METRICS_SRT_DCGM ? METRICS_SRT_DCGM : METRICS_SRT_ACPI;
    if (r->compat && prepare_compat(r, s) < 0)
        goto oom;
    if (r->lab.oom)
        goto oom;
    /* every label block at most twice, 40 bytes of name and value per line, the headers */
    r->estimate = 2 * r->lab.len + lab_bytes + 40 * (4 * n + 64) + 8192;
    return r;
oom:
    metrics_renderer_free(r);
    carma_err_set(e, -ENOMEM, "out of memory");
    return NULL;
}

void metrics_renderer_free(struct metrics_renderer *r)
{
    if (!r)
        return;
    metrics_buf_done(&r->lab);
    free(r->ch_lab);
    free(r->err_lab);
    free(r->node_idx);
    free(r->compat_ch);
    free(r);
}

size_t metrics_renderer_compat_count(const struct metrics_renderer *r)
{
    return r->compat ? r->n_compat : 0;
}

/* ---- rendering ---- */

#define HEADER(name, type, help) "# HELP " name " " help "\n# TYPE " name " " type "\n"

static const char hdr_build[] =
    HEADER("carma_build_info", "gauge", "carma's version, as a label; the value is always 1.");
static const char hdr_power[] =
    HEADER("carma_power_watts", "gauge",
           "Power of the channel over the last sampling interval, in watts (a missing reading "
           "leaves the line out).");
static const char hdr_energy[] =
    HEADER("carma_energy_joules_total", "counter",
           "Energy of the channel since the exporter started, in joules (counters integrated "
           "across wraps, resets skipped; gauges by the trapezoid rule).");
static const char hdr_node_power[] =
    HEADER("carma_node_power_watts", "gauge",
           "Power of the node over the last sampling interval, in watts: the sum of the "
           "channels that do not overlap (left out when one of them is missing).");
static const char hdr_node_energy[] =
    HEADER("carma_node_energy_joules_total", "counter",
           "Energy of the node since the exporter started, in joules: the sum of the channels "
           "that do not overlap.");
static const char hdr_cpu[] =
    HEADER("carma_cpu_utilization_ratio", "gauge",
           "CPU time of the node spent in each mode since the previous reading of proc/stat, as "
           "a fraction of all CPU time (total = every busy mode).");
static const char hdr_gpu[] =
    HEADER("carma_gpu_utilization_ratio", "gauge",
           "Fraction of NVML's last sample period during which a kernel ran on the GPU.");
static const char hdr_gpu_mem[] =
    HEADER("carma_gpu_memory_utilization_ratio", "gauge",
           "Fraction of NVML's last sample period during which the GPU's memory was read or "
           "written.");
static const char hdr_errors[] =
    HEADER("carma_read_errors_total", "counter",
           "Readings of the channel that were missing: the sensor could not be read or gave "
           "no valid value.");
static const char hdr_duration[] =
    HEADER("carma_sample_duration_seconds", "histogram",
           "Time the exporter took to read every channel and render the metrics, per sample.");
static const char hdr_scrapes[] =
    HEADER("carma_scrapes_total", "counter",
           "Requests for /metrics the exporter has answered, as of the latest sample.");
static const char hdr_marks_open[] =
    HEADER("carma_marks_open", "gauge",
           "Mark windows open now on the exporter's marks socket (--marks-dir).");
static const char hdr_marks_windows[] =
    HEADER("carma_mark_windows_total", "counter",
           "Mark windows ended on the exporter's marks socket since it started.");
static const char hdr_marks_events[] =
    HEADER("carma_mark_events_total", "counter",
           "Mark events received on the exporter's marks socket since it started.");
static const char hdr_last[] =
    HEADER("carma_last_sample_timestamp_seconds", "gauge",
           "Time of the latest sample, in seconds since the Unix epoch.");
static const char hdr_acpi[] =
    HEADER("cpu_power_acpi_watts", "gauge", "Grace CPU power rail reading from ACPI hwmon (W).");
static const char hdr_dcgm[] = HEADER("cpu_power_dcgm_watts", "gauge",
                                      "Grace CPU instantaneous power via DCGM field 1130 (W).");

/* One sample line: name, the label block (may be empty), a space, the value. */
static void line(struct metrics_buf *b, const struct metrics_renderer *r, const char *name,
                 size_t name_len, struct span lab, const char *value, size_t value_len)
{
    if (!buf_room(b, name_len + lab.len + value_len + 2))
        return;
    char *p = b->data + b->len;
    memcpy(p, name, name_len);
    p += name_len;
    memcpy(p, r->lab.data + lab.off, lab.len);
    p += lab.len;
    *p++ = ' ';
    memcpy(p, value, value_len);
    p += value_len;
    *p++ = '\n';
    b->len = (size_t)(p - b->data);
}

#define LINE(b, r, lit, lab, v, vl) line((b), (r), (lit), sizeof(lit) - 1, (lab), (v), (vl))

/* Seconds of ns, exact: "0.000123456", "2", "1.5". */
static size_t fmt_seconds_ns(char *buf, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    size_t n = fmt_u64(buf, (uint64_t)(ns / 1000000000LL));
    int64_t frac = ns % 1000000000LL;
    if (frac) {
        char d[9];
        for (int k = 8; k >= 0; k--) {
            d[k] = (char)('0' + frac % 10);
            frac /= 10;
        }
        int last = 8;
        while (d[last] == '0')
            last--;
        buf[n++] = '.';
        for (int k = 0; k <= last; k++)
            buf[n++] = d[k];
    }
    buf[n] = '\0';
    return n;
}

/* v with exactly 6 decimals (srt-slurm's format): "150.000000". 0 when v cannot be written. */
static size_t fmt_fixed6_padded(char *buf, double v)
{
    size_t n = fmt_fixed6(buf, v);
    if (n == 0)
        return 0;
    const char *dot = memchr(buf, '.', n);
    size_t decimals = dot ? n - (size_t)(dot - buf) - 1 : 0;
    if (!dot)
        buf[n++] = '.';
    for (; decimals < 6; decimals++)
        buf[n++] = '0';
    buf[n] = '\0';
    return n;
}

static void render_histogram(struct metrics_buf *b, const struct metrics_renderer *r,
                             const struct metrics_hist *h)
{
    static const struct metrics_hist none;
    char num[48];
    if (!h)
        h = &none;
    PUT_LIT(b, hdr_duration);
    uint64_t cum = 0;
    for (size_t k = 0; k < METRICS_HIST_BUCKETS; k++) {
        cum += h->bucket[k];
        PUT_LIT(b, "carma_sample_duration_seconds_bucket{le=\"");
        put_str(b, hist_le[k]);
        PUT_LIT(b, "\"} ");
        put(b, num, fmt_u64(num, cum));
        PUT_LIT(b, "\n");
    }
    PUT_LIT(b, "carma_sample_duration_seconds_bucket{le=\"+Inf\"} ");
    put(b, num, fmt_u64(num, h->count));
    PUT_LIT(b, "\n");
    struct span none_lab = {0, 0};
    LINE(b, r, "carma_sample_duration_seconds_sum", none_lab, num, fmt_seconds_ns(num, h->sum_ns));
    LINE(b, r, "carma_sample_duration_seconds_count", none_lab, num, fmt_u64(num, h->count));
}

int metrics_render(struct metrics_renderer *r, const struct sampler *s,
                   const struct metrics_self *self, struct metrics_buf *out)
{
    char num[48];
    size_t nl;
    size_t n = r->nch < s->set.n ? r->nch : s->set.n;
    const struct span nolab = {0, 0};
    out->len = 0;
    out->oom = false;
    buf_room(out, r->estimate);

    PUT_LIT(out, hdr_build);
    LINE(out, r, "carma_build_info", r->build_lab, "1", 1);

    PUT_LIT(out, hdr_power);
    for (size_t i = 0; i < n; i++) {
        const struct chan_state *st = &s->st[i];
        if (st->tick_valid && (nl = fmt_fixed6(num, st->watts)) > 0)
            LINE(out, r, "carma_power_watts", r->ch_lab[i], num, nl);
    }
    PUT_LIT(out, hdr_energy);
    for (size_t i = 0; i < n; i++)
        if ((nl = fmt_fixed6(num, s->st[i].energy_j)) > 0)
            LINE(out, r, "carma_energy_joules_total", r->ch_lab[i], num, nl);

    PUT_LIT(out, hdr_node_power);
    if (r->n_node) {
        double w = 0;
        bool valid = true;
        for (size_t k = 0; k < r->n_node; k++) {
            const struct chan_state *st = &s->st[r->node_idx[k]];
            valid = valid && st->tick_valid && isfinite(st->watts);
            w += st->watts;
        }
        if (valid && (nl = fmt_fixed6(num, w)) > 0)
            LINE(out, r, "carma_node_power_watts", r->node_lab, num, nl);
    }
    PUT_LIT(out, hdr_node_energy);
    if (r->n_node) {
        double j = 0;
        for (size_t k = 0; k < r->n_node; k++)
            j += s->st[r->node_idx[k]].energy_j;
        if ((nl = fmt_fixed6(num, j)) > 0)
            LINE(out, r, "carma_node_energy_joules_total", r->node_lab, num, nl);
    }

    if (r->have_util) {
        PUT_LIT(out, hdr_cpu);
        const struct procstat *u = &s->util;
        if (s->have_util && u->primed && u->valid) {
            const double v[CPU_MODES] = {u->util_total, u->util_user, u->util_nice, u->util_sys,
                                         u->util_irq};
            for (size_t k = 0; k < CPU_MODES; k++)
                if ((nl = fmt_fixed6(num, v[k])) > 0)
                    LINE(out, r, "carma_cpu_utilization_ratio", r->cpu_lab[k], num, nl);
        }
    }

    if (r->n_gpu) {
        struct nvml_util gu[NVML_GPUS_MAX];
        bool gv[NVML_GPUS_MAX];
        for (size_t g = 0; g < r->n_gpu; g++)
            gv[g] = nvml_device_utilization(r->gpu[g].src, r->gpu[g].index, &gu[g]) == 0;
        PUT_LIT(out, hdr_gpu);
        for (size_t g = 0; g < r->n_gpu; g++)
            if (gv[g] && (nl = fmt_fixed6(num, gu[g].gpu_pct / 100.0)) > 0)
                LINE(out, r, "carma_gpu_utilization_ratio", r->gpu[g].lab, num, nl);
        PUT_LIT(out, hdr_gpu_mem);
        for (size_t g = 0; g < r->n_gpu; g++)
            if (gv[g] && (nl = fmt_fixed6(num, gu[g].mem_pct / 100.0)) > 0)
                LINE(out, r, "carma_gpu_memory_utilization_ratio", r->gpu[g].lab, num, nl);
    }

    PUT_LIT(out, hdr_errors);
    for (size_t i = 0; i < n; i++)
        LINE(out, r, "carma_read_errors_total", r->err_lab[i], num, fmt_u64(num, s->st[i].invalid));

    render_histogram(out, r, self ? self->sample_duration : NULL);
    PUT_LIT(out, hdr_scrapes);
    LINE(out, r, "carma_scrapes_total", nolab, num, fmt_u64(num, self ? self->scrapes : 0));
    if (self && self->marks) {
        PUT_LIT(out, hdr_marks_open);
        LINE(out, r, "carma_marks_open", nolab, num, fmt_u64(num, self->marks_open));
        PUT_LIT(out, hdr_marks_windows);
        LINE(out, r, "carma_mark_windows_total", nolab, num, fmt_u64(num, self->marks_windows));
        PUT_LIT(out, hdr_marks_events);
        LINE(out, r, "carma_mark_events_total", nolab, num, fmt_u64(num, self->marks_events));
    }
    PUT_LIT(out, hdr_last);
    if (s->ticks > 0)
        LINE(out, r, "carma_last_sample_timestamp_seconds", nolab, num,
             fmt_unix_us(num, s->real_now));

    if (r->compat && r->family == METRICS_SRT_DCGM) {
        PUT_LIT(out, hdr_dcgm);
        for (size_t k = 0; k < r->n_compat; k++) {
            const struct compat_ch *cc = &r->compat_ch[k];
            const struct chan_state *st = &s->st[cc->ch];
            if ((size_t)cc->ch < n && live(st) && (nl = fmt_fixed6_padded(num, st->watts)) > 0)
                LINE(out, r, "cpu_power_dcgm_watts", cc->lab, num, nl);
        }
    } else if (r->compat) {
        PUT_LIT(out, hdr_acpi);
        for (size_t k = 0; k < r->n_compat; k++) {
            const struct compat_ch *cc = &r->compat_ch[k];
            const struct chan_state *st = &s->st[cc->ch];
            if ((size_t)cc->ch < n && st->tick_valid && st->watts >= 0 &&
                (nl = fmt_fixed6_padded(num, st->watts)) > 0)
                LINE(out, r, "cpu_power_acpi_watts", cc->lab, num, nl);
        }
    }
    return out->oom ? -ENOMEM : 0;
}

/* ---- srt-slurm's choice of family ---- */

/* The entry of the source named name (usable or not), NULL when --sources left it out. */
static const struct source *named_source(const struct sampler *s, const char *name)
{
    for (size_t k = 0; k < s->nsrc; k++)
        if (s->src[k].ops && strcmp(s->src[k].ops->name, name) == 0)
            return &s->src[k];
    return NULL;
}

/* Whether an ACPI socket-total sensor read a positive value; why in buf either way. */
static bool acpi_live(const struct sampler *s, char *buf, size_t cap)
{
    size_t totals = 0, n_live = 0;
    char sensor[48];
    for (size_t i = 0; i < s->set.n; i++) {
        const struct channel *c = &s->set.ch[i];
        if (!acpi_sensor(c, sensor, sizeof sensor) || strcmp(acpi_type(c), "total") != 0)
            continue;
        totals++;
        n_live += live(&s->st[i]);
    }
    if (n_live)
        snprintf(buf, cap, "%zu of %zu ACPI socket-total sensors read a positive value", n_live,
                 totals);
    else if (totals)
        snprintf(buf, cap,
                 "no ACPI socket-total sensor reads a positive value (%zu read 0 or "
                 "nothing)",
                 totals);
    else if (!named_source(s, "hwmon"))
        snprintf(buf, cap, "no ACPI socket-total sensor (the hwmon source is not in --sources)");
    else
        snprintf(buf, cap, "no ACPI power_meter socket-total sensor below %s",
                 s->root.path[0] ? s->root.path : "/");
    return n_live > 0;
}

/*
 * Whether DCGM gives srt-slurm's family a live value: 0, or -EINVAL (the dcgm source is not in
 * --sources), -ENODEV ("DCGM unavailable: ..."), -ENODATA ("DCGM yielded no live data: ...");
 * buf says why either way.
 */
static int dcgm_live(const struct sampler *s, char *buf, size_t cap)
{
    buf[0] = '\0';
    const struct source *src = named_source(s, "dcgm");
    if (!src && s->nsrc) {
        snprintf(buf, cap, "the dcgm source is not in --sources");
        return -EINVAL;
    }
    if (src && src->status != 0) {
        static const char none[] = DCGM_SRC_NO_READING ": ";
        if (strncmp(src->reason, none, sizeof none - 1) == 0) {
            snprintf(buf, cap, "DCGM yielded no live data: %s", src->reason + sizeof none - 1);
            return -ENODATA;
        }
        snprintf(buf, cap, "DCGM unavailable: %s", src->reason);
        return -ENODEV;
    }
    size_t rails = 0, n_live = 0;
    for (size_t i = 0; i < s->set.n; i++)
        if (dcgm_cpu_rail(&s->set.ch[i])) {
            rails++;
            n_live += live(&s->st[i]);
        }
    if (rails == 0) {
        snprintf(buf, cap, "DCGM unavailable: DCGM gives no CPU power channel%s%s",
                 src && src->note[0] ? ": " : "", src ? src->note : "");
        return -ENODEV;
    }
    if (n_live) {
        snprintf(buf, cap, "DCGM reads a positive value on %zu of %zu CPU sockets", n_live, rails);
        return 0;
    }
    snprintf(buf, cap, "DCGM yielded no live data:");
    bool first = true;
    for (size_t i = 0; i < s->set.n; i++) {
        const struct channel *c = &s->set.ch[i];
        const struct chan_state *st = &s->st[i];
        if (!dcgm_cpu_rail(c))
            continue;
        char w[48];
        if (st->tick_valid && fmt_fixed6_padded(w, st->watts) > 0)
            fmt_append(buf, cap, "%s %s %s W", first ? "" : ",", c->name, w);
        else
            fmt_append(buf, cap, "%s %s no reading (%s)", first ? "" : ",", c->name,
                       strerror(st->last_err ? -st->last_err : EAGAIN));
        first = false;
    }
    return -ENODATA;
}

int metrics_srt_choose(const struct sampler *s, enum metrics_srt_source want,
                       struct metrics_srt_choice *out, struct carma_err *e)
{
    char acpi[256], dcgm[832];
    int r;
    memset(out, 0, sizeof *out);
    switch (want) {
    case METRICS_SRT_SOURCE_ACPI:
        out->family = METRICS_SRT_ACPI;
        snprintf(out->why, sizeof out->why, "--srt-source acpi: as asked, nothing read to choose");
        return 0;
    case METRICS_SRT_SOURCE_DCGM:
        r = dcgm_live(s, dcgm, sizeof dcgm);
        if (r == -EINVAL)
            return carma_err_set(e, r,
                                 "--srt-source dcgm reads the dcgm source, which --sources leaves "
                                 "out: add dcgm to --sources, or use --srt-source acpi");
        if (r < 0)
            return carma_err_set(e, r, "--srt-source dcgm: %s", dcgm);
        out->family = METRICS_SRT_DCGM;
        snprintf(out->why, sizeof out->why, "--srt-source dcgm: %s", dcgm);
        return 0;
    case METRICS_SRT_SOURCE_AUTO:
        break;
    default:
        return carma_err_set(e, -EINVAL, "metrics: unknown srt-slurm source %d", (int)want);
    }
    if (acpi_live(s, acpi, sizeof acpi)) {
        out->family = METRICS_SRT_ACPI;
        snprintf(out->why, sizeof out->why, "--srt-source auto: %s", acpi);
        return 0;
    }
    r = dcgm_live(s, dcgm, sizeof dcgm);
    if (r < 0)
        return carma_err_set(e, -ENODATA,
                             "--srt-source auto: neither ACPI nor DCGM reads: %s; %s%s", acpi,
                             r == -EINVAL ? "no DCGM: " : "", dcgm);
    out->family = METRICS_SRT_DCGM;
    snprintf(out->why, sizeof out->why, "--srt-source auto: %s; %s", acpi, dcgm);
    return 0;
}

/* ---- the store ---- */

void metrics_store_init(struct metrics_store *st)
{
    memset(st, 0, sizeof *st);
    atomic_init(&st->cur, NULL);
}

struct metrics_snapshot *metrics_store_begin(struct metrics_store *st)
{
    struct metrics_snapshot *cur = atomic_load(&st->cur);
    for (size_t i = 0; i < st->n; i++)
        if (st->snap[i] != cur && atomic_load(&st->snap[i]->refs) == 0)
            return st->snap[i];
    if (st->n == METRICS_SNAPSHOTS_MAX)
        return NULL;
    struct metrics_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    atomic_init(&s->refs, 0);
    st->snap[st->n++] = s;
    return s;
}

void metrics_store_publish(struct metrics_store *st, struct metrics_snapshot *snap)
{
    atomic_store(&st->cur, snap);
}

struct metrics_snapshot *metrics_store_acquire(struct metrics_store *st)
{
    for (;;) {
        struct metrics_snapshot *s = atomic_load(&st->cur);
        if (!s)
            return NULL;
        atomic_fetch_add(&s->refs, 1);
        /* still the latest: the publisher will not pick it while the reference is held (it
         * checks refs after it has replaced the latest; both are sequentially consistent) */
        if (atomic_load(&st->cur) == s)
            return s;
        atomic_fetch_sub(&s->refs, 1);
    }
}

void metrics_snapshot_release(struct metrics_snapshot *snap)
{
    atomic_fetch_sub(&snap->refs, 1);
}

void metrics_store_done(struct metrics_store *st)
{
    for (size_t i = 0; i < st->n; i++) {
        metrics_buf_done(&st->snap[i]->text);
        free(st->snap[i]);
    }
    metrics_store_init(st);
}
