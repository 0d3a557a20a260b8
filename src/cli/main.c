/*
 * carma: measure the power, energy and carbon of GPU and CPU workloads.
 * main dispatches to one file per subcommand in src/cli/.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *what;
} commands[] = {
    {"sensors", cmd_sensors, "list every power source and channel with a current reading"},
    {"stat", cmd_stat, "run a command and report its energy, power and CO2e"},
    {"validate", cmd_validate, "check an experiment file"},
    {"run", cmd_run, "run an experiment of collocated workloads, energy and carbon per workload"},
    {"exporter", cmd_exporter, "serve this node's power and energy as Prometheus metrics"},
    {"collect", cmd_collect, "scrape exporters on many nodes into one samples CSV"},
    {"record", cmd_record,
     "srt-slurm's host collector on this node: per-node CPU power CSVs, no exporter"},
    {"wait-ready", cmd_wait_ready,
     "srt-slurm's start-up gate: wait until every node's host collector is ready"},
    {"merge", cmd_merge,
     "merge the per-node files of srt-slurm's host collector (and carma's) at teardown"},
    {"mark", cmd_mark, "mark a window of a program (begin, end, around a command): its energy"},
    {"top", cmd_top, "the live view of a run directory: power, energy and CO2e per job now"},
    {"cleanup", cmd_cleanup, "stop what a killed carma run left running and finish its directory"},
    {"report", cmd_report, "energy, perf-per-watt and carbon per window of a run or srt-slurm log"},
    {"model", cmd_model, "fit power models (baseline + delta) on runs, predict per-job power"},
    {"import-nsys", cmd_import_nsys,
     "per-process GPU kernel busy time from an Nsight Systems export"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: carma COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].what);
    fprintf(f, "\n`carma COMMAND --help` describes each. `carma --version` prints the version.\n"
               "Options are written in full (no abbreviations). A duration is seconds as a plain\n"
               "number (1.5) or has a unit (250us, 100ms, 2s, 1m).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("carma %s\n", CARMA_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        names[i] = commands[i].name;
    char near[256];
    if (cli_suggest(cmd, names, sizeof names / sizeof names[0], "", near, sizeof near) > 0)
        cli_error("unknown command '%s': did you mean %s?", cmd, near);
    else
        cli_error("unknown command '%s'", cmd);
    usage(stderr);
    return 2;
}
