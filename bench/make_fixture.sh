#!/usr/bin/env bash
# make_fixture.sh: writes the benchmarks' sysfs/procfs tree, a large RAPL machine.
#
# usage: bench/make_fixture.sh [DIR] [SOCKETS] [CPUS_PER_SOCKET]
#
# SOCKETS (default 8) packages, each a powercap zone package-N with three subzones core,
# uncore and dram: 4 energy counters per socket, 32 channels with the defaults. proc/stat
# and proc/cpuinfo describe SOCKETS x CPUS_PER_SOCKET (default 8) CPUs, so that the tick's
# utilization read has a realistic size. The counters hold 11-digit values, as a busy
# server's do. DIR defaults to a new directory from mktemp; the tree's path is printed.
set -euo pipefail

dir=${1:-}
sockets=${2:-8}
cpus_per_socket=${3:-8}
if [[ -z $dir ]]; then
    dir=$(mktemp -d "${TMPDIR:-/tmp}/carma-bench-fixture.XXXXXX")
fi
if ! [[ $sockets =~ ^[0-9]+$ && $cpus_per_socket =~ ^[0-9]+$ ]] || ((sockets < 1 || sockets > 64)) ||
    ((cpus_per_socket < 1 || cpus_per_socket > 512)); then
    echo "make_fixture.sh: SOCKETS must be 1..64 and CPUS_PER_SOCKET 1..512" >&2
    exit 2
fi

pc=$dir/sys/class/powercap
mkdir -p "$pc" "$dir/proc"

zone() { # zone DIR NAME ENERGY_UJ
    mkdir -p "$1"
    printf '%s\n' "$2" >"$1/name"
    printf '%s\n' "$3" >"$1/energy_uj"
    printf '262143328850\n' >"$1/max_energy_range_uj"
    printf '1\n' >"$1/enabled"
}

for ((s = 0; s < sockets; s++)); do
    zone "$pc/intel-rapl:$s" "package-$s" $((81234567890 + s * 1000003))
    zone "$pc/intel-rapl:$s:0" core $((51234567890 + s * 700001))
    zone "$pc/intel-rapl:$s:1" uncore $((11234567890 + s * 300007))
    zone "$pc/intel-rapl:$s:2" dram $((21234567890 + s * 200003))
done

ncpu=$((sockets * cpus_per_socket))
{
    printf 'cpu  %d 1000 %d %d 2000 0 500 0 0 0\n' $((ncpu * 40000)) $((ncpu * 12000)) \
        $((ncpu * 2000000))
    for ((c = 0; c < ncpu; c++)); do
        printf 'cpu%d 40000 16 12000 2000000 31 0 8 0 0 0\n' "$c"
    done
    printf 'intr 123456789 0 0\nctxt 987654321\nbtime 1785168000\nprocesses 4321\n'
    printf 'procs_running 1\nprocs_blocked 0\n'
} >"$dir/proc/stat"

{
    for ((c = 0; c < ncpu; c++)); do
        printf 'processor\t: %d\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n' "$c"
        printf 'model name\t: Intel(R) Xeon(R) Platinum 8380H CPU @ 2.90GHz\n'
        printf 'physical id\t: %d\ncore id\t\t: %d\ncpu cores\t: %d\n\n' \
            $((c / cpus_per_socket)) $((c % cpus_per_socket)) "$cpus_per_socket"
    done
} >"$dir/proc/cpuinfo"

printf '%s\n' "$dir"
