#!/usr/bin/env bash
# h200-check.sh: carma on a GPU machine, in one go (about 5 minutes, at most H200_DEADLINE_S).
#
# usage: bash bench/gpu/h200-check.sh            on the GPU machine, from the repo root
#        bash bench/gpu/h200-check.sh --dry      here, without a GPU: the fake NVML of a build
#                                                directory and CPU-spinning stand-in loads
#
# Steps (each under timeout(1); one that fails is recorded and the next ones run anyway):
#   1. a carma binary: built here with meson + ninja (release, tests off, in /tmp) when gcc,
#      meson, ninja and jansson.h are there; else build-portable/carma, carried from a Debian 12
#      machine (bench/gpu/build-portable.sh); H200_CARMA=build|portable forces one;
#   2. `carma sensors` and `carma sensors --json` (when no NVML channel shows up, the
#      libnvidia-ml.so.1 of the machine is looked for and named in CARMA_NVML_LIBRARY);
#  2b. DCGM, where the machine has libdcgm (libdcgm.so.4 or .so.3: ldconfig -p, then
#      /usr/lib/{x86_64,aarch64}-linux-gnu, /usr/lib64, /usr/local/dcgm/lib64; --dry: the fake
#      build*/tests/fakes/libdcgm.so.4 with tests/fakes/dcgm/grace.scenario): `carma sensors
#      --sources dcgm` and `--json` (DCGM's embedded engine), the same --json through
#      nv-hostengine (`--dcgm-host 127.0.0.1`; one started for the step, and ended by its id,
#      when none answers) where nv-hostengine is installed, and one load (the heavy one, alone,
#      H200_DCGM_SECONDS) measured by DCGM and by NVML at once: `carma stat --sources dcgm --
#      carma stat --sources nvml -- LOAD` (apart: with both sources in one carma, DCGM leaves
#      out every GPU NVML reads). Without libdcgm the summary says "DCGM: not installed on this
#      machine (libdcgm.so.4 not found)" and the check goes on;
#   3. two GPU loads (bench/gpu/gpu_load.py: bf16 matrix products on cuda:0, busy 75 % and
#      25 % of every 100 ms) side by side, started together (a barrier after their warm-up):
#        bare         the two loads without carma (iterations/s of reference)
#        carma_100ms  `carma run --interval 100ms` of an experiment of the same two loads
#        carma_10ms   the same at --interval 10ms
#        bare_after   the bare run again (how much the reference itself moves), when time is left
#      around each, the NVML energy counters are read by bench/gpu/h200_tool.py (ctypes), as a
#      reference independent of carma; carma's own CPU time (its children excluded) comes from
#      /proc/PID/schedstat of the exited, not yet reaped carma;
#   4. $OUT/h200-summary.json and .txt (bench/gpu/h200_tool.py summary), $OUT/h200-runs.tar.gz
#      (the run directories and every file the summary read), $OUT/h200-check.log (everything
#      the steps printed), $OUT/sensors.txt and sensors.json, $OUT/dcgm-sensors.txt, .json and
#      dcgm-sensors-hostengine.json (step 2b); the summary is printed at the end.
#
# Environment: OUT (default: a new /tmp/h200-out.XXXXXX), H200_SECONDS (timed part of each load,
# default 45; --dry 4), H200_SIZE (matrix size, 8192), H200_BASELINE (carma's baseline s, 3;
# --dry 1), H200_DEADLINE_S (540: steps that cannot end before it are skipped), H200_CARMA
# (auto), H200_BARE_AFTER (1), CARMA_NVML_LIBRARY (--dry: build*/tests/fakes/libfake-nvml.so),
# CARMA_FAKE_NVML_SCENARIO (--dry: tests/fakes/nvml/two.scenario), H200_DCGM_SECONDS (the DCGM
# step's load, 15; --dry 3), CARMA_DCGM_LIBRARY (a libdcgm to use; --dry: the fake's),
# CARMA_FAKE_DCGM_SCENARIO (--dry: tests/fakes/dcgm/grace.scenario). Uses no network.
set -u
export PYTHONUNBUFFERED=1
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
tool=$here/h200_tool.py
load=$here/gpu_load.py

