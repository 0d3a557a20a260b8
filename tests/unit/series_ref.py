#!/usr/bin/python3
"""numpy reference for src/analysis/series.c (driven by tests/unit/test_series.c).

Usage: series_ref.py CASES_FILE. The file holds cases, each a line
    case <snap|interp|counter> <start> <end> <max_gap_s> <edge_tol_s> <n>
followed by n lines "<t> <w>" (numbers as %.17g). For every case one line is printed:
    ok <joules> <avg_power_w> <mean> <min> <p5> <p50> <p95> <p99> <max> <samples> \
       <sample_start> <sample_end> <stat_n>
or  err <message>
with floats as repr() (round-trip exact).

snap is srt-slurm's windowed_energy (srt-slurm.md §6.5) written the way srtctl writes it with
numpy: searchsorted, np.trapz / np.trapezoid, np.mean, np.min, np.max, np.percentile. interp and
counter are independent, plain restatements of carma's own definitions (series.h).
"""
import math
import sys

import numpy as np

MAX_SAMPLE_GAP_SECONDS = 3.0
trapz = getattr(np, "trapezoid", None) or np.trapz


class RefError(Exception):
    pass


def stats(vals):
    v = np.asarray(vals, dtype=np.float64)
    p5, p50, p95, p99 = (float(x) for x in np.percentile(v, [5, 50, 95, 99]))
    return [float(np.mean(v)), float(np.min(v)), p5, p50, p95, p99, float(np.max(v))]


def snap(label, times, watts, start, end):
    if len(times) == 0:
        raise RefError(f"{label}: no power samples available")
    n = len(times)

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
        raise RefError(f"{label}: nearest sample to window start is {gap:.3f}s away, no coverage")
    gap = abs(times[ei] - end)
    if gap > MAX_SAMPLE_GAP_SECONDS:
        raise RefError(f"{label}: nearest sample to window end is {gap:.3f}s away, no coverage")
    if ei <= si:
        raise RefError(f"{label}: window narrower than the sample spacing")
    seg_t = times[si:ei + 1]
    seg_w = watts[si:ei + 1]
    joules = float(trapz(seg_w, seg_t))
    duration = end - start
    avg = joules / duration if duration > 0 else 0.0
    return [joules, avg] + stats(seg_w) + [ei - si + 1, float(times[si]), float(times[ei]),
                                          ei - si + 1]


def coverage(label, t, start, end, max_gap, tol):
    n = len(t)
    if t[0] - start > tol:
        raise RefError(f"{label}: first sample is {t[0] - start:.3f}s after window start, "
                       "no coverage")
    if end - t[-1] > tol:
        raise RefError(f"{label}: last sample is {end - t[-1]:.3f}s before window end, "
                       "no coverage")
    # steps that overlap the open window (start, end), bracketing samples included
    kl = max([k for k in range(n) if t[k] <= start], default=0)
    kr = min([k for k in range(n) if t[k] >= end], default=n - 1)
    for k in range(kl, kr):
        gap = t[k + 1] - t[k]
        if gap > max_gap:
            raise RefError(f"{label}: {gap:.3f}s gap between samples at {t[k]:.3f} and "
                           f"{t[k + 1]:.3f}, over the {max_gap:.3f}s limit")
    return kl, kr


def interp(label, t, w, start, end, max_gap, tol):
    n = len(t)
    if n == 0:
        raise RefError(f"{label}: no power samples available")
    if not end > start:
        raise RefError(f"{label}: window end is not after its start")
    kl, kr = coverage(label, t, start, end, max_gap, tol)
    t = [float(x) for x in t]
    w = [float(x) for x in w]

    def value(x, right):
        # the path's value at x: right limit (start) or left limit (end), held past the ends
        if x < t[0] or (x == t[0] and not right):
            return w[0]
        if x > t[-1] or (x == t[-1] and right):
            return w[-1]
        at = [k for k in range(n) if t[k] == x]
        if at:
            return w[at[-1]] if right else w[at[0]]
        k1 = next(k for k in range(n) if t[k] > x)
        k0 = k1 - 1
        slope = (w[k1] - w[k0]) / (t[k1] - t[k0])
        return slope * (x - t[k0]) + w[k0]

    inner = [k for k in range(n) if start < t[k] < end]
    px = [start] + [t[k] for k in inner] + [end]
    py = [value(start, True)] + [w[k] for k in inner] + [value(end, False)]
    joules = float(trapz(np.array(py), np.array(px)))
    samples = sum(1 for x in t if start <= x <= end)
    return [joules, joules / (end - start)] + stats(py) + [samples, t[kl], t[kr], len(py)]


def counter(label, t, c, start, end, max_gap, tol):
    n = len(t)
    if n == 0:
        raise RefError(f"{label}: no energy samples available")
    if not end > start:
        raise RefError(f"{label}: window end is not after its start")
    kl, kr = coverage(label, t, start, end, max_gap, tol)
    t = [float(x) for x in t]
    c = [float(x) for x in c]
    parts, powers, resets = [], {}, 0
    for k in range(n - 1):
        d, dt = c[k + 1] - c[k], t[k + 1] - t[k]
        if dt == 0:
            inside = start <= t[k] < end
        else:
            inside = min(t[k + 1], end) > max(t[k], start)
        if not inside:
            continue
        if d < 0:
            resets += 1
            continue
        if dt == 0:
            parts.append(d)
            continue
        parts.append(d * (min(t[k + 1], end) - max(t[k], start)) / dt)
        powers[k] = d / dt
    if start < t[0] and n >= 2 and c[1] >= c[0] and t[1] > t[0]:
        p = (c[1] - c[0]) / (t[1] - t[0])
        parts.append(p * (min(end, t[0]) - start))
        powers.setdefault(0, p)
    if end > t[-1] and n >= 2 and c[-1] >= c[-2] and t[-1] > t[-2]:
        p = (c[-1] - c[-2]) / (t[-1] - t[-2])
        parts.append(p * (end - max(start, t[-1])))
        powers.setdefault(n - 2, p)
    if not powers:
        raise RefError(f"{label}: no usable counter step inside the window")
    joules = math.fsum(parts)
    samples = sum(1 for x in t if start <= x <= end)
    pv = [powers[k] for k in sorted(powers)]
    return ([joules, joules / (end - start)] + stats(pv) + [samples, t[kl], t[kr], len(pv)],
            resets)


def main():
    lines = open(sys.argv[1]).read().split("\n")
    i = 0
    out = []
    while i < len(lines):
        head = lines[i].split()
        i += 1
        if not head:
            continue
        assert head[0] == "case", head
        mode, start, end, max_gap, tol, n = (head[1], float(head[2]), float(head[3]),
                                              float(head[4]), float(head[5]), int(head[6]))
        rows = [lines[i + k].split() for k in range(n)]
        i += n
        t = np.array([float(r[0]) for r in rows], dtype=np.float64)
        w = np.array([float(r[1]) for r in rows], dtype=np.float64)
        try:
            if mode == "snap":
                res = snap("L", t, w, start, end)
            elif mode == "interp":
                res = interp("L", t, w, start, end, max_gap, tol)
            else:
                res, _resets = counter("L", t, w, start, end, max_gap, tol)
            out.append("ok " + " ".join(repr(float(x)) if isinstance(x, float) else str(x)
                                        for x in res))
        except RefError as e:
            out.append("err " + str(e))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
