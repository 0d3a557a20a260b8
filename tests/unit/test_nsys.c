/*
 * Tests for import/nsys.c and import/nsys_run.c: Nsight Systems SQLite exports built with the
 * SQLite C API (tests/fakes/nsys_db.c) with kernels whose busy time is known by hand: the union
 * of nested, overlapping and adjacent kernels, cut at interval edges; the pid in globalPid;
 * the session clock; the device mapping; missing tables and columns, an empty kernel table,
 * files that are not SQLite or are damaged; and the GPU split of a run directory redone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "../fakes/nsys_db.h"
#include "import/nsys.h"
#include "import/nsys_run.h"
#include "testutil.h"

#define S0 1700000000000000000LL /* the session's start: a multiple of 100 ms */
#define MS 1000000LL

static void path_in(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", tu_dir, name);
}

static void write_db(const char *name, const struct nsysdb_opts *o)
{
    char p[512];
    path_in(p, sizeof p, name);
    assert_int_equal(nsysdb_write(p, o), 0);
}

static int load(const char *name, struct nsys_profile *p, struct carma_err *e)
{
    char path[512];
    path_in(path, sizeof path, name);
    return nsys_load(path, p, e);
}

/* The busy time of (gpu, pid) in the interval starting at t0 (0 when no row). */
static double busy_of(const struct nsys_busy_set *s, int64_t t0, int gpu, uint32_t pid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->rows[i].t0_ns == t0 && s->rows[i].gpu == gpu && s->rows[i].pid == pid)
            return s->rows[i].busy_s;
    return 0;
}

static const struct nsysdb_kernel union_kernels[] = {
    {10 * MS, 50 * MS, 0, 42, 1},   /* a */
    {20 * MS, 30 * MS, 0, 42, 2},   /* nested in a */
    {40 * MS, 70 * MS, 0, 42, 3},   /* overlapping a: [10, 70] */
    {70 * MS, 80 * MS, 0, 42, 1},   /* adjacent: [10, 80] = 70 ms */
    {90 * MS, 130 * MS, 0, 42, 1},  /* across the 100 ms edge: 10 + 30 ms */
    {255 * MS, 265 * MS, 0, 42, 2}, /* out of order, overlapping the next: [250, 265] */
    {250 * MS, 260 * MS, 0, 42, 1},
    {0, 100 * MS, 0, 7, 1},         /* another process: its own union */
    {10 * MS, 20 * MS, 1, 42, 1},   /* the same process on its second device */
    {0, 0, 0, 42, 1},               /* no times: skipped */
    {500 * MS, 400 * MS, 0, 42, 1}, /* ends before it starts: skipped */
};

