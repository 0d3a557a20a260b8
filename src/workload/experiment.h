/*
 * experiment: the experiment file that `carma run` executes and `carma validate` checks.
 *
 * An experiment is a JSON object (docs/experiment.md): CARMA's fields (experiment_name,
 * description, workloads[] with name, type, gpu, script, args, cwd, env) with CARMA's meaning
 * (type: the workload's kind as the user names it; gpu: whether it is a GPU workload) plus
 * carma's optional fields (per-workload launch, delay_s, timeout_s, allocation, profile; gpu as
 * a device index; monitoring, carbon, attribution).
 * Loading checks everything a run would trip on later: unknown fields at any level, wrong
 * types, missing required fields, duplicate workload names, scripts, directories and files
 * that do not exist, out-of-range values. Every problem is reported with the file, line and
 * column of the offending value (of the key for an unknown field, of the enclosing object for
 * a missing one) and the field's path, e.g.
 *
 *     exp.json:7:16: workloads[1].name: duplicate name "train" (first at line 3)
 *
 * Jansson gives positions only for syntax errors, so the position of a node of a parsed
 * document is found again in the original text by a small tokenizer (experiment_locate).
 * Lines and columns are 1-based; columns count characters (UTF-8 sequences), as jansson does.
 */
#ifndef CARMA_WORKLOAD_EXPERIMENT_H
#define CARMA_WORKLOAD_EXPERIMENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/split.h" /* enum split_policy (analysis/ is below workload/: README, Layout) */

/* carbon.embodied's rows, read here, used by analysis/carbon (carbon_embodied_resolve) */
struct carbon_embodied_override;

/* The largest experiment file read (bytes). */
#define EXPERIMENT_FILE_MAX (1024 * 1024)
/* The longest experiment or workload name (characters). */
#define EXPERIMENT_NAME_MAX 128

/* How a workload's script runs ("launch"). */
enum workload_launch {
    LAUNCH_EXEC,   /* the script itself (a path, or a command looked up in PATH) */
    LAUNCH_PYTHON, /* python3 SCRIPT ARGS... */
    LAUNCH_SHELL,  /* /bin/sh SCRIPT ARGS... */
};

/* What "gpu" says about a workload. */
enum workload_gpu_use {
    WORKLOAD_GPU_UNSTATED, /* absent or null */
    WORKLOAD_GPU_NO,       /* false: not a GPU workload */
    WORKLOAD_GPU_YES,      /* true, or a device index (then gpu >= 0) */
};

struct workload_spec {
    char *name;   /* unique */
    char *type;   /* the workload's kind as the file names it ("finetune"), NULL when not given */
    char *script; /* resolved (absolute when it named a file) */
    enum workload_launch launch;
    char **argv; /* ready for execvp: interpreter (if any), script, args..., NULL */
    char *cwd;   /* absolute, or NULL: the experiment file's directory */
    char **env;  /* "KEY=VALUE" to merge over carma's environment, in file order,
                    then CUDA_VISIBLE_DEVICES=<gpu> when gpu is set and env has
                    no CUDA_VISIBLE_DEVICES */
    size_t n_env;
    enum workload_gpu_use gpu_use;
    bool gpu_bool;             /* "gpu" was written as true/false (kept so in the resolved doc) */
    int gpu;                   /* the device index "gpu" gave; -1 when none */
    double delay_s, timeout_s; /* timeout 0: none */
    int *cpus;                 /* allocation (NULL when n is 0) */
    size_t n_cpus;
    int *gpus;
    size_t n_gpus;
    bool profile_nsys; /* "profile": "nsys": carma run wraps the command in `nsys profile` */
};

/* attribution.gpu: what splits a GPU's dynamic energy among the workloads. */
enum gpu_attribution {
    GPU_ATTR_NVML, /* NVML's per-process SM utilization, during the run (the default) */
    GPU_ATTR_NSYS, /* the profiled workloads' kernel busy time (nsys), after the run */
};

struct experiment {
    char *path;        /* as given to experiment_load */
    char *dir;         /* absolute directory of the file: relative paths resolve against it */
    char *name;        /* experiment_name */
    char *description; /* NULL when not given */
    struct workload_spec *w;
    size_t n;
    int64_t interval_ns;  /* 0: not given */
    char *sources;        /* NULL: not given */
    char *meter;          /* monitoring.meter, a wall meter's spec; NULL: not given */
    double baseline_s;    /* default 3 */
    char *region;         /* canonical code from data/grid_intensity.csv, or NULL */
    double g_per_kwh;     /* 0: not given */
    char *intensity_file; /* absolute, or NULL */
    double pue;           /* default 1 */
    struct carbon_embodied_override *embodied; /* model "": the generic row */
    size_t n_embodied;
    enum split_policy idle_policy;        /* analysis/split.h */
    enum gpu_attribution gpu_attribution; /* attribution.gpu */
    json_t *resolved; /* the document with defaults and resolved paths, for the run
                         directory's experiment.json (owned: experiment_free releases it) */
};

/*
 * Loads and checks the experiment file at path. Returns 0 and fills *ret (which the caller
 * releases with experiment_free). Otherwise *ret is left zeroed and *errors gets a malloc'd
 * string that the caller frees, one problem per line ending in '\n', in document order:
 *   -EINVAL: "FILE:LINE:COL: PATH: message" for every problem found (PATH "(top level)" for
 *            the document itself), or "FILE:LINE:COL: JSON syntax: <jansson's text>" for a
 *            document that does not parse (LINE:COL as jansson reports it);
 *   another negative errno (-ENOENT, -EACCES, -EISDIR, -EFBIG over EXPERIMENT_FILE_MAX, ...):
 *            "FILE: cannot read: <strerror>";
 *   -ENOMEM: out of memory (*errors may then be NULL).
 * FILE is path as given. errors may be NULL when the caller does not want the text.
 */
int experiment_load(const char *path, struct experiment *ret, char **errors);

/* Releases everything x holds and zeroes it. NULL-safe and safe on a zeroed struct. */
void experiment_free(struct experiment *x);

/* The name of a launch mode: "exec", "python" or "shell". */
const char *experiment_launch_name(enum workload_launch l);

/*
 * The GPUs (NVML indexes) workload w names as its own, into out (room for cap), in this
 * order of precedence: its allocation.gpus; else its "gpu" index; else, for a GPU workload
 * ("gpu": true), the plain indexes of the CUDA_VISIBLE_DEVICES its env sets (UUIDs and
 * entries after the first that is not an index are left out, as CUDA stops there). A
 * workload with "gpu": false names none. Returns how many were written (at most cap).
 */
size_t experiment_spec_gpus(const struct workload_spec *w, int *out, size_t cap);

/* One step of a path into a JSON document: an object member (key != NULL) or an array element
 * (key == NULL, index). */
struct json_path_step {
    const char *key;
    size_t index;
};

/*
 * Finds, in the JSON text text/len (a document jansson accepted), the value reached from the
 * top-level value by the n steps of path (n may be 0: the document itself), or with at_key and
 * n > 0 the key of the last step's member. Writes its 1-based line and column (of its first
 * character; columns count UTF-8 characters, a '\r' before '\n' is the line's last character)
 * into *ret_line and *ret_col. Keys are compared after decoding their escapes (\" \\ \uXXXX
 * and surrogate pairs). Returns 0, or -ENOENT when the path is not in the text, -EINVAL when
 * the text is not well-formed where it was read.
 */
int experiment_locate(const char *text, size_t len, const struct json_path_step *path, size_t n,
                      bool at_key, int *ret_line, int *ret_col);

#endif
