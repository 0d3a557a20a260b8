#!/usr/bin/python3
"""Checks the output of `carma stat --json-out` against the ground truth of carma-plant.

The plant (tests/fakes/plant.c) logs, every few milliseconds, the exact cumulative energy it
put into each channel of a live fixture tree. This script compares carma's per-channel
energy with that truth interpolated at carma's first and last sample, checks wraps, resets,
the command's dynamic CPU energy, the exit status and the samples.csv format, prints what it
compared, and exits 1 when a check fails (2 on bad input, 3 when every check passed but the
command's attribution could not be judged because the machine's background load changed
between carma's baseline and the command's run: the caller may try again).

Usage: check_truth.py --config PLANT.conf --tree LIVE --truth TRUTH.csv --json OUT.json
                      [--samples RUNDIR/samples.csv] [--busy-report FILE] [--baseline S]
                      [--exit-status N] [--wraps NAME]... [--reset NAME]... [--tol 0.01]
                      [--interval 0.1] [--min-attr 0.95]
NAME is a channel name of the plant config. Standard library only (Debian's python3).
"""

import argparse
import bisect
import csv
import json
import os
import sys

SAMPLES_HEADER = ("timestamp_unix,timestamp_local,channel,source,kind,domain,method,"
                  "watts,joules_total")

failures = []


def check(ok, msg):
    print(("ok   " if ok else "FAIL ") + msg)
    if not ok:
        failures.append(msg)


def die(msg):
    print("check_truth: " + msg, file=sys.stderr)
    sys.exit(2)


def read_config(path):
    """Returns the plant's counters and gauges in config order: dicts with kind, name,
    relpath, idle_w, max_w, range_uj (or None), reset_at (or None)."""
    chans = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if fields[0] in ("counter", "gauge"):
                chans.append({
                    "kind": fields[0], "name": fields[1], "relpath": fields[2],
                    "idle_w": float(fields[3]), "max_w": float(fields[4]),
                    "range_uj": int(fields[5]) if len(fields) > 5 else None,
                    "reset_at": None, "line": lineno,
                })
            elif fields[0] == "reset":
                for c in chans:
                    if c["name"] == fields[1]:
                        c["reset_at"] = float(fields[2])
    return chans


def rapl_channel(tree, relpath):
    """Maps a powercap energy_uj path to carma's channel name and RAPL role: top-level zone
    intel-rapl:N named NAME -> rapl/NAME; subzone intel-rapl:N:M named SUB -> rapl/NAME/SUB
    (the parent zone is a sibling directory in a flat layout, or the parent directory).
    Returns (name, zone_name, is_subzone) or None for a path that is not a RAPL zone."""
    zdir = os.path.dirname(relpath)
    base = os.path.basename(zdir)
    if not base.startswith("intel-rapl:"):
        return None
    with open(os.path.join(tree, zdir, "name")) as f:
        zone = f.read().strip()
    parts = base.split(":")
    if len(parts) == 2:
        return "rapl/" + zone, zone, False
    parent_base = ":".join(parts[:2])
    for pdir in (os.path.join(os.path.dirname(zdir), parent_base), os.path.dirname(zdir)):
        pname = os.path.join(tree, pdir, "name")
        if os.path.basename(pdir) == parent_base and os.path.exists(pname):
            with open(pname) as f:
                return "rapl/%s/%s" % (f.read().strip(), zone), zone, True
    die("no parent zone for " + relpath)


