#!/usr/bin/env bash
# run.sh: the measurement core's benchmarks, carma beside its naive peer, on a fixture.
#
# usage: bench/run.sh BUILD_DIR      (`make bench` runs it on the default build)
#
# Builds nothing: it expects BUILD_DIR/carma and BUILD_DIR/bench/bench_read. It makes the
# 32-channel fixture (make_fixture.sh), then
#   1. bench_read: the cost of one channel read, carma's sampler and raw read beside the
#      naive open/read/close peer, in one process;
#   2. CPU time: `carma stat --root FIXTURE --interval 1ms|100ms [-o DIR] -- sleep D` and the
#      naive peer sampling the same files at the same rate (`bench_read --naive-loop`), each
#      run as a child of `bench_read --rusage`, which reports the child's user + system
#      time (carma's waited-for child `sleep` included: nothing is subtracted) over its wall
#      time, as a percentage of one core. Runs are interleaved; medians of BENCH_REPS.
# The fixed cost of a carma run (start, probe, summary, run directory) is measured apart
# with `-- true`, so that the steady per-second cost can be told from it. The floor beside
# them: `bench_read --read-loop` (carma's wake-up, timerfd + poll + read, then its sources'
# reads of the same channels, nothing else), with `bench_read --wake-loop` (the wake-up
# alone) to tell the wake-up from the reads.
# Environment: BENCH_DURATION (seconds at 1 kHz, default 10), BENCH_SLOW_DURATION (seconds at 10 Hz,
# default 3 x BENCH_DURATION), BENCH_REPS (3), BENCH_ROUNDS (7),
# BENCH_TICKS (20000). Results go to stdout and to BUILD_DIR/bench/results.{txt,json}.
set -euo pipefail

build=${1:?usage: bench/run.sh BUILD_DIR}
carma=$build/carma
bench=$build/bench/bench_read
for x in "$carma" "$bench"; do
    if [[ ! -x $x ]]; then
        echo "run.sh: $x is missing: build it first (ninja -C $build carma bench/bench_read)" >&2
        exit 2
    fi
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
duration=${BENCH_DURATION:-10}
# 10 Hz runs last longer: their steady cost (a few ms a second) is the run's CPU less the fixed
# cost of a run (12-20 ms), and over a short run the fixed cost's spread is as large as it
slow_duration=${BENCH_SLOW_DURATION:-$((3 * duration))}
reps=${BENCH_REPS:-3}
rounds=${BENCH_ROUNDS:-7}
ticks=${BENCH_TICKS:-20000}
target_read_us=2
target_1khz_pct=2
target_10hz_pct=0.1

work=$(mktemp -d "${TMPDIR:-/tmp}/carma-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
fixture=$(bash "$here/make_fixture.sh" "$work/fixture")
out_txt=$build/bench/results.txt
out_json=$build/bench/results.json
log=$work/log

exec > >(tee "$out_txt")

model=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*:[[:space:]]*//' ||
    true)
echo "carma benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, ${model:-unknown CPU}, Linux $(uname -r), load $(cut -d' ' -f1-3 \
    /proc/loadavg)"
echo "fixture: $fixture ($(find "$fixture/sys/class/powercap" -name energy_uj | wc -l) RAPL" \
    "counters, $(grep -c '^cpu[0-9]' "$fixture/proc/stat") CPUs in proc/stat)"
echo

# 1. cost per channel read
"$bench" --root "$fixture" --rounds "$rounds" --ticks "$ticks" --json-out "$work/read.json"
echo

# 2. CPU time as a share of one core
# measure KEY CMD...: runs CMD under bench_read --rusage and appends "cpu_s wall_s" to
# $work/KEY
measure() {
    local key=$1
    shift
    local line
    line=$("$bench" --rusage -- "$@" 2>>"$log" | grep '^rusage ' || true)
    if [[ -z $line ]]; then
        echo "run.sh: no rusage from: $*" >&2
        return 1
    fi
    if [[ $line != *" status=0" ]]; then
        echo "run.sh: '$*' failed ($line); see the log:" >&2
        tail -5 "$log" >&2
        return 1
    fi
    awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
           printf "%.6f %.6f\n", v["user_s"] + v["sys_s"], v["wall_s"] }' <<<"$line" \
        >>"$work/$key"
}

# median COLUMN FILE
median() {
    awk -v c="$1" '{ print $c }' "$2" | sort -g |
        awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2];
                                  else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# pct KEY: median of 100 * cpu / wall over the repetitions
