/* srt/json: srt-slurm-style JSON files, replaced atomically (see json.h). */
#include "srt/json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "core/fmt.h"
#include "core/pyjson.h"

#ifdef CARMA_HAVE_LIBCRYPTO
#include <openssl/evp.h>
#endif

int srt_json_replace(json_t *m, const char *path, struct carma_err *e)
{
    /* Python's json.dumps(indent=2): repr floats, lowercase \\uXXXX escapes */
    char *text = m ? pyjson_dumps(m, 2) : NULL;
    json_decref(m);
    if (!text)
        return carma_err_set(e, -ENOMEM, "cannot write %s: out of memory", path);
    size_t n = strlen(text);
    text[n] = '\n'; /* the NUL becomes the final newline: the text is not a string now */
    /* a new temporary name each time, created with O_EXCL: never a file or link left there */
    int r = file_replace(path, text, n + 1);
    free(text);
    if (r < 0)
        return carma_err_set(e, r, "cannot write %s: %s", path, strerror(-r));
    return 0;
}

struct journal *srt_json_csv_create(const char *dir, const char *csv_path, const char *header,
                                    struct carma_err *e)
{
    int r = file_mkdirs(dir);
    if (r < 0) {
        carma_err_set(e, r, "cannot create %s: %s", dir, strerror(-r));
        return NULL;
    }
    return journal_open(csv_path, header, "rows", e);
}

void srt_json_float_cell(struct csv_buf *b, double v)
{
    if (v == 0)
        v = 0; /* -0.0 */
    char *p = b->data + b->len;
    size_t n = fmt_fixed6(p, v);
    if (n && !memchr(p, '.', n)) {
        p[n++] = '.';
        p[n++] = '0';
    }
    b->len += n;
    b->data[b->len] = '\0';
}

int srt_json_file_sha256(const char *path, char out[65])
{
#ifdef CARMA_HAVE_LIBCRYPTO
    int fd = file_open_input(AT_FDCWD, path, NULL);
    if (fd < 0)
        return fd;
    int r = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    char *chunk = malloc(1 << 16);
    if (!ctx || !chunk || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        r = -ENOMEM;
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, 1 << 16);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            goto out;
        }
        if (n == 0)
            break;
        if (EVP_DigestUpdate(ctx, chunk, (size_t)n) != 1) {
            r = -EIO;
            goto out;
        }
    }
    unsigned char md[32];
    unsigned len = 0;
    if (EVP_DigestFinal_ex(ctx, md, &len) != 1 || len != 32) {
        r = -EIO;
        goto out;
    }
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
out:
    free(chunk);
    EVP_MD_CTX_free(ctx);
    close(fd);
    return r;
#else
    (void)path;
    out[0] = '\0';
    return -ENOTSUP;
#endif
}
