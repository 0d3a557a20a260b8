/*
 * fake_nvml: a stand-in for libnvidia-ml.so.1, so that the nvml source runs on any machine.
 *
 * Exports the NVML calls carma uses, with NVML's names, calling conventions and return codes,
 * and answers them from a scenario file named by $CARMA_FAKE_NVML_SCENARIO, read at nvmlInit.
 * One statement a line, '#' starts a comment:
 *
 *   device N [name "TEXT"] [uuid TEXT] [power_w W] [energy yes|no] [power yes|no]
 *            [util PCT] [mem_util PCT] [mig yes|no] [idle_w W] [max_w W] [proc_util yes|no]
 *            [fields yes|no]
 *   proc N pid PID [mem_mib MIB] [sm PCT]   a process running on device N
 *   lost N after_s S                        device N answers GPU_IS_LOST S seconds after init
 *   init_error CODE                         nvmlInit returns CODE
 *   clients DIR                             where fake GPU clients (carma-gpujob) register;
 *                                           a relative DIR is taken from the scenario's
 *                                           folder; $CARMA_FAKE_NVML_CLIENTS, when set,
 *                                           overrides it
 *
 * A device without max_w draws a constant power_w, and its energy counter integrates it over
 * the real CLOCK_MONOTONIC time since nvmlInit (energy_mJ = power_w x elapsed_s x 1000).
 *
 * A device with max_w is driven by its clients: each file DIR/<pid> (written by carma-gpujob,
 * atomically) holds one line "dev=N sm=PCT start=S end=S|- [mem=MIB] [tag=T]", times in
 * CLOCK_MONOTONIC seconds, end "-" while the client runs. With S(t) the sum of the sm of the
 * clients of the device running at t (start <= t, and end "-" or t < end), the power is
 *   P(t) = idle_w + (max_w - idle_w) x S(t) / 100   (not clipped: exact while S <= 100)
 * and the energy counter its exact integral since nvmlInit (t0), with I_j = |[start_j, end_j
 * or t] ∩ [t0, t]|:
 *   energy_mJ(t) = 1000 x [idle_w x (t - t0) + (max_w - idle_w) / 100 x sum_j sm_j x I_j]
 * The utilization is min(100, S(t)). The running processes are the static proc lines and the
 * running clients whose pid still exists; the per-process utilization gives each its sm
 * (NVML_ERROR_NOT_SUPPORTED with proc_util no). Power and energy follow the files alone: a
 * client killed before it wrote its end (SIGKILL) keeps counting there, but is no longer listed.
 * Every nvmlInit writes "t0=S pid=PID" to DIR/.nvml-init, so that a test knows t0.
 *
 * Built three times: libfake-nvml.so; libfake-nvml-nosym.so (-DFAKE_OMIT_INIT) that exports
 * neither nvmlInit_v2 nor nvmlInit, for the "required call missing" case; libfake-nvml-v2.so
 * (-DFAKE_OMIT_V3) that exports nvmlDeviceGetComputeRunningProcesses_v2 but not _v3, as older
 * drivers do.
 */
#include "sources/nvml.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FAKE_DEVICES_MAX 16
#define FAKE_PROCS_MAX   64
#define FAKE_CLIENTS_MAX 256

struct nvml_device_st {
    unsigned index;
    char name[NVML_DEVICE_NAME_BUFFER_SIZE];
    char uuid[NVML_DEVICE_UUID_BUFFER_SIZE];
    double power_w;
    int energy, power, mig;
    unsigned util, mem_util;
    double lost_after_s; /* < 0: never */
    bool driven;         /* max_w given: the power follows the clients */
    double idle_w, max_w;
    int proc_util;
    int fields;                 /* nvmlDeviceGetFieldValues answers the power fields (default no) */
    unsigned long long last_mj; /* the counter never goes back */
};

struct fake_proc {
    unsigned dev;
    unsigned pid;
    unsigned long long mem_bytes;
    unsigned sm;
};

/* A registered client (a file of the clients folder). */
struct fake_client {
    unsigned pid, dev, sm;
    unsigned long long mem_bytes; /* 0: unknown */
    double start_s, end_s;        /* CLOCK_MONOTONIC; end_s < 0 while it runs */
};

