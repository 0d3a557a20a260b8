/*
 * hwmon: power gauges and energy counters of Linux hwmon devices.
 *
 * Probe walks sys/class/hwmon/hwmon* below the root in lexicographic order of the directory
 * names (hwmon10 before hwmon2) and looks at each device directory and its device/
 * subdirectory: drivers put the value files on one side or the other (old ACPI power meter
 * kernels put everything under device/, newer ones the values on hwmonX/), and the OEM text
 * powerN_oem_info is only found under device/. Each powerN becomes a gauge in µW (from
 * powerN_average, else powerN_input) and each energyN_input a counter in µJ. The same value
 * file reached through two aliases (a symlink, a second class entry) is one channel: the alias
 * that carries a label is kept.
 *
 * What a channel is follows from the device and its label:
 *   - power_meter with an OEM label that classifies (Grace, the needle table below): the
 *     socket total is the socket's channel (a total); CPU, SoC and DRAM rails are components
 *     of it; a second total of the same socket (another naming of the same sensor) is a
 *     component of the first, so that nothing is counted twice;
 *   - power_meter with a single unlabelled channel: a plain ACPI meter of the node's input;
 *   - amdgpu power: the GPU; amd_energy / zenpower Esocket<N> and Ecore<N> counters: the CPU
 *     package and its cores;
 *   - anything else: an unclassified component ("other"), never added.
 * Read re-reads the value files opened at probe: no allocation, no open, no path formatting.
 */
#include "sources/hwmon.h"
#include "sources/note.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/file.h"
#include "core/parse.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define HWMON_CLASS_DIR        "sys/class/hwmon"
#define HWMON_DEVICES_MAX      256 /* hwmon directories looked at */
#define HWMON_DEV_CHANNELS_MAX 64  /* power and energy channels per device */
#define HWMON_DIRNAME_MAX      16  /* "hwmon" and up to 10 digits */
#define HWMON_DEVNAME_MAX      32  /* device name as it appears in channel names */
#define HWMON_TEXT_MAX         256 /* name and label files; longer ones are ignored */
#define HWMON_VALUE_MAX        64  /* value files: a u64, zero padding, a newline */
#define HWMON_CHANNUM_DIGITS   6

/* ---- OEM label classification (the rules of srt-slurm's power exporter) ---- */

/* Needles in the order they are tried: first total, then CPU rail, SoC rail, DRAM rail. */
static const struct oem_needle {
    const char *needle; /* lower case, one space between words, ends before the number */
    enum hwmon_oem_kind kind;
} oem_needles[] = {
    {"grace power socket ", HWMON_OEM_TOTAL},
    {"total power socket ", HWMON_OEM_TOTAL},
    {"total power in uw socket ", HWMON_OEM_TOTAL},
    {"total input power socket ", HWMON_OEM_TOTAL},
    {"total input power in uw socket ", HWMON_OEM_TOTAL},
    {"cpu rail power socket ", HWMON_OEM_CPU_RAIL},
    {"cpu rail power in uw socket ", HWMON_OEM_CPU_RAIL},
    {"cpu rail input power socket ", HWMON_OEM_CPU_RAIL},
    {"cpu rail input power in uw socket ", HWMON_OEM_CPU_RAIL},
    {"cpu power socket ", HWMON_OEM_CPU_RAIL},
    {"soc rail power socket ", HWMON_OEM_SOC},
    {"soc rail power in uw socket ", HWMON_OEM_SOC},
    {"soc rail input power socket ", HWMON_OEM_SOC},
    {"soc rail input power in uw socket ", HWMON_OEM_SOC},
    {"sysio power socket ", HWMON_OEM_SOC},
    {"dram power socket ", HWMON_OEM_DRAM},
    {"dram power in uw socket ", HWMON_OEM_DRAM},
    {"dram input power socket ", HWMON_OEM_DRAM},
    {"dram input power in uw socket ", HWMON_OEM_DRAM},
};

/* Channel kind and zone of each OEM kind. */
static const struct oem_role {
    enum channel_kind kind;
    const char *zone;
} oem_roles[] = {
    [HWMON_OEM_TOTAL] = {KIND_CPU, "total"},   [HWMON_OEM_CPU_RAIL] = {KIND_CPU, "cpu_rail"},
    [HWMON_OEM_SOC] = {KIND_SOC, "soc"},       [HWMON_OEM_DRAM] = {KIND_DRAM, "dram"},
    [HWMON_OEM_OTHER] = {KIND_OTHER, "other"},
};

static bool ascii_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool ascii_digit(char c)
{
    return c >= '0' && c <= '9';
}

/*
 * Matches needle at p, a space in the needle matching a run of whitespace. Returns the end
 * of the match or NULL.
 */
