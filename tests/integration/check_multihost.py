#!/usr/bin/python3
"""Checks a `carma collect` run of several hosts (tests/integration/test_multihost.sh) against
the ground truth of each host's simulated plant (tests/fakes/plant.c).

Each host is one carma exporter over its own live fixture tree; one of them (--killed) was
SIGKILLed at --kill-unix and started again at --up-unix. From samples.csv this checks:

- every cycle in the file has every other host's channels, none blank (they were unaffected);
- the killed host has blank rows for the cycles while it was down (a gap at least the
  downtime long), rows again after its restart, and its counters start again from near 0;
- per node and per channel, the energy from joules_total differences (only between
  consecutive cycles where both rows have a reading and the counter did not go back: an
  exporter restart is never integrated) and from the trapezoid of watts over the same pairs,
  each within --tol of the plant's truth over the same pairs of sample times;
- with --report FILE (the JSON of `carma report COLLECT_DIR --json`): windows[0] (the whole
  run) per node energy_j within --tol of the truth over the node's sampled spans, the killed
  host's coverage largest_gap_s >= the downtime, and a warning naming it.

The truth is interpolated at each row's timestamp_unix (when the target's answer arrived);
the exporter's sample it carries is at most one exporter interval older, which moves both
ends of a span alike.

Usage: check_multihost.py --collect DIR --host NODE,CONFIG,TREE,TRUTH [--host ...]
                          [--killed NODE --kill-unix T --up-unix T] [--interval S]
                          [--report FILE] [--tol 0.01] [--trapezoid-tol TOL (default: --tol)]
                          [--targets-by-name]
Without --killed every host must be whole in every cycle (test_slurm.sh with 2 nodes).
Standard library only (Debian's python3). Exit 1 when a check fails, 2 on bad input.
"""

import argparse
import bisect
import csv
import json
import os
import sys

HEADER = ["schema_version", "timestamp_unix", "scrape_seq", "node", "target", "channel",
          "source", "kind", "domain", "method", "watts", "joules_total"]

failures = []
SLACK = 0.05  # s: the test takes the kill and restart times a few ms from the events


def check(ok, msg):
    print(("ok   " if ok else "FAIL ") + msg)
    if not ok:
        failures.append(msg)


def die(msg):
    print("check_multihost: " + msg, file=sys.stderr)
    sys.exit(2)


def read_config(path):
    """The plant's counters and gauges: (name, relpath) in config order."""
    chans = []
    with open(path) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if fields and fields[0] in ("counter", "gauge"):
                chans.append((fields[1], fields[2]))
    return chans


def rapl_channel(tree, relpath):
    """carma's channel name for a powercap energy_uj path: intel-rapl:N named NAME ->
    rapl/NAME, subzone intel-rapl:N:M named SUB -> rapl/NAME/SUB (as check_truth.py)."""
    zdir = os.path.dirname(relpath)
    base = os.path.basename(zdir)
    if not base.startswith("intel-rapl:"):
        return None
    with open(os.path.join(tree, zdir, "name")) as f:
        zone = f.read().strip()
    parts = base.split(":")
    if len(parts) == 2:
        return "rapl/" + zone
    with open(os.path.join(tree, os.path.dirname(zdir), ":".join(parts[:2]), "name")) as f:
        return "rapl/%s/%s" % (f.read().strip(), zone)


class Truth:
    """The plant's truth log: cumulative joules per column, linear in time."""

    def __init__(self, path):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        if len(rows) < 3:
            die(path + ": fewer than two periods logged")
        self.path = path
        self.header = rows[0]
        body = [r for r in rows[1:] if len(r) == len(self.header)]
        self.t = [float(r[0]) for r in body]
        self.cols = {h: [float(r[i]) for r in body] for i, h in enumerate(self.header)}

    def at(self, col, ts):
        t, v = self.t, self.cols[col]
        if ts < t[0] or ts > t[-1]:
            die("%s: time %.6f outside the truth log [%.6f, %.6f]" % (self.path, ts, t[0], t[-1]))
        i = bisect.bisect_right(t, ts)
        if i >= len(t):
            return v[-1]
        t0, t1 = t[i - 1], t[i]
        return v[i - 1] + (v[i] - v[i - 1]) * ((ts - t0) / (t1 - t0) if t1 > t0 else 0)

    def between(self, col, a, b):
        return self.at(col, b) - self.at(col, a)


