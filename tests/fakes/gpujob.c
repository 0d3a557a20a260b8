/*
 * carma-gpujob: a fake GPU job for the fake NVML (fake_nvml.c), with exact ground truth.
 *
 *   carma-gpujob [--dir DIR] --device N --sm PCT [--delay S] [--child] [--mem MIB] [--tag T]
 *                SECONDS [EXIT_CODE]
 *
 * DIR defaults to $CARMA_FAKE_NVML_CLIENTS (the folder the fake NVML reads its clients from).
 * Waits --delay seconds (default 0), then registers itself as a client of GPU N of the fake
 * NVML: the file DIR/<pid> (written to DIR/.<pid>.tmp and renamed) holds one line
 *   dev=N sm=PCT start=S end=-     (then " mem=MIB" and " tag=T" when given)
 * with S its CLOCK_MONOTONIC time in seconds (%.9f). The tag (letters, digits, '.', '_', '-')
 * is for the tests, to tell which file is whose; the fake NVML ignores it. It then sleeps SECONDS
 * on an absolute CLOCK_MONOTONIC schedule (no CPU is used), rewrites the file with end=<now> and
 * exits with EXIT_CODE (default 0). While it is registered, the fake NVML draws PCT% of the GPU's
 * dynamic power for it, lists it as a running process and gives it PCT as its SM utilization.
 *
 * With --child it forks after the delay: the child registers and does the work, the parent
 * waits for it and exits with its status (128 + the signal when it was killed), so that the GPU
 * user is a grandchild of whoever started carma-gpujob. SIGTERM (to either) ends the work: the
 * end time is written and the process exits with 143; the parent passes SIGTERM on to the
 * child. Usage errors exit with 2, a file that cannot be written with 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
    (void)sig;
    got_term = 1;
}

/* Prints the usage (to stderr after the error why, or to stdout for --help) and exits with 2
 * (0 for --help). */
static void usage(const char *why)
{
    if (why)
        fprintf(stderr, "carma-gpujob: %s\n", why);
    fputs("usage: carma-gpujob [--dir DIR] --device N --sm PCT [--delay S] [--child] [--mem MIB]\n"
          "                    [--tag T] SECONDS [EXIT_CODE]\n"
          "--dir defaults to $CARMA_FAKE_NVML_CLIENTS, the fake NVML's clients' folder\n",
          why ? stderr : stdout);
    exit(why ? 2 : 0);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double parse_seconds(const char *what, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < 0 || v > 1e6) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s: '%s' is not a number of seconds (0 to 1e6)", what, s);
        usage(msg);
    }
    return v;
}

static long parse_long(const char *what, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s: '%s' is not an integer from %ld to %ld", what, s, lo, hi);
        usage(msg);
    }
    return v;
}

/* Sleeps until the CLOCK_MONOTONIC time deadline_s or SIGTERM. Returns false on SIGTERM. */
static bool sleep_until(double deadline_s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)deadline_s;
    ts.tv_nsec = (long)((deadline_s - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (!got_term) {
        int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        if (r == 0)
            return !got_term;
        if (r != EINTR)
            return !got_term;
    }
    return false;
}

struct job {
    const char *dir;
    long device, sm, mem_mib; /* mem_mib < 0: not given */
    const char *tag;          /* NULL: none */
    double start_s;
};

/* Writes DIR/<pid> atomically with end_s (< 0: "-"). Exits with 1 when it cannot. */
static void job_write(const struct job *j, double end_s)
{
    char tmp[4096], dst[4096], line[256], end[64], mem[64] = "", tag[80] = "";
    int pid = (int)getpid();
    if (snprintf(tmp, sizeof tmp, "%s/.%d.tmp", j->dir, pid) >= (int)sizeof tmp ||
        snprintf(dst, sizeof dst, "%s/%d", j->dir, pid) >= (int)sizeof dst) {
        fprintf(stderr, "carma-gpujob: --dir is too long\n");
        exit(1);
    }
    if (end_s < 0)
        snprintf(end, sizeof end, "-");
    else
        snprintf(end, sizeof end, "%.9f", end_s);
    if (j->mem_mib >= 0)
        snprintf(mem, sizeof mem, " mem=%ld", j->mem_mib);
    if (j->tag)
        snprintf(tag, sizeof tag, " tag=%s", j->tag);
    int n = snprintf(line, sizeof line, "dev=%ld sm=%ld start=%.9f end=%s%s%s\n", j->device, j->sm,
                     j->start_s, end, mem, tag);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, line, (size_t)n) != n || close(fd) != 0 || rename(tmp, dst) != 0) {
        fprintf(stderr, "carma-gpujob: cannot write %s: %s\n", dst, strerror(errno));
        if (fd >= 0)
            unlink(tmp);
        exit(1);
    }
}

