#!/usr/bin/env bash
# run.sh: carma report's numeric core (src/report/series.c) against a numpy script doing the
# same per-device windowed energy and percentiles, on a generated srt-slurm GPU samples.csv.
#
# usage: bench/report/run.sh BUILD_DIR [ROWS]      (ROWS: default 10000000)
#
# Builds nothing: it expects BUILD_DIR/bench/bench_series (ninja -C BUILD_DIR
# bench/bench_series) and /usr/bin/python3 with numpy. It writes a ROWS-row samples.csv
# (2 hosts x 8 GPUs, one scrape a second), ten windows that together cover the run, then
#   1. bench_series run: read, sort, srt-slurm's snapped window and carma's interpolated one
#      per (window, device); best of BENCH_REPS (3) runs;
#   2. numpy_report.py: np.loadtxt, a stable sort per device, windowed_energy in numpy
#      (searchsorted, np.trapz, np.mean/min/max, np.percentile); one run;
#   3. compares the snap figures of both, number for number.
# Prints each phase, the ratios, peak memory per sample held, and the agreement; writes
# BUILD_DIR/bench/series_results.json. Environment: BENCH_REPS, TMPDIR.
set -euo pipefail

build=${1:?usage: bench/report/run.sh BUILD_DIR [ROWS]}
rows=${2:-10000000}
reps=${BENCH_REPS:-3}
bench=$build/bench/bench_series
py=/usr/bin/python3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ ! -x $bench ]]; then
    echo "run.sh: $bench is missing: ninja -C $build bench/bench_series" >&2
    exit 2
fi
if ! $py -c 'import numpy' 2>/dev/null; then
    echo "run.sh: $py cannot import numpy (apt-get install python3-numpy)" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/carma-bench-series.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$bench" gen "$work/samples.csv" "$rows"
$py - "$rows" >"$work/windows.txt" <<'EOF'
import sys
rows = int(sys.argv[1])
base, span = 1785168098.0, rows / 16  # the generator: 16 devices, one scrape a second
for k in range(10):
    print(repr(base + k * span / 10 + 0.5), repr(base + (k + 1) * span / 10 - 0.5))
EOF

echo "carma report numeric core vs numpy, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- |
    sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "input: $rows rows, $(du -m "$work/samples.csv" | cut -f1) MiB, 16 devices, 10 windows"
echo

for ((i = 0; i < reps; i++)); do
    "$bench" run "$work/samples.csv" "$work/windows.txt" "$work/c.out" >"$work/c.$i.json"
done
/usr/bin/time -f '%M' -o "$work/py.rss" \
    $py "$here/numpy_report.py" "$work/samples.csv" "$work/windows.txt" "$work/py.out" \
    >"$work/py.json"

$py - "$work" "$reps" "$build/bench/series_results.json" <<'EOF'
import json, sys
work, reps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = [json.load(open(f"{work}/c.{i}.json")) for i in range(reps)]
best = lambda k: min(r[k] for r in runs)
c = {k: best(k) for k in ("load_s", "sort_s", "snap_s", "interp_s")}
c["total_s"] = min(r["load_s"] + r["sort_s"] + r["snap_s"] for r in runs)
c["bytes_per_sample"] = max(r["bytes_per_sample"] for r in runs)
p = json.load(open(f"{work}/py.json"))
p["total_s"] = p["load_s"] + p["sort_s"] + p["snap_s"]
p["peak_rss_bytes"] = int(open(f"{work}/py.rss").read().split()[-1]) * 1024

def rows(path):
    return [l.split() for l in open(path) if l.startswith("snap ")]
cr, pr = rows(f"{work}/c.out"), rows(f"{work}/py.out")
assert len(cr) == len(pr), (len(cr), len(pr))
worst, same, total = 0.0, 0, 0
for a, b in zip(cr, pr):
    assert a[:4] == b[:4] and a[-1] == b[-1], (a[:4], b[:4])
    for x, y in zip(a[4:-1], b[4:-1]):
        x, y = float(x), float(y)
        total += 1
        same += x == y
        if x != y:
            worst = max(worst, abs(x - y) / max(abs(x), abs(y)))

print(f"{'phase':<28}{'carma (best of %d)' % reps:>20}{'numpy':>12}{'ratio':>10}")
for name, ck, pk in (("read CSV", "load_s", "load_s"), ("group + sort", "sort_s", "sort_s"),
                     ("snap windows (srt-slurm)", "snap_s", "snap_s"),
                     ("total", "total_s", "total_s")):
    print(f"{name:<28}{c[ck]:>19.3f}s{p[pk]:>11.3f}s{p[pk] / c[ck]:>9.1f}x")
print(f"{'interpolated windows':<28}{c['interp_s']:>19.3f}s{'-':>12}")
print(f"memory: carma {c['bytes_per_sample']:.2f} bytes per sample held (peak RSS / samples;"
      f" target <= 16 + process overhead), numpy peak RSS {p['peak_rss_bytes'] / 2**20:.0f} MiB")
print(f"agreement: {len(cr)} snapped windows, {same} of {total} numbers bit-identical, "
      f"max relative difference {worst:.3g} (target 1e-9)")
ratio = p["total_s"] / c["total_s"]
print(f"target >= 20x end to end: {'met' if ratio >= 20 else 'NOT met'} ({ratio:.1f}x)")
json.dump({"carma": c, "numpy": p, "ratio_total": ratio, "snap_windows": len(cr),
           "bit_identical": same, "numbers": total, "max_rel_diff": worst},
          open(out, "w"), indent=2)
EOF
