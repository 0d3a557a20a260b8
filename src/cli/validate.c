/*
 * carma validate: check an experiment file without running it.
 *
 * Prints "FILE: ok (N workloads)" and the commands the file makes `carma run` execute (each
 * workload's, in its directory, and a cmd: meter's) and exits 0 when the file is a valid
 * experiment; otherwise
 * prints every problem, one "FILE:LINE:COLUMN: FIELD.PATH: message" per line, on stderr and
 * exits 1 (also when the file cannot be read). A bad command line exits 2. With --json it
 * prints the resolved document (defaults filled in, paths absolute) instead of the ok line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "workload/experiment.h"

/* One word of a command line as a POSIX shell reads it back: bare when it holds only
 * characters no shell treats specially, else in single quotes. */
static void put_word(FILE *f, const char *w)
{
    if (*w &&
        strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,@%+-") ==
            strlen(w)) {
        fputs(w, f);
        return;
    }
    fputc('\'', f);
    for (; *w; w++)
        if (*w == '\'')
            fputs("'\\''", f);
        else
            fputc(*w, f);
    fputc('\'', f);
}

/* What `carma run` will execute for x: a line per workload (the nsys wrapper of a profiled one
 * included, its directory) and the cmd: meter's command. */
static void print_commands(FILE *f, const struct experiment *x)
{
    fprintf(f, "commands it runs:\n");
    for (size_t i = 0; i < x->n; i++) {
        const struct workload_spec *w = &x->w[i];
        fprintf(f, "  %s: ", w->name);
        if (w->profile_nsys)
            fprintf(f,
                    "nsys profile --output=RUN_DIR/logs/%s --export=sqlite "
                    "--force-overwrite=true --trace=cuda ",
                    w->name);
        for (char **a = w->argv; a && *a; a++) {
            if (a != w->argv)
                fputc(' ', f);
            put_word(f, *a);
        }
        fprintf(f, " (in %s)\n", w->cwd ? w->cwd : x->dir);
    }
    if (x->meter && strncmp(x->meter, "cmd:", 4) == 0) {
        fprintf(f, "  monitoring.meter: /bin/sh -c ");
        put_word(f, x->meter + 4);
        fprintf(f, " (every second while carma samples)\n");
    }
}

static void help(void)
{
    printf("usage: carma validate [--json] EXPERIMENT.json\n\n"
           "Checks an experiment file (docs/experiment.md): unknown fields, wrong types,\n"
           "missing or duplicate names, scripts, directories and files that do not exist,\n"
           "values out of range. Each problem is printed as FILE:LINE:COLUMN: FIELD: message.\n"
           "A valid file gets its ok line and every command carma run would execute for it.\n"
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
        print_commands(stdout, &x);
    }
    experiment_free(&x);
    return fflush(stdout) == 0 ? 0 : 1;
}
