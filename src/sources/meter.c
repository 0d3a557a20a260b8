/*
 * meter: wall power meters (Watts Up? Pro on a serial line, a command printing watts) behind
 * the source interface, read on a background thread (see meter.h).
 *
 * The thread owns the serial fd (or the command's child); the sampler's read() only takes the
 * mutex and copies the latest record out. A cmd meter's command runs below an intermediate
 * process started with no exit signal (cmd_run_once), so that `carma stat` and `carma run`,
 * which reap every child of theirs with wait4(-1) and count the CPU time of the orphans they
 * adopt as the command's, never see it: only this thread waits for it (__WALL).
 */
#include "sources/meter.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "core/parse.h"
#include "core/timeutil.h"

extern char **environ;

#define METER_DEVICE_MAX 256
#define METER_OUT_MAX    4096
#define METER_ERR_MAX    512
#define METER_WATTS_MAX  1e6

struct meter {
    struct meter_spec spec;
    char text[METER_SPEC_MAX + 16]; /* the spec as given, for messages */
    int64_t period_ns;
    int fd;      /* wattsup: the serial line (the thread's once it runs), -1 when unplugged */
    int stop_fd; /* eventfd: readable when the thread must end */
    int null_fd; /* cmd: /dev/null, the command's stdin */
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t lock;
    /* under lock */
    bool have;        /* a record is held */
    double watts;     /* its power */
    int64_t t_ns;     /* its monotonic time */
    int64_t stale_ns; /* a record older than this is no reading */
    int err;          /* why there is none (negative errno) */
    uint64_t records, garbage, disconnects, reconnects;
    bool connected;
    char last_error[256];
    /* the thread's (and probe's, before the thread starts) */
    struct wattsup_framer fr;
    char out[METER_OUT_MAX];
    size_t out_len;
    char errout[METER_ERR_MAX];
    size_t err_len;
};

/* ---- specs and parsers ---- */

int meter_spec_parse(const char *spec, struct meter_spec *ret, char *err, size_t errlen)
{
    const char *colon = spec ? strchr(spec, ':') : NULL;
    if (!colon) {
        snprintf(err, errlen,
                 "'%s' is not TYPE:ARGUMENT (wattsup:DEVICE or cmd:COMMAND, e.g. "
                 "wattsup:/dev/ttyUSB0 or cmd:'ipmitool dcmi power reading')",
                 spec ? spec : "");
        return -EINVAL;
    }
    size_t tlen = (size_t)(colon - spec);
    const char *arg = colon + 1;
    bool blank = true;
    for (const char *p = arg; *p; p++)
        blank = blank && isspace((unsigned char)*p);
    enum meter_type type;
    if (tlen == 7 && strncmp(spec, "wattsup", 7) == 0) {
        type = METER_WATTSUP;
        if (blank) {
            snprintf(err, errlen, "no device after 'wattsup:' (e.g. wattsup:/dev/ttyUSB0)");
            return -EINVAL;
        }
        if (strlen(arg) >= METER_DEVICE_MAX) {
            snprintf(err, errlen, "the device path is longer than %d bytes", METER_DEVICE_MAX - 1);
            return -EINVAL;
        }
    } else if (tlen == 3 && strncmp(spec, "cmd", 3) == 0) {
        type = METER_CMD;
        if (blank) {
            snprintf(err, errlen,
                     "no command after 'cmd:' (e.g. cmd:'ipmitool dcmi power reading')");
            return -EINVAL;
        }
        if (strlen(arg) >= METER_SPEC_MAX) {
            snprintf(err, errlen, "the command is longer than %d bytes", METER_SPEC_MAX - 1);
            return -EINVAL;
        }
    } else {
        snprintf(err, errlen, "unknown meter type '%.*s' (known: wattsup:DEVICE, cmd:COMMAND)",
                 (int)(tlen > 32 ? 32 : tlen), spec);
        return -EINVAL;
    }
    ret->type = type;
    snprintf(ret->arg, sizeof ret->arg, "%s", arg);
    return 0;
}

/* A protocol number: ASCII digits only. */
static int wattsup_number(const char *s, uint64_t *ret)
{
    if (!*s || strlen(s) > 12)
        return -EINVAL;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return -EINVAL;
    return parse_u64(s, ret);
}

