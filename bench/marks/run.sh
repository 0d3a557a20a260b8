#!/usr/bin/env bash
# Benchmark of a mark's cost: one window (begin + end, client to carma and back) through
# libcarma against `carma stat -o DIR` (tests/fixtures/grace): carma_begin_nowait + carma_end,
# carma_begin_nowait + carma_end_nowait, carma_begin (waiting) + carma_end, back to back and
# with 200 us of the program's own work after each call; beside the same two packet round
# trips on a bare SOCK_SEQPACKET socket pair to a thread and to a child process (the floor),
# and beside Zeus's way of measuring a window (the GPUs' energy counter read through NVML at
# begin and at end; the tests' fake NVML here, one GPU: a real driver's call costs far more),
# in the same run; then the sampling tick with and without marks flowing (the spacing of
# samples.csv's ticks at 10 ms while a program marks as fast as it can, and while it sleeps).
# Target: <= 20 us per window, no change in the tick. Not a test: it prints the figures and
# whether the target is met.
#
#   bash bench/marks/run.sh [BUILD_DIR] [WINDOWS]      (default build, 20000)
#
# Needs BUILD_DIR/carma, BUILD_DIR/bench/bench_marks and BUILD_DIR/tests/fakes/libfake-nvml.so;
# writes BUILD_DIR/bench/marks.txt.
set -u

src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" 2>/dev/null && pwd) || {
    echo "bench/marks: no build directory '${1:-build}'" >&2
    exit 2
}
n=${2:-20000}
carma=$build/carma bm=$build/bench/bench_marks nvml=$build/tests/fakes/libfake-nvml.so
for f in "$carma" "$bm" "$nvml"; do
    [ -x "$f" ] || [ -f "$f" ] || {
        echo "bench/marks: $f not found: build it first" >&2
        exit 2
    }
done
grace=$src/tests/fixtures/grace
tmp=$(mktemp -d /tmp/carma-bench-marks.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
out=$build/bench/marks.txt
mkdir -p "$build/bench"

run() { # MODE...: bench_marks's line, or a failure said
    "$@" 2>"$tmp/err" || { echo "bench/marks: $* failed: $(cat "$tmp/err")" >&2; exit 1; }
}
# tick spacing of DIR/samples.csv: "p50 p99 max" in ms
spacing() {
    python3 - "$1/samples.csv" <<'EOF'
import csv, sys
t = sorted({float(r[0]) for r in list(csv.reader(open(sys.argv[1])))[1:]})
d = sorted(b - a for a, b in zip(t, t[1:]))
q = lambda p: d[min(len(d) - 1, int(p * len(d)))] * 1e3
print("%.2f %.2f %.2f %d" % (q(0.5), q(0.99), d[-1] * 1e3, len(t)))
EOF
}

{
    echo "bench/marks: $n windows each; carma stat on $grace"
    # rounds WORK_US N: three rounds of every mode; prints the table's rows
    rounds() {
        local work=$1 m=$2 res=() round c b p z
        for round in 1 2 3; do
            c=$(BENCH_MARKS_WORK_US=$work run "$carma" stat --root "$grace" --interval 100ms \
                -o "$tmp/c$work-$round" -q -- \
                sh -c "\"$bm\" carma $m && \"$bm\" carma-nowait $m && \"$bm\" carma-wait $m")
            b=$(BENCH_MARKS_WORK_US=$work run "$bm" bare "$m")
            p=$(BENCH_MARKS_WORK_US=$work run "$bm" bare-process "$m")
            z=$(BENCH_MARKS_WORK_US=$work run env \
                CARMA_FAKE_NVML_SCENARIO="$src/tests/fakes/nvml/shared.scenario" "$bm" nvml "$m" "$nvml")
            res+=("$(awk '{print $3}' <<<"$c" | tr '\n' ' ')${b##* } ${p##* } ${z##* }")
        done
        printf '%s\n' "${res[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
med = [statistics.median(r[k] for r in rows) for k in range(6)]
what = ["carma: begin_nowait + end", "carma: begin_nowait + end_nowait", "carma: begin + end (waits)",
        "bare pair, thread, 2 trips", "bare pair, process, 2 trips", "NVML energy at begin + end"]
for k, w in enumerate(what):
    extra = " (fake NVML, 1 GPU)" if k == 5 else ""
    print("    %-33s %8.2f us per window%s  (rounds: %s)" % (w, med[k], extra, " ".join("%.2f" % r[k] for r in rows)))
print("    carma / bare process pair: %.2fx with the energy back, %.2fx without; target <= 20 us per window: %s"
      % (med[0] / med[4], med[1] / med[4], "met without the energy back" if med[1] <= 20 else "NOT met"))
'
    }
    echo "  back to back (the calls alone, no work between):"
    rounds 0 "$n"
    echo "  with 200 us of the program's work after each call (only the calls timed):"
    rounds 200 $((n / 4))
    # the tick: 3 s at 10 ms, marking flat out, then sleeping
    "$carma" stat --root "$grace" --interval 10ms -o "$tmp/t1" -q -- \
        timeout -s INT 3 sh -c "while :; do \"$bm\" carma 2000 >/dev/null || exit 1; done" \
        2>/dev/null
    "$carma" stat --root "$grace" --interval 10ms -o "$tmp/t0" -q -- sleep 3
    read -r m50 m99 mmax mn <<<"$(spacing "$tmp/t1")"
    read -r s50 s99 smax sn <<<"$(spacing "$tmp/t0")"
    marks=$(($(wc -l <"$tmp/t1/marks.csv") - 1))
    echo "  tick at 10 ms, marking ($marks marks in 3 s): p50 $m50 ms, p99 $m99 ms, max $mmax ms ($mn ticks)"
    echo "  tick at 10 ms, sleeping:                       p50 $s50 ms, p99 $s99 ms, max $smax ms ($sn ticks)"
} | tee "$out"
