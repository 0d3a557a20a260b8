#!/usr/bin/python3
"""The pandas peer of `bench_report run` (and of `carma report DIR --edges snap`).

usage: pandas_srtlog.py DIR OUT

The script a pandas user would write for srt-slurm's windowed GPU energy of a log directory:
the sa-bench windows from the result JSONs, the roles from power/manifest.json,
`pd.read_csv(power/samples.csv, usecols=...)`, then per device (groupby host and GPU), per node
(groupby host and timestamp, summed) and per (role, host) a sorted series, and for every window
and series srt-slurm's windowed_energy: nearest-sample snapping (searchsorted), a numpy
trapezoid, mean/min/max and np.percentile. Writes the lines numpy_srtlog.py writes ("snap
<label> <start> <end> <joules> <avg> <mean> <min> <p5> <p50> <p95> <p99> <max> <n>") and prints
the phase times as JSON on stdout.
"""
import json
import os
import sys
import time

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the same discovery and arithmetic (srt-slurm's) as the numpy peer
from numpy_srtlog import sa_bench_windows, snap_lines  # noqa: E402


def main():
    log_dir, out_path = sys.argv[1:3]
    t0 = time.perf_counter()
    windows = sa_bench_windows(log_dir)
    manifest = json.load(open(os.path.join(log_dir, "power", "manifest.json")))
    roles = {}
    for dev in manifest.get("expected_devices", []):
        for a in dev["assignments"]:
            roles.setdefault(a["worker_role"], set()).add((dev["hostname"], dev["gpu_index"]))
    t1 = time.perf_counter()
    df = pd.read_csv(os.path.join(log_dir, "power", "samples.csv"),
                     usecols=["timestamp_unix", "hostname", "gpu_index", "power_w"],
                     dtype={"hostname": str})
    t2 = time.perf_counter()
    series = []
    df = df.sort_values(["hostname", "gpu_index", "timestamp_unix"], kind="stable")
    for (host, gpu), g in df.groupby(["hostname", "gpu_index"], sort=True):
        series.append((f"gpu/{host}/gpu{gpu}", g["timestamp_unix"].to_numpy(),
                       g["power_w"].to_numpy()))
    for host, g in df.groupby("hostname", sort=True):
        s = g.groupby("timestamp_unix", sort=True)["power_w"].sum()
        series.append((f"gpu/{host}", s.index.to_numpy(), s.to_numpy()))
    keys = pd.MultiIndex.from_frame(df[["hostname", "gpu_index"]])
    for role in sorted(roles):
        sel = df[keys.isin(list(roles[role]))]
        for host, g in sel.groupby("hostname", sort=True):
            s = g.groupby("timestamp_unix", sort=True)["power_w"].sum()
            series.append((f"gpu/{host}/{role}", s.index.to_numpy(), s.to_numpy()))
    t3 = time.perf_counter()
    lines, failed = snap_lines(windows, series)
    t4 = time.perf_counter()
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(json.dumps({"rows": int(len(df)), "series": len(series), "windows": len(windows),
                      "discover_s": t1 - t0, "load_s": t2 - t1, "series_s": t3 - t2,
                      "snap_s": t4 - t3, "failed": failed,
                      "held": int(sum(len(s[1]) for s in series)),
                      "pandas": pd.__version__}))


if __name__ == "__main__":
    main()