int wattsup_parse_packet(const char *pkt, size_t len, struct meter_record *ret)
{
    if (len < 3 || len > WATTSUP_PACKET_MAX || pkt[0] != '#' || pkt[len - 1] != ';')
        return -EINVAL;
    /* a NUL from a noisy line would end the fields early and hide what follows it */
    if (memchr(pkt, '\0', len))
        return -EINVAL;
    char buf[WATTSUP_PACKET_MAX];
    memcpy(buf, pkt + 1, len - 2);
    buf[len - 2] = '\0';
    char *field[WATTSUP_PACKET_MAX / 2 + 1];
    size_t n = 0;
    for (char *p = buf;;) {
        if (n == sizeof field / sizeof field[0])
            return -EINVAL; /* more fields than any record has: garbage from the line */
        field[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            break;
        *comma = '\0';
        p = comma + 1;
    }
    /* a command letter: "d" is a data record; any other letter, a reply the meter sends */
    if (strlen(field[0]) != 1 || !isalpha((unsigned char)field[0][0]))
        return -EINVAL;
    if (field[0][0] != 'd')
        return -ENOMSG;
    uint64_t count, w, v, a;
    if (n < 6 || wattsup_number(field[2], &count) < 0 || count != n - 3)
        return -EINVAL;
    if (wattsup_number(field[3], &w) < 0)
        return -EINVAL;
    /* volts and amps may be "_" (not selected) */
    bool have_v = wattsup_number(field[4], &v) == 0, have_a = wattsup_number(field[5], &a) == 0;
    if ((!have_v && strcmp(field[4], "_") != 0) || (!have_a && strcmp(field[5], "_") != 0))
        return -EINVAL;
    ret->watts = (double)w / 10.0;
    ret->volts = have_v ? (double)v / 10.0 : NAN;
    ret->amps = have_a ? (double)a / 1000.0 : NAN;
    return 0;
}

void wattsup_framer_init(struct wattsup_framer *f)
{
    memset(f, 0, sizeof *f);
}

static void framer_start(struct wattsup_framer *f)
{
    f->in_packet = true;
    f->len = 0;
    f->buf[f->len++] = '#';
}

enum wattsup_event wattsup_framer_push(struct wattsup_framer *f, char c, struct meter_record *rec)
{
    if (f->in_packet) {
        if (c == '\r' || c == '\n' || c == '#') {
            /* a packet cut short; a '#' starts the next one */
            f->in_packet = false;
            f->stray = false;
            if (c == '#')
                framer_start(f);
            return WATTSUP_GARBAGE;
        }
        if (f->len >= sizeof f->buf) {
            f->in_packet = false;
            f->skip = true;
            return WATTSUP_GARBAGE;
        }
        f->buf[f->len++] = c;
        if (c != ';')
            return WATTSUP_NONE;
        f->in_packet = false;
        int r = wattsup_parse_packet(f->buf, f->len, rec);
        return r == 0 ? WATTSUP_RECORD : r == -ENOMSG ? WATTSUP_OTHER : WATTSUP_GARBAGE;
    }
    if (c == '\r' || c == '\n') {
        bool stray = f->stray;
        f->stray = f->skip = false;
        return stray ? WATTSUP_GARBAGE : WATTSUP_NONE;
    }
    if (f->skip)
        return WATTSUP_NONE;
    if (c == '#') {
        bool stray = f->stray;
        f->stray = false;
        framer_start(f);
        return stray ? WATTSUP_GARBAGE : WATTSUP_NONE;
    }
    if (c != ' ' && c != '\t' && c != '\0')
        f->stray = true;
    return WATTSUP_NONE;
}

int meter_parse_watts(const char *text, size_t len, double *ret)
{
    for (size_t i = 0; i < len; i++) {
        bool digit = isdigit((unsigned char)text[i]);
        bool dot = text[i] == '.' && i + 1 < len && isdigit((unsigned char)text[i + 1]);
        if (!digit && !dot)
            continue;
        /* a number standing on its own: "sensor2" or "v1.5" is not one, nor is "-5" (no meter
         * draws negative watts: a reading that says so is not taken) */
        if (i > 0 && (isalnum((unsigned char)text[i - 1]) || text[i - 1] == '.' ||
                      text[i - 1] == '_' || text[i - 1] == '-'))
            continue;
        size_t j = i;
        while (j < len && isdigit((unsigned char)text[j]))
            j++;
        if (j < len && text[j] == '.') {
            j++;
            while (j < len && isdigit((unsigned char)text[j]))
                j++;
        }
        if (j + 1 < len && (text[j] == 'e' || text[j] == 'E')) {
            size_t k = j + 1;
            if (k < len && (text[k] == '+' || text[k] == '-'))
                k++;
            if (k < len && isdigit((unsigned char)text[k])) {
                while (k < len && isdigit((unsigned char)text[k]))
                    k++;
                j = k;
            }
        }
        char num[64];
        if (j - i >= sizeof num)
            return -ERANGE;
        memcpy(num, text + i, j - i);
        num[j - i] = '\0';
        double v;
        if (parse_double(num, &v) < 0)
            return -ERANGE;
        if (v > METER_WATTS_MAX)
            return -ERANGE;
        *ret = v;
        return 0;
    }
    return -EINVAL;
}

/* ---- the record ---- */

static void meter_set_record(struct meter *m, double watts, int64_t t)
{
    pthread_mutex_lock(&m->lock);
    m->have = true;
    m->watts = watts;
    m->t_ns = t;
    m->err = 0;
    m->records++;
    m->connected = true;
    pthread_mutex_unlock(&m->lock);
}

static void meter_set_error(struct meter *m, int err, bool drop, const char *why)
{
    pthread_mutex_lock(&m->lock);
    if (drop)
        m->have = false;
    m->err = err;
    snprintf(m->last_error, sizeof m->last_error, "%s", why);
    pthread_mutex_unlock(&m->lock);
}

/* Waits up to ns for the stop event; true when the thread must end. */
static bool meter_wait_stop(struct meter *m, int64_t ns)
{
    struct pollfd p = {.fd = m->stop_fd, .events = POLLIN};
    int ms = ns > 0 ? (int)((ns + NS_PER_MS - 1) / NS_PER_MS) : 0;
    int r = poll(&p, 1, ms);
    return r > 0 && (p.revents & POLLIN);
}

static const char *why_hint(int err)
{
    switch (err) {
    case ENOENT:
    case ENODEV:
    case ENXIO:
        return " (is the meter plugged in? USB serial adapters appear as /dev/ttyUSB*)";
    case EACCES:
    case EPERM:
        return " (add the user to the group owning the device, usually dialout)";
    case EBUSY:
        return " (another program holds the port)";
    default:
        return "";
    }
}

/* ---- wattsup: the serial line ---- */

/* Writes all of buf to the non-blocking fd, waiting up to 1 s for room. */
static int write_all(int fd, const char *buf, size_t n)
{
    int64_t deadline = time_mono_ns() + NS_PER_S;
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w > 0) {
            buf += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return -errno;
        if (time_mono_ns() >= deadline)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        poll(&p, 1, 50);
    }
    return 0;
}

