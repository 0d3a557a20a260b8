/*
 * collector: targets, rows and backoff of `carma collect` (see collector.h).
 *
 * Targets are checked strictly (a host name's characters, an IPv6 address's, a port 1..65535),
 * so that what reaches libcurl is always a well-formed http URL with the IPv6 address in
 * brackets. The Slurm node list is expanded by scontrol itself (its hostlist syntax has ranges,
 * padding and nesting that only Slurm knows), run with posix_spawnp and two pipes.
 *
 * The rows of a cycle go to one buffer per file, written once at the end of the cycle. Energy
 * counters are matched to power gauges by their label sets: exporters write both families in
 * the same channel order, so the k-th counter is tried first for the k-th gauge and the whole
 * family only when it differs. The buffers and the index of counters keep their largest size:
 * the steady state allocates nothing.
 */
#include "collect/collector.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/csv.h"
#include "core/file.h"
#include "core/fmt.h"
#include "core/journal.h"

extern char **environ;

#define TARGETS_FILE_MAX (4u << 20) /* bytes of a targets file */
#define SCONTROL_OUT_MAX (4u << 20) /* bytes of scontrol's output */
#define PATH_CAP         4096

/* ---- targets ---- */

static bool host_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_';
}

/* A DNS name or an IPv4 address: [A-Za-z0-9._-], not starting with '-' or '.'. */
static bool valid_host(const char *h, size_t n)
{
    if (n == 0 || n > COLLECT_HOST_MAX || h[0] == '-' || h[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!host_char(h[i]))
            return false;
    return true;
}

/* An IPv6 address (hex digits, ':', '.' of an embedded IPv4) with at least two ':', and an
 * optional zone "%name" of [A-Za-z0-9._-]. */
static bool valid_v6(const char *h, size_t n)
{
    if (n < 2 || n > COLLECT_HOST_MAX)
        return false;
    size_t colons = 0, i = 0;
    for (; i < n && h[i] != '%'; i++) {
        if (h[i] == ':')
            colons++;
        else if (!isxdigit((unsigned char)h[i]) && h[i] != '.')
            return false;
    }
    if (colons < 2)
        return false;
    if (i < n) { /* a zone */
        if (i + 1 == n)
            return false;
        for (i++; i < n; i++)
            if (!host_char(h[i]))
                return false;
    }
    return true;
}

/* A port: 1 to 65535 in decimal digits only. */
static int parse_port(const char *s, size_t n, unsigned *ret)
{
    if (n == 0 || n > 5)
        return -EINVAL;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -EINVAL;
    *ret = v;
    return 0;
}

/*
 * Parses an authority "host", "host:port", "[v6]", "[v6]:port" or a bare v6 address (n bytes
 * at s) into host (unbracketed, NUL-terminated, hcap bytes), *v6 and *port (default_port when
 * none). Returns 0, or -EINVAL with e set (spec names the whole target).
 */
static int parse_authority(const char *spec, const char *s, size_t n, unsigned default_port,
                           char *host, size_t hcap, bool *v6, unsigned *port, struct carma_err *e)
{
    const char *h = s, *p = NULL;
    size_t hn = n, pn = 0;
    *v6 = false;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close)
            return carma_err_set(e, -EINVAL, "bad target '%s': '[' without ']'", spec);
        h = s + 1;
        hn = (size_t)(close - h);
        *v6 = true;
        size_t rest = n - (size_t)(close + 1 - s);
        if (rest) {
            if (close[1] != ':')
                return carma_err_set(e, -EINVAL, "bad target '%s': only ':PORT' may follow ']'",
                                     spec);
            p = close + 2;
            pn = rest - 1;
            if (pn == 0)
                return carma_err_set(e, -EINVAL, "bad target '%s': empty port", spec);
        }
        if (!valid_v6(h, hn))
            return carma_err_set(e, -EINVAL, "bad target '%s': not an IPv6 address in [...]", spec);
    } else {
        size_t colons = 0;
        const char *last = NULL;
        for (size_t i = 0; i < n; i++)
            if (s[i] == ':') {
                colons++;
                last = s + i;
            }
        if (colons >= 2) { /* a bare IPv6 address: no port can follow it */
            if (!valid_v6(s, n))
                return carma_err_set(e, -EINVAL,
                                     "bad target '%s': not an IPv6 address (write [ADDR]:PORT "
                                     "to give a port)",
                                     spec);
            *v6 = true;
        } else if (colons == 1) {
            hn = (size_t)(last - s);
            p = last + 1;
            pn = n - hn - 1;
            if (pn == 0)
                return carma_err_set(e, -EINVAL, "bad target '%s': empty port", spec);
        }
        if (!*v6 && !valid_host(h, hn))
            return carma_err_set(e, -EINVAL,
                                 "bad target '%s': not a host name (letters, digits, '.', '-', "
                                 "'_'), an IPv4 or an [IPv6] address",
                                 spec);
    }
    if (hn + 1 > hcap)
        return carma_err_set(e, -EINVAL, "bad target '%s': host name too long", spec);
    if (p) {
        if (parse_port(p, pn, port) < 0)
            return carma_err_set(e, -EINVAL, "bad target '%s': port '%.*s' is not 1..65535", spec,
                                 (int)(pn > 16 ? 16 : pn), p);
    } else {
        *port = default_port;
    }
    memcpy(host, h, hn);
    host[hn] = '\0';
    return 0;
}

