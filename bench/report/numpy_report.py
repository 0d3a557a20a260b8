#!/usr/bin/python3
"""The numpy peer of bench_series: srt-slurm's windowed energy per GPU device, in numpy.

usage: numpy_report.py CSV WINDOWS OUT

Reads timestamp_unix, hostname, gpu_index, power_w of a samples.csv with np.loadtxt (numpy's C
reader, far faster than the csv module srt-slurm itself uses: the peer is given its best
chance), groups the rows per (hostname, gpu_index) with a stable sort by time, and for every
window "start end" in WINDOWS and every device computes srt-slurm's windowed_energy
(srt-slurm.md §6.5): nearest-sample snapping, np.trapz, np.mean/min/max, np.percentile.
Writes the same lines as `bench_series run` ("snap <label> <start> <end> <joules> <avg>
<mean> <min> <p5> <p50> <p95> <p99> <max> <n>", floats as repr) and prints the phase times as
JSON on stdout.
"""
import json
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


def main():
    csv_path, win_path, out_path = sys.argv[1:4]
    windows = [tuple(float(x) for x in line.split()) for line in open(win_path) if line.strip()]
    t0 = time.perf_counter()
    with open(csv_path) as f:
        head = f.readline().strip().split(",")
    ct, ch, cg, cw = (head.index(c) for c in ("timestamp_unix", "hostname", "gpu_index",
                                                "power_w"))
    num = np.loadtxt(csv_path, delimiter=",", skiprows=1, usecols=(ct, cg, cw),
                     dtype=np.float64)
    hosts = np.loadtxt(csv_path, delimiter=",", skiprows=1, usecols=(ch,), dtype=str)
    t1 = time.perf_counter()
    names, hidx = np.unique(hosts, return_inverse=True)
    gpu = num[:, 1].astype(np.int64)
    key = hidx.astype(np.int64) * 65536 + gpu
    order = np.lexsort((num[:, 0], key))  # by key, then time; stable: file order on ties
    key_s = key[order]
    t_s = np.ascontiguousarray(num[order, 0])
    w_s = np.ascontiguousarray(num[order, 2])
    bounds = np.flatnonzero(np.diff(key_s)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(key_s)]))
    devices = []
    for a, b in zip(starts, ends):
        k = int(key_s[a])
        devices.append((f"gpu/{names[k // 65536]}/gpu{k % 65536}", t_s[a:b], w_s[a:b]))
    t2 = time.perf_counter()
    lines, failed = [], 0
    for start, end in windows:
        for label, t, w in devices:
            try:
                r = windowed_energy(label, t, w, start, end)
            except ValueError as e:
                lines.append(f"snap error {e}")
                failed += 1
                continue
            lines.append(" ".join(["snap", label, repr(start), repr(end)]
                                  + [repr(x) for x in r[:9]] + [str(r[9])]))
    t3 = time.perf_counter()
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(json.dumps({"rows": int(len(num)), "devices": len(devices), "windows": len(windows),
                      "load_s": t1 - t0, "sort_s": t2 - t1, "snap_s": t3 - t2,
                      "failed": failed}))


if __name__ == "__main__":
    main()