static struct {
    int refs;
    double t0;
    int init_error;
    unsigned ndev;
    struct nvml_device_st dev[FAKE_DEVICES_MAX];
    size_t nproc;
    struct fake_proc proc[FAKE_PROCS_MAX];
    char clients_dir[PATH_MAX]; /* "" when none */
    size_t nclient;
    struct fake_client client[FAKE_CLIENTS_MAX]; /* filled by read_clients */
} fake;

/* The exported calls (NVML's prototypes, with carma's names for NVML's types). */
#ifndef FAKE_OMIT_INIT
nvml_return_t nvmlInit_v2(void);
nvml_return_t nvmlInit(void);
#endif
nvml_return_t nvmlShutdown(void);
const char *nvmlErrorString(nvml_return_t r);
nvml_return_t nvmlDeviceGetCount_v2(unsigned int *count);
nvml_return_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvml_device_t *device);
nvml_return_t nvmlDeviceGetName(nvml_device_t device, char *name, unsigned int length);
nvml_return_t nvmlDeviceGetUUID(nvml_device_t device, char *uuid, unsigned int length);
nvml_return_t nvmlDeviceGetTotalEnergyConsumption(nvml_device_t device, unsigned long long *mj);
nvml_return_t nvmlDeviceGetPowerUsage(nvml_device_t device, unsigned int *mw);
nvml_return_t nvmlDeviceGetFieldValues(nvml_device_t device, int count,
                                       struct nvml_field_value *values);
nvml_return_t nvmlDeviceGetUtilizationRates(nvml_device_t device, struct nvml_utilization *u);
#ifndef FAKE_OMIT_V3
nvml_return_t nvmlDeviceGetComputeRunningProcesses_v3(nvml_device_t device, unsigned int *count,
                                                      struct nvml_process_info *infos);
#endif
nvml_return_t nvmlDeviceGetComputeRunningProcesses_v2(nvml_device_t device, unsigned int *count,
                                                      struct nvml_process_info *infos);
nvml_return_t nvmlDeviceGetProcessUtilization(nvml_device_t device,
                                              struct nvml_process_sample *samples,
                                              unsigned int *count, unsigned long long last_seen);
nvml_return_t nvmlDeviceGetMigMode(nvml_device_t device, unsigned int *current,
                                   unsigned int *pending);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned long long realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

/* Copies the next word of *p (or a "quoted text") into buf and advances *p. Returns 0 at the
 * end of the line. */
static int word(char **p, char *buf, size_t cap)
{
    char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || *s == '\n' || *s == '#')
        return 0;
    size_t n = 0;
    if (*s == '"') {
        for (s++; *s && *s != '"' && *s != '\n'; s++)
            if (n + 1 < cap)
                buf[n++] = *s;
        if (*s == '"')
            s++;
    } else {
        for (; *s && *s != ' ' && *s != '\t' && *s != '\n'; s++)
            if (n + 1 < cap)
                buf[n++] = *s;
    }
    buf[n] = '\0';
    *p = s;
    return 1;
}

static struct nvml_device_st *device_at(const char *num)
{
    unsigned long i = strtoul(num, NULL, 10);
    if (i >= FAKE_DEVICES_MAX)
        return NULL;
    struct nvml_device_st *d = &fake.dev[i];
    if (i >= fake.ndev) {
        for (unsigned k = fake.ndev; k <= i; k++) {
            fake.dev[k] = (struct nvml_device_st){
                .index = k, .energy = 1, .power = 1, .lost_after_s = -1, .proc_util = 1};
            snprintf(fake.dev[k].name, sizeof fake.dev[k].name, "Fake GPU");
            snprintf(fake.dev[k].uuid, sizeof fake.dev[k].uuid, "GPU-fake-%u", k);
        }
        fake.ndev = (unsigned)i + 1;
    }
    return d;
}

/* Sets fake.clients_dir to dir, taken from the folder of the scenario file path when relative. */
static void set_clients_dir(const char *scenario, const char *dir)
{
    const char *slash = strrchr(scenario, '/');
    if (dir[0] == '/' || !slash)
        snprintf(fake.clients_dir, sizeof fake.clients_dir, "%s", dir);
    else
        snprintf(fake.clients_dir, sizeof fake.clients_dir, "%.*s/%s", (int)(slash - scenario),
                 scenario, dir);
}