# ------------------------------------------------------------------ internal: the bare run
# bash h200-check.sh __bare DIR PYTHON SECONDS SIZE MODE NAME:DUTY...: the loads side by side,
# each one's output in DIR/NAME.out; exit status 1 when one failed
if [[ ${1:-} == __bare ]]; then
    dir=$2 py=$3 secs=$4 size=$5 lmode=$6
    shift 6
    n=$#
    pids=() names=()
    for spec in "$@"; do
        name=${spec%%:*} duty=${spec#*:}
        names+=("$name")
        CUDA_VISIBLE_DEVICES=0 "$py" "$load" --seconds "$secs" \
            --duty "$duty" --size "$size" --mode "$lmode" --barrier "$dir/barrier" \
            --peers "$n" --name "$name" >"$dir/$name.out" 2>"$dir/$name.err" &
        pids+=($!)
    done
    rc=0
    for i in "${!pids[@]}"; do
        if ! wait "${pids[$i]}"; then
            rc=1
            name=${names[$i]}
            echo "load $name failed: $(tail -1 "$dir/$name.out" 2>/dev/null | cut -c1-200)" \
                "$(tail -2 "$dir/$name.err" 2>/dev/null | tr '\n' ' ' | cut -c1-200)" >&2
        fi
    done
    exit $rc
fi

# ------------------------------------------------------------------ settings
mode=device
if [[ ${1:-} == --dry ]]; then
    mode=dry
elif [[ -n ${1:-} ]]; then
    echo "usage: bash bench/gpu/h200-check.sh [--dry]" >&2
    exit 2
fi
if [[ $mode == dry ]]; then
    load_secs=${H200_SECONDS:-4}
    baseline=${H200_BASELINE:-1}
    load_mode=fake
else
    load_secs=${H200_SECONDS:-45}
    baseline=${H200_BASELINE:-3}
    load_mode=gpu
fi
size=${H200_SIZE:-8192}
deadline=${H200_DEADLINE_S:-540}
carma_choice=${H200_CARMA:-auto}
bare_after=${H200_BARE_AFTER:-1}
loads=(heavy:0.75 light:0.25)
run_timeout=$((${load_secs%.*} + 120))
run_min=$((${load_secs%.*} + 30)) # a run is skipped rather than cut short

out=${OUT:-}
if [[ -z $out ]]; then
    out=$(mktemp -d /tmp/h200-out.XXXXXX)
fi
mkdir -p "$out"
work=$(mktemp -d /tmp/h200-work.XXXXXX)
log=$out/h200-check.log
: >"$log"
steps=$work/steps.jsonl
: >"$steps"
# the interpreter itself, not a wrapper (a pyenv shim) in front of it
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || command -v python3 ||
    echo python3)

say() {
    printf '[%3ds] %s\n' "$SECONDS" "$*"
    printf '[%3ds] %s\n' "$SECONDS" "$*" >>"$log"
}

# record NAME STATUS RC SECONDS MESSAGE: one line of steps.jsonl
record() {
    "$py" -c 'import json, sys
n, st, rc, s, msg = sys.argv[1:6]
print(json.dumps({"step": n, "status": st, "rc": int(rc) if rc.lstrip("-").isdigit() else None,
                  "seconds": int(s) if s.isdigit() else None, "error": msg or None}))' \
        "$1" "$2" "$3" "$4" "$5" >>"$steps" 2>>"$log" ||
        printf '{"step": "%s", "status": "%s"}\n' "$1" "$2" >>"$steps"
}

# step NAME TIMEOUT STDOUT CMD...: runs CMD under timeout, cut to the time left before the
# deadline; skipped when less than STEP_MIN s (default 20) are left, unless STEP_FORCE=1. CMD's
# stdout goes to STDOUT ("-": the log), its stderr to the log. Returns CMD's status (124 on a
# timeout, 125 when skipped).
step() {
    local name=$1 t=$2 so=$3
    shift 3
    local left=$((deadline - SECONDS - 15))
    if [[ ${STEP_FORCE:-0} != 1 ]]; then
        if ((left < ${STEP_MIN:-20})); then
            say "-- $name: skipped, $((deadline - SECONDS)) s left before the deadline"
            record "$name" skipped "" 0 \
                "skipped: $((deadline - SECONDS)) s left before the deadline"
            return 125
        fi
        ((t > left)) && t=$left
    fi
    [[ $so == - ]] && so=$log
    say "-- $name (timeout ${t} s)"
    printf '   $ %s\n' "$*" >>"$log"
    local t0=$SECONDS rc=0
    timeout -k 10 "$t" "$@" >>"$so" 2>"$work/step.err" || rc=$?
    cat "$work/step.err" >>"$log"
    local st=ok msg=""
    if ((rc == 124 || rc == 137)); then
        st=timeout msg="timed out after $t s"
    elif ((rc != 0)); then
        st=failed msg="exit status $rc: $(tail -3 "$work/step.err" | tr '\n' ' ' | cut -c1-300)"
    fi
    ((rc == 0)) || say "   $name: $st ($msg)"
    record "$name" "$st" "$rc" "$((SECONDS - t0))" "$msg"
    return $rc
}

