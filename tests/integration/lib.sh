# shellcheck shell=bash disable=SC2034 # its variables are for the tests that source it
# Shared helpers for the integration tests (tests/integration/test_*.sh).
#
# Sourced by each test, which run.sh starts in its own empty temporary directory with
# CARMA (the carma binary), CARMA_BUILD (the build directory), CARMA_SRC (the repository root)
# and CARMA_FIXTURES (tests/fixtures) in the environment. A test exits 0 to pass, 77 to be
# skipped, anything else to fail. Background helpers started here (the simulated power plant)
# are killed by their pid when the test exits.

set -u

: "${CARMA:?CARMA must name the carma binary (run the tests through run.sh)}"
: "${CARMA_BUILD:?}" "${CARMA_SRC:?}" "${CARMA_FIXTURES:?}"

# Debian's python (meson's own): the tests use its standard library only.
PY=/usr/bin/python3
PLANT="$CARMA_BUILD/tests/fakes/carma-plant"
BUSY="$CARMA_BUILD/tests/fakes/carma-busy"
CHECK_TRUTH="$CARMA_SRC/tests/integration/check_truth.py"
PLANT_CONFIGS="$CARMA_SRC/tests/fakes/plant"

_cleanup_pids=()

_lib_cleanup() {
    local pid
    for pid in "${_cleanup_pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
        fi
    done
}
trap _lib_cleanup EXIT

# fail MSG: report MSG on stderr and end the test as failed.
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# skip MSG: end the test as skipped (exit 77).
skip() {
    echo "SKIP: $*" >&2
    exit 77
}

# note MSG: informational output (shown when the test fails).
note() {
    echo "# $*"
}

# need_file PATH...: fail unless every PATH exists.
need_file() {
    local f
    for f in "$@"; do
        [ -e "$f" ] || fail "missing $f (is it built?)"
    done
}

# assert_eq ACTUAL EXPECTED MSG
assert_eq() {
    [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

# live_tree FIXTURE DIR: copy tests/fixtures/FIXTURE to DIR for the plant to animate.
live_tree() {
    need_file "$CARMA_FIXTURES/$1"
    cp -a "$CARMA_FIXTURES/$1" "$2" || fail "cannot copy fixture $1"
}

# start_plant TREE CONFIG TRUTH [PLANT_OPTIONS...]: start carma-plant in the background on
# TREE, wait until it has written its first period (its pidfile), and register it to be
# killed when the test exits. Sets PLANT_PID.
start_plant() {
    local tree=$1 config=$2 truth=$3 pidfile i
    shift 3
    need_file "$PLANT" "$config" "$tree"
    pidfile="$truth.pid"
    rm -f "$pidfile"
    "$PLANT" --tree "$tree" --config "$config" --truth "$truth" --pidfile "$pidfile" "$@" \
        >plant.log 2>&1 &
    PLANT_PID=$!
    _cleanup_pids+=("$PLANT_PID")
    for ((i = 0; i < 500; i++)); do
        [ -s "$pidfile" ] && return 0
        kill -0 "$PLANT_PID" 2>/dev/null || fail "carma-plant exited: $(cat plant.log)"
        sleep 0.01
    done
    fail "carma-plant did not start within 5 s: $(cat plant.log)"
}

# stop_plant: stop the plant started by start_plant (SIGTERM) and wait for it; fail if it
# had died on its own.
stop_plant() {
    kill -0 "$PLANT_PID" 2>/dev/null || fail "carma-plant died during the test: $(cat plant.log)"
    kill -TERM "$PLANT_PID"
    wait "$PLANT_PID" || fail "carma-plant exited with $?: $(cat plant.log)"
}

# json_get FILE EXPR: print the Python expression EXPR evaluated with j = the JSON in FILE
# (e.g. json_get out.json 'j["exit_status"]'); null/true/false print as in JSON.
json_get() {
    "$PY" -c '
import json, sys
j = json.load(open(sys.argv[1]))
v = eval(sys.argv[2], {"j": j})
print(json.dumps(v) if v is None or isinstance(v, (bool, dict, list)) else v)
' "$1" "$2" || fail "json_get $1 $2"
}

# sig_ignored FILE: the SigIgn mask of a /proc/PID/status copy in FILE, as 16 hex digits, less
# the signals glibc keeps for itself (32 and 33): no program can reset those through sigaction,
# and some environments (this project's CI among them) start everything with them ignored.
sig_ignored() {
    local v
    v=$(awk '/^SigIgn/ { print $2 }' "$1")
    printf '%016x' $((0x${v:-ffffffffffffffff} & ~0x180000000))
}

# run_logged NAME CMD...: run CMD with stdout/stderr in NAME.out/NAME.err, print its exit
# status (never fails by itself).
run_logged() {
    local name=$1 rc=0
    shift
    "$@" >"$name.out" 2>"$name.err" || rc=$?
    echo "$rc"
}

# show FILE...: print files (for the failure log).
show() {
    local f
    for f in "$@"; do
        [ -e "$f" ] || continue
        echo "----- $f"
        cat "$f"
    done
}
