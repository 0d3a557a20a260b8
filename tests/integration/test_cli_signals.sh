#!/usr/bin/env bash
# carma stat and signals: SIGTERM/SIGINT/SIGHUP/SIGQUIT sent to carma reach the command's
# process group, carma exits with the command's status (128+N when a signal N killed it) and
# still writes its summary; nothing of the command's group outlives carma; a signal during the
# baseline stops carma before the command starts; and carma killed with SIGKILL leaves a
# samples.csv made of whole rows. Started from a script (SIGINT inherited ignored), SIGINT still
# stops carma, which says what it does; the command starts with default signal dispositions;
# the interruption is recorded (manifest, summary, carma report's text, JSON and HTML).
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

ROOT="$CARMA_FIXTURES/vm-empty"
LOOP='while :; do sleep 0.05; done'

# signal_run NAME SIGNAL SCRIPT: start carma stat on `sh -c SCRIPT`, send SIGNAL to carma once
# the command runs, wait for carma. Sets RC (carma's exit status) and PG (the command's
# process group, for the checks and the cleanup). Output in NAME.out/.err, summary in
# NAME.json.
signal_run() {
    local name=$1 sig=$2 script=$3
    BG_NAME=$name carma_bg -- stat --root "$ROOT" --interval 20ms --json-out "$name.json" \
        -- sh -c "$script"
    PG=$(wait_child_of "$BG_PID") || fail "$name: the command did not start: $(cat "$name.err")"
    sleep 0.3
    kill "-$sig" "$BG_PID"
    RC=0
    wait "$BG_PID" || RC=$?
}

# check_group_gone NAME: no process of the command's group PG is left.
check_group_gone() {
    local left
    left=$(pgrep -g "$PG" -a 2>/dev/null)
    [ -z "$left" ] || check_fail "$1: processes of the command's group $PG outlive carma: $left"
    kill_group "$PG"
}

# --- SIGTERM: forwarded, the command's trap decides the status, the summary is written
signal_run term TERM "trap 'exit 42' TERM; $LOOP"
check_eq "$RC" 42 "SIGTERM: carma's exit status is the command's"
check_clean_stderr term
check_grep term.err "exited with status 42" "SIGTERM: summary"
if [ -f term.json ]; then
    check_eq "$(json_get term.json 'j["exit_status"]')" 42 "SIGTERM: exit_status in the JSON"
else
    check_fail "SIGTERM: no summary JSON written"
fi
check_group_gone "SIGTERM"

# --- SIGINT: the command dies of it: 128 + 2
signal_run int INT "$LOOP"
check_eq "$RC" 130 "SIGINT: exit status of a command killed by SIGINT"
check_clean_stderr int
check_grep int.err "killed by signal 2" "SIGINT: summary"
if [ -f int.json ]; then
    check_eq "$(json_get int.json 'j["exit_status"]')" 130 "SIGINT: exit_status in the JSON"
else
    check_fail "SIGINT: no summary JSON written"
fi
check_group_gone "SIGINT"

# --- SIGHUP and SIGQUIT are forwarded too
signal_run hup HUP "trap 'exit 5' HUP; $LOOP"
check_eq "$RC" 5 "SIGHUP: forwarded to the command"
check_group_gone "SIGHUP"
signal_run quit QUIT "trap 'exit 6' QUIT; $LOOP"
check_eq "$RC" 6 "SIGQUIT: forwarded to the command"
check_group_gone "SIGQUIT"

# --- the command's own ending: exit statuses and signals pass through
for c in "exit 7:7" "exit 0:0" "exit 255:255" 'kill -KILL $$:137' 'kill -TERM $$:143' \
    'kill -SEGV $$:139'; do
    script=${c%:*} want=${c##*:}
    rc=$(run_logged own "$CARMA" stat --root "$ROOT" --interval 20ms --json-out own.json \
        -- sh -c "$script")
    check_eq "$rc" "$want" "sh -c '$script': carma's exit status"
    check_eq "$(json_get own.json 'j["exit_status"]')" "$want" "sh -c '$script': exit_status"
    case $want in
    137) check_grep own.err "killed by signal 9" "sh -c '$script': summary" ;;
    7) check_grep own.err "exited with status 7" "sh -c '$script': summary" ;;
    esac