def read_samples(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f, strict=True))
    if not rows or rows[0] != HEADER:
        die("%s: header %r, expected %r" % (path, rows[0] if rows else None, HEADER))
    out = []
    for k, r in enumerate(rows[1:], 2):
        if len(r) != len(HEADER):
            die("%s:%d: %d fields, expected %d" % (path, k, len(r), len(HEADER)))
        d = dict(zip(HEADER, r))
        try:
            d["t"] = float(d["timestamp_unix"])
            d["seq"] = int(d["scrape_seq"])
            d["w"] = float(d["watts"]) if d["watts"] != "" else None
            d["j"] = float(d["joules_total"]) if d["joules_total"] != "" else None
        except ValueError as e:
            die("%s:%d: %s" % (path, k, e))
        d["blank"] = d["channel"] == ""
        out.append(d)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--collect", required=True)
    ap.add_argument("--host", action="append", required=True)
    ap.add_argument("--killed")
    ap.add_argument("--kill-unix", type=float)
    ap.add_argument("--up-unix", type=float)
    ap.add_argument("--interval", type=float, default=0.25)
    ap.add_argument("--report")
    ap.add_argument("--targets-by-name", action="store_true")
    ap.add_argument("--tol", type=float, default=0.01)
    ap.add_argument("--trapezoid-tol", type=float)
    a = ap.parse_args()
    ttol = a.tol if a.trapezoid_tol is None else a.trapezoid_tol

    hosts = {}
    for spec in a.host:
        try:
            node, conf, tree, truth = spec.split(",")
        except ValueError:
            die("--host %r: NODE,CONFIG,TREE,TRUTH" % spec)
        chmap = {}
        for name, rel in read_config(conf):
            cname = rapl_channel(tree, rel)
            if cname:
                chmap[cname] = name
        hosts[node] = {"chmap": chmap, "truth": Truth(truth)}
    if a.killed is not None and (a.killed not in hosts or a.kill_unix is None or a.up_unix is None):
        die("--killed %s: one of the hosts %s, with --kill-unix and --up-unix" % (a.killed, sorted(hosts)))
    down_s = a.up_unix - a.kill_unix if a.killed else 0

    rows = read_samples(os.path.join(a.collect, "samples.csv"))
    with open(os.path.join(a.collect, "manifest.json")) as f:
        manifest = json.load(f)
    seqs = sorted({r["seq"] for r in rows})
    print("# %s: %d rows, %d cycles (scrape_seq %d..%d), %d missed; %s down %.3f s"
          % (a.collect, len(rows), len(seqs), seqs[0], seqs[-1], manifest["missed_cycles"],
             a.killed or "no host", down_s))
    if a.targets_by_name:
        tg = {(r["node"], r["target"]) for r in rows}
        check(all(t.split(":")[0] == n for n, t in tg),
              "the targets are named by their nodes (%s)" % sorted(tg))
    check(set(r["node"] for r in rows) == set(hosts),
          "samples.csv has the nodes %s (got %s)" % (sorted(hosts), sorted({r["node"] for r in rows})))

    # per node: seq -> rows
    per = {n: {} for n in hosts}
    for r in rows:
        if r["node"] in per:
            per[r["node"]].setdefault(r["seq"], []).append(r)

    # ---- the other hosts: every cycle whole
    for n in sorted(hosts):
        if n == a.killed:
            continue
        chans = set(hosts[n]["chmap"])
        bad = [s for s in seqs
               if s not in per[n] or any(r["blank"] or r["w"] is None or r["j"] is None
                                         for r in per[n][s])
               or {r["channel"] for r in per[n][s]} != chans]
        check(not bad, "%s: all %d cycles have its %d channels with readings (bad cycles: %s)"
              % (n, len(seqs), len(chans), bad[:10]))
        tgt = [t for t in manifest["targets"] if t["node"] == n or t["node_label"] == n]
        check(len(tgt) == 1 and tgt[0]["error_count"] == 0,
              "%s: no scrape error in the manifest (%s)"
              % (n, [(t["target"], t["error_count"]) for t in tgt]))

    # ---- the killed host: a gap of blank rows, then rows again, counters from near 0
    k = per[a.killed] if a.killed else {}
    blank = [s for s in seqs if s in k and all(r["blank"] for r in k[s])]
    full = [s for s in seqs if s in k and not any(r["blank"] or r["j"] is None for r in k[s])]
    if a.killed:
        check(bool(blank), "%s: blank rows while it was down (%d cycles)" % (a.killed, len(blank)))
        check(len(blank) + len(full) == len(seqs),
              "%s: every cycle either blank or whole (%d + %d of %d)"
              % (a.killed, len(blank), len(full), len(seqs)))
    if blank:
        b0, b1 = blank[0], blank[-1]
        check(blank == list(range(b0, b1 + 1)),
              "%s: the blank cycles are one run, %d..%d" % (a.killed, b0, b1))
        before = [s for s in full if s < b0]
        after = [s for s in full if s > b1]
        check(bool(before) and bool(after),
              "%s: rows before the gap (%d) and after its restart (%d)"
              % (a.killed, len(before), len(after)))
        if before and after:
            t_last = max(r["t"] for r in k[before[-1]])
            t_first = min(r["t"] for r in k[after[0]])
            t_b0 = min(r["t"] for r in k[b0])
            gap = t_first - t_last
            print("# %s: last reading %.3f, first blank row %.3f, first reading after %.3f: "
                  "gap %.3f s (down %.3f s, from %.3f to %.3f)"
                  % (a.killed, t_last, t_b0, t_first, gap, down_s, a.kill_unix, a.up_unix))
            check(t_last <= a.kill_unix + SLACK and t_b0 >= a.kill_unix - SLACK,
                  "%s: its gap starts at the kill (last reading %.3f, first blank %.3f, "
                  "killed %.3f)" % (a.killed, t_last, t_b0, a.kill_unix))
            # (--up-unix is when the test saw "listening on", polled every 10 ms: SLACK)
            check(t_first >= a.up_unix - SLACK,
                  "%s: readings again only after the restart (%.3f >= %.3f)"
                  % (a.killed, t_first, a.up_unix))
            check(gap >= down_s - SLACK,
                  "%s: the gap %.3f s >= the downtime %.3f s" % (a.killed, gap, down_s))
            # the restarted exporter counts from its start: its first counters are below the
            # energy of a few seconds, far below the ones before the kill
            restarted = []
            for r in k[after[0]]:
                prev = [p for p in k[before[-1]] if p["channel"] == r["channel"]]
                restarted.append(bool(prev) and r["j"] < prev[0]["j"]
                                 and r["j"] < 400 * (r["t"] - a.up_unix + 1))
            check(all(restarted), "%s: every counter starts again after the restart (%s)"
                  % (a.killed, ["%s %s" % (r["channel"], r["joules_total"]) for r in k[after[0]]]))
    if a.killed:
        tgt = [t for t in manifest["targets"] if t["node"] == a.killed or t["node_label"] == a.killed]
        check(len(tgt) == 1 and tgt[0]["error_count"] >= 1 and tgt[0]["up"] is True,
              "%s: scrape errors counted, up again at the end (%s)" % (a.killed, tgt))

    # ---- energy: per channel and per node, counters and trapezoid, against the truth
    node_truth = {}
    for n in sorted(hosts):
        h = hosts[n]
        truth = h["truth"]
        spans = []  # (t_a, t_b) of the pairs integrated for this node
        tot_c = tot_w = tot_t = 0.0
        for cname, pname in sorted(h["chmap"].items()):
            series = sorted((r["seq"], r) for s in per[n] for r in per[n][s]
                            if r["channel"] == cname)
            e_c = e_w = e_t = 0.0
            pairs = resets = 0
            for (s1, r1), (s2, r2) in zip(series, series[1:]):
                if s2 != s1 + 1 or None in (r1["j"], r2["j"], r1["w"], r2["w"]):
                    continue
                if r2["j"] < r1["j"]:
                    resets += 1
                    continue
                e_c += r2["j"] - r1["j"]
                e_w += (r1["w"] + r2["w"]) / 2 * (r2["t"] - r1["t"])
                e_t += truth.between(pname + "_j", r1["t"], r2["t"])
                pairs += 1
                if cname == "rapl/package-0":
                    spans.append((r1["t"], r2["t"]))
            dom = series[0][1]["domain"] if series else ""
            if dom == "total":
                tot_c, tot_w, tot_t = tot_c + e_c, tot_w + e_w, tot_t + e_t
            ok_c = e_t > 0 and abs(e_c - e_t) <= a.tol * e_t
            ok_w = e_t > 0 and abs(e_w - e_t) <= ttol * e_t
            check(ok_c and ok_w,
                  "%s %-22s (%s) %3d pairs: counters %9.3f J (%+.3f %%), trapezoid %9.3f J "
                  "(%+.3f %%), truth %9.3f J%s"
                  % (n, cname, dom, pairs, e_c, 100 * (e_c - e_t) / e_t if e_t else 0, e_w,
                     100 * (e_w - e_t) / e_t if e_t else 0, e_t,
                     ", a counter going back skipped" if resets else ""))
            if n != a.killed:
                check(resets == 0, "%s %s: no counter going back" % (n, cname))
        check(tot_t > 0 and abs(tot_c - tot_t) <= a.tol * tot_t and abs(tot_w - tot_t) <= ttol * tot_t,
              "%s node (total domains): counters %.3f J, trapezoid %.3f J, truth %.3f J"
              % (n, tot_c, tot_w, tot_t))
        node_truth[n] = tot_t

    # ---- carma report of the collect directory
    if not a.report:
        print("# no report JSON given: the report checks are not made")
    else:
        with open(a.report) as f:
            rep = json.load(f)
        w0 = rep["windows"][0]
        got = {x["node"]: x for x in w0["nodes"]}
        for n in sorted(hosts):
            e = got.get(n, {}).get("energy_j")
            t = node_truth[n]
            check(e is not None and abs(e - t) <= a.tol * t,
                  "report windows[0] %s: energy_j %s J, truth %.3f J over its sampled spans (%s)"
                  % (n, e, t, "%+.3f %%" % (100 * (e - t) / t) if e is not None else "missing"))
        cov = {c["node"]: c for c in rep["coverage"]}
        g = cov.get(a.killed, {}).get("largest_gap_s")
        if a.killed:
            check(g is not None and g >= down_s,
                  "report coverage %s: largest_gap_s %s >= the downtime %.3f s" % (a.killed, g, down_s))
        for n in sorted(hosts):
            if n != a.killed:
                g2 = cov.get(n, {}).get("largest_gap_s")
                check(g2 is not None and g2 < max(4 * a.interval, 1.0),
                      "report coverage %s: largest_gap_s %s < 4 intervals (1 s at least)" % (n, g2))
        warns = [json.dumps(w) for w in rep.get("warnings", [])]
        if a.killed:
            check(any(a.killed in w for w in warns),
                  "report: a warning names %s (%s)" % (a.killed, warns))
            # (warnings about every node alike, e.g. a missing carbon intensity, do not count)
            others = max(sum(n in w for w in warns) for n in hosts if n != a.killed)
            check(sum(a.killed in w for w in warns) > others,
                  "report: more warnings name %s than any other host" % a.killed)

    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
