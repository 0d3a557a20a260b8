/*
 * reportdir: what kind of directory `carma report DIR` was given, and when it is none that
 * carma can read, a message that says what was expected (the files it looks for).
 */
#ifndef CARMA_REPORT_REPORTDIR_H
#define CARMA_REPORT_REPORTDIR_H

#include "core/err.h"

enum reportdir_kind {
    REPORTDIR_RUN,     /* manifest.json of carma run or carma stat */
    REPORTDIR_SRT,     /* benchmark.out: an srt-slurm log directory */
    REPORTDIR_COLLECT, /* manifest.json of carma collect (samples.csv, nodes.csv) */
};

/*
 * Looks at path: a directory holding a carma run/stat manifest.json is REPORTDIR_RUN, one
 * holding benchmark.out is REPORTDIR_SRT, one holding a carma collect manifest.json (and no
 * benchmark.out) REPORTDIR_COLLECT (written to *ret). Otherwise returns a negative errno
 * with e saying what path is and what carma report reads: -ENOENT (no such path, or neither
 * file there), -ENOTDIR (a file: its directory is named when the file is one of those carma
 * reads), -EACCES (unreadable), -EINVAL (a manifest.json of another producer, or not JSON).
 */
int reportdir_detect(const char *path, enum reportdir_kind *ret, struct carma_err *e);

#endif
