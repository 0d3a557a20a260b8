/* jsonutil: jansson helpers for numbers that may be missing (see jsonutil.h). */
#include "core/jsonutil.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"

int jsonutil_write_file(const json_t *j, const char *path)
{
    char *text = json_dumps(j, JSONUTIL_DUMP_FLAGS);
    if (!text)
        return -ENOMEM;
    size_t n = strlen(text);
    text[n] = '\n'; /* the NUL becomes the final newline */
    int r = file_replace(path, text, n + 1);
    free(text);
    return r;
}

json_t *jsonutil_real(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *jsonutil_str(const char *s)
{
    return s ? json_string(s) : json_null();
}

void jsonutil_set_num(json_t *obj, const char *key, double v)
{
    json_object_set_new(obj, key, jsonutil_real(v));
}

double jsonutil_num(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

double jsonutil_get_num(const json_t *o, const char *key)
{
    return jsonutil_num(json_object_get(o, key));
}

const char *jsonutil_get_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}
