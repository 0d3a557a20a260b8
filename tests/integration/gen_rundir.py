#!/usr/bin/env python3
"""Writes a synthetic `carma run` directory of any length, for the HTML report's tests and
benchmark (a 24-hour run at 100 ms is 864 000 ticks).

    gen_rundir.py DIR SECONDS [INTERVAL_S]

Three channels (two CPU packages measured, one GPU estimated), two workloads (`train` for the
whole run, `eval` for its middle third) and idle; attribution.csv splits each package's and
the GPU's energy per tick among them. The files have the columns and JSON fields that
`carma report` reads (docs/formats.md); report.json's figures are the sums of the rows.
"""
import json
import math
import os
import sys


def main():
    out, seconds = sys.argv[1], float(sys.argv[2])
    dt = float(sys.argv[3]) if len(sys.argv) > 3 else 0.1
    os.makedirs(out, exist_ok=True)
    t0 = 1796000000.0
    n = int(round(seconds / dt)) + 1
    chans = [("rapl/package-0", "rapl", "cpu", "measured"),
             ("rapl/package-1", "rapl", "cpu", "measured"),
             ("model/gpu0", "model", "gpu", "estimated")]
    e_start, e_end = t0 + seconds / 3, t0 + 2 * seconds / 3
    cum = [0.0] * len(chans)
    jobs = {"train": 0.0, "eval": 0.0, "idle": 0.0}
    with open(f"{out}/samples.csv", "w", newline="") as s, \
            open(f"{out}/attribution.csv", "w", newline="") as a:
        s.write("timestamp_unix,timestamp_local,channel,source,kind,domain,method,watts,"
                "joules_total\r\n")
        a.write("timestamp_unix,channel,job,joules\r\n")
        for i in range(n):
            t = t0 + i * dt
            ts = f"{t:.6f}"
            for c, (name, src, kind, meth) in enumerate(chans):
                if i == 0:
                    s.write(f"{ts},,{name},{src},{kind},total,{meth},,0\r\n")
                    continue
                w = 60 + 40 * math.sin(i / 600.0 + c) + (30 if e_start <= t < e_end else 0)
                w = round(w, 6)
                j = round(w * dt, 6)
                cum[c] += j
                s.write(f"{ts},,{name},{src},{kind},total,{meth},{w:.6f},{cum[c]:.6f}\r\n")
                idle = round(min(j, 50 * dt), 6)
                rest = round(j - idle, 6)
                if e_start <= t < e_end:
                    ev = round(rest / 3, 6)
                    parts = [("train", round(rest - ev, 6)), ("eval", ev), ("idle", idle)]
                else:
                    parts = [("train", rest), ("idle", idle)]
                for job, x in parts:
                    if x != 0:
                        a.write(f"{ts},{name},{job},{x:.6f}\r\n")
                        jobs[job] += x
    t1 = t0 + (n - 1) * dt
    manifest = {"schema_version": 1, "producer": "carma run", "carma_version": "gen",
                "host": {"hostname": "gen"},
                "options": {"interval_s": dt, "idle_policy": "idle", "cgroups": False},
                "channels": [{"name": c[0], "source": c[1], "kind": c[2], "domain": "total",
                              "method": c[3], "form": "counter", "path": "generated"}
                             for c in chans], "status": "complete"}
    workloads = {"workloads": [
        {"name": "train", "pids": [100], "pgid": 100, "cgroup": None, "start_unix": t0,
         "end_unix": t1, "exit_status": 0, "signal": None, "timed_out": False},
        {"name": "eval", "pids": [200], "pgid": 200, "cgroup": None, "start_unix": e_start,
         "end_unix": e_end, "exit_status": 0, "signal": None, "timed_out": False}]}
    total = sum(cum)
    g = 475.0
    report = {"experiment": "generated", "run_dir": out, "duration_s": t1 - t0,
              "attribution": {"idle_policy": "idle"},
              "workloads": [{"name": k, "exit_status": 0, "timed_out": False,
                             "duration_s": (t1 - t0) if k == "train" else (e_end - e_start),
                             "energy_j": jobs[k], "energy_by_kind_j": {},
                             "avg_power_w": jobs[k] / (t1 - t0),
                             "operational_g_co2e": jobs[k] / 3.6e6 * g,
                             "embodied_g_co2e": 0.0, "embodied": [], "method": "measured"}
                            for k in ("train", "eval")],
              "gpus": [], "idle": {"energy_j": jobs["idle"]}, "other": {"energy_j": 0.0},
              "unattributed": {"energy_j": 0.0}, "total_energy_j": total,
              "node_channels": [c[0] for c in chans],
              "carbon": {"g_per_kwh": g, "intensity_source": "generated", "pue": 1.0,
                         "operational_g_co2e": total / 3.6e6 * g, "embodied_g_co2e": 0.0}}
    for name, obj in (("manifest.json", manifest), ("workloads.json", workloads),
                      ("report.json", report)):
        with open(f"{out}/{name}", "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
