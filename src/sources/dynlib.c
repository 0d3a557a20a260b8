/* dynlib: loading a vendor library for a source (see dynlib.h). */
#include "sources/dynlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dynlib_choose(struct source *s, const struct probe_ctx *ctx, const char *what, const char *env,
                  const char **named)
{
    const char *v = getenv(env);
    *named = v && v[0] ? v : NULL;
    if (!*named && ctx->root && strcmp(ctx->root->path, "/") != 0) {
        snprintf(s->reason, sizeof s->reason,
                 "%s is not read below --root %s (set %s to use it anyway)", what, ctx->root->path,
                 env);
        return -ENOENT;
    }
    return 0;
}

/* Whether dlerror's words why say the file is not there (rather than there and unusable). */
static bool absent(const char *why)
{
    return !why || strstr(why, "No such file");
}

int dynlib_open(struct source *s, const char *named, const char *const *names, size_t n,
                const char *named_fix, const char *absent_text, void **lib, const char **libname)
{
    *lib = NULL;
    size_t tries = named ? 1 : n;
    for (size_t i = 0; i < tries; i++) {
        *libname = named ? named : names[i];
        *lib = dlopen(*libname, RTLD_NOW | RTLD_LOCAL);
        if (*lib)
            return 0;
        const char *why = dlerror();
        if (!absent(why)) {
            snprintf(s->reason, sizeof s->reason, "cannot load %s: %s", *libname, why);
            return -EINVAL;
        }
    }
    if (named)
        snprintf(s->reason, sizeof s->reason, "%s not found (%s)", named, named_fix);
    else
        snprintf(s->reason, sizeof s->reason, "%s", absent_text);
    return -ENOENT;
}
