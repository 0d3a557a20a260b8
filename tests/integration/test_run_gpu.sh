#!/usr/bin/env bash
# GPU energy attribution of carma run, against the exact ground truth of the fake NVML
# (tests/fakes/fake_nvml.c) driven by fake GPU jobs (carma-gpujob): one GPU of 100 W idle and
# 500 W at 100% SM, shared by two workloads for 3 s ("small" at 20% SM, "big" at 60% SM from a
# grandchild of the workload: 3:1), with carma --root on the vm-empty fixture and
# --sources nvml, so that the GPU is the only channel, and --interval 20ms.
#
# The truth is exact. carma reads the process lists every 20 ms and splits the energy of
# each period by the shares read at its two ends, cut where a workload started or ended (the
# time carma reaped it): what is left is the lag between a process's end and carma's reaping
# and ticking, a few ms when the machine is quiet (errors within 0.3 %), tens of ms when other
# work competes for the CPUs. A case whose attribution check fails is therefore run again, up
# to three times in all, each failure printed; the test fails when all three do.
# "small" is launched first (and "big" forks) so that it also ends first.
#
#   self   the fake and carma-gpujob on their own (check_gpu.py fake)
#   a      + an external GPU process started by this script after carma's baseline (10% SM
#          for 2 s):
#          each workload's gpu_j within 1% of its truth, other_j within 2% of the external's,
#          the sum rules of report.json and attribution.csv, utilization.csv names both
#          workloads and "other", power/samples.csv is srt-slurm v2
#   b      per-process utilization unsupported (proc_util no): the dynamic power split
#          equally (basis_s.context > 0), each workload within 1% of its equal share, their
#          energies while both ran equal within 2% (1% each, in opposite directions)
#   c      the GPU lost 2 s after nvmlInit, while the workloads run: carma run still exits 0,
#          invalid samples counted, the GPU's energy no more than the truth until the loss
#   d      libfake-nvml-v2.so (nvmlDeviceGetComputeRunningProcesses_v2 only): a's checks
#
# Every figure compared is printed (see check_gpu.py); about 20 s in all.
# shellcheck source=tests/integration/lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

CHECK_GPU="$CARMA_SRC/tests/integration/check_gpu.py"
FAKES="$CARMA_BUILD/tests/fakes"
GPUJOB="$FAKES/carma-gpujob"
LIB="$FAKES/libfake-nvml.so"
LIB_V2="$FAKES/libfake-nvml-v2.so"
SCENARIOS="$CARMA_SRC/tests/fakes/nvml"
need_file "$GPUJOB" "$LIB" "$LIB_V2" "$CHECK_GPU" "$CARMA_FIXTURES/vm-empty"
"$CARMA" run --help >/dev/null 2>&1 || fail "carma run --help fails: is 'carma run' built?"

IDLE_W=100 # as in tests/fakes/nvml/shared*.scenario
MAX_W=500
BASELINE=0.5
top=$PWD

note "the fake NVML and carma-gpujob on their own"
rc=0
# python loads the fake with ctypes: in a sanitized build the ASan runtime then comes after
# python's libraries, which ASan refuses unless told not to check (python itself leaks)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0" \
    "$PY" "$CHECK_GPU" fake --lib "$LIB" --lib-v2 "$LIB_V2" --gpujob "$GPUJOB" "$top/self" \
    >self.log 2>&1 || rc=$?
if [ "$rc" != 0 ]; then
    grep -v '^ok ' self.log
    fail "the fake NVML or carma-gpujob does not behave as tests/fakes/README.md says"
fi

