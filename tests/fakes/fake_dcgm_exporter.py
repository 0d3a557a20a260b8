#!/usr/bin/python3
# A fake NVIDIA dcgm-exporter (standard library only): serves /metrics as dcgm-exporter's
# renderer writes it, with GPUs whose power is a known function of time and whose energy
# counter is its exact integral, so that a test knows the energy truth. See README.md.
#
# Facts of the text (from NVIDIA/dcgm-exporter's etc/default-counters.csv and
# internal/pkg/rendermetrics, via the project's notes): one "# HELP" and one "# TYPE" line per
# family, then its samples, one per GPU (and MIG instance); labels in the order gpu, UUID,
# pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID,] Hostname, DCGM_FI_DRIVER_VERSION
# (HEAD spells uuid and hostname in lowercase: --lower); integers printed as %d, doubles as %f,
# no timestamps; DCGM's blank sentinels as old exporters print them (9223372036854775794 for an
# int64 field, 140737488355328.000000 for a double); DCGM_FI_PROF_SM_ACTIVE only when the
# counters CSV has it (--sm-active); a missing CPU sensor as 0.000000 (--cpu-zero).
#
# usage: fake_dcgm_exporter.py [--host 127.0.0.1] [--port 0] [--ready FILE] [--gpus N]
#            [--hostname NAME] [--lower] [--sm-active] [--mig GPU:ID:PROFILE]...
#            [--blank FIELD:GPU]... [--cpu-zero] [--epoch UNIX] [--reset]
#            [--base W] [--step W] [--amp W] [--period S] [--uuid-prefix P] [--shuffle SEED]
# --ready FILE gets the port once the server listens. The power of GPU g at time t is
#   P_g(t) = base + step*g + amp*sin(2*pi*(t - epoch)/(period + g))
# and its counter (mJ, truncated) is the integral of P_g from epoch, or, with --reset, from
# this process's start (a restarted exporter whose counter started again at 0). --shuffle SEED
# changes the order of the families, of the samples and of each sample's labels at every
# scrape (dcgm-exporter's order is not stable either).
import argparse
import random
import math
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

INT64_BLANK = "9223372036854775794"  # DCGM_INT64_BLANK + 2 (NOT_SUPPORTED), as exporters print it
FP64_BLANK = "140737488355328.000000"  # DCGM_FP64_BLANK (2^47)

FAMILIES = [
    # name, type, help, int64 field
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", True),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", True),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", False),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).", True),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", True),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", True),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge",
     "The ratio of cycles an SM has at least 1 warp assigned (in %).", False),
]


class Plant:
    def __init__(self, a):
        self.a = a
        self.epoch = a.epoch if a.epoch is not None else time.time()
        self.start = time.time()

    def power(self, g, t):
        a = self.a
        return a.base + a.step * g + a.amp * math.sin(2 * math.pi * (t - self.epoch) / (a.period + g))

    def integral(self, g, t1, t2):
        """The exact energy of GPU g over [t1, t2], in J."""
        a = self.a
        w = 2 * math.pi / (a.period + g)
        base = a.base + a.step * g
        return base * (t2 - t1) - a.amp / w * (math.cos(w * (t2 - self.epoch)) - math.cos(w * (t1 - self.epoch)))

    def counter_mj(self, g, t):
        since = self.start if self.a.reset else self.epoch
        return int(1000 * self.integral(g, since, t))


def energy_j(base, step, amp, period, epoch, g, t1, t2):
    """The truth for a test: GPU g's energy over [t1, t2] for these options, in J."""
    w = 2 * math.pi / (period + g)
    return (base + step * g) * (t2 - t1) - amp / w * (math.cos(w * (t2 - epoch)) - math.cos(w * (t1 - epoch)))


