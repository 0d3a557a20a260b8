/* import_nsys: `carma import-nsys` and the import at the end of `carma run` (import_nsys.c). */
#ifndef CARMA_CLI_IMPORT_NSYS_H
#define CARMA_CLI_IMPORT_NSYS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Imports the n Nsight Systems exports files[] into the run directory run_dir: writes
 * run_dir/nsys_gpu.csv (the run's sample ticks as intervals, the run's GPU numbers, workload
 * by pid; workload[i], when not NULL, owns every process of files[i]) and, when reattribute,
 * splits the run's GPU energy again with it (import/nsys_run.h). A file that cannot be read is
 * an error unless skip_unreadable (then a note; `carma run` goes on with the others). Prints
 * a summary per process and file on stderr unless quiet, errors always. Returns 0, or 1 after
 * printing the error.
 */
int import_nsys_into_run(const char *run_dir, char *const *files, const char *const *workload,
                         size_t n, bool reattribute, bool skip_unreadable, bool quiet);

#endif