pct() {
    awk '{ printf "%.6f\n", 100 * $1 / $2 }' "$work/$1" | sort -g |
        awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2];
                                  else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

rates=("1ms" "100ms")
durations=("$duration" "$slow_duration")
hz=("1kHz" "10Hz")
targets=("$target_1khz_pct" "$target_10hz_pct")
whos=(carma_o carma naive wake reads)
declare -A desc=(
    [carma_o]="carma stat -o DIR (writes samples.csv)"
    [carma]="carma stat, no run directory"
    [naive]="naive open/read/close loop"
    [wake]="the wake-up alone (no read)"
    [reads]="floor: the wake-up and the reads alone"
)
# run WHO RATE SECONDS: one measured run; SECONDS 0 measures the fixed cost of a run
run() {
    local who=$1 rate=$2 secs=$3 key=$4
    local cmd=(sleep "$secs")
    ((secs > 0)) || cmd=(true)
    rm -rf "$work/run"
    case $who in
    carma_o) measure "$key" "$carma" stat --root "$fixture" --interval "$rate" -o "$work/run" \
        -- "${cmd[@]}" ;;
    carma) measure "$key" "$carma" stat --root "$fixture" --interval "$rate" -- "${cmd[@]}" ;;
    naive) measure "$key" "$bench" --root "$fixture" --naive-loop "$rate" "$secs" ;;
    wake) measure "$key" "$bench" --wake-loop "$rate" "$secs" ;;
    reads) measure "$key" "$bench" --root "$fixture" --read-loop "$rate" "$secs" ;;
    esac
}

echo "CPU time: $reps x ${duration} s (1 kHz) and ${slow_duration} s (10 Hz) per configuration," \
    "interleaved; fixed costs from runs of"
echo "0 s ('carma stat ... -- true', 'bench_read --naive-loop RATE 0', '--wake-loop RATE 0')"
for ((rep = 1; rep <= reps; rep++)); do
    for k in 0 1; do
        for who in "${whos[@]}"; do
            run "$who" "${rates[$k]}" "${durations[$k]}" "${who}_$k"
            if [[ $k == 0 && $who == carma_o && $rep == 1 ]]; then
                csv_rows=$(($(wc -l <"$work/run/samples.csv") - 1))
                csv_bytes=$(stat -c %s "$work/run/samples.csv")
            fi
            run "$who" "${rates[$k]}" 0 "fixed_${who}_$k"
        done
    done
    measure "sleep" sleep 0
    echo "  repetition $rep of $reps done"
done
echo

# verdict PCT TARGET
verdict() {
    awk -v p="$1" -v t="$2" 'BEGIN { print (p <= t) ? "met" : "MISSED" }'
}

declare -A res
tick_us=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["sampler_us_per_tick"])' \
    "$work/read.json")
printf '  %-5s %-40s %8s %9s %9s %9s  %s\n' rate who "CPU s" "% run" "fixed ms" "% steady" \
    "target (run / steady)"
