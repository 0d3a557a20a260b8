/*
 * markd: the marks socket of a measuring command (docs/formats.md, "Marks"): a thread that
 * listens on DIR/carma.sock (SOCK_SEQPACKET, mode 0600, or 0660 for a group), answers the programs'
 * begin / end / event / hello messages, appends each mark to DIR/marks.csv as it arrives (one whole
 * row per write(2)) and tells each `end` the node's energy over its window so far.
 *
 * The sampling thread only publishes, after each tick, the node's energy so far
 * (markd_publish_sampler: a mutex, a few additions, no allocation, no system call); the
 * socket's work is all in markd's own thread. The job of a pid is found by walking its
 * parents in /proc up to a root that markd_add_root named (a workload's first process).
 */
#ifndef CARMA_SERVE_MARKD_H
#define CARMA_SERVE_MARKD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"
#include "sampler/sampler.h"
#include "serve/markproto.h"

#define MARKD_PROTOCOL    1
#define MARKD_MSG_MAX     1024 /* bytes of one message */
#define MARKD_NAME_MAX    MARKPROTO_NAME_MAX
#define MARKD_CLIENTS_MAX 128  /* connections at once; the next one is closed at once */
#define MARKD_OPEN_MAX    4096 /* windows open at once; a begin past it gets an error */
#define MARKD_ROOTS_MAX   256  /* workload roots */

struct markd_opts {
    const char *dir;     /* the run directory: carma.sock and marks.csv go there */
    const char *version; /* carma's, for hello */
    bool group_set;      /* the socket is gid's group's too: mode 0660 (else 0600) */
    gid_t gid;
    /* a warning (marks.csv not written, a client refused), from markd's thread; may be NULL */
    void (*warn)(void *ctx, const char *msg);
    void *ctx;
};

struct markd;

/* Binds the socket and starts the thread (marks.csv is created at the first mark). Returns
 * NULL with e set (naming the path) when it cannot. */
struct markd *markd_start(const struct markd_opts *o, struct carma_err *e);

/* The socket's path, for CARMA_SOCKET (DIR/carma.sock, or a shorter path it links to). */
const char *markd_socket(const struct markd *m);

/* pid's tree is workload name's (its marks carry that name); at most MARKD_ROOTS_MAX. */
void markd_add_root(struct markd *m, pid_t pid, const char *name);

/* After a tick: the node's energy so far, by kind, from s's channels of the node's figure
 * (sampler_select_node), and their power over the tick. */
void markd_publish_sampler(struct markd *m, const struct sampler *s);

/*
 * The node's energy over the open window id so far, as its `end` would reply at now_real_ns
 * (its energy_j: the samples up to the last tick, that tick's power carried to now), into *j,
 * and whether a model's figure is in it; from any thread. 0, -ENOENT when no window of that id
 * is open (or m is NULL), -ENODATA when the node has no channel (*j NAN then).
 */
int markd_window_energy(struct markd *m, uint64_t id, int64_t now_real_ns, double *j,
                        bool *estimated);

/* The windows open now, ended and the events received since the start (from any thread). */
struct markd_stats {
    uint64_t open, ended, events;
};
void markd_stats(struct markd *m, struct markd_stats *out);

/* Stops the thread, writes an `unended` row stamped last_real_ns for each window still
 * open, closes marks.csv (fsync) and removes the socket. Returns the windows left open, or
 * -errno when marks.csv could not be written completely (e set). NULL m: 0. */
int markd_stop(struct markd *m, int64_t last_real_ns, struct carma_err *e);

#endif
