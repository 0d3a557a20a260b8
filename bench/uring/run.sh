#!/usr/bin/env bash
# run.sh: one tick's reads as N pread(2)s beside one io_uring submission of the same reads
# (bench_batch.c), on the kinds of file carma reads: a fixture's regular files (the bench
# fixture's 32 energy_uj), real kernfs attributes of this machine (32 of sysfs's network
# statistics, present on every Linux machine), procfs (32 /proc/PID/stat of long-lived
# processes, as the process tree reads them) and /proc/stat; each hot (back to back) and cold
# (a 100 ms sleep before each tick, as at 10 Hz).
#
# usage: bench/uring/run.sh BUILD_DIR     (needs BUILD_DIR/bench/bench_batch: liburing-dev)
# Environment: BENCH_ROUNDS (7), BENCH_TICKS (5000 hot), BENCH_COLD_TICKS (30).
set -euo pipefail

build=${1:?usage: bench/uring/run.sh BUILD_DIR}
bench=$build/bench/bench_batch
if [[ ! -x $bench ]]; then
    echo "run.sh: $bench is missing: it is built where liburing is installed" \
        "(apt-get install liburing-dev; meson setup --reconfigure $build; ninja -C $build" \
        "bench/bench_batch)" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${BENCH_ROUNDS:-7}
ticks=${BENCH_TICKS:-5000}
cold=${BENCH_COLD_TICKS:-30}
work=$(mktemp -d "${TMPDIR:-/tmp}/carma-bench-uring.XXXXXX")
trap 'rm -rf "$work"' EXIT
fixture=$(bash "$here/make_fixture.sh" "$work/fixture")

mapfile -t regular < <(find "$fixture/sys/class/powercap" -name energy_uj | sort)
mapfile -t kernfs < <(find /sys/class/net/ -maxdepth 1 -mindepth 1 | sort | while read -r d; do
    find -L "$d/statistics" -maxdepth 1 -type f 2>/dev/null | sort
done | head -n 32)
# the lowest pids: init and kernel threads, which outlive the run
mapfile -t procfs < <(find /proc -maxdepth 1 -regex '/proc/[0-9]+' -printf '%f\n' | sort -n |
    head -n 32 | sed 's|.*|/proc/&/stat|')

echo "io_uring batch reads beside pread, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//'), Linux $(uname -r)"
echo
status=0
for set in regular kernfs procfs procstat; do
    case $set in
        regular) files=("${regular[@]}") label="fixture energy_uj (regular files)" ;;
        kernfs) files=("${kernfs[@]}") label="sysfs attributes (kernfs)" ;;
        procfs) files=("${procfs[@]}") label="/proc/PID/stat (procfs)" ;;
        procstat) files=(/proc/stat) label="/proc/stat" ;;
    esac
    if ((${#files[@]} == 0)); then
        echo "$label: none on this machine"
        continue
    fi
    "$bench" --rounds "$rounds" --ticks "$ticks" --label "$label, hot" "${files[@]}" || status=1
    "$bench" --rounds 3 --ticks "$cold" --gap-ms 100 --label "$label, cold" "${files[@]}" || status=1
    echo
done
exit $status