/* host as a URL authority's host: brackets for IPv6, a zone's '%' as "%25". */
static void url_host(char *out, size_t cap, const char *host, bool v6)
{
    size_t n = 0;
    if (v6 && n + 1 < cap)
        out[n++] = '[';
    for (const char *c = host; *c && n + 4 < cap; c++) {
        if (*c == '%') {
            memcpy(out + n, "%25", 3);
            n += 3;
        } else {
            out[n++] = *c;
        }
    }
    if (v6 && n + 1 < cap)
        out[n++] = ']';
    out[n] = '\0';
}

void collect_target_done(struct collect_target *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->url);
    free(t->node);
    memset(t, 0, sizeof *t);
}

/* Whether spec names a dcgm-exporter ("dcgm:" and something that is not a port alone). */
static bool dcgm_spec(const char *spec)
{
    if (strncmp(spec, "dcgm:", 5) != 0)
        return false;
    const char *p = spec + 5;
    while (*p >= '0' && *p <= '9')
        p++;
    return *p != '\0' || p == spec + 5;
}

static int target_parse(const char *spec, const char *what, unsigned default_port, const char *node,
                        struct collect_target *ret, struct carma_err *e);

int collect_target_parse(const char *spec, unsigned default_port, const char *node,
                         struct collect_target *ret, struct carma_err *e)
{
    if (!spec || !*spec)
        return carma_err_set(e, -EINVAL, "empty target");
    if (!dcgm_spec(spec))
        return target_parse(spec, spec, default_port, node, ret, e);
    if (!spec[5])
        return carma_err_set(e, -EINVAL, "bad target '%s': no host after 'dcgm:'", spec);
    /* errors name the whole target, "dcgm:" included */
    int r = target_parse(spec + 5, spec, COLLECT_DCGM_PORT, node, ret, e);
    if (r < 0)
        return r;
    size_t cap = strlen(ret->name) + 6;
    char *name = malloc(cap);
    if (!name) {
        collect_target_done(ret);
        return carma_err_set(e, -ENOMEM, "out of memory");
    }
    snprintf(name, cap, "dcgm:%s", ret->name);
    free(ret->name);
    ret->name = name;
    ret->dcgm = true;
    return 0;
}

/* Parses spec (a target without "dcgm:"); what is the target as given, for the messages. */
static int target_parse(const char *spec, const char *what, unsigned default_port, const char *node,
                        struct collect_target *ret, struct carma_err *e)
{
    if (!*spec)
        return carma_err_set(e, -EINVAL, "empty target");
    size_t len = strlen(spec);
    if (len > 2048)
        return carma_err_set(e, -EINVAL, "bad target '%.40s...': longer than 2048 bytes", what);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)spec[i] <= ' ' || spec[i] == 0x7f)
            return carma_err_set(e, -EINVAL, "bad target '%s': a space or control character in it",
                                 what);

    const char *scheme = NULL, *auth = spec, *path = "";
    size_t alen = len;
    if (strncasecmp(spec, "http://", 7) == 0 || strncasecmp(spec, "https://", 8) == 0) {
        bool tls = spec[4] == 's' || spec[4] == 'S';
        scheme = tls ? "https" : "http";
        auth = spec + (tls ? 8 : 7);
        alen = strcspn(auth, "/?#");
        path = auth + alen;
        if (memchr(auth, '@', alen))
            return carma_err_set(e, -EINVAL,
                                 "bad target '%s': credentials in a URL are not supported", what);
        if (alen == 0)
            return carma_err_set(e, -EINVAL, "bad target '%s': no host", what);
    } else if (strstr(spec, "://")) {
        return carma_err_set(e, -EINVAL, "bad target '%s': only http:// and https:// URLs", what);
    } else if (strpbrk(spec, "/?#@")) {
        return carma_err_set(
            e, -EINVAL, "bad target '%s': write HOST:PORT, [IPV6]:PORT or an http:// URL", what);
    }

    /* a URL writes the '%' of an IPv6 zone as "%25" (RFC 6874); a bare address does not */
    char decoded[2048 + 1];
    if (scheme) {
        size_t n = 0;
        for (size_t i = 0; i < alen; i++) {
            decoded[n++] = auth[i];
            if (auth[i] == '%' && i + 2 < alen && auth[i + 1] == '2' && auth[i + 2] == '5')
                i += 2;
        }
        auth = decoded;
        alen = n;
    }
    char host[COLLECT_HOST_MAX + 1];
    bool v6 = false;
    unsigned port = default_port;
    int r = parse_authority(what, auth, alen, default_port, host, sizeof host, &v6, &port, e);
    if (r < 0)
        return r;

    char uh[3 * COLLECT_HOST_MAX + 8];
    url_host(uh, sizeof uh, host, v6);
    struct collect_target t = {0};
    size_t ucap = strlen(uh) + strlen(path) + 64;
    t.url = malloc(ucap);
    if (t.url)
        snprintf(t.url, ucap, "%s://%s:%u%s", scheme ? scheme : "http", uh, port,
                 *path ? path : "/metrics");
    if (scheme) {
        t.name = t.url ? strdup(t.url) : NULL;
    } else {
        char name[COLLECT_HOST_MAX + 16];
        snprintf(name, sizeof name, v6 ? "[%s]:%u" : "%s:%u", host, port);
        t.name = strdup(name);
    }
    t.node = strdup(node && *node ? node : host);
    t.node_given = node && *node;
    if (!t.url || !t.name || !t.node) {
        collect_target_done(&t);
        return carma_err_set(e, -ENOMEM, "out of memory");
    }
    *ret = t;
    return 0;
}

