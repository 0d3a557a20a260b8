/* srt_json: srt-slurm-style JSON files, replaced atomically (see srt_json.h). */
#include "export/srt_json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "core/pyjson.h"

int srt_json_replace(json_t *m, const char *dir, const char *tmp_path, const char *path,
                     struct carma_err *e)
{
    /* Python's json.dumps(indent=2): repr floats, lowercase \\uXXXX escapes */
    char *text = m ? pyjson_dumps(m, 2) : NULL;
    json_decref(m);
    if (!text)
        return carma_err_set(e, -ENOMEM, "cannot write %s: out of memory", path);
    int r = 0;
    int fd = file_create(tmp_path, O_TRUNC);
    if (fd < 0) {
        r = fd;
        free(text);
        return carma_err_set(e, r, "cannot create %s: %s", tmp_path, strerror(-r));
    }
    size_t n = strlen(text);
    text[n] = '\n'; /* the NUL becomes the final newline: the text is not a string now */
    r = file_write_all(fd, text, n + 1);
    free(text);
    if (r == 0 && fsync(fd) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r < 0) {
        unlink(tmp_path);
        return carma_err_set(e, r, "cannot write %s: %s", tmp_path, strerror(-r));
    }
    if (rename(tmp_path, path) < 0) {
        r = -errno;
        unlink(tmp_path);
        return carma_err_set(e, r, "cannot rename %s to %s: %s", tmp_path, path, strerror(-r));
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd); /* best effort: some file systems refuse to sync a directory */
        close(dfd);
    }
    return 0;
}

int srt_csv_create(const char *dir, const char *csv_path, const char *header, size_t n,
                   struct carma_err *e)
{
    int r = file_mkdirs(dir);
    if (r < 0)
        return carma_err_set(e, r, "cannot create %s: %s", dir, strerror(-r));
    int fd = file_create(csv_path, O_TRUNC);
    if (fd < 0) {
        r = fd;
        return carma_err_set(e, r, "cannot create %s: %s", csv_path, strerror(-r));
    }
    r = file_write_all(fd, header, n);
    if (r < 0) {
        close(fd);
        return carma_err_set(e, r, "cannot write %s: %s", csv_path, strerror(-r));
    }
    return fd;
}
