#!/usr/bin/env bash
# The live view: `carma run` on a terminal (tmux) and `carma top RUN_DIR`.
#   1. carma run in a tmux pane: while the workloads run, the pane shows the live view (the
#      run directory, "running", each job with its power, Wh and CO2e, the node by domain);
#      when they end, the last frame says "finished" and the report follows;
#   2. carma top on a run going on in the background, stdout a file (not a terminal): plain
#      frames, no escape code, ending by itself when the run ends; its last frame has the
#      run's last event summary's energies;
#   3. carma top in a tmux pane on the finished run; --once;
#   4. errors: a directory that is not a run (exit 1, the file named), usage (exit 2);
#   5. the open mark windows: in 1 and 2 a workload marks a window (`carma mark`), shown with
#      its job, how long it is open and the node's energy while open, gone once ended; carma
#      stat -o DIR on the grace fixture (291.25 W) with ten windows open and one ended: carma
#      top --json's open_windows (the oldest eight, open_windows_more 2, each with its id, job,
#      begin, and the node's energy = the node's power x (the last tick - the begin)) and the
#      text lines; none once the command ended (unended); a run without marks.csv: nothing;
#   6. a hand-written marks.csv followed by one carma top --json: an end before its begin, an
#      event, unended, a window without a job, a torn last line awaited, then read when whole,
#      then skipped with a warning once the run has ended.
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

