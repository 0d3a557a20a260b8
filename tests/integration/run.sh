#!/usr/bin/env bash
# Runs carma's integration tests: every tests/integration/test_*.sh, one after the other (they
# measure real CPU load, so they must not overlap), each in its own temporary directory with a
# timeout.
#
#   tests/integration/run.sh [BUILD_DIR [TEST_NAME...]]
#
# BUILD_DIR (default: build) is a meson build directory holding the carma binary and the test
# fakes. Each test gets CARMA, CARMA_BUILD, CARMA_SRC and CARMA_FIXTURES in its environment.
# Prints PASS/FAIL/SKIP per test (with the test's output when it fails) and ends with
# "N passed, N failed" (", N skipped" when some were skipped); exits 1 if any failed.
# CARMA_TEST_TIMEOUT sets the per-test timeout in seconds (default 300: the plant tests may retry); CARMA_TEST_VERBOSE=1
# shows every test's output, not only a failing one's.

set -u

src=$(cd "$(dirname "$0")/../.." && pwd)
build_arg=${1:-build}
[ $# -gt 0 ] && shift
build=$(cd "$build_arg" 2>/dev/null && pwd) || {
    echo "run.sh: no build directory '$build_arg'" >&2
    exit 2
}
timeout_s=${CARMA_TEST_TIMEOUT:-300}

if [ ! -x "$build/carma" ]; then
    echo "run.sh: $build/carma not found: build it first (ninja -C $build)" >&2
    exit 2
fi

export CARMA="$build/carma"
export CARMA_BUILD="$build"
export CARMA_SRC="$src"
export CARMA_FIXTURES="$src/tests/fixtures"

tests=()
if [ $# -gt 0 ]; then
    for name in "$@"; do
        name=${name%.sh}
        tests+=("$src/tests/integration/${name}.sh")
    done
else
    for t in "$src"/tests/integration/test_*.sh; do
        [ -e "$t" ] && tests+=("$t")
    done
fi

passed=0 failed=0 skipped=0
for t in "${tests[@]}"; do
    name=$(basename "$t" .sh)
    if [ ! -f "$t" ]; then
        echo "FAIL $name (no such test)"
        failed=$((failed + 1))
        continue
    fi
    dir=$(mktemp -d "${TMPDIR:-/tmp}/carma-it-$name.XXXXXX")
    rc=0
    (cd "$dir" && exec timeout --kill-after=10 "$timeout_s" bash "$t") >"$dir/test.log" 2>&1 ||
        rc=$?
    case $rc in
    0)
        echo "PASS $name"
        [ "${CARMA_TEST_VERBOSE:-0}" = 1 ] && sed 's/^/    /' "$dir/test.log"
        passed=$((passed + 1))
        rm -rf "$dir"
        ;;
    77)
        echo "SKIP $name: $(grep -m1 '^SKIP:' "$dir/test.log" | sed 's/^SKIP: //')"
        [ "${CARMA_TEST_VERBOSE:-0}" = 1 ] && sed 's/^/    /' "$dir/test.log"
        skipped=$((skipped + 1))
        rm -rf "$dir"
        ;;
    *)
        case $rc in
        124 | 137) why="timed out after ${timeout_s}s" ;;
        *) why="exit status $rc" ;;
        esac
        echo "FAIL $name ($why; files kept in $dir)"
        sed 's/^/    /' "$dir/test.log"
        failed=$((failed + 1))
        ;;
    esac
done

summary="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && summary="$summary, $skipped skipped"
echo "$summary"
[ "$failed" -eq 0 ]
