/*
 * carma-plant: a simulated power plant for the integration tests.
 *
 * It keeps a copy of a fixture sysfs/procfs tree "live": RAPL-style energy counters (µJ, with
 * wraps and optional resets) and hwmon-style power gauges (µW) advance from a power model
 * driven by the real CPU utilization of this machine, and the real /proc/stat is mirrored into
 * the tree. carma pointed at the tree with --root therefore sees real-looking sensors whose
 * ground truth is known: every period the plant appends the exact energy it put into each
 * channel to a CSV truth log.
 *
 *   carma-plant --tree DIR --config FILE --truth FILE [--period 5ms] [--duration SECONDS]
 *               [--pidfile FILE]
 *
 * Config directives (one per line, '#' starts a comment):
 *   counter NAME RELPATH IDLE_W MAX_W [RANGE_UJ]   energy counter in µJ, wraps at RANGE_UJ
 *   gauge   NAME RELPATH IDLE_W MAX_W              power gauge in µW
 *   stat    RELPATH                                mirror of the real /proc/stat
 *   reset   NAME AT_SECONDS                        counter NAME drops to 0 at AT_SECONDS
 *
 * Files are never recreated (carma keeps its fds open and preads at offset 0): values are
 * overwritten in place with fixed-width zero-padded decimals, so a reader never sees a short
 * file. Power model: P = IDLE_W + (MAX_W - IDLE_W) * u, u = busy fraction of all CPUs from the
 * real /proc/stat. A counter's dynamic energy is (MAX_W - IDLE_W) x the CPU-seconds of load
 * counted by /proc/stat's clock ticks since the last step, divided by the number of CPUs; a
 * gauge shows u over the last ~50 ms. The truth log holds exactly what was written.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PLANT_MAX_CHANNELS 64
#define PLANT_MAX_MIRRORS  8
#define PLANT_NAME_MAX     64
#define PLANT_PATH_MAX     512
#define PLANT_WINDOW_NS    50000000LL /* utilization smoothing window */
#define PLANT_RING         1024       /* stat snapshots kept for the window */
#define PLANT_STAT_MAX     (4 << 20)  /* cap on the size of /proc/stat we copy */

enum chan_kind {
    CHAN_COUNTER,
    CHAN_GAUGE,
};

struct chan {
    enum chan_kind kind;
    char name[PLANT_NAME_MAX];
    char relpath[PLANT_PATH_MAX];
    double idle_w;
    double max_w;
    uint64_t range_uj; /* wrap range of a counter; 0: wraps at 2^64 */
    int fd;
    double true_uj;     /* energy since start, unwrapped, ignoring resets */
    double dyn_uj;      /* integral of (P - idle) since start */
    uint64_t origin_uj; /* counter value shown when true_uj == offset_uj */
    double offset_uj;   /* true_uj at the last reset (0 before any) */
    double reset_at_s;  /* < 0: no reset scheduled */
    bool reset_done;
    int line; /* config line, for messages */
};

struct mirror {
    char relpath[PLANT_PATH_MAX];
    int fd;
};

struct cpu_snap {
    int64_t t_ns;
    uint64_t busy;
    uint64_t total;
};

struct plant {
    const char *tree_dir;
    const char *config_path;
    const char *truth_path;
    const char *pidfile;
    int64_t period_ns;
    double duration_s; /* <= 0: until signalled */

    int tree_fd;
    int stat_fd; /* the real /proc/stat */
    char *stat_buf;
    size_t stat_cap;
    size_t stat_len;
    FILE *truth;

    struct chan chans[PLANT_MAX_CHANNELS];
    size_t n_chans;
    struct mirror mirrors[PLANT_MAX_MIRRORS];
    size_t n_mirrors;

    struct cpu_snap ring[PLANT_RING];
    size_t ring_head; /* index of the newest snapshot */
    size_t ring_len;
    double ncpu; /* cpuN lines of the real /proc/stat */
    double hz;   /* clock ticks per second */
    double util;

    int64_t t0_ns;   /* monotonic start */
    int64_t last_ns; /* monotonic time of the last step */
};

static volatile sig_atomic_t plant_stop;