# a workload that marks a window for 2.5 s of the run (and a short one before it)
cat >marker.sh <<EOF
'$CARMA' mark begin prefill -q
sleep 0.2
'$CARMA' mark end prefill -q
'$CARMA' mark begin decode -q
sleep 2.5
'$CARMA' mark end decode -q
EOF
cat >exp.json <<JSON
{"experiment_name": "live", "workloads": [
  {"name": "spinner", "script": "$BUSY", "args": ["4"]},
  {"name": "napper", "script": "sleep", "args": ["2"], "delay_s": 0.5},
  {"name": "marker", "launch": "shell", "script": "$PWD/marker.sh", "delay_s": 0.5}],
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
# the open window: its job, how long it is open, the node's energy so far (markd's figure)
wait_pane '^decode\*? +marker +[0-9]+\.[0-9] s +[0-9]+\.[0-9]{4} Wh' 5
grep -Eq '^open window +job +open +node energy' pane.txt || fail "no open window header"
wait_pane 'finished' 20
wait_pane 'node total' 10
grep -Eq '^spinner \(ended\)\*?' pane.txt || fail "spinner not ended in the last frame"
if grep -Eq '^(open window|decode)' pane.txt; then
    fail "a window is shown open in the last frame: $(cat pane.txt)"
fi
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
grep -Eq '^decode\*? +marker +[0-9]+\.[0-9] s +[0-9]+\.[0-9]{4} Wh$' top.out ||
    fail "carma top never showed the open window: $(cat top.out)"
"$PY" - "$d/event_summaries.jsonl" top.out <<'PYEOF' || fail "carma top's last frame"
import json, re, sys
last = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
frame = open(sys.argv[2]).read().strip().split("\n\n")[-1]
if "open window" in frame or "decode" in frame:
    sys.exit(f"an ended window in the last frame:\n{frame}")
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
# the frame's lines follow its header (a loaded machine may show the pane between the two)
wait_pane '^spinner \(ended\)' 5
"$CARMA" top "$run_dir" --once >once.out || fail "--once"
[ "$(grep -c '^carma ' once.out)" -eq 1 ] || fail "--once showed more than a frame"
if grep -q 'open window' once.out; then
    fail "the finished run shows open windows: $(cat once.out)"
fi

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

# 5. carma stat -o DIR on grace (291.25 W): ten windows open, one ended, while carma top looks
GRACE="$CARMA_FIXTURES/grace"
need_file "$GRACE"
cat >m5.sh <<EOF
M() { '$CARMA' mark "\$@"; }
M begin outer -q
M begin inner -q
for i in 1 2 3 4 5 6 7 8 9; do M begin "step\$i" -q; done
M end inner -q
sleep 0.3
touch ready
for i in \$(seq 300); do [ -e go ] && break; sleep 0.1; done
sleep 0.3
M end step9 -q
EOF
"$CARMA" stat --root "$GRACE" --interval 50ms -o d5 -- bash m5.sh >s5.out 2>s5.err &
stat_pid=$!
_cleanup_pids+=("$stat_pid")
for ((i = 0; i < 100; i++)); do
    [ -e ready ] && break
    sleep 0.1
done
[ -e ready ] || fail "the marking command never got ready: $(cat s5.err)"
"$CARMA" top d5 --once --json >j5.json 2>j5.err || fail "top --json: $(cat j5.err)"
"$CARMA" top d5 --once >t5.txt 2>t5.err || fail "top: $(cat t5.err)"
touch go
wait "$stat_pid" || fail "carma stat failed: $(cat s5.err)"
"$CARMA" top d5 --once --json >j5end.json || fail "top --json, finished"
"$PY" - d5 j5.json j5end.json <<'PYEOF' || fail "carma top --json: open_windows"
import csv, json, sys
d, j, jend = sys.argv[1:]
f = json.loads(open(j).read())
w = f["open_windows"]
names = [x["name"] for x in w]
assert names == ["outer"] + ["step%d" % i for i in range(1, 8)], names
assert [x["id"] for x in w] == [1] + list(range(3, 10)), w
assert f["open_windows_more"] == 2, f["open_windows_more"]
assert not f["finished"]
t_first = float(next(csv.DictReader(open(d + "/samples.csv", newline="")))["timestamp_unix"])
p = f["node_power_w"]
assert abs(p - 291.25) < 0.01, p
begins = {r["id"]: float(r["timestamp_unix"])
          for r in csv.DictReader(open(d + "/marks.csv", newline="")) if r["event"] == "begin"}
for x in w:
    assert x["workload"] == "cmd" and x["method"] == "measured", x
    assert 0.3 <= x["open_s"] < 60, x
    assert abs(begins[str(x["id"])] - x["begin_unix"]) < 1e-6, x
    # the node's energy from the begin (or the first tick) to the last tick read
    span = f["updated_unix"] - max(x["begin_unix"], t_first)
    assert span > 0.2, (x, f["updated_unix"])
    assert abs(x["energy_j"] - p * span) <= 0.01 * p * span + 0.5, (x["energy_j"], p * span)
e = json.loads(open(jend).read())
assert e["finished"] and e["open_windows"] == [] and e["open_windows_more"] == 0, e
print("top --json: open windows ok")
PYEOF
grep -Eq '^open window +job +open +node energy$' t5.txt || fail "no window header: $(cat t5.txt)"
grep -Eq '^outer +cmd +[0-9]+\.[0-9] s +[0-9]+\.[0-9]{4} Wh$' t5.txt ||
    fail "no outer line: $(cat t5.txt)"
grep -Eq '^step7 +cmd ' t5.txt || fail "no step7 line: $(cat t5.txt)"
grep -Eq '^\+2 more$' t5.txt || fail "no +2 more line: $(cat t5.txt)"
if grep -Eq '^(inner|step8|step9) ' t5.txt; then
    fail "an ended or a ninth window shown: $(cat t5.txt)"
fi
# a measurement without marks (no marks.csv): nothing more
"$CARMA" stat --root "$GRACE" --interval 50ms -o d7 -q -- sleep 0.2 >/dev/null 2>&1 ||
    fail "carma stat d7"
[ ! -e d7/marks.csv ] || fail "d7 has a marks.csv"
"$CARMA" top d7 --once >t7.txt || fail "top d7"
if grep -q 'open window' t7.txt; then
    fail "a run without marks shows windows: $(cat t7.txt)"
fi
"$CARMA" top d7 --once --json | "$PY" -c '
import json, sys
f = json.load(sys.stdin)
assert f["open_windows"] == [] and f["open_windows_more"] == 0, f' || fail "d7 --json"

# 6. a hand-written marks.csv beside d5's samples (its manifest "running" again, without the
# pid by which top would tell that its carma is gone), followed by one carma top --json
cp -r d5 d6
"$PY" - d6 <<'PYEOF' || fail "d6"
import csv, json, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
m["status"] = "running"
m.pop("pid", None)
json.dump(m, open(d + "/manifest.json", "w"))
ts = [float(r["timestamp_unix"]) for r in csv.DictReader(open(d + "/samples.csv", newline=""))]
t, t_last = ts[0], ts[-1]
at = lambda f: t + f * (t_last - t)  # within the samples' time
rows = [("end", 9, "ghost", 0.05, "cmd"),    # its end before its begin
        ("begin", 1, "a", 0.10, "cmd"),
        ("begin", 9, "ghost", 0.15, "cmd"),  # no window: it has ended
        ("begin", 2, "b", 0.20, "cmd"),
        ("event", "", "loss", 0.25, "cmd"),
        ("unended", 1, "a", 0.30, ""),
        ("begin", 3, "c", 0.35, ""),         # no job
        ("begin", 4, "d", 0.40, "cmd"),
        ("end", 4, "d", 0.45, "cmd")]
with open(d + "/marks.csv", "w", newline="") as f:
    f.write("schema_version,event,id,name,timestamp_unix,pid,workload,tokens,requests,value\r\n")
    for ev, i, name, frac, wl in rows:
        f.write("1,%s,%s,%s,%.6f,%s,%s,,,%s\r\n" % (ev, i, name, at(frac), "" if ev == "unended" else 11,
                                                    wl, "0.5" if ev == "event" else ""))
    # after the last tick (its energy: none), and no line end: not yet whole
    f.write("1,begin,5,torn,%.6f,1" % (t_last + 0.05))
# what is appended later: the torn line's rest and b's end; then a torn end of c
open(d + "/add1", "w", newline="").write("1,cmd,,,\r\n1,end,2,b,%.6f,11,cmd,,,\r\n" % (t_last + 0.1))
open(d + "/add2", "w", newline="").write("1,end,3,c,%.6f" % (t_last + 0.2))
json.dump({"t_last": t_last, "c": float("%.6f" % at(0.35))}, open(d + "/times.json", "w"))
PYEOF
"$CARMA" top d6 --json --interval 100ms >j6.jsonl 2>j6.err &
top_pid=$!
_cleanup_pids+=("$top_pid")
# wait_frame IDS: until carma top's last frame has the open windows of ids IDS ("2,3")
wait_frame() {
    local i
    for ((i = 0; i < 100; i++)); do
        [ "$("$PY" -c '
import json
lines = open("j6.jsonl").read().splitlines()
print(",".join(str(w["id"]) for w in json.loads(lines[-1])["open_windows"]) if lines else "")
' 2>/dev/null)" = "$1" ] && return 0
        sleep 0.1
    done
    fail "carma top never showed the windows $1: $(tail -n 1 j6.jsonl) $(cat j6.err)"
}
wait_frame 2,3
grep -q "d6/marks.csv:2: id 9: an end of no open window (no begin row before it, or ended already): the row is skipped" j6.err ||
    fail "the end before its begin not said: $(cat j6.err)"
if grep -q 'no line end' j6.err; then
    fail "a torn line, awaited while the run runs, is said: $(cat j6.err)"
fi
cat d6/add1 >>d6/marks.csv
wait_frame 3,5
# a torn end of c, and the run ends: the torn line is skipped, said once, c stays open
cat d6/add2 >>d6/marks.csv
"$PY" - d6 <<'PYEOF' || fail "d6 complete"
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
m["status"] = "complete"
json.dump(m, open(sys.argv[1] + "/manifest.json", "w"))
PYEOF
wait "$top_pid" || fail "carma top d6 failed: $(cat j6.err)"
[ "$(grep -c 'd6/marks.csv:13: the last line has no line end (cut short by a crash or a copy): it is skipped' j6.err)" -eq 1 ] ||
    fail "the torn last line not said once: $(cat j6.err)"
"$PY" - d6 j6.jsonl <<'PYEOF' || fail "carma top d6 frames"
import csv, json, sys
d, j = sys.argv[1:]
frames = [json.loads(l) for l in open(j).read().splitlines()]
times = json.load(open(d + "/times.json"))
seen = set()
for f in frames:
    seen.add(tuple(w["id"] for w in f["open_windows"]))
    for w in f["open_windows"]:
        assert w["workload"] == (None if w["id"] == 3 else "cmd"), w
        if w["id"] == 5:  # begun after the last tick: no figure
            assert w["energy_j"] is None and w["method"] is None, w
            continue
        want = 291.25 * (f["updated_unix"] - w["begin_unix"])
        assert abs(w["energy_j"] - want) <= 0.01 * want + 0.5, (w, f["updated_unix"])
        assert w["method"] == "measured", w
assert seen <= {(2, 3), (3, 5)}, seen
last = frames[-1]
assert last["finished"] and [w["id"] for w in last["open_windows"]] == [3, 5], last
c = last["open_windows"][0]
assert abs(c["begin_unix"] - times["c"]) < 1e-6, c
assert abs(c["open_s"] - (times["t_last"] - c["begin_unix"])) < 1e-3, (c, times)  # to the last tick
assert last["open_windows"][1]["open_s"] == 0, last  # begun after it
print("top d6: %d frames ok" % len(frames))
PYEOF
exit 0