static void test_union_and_intervals(void **state)
{
    (void)state;
    struct nsysdb_gpu gpus[] = {{0, "aaaa-0"}, {1, "bbbb-1"}};
    struct nsysdb_cudadev devs[] = {{0, 0, 42}, {1, 1, 42}, {0, 0, 7}};
    struct nsysdb_opts o = {.session_start_ns = S0,
                            .k = union_kernels,
                            .nk = sizeof union_kernels / sizeof union_kernels[0],
                            .gpu = gpus,
                            .ngpu = 2,
                            .dev = devs,
                            .ndev = 3};
    write_db("u.sqlite", &o);
    struct nsys_profile p;
    struct carma_err e = {0};
    assert_int_equal(load("u.sqlite", &p, &e), 0);
    assert_int_equal(p.n, 9);
    assert_int_equal(p.skipped, 2);
    assert_int_equal(p.unmapped, 0);
    assert_true(p.session_start_unix_ns == S0);
    const struct nsys_profile *pp = &p;
    int64_t *edges = NULL;
    size_t ne = 0;
    assert_int_equal(nsys_grid(&pp, 1, 100 * MS, &edges, &ne), 0);
    assert_int_equal(ne, 4); /* 0, 100, 200, 300 ms */
    assert_true(edges[0] == S0 && edges[3] == S0 + 300 * MS);
    struct nsys_busy_set s = {0};
    assert_int_equal(nsys_busy_add(&p, edges, ne, &s), 0);
    nsys_busy_sort(&s);
    tu_assert_near(busy_of(&s, S0, 0, 42), 0.080, 1e-12);
    tu_assert_near(busy_of(&s, S0 + 100 * MS, 0, 42), 0.030, 1e-12);
    tu_assert_near(busy_of(&s, S0 + 200 * MS, 0, 42), 0.015, 1e-12);
    tu_assert_near(busy_of(&s, S0, 0, 7), 0.100, 1e-12);
    tu_assert_near(busy_of(&s, S0, 1, 42), 0.010, 1e-12);
    assert_int_equal(s.n, 5);
    tu_assert_near(s.outside_s, 0, 0);
    /* sorted by interval, gpu, pid */
    for (size_t i = 1; i < s.n; i++) {
        const struct nsys_busy *a = &s.rows[i - 1], *b = &s.rows[i];
        assert_true(a->t0_ns < b->t0_ns || (a->t0_ns == b->t0_ns && a->gpu < b->gpu) ||
                    (a->t0_ns == b->t0_ns && a->gpu == b->gpu && a->pid < b->pid));
    }
    /* the CSV: 6-decimal Unix times, CRLF */
    s.rows[0].workload = "train";
    struct csv_buf b = {0};
    assert_int_equal(nsys_busy_csv(&s, &b), 0);
    assert_int_equal(csv_buf_raw(&b, "", 1), 0);
    assert_non_null(strstr(b.data, NSYS_GPU_CSV_HEADER "\r\n"));
    assert_non_null(strstr(b.data, "\r\n1700000000.000000,1700000000.100000,0,7,train,0.1\r\n"
                                   "1700000000.000000,1700000000.100000,0,42,,0.08\r\n"
                                   "1700000000.000000,1700000000.100000,1,42,,0.01\r\n"
                                   "1700000000.100000,1700000000.200000,0,42,,0.03\r\n"));
    csv_buf_free(&b);

    /* edges that cut the kernels: what lies outside is counted apart */
    nsys_busy_free(&s);
    int64_t few[] = {S0 + 50 * MS, S0 + 100 * MS};
    assert_int_equal(nsys_busy_add(&p, few, 2, &s), 0);
    tu_assert_near(busy_of(&s, S0 + 50 * MS, 0, 42), 0.040, 1e-12); /* [50, 80] + [90, 100] */
    /* outside: 40 + 30 + 15 ms of pid 42 on GPU 0, 50 ms of pid 7, 10 ms on GPU 1 */
    tu_assert_near(s.outside_s, 0.145, 1e-12);
    nsys_busy_free(&s);
    free(edges);
    nsys_profile_free(&p);
}

static void test_pid_decoding(void **state)
{
    (void)state;
    assert_int_equal(nsys_pid(nsysdb_global_pid(123456)), 123456);
    assert_int_equal(nsys_pid(nsysdb_global_pid(0xFFFFFF) | 0x3039), 0xFFFFFF); /* with a tid */
    assert_int_equal(nsys_pid(((int64_t)5 << 24) | 77), 5);
    assert_int_equal(nsys_pid(0), 0);
}

static void test_clock_alignment(void **state)
{
    (void)state;
    /* a session that starts mid-interval: kernels land where the wall clock puts them */
    struct nsysdb_kernel k[] = {{250 * MS, 300 * MS, 0, 9, 1}};
    struct nsysdb_opts o = {.session_start_ns = S0 + 1500 * MS, .k = k, .nk = 1};
    write_db("c.sqlite", &o);
    struct nsys_profile p;
    struct carma_err e = {0};
    assert_int_equal(load("c.sqlite", &p, &e), 0);
    assert_true(p.k[0].start_ns == S0 + 1750 * MS && p.k[0].end_ns == S0 + 1800 * MS);
    const struct nsys_profile *pp = &p;
    int64_t *edges = NULL;
    size_t ne = 0;
    assert_int_equal(nsys_grid(&pp, 1, 100 * MS, &edges, &ne), 0);
    assert_int_equal(ne, 2);
    assert_true(edges[0] == S0 + 1700 * MS && edges[1] == S0 + 1800 * MS);
    struct nsys_busy_set s = {0};
    assert_int_equal(nsys_busy_add(&p, edges, ne, &s), 0);
    tu_assert_near(busy_of(&s, S0 + 1700 * MS, 0, 9), 0.05, 1e-12);
    /* without TARGET_INFO_GPU or CUDA_DEVICE: gpu = deviceId, counted as unmapped */
    assert_int_equal(p.unmapped, 1);
    nsys_busy_free(&s);
    free(edges);
    nsys_profile_free(&p);
}

