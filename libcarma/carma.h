/*
 * carma.h: marks for carma, from any program (docs/formats.md, "Marks"). A mark names a
 * window of the program; carma reports the window's energy, split among the jobs it
 * measures. The program runs under `carma run` or `carma stat -o DIR`, which put their
 * socket's path in CARMA_SOCKET.
 *
 *   #include <carma.h>            cc prog.c -lcarma
 *
 *   carma_begin_nowait("epoch-3", -1, -1);
 *   ... train ...
 *   struct carma_energy e;
 *   if (carma_end("epoch-3", tokens, -1, &e) == 0)
 *       printf("%.1f J\n", e.energy_j);
 *
 * Without CARMA_SOCKET, or when carma does not answer, every call does nothing and returns
 * CARMA_OFF; the first such call says why on stderr, once per process (CARMA_MARKS_QUIET=1
 * silences it). The calls are thread-safe, and a child after fork() opens its own connection.
 * libc only; one connection per process, one packet each way per call (carma_begin_nowait:
 * one packet out, its answer read by the next call).
 */
#ifndef CARMA_H
#define CARMA_H

#ifdef __cplusplus
extern "C" {
#endif

#define CARMA_OFF 1 /* marks are off: no carma (the call did nothing) */

/* The node's energy over a window, as carma saw it when the window ended (tick resolution;
 * carma's report, split among the jobs, is the reference). NAN where carma has no channel of
 * that kind. */
struct carma_energy {
    unsigned long long id; /* the window's, 1, 2, ... in carma's order */
    double t0, t1;         /* its begin and end, Unix seconds */
    double energy_j;       /* the node's */
    double cpu_j, gpu_j, dram_j;
    char method[16]; /* "measured", "estimated" (a model in it) or "none" */
};

/* Opens the window NAME (1 to 200 bytes, no control characters); tokens, requests: counts
 * for the report's J/token and tokens/s per W, or -1 (none). Returns the window's id (>= 1),
 * 0 when marks are off, or a negative errno: -EINVAL (a bad name or count, or carma refused
 * the message: carma_last_error() says why), -EIO (the connection failed). */
long long carma_begin(const char *name, long long tokens, long long requests);

/* The same as carma_begin without waiting for carma's answer: one packet out, nothing back
 * (about half a window's cost: docs/benchmarks.md); the window's id comes with carma_end's
 * energy. Returns 0, CARMA_OFF or a negative errno (-EINVAL: a bad name or count; -EIO). A
 * begin that carma refused (too many windows open) is told by the carma_end of that name,
 * which then returns -EINVAL without closing another window of the name. */
int carma_begin_nowait(const char *name, long long tokens, long long requests);
/* Closes the most recent open window NAME (of any process); tokens and requests replace the
 * begin's when >= 0. out (may be NULL) gets the window's energy. Returns 0, CARMA_OFF, or a
 * negative errno as carma_begin (-ENOENT: no open window of that name). */
int carma_end(const char *name, long long tokens, long long requests, struct carma_energy *out);

/* The same as carma_end without waiting for carma's answer, nor the energy (carma's report
 * has the window's figures): one packet out, the answer read by a later call that waits (or
 * by the next carma_end_nowait of a name still begun without an answer). Returns 0, CARMA_OFF
 * or a negative errno as carma_end; a refusal told later (no open window of that name)
 * becomes carma_last_error(). With carma_begin_nowait, a window costs two packets out
 * (docs/benchmarks.md). */
int carma_end_nowait(const char *name, long long tokens, long long requests);
/* An event with a value (a loss, a batch size) at this instant. Returns 0, CARMA_OFF or a
 * negative errno. */
int carma_event(const char *name, double value);

/* The last error message of this process ("" when none): why marks are off, or
 * what carma answered to the last refused call. */
const char *carma_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
