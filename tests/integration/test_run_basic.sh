#!/usr/bin/env bash
# carma run, end to end on a live 2-socket Intel tree (the simulated power plant): the run
# directory's path on stdout's first line, every file of it present and well formed, the
# report's energies adding up, logs, env and cwd of the workloads; exit status 1 and the
# workload's status recorded when one fails; a grandchild that outlives its parent still
# counted and then gone; timeout_s (SIGTERM, then SIGKILL after --grace); SIGTERM to carma
# forwarded to every workload and the outputs still written; bad -o and bad experiments.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

CHECK_RUN="$CARMA_SRC/tests/integration/check_run.py"
need_file "$BUSY" "$PLANT"

"$CARMA" run --help >/dev/null 2>&1 || fail "carma run --help fails: is 'carma run' built?"

live_tree intel-2s live
start_plant live "$PLANT_CONFIGS/intel-2s.conf" truth.csv
here=$PWD

# pids this test must find gone at the end (killed then, and reported)
watch_pids=()

# run_dir NAME: the run directory printed on the first line of NAME.out ("" if none).
run_dir() {
    head -n 1 "$1.out" 2>/dev/null
}

# pids_of RUNDIR: every pid and -pgid of workloads.json, one per line.
pids_of() {
    "$PY" -c '
import json, sys
for w in json.load(open(sys.argv[1]))["workloads"]:
    for p in w.get("pids") or []:
        print(p)
    if w.get("pgid"):
        print(-w["pgid"])
' "$1/workloads.json" 2>/dev/null
}

# check_gone MSG PID...: no process (a negative PID: no process of that group) is alive.
check_gone() {
    local msg=$1 p left=""
    shift
    for p in "$@"; do
        if [ "${p#-}" != "$p" ]; then
            pgrep -g "${p#-}" >/dev/null 2>&1 && left="$left group ${p#-}: $(pgrep -a -g "${p#-}" | tr '\n' ';')"
        elif [ -n "$p" ] && ps -o stat= -p "$p" 2>/dev/null | grep -qv Z; then
            left="$left $p ($(ps -o args= -p "$p"))"
        fi
    done
    [ -z "$left" ] || check_fail "$msg: processes left behind:$left"
}

# wait_gone PID SECONDS: wait until PID (not a child) is gone; 1 if it still runs.
wait_gone() {
    local i
    for ((i = 0; i < $2 * 20; i++)); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.05
    done
    return 1
}

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_left() {
    local p
    for p in "${watch_pids[@]}"; do
        kill -KILL -- "$p" 2>/dev/null
    done
}
trap 'cleanup_left; _lib_cleanup' EXIT

# ---------------------------------------------------------------- the quickstart-like run
mkdir exp1 || fail mkdir
cat >exp1/talk.sh <<'EOF'
echo "out: FOO=$FOO"
echo "cwd: $(pwd)"
echo "err: to stderr" >&2
EOF
cat >exp1/exp.json <<EOF
{
  "experiment_name": "basic",
  "description": "two CPU loads and a talker",
  "workloads": [
    {"name": "spin", "script": "$BUSY", "args": ["1.5"],
     "env": {"CARMA_BUSY_REPORT": "spin.txt"}},
    {"name": "half", "script": "$BUSY", "args": ["--duty", "0.5", "1.5"],
     "env": {"CARMA_BUSY_REPORT": "half.txt"}},
    {"name": "talk", "type": "shell", "script": "talk.sh", "cwd": "$here",
     "env": {"FOO": "bar baz"}}
  ],
  "monitoring": {"interval": "100ms", "baseline_s": 0.5}
}
EOF
"$CARMA" validate exp1/exp.json >/dev/null 2>validate1.err ||
    fail "the test's experiment does not validate: $(cat validate1.err)"

rc=$(run_logged basic "$CARMA" run exp1/exp.json -o runs --root live)
check_rc basic 0 "$rc"
check_clean_stderr basic
rd=$(run_dir basic)
if [ -z "$rd" ] || [ ! -d "$rd" ]; then
    check_fail "carma run: first line of stdout '$rd' is not the run directory"
    show basic.out basic.err >&2
    cli_done
fi
note "run directory: $rd"
case $(basename "$rd") in
basic_[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]-[0-9][0-9][0-9][0-9][0-9][0-9]) ;;
*) check_fail "run directory name '$(basename "$rd")' is not basic_YYYYmmdd-HHMMSS" ;;
esac
[ "$(cd "$(dirname "$rd")" && pwd)" = "$here/runs" ] ||
    check_fail "run directory '$rd' is not below -o runs"

out=$("$PY" "$CHECK_RUN" format "$rd" --names spin,half,talk --rel 1e-6 2>&1) ||
    check_fail "run directory format: $(printf '%s\n' "$out" | grep -E '^FAIL|check_run' | tr '\n' ' ')"