/* Kernels of a damaged export at the ends of the 64-bit ns range (2262, or before 1970): the
 * grid's edges would not fit in 64 bits, and nsys_grid says so instead of overflowing (found
 * by fuzz/fuzz_nsys.c). */
static void test_grid_range(void **state)
{
    (void)state;
    struct nsys_kernel late = {.start_ns = INT64_MAX - 1000, .end_ns = INT64_MAX - 1};
    struct nsys_kernel early = {.start_ns = INT64_MIN + 1, .end_ns = INT64_MIN + 1000};
    struct nsys_kernel *ks[] = {&late, &early};
    for (size_t i = 0; i < 2; i++) {
        struct nsys_profile p = {.k = ks[i], .n = 1};
        const struct nsys_profile *pp = &p;
        int64_t *edges = NULL;
        size_t ne = 7;
        assert_int_equal(nsys_grid(&pp, 1, 100 * MS, &edges, &ne), -ERANGE);
        assert_null(edges);
        assert_int_equal(ne, 0);
    }
    /* the last edge that fits: a grid ending exactly at the largest multiple */
    int64_t top = INT64_MAX - INT64_MAX % (100 * MS);
    struct nsys_kernel k = {.start_ns = top - 150 * MS, .end_ns = top};
    struct nsys_profile p = {.k = &k, .n = 1};
    const struct nsys_profile *pp = &p;
    int64_t *edges = NULL;
    size_t ne = 0;
    assert_int_equal(nsys_grid(&pp, 1, 100 * MS, &edges, &ne), 0);
    assert_int_equal(ne, 3);
    assert_true(edges[2] == top);
    free(edges);
}

static void test_device_mapping(void **state)
{
    (void)state;
    /* pid 42 sees GPU 3 as CUDA device 0 (CUDA_VISIBLE_DEVICES=3) */
    struct nsysdb_kernel k[] = {{0, 10 * MS, 0, 42, 1}, {0, 10 * MS, 0, 43, 1}};
    struct nsysdb_gpu gpus[] = {{2, "GPU-cccc-2"}, {3, "dddd-3"}};
    struct nsysdb_cudadev devs[] = {{3, 0, 42}, {2, 0, 43}};
    struct nsysdb_opts o = {
        .session_start_ns = S0, .k = k, .nk = 2, .gpu = gpus, .ngpu = 2, .dev = devs, .ndev = 2};
    write_db("d.sqlite", &o);
    struct nsys_profile p;
    struct carma_err e = {0};
    assert_int_equal(load("d.sqlite", &p, &e), 0);
    assert_int_equal(p.k[0].gpu, 3);
    assert_int_equal(p.k[1].gpu, 2);
    assert_string_equal(p.gpus[1].uuid, "dddd-3");
    /* the run's NVML numbering by UUID, with or without "GPU-", in any case */
    const char *uu[] = {"GPU-0000", "GPU-DDDD-3", NULL};
    assert_int_equal(nsys_map_devices(&p, uu, 3), 1); /* pid 43's GPU is not the run's */
    assert_int_equal(p.k[0].index, 1);
    assert_int_equal(p.k[1].index, 2);
    nsys_profile_free(&p);

    /* one GPU and no CUDA_DEVICE table: every kernel is on it */
    struct nsysdb_gpu one[] = {{5, "eeee"}};
    struct nsysdb_opts o1 = {.session_start_ns = S0, .k = k, .nk = 2, .gpu = one, .ngpu = 1};
    write_db("d1.sqlite", &o1);
    assert_int_equal(load("d1.sqlite", &p, &e), 0);
    assert_int_equal(p.k[0].gpu, 5);
    assert_int_equal(p.unmapped, 0);
    nsys_profile_free(&p);
}