done

# --- a process of the command's group that ignores SIGTERM must not outlive carma
# BUG(carma): carma forwards SIGTERM once and exits when the command's main process has
# exited; a process of the group that ignores SIGTERM is left running (design: forward,
# wait a grace period, then SIGKILL the group).
signal_run stubborn TERM "trap 'exit 42' TERM; sh -c \"trap '' TERM; exec sleep 30\" & $LOOP"
check_eq "$RC" 42 "SIGTERM with a stubborn child: exit status"
check_group_gone "SIGTERM with a child that ignores it"

# --- a signal during the baseline: the command never starts
rm -f ran
BG_NAME=base carma_bg -- stat --root "$ROOT" --interval 20ms --baseline 3s -- touch ran
sleep 0.4
kill -TERM "$BG_PID"
rc=0
wait "$BG_PID" || rc=$?
check_eq "$rc" 143 "SIGTERM during the baseline: exit status"
check_grep base.err "interrupted during the baseline; the command was not started" \
    "SIGTERM during the baseline: message"
[ -e ran ] && check_fail "SIGTERM during the baseline: the command ran"

# --- carma killed with SIGKILL: samples.csv holds the header and whole rows only, and the
# manifest says the run did not complete
for delay in 0.23 0.37 0.51; do
    d=kill_$delay
    BG_NAME=$d carma_bg -- stat --root "$CARMA_FIXTURES/intel-2s" --interval 10ms -o "$d" \
        -- sh -c "$LOOP"
    PG=$(wait_child_of "$BG_PID") || fail "$d: the command did not start: $(cat "$d.err")"
    sleep "$delay"
    kill -KILL "$BG_PID"
    wait "$BG_PID" 2>/dev/null
    kill_group "$PG"
    need_file "$d/samples.csv" "$d/manifest.json"
    check_py "carma killed after ${delay}s: samples.csv" '
rows = csv_rows(sys.argv[1])
assert rows[0] == "timestamp_unix,timestamp_local,channel,source,kind,domain,method,watts,joules_total".split(","), rows[0]
n = len(rows) - 1
assert n >= 6, "only %d rows after %s s" % (n, sys.argv[2])
assert n % 6 == 0, "%d rows: not whole ticks of 6 channels" % n
' "$d/samples.csv" "$delay"
    check_py "carma killed after ${delay}s: manifest.json" '
m = load(sys.argv[1])
assert m["status"] == "running", m["status"]
assert len(m["channels"]) == 6, m["channels"]
' "$d/manifest.json"
    [ -e "$d/summary.json" ] && check_fail "$d: a summary.json although carma was killed"
    "$CARMA" report "$d" >"$d.report" 2>&1
    check_grep "$d.report" 'manifest.json says "running": carma is still measuring, or was killed' \
        "carma killed after ${delay}s: carma report says it never finished"
done

# --- started from a script (a non-interactive shell's background job inherits SIGINT and
# SIGQUIT ignored): SIGINT still reaches carma, which forwards it and says so; the command
# starts with default dispositions and nothing blocked; the run is recorded as interrupted by
# SIGINT in manifest.json, summary.json, the printed summary and `carma report`
cat >sigcmd.sh <<'EOF'
grep -E '^Sig(Ign|Blk)' /proc/self/status >sigcmd.status
trap 'echo INT >sigcmd.got; exit 3' INT
trap 'echo TERM >sigcmd.got; exit 4' TERM
while :; do sleep 0.05; done
EOF
rm -f sigcmd.got sigcmd.status
bash -c '"$1" stat --root "$2" --interval 20ms -o ign -- sh sigcmd.sh >ign.out 2>ign.err &
echo $! >ign.pid; wait' _ "$CARMA" "$ROOT" &
shell=$!
for ((i = 0; i < 200; i++)); do [ -s sigcmd.status ] && break; sleep 0.02; done
pid=$(cat ign.pid)
ign=$(awk '/^SigIgn/ { print $2 }' "/proc/$pid/status")
check_eq "$(((0x${ign:-ff} >> 1) & 1))" 0 "from a script: carma's SIGINT not left ignored"
t0=$(date +%s.%N)
kill -INT "$pid"
wait "$shell"
t1=$(date +%s.%N)
check_eq "$(cat sigcmd.got 2>/dev/null)" INT "from a script: the command got SIGINT"
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 3) }' ||
    check_fail "from a script: carma took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s after SIGINT (the command ignored it?)"
