/*
 * outdir: the directory a measurement is written into when the user names it (`carma stat -o
 * DIR`, `carma collect -o DIR`). An earlier measurement is never overwritten, nor mixed with a
 * new one: DIR must be new, or hold none of the files the measurement writes (other files, such
 * as a job's logs/, are left alone), and is claimed (core/file: file_claim_dir) before anything
 * is measured, so that two carmas given the same DIR cannot both use it.
 */
#ifndef CARMA_CLI_OUTDIR_H
#define CARMA_CLI_OUTDIR_H

#include <stdbool.h>

/* The file whose exclusive creation claims the directory (the manifest, written over it). */
#define OUTDIR_CLAIM "manifest.json"

/*
 * Claims dir for a measurement of cmd ("stat", "collect"), given as option (e.g. "-o"), that
 * writes the files named in outputs (NULL-terminated, OUTDIR_CLAIM among them or not). On
 * refusal prints what is there (the earlier measurement's producer, status and time, or those
 * of its files that are there) and how to go on. Returns 0 (*ret_created: whether dir was
 * made), 2 when dir holds an earlier measurement's files (the exit status for it), 1 on another
 * error ("CMD: cannot create DIR: reason", printed).
 */
int outdir_claim(const char *cmd, const char *option, const char *dir, const char *const *outputs,
                 bool *ret_created);

#endif
