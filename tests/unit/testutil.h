/*
 * Helpers shared by the unit tests (tests/unit/test_*.c): where the fixture trees are, a
 * scratch directory per test with files written into it in place, counting open file
 * descriptors, reading a small file whole, probing one source on a root directory, and a
 * sampler that fails the test when it cannot be made.
 *
 * Every helper that can fail fails the running test (cmocka's fail_msg or an assert_*), except
 * where its contract says it returns an error instead: those are the ones meant for cmocka
 * set-up and teardown functions, where a failure is reported by the return value.
 */
#ifndef CARMA_TESTS_TESTUTIL_H
#define CARMA_TESTS_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

struct channel_set;
struct fsroot;
struct sampler;
struct sampler_opts;
struct source;
struct source_ops;

/* The size of tu_dir. */
#define TU_DIR_MAX 256

/* |a - b| <= eps, with both numbers in the message when not. */
#define tu_assert_near(a, b, eps)                                                                  \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (eps)))                                                             \
            fail_msg("%.17g != %.17g", a_, b_);                                                    \
    } while (0)

/* ---- random numbers (deterministic: splitmix64) ---- */

/* Restarts the sequence from seed. */
void tu_rng_seed(uint64_t seed);

/* The next 64 random bits. */
uint64_t tu_rng_next(void);

/* Uniform in [0, 1), 53 bits. */
double tu_rng_u(void);

/* ---- fixtures ---- */

/*
 * Writes the path of fixture tree name into buf of cap bytes: below $CARMA_FIXTURES when that
 * is set and not empty, else below "tests/fixtures".
 */
void tu_fixture_path(char *buf, size_t cap, const char *name);

/* ---- temporary directories ---- */

/* The scratch directory of the running test, made by tu_setup and removed by tu_teardown. */
extern char tu_dir[TU_DIR_MAX];

/*
 * cmocka set-up: makes tu_dir, a new empty directory $TMPDIR/carma-TAG-XXXXXX (/tmp when TMPDIR
 * is unset or empty; TAG is this program's name without its "test_" prefix), and unsets
 * CARMA_FAULT. Returns 0, or -1 when the directory cannot be made.
 */
int tu_setup(void **state);

/*
 * cmocka teardown: unsets CARMA_FAULT and removes tu_dir with everything in it (rm -rf).
 * Returns 0, or -1 when the removal failed.
 */
int tu_teardown(void **state);

/* Copies the contents of fixture tree name into tu_dir (cp -R); fails the test if cp fails. */
void tu_copy_fixture(const char *name);

/* ---- files ---- */

/*
 * Makes the directories of rel below tu_dir: every component of rel that a '/' follows (so
 * the parents of a file, or all of "a/b/" itself). Ones that exist already are fine; any other
 * error fails the test.
 */
void tu_mkdirs(const char *rel);

/*
 * Writes content into rel below tu_dir, making its directories first (tu_mkdirs). An existing
 * file is truncated and rewritten in place, never replaced: a source that keeps it open reads
 * the new content at its next pread. Fails the test when the file cannot be opened or written.
 */
void tu_put(const char *rel, const char *content);

/* Writes v in decimal and a newline into rel below tu_dir, as tu_put does. */
void tu_put_u64(const char *rel, uint64_t v);

/*
 * Reads at most cap - 1 bytes of the file at path into buf and NUL-terminates them. Returns
 * the number of bytes read; fails the test when the file cannot be opened.
 */
size_t tu_slurp(const char *path, char *buf, size_t cap);

/* ---- processes ---- */

/* The number of file descriptors this process has open (entries of /proc/self/fd). */
int tu_count_fds(void);

/* Sleeps ms milliseconds (an interrupted sleep is cut short). */
void tu_pause_ms(long ms);

/* ---- sources and samplers ---- */

/* Opens r on directory dir; fails the test, with fsroot_open's message, when it cannot. */
void tu_open_root(struct fsroot *r, const char *dir);

/*
 * Opens root on dir (tu_open_root), then probes the source ops into set, which may hold
 * channels already: src is zeroed first and its ops set. Returns what probe returned.
 */
int tu_probe(struct source *src, const struct source_ops *ops, struct fsroot *root, const char *dir,
             struct channel_set *set);

/*
 * Closes a source probed by tu_probe (successfully or not), asserts that it freed its private
 * state, and closes its root.
 */
void tu_unprobe(struct source *src, struct fsroot *root);

/* The index of the channel named name in set, or -1 when there is none. */
int tu_channel_index(const struct channel_set *set, const char *name);

/* sampler_new(o), failing the test with the error's message when it returns NULL. */
struct sampler *tu_sampler_new(const struct sampler_opts *o);

#endif
