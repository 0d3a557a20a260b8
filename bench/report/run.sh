#!/usr/bin/env bash
# run.sh: `carma report DIR` end to end (srtlog's loading + series' snapped windows) against
# numpy_srtlog.py doing the same work, on a generated srt-slurm log directory.
#
# usage: bench/report/run.sh BUILD_DIR [ROWS]      (ROWS: default 10000000)
#
# Builds nothing: it expects BUILD_DIR/bench/bench_report (ninja -C BUILD_DIR
# bench/bench_report) and /usr/bin/python3 with numpy. It writes a log directory
# (bench_report gen: benchmark.out, ten sa-bench result JSONs covering the run, power/samples.csv
# v2 with ROWS rows of 2 hosts x 8 GPUs, power/manifest.json with prefill/decode/agg roles), then
#   1. bench_report run DIR: srt_log_discover + windows + srt_log_load_gpu, then series_window_snap
#      of every device, node and role series for every window; best of BENCH_REPS (3) runs;
#   2. when BUILD_DIR/carma has a working `report` command: `carma report DIR --edges snap
#      --json-out OUT`, timed the same way (wall clock, peak RSS), with the CPUs online and
#      with one thread (CARMA_REPORT_THREADS=1), the two JSON outputs compared byte for byte;
#   3. numpy_srtlog.py DIR: the same in numpy; one run; and pandas_srtlog.py DIR (read_csv with
#      usecols, groupby, numpy's trapezoid: the script a pandas user would write) where pandas
#      is installed;
#   4. bench_report parse: the bare parse of samples.csv (line ends and commas found, nothing
#      else), the floor of any reader; best of BENCH_REPS;
#   5. compares the snap figures of bench_report with numpy's and pandas', number for number.
# Prints each phase, the ratio, peak memory per sample held, and the agreement; writes
# BUILD_DIR/bench/report_results.json. Environment: BENCH_REPS, TMPDIR.
set -euo pipefail

build=${1:?usage: bench/report/run.sh BUILD_DIR [ROWS]}
rows=${2:-10000000}
reps=${BENCH_REPS:-3}
bench=$build/bench/bench_report
py=/usr/bin/python3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ ! -x $bench ]]; then
    echo "run.sh: $bench is missing: ninja -C $build bench/bench_report" >&2
    exit 2
fi
if ! $py -c 'import numpy' 2>/dev/null; then
    echo "run.sh: $py cannot import numpy (apt-get install python3-numpy)" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/carma-bench-report.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$bench" gen "$work/log" "$rows"

echo "carma report end to end vs numpy, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- |
    sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "input: $rows rows, $(du -m "$work/log/power/samples.csv" | cut -f1) MiB, 16 devices," \
    "10 windows"
echo

for ((i = 0; i < reps; i++)); do
    /usr/bin/time -f '%e %M' -o "$work/c.$i.time" \
        "$bench" run "$work/log" "$work/c.out" >"$work/c.$i.json"
done
carma_ok=0
if [[ -x $build/carma ]] &&
    "$build/carma" report "$work/log" --edges snap --json-out "$work/carma.json" \
        >/dev/null 2>&1; then
    carma_ok=1
    for ((i = 0; i < reps; i++)); do
        /usr/bin/time -f '%e %M' -o "$work/k.$i.time" \
            "$build/carma" report "$work/log" --edges snap --json-out "$work/carma.json" \
            >/dev/null
    done
    # the same with one thread (CARMA_REPORT_THREADS=1: the sequential reader); its JSON must
    # be the parallel one's, byte for byte
    for ((i = 0; i < reps; i++)); do
        CARMA_REPORT_THREADS=1 /usr/bin/time -f '%e %M' -o "$work/k1.$i.time" \
            "$build/carma" report "$work/log" --edges snap --json-out "$work/carma1.json" \
            >/dev/null
    done
    cmp -s "$work/carma.json" "$work/carma1.json" && echo same >"$work/k1.same"
