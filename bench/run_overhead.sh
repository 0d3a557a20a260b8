#!/usr/bin/env bash
# run_overhead.sh: what `carma run` costs the workloads it measures, and what it costs itself.
#
# usage: bench/run_overhead.sh BUILD_DIR
#
# Builds nothing: it expects BUILD_DIR/carma and BUILD_DIR/bench/bench_read; it needs awk
# and python3 (to read report.json). On the real machine (no --root), at --interval 100ms:
#   1. slowdown: a fixed amount of CPU-bound work (awk 'BEGIN{for(i=0;i<N;i++)s+=i}', N chosen
#      so that it takes about 3 s) is run bare (a child of `bench_read --rusage`, whose wall
#      time is fork to reap) and as the single workload of an experiment under
#      `carma run --baseline 0 -q -o DIR`, whose wall time is the workload's own duration_s
#      in report.json (launch to reap, not carma's whole run). Bare and carma alternate, in
#      OVERHEAD_PAIRS pairs; the figure is the median of the per-pair ratios carma / bare.
#      The same is reported for CPU time (bare: rusage; carma: the workload's cpu_time_s).
#   2. carma's own CPU: an experiment of 3 workloads, together 100 processes (each an
#      `sh -c` starting 33 or 32 `sleep D` in the background, then `wait`), run under
#      `bench_read --rusage`. carma waits for its workloads (and, as their subreaper, for
#      their orphans), so the rusage it reports is carma's CPU plus the workloads'; the
#      workloads' own cpu_time_s from report.json is subtracted. Divided by the ticks
#      (duration_s of the run / interval): µs per tick, and over duration_s: % of one core.
#      A run of the same 3 workloads with `sleep 0` gives the fixed cost of a run (start,
#      launches, report), so that the steady per-tick cost can be told from it.
# Environment: OVERHEAD_N (awk iterations, default 160000000), OVERHEAD_PAIRS (7),
# BENCH_DURATION (seconds of part 2, default 10), BENCH_REPS (repetitions of part 2, 3).
# Results go to stdout and to BUILD_DIR/bench/overhead.txt.
set -euo pipefail

build=${1:?usage: bench/run_overhead.sh BUILD_DIR}
carma=$build/carma
bench=$build/bench/bench_read
for x in "$carma" "$bench"; do
    if [[ ! -x $x ]]; then
        echo "run_overhead.sh: $x is missing: build it first" \
            "(ninja -C $build carma bench/bench_read)" >&2
        exit 2
    fi
done
if ! command -v python3 >/dev/null; then
    echo "run_overhead.sh: python3 is needed to read report.json" >&2
    exit 2
fi
n_iter=${OVERHEAD_N:-160000000}
pairs=${OVERHEAD_PAIRS:-7}
duration=${BENCH_DURATION:-10}
reps=${BENCH_REPS:-3}
interval=100ms
interval_s=0.1
target_slowdown_pct=1

work=$(mktemp -d "${TMPDIR:-/tmp}/carma-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/log
exec > >(tee "$build/bench/overhead.txt")

model=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*:[[:space:]]*//' ||
    true)
echo "carma run overhead, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, ${model:-unknown CPU}, Linux $(uname -r), load $(cut -d' ' -f1-3 \
    /proc/loadavg)"
echo

# rusage CMD...: runs CMD under bench_read --rusage; prints "cpu_s wall_s"; CMD's own stdout
# goes to $work/stdout
rusage() {
    local all line
    all=$("$bench" --rusage -- "$@" 2>>"$log" || true)
    line=$(grep '^rusage ' <<<"$all" || true)
    grep -v '^rusage ' <<<"$all" >"$work/stdout" || true
    if [[ -z $line || $line != *" status=0" ]]; then
        echo "run_overhead.sh: '$*' failed (${line:-no rusage}); see the log:" >&2
        tail -5 "$log" >&2
        return 1
    fi
    awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
           printf "%.6f %.6f\n", v["user_s"] + v["sys_s"], v["wall_s"] }' <<<"$line"
}

