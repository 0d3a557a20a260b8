/*
 * run_outcome: the words for a workload that did not end well (failed, killed, timed out, not
 * started) and the last lines of its logs/<name>.err, for carma run's printed report and
 * report.txt (see run.h).
 */
#include "cli/run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TAIL_READ_MAX (64 * 1024) /* bytes read from the end of the log */
#define TAIL_LINE_MAX 300         /* bytes of one line shown */

/* "SIGTERM" (or "signal 77"). */
static const char *sig_name(int sig, char *buf, size_t cap)
{
    const char *s = sigabbrev_np(sig);
    if (s)
        snprintf(buf, cap, "SIG%s", s);
    else
        snprintf(buf, cap, "signal %d", sig);
    return buf;
}

/* "0.009 s", "1.2 s", "95 s". */
static const char *secs(double s, char *buf, size_t cap)
{
    snprintf(buf, cap, s >= 10 ? "%.0f s" : s >= 1 ? "%.1f s" : "%.3f s", s);
    return buf;
}

size_t run_outcome_sentence(const struct run *r, const struct job *j, char *buf, size_t cap)
{
    char d[32], t[32], sg[32];
    const char *name = j->spec->name;
    double dur = (double)(j->proc.end_mono - j->proc.start_mono) / 1e9;
    int n = 0;
    if (j->proc.pid <= 0) {
        if (j->proc.exit_status == 0)
            return 0;
        if (r->ctl.signals && j->proc.exit_status > 128)
            n = snprintf(buf, cap, "%s was not started: the run was interrupted first", name);
        else
            n = snprintf(buf, cap, "%s could not be started: exit status %d (%s)", name,
                         j->proc.exit_status,
                         j->proc.exit_status == 127 ? "command not found" : "cannot be executed");
    } else if (j->proc.timed_out) {
        n = snprintf(buf, cap, "%s timed out after %s (its timeout_s), ", name,
                     secs(j->spec->timeout_s, t, sizeof t));
        if (WIFSIGNALED(j->proc.wstatus) && WTERMSIG(j->proc.wstatus) == SIGKILL)
            n += snprintf(buf + n, cap > (size_t)n ? cap - (size_t)n : 0,
                          "SIGTERM did not stop it: SIGKILLed after the %s grace",
                          secs((double)r->ctl.grace_ns / 1e9, d, sizeof d));
        else if (WIFSIGNALED(j->proc.wstatus))
            n += snprintf(buf + n, cap > (size_t)n ? cap - (size_t)n : 0, "stopped by %s",
                          sig_name(WTERMSIG(j->proc.wstatus), sg, sizeof sg));
        else
            n += snprintf(buf + n, cap > (size_t)n ? cap - (size_t)n : 0,
                          "sent SIGTERM; it exited with status %d", j->proc.exit_status);
    } else if (WIFSIGNALED(j->proc.wstatus)) {
        int sig = WTERMSIG(j->proc.wstatus);
        n = snprintf(buf, cap, "%s was killed by %s after %s%s", name, sig_name(sig, sg, sizeof sg),
                     secs(dur, d, sizeof d),
                     r->ctl.signals ? " (carma forwarded the signal that interrupted the run)"
                                    : "");
    } else if (j->proc.exit_status != 0) {
        n = snprintf(buf, cap, "%s failed: exit status %d after %s", name, j->proc.exit_status,
                     secs(dur, d, sizeof d));
    }
    return n < 0 ? 0 : (size_t)n;
}

/* Prints the last (at most) nlines lines of path, each after "    | ", or says it is empty. */
static void print_tail(FILE *f, const char *path, const char *shown, int nlines)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(f, "  %s: %s\n", shown, strerror(errno));
        return;
    }
    struct stat st;
    static char buf[TAIL_READ_MAX + 1];
    ssize_t got = 0;
    if (fstat(fd, &st) == 0) {
        off_t from = st.st_size > TAIL_READ_MAX ? st.st_size - TAIL_READ_MAX : 0;
        got = pread(fd, buf, TAIL_READ_MAX, from);
    }
    close(fd);
    if (got < 0) {
        fprintf(f, "  %s: %s\n", shown, strerror(errno));
        return;
    }
    size_t len = (size_t)got;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        len--;
    if (len == 0) {
        fprintf(f, "  %s is empty\n", shown);
        return;
    }
    buf[len] = '\0';
    /* back from the end to the start of the nlines-th last line */
    size_t start = len;
    int seen = 0;
    while (start > 0) {
        if (buf[start - 1] == '\n' && ++seen == nlines)
            break;
        start--;
    }
    int count = 1;
    for (size_t i = start; i < len; i++)
        count += buf[i] == '\n';
    if (count == 1)
        fprintf(f, "  the last line of %s:\n", shown);
    else
        fprintf(f, "  the last %d lines of %s:\n", count, shown);
    for (char *line = buf + start; line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        size_t l = strlen(line);
        if (l && line[l - 1] == '\r')
            line[--l] = '\0';
        fprintf(f, "    | %.*s%s\n", TAIL_LINE_MAX, line, l > TAIL_LINE_MAX ? " [...]" : "");
        line = nl ? nl + 1 : NULL;
    }
}

/* The error (ENOSPC, EFBIG, EDQUOT as a positive errno) with which the run's own journals met a
 * full file system or a file size limit, 0 when they did not: a workload writing its logs/
 * there met it too, and its error message may be lost with its output. */
static int run_disk_error(const struct run *r)
{
    int err = 0;
    samples_csv_lost_ticks(r->csv, &err);
    for (size_t k = 0; k < r->out.njournals && err != -ENOSPC && err != -EFBIG && err != -EDQUOT;
         k++)
        journal_lost(r->out.journals[k], &err);
    return err == -ENOSPC || err == -EFBIG || err == -EDQUOT ? -err : 0;
}

void run_outcome_text(const struct run *r, FILE *f)
{
    bool first = true;
    int disk = -1; /* run_disk_error(), found at the first failed workload */
    for (size_t k = 0; k < r->njobs; k++) {
        const struct job *j = &r->jobs[k];
        char what[512];
        if (run_outcome_sentence(r, j, what, sizeof what) == 0)
            continue;
        fprintf(f, "%s%s\n", first ? "\n" : "", what);
        first = false;
        if (j->proc.pid <= 0)
            continue;
        char path[4200], shown[300];
        snprintf(path, sizeof path, "%s/logs/%s.err", r->dir, j->spec->name);
        snprintf(shown, sizeof shown, "logs/%s.err", j->spec->name);
        print_tail(f, path, shown, RUN_OUTCOME_TAIL_LINES);
        if (disk < 0)
            disk = run_disk_error(r);
        if (disk > 0)
            fprintf(f,
                    "  (the run directory's files met \"%s\": what %s wrote to logs/, its "
                    "error message included, may be lost)\n",
                    strerror(disk), j->spec->name);
    }
}
