/* journal: append-only files of whole rows, cut back after a failed write (see journal.h). */
#include "core/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "core/fmt.h"

struct journal {
    int fd;
    char path[4096];
    const char *unit;
    off_t good;    /* bytes of whole rows on disk */
    uint64_t rows; /* rows written */
    uint64_t lost; /* rows not written */
    bool damaged;  /* a torn batch could not be cut off: nothing more is appended */
    size_t nreasons;
    struct {
        int err;       /* negative errno */
        uint64_t rows; /* rows lost to it */
    } reason[JOURNAL_REASONS_MAX];
};

/* Counts rows lost to err; true when err is a condition this journal had not met before. */
static bool count_lost(struct journal *j, int err, uint64_t rows)
{
    j->lost += rows;
    for (size_t k = 0; k < j->nreasons; k++) {
        if (j->reason[k].err == err) {
            j->reason[k].rows += rows;
            return false;
        }
    }
    if (j->nreasons == JOURNAL_REASONS_MAX) { /* counted with the last, not said again */
        j->reason[JOURNAL_REASONS_MAX - 1].rows += rows;
        return false;
    }
    j->reason[j->nreasons].err = err;
    j->reason[j->nreasons].rows = rows;
    j->nreasons++;
    return true;
}

struct journal *journal_open(const char *path, const char *header, const char *unit,
                             struct carma_err *e)
{
    struct journal *j = calloc(1, sizeof *j);
    if (!j) {
        carma_err_set(e, -ENOMEM, "cannot write %s: out of memory", path);
        return NULL;
    }
    if (strlen(path) >= sizeof j->path) {
        free(j);
        carma_err_set(e, -ENAMETOOLONG, "cannot create %s: %s", path, strerror(ENAMETOOLONG));
        return NULL;
    }
    snprintf(j->path, sizeof j->path, "%s", path);
    j->unit = unit ? unit : "rows";
    j->fd = file_create(path, O_TRUNC);
    if (j->fd < 0) {
        int r = j->fd;
        free(j);
        carma_err_set(e, r, "cannot create %s: %s", path, strerror(-r));
        return NULL;
    }
    size_t n = header ? strlen(header) : 0;
    int r = n ? file_write_all(j->fd, header, n) : 0;
    if (r < 0) {
        carma_err_set(e, r, "cannot write %s: %s", path, strerror(-r));
        close(j->fd);
        free(j);
        return NULL;
    }
    j->good = (off_t)n;
    return j;
}

int journal_append(struct journal *j, const void *p, size_t n, uint64_t rows, int64_t first_ns,
                   struct carma_err *warn)
{
    if (!j)
        return -EBADF;
    int r = j->damaged ? -EIO : file_write_all(j->fd, p, n);
    if (r == 0) {
        j->good += (off_t)n;
        j->rows += rows;
        return 0;
    }
    /* never leave part of a batch: cut the file back to its last whole row */
    if (!j->damaged) {
        if (ftruncate(j->fd, j->good) < 0 || lseek(j->fd, j->good, SEEK_SET) != j->good)
            j->damaged = true;
    }
    if (count_lost(j, r, rows) && warn) {
        char when[64] = "";
        if (first_ns >= 0) {
            char ts[40];
            fmt_unix_us(ts, first_ns);
            snprintf(when, sizeof when, " from t=%s", ts);
        }
        carma_err_set(warn, r,
                      "cannot write %s: %s (%s%s not written%s; said once, counted at the end)",
                      j->path, strerror(-r), j->unit, when,
                      j->damaged ? "; the file ends in a part of a row that could not be cut off"
                                 : "; the file keeps its whole rows");
    }
    return r;
}

uint64_t journal_rows(const struct journal *j)
{
    return j ? j->rows : 0;
}

uint64_t journal_lost(const struct journal *j, int *ret_err)
{
    if (ret_err)
        *ret_err = j && j->nreasons ? j->reason[0].err : 0;
    return j ? j->lost : 0;
}

off_t journal_size(const struct journal *j)
{
    return j ? j->good : 0;
}

bool journal_damaged(const struct journal *j)
{
    return j && j->damaged;
}

int journal_finish(struct journal *j, const char *path, struct carma_err *e)
{
    int ret = 0;
    int r = journal_sync(j);
    if (r < 0)
        ret = carma_err_set(e, r, "cannot write %s: %s", path, strerror(-r));
    r = journal_close(j);
    if (r < 0 && !ret)
        ret = carma_err_set(e, r, "cannot write %s: %s", path, strerror(-r));
    return ret;
}

int journal_sync(struct journal *j)
{
    if (j && j->fd >= 0 && fsync(j->fd) < 0 && errno != EINVAL)
        return -errno;
    return 0;
}

const char *journal_path(const struct journal *j)
{
    return j ? j->path : "";
}

bool journal_loss_text(const struct journal *j, char *buf, size_t size)
{
    if (size)
        buf[0] = '\0';
    if (!j || !j->lost || !size)
        return false;
    size_t len = 0;
    int w =
        snprintf(buf, size, "%s: %llu %s lost to: ", j->path, (unsigned long long)j->lost, j->unit);
    for (size_t k = 0; w >= 0 && k < j->nreasons; k++) {
        len += (size_t)w;
        if (len >= size)
            break;
        if (j->nreasons == 1)
            w = snprintf(buf + len, size - len, "%s", strerror(-j->reason[k].err));
        else
            w = snprintf(buf + len, size - len, "%s%s (%llu)", k ? ", " : "",
                         strerror(-j->reason[k].err), (unsigned long long)j->reason[k].rows);
    }
    return true;
}

int journal_close(struct journal *j)
{
    if (!j)
        return 0;
    int r = 0;
    if (j->fd >= 0 && close(j->fd) < 0)
        r = -errno;
    free(j);
    return r;
}

int journal_reserve(const char *dir, size_t bytes)
{
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, FILE_MODE);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        /* no O_TMPFILE here: a new name, unlinked at once */
        char path[4200];
        for (int k = 0; k < FILE_TMP_TRIES && fd < 0; k++) {
            snprintf(path, sizeof path, "%s/.reserve.%ld.%016llx", dir, (long)getpid(),
                     (unsigned long long)file_tmp_rand());
            fd = file_create(path, O_EXCL | O_RDWR);
            if (fd >= 0)
                unlink(path);
            else if (fd != -EEXIST)
                return fd;
        }
        if (fd < 0)
            return fd;
    } else if (fd < 0) {
        return -errno;
    }
    int r = posix_fallocate(fd, 0, (off_t)bytes);
    if (r != 0) {
        close(fd);
        return -r;
    }
    return fd;
}
