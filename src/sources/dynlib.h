/*
 * dynlib: what the sources that dlopen a vendor library share (nvml, dcgm): which library to
 * load ($CARMA_..._LIBRARY, else the vendor's names), the rule that a vendor library is not
 * consulted below a --root other than "/" unless named, and the words of a load that fails.
 */
#ifndef CARMA_SOURCES_DYNLIB_H
#define CARMA_SOURCES_DYNLIB_H

#include <stddef.h>

#include "sources/source.h"

/*
 * The library named by environment variable env (*named; NULL when env is unset or empty).
 * Returns 0, or -ENOENT with s->reason "WHAT is not read below --root ROOT (set ENV to use it
 * anyway)" when nothing is named and ctx's root is not "/" (a fixture tree has no driver).
 */
int dynlib_choose(struct source *s, const struct probe_ctx *ctx, const char *what, const char *env,
                  const char **named);

/*
 * dlopens (RTLD_NOW | RTLD_LOCAL) named when not NULL, else the first of names[0 .. n) that is
 * there, into *lib; *libname is the one tried last. Returns 0; -ENOENT when it is not there
 * (s->reason: "NAMED not found (NAMED_FIX)", or absent_text when nothing was named); -EINVAL
 * when one is there but does not load (s->reason: "cannot load NAME: dlerror's words").
 */
int dynlib_open(struct source *s, const char *named, const char *const *names, size_t n,
                const char *named_fix, const char *absent_text, void **lib, const char **libname);

#endif