static const char *needle_at(const char *p, const char *needle)
{
    for (const char *n = needle; *n; n++) {
        if (*n == ' ') {
            if (!ascii_space(*p))
                return NULL;
            while (ascii_space(*p))
                p++;
        } else if (ascii_lower(*p++) != *n) {
            return NULL;
        }
    }
    return p;
}

/*
 * The first occurrence of needle in label, as if label had been lower-cased and its
 * whitespace runs made single spaces (needles start with a letter, so an occurrence starts
 * on a non-space character). Returns the end of that occurrence or NULL.
 */
static const char *needle_find(const char *label, const char *needle)
{
    for (const char *p = label; *p; p++) {
        if (ascii_space(*p))
            continue;
        const char *end = needle_at(p, needle);
        if (end)
            return end;
    }
    return NULL;
}

int hwmon_classify_oem(const char *label, enum hwmon_oem_kind *ret_kind, int *ret_socket)
{
    if (!label)
        return -EINVAL;
    for (size_t i = 0; i < ARRAY_SIZE(oem_needles); i++) {
        const char *d = needle_find(label, oem_needles[i].needle);
        if (!d || !ascii_digit(*d))
            continue;
        long socket = 0;
        for (; ascii_digit(*d) && socket <= HWMON_SOCKET_MAX; d++)
            socket = socket * 10 + (*d - '0');
        if (socket > HWMON_SOCKET_MAX)
            continue;
        *ret_kind = oem_needles[i].kind;
        *ret_socket = (int)socket;
        return 1;
    }
    *ret_kind = HWMON_OEM_OTHER;
    *ret_socket = -1;
    return 0;
}

const char *hwmon_oem_kind_name(enum hwmon_oem_kind kind)
{
    return (unsigned)kind < ARRAY_SIZE(oem_roles) ? oem_roles[kind].zone : "other";
}

/* ---- device roles for unclassified channels ---- */

enum hw_type { HW_POWER, HW_ENERGY };

static const char *const hw_type_prefix[] = {[HW_POWER] = "power", [HW_ENERGY] = "energy"};

/* How a channel's name is built. */
enum naming {
    NAME_SOCKET, /* hwmon/power_meter/socket<N>/<zone> */
    NAME_SYSTEM, /* hwmon/power_meter/<hwmonX> */
    NAME_DEVICE, /* hwmon/<device>/<hwmonX>/<powerN|energyN> */
};

/* Which channel is the parent, resolved once all channels are in the set. */
enum link {
    LINK_NONE,
    LINK_SOCKET_TOTAL,  /* the first OEM total of the same socket */
    LINK_DEVICE_FIRST,  /* the first channel of the same device with the same role */
    LINK_DEVICE_SOCKET, /* the device's socket counter, when it has exactly one */
};

struct role {
    enum channel_kind kind;
    const char *zone;
    enum channel_domain domain;
    int socket;
    enum naming naming;
    enum link link;
};

/* Devices whose unlabelled or specially labelled channels are known. A rule with a label
 * prefix matches labels made of the prefix and a decimal number (the socket for LINK_NONE
 * rules, a core index otherwise). */
static const struct dev_rule {
    const char *device;
    enum hw_type type;
    const char *label_prefix; /* NULL: any label */
    enum channel_kind kind;
    const char *zone;
    enum channel_domain domain;
    enum link link;
} dev_rules[] = {
    {"amdgpu", HW_POWER, NULL, KIND_GPU, "gpu", DOMAIN_TOTAL, LINK_DEVICE_FIRST},
    {"amd_energy", HW_ENERGY, "Esocket", KIND_CPU, "package", DOMAIN_TOTAL, LINK_NONE},
    {"amd_energy", HW_ENERGY, "Ecore", KIND_CPU, "core", DOMAIN_COMPONENT, LINK_DEVICE_SOCKET},
    {"zenpower", HW_ENERGY, "Esocket", KIND_CPU, "package", DOMAIN_TOTAL, LINK_NONE},
    {"zenpower", HW_ENERGY, "Ecore", KIND_CPU, "core", DOMAIN_COMPONENT, LINK_DEVICE_SOCKET},
};

/* ---- probe: scanning ---- */

/* Attribute files of a channel, one bit each. */
enum {
    F_AVERAGE = 1u << 0,
    F_INPUT = 1u << 1,
    F_OEM = 1u << 2,
    F_LABEL = 1u << 3,
    F_INTERVAL = 1u << 4,
};

static const struct hw_attr {
    enum hw_type type;
    const char *suffix;
    unsigned flag;
} hw_attrs[] = {
    {HW_POWER, "_average", F_AVERAGE},
    {HW_POWER, "_input", F_INPUT},
    {HW_POWER, "_oem_info", F_OEM},
    {HW_POWER, "_label", F_LABEL},
    {HW_POWER, "_average_interval", F_INTERVAL},
    {HW_ENERGY, "_input", F_INPUT},
    {HW_ENERGY, "_label", F_LABEL},
};