/*
 * Opens the device, sets 115200 8N1 raw, drops what was waiting and sends the logging
 * command. Returns the fd, or a negative errno with why set.
 */
static int wattsup_open(const char *dev, char *why, size_t n)
{
    int fd = open(dev, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(why, n, "cannot open %s: %s%s", dev, strerror(e), why_hint(e));
        return -e;
    }
    struct termios t;
    if (!isatty(fd) || tcgetattr(fd, &t) < 0) {
        close(fd);
        snprintf(why, n, "%s is not a serial port (not a tty)", dev);
        return -ENOTTY;
    }
    cfmakeraw(&t);
    t.c_cflag &= ~(tcflag_t)(CSIZE | PARENB | CSTOPB | CRTSCTS);
    t.c_cflag |= CS8 | CLOCAL | CREAD;
    t.c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY);
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    cfsetispeed(&t, B115200);
    cfsetospeed(&t, B115200);
    if (tcsetattr(fd, TCSANOW, &t) < 0) {
        int e = errno;
        close(fd);
        snprintf(why, n, "cannot set %s to 115200 8N1: %s", dev, strerror(e));
        return -e;
    }
    tcflush(fd, TCIFLUSH);
    int r = write_all(fd, WATTSUP_LOG_COMMAND, strlen(WATTSUP_LOG_COMMAND));
    if (r < 0) {
        close(fd);
        snprintf(why, n, "cannot send the logging command to %s: %s", dev, strerror(-r));
        return r;
    }
    return fd;
}