check_eq "$(sig_ignored sigcmd.status)" 0000000000000000 \
    "the command's ignored signals (SigIgn)"
check_eq "$(awk '/^SigBlk/ { print $2 }' sigcmd.status)" 0000000000000000 \
    "the command's blocked signals (SigBlk)"
check_grep ign.err "carma: SIGINT received: forwarded to the command's process group (SIGKILL after 5s if it still runs)" \
    "from a script: what carma does, on stderr"
check_grep ign.err "  interrupted by SIGINT (signal 2) at 20" "from a script: the summary says interrupted"
check_py "interrupted by SIGINT: manifest.json and summary.json" '
m, s = load(sys.argv[1] + "/manifest.json"), load(sys.argv[1] + "/summary.json")
assert m["status"] == "interrupted" and s["status"] == "interrupted", (m["status"], s["status"])
i = m["interruption"]
assert i == s["interruption"], (i, s["interruption"])
assert (i["signal"], i["signal_number"], i["signals_received"]) == ("SIGINT", 2, 1), i
assert s["command_start_unix"] <= i["time_unix"] <= s["command_end_unix"], (i, s)
import datetime
t = datetime.datetime.strptime(i["time_utc"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
assert abs(t.timestamp() - i["time_unix"]) < 0.002, (t, i)
' ign
rc=$(run_logged ignrep "$CARMA" report ign)
check_rc ignrep 0 "$rc"
check_grep ignrep.out "  warning: interrupted by SIGINT (signal 2) at 20" "carma report: interrupted"
rc=$(run_logged ignjson "$CARMA" report ign --format json)
check_py "carma report --format json: interrupted" '
w = load(sys.argv[1])[0]["warnings"]
assert any(x.startswith("interrupted by SIGINT (signal 2) at ") for x in w), w
' ignjson.out
rc=$(run_logged ignhtml "$CARMA" report ign --format html)
check_grep ignhtml.out "interrupted by SIGINT (signal 2) at 20" "carma report --format html: interrupted"

# --- a command that outlives the grace period: carma says it sends SIGKILL
BG_NAME=late carma_bg -- stat --root "$ROOT" --interval 20ms --grace 300ms -- \
    sh -c "trap '' TERM; $LOOP"
PG=$(wait_child_of "$BG_PID") || fail "late: the command did not start: $(cat late.err)"
sleep 0.3
kill -TERM "$BG_PID"
wait "$BG_PID"
check_grep late.err "carma: SIGTERM received: forwarded to the command's process group (SIGKILL after 300ms if it still runs)" \
    "grace: the forwarding said"
check_grep late.err "carma: the command's process group still runs 300ms after SIGTERM: SIGKILL" \
    "grace: the SIGKILL said"
check_grep late.err "killed by signal 9" "grace: the command killed"
check_group_gone "SIGTERM ignored past the grace"

# --- a signal during the baseline with -o: the manifest says interrupted
BG_NAME=baseo carma_bg -- stat --root "$ROOT" --interval 20ms --baseline 3s -o baseo -- true
sleep 0.4
kill -HUP "$BG_PID"
wait "$BG_PID"
check_eq "$(json_get baseo/manifest.json 'j["status"]')" interrupted "SIGHUP during the baseline: status"
check_eq "$(json_get baseo/manifest.json 'j["interruption"]["signal"]')" SIGHUP \
    "SIGHUP during the baseline: the signal"

cli_done
