/*
 * libFuzzer harness for the hwmon source's labels (sources/hwmon): hwmon_classify_oem, the
 * NVIDIA Grace OEM label rules, and the probe and read of a power_meter device whose files the
 * input writes.
 *
 * - hwmon_classify_oem on the whole input and on each of its lines: the kind is one of the
 *   enum's and has a name, the socket is in [0, HWMON_SOCKET_MAX] when classified and -1 when
 *   not, and both equal a reference classification: the label lower-cased with its whitespace
 *   runs made one space, each needle of hwmon.c's table looked up with strstr in that order,
 *   the first whose first occurrence has a number within range after it wins;
 * - a device: the input's first line is hwmon0/name, then pairs of lines are powerN_oem_info
 *   (under device/) and powerN_average (N = 1..8) in a fresh temporary root; the source is
 *   probed and read once: every channel has a name, a kind and a zone, at most one channel per
 *   value file, and each power reading equals a reference parse of its file (trimmed ASCII
 *   digits, no NUL, within 64 bits) divided by 1e6.
 *
 * hwmon.c is included (not listed below) for its needle table.
 *
 * fuzz-sources: src/sources/source.c src/sources/rapl.c src/sources/nvml.c src/sources/note.c
 * fuzz-sources: src/sources/dcgm.c src/sources/dynlib.c
 * fuzz-sources: src/sources/estimate.c src/sources/modelfile.c src/core/array.c src/core/csv.c
 * fuzz-sources: src/core/err.c src/core/file.c src/core/fmt.c src/core/fsroot.c
 * fuzz-sources: src/core/parse.c src/core/table.c build-fuzz/embedded_data.c
 * fuzz-sources: src/sources/channel.c src/core/channel_kind.c
 * fuzz-sources: src/core/iso8601.c src/core/jsonutil.c src/core/timeutil.c
 * fuzz-libs: -ljansson -lpthread -ldl
 */
#include "fuzz_file.h"
#include "sources/hwmon.c"

#include <ctype.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#define CH_MAX 8

static void ref_classify(const char *label, enum hwmon_oem_kind *kind, int *socket)
{
    size_t n = strlen(label);
    char *norm = malloc(n + 1);
    if (!norm)
        abort();
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = label[i];
        bool sp = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
        if (sp) {
            if (k == 0 || norm[k - 1] != ' ')
                norm[k++] = ' ';
            continue;
        }
        norm[k++] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
    }
    norm[k] = '\0';
    for (size_t i = 0; i < ARRAY_SIZE(oem_needles); i++) {
        const char *hit = strstr(norm, oem_needles[i].needle);
        if (!hit)
            continue;
        const char *d = hit + strlen(oem_needles[i].needle);
        if (*d < '0' || *d > '9')
            continue;
        uint64_t v = 0;
        for (; *d >= '0' && *d <= '9'; d++)
            v = v > 1000000 ? v : v * 10 + (uint64_t)(*d - '0');
        if (v > HWMON_SOCKET_MAX)
            continue;
        *kind = oem_needles[i].kind;
        *socket = (int)v;
        free(norm);
        return;
    }
    *kind = HWMON_OEM_OTHER;
    *socket = -1;
    free(norm);
}

static void check_label(const char *label)
{
    enum hwmon_oem_kind kind = (enum hwmon_oem_kind)77, want_kind;
    int socket = -77, want_socket;
    int r = hwmon_classify_oem(label, &kind, &socket);
    if (r != 0 && r != 1)
        abort();
    if ((unsigned)kind > HWMON_OEM_OTHER || !hwmon_oem_kind_name(kind))
        abort();
    if (r == 1 ? (socket < 0 || socket > HWMON_SOCKET_MAX || kind == HWMON_OEM_OTHER)
               : (socket != -1 || kind != HWMON_OEM_OTHER))
        abort();
    ref_classify(label, &want_kind, &want_socket);
    if (kind != want_kind || socket != want_socket) {
        fprintf(stderr, "'%s': %s socket %d, reference %s socket %d\n", label,
                hwmon_oem_kind_name(kind), socket, hwmon_oem_kind_name(want_kind), want_socket);
        abort();
    }
}

static const char *root; /* fuzz_root() */

static void put(const char *rel, const char *data, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        abort();
    if (len && write(fd, data, len) != (ssize_t)len)
        abort();
    close(fd);
}

static void drop(const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    unlink(path);
}

/* The reference reading of a value file: trimmed decimal digits, µW; a file of HWMON_VALUE_MAX
 * bytes or more is no reading (a u64, zero padding and a newline fit well below it). */
