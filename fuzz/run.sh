#!/usr/bin/env bash
# Builds every libFuzzer harness fuzz/fuzz_*.c with clang (-fsanitize=fuzzer,address,undefined)
# into build-fuzz/ and runs each for SECONDS seconds (default 20) on a copy of its seed corpus
# fuzz/corpus/<name>/ (with fuzz/<name>.dict when there is one). Exits non-zero, naming the
# reproducer, when a harness crashes, leaks, times out or runs out of memory.
#
#   bash fuzz/run.sh [SECONDS [NAME...]]   CLANG=clang-14 bash fuzz/run.sh 600
#   bash fuzz/run.sh 60 promparse          (only fuzz/fuzz_promparse.c)
#
# A harness names the carma sources it needs on a line "fuzz-sources: a.c b.c" in its header
# comment (several such lines add up); they are compiled in directly (no meson), linked with the
# libraries on optional lines "fuzz-libs: -ljansson -lgsl" (pkg-config names are not needed:
# Debian's -l names work).
# Reproduce a crash with
#   build-fuzz/fuzz_<name> build-fuzz/artifacts/<name>/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-20}
case $seconds in '' | *[!0-9]*) echo "usage: $0 [SECONDS [NAME...]]" >&2; exit 2 ;; esac
shift $(( $# > 0 ? 1 : 0 ))

cc=${CLANG:-}
if [ -z "$cc" ]; then
    for c in clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do
        if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
    done
fi
[ -n "$cc" ] || { echo "fuzz: no clang found (scripts/deps.sh --test installs it)" >&2; exit 2; }

out=build-fuzz
mkdir -p "$out"
# the data/ tables that meson embeds in carma (core/table.c), for harnesses that name
# build-fuzz/embedded_data.c on their fuzz-sources line
# (written aside and renamed: another run.sh may be compiling it)
python3 scripts/embed.py "$out/embedded_data.c.$$" data/cpu_tdp.csv data/grid_intensity.csv \
    data/embodied.csv
mv -f "$out/embedded_data.c.$$" "$out/embedded_data.c"
# shellcheck disable=SC2054 # the commas belong to -fsanitize=
cflags=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g -O1
        -fno-omit-frame-pointer -std=c17 -D_GNU_SOURCE -Isrc -Wall -Wextra)

shopt -s nullglob
if [ $# -gt 0 ]; then
    harnesses=()
    for n in "$@"; do
        [ -f "fuzz/fuzz_$n.c" ] || { echo "fuzz: no harness fuzz/fuzz_$n.c" >&2; exit 2; }
        harnesses+=("fuzz/fuzz_$n.c")
    done
else
    harnesses=(fuzz/fuzz_*.c)
fi
[ ${#harnesses[@]} -gt 0 ] || { echo "fuzz: no harness in fuzz/" >&2; exit 2; }

status=0
for h in "${harnesses[@]}"; do
    name=$(basename "$h" .c)
    name=${name#fuzz_}
    srcs=$(sed -n 's/^.*fuzz-sources:[[:space:]]*//p' "$h" | sed 's|[*]/.*||' | tr '\n' ' ')
    libs=$(sed -n 's/^.*fuzz-libs:[[:space:]]*//p' "$h" | sed 's|[*]/.*||' | tr '\n' ' ')
    bin=$out/fuzz_$name
    echo "fuzz: building $bin ($cc; $h $srcs $libs)"
    # shellcheck disable=SC2086 # srcs and libs are lists of words without blanks
    if ! "$cc" "${cflags[@]}" -o "$bin" "$h" $srcs $libs -lm; then
        echo "fuzz: $name: build failed" >&2
        status=1
        continue
    fi

    work=$out/corpus-$name
    arts=$out/artifacts/$name
    rm -rf "$work"
    mkdir -p "$work" "$arts"
    if [ -d "fuzz/corpus/$name" ]; then
        cp -R "fuzz/corpus/$name/." "$work/"
    fi
    dict=()
    [ -f "fuzz/$name.dict" ] && dict=(-dict="fuzz/$name.dict")
    log=$out/fuzz-$name.log
    # the harnesses' scratch files (fuzz/fuzz_file.h) go below build-fuzz, whatever a crash
    # leaves there is removed by the next run
    tmp=$out/tmp-$name
    rm -rf "$tmp"
    mkdir -p "$tmp"
    echo "fuzz: running $name for ${seconds}s (log: $log)"
    set +e
    TMPDIR=$PWD/$tmp ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$arts/" "${dict[@]}" "$work" >"$log" 2>&1
    rc=$?
    set -e
    rm -rf "$tmp"
    grep -E '^#[0-9]+[[:space:]]+DONE|^Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb' "$log" || true
    if [ $rc -ne 0 ]; then
        status=1
        echo "fuzz: $name FAILED (exit $rc); the end of $log:" >&2
        tail -n 40 "$log" >&2
        found=0
        for a in "$arts"/crash-* "$arts"/leak-* "$arts"/timeout-* "$arts"/oom-* \
            "$arts"/slow-unit-*; do
            [ -f "$a" ] || continue
            found=1
            echo "fuzz: reproducer: $a (run: $bin $a)" >&2
        done
        [ $found -eq 1 ] || echo "fuzz: no reproducer written (see $log)" >&2
    else
        echo "fuzz: $name ok"
    fi
done
exit $status