/* Reads the scenario. Returns 0, or -1 when it cannot be read. */
static int load_scenario(void)
{
    memset(&fake.dev, 0, sizeof fake.dev);
    fake.ndev = 0;
    fake.nproc = 0;
    fake.init_error = 0;
    fake.clients_dir[0] = '\0';
    const char *path = getenv("CARMA_FAKE_NVML_SCENARIO");
    FILE *f = path ? fopen(path, "re") : NULL;
    if (!f)
        return -1;
    char line[PATH_MAX + 64], key[128], val[PATH_MAX];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        if (!word(&p, key, sizeof key) || !word(&p, val, sizeof val))
            continue;
        if (strcmp(key, "init_error") == 0) {
            fake.init_error = atoi(val);
        } else if (strcmp(key, "clients") == 0) {
            set_clients_dir(path, val);
        } else if (strcmp(key, "device") == 0) {
            struct nvml_device_st *d = device_at(val);
            char k[128], v[128];
            while (d && word(&p, k, sizeof k) && word(&p, v, sizeof v)) {
                bool yes = strcmp(v, "yes") == 0;
                if (strcmp(k, "name") == 0)
                    snprintf(d->name, sizeof d->name, "%s", v);
                else if (strcmp(k, "uuid") == 0)
                    snprintf(d->uuid, sizeof d->uuid, "%s", v);
                else if (strcmp(k, "power_w") == 0)
                    d->power_w = strtod(v, NULL);
                else if (strcmp(k, "energy") == 0)
                    d->energy = yes;
                else if (strcmp(k, "power") == 0)
                    d->power = yes;
                else if (strcmp(k, "mig") == 0)
                    d->mig = yes;
                else if (strcmp(k, "util") == 0)
                    d->util = (unsigned)atoi(v);
                else if (strcmp(k, "mem_util") == 0)
                    d->mem_util = (unsigned)atoi(v);
                else if (strcmp(k, "idle_w") == 0)
                    d->idle_w = strtod(v, NULL);
                else if (strcmp(k, "max_w") == 0) {
                    d->max_w = strtod(v, NULL);
                    d->driven = true;
                } else if (strcmp(k, "proc_util") == 0)
                    d->proc_util = yes;
                else if (strcmp(k, "fields") == 0)
                    d->fields = yes;
            }
        } else if (strcmp(key, "lost") == 0) {
            struct nvml_device_st *d = device_at(val);
            char k[128], v[128];
            if (d && word(&p, k, sizeof k) && word(&p, v, sizeof v) && strcmp(k, "after_s") == 0)
                d->lost_after_s = strtod(v, NULL);
        } else if (strcmp(key, "proc") == 0 && fake.nproc < FAKE_PROCS_MAX) {
            struct fake_proc *pr = &fake.proc[fake.nproc++];
            *pr = (struct fake_proc){.dev = (unsigned)atoi(val)};
            char k[128], v[128];
            while (word(&p, k, sizeof k) && word(&p, v, sizeof v)) {
                if (strcmp(k, "pid") == 0)
                    pr->pid = (unsigned)atoi(v);
                else if (strcmp(k, "mem_mib") == 0)
                    pr->mem_bytes = strtoull(v, NULL, 10) << 20;
                else if (strcmp(k, "sm") == 0)
                    pr->sm = (unsigned)atoi(v);
            }
        }
    }
    fclose(f);
    const char *env = getenv("CARMA_FAKE_NVML_CLIENTS");
    if (env && env[0])
        snprintf(fake.clients_dir, sizeof fake.clients_dir, "%s", env);
    return 0;
}

