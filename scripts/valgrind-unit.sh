#!/usr/bin/env bash
# Runs the unit suite (meson's suite "unit") under valgrind's memcheck and sums up what it
# found. Every process valgrind watches (each test program and the children it forks) writes
# its own log, BUILD/valgrind/<pid>.log; the summary counts programs, errors, definitely and
# indirectly lost bytes and file descriptors left open at exit (other than 0, 1, 2 and those
# the test runner passed in).
#
#   bash scripts/valgrind-unit.sh [BUILD]          (default build; needs a -Dtests=enabled build)
#   nice -n 19 bash scripts/valgrind-unit.sh build  (it is slow: a CPU-bound job)
#
# Exits non-zero when a test fails under valgrind or any log shows an error, a definite or
# indirect leak or a descriptor left open. Not part of `make test` (it takes minutes). docs/testing.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v valgrind >/dev/null || { echo "valgrind-unit: valgrind not installed" >&2; exit 2; }
[ -f "$build/build.ninja" ] || { echo "valgrind-unit: no meson build in $build" >&2; exit 2; }
ninja -C "$build" >/dev/null

logs=$(cd "$build" && pwd)/valgrind
rm -rf "$logs"
mkdir -p "$logs"
start=$(date +%s)
set +e
# --child-silent-after-fork: a forked child that only calls exec or _exit is not a program of
# ours (its "leaks" are the parent's heap); the exec'd programs are not traced either.
# --soname-synonyms=somalloc=nouserintercepts: the programs that count allocations
# (tests/unit/alloccount.c) define malloc and free themselves, on top of glibc's __libc_malloc
# and __libc_free; valgrind then watches those (and not the programs' own), so that every
# block is seen allocated and freed by the same allocator.
vg=(valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect
    --show-leak-kinds=definite,indirect --track-fds=yes --child-silent-after-fork=yes
    --soname-synonyms=somalloc=nouserintercepts "--log-file=$logs/%p.log")
meson test -C "$build" --suite unit --timeout-multiplier 20 --num-processes 1 --wrap="${vg[*]}"
rc=$?
set -e
end=$(date +%s)

programs=0
errors=0
leaked=0
fds=0
bad=()
for f in "$logs"/*.log; do
    [ -f "$f" ] || continue
    programs=$((programs + 1))
    e=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$f" | tail -n 1)
    d=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$f" | tr -d , | tail -n 1)
    i=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$f" | tr -d , | tail -n 1)
    # "Open file descriptor N: ..." lines, less the standard three and those whose next line
    # says "<inherited from parent>" (the log itself, the runner's)
    o=$(awk '/Open (file descriptor|AF_UNIX socket) [0-9]+/ { l = $0; getline n
             if (n !~ /inherited from parent/ && l !~ /descriptor [012]:/) c++ }
             END { print c + 0 }' "$f")
    e=${e:-0}
    d=${d:-0}
    i=${i:-0}
    errors=$((errors + e))
    leaked=$((leaked + d + i))
    fds=$((fds + o))
    if [ "$e" -ne 0 ] || [ "$d" -ne 0 ] || [ "$i" -ne 0 ] || [ "$o" -ne 0 ]; then
        bad+=("$f")
    fi
done
echo "valgrind-unit: $programs processes, $errors errors, $leaked bytes lost (definite +" \
    "indirect), $fds descriptors open at exit (besides 0-2 and inherited), $((end - start)) s;" \
    "meson test exit $rc"
for f in "${bad[@]}"; do
    echo "valgrind-unit: see $f ($(grep -m1 'Command:' "$f" | sed 's/.*Command: //'))"
done
[ $rc -eq 0 ] && [ ${#bad[@]} -eq 0 ]