/* The two places a device's files live. */
enum { SIDE_HWMON, SIDE_DEVICE, SIDES };
static const char *const side_dir[SIDES] = {"", "/device"};

/* Where the label of a channel is looked for, in order. */
static const struct label_src {
    enum hw_type type;
    unsigned flag;
    int side;
} label_srcs[] = {
    {HW_POWER, F_OEM, SIDE_DEVICE},   {HW_POWER, F_OEM, SIDE_HWMON},
    {HW_POWER, F_LABEL, SIDE_HWMON},  {HW_POWER, F_LABEL, SIDE_DEVICE},
    {HW_ENERGY, F_LABEL, SIDE_HWMON}, {HW_ENERGY, F_LABEL, SIDE_DEVICE},
};

/* The files one channel of one device has, per side. */
struct hw_files {
    enum hw_type type;
    unsigned num;
    unsigned have[SIDES];
};

/* A channel found by the scan, before de-duplication and classification. */
struct hw_cand {
    char hwmon[HWMON_DIRNAME_MAX];
    char device[HWMON_DEVNAME_MAX + 1];
    enum hw_type type;
    unsigned num;
    char rel[CHANNEL_PATH_MAX]; /* the value file below the root */
    bool has_label;
    char label[HWMON_TEXT_MAX];
    int64_t window_ns;
    int fd; /* owned until handed to the source's state, -1 when closed */
    dev_t st_dev;
    ino_t st_ino;
    bool dropped;
};

struct hw_scan {
    struct hw_cand *c;
    size_t n, cap;
    size_t devices;  /* hwmon directories seen */
    size_t left_out; /* devices or channels beyond the caps */
    int open_err;    /* first value file that could not be opened */
    char open_rel[CHANNEL_PATH_MAX];
    size_t open_failures;
};

struct hwmon_chan {
    int fd;
    enum hw_type type;
};

struct hwmon_priv {
    size_t n;
    struct hwmon_chan ch[];
};

/* The root as a prefix for messages: "" for "/", so that paths read /sys/... */
static const char *root_prefix(const struct fsroot *root)
{
    return strcmp(root->path, "/") == 0 ? "" : root->path;
}

/* hwmon followed by 1 to 10 digits. */
static bool is_hwmon_dirname(const char *name)
{
    if (strncmp(name, "hwmon", 5) != 0)
        return false;
    size_t n = 0;
    for (const char *p = name + 5; *p; p++, n++)
        if (!ascii_digit(*p))
            return false;
    return n >= 1 && n + 5 < HWMON_DIRNAME_MAX;
}

static int cmp_dirname(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static int cmp_files(const void *a, const void *b)
{
    const struct hw_files *x = a, *y = b;
    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    return x->num < y->num ? -1 : x->num > y->num;
}

/* Parses an attribute file name such as power1_average. Returns false for other files. */
static bool parse_attr_name(const char *name, enum hw_type *type, unsigned *num, unsigned *flag)
{
    for (int t = HW_POWER; t <= HW_ENERGY; t++) {
        size_t pl = strlen(hw_type_prefix[t]);
        if (strncmp(name, hw_type_prefix[t], pl) != 0)
            continue;
        const char *p = name + pl;
        unsigned n = 0;
        size_t digits = 0;
        for (; ascii_digit(*p) && digits < HWMON_CHANNUM_DIGITS; p++, digits++)
            n = n * 10 + (unsigned)(*p - '0');
        if (digits == 0 || ascii_digit(*p))
            return false;
        for (size_t i = 0; i < ARRAY_SIZE(hw_attrs); i++) {
            if (hw_attrs[i].type == (enum hw_type)t && strcmp(p, hw_attrs[i].suffix) == 0) {
                *type = (enum hw_type)t;
                *num = n;
                *flag = hw_attrs[i].flag;
                return true;
            }
        }
        return false;
    }
    return false;
}

/* Copies a device name for use in channel names: [A-Za-z0-9_.-] kept, the rest '_'. */
static void devname_copy(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    for (; src[n] && n + 1 < cap; n++) {
        char c = src[n];
        bool ok = ascii_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                  c == '.' || c == '-';
        dst[n] = ok ? c : '_';
    }
    dst[n] = '\0';
    if (n == 0)
        snprintf(dst, cap, "unknown");
}

/* Reads a small text file below base (side and file name given). Returns its length or
 * a negative errno. */
static ssize_t read_attr(const struct fsroot *root, const char *base, int side, const char *file,
                         char *buf, size_t cap)
{
    char rel[CHANNEL_PATH_MAX];
    int w = snprintf(rel, sizeof rel, "%s%s/%s", base, side_dir[side], file);
    if (w < 0 || (size_t)w >= sizeof rel)
        return -ENAMETOOLONG;
    return fsroot_read_text(root, rel, buf, cap);
}

/* Formats the file name of attribute flag of channel (type, num), e.g. "power1_average". */
static void attr_file(char *buf, size_t cap, enum hw_type type, unsigned num, unsigned flag)
{
    const char *suffix = "";
    for (size_t i = 0; i < ARRAY_SIZE(hw_attrs); i++)
        if (hw_attrs[i].type == type && hw_attrs[i].flag == flag)
            suffix = hw_attrs[i].suffix;
    snprintf(buf, cap, "%s%u%s", hw_type_prefix[type], num, suffix);
}

/* Lists the attribute files of one side of a device into files[0 .. *nf). */
static void scan_side(const struct fsroot *root, const char *base, int side, struct hw_files *files,
                      size_t *nf, size_t *left_out)
{
    char rel[CHANNEL_PATH_MAX];
    snprintf(rel, sizeof rel, "%s%s", base, side_dir[side]);
    DIR *d;
    if (fsroot_open_dir(root, rel, &d) < 0)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        enum hw_type type;
        unsigned num, flag;
        if (!parse_attr_name(de->d_name, &type, &num, &flag))
            continue;
        size_t i = 0;
        while (i < *nf && !(files[i].type == type && files[i].num == num))
            i++;
        if (i == *nf) {
            if (*nf == HWMON_DEV_CHANNELS_MAX) {
                if (flag & (F_AVERAGE | F_INPUT))
                    (*left_out)++;
                continue;
            }
            memset(&files[i], 0, sizeof files[i]);
            files[i].type = type;
            files[i].num = num;
            (*nf)++;
        }
        files[i].have[side] |= flag;
    }
    closedir(d);
}