static void on_signal(int sig)
{
    (void)sig;
    plant_stop = 1;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
    va_list ap;

    fputs("carma-plant: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static int64_t now_ns(clockid_t clk)
{
    struct timespec ts;

    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void usage(void)
{
    fputs("usage: carma-plant --tree DIR --config FILE --truth FILE [--period 5ms]\n"
          "                   [--duration SECONDS] [--pidfile FILE]\n",
          stderr);
    exit(2);
}

/* Parses a duration such as "5ms", "500us", "0.01s", "2" (seconds) into ns; -1 if invalid. */
static int64_t parse_duration_ns(const char *s)
{
    char *end;
    double v, scale = 1e9;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || errno != 0 || !isfinite(v) || v < 0)
        return -1;
    if (strcmp(end, "ns") == 0)
        scale = 1;
    else if (strcmp(end, "us") == 0)
        scale = 1e3;
    else if (strcmp(end, "ms") == 0)
        scale = 1e6;
    else if (strcmp(end, "s") == 0 || *end == '\0')
        scale = 1e9;
    else
        return -1;
    if (v * scale > 1e18)
        return -1;
    return (int64_t)llround(v * scale);
}

static bool parse_double(const char *s, double *ret)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v))
        return false;
    *ret = v;
    return true;
}

static bool parse_u64(const char *s, uint64_t *ret)
{
    char *end;
    unsigned long long v;

    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (end == s || errno != 0)
        return false;
    while (*end == ' ' || *end == '\n' || *end == '\t')
        end++;
    if (*end != '\0')
        return false;
    *ret = v;
    return true;
}

/* Writes all of buf at offset 0 of fd; false on error. */
static bool pwrite_all(int fd, const char *buf, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = pwrite(fd, buf + off, len - off, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        off += (size_t)n;
    }
    return true;
}

/* Reads the small file at fd (from offset 0) into buf, NUL-terminated; length or -1. */
static ssize_t pread_small(int fd, char *buf, size_t cap)
{
    ssize_t n = pread(fd, buf, cap - 1, 0);

    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

static bool path_is_safe(const char *p)
{
    const char *s = p;

    if (*p == '\0' || *p == '/')
        return false;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == 2 && s[0] == '.' && s[1] == '.')
            return false;
        if (!e)
            break;
        s = e + 1;
    }
    return true;
}

static int open_in_tree(struct plant *p, const char *relpath, int flags, int line)
{
    int fd;

    if (!path_is_safe(relpath))
        die("%s:%d: path '%s' must be relative to the tree, without '..'", p->config_path, line,
            relpath);
    fd = openat(p->tree_fd, relpath, flags | O_CLOEXEC);
    if (fd < 0)
        die("%s:%d: cannot open %s/%s: %s", p->config_path, line, p->tree_dir, relpath,
            strerror(errno));
    return fd;
}

static struct chan *find_chan(struct plant *p, const char *name)
{
    for (size_t i = 0; i < p->n_chans; i++)
        if (strcmp(p->chans[i].name, name) == 0)
            return &p->chans[i];
    return NULL;
}

static bool name_is_valid(const char *name)
{
    if (*name == '\0' || strlen(name) >= PLANT_NAME_MAX)
        return false;
    for (const char *c = name; *c; c++)
        if (*c == ',' || *c == '"' || (unsigned char)*c < 0x21)
            return false;
    return true;
}

/* Sets up a counter: learns its start value and wrap range from the tree, or imposes the
 * configured range by writing it into the sibling max_energy_range_uj. */
static void counter_init(struct plant *p, struct chan *c, bool range_given)
{
    char path[PLANT_PATH_MAX + 32];
    char buf[64];
    const char *slash = strrchr(c->relpath, '/');
    int dirlen = slash ? (int)(slash - c->relpath) : 0;
    uint64_t start = 0;
    int rfd;

    if (slash)
        snprintf(path, sizeof(path), "%.*s/max_energy_range_uj", dirlen, c->relpath);
    else
        snprintf(path, sizeof(path), "max_energy_range_uj");

    if (range_given) {
        int len = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", c->range_uj);
        rfd = open_in_tree(p, path, O_WRONLY, c->line);
        if (!pwrite_all(rfd, buf, (size_t)len) || ftruncate(rfd, len) < 0)
            die("%s:%d: cannot write %s/%s: %s", p->config_path, c->line, p->tree_dir, path,
                strerror(errno));
        close(rfd);
    } else {
        rfd = openat(p->tree_fd, path, O_RDONLY | O_CLOEXEC);
        if (rfd >= 0) {
            uint64_t r;
            if (pread_small(rfd, buf, sizeof(buf)) > 0 && parse_u64(buf, &r) && r > 0)
                c->range_uj = r;
            close(rfd);
        }
    }

    if (pread_small(c->fd, buf, sizeof(buf)) > 0)
        (void)parse_u64(buf, &start); /* an unreadable start value counts as 0 */
    if (c->range_uj)
        start %= c->range_uj;
    c->origin_uj = start;
}