int collect_targets_add(struct collect_targets *ts, const char *spec, unsigned default_port,
                        const char *node, const char *where, struct carma_err *e)
{
    if (!where)
        where = "";
    struct collect_target t;
    struct carma_err pe = {0};
    if (collect_target_parse(spec, default_port, node, &t, &pe) < 0)
        return carma_err_set(e, pe.code, "%s%s", where, pe.msg);
    for (size_t i = 0; i < ts->n; i++)
        if (strcmp(ts->t[i].url, t.url) == 0) {
            int r =
                carma_err_set(e, -EINVAL, "%starget '%s' is given twice (%s)", where, spec, t.url);
            collect_target_done(&t);
            return r;
        }
    if (ts->n == COLLECT_TARGETS_MAX) {
        collect_target_done(&t);
        return carma_err_set(e, -E2BIG, "%smore than %d targets", where, COLLECT_TARGETS_MAX);
    }
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? 2 * ts->cap : 16;
        struct collect_target *p = realloc(ts->t, cap * sizeof *p);
        if (!p) {
            collect_target_done(&t);
            return carma_err_set(e, -ENOMEM, "out of memory");
        }
        ts->t = p;
        ts->cap = cap;
    }
    ts->t[ts->n++] = t;
    return 0;
}

int collect_targets_file(struct collect_targets *ts, const char *path, unsigned default_port,
                         struct carma_err *e)
{
    char *text = NULL;
    size_t len = 0;
    int r = file_read_all(path, TARGETS_FILE_MAX, &text, &len);
    if (r == -ESPIPE)
        return file_input_err(e, path, r);
    if (r < 0)
        return carma_err_set(e, r, "cannot read %s: %s", path,
                             r == -EFBIG ? "larger than 4 MiB" : strerror(-r));
    if (memchr(text, '\0', len)) {
        free(text);
        return carma_err_set(e, -EINVAL, "%s: not a text file (a NUL byte)", path);
    }
    int added = 0;
    size_t lineno = 0;
    char *save = NULL;
    char *p = text;
    r = 0;
    while (p && *p) {
        lineno++;
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        char *line = p;
        p = nl ? nl + 1 : NULL;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *tok = strtok_r(line, " \t\r\f\v", &save);
        if (!tok)
            continue;
        char *extra = strtok_r(NULL, " \t\r\f\v", &save);
        if (extra) {
            r = carma_err_set(e, -EINVAL, "%s:%zu: one target per line ('%s' follows '%s')", path,
                              lineno, extra, tok);
            break;
        }
        char where[PATH_CAP + 32];
        snprintf(where, sizeof where, "%s:%zu: ", path, lineno);
        r = collect_targets_add(ts, tok, default_port, NULL, where, e);
        if (r < 0)
            break;
        added++;
    }
    free(text);
    if (r < 0)
        return r;
    if (added == 0)
        return carma_err_set(e, -EINVAL, "%s: no targets in it", path);
    return added;
}

void collect_targets_free(struct collect_targets *ts)
{
    if (!ts)
        return;
    for (size_t i = 0; i < ts->n; i++)
        collect_target_done(&ts->t[i]);
    free(ts->t);
    memset(ts, 0, sizeof *ts);
}

/* ---- the nodes of a Slurm job ---- */

/* Appends what fd has to read to b (up to max bytes; more is read and dropped). Returns 1 at
 * end of file, 0 when more may come, a negative errno. */
static int drain(int fd, struct csv_buf *b, size_t max)
{
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -errno;
    if (n == 0)
        return 1;
    if (b->len < max && csv_buf_raw(b, chunk, (size_t)n) < 0)
        return -ENOMEM;
    return 0;
}

/* Runs argv with stdout and stderr into out and err; *status is waitpid's. Returns 0 or a
 * negative errno (-ENOENT: no such program). */
static int run_capture(const char *const *argv, struct csv_buf *out, struct csv_buf *err,
                       int *status)
{
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
        int r = -errno;
        for (int i = 0; i < 2; i++) {
            if (po[i] >= 0)
                close(po[i]);
            if (pe[i] >= 0)
                close(pe[i]);
        }
        return r;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    sigset_t none, def;
    sigemptyset(&none);
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &def);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int r = posix_spawnp(&pid, argv[0], &fa, &at, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(po[1]);
    close(pe[1]);
    if (r != 0) {
        close(po[0]);
        close(pe[0]);
        return -r;
    }
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    struct csv_buf *bufs[2] = {out, err};
    int open_fds = 2, ret = 0;
    while (open_fds) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            ret = -errno;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !fds[i].revents)
                continue;
            int d = drain(fds[i].fd, bufs[i], SCONTROL_OUT_MAX);
            if (d < 0) {
                ret = d;
                open_fds = 0;
                break;
            }
            if (d == 1) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR) {
            if (!ret)
                ret = -errno;
            break;
        }
    }
    return ret;
}

/* The last non-blank line of b (modified in place), or "". */
static const char *last_line(struct csv_buf *b)
{
    if (!b->data)
        return "";
    char *s = b->data;
    size_t n = b->len;
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    char *nl = strrchr(s, '\n');
    return nl ? nl + 1 : s;
}

