#!/usr/bin/env bash
# collect.sh: `carma report DIR` of a large `carma collect` directory beside pandas doing the
# same work (collect_pandas.py: read_csv + groupby + numpy trapezoid), in the same run.
#
# usage: bench/report/collect.sh BUILD_DIR [NODES [CHANNELS [SECONDS]]]
#        (default 16 nodes x 16 channels x 86400 s at 1 s: 22,118,400 rows, ~2.2 GB)
#
# Builds nothing: it expects BUILD_DIR/carma (a release build: meson setup build-perf
# -Dbuildtype=release) and /usr/bin/python3 with pandas (Debian's python3-pandas). It writes
# the directory with collect_gen.py (samples.csv, nodes.csv, manifest.json, windows.csv: ten
# windows), then times `carma report DIR --windows DIR/windows.csv --json-out OUT` (best of
# BENCH_REPS, default 3: wall clock and peak RSS from /usr/bin/time) and collect_pandas.py once
# (wall clock and peak RSS), compares every channel's energy per window (carma cuts windows at
# their edges by interpolation, pandas takes the samples inside: they differ by the edge
# slivers, well under 1 %), and prints the ratio, carma's peak bytes per row and whether the
# targets are met (>= 3x faster than pandas, <= 24 bytes/row). Writes
# BUILD_DIR/bench/report_collect.txt. Environment: BENCH_REPS, TMPDIR.
set -euo pipefail

build=${1:?usage: bench/report/collect.sh BUILD_DIR [NODES [CHANNELS [SECONDS]]]}
nodes=${2:-16}
channels=${3:-16}
seconds=${4:-86400}
reps=${BENCH_REPS:-3}
py=/usr/bin/python3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
carma=$build/carma
if [[ ! -x $carma ]]; then
    echo "collect.sh: $carma is missing: ninja -C $build carma" >&2
    exit 2
fi
if ! $py -c 'import pandas' 2>/dev/null; then
    echo "collect.sh: $py cannot import pandas (apt-get install python3-pandas)" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/carma-bench-collect-report.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$py" "$here/collect_gen.py" "$work/c" "$nodes" "$channels" "$seconds"
rows=$(($(wc -l <"$work/c/samples.csv") - 1))

{
    echo "carma report of a collect directory vs pandas, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "machine: $(nproc) CPUs, $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- |
        sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "input: $rows rows ($nodes nodes x $channels channels x $seconds s)," \
        "$(du -m "$work/c/samples.csv" | cut -f1) MiB; windows: the run and 10 more"
} | tee "$work/head.txt"

best=
best_kb=
for ((i = 0; i < reps; i++)); do
    /usr/bin/time -f '%e %M' -o "$work/k.time" \
        "$carma" report "$work/c" --windows "$work/c/windows.csv" --json-out "$work/carma.json" \
        >/dev/null 2>"$work/carma.err" || {
        echo "collect.sh: carma report failed: $(cat "$work/carma.err")" >&2
        exit 1
    }
    read -r s kb <"$work/k.time"
    if [[ -z $best ]] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
        best=$s
    fi
    if [[ -z $best_kb ]] || ((kb > best_kb)); then best_kb=$kb; fi
done
/usr/bin/time -f '%e %M' -o "$work/p.time" \
    "$py" "$here/collect_pandas.py" "$work/c" "$work/c/windows.csv" "$work/pandas.json" \
    >"$work/pandas.phases"
read -r ps pkb <"$work/p.time"

"$py" - "$work/carma.json" "$work/pandas.json" "$best" "$best_kb" "$ps" "$pkb" "$rows" \
    "$(cat "$work/pandas.phases")" <<'EOF' | tee "$work/tail.txt"
import json, sys
cj, pj, cs, ckb, ps, pkb, rows, phases = sys.argv[1:9]
c = json.load(open(cj))
p = json.load(open(pj))
cs, ps, ckb, pkb, rows = float(cs), float(ps), int(ckb), int(pkb), int(rows)
phases = json.loads(phases)
cw = {w["name"]: w for w in c["windows"]}
worst = 0.0
worst_run = 0.0
compared = 0
for w in p:
    k = cw[w["name"]]
    ch = {(x["node"], x["target"], x["channel"]): x["energy_j"] for x in k["channels"]}
    for x in w["channels"]:
        e = ch[(x["node"], x["target"], x["channel"])]
        ref = x["counter_j"]
        if ref > 0:
            d = abs(e - ref) / ref
            worst = max(worst, d)
            if w["name"] == "run":
                worst_run = max(worst_run, d)
            compared += 1
ratio = ps / cs
bpr = ckb * 1024 / rows
print(f"carma report   {cs:8.2f} s  peak RSS {ckb / 1024:8.1f} MiB = {bpr:5.1f} bytes/row (best of runs)")
print(f"pandas         {ps:8.2f} s  peak RSS {pkb / 1024:8.1f} MiB = {pkb * 1024 / rows:5.1f} bytes/row"
      f" (read_csv {phases['read_s']:.2f} s, the rest {phases['compute_s']:.2f} s)")
print(f"ratio          {ratio:.1f}x faster (target >= 3x: {'met' if ratio >= 3 else 'NOT met'});"
      f" memory target <= 24 bytes/row: {'met' if bpr <= 24 else 'NOT met'}")
print(f"agreement      {compared} channel-windows, largest relative difference {worst:.2e}"
      f" (edge slivers: carma cuts at the window's edges); over the whole run {worst_run:.2e}")
EOF
mkdir -p "$build/bench"
cat "$work/head.txt" "$work/tail.txt" >"$build/bench/report_collect.txt"
