/* err: error records carried from library code up to the CLI. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

int carma_err_set(struct carma_err *e, int code, const char *fmt, ...)
{
    if (!e)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = code;
    return code;
}

void carma_err_clear(struct carma_err *e)
{
    if (!e)
        return;
    e->code = 0;
    e->msg[0] = '\0';
}