/* Feeds bytes to the framer; returns the records found (the latest one in *last). */
static int wattsup_feed(struct meter *m, const char *buf, size_t n, struct meter_record *last,
                        uint64_t *garbage)
{
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        struct meter_record rec;
        enum wattsup_event ev = wattsup_framer_push(&m->fr, buf[i], &rec);
        if (ev == WATTSUP_RECORD) {
            *last = rec;
            found++;
        } else if (ev == WATTSUP_GARBAGE) {
            (*garbage)++;
        }
    }
    return found;
}

/* Waits for the first record after the logging command: the meter is a Watts Up?. */
static int wattsup_probe(struct meter *m, char *why, size_t n)
{
    const char *dev = m->spec.arg;
    int fd = wattsup_open(dev, why, n);
    if (fd < 0)
        return fd;
    wattsup_framer_init(&m->fr);
    int64_t deadline = time_mono_ns() + METER_PROBE_TIMEOUT_NS;
    uint64_t bytes = 0, garbage = 0;
    for (;;) {
        int64_t left = deadline - time_mono_ns();
        if (left <= 0)
            break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int k = poll(&p, 1, (int)(left / NS_PER_MS) + 1);
        if (k < 0 && errno != EINTR)
            break;
        if (k <= 0)
            continue;
        char buf[512];
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (r <= 0) {
            snprintf(why, n, "%s closed before sending a record (%s)", dev,
                     r == 0 ? "end of file" : strerror(errno));
            close(fd);
            return -EIO;
        }
        bytes += (uint64_t)r;
        struct meter_record rec = {NAN, NAN, NAN};
        if (wattsup_feed(m, buf, (size_t)r, &rec, &garbage) > 0) {
            m->fd = fd;
            m->garbage = garbage;
            meter_set_record(m, rec.watts, time_mono_ns());
            return 0;
        }
    }
    close(fd);
    snprintf(why, n,
             "no Watts Up? record (#d,...;) from %s within %.0f s of the logging command %s "
             "(%llu bytes, %llu garbage lines received): is it a Watts Up? Pro, switched on?",
             dev, (double)METER_PROBE_TIMEOUT_NS / 1e9, WATTSUP_LOG_COMMAND,
             (unsigned long long)bytes, (unsigned long long)garbage);
    return -EIO;
}

static void wattsup_disconnect(struct meter *m, const char *what)
{
    close(m->fd);
    m->fd = -1;
    char why[320];
    snprintf(why, sizeof why, "%s went away (%s); looking for it every second", m->spec.arg, what);
    pthread_mutex_lock(&m->lock);
    m->disconnects++;
    m->connected = false;
    pthread_mutex_unlock(&m->lock);
    meter_set_error(m, -ENODEV, true, why);
}

