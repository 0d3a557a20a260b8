#!/usr/bin/python3
# A reference for `carma report DIR` of a carma collect directory: the numbers docs/report.md
# ("carma collect directories") defines, computed independently with numpy from the CSV text
# (np.interp at the window edges, np.percentile, plain loops for the covered steps), to compare
# with `carma report --json` within a relative 1e-9. It is a transcription of the description,
# not of src/report/collectreport.c.
#
# usage: collect_report_ref.py DIR [--window NAME=START,END (Unix s)]... [--windows-json FILE]
#                              [--max-gap S] [--pue P]
# prints the reference as JSON (the keys of carma's report that it covers).
import argparse
import csv
import io
import json
import math
import os

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("dir")
p.add_argument("--window", action="append", default=[])
p.add_argument("--windows-json")
p.add_argument("--max-gap", type=float)
p.add_argument("--pue", type=float, default=1.0)
a = p.parse_args()

man = json.load(open(os.path.join(a.dir, "manifest.json")))
interval = man.get("options", {}).get("interval_s")
G = a.max_gap if a.max_gap else max(3.0, 3 * interval) if interval else 3.0


def read(name):
    path = os.path.join(a.dir, name)
    if not os.path.exists(path):
        return None
    text = open(path, newline="").read()
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]  # a torn last line is skipped
    return list(csv.DictReader(io.StringIO(text, newline="")))


def fl(s):
    return float(s) if s != "" else math.nan


class Series:
    def __init__(self, node, target, channel, source, kind, domain):
        self.node, self.target, self.channel = node, target, channel
        self.source, self.kind, self.domain = source, kind, domain
        self.t, self.w, self.j, self.methods = [], [], [], set()


def load(rows, nodes_csv):
    groups, series, order = {}, {}, []
    for r in rows:
        key = (r["node"], r["target"])
        g = groups.setdefault(key, {"t": [], "blank": [], "seq": None})
        t = float(r["timestamp_unix"])
        if nodes_csv:
            blank = r["method"] == "" and r["watts"] == "" and r["joules_total"] == ""
        else:
            blank = r["channel"] == ""
        if blank:
            g["blank"].append(t)
            g["seq"] = None
            continue
        if g["seq"] != r["scrape_seq"] or g["t"][-1] != t:
            g["t"].append(t)
            g["seq"] = r["scrape_seq"]
        if nodes_csv:
            ck = (key, "node")
            if ck not in series:
                series[ck] = Series(r["node"], r["target"], "node", "carma", "node", "total")
                order.append(ck)
        else:
            ck = (key, r["channel"])
            if ck not in series:
                series[ck] = Series(r["node"], r["target"], r["channel"], r["source"], r["kind"],
                                    r["domain"])
                order.append(ck)
        s = series[ck]
        s.t.append(t)
        s.w.append(fl(r["watts"]))
        s.j.append(fl(r["joules_total"]))
        if r["method"]:
            s.methods.add(r["method"])
    return groups, [series[k] for k in order]


def view(t, v, a_, b_):
    t, v = np.asarray(t, float), np.asarray(v, float)
    ok = np.isfinite(v)
    t, v = t[ok], v[ok]
    lo = np.searchsorted(t, a_, "left")
    hi = np.searchsorted(t, b_, "right")
    i0 = max(lo - 1, 0)
    e1 = min(hi + 1, len(t))
    return t[i0:e1], v[i0:e1]


def segments(t):
    segs, i = [], 0
    while i < len(t):
        j = i
        while j + 1 < len(t) and t[j + 1] - t[j] <= G:
            j += 1
        segs.append((i, j))
        i = j + 1
    return segs


def trap(t, v, a_, b_):
    E = cov = 0.0
    for i, j in segments(t):
        if j == i:
            continue
        s, e = max(a_, t[i]), min(b_, t[j])
        if e <= s:
            continue
        cov += e - s
        for k in range(i, j):
            x0, x1 = max(t[k], s), min(t[k + 1], e)
            if x1 <= x0:
                continue
            v0, v1 = np.interp([x0, x1], t[k:k + 2], v[k:k + 2])
            E += (x1 - x0) * (v0 + v1) / 2
    return E, cov


def counter(t, v, a_, b_):
    E = cov = 0.0
    resets = 0
    for i, j in segments(t):
        if j == i:
            continue
        s, e = max(a_, t[i]), min(b_, t[j])
        if e <= s:
            continue
        cov += e - s
        for k in range(i, j):
            dt = t[k + 1] - t[k]
            if v[k + 1] < v[k]:
                if t[k + 1] > a_ and t[k] < b_:
                    resets += 1
                continue
            if dt <= 0:
                continue
            x0, x1 = max(t[k], s), min(t[k + 1], e)
            if x1 > x0:
                E += (v[k + 1] - v[k]) / dt * (x1 - x0)
    return E, cov, resets


def part(s, a_, b_):
    tw, vw = view(s.t, s.w, a_, b_)
    E, cov = trap(tw, vw, a_, b_)
    out = {"energy_j": E, "trapezoid_j": E, "covered_s": cov, "energy_source": "trapezoid",
           "resets": 0, "view": (tw, vw)}
    tj, vj = view(s.t, s.j, a_, b_)
    if len(tj):
        Ec, covc, res = counter(tj, vj, a_, b_)
        if covc > 0:
            out.update(energy_j=Ec, covered_s=covc, energy_source="counter", resets=res)
    out["avg_power_w"] = out["energy_j"] / out["covered_s"] if out["covered_s"] > 0 else None
    return out