/* Loading name fails with code and a message holding want. */
static void expect_error(const char *name, int code, const char *want)
{
    struct nsys_profile p;
    struct carma_err e = {0};
    assert_int_equal(load(name, &p, &e), code);
    if (!strstr(e.msg, want))
        fail_msg("'%s' does not say '%s'", e.msg, want);
    assert_non_null(strstr(e.msg, name)); /* the file is named */
    assert_null(p.k);
}

static void test_missing_tables_and_columns(void **state)
{
    (void)state;
    struct nsysdb_kernel k[] = {{0, 10 * MS, 0, 42, 1}};
    struct nsysdb_opts o = {.session_start_ns = S0, .k = k, .nk = 1, .no_session_table = true};
    write_db("nosession.sqlite", &o);
    expect_error("nosession.sqlite", -EINVAL, "no table TARGET_INFO_SESSION_START_TIME");
    o = (struct nsysdb_opts){.session_start_ns = S0, .no_kernel_table = true};
    write_db("nokernel.sqlite", &o);
    expect_error("nokernel.sqlite", -ENODATA, "no table CUPTI_ACTIVITY_KIND_KERNEL");
    o = (struct nsysdb_opts){
        .session_start_ns = S0, .k = k, .nk = 1, .drop_kernel_column = "globalPid"};
    write_db("nopid.sqlite", &o);
    expect_error("nopid.sqlite", -EINVAL, "CUPTI_ACTIVITY_KIND_KERNEL has no column globalPid");
    o = (struct nsysdb_opts){
        .session_start_ns = S0, .k = k, .nk = 1, .drop_kernel_column = "deviceId"};
    write_db("nodev.sqlite", &o);
    expect_error("nodev.sqlite", -EINVAL, "has no column deviceId");
    o = (struct nsysdb_opts){
        .session_start_ns = S0, .k = k, .nk = 1, .drop_session_column = "utcEpochNs"};
    write_db("noutc.sqlite", &o);
    expect_error("noutc.sqlite", -EINVAL,
                 "TARGET_INFO_SESSION_START_TIME has no column utcEpochNs");
    o = (struct nsysdb_opts){.session_start_ns = 0, .k = k, .nk = 1};
    write_db("norow.sqlite", &o);
    expect_error("norow.sqlite", -EINVAL, "holds no start time");
}

static void test_empty_kernels(void **state)
{
    (void)state;
    struct nsysdb_opts o = {.session_start_ns = S0};
    write_db("empty.sqlite", &o);
    struct nsys_profile p;
    struct carma_err e = {0};
    assert_int_equal(load("empty.sqlite", &p, &e), 0);
    assert_int_equal(p.n, 0);
    const struct nsys_profile *pp = &p;
    int64_t *edges = NULL;
    size_t ne = 7;
    assert_int_equal(nsys_grid(&pp, 1, 100 * MS, &edges, &ne), 0);
    assert_int_equal(ne, 0);
    assert_null(edges);
    struct nsys_busy_set s = {0};
    int64_t two[] = {S0, S0 + MS};
    assert_int_equal(nsys_busy_add(&p, two, 2, &s), 0);
    assert_int_equal(s.n, 0);
    struct csv_buf b = {0};
    assert_int_equal(nsys_busy_csv(&s, &b), 0);
    assert_int_equal(b.len, strlen(NSYS_GPU_CSV_HEADER) + 2);
    csv_buf_free(&b);
    nsys_profile_free(&p);
}