static void *wattsup_thread(void *arg)
{
    struct meter *m = arg;
    int64_t last_rx = time_mono_ns(); /* last record, or the logging command sent */
    for (;;) {
        if (m->fd < 0) {
            char why[320];
            int fd = wattsup_open(m->spec.arg, why, sizeof why);
            if (fd < 0) {
                meter_set_error(m, -ENODEV, true, why);
                if (meter_wait_stop(m, METER_RETRY_NS))
                    break;
                continue;
            }
            m->fd = fd;
            wattsup_framer_init(&m->fr);
            last_rx = time_mono_ns();
            pthread_mutex_lock(&m->lock);
            m->reconnects++;
            m->connected = true;
            pthread_mutex_unlock(&m->lock);
        }
        struct pollfd p[2] = {
            {.fd = m->fd, .events = POLLIN},
            {.fd = m->stop_fd, .events = POLLIN},
        };
        int k = poll(p, 2, 250);
        if (k < 0 && errno != EINTR) {
            int err = -errno;
            char why[128];
            snprintf(why, sizeof why, "the reader stopped: poll: %s", strerror(-err));
            meter_set_error(m, err, true, why);
            break;
        }
        if (p[1].revents & POLLIN)
            break;
        int64_t now = time_mono_ns();
        if (k > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
            char buf[512];
            ssize_t r = read(m->fd, buf, sizeof buf);
            if (r > 0) {
                struct meter_record rec = {NAN, NAN, NAN};
                uint64_t garbage = 0;
                int found = wattsup_feed(m, buf, (size_t)r, &rec, &garbage);
                if (garbage) {
                    pthread_mutex_lock(&m->lock);
                    m->garbage += garbage;
                    pthread_mutex_unlock(&m->lock);
                }
                if (found) {
                    meter_set_record(m, rec.watts, now);
                    last_rx = now;
                }
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                wattsup_disconnect(m, r == 0 ? "end of file" : strerror(errno));
                continue;
            }
        }
        /* silent (a meter that lost power forgets the logging mode): ask again */
        if (now - last_rx > METER_STALE_PERIODS * m->period_ns) {
            if (write_all(m->fd, WATTSUP_LOG_COMMAND, strlen(WATTSUP_LOG_COMMAND)) < 0) {
                wattsup_disconnect(m, "write failed");
                continue;
            }
            char why[320];
            snprintf(why, sizeof why, "no record from %s for %.0f s; logging command sent again",
                     m->spec.arg, (double)(now - last_rx) / 1e9);
            meter_set_error(m, -ETIMEDOUT, false, why);
            last_rx = now;
        }
    }
    return NULL;
}

/* ---- cmd: a command printing watts ---- */

struct cmd_child {
    const char *cmd;
    int in_fd, out_fd, err_fd, status_fd;
};

/*
 * The intermediate process: a copy of carma started with no exit signal, which only the meter's
 * thread waits for. It leads a process group (killed whole on a timeout), starts /bin/sh -c
 * COMMAND with vfork (no atfork handler, no lock of the threads left behind), waits for it
 * and writes its wait status to status_fd. Only async-signal-safe calls from here on.
 */
