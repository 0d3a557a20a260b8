/* outdir: claiming a measurement's directory without overwriting one (see outdir.h). */
#include "cli/outdir.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/common.h"
#include "core/file.h"

#define LIST_MAX 4 /* entries named in the message */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "a, b, c and 2 more" of dir's entries (sorted) other than skip, into buf. The count. */
static size_t list_entries(const char *dir, const char *skip, char *buf, size_t cap)
{
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char *names[64];
    size_t n = 0, total = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            (skip && !strcmp(de->d_name, skip)))
            continue;
        total++;
        if (n < sizeof names / sizeof *names && (names[n] = strdup(de->d_name)))
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    size_t len = 0;
    for (size_t k = 0; k < n; k++) {
        if (k < LIST_MAX && len < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", k ? ", " : "", names[k]);
        free(names[k]);
    }
    if (total > LIST_MAX && len < cap)
        snprintf(buf + len, cap - len, " and %zu more", total - LIST_MAX);
    return total;
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
    json_t *m = json_load_file(path, 0, NULL);
    const char *prod = json_string_value(json_object_get(m, "producer"));
    const char *status = json_string_value(json_object_get(m, "status"));
    if (prod)
        snprintf(buf, cap, "%s, status %s%s", prod, status ? status : "unknown", when);
    else
        snprintf(buf, cap, "not one of carma's%s", when);
    json_decref(m);
}

int outdir_claim(const char *cmd, const char *option, const char *dir, bool *ret_created)
{
    int r = file_claim_dir(dir, OUTDIR_CLAIM, ret_created);
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
        size_t others = list_entries(dir, OUTDIR_CLAIM, rest, sizeof rest);
        cli_error("%s: %s %s: %s already holds a measurement (manifest.json: %s%s%s), which carma "
                  "never overwrites: give another %s DIR, or remove %s first",
                  cmd, option, dir, dir, what, others ? "; also " : "", others ? rest : "", option,
                  dir);
    } else {
        list_entries(dir, NULL, rest, sizeof rest);
        cli_error("%s: %s %s: %s is not empty (it holds %s); carma measures into a new or an "
                  "empty directory only, so as never to overwrite or mix with what is there: give "
                  "another %s DIR, or empty %s first",
                  cmd, option, dir, dir, rest, option, dir);
    }
    return 2;
}