/* Parses one client line into *c (pid set by the caller). Returns 0, or -1 when malformed. */
static int parse_client(const char *text, struct fake_client *c)
{
    bool have_dev = false, have_sm = false, have_start = false, have_end = false;
    c->mem_bytes = 0;
    const char *s = text;
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == '\n')
            s++;
        if (!*s)
            break;
        const char *eq = strchr(s, '=');
        if (!eq)
            return -1;
        size_t klen = (size_t)(eq - s);
        const char *v = eq + 1;
        char *end = NULL;
        if (klen == 3 && strncmp(s, "dev", 3) == 0) {
            c->dev = (unsigned)strtoul(v, &end, 10);
            have_dev = true;
        } else if (klen == 2 && strncmp(s, "sm", 2) == 0) {
            c->sm = (unsigned)strtoul(v, &end, 10);
            have_sm = true;
        } else if (klen == 5 && strncmp(s, "start", 5) == 0) {
            c->start_s = strtod(v, &end);
            have_start = true;
        } else if (klen == 3 && strncmp(s, "end", 3) == 0) {
            if (*v == '-') {
                c->end_s = -1;
                end = (char *)v + 1;
            } else {
                c->end_s = strtod(v, &end);
            }
            have_end = true;
        } else if (klen == 3 && strncmp(s, "mem", 3) == 0) {
            c->mem_bytes = strtoull(v, &end, 10) << 20;
        } else {
            end = (char *)v;
            while (*end && *end != ' ' && *end != '\t' && *end != '\n')
                end++;
        }
        if (!end || end == v)
            return -1;
        s = end;
    }
    return have_dev && have_sm && have_start && have_end ? 0 : -1;
}

/* Reads every client file of the clients folder into fake.client (at most FAKE_CLIENTS_MAX;
 * malformed or vanishing files are skipped). Returns how many. */
static size_t read_clients(void)
{
    fake.nclient = 0;
    if (!fake.clients_dir[0])
        return 0;
    DIR *d = opendir(fake.clients_dir);
    if (!d)
        return 0;
    int dfd = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) && fake.nclient < FAKE_CLIENTS_MAX) {
        char *end;
        unsigned long pid = strtoul(e->d_name, &end, 10);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || pid == 0 || pid > INT_MAX)
            continue;
        int fd = openat(dfd, e->d_name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        char buf[256];
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        struct fake_client *c = &fake.client[fake.nclient];
        c->pid = (unsigned)pid;
        if (parse_client(buf, c) == 0)
            fake.nclient++;
    }
    closedir(d);
    return fake.nclient;
}

static bool client_running(const struct fake_client *c, double t)
{
    return c->start_s <= t && (c->end_s < 0 || t < c->end_s);
}

/* A running client that is still a process (the safety net for one killed before it wrote its
 * end). */
static bool client_listed(const struct fake_client *c, double t)
{
    return client_running(c, t) && !(kill((pid_t)c->pid, 0) < 0 && errno == ESRCH);
}

/* The sum of the sm percent of the clients of device dev running at t (fake.client read). */
static unsigned clients_sm(const struct nvml_device_st *dev, double t)
{
    unsigned s = 0;
    for (size_t i = 0; i < fake.nclient; i++)
        if (fake.client[i].dev == dev->index && client_running(&fake.client[i], t))
            s += fake.client[i].sm;
    return s;
}

