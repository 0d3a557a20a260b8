/* outdir: claiming a measurement's directory without overwriting one (see outdir.h). */
#include "cli/outdir.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/common.h"
#include "core/file.h"

/* "a, b, c": those of names (but skip) that exist in dir, into buf. The count. */
static size_t list_present(const char *dir, const char *const *names, const char *skip, char *buf,
                           size_t cap)
{
    buf[0] = '\0';
    size_t n = 0, len = 0;
    for (size_t k = 0; names[k]; k++) {
        char p[4200];
        struct stat st;
        if (skip && !strcmp(names[k], skip))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, names[k]);
        if (lstat(p, &st) < 0)
            continue;
        if (len < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", n ? ", " : "", names[k]);
        n++;
    }
    return n;
}

/* What the manifest at path says of its measurement: "carma stat, status complete, written
 * 2026-12-01T21:10:00Z". */
static void describe_manifest(const char *path, char *buf, size_t cap)
{
    char when[40] = "";
    struct stat st;
    if (stat(path, &st) == 0) {
        struct tm tm;
        time_t t = st.st_mtime;
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof when, ", written %Y-%m-%dT%H:%M:%SZ", &tm);
    }
    if (stat(path, &st) == 0 && st.st_size == 0) {
        snprintf(buf, cap, "empty: another carma is starting in it%s", when);
        return;
    }
    json_t *m = file_load_json(path, 0, NULL, NULL);
    const char *prod = json_string_value(json_object_get(m, "producer"));
    const char *status = json_string_value(json_object_get(m, "status"));
    if (prod)
        snprintf(buf, cap, "%s, status %s%s", prod, status ? status : "unknown", when);
    else
        snprintf(buf, cap, "not one of carma's%s", when);
    json_decref(m);
}

int outdir_claim(const char *cmd, const char *option, const char *dir, const char *const *outputs,
                 bool *ret_created)
{
    int r = file_claim_dir(dir, OUTDIR_CLAIM, outputs, ret_created);
    if (r == 0)
        return 0;
    if (r != -ENOTEMPTY) {
        cli_error("%s: cannot create %s: %s", cmd, dir, strerror(-r));
        return 1;
    }
    char mpath[4200], what[512], rest[600];
    snprintf(mpath, sizeof mpath, "%s/%s", dir, OUTDIR_CLAIM);
    struct stat st;
    if (stat(mpath, &st) == 0) {
        describe_manifest(mpath, what, sizeof what);
        size_t n = list_present(dir, outputs, OUTDIR_CLAIM, rest, sizeof rest);
        cli_error("%s: %s %s: %s already holds a measurement (manifest.json: %s%s%s), which carma "
                  "never overwrites: give another %s DIR, or remove %s first",
                  cmd, option, dir, dir, what, n ? "; also " : "", n ? rest : "", option, dir);
    } else {
        list_present(dir, outputs, NULL, rest, sizeof rest);
        cli_error("%s: %s %s: %s holds files of an earlier measurement (%s), which carma never "
                  "overwrites nor mixes with a new one: give another %s DIR, or remove them first",
                  cmd, option, dir, dir, rest, option);
    }
    return 2;
}