static void cmd_intermediate(const struct cmd_child *c)
{
    setpgid(0, 0);
    pid_t p = vfork();
    if (p == 0) {
        if (dup2(c->in_fd, 0) < 0 || dup2(c->out_fd, 1) < 0 || dup2(c->err_fd, 2) < 0)
            _exit(127);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(SIGPIPE, &sa, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        char *argv[] = {"sh", "-c", (char *)c->cmd, NULL};
        execve("/bin/sh", argv, environ);
        _exit(127);
    }
    int ws = 127 << 8;
    if (p > 0)
        while (waitpid(p, &ws, 0) < 0 && errno == EINTR)
            ;
    ssize_t w = write(c->status_fd, &ws, sizeof ws);
    _exit(w == (ssize_t)sizeof ws ? 0 : 1);
}

/* Reads what is there into buf (cap bytes, the rest dropped); false at end of file. */
static bool drain(int fd, char *buf, size_t *len, size_t cap)
{
    char scratch[512];
    for (;;) {
        char *dst = *len + 1 < cap ? buf + *len : scratch;
        size_t room = *len + 1 < cap ? cap - 1 - *len : sizeof scratch;
        ssize_t r = read(fd, dst, room);
        if (r > 0) {
            if (dst == buf + *len)
                *len += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        return r < 0 && errno == EAGAIN;
    }
}

/* The first line of text (at most 120 characters), for messages. */
static void first_line(const char *text, char *out, size_t n)
{
    while (*text && isspace((unsigned char)*text))
        text++;
    size_t k = strcspn(text, "\r\n");
    if (k > 120)
        k = 120;
    snprintf(out, n, "%.*s", (int)k, text);
}

/*
 * Runs the command once, its output in m->out. Returns 0 with the power in *ret, -ECANCELED
 * when stopped, another negative errno with why set.
 */
static int cmd_run_once(struct meter *m, double *ret, char *why, size_t n)
{
    int out[2] = {-1, -1}, err[2] = {-1, -1}, st[2] = {-1, -1};
    int r = 0;
    const char *cmd = m->spec.arg;
    if (pipe2(out, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(err, O_CLOEXEC | O_NONBLOCK) < 0 ||
        pipe2(st, O_CLOEXEC | O_NONBLOCK) < 0) {
        r = -errno;
        snprintf(why, n, "cannot make a pipe: %s", strerror(-r));
        goto out;
    }
    struct cmd_child c = {
        .cmd = cmd, .in_fd = m->null_fd, .out_fd = out[1], .err_fd = err[1], .status_fd = st[1]};
    /*
     * Like fork(), but with no exit signal: `carma stat` and `carma run` reap every child of
     * theirs with wait4(-1) (and count the CPU time of those they adopt as the command's); a
     * child with no exit signal that does not exec is one that only __WALL waits for. (exec
     * would make it an ordinary child again: the shell is the intermediate's child.)
     */
    pid_t pid = (pid_t)syscall(SYS_clone, 0UL, NULL, NULL, NULL, NULL);
    if (pid == 0)
        cmd_intermediate(&c);
    if (pid < 0) {
        r = -errno;
        snprintf(why, n, "cannot start /bin/sh: %s", strerror(-r));
        goto out;
    }
    close(out[1]);
    close(err[1]);
    close(st[1]);
    out[1] = err[1] = st[1] = -1;
    m->out_len = m->err_len = 0;
    int64_t deadline = time_mono_ns() + METER_CMD_TIMEOUT_NS;
    bool out_open = true, err_open = true, have_status = false, lost = false;
    bool timed_out = false, stopped = false;
    int ws = 0;
    size_t ws_len = 0;
    /* until the shell's status arrives (what it left running may keep the output open) */
    while (!have_status && !lost && !timed_out && !stopped) {
        int64_t left = deadline - time_mono_ns();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p[4] = {
            {.fd = out_open ? out[0] : -1, .events = POLLIN},
            {.fd = err_open ? err[0] : -1, .events = POLLIN},
            {.fd = st[0], .events = POLLIN},
            {.fd = m->stop_fd, .events = POLLIN},
        };
        int k = poll(p, 4, (int)(left / NS_PER_MS) + 1);
        if (k < 0 && errno != EINTR)
            timed_out = true;
        if (k <= 0)
            continue;
        if (p[3].revents & POLLIN)
            stopped = true;
        if (p[0].revents)
            out_open = drain(out[0], m->out, &m->out_len, sizeof m->out);
        if (p[1].revents)
            err_open = drain(err[0], m->errout, &m->err_len, sizeof m->errout);
        if (p[2].revents) {
            ssize_t got = read(st[0], (char *)&ws + ws_len, sizeof ws - ws_len);
            if (got > 0)
                ws_len += (size_t)got;
            else if (got == 0 || (errno != EAGAIN && errno != EINTR))
                lost = true;
            have_status = ws_len == sizeof ws;
        }
    }
    if (have_status) {
        /* what the shell wrote just before it ended */
        if (out_open)
            drain(out[0], m->out, &m->out_len, sizeof m->out);
        if (err_open)
            drain(err[0], m->errout, &m->err_len, sizeof m->errout);
    } else {
        kill(pid, SIGKILL);
    }
    /* whatever the command left running in its group ("cmd &") goes too: the group cannot be
     * another's yet, its leader is not reaped */
    kill(-pid, SIGKILL);
    int iws;
    while (waitpid(pid, &iws, __WALL) < 0 && errno == EINTR)
        ;
    m->out[m->out_len] = '\0';
    m->errout[m->err_len] = '\0';
    char line[160];
    if (stopped) {
        r = -ECANCELED;
        snprintf(why, n, "stopped");
    } else if (timed_out) {
        r = -ETIMEDOUT;
        snprintf(why, n, "'%.80s' did not finish within %.0f s: killed", cmd,
                 (double)METER_CMD_TIMEOUT_NS / 1e9);
    } else if (!have_status) {
        r = -EIO;
        snprintf(why, n, "'%.80s': its shell vanished", cmd);
    } else if (WIFSIGNALED(ws)) {
        r = -EIO;
        snprintf(why, n, "'%.80s' was killed by signal %d", cmd, WTERMSIG(ws));
    } else if (WEXITSTATUS(ws) != 0) {
        r = -EIO;
        first_line(m->err_len ? m->errout : m->out, line, sizeof line);
        snprintf(why, n, "'%.80s' exited with status %d%s%s", cmd, WEXITSTATUS(ws),
                 line[0] ? ": " : "", line);
    } else {
        int p = meter_parse_watts(m->out, m->out_len, ret);
        if (p < 0) {
            r = p;
            first_line(m->out, line, sizeof line);
            snprintf(why, n, "'%.80s' printed %s: '%s'", cmd,
                     p == -ERANGE ? "no plausible power (over 1 MW)" : "no number", line);
        }
    }
out:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
        if (st[i] >= 0)
            close(st[i]);
    }
    return r;
}

static void *cmd_thread(void *arg)
{
    struct meter *m = arg;
    int64_t next = time_mono_ns() + m->period_ns;
    for (;;) {
        if (meter_wait_stop(m, next - time_mono_ns()))
            break;
        int64_t t0 = time_mono_ns();
        next += m->period_ns;
        if (next < t0)
            next = t0 + m->period_ns; /* a slow command: the next run right after this one */
        double w;
        char why[320];
        int r = cmd_run_once(m, &w, why, sizeof why);
        if (r == -ECANCELED)
            break;
        int64_t t1 = time_mono_ns();
        if (r == 0) {
            pthread_mutex_lock(&m->lock);
            /* a slow command's records are further apart: they go stale later */
            m->stale_ns = METER_STALE_PERIODS * m->period_ns + (t1 - t0);
            pthread_mutex_unlock(&m->lock);
            meter_set_record(m, w, t1);
        } else {
            pthread_mutex_lock(&m->lock);
            m->garbage++;
            m->connected = false;
            pthread_mutex_unlock(&m->lock);
            meter_set_error(m, r, false, why);
        }
    }
    return NULL;
}

static int cmd_probe(struct meter *m, char *why, size_t n)
{
    m->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (m->null_fd < 0) {
        int e = errno;
        snprintf(why, n, "cannot open /dev/null: %s", strerror(e));
        return -e;
    }
    double w;
    int64_t t0 = time_mono_ns();
    int r = cmd_run_once(m, &w, why, n);
    if (r < 0)
        return r;
    int64_t t1 = time_mono_ns();
    m->stale_ns = METER_STALE_PERIODS * m->period_ns + (t1 - t0);
    meter_set_record(m, w, t1);
    return 0;
}

/* ---- the source ---- */

static int meter_probe(struct source *s, struct probe_ctx *ctx)
{
    if (!ctx->spec) {
        snprintf(s->reason, sizeof s->reason, "no meter given (--meter SPEC)");
        return -ENOENT;
    }
    struct meter_spec spec;
    char err[256];
    if (meter_spec_parse(ctx->spec, &spec, err, sizeof err) < 0) {
        snprintf(s->reason, sizeof s->reason, "%.200s: %s", ctx->spec, err);
        return -EINVAL;
    }
    struct meter *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(s->reason, sizeof s->reason, "out of memory");
        return -ENOMEM;
    }
    m->spec = spec;
    snprintf(m->text, sizeof m->text, "%s:%s", spec.type == METER_WATTSUP ? "wattsup" : "cmd",
             spec.arg);
    m->fd = m->stop_fd = m->null_fd = -1;
    m->period_ns = METER_PERIOD_NS;
    m->stale_ns = METER_STALE_PERIODS * METER_PERIOD_NS;
    m->watts = NAN;
    pthread_mutex_init(&m->lock, NULL);
    s->priv = m;
    m->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m->stop_fd < 0) {
        int e = errno;
        snprintf(s->reason, sizeof s->reason, "%.200s: eventfd: %s", m->text, strerror(e));
        return -e;
    }
    char why[512];
    int r = spec.type == METER_WATTSUP ? wattsup_probe(m, why, sizeof why)
                                       : cmd_probe(m, why, sizeof why);
    if (r < 0) {
        snprintf(s->reason, sizeof s->reason, "%.200s: %s", m->text, why);
        return r;
    }
    const char *base = spec.type == METER_WATTSUP ? "wattsup" : "cmd";
    char name[CHANNEL_NAME_MAX];
    for (int k = 1;; k++) {
        if (k == 1)
            snprintf(name, sizeof name, "meter/%s", base);
        else
            snprintf(name, sizeof name, "meter/%s%d", base, k);
        bool taken = false;
        for (size_t i = 0; i < ctx->set->n && !taken; i++)
            taken = strcmp(ctx->set->ch[i].name, name) == 0;
        if (!taken)
            break;
    }
    int idx = channel_set_add(ctx->set);
    if (idx < 0) {
        snprintf(s->reason, sizeof s->reason, "%.200s: too many channels", m->text);
        return idx;
    }
    struct channel *c = &ctx->set->ch[idx];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->source = "meter";
    c->kind = KIND_SYSTEM;
    snprintf(c->zone, sizeof c->zone, "wall");
    if (spec.type == METER_WATTSUP)
        snprintf(c->label, sizeof c->label, "Watts Up? Pro (115200 8N1, %s)", WATTSUP_LOG_COMMAND);
    else
        snprintf(c->label, sizeof c->label, "command printing watts, run every %.0f s",
                 (double)m->period_ns / 1e9);
    c->domain = DOMAIN_TOTAL;
    c->form = FORM_GAUGE;
    c->gauge_window_ns = m->period_ns;
    c->method = METHOD_MEASURED;
    snprintf(c->path, sizeof c->path, "%.*s", CHANNEL_PATH_MAX - 1, m->text);
    /* the thread takes no signal: they stay with the main thread's signalfd */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&m->thread, NULL,
                           spec.type == METER_WATTSUP ? wattsup_thread : cmd_thread, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        snprintf(s->reason, sizeof s->reason, "%.200s: cannot start its thread: %s", m->text,
                 strerror(e));
        return -e;
    }
    m->thread_started = true;
    if (spec.type == METER_CMD)
        snprintf(s->note, sizeof s->note,
                 "%.300s: run every %.0f s with /bin/sh -c (killed after %.0f s); the first "
                 "number it prints is the power in watts",
                 m->text, (double)m->period_ns / 1e9, (double)METER_CMD_TIMEOUT_NS / 1e9);
    return 1;
}

