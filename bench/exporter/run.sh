#!/usr/bin/env bash
# Benchmark of `carma exporter` beside Debian's prometheus-node-exporter, in the same run, on
# the same fixture tree (tests/fixtures/intel-2s: 2 RAPL packages with core and dram zones):
# wrk with 16 kept-alive connections for BENCH_DURATION seconds (default 10) against each
# /metrics, then requests/s, latency p50 and p99 (wrk --latency) and the ratio.
# node_exporter runs with only its hwmon and rapl collectors, reading the same tree through
# --path.sysfs/--path.procfs. Targets: carma >= 10x node_exporter's requests/s, carma's p99
# < 2 ms. Not a test: it prints the figures and whether the targets are met.
#
#   bash bench/exporter/run.sh [BUILD_DIR]     (default build; needs BUILD_DIR/carma)
#
# Installs wrk and prometheus-node-exporter with apt-get when they are missing (root). The
# servers, wrk and this script share the machine's CPUs: on a small VM the figures say as
# much about wrk as about the servers. Writes BUILD_DIR/bench/exporter.txt.
set -u

src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" 2>/dev/null && pwd) || {
    echo "bench/exporter: no build directory '${1:-build}'" >&2
    exit 2
}
carma="$build/carma"
[ -x "$carma" ] || {
    echo "bench/exporter: $carma not found: build it first" >&2
    exit 2
}
fixture="$src/tests/fixtures/intel-2s"
duration=${BENCH_DURATION:-10}
conns=16
threads=${BENCH_WRK_THREADS:-2}
out="$build/bench/exporter.txt"
mkdir -p "$build/bench"
work=$(mktemp -d "${TMPDIR:-/tmp}/carma-bench-exporter.XXXXXX")

pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT

need() { # need COMMAND PACKAGE
    command -v "$1" >/dev/null && return 0
    echo "# installing $2 (apt-get)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "$2"; } >"$work/apt.log" 2>&1 || {
        cat "$work/apt.log" >&2
        echo "bench/exporter: cannot install $2" >&2
        exit 2
    }
}
need wrk wrk
need prometheus-node-exporter prometheus-node-exporter

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_url URL: until it answers 200 (5 s at most)
wait_url() {
    local i
    for ((i = 0; i < 500; i++)); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ] && return 0
        sleep 0.01
    done
    echo "bench/exporter: $1 does not answer" >&2
    exit 1
}

# to_ms VALUE: wrk's "123.45us", "1.20ms", "2.00s" in milliseconds
to_ms() {
    awk -v v="$1" 'BEGIN {
        if (v ~ /us$/) { sub(/us$/, "", v); printf "%.3f", v / 1000 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.3f", v }
        else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.3f", v * 1000 }
        else printf "nan" }'
}

# bench NAME URL: wrk against URL; sets RPS, P50, P99 (ms), BYTES (body size)
bench() {
    local name=$1 url=$2
    BYTES=$(curl -s "$url" | wc -c)
    wrk -t"$threads" -c"$conns" -d"${duration}s" --latency "$url" >"$work/$name.wrk" 2>&1
    RPS=$(awk '/^Requests\/sec:/ {print $2}' "$work/$name.wrk")
    P50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$work/$name.wrk")")
    P99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$work/$name.wrk")")
    local errors
    errors=$(grep -E 'Non-2xx|Socket errors' "$work/$name.wrk" | tr '\n' ' ')
    [ -n "$errors" ] && echo "# $name: $errors"
    sed 's/^/#   /' "$work/$name.wrk"
}

# carma exporter
"$carma" exporter --root "$fixture" --listen 127.0.0.1:0 2>"$work/carma.err" &
pids+=($!)
port=
for ((i = 0; i < 500; i++)); do
    port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/carma.err")
    [ -n "$port" ] && break
    sleep 0.01
done
[ -n "$port" ] || {
    cat "$work/carma.err" >&2
    exit 1
}
wait_url "http://127.0.0.1:$port/healthz"
sleep 0.3 # a few samples: the counters have a power value, the body its usual size
echo "# carma exporter on 127.0.0.1:$port ($("$carma" --version))"
bench carma "http://127.0.0.1:$port/metrics"
c_rps=$RPS c_p50=$P50 c_p99=$P99 c_bytes=$BYTES
kill -TERM "${pids[0]}" && wait "${pids[0]}"

# node_exporter, hwmon and rapl collectors only, on the same tree
nport=$(free_port)
prometheus-node-exporter --collector.disable-defaults --collector.hwmon --collector.rapl \
    --path.sysfs "$fixture/sys" --path.procfs "$fixture/proc" \
    --web.listen-address "127.0.0.1:$nport" >"$work/node.log" 2>&1 &
pids+=($!)
wait_url "http://127.0.0.1:$nport/metrics"
echo "# prometheus-node-exporter on 127.0.0.1:$nport" \
    "($(prometheus-node-exporter --version 2>&1 | head -1))"
bench node_exporter "http://127.0.0.1:$nport/metrics"
n_rps=$RPS n_p50=$P50 n_p99=$P99 n_bytes=$BYTES

ratio=$(awk -v a="$c_rps" -v b="$n_rps" 'BEGIN { printf "%.1f", (b > 0) ? a / b : 0 }')
met_ratio=$(awk -v r="$ratio" 'BEGIN { print (r >= 10) ? "met" : "NOT met" }')
met_p99=$(awk -v p="$c_p99" 'BEGIN { print (p < 2) ? "met" : "NOT met" }')
{
    echo "exporter benchmark: wrk -t$threads -c$conns -d${duration}s --latency, fixture intel-2s," \
        "$(nproc) CPUs shared by wrk and the server"
    printf '%-16s %12s %10s %10s %12s\n' server "requests/s" "p50 ms" "p99 ms" "body bytes"
    printf '%-16s %12s %10s %10s %12s\n' "carma exporter" "$c_rps" "$c_p50" "$c_p99" "$c_bytes"
    printf '%-16s %12s %10s %10s %12s\n' node_exporter "$n_rps" "$n_p50" "$n_p99" "$n_bytes"
    echo "ratio carma / node_exporter: ${ratio}x requests/s (target >= 10x: $met_ratio);" \
        "carma p99 ${c_p99} ms (target < 2 ms: $met_p99)"
} | tee "$out"
