#!/usr/bin/env bash
# The live view: `carma run` on a terminal (tmux) and `carma top RUN_DIR`.
#   1. carma run in a tmux pane: while the workloads run, the pane shows the live view (the
#      run directory, "running", each job with its power, Wh and CO2e, the node by domain);
#      when they end, the last frame says "finished" and the report follows;
#   2. carma top on a run going on in the background, stdout a file (not a terminal): plain
#      frames, no escape code, ending by itself when the run ends; its last frame has the
#      run's last event summary's energies;
#   3. carma top in a tmux pane on the finished run; --once;
#   4. errors: a directory that is not a run (exit 1, the file named), usage (exit 2).
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib.sh"

command -v tmux >/dev/null || skip "no tmux (apt-get install tmux)"
# one tmux server per pane (a fresh socket each), each killed at the end
sock="$PWD/tmux1.sock"
tm() { tmux -S "$sock" "$@"; }
cleanup_tmux() {
    local s
    for s in "$PWD"/tmux*.sock; do
        [ -S "$s" ] && tmux -S "$s" kill-server 2>/dev/null
    done
    true
}
trap 'cleanup_tmux; _lib_cleanup' EXIT

cat >exp.json <<JSON
{"experiment_name": "live", "workloads": [
  {"name": "spinner", "script": "$BUSY", "args": ["4"]},
  {"name": "napper", "script": "sleep", "args": ["2"], "delay_s": 0.5}],
 "monitoring": {"baseline_s": 0.5, "interval": "50ms"}}
JSON

# wait_pane PATTERN SECONDS: until the pane shows PATTERN (grep -E)
wait_pane() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        tm capture-pane -p -t live >pane.txt 2>/dev/null
        grep -Eq "$1" pane.txt && return 0
        sleep 0.1
    done
    cat pane.txt >&2
    fail "the pane never showed /$1/"
}

# 1. carma run on a terminal
tm new-session -d -s live -c "$PWD" -x 120 -y 40 \
    "'$CARMA' run -o '$PWD/runs' exp.json; sleep 60"
wait_pane 'elapsed 00:00:0[1-3] +running' 10
# the jobs' lines follow the header in the same frame, or in the next one on a slow machine
wait_pane '^spinner\*? +[0-9]+\.[0-9] W +[0-9]+\.[0-9]{4} Wh +[0-9]+\.[0-9]{4} g' 5
grep -Eq '^napper' pane.txt || fail "no napper line"
grep -Eq '^node [0-9.]+ W +cpu [0-9.]+ W' pane.txt || fail "no node line: $(cat pane.txt)"
wait_pane 'finished' 20
wait_pane 'node total' 10
grep -Eq '^spinner \(ended\)\*?' pane.txt || fail "spinner not ended in the last frame"
run_dir=$(ls -d "$PWD"/runs/live_*)
note "tmux: $(grep -c . pane.txt) lines in the pane at the end"

# 2. carma top, not a terminal, on a run going on in the background
"$CARMA" run -q -o "$PWD/runs2" exp.json >run2.out 2>&1 &
run_pid=$!
_cleanup_pids+=("$run_pid")
for ((i = 0; i < 50; i++)); do
    d=$(ls -d "$PWD"/runs2/live_* 2>/dev/null | head -n 1)
    [ -n "$d" ] && [ -s "$d/samples.csv" ] && break
    sleep 0.1
done
[ -n "$d" ] || fail "the background run made no directory"
timeout 60 "$CARMA" top "$d" --interval 200ms >top.out 2>top.err || fail "carma top: $(cat top.err)"
wait "$run_pid" || fail "the background run failed: $(cat run2.out)"
if grep -q $'\033' top.out; then
    fail "escape codes in carma top's plain output"
fi
frames=$(grep -c '^carma ' top.out)
[ "$frames" -ge 3 ] || fail "carma top showed $frames frames of a 4-second run"
grep -q 'running' top.out || fail "no running frame"
tail -n 12 top.out | grep -q 'finished' || fail "the last frame is not finished"
"$PY" - "$d/event_summaries.jsonl" top.out <<'PYEOF' || fail "carma top's last frame"
import json, re, sys
last = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
frame = open(sys.argv[2]).read().strip().split("\n\n")[-1]
for w in last["workloads"]:
    m = re.search(r"^%s(?: \(ended\))?\*?\s+\S+ W\s+([0-9.]+) Wh\s+([0-9.]+) g" % re.escape(w["name"]), frame, re.M)
    if not m:
        sys.exit(f"no line for {w['name']} in:\n{frame}")
    if abs(float(m.group(1)) - w["energy_j"] / 3600) > 0.00006:
        sys.exit(f"{w['name']}: {m.group(1)} Wh, the summary says {w['energy_j'] / 3600}")
    if abs(float(m.group(2)) - w["g_co2e"]) > 0.00006:
        sys.exit(f"{w['name']}: {m.group(2)} g, the summary says {w['g_co2e']}")
print("top: last frame ok")
PYEOF

# 3. carma top on a terminal, the finished run; --once
sock="$PWD/tmux2.sock"
tm new-session -d -s live -c "$PWD" -x 120 -y 30 "'$CARMA' top '$run_dir'; sleep 60"
wait_pane 'finished' 10
grep -Eq '^spinner \(ended\)' pane.txt || fail "carma top (terminal): no ended spinner line"
"$CARMA" top "$run_dir" --once >once.out || fail "--once"
[ "$(grep -c '^carma ' once.out)" -eq 1 ] || fail "--once showed more than a frame"

# 4. errors
rc=0
"$CARMA" top "$PWD/nowhere" >/dev/null 2>err.txt || rc=$?
[ "$rc" -eq 1 ] || fail "a missing directory: exit $rc"
grep -q "nowhere/samples.csv" err.txt || fail "the message does not name the file: $(cat err.txt)"
rc=0
"$CARMA" top 2>/dev/null || rc=$?
[ "$rc" -eq 2 ] || fail "no directory: exit $rc"
rc=0
"$CARMA" top "$run_dir" --interval 1ms 2>/dev/null || rc=$?
[ "$rc" -eq 2 ] || fail "--interval 1ms: exit $rc"
exit 0