static void meter_read(struct source *s, struct reading *out)
{
    struct meter *m = s->priv;
    int64_t now = time_mono_ns();
    pthread_mutex_lock(&m->lock);
    if (m->have && now - m->t_ns <= m->stale_ns) {
        out->valid = READING_POWER;
        out->power_w = m->watts;
        out->err = 0;
    } else {
        out->valid = 0;
        out->power_w = NAN;
        out->err = m->have ? -ETIMEDOUT : m->err ? m->err : -EAGAIN;
    }
    pthread_mutex_unlock(&m->lock);
}

static void meter_close(struct source *s)
{
    struct meter *m = s->priv;
    if (!m)
        return;
    if (m->thread_started) {
        uint64_t one = 1;
        if (write(m->stop_fd, &one, sizeof one) < 0) {
            /* an eventfd write fails only on overflow: it is readable then anyway */
        }
        pthread_join(m->thread, NULL);
    }
    if (m->fd >= 0)
        close(m->fd);
    if (m->stop_fd >= 0)
        close(m->stop_fd);
    if (m->null_fd >= 0)
        close(m->null_fd);
    pthread_mutex_destroy(&m->lock);
    free(m);
    s->priv = NULL;
}

const struct source_ops meter_source_ops = {
    .name = "meter",
    .probe = meter_probe,
    .read = meter_read,
    .close = meter_close,
};

bool meter_source_is(const struct source *s)
{
    return s && s->ops == &meter_source_ops;
}

int meter_stats_get(const struct source *s, struct meter_stats *ret)
{
    if (!meter_source_is(s) || s->status != 0 || !s->priv)
        return -EINVAL;
    struct meter *m = s->priv;
    memset(ret, 0, sizeof *ret);
    snprintf(ret->spec, sizeof ret->spec, "%s", m->text);
    ret->type = m->spec.type;
    int64_t now = time_mono_ns();
    pthread_mutex_lock(&m->lock);
    ret->records = m->records;
    ret->garbage = m->garbage;
    ret->disconnects = m->disconnects;
    ret->reconnects = m->reconnects;
    ret->connected = m->connected;
    ret->last_watts = m->have ? m->watts : NAN;
    ret->last_age_s = m->have ? (double)(now - m->t_ns) / 1e9 : NAN;
    snprintf(ret->last_error, sizeof ret->last_error, "%s", m->last_error);
    pthread_mutex_unlock(&m->lock);
    return 0;
}