class Truth:
    """The plant's truth log: per-column cumulative values, interpolated linearly in time."""

    def __init__(self, path):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        if len(rows) < 3:
            die(path + ": fewer than two periods logged")
        self.header = rows[0]
        body = [r for r in rows[1:] if len(r) == len(self.header)]
        self.t = [float(r[0]) for r in body]
        self.cols = {h: [float(r[i]) for r in body] for i, h in enumerate(self.header)}

    def at(self, col, ts):
        t, v = self.t, self.cols[col]
        if ts < t[0] or ts > t[-1]:
            die("time %.6f outside the truth log [%.6f, %.6f]" % (ts, t[0], t[-1]))
        i = bisect.bisect_right(t, ts)
        if i >= len(t):
            return v[-1]
        t0, t1 = t[i - 1], t[i]
        return v[i - 1] + (v[i] - v[i - 1]) * ((ts - t0) / (t1 - t0) if t1 > t0 else 0)

    def between(self, col, a, b):
        return self.at(col, b) - self.at(col, a)

    def step_at(self, col, ts):
        """The value of the plant's last period at or before ts: what its counter file held
        then (the plant writes the file once a period; a plant that did not run for a while,
        on a loaded machine, leaves the file at its last period's value, while at() spreads
        the next period's energy over the gap)."""
        t, v = self.t, self.cols[col]
        i = bisect.bisect_right(t, ts)
        return v[max(i - 1, 0)]

    def step_between(self, col, a, b):
        return self.step_at(col, b) - self.step_at(col, a)


def count_cpus():
    """CPUs as /proc/stat counts them (the plant's utilization is over all of them)."""
    with open("/proc/stat") as f:
        return sum(1 for ln in f if ln.startswith("cpu") and ln[3:4].isdigit())


