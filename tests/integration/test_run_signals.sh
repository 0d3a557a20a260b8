#!/usr/bin/env bash
# carma run and signals, started the way a script starts it: as a non-interactive shell's
# background job (`bash -c 'carma run x.json &'`), which inherits SIGINT and SIGQUIT ignored.
# SIGINT still reaches carma; carma says on stderr what it does (how many workloads it stops,
# with which signal, when SIGKILL follows, which ones needed it, which never started); the
# workloads start with every signal's default disposition and nothing blocked, so they get the
# forwarded SIGINT; and the run is recorded as interrupted (signal name and number, UTC and
# Unix time) in manifest.json, report.json, report.txt, the printed report, `carma report`'s
# text and JSON, and report.html. A run that ends by itself says "complete".
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

ROOT="$CARMA_FIXTURES/vm-empty"
here=$PWD

cat >w.sh <<'EOF'
grep -E '^Sig(Ign|Blk)' /proc/self/status >"sig_$1.txt"
trap 'echo INT >"got_$1.txt"; exit 3' INT
trap 'echo TERM >"got_$1.txt"; exit 4' TERM
while :; do sleep 0.05; done
EOF
cat >stub.sh <<'EOF'
echo $$ >stub.pid
trap '' INT TERM
while :; do sleep 0.05; done
EOF
cat >x.json <<EOF
{"experiment_name": "sig", "workloads": [
  {"name": "a", "script": "sh", "args": ["$here/w.sh", "a"], "cwd": "$here"},
  {"name": "b", "script": "sh", "args": ["$here/w.sh", "b"], "cwd": "$here"},
  {"name": "stub", "script": "sh", "args": ["$here/stub.sh"], "cwd": "$here"},
  {"name": "late", "script": "true", "delay_s": 600}
], "monitoring": {"interval": "50ms", "baseline_s": 0}}
EOF

bash -c '"$1" run --root "$2" --grace 1s -o runs x.json >run.out 2>run.err &
echo $! >carma.pid; wait' _ "$CARMA" "$ROOT" &
shell=$!
for ((i = 0; i < 200; i++)); do
    [ -s sig_a.txt ] && [ -s sig_b.txt ] && [ -s stub.pid ] && break
    sleep 0.05
done
pid=$(cat carma.pid)
stub=$(cat stub.pid 2>/dev/null)
[ -s sig_a.txt ] || fail "the workloads did not start: $(cat run.err)"
# the premise: this shell's background job inherits SIGINT ignored
ign=$(awk '/^SigIgn/ { print $2 }' "/proc/$shell/status")
[ "$(((0x${ign:-0} >> 1) & 1))" = 1 ] || note "this shell's background job does not ignore SIGINT"
ign=$(awk '/^SigIgn/ { print $2 }' "/proc/$pid/status")
check_eq "$(((0x${ign:-ff} >> 1) & 1))" 0 "carma run from a script: SIGINT not left ignored"
t0=$(date +%s.%N)
kill -INT "$pid"
rc=0
wait "$shell" || rc=$?
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 4) }' ||
    check_fail "carma took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s after SIGINT with --grace 1s"
check_clean_stderr run
for w in a b; do
    check_eq "$(cat "got_$w.txt" 2>/dev/null)" INT "workload $w got the forwarded SIGINT"
    check_eq "$(sig_ignored "sig_$w.txt")" 0000000000000000 "workload $w: SigIgn"
    check_eq "$(awk '/^SigBlk/ { print $2 }' "sig_$w.txt")" 0000000000000000 "workload $w: SigBlk"
done
[ -n "$stub" ] && kill -0 "$stub" 2>/dev/null && check_fail "stub (ignores SIGINT) outlives carma"
check_grep run.err "carma: SIGINT received: stopping 3 workloads (SIGINT to each one's process group, SIGKILL after 1s); 1 not started yet will not start" \
    "stderr: what carma does"
check_grep run.err "carma: stub: still running 1s after SIGINT: SIGKILL" \
    "stderr: which workload needed SIGKILL"
