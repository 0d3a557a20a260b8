#!/usr/bin/python3
# A carma collect directory (samples.csv, nodes.csv, manifest.json, as src/collect/collector.c
# writes them: CRLF rows, 6-decimal fixed point) made up from a seeded random generator, for
# test_collect_report.sh: several nodes, each with a carma exporter target (RAPL-like channels,
# total and component domains, energy counters, a node total in nodes.csv) and on some a
# dcgm-exporter target (source dcgm, kind gpu); one node down for a while (blank rows), one
# single missed scrape, one exporter restart (its counters start again from 0), one node
# without nodes.csv rows, one estimated channel, and optionally a torn last line.
#
# usage: gen_collect.py DIR [--seed N] [--nodes K] [--duration S] [--interval I] [--torn]
# stdlib only.
import argparse
import json
import os
import random

p = argparse.ArgumentParser()
p.add_argument("dir")
p.add_argument("--seed", type=int, default=1)
p.add_argument("--nodes", type=int, default=4)
p.add_argument("--duration", type=float, default=120.0)
p.add_argument("--interval", type=float, default=1.0)
p.add_argument("--t0", type=float, default=1796000000.0)
p.add_argument("--torn", action="store_true")
a = p.parse_args()
rng = random.Random(a.seed)
os.makedirs(a.dir, exist_ok=True)

SH = ("schema_version,timestamp_unix,scrape_seq,node,target,channel,source,kind,domain,method,"
      "watts,joules_total")
NH = ("schema_version,timestamp_unix,scrape_seq,node,target,method,watts,joules_total,"
      "cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq")


def f6(x):
    s = "%.6f" % x
    return s


ncycles = int(a.duration / a.interval) + 1
nodes = []
for i in range(a.nodes):
    name = "node%02d" % i
    chans = [("rapl/package-0", "rapl", "cpu", "total", "measured", 80.0),
             ("rapl/package-0/core", "rapl", "cpu", "component", "measured", 50.0),
             ("rapl/dram-0", "rapl", "dram", "total", "measured", 12.0)]
    if i % 2 == 0:
        chans.append(("nvml/gpu0", "nvml", "gpu", "total", "measured", 250.0))
    if i == 1:
        chans.append(("model/fans", "model", "other", "total", "estimated", 15.0))
    nodes.append({
        "name": name,
        "target": "%s:9405" % name,
        "chans": chans,
        "dcgm": i % 3 != 2,  # dcgm on most nodes: added where no nvml channel
        "jit": rng.uniform(0.001, 0.050),
        "nodes_csv": i != a.nodes - 1 or a.nodes == 1,
    })
# events
down_node = 1 % a.nodes          # down 20 s from cycle 40 (blank rows)
down_from, down_to = int(40 / a.interval), int(60 / a.interval)
miss_node, miss_cycle = 0, int(25 / a.interval)   # one blank row
restart_node, restart_cycle = (2 % a.nodes), int(80 / a.interval)  # counters restart

rows, nrows = [SH], [NH]
state = {}
for nd in nodes:
    keys = [c[0] for c in nd["chans"]] + ["__node"] + ["dcgm/gpu0", "dcgm/gpu1"]
    state[nd["name"]] = {k: {"j": rng.uniform(1e3, 1e6), "w": None, "t": None} for k in keys}

for seq in range(ncycles):
    for nd in nodes:
        st = state[nd["name"]]
        t = a.t0 + seq * a.interval + nd["jit"] + rng.uniform(0, 0.004)
        tt = f6(t)
        tval = float(tt)
        down = (nd["name"] == nodes[down_node]["name"] and down_from <= seq < down_to) or \
               (nd is nodes[miss_node] and seq == miss_cycle)
        if nd is nodes[restart_node] and seq == restart_cycle:
            for k in st:
                st[k]["j"] = rng.uniform(0, 5.0)
                st[k]["t"] = None
        tgt = nd["target"]
        if down:
            rows.append("1,%s,%d,%s,%s,,,,,,," % (tt, seq, nd["name"], tgt))
            if nd["nodes_csv"]:
                nrows.append("1,%s,%d,%s,%s,,,,,,,," % (tt, seq, nd["name"], tgt))
            # no reading; the counters keep running (their next reading covers the outage)
        else:
            total_w = 0.0
            for (ch, src, kind, dom, meth, base) in nd["chans"]:
                w = float(f6(max(0.0, base + rng.gauss(0, base * 0.1))))
                s = st[ch]
                if s["t"] is not None:
                    s["j"] += (tval - s["t"]) * (w + s["w"]) / 2
                s["t"], s["w"] = tval, w
                jt = "" if (ch == "rapl/package-0/core" and seq % 7 == 3) else f6(s["j"])
                wt = "" if (ch == "rapl/dram-0" and seq % 11 == 5) else f6(w)
                rows.append("1,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s" %
                            (tt, seq, nd["name"], tgt, ch, src, kind, dom, meth, wt, jt))
                if dom == "total":
                    total_w += w
            if nd["nodes_csv"]:
                s = st["__node"]
                w = float(f6(total_w + 30.0))
                if s["t"] is not None:
                    s["j"] += (tval - s["t"]) * (w + s["w"]) / 2
                s["t"], s["w"] = tval, w
                u = rng.uniform(0.1, 0.9)
                nrows.append("1,%s,%d,%s,%s,measured,%s,%s,%s,%s,0.000000,%s,0.000000" %
                             (tt, seq, nd["name"], tgt, f6(w), f6(s["j"]), f6(u), f6(u * 0.8),
                              f6(u * 0.2)))
        if nd["dcgm"]:
            dt = f6(t + 0.0123)
            dval = float(dt)
            dtgt = "%s:9400" % nd["name"]
            if down:
                rows.append("1,%s,%d,%s,%s,,,,,,," % (dt, seq, nd["name"], dtgt))
            else:
                for g in ("dcgm/gpu0", "dcgm/gpu1"):
                    w = float(f6(200.0 + rng.gauss(0, 30)))
                    s = st[g]
                    if s["t"] is not None:
                        s["j"] += (dval - s["t"]) * (w + s["w"]) / 2
                    s["t"], s["w"] = dval, w
                    rows.append("1,%s,%d,%s,%s,%s,dcgm,gpu,total,measured,%s,%s" %
                                (dt, seq, nd["name"], dtgt, g, f6(w), f6(s["j"])))

body = "\r\n".join(rows) + "\r\n"
if a.torn:
    body += "1,%s,%d,node00,node00:9405,rapl/pack" % (f6(a.t0 + ncycles * a.interval), ncycles)
with open(os.path.join(a.dir, "samples.csv"), "w", newline="") as f:
    f.write(body)
with open(os.path.join(a.dir, "nodes.csv"), "w", newline="") as f:
    f.write("\r\n".join(nrows) + "\r\n")
man = {"schema_version": 1, "producer": "carma collect", "carma_version": "test",
       "options": {"interval_s": a.interval}, "job_id": None, "status": "complete"}
with open(os.path.join(a.dir, "manifest.json"), "w") as f:
    json.dump(man, f, indent=2)
    f.write("\n")
