#!/usr/bin/env bash
# Benchmark of `carma record` beside srt-slurm's own host collector (python3 -m
# srtctl.core.cpu_power), in the same run, reading the same ACPI tree: a Grace node's
# power_meter channels as the kernel lays them out (two sockets x total, CPU rail, SysIO,
# module: 8 channels, 6 of them srt-slurm sensors; bench/record/cost.py writes it), its
# sys/class bind-mounted on /sys/class in a mount namespace of this script's own, so that
# both read it where srt-slurm's collector always reads (it has no root option). Each
# runs BENCH_DURATION seconds (default 20) every BENCH_INTERVAL seconds (default 0.1),
# BENCH_ROUNDS times (default 5),
# alternating which goes first; their CPU time (user + system, from wait4) per second of
# recording and per cycle, the rows they wrote and their peak RSS, then the median ratio.
# carma also writes its own recording of every channel (carma/<host>/): the figures include
# that work. The cost of one cycle is taken as the difference between a long and a 1 s run
# over the difference of their rows, so that start-up (process start, probing, the
# interpreter's imports) is left out; start-up is printed beside it. Not a test: it prints
# the figures, with no target (at 100 ms a cycle's cost is mostly the wake-up from a sleep
# with cold caches, which both pay).
#
#   SRT_SLURM_SRC=/path/to/srt-slurm/src bash bench/record/run.sh [BUILD_DIR]
#
# SRT_SLURM_SRC: the directory that holds srtctl/core/cpu_power.py (a checkout of NVIDIA's
# srt-slurm, src/); without it, carma alone is measured and the peer is said to be missing.
# Needs root (unshare -m, mount --bind) and python3. Writes BUILD_DIR/bench/record.txt.
set -u

src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" 2>/dev/null && pwd) || {
    echo "bench/record: no build directory '${1:-build}'" >&2
    exit 2
}
carma="$build/carma"
[ -x "$carma" ] || {
    echo "bench/record: $carma not found: build it first" >&2
    exit 2
}
[ "$(id -u)" = 0 ] || {
    echo "bench/record: needs root (a mount namespace with the fixture on /sys/class)" >&2
    exit 2
}
peer=${SRT_SLURM_SRC:-}
if [ -n "$peer" ] && [ ! -f "$peer/srtctl/core/cpu_power.py" ]; then
    echo "bench/record: SRT_SLURM_SRC=$peer has no srtctl/core/cpu_power.py" >&2
    exit 2
fi
mkdir -p "$build/bench"
exec unshare -m --propagation private python3 "$src/bench/record/cost.py" \
    --carma "$carma" --peer "$peer" \
    --duration "${BENCH_DURATION:-20}" --rounds "${BENCH_ROUNDS:-5}" \
    --interval "${BENCH_INTERVAL:-0.1}" \
    --out "$build/bench/record.txt"