check_no_grep run.err "carma: a: still running" "stderr: a stopped of SIGINT, no SIGKILL"
rd=$(head -n 1 run.out)
need_file "$rd/manifest.json" "$rd/report.json" "$rd/report.txt" "$rd/report.html" \
    "$rd/workloads.json"
check_py "interrupted run: manifest.json, report.json, workloads.json" '
d = sys.argv[1]
m, r = load(d + "/manifest.json"), load(d + "/report.json")
assert m["status"] == "interrupted" and r["status"] == "interrupted", (m["status"], r["status"])
i = m["interruption"]
assert i == r["interruption"], (i, r["interruption"])
assert (i["signal"], i["signal_number"], i["signals_received"]) == ("SIGINT", 2, 1), i
assert abs(i["time_unix"] - float(sys.argv[2])) < 1.0, (i, sys.argv[2])
import datetime
t = datetime.datetime.strptime(i["time_utc"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
assert abs(t.timestamp() - i["time_unix"]) < 0.002, (t, i)
wl = {w["name"]: w for w in load(d + "/workloads.json")["workloads"]}
assert wl["a"]["exit_status"] == 3 and wl["b"]["exit_status"] == 3, wl
assert wl["stub"]["signal"] == 9, wl["stub"]
assert wl["late"]["pids"] == [] and wl["late"]["exit_status"] == 130, wl["late"]
' "$rd" "$t0"
want="interrupted by SIGINT (signal 2) at 20"
check_grep "$rd/report.txt" "$want" "report.txt says interrupted"
check_grep run.out "$want" "the printed report says interrupted"
check_grep "$rd/report.html" "$want" "report.html says interrupted"
rc=$(run_logged rep "$CARMA" report "$rd")
check_rc rep 0 "$rc"
check_grep rep.out "  warning: $want" "carma report: interrupted"
rc=$(run_logged repj "$CARMA" report "$rd" --format json)
check_py "carma report --format json: interrupted" '
w = load(sys.argv[1])[0]["warnings"]
assert any(x.startswith("interrupted by SIGINT (signal 2) at ") for x in w), w
' repj.out

# --- a signal during the baseline: nothing was running, nothing starts; interrupted
cat >base.json <<EOF
{"experiment_name": "base", "workloads": [{"name": "t", "script": "touch", "args": ["$here/ran"]}],
 "monitoring": {"interval": "50ms", "baseline_s": 5}}
EOF
BG_NAME=base carma_bg -- run --root "$ROOT" -o runs base.json
for ((i = 0; i < 100; i++)); do [ -s base.out ] && break; sleep 0.05; done
sleep 0.3
kill -TERM "$BG_PID"
wait "$BG_PID"
check_grep base.err "carma: SIGTERM received: no workload is running; 1 not started yet will not start" \
    "SIGTERM during the baseline: said"
[ -e ran ] && check_fail "SIGTERM during the baseline: the workload started"
rd=$(head -n 1 base.out)
check_eq "$(json_get "$rd/manifest.json" 'j["status"]')" interrupted "SIGTERM during the baseline: status"
check_grep "$rd/report.txt" "interrupted by SIGTERM (signal 15) at 20" \
    "SIGTERM during the baseline: report.txt"

# --- a run that ends by itself: complete, no interruption, no warning of one
cat >ok.json <<EOF
{"experiment_name": "ok", "workloads": [{"name": "t", "script": "true"}],
 "monitoring": {"interval": "50ms", "baseline_s": 0}}
EOF
rc=$(run_logged ok "$CARMA" run --root "$ROOT" -o runs ok.json)
check_rc ok 0 "$rc"
rd=$(head -n 1 ok.out)
check_py "complete run" '
m, r = load(sys.argv[1] + "/manifest.json"), load(sys.argv[1] + "/report.json")
assert m["status"] == "complete" and m["interruption"] is None, m["status"]
assert r["status"] == "complete" and r["interruption"] is None, r["status"]
' "$rd"
check_no_grep ok.out "interrupted" "complete run: the report does not say interrupted"
check_no_grep ok.err "received" "complete run: nothing said of signals"

cli_done
