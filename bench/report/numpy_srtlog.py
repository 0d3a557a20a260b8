#!/usr/bin/python3
"""The numpy peer of `bench_report run` (and of `carma report DIR --edges snap`).

usage: numpy_srtlog.py DIR OUT

Does what srt-slurm's power_energy_report does with a GPU log directory (srt-slurm.md §6.2-§6.5),
in numpy rather than its csv module (the peer is given its best chance): finds the sa-bench
result JSONs and reads their windows, reads the roles from power/manifest.json, reads
power/samples.csv with np.loadtxt, builds the series per device (a stable sort by time), per
node and per (role, host) (rows at bit-identical timestamps summed in file order, as the
report's dict does: np.unique + np.bincount), and for every window and every series computes
srt-slurm's windowed_energy: nearest-sample snapping, np.trapz, np.mean/min/max, np.percentile.
Writes the same lines as `bench_report run` ("snap <label> <start> <end> <joules> <avg> <mean>
<min> <p5> <p50> <p95> <p99> <max> <n>", floats as repr; devices by (host, index), then nodes by
host, then roles by (role, host), per window in concurrency order) and prints the phase times as
JSON on stdout.
"""
import glob
import json
import os
import re
import sys
import time

import numpy as np

MAX_SAMPLE_GAP_SECONDS = 3.0
trapz = getattr(np, "trapezoid", None) or np.trapz


def windowed_energy(label, times, watts, start, end):
    n = len(times)
    if n == 0:
        raise ValueError(f"{label}: no power samples available")

    def nearest(t):
        i = int(np.searchsorted(times, t, side="left"))
        if i <= 0:
            return 0
        if i >= n:
            return n - 1
        return i - 1 if (t - times[i - 1]) <= (times[i] - t) else i

    si, ei = nearest(start), nearest(end)
    gap = abs(times[si] - start)
    if gap > MAX_SAMPLE_GAP_SECONDS:
        raise ValueError(f"{label}: nearest sample to window start is {gap:.3f}s away, no coverage")
    gap = abs(times[ei] - end)
    if gap > MAX_SAMPLE_GAP_SECONDS:
        raise ValueError(f"{label}: nearest sample to window end is {gap:.3f}s away, no coverage")
    if ei <= si:
        raise ValueError(f"{label}: window narrower than the sample spacing")
    w = watts[si:ei + 1]
    joules = float(trapz(w, times[si:ei + 1]))
    duration = end - start
    p5, p50, p95, p99 = (float(x) for x in np.percentile(w, [5, 50, 95, 99]))
    return [joules, joules / duration if duration > 0 else 0.0, float(np.mean(w)),
            float(np.min(w)), p5, p50, p95, p99, float(np.max(w)), ei - si + 1]


def summed(t, w):
    """A dict ts -> sum of w in file order from 0.0, sorted by ts (unique, so any sort)."""
    keys, inv = np.unique(t, return_inverse=True)
    return keys, np.bincount(inv, weights=w, minlength=len(keys))


def sa_bench_windows(log_dir):
    """The sa-bench windows (start, end) in concurrency order (§6.2, §6.3)."""
    sources = []
    for p in glob.glob(os.path.join(log_dir, "**/sa-bench_*/results_concurrency_*.json"),
                       recursive=True):
        m = re.match(r"^results_concurrency_(\d+)_", os.path.basename(p))
        if m:
            sources.append((int(m.group(1)), p))
    sources.sort()
    windows = []
    for _, p in sources:
        d = json.load(open(p))
        windows.append((float(d["benchmark_start_time_unix"]), float(d["benchmark_end_time_unix"])))
    return windows


def snap_lines(windows, series):
    """windowed_energy of every (window, series): the output lines and the count that failed."""
    lines, failed = [], 0
    for start, end in windows:
        for label, t, w in series:
            try:
                r = windowed_energy(label, t, w, start, end)
            except ValueError as e:
                lines.append(f"snap error {e}")
                failed += 1
                continue
            lines.append(" ".join(["snap", label, repr(start), repr(end)]
                                  + [repr(x) for x in r[:9]] + [str(r[9])]))
    return lines, failed


def main():
    log_dir, out_path = sys.argv[1:3]
    t0 = time.perf_counter()
    windows = sa_bench_windows(log_dir)
    csv_path = os.path.join(log_dir, "power", "samples.csv")
    manifest = json.load(open(os.path.join(log_dir, "power", "manifest.json")))
    roles = {}
    for dev in manifest.get("expected_devices", []):
        roles[(dev["hostname"], dev["gpu_index"])] = sorted(
            {a["worker_role"] for a in dev["assignments"]})
    t1 = time.perf_counter()
    # the CSV
    with open(csv_path) as f:
        head = f.readline().strip().split(",")
    ct, ch, cg, cw = (head.index(c) for c in ("timestamp_unix", "hostname", "gpu_index",
                                                "power_w"))
    num = np.loadtxt(csv_path, delimiter=",", skiprows=1, usecols=(ct, cg, cw),
                     dtype=np.float64)
    hosts = np.loadtxt(csv_path, delimiter=",", skiprows=1, usecols=(ch,), dtype=str)
    t2 = time.perf_counter()
    # series (§6.4)
    names, hidx = np.unique(hosts, return_inverse=True)
    ts, gpu, watts = num[:, 0], num[:, 1].astype(np.int64), num[:, 2]
    key = hidx.astype(np.int64) * 65536 + gpu
    order = np.lexsort((ts, key))  # by key, then time; stable: file order on ties
    key_s = key[order]
    t_s = np.ascontiguousarray(ts[order])
    w_s = np.ascontiguousarray(watts[order])
    bounds = np.flatnonzero(np.diff(key_s)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(key_s)]))
    devices, dev_keys = [], []
    for a, b in zip(starts, ends):
        k = int(key_s[a])
        devices.append((f"gpu/{names[k // 65536]}/gpu{k % 65536}", t_s[a:b], w_s[a:b]))
        dev_keys.append(k)
    nodes = []
    for h, name in enumerate(names):
        sel = hidx == h
        nt, nw = summed(ts[sel], watts[sel])
        nodes.append((f"gpu/{name}", nt, nw))
    role_rows = {}
    for k in dev_keys:
        for role in roles.get((str(names[k // 65536]), k % 65536), []):
            role_rows.setdefault((role, str(names[k // 65536])), []).append(k)
    role_series = []
    for (role, host), ks in sorted(role_rows.items()):
        sel = np.isin(key, ks)
        rt, rw = summed(ts[sel], watts[sel])
        role_series.append((f"gpu/{host}/{role}", rt, rw))
    series = devices + nodes + role_series
    t3 = time.perf_counter()
    # windows x series (§6.5)
    lines, failed = snap_lines(windows, series)
    t4 = time.perf_counter()
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(json.dumps({"rows": int(len(num)), "devices": len(devices), "nodes": len(nodes),
                      "roles": len(role_series), "windows": len(windows),
                      "discover_s": t1 - t0, "load_s": t2 - t1, "series_s": t3 - t2,
                      "snap_s": t4 - t3, "failed": failed,
                      "held": int(sum(len(s[1]) for s in series))}))


if __name__ == "__main__":
    main()
