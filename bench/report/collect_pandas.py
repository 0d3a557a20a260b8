#!/usr/bin/python3
"""The pandas peer of `carma report DIR` on a `carma collect` directory (bench/report/collect.sh).

usage: collect_pandas.py DIR WINDOWS_CSV OUT_JSON

The script a user would write, given its best chance (vectorised, no per-group Python
function): pandas.read_csv of DIR/samples.csv (the columns it needs, typed), rows with a
number kept, sorted by (node, target, channel, time); then for the whole run and for every
window of WINDOWS_CSV (name,start,end): the samples inside the window, per channel the
trapezoid of watts (numpy over the consecutive pairs of a channel, summed by groupby), the
joules_total rise (the sum of the non-negative steps: a counter reset is not integrated),
percentiles p5..p99 and the max of watts (groupby quantile); per node and per kind the sum of
the total-domain channels. Writes the figures as JSON to OUT_JSON and prints the phase times
as JSON on stdout.
"""
import json
import sys
import time

import numpy as np
import pandas as pd

QS = [0.05, 0.25, 0.5, 0.75, 0.95, 0.99]


def main():
    d, windows_csv, out = sys.argv[1:4]
    t0 = time.perf_counter()
    df = pd.read_csv(
        f"{d}/samples.csv",
        usecols=["timestamp_unix", "node", "target", "channel", "kind", "domain", "watts",
                 "joules_total"],
        dtype={"timestamp_unix": "float64", "node": "category", "target": "category",
               "channel": "category", "kind": "category", "domain": "category",
               "watts": "float64", "joules_total": "float64"},
    )
    t_read = time.perf_counter()
    df = df.dropna(subset=["watts"])
    df = df.sort_values(["node", "target", "channel", "timestamp_unix"], kind="stable")
    key = ["node", "target", "channel"]
    wins = [("run", float(df.timestamp_unix.min()), float(df.timestamp_unix.max()))]
    w = pd.read_csv(windows_csv)
    wins += [(str(r.name), float(r.start), float(r.end)) for r in w.itertuples()]
    result = []
    for name, s, e in wins:
        sub = df[(df.timestamp_unix >= s) & (df.timestamp_unix <= e)]
        same = (sub[key] == sub[key].shift()).all(axis=1).to_numpy()
        t = sub.timestamp_unix.to_numpy()
        p = sub.watts.to_numpy()
        j = sub.joules_total.to_numpy()
        area = np.zeros(len(sub))
        area[1:] = 0.5 * (p[1:] + p[:-1]) * (t[1:] - t[:-1])
        step = np.zeros(len(sub))
        step[1:] = j[1:] - j[:-1]
        keep = same.copy()
        area[~keep] = 0.0
        step[~keep | (step < 0)] = 0.0
        g = sub.assign(area=area, step=step).groupby(key, observed=True)
        ch = g.agg(trapezoid_j=("area", "sum"), counter_j=("step", "sum"), max_w=("watts", "max"),
                   kind=("kind", "first"), domain=("domain", "first"))
        q = g.watts.quantile(QS).unstack()
        ch = ch.join(q)
        tot = ch[ch.domain == "total"]
        nodes = tot.groupby(level="node", observed=True).counter_j.sum()
        kinds = tot.groupby("kind", observed=True).counter_j.sum()
        result.append({
            "name": name, "start": s, "end": e,
            "channels": [{"node": k[0], "target": k[1], "channel": k[2],
                          "trapezoid_j": float(r.trapezoid_j), "counter_j": float(r.counter_j),
                          "max_w": float(r.max_w)} for k, r in ch.iterrows()],
            "nodes": {str(k): float(v) for k, v in nodes.items()},
            "kinds": {str(k): float(v) for k, v in kinds.items()},
            "job_j": float(nodes.sum()),
        })
    t_end = time.perf_counter()
    with open(out, "w") as f:
        json.dump(result, f)
    print(json.dumps({"read_s": t_read - t0, "compute_s": t_end - t_read,
                      "total_s": t_end - t0, "rows": int(len(df))}))


if __name__ == "__main__":
    main()
