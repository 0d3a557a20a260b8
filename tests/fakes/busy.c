/*
 * carma-busy: a known CPU load for the integration tests.
 *
 *   carma-busy SECONDS [EXIT_CODE]             spin one core for SECONDS of wall time
 *   carma-busy --fork N SECONDS [EXIT_CODE]    spin N child processes (a process tree), wait
 *   carma-busy --duty FRACTION SECONDS [EXIT_CODE]
 *                                              busy FRACTION (0 to 1) of every 100 ms period,
 *                                              asleep the rest, for SECONDS of wall time
 *
 * --fork and --duty combine (N children, each on that duty cycle). It then exits with
 * EXIT_CODE (default 0). If the environment variable CARMA_BUSY_REPORT
 * names a file, carma-busy writes there, before exiting, what it did as "key value" lines:
 * start_unix and end_unix (CLOCK_REALTIME seconds at start and before exit) and cpu_s (user +
 * system CPU time of this process and its waited-for children). Tests use it as the ground
 * truth of the command's run window and CPU time.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void usage(void)
{
    fputs("usage: carma-busy SECONDS [EXIT_CODE]\n"
          "       carma-busy --fork N SECONDS [EXIT_CODE]\n"
          "       carma-busy --duty FRACTION SECONDS [EXIT_CODE]\n",
          stderr);
    exit(2);
}

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double parse_seconds(const char *s)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < 0 || v > 1e6)
        usage();
    return v;
}

static long parse_long(const char *s, long lo, long hi)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi)
        usage();
    return v;
}

/* Spins the calling thread until SECONDS of wall time have passed since it started. */
static void spin(double seconds)
{
    double deadline = mono_s() + seconds;
    volatile unsigned long sink = 0;

    for (;;) {
        for (unsigned long i = 0; i < 1000000UL; i++)
            sink += i;
        if (mono_s() >= deadline)
            break;
    }
}

/* The duty cycle's period, in seconds. */
#define DUTY_PERIOD_S 0.1

static void sleep_until_mono(double t)
{
    struct timespec ts;

    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/*
 * Busy FRACTION of every DUTY_PERIOD_S period (on an absolute schedule, so it does not drift)
 * and asleep the rest, until SECONDS of wall time have passed since it started.
 */
static void duty(double fraction, double seconds)
{
    double t0 = mono_s();
    double end = t0 + seconds;

    for (long k = 0;; k++) {
        double period = t0 + (double)k * DUTY_PERIOD_S;
        double busy_end = period + fraction * DUTY_PERIOD_S;
        double next = period + DUTY_PERIOD_S;
        volatile unsigned long sink = 0;

        if (period >= end)
            break;
        if (busy_end > end)
            busy_end = end;
        if (next > end)
            next = end;
        while (mono_s() < busy_end)
            for (unsigned long i = 0; i < 20000UL; i++)
                sink += i;
        if (next > mono_s())
            sleep_until_mono(next);
    }
}

static double timeval_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static double real_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(double start_unix)
{
    const char *path = getenv("CARMA_BUSY_REPORT");
    struct rusage self, kids;
    FILE *f;

    if (!path || !*path)
        return;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    f = fopen(path, "we");
    if (!f) {
        fprintf(stderr, "carma-busy: %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "start_unix %.6f\nend_unix %.6f\n", start_unix, real_s());
    fprintf(f, "cpu_s %.6f\n",
            timeval_s(self.ru_utime) + timeval_s(self.ru_stime) + timeval_s(kids.ru_utime) +
                timeval_s(kids.ru_stime));
    fclose(f);
}

int main(int argc, char **argv)
{
    double start_unix = real_s();
    long children = 0;
    double fraction = -1; /* < 0: spin all the time */
    double seconds;
    int code = 0;
    int i = 1;

    while (i < argc && argv[i][0] == '-' && argv[i][1] == '-') {
        if (strcmp(argv[i], "--fork") == 0 && i + 1 < argc && children == 0) {
            children = parse_long(argv[i + 1], 1, 4096);
        } else if (strcmp(argv[i], "--duty") == 0 && i + 1 < argc && fraction < 0) {
            fraction = parse_seconds(argv[i + 1]);
            if (fraction > 1)
                usage();
        } else {
            usage();
        }
        i += 2;
    }
    if (argc - i < 1 || argc - i > 2)
        usage();
    seconds = parse_seconds(argv[i]);
    if (argc - i == 2)
        code = (int)parse_long(argv[i + 1], 0, 255);

    if (children == 0) {
        if (fraction < 0)
            spin(seconds);
        else
            duty(fraction, seconds);
    } else {
        for (long k = 0; k < children; k++) {
            pid_t pid = fork();
            if (pid < 0) {
                fprintf(stderr, "carma-busy: fork: %s\n", strerror(errno));
                return 1;
            }
            if (pid == 0) {
                if (fraction < 0)
                    spin(seconds);
                else
                    duty(fraction, seconds);
                _exit(0);
            }
        }
        while (wait(NULL) > 0 || errno == EINTR)
            ;
    }
    report(start_unix);
    return code;
}
