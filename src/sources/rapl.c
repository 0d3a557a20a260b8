/*
 * rapl: Intel and AMD RAPL energy counters through the powercap sysfs interface or the RAPL
 * perf PMU (rapl.h), whichever reads faster here.
 *
 * Zones live in sys/class/powercap/intel-rapl:N (packages, psys) and their subzones in
 * intel-rapl:N:M (core, uncore, graphics, dram). Each zone with an energy_uj file becomes a
 * channel read as a wrapping µJ counter (range from max_energy_range_uj). How the zones nest,
 * so that nothing is added twice:
 *   - core, uncore and graphics are components of their package;
 *   - dram, although powercap lists it under the package, is its own domain outside it;
 *   - psys is the whole platform: when present it contains packages and dram.
 * energy_uj has been readable by root only since Linux 5.10 (CVE-2020-8694): an unreadable
 * counter is reported with that reason and the fix, never as 0 W.
 *
 * The perf path (arch/x86/events/rapl.c): the PMU's sysfs description names its type, one CPU
 * per package (cpumask) and the events energy-pkg, -cores, -ram, -gpu and -psys
 * ("event=0x02", a .scale of 2^-32 J and a .unit of Joules). The probe opens one group per
 * package on that CPU (pid -1), read_format PERF_FORMAT_GROUP, so that one read() returns
 * every domain of the package. The count starts at 0 when the event is enabled and is 64-bit
 * in scale units: a counter of unknown range that never wraps in practice (2^32 J, 99 days at
 * 500 W). The domains take the powercap zones' channel names, kinds and nesting, so that a
 * user sees the same channels whichever path reads them. A domain still at 0 after the probe's
 * wait never counted: a virtual machine's stub, left out with that reason.
 */
#include "sources/rapl.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/file.h"
#include "core/parse.h"
#include "core/timeutil.h"

#define POWERCAP_DIR "sys/class/powercap"
#define PMU_EVENTS   5  /* the domains of pmu_domains[] */
#define PMU_GROUPS   64 /* packages */
#define PMU_ROUNDS   32 /* timed reads of each path at probe time */
/* How long the probe waits before calling a domain that still reads 0 a stub: ten of the
 * energy status updates that Intel's SDM (vol. 3B, 15.10.3) puts "approximately every 1 ms". */
#define PMU_STUB_WAIT_NS (10 * NS_PER_MS)

/* One perf event group: a package's domains, read at once through the leader. */
struct pmu_group {
    int fds[PMU_EVENTS]; /* fds[0] is the leader; -1 unused */
    size_t nev;          /* events in the group: the values of one read */
    int cpu, socket;
    int dom[PMU_EVENTS]; /* per event, in group order: its pmu_domains[] index */
    int out[PMU_EVENTS]; /* per event: its channel's offset from s->first, -1 when none */
    size_t nchan;        /* channels read by this group */
};

struct rapl_priv {
    int fds[CHANNELS_MAX]; /* the powercap path's energy_uj files */
    size_t n;
    bool perf; /* the perf path reads: groups[], else fds[] */
    struct pmu_group groups[PMU_GROUPS];
    size_t ngroups;
};

struct zone_role {
    const char *prefix; /* zone name, or prefix followed by a socket number */
    bool numbered;
    enum channel_kind kind;
    const char *zone;
    bool component_of_package;
};

/* Zone names the kernel uses (drivers/powercap/intel_rapl_common.c rapl_domain_names). */
static const struct zone_role roles[] = {
    {"package-", true, KIND_CPU, "package", false}, {"core", false, KIND_CPU, "core", true},
    {"uncore", false, KIND_SOC, "uncore", true},    {"dram", false, KIND_DRAM, "dram", false},
    {"psys", false, KIND_SYSTEM, "psys", false},    {"graphics", false, KIND_GPU, "graphics", true},
};

static const struct zone_role *role_of(const char *name, int *socket)
{
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        size_t pl = strlen(roles[i].prefix);
        if (roles[i].numbered) {
            uint64_t n;
            if (strncmp(name, roles[i].prefix, pl) == 0 && parse_u64(name + pl, &n) == 0 &&
                n < 4096) {
                *socket = (int)n;
                return &roles[i];
            }
        } else if (strcmp(name, roles[i].prefix) == 0) {
            return &roles[i];
        }
    }
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the intel-rapl:* entries (not intel-rapl-mmio, which mirrors the same package
 * counters through MMIO), sorted so that a zone precedes its subzones. */
static int list_zones(const struct fsroot *root, char ***ret, size_t *ret_n)
{
    DIR *d;
    int r = fsroot_open_dir(root, POWERCAP_DIR, &d);
    if (r < 0)
        return r;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "intel-rapl:", 11) != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **p = realloc(names, cap * sizeof *p);
            if (!p) {
                r = -ENOMEM;
                break;
            }
            names = p;
        }
        if (!(names[n] = strdup(de->d_name))) {
            r = -ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    if (r < 0) {
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return r;
    }
    if (n > 1) /* names is NULL when there are none: qsort must not see it */
        qsort(names, n, sizeof *names, cmp_str);
    *ret = names;
    *ret_n = n;
    return 0;
}

