#!/usr/bin/env bash
# run.sh: the cost of `carma collect` on many targets: 64 fake exporters (one Python process,
# tests/integration/collect_targets.py, 64 ports of 127.0.0.1, keep-alive) serving the body
# of a real `carma exporter` on the 2-socket Intel fixture, scraped every second for
# BENCH_COLLECT_S seconds (default 30). carma's CPU time (user + system, every thread) is
# read from /proc/PID/stat at the first cycle and at the end: the steady cost over the run, as
# a percentage of one core, and per scrape. Target: under 1 % of a core at 64 targets x 1 s.
#
# usage: bench/collect/run.sh [BUILD_DIR]     (default: build)
#
# Environment: BENCH_COLLECT_FIXTURE (intel-2s; grace with --compat srtctl is a body six
# times larger), BENCH_COLLECT_BODY (a body file served instead of the exporter's, e.g. a
# dcgm-exporter's: bench/collect/dcgm_body.py), BENCH_COLLECT_S (30), BENCH_COLLECT_TARGETS (64),
# BENCH_COLLECT_INTERVAL_MS (1000), BENCH_COLLECT_ARGS (more options for carma collect, split at
# blanks, e.g. --srt-gpu).
# Results on stdout and in BUILD_DIR/bench/collect.txt.
set -euo pipefail

build=${1:-build}
carma=$build/carma
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
targets_py=$src/tests/integration/collect_targets.py
py=/usr/bin/python3
[ -x "$py" ] || py=python3
duration=${BENCH_COLLECT_S:-30}
ntargets=${BENCH_COLLECT_TARGETS:-64}
interval_ms=${BENCH_COLLECT_INTERVAL_MS:-1000}
fixture=${BENCH_COLLECT_FIXTURE:-intel-2s}
target_pct=1

if [[ ! -x $carma ]]; then
    echo "run.sh: $carma is missing: build it first (ninja -C $build)" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/carma-bench-collect.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT
hz=$(getconf CLK_TCK)

# wait_file FILE: up to 10 s for FILE to be non-empty
wait_file() {
    local i
    for ((i = 0; i < 1000; i++)); do
        [ -s "$1" ] && return 0
        sleep 0.01
    done
    echo "run.sh: $1 did not appear" >&2
    return 1
}

# the body: what carma exporter serves for the fixture, or BENCH_COLLECT_BODY
body_file=${BENCH_COLLECT_BODY:-}
if [[ -n $body_file ]]; then
    cp "$body_file" "$work/body.prom"
    fixture="$(basename "$body_file")"
else
    compat=()
    [ "$fixture" = grace ] && compat=(--compat srtctl)
    "$carma" exporter --root "$src/tests/fixtures/$fixture" --listen 127.0.0.1:0 --interval 100ms "${compat[@]}" \
        >"$work/exporter.log" 2>&1 &
    epid=$!
    pids+=("$epid")
    port=
    for ((i = 0; i < 500; i++)); do
        port=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$work/exporter.log" | head -n 1 | cut -d: -f2 || true)
        [ -n "$port" ] && break
        sleep 0.01
    done
    [ -n "$port" ] || {
        echo "run.sh: carma exporter did not start: $(cat "$work/exporter.log")" >&2
        exit 1
    }
    sleep 0.5
    "$py" -c 'import sys, urllib.request
sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1]).read())' \
        "http://127.0.0.1:$port/metrics" >"$work/body.prom"
    kill -TERM "$epid"
    wait "$epid" || true
fi
channels=$(grep -c '^carma_power_watts{\|^DCGM_FI_DEV_POWER_USAGE{' "$work/body.prom")
samples=$(grep -vc '^#' "$work/body.prom")

# the targets
"$py" "$targets_py" --body "$work/body.prom" --count "$ntargets" --ready "$work/ports" \
    >"$work/targets.log" 2>&1 &
tpid=$!
pids+=("$tpid")
wait_file "$work/ports"
sed 's/^/127.0.0.1:/' "$work/ports" >"$work/targets.txt"

# the collector
read -r -a extra <<<"${BENCH_COLLECT_ARGS:-}"
"$carma" collect --targets-file "$work/targets.txt" -o "$work/out" --interval "${interval_ms}ms" "${extra[@]}" \
    >"$work/collect.out" 2>"$work/collect.err" &
cpid=$!
pids+=("$cpid")

# cpu_ticks PID: utime + stime of the whole process (every thread, live or ended)
cpu_ticks() {
    awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}
wait_file "$work/out/samples.csv"
while [ "$(wc -l <"$work/out/samples.csv")" -lt 2 ]; do sleep 0.01; done
t0_ns=$(date +%s%N)
c0=$(cpu_ticks "$cpid")
t0_py=$(cpu_ticks "$tpid")
sleep "$duration"
c1=$(cpu_ticks "$cpid")
t1_py=$(cpu_ticks "$tpid")
t1_ns=$(date +%s%N)
rss_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$cpid/status")
kill -TERM "$cpid"
wait "$cpid" || {
    echo "run.sh: carma collect failed: $(cat "$work/collect.err")" >&2
    exit 1
}
rows=$(($(wc -l <"$work/out/samples.csv") - 1))
cycles=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cycles"])' "$work/out/manifest.json")
errors=$("$py" -c 'import json,sys; print(sum(t["error_count"] for t in json.load(open(sys.argv[1]))["targets"]))' "$work/out/manifest.json")

report=$(
    awk -v c0="$c0" -v c1="$c1" -v p0="$t0_py" -v p1="$t1_py" -v t0="$t0_ns" -v t1="$t1_ns" \
        -v hz="$hz" -v n="$ntargets" -v target="$target_pct" -v iv="$interval_ms" \
        -v ch="$channels" -v smp="$samples" -v rows="$rows" -v cyc="$cycles" -v err="$errors" \
        -v rss="$rss_kb" -v fx="$fixture" -v args="${BENCH_COLLECT_ARGS:-}" -v bytes="$(wc -c <"$work/body.prom")" 'BEGIN {
        wall = (t1 - t0) / 1e9
        cpu = (c1 - c0) / hz
        pct = 100 * cpu / wall
        scrapes = n * wall / (iv / 1000)
        printf "carma collect%s: %d targets every %d ms for %.1f s (body: %s, %d channels, %d samples, %d bytes)\n", args == "" ? "" : " " args, n, iv, wall, fx, ch, smp, bytes
        printf "  collector CPU  %.3f s = %.3f %% of one core (target < %g %%: %s)\n", cpu, pct, target, pct < target ? "met" : "NOT met"
        printf "  per scrape     %.1f us (request, parse, rows; clock ticks of 1/%d s)\n", 1e6 * cpu / scrapes, hz
        printf "  peak RSS       %.1f MiB\n", rss / 1024
        printf "  run            %d cycles, %d rows in samples.csv, %d failed scrapes\n", cyc, rows, err
        printf "  (the 64 fake exporters, one Python process: %.1f %% of one core)\n", 100 * (p1 - p0) / hz / wall
    }'
)
echo "$report"
mkdir -p "$build/bench"
echo "$report" >"$build/bench/collect.txt"
