#!/usr/bin/python3
"""Checks GPU energy attribution against the fake NVML's exact ground truth.

    check_gpu.py fake --lib LIB --lib-v2 LIB --gpujob EXE WORKDIR
    check_gpu.py run RUNDIR --clients DIR --idle-w W --max-w W --job NAME [--job NAME]...
                 [--split sm|equal] [--other] [--baseline S] [--lost-after S]
                 [--tol-job 0.01] [--tol-other 0.02] [--tol-total 0.01] [--rel 1e-6]

`fake`: the fake NVML itself (tests/fakes/fake_nvml.c, loaded with ctypes) and carma-gpujob
(tests/fakes/gpujob.c), checked against their documented behaviour in WORKDIR, so that a
failure of `run` can be blamed on carma and not on the fake: energy = the exact integral of
P(t) = idle_w + (max_w - idle_w) x S(t) / 100, the power gauge, the utilization, the running
processes (static ones, live clients, dead ones dropped), per-process utilization with NVML's
calling conventions (INSUFFICIENT_SIZE, NOT_FOUND, NOT_SUPPORTED with proc_util no), the .nvml-init
note, a lost GPU, the _v2-only variant, and carma-gpujob's file, --child, --delay, SIGTERM
(143) and usage errors (2).

`run`: a run directory of `carma run` made on a client-driven fake GPU (channel nvml/gpu0).
The truth of each client is its registration file DIR/<pid> ("dev= sm= start= end= tag="):
dynamic energy k x sm x (end - start), k = (max_w - idle_w) / 100. Workload NAME's clients are
tagged NAME; every other client is "other" (an external process).
  - report.json: gpus[] has nvml/gpu0 with its fields; jobs_j + idle_j + other_j +
    unattributed_j == energy_j (REL, relative); the workloads' gpu_j add up to jobs_j and each
    one's energy_by_kind_j.gpu is its gpu_j; attribution.idle_policy is "idle";
  - attribution.csv: the rows of nvml/gpu0 add up to energy_j, per workload to its gpu_j,
    and to idle_j, other_j, unattributed_j (REL);
  - --split sm: each workload's gpu_j within TOL_JOB of its truth, basis_s.sm > 0;
    with --other, other_j within TOL_OTHER of the other clients' truth (which must have
    started after carma's baseline, t0 + BASELINE, and ended before the workloads);
    --split equal: basis_s.context > 0, each workload within TOL_JOB of its fair share (the
    dynamic power split equally among the workloads running, instant by instant), and two
    workloads' energies while both ran (less what each drew alone) equal within 2 x TOL_JOB;
  - without --lost-after: energy_j within TOL_TOTAL of idle_w x covered_s + all clients'
    dynamic truth; with --lost-after S: invalid_samples > 0 and 0 < energy_j <= the truth of
    [t0, t0 + S] x (1 + TOL_TOTAL) (t0: DIR/.nvml-init), each workload's gpu_j <= its truth
    until the loss x (1 + TOL_JOB), plus the dynamic energy of the other clients over the
    split intervals in which they started or ended (a process seen one tick late or early);
    the per-workload truth checks are not made;
  - utilization.csv: its header; device rows and process rows as the contract says; process
    rows name every workload (and "other" with --other); each workload's client pid appears
    under its name, with its sm as sm_util_pct (--split sm);
  - power/samples.csv: the srt-slurm v2 header, schema_version 2 on every row, scrape_seq
    non-decreasing, power_w a finite number >= 0 (blank allowed after a loss), gpu_uuid
    GPU-0000; power/manifest.json parses.
Prints what it compared (measured vs truth, percent error per job); exits 1 when a check
failed, 2 on bad input.

Standard library only (Debian's python3).
"""

import argparse
import bisect
import csv
import ctypes
import io
import json
import math
import os
import signal
import subprocess
import sys
import time

CHANNEL = "nvml/gpu0"
GPU_KEYS = {"channel", "index", "uuid", "name", "energy_j", "covered_s", "invalid_samples",
            "drift_pct", "jobs_j", "idle_j", "other_j", "unattributed_j", "basis_s"}
BASIS_KEYS = {"sm", "context", "allocation", "none"}
ATTR_HEADER = ["timestamp_unix", "channel", "job", "joules"]
UTIL_HEADER = ["timestamp_unix", "gpu", "gpu_uuid", "pid", "workload", "gpu_util_pct",
               "mem_util_pct", "sm_util_pct", "used_mem_mib"]
POWER_HEADER = ["schema_version", "timestamp_unix", "scrape_seq", "hostname", "gpu_index",
                "gpu_uuid", "power_w", "gpu_util_pct", "sm_active"]
SPECIAL_JOBS = ("idle", "other", "unattributed")

failures = []


def check(ok, msg):
    print(("ok   " if ok else "FAIL ") + msg)
    if not ok:
        failures.append(msg)
    return ok


def die(msg):
    print("check_gpu: " + msg, file=sys.stderr)
    sys.exit(2)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def fnum(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def near(a, b, rel, floor=1e-9):
    return is_num(a) and is_num(b) and abs(a - b) <= rel * max(abs(a), abs(b), floor)


def pct(got, want):
    return 100.0 * (got - want) / want if want else float("nan")


# ---- the clients' files ----

def read_clients(d):
    """Every registration file of DIR: a list of dicts pid, dev, sm, start, end (None while it
    runs), tag, mem_mib."""
    out = []
    for name in sorted(os.listdir(d)):
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(d, name)) as f:
                text = f.read()
        except OSError:
            continue
        kv = dict(w.split("=", 1) for w in text.split() if "=" in w)
        try:
            c = {"pid": int(name), "dev": int(kv["dev"]), "sm": int(kv["sm"]),
                 "start": float(kv["start"]),
                 "end": None if kv["end"] == "-" else float(kv["end"]),
                 "tag": kv.get("tag"), "mem_mib": int(kv["mem"]) if "mem" in kv else None}
        except (KeyError, ValueError):
            print("# skipped malformed client file %s: %r" % (os.path.join(d, name), text))
            continue
        out.append(c)
    return out