static void parse_config(struct plant *p)
{
    FILE *f = fopen(p->config_path, "re");
    char line[2048];
    int lineno = 0;

    if (!f)
        die("%s: %s", p->config_path, strerror(errno));

    while (fgets(line, sizeof(line), f)) {
        char *argv[8];
        int argc = 0;
        char *save = NULL, *tok, *hash;

        lineno++;
        if (!strchr(line, '\n') && !feof(f))
            die("%s:%d: line too long", p->config_path, lineno);
        hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        for (tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
            if (argc == 8)
                die("%s:%d: too many fields", p->config_path, lineno);
            argv[argc++] = tok;
        }
        if (argc == 0)
            continue;

        if (strcmp(argv[0], "counter") == 0 || strcmp(argv[0], "gauge") == 0) {
            bool counter = argv[0][0] == 'c';
            struct chan *c;
            bool range_given = false;

            if (counter ? (argc != 5 && argc != 6) : argc != 5)
                die("%s:%d: expected '%s NAME RELPATH IDLE_W MAX_W%s'", p->config_path, lineno,
                    argv[0], counter ? " [RANGE_UJ]" : "");
            if (p->n_chans == PLANT_MAX_CHANNELS)
                die("%s:%d: more than %d channels", p->config_path, lineno, PLANT_MAX_CHANNELS);
            if (!name_is_valid(argv[1]))
                die("%s:%d: bad channel name '%s'", p->config_path, lineno, argv[1]);
            if (find_chan(p, argv[1]))
                die("%s:%d: channel '%s' defined twice", p->config_path, lineno, argv[1]);
            if (strlen(argv[2]) >= PLANT_PATH_MAX)
                die("%s:%d: path too long", p->config_path, lineno);
            c = &p->chans[p->n_chans];
            memset(c, 0, sizeof(*c));
            c->kind = counter ? CHAN_COUNTER : CHAN_GAUGE;
            c->line = lineno;
            c->reset_at_s = -1;
            snprintf(c->name, sizeof(c->name), "%s", argv[1]);
            snprintf(c->relpath, sizeof(c->relpath), "%s", argv[2]);
            if (!parse_double(argv[3], &c->idle_w) || !parse_double(argv[4], &c->max_w) ||
                c->idle_w < 0 || c->max_w < c->idle_w)
                die("%s:%d: need 0 <= IDLE_W <= MAX_W (watts)", p->config_path, lineno);
            if (argc == 6) {
                if (!parse_u64(argv[5], &c->range_uj) || c->range_uj == 0)
                    die("%s:%d: bad RANGE_UJ '%s'", p->config_path, lineno, argv[5]);
                range_given = true;
            }
            c->fd = open_in_tree(p, c->relpath, counter ? O_RDWR : O_WRONLY, lineno);
            if (counter)
                counter_init(p, c, range_given);
            p->n_chans++;
        } else if (strcmp(argv[0], "stat") == 0) {
            struct mirror *m;

            if (argc != 2)
                die("%s:%d: expected 'stat RELPATH'", p->config_path, lineno);
            if (p->n_mirrors == PLANT_MAX_MIRRORS)
                die("%s:%d: more than %d stat mirrors", p->config_path, lineno, PLANT_MAX_MIRRORS);
            if (strlen(argv[1]) >= PLANT_PATH_MAX)
                die("%s:%d: path too long", p->config_path, lineno);
            m = &p->mirrors[p->n_mirrors++];
            snprintf(m->relpath, sizeof(m->relpath), "%s", argv[1]);
            m->fd = open_in_tree(p, m->relpath, O_WRONLY, lineno);
        } else if (strcmp(argv[0], "reset") == 0) {
            struct chan *c;
            double at;

            if (argc != 3)
                die("%s:%d: expected 'reset NAME AT_SECONDS'", p->config_path, lineno);
            c = find_chan(p, argv[1]);
            if (!c || c->kind != CHAN_COUNTER)
                die("%s:%d: '%s' is not a counter defined above", p->config_path, lineno, argv[1]);
            if (!parse_double(argv[2], &at) || at < 0)
                die("%s:%d: bad AT_SECONDS '%s'", p->config_path, lineno, argv[2]);
            c->reset_at_s = at;
        } else {
            die("%s:%d: unknown directive '%s'", p->config_path, lineno, argv[0]);
        }
    }
    if (ferror(f))
        die("%s: read error", p->config_path);
    fclose(f);
    if (p->n_chans == 0 && p->n_mirrors == 0)
        die("%s: no counter, gauge or stat directive", p->config_path);
}