static int cand_push(struct hw_scan *sc, struct hw_cand **ret)
{
    if (sc->n == sc->cap) {
        if (sc->cap >= CHANNELS_MAX)
            return -ENOSPC;
        size_t cap = sc->cap ? sc->cap * 2 : 16;
        struct hw_cand *c = realloc(sc->c, cap * sizeof *c);
        if (!c)
            return -ENOMEM;
        sc->c = c;
        sc->cap = cap;
    }
    *ret = &sc->c[sc->n++];
    memset(*ret, 0, sizeof **ret);
    (*ret)->fd = -1;
    return 0;
}

/* Makes the candidate of one channel: opens its value file, reads its label and window. */
static int scan_channel(const struct fsroot *root, const char *base, const char *hwmon,
                        const char *device, const struct hw_files *f, struct hw_scan *sc)
{
    static const unsigned value_flags[] = {F_AVERAGE, F_INPUT};
    unsigned vflag = 0;
    int vside = SIDE_HWMON;
    for (size_t i = 0; i < ARRAY_SIZE(value_flags) && !vflag; i++)
        for (int side = SIDE_HWMON; side < SIDES && !vflag; side++)
            if (f->have[side] & value_flags[i]) {
                vflag = value_flags[i];
                vside = side;
            }
    if (!vflag)
        return 0; /* a label without a value */

    struct hw_cand *c;
    int r = cand_push(sc, &c);
    if (r < 0)
        return r;
    snprintf(c->hwmon, sizeof c->hwmon, "%s", hwmon);
    snprintf(c->device, sizeof c->device, "%s", device);
    c->type = f->type;
    c->num = f->num;
    char file[64];
    attr_file(file, sizeof file, f->type, f->num, vflag);
    snprintf(c->rel, sizeof c->rel, "%s%s/%s", base, side_dir[vside], file);

    int fd = fsroot_open_file(root, c->rel);
    if (fd < 0) {
        if (sc->open_failures++ == 0) {
            sc->open_err = fd;
            snprintf(sc->open_rel, sizeof sc->open_rel, "%s", c->rel);
        }
        sc->n--;
        return 0;
    }
    c->fd = fd;
    struct stat st;
    if (fstat(fd, &st) == 0) {
        c->st_dev = st.st_dev;
        c->st_ino = st.st_ino;
    }

    for (size_t i = 0; i < ARRAY_SIZE(label_srcs) && !c->has_label; i++) {
        const struct label_src *ls = &label_srcs[i];
        if (ls->type != f->type || !(f->have[ls->side] & ls->flag))
            continue;
        attr_file(file, sizeof file, f->type, f->num, ls->flag);
        if (read_attr(root, base, ls->side, file, c->label, sizeof c->label) > 0)
            c->has_label = true;
    }
    if (!c->has_label)
        snprintf(c->label, sizeof c->label, "%s%u", hw_type_prefix[f->type], f->num);

    if (vflag == F_AVERAGE) {
        int sides[2] = {vside, vside == SIDE_HWMON ? SIDE_DEVICE : SIDE_HWMON};
        for (int i = 0; i < 2; i++) {
            char buf[HWMON_VALUE_MAX];
            uint64_t ms;
            if (!(f->have[sides[i]] & F_INTERVAL))
                continue;
            attr_file(file, sizeof file, f->type, f->num, F_INTERVAL);
            if (read_attr(root, base, sides[i], file, buf, sizeof buf) >= 0 &&
                parse_u64(buf, &ms) == 0 && ms <= (uint64_t)INT64_MAX / 1000000) {
                c->window_ns = (int64_t)ms * 1000000;
                break;
            }
        }
    }
    return 0;
}

