/*
 * carma mark: windows from a shell script, through libcarma (libcarma/carma.h): begin, end
 * (which prints the window's energy), an event, or a window around a command.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "carma.h"
#include "cli/cli.h"
#include "cli/common.h"
#include "core/parse.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: carma mark begin NAME [--tokens N] [--requests N]\n"
            "       carma mark end NAME [--tokens N] [--requests N] [--json]\n"
            "       carma mark event NAME VALUE\n"
            "       carma mark NAME [--tokens N] [--requests N] [--json] -- COMMAND [ARG...]\n"
            "\n"
            "Marks a window of a program that carma run or carma stat -o DIR measures (they\n"
            "give their socket in CARMA_SOCKET): carma report gives each window's energy,\n"
            "split among the jobs. end prints the node's energy over the window as carma saw\n"
            "it (tick resolution; the report is the reference). NAME -- COMMAND marks the\n"
            "command's run and exits with its status. The same name may be open more than\n"
            "once: end closes the most recent. Without CARMA_SOCKET, marks are off: it says so\n"
            "and exits 0 (a window around a command still runs the command).\n"
            "\n"
            "options:\n"
            "  --tokens N     tokens the window produced (the report's J/token, tokens/s per W)\n"
            "  --requests N   requests it served\n"
            "  --json         end: print the energy as one JSON object\n"
            "  -q, --quiet    print nothing on success\n"
            "\n"
            "Exit status: 0; 1 when carma refused the mark (no open window of that name) or\n"
            "the connection failed; 2 on a usage error.\n");
}

static int count_arg(const char *opt, const char *v, long long *out)
{
    uint64_t x;
    if (parse_u64(v, &x) < 0 || x > LLONG_MAX) {
        cli_error("mark: %s %s: not a non-negative integer", opt, v);
        return -1;
    }
    *out = (long long)x;
    return 0;
}

static void num(FILE *f, const char *key, double v, int first)
{
    if (isnan(v))
        fprintf(f, "%s\"%s\": null", first ? "" : ", ", key);
    else
        fprintf(f, "%s\"%s\": %.3f", first ? "" : ", ", key, v);
}

static void print_energy(FILE *f, const char *name, const struct carma_energy *e, int json)
{
    if (json) {
        fprintf(f, "{\"name\": \"");
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
            fprintf(f, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
        fprintf(f, "\", \"id\": %llu, \"t0\": %.6f, \"t1\": %.6f, ", e->id, e->t0, e->t1);
        num(f, "energy_j", e->energy_j, 1);
        num(f, "cpu_j", e->cpu_j, 0);
        num(f, "gpu_j", e->gpu_j, 0);
        num(f, "dram_j", e->dram_j, 0);
        fprintf(f, ", \"method\": \"%s\"}\n", e->method);
        return;
    }
    fprintf(f, "%s: ", name);
    if (isnan(e->energy_j))
        fprintf(f, "no energy");
    else
        fprintf(f, "%.3f J", e->energy_j);
    fprintf(f, " over %.3f s (%s", e->t1 - e->t0, e->method);
    const char *k[3] = {"cpu", "gpu", "dram"};
    const double v[3] = {e->cpu_j, e->gpu_j, e->dram_j};
    for (int i = 0; i < 3; i++)
        if (!isnan(v[i]))
            fprintf(f, ", %s %.3f J", k[i], v[i]);
    fprintf(f, ")\n");
}

/* Runs argv to its end; its exit status (128 + signal when killed), 127 when it cannot start. */
static int run_command(char **argv)
{
    pid_t pid = fork();
    if (pid < 0) {
        cli_error("mark: fork: %s", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "carma: mark: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    /* a ^C reaches the command (same process group); carma waits for it to end */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 127;
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The verdict of a libcarma call: 0 done or marks off (said by libcarma), 1 refused. */
static int verdict(const char *what, const char *name, long long r)
{
    if (r >= 0)
        return 0;
    cli_error("mark: %s %s: %s", what, name, carma_last_error());
    return 1;
}

int cmd_mark(int argc, char **argv)
{
    enum { OPT_TOKENS = 256, OPT_REQUESTS, OPT_MARK_JSON };
    static const struct option opts[] = {
        {"tokens", required_argument, NULL, OPT_TOKENS},
        {"requests", required_argument, NULL, OPT_REQUESTS},
        {"json", no_argument, NULL, OPT_MARK_JSON},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    long long tokens = -1, requests = -1;
    int json = 0, quiet = 0, c;
    /* what follows the first "--" is the command's, never parsed here; before it, GNU
     * getopt moves the words (begin, NAME...) after the options */
    char **cmd = NULL;
    for (int k = 1; k < argc; k++)
        if (strcmp(argv[k], "--") == 0) {
            cmd = argv + k + 1;
            argc = k;
            break;
        }
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case OPT_TOKENS:
            if (count_arg("--tokens", optarg, &tokens) < 0)
                return 2;
            break;
        case OPT_REQUESTS:
            if (count_arg("--requests", optarg, &requests) < 0)
                return 2;
            break;
        case OPT_MARK_JSON:
            json = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    int nw = 0;
    char *w[3];
    while (optind < argc) {
        if (nw == 3) {
            cli_error("mark: too many words (usage: carma mark --help)");
            return 2;
        }
        w[nw++] = argv[optind++];
    }
    if (cmd && !*cmd) {
        cli_error("mark: no command after --");
        return 2;
    }
    if (cmd) {
        if (nw != 1) {
            cli_error("mark: a window around a command is: carma mark NAME -- COMMAND");
            return 2;
        }
        long long id = carma_begin(w[0], tokens, requests);
        if (id < 0)
            cli_error("mark: begin %s: %s (the command runs anyway)", w[0], carma_last_error());
        int status = run_command(cmd);
        if (id > 0) {
            struct carma_energy e;
            int r = carma_end(w[0], tokens, requests, &e);
            if (r < 0)
                cli_error("mark: end %s: %s", w[0], carma_last_error());
            else if (r == 0 && !quiet) /* the command's stdout is the user's */
                print_energy(json ? stdout : stderr, w[0], &e, json);
        }
        return status;
    }
    if (nw == 0) {
        usage(stderr);
        return 2;
    }
    if (strcmp(w[0], "begin") == 0 && nw == 2) {
        long long id = carma_begin(w[1], tokens, requests);
        if (id > 0 && !quiet)
            printf("%lld\n", id);
        return verdict("begin", w[1], id);
    }
    if (strcmp(w[0], "end") == 0 && nw == 2) {
        struct carma_energy e;
        int r = carma_end(w[1], tokens, requests, &e);
        if (r == 0 && !quiet)
            print_energy(stdout, w[1], &e, json);
        return verdict("end", w[1], r);
    }
    if (strcmp(w[0], "event") == 0 && nw == 3) {
        double v;
        if (parse_double(w[2], &v) < 0) {
            cli_error("mark: event %s %s: the value is not a finite number", w[1], w[2]);
            return 2;
        }
        return verdict("event", w[1], carma_event(w[1], v));
    }
    cli_error("mark: '%s': give begin NAME, end NAME, event NAME VALUE or NAME -- COMMAND", w[0]);
    return 2;
}