static void append_reason(struct source *s, const char *fmt, const char *a, const char *b)
{
    size_t len = strlen(s->reason);
    if (len + 2 >= sizeof s->reason)
        return;
    if (len)
        s->reason[len++] = ' ';
    snprintf(s->reason + len, sizeof s->reason - len, fmt, a, b);
}

/*
 * The powercap path: appends a channel per zone with a readable energy_uj and keeps its fd in
 * p. Returns the number of channels (> 0, with what was skipped in s->reason), or a negative
 * errno with the reason in s->reason.
 */
static int powercap_probe(struct source *s, struct probe_ctx *ctx, struct rapl_priv *p)
{
    char **zones = NULL;
    size_t nz = 0;
    int r = list_zones(ctx->root, &zones, &nz);
    if (r == -ENOENT || (r == 0 && nz == 0)) {
        snprintf(s->reason, sizeof s->reason,
                 "no RAPL zones under %s (not an Intel/AMD machine with the intel_rapl "
                 "driver, or a VM that hides RAPL; try `modprobe intel_rapl_msr`)",
                 POWERCAP_DIR);
        free(zones);
        return -ENOENT;
    }
    if (r < 0) {
        snprintf(s->reason, sizeof s->reason, "cannot list %s: %s", POWERCAP_DIR, strerror(-r));
        return r;
    }
    int denied = 0, psys = -1;
    /* by top-zone number: the package zone's name and socket (known even when its own
     * energy_uj is unreadable, so that its subzones keep their names), and its channel */
    struct {
        char name[24];
        int socket;
        int channel;
    } pkg[64];
    for (size_t i = 0; i < 64; i++) {
        pkg[i].name[0] = '\0';
        pkg[i].socket = -1;
        pkg[i].channel = -1;
    }
    for (size_t z = 0; z < nz; z++) {
        char rel[CHANNEL_PATH_MAX], name[64];
        snprintf(rel, sizeof rel, "%s/%s/name", POWERCAP_DIR, zones[z]);
        if (fsroot_read_text(ctx->root, rel, name, sizeof name) <= 0)
            continue;
        int socket = -1;
        const struct zone_role *role = role_of(name, &socket);
        /* zone numbers: intel-rapl:T or intel-rapl:T:S */
        unsigned top = 0, sub = 0;
        int nnum = sscanf(zones[z] + 11, "%u:%u", &top, &sub);
        bool is_sub = nnum == 2;
        if (nnum == 1 && role && strcmp(role->zone, "package") == 0 && top < 64 &&
            strlen(name) < sizeof pkg[top].name) {
            snprintf(pkg[top].name, sizeof pkg[top].name, "%s", name);
            pkg[top].socket = socket;
        }
        snprintf(rel, sizeof rel, "%s/%s/energy_uj", POWERCAP_DIR, zones[z]);
        int fd = fsroot_open_file(ctx->root, rel);
        if (fd < 0) {
            if (fd == -EACCES || fd == -EPERM) {
                denied++;
                if (denied == 1)
                    append_reason(s,
                                  "cannot read %s: permission denied. RAPL energy_uj has "
                                  "been readable by root only since Linux 5.10 "
                                  "(CVE-2020-8694, the Platypus attack).%s",
                                  rel,
                                  " Run carma as root, or grant read access: `sudo chmod o+r "
                                  "/sys/class/powercap/intel-rapl:*/energy_uj` (again after "
                                  "each boot, or with a udev rule / systemd-tmpfiles entry).");
            } else if (fd == -ESPIPE) {
                append_reason(s, "%s is not a regular file (%s): its zone is left out.", rel,
                              file_kind_at(ctx->root->dirfd, rel));
            }
            continue;
        }
        int idx = channel_set_add(ctx->set);
        if (idx < 0) {
            close(fd);
            r = idx;
            goto out;
        }
        p->fds[p->n++] = fd;
        struct channel *c = &ctx->set->ch[idx];
        c->source = "rapl";
        c->form = FORM_COUNTER;
        c->counter_unit_j = 1e-6;
        c->method = METHOD_MEASURED;
        snprintf(c->label, sizeof c->label, "%s", name);
        snprintf(c->path, sizeof c->path, "%s", rel);
        char range_rel[CHANNEL_PATH_MAX], buf[64];
        snprintf(range_rel, sizeof range_rel, "%s/%s/max_energy_range_uj", POWERCAP_DIR, zones[z]);
        uint64_t range = 0;
        if (fsroot_read_text(ctx->root, range_rel, buf, sizeof buf) <= 0 ||
            parse_u64(buf, &range) < 0 || range == 0) {
            range = 0;
            append_reason(s,
                          "%s is missing or not a number: the wrap range of %s is unknown, "
                          "so any backwards step of it is taken for a reset.",
                          range_rel, rel);
        }
        c->counter_range = range;
        /* the package this subzone belongs to, and its channel when it has one */
        bool in_pkg = is_sub && top < 64 && pkg[top].name[0];
        int parent_pkg = in_pkg ? pkg[top].channel : -1;
        int pkg_socket = in_pkg ? pkg[top].socket : -1;
        if (role) {
            c->kind = role->kind;
            snprintf(c->zone, sizeof c->zone, "%s", role->zone);
            c->domain = role->component_of_package ? DOMAIN_COMPONENT : DOMAIN_TOTAL;
            c->parent = role->component_of_package ? parent_pkg : -1;
            c->socket = socket >= 0 ? socket : pkg_socket;
        } else {
            /* a zone this version does not know: shown, never added */
            c->kind = KIND_OTHER;
            snprintf(c->zone, sizeof c->zone, "other");
            c->domain = DOMAIN_COMPONENT;
            c->parent = parent_pkg;
            c->socket = pkg_socket;
        }
        if (in_pkg)
            snprintf(c->name, sizeof c->name, "rapl/%s/%s", pkg[top].name, name);
        else
            snprintf(c->name, sizeof c->name, "rapl/%s", name);
        if (nnum == 1 && role && strcmp(role->zone, "package") == 0 && top < 64)
            pkg[top].channel = idx;
        if (role && strcmp(role->zone, "psys") == 0)
            psys = idx;
    }
    size_t count = ctx->set->n - s->first;
    if (psys >= 0) {
        /* psys contains the packages and dram: they become its components */
        for (size_t i = s->first; i < ctx->set->n; i++) {
            struct channel *c = &ctx->set->ch[i];
            if ((int)i != psys && c->domain == DOMAIN_TOTAL) {
                c->domain = DOMAIN_COMPONENT;
                c->parent = psys;
            }
        }
    }
    if (count == 0) {
        r = denied ? -EACCES : -ENOENT;
        if (!denied && !s->reason[0]) /* else the reason says why each zone was left out */
            snprintf(s->reason, sizeof s->reason,
                     "RAPL zones found under %s but none has a "
                     "readable energy_uj",
                     POWERCAP_DIR);
        goto out;
    }
    r = (int)count;
out:
    for (size_t i = 0; i < nz; i++)
        free(zones[i]);
    free(zones);
    return r;
}

