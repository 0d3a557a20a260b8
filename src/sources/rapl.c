/*
 * rapl: Intel and AMD RAPL energy counters through the powercap sysfs interface.
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
 */
#include "sources/source.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "core/parse.h"

#define POWERCAP_DIR "sys/class/powercap"

struct rapl_priv {
    int fds[CHANNELS_MAX];
    size_t n;
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

static void rapl_close(struct source *s)
{
    struct rapl_priv *p = s->priv;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        if (p->fds[i] >= 0)
            close(p->fds[i]);
    free(p);
    s->priv = NULL;
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

static int rapl_probe(struct source *s, struct probe_ctx *ctx)
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
    struct rapl_priv *p = calloc(1, sizeof *p);
    if (!p) {
        r = -ENOMEM;
        goto out;
    }
    s->priv = p;
    s->first = ctx->set->n;
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
    s->count = ctx->set->n - s->first;
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
    if (s->count == 0) {
        r = denied ? -EACCES : -ENOENT;
        if (!denied && !s->reason[0]) /* else the reason says why each zone was left out */
            snprintf(s->reason, sizeof s->reason,
                     "RAPL zones found under %s but none has a "
                     "readable energy_uj",
                     POWERCAP_DIR);
        goto out;
    }
    r = (int)s->count;
    /* usable: what was skipped is a warning for the user, not a reason */
    snprintf(s->note, sizeof s->note, "%s", s->reason);
    s->reason[0] = '\0';
out:
    for (size_t i = 0; i < nz; i++)
        free(zones[i]);
    free(zones);
    return r;
}

static void rapl_read(struct source *s, struct reading *out)
{
    struct rapl_priv *p = s->priv;
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

const struct source_ops rapl_source_ops = {
    .name = "rapl",
    .probe = rapl_probe,
    .read = rapl_read,
    .close = rapl_close,
};