def render(p, a):
    t = time.time()
    lab_uuid, lab_host = ("uuid", "hostname") if a.lower else ("UUID", "Hostname")
    blanks = set(a.blank)
    rows = []  # (gpu, mig) pairs
    for g in range(a.gpus):
        rows.append((g, None))
        for m in a.mig:
            if m[0] == g:
                rows.append((g, m))
    out = []
    fams = list(FAMILIES)
    if a.rng:
        a.rng.shuffle(fams)
        a.rng.shuffle(rows)
    for name, typ, help_, int64 in fams:
        if name == "DCGM_FI_PROF_SM_ACTIVE" and not a.sm_active:
            continue
        out.append(f"# HELP {name} {help_}\n# TYPE {name} {typ}\n")
        for g, m in rows:
            labels = [("gpu", str(g)), (lab_uuid, f"{a.uuid_prefix}{g:04d}"),
                      ("pci_bus_id", f"00000000:{0x18 + g:02X}:00.0"), ("device", f"nvidia{g}"),
                      ("modelName", "NVIDIA H200")]
            if m:
                labels += [("GPU_I_PROFILE", m[2]), ("GPU_I_ID", str(m[1]))]
            labels += [(lab_host, a.hostname), ("DCGM_FI_DRIVER_VERSION", "550.54.15")]
            pw = p.power(g, t)
            util = max(0, min(100, int(50 + 45 * math.sin(2 * math.pi * (t - p.epoch) / 4.0 + g))))
            short = name.replace("DCGM_FI_DEV_", "").replace("DCGM_FI_PROF_", "")
            if f"{short}:{g}" in blanks:
                v = INT64_BLANK if int64 else FP64_BLANK
            elif name == "DCGM_FI_DEV_POWER_USAGE":
                v = f"{pw:f}"
            elif name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":
                v = f"{p.counter_mj(g, t):d}"
            elif name == "DCGM_FI_DEV_GPU_UTIL":
                v = f"{util:d}"
            elif name == "DCGM_FI_PROF_SM_ACTIVE":
                v = f"{util / 100:f}"
            elif name == "DCGM_FI_DEV_SM_CLOCK":
                v = "1980"
            elif name == "DCGM_FI_DEV_GPU_TEMP":
                v = f"{40 + g:d}"
            else:
                v = "3"
            if a.rng:
                a.rng.shuffle(labels)
            lab = ",".join(f'{k}="{val}"' for k, val in labels)
            out.append(f"{name}{{{lab}}} {v}\n")
    if a.cpu_zero:
        out.append("# HELP DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT CPU power utilization (in W).\n"
                   "# TYPE DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT gauge\n")
        out.append(f'DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT{{cpu="0",{lab_host}="{a.hostname}"}} 0.000000\n')
    return "".join(out).encode()


def main():
    ap = argparse.ArgumentParser(description="a fake dcgm-exporter")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ready")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--hostname", default="dcgm-exporter-pod-x7k2p")
    ap.add_argument("--lower", action="store_true", help="uuid/hostname labels (dcgm-exporter HEAD)")
    ap.add_argument("--sm-active", action="store_true")
    ap.add_argument("--mig", action="append", default=[], help="GPU:GPU_I_ID:PROFILE")
    ap.add_argument("--blank", action="append", default=[],
                    help="FIELD:GPU, FIELD one of POWER_USAGE, TOTAL_ENERGY_CONSUMPTION, GPU_UTIL, SM_ACTIVE")
    ap.add_argument("--cpu-zero", action="store_true")
    ap.add_argument("--epoch", type=float)
    ap.add_argument("--reset", action="store_true")
    ap.add_argument("--base", type=float, default=300.0)
    ap.add_argument("--step", type=float, default=50.0)
    ap.add_argument("--amp", type=float, default=80.0)
    ap.add_argument("--period", type=float, default=5.0)
    ap.add_argument("--uuid-prefix", default="GPU-fake-dcgm-")
    ap.add_argument("--shuffle", type=int, metavar="SEED")
    a = ap.parse_args()
    a.rng = random.Random(a.shuffle) if a.shuffle is not None else None
    mig = []
    for m in a.mig:
        g, i, prof = m.split(":", 2)
        mig.append((int(g), int(i), prof))
    a.mig = mig
    p = Plant(a)
    lock = threading.Lock()

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            if self.path != "/metrics":
                self.send_error(404)
                return
            with lock:
                body = render(p, a)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    ThreadingHTTPServer.allow_reuse_address = True
    srv = ThreadingHTTPServer((a.host, a.port), H)
    srv.daemon_threads = True
    if a.ready:
        with open(a.ready + ".tmp", "w") as f:
            f.write(f"{srv.server_address[1]}\n{p.epoch:.6f}\n")
        import os
        os.replace(a.ready + ".tmp", a.ready)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