/* Writes "t0=S pid=PID" to the clients folder's .nvml-init, atomically; no error reported. */
static void write_init_note(void)
{
    if (!fake.clients_dir[0])
        return;
    char tmp[PATH_MAX + 32], dst[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s/.nvml-init.%d.tmp", fake.clients_dir, (int)getpid());
    snprintf(dst, sizeof dst, "%s/.nvml-init", fake.clients_dir);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return;
    fprintf(f, "t0=%.9f pid=%d\n", fake.t0, (int)getpid());
    if (fclose(f) == 0)
        rename(tmp, dst);
    else
        unlink(tmp);
}

__attribute__((unused)) static nvml_return_t fake_init(void)
{
    if (fake.refs > 0) {
        fake.refs++;
        return NVML_SUCCESS;
    }
    if (load_scenario() < 0)
        return NVML_ERROR_UNKNOWN;
    if (fake.init_error)
        return fake.init_error;
    fake.t0 = now_s();
    fake.refs = 1;
    write_init_note();
    return NVML_SUCCESS;
}

#ifndef FAKE_OMIT_INIT
nvml_return_t nvmlInit_v2(void)
{
    return fake_init();
}

nvml_return_t nvmlInit(void)
{
    return fake_init();
}
#endif

nvml_return_t nvmlShutdown(void)
{
    if (fake.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    fake.refs--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvml_return_t r)
{
    switch (r) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    default:
        return "Unknown Error";
    }
}

/* NVML_SUCCESS for a device that answers now, else the error it gives. */
static nvml_return_t check(nvml_device_t d)
{
    if (fake.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!d || d < fake.dev || d >= fake.dev + fake.ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (d->lost_after_s >= 0 && now_s() - fake.t0 >= d->lost_after_s)
        return NVML_ERROR_GPU_IS_LOST;
    return NVML_SUCCESS;
}

nvml_return_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (fake.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = fake.ndev;
    return NVML_SUCCESS;
}

nvml_return_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvml_device_t *device)
{
    if (fake.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (index >= fake.ndev || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &fake.dev[index];
    return NVML_SUCCESS;
}

static nvml_return_t copy_text(nvml_device_t d, char *buf, unsigned int length, const char *text)
{
    nvml_return_t r = check(d);
    if (r != NVML_SUCCESS)
        return r;
    if (!buf || length <= strlen(text))
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, text, strlen(text) + 1);
    return NVML_SUCCESS;
}

nvml_return_t nvmlDeviceGetName(nvml_device_t device, char *name, unsigned int length)
{
    return copy_text(device, name, length, device ? device->name : "");
}

nvml_return_t nvmlDeviceGetUUID(nvml_device_t device, char *uuid, unsigned int length)
{
    return copy_text(device, uuid, length, device ? device->uuid : "");
}

/* The energy of a client-driven device since nvmlInit, in J, at t (fake.client read). */
static double driven_energy_j(const struct nvml_device_st *d, double t)
{
    double dyn = 0; /* sum of sm x seconds */
    for (size_t i = 0; i < fake.nclient; i++) {
        const struct fake_client *c = &fake.client[i];
        if (c->dev != d->index)
            continue;
        double a = c->start_s > fake.t0 ? c->start_s : fake.t0;
        double b = c->end_s < 0 || c->end_s > t ? t : c->end_s;
        if (b > a)
            dyn += c->sm * (b - a);
    }
    return d->idle_w * (t - fake.t0) + (d->max_w - d->idle_w) / 100.0 * dyn;
}

nvml_return_t nvmlDeviceGetTotalEnergyConsumption(nvml_device_t device, unsigned long long *mj)
{
    /* the counter's value at the call, as a device latches it: the clients' files are read
     * after, so their I/O (slow under the sanitizers on a loaded machine) does not shift the
     * time the caller stamped the read with */
    double t = now_s();
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (!device->energy)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!mj)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!device->driven) {
        *mj = (unsigned long long)(device->power_w * (t - fake.t0) * 1000.0);
        return NVML_SUCCESS;
    }
    read_clients();
    unsigned long long v = (unsigned long long)(driven_energy_j(device, t) * 1000.0);
    /* a client's end is written a few µs after its time: never let that step the counter back */
    if (v < device->last_mj)
        v = device->last_mj;
    device->last_mj = v;
    *mj = v;
    return NVML_SUCCESS;
}

/* The device's power now, in W. */
static double power_now(struct nvml_device_st *device)
{
    double w = device->power_w;
    if (device->driven) {
        read_clients();
        w = device->idle_w + (device->max_w - device->idle_w) * clients_sm(device, now_s()) / 100.0;
    }
    return w;
}

nvml_return_t nvmlDeviceGetPowerUsage(nvml_device_t device, unsigned int *mw)
{
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (!device->power)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!mw)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mw = (unsigned int)(power_now(device) * 1000.0 + 0.5);
    return NVML_SUCCESS;
}

/* The power fields (instant and averaged: both the power now, in mW as an unsigned int, as
 * NVML gives them); any other field is NOT_SUPPORTED in its entry. */
nvml_return_t nvmlDeviceGetFieldValues(nvml_device_t device, int count,
                                       struct nvml_field_value *values)
{
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (count < 0 || (count > 0 && !values))
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < count; i++) {
        struct nvml_field_value *v = &values[i];
        v->timestamp = (long long)realtime_us();
        v->latency_us = 0;
        if (device->fields && (v->field_id == NVML_FI_DEV_POWER_INSTANT ||
                               v->field_id == NVML_FI_DEV_POWER_AVERAGE)) {
            v->value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
            v->value.ui = (unsigned int)(power_now(device) * 1000.0 + 0.5);
            v->nvml_return = NVML_SUCCESS;
        } else {
            v->nvml_return = NVML_ERROR_NOT_SUPPORTED;
        }
    }
    return NVML_SUCCESS;
}