/* Registers, works SECONDS, writes the end; returns the exit status. */
static int job_run(struct job *j, double seconds, int exit_code)
{
    j->start_s = mono_s();
    job_write(j, -1);
    bool done = sleep_until(j->start_s + seconds);
    job_write(j, mono_s());
    return done ? exit_code : 143;
}

/* The parent of --child: waits for the child, passing SIGTERM on; returns its status. */
static int wait_child(pid_t child)
{
    bool passed = false;
    for (;;) {
        if (got_term && !passed) {
            kill(child, SIGTERM);
            passed = true;
        }
        int st;
        pid_t r = waitpid(child, &st, 0);
        if (r == child)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "carma-gpujob: waitpid: %s\n", strerror(errno));
            return 1;
        }
    }
}

int main(int argc, char **argv)
{
    struct job j = {.device = -1, .sm = -1, .mem_mib = -1};
    double delay_s = 0;
    bool child = false;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(o, "--child") == 0) {
            child = true;
            continue;
        }
        if (strcmp(o, "--help") == 0)
            usage(NULL);
        if (i + 1 >= argc) {
            char msg[128];
            snprintf(msg, sizeof msg, "%s needs a value", o);
            usage(msg);
        }
        const char *v = argv[++i];
        if (strcmp(o, "--dir") == 0)
            j.dir = v;
        else if (strcmp(o, "--device") == 0)
            j.device = parse_long("--device", v, 0, 1023);
        else if (strcmp(o, "--sm") == 0)
            j.sm = parse_long("--sm", v, 0, 100);
        else if (strcmp(o, "--mem") == 0)
            j.mem_mib = parse_long("--mem", v, 0, 1L << 30);
        else if (strcmp(o, "--tag") == 0) {
            if (!v[0] || strlen(v) > 64 ||
                strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                    strlen(v))
                usage("--tag: 1 to 64 letters, digits, '.', '_' or '-'");
            j.tag = v;
        } else if (strcmp(o, "--delay") == 0)
            delay_s = parse_seconds("--delay", v);
        else {
            char msg[128];
            snprintf(msg, sizeof msg, "unknown option %s", o);
            usage(msg);
        }
    }
    if (!j.dir)
        j.dir = getenv("CARMA_FAKE_NVML_CLIENTS");
    if (!j.dir || !j.dir[0])
        usage("--dir is required (or CARMA_FAKE_NVML_CLIENTS in the environment)");
    if (j.device < 0)
        usage("--device is required");
    if (j.sm < 0)
        usage("--sm is required");
    if (argc - i < 1 || argc - i > 2)
        usage("expected SECONDS [EXIT_CODE]");
    double seconds = parse_seconds("SECONDS", argv[i]);
    int exit_code = argc - i == 2 ? (int)parse_long("EXIT_CODE", argv[i + 1], 0, 255) : 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);

    if (delay_s > 0 && !sleep_until(mono_s() + delay_s))
        return 143;
    if (child) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "carma-gpujob: fork: %s\n", strerror(errno));
            return 1;
        }
        if (pid > 0)
            return wait_child(pid);
    }
    return job_run(&j, seconds, exit_code);
}