/* The powercap path's tick: a pread of each energy_uj. */
static void powercap_read(const struct rapl_priv *p, struct reading *out)
{
    char buf[32];
    for (size_t i = 0; i < p->n; i++) {
        struct reading *rd = &out[i];
        ssize_t n = fsroot_pread_text(p->fds[i], buf, sizeof buf);
        uint64_t v;
        int r = n < 0 ? (int)n : parse_u64(buf, &v);
        if (r < 0) {
            rd->valid = 0;
            rd->err = (r == -ERANGE || r == -EFBIG) ? -EINVAL : r;
            continue;
        }
        rd->valid = READING_ENERGY;
        rd->err = 0;
        rd->energy_raw = v;
    }
}

/* ---- the perf path ---- */

static int sys_open(uint32_t type, uint64_t config, int cpu, int group_fd)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.read_format = PERF_FORMAT_GROUP;
    long fd = syscall(SYS_perf_event_open, &a, -1, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

static ssize_t sys_read(int fd, void *buf, size_t n)
{
    ssize_t r = read(fd, buf, n);
    return r < 0 ? -errno : r;
}

static void sys_close(int fd)
{
    close(fd);
}

const struct rapl_perf_sys rapl_perf_sys_default = {sys_open, sys_read, sys_close};
struct rapl_perf_sys rapl_perf_sys = {sys_open, sys_read, sys_close};

/* The PMU's domains (arch/x86/events/rapl.c), the package first: it leads its group. sub: the
 * name under the package ("rapl/package-N/core"), NULL for a top zone. */
static const struct pmu_domain {
    const char *event;
    const char *zone;
    const char *sub;
    enum channel_kind kind;
    bool component_of_package;
} pmu_domains[PMU_EVENTS] = {
    {"energy-pkg", "package", NULL, KIND_CPU, false},
    {"energy-cores", "core", "core", KIND_CPU, true},
    {"energy-ram", "dram", "dram", KIND_DRAM, false},
    {"energy-gpu", "graphics", "graphics", KIND_GPU, true},
    {"energy-psys", "psys", NULL, KIND_SYSTEM, false},
};
#define PMU_PSYS 4

/* What the PMU's sysfs directory says. */
struct pmu_desc {
    uint32_t type;
    int cpus[PMU_GROUPS];
    size_t ncpu;
    bool have[PMU_EVENTS];
    uint64_t config[PMU_EVENTS];
    double scale_j[PMU_EVENTS];
};

__attribute__((format(printf, 3, 4))) static void addf(char *buf, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 2 >= cap)
        return;
    if (len)
        buf[len++] = ' ';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

/* Parses a cpulist ("0", "0,36", "0-1") into d->cpus. */
static int parse_cpulist(const char *text, struct pmu_desc *d)
{
    const char *q = text;
    d->ncpu = 0;
    while (*q) {
        char *end;
        if (*q < '0' || *q > '9')
            return -EINVAL;
        unsigned long a = strtoul(q, &end, 10), b = a;
        if (*end == '-') {
            q = end + 1;
            if (*q < '0' || *q > '9')
                return -EINVAL;
            b = strtoul(q, &end, 10);
        }
        if (a > 65535 || b > 65535 || b < a)
            return -EINVAL;
        for (unsigned long c = a; c <= b; c++) {
            if (d->ncpu == PMU_GROUPS)
                return -E2BIG;
            d->cpus[d->ncpu++] = (int)c;
        }
        if (*end == ',')
            end++;
        else if (*end)
            return -EINVAL;
        q = end;
    }
    return d->ncpu ? 0 : -EINVAL;
}

/* Parses the kernel's "event=0x02" (the format the PMU's format/event file describes). */
static int parse_event(const char *text, uint64_t *ret)
{
    if (strncmp(text, "event=0x", 8) != 0 || !text[8])
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text + 8, &end, 16);
    if (errno || *end || text[8] == '-' || text[8] == '+' || v > 0xff)
        return -EINVAL;
    *ret = v;
    return 0;
}

