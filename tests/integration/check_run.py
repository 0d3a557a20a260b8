#!/usr/bin/python3
"""Checks the run directory of `carma run`.

    check_run.py format RUNDIR --names A,B,... [--rel 1e-6]
    check_run.py plant RUNDIR --config PLANT.conf --tree LIVE --truth TRUTH.csv
                       --policy idle|proportional|equal [--busy NAME=REPORT]...
                       [--tol-total 0.01] [--tol-job 0.02] [--residual 1e-4]

`format`: every file of the run directory is present and well formed (CSV headers, CRLF,
JSON that parses, the fields of workloads.json, workload_pids.json, event_summaries.jsonl and
report.json), the workloads are exactly NAMES, and the report's energies add up:
sum of the workloads' energy_j + idle + other + unattributed = total_energy_j (to REL,
relative).

`plant`: the run was made on a live tree animated by carma-plant (tests/fakes/plant.c); its
energies are compared with the plant's truth log:
  - total_energy_j within TOL_TOTAL of the truth over the run's ticks (the CPU-side total
    domains: packages and drams);
  - each workload's energy_j within TOL_JOB x (the truth's total dynamic energy over the run)
    of its fair truth: dynamic = D x cpu_s / ncpu (D = sum of MAX_W - IDLE_W over the CPU-side
    total domains, cpu_s from the workload's carma-busy report, 0 for a workload without one),
    plus its part of the static energy S (the plant's IDLE_W over the run) by the policy:
    idle: nothing; proportional: S x dynamic / the truth's total dynamic energy (jobs and the
    rest of the machine); equal: S / (the number of workloads running), tick by tick;
  - attribution.csv adds up: per channel, its joules over every tick equal the channel's
    energy in samples.csv over the same ticks within RESIDUAL (relative), and per tick to
    rounding.
Prints what it compared; exits 1 when a check failed, 2 on bad input, 3 when every check
passed except the per-workload ones, which could not be judged because this machine's
background load changed between carma's baseline and the run (as in check_truth.py: the
caller may try again), and 4 when every check passed except a per-workload one that missed its
bound although the background looked steady (the caller may try again once: a shared machine's
load can move inside one run; a real error misses every time).

Standard library only (Debian's python3).
"""

import argparse
import bisect
import csv
import io
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_truth  # noqa: E402  (read_config, rapl_channel, Truth, count_cpus)

SAMPLES_HEADER = ["timestamp_unix", "timestamp_local", "channel", "source", "kind", "domain",
                  "method", "watts", "joules_total"]
ATTR_HEADER = ["timestamp_unix", "channel", "job", "joules"]
SPECIAL_JOBS = ("idle", "other", "unattributed")
RUN_FILES = ("experiment.json", "manifest.json", "samples.csv", "attribution.csv",
             "event_summaries.jsonl", "workloads.json", "workload_pids.json", "pstree.log",
             "report.json", "report.txt")

failures = []


def check(ok, msg):
    print(("ok   " if ok else "FAIL ") + msg)
    if not ok:
        failures.append(msg)
    return ok


def die(msg):
    print("check_run: " + msg, file=sys.stderr)
    sys.exit(2)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, "%s parses as JSON: %s" % (os.path.basename(path), e))
        return None


