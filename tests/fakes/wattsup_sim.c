/*
 * carma-wattsup-sim: a Watts Up? Pro on a pseudo-terminal, for the meter tests.
 *
 * Opens a pty, links its slave side at --link PATH, waits for the external logging command
 * "#L,W,3,E,,1;" and then sends a "#d,-,18,<W*10>,<V*10>,<A*1000>,_,...;" record every
 * period with a known power profile, writing the ground truth (the cumulative energy of the
 * profile at each period) to --truth. It can inject garbage lines, simulate an unplug (the
 * pty closed and the link removed for a while, then a new pty at the same link), or stay
 * silent (a tty that is no Watts Up?). See tests/fakes/README.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define SCHEDULE_MAX 32

struct step {
    double at_s, watts;
};

struct sim {
    const char *link, *truth_path, *events_path, *pidfile;
    double period_s, volts, duration_s;
    struct step sched[SCHEDULE_MAX];
    size_t nsched;
    int garbage_every;
    double unplug_at_s, unplug_for_s;
    bool silent;
    int master;
    char slave[128];
    FILE *truth, *events;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double real_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "carma-wattsup-sim: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(2);
}

/* The power of the profile t seconds after logging started, as the meter reports it (0.1 W). */
static double power_at(const struct sim *s, double t)
{
    double w = s->sched[0].watts;
    for (size_t i = 0; i < s->nsched; i++)
        if (t >= s->sched[i].at_s)
            w = s->sched[i].watts;
    return round(w * 10.0) / 10.0;
}

static void event(struct sim *s, const char *what)
{
    if (!s->events)
        return;
    fprintf(s->events, "%s %.6f\n", what, real_s());
    fflush(s->events);
}

/* Opens a new pty and (re)links its slave side at s->link. */
static void open_pty(struct sim *s)
{
    s->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s->master < 0 || grantpt(s->master) < 0 || unlockpt(s->master) < 0)
        die("cannot open a pty: %s", strerror(errno));
    if (ptsname_r(s->master, s->slave, sizeof s->slave) != 0)
        die("ptsname: %s", strerror(errno));
    struct termios t;
    if (tcgetattr(s->master, &t) == 0) {
        cfmakeraw(&t);
        tcsetattr(s->master, TCSANOW, &t);
    }
    int fl = fcntl(s->master, F_GETFL);
    fcntl(s->master, F_SETFL, fl | O_NONBLOCK);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", s->link);
    unlink(tmp);
    if (symlink(s->slave, tmp) < 0 || rename(tmp, s->link) < 0)
        die("cannot link the pty at %s", s->link);
    printf("%s\n", s->slave);
    fflush(stdout);
}

static void write_str(struct sim *s, const char *text)
{
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t w = write(s->master, text, n);
        if (w <= 0)
            return; /* nobody listening (EIO) or full: a meter does not wait */
        text += w;
        n -= (size_t)w;
    }
}

static const char *const garbage_lines[] = {
    "WattsUp noise !!\r\n",
    "#d,-,18,xx,2301,1234,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_;\r\n", /* watts not a number */
    "#d,-,18,1500,2301\r\n",                                   /* cut short */
    "#d,-,5,1500,2301,652;\r\n",                               /* wrong field count */
};

