/*
 * Helpers shared by the unit tests: see testutil.h for what each one does and how it fails.
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fsroot.h"
#include "sampler/sampler.h"
#include "sources/source.h"

char tu_dir[TU_DIR_MAX];

/* ---- fixtures ---- */

/* The directory of the fixture trees (see tu_fixture_path). */
static const char *fixtures(void)
{
    const char *f = getenv("CARMA_FIXTURES");
    return f && *f ? f : "tests/fixtures";
}

void tu_fixture_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", fixtures(), name);
}

/* ---- temporary directories ---- */

/* Makes $TMPDIR/carma-TAG-XXXXXX into buf (see tu_setup); returns buf, or NULL. */
static char *make_tmpdir(char *buf, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    const char *tag = program_invocation_short_name;
    if (strncmp(tag, "test_", 5) == 0)
        tag += 5;
    snprintf(buf, cap, "%s/carma-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    return mkdtemp(buf);
}

/* rm -rf path: 0, or -1 when that failed. */
static int rm_rf(const char *path)
{
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    return system(cmd) == 0 ? 0 : -1;
}

int tu_setup(void **state)
{
    (void)state;
    if (!make_tmpdir(tu_dir, sizeof tu_dir))
        return -1;
    unsetenv("CARMA_FAULT");
    return 0;
}

int tu_teardown(void **state)
{
    (void)state;
    unsetenv("CARMA_FAULT");
    return rm_rf(tu_dir);
}

void tu_copy_fixture(const char *name)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp -R '%s/%s/.' '%s/'", fixtures(), name, tu_dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- files ---- */

void tu_mkdirs(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    for (char *q = path + strlen(tu_dir) + 1; *q; q++) {
        if (*q == '/') {
            *q = '\0';
            if (mkdir(path, 0755) < 0 && errno != EEXIST)
                fail_msg("mkdir %s: %s", path, strerror(errno));
            *q = '/';
        }
    }
}

void tu_put(const char *rel, const char *content)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    tu_mkdirs(rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        fail_msg("open %s: %s", path, strerror(errno));
    size_t n = strlen(content);
    assert_int_equal(write(fd, content, n), (ssize_t)n);
    close(fd);
}

void tu_put_u64(const char *rel, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64 "\n", v);
    tu_put(rel, buf);
}

size_t tu_slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("fopen %s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

/* ---- processes ---- */

int tu_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

void tu_pause_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- sources and samplers ---- */

void tu_open_root(struct fsroot *r, const char *dir)
{
    struct carma_err e = {0};
    int ret = fsroot_open(r, dir, &e);
    if (ret != 0)
        fail_msg("fsroot_open %s: %d %s", dir, ret, e.msg);
}

int tu_probe(struct source *src, const struct source_ops *ops, struct fsroot *root, const char *dir,
             struct channel_set *set)
{
    tu_open_root(root, dir);
    memset(src, 0, sizeof *src);
    src->ops = ops;
    struct probe_ctx ctx = {.root = root, .set = set};
    return ops->probe(src, &ctx);
}

void tu_unprobe(struct source *src, struct fsroot *root)
{
    src->ops->close(src);
    assert_null(src->priv);
    fsroot_close(root);
}

int tu_channel_index(const struct channel_set *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->ch[i].name, name) == 0)
            return (int)i;
    return -1;
}

struct sampler *tu_sampler_new(const struct sampler_opts *o)
{
    struct carma_err e = {0};
    struct sampler *s = sampler_new(o, &e);
    if (!s)
        fail_msg("sampler_new: %s", e.msg);
    return s;
}

/* ---- random numbers ---- */

static uint64_t tu_rng_state;

void tu_rng_seed(uint64_t seed)
{
    tu_rng_state = seed;
}

uint64_t tu_rng_next(void)
{
    uint64_t z = (tu_rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tu_rng_u(void)
{
    return (double)(tu_rng_next() >> 11) * 0x1p-53;
}