def stats(views, a_, b_):
    inc = [(t, v) for (t, v) in views if np.any((t >= a_) & (t <= b_))]
    if not inc:
        return {"stat_samples": 0}
    gt, gv = inc[0]
    vals = []
    for k in np.nonzero((gt >= a_) & (gt <= b_))[0]:
        x, tot, ok = gt[k], gv[k], True
        for (t, v) in inc[1:]:
            i = np.searchsorted(t, x, "right") - 1
            if i < 0:
                ok = False
                break
            if t[i] == x:
                tot += v[i]
            elif i + 1 < len(t) and t[i + 1] - t[i] <= G:
                tot += float(np.interp(x, t, v))
            else:
                ok = False
                break
        if ok:
            vals.append(tot)
    v = np.asarray(vals)
    st = {"stat_samples": len(v)}
    if len(v):
        st.update(mean_w=float(np.mean(v)), min_w=float(np.min(v)), max_w=float(np.max(v)))
        for q in (5, 25, 50, 75, 95, 99):
            st["p%d_w" % q] = float(np.percentile(v, q))
    return st


groups, chans = load(read("samples.csv"), False)
nrows = read("nodes.csv")
ngroups, nchans = load(nrows, True) if nrows is not None else ({}, [])
names = sorted({g[0] for g in groups} | {g[0] for g in ngroups})

# the node rule
node_parts = {}
for n in names:
    parts = [s for s in nchans if s.node == n]
    carma_gpu = any(s.node == n and s.source != "dcgm" and s.kind == "gpu" for s in chans)
    from_nodes = bool(parts)
    for s in chans:
        if s.node != n:
            continue
        if s.source == "dcgm":
            if not carma_gpu:
                parts.append(s)
        elif not from_nodes and s.domain == "total":
            parts.append(s)
    node_parts[n] = parts


def in_kind(s):
    if s.source == "dcgm":
        return s in node_parts[s.node]
    return s.domain == "total"


t0 = min(g["t"][0] for g in groups.values() if g["t"])
t1 = max(g["t"][-1] for g in groups.values() if g["t"])
wins = [("run", t0, t1, None)]
for spec in a.window:
    name, rest = spec.split("=", 1)
    s, e = rest.split(",")
    wins.append((name, float(s), float(e), None))
if a.windows_json:
    for w in json.load(open(a.windows_json)):
        wins.append((w["name"], float(w["start"]), float(w["end"]), w.get("tokens")))

out = {"max_gap_s": G, "windows": [], "coverage": []}
for (name, A, B, tokens) in wins:
    W = {"name": name, "start_unix": A, "end_unix": B, "channels": [], "nodes": [], "kinds": []}
    res = {}
    for s in chans + nchans:
        res[id(s)] = part(s, A, B)
    for s in chans:
        r = dict(res[id(s)])
        views = [r.pop("view")]
        r.update(stats(views, A, B))
        r.update(node=s.node, target=s.target, channel=s.channel)
        W["channels"].append(r)
    job_e = job_avg = 0.0
    job_views = []
    for n in names:
        ps = node_parts[n]
        E = sum(res[id(s)]["energy_j"] for s in ps)
        avgs = [res[id(s)]["avg_power_w"] for s in ps if res[id(s)]["avg_power_w"] is not None]
        avg = sum(avgs) if avgs else None
        views = [res[id(s)]["view"] for s in ps]
        job_views += views
        nd = {"node": n, "energy_j": E, "avg_power_w": avg,
              "resets": sum(res[id(s)]["resets"] for s in ps)}
        nd.update(stats(views, A, B))
        W["nodes"].append(nd)
        job_e += E
        job_avg += avg or 0.0
    for k in ("cpu", "dram", "soc", "gpu", "system", "other"):
        ks = [s for s in chans if in_kind(s) and s.kind == k]
        if not ks:
            continue
        kd = {"kind": k, "energy_j": sum(res[id(s)]["energy_j"] for s in ks),
              "avg_power_w": sum(res[id(s)]["avg_power_w"] or 0.0 for s in ks)}
        kd.update(stats([res[id(s)]["view"] for s in ks], A, B))
        W["kinds"].append(kd)
    job = {"energy_j": job_e, "avg_power_w": job_avg}
    job.update(stats(job_views, A, B))
    if tokens:
        job["j_per_token"] = job_e / tokens
        job["tokens_per_s_per_w"] = tokens / (B - A) / job_avg
    W["job"] = job
    out["windows"].append(W)
for n in names:
    gs = [g for k, g in groups.items() if k[0] == n]
    ts = [g["t"] for g in gs if g["t"]]
    gap = max([max(np.diff(t)) if len(t) > 1 else 0.0 for t in ts] + [0.0])
    out["coverage"].append({"node": n, "first_sample_unix": min(t[0] for t in ts),
                            "last_sample_unix": max(t[-1] for t in ts), "largest_gap_s": gap,
                            "blank_rows": sum(len(g["blank"]) for g in gs)})
print(json.dumps(out, indent=1))
