/* pathwalk: paths as pathlib prints, orders and walks them (see pathwalk.h). */
#include "core/pathwalk.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/array.h"

char *pathwalk_norm(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(n + 2);
    if (!out)
        return NULL;
    size_t o = 0;
    const char *p = s;
    if (p[0] == '/') {
        out[o++] = '/';
        if (p[1] == '/' && p[2] != '/')
            out[o++] = '/';
    }
    size_t root = o;
    while (*p) {
        while (*p == '/')
            p++;
        const char *q = p;
        while (*q && *q != '/')
            q++;
        size_t len = (size_t)(q - p);
        if (len > 0 && !(len == 1 && p[0] == '.')) {
            if (o > root)
                out[o++] = '/';
            memcpy(out + o, p, len);
            o += len;
        }
        p = q;
    }
    if (o == 0)
        out[o++] = '.';
    out[o] = '\0';
    return out;
}

char *pathwalk_join(const char *base, const char *name)
{
    if (strcmp(base, ".") == 0)
        return strdup(name);
    size_t bl = strlen(base);
    char *s;
    if (asprintf(&s, bl > 0 && base[bl - 1] == '/' ? "%s%s" : "%s/%s", base, name) < 0)
        return NULL;
    return s;
}

char *pathwalk_with_name(const char *path, const char *name)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(name);
    char *s;
    if (asprintf(&s, "%.*s/%s", (int)(slash - path), path, name) < 0)
        return NULL;
    return s;
}

const char *pathwalk_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void pathwalk_parent_name(const char *path, const char **ret, size_t *ret_len)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        *ret = "";
        *ret_len = 0;
        return;
    }
    const char *b = slash;
    while (b > path && b[-1] != '/')
        b--;
    *ret = b;
    *ret_len = (size_t)(slash - b);
}

int pathwalk_cmp(const char *a, const char *b)
{
    for (;;) {
        size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
        size_t m = la < lb ? la : lb;
        int c = memcmp(a, b, m);
        if (c != 0)
            return c;
        if (la != lb)
            return la < lb ? -1 : 1;
        a += la;
        b += lb;
        if (!*a || !*b)
            return *a ? 1 : *b ? -1 : 0;
        a++;
        b++;
    }
}

int pathwalk_cmp_ptr(const void *a, const void *b)
{
    return pathwalk_cmp(*(char *const *)a, *(char *const *)b);
}

bool pathwalk_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool pathwalk_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool pathwalk_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* One directory: fn on its entries, then (rglob) the walk of its real subdirectories, after the
 * directory is closed. */
static int walk(const char *dir, pathwalk_fn fn, void *ud, bool rglob)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int r = 0;
    char **sub = NULL;
    size_t nsub = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        char *path = pathwalk_join(dir, name);
        if (!path) {
            r = -ENOMEM;
            break;
        }
        if ((r = fn(ud, name, path)) < 0) {
            free(path);
            break;
        }
        struct stat st;
        if (rglob && lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (array_grow(&sub, &cap, nsub + 1, sizeof *sub) < 0) {
                free(path);
                r = -ENOMEM;
                break;
            }
            sub[nsub++] = path;
        } else {
            free(path);
        }
    }
    closedir(d);
    for (size_t i = 0; r == 0 && i < nsub; i++)
        r = walk(sub[i], fn, ud, true);
    for (size_t i = 0; i < nsub; i++)
        free(sub[i]);
    free(sub);
    return r;
}

int pathwalk_list(const char *dir, pathwalk_fn fn, void *ud)
{
    return walk(dir, fn, ud, false);
}

int pathwalk_rglob(const char *dir, pathwalk_fn fn, void *ud)
{
    return walk(dir, fn, ud, true);
}