/*
 * Reads the PMU's description below the root into d. Returns 0, -ENOENT when it has no energy
 * event, or -EINVAL with the file and its text in why.
 */
static int pmu_describe(const struct fsroot *root, struct pmu_desc *d, char *why, size_t cap)
{
    char rel[CHANNEL_PATH_MAX], text[256];
    memset(d, 0, sizeof *d);
    unsigned type;
    snprintf(rel, sizeof rel, "%s/type", RAPL_PMU_DIR);
    ssize_t n = fsroot_read_text(root, rel, text, sizeof text);
    if (n < 0 || parse_uint(text, &type) < 0) {
        addf(why, cap, "%s: %s: the perf PMU is not used.", rel,
             n < 0 ? strerror((int)-n) : "not a PMU type number");
        return -EINVAL;
    }
    d->type = type;
    snprintf(rel, sizeof rel, "%s/cpumask", RAPL_PMU_DIR);
    n = fsroot_read_text(root, rel, text, sizeof text);
    if (n < 0) {
        addf(why, cap, "%s: %s: the perf PMU is not used.", rel, strerror((int)-n));
        return -EINVAL;
    }
    if (parse_cpulist(text, d) < 0) {
        addf(why, cap, "%s: '%s' is not a list of CPUs (such as 0,36): the perf PMU is not used.",
             rel, text);
        return -EINVAL;
    }
    size_t nev = 0;
    for (size_t k = 0; k < PMU_EVENTS; k++) {
        const char *ev = pmu_domains[k].event;
        snprintf(rel, sizeof rel, "%s/events/%s", RAPL_PMU_DIR, ev);
        n = fsroot_read_text(root, rel, text, sizeof text);
        if (n == -ENOENT)
            continue;
        if (n < 0 || parse_event(text, &d->config[k]) < 0) {
            addf(why, cap, "%s: '%s' is not event=0x.. (%s): the perf PMU is not used.", rel,
                 n < 0 ? "" : text, n < 0 ? strerror((int)-n) : "the kernel writes event=0x02");
            return -EINVAL;
        }
        snprintf(rel, sizeof rel, "%s/events/%s.unit", RAPL_PMU_DIR, ev);
        n = fsroot_read_text(root, rel, text, sizeof text);
        if (n < 0 || strcmp(text, "Joules") != 0) {
            addf(why, cap, "%s: '%s' is not Joules: the perf PMU is not used.", rel,
                 n < 0 ? strerror((int)-n) : text);
            return -EINVAL;
        }
        snprintf(rel, sizeof rel, "%s/events/%s.scale", RAPL_PMU_DIR, ev);
        n = fsroot_read_text(root, rel, text, sizeof text);
        double scale;
        if (n < 0 || parse_double(text, &scale) < 0 || !(scale > 0) || scale > 1) {
            addf(why, cap,
                 "%s: '%s' is not a scale in joules (the kernel writes "
                 "2.3283064365386962890625e-10): the perf PMU is not used.",
                 rel, n < 0 ? strerror((int)-n) : text);
            return -EINVAL;
        }
        d->scale_j[k] = scale;
        d->have[k] = true;
        nev++;
    }
    if (!nev) {
        addf(why, cap, "%s/events has no energy-* event: the perf PMU is not used.", RAPL_PMU_DIR);
        return -ENOENT;
    }
    return 0;
}

