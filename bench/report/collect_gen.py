#!/usr/bin/python3
"""Writes a large `carma collect` directory for bench/report/collect.sh.

usage: collect_gen.py DIR [NODES] [CHANNELS] [SECONDS] [WINDOWS]

DIR/samples.csv (collect schema 1) holds one row per channel per node per scrape, one scrape a
second for SECONDS (default 86400) on NODES nodes (default 16) of CHANNELS channels (default
16: 2 CPU packages, 2 DRAM, 8 GPUs, 4 CPU components), as `carma collect` writes it (CRLF,
6 decimals for the timestamp, watts and joules_total fixed point, the nodes of one cycle
milliseconds apart). Power is a deterministic function of time (a slow wave per channel, in
mW steps) and joules_total is its exact trapezoid integral, so a reader's counter and gauge
figures agree. DIR/nodes.csv holds the node totals (the sum of the total domains), and
DIR/manifest.json is what `carma collect` writes at the end. DIR/windows.csv holds WINDOWS
(default 10) windows tiling the run's middle, for `carma report --windows`.
Standard library only; about a minute for the default 22 M rows.
"""
import json
import math
import os
import sys

T0 = 1785168000.0


def fx(v):
    """A number as the collector writes it: fixed point, up to 6 decimals, no trailing zeros."""
    t = f"{v:.6f}".rstrip("0")
    return t[:-1] if t.endswith(".") else t


def main():
    out = sys.argv[1]
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    nch = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    secs = int(sys.argv[4]) if len(sys.argv) > 4 else 86400
    nwin = int(sys.argv[5]) if len(sys.argv) > 5 else 10
    os.makedirs(out, exist_ok=True)
    # (channel, source, kind, domain) per channel index
    layout = []
    for i in range(nch):
        if i < 2:
            layout.append((f"rapl/package-{i}", "rapl", "cpu", "total"))
        elif i < 4:
            layout.append((f"rapl/dram-{i - 2}", "rapl", "dram", "total"))
        elif i < 12:
            layout.append((f"nvml/gpu{i - 4}", "nvml", "gpu", "total"))
        else:
            layout.append((f"rapl/package-{(i - 12) % 2}/core-{i - 12}", "rapl", "cpu",
                           "component"))
    names = [f"node{n:02d}" for n in range(nodes)]
    prefix = []  # per (node, channel): the constant middle of the row
    for n, name in enumerate(names):
        prefix.append([f"{name},{name}:9405,{c},{s},{k},{d},measured," for c, s, k, d in layout])
    base = [[(60.0 if k != "gpu" else 300.0) + 7.0 * n + 3.0 * c
             for c, (_, _, k, _) in enumerate(layout)] for n in range(nodes)]
    amp = [[0.25 * b for b in row] for row in base]
    period = [[600.0 + 37.0 * c + 11.0 * n for c in range(nch)] for n in range(nodes)]
    joules = [[0.0] * nch for _ in range(nodes)]
    prev = [[None] * nch for _ in range(nodes)]
    node_j = [0.0] * nodes
    node_prev = [None] * nodes
    total = [d == "total" for _, _, _, d in layout]

    with open(os.path.join(out, "samples.csv"), "w", newline="") as f, \
            open(os.path.join(out, "nodes.csv"), "w", newline="") as g:
        f.write("schema_version,timestamp_unix,scrape_seq,node,target,channel,source,kind,"
                "domain,method,watts,joules_total\r\n")
        g.write("schema_version,timestamp_unix,scrape_seq,node,target,method,watts,joules_total,"
                "cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq\r\n")
        for seq in range(secs):
            rows = []
            nrows = []
            for n in range(nodes):
                ts = T0 + seq + 0.001 * (n + 1)
                tcell = f"1,{ts:.6f},{seq},"
                bn, an, pn, jn, pv, pre = base[n], amp[n], period[n], joules[n], prev[n], prefix[n]
                sum_w = 0.0
                for c in range(nch):
                    w = round(bn[c] + an[c] * math.sin(2 * math.pi * ts / pn[c]), 3)
                    if pv[c] is not None:
                        jn[c] += 0.5 * (w + pv[c][1]) * (ts - pv[c][0])
                    pv[c] = (ts, w)
                    if total[c]:
                        sum_w += w
                    rows.append(f"{tcell}{pre[c]}{fx(w)},{fx(jn[c])}\r\n")
                if node_prev[n] is not None:
                    node_j[n] += 0.5 * (sum_w + node_prev[n][1]) * (ts - node_prev[n][0])
                node_prev[n] = (ts, sum_w)
                nrows.append(f"{tcell}{names[n]},{names[n]}:9405,measured,{fx(sum_w)},"
                             f"{fx(node_j[n])},0.5,0.4,0,0.1,0\r\n")
            f.write("".join(rows))
            g.write("".join(nrows))

    end = T0 + secs
    manifest = {
        "schema_version": 1, "producer": "carma collect", "carma_version": "bench",
        "host": "head", "schema_versions": {"samples_csv": 1, "nodes_csv": 1},
        "options": {"interval_s": 1.0, "timeout_s": 0.95, "duration_s": float(secs),
                    "required": False, "srt_cpu": False, "max_body_bytes": 16777216,
                    "backoff_max_cycles": 30},
        "job_id": None,
        "targets": [{"target": f"{n}:9405", "url": f"http://{n}:9405/metrics", "node": n,
                     "node_label": n, "scrape_count": secs, "error_count": 0,
                     "skipped_count": 0, "last_error": None, "last_error_unix": None,
                     "up": True} for n in names],
        "nodes": names, "started_unix": T0, "stopped_unix": end, "cycles": secs,
        "missed_cycles": 0, "sample_row_count": secs * nodes * nch, "status": "complete",
        "stop_reason": "duration", "interruption": None, "reason_codes": [],
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    # windows tiling the middle 80 % of the run
    span = 0.8 * secs / nwin
    with open(os.path.join(out, "windows.csv"), "w") as f:
        f.write("name,start,end\n")
        for i in range(nwin):
            s = T0 + 0.1 * secs + i * span
            f.write(f"w{i},{s:.3f},{s + span:.3f}\n")


if __name__ == "__main__":
    main()
