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
# libraries on optional "fuzz-libs: -ljansson -lgsl" lines (pkg-config names are not needed:
# Debian's -l names work).
# The data/ tables that meson embeds are written to build-fuzz/embedded_data.c (scripts/embed.py)
# first, so a harness whose sources need them names that file on its fuzz-sources: line.
# Each source is compiled once for all the harnesses (build-fuzz/obj-<cc>/, again when it or
# any header of src/ and fuzz/ changed), the harnesses are linked and then run FUZZ_JOBS at a
# time (default: the number of CPUs), each on one core; their summaries print in order.
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
# written aside and renamed, so that another run.sh compiling it meanwhile reads a whole file
python3 scripts/embed.py "$out/embedded_data.c.$$" data/cpu_tdp.csv data/grid_intensity.csv \
    data/embodied.csv
mv -f "$out/embedded_data.c.$$" "$out/embedded_data.c"
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in '' | *[!0-9]* | 0) echo "fuzz: FUZZ_JOBS must be a positive number" >&2; exit 2 ;; esac
# shellcheck disable=SC2054 # the commas belong to -fsanitize=
cflags=(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g -O1
        -fno-omit-frame-pointer -std=c17 -D_GNU_SOURCE -Isrc -Wall -Wextra)
# shellcheck disable=SC2054 # the commas belong to -fsanitize=
ldflags=(-fsanitize=fuzzer,address,undefined)

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

# ---- the sources: each compiled once
obj=$out/obj-$(basename "$cc")
mkdir -p "$obj"
# a header newer than the last build: every object again (no dependency tracking here)
if [ -n "$(find src fuzz -name '*.h' -newer "$obj/.stamp" -print -quit 2>/dev/null)" ] ||
    [ ! -f "$obj/.stamp" ]; then
    rm -f "$obj"/*.o
fi
declare -A srcs_of libs_of
all_srcs=()
for h in "${harnesses[@]}"; do
    name=$(basename "$h" .c)
    name=${name#fuzz_}
    # several fuzz-sources: (fuzz-libs:) lines add up, so that a long list fits the line width
    srcs_of[$name]="$h $(sed -n 's/^.*fuzz-sources:[[:space:]]*//p' "$h" | sed 's|[*]/.*||' | tr '\n' ' ')"
    libs_of[$name]=$(sed -n 's/^.*fuzz-libs:[[:space:]]*//p' "$h" | sed 's|[*]/.*||' | tr '\n' ' ')
    # shellcheck disable=SC2206 # a list of paths without blanks
    all_srcs+=(${srcs_of[$name]})
done
objname() { local p=${1//\//_}; echo "$obj/${p%.c}.o"; }
todo=()
for src in $(printf '%s\n' "${all_srcs[@]}" | sort -u); do
    [ -f "$src" ] || { echo "fuzz: $src (on a fuzz-sources: line) does not exist" >&2; exit 2; }
    o=$(objname "$src")
    [ -f "$o" ] && [ ! "$src" -nt "$o" ] || todo+=("$src")
done
echo "fuzz: compiling ${#todo[@]} sources ($cc, $jobs at a time) into $obj/"
# shellcheck disable=SC2317 # called by xargs' bash
compile_one() { # SRC OBJ: compile, written aside and renamed
    "$cc" "${cflags[@]}" -c -o "$2.$$" "$1" && mv -f "$2.$$" "$2"
}
export -f compile_one
export cc obj
export FUZZ_CFLAGS="${cflags[*]}"
status=0
if [ ${#todo[@]} -gt 0 ]; then
    # shellcheck disable=SC2016 # expanded by xargs' bash
    for src in "${todo[@]}"; do printf '%s\n%s\n' "$src" "$(objname "$src")"; done |
        xargs -d '\n' -n 2 -P "$jobs" bash -c 'cflags=($FUZZ_CFLAGS); compile_one "$@"' _ ||
        { echo "fuzz: compiling failed (above)" >&2; exit 1; }
fi
touch "$obj/.stamp"

# ---- the harnesses: linked
built=()
for h in "${harnesses[@]}"; do
    name=$(basename "$h" .c)
    name=${name#fuzz_}
    objs=()
    for src in ${srcs_of[$name]}; do objs+=("$(objname "$src")"); done
    # shellcheck disable=SC2086 # libs: words without blanks
    if ! "$cc" "${ldflags[@]}" -o "$out/fuzz_$name" "${objs[@]}" ${libs_of[$name]} -lm; then
        echo "fuzz: $name: link failed" >&2
        status=1
        continue
    fi
    built+=("$name")
done

# ---- the runs: FUZZ_JOBS at a time, each's summary in $out/summary-<name>, its status in
# $out/status-<name>
# shellcheck disable=SC2317 # called by xargs' bash
run_one() {
    local name=$1 bin=$out/fuzz_$1 work=$out/corpus-$1 arts=$out/artifacts/$1
    local log=$out/fuzz-$1.log tmp=$out/tmp-$1 sum=$out/summary-$1 rc
    rm -rf "$work" "$tmp"
    mkdir -p "$work" "$arts" "$tmp"
    if [ -d "fuzz/corpus/$name" ]; then
        cp -R "fuzz/corpus/$name/." "$work/"
    fi
    local dict=()
    [ -f "fuzz/$name.dict" ] && dict=(-dict="fuzz/$name.dict")
    {
        echo "fuzz: running $name for ${seconds}s (log: $log)"
        set +e
        # the harnesses' scratch files (fuzz/fuzz_file.h) go below build-fuzz; whatever a
        # crash leaves there is removed by the next run
        TMPDIR=$PWD/$tmp ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
            UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
            "$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$arts/" "${dict[@]}" "$work" >"$log" 2>&1
        rc=$?
        rm -rf "$tmp"
        grep -E '^#[0-9]+[[:space:]]+DONE|^Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb' "$log"
        if [ "$rc" -ne 0 ]; then
            echo "fuzz: $name FAILED (exit $rc); the end of $log:"
            tail -n 40 "$log"
            local found=0 a
            for a in "$arts"/crash-* "$arts"/leak-* "$arts"/timeout-* "$arts"/oom-* \
                "$arts"/slow-unit-*; do
                [ -f "$a" ] || continue
                found=1
                echo "fuzz: reproducer: $a (run: $bin $a)"
            done
            [ "$found" -eq 1 ] || echo "fuzz: no reproducer written (see $log)"
        else
            echo "fuzz: $name ok"
        fi
    } >"$sum" 2>&1
    echo "$rc" >"$out/status-$name"
}
export -f run_one
export out seconds
if [ ${#built[@]} -gt 0 ]; then
    echo "fuzz: running ${#built[@]} harnesses for ${seconds}s each, $jobs at a time"
    rm -f "$out"/status-* "$out"/summary-*
    # shellcheck disable=SC2016 # expanded by xargs' bash
    printf '%s\n' "${built[@]}" | xargs -d '\n' -n 1 -P "$jobs" bash -c 'run_one "$1"' _ || true
fi
for name in "${built[@]}"; do
    cat "$out/summary-$name" 2>/dev/null || echo "fuzz: $name: no summary"
    rc=$(cat "$out/status-$name" 2>/dev/null || echo 1)
    [ "$rc" = 0 ] || status=1
done
exit $status