fi
/usr/bin/time -f '%e %M' -o "$work/py.time" \
    $py "$here/numpy_srtlog.py" "$work/log" "$work/py.out" >"$work/py.json"
# the pandas peer, where pandas is installed (python3-pandas)
pandas_ok=0
if $py -c 'import pandas' 2>/dev/null; then
    pandas_ok=1
    /usr/bin/time -f '%e %M' -o "$work/pd.time" \
        $py "$here/pandas_srtlog.py" "$work/log" "$work/pd.out" >"$work/pd.json"
fi
# the bare parse of the same samples.csv: best of the reps
for ((i = 0; i < reps; i++)); do
    "$bench" parse "$work/log/power/samples.csv" >"$work/bare.$i.json"
done

$py - "$work" "$reps" "$carma_ok" "$build/bench/report_results.json" "$pandas_ok" <<'EOF2'
import json, os, sys
work, reps, carma_ok, out = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
pandas_ok = sys.argv[5] == "1"
def tm(path):
    wall, rss = open(path).read().split()[-2:]
    return float(wall), int(rss) * 1024
runs = [json.load(open(f"{work}/c.{i}.json")) for i in range(reps)]
for i, r in enumerate(runs):
    r["wall_s"], r["peak_rss_bytes_time"] = tm(f"{work}/c.{i}.time")
    r["total_s"] = r["discover_s"] + r["load_s"] + r["snap_s"]
best = min(runs, key=lambda r: r["total_s"])
c = dict(best)
c["bytes_per_sample"] = max(r["bytes_per_sample"] for r in runs)
p = json.load(open(f"{work}/py.json"))
p["total_s"] = p["discover_s"] + p["load_s"] + p["series_s"] + p["snap_s"]
p["wall_s"], p["peak_rss_bytes"] = tm(f"{work}/py.time")
k = None
if carma_ok:
    ks = [tm(f"{work}/k.{i}.time") for i in range(reps)]
    k = {"wall_s": min(x[0] for x in ks), "peak_rss_bytes": max(x[1] for x in ks)}
    k1 = [tm(f"{work}/k1.{i}.time") for i in range(reps)]
    k["wall_1thread_s"] = min(x[0] for x in k1)
    k["peak_rss_1thread_bytes"] = max(x[1] for x in k1)
    k["json_same_1thread"] = os.path.exists(f"{work}/k1.same")

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

print(f"{'phase':<40}{'carma (best of %d)' % reps:>20}{'numpy':>12}")
print(f"{'discovery + windows':<40}{c['discover_s']:>19.3f}s{p['discover_s']:>11.3f}s")
print(f"{'read CSV + build series':<40}{c['load_s']:>19.3f}s"
      f"{p['load_s'] + p['series_s']:>11.3f}s")
print(f"{'  of which numpy read / numpy series':<40}{'':>20}{p['load_s']:>7.3f}s /"
      f" {p['series_s']:.3f}s")
print(f"{'snap windows (%d)' % len(cr):<40}{c['snap_s']:>19.3f}s{p['snap_s']:>11.3f}s")
print(f"{'total (in-process)':<40}{c['total_s']:>19.3f}s{p['total_s']:>11.3f}s")
print(f"{'wall clock, whole process':<40}{c['wall_s']:>19.3f}s{p['wall_s']:>11.3f}s")
if k:
    print(f"{'carma report --edges snap (wall)':<40}{k['wall_s']:>19.3f}s"
          f"{p['wall_s']:>11.3f}s")
else:
    print("carma report DIR: not available in this build yet; bench_report timed instead")
held = c["held"]
print(f"samples held: {held} (device {c['held_device']}, node {c['held_node']}, role "
      f"{c['held_role']}, utilization {c['held_util']})")
print(f"memory: carma {c['bytes_per_sample']:.2f} bytes per sample held (peak RSS "
      f"{c['peak_rss_bytes'] / 2**20:.0f} MiB; target <= 16), numpy peak RSS "
      f"{p['peak_rss_bytes'] / 2**20:.0f} MiB")