def read_t0(d):
    """t0 (CLOCK_MONOTONIC s of the last nvmlInit) from DIR/.nvml-init, or None."""
    try:
        with open(os.path.join(d, ".nvml-init")) as f:
            kv = dict(w.split("=", 1) for w in f.read().split() if "=" in w)
        return float(kv["t0"]), int(kv["pid"])
    except (OSError, KeyError, ValueError):
        return None


def overlap(a0, a1, b0, b1):
    return max(0.0, min(a1, b1) - max(a0, b0))


def tick_span(ticks, period, t):
    """Length (s) of the split interval that holds time t: the two ticks around it, or the
    interval of one PERIOD that the first tick ends; 0 outside them."""
    i = bisect.bisect_right(ticks, t)
    if 0 < i < len(ticks):
        return ticks[i] - ticks[i - 1]
    return period if ticks and ticks[0] - period <= t < ticks[0] else 0.0


def client_dyn_j(c, k, t_from=-math.inf, t_to=math.inf, now=None):
    """Dynamic energy (J) of client c over [t_from, t_to]; a running client counts until now."""
    end = c["end"] if c["end"] is not None else now
    if end is None:
        return None
    return k * c["sm"] * overlap(c["start"], end, t_from, t_to)


# ---- fake: the fake NVML and carma-gpujob on their own ----

class ProcInfo(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("used_gpu_memory", ctypes.c_ulonglong),
                ("gpu_instance_id", ctypes.c_uint), ("compute_instance_id", ctypes.c_uint)]


class Sample(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("time_stamp", ctypes.c_ulonglong),
                ("sm_util", ctypes.c_uint), ("mem_util", ctypes.c_uint),
                ("enc_util", ctypes.c_uint), ("dec_util", ctypes.c_uint)]


class Util(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


NVML_NOT_SUPPORTED, NVML_NOT_FOUND, NVML_INSUFFICIENT_SIZE, NVML_GPU_IS_LOST = 3, 6, 7, 15
NOT_AVAILABLE = 2**64 - 1


class Nvml:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)

    def has(self, name):
        try:
            getattr(self.lib, name)
            return True
        except AttributeError:
            return False

    def init(self):
        return self.lib.nvmlInit_v2()

    def shutdown(self):
        return self.lib.nvmlShutdown()

    def handle(self, i):
        h = ctypes.c_void_p()
        r = self.lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(h))
        return h if r == 0 else None

    def energy_mj(self, h):
        v = ctypes.c_ulonglong()
        r = self.lib.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(v))
        return (r, v.value)

    def power_mw(self, h):
        v = ctypes.c_uint()
        r = self.lib.nvmlDeviceGetPowerUsage(h, ctypes.byref(v))
        return (r, v.value)

    def util(self, h):
        u = Util()
        r = self.lib.nvmlDeviceGetUtilizationRates(h, ctypes.byref(u))
        return (r, u.gpu, u.memory)

    def procs(self, h, cap=64, call="nvmlDeviceGetComputeRunningProcesses_v3"):
        arr = (ProcInfo * max(cap, 1))()
        n = ctypes.c_uint(cap)
        r = getattr(self.lib, call)(h, ctypes.byref(n), arr if cap else None)
        return r, n.value, [(arr[i].pid, arr[i].used_gpu_memory) for i in range(
            n.value if r == 0 else 0)]

    def proc_util(self, h, cap=64, last_seen=0, null=False):
        arr = (Sample * max(cap, 1))()
        n = ctypes.c_uint(cap)
        r = self.lib.nvmlDeviceGetProcessUtilization(h, None if null else arr, ctypes.byref(n),
                                                      ctypes.c_ulonglong(last_seen))
        return r, n.value, [(arr[i].pid, arr[i].sm_util, arr[i].time_stamp) for i in range(
            n.value if r == 0 else 0)]


def write_client(d, pid, dev, sm, start, end=None, extra=""):
    tmp = os.path.join(d, ".%d.tmp" % pid)
    with open(tmp, "w") as f:
        f.write("dev=%d sm=%d start=%.9f end=%s%s\n"
                % (dev, sm, start, "-" if end is None else "%.9f" % end, extra))
    os.rename(tmp, os.path.join(d, str(pid)))


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def ppid_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def wait_file(path, timeout_s=5.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.005)
    return False


def tagged(clients, tag):
    return [c for c in clients if c["tag"] == tag]


