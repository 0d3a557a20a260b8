#!/usr/bin/env bash
# Inputs that are not regular files, and a run whose carma was killed:
#   1. a FIFO (no writer: an open of it blocks) or a symlink to /dev/zero (a read of it never
#      ends) in place of each file carma reads: a sysfs/procfs file of a --root tree (sensors),
#      a run directory's samples.csv, workloads.json, attribution.csv (report, top, model fit),
#      an srt-slurm log's benchmark.out and results_concurrency_*.json (report), a model file
#      (model predict), an experiment file and its intensity file (validate), an nsys export
#      (import-nsys). Each command ends at once (timeout 10 s: 124 is a hang) and names the
#      file: "PATH is not a regular file (a FIFO)".
#   2. carma top on the directory of a run whose carma was SIGKILLed (manifest.json still says
#      "running"): top says the run's carma is gone and exits 1, instead of showing "running"
#      forever.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

# odd KIND PATH: replaces PATH with a FIFO (KIND fifo), a symlink to /dev/zero (KIND zero) or
# /dev/zero's own device node (KIND dev: below --root, an absolute link resolves inside the root,
# so a device there is a node of the tree's own).
odd() {
    rm -rf "$2"
    case $1 in
    fifo) mkfifo "$2" || fail "mkfifo $2" ;;
    zero) ln -s /dev/zero "$2" || fail "ln -s /dev/zero $2" ;;
    dev) mknod "$2" c 1 5 || fail "mknod $2" ;;
    esac
}

# kind_words KIND: the words carma uses for it.
kind_words() {
    case $1 in
    fifo) echo "a FIFO" ;;
    zero | dev) echo "a character device" ;;
    esac
}

# expect_refused NAME FILE KIND CMD...: CMD ends within 10 s with a non-zero status (not 124),
# and its stdout or stderr says FILE is not a regular file (KIND's words).
expect_refused() {
    local name=$1 file=$2 kind=$3 rc
    shift 3
    rc=$(run_logged "$name" timeout 10 "$@" </dev/null)
    if [ "$rc" = 124 ]; then
        check_fail "$name: still running after 10 s (hangs on $file, $(kind_words "$kind"))"
        return
    fi
    [ "$rc" != 0 ] || check_fail "$name: exit status 0 with $file $(kind_words "$kind")"
    check_clean_stderr "$name"
    cat "$name.out" "$name.err" >"$name.all"
    check_grep "$name.all" "$file is not a regular file ($(kind_words "$kind"))" "$name"
}

# --- 1a. sensors on a --root tree: a FIFO or a character device in place of energy_uj and
# proc/stat (a device node where mknod is allowed, as root)
PKG0=sys/class/powercap/intel-rapl:0/energy_uj
kinds=fifo
mknod probe.dev c 1 5 2>/dev/null && kinds="fifo dev"
rm -f probe.dev
for k in $kinds; do
    copy_tree intel-2s "root_$k"
    odd $k "root_$k/$PKG0"
    rc=$(run_logged "sens_$k" timeout 10 "$CARMA" sensors --root "root_$k" --sample 20ms)
    [ "$rc" != 124 ] || check_fail "sensors: hangs on a $k energy_uj"
    check_rc "sens_$k" 0 "$rc"
    cat "sens_$k.out" "sens_$k.err" >"sens_$k.all"
    check_grep "sens_$k.all" "$PKG0 is not a regular file ($(kind_words $k))" "sensors, $k energy_uj"
    check_no_grep "sens_$k.out" "rapl/package-0 " "sensors, $k energy_uj: the zone is left out"

    # proc/stat: the node's utilization is unavailable, with the reason
    copy_tree intel-2s "proot_$k"
    odd $k "proot_$k/proc/stat"
    rc=$(run_logged "pstat_$k" timeout 10 "$CARMA" sensors --root "proot_$k" --sample 20ms)
    [ "$rc" != 124 ] || check_fail "sensors: hangs on a $k proc/stat"
    check_clean_stderr "pstat_$k"
    cat "pstat_$k.out" "pstat_$k.err" >"pstat_$k.all"
    check_grep "pstat_$k.all" "proot_$k/proc/stat is not a regular file ($(kind_words $k))" \
        "sensors, $k proc/stat"
done

# --- 1b. a carma run directory: report and top
for k in fifo zero; do
    for f in samples.csv workloads.json attribution.csv; do
        d="run_${k}_${f%.*}"
        copy_tree rundir/run-cpu "$d"
        odd $k "$d/$f"
        expect_refused "rep_${k}_${f%.*}" "$d/$f" $k "$CARMA" report "$d"
    done
    d="run_${k}_samples"
    expect_refused "top_$k" "$d/samples.csv" $k "$CARMA" top "$d" --once
    d="run_${k}_events"
    copy_tree rundir/run-cpu "$d"
    odd $k "$d/event_summaries.jsonl"
    expect_refused "topev_$k" "$d/event_summaries.jsonl" $k "$CARMA" top "$d" --once
done

# --- 1c. an srt-slurm log directory (one window, a GPU leg): benchmark.out, a
# results_concurrency_*.json, the power samples.csv
srt_dir() {
    mkdir -p "$1/sa-bench_x" "$1/power"
    printf 'Serving Benchmark Result\n' >"$1/benchmark.out"
    printf '{"benchmark_start_time_unix": 100.5, "benchmark_end_time_unix": 110.5, "total_input_tokens": 1500, "total_output_tokens": 500}\n' \
        >"$1/sa-bench_x/results_concurrency_4_a.json"
    {
        printf 'schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,sm_active\r\n'
        for t in $(seq 95 115); do printf '2,%d.0,%d,node-a,0,G0,%d.0,,\r\n' "$t" "$t" $((t * 2)); done
    } >"$1/power/samples.csv"
}
srt_dir srt_ok
rc=$(run_logged srt_ok "$CARMA" report srt_ok)
check_rc srt_ok 0 "$rc"
for k in fifo zero; do
    for f in benchmark.out sa-bench_x/results_concurrency_4_a.json power/samples.csv; do
        n="srt_${k}_$(basename "${f%.*}")"
        srt_dir "$n"
        odd $k "$n/$f"
        expect_refused "$n" "$n/$f" $k "$CARMA" report "$n"
    done