# gpu_case NAME LIB SCENARIO SECONDS EXTERNAL: runs carma on the two workloads of SECONDS
# each, with LIB as NVML and tests/fakes/nvml/SCENARIO.scenario; EXTERNAL is DELAY:SECONDS for
# an external client started just before carma, or "" for none. Leaves the run directory in
# $RD and the clients' folder in $CLIENTS; fails unless carma run exits 0 with a run directory.
gpu_case() {
    local name=$1 lib=$2 scenario="$SCENARIOS/$3.scenario" secs=$4 ext=$5 dir ext_pid="" rc
    dir="$top/$name"
    CLIENTS="$dir/clients"
    need_file "$scenario"
    mkdir -p "$CLIENTS" || fail "mkdir $CLIENTS"
    cat >"$dir/exp.json" <<EOF
{
  "experiment_name": "gpu-$name",
  "workloads": [
    {"name": "small", "script": "$GPUJOB", "gpu": 0,
     "args": ["--dir", "$CLIENTS", "--device", "0", "--sm", "20", "--tag", "small", "$secs"]},
    {"name": "big", "script": "$GPUJOB", "gpu": 0,
     "args": ["--dir", "$CLIENTS", "--device", "0", "--sm", "60", "--child", "--tag", "big",
              "$secs"]}
  ],
  "attribution": {"idle_policy": "idle"}
}
EOF
    if [ -n "$ext" ]; then
        "$GPUJOB" --dir "$CLIENTS" --device 0 --sm 10 --delay "${ext%%:*}" --tag external \
            "${ext#*:}" >"$dir/external.log" 2>&1 &
        ext_pid=$!
        _cleanup_pids+=("$ext_pid")
    fi
    cd "$dir" || fail "cd $dir"
    note "case $name: carma run (workloads of $secs s, $(basename "$lib")," \
        "$(basename "$scenario")${ext:+, external client $ext})"
    rc=$(run_logged run env CARMA_NVML_LIBRARY="$lib" CARMA_FAKE_NVML_SCENARIO="$scenario" \
        CARMA_FAKE_NVML_CLIENTS="$CLIENTS" "$CARMA" run --root "$CARMA_FIXTURES/vm-empty" \
        --sources nvml --interval 20ms --baseline "${BASELINE}s" -o "$dir/runs" "$dir/exp.json")
    if [ -n "$ext_pid" ]; then
        wait "$ext_pid" ||
            fail "case $name: the external client exited with $?: $(cat "$dir/external.log")"
    fi
    RD=$(head -n 1 run.out)
    if [ "$rc" != 0 ] || [ -z "$RD" ] || [ ! -d "$RD" ]; then
        show run.out run.err
        fail "case $name: carma run exited with $rc, run directory '$RD'"
    fi
    cd "$top" || fail "cd $top"
}

# gpu_check NAME ARGS...: check_gpu.py run on the last case, its output kept in
# NAME/check.log and shown; returns 1 when a check failed.
gpu_check() {
    local name=$1 rc=0
    shift
    "$PY" "$CHECK_GPU" run "$RD" --clients "$CLIENTS" --idle-w "$IDLE_W" --max-w "$MAX_W" \
        --job big --job small --baseline "$BASELINE" "$@" >"$top/$name/check.log" 2>&1 || rc=$?
    sed 's/^/    /' "$top/$name/check.log"
    if [ "$rc" != 0 ]; then
        show "$top/$name/run.err"
        return 1
    fi
}

# gpu_try NAME LIB SCENARIO SECONDS EXTERNAL -- CHECK_ARGS...: gpu_case then gpu_check, up to
# three attempts (see above); fails the test when every attempt's check failed.
gpu_try() {
    local name=$1 lib=$2 scenario=$3 secs=$4 ext=$5 attempt
    shift 6
    for attempt in 1 2 3; do
        rm -rf "${top:?}/$name"
        mkdir -p "$top/$name" || fail "mkdir $top/$name"
        gpu_case "$name" "$lib" "$scenario" "$secs" "$ext"
        if gpu_check "$name" "$@"; then
            [ "$attempt" -gt 1 ] && note "case $name: passed at attempt $attempt"
            return 0
        fi
        note "case $name: attempt $attempt failed"
    done
    fail "case $name: carma's GPU attribution disagrees with the fake NVML's truth (3 attempts)"
}

# a) shared GPU at 3:1, an external process after the baseline
gpu_try a "$LIB" shared 3 1.0:2.0 -- --split sm --other

# b) no per-process utilization: equal split among the workloads with a context
gpu_try b "$LIB" shared-noprocutil 3 "" -- --split equal

# c) the GPU falls off the bus while the workloads run
gpu_try c "$LIB" shared-lost 3 "" -- --lost-after 2.0

# d) a driver with only the _v2 running-processes call
gpu_try d "$LIB_V2" shared 3 1.0:2.0 -- --split sm --other

exit 0