info() { # NAME MESSAGE: something worth knowing, not a failure
    say "   $1: $2"
    record "$1" note "" 0 "$2"
}

note() { # NAME MESSAGE: a problem found outside a step
    say "   $1: $2"
    record "$1" failed "" 0 "$2"
}

say "h200-check ($mode): repo $repo, OUT $out, work $work, loads ${loads[*]}, $load_secs s each"

# ------------------------------------------------------------------ dry mode: the fake NVML
if [[ $mode == dry && -z ${CARMA_NVML_LIBRARY:-} ]]; then
    # this check's own build directory first, then any other but a sanitizer build (an ASan
    # library cannot be loaded by a program built without ASan)
    for f in "$repo"/build-gpu/tests/fakes/libfake-nvml.so \
        "$repo"/build/tests/fakes/libfake-nvml.so "$repo"/build*/tests/fakes/libfake-nvml.so; do
        if [[ -f $f && $f != *asan* && $f != *san/* ]] &&
            "$py" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$f" 2>/dev/null; then
            export CARMA_NVML_LIBRARY=$f
            break
        fi
    done
    [[ -n ${CARMA_NVML_LIBRARY:-} ]] || note fake_nvml "no build*/tests/fakes/libfake-nvml.so"
fi
if [[ $mode == dry && -z ${CARMA_FAKE_NVML_SCENARIO:-} ]]; then
    export CARMA_FAKE_NVML_SCENARIO=$repo/tests/fakes/nvml/two.scenario
fi

# ------------------------------------------------------------------ 1. carma
carma="" carma_source=none
{
    echo "uname: $(uname -a)"
    echo "nproc: $(nproc 2>/dev/null)"
    echo "glibc: $(ldd --version 2>&1 | head -1)"
    for t in gcc cc meson ninja pkg-config nvidia-smi python3; do
        echo "$t: $(command -v $t || echo missing)"
    done
} >>"$log" 2>&1

have_meson() {
    if command -v meson >/dev/null; then
        meson_cmd=(meson)
    elif "$py" -c 'import mesonbuild' 2>/dev/null; then
        meson_cmd=("$py" -m mesonbuild.mesonmain)
    else
        return 1
    fi
}
try_build() {
    local bdir=/tmp/carma-h200-build
    if ! command -v gcc >/dev/null; then
        note build "gcc not found"
        return 1
    fi
    if ! have_meson; then
        note build "meson not found"
        return 1
    fi
    if ! command -v ninja >/dev/null; then
        note build "ninja not found"
        return 1
    fi
    if ! printf '#include <jansson.h>\n' | gcc -E -x c - >/dev/null 2>&1; then
        note build "jansson.h not found (no libjansson-dev)"
        return 1
    fi
    rm -rf "$bdir"
    step build_setup 120 - "${meson_cmd[@]}" setup --buildtype=release -Dtests=disabled \
        "$bdir" "$repo" || return 1
    step build_ninja 180 - ninja -C "$bdir" carma || return 1
    carma=$bdir/carma carma_source="built here (meson, release)"
}
try_portable() {
    local p=$repo/build-portable/carma
    if [[ ! -f $p ]]; then
        note portable "$p not found (not carried?)"
        return 1
    fi
    chmod +x "$p" 2>/dev/null
    if ! step portable_check 20 - "$p" --version; then
        return 1
    fi
    carma=$p carma_source="carried build-portable/carma"
    [[ -f $repo/build-portable/carma.info ]] && cat "$repo/build-portable/carma.info" >>"$log"
}
if [[ -n ${H200_CARMA_BIN:-} ]]; then
    carma=$H200_CARMA_BIN carma_source="H200_CARMA_BIN"
else
    case $carma_choice in
        build) try_build ;;
        portable) try_portable ;;
        *) try_build || try_portable ;;
    esac
