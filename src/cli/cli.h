/* cli: the subcommands' entry points, dispatched by main.c. */
#ifndef CARMA_CLI_CLI_H
#define CARMA_CLI_CLI_H

/* Each returns the process exit status. */
int cmd_sensors(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_cleanup(int argc, char **argv);
int cmd_exporter(int argc, char **argv);
int cmd_collect(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_import_nsys(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_wait_ready(int argc, char **argv);
int cmd_mark(int argc, char **argv);

#endif