int collect_slurm_targets(struct collect_targets *ts, unsigned port, unsigned dcgm_port,
                          const char *scontrol, struct carma_err *e)
{
    const char *list = getenv("SLURM_JOB_NODELIST");
    if (!list || !*list)
        list = getenv("SLURM_NODELIST");
    if (!list || !*list)
        return carma_err_set(e, -ENOENT,
                             "--slurm: not in a Slurm job (SLURM_JOB_NODELIST is not set); run "
                             "carma collect inside the job (sbatch, salloc) or give --target");
    if (!scontrol)
        scontrol = "scontrol";
    const char *argv[] = {scontrol, "show", "hostnames", list, NULL};
    struct csv_buf out = {0}, err = {0};
    int status = 0;
    int r = run_capture(argv, &out, &err, &status);
    if (r == -ENOENT) {
        r = carma_err_set(e, -ENOENT,
                          "--slurm: %s not found in PATH: it expands SLURM_JOB_NODELIST ('%s'); "
                          "give the nodes with --target or --targets-file instead",
                          scontrol, list);
        goto out;
    }
    if (r < 0) {
        r = carma_err_set(e, r, "--slurm: cannot run %s: %s", scontrol, strerror(-r));
        goto out;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const char *why = last_line(&err);
        if (WIFEXITED(status))
            r = carma_err_set(e, -EIO,
                              "--slurm: '%s show hostnames %s' failed (exit status %d)%s%s",
                              scontrol, list, WEXITSTATUS(status), *why ? ": " : "", why);
        else
            r = carma_err_set(e, -EIO, "--slurm: '%s show hostnames %s' was killed by signal %d",
                              scontrol, list, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        goto out;
    }
    int added = 0;
    char *save = NULL;
    for (char *tok = out.data ? strtok_r(out.data, " \t\r\n", &save) : NULL; tok;
         tok = strtok_r(NULL, " \t\r\n", &save)) {
        if (!valid_host(tok, strlen(tok))) {
            r = carma_err_set(e, -EINVAL, "--slurm: %s printed '%s', which is not a host name",
                              scontrol, tok);
            goto out;
        }
        char where[300];
        snprintf(where, sizeof where, "--slurm: node %s: ", tok);
        r = collect_targets_add(ts, tok, port, tok, where, e);
        if (r < 0)
            goto out;
        added++;
    }
    if (added == 0) {
        r = carma_err_set(e, -EIO, "--slurm: '%s show hostnames %s' printed no host", scontrol,
                          list);
        goto out;
    }
    /* each node's dcgm-exporter, after the exporters (the nodes are the last `added` targets) */
    for (size_t k = ts->n - (size_t)added, end = ts->n; dcgm_port && k < end; k++) {
        char spec[COLLECT_HOST_MAX + 16], where[300];
        char *node = ts->t[k].node;
        snprintf(spec, sizeof spec, "dcgm:%s:%u", node, dcgm_port);
        snprintf(where, sizeof where, "--slurm: node %s: ", node);
        r = collect_targets_add(ts, spec, dcgm_port, node, where, e);
        if (r < 0)
            goto out;
    }
    r = added;
out:
    csv_buf_free(&out);
    csv_buf_free(&err);
    return r;
}

/* ---- rows ---- */

#define SAMPLES_HEADER                                                                             \
    "schema_version,timestamp_unix,scrape_seq,node,target,channel,source,kind,domain,method,"      \
    "watts,joules_total\r\n"
#define NODES_HEADER                                                                               \
    "schema_version,timestamp_unix,scrape_seq,node,target,method,watts,joules_total,"              \
    "cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq\r\n"

/* The families read, as each sample is classified once per body. */
enum family {
    FAM_OTHER,
    FAM_POWER,       /* carma_power_watts */
    FAM_ENERGY,      /* carma_energy_joules_total */
    FAM_NODE_POWER,  /* carma_node_power_watts */
    FAM_NODE_ENERGY, /* carma_node_energy_joules_total */
    FAM_UTIL,        /* carma_cpu_utilization_ratio */
    FAM_SRT_CPU,     /* cpu_power_acpi_watts, cpu_power_dcgm_watts */
};

/* the labels of carma_power_watts written as columns, in order */
static const char *const power_columns[] = {"channel", "source", "kind", "domain", "method"};

/* the modes of carma_cpu_utilization_ratio written as columns, in order ("system" = "sys") */
static const char *const util_modes[] = {"total", "user", "nice", "sys", "irq"};
#define UTIL_MODES 5

struct out_file {
    struct journal *csv;
    char path[PATH_CAP];
    struct csv_buf buf; /* rows of the current cycle */
    uint64_t rows_pending, rows;
};

struct collect_out {
    struct out_file samples, nodes;
    char prefix[64]; /* "1,<timestamp>,<seq>," of the current target */
    size_t prefix_len;
    uint64_t seq;
    bool in_cycle, oom;
    size_t *counters; /* sample indices of a family's counters in the current doc */
    size_t ncounters_cap;
    unsigned char *fam; /* the enum family of each sample of the current doc */
    size_t nfam_cap;
    bool label_wins; /* of the current target: a sample's node label names its row */
};

static int file_open(struct out_file *f, const char *dir, const char *name, const char *header,
                     struct carma_err *e)
{
    f->csv = NULL;
    if ((size_t)snprintf(f->path, sizeof f->path, "%s/%s", dir, name) >= sizeof f->path)
        return carma_err_set(e, -ENAMETOOLONG, "cannot create %s/%s: %s", dir, name,
                             strerror(ENAMETOOLONG));
    struct carma_err je = {0};
    f->csv = journal_open(f->path, header, "rows", &je);
    if (!f->csv)
        return carma_err_set(e, je.code, "%s", je.msg);
    if (csv_buf_reserve(&f->buf, 1 << 14) < 0)
        return carma_err_set(e, -ENOMEM, "out of memory");
    return 0;
}

static int file_flush(struct out_file *f, struct carma_err *e)
{
    if (f->buf.len == 0)
        return 0;
    if (journal_damaged(f->csv))
        return carma_err_set(e, -EIO, "cannot write %s: it ends in part of a cycle", f->path);
    /* a failed cycle is cut off the file: its rows written before are kept */
    int r = journal_append(f->csv, f->buf.data, f->buf.len, f->rows_pending, -1, NULL);
    if (r < 0)
        return carma_err_set(e, r, "cannot write %s: %s (the rows written before are kept)",
                             f->path, strerror(-r));
    f->rows += f->rows_pending;
    return 0;
}

static int file_close(struct out_file *f, struct carma_err *e)
{
    int ret = journal_finish(f->csv, f->path, e);
    f->csv = NULL;
    csv_buf_free(&f->buf);
    return ret;
}

const char *collect_samples_name(const char *dir)
{
    char p[PATH_MAX];
    struct stat st;
    snprintf(p, sizeof p, "%s/" COLLECT_SAMPLES, dir);
    if (stat(p, &st) == 0)
        return COLLECT_SAMPLES;
    snprintf(p, sizeof p, "%s/" COLLECT_HOST_SAMPLES, dir);
    return stat(p, &st) == 0 ? COLLECT_HOST_SAMPLES : COLLECT_SAMPLES;
}

struct collect_out *collect_out_open(const char *dir, const char *samples, struct carma_err *e)
{
    struct collect_out *o = calloc(1, sizeof *o);
    if (!o) {
        carma_err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    if (file_open(&o->samples, dir, samples, SAMPLES_HEADER, e) < 0 ||
        file_open(&o->nodes, dir, "nodes.csv", NODES_HEADER, e) < 0) {
        collect_out_close(o, NULL);
        return NULL;
    }
    return o;
}

void collect_out_cycle_begin(struct collect_out *o, uint64_t seq)
{
    o->seq = seq;
    o->in_cycle = true;
    o->oom = false;
    o->samples.buf.len = o->nodes.buf.len = 0;
    o->samples.rows_pending = o->nodes.rows_pending = 0;
}

static const char *label(const struct prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}

/* Whether a and b have the same labels with the same values (in any order). */
static bool same_labels(const struct prom_sample *a, const struct prom_sample *b)
{
    if (a->nlabels != b->nlabels)
        return false;
    bool in_order = true;
    for (size_t i = 0; i < a->nlabels && in_order; i++)
        in_order = strcmp(a->labels[i].name, b->labels[i].name) == 0;
    if (in_order) {
        for (size_t i = 0; i < a->nlabels; i++)
            if (strcmp(a->labels[i].value, b->labels[i].value) != 0)
                return false;
        return true;
    }
    for (size_t i = 0; i < a->nlabels; i++) {
        const char *v = label(b, a->labels[i].name);
        if (!v || strcmp(v, a->labels[i].value) != 0)
            return false;
    }
    return true;
}

static enum family family_of(const char *name)
{
    if (name[0] != 'c')
        return FAM_OTHER;
    if (strncmp(name, "carma_", 6) == 0) {
        const char *r = name + 6;
        switch (r[0]) {
        case 'p':
            return strcmp(r, "power_watts") == 0 ? FAM_POWER : FAM_OTHER;
        case 'e':
            return strcmp(r, "energy_joules_total") == 0 ? FAM_ENERGY : FAM_OTHER;
        case 'n':
            if (strcmp(r, "node_power_watts") == 0)
                return FAM_NODE_POWER;
            return strcmp(r, "node_energy_joules_total") == 0 ? FAM_NODE_ENERGY : FAM_OTHER;
        case 'c':
            return strcmp(r, "cpu_utilization_ratio") == 0 ? FAM_UTIL : FAM_OTHER;
        default:
            return FAM_OTHER;
        }
    }
    if (strcmp(name, "cpu_power_acpi_watts") == 0 || strcmp(name, "cpu_power_dcgm_watts") == 0)
        return FAM_SRT_CPU;
    return FAM_OTHER;
}

/* Indexes the samples of family f in doc into o->counters. Returns their number, or -1
 * when out of memory. */
static ssize_t index_family(struct collect_out *o, const struct prom_doc *doc, enum family f)
{
    size_t n = 0;
    for (size_t i = 0; i < doc->nsamples; i++) {
        if (o->fam[i] != f)
            continue;
        if (n == o->ncounters_cap) {
            size_t cap = o->ncounters_cap ? 2 * o->ncounters_cap : 64;
            size_t *p = realloc(o->counters, cap * sizeof *p);
            if (!p)
                return -1;
            o->counters = p;
            o->ncounters_cap = cap;
        }
        o->counters[n++] = i;
    }
    return (ssize_t)n;
}

/* The counter among o->counters[0..n) with the labels of s (the k-th first), or NULL. */
static const struct prom_sample *match(const struct collect_out *o, const struct prom_doc *doc,
                                       size_t n, size_t k, const struct prom_sample *s)
{
    if (k < n && same_labels(s, &doc->samples[o->counters[k]]))
        return &doc->samples[o->counters[k]];
    for (size_t i = 0; i < n; i++)
        if (i != k && same_labels(s, &doc->samples[o->counters[i]]))
            return &doc->samples[o->counters[i]];
    return NULL;
}

/* The node column of a row: the sample's node label when it wins and has one, else node. */
static const char *node_col(const struct collect_out *o, const char *label, const char *node)
{
    return o->label_wins && label && *label ? label : node;
}

/* Appends a number cell (nothing for a NaN or infinite value). Room must be reserved. */
static void put_num(struct csv_buf *b, double v)
{
    if (!isfinite(v))
        return;
    if (v == 0)
        v = 0; /* -0.0 */
    b->len += fmt_fixed6(b->data + b->len, v);
    b->data[b->len] = '\0';
}

/* Appends a power cell: a reading below 0 W is no reading (blank, counted), never passed on. */
static void put_watts(struct csv_buf *b, double w, struct collect_scrape_info *info)
{
    if (w < 0) {
        info->negative++;
        return;
    }
    put_num(b, w);
}

/* Appends the start of a row: prefix, node, target. false when out of memory. */
static bool row_start(struct collect_out *o, struct csv_buf *b, const char *node,
                      const char *target, size_t more)
{
    if (csv_buf_reserve(b, o->prefix_len + 2 * (strlen(node) + strlen(target)) + 8 + more) < 0) {
        o->oom = true;
        return false;
    }
    memcpy(b->data + b->len, o->prefix, o->prefix_len);
    b->len += o->prefix_len;
    csv_buf_field(b, node, 1);
    csv_buf_field(b, target, 0);
    return true;
}

static void row_end(struct csv_buf *b)
{
    memcpy(b->data + b->len, "\r\n", 3);
    b->len += 2;
}

/* The rows of carma_power_watts into samples.csv. */
static void power_rows(struct collect_out *o, const struct prom_doc *doc, const char *node,
                       const char *target, struct collect_scrape_info *info)
{
    ssize_t nc = index_family(o, doc, FAM_ENERGY);
    if (nc < 0) {
        o->oom = true;
        return;
    }
    struct csv_buf *b = &o->samples.buf;
    size_t k = 0;
    for (size_t i = 0; i < doc->nsamples; i++) {
        const struct prom_sample *s = &doc->samples[i];
        if (o->fam[i] != FAM_POWER)
            continue;
        const char *n = label(s, "node");
        const char *cells[5];
        size_t more = 2 * 32 + 16;
        for (size_t c = 0; c < 5; c++) {
            cells[c] = label(s, power_columns[c]);
            if (!cells[c])
                cells[c] = "";
            more += 2 * strlen(cells[c]) + 3;
        }
        if (!row_start(o, b, node_col(o, n, node), target, more))
            return;
        for (size_t c = 0; c < 5; c++)
            csv_buf_field(b, cells[c], 0);
        b->data[b->len++] = ',';
        put_watts(b, s->value, info);
        b->data[b->len++] = ',';
        const struct prom_sample *j = match(o, doc, (size_t)nc, k, s);
        if (j)
            put_num(b, j->value);
        row_end(b);
        o->samples.rows_pending++;
        info->power_rows++;
        k++;
    }
}

/* The node's utilization by mode (NAN when absent) for node label n (NULL: any). */
static void utilization(const struct collect_out *o, const struct prom_doc *doc, const char *n,
                        double util[UTIL_MODES])
{
    for (size_t m = 0; m < UTIL_MODES; m++)
        util[m] = NAN;
    for (size_t i = 0; i < doc->nsamples; i++) {
        const struct prom_sample *s = &doc->samples[i];
        if (o->fam[i] != FAM_UTIL)
            continue;
        const char *sn = label(s, "node");
        if (n && sn && strcmp(sn, n) != 0)
            continue;
        const char *mode = label(s, "mode");
        if (!mode)
            continue;
        if (strcmp(mode, "system") == 0)
            mode = "sys";
        for (size_t m = 0; m < UTIL_MODES; m++)
            if (strcmp(mode, util_modes[m]) == 0 && isnan(util[m]))
                util[m] = s->value;
    }
}

static void util_cells(struct csv_buf *b, const double util[UTIL_MODES])
{
    for (size_t m = 0; m < UTIL_MODES; m++) {
        b->data[b->len++] = ',';
        put_num(b, util[m]);
    }
}

/* The rows of carma_node_power_watts into nodes.csv (one with blank cells when none). */
static void node_rows(struct collect_out *o, const struct prom_doc *doc, const char *node,
                      const char *target, struct collect_scrape_info *info)
{
    ssize_t nc = index_family(o, doc, FAM_NODE_ENERGY);
    if (nc < 0) {
        o->oom = true;
        return;
    }
    struct csv_buf *b = &o->nodes.buf;
    double util[UTIL_MODES];
    size_t k = 0;
    for (size_t i = 0; i < doc->nsamples; i++) {
        const struct prom_sample *s = &doc->samples[i];
        if (o->fam[i] != FAM_NODE_POWER)
            continue;
        const char *n = label(s, "node");
        const char *method = label(s, "method");
        if (!method)
            method = "";
        if (!row_start(o, b, node_col(o, n, node), target, 2 * strlen(method) + 8 * 32 + 16))
            return;
        csv_buf_field(b, method, 0);
        b->data[b->len++] = ',';
        put_watts(b, s->value, info);
        b->data[b->len++] = ',';
        const struct prom_sample *j = match(o, doc, (size_t)nc, k, s);
        if (j)
            put_num(b, j->value);
        utilization(o, doc, n, util);
        util_cells(b, util);
        row_end(b);
        o->nodes.rows_pending++;
        info->node_rows++;
        k++;
    }
    if (info->node_rows)
        return;
    /* no node power: the utilization alone (or nothing) */
    utilization(o, doc, NULL, util);
    if (!row_start(o, b, node_col(o, info->node_label, node), target, 8 * 32 + 16))
        return;
    memcpy(b->data + b->len, ",,,", 3);
    b->len += 3;
    util_cells(b, util);
    row_end(b);
    o->nodes.rows_pending++;
}

/* The prefix of the rows of the current target: "1,<timestamp>,<seq>,". */
static void row_prefix(struct collect_out *o, int64_t real_ns, bool label_wins)
{
    size_t n = 0;
    o->prefix[n++] = '1';
    o->prefix[n++] = ',';
    n += fmt_unix_us(o->prefix + n, real_ns);
    o->prefix[n++] = ',';
    n += fmt_u64(o->prefix + n, o->seq);
    o->prefix[n++] = ',';
    o->prefix_len = n;
    o->label_wins = label_wins;
}

void collect_out_target(struct collect_out *o, int64_t real_ns, const char *node, bool label_wins,
                        const char *target, const struct prom_doc *doc,
                        struct collect_scrape_info *info)
{
    struct collect_scrape_info dummy;
    if (!info)
        info = &dummy;
    memset(info, 0, sizeof *info);
    if (!o || !o->in_cycle)
        return;
    row_prefix(o, real_ns, label_wins);

    if (doc && doc->nsamples > o->nfam_cap) {
        size_t cap = o->nfam_cap ? o->nfam_cap : 256;
        while (cap < doc->nsamples)
            cap *= 2;
        unsigned char *p = realloc(o->fam, cap);
        if (!p) {
            o->oom = true;
            return;
        }
        o->fam = p;
        o->nfam_cap = cap;
    }
    if (doc) {
        for (size_t i = 0; i < doc->nsamples; i++) {
            const struct prom_sample *s = &doc->samples[i];
            enum family f = family_of(s->name);
            o->fam[i] = (unsigned char)f;
            if (!info->node_label && f != FAM_OTHER && f != FAM_SRT_CPU) {
                const char *l = label(s, "node");
                if (l && *l)
                    info->node_label = l;
            }
            if (f == FAM_SRT_CPU)
                info->srt_cpu = true;
        }
        power_rows(o, doc, node, target, info);
        node_rows(o, doc, node, target, info);
    }
    if (info->power_rows == 0) {
        struct csv_buf *b = &o->samples.buf;
        if (row_start(o, b, node_col(o, info->node_label, node), target, 16)) {
            memcpy(b->data + b->len, ",,,,,,,", 7); /* channel .. joules_total */
            b->len += 7;
            row_end(b);
            o->samples.rows_pending++;
        }
    }
    if (!doc) {
        struct csv_buf *b = &o->nodes.buf;
        if (row_start(o, b, node, target, 16)) {
            memcpy(b->data + b->len, ",,,,,,,,", 8); /* method .. cpu_util_irq */
            b->len += 8;
            row_end(b);
            o->nodes.rows_pending++;
        }
    }
}

/* Appends "N" (a decimal unsigned) to b. Room must be reserved. */
static void put_uint(struct csv_buf *b, unsigned v)
{
    b->len += fmt_u64(b->data + b->len, v);
}

void collect_out_dcgm(struct collect_out *o, int64_t real_ns, const char *node, const char *target,
                      const struct dcgm_scrape *d, struct collect_scrape_info *info)
{
    struct collect_scrape_info dummy;
    if (!info)
        info = &dummy;
    memset(info, 0, sizeof *info);
    if (!o || !o->in_cycle)
        return;
    row_prefix(o, real_ns, false);
    struct csv_buf *b = &o->samples.buf;
    for (size_t i = 0; d && i < d->n; i++) {
        const struct dcgm_reading *r = &d->r[i];
        if (!row_start(o, b, node, target, 2 * 32 + 96))
            return;
        static const char gpu[] = ",dcgm/gpu", mig[] = "/mig";
        memcpy(b->data + b->len, gpu, sizeof gpu - 1);
        b->len += sizeof gpu - 1;
        put_uint(b, r->gpu_index);
        if (r->mig) {
            memcpy(b->data + b->len, mig, sizeof mig - 1);
            b->len += sizeof mig - 1;
            put_uint(b, r->mig_id);
        }
        const char *rest = r->mig ? ",dcgm,gpu,component,measured," : ",dcgm,gpu,total,measured,";
        size_t rn = strlen(rest);
        memcpy(b->data + b->len, rest, rn);
        b->len += rn;
        put_num(b, r->power_w);
        b->data[b->len++] = ',';
        put_num(b, r->energy_j);
        row_end(b);
        o->samples.rows_pending++;
        info->power_rows++;
    }
    if (info->power_rows == 0 && row_start(o, b, node, target, 16)) {
        memcpy(b->data + b->len, ",,,,,,,", 7); /* channel .. joules_total */
        b->len += 7;
        row_end(b);
        o->samples.rows_pending++;
    }
    struct csv_buf *nb = &o->nodes.buf;
    if (row_start(o, nb, node, target, 16)) {
        memcpy(nb->data + nb->len, ",,,,,,,,", 8); /* method .. cpu_util_irq */
        nb->len += 8;
        row_end(nb);
        o->nodes.rows_pending++;
    }
}

void collect_out_sampler(struct collect_out *o, const char *node, const char *target,
                         const struct sampler *s)
{
    if (!o || !o->in_cycle || !s)
        return;
    row_prefix(o, s->real_now, false);
    struct csv_buf *b = &o->samples.buf;
    for (size_t i = 0; i < s->set.n; i++) {
        const struct channel *c = &s->set.ch[i];
        const char *cells[5] = {c->name, c->source ? c->source : "", channel_kind_name(c->kind),
                                channel_domain_name(c->domain), channel_method_name(c->method)};
        size_t more = 2 * 32 + 16;
        for (size_t k = 0; k < 5; k++)
            more += 2 * strlen(cells[k]) + 3;
        if (!row_start(o, b, node, target, more))
            return;
        for (size_t k = 0; k < 5; k++)
            csv_buf_field(b, cells[k], 0);
        b->data[b->len++] = ',';
        const struct chan_state *st = &s->st[i];
        if (st->tick_valid && st->watts >= 0)
            put_num(b, st->watts);
        b->data[b->len++] = ',';
        if (st->samples)
            put_num(b, st->energy_j);
        row_end(b);
        o->samples.rows_pending++;
    }
    int idx[CHANNELS_MAX];
    size_t n = sampler_select_node(s, idx);
    bool measured = false, estimated = false, valid = n > 0;
    double w = 0, j = 0;
    for (size_t k = 0; k < n; k++) {
        const struct chan_state *st = &s->st[idx[k]];
        if (s->set.ch[idx[k]].method == METHOD_MEASURED)
            measured = true;
        else
            estimated = true;
        valid = valid && st->tick_valid && isfinite(st->watts) && st->watts >= 0;
        w += st->watts;
        j += st->energy_j;
    }
    const char *method = measured && estimated ? "measured+estimated"
                         : measured            ? "measured"
                         : estimated           ? "estimated"
                                               : "";
    struct csv_buf *nb = &o->nodes.buf;
    if (!row_start(o, nb, node, target, 2 * strlen(method) + 8 * 32 + 16))
        return;
    csv_buf_field(nb, method, 0);
    nb->data[nb->len++] = ',';
    if (valid)
        put_num(nb, w);
    nb->data[nb->len++] = ',';
    if (n)
        put_num(nb, j);
    double util[UTIL_MODES] = {NAN, NAN, NAN, NAN, NAN};
    const struct procstat *u = &s->util;
    if (s->have_util && u->primed && u->valid) {
        util[0] = u->util_total;
        util[1] = u->util_user;
        util[2] = u->util_nice;
        util[3] = u->util_sys;
        util[4] = u->util_irq;
    }
    util_cells(nb, util);
    row_end(nb);
    o->nodes.rows_pending++;
}

int collect_out_cycle_end(struct collect_out *o, struct carma_err *e)
{
    if (!o || !o->in_cycle)
        return carma_err_set(e, -EINVAL, "collect: cycle ended before it began");
    o->in_cycle = false;
    if (o->oom)
        return carma_err_set(e, -ENOMEM, "cannot write %s: out of memory (a cycle dropped)",
                             o->samples.path);
    int r = file_flush(&o->samples, e);
    struct carma_err e2 = {0};
    int r2 = file_flush(&o->nodes, &e2);
    if (r == 0 && r2 < 0) {
        carma_err_set(e, r2, "%s", e2.msg);
        r = r2;
    }
    return r;
}

uint64_t collect_out_rows(const struct collect_out *o)
{
    return o ? o->samples.rows : 0;
}

int collect_out_close(struct collect_out *o, struct carma_err *e)
{
    if (!o)
        return 0;
    int r = file_close(&o->samples, e);
    struct carma_err e2 = {0};
    int r2 = file_close(&o->nodes, &e2);
    if (r == 0 && r2 < 0) {
        carma_err_set(e, r2, "%s", e2.msg);
        r = r2;
    }
    free(o->counters);
    free(o->fam);
    free(o);
    return r;
}

/* ---- backoff ---- */

bool collect_backoff_due(const struct collect_backoff *b, uint64_t seq)
{
    return seq >= b->next_seq;
}

void collect_backoff_record(struct collect_backoff *b, uint64_t seq, bool ok, uint64_t max_skip)
{
    if (ok) {
        b->failures = 0;
        b->next_seq = seq + 1;
        return;
    }
    if (b->failures < 63)
        b->failures++;
    uint64_t skip = (uint64_t)1 << (b->failures - 1);
    if (max_skip < 1)
        max_skip = 1;
    if (skip > max_skip)
        skip = max_skip;
    b->next_seq = seq + 1 + skip;
}