/* Reads the whole real /proc/stat into p->stat_buf and returns the busy and total ticks of its
 * "cpu" line. */
static void read_proc_stat(struct plant *p, uint64_t *busy, uint64_t *total)
{
    unsigned long long v[8] = {0};
    size_t len = 0;

    if (lseek(p->stat_fd, 0, SEEK_SET) < 0)
        die("/proc/stat: %s", strerror(errno));
    for (;;) {
        ssize_t n;

        if (len + 1 >= p->stat_cap) {
            size_t cap = p->stat_cap * 2;
            char *b;
            if (cap > PLANT_STAT_MAX)
                die("/proc/stat: larger than %d bytes", PLANT_STAT_MAX);
            b = realloc(p->stat_buf, cap);
            if (!b)
                die("out of memory");
            p->stat_buf = b;
            p->stat_cap = cap;
        }
        n = read(p->stat_fd, p->stat_buf + len, p->stat_cap - 1 - len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("/proc/stat: %s", strerror(errno));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    p->stat_buf[len] = '\0';
    p->stat_len = len;
    if (sscanf(p->stat_buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
               &v[3], &v[4], &v[5], &v[6], &v[7]) < 7)
        die("/proc/stat: no cpu line");
    /* user nice system idle iowait irq softirq steal */
    *busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    *total = *busy + v[3] + v[4];
}

/* Samples /proc/stat and updates p->util: the busy fraction over the newest snapshots that
 * span at least PLANT_WINDOW_NS (or all of them, early on). */
static void update_util(struct plant *p, int64_t t_ns)
{
    struct cpu_snap s = {.t_ns = t_ns};
    size_t i, k;

    read_proc_stat(p, &s.busy, &s.total);
    if (p->ring_len == 0) {
        p->ring_head = 0;
        p->ring[0] = s;
        p->ring_len = 1;
        return;
    }
    p->ring_head = (p->ring_head + 1) % PLANT_RING;
    p->ring[p->ring_head] = s;
    if (p->ring_len < PLANT_RING)
        p->ring_len++;

    /* Oldest snapshot still inside the window (at least one step back). */
    i = (p->ring_head + PLANT_RING - 1) % PLANT_RING;
    for (k = 2; k < p->ring_len; k++) {
        if (t_ns - p->ring[i].t_ns >= PLANT_WINDOW_NS)
            break;
        i = (i + PLANT_RING - 1) % PLANT_RING;
    }
    if (s.total > p->ring[i].total && s.busy >= p->ring[i].busy) {
        double u = (double)(s.busy - p->ring[i].busy) / (double)(s.total - p->ring[i].total);
        p->util = u > 1 ? 1 : u;
    }
}

static void write_chan(struct plant *p, struct chan *c, double power_w)
{
    char buf[32];
    int len;

    if (c->kind == CHAN_COUNTER) {
        double since = floor(c->true_uj - c->offset_uj);
        uint64_t v = c->origin_uj + (uint64_t)(since > 0 ? since : 0);
        if (c->range_uj)
            v %= c->range_uj;
        len = snprintf(buf, sizeof(buf), "%020" PRIu64 "\n", v);
    } else {
        len = snprintf(buf, sizeof(buf), "%012llu\n", (unsigned long long)llround(power_w * 1e6));
    }
    if (!pwrite_all(c->fd, buf, (size_t)len))
        die("%s/%s: write: %s", p->tree_dir, c->relpath, strerror(errno));
}

static void write_mirrors(struct plant *p)
{
    for (size_t i = 0; i < p->n_mirrors; i++) {
        struct mirror *m = &p->mirrors[i];
        /* New content over the old at offset 0, then cut any leftover tail: the cpu lines
         * come first, so a concurrent reader never sees a torn cpu line. */
        if (!pwrite_all(m->fd, p->stat_buf, p->stat_len) ||
            ftruncate(m->fd, (off_t)p->stat_len) < 0)
            die("%s/%s: write: %s", p->tree_dir, m->relpath, strerror(errno));
    }
}

static void truth_row(struct plant *p, int64_t real_ns)
{
    fprintf(p->truth, "%" PRId64 ".%06" PRId64 ",%.4f", (int64_t)(real_ns / 1000000000LL),
            (int64_t)((real_ns % 1000000000LL) / 1000), p->util);
    for (size_t i = 0; i < p->n_chans; i++)
        fprintf(p->truth, ",%.6f,%.6f", p->chans[i].true_uj / 1e6, p->chans[i].dyn_uj / 1e6);
    fputc('\n', p->truth);
    if (fflush(p->truth) != 0)
        die("%s: write: %s", p->truth_path, strerror(errno));
}

/* One period: sample utilization, integrate every channel over the time since the last step,
 * apply due resets, write the tree and the truth row. */
static void step(struct plant *p)
{
    int64_t t = now_ns(CLOCK_MONOTONIC);
    int64_t real = now_ns(CLOCK_REALTIME);
    double dt = (double)(t - p->last_ns) / 1e9;
    double elapsed = (double)(t - p->t0_ns) / 1e9;

    uint64_t busy0 = p->ring_len ? p->ring[p->ring_head].busy : 0;
    update_util(p, t);
    uint64_t busy1 = p->ring[p->ring_head].busy;
    /* CPU-seconds of full load since the last step, straight from the clock ticks: a counter's
     * dynamic energy follows every tick of load, even ticks that fell while the plant itself
     * waited for a CPU (a utilization sampled only when the plant runs would miss the load
     * that kept it waiting). */
    double load_s = busy1 > busy0 ? (double)(busy1 - busy0) / (p->ncpu * p->hz) : 0.0;
    for (size_t i = 0; i < p->n_chans; i++) {
        struct chan *c = &p->chans[i];
        double power = c->idle_w + (c->max_w - c->idle_w) * p->util;

        if (c->kind == CHAN_COUNTER) {
            double dyn_uj = (c->max_w - c->idle_w) * load_s * 1e6;
            c->true_uj += c->idle_w * dt * 1e6 + dyn_uj;
            c->dyn_uj += dyn_uj;
        } else {
            /* a gauge shows the smoothed power; its truth is what was written */
            c->true_uj += power * dt * 1e6;
            c->dyn_uj += (power - c->idle_w) * dt * 1e6;
        }
        if (c->reset_at_s >= 0 && !c->reset_done && elapsed >= c->reset_at_s) {
            c->origin_uj = 0;
            c->offset_uj = c->true_uj;
            c->reset_done = true;
        }
        write_chan(p, c, power);
    }
    write_mirrors(p);
    truth_row(p, real);
    p->last_ns = t;
}

static void write_pidfile(const char *path)
{
    char tmp[PATH_MAX];
    FILE *f;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        die("%s: path too long", path);
    f = fopen(tmp, "we");
    if (!f)
        die("%s: %s", tmp, strerror(errno));
    fprintf(f, "%ld\n", (long)getpid());
    if (fclose(f) != 0 || rename(tmp, path) < 0)
        die("%s: %s", path, strerror(errno));
}

static void start(struct plant *p)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    p->tree_fd = open(p->tree_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (p->tree_fd < 0)
        die("%s: %s", p->tree_dir, strerror(errno));
    p->stat_fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (p->stat_fd < 0)
        die("/proc/stat: %s", strerror(errno));
    p->stat_cap = 16384;
    p->stat_buf = malloc(p->stat_cap);
    if (!p->stat_buf)
        die("out of memory");
    {
        uint64_t b, tt;
        read_proc_stat(p, &b, &tt);
        p->ncpu = 0;
        for (const char *q = p->stat_buf; (q = strstr(q, "\ncpu")); q++)
            if (q[4] >= '0' && q[4] <= '9')
                p->ncpu++;
        if (p->ncpu < 1)
            p->ncpu = 1;
        long hz = sysconf(_SC_CLK_TCK);
        p->hz = hz > 0 ? (double)hz : 100.0;
    }

    parse_config(p);

    p->truth = fopen(p->truth_path, "we");
    if (!p->truth)
        die("%s: %s", p->truth_path, strerror(errno));
    fputs("timestamp_unix,util", p->truth);
    for (size_t i = 0; i < p->n_chans; i++)
        fprintf(p->truth, ",%s_j,%s_dyn_j", p->chans[i].name, p->chans[i].name);
    fputc('\n', p->truth);

    /* Step zero: the start state (no energy yet) with the idle power on the gauges. */
    p->t0_ns = now_ns(CLOCK_MONOTONIC);
    p->last_ns = p->t0_ns;
    update_util(p, p->t0_ns);
    for (size_t i = 0; i < p->n_chans; i++)
        write_chan(p, &p->chans[i], p->chans[i].idle_w);
    write_mirrors(p);
    for (size_t i = 0; i < p->n_chans; i++) {
        /* Cut any longer original content once, before anyone reads the live tree. */
        if (p->chans[i].kind == CHAN_COUNTER && ftruncate(p->chans[i].fd, 21) < 0)
            die("%s/%s: %s", p->tree_dir, p->chans[i].relpath, strerror(errno));
        if (p->chans[i].kind == CHAN_GAUGE && ftruncate(p->chans[i].fd, 13) < 0)
            die("%s/%s: %s", p->tree_dir, p->chans[i].relpath, strerror(errno));
    }
    truth_row(p, now_ns(CLOCK_REALTIME));
}

static void run(struct plant *p)
{
    int64_t next = p->t0_ns + p->period_ns;
    bool pid_written = false;

    while (!plant_stop) {
        struct timespec ts = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
        int64_t t;
        int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);

        if (rc == EINTR)
            continue;
        if (rc != 0)
            die("clock_nanosleep: %s", strerror(rc));
        step(p);
        if (!pid_written && p->pidfile) {
            write_pidfile(p->pidfile);
            pid_written = true;
        }
        if (p->duration_s > 0 && (double)(p->last_ns - p->t0_ns) / 1e9 >= p->duration_s)
            break;
        next += p->period_ns;
        t = now_ns(CLOCK_MONOTONIC);
        if (next <= t) /* fell behind: skip the missed periods, keep the phase */
            next += ((t - next) / p->period_ns + 1) * p->period_ns;
    }
}

int main(int argc, char **argv)
{
    struct plant p;

    memset(&p, 0, sizeof(p));
    p.period_ns = 5000000;
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (!val)
            usage();
        if (strcmp(opt, "--tree") == 0)
            p.tree_dir = val;
        else if (strcmp(opt, "--config") == 0)
            p.config_path = val;
        else if (strcmp(opt, "--truth") == 0)
            p.truth_path = val;
        else if (strcmp(opt, "--pidfile") == 0)
            p.pidfile = val;
        else if (strcmp(opt, "--period") == 0) {
            p.period_ns = parse_duration_ns(val);
            if (p.period_ns < 100000 || p.period_ns > 10000000000LL)
                die("--period '%s': expected 100us..10s, e.g. 5ms", val);
        } else if (strcmp(opt, "--duration") == 0) {
            int64_t d = parse_duration_ns(val);
            if (d < 0)
                die("--duration '%s': expected seconds", val);
            p.duration_s = (double)d / 1e9;
        } else
            usage();
        i++;
    }
    if (!p.tree_dir || !p.config_path || !p.truth_path)
        usage();

    start(&p);
    run(&p);
    if (fclose(p.truth) != 0)
        die("%s: %s", p.truth_path, strerror(errno));
    for (size_t i = 0; i < p.n_chans; i++)
        close(p.chans[i].fd);
    for (size_t i = 0; i < p.n_mirrors; i++)
        close(p.mirrors[i].fd);
    close(p.stat_fd);
    close(p.tree_fd);
    free(p.stat_buf);
    return 0;
}