static void parse_schedule(struct sim *s, const char *arg)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", arg);
    s->nsched = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon || s->nsched >= SCHEDULE_MAX)
            die("bad --schedule '%s' (T:W,T:W,...)", arg);
        s->sched[s->nsched].at_s = atof(tok);
        s->sched[s->nsched].watts = atof(colon + 1);
        s->nsched++;
    }
    if (s->nsched == 0)
        die("bad --schedule '%s'", arg);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: carma-wattsup-sim --link PATH --truth FILE [--power W | --schedule "
            "T:W,...] [--period S] [--volts V] [--garbage-every N] [--unplug-at S --unplug-for "
            "S] [--silent] [--events FILE] [--pidfile FILE] [--duration S]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct sim s = {.period_s = 1.0, .volts = 230.0, .duration_s = 120.0, .master = -1};
    s.sched[0].watts = 100.0;
    s.nsched = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--silent") == 0) {
            s.silent = true;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (strcmp(a, "--link") == 0)
            s.link = v;
        else if (strcmp(a, "--truth") == 0)
            s.truth_path = v;
        else if (strcmp(a, "--events") == 0)
            s.events_path = v;
        else if (strcmp(a, "--pidfile") == 0)
            s.pidfile = v;
        else if (strcmp(a, "--power") == 0)
            s.sched[0].watts = atof(v);
        else if (strcmp(a, "--schedule") == 0)
            parse_schedule(&s, v);
        else if (strcmp(a, "--period") == 0)
            s.period_s = atof(v);
        else if (strcmp(a, "--volts") == 0)
            s.volts = atof(v);
        else if (strcmp(a, "--garbage-every") == 0)
            s.garbage_every = atoi(v);
        else if (strcmp(a, "--unplug-at") == 0)
            s.unplug_at_s = atof(v);
        else if (strcmp(a, "--unplug-for") == 0)
            s.unplug_for_s = atof(v);
        else if (strcmp(a, "--duration") == 0)
            s.duration_s = atof(v);
        else
            usage();
    }
    if (!s.link || !s.truth_path || s.period_s < 0.01 || s.volts <= 0)
        usage();
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    s.truth = fopen(s.truth_path, "we");
    if (!s.truth)
        die("cannot write %s", s.truth_path);
    fprintf(s.truth, "timestamp_unix,watts,energy_j,sent\n");
    fflush(s.truth);
    if (s.events_path && !(s.events = fopen(s.events_path, "we")))
        die("cannot write %s", s.events_path);
    open_pty(&s);
    if (s.pidfile) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp", s.pidfile);
        FILE *f = fopen(tmp, "we");
        if (!f)
            die("cannot write %s", tmp);
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
        rename(tmp, s.pidfile);
    }

    double t_end = mono_s() + s.duration_s;
    char cmd[256];
    size_t cmd_len = 0;
    bool logging = false, unplugged = false, unplug_done = false;
    double t_log0 = 0, next = 0, last_row = 0, energy = 0, replug_at = 0;
    unsigned long records = 0;
    while (!stop && mono_s() < t_end) {
        double now = mono_s();
        /* the truth: the profile integrated since logging first started, every period */
        if (t_log0 > 0 && now >= next) {
            double w = power_at(&s, now - t_log0);
            energy += w * (now - last_row);
            last_row = now;
            bool send = logging && !unplugged && !s.silent;
            fprintf(s.truth, "%.6f,%.1f,%.6f,%d\n", real_s(), w, energy, send ? 1 : 0);
            fflush(s.truth);
            if (send) {
                char rec[256];
                long wt = lround(w * 10.0), vt = lround(s.volts * 10.0),
                     at = lround(w / s.volts * 1000.0);
                snprintf(rec, sizeof rec, "#d,-,18,%ld,%ld,%ld,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_;\r\n",
                         wt, vt, at);
                write_str(&s, rec);
                records++;
                if (s.garbage_every > 0 && records % (unsigned long)s.garbage_every == 0) {
                    size_t k = (records / (unsigned long)s.garbage_every - 1) %
                               (sizeof garbage_lines / sizeof garbage_lines[0]);
                    write_str(&s, garbage_lines[k]);
                    event(&s, "garbage");
                }
            }
            next += s.period_s;
            if (next < now)
                next = now + s.period_s;
        }
        /* the unplug: pty closed and link gone, then a new pty at the same link */
        if (!unplug_done && s.unplug_for_s > 0 && t_log0 > 0 && now - t_log0 >= s.unplug_at_s) {
            close(s.master);
            s.master = -1;
            unlink(s.link);
            unplugged = unplug_done = true;
            logging = false;
            replug_at = now + s.unplug_for_s;
            event(&s, "unplug");
        }
        if (unplugged && now >= replug_at) {
            open_pty(&s);
            unplugged = false;
            event(&s, "replug");
        }
        if (unplugged) {
            usleep(10000);
            continue;
        }
        struct pollfd p = {.fd = s.master, .events = POLLIN};
        double wait = t_log0 > 0 ? next - mono_s() : 0.05;
        if (wait > 0.05)
            wait = 0.05;
        int k = poll(&p, 1, wait > 0 ? (int)(wait * 1000) + 1 : 0);
        if (k > 0 && (p.revents & POLLIN)) {
            char buf[256];
            ssize_t r = read(s.master, buf, sizeof buf);
            for (ssize_t i = 0; i < r; i++) {
                if (buf[i] == '#')
                    cmd_len = 0;
                if (cmd_len + 1 < sizeof cmd)
                    cmd[cmd_len++] = buf[i];
                if (buf[i] != ';')
                    continue;
                cmd[cmd_len] = '\0';
                if (strcmp(cmd, "#L,W,3,E,,1;") == 0 && !s.silent) {
                    event(&s, "logging");
                    logging = true;
                    if (t_log0 == 0) {
                        t_log0 = last_row = mono_s();
                        fprintf(s.truth, "%.6f,%.1f,%.6f,0\n", real_s(), power_at(&s, 0), 0.0);
                        fflush(s.truth);
                    }
                    next = mono_s() + s.period_s;
                }
                cmd_len = 0;
            }
        } else if (k > 0 && (p.revents & POLLHUP)) {
            usleep(20000); /* nobody has the slave side open */
        }
    }
    if (s.master >= 0)
        close(s.master);
    unlink(s.link);
    fclose(s.truth);
    if (s.events)
        fclose(s.events);
    return 0;
}
