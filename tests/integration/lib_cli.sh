# Helpers for the command-line integration tests (tests/integration/test_cli_*.sh): they drive
# the real carma binary on fixture trees, bad input and signals, and check exact messages,
# exit statuses and output files.
#
# Sourced by each test_cli_*.sh. It fills in the environment when a test is started by hand
# instead of by run.sh (CARMA defaults to build/carma of the repository, CARMA_BUILD to the
# directory holding CARMA), then sources lib.sh.
#
# Checks come in two strengths: fail (lib.sh) ends the test at once, for a broken setup;
# check_* record a failed expectation and go on, so one run reports every wrong behaviour;
# cli_done ends the test, failed if any check failed.

: "${CARMA_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${CARMA:=$CARMA_SRC/build/carma}"
# a relative CARMA names a file below the repository when it is not one below the cwd
if [ "${CARMA#/}" = "$CARMA" ]; then
    if [ -e "$CARMA" ]; then
        CARMA="$PWD/$CARMA"
    else
        CARMA="$CARMA_SRC/$CARMA"
    fi
fi
: "${CARMA_BUILD:=$(dirname "$CARMA")}"
: "${CARMA_FIXTURES:=$CARMA_SRC/tests/fixtures}"
export CARMA CARMA_BUILD CARMA_SRC CARMA_FIXTURES

# shellcheck source=tests/integration/lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

[ -x "$CARMA" ] || fail "no carma binary at $CARMA (build it first)"
[ -x "$PY" ] || skip "$PY (Debian's python3) is not installed"

# shellcheck disable=SC2034 # used by the tests that source this file
BAD_FIXTURES="$CARMA_FIXTURES/bad"
_cli_failures=0

# check_fail MSG: record a failed expectation (printed now) and go on.
check_fail() {
    echo "FAIL: $*" >&2
    _cli_failures=$((_cli_failures + 1))
}

# cli_done: end the test: exit 1 if a check failed, else 0.
cli_done() {
    if [ "$_cli_failures" -gt 0 ]; then
        echo "$_cli_failures check(s) failed" >&2
        exit 1
    fi
    exit 0
}

# check_eq ACTUAL EXPECTED MSG
check_eq() {
    [ "$1" = "$2" ] || check_fail "$3: got '$1', expected '$2'"
}

# check_rc NAME EXPECTED RC: RC (from run_logged NAME ...) must be EXPECTED; shows NAME's
# output when it is not.
check_rc() {
    if [ "$3" != "$2" ]; then
        check_fail "$1: exit status $3, expected $2"
        show "$1.out" "$1.err" >&2
    fi
}

# check_grep FILE TEXT MSG: FILE contains TEXT (a fixed string).
check_grep() {
    if ! grep -qF -- "$2" "$1" 2>/dev/null; then
        check_fail "$3: '$2' not found in $1"
        show "$1" >&2
    fi
}

# check_re FILE ERE MSG: a line of FILE matches the extended regular expression ERE.
check_re() {
    if ! grep -qE -- "$2" "$1" 2>/dev/null; then
        check_fail "$3: /$2/ not found in $1"
        show "$1" >&2
    fi
}

# check_no_grep FILE TEXT MSG: FILE does not contain TEXT (a fixed string).
check_no_grep() {
    if grep -qF -- "$2" "$1" 2>/dev/null; then
        check_fail "$3: '$2' found in $1"
        show "$1" >&2
    fi
}

# check_clean_stderr NAME: NAME.err has no sanitizer, crash or assertion report.
check_clean_stderr() {
    local pat='AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:'
    pat="$pat|Segmentation fault|Assertion .* failed|stack smashing|double free|core dumped"
    if grep -qE "$pat" "$1.err" 2>/dev/null; then
        check_fail "$1: a crash or sanitizer report on stderr"
        show "$1.err" >&2
    fi
}