/* Why perf_event_open failed, for people. */
static void open_error(const struct fsroot *root, const struct pmu_desc *d, size_t k, int cpu,
                       int err, char *why, size_t cap)
{
    char para[32] = "unknown";
    switch (err) {
    case -EACCES:
    case -EPERM:
        if (fsroot_read_text(root, "proc/sys/kernel/perf_event_paranoid", para, sizeof para) < 0)
            snprintf(para, sizeof para, "unknown");
        addf(why, cap,
             "perf_event_open of power/%s on CPU %d: permission denied (%s; "
             "proc/sys/kernel/perf_event_paranoid is %s: CPU-wide events need it at 0 or "
             "below, or root or CAP_PERFMON: `sudo sysctl kernel.perf_event_paranoid=0`).",
             pmu_domains[k].event, cpu, err == -EACCES ? "EACCES" : "EPERM", para);
        break;
    case -ENOENT:
    case -EINVAL:
    case -EOPNOTSUPP:
        addf(why, cap,
             "perf_event_open of power/%s (type %u, event=0x%02llx) on CPU %d: %s: the kernel "
             "does not count this domain here.",
             pmu_domains[k].event, d->type, (unsigned long long)d->config[k], cpu,
             err == -ENOENT   ? "ENOENT"
             : err == -EINVAL ? "EINVAL"
                              : "EOPNOTSUPP");
        break;
    case -ENODEV:
        addf(why, cap, "perf_event_open of power/%s on CPU %d: ENODEV (the CPU is offline).",
             pmu_domains[k].event, cpu);
        break;
    default:
        addf(why, cap, "perf_event_open of power/%s on CPU %d: %s.", pmu_domains[k].event, cpu,
             strerror(-err));
    }
}

static void group_close(struct pmu_group *g)
{
    for (size_t k = 0; k < PMU_EVENTS; k++)
        if (g->fds[k] >= 0) {
            rapl_perf_sys.close(g->fds[k]);
            g->fds[k] = -1;
        }
    g->nev = 0;
}

/* One read() of group g into v[0 .. g->nev). Returns 0 or a negative errno (-EIO: short). */
static int group_read(const struct pmu_group *g, uint64_t *v)
{
    uint64_t buf[1 + PMU_EVENTS];
    size_t want = (1 + g->nev) * sizeof buf[0];
    ssize_t n = rapl_perf_sys.read(g->fds[0], buf, want);
    if (n < 0)
        return (int)n;
    if ((size_t)n != want || buf[0] != g->nev)
        return -EIO;
    memcpy(v, buf + 1, g->nev * sizeof *v);
    return 0;
}

/* Whether CPU cpu is offline (its online file reads 0; cpu0 often has none). */
static bool cpu_offline(const struct fsroot *root, int cpu, char *rel, size_t cap)
{
    char text[16];
    snprintf(rel, cap, "sys/devices/system/cpu/cpu%d/online", cpu);
    return fsroot_read_text(root, rel, text, sizeof text) > 0 && strcmp(text, "0") == 0;
}

/*
 * Opens a group per package of the PMU d describes, waits PMU_STUB_WAIT_NS and leaves out the
 * domains that still read 0. Returns the number of domains that count (> 0), or a negative
 * errno; why collects what was left out.
 */
static int pmu_open(const struct fsroot *root, struct rapl_priv *p, const struct pmu_desc *d,
                    int64_t *ret_opened_ns, char *why, size_t cap)
{
    int first_err = 0, told[8]; /* each errno is explained once */
    size_t ntold = 0;
    for (size_t c = 0; c < d->ncpu; c++) {
        int cpu = d->cpus[c];
        char rel[CHANNEL_PATH_MAX], text[32];
        if (cpu_offline(root, cpu, rel, sizeof rel)) {
            addf(why, cap,
                 "%s/cpumask names CPU %d, which is offline (%s reads 0): its package "
                 "is not read through the perf PMU.",
                 RAPL_PMU_DIR, cpu, rel);
            if (!first_err)
                first_err = -ENODEV;
            continue;
        }
        struct pmu_group *g = &p->groups[p->ngroups];
        for (size_t k = 0; k < PMU_EVENTS; k++)
            g->fds[k] = -1, g->out[k] = -1, g->dom[k] = -1;
        g->nev = 0;
        g->cpu = cpu;
        g->socket = (int)c;
        uint64_t pkg;
        snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
        if (fsroot_read_text(root, rel, text, sizeof text) > 0 && parse_u64(text, &pkg) == 0 &&
            pkg < 4096)
            g->socket = (int)pkg;
        for (size_t k = 0; k < PMU_EVENTS; k++) {
            if (!d->have[k] || (k == PMU_PSYS && p->ngroups > 0)) /* psys: one per platform */
                continue;
            int fd = rapl_perf_sys.open(d->type, d->config[k], cpu, g->nev ? g->fds[0] : -1);
            if (fd < 0) {
                bool seen = false;
                for (size_t t = 0; t < ntold; t++)
                    seen = seen || told[t] == fd;
                if (!seen && ntold < 8) {
                    told[ntold++] = fd;
                    open_error(root, d, k, cpu, fd, why, cap);
                }
                if (!first_err)
                    first_err = fd;
                continue;
            }
            g->fds[g->nev] = fd;
            g->dom[g->nev] = (int)k;
            g->nev++;
        }
        if (g->nev)
            p->ngroups++;
    }
    if (!p->ngroups)
        return first_err ? first_err : -ENOENT;
    *ret_opened_ns = time_mono_ns();
    return (int)p->ngroups;
}