printf '%s\n' "$out"

check_py "experiment.json is the resolved experiment (carma validate --json)" '
a = load(sys.argv[1])
b = json.loads(sys.argv[2])
assert a == b, "differs: %r vs %r" % (a, b)
' "$rd/experiment.json" "$("$CARMA" validate --json exp1/exp.json)"

check_py "report.json and workloads.json of a successful run" '
r = load(sys.argv[1] + "/report.json")
wl = {w["name"]: w for w in load(sys.argv[1] + "/workloads.json")["workloads"]}
rw = {w["name"]: w for w in r["workloads"]}
assert r["experiment"] == "basic", r["experiment"]
assert r["attribution"]["idle_policy"] == "idle", r["attribution"]
for n in ("spin", "half", "talk"):
    assert rw[n]["exit_status"] == 0, (n, rw[n]["exit_status"])
    assert wl[n]["exit_status"] == 0 and wl[n]["signal"] is None and wl[n]["timed_out"] is False, wl[n]
for n, f in (("spin", "spin.txt"), ("half", "half.txt")):
    rep = dict(l.split() for l in open(sys.argv[2] + "/exp1/" + f))
    cpu = float(rep["cpu_s"])
    got = rw[n]["cpu_time_s"]
    # the cgroup also counts what the process spends after its report: its exit, and under
    # the sanitizers the leak scan at exit (tens of ms, more on a loaded machine)
    slack = 0.2 if os.environ.get("CARMA_TEST_SANITIZED") else 0.05
    assert abs(got - cpu) <= 0.05 * cpu + slack, "%s: cpu_time_s %r, carma-busy says %.3f" % (n, got, cpu)
    assert rw[n]["energy_j"] > 0, (n, rw[n]["energy_j"])
    assert abs(rw[n]["duration_s"] - (wl[n]["end_unix"] - wl[n]["start_unix"])) <= 0.2, (n, rw[n]["duration_s"], wl[n])
assert rw["spin"]["energy_j"] > rw["half"]["energy_j"] > rw["talk"]["energy_j"], [(n, rw[n]["energy_j"]) for n in rw]
assert 1.4 <= r["duration_s"] <= 4, r["duration_s"]
' "$rd" "$here"

# logs captured, env merged, cwd resolved
check_grep "$rd/logs/talk.out" "out: FOO=bar baz" "logs/talk.out: stdout with the env"
check_grep "$rd/logs/talk.out" "cwd: $here" "logs/talk.out: the workload's cwd"
check_grep "$rd/logs/talk.err" "err: to stderr" "logs/talk.err: stderr"
for n in spin half; do
    if [ ! -f "$rd/logs/$n.out" ] || [ ! -f "$rd/logs/$n.err" ]; then
        check_fail "no logs/$n.out or .err"
    fi
done
[ -s exp1/spin.txt ] || check_fail "spin's env or cwd not applied: no exp1/spin.txt"
mapfile -t wpids < <(pids_of "$rd")
check_gone "successful run" "${wpids[@]}"

# ----------------------------------------------------- a name taken: -2 is appended
# make the directories of this second and the next few, so the next run's name is taken
mkdir exp2 || fail mkdir
printf '{"experiment_name": "taken", "workloads": [{"name": "t", "script": "true"}]}\n' \
    >exp2/exp.json
now=$(date +%s)
for ((s = 0; s < 6; s++)); do
    mkdir -p "runs/taken_$(date -d "@$((now + s))" +%Y%m%d-%H%M%S)"
done
rc=$(run_logged taken "$CARMA" run exp2/exp.json -o runs --root live --baseline 0)
check_rc taken 0 "$rc"
rd=$(run_dir taken)
case $(basename "$rd") in
taken_[0-9]*-[0-9]*-2) [ -f "$rd/report.json" ] || check_fail "taken: no report.json in $rd" ;;
*) check_fail "the run directory existed: expected a name ending in -2, got '$rd'" ;;
esac

# ----------------------------------------------------- a failing workload: exit 1
mkdir exp3 || fail mkdir
cat >exp3/exp.json <<'EOF'
{"experiment_name": "fails", "workloads": [
  {"name": "good", "script": "true"},
  {"name": "bad", "script": "sh", "args": ["-c", "exit 3"]}
]}
EOF
rc=$(run_logged fails "$CARMA" run exp3/exp.json -o runs --root live --baseline 0)
check_rc fails 1 "$rc"
check_clean_stderr fails
rd=$(run_dir fails)
if [ -n "$rd" ] && [ -f "$rd/report.json" ]; then
    check_py "a failing workload" '