/* Scans one hwmon directory. */
static int scan_device(const struct fsroot *root, const char *hwmon, struct hw_scan *sc)
{
    char base[64];
    snprintf(base, sizeof base, "%s/%s", HWMON_CLASS_DIR, hwmon);

    char name[HWMON_TEXT_MAX] = "";
    if (read_attr(root, base, SIDE_HWMON, "name", name, sizeof name) <= 0 &&
        read_attr(root, base, SIDE_DEVICE, "name", name, sizeof name) <= 0)
        name[0] = '\0';
    char device[HWMON_DEVNAME_MAX + 1];
    devname_copy(device, sizeof device, name);

    struct hw_files files[HWMON_DEV_CHANNELS_MAX];
    size_t nf = 0;
    for (int side = SIDE_HWMON; side < SIDES; side++)
        scan_side(root, base, side, files, &nf, &sc->left_out);
    qsort(files, nf, sizeof files[0], cmp_files);

    for (size_t i = 0; i < nf; i++) {
        int r = scan_channel(root, base, hwmon, device, &files[i], sc);
        if (r == -ENOSPC) {
            sc->left_out++;
            continue;
        }
        if (r < 0)
            return r;
    }
    return 0;
}

/* Lists sys/class/hwmon/hwmon* in lexicographic order and scans each. */
static int scan_all(struct source *s, const struct fsroot *root, struct hw_scan *sc)
{
    DIR *d;
    int r = fsroot_open_dir(root, HWMON_CLASS_DIR, &d);
    if (r == -ENOENT || r == -ENOTDIR) {
        note_add(s->reason, sizeof s->reason, "no hwmon devices found: %s/%s does not exist",
                 root_prefix(root), HWMON_CLASS_DIR);
        return -ENOENT;
    }
    if (r < 0) {
        note_add(s->reason, sizeof s->reason, "cannot list %s/%s: %s", root_prefix(root),
                 HWMON_CLASS_DIR, strerror(-r));
        return r;
    }
    char names[HWMON_DEVICES_MAX][HWMON_DIRNAME_MAX];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!is_hwmon_dirname(de->d_name))
            continue;
        if (n == HWMON_DEVICES_MAX) {
            sc->left_out++;
            continue;
        }
        memcpy(names[n++], de->d_name, strlen(de->d_name) + 1); /* fits: is_hwmon_dirname */
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_dirname);
    sc->devices = n;
    for (size_t i = 0; i < n; i++) {
        r = scan_device(root, names[i], sc);
        if (r < 0) {
            note_add(s->reason, sizeof s->reason, "scanning %s/%s/%s: %s", root_prefix(root),
                     HWMON_CLASS_DIR, names[i], strerror(-r));
            return r;
        }
    }
    return 0;
}

static void cand_drop(struct hw_cand *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->dropped = true;
}

/* One channel per value file: of two aliases, the one with a label wins, else the first. */
static void dedup(struct hw_scan *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        struct hw_cand *ci = &sc->c[i];
        if (ci->dropped || (ci->st_dev == 0 && ci->st_ino == 0))
            continue;
        for (size_t j = 0; j < i; j++) {
            struct hw_cand *cj = &sc->c[j];
            if (cj->dropped || cj->st_dev != ci->st_dev || cj->st_ino != ci->st_ino)
                continue;
            if (ci->has_label && !cj->has_label)
                cand_drop(cj);
            else
                cand_drop(ci);
            break;
        }
    }
}

/* Kept power channels of the device of candidate i. */
static size_t device_power_channels(const struct hw_scan *sc, size_t i)
{
    size_t n = 0;
    for (size_t j = 0; j < sc->n; j++)
        if (!sc->c[j].dropped && sc->c[j].type == HW_POWER &&
            strcmp(sc->c[j].hwmon, sc->c[i].hwmon) == 0)
            n++;
    return n;
}

/* label is prefix followed by 1 to 6 digits; writes the number. */
static bool label_numbered(const char *label, const char *prefix, int *ret)
{
    size_t pl = strlen(prefix);
    if (strncmp(label, prefix, pl) != 0)
        return false;
    const char *p = label + pl;
    int v = 0;
    size_t digits = 0;
    for (; ascii_digit(*p) && digits < 6; p++, digits++)
        v = v * 10 + (*p - '0');
    if (digits == 0 || *p)
        return false;
    *ret = v;
    return true;
}