/* After the wait: reads each group once and marks the domains that count. Returns how many. */
static int pmu_check(struct rapl_priv *p, int64_t waited_ns, char *why, size_t cap)
{
    int live = 0;
    for (size_t i = 0; i < p->ngroups; i++) {
        struct pmu_group *g = &p->groups[i];
        uint64_t v[PMU_EVENTS];
        int r = group_read(g, v);
        if (r < 0) {
            addf(why, cap, "the perf group of CPU %d cannot be read (%s): left out.", g->cpu,
                 r == -EIO ? "a short read" : strerror(-r));
            group_close(g);
            continue;
        }
        for (size_t k = 0; k < g->nev; k++) {
            if (v[k] == 0) {
                addf(why, cap,
                     "power/%s on CPU %d read 0 J over %lld ms: a virtual machine's stub PMU, "
                     "left out.",
                     pmu_domains[g->dom[k]].event, g->cpu, (long long)(waited_ns / NS_PER_MS));
                g->dom[k] = -1 - g->dom[k]; /* a stub: negative, still read with the group */
                continue;
            }
            live++;
        }
    }
    return live;
}

/* The channel name domain dom of group g takes: the powercap zone's name for the same domain. */
static void pmu_channel_name(const struct pmu_group *g, int dom, char *buf, size_t cap)
{
    const struct pmu_domain *pd = &pmu_domains[dom];
    if (dom == PMU_PSYS)
        snprintf(buf, cap, "rapl/psys");
    else if (pd->sub)
        snprintf(buf, cap, "rapl/package-%d/%s", g->socket, pd->sub);
    else
        snprintf(buf, cap, "rapl/package-%d", g->socket);
}

/* Whether every channel from `first` on has a perf domain of the same name. */
static bool pmu_covers(const struct rapl_priv *p, const struct channel_set *set, size_t first,
                       char *missing, size_t cap)
{
    for (size_t i = first; i < set->n; i++) {
        bool found = false;
        for (size_t j = 0; j < p->ngroups && !found; j++) {
            const struct pmu_group *g = &p->groups[j];
            for (size_t k = 0; k < g->nev && !found; k++) {
                char name[CHANNEL_NAME_MAX];
                if (g->dom[k] < 0)
                    continue;
                pmu_channel_name(g, g->dom[k], name, sizeof name);
                found = strcmp(name, set->ch[i].name) == 0;
            }
        }
        if (!found) {
            snprintf(missing, cap, "%s", set->ch[i].name);
            return false;
        }
    }
    return true;
}

/* Appends the channels of the domains that count. Returns how many, or -ENOSPC. */
static int pmu_add_channels(struct rapl_priv *p, struct probe_ctx *ctx, size_t first,
                            const struct pmu_desc *d)
{
    int psys = -1;
    for (size_t j = 0; j < p->ngroups; j++) {
        struct pmu_group *g = &p->groups[j];
        int pkg = -1;
        g->nchan = 0;
        for (size_t k = 0; k < g->nev; k++) {
            int dom = g->dom[k];
            if (dom < 0)
                continue;
            const struct pmu_domain *pd = &pmu_domains[dom];
            int idx = channel_set_add(ctx->set);
            if (idx < 0)
                return idx;
            struct channel *c = &ctx->set->ch[idx];
            g->out[k] = idx - (int)first;
            g->nchan++;
            pmu_channel_name(g, dom, c->name, sizeof c->name);
            c->source = "rapl";
            c->kind = pd->kind;
            snprintf(c->zone, sizeof c->zone, "%s", pd->zone);
            snprintf(c->label, sizeof c->label, "%s", pd->event);
            c->socket = dom == PMU_PSYS ? -1 : g->socket;
            c->domain = pd->component_of_package ? DOMAIN_COMPONENT : DOMAIN_TOTAL;
            c->parent = pd->component_of_package ? pkg : -1;
            c->form = FORM_COUNTER;
            c->counter_range = 0; /* 64-bit, from 0 at open: never wraps in practice */
            c->counter_unit_j = d->scale_j[dom];
            c->method = METHOD_MEASURED;
            snprintf(c->path, sizeof c->path, "perf power/%s on CPU %d", pd->event, g->cpu);
            if (dom == 0)
                pkg = idx;
            if (dom == PMU_PSYS)
                psys = idx;
        }
    }
    if (psys >= 0)
        for (size_t i = first; i < ctx->set->n; i++) {
            struct channel *c = &ctx->set->ch[i];
            if ((int)i != psys && c->domain == DOMAIN_TOTAL) {
                c->domain = DOMAIN_COMPONENT;
                c->parent = psys;
            }
        }
    return (int)(ctx->set->n - first);
}