static void test_not_sqlite_and_corrupt(void **state)
{
    (void)state;
    expect_error("absent.sqlite", -ENOENT, "cannot open");
    tu_put("text.sqlite", "timestamp,watts\n1,2\n");
    expect_error("text.sqlite", -EINVAL, "not an SQLite database");
    tu_put("empty-file.sqlite", "");
    expect_error("empty-file.sqlite", -EINVAL, "not an SQLite database");
    /* a real export, its pages past the header overwritten */
    struct nsysdb_kernel k[] = {{0, 10 * MS, 0, 42, 1}};
    struct nsysdb_opts o = {.session_start_ns = S0, .k = k, .nk = 1};
    write_db("bad.sqlite", &o);
    char p[512];
    path_in(p, sizeof p, "bad.sqlite");
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    char junk[4096];
    memset(junk, 0xA5, sizeof junk);
    assert_int_equal(pwrite(fd, junk, sizeof junk, 100), (ssize_t)sizeof junk);
    close(fd);
    struct nsys_profile pr;
    struct carma_err e = {0};
    assert_int_equal(load("bad.sqlite", &pr, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "bad.sqlite"));
}

/* ---- the run directory ---- */

static json_t *read_json(const char *name)
{
    char p[512];
    path_in(p, sizeof p, name);
    json_t *j = json_load_file(p, 0, NULL);
    assert_non_null(j);
    return j;
}

