/* escaped: processes that escaped their workload's process group, ended (see escaped.h). */
#include "cli/escaped.h"

#include <stdio.h>

#include "cli/common.h"
#include "workload/strays.h"

/* carma's children before it started anything (a shell's background jobs that exec'd
 * carma): not the run's */
static pid_t before[STRAYS_MAX];
static size_t nbefore;

void escaped_begin(void)
{
    struct stray s[STRAYS_MAX];
    int n = strays_find("/proc", NULL, 0, s, STRAYS_MAX);
    nbefore = 0;
    for (int i = 0; i < n && i < STRAYS_MAX; i++)
        before[nbefore++] = s[i].pid;
}

size_t escaped_end(const pid_t *keep, size_t nkeep, int64_t grace_ns)
{
    pid_t all[STRAYS_MAX * 2];
    size_t nall = 0;
    for (size_t i = 0; i < nkeep && nall < STRAYS_MAX; i++)
        all[nall++] = keep[i];
    for (size_t i = 0; i < nbefore; i++)
        all[nall++] = before[i];
    struct strays st;
    int n = strays_end("/proc", all, nall, grace_ns, &st);
    if (n <= 0)
        return 0;
    char list[STRAYS_MAX * 48] = "";
    size_t len = 0;
    for (size_t i = 0; i < st.n && len < sizeof list; i++) {
        int w = snprintf(list + len, sizeof list - len, "%spid %d (%s): %s", i ? ", " : "",
                         (int)st.s[i].pid, st.s[i].comm,
                         st.s[i].needed_kill ? "killed" : "ended by SIGTERM");
        if (w < 0)
            break;
        len += (size_t)w;
    }
    if (st.total > st.n && len < sizeof list)
        snprintf(list + len, sizeof list - len, " and %zu more", st.total - st.n);
    if (st.total == 1)
        cli_error("1 process escaped its workload's process group: %s", list);
    else
        cli_error("%zu processes escaped their workloads' process groups: %s", st.total, list);
    return st.total;
}
