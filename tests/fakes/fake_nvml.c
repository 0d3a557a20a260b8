/*
 * fake_nvml: a stand-in for libnvidia-ml.so.1, so that the nvml source runs on any machine.
 *
 * Exports the NVML calls carma uses, with NVML's names, calling conventions and return codes,
 * and answers them from a scenario file named by $CARMA_FAKE_NVML_SCENARIO, read at nvmlInit.
 * One statement a line, '#' starts a comment:
 *
 *   device N [name "TEXT"] [uuid TEXT] [power_w W] [energy yes|no] [power yes|no]
 *            [util PCT] [mem_util PCT] [mig yes|no]
 *   proc N pid PID [mem_mib MIB] [sm PCT]   a process running on device N
 *   lost N after_s S                        device N answers GPU_IS_LOST S seconds after init
 *   init_error CODE                         nvmlInit returns CODE
 *
 * The energy counter integrates power_w over the real CLOCK_MONOTONIC time since nvmlInit
 * (energy_mJ = power_w x elapsed_s x 1000), so a test can check what carma measured against
 * power x time. Built twice: libfake-nvml.so, and libfake-nvml-nosym.so (-DFAKE_OMIT_INIT)
 * that exports neither nvmlInit_v2 nor nvmlInit, for the "required call missing" case.
 */
#include "sources/nvml.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_DEVICES_MAX 16
#define FAKE_PROCS_MAX   64

struct nvml_device_st {
    unsigned index;
    char name[NVML_DEVICE_NAME_BUFFER_SIZE];
    char uuid[NVML_DEVICE_UUID_BUFFER_SIZE];
    double power_w;
    int energy, power, mig;
    unsigned util, mem_util;
    double lost_after_s; /* < 0: never */
};

struct fake_proc {
    unsigned dev;
    unsigned pid;
    unsigned long long mem_bytes;
    unsigned sm;
};

static struct {
    int refs;
    double t0;
    int init_error;
    unsigned ndev;
    struct nvml_device_st dev[FAKE_DEVICES_MAX];
    size_t nproc;
    struct fake_proc proc[FAKE_PROCS_MAX];
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
nvml_return_t nvmlDeviceGetUtilizationRates(nvml_device_t device, struct nvml_utilization *u);
nvml_return_t nvmlDeviceGetComputeRunningProcesses_v3(nvml_device_t device, unsigned int *count,
                                                      struct nvml_process_info *infos);
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
            fake.dev[k] =
                (struct nvml_device_st){.index = k, .energy = 1, .power = 1, .lost_after_s = -1};
            snprintf(fake.dev[k].name, sizeof fake.dev[k].name, "Fake GPU");
            snprintf(fake.dev[k].uuid, sizeof fake.dev[k].uuid, "GPU-fake-%u", k);
        }
        fake.ndev = (unsigned)i + 1;
    }
    return d;
}

/* Reads the scenario. Returns 0, or -1 when it cannot be read. */
static int load_scenario(void)
{
    memset(&fake.dev, 0, sizeof fake.dev);
    fake.ndev = 0;
    fake.nproc = 0;
    fake.init_error = 0;
    const char *path = getenv("CARMA_FAKE_NVML_SCENARIO");
    FILE *f = path ? fopen(path, "re") : NULL;
    if (!f)
        return -1;
    char line[512], key[128], val[128];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        if (!word(&p, key, sizeof key) || !word(&p, val, sizeof val))
            continue;
        if (strcmp(key, "init_error") == 0) {
            fake.init_error = atoi(val);
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
    return 0;
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

nvml_return_t nvmlDeviceGetTotalEnergyConsumption(nvml_device_t device, unsigned long long *mj)
{
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (!device->energy)
        return NVML_ERROR_NOT_SUPPORTED;
    *mj = (unsigned long long)(device->power_w * (now_s() - fake.t0) * 1000.0);
    return NVML_SUCCESS;
}

nvml_return_t nvmlDeviceGetPowerUsage(nvml_device_t device, unsigned int *mw)
{
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    if (!device->power)
        return NVML_ERROR_NOT_SUPPORTED;
    *mw = (unsigned int)(device->power_w * 1000.0 + 0.5);
    return NVML_SUCCESS;
}

nvml_return_t nvmlDeviceGetUtilizationRates(nvml_device_t device, struct nvml_utilization *u)
{
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    u->gpu = device->util;
    u->memory = device->mem_util;
    return NVML_SUCCESS;
}

nvml_return_t nvmlDeviceGetComputeRunningProcesses_v3(nvml_device_t device, unsigned int *count,
                                                      struct nvml_process_info *infos)
{
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    unsigned n = 0;
    for (size_t i = 0; i < fake.nproc; i++)
        n += fake.proc[i].dev == device->index;
    if (*count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    unsigned k = 0;
    for (size_t i = 0; i < fake.nproc; i++) {
        if (fake.proc[i].dev != device->index)
            continue;
        infos[k++] = (struct nvml_process_info){
            .pid = fake.proc[i].pid,
            .used_gpu_memory =
                fake.proc[i].mem_bytes ? fake.proc[i].mem_bytes : NVML_VALUE_NOT_AVAILABLE,
            .gpu_instance_id = ~0u,
            .compute_instance_id = ~0u,
        };
    }
    *count = n;
    return NVML_SUCCESS;
}

nvml_return_t nvmlDeviceGetComputeRunningProcesses_v2(nvml_device_t device, unsigned int *count,
                                                      struct nvml_process_info *infos)
{
    return nvmlDeviceGetComputeRunningProcesses_v3(device, count, infos);
}

nvml_return_t nvmlDeviceGetProcessUtilization(nvml_device_t device,
                                              struct nvml_process_sample *samples,
                                              unsigned int *count, unsigned long long last_seen)
{
    (void)last_seen;
    nvml_return_t r = check(device);
    if (r != NVML_SUCCESS)
        return r;
    unsigned n = 0;
    for (size_t i = 0; i < fake.nproc; i++)
        n += fake.proc[i].dev == device->index;
    if (!samples || *count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    unsigned k = 0;
    for (size_t i = 0; i < fake.nproc; i++)
        if (fake.proc[i].dev == device->index)
            samples[k++] = (struct nvml_process_sample){
                .pid = fake.proc[i].pid,
                .time_stamp_us = (unsigned long long)(now_s() * 1e6),
                .sm_util = fake.proc[i].sm,
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