static double jnum(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

/* Σ joules of the rows of channel ch and job (NULL: any) stamped after t_after. */
static double attr_sum_after(const char *name, const char *ch, const char *job, double t_after)
{
    char p[512];
    path_in(p, sizeof p, name);
    FILE *f = fopen(p, "re");
    assert_non_null(f);
    char line[512];
    double sum = 0;
    while (fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL,
             *c3 = c2 ? strchr(c2 + 1, ',') : NULL;
        if (!c3)
            continue;
        *c2 = *c3 = '\0';
        if (strcmp(c1 + 1, ch) == 0 && (!job || strcmp(c2 + 1, job) == 0) && atof(line) > t_after)
            sum += atof(c3 + 1);
    }
    fclose(f);
    return sum;
}

/* Σ joules of attribution.csv's rows of channel ch and job (NULL: any). */
static double attr_sum(const char *name, const char *ch, const char *job)
{
    return attr_sum_after(name, ch, job, 0);
}

static void test_reattribute_run(void **state)
{
    (void)state;
    tu_copy_fixture("rundir/run-gpu");
    /* "big" (started 1796046823.736115, ended .744583 s later) kept the GPU busy for 1 s,
     * on the run's ticks */
    json_t *wl = read_json("workloads.json");
    json_t *big = json_array_get(json_object_get(wl, "workloads"), 1);
    assert_string_equal(json_string_value(json_object_get(big, "name")), "big");
    double b0 = jnum(big, "start_unix"), b1 = jnum(big, "end_unix");
    json_decref(wl);
    struct nsys_run_info ri;
    struct carma_err e = {0};
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tu_dir);
    assert_int_equal(nsys_run_info_load(dir, &ri, &e), 0);
    assert_int_equal(ri.njobs, 2);
    assert_int_equal(nsys_run_owner_of(&ri, (uint32_t)15920), 1);
    assert_int_equal(nsys_run_owner_of(&ri, 1), -1);
    assert_string_equal(ri.uuid[0], "GPU-0000");
    assert_true(ri.nticks > 10);
    char csv[8192] = NSYS_GPU_CSV_HEADER "\r\n";
    size_t len = strlen(csv);
    for (size_t i = 0; i + 1 < ri.nticks; i++) {
        double t0 = (double)ri.ticks[i] / 1e9, t1 = (double)ri.ticks[i + 1] / 1e9;
        double a = t0 > b0 ? t0 : b0, z = t1 < b1 ? t1 : b1;
        if (z > a && len < sizeof csv - 128)
            len += (size_t)snprintf(csv + len, sizeof csv - len, "%.6f,%.6f,0,15921,big,%.6f\r\n",
                                    t0, t1, z - a);
    }
    nsys_run_info_free(&ri);
    tu_put("nsys_gpu.csv", csv);
    json_t *before = read_json("report.json");
    double energy = jnum(json_array_get(json_object_get(before, "gpus"), 0), "energy_j");
    double total = jnum(before, "total_energy_j");
    double nvml_sum = attr_sum("attribution.csv", "nvml/gpu0", NULL);
    json_decref(before);

    for (int pass = 0; pass < 2; pass++) { /* a second import gives the same */
        struct nsys_reattr ra;
        assert_int_equal(nsys_run_reattribute(dir, &ra, &e), 0);
        assert_int_equal(ra.ngpu, 1);
        const struct nsys_reattr_gpu *g = &ra.gpu[0];
        tu_assert_near(g->jobs_j + g->idle_j + g->other_j + g->unattributed_j, g->energy_j, 1e-6);
        tu_assert_near(g->energy_j, nvml_sum, 1e-6);
        tu_assert_near(g->energy_j, energy, 1e-3);
        assert_true(g->basis_s[0] > 0.9);
        json_t *rep = read_json("report.json");
        json_t *gj = json_array_get(json_object_get(rep, "gpus"), 0);
        assert_string_equal(json_string_value(json_object_get(gj, "attribution")), "nsys");
        tu_assert_near(jnum(gj, "jobs_j") + jnum(gj, "idle_j") + jnum(gj, "other_j") +
                           jnum(gj, "unattributed_j"),
                       jnum(gj, "energy_j"), 1e-3);
        json_t *ws = json_object_get(rep, "workloads");
        double small_gpu = jnum(json_object_get(json_array_get(ws, 0), "gpu_j"), "nvml/gpu0");
        double big_gpu = jnum(json_object_get(json_array_get(ws, 1), "gpu_j"), "nvml/gpu0");
        /* small ran no kernel: while big's kernels ran, it gets nothing; before big started
         * nobody's kernels ran, and the GPU's owners running then (small) share (allocation) */
        assert_true(g->basis_s[2] > 0.2);
        tu_assert_near(attr_sum_after("attribution.csv", "nvml/gpu0", "small", b0 + 0.25), 0, 0);
        assert_true(attr_sum_after("attribution_nvml.csv", "nvml/gpu0", "small", b0 + 0.25) > 1);
        tu_assert_near(small_gpu + big_gpu, jnum(gj, "jobs_j"), 1e-6);
        assert_true(big_gpu > 2 * small_gpu);
        /* the run's sum rule */
        double sum = jnum(json_object_get(rep, "idle"), "energy_j") +
                     jnum(json_object_get(rep, "other"), "energy_j") +
                     jnum(json_object_get(rep, "unattributed"), "energy_j");
        for (size_t k = 0; k < json_array_size(ws); k++)
            sum += jnum(json_array_get(ws, k), "energy_j");
        tu_assert_near(sum, total, 1e-3);
        tu_assert_near(jnum(rep, "total_energy_j"), total, 0);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(rep, "attribution"), "gpu")), "nsys");
        json_decref(rep);
        /* attribution.csv: the GPU rows anew, the NVML split kept */
        tu_assert_near(attr_sum("attribution.csv", "nvml/gpu0", NULL), nvml_sum, 1e-4);
        tu_assert_near(attr_sum("attribution.csv", "nvml/gpu0", "big"), big_gpu, 1e-4);
        tu_assert_near(attr_sum("attribution.csv", "nvml/gpu0", "small"), small_gpu, 1e-4);
        tu_assert_near(attr_sum("attribution_nvml.csv", "nvml/gpu0", NULL), nvml_sum, 0);
        assert_true(attr_sum("attribution_nvml.csv", "nvml/gpu0", "small") > 0);
    }
}

