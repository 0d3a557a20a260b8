/* reportdir: the kind of directory carma report reads (see reportdir.h). */
#include "report/reportdir.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"

#define EXPECTED                                                                                   \
    "carma report reads a carma run, stat or collect directory, which holds manifest.json (carma " \
    "run -o, carma stat -o, carma collect -o), or an srt-slurm log directory, which holds "        \
    "benchmark.out"

/* What fstatat says of dir/name: 1 a regular file, 0 absent (or a directory), -ESPIPE another
 * kind of file (a FIFO, a device), -errno when it cannot tell. */
static int has_file(const char *dir, const char *name)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
        return -ENAMETOOLONG;
    struct stat st;
    if (stat(p, &st) < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
    return S_ISREG(st.st_mode) ? 1 : S_ISDIR(st.st_mode) ? 0 : -ESPIPE;
}

/* The producer of dir/manifest.json into buf ("" when it has none); -errno or -EINVAL. */
static int manifest_producer(const char *dir, char *buf, size_t cap, char *why, size_t wcap)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    json_error_t je;
    json_t *m = file_load_json(p, JSON_REJECT_DUPLICATES, &je, NULL);
    if (!m) {
        snprintf(why, wcap, "line %d: %s", je.line, je.text);
        return -EINVAL;
    }
    const char *s = json_string_value(json_object_get(m, "producer"));
    snprintf(buf, cap, "%s", s ? s : "");
    json_decref(m);
    return 0;
}

int reportdir_detect(const char *path, enum reportdir_kind *ret, struct carma_err *e)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return carma_err_set(e, -ENOENT, "%s: no such directory; %s", path, EXPECTED);
        return carma_err_set(e, -errno, "%s: %s", path, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
        char copy[PATH_MAX], base[PATH_MAX];
        snprintf(copy, sizeof copy, "%s", path);
        snprintf(base, sizeof base, "%s", basename(copy));
        snprintf(copy, sizeof copy, "%s", path);
        const char *parent = dirname(copy);
        if (strcmp(base, "manifest.json") == 0 || strcmp(base, "benchmark.out") == 0 ||
            strcmp(base, "report.json") == 0)
            return carma_err_set(e, -ENOTDIR,
                                 "%s is a file, not a directory: give the directory it is in "
                                 "(carma report %s)",
                                 path, parent);
        return carma_err_set(e, -ENOTDIR, "%s is a file, not a directory: %s", path, EXPECTED);
    }
    if (access(path, R_OK | X_OK) < 0)
        return carma_err_set(e, -errno, "cannot read the directory %s: %s", path, strerror(errno));
    int man = has_file(path, "manifest.json");
    int bench = has_file(path, "benchmark.out");
    if (man == -ESPIPE || bench == -ESPIPE) {
        char p[PATH_MAX + 16];
        snprintf(p, sizeof p, "%s/%s", path, man == -ESPIPE ? "manifest.json" : "benchmark.out");
        return file_input_err(e, p, -ESPIPE);
    }
    if (man < 0 || bench < 0)
        return carma_err_set(e, man < 0 ? man : bench, "cannot read the directory %s: %s", path,
                             strerror(-(man < 0 ? man : bench)));
    if (man > 0) {
        char producer[64], why[256] = "";
        int r = manifest_producer(path, producer, sizeof producer, why, sizeof why);
        if (r < 0 && !bench)
            return carma_err_set(e, r, "%s/manifest.json is not JSON (%s): %s", path, why,
                                 EXPECTED);
        if (r == 0 && (strcmp(producer, "carma run") == 0 || strcmp(producer, "carma stat") == 0)) {
            *ret = REPORTDIR_RUN;
            return 0;
        }
        if (r == 0 &&
            (strcmp(producer, "carma collect") == 0 || strcmp(producer, "carma merge") == 0 ||
             strcmp(producer, "carma record") == 0) &&
            !bench) {
            *ret = REPORTDIR_COLLECT;
            return 0;
        }
        if (r == 0 && !bench)
            return carma_err_set(e, -EINVAL,
                                 "%s/manifest.json was written by %s%s%s, not carma "
                                 "run, stat or collect: %s",
                                 path, producer[0] ? "'" : "",
                                 producer[0] ? producer : "no producer", producer[0] ? "'" : "",
                                 EXPECTED);
    }
    if (bench > 0) {
        *ret = REPORTDIR_SRT;
        return 0;
    }
    return carma_err_set(e, -ENOENT,
                         "%s holds no manifest.json and no benchmark.out: it is neither a carma "
                         "run, stat or collect directory nor an srt-slurm log directory; %s",
                         path, EXPECTED);
}