# check_py MSG SCRIPT [ARGS...]: run a Python check (Debian's python3) with ARGS in sys.argv;
# it fails by raising (AssertionError with a message). Helpers in its namespace: load(path)
# reads JSON, chan(j, name) finds a channel by name, csv_rows(path) checks the samples.csv
# framing and returns its rows (header first) as lists of fields.
check_py() {
    local msg=$1 script=$2 out rc=0
    shift 2
    out=$("$PY" - "$@" 2>&1 <<EOF
import csv, io, json, math, os, re, sys

def load(path):
    with open(path) as f:
        return json.load(f)

def chan(j, name):
    for c in j["channels"]:
        if c["name"] == name:
            return c
    raise AssertionError("no channel %r in %s" % (name, [c["name"] for c in j["channels"]]))

def csv_rows(path):
    data = open(path, "rb").read()
    assert data, "%s is empty" % path
    assert data.endswith(b"\r\n"), "%s does not end with CRLF (a cut row?)" % path
    text = data.decode("utf-8")
    lines = text.split("\r\n")[:-1]
    for k, line in enumerate(lines):
        assert "\n" not in line and "\r" not in line, "line %d of %s is not CRLF-terminated: %r" % (k + 1, path, line)
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    assert len(rows) == len(lines), "%s: %d CSV records on %d lines" % (path, len(rows), len(lines))
    for k, r in enumerate(rows):
        assert len(r) == 9, "line %d of %s has %d fields, not 9: %r" % (k + 1, path, len(r), lines[k])
    return rows

$script
EOF
) || rc=$?
    if [ "$rc" -ne 0 ]; then
        check_fail "$msg: $(printf '%s' "$out" | tail -n 1)"
    elif [ -n "$out" ]; then
        printf '%s\n' "$out"
    fi
}

# carma_bg [ENV=VAL...] -- ARGS...: start carma ARGS in the background with the default action
# for SIGINT and SIGQUIT (a non-interactive shell starts background jobs with them ignored,
# and carma, like every program, cannot be reached by an ignored signal); stdout and stderr
# go to bg.out / bg.err unless BG_NAME names other files. Sets BG_PID.
carma_bg() {
    local envs=() name=${BG_NAME:-bg}
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        envs+=("$1")
        shift
    done
    shift
    env "${envs[@]}" "$PY" -c '
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])
' "$CARMA" "$@" >"$name.out" 2>"$name.err" &
    # shellcheck disable=SC2034 # read by the caller
    BG_PID=$!
}

# wait_child_of PID: print the pid of PID's first child once it exists (within 5 s).
wait_child_of() {
    local i c
    for ((i = 0; i < 500; i++)); do
        c=$(pgrep -o -P "$1" 2>/dev/null) && [ -n "$c" ] && {
            echo "$c"
            return 0
        }
        sleep 0.01
    done
    return 1
}

# wait_rows FILE N: wait (up to 5 s) until FILE has at least N lines.
wait_rows() {
    local i
    for ((i = 0; i < 500; i++)); do
        [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
        sleep 0.01
    done
    return 1
}

# kill_group PGID: SIGKILL what is left of a process group this test started (by its id).
kill_group() {
    [ -n "$1" ] && kill -KILL -- "-$1" 2>/dev/null
    return 0
}

# copy_tree SRC DEST: copy a fixture tree (relative SRC: below tests/fixtures).
copy_tree() {
    local src=$1
    [ "${src#/}" = "$src" ] && src="$CARMA_FIXTURES/$src"
    [ -d "$src" ] || fail "no fixture tree $src"
    cp -a "$src" "$2" || fail "cannot copy $src"
}

# have_hwmon: true when this carma has the hwmon source.
have_hwmon() {
    "$CARMA" sensors --root "$CARMA_FIXTURES/vm-empty" --sources hwmon --sample 1ms --json \
        >/dev/null 2>&1
}

# live_procstat FIXTURE DIR: copy FIXTURE to DIR and start the plant mirroring this machine's
# /proc/stat into DIR/proc/stat (the model needs utilization that moves: on a static
# proc/stat no clock tick ever elapses). Returns 1 (and starts nothing) without the plant.
live_procstat() {
    [ -x "$PLANT" ] || return 1
    copy_tree "$1" "$2"
    printf 'stat proc/stat\n' >"$2.plant.conf"
    start_plant "$2" "$2.plant.conf" "$2.truth.csv"
}