# selfcpu CMD...: runs CMD; when it has exited, before it is reaped, reads its own CPU time
# from the zombie (/proc/PID/schedstat: ns on the CPU, exact; /proc/PID/stat utime + stime,
# in clock ticks, for comparison), then reaps it. Prints "self_s stat_s rusage_s wall_s":
# rusage_s is wait4's, CMD and the children it waited for. CMD's stdout goes to $work/stdout.
selfcpu() {
    python3 - "$@" >"$work/stdout" 2>>"$log" 3>"$work/selfcpu" <<'EOF'
import os, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[1:])
os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
t1 = time.monotonic()
ns = int(open("/proc/%d/schedstat" % p.pid).read().split()[0])
f = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
ticks = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
_, status, ru = os.wait4(p.pid, 0)
with os.fdopen(3, "w") as out:
    out.write("%.6f %.6f %.6f %.6f %d\n" % (ns / 1e9, ticks, ru.ru_utime + ru.ru_stime,
                                          t1 - t0, os.waitstatus_to_exitcode(status)))
EOF
    local self stat ru wall status
    read -r self stat ru wall status <"$work/selfcpu"
    if [[ $status != 0 ]]; then
        echo "run_overhead.sh: '$*' failed (status $status); see the log:" >&2
        tail -5 "$log" >&2
        return 1
    fi
    echo "$self $stat $ru $wall"
}

# report FIELD RUN_DIR: from RUN_DIR/report.json, FIELD = duration (the run's duration_s),
# wdur (the first workload's duration_s) or wcpu (the sum of the workloads' cpu_time_s)
report() {
    python3 - "$1" "$2/report.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[2]))
f = sys.argv[1]
v = {"duration": lambda: r["duration_s"],
     "wdur": lambda: r["workloads"][0]["duration_s"],
     "wcpu": lambda: sum(w["cpu_time_s"] for w in r["workloads"])}[f]()
print("%.6f" % v)
EOF
}

# median: of the numbers on stdin
median() {
    sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2];
                                        else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# carma_run EXP [rusage]: runs the experiment; prints its run directory (and, with rusage,
# selfcpu's line on a second line)
carma_run() {
    local exp=$1 dir cpu=""
    rm -rf "$work/runs"
    if [[ ${2:-} == rusage ]]; then
        cpu=$(selfcpu "$carma" run --baseline 0 -q -o "$work/runs" "$exp")
        dir=$(head -1 "$work/stdout")
    else
        dir=$("$carma" run --baseline 0 -q -o "$work/runs" "$exp" 2>>"$log" | head -1)
    fi
    if [[ ! -f $dir/report.json ]]; then
        echo "run_overhead.sh: carma run $exp wrote no report; see the log:" >&2
        tail -5 "$log" >&2
        return 1
    fi
    printf '%s\n' "$dir"
    [[ -z $cpu ]] || printf '%s\n' "$cpu"
}

# 1. slowdown of a CPU-bound workload
ref=(awk "BEGIN{for(i=0;i<$n_iter;i++)s+=i}")
cat >"$work/ref.json" <<EOF
{
  "experiment_name": "overhead-ref",
  "workloads": [{"name": "ref", "script": "awk", "args": ["${ref[1]}"]}],
  "monitoring": {"interval": "$interval"}
}
EOF
echo "1. slowdown: ${ref[*]}"
echo "   bare, then under 'carma run --baseline 0 -q -o DIR' (interval $interval), $pairs pairs"
printf '   %4s %9s %9s %8s %9s %9s %8s\n' pair "bare s" "carma s" ratio "bare cpu" \
    "carma cpu" ratio
: >"$work/pairs"
for ((p = 1; p <= pairs; p++)); do
    read -r bcpu bwall < <(rusage "${ref[@]}")
    dir=$(carma_run "$work/ref.json")
    cwall=$(report wdur "$dir")
    ccpu=$(report wcpu "$dir")
    awk -v p="$p" -v bw="$bwall" -v cw="$cwall" -v bc="$bcpu" -v cc="$ccpu" 'BEGIN {
        printf "   %4d %9.3f %9.3f %8.4f %9.3f %9.3f %8.4f\n", p, bw, cw, cw / bw, bc, cc, cc / bc
    }'
    echo "$bwall $cwall $bcpu $ccpu" >>"$work/pairs"
done
ratio=$(awk '{ printf "%.6f\n", $2 / $1 }' "$work/pairs" | median)
ratio_cpu=$(awk '{ printf "%.6f\n", $4 / $3 }' "$work/pairs" | median)
slow=$(awk -v r="$ratio" 'BEGIN { printf "%.2f", 100 * (r - 1) }')
slow_cpu=$(awk -v r="$ratio_cpu" 'BEGIN { printf "%.2f", 100 * (r - 1) }')
verdict=$(awk -v s="$slow" -v t="$target_slowdown_pct" 'BEGIN { print (s <= t) ? "met" : "MISSED" }')
echo "   median of the per-pair ratios: wall $(printf '%.4f' "$ratio") (slowdown $slow %)," \
    "CPU $(printf '%.4f' "$ratio_cpu") ($slow_cpu %)"
