/* note: a source's reason and note sentences (see note.h). */
#include "sources/note.h"

#include "core/fmt.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void note_add(char *buf, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len > 0 && len + 2 < cap) {
        memcpy(buf + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    fmt_vappend(buf, cap, fmt, ap);
    va_end(ap);
}