/* The perf path's tick: one read() per package. */
static void perf_read(const struct rapl_priv *p, struct reading *out)
{
    for (size_t j = 0; j < p->ngroups; j++) {
        const struct pmu_group *g = &p->groups[j];
        uint64_t v[PMU_EVENTS];
        int r = group_read(g, v);
        for (size_t k = 0; k < g->nev; k++) {
            if (g->out[k] < 0)
                continue;
            struct reading *rd = &out[g->out[k]];
            if (r < 0) {
                rd->valid = 0;
                rd->err = r;
                continue;
            }
            rd->valid = READING_ENERGY;
            rd->err = 0;
            rd->energy_raw = v[k];
        }
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Times PMU_ROUNDS ticks of each path, interleaved; the medians in µs. */
static void time_paths(const struct rapl_priv *p, double *ret_powercap_us, double *ret_perf_us)
{
    static struct reading tmp[CHANNELS_MAX];
    int64_t pc[PMU_ROUNDS], pf[PMU_ROUNDS];
    for (size_t i = 0; i < PMU_ROUNDS; i++) {
        int64_t t0 = time_mono_ns();
        powercap_read(p, tmp);
        int64_t t1 = time_mono_ns();
        for (size_t j = 0; j < p->ngroups; j++) {
            uint64_t v[PMU_EVENTS];
            (void)group_read(&p->groups[j], v);
        }
        int64_t t2 = time_mono_ns();
        pc[i] = t1 - t0;
        pf[i] = t2 - t1;
    }
    qsort(pc, PMU_ROUNDS, sizeof pc[0], cmp_i64);
    qsort(pf, PMU_ROUNDS, sizeof pf[0], cmp_i64);
    *ret_powercap_us = (double)pc[PMU_ROUNDS / 2] / 1e3;
    *ret_perf_us = (double)pf[PMU_ROUNDS / 2] / 1e3;
}

static void sleep_until(int64_t mono_ns)
{
    int64_t left = mono_ns - time_mono_ns();
    if (left <= 0)
        return;
    struct timespec ts = {.tv_sec = left / NS_PER_S, .tv_nsec = left % NS_PER_S};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void rapl_close(struct source *s)
{
    struct rapl_priv *p = s->priv;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        if (p->fds[i] >= 0)
            close(p->fds[i]);
    for (size_t j = 0; j < p->ngroups; j++)
        group_close(&p->groups[j]);
    free(p);
    s->priv = NULL;
}

static void pmu_close_all(struct rapl_priv *p)
{
    for (size_t j = 0; j < p->ngroups; j++)
        group_close(&p->groups[j]);
    p->ngroups = 0;
}

static void powercap_close_all(struct rapl_priv *p)
{
    for (size_t i = 0; i < p->n; i++)
        close(p->fds[i]);
    p->n = 0;
}

/* Counts the groups and domains that count, for people. */
static void perf_summary(const struct rapl_priv *p, char *buf, size_t cap)
{
    size_t dom = 0;
    for (size_t j = 0; j < p->ngroups; j++)
        for (size_t k = 0; k < p->groups[j].nev; k++)
            dom += p->groups[j].dom[k] >= 0;
    snprintf(buf, cap, "perf group (%zu domain%s in %zu read%s a tick)", dom, dom == 1 ? "" : "s",
             p->ngroups, p->ngroups == 1 ? "" : "s");
}

static int probe_paths(struct source *s, struct probe_ctx *ctx)
{
    struct rapl_priv *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    s->priv = p;
    s->first = ctx->set->n;
    enum rapl_path mode = (enum rapl_path)ctx->rapl_path;
    int pc = -ENOENT;
    char pc_text[sizeof s->reason] = "";
    if (mode != RAPL_PATH_PERF) {
        pc = powercap_probe(s, ctx, p);
        snprintf(pc_text, sizeof pc_text, "%s", s->reason);
        s->reason[0] = '\0';
    }
    bool have_pmu = mode != RAPL_PATH_POWERCAP && fsroot_exists(ctx->root, RAPL_PMU_DIR);
    if (!have_pmu) {
        if (mode == RAPL_PATH_PERF) {
            snprintf(s->reason, sizeof s->reason,
                     "--rapl-path perf: no RAPL perf PMU at %s (a kernel without "
                     "CONFIG_PERF_EVENTS_INTEL_RAPL, or a CPU or VM without RAPL)",
                     RAPL_PMU_DIR);
            return -ENOENT;
        }
        snprintf(pc > 0 ? s->note : s->reason, sizeof s->note, "%s", pc_text);
        return pc;
    }
    /* the powercap reason, when another follows it, ends as a sentence */
    size_t pl = strlen(pc_text);
    if (pl && pl + 1 < sizeof pc_text && pc_text[pl - 1] != '.') {
        pc_text[pl] = '.';
        pc_text[pl + 1] = '\0';
    }
    char why[sizeof s->reason] = "";
    struct pmu_desc d;
    int64_t opened_ns = 0;
    int pm = pmu_describe(ctx->root, &d, why, sizeof why);
    if (pm >= 0)
        pm = pmu_open(ctx->root, p, &d, &opened_ns, why, sizeof why);
    double pc_us = NAN, pf_us = NAN;
    if (pm > 0 && pc > 0)
        time_paths(p, &pc_us, &pf_us);
    if (pm > 0) {
        sleep_until(opened_ns + PMU_STUB_WAIT_NS);
        pm = pmu_check(p, time_mono_ns() - opened_ns, why, sizeof why);
        if (pm == 0)
            pm = -ENODEV;
    }
    char missing[CHANNEL_NAME_MAX] = "", summary[96];
    bool covers = pm > 0 && pc > 0 && pmu_covers(p, ctx->set, s->first, missing, sizeof missing);
    bool use_perf = pm > 0 && (mode == RAPL_PATH_PERF || pc <= 0 || (covers && pf_us < pc_us));
    perf_summary(p, summary, sizeof summary);
    if (!use_perf) {
        pmu_close_all(p);
        if (pc <= 0) {
            snprintf(s->reason, sizeof s->reason, "%s%s%s", pc_text, pc_text[0] ? " " : "", why);
            if (mode == RAPL_PATH_PERF && !s->reason[0])
                snprintf(s->reason, sizeof s->reason,
                         "--rapl-path perf: %s has no usable "
                         "domain",
                         RAPL_PMU_DIR);
            return pc == -ENOENT && pm < 0 && pm != -ENOENT ? pm : pc;
        }
        if (pm > 0 && !covers)
            snprintf(
                s->note, sizeof s->note,
                "read path: powercap pread; the perf PMU lacks %s, which powercap reads. %s%s%s",
                missing, why, why[0] && pc_text[0] ? " " : "", pc_text);
        else if (pm > 0)
            snprintf(s->note, sizeof s->note,
                     "read path: powercap pread (%.2f µs a tick, the median of %d at probe "
                     "time) over %s (%.2f µs). %s%s%s",
                     pc_us, PMU_ROUNDS, summary, pf_us, why, why[0] && pc_text[0] ? " " : "",
                     pc_text);
        else
            snprintf(s->note, sizeof s->note,
                     "read path: powercap pread; the perf PMU is not "
                     "used: %s%s%s",
                     why, pc_text[0] ? " " : "", pc_text);
        return pc;
    }
    /* the perf path reads: the powercap channels, if any, give way to the same names */
    powercap_close_all(p);
    ctx->set->n = s->first;
    int r = pmu_add_channels(p, ctx, s->first, &d);
    if (r < 0)
        return r;
    p->perf = true;
    if (mode == RAPL_PATH_PERF)
        snprintf(s->note, sizeof s->note, "read path: %s (--rapl-path perf). %s", summary, why);
    else if (pc > 0)
        snprintf(s->note, sizeof s->note,
                 "read path: %s (%.2f µs a tick, the median of %d at probe time) over powercap "
                 "pread (%.2f µs). %s",
                 summary, pf_us, PMU_ROUNDS, pc_us, why);
    else
        snprintf(s->note, sizeof s->note, "read path: %s; powercap is not used: %s %s", summary,
                 pc_text, why);
    /* trailing blanks of an empty part */
    size_t len = strlen(s->note);
    while (len && s->note[len - 1] == ' ')
        s->note[--len] = '\0';
    return r;
}

static int rapl_probe(struct source *s, struct probe_ctx *ctx)
{
    int r = probe_paths(s, ctx);
    s->count = r > 0 ? ctx->set->n - s->first : 0;
    return r;
}

static void rapl_read(struct source *s, struct reading *out)
{
    const struct rapl_priv *p = s->priv;
    if (p->perf)
        perf_read(p, out);
    else
        powercap_read(p, out);
}

int rapl_path_parse(const char *s, enum rapl_path *ret)
{
    static const char *const names[] = {"auto", "powercap", "perf"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *ret = (enum rapl_path)i;
            return 0;
        }
    return -EINVAL;
}

const struct source_ops rapl_source_ops = {
    .name = "rapl",
    .probe = rapl_probe,
    .read = rapl_read,
    .close = rapl_close,
};

bool rapl_source_is(const struct source *s)
{
    return s && s->ops == &rapl_source_ops;
}

const char *rapl_channel_read_path(const struct source *s, size_t i, char *buf, size_t cap)
{
    if (!rapl_source_is(s) || s->status != 0 || !s->priv || i < s->first ||
        i >= s->first + s->count)
        return NULL;
    const struct rapl_priv *p = s->priv;
    if (!p->perf) {
        snprintf(buf, cap, "powercap pread");
        return buf;
    }
    int off = (int)(i - s->first);
    for (size_t j = 0; j < p->ngroups; j++)
        for (size_t k = 0; k < p->groups[j].nev; k++)
            if (p->groups[j].out[k] == off) {
                snprintf(buf, cap, "perf group (%zu domain%s, 1 read)", p->groups[j].nchan,
                         p->groups[j].nchan == 1 ? "" : "s");
                return buf;
            }
    return NULL;
}