def check_samples(path, carma_chans, start_unix):
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\r\n")
    check(data.endswith(b"\r\n") and b"\n" not in data.replace(b"\r\n", b""),
          "samples.csv: every line ends with CRLF")
    if lines and lines[-1] == b"":
        lines.pop()
    check(bool(lines) and lines[0].decode() == SAMPLES_HEADER,
          "samples.csv: header is exactly '%s'" % SAMPLES_HEADER)
    rows = list(csv.reader([ln.decode() for ln in lines[1:]]))
    check(len(rows) > 0, "samples.csv: has rows (%d)" % len(rows))
    bad, per_chan, last_j, last_t, start_j = [], {}, {}, {}, {}
    for n, r in enumerate(rows, 2):
        if len(r) != 9:
            bad.append("line %d: %d fields" % (n, len(r)))
            continue
        ch = r[2]
        first = ch not in per_chan
        per_chan[ch] = per_chan.get(ch, 0) + 1
        try:
            ts = float(r[0])
            j = float(r[8])
            # Watts are missing (empty) on a channel's first row and on an interval that was
            # not integrated (a counter reset): joules_total does not move there.
            skipped = first or j == last_j.get(ch)
            w = float(r[7]) if r[7] != "" or not skipped else None
        except ValueError:
            bad.append("line %d: not a number: %s" % (n, r))
            continue
        if any(x == "" for i, x in enumerate(r) if i != 7):
            bad.append("line %d: empty field: %s" % (n, r))
        if w is not None and w < 0:
            bad.append("line %d: negative watts" % n)
        if ch in last_j and (j < last_j[ch] - 1e-9 or ts < last_t[ch]):
            bad.append("line %d: %s goes backwards" % (n, ch))
        last_j[ch], last_t[ch] = j, ts
        # the summary counts from the tick that opened its window (after the baseline)
        if ts <= start_unix + 1e-6:
            start_j[ch] = j
    check(not bad, "samples.csv: rows complete and monotonic" + ("" if not bad else
                                                                 ": " + "; ".join(bad[:5])))
    for c in carma_chans:
        name = c["name"]
        if name not in per_chan:
            check(False, "samples.csv: has rows for %s" % name)
            continue
        if last_j.get(name) is not None and c["energy_j"] is not None:
            got = last_j[name] - start_j.get(name, 0.0)
            # both come from the same integration: equal to the µJ printed in samples.csv
            check(abs(got - c["energy_j"]) <= 2e-6 + 1e-9 * c["energy_j"],
                  "samples.csv: joules_total of %s over the summary's window (%.6f) equals "
                  "energy_j (%.6f)" % (name, got, c["energy_j"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--tree", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--samples")
    ap.add_argument("--busy-report")
    ap.add_argument("--baseline", type=float)
    ap.add_argument("--exit-status", type=int)
    ap.add_argument("--wraps", action="append", default=[])
    ap.add_argument("--reset", action="append", default=[])
    ap.add_argument("--tol", type=float, default=0.01)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--min-attr", type=float, default=0.95)
    a = ap.parse_args()

    conf = read_config(a.config)
    truth = Truth(a.truth)
    with open(a.json) as f:
        out = json.load(f)
    chans = {c["name"]: c for c in out.get("channels", [])}
    t_start, t_end = out["start_unix"], out["end_unix"]
    print("# carma sampled %.3f s (%.6f .. %.6f), command ran %.3f s"
          % (t_end - t_start, t_start, t_end, out.get("duration_s", float("nan"))))

    if a.exit_status is not None:
        check(out.get("exit_status") == a.exit_status,
              "exit_status %r == %d" % (out.get("exit_status"), a.exit_status))

    inconclusive = False

    # Per-channel energy between carma's first and last sample.
    cpu_side = []  # (plant channel, carma name) of the CPU-side total domains
    mapped = []  # carma names of every checked counter
    worst = 0.0
    expected_samples = (t_end - t_start) / a.interval + 1
    for c in conf:
        if c["kind"] != "counter":
            print("#    %s: gauge, not checked (no RAPL name)" % c["name"])
            continue
        rapl = rapl_channel(a.tree, c["relpath"])
        if not rapl:
            print("#    %s: not a RAPL zone, not checked" % c["name"])
            continue
        cname, zone, is_sub = rapl
        mapped.append(cname)
        if (not is_sub and zone.startswith("package")) or (is_sub and zone == "dram"):
            cpu_side.append((c, cname))
        ch = chans.get(cname)
        if ch is None:
            check(False, "%s present in the JSON" % cname)
            continue
        t_j = truth.between(c["name"] + "_j", t_start, t_end)
        e_j = ch["energy_j"]
        err = (e_j - t_j) / t_j
        # what the counter files held at carma's first and last sample (see Truth.step_at): a
        # reading is judged against that when it is the nearer, as carma cannot read what the
        # plant has not written yet
        s_j = truth.step_between(c["name"] + "_j", t_start, t_end)
        if s_j > 0 and abs((e_j - s_j) / s_j) < abs(err):
            print("#    %s: %.3f J against the files' values at carma's samples (%.3f J; "
                  "interpolated %.3f J)" % (cname, e_j, s_j, t_j))
            t_j, err = s_j, (e_j - s_j) / s_j
        check(ch.get("source") == "rapl" and ch.get("method") == "measured",
              "%s: source rapl, method measured" % cname)
        check(ch.get("samples", 0) >= 0.8 * expected_samples,
              "%s: %s samples (>= 80%% of %.0f)" % (cname, ch.get("samples"), expected_samples))
        if c["name"] in a.reset:
            # The interval holding the reset is dropped: carma must be below the truth by at
            # most about one or two intervals at full power.
            lo = t_j - c["max_w"] * 2 * a.interval - a.tol * t_j
            at = truth.t[0] + c["reset_at"]
            check(t_start < at < t_end, "%s: the reset (%.3f) falls inside carma's samples"
                  % (c["name"], at))
            check(ch.get("resets", 0) >= 1, "%s: resets %s >= 1" % (cname, ch.get("resets")))
            check(lo <= e_j < t_j, "%s: %.3f J in [%.3f, %.3f) (truth minus the reset interval)"
                  % (cname, e_j, lo, t_j))
            continue
        worst = max(worst, abs(err))
        check(abs(err) <= a.tol, "%s: %.3f J vs truth %.3f J, error %+.3f%% (tol %.1f%%)"
              % (cname, e_j, t_j, 100 * err, 100 * a.tol))
        check(ch.get("resets", 0) == 0, "%s: resets %s == 0" % (cname, ch.get("resets")))
        if c["name"] in a.wraps:
            check(ch.get("wraps", 0) >= 1, "%s: wraps %s >= 1" % (cname, ch.get("wraps")))
        else:
            check(ch.get("wraps", 0) == 0, "%s: wraps %s == 0" % (cname, ch.get("wraps")))
    print("# energy: worst error %.3f%% over %d channels" % (100 * worst, len(conf)))

    # The command's dynamic CPU-side energy.
    #
    # The plant's dynamic power is D*u(t), D = sum of (MAX_W - IDLE_W) over the CPU-side
    # total domains (packages and drams; core subzones are inside the packages) and u the
    # busy fraction of all CPUs. u covers the command and everything else: carma, the plant,
    # the rest of the machine. So the truth's dynamic energy over the command's run W is not
    # the command's alone. Two estimates of the command's share:
    #   A = dyn(W) - r_base*|W|, r_base = dyn(W0)/|W0| over the baseline window W0 just
    #       before the command: the background's dynamic power, measured the way carma
    #       measures it. Right when the background stays steady between W0 and W.
    #   B = D * cpu_s / ncpu, cpu_s the command's CPU time (from carma-busy itself): since u
    #       is linear in busy time, the command's integral of u is exactly cpu_s / ncpu.
    #       Right whatever the background does.
    # When A and B agree within 5% the background was steady, and B is the fair truth: carma
    # splits the energy above the baseline by the command's share of the busy time above the
    # baseline's, which for this linear plant is exactly D * cpu_s / ncpu. Otherwise another load
    # started or stopped on this machine between the baseline and the run: then no baseline
    # can separate the command from it, and the check is inconclusive (exit 3), not failed.
    if a.baseline and a.busy_report:
        rep = {}
        with open(a.busy_report) as f:
            for ln in f:
                k, v = ln.split()
                rep[k] = float(v)
        c0, c1 = rep["start_unix"], rep["end_unix"]
        # u lags the load by up to the plant's 50 ms window: count the tail after the exit.
        w1 = min(c1 + 0.05, t_end)
        b0 = t_start if c0 - t_start >= 0.5 * a.baseline else c0 - a.baseline
        b0 = max(b0, truth.t[0])
        dyn_w = sum(truth.between(c["name"] + "_dyn_j", c0, w1) for c, _ in cpu_side)
        dyn_b = sum(truth.between(c["name"] + "_dyn_j", b0, c0) for c, _ in cpu_side)
        r_base = dyn_b / (c0 - b0)
        est_a = dyn_w - r_base * (w1 - c0)
        d_w = sum(c["max_w"] - c["idle_w"] for c, _ in cpu_side)
        ncpu = count_cpus()
        est_b = d_w * rep["cpu_s"] / ncpu
        steady = est_b > 0 and abs(est_a - est_b) <= 0.05 * est_b
        cmd = out.get("command") or {}
        got = cmd.get("dynamic_cpu_energy_j")
        print("# command: cpu %.3f s on %d cpus, share %s; baseline %.3f W dynamic over "
              "%.3f s; truth dyn over run %.3f J" % (rep["cpu_s"], ncpu, cmd.get("cpu_share"),
                                                    r_base, c0 - b0, dyn_w))
        print("# fair truth: A (baseline-subtracted) %.3f J, B (cpu time) %.3f J: %s"
              % (est_a, est_b, "steady background" if steady else "background changed"))
        if got is None:
            check(False, "command.dynamic_cpu_energy_j is a number (got null)")
        elif not steady:
            print("# attribution: %.3f J (%.1f%% of B), inconclusive" % (got, 100 * got / est_b))
            inconclusive = True
        else:
            ratio = got / est_b
            print("# attribution: %.3f J = %.1f%% of fair truth B (%.1f%% of A)"
                  % (got, 100 * ratio, 100 * got / est_a if est_a > 0 else float("inf")))
            check(ratio >= a.min_attr, "command.dynamic_cpu_energy_j %.3f J >= %.0f%% of %.3f J"
                  % (got, 100 * a.min_attr, est_b))
            check(ratio <= 1.05, "command.dynamic_cpu_energy_j %.3f J <= 105%% of %.3f J"
                  % (got, est_b))
        check(abs(out.get("duration_s", 0) - (c1 - c0)) <= 0.25,
              "duration_s %.3f close to the command's own %.3f s"
              % (out.get("duration_s", 0), c1 - c0))

    if a.samples:
        check_samples(a.samples, [chans[n] for n in mapped if n in chans], out["start_unix"])

    if failures:
        print("check_truth: %d check(s) failed" % len(failures))
        return 1
    if inconclusive:
        print("check_truth: other checks passed; attribution inconclusive (background changed)")
        return 3
    print("check_truth: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