/* What candidate i is. */
static void classify(const struct hw_scan *sc, size_t i, struct role *ret)
{
    const struct hw_cand *c = &sc->c[i];
    struct role r = {KIND_OTHER, "other", DOMAIN_COMPONENT, -1, NAME_DEVICE, LINK_NONE};
    bool power_meter = strcmp(c->device, "power_meter") == 0;

    if (power_meter && c->type == HW_POWER) {
        enum hwmon_oem_kind k;
        int socket;
        if (c->has_label && hwmon_classify_oem(c->label, &k, &socket) == 1) {
            r.kind = oem_roles[k].kind;
            r.zone = oem_roles[k].zone;
            r.domain = k == HWMON_OEM_TOTAL ? DOMAIN_TOTAL : DOMAIN_COMPONENT;
            r.socket = socket;
            r.naming = NAME_SOCKET;
            r.link = k == HWMON_OEM_TOTAL ? LINK_NONE : LINK_SOCKET_TOTAL;
        } else if (!c->has_label && device_power_channels(sc, i) == 1) {
            r.kind = KIND_SYSTEM;
            r.zone = "system";
            r.domain = DOMAIN_TOTAL;
            r.naming = NAME_SYSTEM;
        }
        *ret = r;
        return;
    }
    for (size_t k = 0; k < ARRAY_SIZE(dev_rules); k++) {
        const struct dev_rule *dr = &dev_rules[k];
        int num = -1;
        if (strcmp(c->device, dr->device) != 0 || c->type != dr->type)
            continue;
        if (dr->label_prefix && !(c->has_label && label_numbered(c->label, dr->label_prefix, &num)))
            continue;
        r.kind = dr->kind;
        r.zone = dr->zone;
        r.domain = dr->domain;
        r.link = dr->link;
        if (dr->label_prefix && dr->link == LINK_NONE)
            r.socket = num;
        break;
    }
    *ret = r;
}

/* True when name is already used in the set. */
static bool name_taken(const struct channel_set *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->ch[i].name, name) == 0)
            return true;
    return false;
}

/* Writes the channel name; a name already taken gets ".<hwmonX>.<powerN>" appended. */
static void channel_name(const struct channel_set *set, const struct hw_cand *c,
                         const struct role *r, char *buf, size_t cap)
{
    switch (r->naming) {
    case NAME_SOCKET:
        snprintf(buf, cap, "hwmon/power_meter/socket%d/%s", r->socket, r->zone);
        break;
    case NAME_SYSTEM:
        snprintf(buf, cap, "hwmon/power_meter/%s", c->hwmon);
        break;
    case NAME_DEVICE:
        snprintf(buf, cap, "hwmon/%s/%s/%s%u", c->device, c->hwmon, hw_type_prefix[c->type],
                 c->num);
        break;
    }
    if (name_taken(set, buf)) {
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, ".%s.%s%u", c->hwmon, hw_type_prefix[c->type], c->num);
    }
}

/* Copies a label into a channel, control characters made spaces. */
static void label_copy(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    for (; src[n] && n + 1 < cap; n++)
        dst[n] = (unsigned char)src[n] < 0x20 || src[n] == 0x7f ? ' ' : src[n];
    dst[n] = '\0';
}

/* Per added channel: how its parent is found. */
struct added {
    size_t cand;
    enum link link;
};

/* Index in the set of the first OEM total of socket, or -1. */
static int socket_total(const struct channel_set *set, size_t first, size_t n, int socket)
{
    for (size_t i = first; i < first + n; i++) {
        const struct channel *ch = &set->ch[i];
        if (ch->domain == DOMAIN_TOTAL && ch->socket == socket && strcmp(ch->zone, "total") == 0)
            return (int)i;
    }
    return -1;
}