static void test_reattribute_errors(void **state)
{
    (void)state;
    char p[512];
    struct nsys_reattr ra;
    struct carma_err e = {0};
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tu_dir);
    assert_int_equal(nsys_run_reattribute(dir, &ra, &e), -ENOENT); /* not a run directory */
    assert_non_null(strstr(e.msg, "report.json"));
    tu_copy_fixture("rundir/run-gpu");
    e = (struct carma_err){0};
    assert_int_equal(nsys_run_reattribute(dir, &ra, &e), -ENOENT); /* no nsys_gpu.csv */
    assert_non_null(strstr(e.msg, "nsys_gpu.csv"));
    tu_put("nsys_gpu.csv", NSYS_GPU_CSV_HEADER "\r\n1,x,0,1,,0.5\r\n");
    e = (struct carma_err){0};
    assert_int_equal(nsys_run_reattribute(dir, &ra, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "nsys_gpu.csv:2"));
    /* attribution.csv and samples.csv by the run directory's rules, as carma report reads them */
    static const char *const bad_attr[][2] = {
        {"NaN", "attribution.csv:2: joules: 'NaN' is not a finite number"},
        {"1e308", "attribution.csv:2: joules: 1e+308 J is no share of a channel's energy"},
    };
    char good_attr[65536];
    path_in(p, sizeof p, "attribution.csv");
    tu_slurp(p, good_attr, sizeof good_attr);
    for (size_t k = 0; k < 2; k++) {
        char text[65536];
        snprintf(text, sizeof text, "%s", good_attr);
        char *at = strstr(text, "small,14.167136");
        assert_non_null(at);
        snprintf(at + 6, sizeof text - (size_t)(at + 6 - text), "%s%s", bad_attr[k][0],
                 strstr(good_attr, "small,14.167136") + 15);
        tu_put("attribution.csv", text);
        e = (struct carma_err){0};
        assert_int_equal(nsys_run_reattribute(dir, &ra, &e), k ? -ERANGE : -EINVAL);
        if (!strstr(e.msg, bad_attr[k][1]))
            fail_msg("'%s' not in '%s'", bad_attr[k][1], e.msg);
    }
    tu_put("attribution.csv", good_attr);
    char samples[65536], bad[65536];
    path_in(p, sizeof p, "samples.csv");
    tu_slurp(p, samples, sizeof samples);
    snprintf(bad, sizeof bad, "%s", samples);
    memcpy(strstr(bad, ",measured,100,0"), ",measured,nan,0", 15);
    tu_put("samples.csv", bad);
    struct nsys_run_info ri;
    e = (struct carma_err){0};
    assert_int_equal(nsys_run_info_load(dir, &ri, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "samples.csv:3: watts: 'nan' is not a finite number"));
    tu_put("samples.csv", samples);
    /* report.json's duration_s dates the first period: one that is no run's length is named
     * (1e300 s took the start out of 64-bit nanoseconds: found by fuzz_rundir) */
    static const double bad_duration[] = {-1.0, 1e9 + 1, 1e300};
    json_t *good_rep = read_json("report.json");
    for (size_t k = 0; k < sizeof bad_duration / sizeof *bad_duration; k++) {
        json_t *rep = json_deep_copy(good_rep);
        json_object_set_new(rep, "duration_s", json_real(bad_duration[k]));
        char *text = json_dumps(rep, 0);
        tu_put("report.json", text);
        free(text);
        json_decref(rep);
        e = (struct carma_err){0};
        assert_int_equal(nsys_run_reattribute(dir, &ra, &e), -EINVAL);
        if (!strstr(e.msg, "report.json: duration_s: ") || !strstr(e.msg, "is no run's length"))
            fail_msg("duration_s %g: '%s'", bad_duration[k], e.msg);
    }
    char *text = json_dumps(good_rep, 0);
    tu_put("report.json", text);
    free(text);
    json_decref(good_rep);
    struct stat sb;
    path_in(p, sizeof p, "attribution_nvml.csv");
    assert_int_equal(stat(p, &sb), -1); /* nothing changed */
    /* a run without GPUs: nothing to split again */
    tu_copy_fixture("rundir/run-cpu");
    tu_put("nsys_gpu.csv", NSYS_GPU_CSV_HEADER "\r\n");
    e = (struct carma_err){0};
    assert_int_equal(nsys_run_reattribute(dir, &ra, &e), -ENODATA);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_union_and_intervals, tu_setup, tu_teardown),
        cmocka_unit_test(test_pid_decoding),
        cmocka_unit_test(test_grid_range),
        cmocka_unit_test_setup_teardown(test_clock_alignment, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_device_mapping, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_missing_tables_and_columns, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_empty_kernels, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_not_sqlite_and_corrupt, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_reattribute_run, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_reattribute_errors, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