fi
if [[ -n $carma ]]; then
    say "carma: $carma ($carma_source): $("$carma" --version 2>&1 | head -1)"
else
    note carma "no carma binary: the carma steps are skipped, the bare runs still run"
fi

# ------------------------------------------------------------------ GPU facts
if command -v nvidia-smi >/dev/null; then
    step nvidia_smi 30 "$work/nvidia-smi.txt" nvidia-smi \
        --query-gpu=name,driver_version,power.limit,power.draw,temperature.gpu,clocks.sm \
        --format=csv,noheader
    step nvidia_smi_full 30 "$work/nvidia-smi-q.txt" nvidia-smi -q -d POWER,CLOCK
fi

# ------------------------------------------------------------------ 2. sensors
nvml_seen() { # does sensors.json list an NVML channel?
    "$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if any(c.get("source") == "nvml" for c in d.get("channels", [])) else 1)' \
        "$work/sensors.json" 2>/dev/null
}
find_nvml() {
    local c
    for c in $(ldconfig -p 2>/dev/null | awk '/libnvidia-ml\.so\.1 /{ print $NF }') \
        /usr/local/nvidia/lib64/libnvidia-ml.so.1 /usr/local/nvidia/lib/libnvidia-ml.so.1 \
        /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 /usr/lib64/libnvidia-ml.so.1 \
        /usr/local/cuda/lib64/stubs/libnvidia-ml.so; do
        [[ -e $c && $c != */stubs/* ]] && { echo "$c"; return 0; }
    done
    timeout 20 find /usr /opt /lib /lib64 -xdev -name 'libnvidia-ml.so.1' 2>/dev/null |
        grep -v stubs | head -1
}
sensors() {
    : >"$work/sensors.txt"
    : >"$work/sensors.json"
    step sensors 60 "$work/sensors.txt" "$carma" sensors
    step sensors_json 60 "$work/sensors.json" "$carma" sensors --json
}
if [[ -n $carma ]]; then
    sensors
    if [[ $mode == device ]] && ! nvml_seen; then
        lib=$(find_nvml)
        if [[ -n $lib ]]; then
            export CARMA_NVML_LIBRARY=$lib
            info nvml_lookup \
                "no NVML channel with the default library: retrying with CARMA_NVML_LIBRARY=$lib"
            sensors
        else
            note nvml_lookup "no NVML channel and no libnvidia-ml.so.1 found"
        fi
    fi
    nvml_seen || note nvml "carma sensors lists no NVML channel"
    cp "$work/sensors.txt" "$work/sensors.json" "$out/" 2>/dev/null
    cat "$work/sensors.txt" 2>/dev/null
fi

# ------------------------------------------------------------------ 2b. DCGM
# `carma sensors --sources dcgm` (and --json; through a running nv-hostengine with
# --dcgm-host 127.0.0.1 when nv-hostengine is there), then the GPU energy of one load measured
# by DCGM and by NVML at once: `carma stat --sources dcgm -- carma stat --sources nvml -- LOAD`
# (separately: with both sources in one carma, DCGM leaves out every GPU NVML reads)
dcgm_lib=""
find_dcgm() {
    local c
    for c in $(ldconfig -p 2>/dev/null | awk '/libdcgm\.so\.[43] /{ print $NF }') \
        /usr/lib/x86_64-linux-gnu/libdcgm.so.4 /usr/lib/aarch64-linux-gnu/libdcgm.so.4 \
        /usr/lib64/libdcgm.so.4 /usr/local/dcgm/lib64/libdcgm.so.4 \
        /usr/lib/x86_64-linux-gnu/libdcgm.so.3 /usr/lib/aarch64-linux-gnu/libdcgm.so.3 \
        /usr/lib64/libdcgm.so.3 /usr/local/dcgm/lib64/libdcgm.so.3; do
        [[ -e $c ]] && { echo "$c"; return 0; }
    done
    return 1
}
# the library is named to this step's commands only (dcgm_env): the runs of step 3 stay as
# they were
dcgm_env=(env)
if [[ $mode == dry ]]; then
    # the fake libdcgm of a build directory, as for the fake NVML
    dcgm_lib=${CARMA_DCGM_LIBRARY:-}
    if [[ -z $dcgm_lib ]]; then
        for f in "$repo"/build-gpu/tests/fakes/libdcgm.so.4 "$repo"/build/tests/fakes/libdcgm.so.4 \
            "$repo"/build*/tests/fakes/libdcgm.so.4; do
            if [[ -f $f && $f != *asan* && $f != *san/* ]] &&
                "$py" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$f" 2>/dev/null; then
                dcgm_lib=$f
                break
            fi
        done
    fi
    scen=${CARMA_FAKE_DCGM_SCENARIO:-$repo/tests/fakes/dcgm/grace.scenario}
    dcgm_env+=("CARMA_DCGM_LIBRARY=$dcgm_lib" "CARMA_FAKE_DCGM_SCENARIO=$scen")
    [[ -n $dcgm_lib ]] || info dcgm "no build*/tests/fakes/libdcgm.so.4: the DCGM step is skipped"
elif [[ -n ${CARMA_DCGM_LIBRARY:-} ]]; then
    dcgm_lib=$CARMA_DCGM_LIBRARY
elif dcgm_lib=$(find_dcgm); then
    # carma's own search (libdcgm.so.4, .so.3, .so) goes by the loader's paths only
    ldconfig -p 2>/dev/null | grep -qF " $dcgm_lib" ||
        dcgm_env+=("CARMA_DCGM_LIBRARY=$dcgm_lib")
else
    dcgm_lib=""
    info dcgm "DCGM: not installed on this machine (libdcgm.so.4 not found)"
fi
dcgm_seen() { # FILE: does this `carma sensors --json` list a dcgm channel?
    "$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if any(c.get("source") == "dcgm" for c in d.get("channels", [])) else 1)' \
        "$1" 2>/dev/null
}
if [[ -n $carma && -n $dcgm_lib ]]; then
    mkdir -p "$work/dcgm"
    echo "$dcgm_lib" >"$work/dcgm/library.txt"
    : >"$work/dcgm/sensors.txt"
    : >"$work/dcgm/sensors.json"
    step dcgm_sensors 60 "$work/dcgm/sensors.txt" "${dcgm_env[@]}" "$carma" sensors \
        --sources dcgm
    step dcgm_sensors_json 60 "$work/dcgm/sensors.json" "${dcgm_env[@]}" "$carma" sensors \
        --sources dcgm --json
    if command -v nv-hostengine >/dev/null; then
        he_pid=""
        timeout 30 "${dcgm_env[@]}" "$carma" sensors --sources dcgm --dcgm-host 127.0.0.1 --json \
            >"$work/dcgm/hostengine-probe.json" 2>>"$log"
        if ! dcgm_seen "$work/dcgm/hostengine-probe.json"; then
            # none running (or not on 127.0.0.1): one of our own, in the foreground, ended by
            # its id afterwards
            nv-hostengine --no-daemon --port 5555 --bind-interface 127.0.0.1 \
                --pid "$work/dcgm/nv-hostengine.pid" \
                --log-filename "$work/dcgm/nv-hostengine.log" >>"$log" 2>&1 &
            he_pid=$!
            sleep 3
            info dcgm_hostengine "started nv-hostengine (pid $he_pid) on 127.0.0.1:5555"
        fi
        : >"$work/dcgm/sensors-hostengine.json"
        step dcgm_sensors_hostengine 60 "$work/dcgm/sensors-hostengine.json" \
            "${dcgm_env[@]}" "$carma" sensors --sources dcgm --dcgm-host 127.0.0.1 --json
        if [[ -n $he_pid ]]; then
            kill "$he_pid" 2>/dev/null
            wait "$he_pid" 2>/dev/null
        fi
    else
        info dcgm_hostengine "nv-hostengine not found: --dcgm-host not tried"
    fi
    # one load (the heavy one alone), measured by DCGM (outside) and NVML (inside) at once
    dsecs=${H200_DCGM_SECONDS:-$([[ $mode == dry ]] && echo 3 || echo 15)}
    STEP_MIN=$((dsecs + 30)) step dcgm_vs_nvml $((dsecs + 120)) "$work/dcgm/stat.out" \
        "${dcgm_env[@]}" "$carma" stat --sources dcgm --json-out "$work/dcgm/stat-dcgm.json" -- \
        "$carma" stat --sources nvml --json-out "$work/dcgm/stat-nvml.json" -- \
        env CUDA_VISIBLE_DEVICES=0 "$py" "$load" --seconds "$dsecs" --duty 0.75 \
        --size "$size" --mode "$load_mode" --name dcgm_vs_nvml
    if [[ ! -s $work/dcgm/stat-nvml.json ]]; then
        # the outer (DCGM) carma did not run the inner one: NVML alone, the same load after
        STEP_MIN=$((dsecs + 30)) step dcgm_vs_nvml_nvml $((dsecs + 120)) "$work/dcgm/stat.out" \
            "$carma" stat --sources nvml --json-out "$work/dcgm/stat-nvml.json" -- \
            env CUDA_VISIBLE_DEVICES=0 "$py" "$load" --seconds "$dsecs" --duty 0.75 \
            --size "$size" --mode "$load_mode" --name dcgm_vs_nvml
    fi
    cp "$work/dcgm/sensors.txt" "$out/dcgm-sensors.txt" 2>/dev/null
    cp "$work/dcgm/sensors.json" "$out/dcgm-sensors.json" 2>/dev/null
    [[ -s $work/dcgm/sensors-hostengine.json ]] &&
        cp "$work/dcgm/sensors-hostengine.json" "$out/dcgm-sensors-hostengine.json"
    cat "$work/dcgm/sensors.txt" 2>/dev/null
fi

# ------------------------------------------------------------------ 3. the runs
conds=()
nvml_ref() { # COND_DIR WHEN
    step "nvml_$2_$(basename "$1")" 30 "$1/nvml_$2.json" "$py" "$tool" nvml-energy
}
bare() { # NAME
    local c=$work/$1
    mkdir -p "$c"
    conds+=("$1:bare:")
    nvml_ref "$c" before
    if command -v nvidia-smi >/dev/null; then
        # what NVML says of the processes on the GPU, halfway through
        (sleep "$(((${load_secs%.*} + 20) / 2))"
            timeout 15 nvidia-smi --query-compute-apps=pid,process_name,used_memory \
                --format=csv >"$c/nvidia-smi-apps.txt" 2>&1
            timeout 15 nvidia-smi pmon -c 1 -s um >"$c/nvidia-smi-pmon.txt" 2>&1) &
    fi
    STEP_MIN=$run_min step "$1" "$run_timeout" - bash "${BASH_SOURCE[0]}" __bare "$c" "$py" \
        "$load_secs" "$size" "$load_mode" "${loads[@]}"
    wait 2>/dev/null
    nvml_ref "$c" after
    local ln
    for ln in "${loads[@]}"; do
        ln=${ln%%:*}
        say "   $1 $ln: $(tail -1 "$c/$ln.out" 2>/dev/null | cut -c1-300)"
    done
}
carma_run() { # NAME INTERVAL INTERVAL_S
    local c=$work/$1 args=()
    mkdir -p "$c"
    conds+=("$1:carma:$2:$3")
    [[ -n $carma ]] || { note "$1" "no carma binary"; return; }
    for ln in "${loads[@]}"; do args+=(--load "$ln"); done
    "$py" "$tool" experiment --out "$c/experiment.json" --name "h200-$1" --interval "$2" \
        --python "$py" --script "$load" --seconds "$load_secs" --size "$size" \
        --mode "$load_mode" --barrier "$c/barrier" --baseline "$baseline" --slack 100 "${args[@]}" \
        2>>"$log" || { note "$1" "could not write the experiment file"; return; }
    nvml_ref "$c" before
    STEP_MIN=$run_min step "$1" "$run_timeout" "$c/carma.stdout" "$py" "$tool" selfcpu \
        --json "$c/selfcpu.json" -- "$carma" run --interval "$2" -o "$work/runs" \
        "$c/experiment.json"
    nvml_ref "$c" after
    head -1 "$c/carma.stdout" >"$c/run_dir.txt" 2>/dev/null
    cat "$c/carma.stdout" >>"$log" 2>/dev/null
    say "   $1: run dir $(cat "$c/run_dir.txt" 2>/dev/null)"
    local ln rd
    rd=$(cat "$c/run_dir.txt" 2>/dev/null)
    for ln in "${loads[@]}"; do
        ln=${ln%%:*}
        say "   $1 $ln: $(tail -1 "$rd/logs/$ln.out" 2>/dev/null | cut -c1-300)"
    done
}

bare bare
carma_run carma_100ms 100ms 0.1
carma_run carma_10ms 10ms 0.01
if [[ $bare_after == 1 ]]; then
    bare bare_after
fi

# ------------------------------------------------------------------ 4. summary, tarball
"$py" - "$work/meta.json" "$mode" "$carma" "$carma_source" "$load_secs" "$size" "$py" \
    "$baseline" "${CARMA_NVML_LIBRARY:-}" "$SECONDS" "$deadline" "${#loads[@]}" "${loads[@]}" \
    "${conds[@]}" <<'EOF' 2>>"$log" || note meta "could not write meta.json"
import json, os, platform, sys, time
a = sys.argv[1:]
path, mode, carma, src, secs, size, py, base, lib, el, dl, nl = a[:12]
nl = int(nl)
loads = [{"name": s.split(":")[0], "duty": float(s.split(":")[1])} for s in a[12:12 + nl]]
conds = []
for s in a[12 + nl:]:
    name, kind, iv, ivs = (s.split(":") + ["", ""])[:4]
    conds.append({"name": name, "kind": kind, "interval": iv or None,
                  "interval_s": float(ivs) if ivs else None})
cpu = None
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
except OSError:
    pass
json.dump({"mode": mode, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": {"node": platform.node(), "kernel": platform.release(),
                    "nproc": os.cpu_count(), "cpu_model": cpu},
           "carma_bin": carma or None, "carma_source": src, "seconds": float(secs),
           "size": int(size), "python": py, "baseline_s": float(base),
           "carma_nvml_library": lib or None, "elapsed_s_before_summary": int(el),
           "deadline_s": int(dl), "loads": loads, "conditions": conds},
          open(path, "w"), indent=1)
EOF

# the tarball: everything under $work (run directories, load outputs, NVML readings); over
# 15 MiB, the CSV files of the 10 ms run are left out first, then every samples/attribution CSV
tarball=$out/h200-runs.tar.gz
tar_note=""
make_tar() {
    tar -czf "$tarball" -C "$(dirname "$work")" "$@" "$(basename "$work")" 2>>"$log"
}
STEP_FORCE=1 step tarball 30 - tar -czf "$tarball" -C "$(dirname "$work")" "$(basename "$work")"
limit=$((15 * 1024 * 1024))
if [[ -f $tarball ]] && (($(stat -c %s "$tarball") > limit)); then
    make_tar --exclude='h200-carma_10ms_*/samples.csv' --exclude='h200-carma_10ms_*/attribution.csv'
    tar_note="the 10 ms run's samples.csv and attribution.csv left out (size)"
    if (($(stat -c %s "$tarball") > limit)); then
        make_tar --exclude='*/samples.csv' --exclude='*/attribution.csv'
        tar_note="every samples.csv and attribution.csv left out (size)"
    fi
    note tarball "$tar_note"
fi

STEP_FORCE=1 step summary 30 - "$py" "$tool" summary --work "$work" \
    --json "$out/h200-summary.json" --txt "$out/h200-summary.txt"
if [[ ! -s $out/h200-summary.json || ! -s $out/h200-summary.txt ]]; then
    # the summary must exist whatever failed: the steps alone
    printf '{"what":"bench/gpu/h200-check.sh","summary_failed":true,"steps":[%s]}\n' \
        "$(paste -sd, "$steps")" >"$out/h200-summary.json"
    cp "$steps" "$out/h200-summary.txt"
fi
echo
echo "================ summary ($out/h200-summary.txt) ================"
cat "$out/h200-summary.txt"
[[ -n $tar_note ]] && echo "tarball: $tar_note"
for f in "$out"/*; do
    printf '  %10s  %s\n' "$(stat -c %s "$f")" "$f"
done
say "done in $SECONDS s"
exit 0