r = load(sys.argv[1] + "/report.json")
wl = {w["name"]: w for w in load(sys.argv[1] + "/workloads.json")["workloads"]}
rw = {w["name"]: w for w in r["workloads"]}
assert rw["bad"]["exit_status"] == 3, "report.json bad.exit_status %r" % rw["bad"]["exit_status"]
assert wl["bad"]["exit_status"] == 3, "workloads.json bad.exit_status %r" % wl["bad"]["exit_status"]
assert rw["good"]["exit_status"] == 0 and wl["good"]["exit_status"] == 0, (rw["good"], wl["good"])
' "$rd"
else
    check_fail "failing workload: no report.json (stdout: $(head -c 200 fails.out))"
fi

# ------------------------------- a grandchild that outlives its parent, spinning for 1 s
mkdir exp4 || fail mkdir
cat >exp4/fork.sh <<EOF
CARMA_BUSY_REPORT=grandchild.txt "$BUSY" 1 &
echo \$! >grandchild.pid
exit 0
EOF
cat >exp4/exp.json <<'EOF'
{"experiment_name": "orphan", "workloads": [
  {"name": "forker", "type": "shell", "script": "fork.sh"}
], "monitoring": {"interval": "50ms", "baseline_s": 0}}
EOF
rc=$(run_logged orphan "$CARMA" run exp4/exp.json -o runs --root live)
check_rc orphan 0 "$rc"
rd=$(run_dir orphan)
gc=$(cat exp4/grandchild.pid 2>/dev/null)
[ -n "$gc" ] || check_fail "the forker did not start its grandchild"
if [ -n "$gc" ]; then
    watch_pids+=("$gc")
    check_gone "grandchild after the run" "$gc"
    wait_gone "$gc" 3 || true
fi
if [ -f exp4/grandchild.txt ] && [ -n "$rd" ] && [ -f "$rd/report.json" ]; then
    check_py "the grandchild's CPU time is the job's" '
r = load(sys.argv[1] + "/report.json")
rep = dict(l.split() for l in open(sys.argv[2]))
cpu = float(rep["cpu_s"])
w = [w for w in r["workloads"] if w["name"] == "forker"][0]
assert w["cpu_time_s"] >= 0.9 * cpu - 0.05, "forker cpu_time_s %r, its grandchild alone used %.3f s" % (w["cpu_time_s"], cpu)
assert w["energy_j"] > 0, w
' "$rd" exp4/grandchild.txt
else
    check_fail "grandchild: no report of the grandchild (killed before its 1 s?) or no report.json"
fi

# ------------------------------------- timeout_s: SIGTERM, then SIGKILL after the grace
mkdir exp5 || fail mkdir
cat >exp5/exp.json <<'EOF'
{"experiment_name": "timeouts", "workloads": [
  {"name": "slow", "script": "sleep", "args": ["30"], "timeout_s": 1},
  {"name": "stubborn", "script": "sh", "args": ["-c", "trap '' TERM; sleep 30"],
   "timeout_s": 1}
], "monitoring": {"baseline_s": 0}}
EOF
t0=$(date +%s.%N)
rc=$(run_logged timeouts "$CARMA" run exp5/exp.json -o runs --root live --grace 1s)
t1=$(date +%s.%N)
check_rc timeouts 1 "$rc"
check_clean_stderr timeouts
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 6) }' ||
    check_fail "timeout_s 1 with --grace 1: carma ran $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s"
rd=$(run_dir timeouts)
if [ -n "$rd" ] && [ -f "$rd/workloads.json" ]; then
    check_py "timed-out workloads" '
wl = {w["name"]: w for w in load(sys.argv[1] + "/workloads.json")["workloads"]}
r = {w["name"]: w for w in load(sys.argv[1] + "/report.json")["workloads"]}
def sig(v):
    return {"SIGTERM": 15, "TERM": 15, "SIGKILL": 9, "KILL": 9}.get(v, v)
for n, want in (("slow", 15), ("stubborn", 9)):
    w = wl[n]
    assert w["timed_out"] is True, "%s: timed_out %r" % (n, w["timed_out"])
    assert sig(w["signal"]) == want, "%s: signal %r, expected %d" % (n, w["signal"], want)
    assert w["exit_status"] != 0, "%s: exit_status %r" % (n, w["exit_status"])
    assert w["end_unix"] - w["start_unix"] < 3.5, "%s: ran %.2f s" % (n, w["end_unix"] - w["start_unix"])
    assert r[n]["exit_status"] != 0, "report.json %s: exit_status %r" % (n, r[n]["exit_status"])
' "$rd"
    mapfile -t wpids < <(pids_of "$rd")
    check_gone "timed-out workloads" "${wpids[@]}"
else
    check_fail "timeout: no workloads.json"
fi