for k in 0 1; do
    for who in "${whos[@]}"; do
        key=${who}_$k
        cpu=$(median 1 "$work/$key")
        fixed=$(median 1 "$work/fixed_$key")
        res[pct_$key]=$(pct "$key")
        res[cpu_$key]=$cpu
        res[fixed_$key]=$fixed
        res[steady_$key]=$(awk -v a="$cpu" -v f="$fixed" -v d="${durations[$k]}" \
            'BEGIN { s = 100 * (a - f) / d; printf "%.4f", (s < 0) ? 0 : s }')
        v=""
        if [[ $who == carma || $who == carma_o ]]; then
            v="<= ${targets[$k]}%: $(verdict "${res[pct_$key]}" "${targets[$k]}") / $(verdict \
                "${res[steady_$key]}" "${targets[$k]}")"
        fi
        printf '  %-5s %-40s %8.4f %9.4f %9.2f %9.4f  %s\n' "${hz[$k]}" "${desc[$who]}" "$cpu" \
            "${res[pct_$key]}" "$(awk -v f="$fixed" 'BEGIN { print 1e3 * f }')" \
            "${res[steady_$key]}" "$v"
    done
    for x in pct steady; do
        res[ratio_${x}_$k]=$(awk -v c="${res[${x}_carma_o_$k]}" -v n="${res[${x}_naive_$k]}" \
            'BEGIN { printf "%.2f", (c > 0) ? n / c : 0 }')
    done
    printf '  %-5s naive / carma -o: %sx over the run, %sx steady\n' "${hz[$k]}" \
        "${res[ratio_pct_$k]}" "${res[ratio_steady_$k]}"
    # the floor of carma's tick: its wake-up and its sources' reads of these channels in a loop
    # (bench_read --read-loop, measured like carma); beside it, the wake-up plus the sampler's
    # tick from step 1 (back to back there: hot caches, so below what a tick after a sleep
    # costs)
    res[floor_$k]=${res[steady_reads_$k]}
    res[hot_floor_$k]=$(awk -v w="${res[steady_wake_$k]}" -v t="$tick_us" -v r="${rates[$k]}" \
        'BEGIN { hz = (r == "1ms") ? 1000 : 10; printf "%.4f", w + 100 * t * hz / 1e6 }')
    for who in carma_o carma; do
        res[over_floor_${who}_$k]=$(awk -v c="${res[steady_${who}_$k]}" -v f="${res[floor_$k]}" \
            'BEGIN { printf "%.2f", (f > 0) ? c / f : 0 }')
    done
    res[over_floor_$k]=${res[over_floor_carma_o_$k]}
    printf '  %-5s floor: the wake-up and the reads in a loop %s%% (the wake-up alone %s%%; plus' \
        "${hz[$k]}" "${res[floor_$k]}" "${res[steady_wake_$k]}"
    printf ' the hot tick of step 1, %s us: %s%%)\n' "$tick_us" "${res[hot_floor_$k]}"
    printf '  %-5s steady, over the floor: carma -o %sx, carma %sx (target <= 1.5x where the floor' \
        "${hz[$k]}" "${res[over_floor_carma_o_$k]}" "${res[over_floor_carma_$k]}"
    printf ' exceeds %s%%)\n' "${targets[$k]}"
done
sleep_cpu_ms=$(awk -v m="$(median 1 "$work/sleep")" 'BEGIN { printf "%.2f", 1e3 * m }')
echo "  samples.csv at 1 kHz: $csv_rows rows, $csv_bytes bytes in ${duration} s" \
    "($(awk -v b="$csv_bytes" -v d="$duration" 'BEGIN { printf "%.1f", b / d / 1e6 }') MB/s)"
echo "  carma's CPU includes its child (${sleep_cpu_ms} ms CPU for 'sleep 0' alone): not" \
    "subtracted"

# cpu_json K: the figures of rate K as a JSON object
cpu_json() {
    local k=$1 sep="" who
    printf '{'
    for who in "${whos[@]}"; do
        printf '%s"%s":{"cpu_s":%s,"pct":%s,"fixed_cpu_s":%s,"steady_pct":%s}' "$sep" "$who" \
            "${res[cpu_${who}_$k]}" "${res[pct_${who}_$k]}" "${res[fixed_${who}_$k]}" \
            "${res[steady_${who}_$k]}"
        sep=","
    done
    printf ',"ratio_naive_over_carma_o":{"pct":%s,"steady":%s}' "${res[ratio_pct_$k]}" \
        "${res[ratio_steady_$k]}"
    printf ',"floor_pct":%s,"hot_floor_pct":%s,"carma_o_over_floor":%s,"carma_over_floor":%s}' \
        "${res[floor_$k]}" "${res[hot_floor_$k]}" "${res[over_floor_$k]}" "${res[over_floor_carma_$k]}"
}

read_json=$(tr -d '\n' <"$work/read.json")
{
    printf '{"date":"%s","nproc":%d,"cpu_model":"%s","kernel":"%s","duration_s":%s,"slow_duration_s":%s,' \
        "$(date -u '+%Y-%m-%dT%H:%MZ')" "$(nproc)" "$model" "$(uname -r)" "$duration" "$slow_duration"
    printf '"reps":%s,\n' "$reps"
    printf ' "read":%s,\n' "$read_json"
    printf ' "cpu":{"1kHz":%s,\n  "10Hz":%s},\n' "$(cpu_json 0)" "$(cpu_json 1)"
    printf ' "samples_csv_1khz":{"rows":%s,"bytes":%s},"sleep_cpu_ms":%s,\n' "$csv_rows" \
        "$csv_bytes" "$sleep_cpu_ms"
    printf ' "targets":{"read_us":%s,"cpu_1khz_pct":%s,"cpu_10hz_pct":%s}}\n' "$target_read_us" \
        "$target_1khz_pct" "$target_10hz_pct"
} >"$out_json"
echo
echo "results: $out_txt, $out_json"