done

# --- 1d. model fit / predict on a real run directory (it has node_util.csv)
cat >quick.json <<JSON
{"experiment_name": "quick", "workloads": [{"name": "w", "script": "sleep", "args": ["0.3"]}],
 "monitoring": {"baseline_s": 0, "interval": "50ms"}}
JSON
rc=$(run_logged quick timeout 60 "$CARMA" run -q -o runs quick.json)
check_rc quick 0 "$rc"
qd=$(ls -d "$PWD"/runs/quick_* 2>/dev/null | head -n 1)
[ -n "$qd" ] && [ -f "$qd/node_util.csv" ] || fail "carma run made no run directory with node_util.csv"
for k in fifo zero; do
    for f in samples.csv node_util.csv; do
        d="fit_${k}_${f%.*}"
        cp -a "$qd" "$d"
        odd $k "$d/$f"
        expect_refused "fit_${k}_${f%.*}" "$d/$f" $k "$CARMA" model fit "$d" -o "m_$k.json"
    done
    odd $k "model_$k.json"
    expect_refused "predict_$k" "model_$k.json" $k "$CARMA" model predict "$qd" --model "model_$k.json"
done

# --- 1e. an experiment file and its intensity file; an nsys export
for k in fifo zero; do
    odd $k "exp_$k.json"
    expect_refused "val_$k" "exp_$k.json" $k "$CARMA" validate "exp_$k.json"
    expect_refused "run_$k" "exp_$k.json" $k "$CARMA" run -o "runs_$k" "exp_$k.json"
    odd $k "$PWD/ci_$k.csv"
    cat >"expci_$k.json" <<JSON
{"experiment_name": "ci", "workloads": [{"name": "w", "script": "sleep", "args": ["0.1"]}],
 "carbon": {"intensity_file": "$PWD/ci_$k.csv"}}
JSON
    expect_refused "valci_$k" "$PWD/ci_$k.csv" $k "$CARMA" validate "expci_$k.json"
    odd $k "prof_$k.sqlite"
    expect_refused "nsys_$k" "prof_$k.sqlite" $k "$CARMA" import-nsys -o "nsys_$k.csv" "prof_$k.sqlite"
done

# --- 2. carma top on a run whose carma was killed
cat >long.json <<JSON
{"experiment_name": "long", "workloads": [{"name": "sleeper", "script": "sleep", "args": ["600"]}],
 "monitoring": {"baseline_s": 0, "interval": "100ms"}}
JSON
"$CARMA" run -q -o "$PWD/lruns" long.json >long.out 2>long.err &
carma_pid=$!
_cleanup_pids+=("$carma_pid")
ld=
for ((i = 0; i < 100; i++)); do
    ld=$(ls -d "$PWD"/lruns/long_* 2>/dev/null | head -n 1)
    [ -n "$ld" ] && [ -s "$ld/samples.csv" ] && [ "$(wc -l <"$ld/samples.csv")" -ge 3 ] && break
    sleep 0.1
done
[ -n "$ld" ] && [ -s "$ld/samples.csv" ] || fail "the long run made no samples: $(cat long.err)"
# the workload's processes (carma's descendants), to kill by pid after carma is gone
descendants() {
    "$PY" - "$1" <<'PYEOF'
import os, sys
kids = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            s = open("/proc/%s/stat" % p).read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(p))
todo, out = [int(sys.argv[1])], []
while todo:
    for c in kids.get(todo.pop(), []):
        out.append(c)
        todo.append(c)
print(" ".join(map(str, out)))
PYEOF
}
orphans=$(descendants "$carma_pid")
[ -n "$orphans" ] || check_fail "the long run has no workload process"
# while carma lives, top sees it running
rc=$(run_logged top_alive timeout 10 "$CARMA" top "$ld" --once)
check_rc top_alive 0 "$rc"
check_grep top_alive.out "running" "top on a live run"
check_no_grep top_alive.err "is gone" "top on a live run"
check_py "manifest.json names its carma" '
m = load(sys.argv[1])
assert m["status"] == "running", m["status"]
assert m["pid"] == int(sys.argv[2]), (m.get("pid"), sys.argv[2])
assert m["pid_start_ticks"] > 0 and len(m["host"]["boot_id"]) == 36, m
' "$ld/manifest.json" "$carma_pid"
kill -KILL "$carma_pid"
wait "$carma_pid" 2>/dev/null
rc=$(run_logged top_gone timeout 10 "$CARMA" top "$ld" --interval 100ms)
[ "$rc" != 124 ] || check_fail "top on a killed run: still running after 10 s"
check_rc top_gone 1 "$rc"
check_grep top_gone.err "error: $ld: the run's carma (pid $carma_pid) is gone: the run ended without finishing (killed?)" \
    "top on a killed run"
check_grep top_gone.out "ended without finishing" "top's last frame on a killed run"
rc=$(run_logged top_gone_json timeout 10 "$CARMA" top "$ld" --json)
check_rc top_gone_json 1 "$rc"
check_py "top --json on a killed run" '
f = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert f and f[-1]["carma_gone"] is True and f[-1]["finished"] is True, f[-1:]
' top_gone_json.out
for p in $orphans; do
    kill -KILL "$p" 2>/dev/null
done

cli_done
