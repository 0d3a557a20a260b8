#!/usr/bin/env bash
# profile.sh: where a `carma stat -o` tick's time goes, at 1 kHz and at 10 Hz, on the
# 32-channel fixture: perf's CPU samples and callgrind's instruction counts, each split into
# the tick's parts (the channel reads, proc/stat, the process tree, samples.csv, the wake-up,
# the rest) by profile_fold.py.
#
# usage: bench/profile.sh BUILD_DIR [RELEASE_BUILD_DIR]
#
# BUILD_DIR: a release build that keeps every carma function a frame (no inlining, no sibling
# calls), so that perf tells a sample to the function that spent it:
#   meson setup build-prof -Dbuildtype=release \
#       -Dc_args='-fno-inline -fno-optimize-sibling-calls -fno-omit-frame-pointer'
#   ninja -C build-prof carma bench/bench_read
# RELEASE_BUILD_DIR (default BUILD_DIR): the build callgrind counts the instructions of, a plain
# release build (its parts are functions no compiler inlines). Needs perf (linux-perf) and
# valgrind. For each rate:
#   1. the steady CPU per tick of the same build, unprofiled: `bench_read --rusage` of
#      `carma stat --interval RATE -o DIR -- sleep D` less that of `-- true` (the run's fixed
#      cost), over the run's ticks (distinct timestamps in its samples.csv);
#   2. `perf record -e cpu-clock --call-graph dwarf` of the same run: each part's share of the
#      tick's samples, and that share of step 1's figure in µs (perf's own sampling is charged
#      to the process it samples, so the profiled run's CPU is not used);
#   3. `valgrind --tool=callgrind` of the same run and of its `-- true` (the fixed cost) on
#      RELEASE_BUILD_DIR: each part's user-space instructions per tick (under valgrind a 1 kHz
#      run misses ticks: its parts done per unit of time, proc/stat every 10 ms and the tree's
#      /proc scan, weigh more per tick than in the real run).
# Environment: PROFILE_FAST_S (seconds at 1 kHz, default 5), PROFILE_SLOW_S (at 10 Hz, 30),
# PROFILE_FREQ (perf's sampling rate, 20000). Prints Markdown tables; writes nothing else.
set -euo pipefail

build=${1:?usage: bench/profile.sh BUILD_DIR [RELEASE_BUILD_DIR]}
release=${2:-$build}
carma=$build/carma
bench=$build/bench/bench_read
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for x in "$carma" "$bench" "$release/carma"; do
    if [[ ! -x $x ]]; then
        echo "profile.sh: $x is missing: ninja -C $build carma bench/bench_read" >&2
        exit 2
    fi
done
for t in perf valgrind callgrind_annotate python3; do
    if ! command -v $t >/dev/null; then
        echo "profile.sh: $t is missing (apt-get install linux-perf valgrind python3)" >&2
        exit 2
    fi
done
fast_s=${PROFILE_FAST_S:-5}
slow_s=${PROFILE_SLOW_S:-30}
freq=${PROFILE_FREQ:-20000}

work=$(mktemp -d "${TMPDIR:-/tmp}/carma-profile.XXXXXX")
trap 'rm -rf "$work"' EXIT
fixture=$(bash "$here/make_fixture.sh" "$work/fixture")

echo "carma stat -o, one tick split in parts, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- |
    sed 's/^ *//'), Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "builds: perf $build, callgrind $release ($(git -C "$here" rev-parse --short HEAD 2>/dev/null ||
    echo '?'))"

# cpu_s CMD...: user + system seconds of CMD (bench_read --rusage)
cpu_s() {
    local line
    line=$("$bench" --rusage -- "$@" 2>>"$work/err" | grep '^rusage ') || {
        echo "profile.sh: no rusage from: $*" >&2
        tail -5 "$work/err" >&2
        exit 1
    }
    awk '{split($2, u, "="); split($3, s, "="); printf "%.6f\n", u[2] + s[2]}' <<<"$line"
}

# ticks DIR: the run's ticks (distinct timestamps of its samples.csv)
ticks() {
    tail -n +2 "$1/samples.csv" | cut -d, -f1 | sort -u | wc -l
}

for rate in 1ms 100ms; do
    if [[ $rate == 1ms ]]; then d=$fast_s; name="1 kHz"; else d=$slow_s; name="10 Hz"; fi
    stat=("$carma" stat --root "$fixture" --interval "$rate" -q)
    fixed=$(cpu_s "${stat[@]}" -o "$work/fixed.$rate" -- true)
    total=$(cpu_s "${stat[@]}" -o "$work/run.$rate" -- sleep "$d")
    n=$(ticks "$work/run.$rate")
    us=$(awk -v t="$total" -v f="$fixed" -v n="$n" 'BEGIN { printf "%.1f", (t - f) / n * 1e6 }')
    echo
    echo "## $name, ${d} s: $n ticks; ${us} µs of CPU per tick steady, unprofiled" \
        "(run ${total} s less the fixed cost ${fixed} s of a \`-- true\` run)"
    perf record -q -e cpu-clock -F "$freq" --call-graph dwarf,8192 -o "$work/perf.data" -- \
        "${stat[@]}" -o "$work/perf.$rate" -- sleep "$d" >/dev/null 2>>"$work/err"
    perf script -i "$work/perf.data" -F pid,period,ip,sym 2>/dev/null >"$work/perf.txt"
    echo
    echo "perf (cpu-clock at $freq Hz, dwarf stacks), $(ticks "$work/perf.$rate") ticks;" \
        "µs = the share of ${us} µs:"
    echo
    python3 "$here/profile_fold.py" perf "$work/perf.txt" "$(ticks "$work/perf.$rate")" |
        awk -v us="$us" -F' [|] ' '
            /^\| part/ { print "| part | share | µs per tick |"; next }
            /^\|---/ || /fixed cost/ { print; next }
            { split($2, a, " "); printf "| %s | %s | %.1f |\n", substr($1, 3), $2, a[1] * us / 100 }'
    cg=("$release/carma" stat --root "$fixture" --interval "$rate" -q)
    valgrind -q --tool=callgrind --callgrind-out-file="$work/cg.out" \
        "${cg[@]}" -o "$work/cg.$rate" -- sleep "$d" >/dev/null 2>>"$work/err"
    valgrind -q --tool=callgrind --callgrind-out-file="$work/cgf.out" \
        "${cg[@]}" -o "$work/cgf.$rate" -- true >/dev/null 2>>"$work/err"
    for f in cg cgf; do
        callgrind_annotate --inclusive=yes --threshold=100 "$work/$f.out" >"$work/$f.txt" \
            2>>"$work/err"
    done
    cgt=$(($(ticks "$work/cg.$rate") - $(ticks "$work/cgf.$rate")))
    echo
    echo "callgrind ($release), $cgt ticks under valgrind beyond a \`-- true\` run's:"
    echo
    python3 "$here/profile_fold.py" callgrind "$work/cg.txt" "$work/cgf.txt" "$cgt"
done