static bool ref_value(const char *data, size_t len, double *w)
{
    if (len >= HWMON_VALUE_MAX || memchr(data, '\0', len))
        return false;
    size_t b = 0, e = len;
    while (b < e && isspace((unsigned char)data[b]))
        b++;
    while (e > b && isspace((unsigned char)data[e - 1]))
        e--;
    if (b == e)
        return false;
    uint64_t v = 0;
    for (size_t i = b; i < e; i++) {
        if (data[i] < '0' || data[i] > '9')
            return false;
        unsigned d = (unsigned)(data[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *w = (double)v / 1e6;
    return true;
}

static void check_device(const char *text, size_t size)
{
    /* lines: [0] the device name, then label and value of power1.. */
    const char *line[1 + 2 * CH_MAX];
    size_t len[1 + 2 * CH_MAX], n = 0;
    const char *p = text, *end = text + size;
    while (n < 1 + 2 * CH_MAX && p <= end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        line[n] = p;
        len[n] = (size_t)((nl ? nl : end) - p);
        n++;
        if (!nl)
            break;
        p = nl + 1;
    }
    put("sys/class/hwmon/hwmon0/name", line[0], len[0]);
    double want[CH_MAX];
    bool have[CH_MAX] = {false};
    for (int c = 0; c < CH_MAX; c++) {
        char lab[64], val[64];
        snprintf(lab, sizeof lab, "sys/class/hwmon/hwmon0/device/power%d_oem_info", c + 1);
        snprintf(val, sizeof val, "sys/class/hwmon/hwmon0/power%d_average", c + 1);
        size_t li = 1 + 2 * (size_t)c, vi = li + 1;
        if (li < n && len[li])
            put(lab, line[li], len[li]);
        else
            drop(lab);
        if (vi < n) {
            put(val, line[vi], len[vi]);
            have[c] = ref_value(line[vi], len[vi], &want[c]);
        } else {
            drop(val);
        }
    }

    struct fsroot r;
    struct carma_err e = {0};
    if (fsroot_open(&r, root, &e) != 0)
        abort();
    static struct channel_set set;
    set.n = 0;
    struct source s;
    memset(&s, 0, sizeof s);
    s.ops = &hwmon_source_ops;
    struct probe_ctx ctx = {.root = &r, .set = &set};
    int ret = hwmon_source_ops.probe(&s, &ctx);
    if (ret > 0) {
        if (s.count != (size_t)ret || s.first + s.count > set.n || s.count > CH_MAX)
            abort();
        struct reading out[CH_MAX];
        memset(out, 0x5a, sizeof out);
        hwmon_source_ops.read(&s, out);
        const struct hwmon_priv *hp = s.priv;
        for (size_t i = 0; i < s.count; i++) {
            const struct channel *ch = &set.ch[s.first + i];
            if (!ch->name[0] || !channel_kind_name(ch->kind) || !channel_domain_name(ch->domain))
                abort();
            for (size_t j = 0; j < i; j++)
                if (strcmp(set.ch[s.first + j].name, ch->name) == 0)
                    abort();
            /* which powerN_average the channel reads: by inode */
            struct stat st;
            unsigned num = 0;
            if (hp->ch[i].type != HW_POWER || fstat(hp->ch[i].fd, &st) != 0)
                abort();
            for (unsigned c = 1; c <= CH_MAX && !num; c++) {
                char path[256];
                struct stat vs;
                snprintf(path, sizeof path, "%s/sys/class/hwmon/hwmon0/power%u_average", root, c);
                if (stat(path, &vs) == 0 && vs.st_ino == st.st_ino && vs.st_dev == st.st_dev)
                    num = c;
            }
            if (!num)
                abort();
            bool valid = out[i].valid & READING_POWER;
            if (valid != have[num - 1] || (valid && out[i].power_w != want[num - 1])) {
                fprintf(stderr, "power%u: valid %d %.17g, reference %d %.17g\n", num, valid,
                        out[i].power_w, have[num - 1], have[num - 1] ? want[num - 1] : 0.0);
                abort();
            }
        }
    } else if (!s.reason[0]) {
        abort(); /* no channel: the reason is said */
    }
    hwmon_source_ops.close(&s);
    if (s.priv)
        abort();
    fsroot_close(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root) {
        /* a tmpfs when there is one: the files are rewritten on every input */
        root = fuzz_root("hwmon");
        char path[128];
        static const char *const dirs[] = {"sys", "sys/class", "sys/class/hwmon",
                                           "sys/class/hwmon/hwmon0",
                                           "sys/class/hwmon/hwmon0/device"};
        for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
            snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
            mkdir(path, 0755);
        }
    }
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    check_label(text);
    for (char *p = text; p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        check_label(p);
        if (nl)
            *nl = '\n';
        p = nl ? nl + 1 : NULL;
    }
    check_device(text, size);
    free(text);
    return 0;
}