def fake_check(a):
    work = os.path.abspath(a.rundir)
    os.makedirs(work, exist_ok=True)
    clients = os.path.join(work, "clients")
    os.makedirs(clients, exist_ok=True)
    scen = os.path.join(work, "self.scenario")
    with open(scen, "w") as f:
        f.write("# written by check_gpu.py fake\n"
                "clients clients\n"
                'device 0 name "Fake H200" uuid GPU-0000 idle_w 100 max_w 500 mem_util 7\n'
                "device 1 uuid GPU-0001 idle_w 50 max_w 250 proc_util no\n"
                "device 2 uuid GPU-0002 power_w 10\n"
                "proc 0 pid 4242 sm 5 mem_mib 64\n")
    os.environ["CARMA_FAKE_NVML_SCENARIO"] = scen
    nv = Nvml(a.lib)
    b = time.monotonic()
    check(nv.init() == 0, "nvmlInit_v2 succeeds")
    e = time.monotonic()
    init = read_t0(clients)
    check(init is not None and b <= init[0] <= e and init[1] == os.getpid(),
          "clients/.nvml-init (relative 'clients' taken from the scenario's folder) has t0 "
          "within the nvmlInit call and our pid: %r" % (init,))
    t0 = init[0] if init else b
    h = [nv.handle(i) for i in range(3)]
    check(all(x is not None for x in h), "three device handles")

    # idle: no client yet
    check(nv.power_mw(h[0]) == (0, 100000), "idle power 100 W: %r" % (nv.power_mw(h[0]),))
    check(nv.util(h[0]) == (0, 0, 7), "idle utilization 0%%, memory 7%%: %r"
          % (nv.util(h[0]),))
    r = nv.procs(h[0])
    check(r[0] == 0 and r[2] == [(4242, 64 << 20)], "static proc 4242 (64 MiB) listed: %r"
          % (r,))
    r = nv.proc_util(h[0])
    check(r[0] == 0 and [(p, s) for p, s, _ in r[2]] == [(4242, 5)],
          "per-process utilization: 4242 at 5%%: %r" % (r[:2],))
    r = nv.proc_util(h[2])
    check(r[0] == NVML_NOT_FOUND, "no process on device 2: NVML_ERROR_NOT_FOUND (%d)" % r[0])
    r = nv.procs(h[2])
    check(r[:2] == (0, 0), "no process on device 2: success, count 0 (%r)" % (r[:2],))
    check(nv.proc_util(h[1])[0] == NVML_NOT_SUPPORTED,
          "proc_util no: NVML_ERROR_NOT_SUPPORTED")

    # clients: this process (running), a dead pid (running by its file), an ended one,
    # junk files that must be ignored, one on the constant-power device 2
    me, ppid, dead, gone = os.getpid(), os.getppid(), dead_pid(), dead_pid()
    s_me = time.monotonic()
    write_client(clients, me, 0, 30, s_me, extra=" mem=512 tag=me")
    write_client(clients, dead, 0, 20, t0 - 1.0)
    write_client(clients, gone, 0, 10, t0 - 0.5, s_me)
    write_client(clients, ppid, 2, 15, s_me)
    with open(os.path.join(clients, ".77.tmp"), "w") as f:
        f.write("dev=0 sm=99 start=0 end=-\n")
    with open(os.path.join(clients, "1"), "w") as f:
        f.write("garbage\n")
    with open(os.path.join(clients, "notes"), "w") as f:
        f.write("dev=0 sm=99 start=0 end=-\n")
    time.sleep(0.2)

    def truth_j(t, dev, idle, k):
        return idle * (t - t0) + sum(client_dyn_j(c, k, t0, t, now=t)
                                     for c in read_clients(clients) if c["dev"] == dev)

    b = time.monotonic()
    r, mj = nv.energy_mj(h[0])
    e = time.monotonic()
    lo, hi = truth_j(b, 0, 100, 4), truth_j(e, 0, 100, 4)
    check(r == 0 and lo - 1e-3 <= mj / 1e3 <= hi + 1e-3,
          "device 0 energy %.6f J within the truth [%.6f, %.6f] J (the integral since t0 of "
          "the clients' files)" % (mj / 1e3, lo, hi))
    check(nv.power_mw(h[0]) == (0, 300000),
          "power 100 + 4 x (30 + 20) = 300 W (the dead client still draws by its file): %r"
          % (nv.power_mw(h[0]),))
    check(nv.util(h[0]) == (0, 50, 7), "utilization 50%%, memory 7%%: %r" % (nv.util(h[0]),))
    r = nv.procs(h[0])
    check(r[0] == 0 and sorted(r[2]) == sorted([(4242, 64 << 20), (me, 512 << 20)]),
          "running processes: 4242 and this one (512 MiB), not the dead one: %r" % (r,))
    r = nv.procs(h[0], cap=1)
    check(r[:2] == (NVML_INSUFFICIENT_SIZE, 2), "processes, count 1: INSUFFICIENT_SIZE, "
          "count 2: %r" % (r[:2],))
    r = nv.procs(h[0], cap=0)
    check(r[:2] == (NVML_INSUFFICIENT_SIZE, 2), "processes, count 0, NULL: INSUFFICIENT_SIZE, "
          "count 2: %r" % (r[:2],))
    r = nv.proc_util(h[0], null=True)
    check(r[:2] == (NVML_INSUFFICIENT_SIZE, 2), "process utilization, NULL: INSUFFICIENT_SIZE, "
          "count 2: %r" % (r[:2],))
    r = nv.proc_util(h[0], cap=1)
    check(r[:2] == (NVML_INSUFFICIENT_SIZE, 2), "process utilization, count 1: "
          "INSUFFICIENT_SIZE, count 2: %r" % (r[:2],))
    r = nv.proc_util(h[0])
    now_us = time.time() * 1e6
    check(r[0] == 0 and sorted((p, s) for p, s, _ in r[2]) == sorted([(4242, 5), (me, 30)])
          and all(abs(ts - now_us) < 1e6 for _, _, ts in r[2]),
          "process utilization: 4242 at 5%%, this one at 30%%, realtime µs stamps: %r"
          % (r[:2],))
    r = nv.proc_util(h[0], last_seen=int(now_us + 60e6))
    check(r[0] == NVML_NOT_FOUND, "process utilization after a future lastSeen: NOT_FOUND")
    check(nv.power_mw(h[2]) == (0, 10000), "device 2 (no max_w) keeps its power_w 10 W")
    r = nv.proc_util(h[2])
    check(r[0] == 0 and [(p, s) for p, s, _ in r[2]] == [(ppid, 15)],
          "a client on device 2 is listed there with its sm: %r" % (r[:2],))

    # carma-gpujob on device 1 (idle 50 W, max 250 W: k = 2)
    gj = a.gpujob
    p = subprocess.Popen([gj, "--dir", clients, "--device", "1", "--sm", "40", "--child",
                          "--tag", "child", "0.3", "7"])
    time.sleep(0.15)
    r = nv.procs(h[1])
    kids = [pid for pid, _ in r[2]]
    check(r[0] == 0 and len(kids) == 1 and kids[0] != p.pid and ppid_of(kids[0]) == p.pid,
          "--child: the registered process is the child of carma-gpujob %d: %r" % (p.pid, r))
    check(nv.power_mw(h[1]) == (0, 130000), "device 1 power 50 + 2 x 40 = 130 W: %r"
          % (nv.power_mw(h[1]),))
    rc = p.wait()
    check(rc == 7, "--child: exits with the child's EXIT_CODE 7 (got %d)" % rc)
    c = tagged(read_clients(clients), "child")
    check(len(c) == 1 and c[0]["end"] is not None
          and 0.3 <= c[0]["end"] - c[0]["start"] < 0.35 and c[0]["dev"] == 1
          and c[0]["sm"] == 40, "its file: dev 1, sm 40, end - start in [0.30, 0.35) s: %r"
          % (c,))
    check(nv.procs(h[1])[:2] == (0, 0), "once ended, it is no longer running")
    check(nv.util(h[1])[1] == 0 and nv.power_mw(h[1]) == (0, 50000),
          "device 1 back to 0% and 50 W")
    p = subprocess.Popen([gj, "--dir", clients, "--device", "1", "--sm", "10", "--tag", "term",
                          "5"])
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    rc = p.wait()
    c = tagged(read_clients(clients), "term")
    check(rc == 143 and len(c) == 1 and c[0]["end"] is not None
          and 0.1 <= c[0]["end"] - c[0]["start"] < 0.6,
          "SIGTERM: exit 143 (got %d), end written: %r" % (rc, c))
    tl = time.monotonic()
    p = subprocess.Popen([gj, "--dir", clients, "--device", "1", "--sm", "20", "--delay", "0.2",
                          "--tag", "late", "0.05"])
    rc = p.wait()
    c = tagged(read_clients(clients), "late")
    check(rc == 0 and len(c) == 1 and c[0]["start"] - tl >= 0.2 and c[0]["pid"] == p.pid,
          "--delay 0.2: registers itself (pid %d) 0.2 s late: %r" % (p.pid, c))
    for bad in (["--device", "1", "--sm", "5", "1"], ["--dir", clients, "--sm", "5", "1"],
                ["--dir", clients, "--device", "1", "1"],
                ["--dir", clients, "--device", "1", "--sm", "101", "1"],
                ["--dir", clients, "--device", "1", "--sm", "5", "x"],
                ["--dir", clients, "--device", "1", "--sm", "5", "--bogus", "1"],
                ["--dir", clients, "--device", "1", "--sm", "5"],
                ["--dir", clients, "--device", "1", "--sm", "5", "1", "2", "3"],
                ["--dir", clients, "--device", "1", "--sm", "5", "--tag", "a b", "1"]):
        q = subprocess.run([gj] + bad, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        check(q.returncode == 2 and q.stderr.startswith(b"carma-gpujob: "),
              "usage error %s: exit 2 with a message (got %d, %r)"
              % (" ".join(bad), q.returncode, q.stderr[:60]))
    b = time.monotonic()
    r, mj = nv.energy_mj(h[1])
    e = time.monotonic()
    lo, hi = truth_j(b, 1, 50, 2), truth_j(e, 1, 50, 2)
    check(r == 0 and lo - 1e-3 <= mj / 1e3 <= hi + 1e-3,
          "device 1 energy %.6f J within the truth [%.6f, %.6f] J after three carma-gpujob runs"
          % (mj / 1e3, lo, hi))
    check(nv.has("nvmlDeviceGetComputeRunningProcesses_v3"), "libfake-nvml exports _v3")
    check(nv.shutdown() == 0, "nvmlShutdown")

    # a lost GPU (a new init reads the scenario again)
    lost = os.path.join(work, "lost.scenario")
    with open(lost, "w") as f:
        f.write("clients %s\ndevice 0 idle_w 100 max_w 500\nlost 0 after_s 0.3\n" % clients)
    os.environ["CARMA_FAKE_NVML_SCENARIO"] = lost
    check(nv.init() == 0, "nvmlInit with a lost GPU")
    h0 = nv.handle(0)
    check(nv.energy_mj(h0)[0] == 0, "energy answers before the loss")
    time.sleep(0.35)
    check(nv.energy_mj(h0)[0] == NVML_GPU_IS_LOST and nv.procs(h0)[0] == NVML_GPU_IS_LOST,
          "0.35 s after init: GPU_IS_LOST")
    nv.shutdown()

    # the _v2-only variant
    os.environ["CARMA_FAKE_NVML_SCENARIO"] = scen
    v2 = Nvml(a.lib_v2)
    check(not v2.has("nvmlDeviceGetComputeRunningProcesses_v3")
          and v2.has("nvmlDeviceGetComputeRunningProcesses_v2"),
          "libfake-nvml-v2 exports _v2 and not _v3")
    check(v2.init() == 0, "libfake-nvml-v2: nvmlInit_v2")
    r = v2.procs(v2.handle(0), call="nvmlDeviceGetComputeRunningProcesses_v2")
    check(r[0] == 0 and sorted(p for p, _ in r[2]) == sorted([4242, me]),
          "libfake-nvml-v2: _v2 lists 4242 and this process: %r" % (r,))
    v2.shutdown()


# ---- run: a run directory of carma run ----

def read_csv(path, header, name):
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f, strict=True))
    except (OSError, csv.Error, UnicodeDecodeError) as e:
        check(False, "%s reads as CSV: %s" % (name, e))
        return []
    if not check(bool(rows) and rows[0] == header, "%s: header is exactly '%s' (got %r)"
                 % (name, ",".join(header), rows[0] if rows else None)):
        return []
    body = rows[1:]
    bad = [r for r in body if len(r) != len(header)]
    check(not bad, "%s: every row has %d fields%s" % (name, len(header),
                                                    "" if not bad else ": %r" % bad[:3]))
    return [r for r in body if len(r) == len(header)]