/* Resolves the parents of the channels added, and warns of rails without a socket total. */
static void link_parents(struct source *s, struct channel_set *set, const struct hw_scan *sc,
                         const struct added *added)
{
    int missing[16];
    size_t n_missing = 0;
    for (size_t i = 0; i < s->count; i++) {
        struct channel *ch = &set->ch[s->first + i];
        const struct hw_cand *c = &sc->c[added[i].cand];
        int parent = -1;
        switch (added[i].link) {
        case LINK_NONE:
            break;
        case LINK_SOCKET_TOTAL:
            parent = socket_total(set, s->first, s->count, ch->socket);
            if (parent < 0) {
                size_t k = 0;
                while (k < n_missing && missing[k] != ch->socket)
                    k++;
                if (k == n_missing && n_missing < ARRAY_SIZE(missing))
                    missing[n_missing++] = ch->socket;
            }
            break;
        case LINK_DEVICE_FIRST:
        case LINK_DEVICE_SOCKET: {
            size_t found = 0;
            for (size_t j = 0; j < s->count; j++) {
                const struct channel *o = &set->ch[s->first + j];
                if (j == i || strcmp(sc->c[added[j].cand].hwmon, c->hwmon) != 0 ||
                    o->domain != DOMAIN_TOTAL || o->kind != ch->kind)
                    continue;
                if (added[i].link == LINK_DEVICE_FIRST) {
                    if (j < i) {
                        parent = (int)(s->first + j);
                        break;
                    }
                    continue;
                }
                found++;
                parent = (int)(s->first + j);
            }
            if (added[i].link == LINK_DEVICE_SOCKET && found != 1)
                parent = -1;
            if (added[i].link == LINK_DEVICE_SOCKET && parent >= 0)
                ch->socket = set->ch[parent].socket;
            break;
        }
        }
        if (added[i].link == LINK_DEVICE_FIRST && parent >= 0)
            ch->domain = DOMAIN_COMPONENT;
        ch->parent = parent;
    }
    if (n_missing) {
        char list[128] = "";
        size_t len = 0;
        for (size_t k = 0; k < n_missing && len < sizeof list; k++) {
            int w = snprintf(list + len, sizeof list - len, "%s%d", k ? ", " : "", missing[k]);
            if (w < 0)
                break;
            len += (size_t)w;
        }
        note_add(s->reason, sizeof s->reason,
                 "power_meter reports CPU/SoC/DRAM rails but no socket total for socket%s %s: "
                 "the rails are kept as components, but there is no CPU figure for %s",
                 n_missing == 1 ? "" : "s", list, n_missing == 1 ? "that socket" : "those sockets");
    }
}

/* Adds the kept candidates to the set and hands their fds to the source's state. */
static void add_channels(struct source *s, struct probe_ctx *ctx, struct hw_scan *sc,
                         struct added *added)
{
    struct channel_set *set = ctx->set;
    struct hwmon_priv *p = s->priv;
    size_t full = 0;
    for (size_t i = 0; i < sc->n; i++) {
        struct hw_cand *c = &sc->c[i];
        if (c->dropped)
            continue;
        struct role r;
        classify(sc, i, &r);
        if (r.naming == NAME_SOCKET && r.domain == DOMAIN_TOTAL &&
            socket_total(set, s->first, s->count, r.socket) >= 0) {
            /* Another naming of a socket total already seen: part of it, never added. */
            r.domain = DOMAIN_COMPONENT;
            r.link = LINK_SOCKET_TOTAL;
        }
        char name[CHANNEL_NAME_MAX];
        channel_name(set, c, &r, name, sizeof name);
        int idx = channel_set_add(set);
        if (idx < 0) {
            full++;
            continue;
        }
        struct channel *ch = &set->ch[idx];
        snprintf(ch->name, sizeof ch->name, "%s", name);
        ch->source = "hwmon";
        ch->kind = r.kind;
        snprintf(ch->zone, sizeof ch->zone, "%s", r.zone);
        label_copy(ch->label, sizeof ch->label, c->label);
        ch->socket = r.socket;
        ch->domain = r.domain;
        ch->parent = -1;
        ch->method = METHOD_MEASURED;
        snprintf(ch->path, sizeof ch->path, "%s", c->rel);
        if (c->type == HW_POWER) {
            ch->form = FORM_GAUGE;
            ch->gauge_window_ns = c->window_ns;
        } else {
            ch->form = FORM_COUNTER;
            ch->counter_unit_j = 1e-6;
            ch->counter_range = 0;
        }
        added[s->count].cand = i;
        added[s->count].link = r.link;
        p->ch[p->n].fd = c->fd;
        p->ch[p->n].type = c->type;
        p->n++;
        c->fd = -1;
        s->count++;
    }
    if (full)
        note_add(s->reason, sizeof s->reason,
                 "the channel set is full: %zu hwmon channels were left out", full);
}

static void hwmon_close(struct source *s)
{
    struct hwmon_priv *p = s->priv;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        if (p->ch[i].fd >= 0)
            close(p->ch[i].fd);
    free(p);
    s->priv = NULL;
}

/*
 * Finds the hwmon power and energy channels below ctx->root and appends them to ctx->set.
 * Returns the number of channels added; -ENOENT when there is no sys/class/hwmon; 0 when no
 * device reports power or energy; -EACCES (or the open error) when every value file found
 * could not be opened. s->reason says why in those cases; when channels were added, s->note
 * carries the warnings instead: value files skipped, rails without a socket total, caps
 * reached, counters that duplicate RAPL.
 */