echo "   median bare wall $(awk '{ print $1 }' "$work/pairs" | median) s;" \
    "target <= $target_slowdown_pct % slowdown (wall): $verdict"
echo

# 2. carma's own CPU time with 3 workloads of 100 processes
# tree_exp FILE SECONDS: the 3 workloads (3 sh + 33 + 32 + 32 sleep = 100 processes)
tree_exp() {
    local file=$1 secs=$2 sep="" k n
    local counts=(33 32 32)
    {
        printf '{\n  "experiment_name": "overhead-tree",\n  "workloads": [\n'
        for k in 0 1 2; do
            n=${counts[$k]}
            printf '%s    {"name": "w%d", "script": "sh", "args": ["-c", ' "$sep" "$k"
            # shellcheck disable=SC2016 # $i is the workload's shell's, not this one's
            printf '"i=0; while [ $i -lt %d ]; do sleep %s & i=$((i + 1)); done; wait"]}' \
                "$n" "$secs"
            sep=$',\n'
        done
        printf '\n  ],\n  "monitoring": {"interval": "%s"}\n}\n' "$interval"
    } >"$file"
}
tree_exp "$work/tree.json" "$duration"
tree_exp "$work/tree0.json" 0
echo "2. carma's own CPU: 3 workloads, 100 processes (3 sh, 97 'sleep $duration'), interval" \
    "$interval, $reps runs"
echo "   carma s: /proc/PID/schedstat of the exited, not yet reaped carma (its children"
echo "   excluded); stat s: its utime + stime in clock ticks; children: wait4's rusage minus"
echo "   carma's own; workl. s: the workloads' cpu_time_s in report.json"
printf '   %3s %8s %9s %9s %9s %9s %6s %9s %8s\n' run "run s" "carma s" "stat s" \
    "children" "workl. s" ticks "us/tick" "% core"
: >"$work/tree"
for ((r = 1; r <= reps; r++)); do
    for kind in tree tree0; do
        mapfile -t out < <(carma_run "$work/$kind.json" rusage)
        dir=${out[0]}
        read -r self stat ru _ <<<"${out[1]}"
        dur=$(report duration "$dir")
        wcpu=$(report wcpu "$dir")
        line=$(awk -v o="$self" -v s="$stat" -v r="$ru" -v w="$wcpu" -v d="$dur" \
            -v i="$interval_s" 'BEGIN {
            t = d / i
            printf "%.6f %.6f %.6f %.6f %.6f %.1f %.2f %.4f", d, o, s, r - o, w, t, 1e6 * o / t,
                100 * o / d
        }')
        echo "$kind $line" >>"$work/tree"
        if [[ $kind == tree ]]; then
            # shellcheck disable=SC2086 # the fields of $line
            printf '   %3d %8.3f %9.4f %9.2f %9.4f %9.4f %6.0f %9.1f %8.4f\n' "$r" $line
        fi
    done
done
col() { awk -v k="$1" -v c="$2" '$1 == k { print $c }' "$work/tree" | median; }
own=$(col tree 3)
dur=$(col tree 2)
fixed=$(col tree0 3)
us_tick=$(col tree 8)
pct=$(col tree 9)
read -r steady_us steady_pct < <(awk -v o="$own" -v f="$fixed" -v d="$dur" -v i="$interval_s" \
    'BEGIN { s = o - f; if (s < 0) s = 0; printf "%.1f %.4f\n", 1e6 * s / (d / i), 100 * s / d }')
echo "   median: carma CPU $(printf '%.4f' "$own") s in $(printf '%.3f' "$dur") s:" \
    "$(printf '%.1f' "$us_tick") us per tick, $(printf '%.4f' "$pct") % of one core"
echo "   fixed cost (the same workloads with 'sleep 0', median): $(awk -v f="$fixed" \
    'BEGIN { printf "%.1f", 1e3 * f }') ms; steady: $steady_us us per tick," \
    "$steady_pct % of one core"
echo
echo "results: $build/bench/overhead.txt"