nvml_return_t nvmlDeviceGetUtilizationRates(nvml_device_t device, struct nvml_utilization *u)
{
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (!u)
        return NVML_ERROR_INVALID_ARGUMENT;
    u->gpu = device->util;
    if (device->driven) {
        read_clients();
        unsigned s = clients_sm(device, now_s());
        u->gpu = s < 100 ? s : 100;
    }
    u->memory = device->mem_util;
    return NVML_SUCCESS;
}

/* One process on a device: a static proc line or a running client. */
struct fake_entry {
    unsigned pid, sm;
    unsigned long long mem_bytes; /* 0: unknown */
};

/* The processes on device d now, static proc lines first, into out (at most cap). Returns how
 * many there are (possibly more than cap). */
static unsigned device_entries(const struct nvml_device_st *d, struct fake_entry *out, unsigned cap)
{
    unsigned n = 0;
    for (size_t i = 0; i < fake.nproc; i++) {
        if (fake.proc[i].dev != d->index)
            continue;
        if (n < cap)
            out[n] = (struct fake_entry){fake.proc[i].pid, fake.proc[i].sm, fake.proc[i].mem_bytes};
        n++;
    }
    if (!fake.clients_dir[0])
        return n;
    read_clients();
    double t = now_s();
    for (size_t i = 0; i < fake.nclient; i++) {
        const struct fake_client *c = &fake.client[i];
        if (c->dev != d->index || !client_listed(c, t))
            continue;
        if (n < cap)
            out[n] = (struct fake_entry){c->pid, c->sm, c->mem_bytes};
        n++;
    }
    return n;
}

static nvml_return_t running_processes(nvml_device_t device, unsigned int *count,
                                       struct nvml_process_info *infos)
{
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct fake_entry e[FAKE_PROCS_MAX + FAKE_CLIENTS_MAX];
    unsigned n = device_entries(device, e, FAKE_PROCS_MAX + FAKE_CLIENTS_MAX);
    if (*count < n || (n > 0 && !infos)) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned k = 0; k < n; k++)
        infos[k] = (struct nvml_process_info){
            .pid = e[k].pid,
            .used_gpu_memory = e[k].mem_bytes ? e[k].mem_bytes : NVML_VALUE_NOT_AVAILABLE,
            .gpu_instance_id = ~0u,
            .compute_instance_id = ~0u,
        };
    *count = n;
    return NVML_SUCCESS;
}

#ifndef FAKE_OMIT_V3
nvml_return_t nvmlDeviceGetComputeRunningProcesses_v3(nvml_device_t device, unsigned int *count,
                                                      struct nvml_process_info *infos)
{
    return running_processes(device, count, infos);
}
#endif

nvml_return_t nvmlDeviceGetComputeRunningProcesses_v2(nvml_device_t device, unsigned int *count,
                                                      struct nvml_process_info *infos)
{
    return running_processes(device, count, infos);
}

/* As NVML: NOT_FOUND when no process has a sample newer than last_seen (µs, CLOCK_REALTIME);
 * samples NULL or *count too small: *count = the number needed and INSUFFICIENT_SIZE. */
nvml_return_t nvmlDeviceGetProcessUtilization(nvml_device_t device,
                                              struct nvml_process_sample *samples,
                                              unsigned int *count, unsigned long long last_seen)
{
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!device->proc_util)
        return NVML_ERROR_NOT_SUPPORTED;
    struct fake_entry e[FAKE_PROCS_MAX + FAKE_CLIENTS_MAX];
    unsigned n = device_entries(device, e, FAKE_PROCS_MAX + FAKE_CLIENTS_MAX);
    unsigned long long stamp = realtime_us();
    if (n == 0 || stamp <= last_seen)
        return NVML_ERROR_NOT_FOUND;
    if (!samples || *count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned k = 0; k < n; k++)
        samples[k] = (struct nvml_process_sample){
            .pid = e[k].pid,
            .time_stamp_us = stamp,
            .sm_util = e[k].sm,
        };
    *count = n;
    return NVML_SUCCESS;
}

nvml_return_t nvmlDeviceGetMigMode(nvml_device_t device, unsigned int *current,
                                   unsigned int *pending)
{
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    *current = *pending = device->mig ? NVML_DEVICE_MIG_ENABLE : 0;
    return NVML_SUCCESS;
}