static int hwmon_probe(struct source *s, struct probe_ctx *ctx)
{
    struct hw_scan sc = {0};
    struct added *added = NULL;
    int ret;

    s->priv = NULL;
    s->first = ctx->set->n;
    s->count = 0;
    s->reason[0] = '\0';

    ret = scan_all(s, ctx->root, &sc);
    if (ret < 0)
        goto out;
    dedup(&sc);

    size_t kept = 0;
    for (size_t i = 0; i < sc.n; i++)
        kept += !sc.c[i].dropped;
    struct hwmon_priv *p = malloc(sizeof *p + kept * sizeof p->ch[0]);
    added = malloc((kept ? kept : 1) * sizeof *added);
    if (!p || !added) {
        free(p);
        note_add(s->reason, sizeof s->reason, "out of memory");
        ret = -ENOMEM;
        goto out;
    }
    p->n = 0;
    s->priv = p;
    add_channels(s, ctx, &sc, added);
    link_parents(s, ctx->set, &sc, added);

    if (sc.open_failures) {
        const char *fix =
            sc.open_err == -EACCES ? " (run carma as root, or grant read access to the file)" : "";
        if (sc.open_err == -ESPIPE)
            note_add(s->reason, sizeof s->reason, "%s/%s is not a regular file (%s)",
                     root_prefix(ctx->root), sc.open_rel,
                     file_kind_at(ctx->root->dirfd, sc.open_rel));
        else
            note_add(s->reason, sizeof s->reason, "cannot open %s/%s: %s%s", root_prefix(ctx->root),
                     sc.open_rel, strerror(-sc.open_err), fix);
        if (sc.open_failures > 1)
            note_add(s->reason, sizeof s->reason, "%zu more hwmon value file%s could not be opened",
                     sc.open_failures - 1, sc.open_failures == 2 ? "" : "s");
    }
    if (sc.left_out)
        note_add(s->reason, sizeof s->reason,
                 "%zu hwmon devices or channels beyond carma's limits were left out", sc.left_out);

    if (s->count > 0 && ctx->have_measured_cpu) {
        /* amd_energy / zenpower socket counters read the same RAPL MSRs as the rapl source:
         * with rapl present they are shown beside it but never added again */
        size_t demoted = 0;
        for (size_t i = s->first; i < s->first + s->count; i++) {
            struct channel *c = &ctx->set->ch[i];
            if (c->kind == KIND_CPU && c->domain == DOMAIN_TOTAL &&
                strcmp(c->zone, "package") == 0) {
                c->domain = DOMAIN_COMPONENT;
                demoted++;
            }
        }
        if (demoted)
            note_add(s->reason, sizeof s->reason,
                     "%zu amd_energy/zenpower socket counter%s duplicate%s the RAPL packages: "
                     "shown as component%s, not added again",
                     demoted, demoted == 1 ? "" : "s", demoted == 1 ? "s" : "",
                     demoted == 1 ? "" : "s");
    }
    if (s->count > 0) {
        ret = (int)s->count;
        /* on success what was collected is a warning for the user, not a reason */
        snprintf(s->note, sizeof s->note, "%s", s->reason);
        s->reason[0] = '\0';
    } else if (sc.open_failures) {
        ret = sc.open_err;
    } else if (kept > 0) {
        ret = -ENOSPC;
    } else {
        if (sc.devices == 0)
            note_add(s->reason, sizeof s->reason, "%s/%s lists no hwmon devices",
                     root_prefix(ctx->root), HWMON_CLASS_DIR);
        else
            note_add(s->reason, sizeof s->reason,
                     "%zu hwmon device%s, none reports power or energy", sc.devices,
                     sc.devices == 1 ? "" : "s");
        ret = 0;
    }
out:
    for (size_t i = 0; i < sc.n; i++)
        if (sc.c[i].fd >= 0)
            close(sc.c[i].fd);
    free(sc.c);
    free(added);
    if (ret <= 0)
        hwmon_close(s);
    return ret;
}

/* Fills out[0 .. s->count): a value that cannot be read or parsed is invalid, with its error. */
static void hwmon_read(struct source *s, struct reading *out)
{
    const struct hwmon_priv *p = s->priv;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        struct reading *r = &out[i];
        char buf[HWMON_VALUE_MAX];
        uint64_t v;
        r->valid = 0;
        r->energy_raw = 0;
        r->power_w = 0;
        ssize_t n = fsroot_pread_text(p->ch[i].fd, buf, sizeof buf);
        if (n < 0) {
            r->err = n == -EFBIG ? -EINVAL : (int)n;
            continue;
        }
        if (parse_u64(buf, &v) < 0) {
            r->err = -EINVAL;
            continue;
        }
        r->err = 0;
        if (p->ch[i].type == HW_POWER) {
            r->power_w = (double)v / 1e6;
            r->valid = READING_POWER;
        } else {
            r->energy_raw = v;
            r->valid = READING_ENERGY;
        }
    }
}

const struct source_ops hwmon_source_ops = {
    .name = "hwmon",
    .probe = hwmon_probe,
    .read = hwmon_read,
    .close = hwmon_close,
};