# ----------------------------------- SIGTERM to carma: forwarded, grace, SIGKILL, outputs
mkdir exp6 || fail mkdir
cat >exp6/stubborn.sh <<'EOF'
echo $$ >stubborn.pid
trap '' TERM
while :; do sleep 0.1; done
EOF
cat >exp6/escape.sh <<'EOF'
setsid sleep 30 &
echo $! >escaped.pid
wait
EOF
cat >exp6/exp.json <<EOF
{"experiment_name": "interrupted", "workloads": [
  {"name": "sleeper", "script": "sleep", "args": ["30"]},
  {"name": "spinner", "script": "$BUSY", "args": ["30"]},
  {"name": "stubborn", "type": "shell", "script": "stubborn.sh"},
  {"name": "escape", "type": "shell", "script": "escape.sh"}
], "monitoring": {"interval": "100ms", "baseline_s": 0}}
EOF
BG_NAME=term carma_bg -- run exp6/exp.json -o runs --root live --grace 1s
carma_pid=$BG_PID
for ((i = 0; i < 100; i++)); do
    [ -s exp6/stubborn.pid ] && [ -s exp6/escaped.pid ] && break
    sleep 0.05
done
sleep 0.5
mapfile -t before < <(pgrep -P "$carma_pid")
stubborn=$(cat exp6/stubborn.pid 2>/dev/null)
escaped=$(cat exp6/escaped.pid 2>/dev/null)
[ -n "$stubborn" ] && watch_pids+=("$stubborn")
[ -n "$escaped" ] && watch_pids+=("$escaped")
for p in "${before[@]}"; do watch_pids+=("-$p" "$p"); done
note "carma $carma_pid, its children: ${before[*]}; stubborn $stubborn, escaped $escaped"
t0=$(date +%s.%N)
kill -TERM "$carma_pid"
rc=0
wait "$carma_pid" || rc=$?
t1=$(date +%s.%N)
check_eq "$rc" 1 "SIGTERM to carma run: exit status (a workload did not exit 0)"
check_clean_stderr term
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 5) }' ||
    check_fail "SIGTERM with --grace 1: carma took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s to end"
rd=$(run_dir term)
if [ -n "$rd" ] && [ -f "$rd/report.json" ]; then
    mapfile -t wpids < <(pids_of "$rd")
    check_gone "SIGTERM to carma" "${before[@]}" "${wpids[@]}" "$stubborn"
    [ -n "$escaped" ] && check_gone "SIGTERM to carma (a workload's setsid grandchild)" "$escaped"
    out=$("$PY" "$CHECK_RUN" format "$rd" --names sleeper,spinner,stubborn,escape 2>&1) ||
        check_fail "interrupted run directory: $(printf '%s\n' "$out" | grep -E '^FAIL' | tr '\n' ' ')"
    check_py "interrupted run: workloads.json" '
wl = {w["name"]: w for w in load(sys.argv[1] + "/workloads.json")["workloads"]}
def sig(v):
    return {"SIGTERM": 15, "TERM": 15, "SIGKILL": 9, "KILL": 9}.get(v, v)
assert sig(wl["sleeper"]["signal"]) == 15, "sleeper: signal %r" % wl["sleeper"]["signal"]
assert sig(wl["stubborn"]["signal"]) == 9, "stubborn: signal %r" % wl["stubborn"]["signal"]
' "$rd"
else
    check_fail "SIGTERM to carma run: no report.json (stdout '$(head -c 200 term.out)')"
    show term.out term.err >&2
    check_gone "SIGTERM to carma" "${before[@]}" "$stubborn" "$escaped"
fi

# ----------------------------------------------------------- -o naming a file
: >afile
rc=$(run_logged ofile "$CARMA" run exp2/exp.json -o afile --root live --baseline 0)
[ "$rc" = 1 ] || [ "$rc" = 2 ] || check_fail "-o a file: exit status $rc, expected 1 or 2"
check_grep ofile.err "afile" "-o a file: the error names the path"
check_clean_stderr ofile
[ -s ofile.out ] && check_fail "-o a file: something on stdout: $(head -c 200 ofile.out)"
[ -s afile ] && check_fail "-o a file: the file was written to"

# ----------------------------------------------------------- a malformed experiment
bad="$CARMA_SRC/tests/experiments/bad/duplicate_names.json"
need_file "$bad"
cp "$bad" dup.json
"$CARMA" validate dup.json >/dev/null 2>dup-validate.err
rc=$(run_logged dup "$CARMA" run dup.json -o runs-bad --root live --baseline 0)
check_rc dup 2 "$rc"
[ -s dup-validate.err ] || check_fail "carma validate printed nothing for dup.json"
while IFS= read -r line; do
    check_grep dup.err "$line" "malformed experiment: carma run prints carma validate's message"
done <dup-validate.err
[ -e runs-bad ] && check_fail "malformed experiment: a run directory was made ($(ls runs-bad))"
[ -s dup.out ] && check_fail "malformed experiment: something on stdout: $(head -c 200 dup.out)"

stop_plant
cli_done