def load_json(path, name):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, "%s parses as JSON: %s" % (name, e))
        return None


def fair_equal(jobs, k):
    """({name: J}, {name: J}): the dynamic power of the workloads' clients split equally among
    the workloads running, instant by instant; and the part of it while the workload ran
    alone."""
    events = sorted({t for cs in jobs.values() for c in cs for t in (c["start"], c["end"])})
    out = {n: 0.0 for n in jobs}
    alone = {n: 0.0 for n in jobs}
    for t0, t1 in zip(events, events[1:]):
        mid = 0.5 * (t0 + t1)
        running = {n: sum(c["sm"] for c in cs if c["start"] <= mid < c["end"])
                   for n, cs in jobs.items()}
        running = {n: s for n, s in running.items()
                   if any(c["start"] <= mid < c["end"] for c in jobs[n])}
        if not running:
            continue
        d = k * sum(running.values()) * (t1 - t0)
        for n in running:
            out[n] += d / len(running)
            if len(running) == 1:
                alone[n] += d
    return out, alone


def run_check(a):
    rd = a.rundir
    k = (a.max_w - a.idle_w) / 100.0
    clients = read_clients(a.clients)
    init = read_t0(a.clients)
    if init is None:
        die("no %s/.nvml-init: was the fake NVML loaded with 'clients %s'?"
            % (a.clients, a.clients))
    t0 = init[0]
    open_ = [c for c in clients if c["end"] is None]
    check(not open_, "every client wrote its end: %s" % ("yes" if not open_ else open_))
    clients = [c for c in clients if c["end"] is not None and c["dev"] == 0]
    jobs = {n: tagged(clients, n) for n in a.job}
    for n, cs in jobs.items():
        check(len(cs) >= 1, "workload %s registered a client (tag %s)" % (n, n))
    others = [c for c in clients if c["tag"] not in jobs]
    if a.other:
        check(len(others) >= 1, "an external client registered")
    elif others:
        print("# clients outside the workloads: %r" % others)

    rep = load_json(os.path.join(rd, "report.json"), "report.json")
    if rep is None:
        return
    g = [x for x in rep.get("gpus") or [] if isinstance(x, dict) and x.get("channel") == CHANNEL]
    if not check(len(g) == 1, "report.json: gpus[] has one entry for %s (gpus: %r)"
                 % (CHANNEL, rep.get("gpus"))):
        return
    g = g[0]
    if not check(GPU_KEYS <= set(g), "report.json gpus[0]: has %s (missing %s)"
                 % (sorted(GPU_KEYS), sorted(GPU_KEYS - set(g)))):
        return
    check(g["index"] == 0 and g["uuid"] == "GPU-0000", "gpus[0]: index 0, uuid GPU-0000 "
          "(got %r, %r)" % (g["index"], g["uuid"]))
    basis = g["basis_s"] if isinstance(g["basis_s"], dict) else {}
    check(BASIS_KEYS <= set(basis) and all(is_num(basis[x]) and basis[x] >= 0
                                            for x in BASIS_KEYS),
          "gpus[0].basis_s has %s, numbers >= 0: %r" % (sorted(BASIS_KEYS), basis))
    nums = [x for x in ("energy_j", "covered_s", "jobs_j", "idle_j", "other_j",
                        "unattributed_j") if not is_num(g[x])]
    if not check(not nums, "gpus[0]: numbers%s" % ("" if not nums else " (not: %s)" % nums)):
        return
    check(isinstance(g["invalid_samples"], int) and g["invalid_samples"] >= 0,
          "gpus[0].invalid_samples is a count: %r" % g["invalid_samples"])
    check(g["drift_pct"] is None or is_num(g["drift_pct"]), "gpus[0].drift_pct: %r"
          % g["drift_pct"])
    E = g["energy_j"]
    parts = g["jobs_j"] + g["idle_j"] + g["other_j"] + g["unattributed_j"]
    check(near(parts, E, a.rel), "gpus[0]: jobs_j %.6f + idle_j %.6f + other_j %.6f + "
          "unattributed_j %.6f = %.9f == energy_j %.9f (rel %.1e, tol %.0e)"
          % (g["jobs_j"], g["idle_j"], g["other_j"], g["unattributed_j"], parts, E,
             abs(parts - E) / max(abs(E), 1e-9), a.rel))
    check((rep.get("attribution") or {}).get("idle_policy") == "idle",
          "report.json: attribution.idle_policy is idle (%r)"
          % (rep.get("attribution") or {}).get("idle_policy"))
    print("# gpus[0]: energy %.3f J over %.3f s, jobs %.3f J, idle %.3f J, other %.3f J, "
          "unattributed %.3f J, invalid samples %d, drift %s%%, basis_s %r"
          % (E, g["covered_s"], g["jobs_j"], g["idle_j"], g["other_j"], g["unattributed_j"],
             g["invalid_samples"], g["drift_pct"], basis))

    rw = {w.get("name"): w for w in rep.get("workloads", []) if isinstance(w, dict)}
    got = {}
    for n in a.job:
        w = rw.get(n)
        if not check(w is not None, "report.json: workload %s" % n):
            continue
        gj = w.get("gpu_j")
        v = gj.get(CHANNEL) if isinstance(gj, dict) else None
        if not check(is_num(v), "report.json %s: gpu_j[%s] is a number (%r)" % (n, CHANNEL, gj)):
            continue
        got[n] = v
        kind = (w.get("energy_by_kind_j") or {}).get("gpu")
        check(near(kind, sum(x for x in gj.values() if is_num(x)), a.rel, 1e-6),
              "report.json %s: energy_by_kind_j.gpu %r == the sum of its gpu_j %r"
              % (n, kind, gj))
    if len(got) == len(a.job) and set(rw) == set(a.job):
        check(near(sum(got.values()), g["jobs_j"], a.rel, 1e-6),
              "the workloads' gpu_j add up to jobs_j: %.9f vs %.9f"
              % (sum(got.values()), g["jobs_j"]))

    # attribution.csv
    rows = read_csv(os.path.join(rd, "attribution.csv"), ATTR_HEADER, "attribution.csv")
    sums = {}
    bad = []
    for r in rows:
        if r[1] != CHANNEL:
            continue
        j = fnum(r[3])
        if j is None or fnum(r[0]) is None:
            bad.append(r)
            continue
        sums[r[2]] = sums.get(r[2], 0.0) + j
    check(not bad, "attribution.csv: numbers parse%s" % ("" if not bad else ": %r" % bad[:3]))
    ticks = sorted({fnum(r[0]) for r in rows if r[1] == CHANNEL and fnum(r[0]) is not None})
    steps = sorted(b - a for a, b in zip(ticks, ticks[1:]))
    period = steps[len(steps) // 2] if steps else 0.0
    if steps:
        print("# attribution.csv %s: %d ticks, split period median %.1f ms, max %.1f ms"
              % (CHANNEL, len(ticks), 1e3 * period, 1e3 * steps[-1]))
    unknown = sorted(set(sums) - set(rw) - set(SPECIAL_JOBS))
    check(not unknown, "attribution.csv %s: every job is a workload or idle/other/unattributed%s"
          % (CHANNEL, "" if not unknown else ": %r" % unknown))
    tol = a.rel * max(abs(E), 1e-9) + 1e-9
    total = sum(sums.values())
    check(abs(total - E) <= tol, "attribution.csv %s: rows add up to %.9f J == energy_j %.9f J "
          "(diff %.2e J, tol %.1e)" % (CHANNEL, total, E, total - E, tol))
    for n in SPECIAL_JOBS:
        check(abs(sums.get(n, 0.0) - g[n + "_j"]) <= tol,
              "attribution.csv %s: %s rows %.9f J == %s_j %.9f J"
              % (CHANNEL, n, sums.get(n, 0.0), n, g[n + "_j"]))
    for n, v in got.items():
        check(abs(sums.get(n, 0.0) - v) <= tol, "attribution.csv %s: %s rows %.9f J == its "
              "gpu_j %.9f J" % (CHANNEL, n, sums.get(n, 0.0), v))

    # against the truth
    truth = {n: sum(client_dyn_j(c, k) for c in cs) for n, cs in jobs.items()}
    t_other = sum(client_dyn_j(c, k) for c in others)
    t_all = sum(client_dyn_j(c, k) for c in clients)
    for n, cs in jobs.items():
        for c in cs:
            print("# %s: pid %d, sm %d, %.3f s (%.3f .. %.3f s after t0)"
                  % (n, c["pid"], c["sm"], c["end"] - c["start"], c["start"] - t0,
                     c["end"] - t0))
    for c in others:
        print("# other: pid %d, sm %d, %.3f s (%.3f .. %.3f s after t0)"
              % (c["pid"], c["sm"], c["end"] - c["start"], c["start"] - t0, c["end"] - t0))
    if a.lost_after is not None:
        tl = t0 + a.lost_after
        starts = [c["start"] for cs in jobs.values() for c in cs]
        ends = [c["end"] for cs in jobs.values() for c in cs]
        check(starts and min(starts) < tl < max(ends),
              "test setup: the loss (t0 + %.3f s) falls while the workloads run" % a.lost_after)
        t_loss = a.idle_w * a.lost_after + sum(client_dyn_j(c, k, t0, tl) for c in clients)
        check(g["invalid_samples"] > 0, "lost GPU: invalid_samples %d > 0"
              % g["invalid_samples"])
        check(0 < E <= t_loss * (1 + a.tol_total),
              "lost GPU: 0 < energy_j %.3f J <= the truth until the loss %.3f J (+%.0f%%): "
              "%.2f%% of it" % (E, t_loss, 100 * a.tol_total, 100 * E / t_loss))
        # the clients' times are CLOCK_MONOTONIC, attribution.csv's are unix time
        mono_to_unix = time.time() - time.monotonic()
        if ticks:
            print("# ticks %.3f .. %.3f s after t0" % (ticks[0] - mono_to_unix - t0,
                                                     ticks[-1] - mono_to_unix - t0))
        for n, cs in jobs.items():
            tj = sum(client_dyn_j(c, k, t0, tl) for c in cs)
            # another client's start or end before the loss falls inside one split interval;
            # carma splits that interval by the utilization it read at one of its ends, so
            # up to that interval of the other client's power can land on this job
            slack = sum(k * c["sm"] * tick_span(ticks, period, b + mono_to_unix)
                        for c in clients if c not in cs
                        for b in (c["start"], c["end"]) if b is not None and t0 <= b <= tl)
            check(n in got and got[n] <= tj * (1 + a.tol_job) + slack + 1e-6,
                  "lost GPU: %s gpu_j %s J <= its truth until the loss %.3f J (+%.0f%%) + "
                  "%.3f J (the split intervals in which another client started or ended)"
                  % (n, got.get(n), tj, 100 * a.tol_job, slack))
    else:
        t_total = a.idle_w * g["covered_s"] + t_all
        check(near(E, t_total, a.tol_total),
              "energy_j %.3f J vs the truth %.3f J (idle %.0f W x covered_s %.3f s + the "
              "clients' dynamic %.3f J), error %+.3f%% (tol %.1f%%)"
              % (E, t_total, a.idle_w, g["covered_s"], t_all, pct(E, t_total),
                 100 * a.tol_total))
        print("# idle_j %.3f J vs idle %.0f W x covered_s: %.3f J (%+.3f%%); unattributed %.3f J"
              % (g["idle_j"], a.idle_w, a.idle_w * g["covered_s"],
                 pct(g["idle_j"], a.idle_w * g["covered_s"]), g["unattributed_j"]))
        if a.split == "sm":
            check(basis.get("sm", 0) > 0, "basis_s.sm %r > 0 (split by per-process SM "
                  "utilization)" % basis.get("sm"))
            for n in a.job:
                if n not in got:
                    continue
                err = pct(got[n], truth[n])
                # what one split period of this job's own dynamic power weighs (a process seen
                # one tick late or early, at its start or end, moves about that much)
                one = 100 * k * sum(c["sm"] for c in jobs[n]) * period / max(truth[n], 1e-9)
                check(abs(err) <= 100 * a.tol_job,
                      "%s: gpu_j %.3f J vs truth %.3f J (sm %s), error %+.3f%% (tol %.1f%%; one "
                      "split period of its power: %.2f%%)"
                      % (n, got[n], truth[n], "+".join(str(c["sm"]) for c in jobs[n]), err,
                         100 * a.tol_job, one))
            if len(got) == len(a.job) >= 2:
                n0, n1 = a.job[0], a.job[1]
                print("# ratio %s/%s: measured %.4f, truth %.4f" % (
                    n0, n1, got[n0] / got[n1] if got[n1] else float("nan"),
                    truth[n0] / truth[n1] if truth[n1] else float("nan")))
            if a.other:
                ends = [c["end"] for cs in jobs.values() for c in cs]
                check(all(c["start"] >= t0 + a.baseline for c in others),
                      "test setup: the external client started after carma's baseline "
                      "(t0 + %.2f s)" % a.baseline)
                check(all(c["end"] <= max(ends) for c in others),
                      "test setup: the external client ended before the workloads")
                err = pct(g["other_j"], t_other)
                one = 100 * k * sum(c["sm"] for c in others) * period / max(t_other, 1e-9)
                check(abs(err) <= 100 * a.tol_other,
                      "other: other_j %.3f J vs the external client's truth %.3f J, error "
                      "%+.3f%% (tol %.1f%%; one split period of its power: %.2f%%)"
                      % (g["other_j"], t_other, err, 100 * a.tol_other, one))
        else:
            check(basis.get("context", 0) > 0, "basis_s.context %r > 0 (equal split among the "
                  "workloads with a context on the GPU)" % basis.get("context"))
            fair, alone = fair_equal(jobs, k)
            for n in a.job:
                if n not in got:
                    continue
                err = pct(got[n], fair[n])
                check(abs(err) <= 100 * a.tol_job,
                      "%s: gpu_j %.3f J vs its equal share %.3f J (own truth by SM %.3f J), "
                      "error %+.3f%% (tol %.1f%%)" % (n, got[n], fair[n], truth[n], err,
                                                      100 * a.tol_job))
            if len(got) == 2:
                # while both ran, each had half: their energies less what each drew alone; an
                # error of TOL_JOB on each, in opposite directions (the last tick of the first
                # to end goes to the other), makes them differ by twice that
                (n0, x), (n1, y) = got.items()
                x, y = x - alone[n0], y - alone[n1]
                check(near(x, y, 2 * a.tol_job), "the two workloads' GPU energies while both "
                      "ran equal: %s %.3f J vs %s %.3f J (their own energy alone, %.3f and "
                      "%.3f J, taken off), differ by %.3f%% (tol %.1f%%)"
                      % (n0, x, n1, y, alone[n0], alone[n1], 100 * abs(x - y) / max(x, y),
                         200 * a.tol_job))

    # utilization.csv
    rows = read_csv(os.path.join(rd, "utilization.csv"), UTIL_HEADER, "utilization.csv")
    dev_rows = [r for r in rows if r[3] == ""]
    proc_rows = [r for r in rows if r[3] != ""]
    check(len(dev_rows) > 0, "utilization.csv: device rows (%d)" % len(dev_rows))
    bad = [r for r in dev_rows if r[4] != "" or r[7] != "" or r[8] != ""
           or fnum(r[5]) is None or not 0 <= fnum(r[5]) <= 100 or fnum(r[0]) is None]
    check(not bad, "utilization.csv: device rows have gpu_util_pct 0..100, blank pid, workload, "
          "sm_util_pct, used_mem_mib%s" % ("" if not bad else ": %r" % bad[:3]))
    bad = [r for r in proc_rows if r[5] != "" or r[6] != "" or not r[3].isdigit()
           or r[4] not in set(a.job) | {"other"} or fnum(r[0]) is None]
    check(not bad, "utilization.csv: process rows have a pid, a workload (one of %s or other), "
          "blank gpu_util_pct and mem_util_pct%s" % (a.job, "" if not bad else ": %r" % bad[:3]))
    named = {r[4] for r in proc_rows}
    want = set(a.job) | ({"other"} if a.other else set())
    check(want <= named, "utilization.csv: process rows name %s (got %s)"
          % (sorted(want), sorted(named)))
    for n, cs in jobs.items():
        for c in cs:
            mine = [r for r in proc_rows if r[3] == str(c["pid"])]
            check(mine and all(r[4] == n for r in mine),
                  "utilization.csv: %s's GPU process %d is listed as %s (%s)"
                  % (n, c["pid"], n, sorted({r[4] for r in mine})))
            if a.split == "sm" and mine:
                check(any(fnum(r[7]) == c["sm"] for r in mine),
                      "utilization.csv: %s's process %d at sm_util_pct %d"
                      % (n, c["pid"], c["sm"]))
    for c in others if a.other else []:
        mine = [r for r in proc_rows if r[3] == str(c["pid"])]
        check(mine and all(r[4] == "other" for r in mine),
              "utilization.csv: the external process %d is listed as other (%s)"
              % (c["pid"], sorted({r[4] for r in mine})))

    # power/
    rows = read_csv(os.path.join(rd, "power", "samples.csv"), POWER_HEADER, "power/samples.csv")
    check(len(rows) > 0, "power/samples.csv has rows (%d)" % len(rows))
    check(all(r[0] == "2" for r in rows), "power/samples.csv: schema_version 2 on every row")
    seq = [r[2] for r in rows]
    check(all(s.isdigit() for s in seq) and [int(s) for s in seq] == sorted(int(s) for s in seq),
          "power/samples.csv: scrape_seq integers, non-decreasing")
    pw = [fnum(r[6]) for r in rows]
    check(all(v is not None and v >= 0 for v in pw if v is not None or a.lost_after is None)
          and any(v is not None for v in pw),
          "power/samples.csv: power_w finite and >= 0%s"
          % (" (blank allowed after the loss)" if a.lost_after is not None else ""))
    check(all(r[4] == "0" and r[5] == "GPU-0000" and r[3] != "" for r in rows),
          "power/samples.csv: gpu_index 0, gpu_uuid GPU-0000, a hostname")
    check(all(fnum(r[1]) is not None for r in rows), "power/samples.csv: timestamps parse")
    if a.lost_after is None and pw and all(v is not None for v in pw):
        print("# power/samples.csv: %d rows, power_w %.1f .. %.1f W"
              % (len(rows), min(pw), max(pw)))
    load_json(os.path.join(rd, "power", "manifest.json"), "power/manifest.json")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("fake", "run"))
    ap.add_argument("rundir", help="run: the run directory; fake: a work directory")
    ap.add_argument("--lib")
    ap.add_argument("--lib-v2")
    ap.add_argument("--gpujob")
    ap.add_argument("--clients")
    ap.add_argument("--idle-w", type=float)
    ap.add_argument("--max-w", type=float)
    ap.add_argument("--job", action="append", default=[])
    ap.add_argument("--split", choices=("sm", "equal"), default="sm")
    ap.add_argument("--other", action="store_true")
    ap.add_argument("--baseline", type=float, default=0.0)
    ap.add_argument("--lost-after", type=float)
    ap.add_argument("--tol-job", type=float, default=0.01)
    ap.add_argument("--tol-other", type=float, default=0.02)
    ap.add_argument("--tol-total", type=float, default=0.01)
    ap.add_argument("--rel", type=float, default=1e-6)
    a = ap.parse_args()
    if a.mode == "fake":
        if not (a.lib and a.lib_v2 and a.gpujob):
            die("fake needs --lib, --lib-v2 and --gpujob")
        fake_check(a)
    else:
        if not os.path.isdir(a.rundir):
            die("no run directory " + a.rundir)
        if not (a.clients and a.idle_w is not None and a.max_w is not None and a.job):
            die("run needs --clients, --idle-w, --max-w and --job")
        run_check(a)
    if failures:
        print("check_gpu: %d check(s) failed: %s" % (len(failures), failures[0]))
        return 1
    print("check_gpu: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
