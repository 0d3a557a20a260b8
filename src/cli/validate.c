/*
 * carma validate: check an experiment file without running it.
 *
 * Prints "FILE: ok (N workloads)" and exits 0 when the file is a valid experiment; otherwise
 * prints every problem, one "FILE:LINE:COLUMN: FIELD.PATH: message" per line, on stderr and
 * exits 1 (also when the file cannot be read). A bad command line exits 2. With --json it
 * prints the resolved document (defaults filled in, paths absolute) instead of the ok line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "workload/experiment.h"

static void help(void)
{
    printf("usage: carma validate [--json] EXPERIMENT.json\n\n"
           "Checks an experiment file (docs/experiment.md): unknown fields, wrong types,\n"
           "missing or duplicate names, scripts, directories and files that do not exist,\n"
           "values out of range. Each problem is printed as FILE:LINE:COLUMN: FIELD: message.\n"
           "Exits 0 when the file is valid, 1 when it is not, 2 on a bad command line.\n\n"
           "options:\n"
           "  --json              print the resolved experiment (defaults filled in, paths\n"
           "                      absolute) instead of the ok line\n"
           "  -h, --help          show this help\n");
}

int cmd_validate(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = cli_getopt(argc, argv, "h", longopts, "validate")) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'h':
            help();
            return 0;
        default:
            return 2;
        }
    }
    if (argc - optind != 1) {
        cli_error("validate: %s (usage: carma validate [--json] EXPERIMENT.json)",
                  argc - optind < 1 ? "no experiment file given" : "give exactly one file");
        return 2;
    }
    const char *path = argv[optind];

    struct experiment x;
    char *errors = NULL;
    int r = experiment_load(path, &x, &errors);
    if (r < 0) {
        if (errors)
            fputs(errors, stderr);
        else
            cli_error("%s: %s", path, r == -ENOMEM ? "out of memory" : "cannot load");
        free(errors);
        return 1;
    }
    if (json) {
        if (json_dumpf(x.resolved, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) < 0) {
            experiment_free(&x);
            return 1;
        }
        putchar('\n');
    } else {
        printf("%s: ok (%zu workload%s)\n", path, x.n, x.n == 1 ? "" : "s");
    }
    experiment_free(&x);
    return fflush(stdout) == 0 ? 0 : 1;
}
