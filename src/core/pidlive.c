/* pidlive: is a run's writer still alive (see pidlive.h). */
#include "core/pidlive.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/parse.h"

/* Reads the small file at path into buf (NUL-terminated). Returns its length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    ssize_t n;
    do
        n = read(fd, buf, cap - 1);
    while (n < 0 && errno == EINTR);
    int err = errno;
    close(fd);
    if (n < 0)
        return -err;
    buf[n] = '\0';
    return n;
}

int pid_start_ticks(pid_t pid, uint64_t *ret, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    ssize_t n = read_small(path, buf, sizeof buf);
    if (n < 0)
        return n == -ENOENT || n == -ESRCH ? -ENOENT : (int)n;
    return pid_stat_start_parse(buf, ret, state);
}

int pid_stat_start_parse(const char *text, uint64_t *ret, char *state)
{
    /* after the comm, which may hold spaces and parentheses: the last ')' ends it */
    const char *p = strrchr(text, ')');
    if (!p)
        return -EINVAL;
    p++;
    if (state)
        *state = p[0] == ' ' ? p[1] : '?';
    /* fields 3.. follow: the 20th of them is field 22 */
    for (int field = 3; field < 22; field++) {
        if (!*p)
            return -EINVAL; /* the text ends here: nothing after its NUL is read */
        p = strchr(p + 1, ' ');
        if (!p)
            return -EINVAL;
    }
    p++;
    char num[32];
    size_t k = strcspn(p, " \n");
    if (k == 0 || k >= sizeof num)
        return -EINVAL;
    memcpy(num, p, k);
    num[k] = '\0';
    return parse_u64(num, ret) < 0 ? -EINVAL : 0;
}

int pid_boot_id(char *buf, size_t cap)
{
    ssize_t n = read_small("/proc/sys/kernel/random/boot_id", buf, cap);
    if (n < 0)
        return (int)n;
    buf[strcspn(buf, "\n")] = '\0';
    return buf[0] ? 0 : -EINVAL;
}

int pid_writer_alive(pid_t pid, uint64_t start_ticks, const char *boot_id)
{
    if (pid <= 0)
        return 1;
    if (boot_id && *boot_id) {
        char now[64];
        if (pid_boot_id(now, sizeof now) == 0 && strcmp(now, boot_id) != 0)
            return 0; /* written before a reboot */
    }
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return 0;
    uint64_t t;
    char state = '?';
    int r = pid_start_ticks(pid, &t, &state);
    if (r == -ENOENT)
        return 0;
    if (r == 0 && (state == 'Z' || state == 'X'))
        return 0; /* exited, not yet reaped */
    if (r == 0 && start_ticks && t != start_ticks)
        return 0; /* the pid was reused */
    return 1;
}