print(f"agreement: {len(cr)} snapped windows, {same} of {total} numbers bit-identical, "
      f"max relative difference {worst:.3g} (target 1e-9)")
if k:
    k["bytes_per_sample"] = k["peak_rss_bytes"] / held
    print(f"memory: carma report {k['bytes_per_sample']:.2f} bytes per sample held (peak RSS "
          f"{k['peak_rss_bytes'] / 2**20:.0f} MiB)")
ratio = p["wall_s"] / c["wall_s"]
print(f"target >= 20x end to end (wall clock): {'met' if ratio >= 20 else 'NOT met'} "
      f"({ratio:.1f}x; in-process {p['total_s'] / c['total_s']:.1f}x)")
if k:
    kr = p["wall_s"] / k["wall_s"]
    k["ratio_wall"] = kr
    print(f"target >= 20x, carma report itself (wall clock): {'met' if kr >= 20 else 'NOT met'} "
          f"({kr:.1f}x)")
bare = min((json.load(open(f"{work}/bare.{i}.json")) for i in range(reps)),
           key=lambda b: b["parse_s"])
print(f"bare parse of samples.csv (line ends and commas only, best of {reps}): "
      f"{bare['parse_s']:.3f}s, {bare['bytes'] / bare['parse_s'] / 1e9:.2f} GB/s")
best_carma = k["wall_s"] if k else c["wall_s"]
print(f"carma / bare parse: {best_carma / bare['parse_s']:.2f}x (target <= 2x)")
if k:
    print(f"carma report with 1 thread (CARMA_REPORT_THREADS=1): {k['wall_1thread_s']:.3f}s, "
          f"{k['wall_1thread_s'] / bare['parse_s']:.2f}x the bare parse, peak RSS "
          f"{k['peak_rss_1thread_bytes'] / 2**20:.0f} MiB; its JSON "
          f"{'byte for byte the one of' if k['json_same_1thread'] else 'DIFFERS from'} "
          f"{os.cpu_count()} CPUs'")
pd_res = None
if pandas_ok:
    pd_res = json.load(open(f"{work}/pd.json"))
    pd_res["wall_s"], pd_res["peak_rss_bytes"] = tm(f"{work}/pd.time")
    qr = rows(f"{work}/pd.out")
    agree, pworst = len(qr) == len(cr), 0.0
    for a, b in zip(cr, qr):
        agree = agree and a[:4] == b[:4] and a[-1] == b[-1]
        for x, y in zip(a[4:-1], b[4:-1]):
            x, y = float(x), float(y)
            if x != y:
                pworst = max(pworst, abs(x - y) / max(abs(x), abs(y)))
    pd_res["agree_labels"] = agree
    pd_res["max_rel_diff"] = pworst
    pr_ratio = pd_res["wall_s"] / best_carma
    pd_res["ratio_wall"] = pr_ratio
    print(f"pandas {pd_res['pandas']}: {pd_res['wall_s']:.3f}s wall (read_csv "
          f"{pd_res['load_s']:.3f}s, series {pd_res['series_s']:.3f}s, snap "
          f"{pd_res['snap_s']:.3f}s), peak RSS {pd_res['peak_rss_bytes'] / 2**20:.0f} MiB; "
          f"max relative difference to carma {pworst:.3g}, labels "
          f"{'the same' if agree else 'DIFFER'}")
    print(f"target >= 10x pandas (wall clock): {'met' if pr_ratio >= 10 else 'NOT met'} "
          f"({pr_ratio:.1f}x)")
else:
    print("pandas: not installed (apt-get install python3-pandas): its peer not run")
json.dump({"carma": c, "carma_report": k, "numpy": p, "pandas": pd_res, "bare_parse": bare,
           "ratio_wall": ratio,
           "ratio_total": p["total_s"] / c["total_s"], "snap_windows": len(cr),
           "bit_identical": same, "numbers": total, "max_rel_diff": worst},
          open(out, "w"), indent=2)
EOF2