def read_csv(path, header):
    """Checks CRLF framing and the exact header; returns the body rows."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        data = f.read()
    if not check(bool(data), "%s is not empty" % name):
        return []
    text = data.decode("utf-8")
    check(text.endswith("\r\n") and "\n" not in text.replace("\r\n", "")
          and "\r" not in text.replace("\r\n", ""), "%s: every line ends with CRLF" % name)
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    check(bool(rows) and rows[0] == header, "%s: header is exactly '%s' (got %r)"
          % (name, ",".join(header), rows[0] if rows else None))
    body = rows[1:]
    bad = [r for r in body if len(r) != len(header)]
    check(not bad, "%s: every row has %d fields%s" % (name, len(header),
                                                    "" if not bad else ": %r" % bad[:3]))
    return [r for r in body if len(r) == len(header)]


def fnum(s):
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


class Run:
    """The files of a run directory, parsed."""

    def __init__(self, rundir):
        self.dir = rundir
        missing = [f for f in RUN_FILES if not os.path.isfile(os.path.join(rundir, f))]
        check(not missing, "run directory has %s%s" % (", ".join(RUN_FILES), "" if not missing
                                                      else " (missing: %s)" % missing))
        check(os.path.isdir(os.path.join(rundir, "logs")), "run directory has logs/")
        p = lambda f: os.path.join(rundir, f)  # noqa: E731
        self.report = load_json(p("report.json")) if os.path.exists(p("report.json")) else None
        self.manifest = load_json(p("manifest.json")) if os.path.exists(p("manifest.json")) else None
        self.workloads = load_json(p("workloads.json")) if os.path.exists(p("workloads.json")) else None
        self.pids = (load_json(p("workload_pids.json"))
                     if os.path.exists(p("workload_pids.json")) else None)
        self.experiment = (load_json(p("experiment.json"))
                           if os.path.exists(p("experiment.json")) else None)
        self.samples = (read_csv(p("samples.csv"), SAMPLES_HEADER)
                        if os.path.exists(p("samples.csv")) else [])
        self.attr = (read_csv(p("attribution.csv"), ATTR_HEADER)
                     if os.path.exists(p("attribution.csv")) else [])
        self.events = []
        if os.path.exists(p("event_summaries.jsonl")):
            with open(p("event_summaries.jsonl")) as f:
                for n, line in enumerate(f, 1):
                    try:
                        self.events.append(json.loads(line))
                    except ValueError as e:
                        check(False, "event_summaries.jsonl line %d parses: %s" % (n, e))

    def channels(self):
        """Channel name -> manifest entry."""
        m = self.manifest or {}
        return {c.get("name"): c for c in m.get("channels", []) if isinstance(c, dict)}

    def total_channels(self):
        return [n for n, c in self.channels().items() if c.get("domain") == "total"]

    def series(self):
        """Channel -> list of (timestamp string, timestamp, joules_total) from samples.csv."""
        s = {}
        for r in self.samples:
            t, j = fnum(r[0]), fnum(r[8])
            if t is not None and j is not None:
                s.setdefault(r[2], []).append((r[0], t, j))
        return s

    def attr_ticks(self):
        """[(timestamp string, timestamp)] of attribution.csv, in order, and
        {(timestamp string, channel): {job: joules}}."""
        ticks, cells = [], {}
        for r in self.attr:
            if not ticks or ticks[-1][0] != r[0]:
                if fnum(r[0]) is not None and r[0] not in (t for t, _ in ticks):
                    ticks.append((r[0], fnum(r[0])))
            j = fnum(r[3])
            if j is None:
                continue
            cells.setdefault((r[0], r[1]), {})
            cells[(r[0], r[1])][r[2]] = cells[(r[0], r[1])].get(r[2], 0.0) + j
        return ticks, cells


def check_format(run, names, rel):
    names = list(names)
    rep, wl, pids, man, exp = run.report, run.workloads, run.pids, run.manifest, run.experiment

    # experiment.json and manifest.json
    if exp is not None:
        check(sorted(w.get("name") for w in exp.get("workloads", [])) == sorted(names),
              "experiment.json: workloads %s" % sorted(names))
        check(all(os.path.isabs(w.get("cwd", "")) for w in exp.get("workloads", [])),
              "experiment.json: every cwd resolved (absolute)")
    if man is not None:
        chans = man.get("channels")
        check(isinstance(chans, list) and len(chans) > 0
              and all(isinstance(c, dict) and {"name", "kind", "domain", "method"} <= set(c)
                      for c in chans),
              "manifest.json: channels with name, kind, domain, method")

    # samples.csv
    check(len(run.samples) > 0, "samples.csv has rows (%d)" % len(run.samples))
    sch = {r[2] for r in run.samples}
    if man is not None:
        check(sch == set(run.channels()), "samples.csv: channels are the manifest's (%s)"
              % sorted(sch))
    bad = [r for r in run.samples if fnum(r[0]) is None or fnum(r[8]) is None
           or (r[7] != "" and fnum(r[7]) is None)]
    check(not bad, "samples.csv: numbers parse%s" % ("" if not bad else ": %r" % bad[:3]))

    # attribution.csv
    jobs = set(names) | set(SPECIAL_JOBS)
    check(len(run.attr) > 0, "attribution.csv has rows (%d)" % len(run.attr))
    bad = [r for r in run.attr if r[2] not in jobs]
    check(not bad, "attribution.csv: every job is a workload or idle/other/unattributed%s"
          % ("" if not bad else ": %r" % sorted({r[2] for r in bad})))
    bad = [r for r in run.attr if r[1] not in sch]
    check(not bad, "attribution.csv: every channel is one of samples.csv%s"
          % ("" if not bad else ": %r" % sorted({r[1] for r in bad})))
    bad = [r for r in run.attr if fnum(r[0]) is None or fnum(r[3]) is None]
    check(not bad, "attribution.csv: numbers parse%s" % ("" if not bad else ": %r" % bad[:3]))
    samp_ts = {r[0] for r in run.samples}
    bad = sorted({r[0] for r in run.attr} - samp_ts)
    check(not bad, "attribution.csv: every timestamp is a tick of samples.csv%s"
          % ("" if not bad else ": %r" % bad[:3]))

    # event_summaries.jsonl
    check(len(run.events) >= 1, "event_summaries.jsonl has lines (%d)" % len(run.events))
    ekeys = {"timestamp_unix", "elapsed_s", "workloads", "idle_j", "other_j", "unattributed_j"}
    wkeys = {"name", "power_w", "energy_j", "g_co2e", "method"}
    bad = []
    for n, e in enumerate(run.events, 1):
        if not isinstance(e, dict) or not ekeys <= set(e):
            bad.append("line %d: keys %s" % (n, sorted(e) if isinstance(e, dict) else e))
            continue
        for w in e["workloads"]:
            if not isinstance(w, dict) or not wkeys <= set(w) or w["name"] not in names:
                bad.append("line %d: workload %r" % (n, w))
    check(not bad, "event_summaries.jsonl: every line has %s, workloads with %s%s"
          % (sorted(ekeys), sorted(wkeys), "" if not bad else ": " + "; ".join(bad[:3])))
    ts = [e.get("timestamp_unix") for e in run.events if isinstance(e, dict)]
    check(all(is_num(t) for t in ts) and ts == sorted(ts),
          "event_summaries.jsonl: timestamps are numbers, in order")

    # workloads.json
    wmap = {}
    if wl is not None:
        lst = wl.get("workloads") if isinstance(wl, dict) else None
        check(isinstance(lst, list), "workloads.json: {\"workloads\": [...]}")
        lst = lst if isinstance(lst, list) else []
        wmap = {w.get("name"): w for w in lst if isinstance(w, dict)}
        check(sorted(wmap) == sorted(names), "workloads.json: names %s (got %s)"
              % (sorted(names), sorted(wmap)))
        keys = {"name", "pids", "pgid", "cgroup", "start_unix", "end_unix", "exit_status",
                "signal", "timed_out"}
        for n, w in wmap.items():
            check(keys <= set(w), "workloads.json %s: has %s (missing %s)"
                  % (n, sorted(keys), sorted(keys - set(w))))
            check(isinstance(w.get("pids"), list) and len(w["pids"]) >= 1
                  and all(isinstance(p, int) and p > 0 for p in w["pids"]),
                  "workloads.json %s: pids %r" % (n, w.get("pids")))
            check(isinstance(w.get("pgid"), int) and w["pgid"] > 0,
                  "workloads.json %s: pgid %r" % (n, w.get("pgid")))
            check(is_num(w.get("start_unix")) and is_num(w.get("end_unix"))
                  and w["start_unix"] <= w["end_unix"],
                  "workloads.json %s: start_unix <= end_unix" % n)
            check(isinstance(w.get("timed_out"), bool),
                  "workloads.json %s: timed_out is a boolean" % n)

    # workload_pids.json
    if pids is not None:
        check(isinstance(pids, dict) and sorted(pids) == sorted(names),
              "workload_pids.json: names %s (got %s)" % (sorted(names), pids))
        if isinstance(pids, dict):
            for n, p in pids.items():
                check(isinstance(p, int) and p > 0 and n in wmap and p in wmap[n].get("pids", []),
                      "workload_pids.json %s: pid %r is one of workloads.json's" % (n, p))

    # report.json
    if rep is None:
        return
    top = {"experiment", "run_dir", "duration_s", "attribution", "workloads", "idle", "other",
           "unattributed", "total_energy_j", "carbon"}
    check(top <= set(rep), "report.json: has %s (missing %s)" % (sorted(top),
                                                                  sorted(top - set(rep))))
    att = rep.get("attribution", {})
    check({"idle_policy", "static_source", "static_power_w"} <= set(att)
          and att.get("idle_policy") in ("idle", "proportional", "equal"),
          "report.json: attribution %r" % att)
    carbon = rep.get("carbon", {})
    ckeys = {"g_per_kwh", "intensity_source", "pue", "operational_g_co2e", "embodied_g_co2e"}
    check(ckeys <= set(carbon), "report.json: carbon has %s (got %r)" % (sorted(ckeys), carbon))
    wkeys = {"name", "exit_status", "duration_s", "energy_j", "energy_by_kind_j", "avg_power_w",
             "cpu_time_s", "operational_g_co2e", "embodied_g_co2e", "method"}
    rw = {w.get("name"): w for w in rep.get("workloads", []) if isinstance(w, dict)}
    check(sorted(rw) == sorted(names), "report.json: workloads %s (got %s)"
          % (sorted(names), sorted(rw)))
    for n, w in rw.items():
        check(wkeys <= set(w), "report.json %s: has %s (missing %s)"
              % (n, sorted(wkeys), sorted(wkeys - set(w))))
        nums = [k for k in ("duration_s", "energy_j", "avg_power_w", "cpu_time_s",
                            "operational_g_co2e", "embodied_g_co2e") if not is_num(w.get(k))]
        check(not nums, "report.json %s: numbers%s" % (n, "" if not nums else " (not: %s)" % nums))
        ebk = w.get("energy_by_kind_j")
        check(isinstance(ebk, dict) and all(is_num(v) for v in ebk.values())
              and is_num(w.get("energy_j"))
              and abs(sum(ebk.values()) - w["energy_j"]) <= 1e-6 * max(1.0, abs(w["energy_j"])),
              "report.json %s: energy_by_kind_j %r adds up to energy_j %r"
              % (n, ebk, w.get("energy_j")))
    for k in SPECIAL_JOBS:
        check(isinstance(rep.get(k), dict) and is_num(rep[k].get("energy_j")),
              "report.json: %s.energy_j is a number" % k)
    try:
        parts = [w["energy_j"] for w in rw.values()] + [rep[k]["energy_j"] for k in SPECIAL_JOBS]
        total = rep["total_energy_j"]
        s = sum(parts)
        check(abs(s - total) <= rel * max(abs(total), 1e-9),
              "report.json: sum of workloads + idle + other + unattributed %.9f == "
              "total_energy_j %.9f (rel %.1e, tol %.0e)"
              % (s, total, abs(s - total) / max(abs(total), 1e-9), rel))
    except (KeyError, TypeError) as e:
        check(False, "report.json: sum rule: %s" % e)
    check(isinstance(rep.get("total_energy_j"), (int, float)) and rep["total_energy_j"] >= 0,
          "report.json: total_energy_j >= 0")
    with open(os.path.join(run.dir, "report.txt")) as f:
        txt = f.read()
    missing = [n for n in names if n not in txt]
    check(not missing, "report.txt names every workload%s" % ("" if not missing else
                                                               " (missing %s)" % missing))


def check_residual(run, rel):
    """attribution.csv adds up to samples.csv, per channel and per tick. Returns the window
    (timestamp of the tick before the first attributed one, of the last attributed one)."""
    series = run.series()
    ticks, cells = run.attr_ticks()
    if not ticks:
        check(False, "attribution.csv has ticks")
        return None
    # per channel: the samples' joules_total at each tick
    worst_tick = 0.0
    window = None
    for ch, rows in sorted(series.items()):
        # the tick of samples.csv for each timestamp of attribution.csv (the same string, or
        # within 2 µs: the format check reports a difference)
        times = [t for _, t, _ in rows]
        idx = {}
        for ts, t in ticks:
            k = bisect.bisect_left(times, t - 2e-6)
            if k < len(times) and abs(times[k] - t) <= 2e-6:
                idx[ts] = k
        attributed = [(ts, cells[(ts, ch)]) for ts, _ in ticks if (ts, ch) in cells]
        if not attributed:
            check(False, "attribution.csv has rows for %s" % ch)
            continue
        first = idx.get(attributed[0][0])
        last = idx.get(attributed[-1][0])
        if first is None or last is None or first == 0:
            check(False, "%s: attribution ticks %s..%s are ticks of samples.csv after its first"
                  % (ch, attributed[0][0], attributed[-1][0]))
            continue
        if window is None:
            window = (rows[first - 1][1], rows[last][1])
        measured = rows[last][2] - rows[first - 1][2]
        got = sum(sum(c.values()) for _, c in attributed)
        err = abs(got - measured)
        check(err <= rel * max(measured, 1e-9) + 1e-5,
              "%s: attribution.csv %.6f J vs samples.csv %.6f J over %d ticks, residual %.2e J "
              "(%.4f%%, tol %.4f%%)" % (ch, got, measured, len(attributed), err,
                                        100 * err / max(measured, 1e-9), 100 * rel))
        # per tick
        for ts, c in attributed:
            k = idx.get(ts)
            if k is None or k == 0:
                continue
            de = rows[k][2] - rows[k - 1][2]
            worst_tick = max(worst_tick, abs(sum(c.values()) - de) - 1e-4 * abs(de))
    check(worst_tick <= 1e-5, "attribution.csv: every tick's split adds up to the tick's energy "
          "(worst excess over 0.01%%: %.2e J)" % max(worst_tick, 0.0))
    return window


def check_plant(run, a):
    conf = check_truth.read_config(a.config)
    truth = check_truth.Truth(a.truth)
    rep = run.report
    if rep is None:
        return False
    window = check_residual(run, a.residual)
    if window is None:
        return False
    t0, t1 = window
    print("# run window %.6f .. %.6f (%.3f s), policy %s" % (t0, t1, t1 - t0, a.policy))
    check(rep.get("attribution", {}).get("idle_policy") == a.policy,
          "report.json: attribution.idle_policy %r == %r"
          % (rep.get("attribution", {}).get("idle_policy"), a.policy))

    # the CPU-side total domains (packages and drams) and their carma names
    cpu_side = []
    for c in conf:
        if c["kind"] != "counter":
            continue
        m = check_truth.rapl_channel(a.tree, c["relpath"])
        if not m:
            continue
        cname, zone, is_sub = m
        if (not is_sub and zone.startswith("package")) or (is_sub and zone == "dram"):
            cpu_side.append((c, cname))
    totals = sorted(run.total_channels())
    check(totals == sorted(n for _, n in cpu_side),
          "manifest.json: total-domain channels %s are the plant's CPU-side totals" % totals)

    t_total = sum(truth.between(c["name"] + "_j", t0, t1) for c, _ in cpu_side)
    t_dyn = sum(truth.between(c["name"] + "_dyn_j", t0, t1) for c, _ in cpu_side)
    t_static = t_total - t_dyn
    got_total = rep.get("total_energy_j")
    err = (got_total - t_total) / t_total if is_num(got_total) and t_total > 0 else float("inf")
    check(abs(err) <= a.tol_total, "total_energy_j %.3f J vs truth %.3f J, error %+.3f%% (tol %.1f%%)"
          % (got_total if is_num(got_total) else float("nan"), t_total, 100 * err,
             100 * a.tol_total))

    # the workloads' fair truth
    ncpu = check_truth.count_cpus()
    d_w = sum(c["max_w"] - c["idle_w"] for c, _ in cpu_side)
    reports = {}
    for spec in a.busy:
        name, path = spec.split("=", 1)
        rep_b = {}
        with open(path) as f:
            for ln in f:
                k, v = ln.split()
                rep_b[k] = float(v)
        reports[name] = rep_b
    rw = {w["name"]: w for w in rep.get("workloads", [])}
    wl = {w["name"]: w for w in (run.workloads or {}).get("workloads", [])}
    dyn = {n: d_w * reports[n]["cpu_s"] / ncpu if n in reports else 0.0 for n in rw}
    for n, r in reports.items():
        got = rw.get(n, {}).get("cpu_time_s")
        check(is_num(got) and abs(got - r["cpu_s"]) <= 0.05 * r["cpu_s"] + 0.05,
              "%s: cpu_time_s %s vs its own %.3f s (5%% + 0.05 s)" % (n, got, r["cpu_s"]))

    # was the background steady? (check_truth.py's estimates A and B, over all the jobs)
    series = run.series()
    first_ts = min(rows[0][1] for rows in series.values())
    c0 = min(r["start_unix"] for r in reports.values())
    c1 = max(r["end_unix"] for r in reports.values())
    w1 = min(c1 + 0.05, t1)
    b0, b1 = max(first_ts, truth.t[0]), t0
    if b1 - b0 < 0.3:
        print("# baseline window too short (%.3f s)" % (b1 - b0))
        steady = False
    else:
        dyn_b = sum(truth.between(c["name"] + "_dyn_j", b0, b1) for c, _ in cpu_side)
        r_base = dyn_b / (b1 - b0)
        dyn_w = sum(truth.between(c["name"] + "_dyn_j", c0, w1) for c, _ in cpu_side)
        est_a = dyn_w - r_base * (w1 - c0)
        est_b = sum(dyn.values())
        # a background that moved by more than 2 % of the jobs' dynamic energy between the
        # baseline and the run moves that much between "other" and the jobs: not judged
        steady = est_b > 0 and abs(est_a - est_b) <= 0.02 * est_b
        print("# background %.3f W dynamic over the baseline (%.3f s); jobs' dynamic: "
              "A (baseline-subtracted) %.3f J, B (cpu time) %.3f J: %s"
              % (r_base, b1 - b0, est_a, est_b, "steady" if steady else "background changed"))
    print("# truth over the run: total %.3f J = static %.3f J + dynamic %.3f J (jobs %.3f J, "
          "the rest %.3f J); D %.1f W, %d cpus" % (t_total, t_static, t_dyn, sum(dyn.values()),
                                                  t_dyn - sum(dyn.values()), d_w, ncpu))
    print("# report: static_power_w %s (%s); idle %s J, other %s J, unattributed %s J"
          % (rep.get("attribution", {}).get("static_power_w"),
             rep.get("attribution", {}).get("static_source"),
             rep.get("idle", {}).get("energy_j"), rep.get("other", {}).get("energy_j"),
             rep.get("unattributed", {}).get("energy_j")))

    # the static part by the policy
    static = {n: 0.0 for n in rw}
    ticks = [t for _, t, _ in series[totals[0]]] if totals else []
    ticks = [t for t in ticks if t0 <= t <= t1]
    p_static = t_static / (t1 - t0)
    # the time of the run's ticks when no workload ran (their static part has no job to go to)
    empty_s = 0.0
    for prev, cur in zip(ticks, ticks[1:]):
        mid = 0.5 * (prev + cur)
        if not any(is_num(w.get("start_unix")) and is_num(w.get("end_unix"))
                   and w["start_unix"] <= mid <= w["end_unix"] for w in wl.values()):
            empty_s += cur - prev
    if a.policy == "proportional":
        for n in rw:
            static[n] = t_static * dyn[n] / t_dyn if t_dyn > 0 else 0.0
    elif a.policy == "equal":
        # S / (number of workloads running), tick by tick over the run's ticks
        for prev, cur in zip(ticks, ticks[1:]):
            mid = 0.5 * (prev + cur)
            running = [n for n, w in wl.items()
                       if is_num(w.get("start_unix")) and is_num(w.get("end_unix"))
                       and w["start_unix"] <= mid <= w["end_unix"]]
            for n in running:
                static[n] += p_static * (cur - prev) / len(running)
    tol = a.tol_job * t_dyn
    job_ok = True
    for n in sorted(rw):
        fair = dyn[n] + static[n]
        got = rw[n].get("energy_j")
        ok = is_num(got) and abs(got - fair) <= tol
        print("%s %s: energy_j %.3f J vs fair %.3f J (dynamic %.3f + static %.3f), "
              "diff %+.3f J = %+.2f%% of the total dynamic %.3f J (tol %.0f%%)"
              % ("ok  " if ok else "MISS", n, got if is_num(got) else float("nan"), fair, dyn[n],
                 static[n], (got - fair) if is_num(got) else float("nan"),
                 100 * (got - fair) / t_dyn if is_num(got) else float("nan"), t_dyn,
                 100 * a.tol_job))
        job_ok = job_ok and ok
    if a.policy != "idle":
        # static energy is left as idle only when no workload runs (plus a tick's worth)
        limit = p_static * (empty_s + 0.1) + 1e-6
        idle_j = rep.get("idle", {}).get("energy_j", 0)
        check(is_num(idle_j) and idle_j <= limit,
              "policy %s: idle.energy_j %s <= %.3f J (the static energy while no workload ran, "
              "%.3f s, and one tick)" % (a.policy, idle_j, limit, empty_s))
    if job_ok:
        check(True, "every workload's energy within %.0f%% of the total dynamic energy of its "
              "fair truth" % (100 * a.tol_job))
        return True
    if not steady:
        print("# per-workload energies inconclusive: the background load changed")
        return None
    print("MISS every workload's energy within %.0f%% of the total dynamic energy of its "
          "fair truth" % (100 * a.tol_job))
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("format", "plant"))
    ap.add_argument("rundir")
    ap.add_argument("--names", default="")
    ap.add_argument("--rel", type=float, default=1e-6)
    ap.add_argument("--config")
    ap.add_argument("--tree")
    ap.add_argument("--truth")
    ap.add_argument("--policy", choices=("idle", "proportional", "equal"))
    ap.add_argument("--busy", action="append", default=[])
    ap.add_argument("--tol-total", type=float, default=0.01)
    ap.add_argument("--tol-job", type=float, default=0.02)
    ap.add_argument("--residual", type=float, default=1e-4)
    a = ap.parse_args()
    if not os.path.isdir(a.rundir):
        die("no run directory " + a.rundir)
    run = Run(a.rundir)
    verdict = True
    if a.mode == "format":
        check_format(run, [n for n in a.names.split(",") if n], a.rel)
    else:
        if not (a.config and a.tree and a.truth and a.policy):
            die("plant needs --config, --tree, --truth and --policy")
        check_format(run, [w.get("name") for w in (run.report or {}).get("workloads", [])],
                     a.rel)
        verdict = check_plant(run, a)
    if failures:
        print("check_run: %d check(s) failed" % len(failures))
        return 1
    if verdict is None:
        print("check_run: other checks passed; per-workload energies inconclusive")
        return 3
    if verdict is False:
        print("check_run: other checks passed; a per-workload energy missed its bound")
        return 4
    print("check_run: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
