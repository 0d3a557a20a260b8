#!/usr/bin/env bash
# carma cleanup RUN_DIR after `carma run` itself was killed with everything that would have
# stopped its workloads (its supervisor, then carma: SIGKILL to both, as a lost node or the OOM
# killer may do):
# - the workloads' processes (the children their killed main processes left) still run;
#   `carma cleanup` stops them (by cgroup where the run had cgroups, else by process group),
#   each process checked by pid and start time; a torn last row of samples.csv is dropped and
#   said; every CSV then holds whole rows only; manifest.json says "crashed" with the time of
#   the last sample; report.json and report.txt are there and `carma report` reads the run;
# - a second cleanup has nothing left to do (exit 0);
# - a directory whose carma is alive is refused (exit 2, naming the pid);
# - a recorded pid now used by a process that started at another time is never signalled.
# Every wait is bounded; what a failed check leaves is killed by pid at exit.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

ROOT="$CARMA_FIXTURES/intel-2s"
here=$PWD
carma_pid=
decoy=

pid_of() {
    local p
    p=$(cat "$1" 2>/dev/null)
    case $p in '' | *[!0-9]* | 0*) p= ;; esac
    printf '%s' "$p"
}

# start time (field 22 of /proc/PID/stat) of PID, "" when it is gone or a zombie
start_of() {
    local f
    read -r -a f < <(sed -n 's/^[0-9]* (.*) \(.*\)$/\1/p' "/proc/$1/stat" 2>/dev/null)
    [ "${#f[@]}" -gt 19 ] && [ "${f[0]}" != Z ] && printf '%s' "${f[19]}"
    return 0
}

# alive PID START: the process PID runs and started at START
alive() {
    [ -n "$1" ] && [ -n "$2" ] && [ "$(start_of "$1")" = "$2" ]
}

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_left() {
    local f p
    for f in "$here"/*.pid "$here"/*.child; do
        p=$(pid_of "$f")
        [ -n "$p" ] && kill -KILL "$p" 2>/dev/null
    done
    [ -n "$carma_pid" ] && kill -KILL "$carma_pid" 2>/dev/null
    [ -n "$decoy" ] && kill -KILL "$decoy" 2>/dev/null
    # cgroups a failed check left (empty once their processes are killed)
    for f in "$here"/*.cg; do
        p=$(cat "$f" 2>/dev/null)
        [ -n "$p" ] && [ -d "$p" ] && sleep 0.2 && rmdir "$p"/*/ "$p" 2>/dev/null
    done
    return 0
}
trap 'cleanup_left; _lib_cleanup' EXIT

# check_re FILE REGEX MSG: FILE has a line matching REGEX (extended)
check_re() {
    if ! grep -qE -- "$2" "$1" 2>/dev/null; then
        check_fail "$3: /$2/ not found in $1"
        show "$1" >&2
    fi
}

wait_files() {
    local n=$(($1 * 20)) f ok i
    shift
    for ((i = 0; i < n; i++)); do
        ok=1
        for f in "$@"; do [ -s "$f" ] || ok=0; done
        [ "$ok" = 1 ] && return 0
        sleep 0.05
    done
    return 1
}

# sleeper.sh NAME: a workload whose main process (NAME.pid) waits 30 s for its child
# (NAME.child, 60 s)
cat >sleeper.sh <<'EOF'
echo $$ >"$1.pid"
sleep 60 &
echo $! >"$1.child"
sleep 30
EOF

# stubborn.sh NAME: the same, but its child (NAME.child) and what it starts ignore SIGTERM
cat >stubborn.sh <<'EOF'
echo $$ >"$1.pid"
sh -c 'trap "" TERM; while :; do sleep 0.1; done' &
echo $! >"$1.child"
sleep 30
EOF

# jsonl_get FILE ROLE KEY: KEY of the first line of processes.jsonl with that role
jsonl_get() {
    "$PY" -c '
import json, sys
for line in open(sys.argv[1]):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if o.get("role") == sys.argv[2]:
        v = o.get(sys.argv[3])
        print("" if v is None else v)
        break
' "$@" 2>/dev/null
}

# nocg CMD...: CMD in a mount namespace where no cgroup2 hierarchy is mounted (no cgroups)
# shellcheck disable=SC2016 # for the inner shell
UMOUNT_CG='for m in $(awk '\''$0 ~ / - cgroup2 / { print $5 }'\'' /proc/self/mountinfo); do
    umount -l "$m" || exit 99; done; exec "$@"'
have_nocg=0
[ "$(unshare -m --propagation private sh -c "$UMOUNT_CG" nocg grep -c ' - cgroup2 ' \
    /proc/self/mountinfo 2>/dev/null)" = 0 ] && have_nocg=1

# crash NAME [nocg|sup]: carma run of NAME.json (workloads a, b and c, the stubborn one: their files
# NAME-a.pid ...); once they run, SIGKILL to its supervisor, then to carma. Sets RD (the run
# directory) and CHILDREN ("pid:start" of each workload's child). sup: the supervisor is left
# alone (it then kills the workloads itself).
crash() {
    local name=$1 mode=${2:-} w p s sup
    RD=''
    CHILDREN=
    rm -f "$name"-*.pid "$name"-*.child
    cat >"$name.json" <<EOF
{"experiment_name": "$name", "workloads": [
  {"name": "a", "script": "sh", "args": ["$here/sleeper.sh", "$name-a"], "cwd": "$here"},
  {"name": "b", "script": "sh", "args": ["$here/sleeper.sh", "$name-b"], "cwd": "$here"},
  {"name": "c", "script": "sh", "args": ["$here/stubborn.sh", "$name-c"], "cwd": "$here"}
], "monitoring": {"interval": "20ms", "baseline_s": 0}}
EOF
    if [ "$mode" = nocg ]; then
        # exec: $! is carma's pid (unshare and sh exec in turn)
        (exec unshare -m --propagation private sh -c "$UMOUNT_CG" nocg "$CARMA" run \
            --root "$ROOT" -o "runs-$name" "$name.json") >"$name.out" 2>"$name.err" &
    else
        "$CARMA" run --root "$ROOT" -o "runs-$name" "$name.json" >"$name.out" 2>"$name.err" &
    fi
    carma_pid=$!
    if ! wait_files 10 "$name"-a.child "$name"-b.child "$name"-c.child "$name.out"; then
        check_fail "$name: the workloads did not start: $(head -n 3 "$name.err")"
        return 1
    fi
    RD=$(head -n 1 "$name.out")
    for ((p = 0; p < 100; p++)); do
        [ "$(grep -c '"role":"workload"' "$RD/processes.jsonl" 2>/dev/null)" = 3 ] && break
        sleep 0.05
    done
    [ "$(grep -c '"role":"workload"' "$RD/processes.jsonl" 2>/dev/null)" = 3 ] ||
        check_fail "$name: processes.jsonl does not name the 3 workloads"
    w=$(jsonl_get "$RD/processes.jsonl" supervisor cgroup)
    [ -n "$w" ] && echo "$w" >"$name.cg"
    sleep 0.3 # a few samples
    sup=$(jsonl_get "$RD/processes.jsonl" supervisor pid)
    s=$(jsonl_get "$RD/processes.jsonl" supervisor pid_start_ticks)
    if [ "$mode" = sup ]; then
        :
    elif [ -n "$sup" ] && [ "$(start_of "$sup")" = "$s" ]; then
        kill -KILL "$sup"
    else
        check_fail "$name: no live supervisor recorded in processes.jsonl ($sup, $s)"
    fi
    kill -KILL "$carma_pid"
    wait "$carma_pid" 2>/dev/null
    carma_pid=
    sleep 0.5
    [ "$mode" = sup ] && return 0
    for w in a b c; do
        p=$(pid_of "$name-$w.child")
        s=$(start_of "$p")
        [ -n "$s" ] || check_fail "$name: workload $w's child (pid $p) did not outlive carma"
        CHILDREN="$CHILDREN $p:$s"
    done
}

# ---------------------------------------------------------------- a crash, cleaned up
if crash k1; then
    check_grep "$RD/manifest.json" '"running"' "k1: the manifest before cleanup"
    # a row being written when carma died
    printf '%s' "$(tail -n 1 "$RD/samples.csv" | cut -c1-12)" >>"$RD/samples.csv"
    t0=$(date +%s.%N)
    "$CARMA" cleanup "$RD" --grace 1s >c1.out 2>c1.err
    check_rc c1 0 $?
    t1=$(date +%s.%N)
    for c in $CHILDREN; do
        alive "${c%:*}" "${c#*:}" && check_fail "k1: pid ${c%:*} still runs after carma cleanup"
    done
    # the main processes died with carma (PR_SET_PDEATHSIG): their children are left
    check_re c1.out '^a: stopped [0-9]+ process(es)? of (cgroup .*/a|process group [0-9]+) \(SIGTERM\)$' \
        "k1: workload a, said"
    check_re c1.out '^b: stopped [0-9]+ process(es)? of (cgroup .*/b|process group [0-9]+) \(SIGTERM\)$' \
        "k1: workload b, said"
    check_re c1.out '^c: stopped [0-9]+ process(es)? of .*\(SIGTERM, then SIGKILL after the grace period\)$' \
        "k1: workload c, deaf to SIGTERM, said"
    check_grep c1.out "samples.csv: its torn last row dropped" "k1: the torn row, said"
    check_grep c1.out "finished: status crashed" "k1: the directory finished, said"
    awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 10) }' ||
        check_fail "k1: cleanup took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s"
    [ -f "$(cat k1.cg 2>/dev/null)/cgroup.procs" ] && check_fail "k1: carma's cgroup is left"
    check_py "k1: every CSV holds whole rows; the manifest says crashed" '
d = sys.argv[1]
for name in sorted(os.listdir(d)):
    if not name.endswith(".csv"):
        continue
    data = open(os.path.join(d, name), "rb").read()
    assert not data or data.endswith(b"\n"), "%s ends with a torn row: %r" % (name, data[-40:])
    rows = list(csv.reader(io.StringIO(data.decode(), newline=""), strict=True))
    for k, r in enumerate(rows):
        assert len(r) == len(rows[0]), "%s:%d: %d fields, not %d" % (name, k + 1, len(r), len(rows[0]))
rows = csv_rows(d + "/samples.csv")
m = load(d + "/manifest.json")
assert m["status"] == "crashed", m["status"]
c = m["crash"]
assert abs(c["last_sample_unix"] - float(rows[-1][0])) < 1e-6, (c, rows[-1])
assert c["torn_rows_dropped"] >= 1, c
assert c["processes_stopped"] >= 3, c
r = load(d + "/report.json")
assert r["status"] == "crashed", r
assert r["windows"] and r["end_unix"] == c["last_sample_unix"], r
names = [w["name"] for w in load(d + "/workloads.json")["workloads"]]
assert names == ["a", "b", "c"], names
txt = open(d + "/report.txt").read()
assert "crashed" in txt, txt[:200]
' "$RD"
    "$CARMA" report "$RD" >rep1.out 2>rep1.err
    check_rc rep1 0 $?
    check_grep rep1.out 'manifest.json says "crashed": carma run was killed before it finished' \
        "k1: carma report says how the run ended"
    check_grep "$RD/report.txt" 'manifest.json says "crashed"' "k1: report.txt says it too"
    "$CARMA" cleanup "$RD" >c2.out 2>c2.err
    check_rc c2 0 $?
    check_grep c2.out "nothing left to do" "k1: a second cleanup"
fi

# ---------------------------------------------------------------- the supervisor did its part
# carma alone killed: its supervisor kills the workloads and names carma cleanup; cleanup has
# nothing to stop and finishes the directory
if crash k5 sup; then
    for ((i = 0; i < 100; i++)); do
        grep -q 'carma cleanup' k5.err && break
        sleep 0.05
    done
    check_grep k5.err "carma: to stop what is left and finish $RD: carma cleanup $RD" \
        "supervisor: carma cleanup named"
    "$CARMA" cleanup "$RD" --grace 1s >c7.out 2>c7.err
    check_rc c7 0 $?
    for w in a b c; do
        check_grep c7.out "$w: nothing left running" "supervisor: workload $w"
    done
    check_no_grep c7.out "stopped" "supervisor: nothing stopped"
    check_grep "$RD/manifest.json" '"crashed"' "supervisor: the manifest"
    [ -f "$RD/report.json" ] || check_fail "supervisor: no report.json"
fi

# ---------------------------------------------------------------- without cgroups
if [ "$have_nocg" = 1 ]; then
    if crash k4 nocg; then
        "$CARMA" cleanup "$RD" --grace 1s >c6.out 2>c6.err
        check_rc c6 0 $?
        for c in $CHILDREN; do
            alive "${c%:*}" "${c#*:}" && check_fail "nocg: pid ${c%:*} still runs after cleanup"
        done
        check_re c6.out '^a: stopped [0-9]+ process(es)? of process group [0-9]+ \(SIGTERM\)$' \
            "nocg: workload a, by its process group"
        check_grep "$RD/manifest.json" '"crashed"' "nocg: the manifest"
        "$CARMA" report "$RD" >rep4.out 2>rep4.err
        check_rc rep4 0 $?
    fi
else
    note "cannot hide cgroup v2 (unshare -m): cleanup without cgroups is not checked"
fi

# ---------------------------------------------------------------- a live carma: refused
rm -f k2-a.pid k2-a.child k2-b.pid k2-b.child
cat >live.json <<EOF
{"experiment_name": "live", "workloads": [
  {"name": "a", "script": "sh", "args": ["$here/sleeper.sh", "k2-a"], "cwd": "$here"}
], "monitoring": {"interval": "50ms", "baseline_s": 0}}
EOF
BG_NAME=live carma_bg -- run --root "$ROOT" -o runs-live --grace 1s live.json
carma_pid=$BG_PID
if wait_files 10 k2-a.child live.out; then
    rd=$(head -n 1 live.out)
    "$CARMA" cleanup "$rd" >c3.out 2>c3.err
    check_rc c3 2 $?
    check_grep c3.err "is still being written by carma (pid $carma_pid)" "live: refused, naming carma"
    check_grep "$rd/manifest.json" '"running"' "live: the manifest is left alone"
    p=$(pid_of k2-a.child)
    [ -n "$(start_of "$p")" ] || check_fail "live: cleanup stopped a live run's workload"
    kill -INT "$carma_pid"
    wait "$carma_pid"
    carma_pid=
    check_grep "$rd/manifest.json" '"interrupted"' "live: the run finished itself"
else
    check_fail "live: the workload did not start: $(head -n 3 live.err)"
fi

# ---------------------------------------------------------------- a reused pid
if crash k3; then
    sleep 120 &
    decoy=$!
    ds=$(start_of "$decoy")
    # workload a's record names the decoy's pid with another start time, and no cgroup
    "$PY" - "$RD/processes.jsonl" "$decoy" <<'EOF'
import json, sys
path, decoy = sys.argv[1], int(sys.argv[2])
out = []
for line in open(path):
    o = json.loads(line)
    if o.get("role") == "workload" and o["name"] == "a":
        o["pid"] = o["pgid"] = decoy
        o["pid_start_ticks"] += 1
        o["cgroup"] = o["cgroup_ino"] = None
    out.append(json.dumps(o) + "\n")
open(path, "w").write("".join(out))
EOF
    "$CARMA" cleanup "$RD" --grace 1s >c4.out 2>c4.err
    rc=$?
    alive "$decoy" "$ds" || check_fail "reused pid: the decoy (pid $decoy) was signalled"
    check_grep c4.out "a: pid $decoy now names another process (started at another time" \
        "reused pid: said"
    check_re c4.out '^b: stopped [0-9]+ process' "reused pid: workload b is stopped"
    for c in ${CHILDREN# * }; do # all but the first: b's and c's
        alive "${c%:*}" "${c#*:}" && check_fail "reused pid: pid ${c%:*} (b or c) still runs"
    done
    # workload a's child (its record no longer names it) is ended here; with a cgroup, carma's
    # cgroup is then still busy: exit 1, said
    p=$(pid_of k3-a.child)
    if [ -s k3.cg ]; then
        check_eq "$rc" 1 "reused pid: exit status with carma's cgroup still holding a process"
    else
        check_rc c4 0 "$rc"
    fi
    kill -KILL "$p" 2>/dev/null
    g=$(pid_of k3-a.pid)
    [ -n "$g" ] && kill -KILL -- "-$g" 2>/dev/null
    if [ -s k3.cg ]; then
        while read -r p; do kill -KILL "$p"; done 2>/dev/null <"$(cat k3.cg)/a/cgroup.procs"
    fi
    kill -KILL "$decoy" 2>/dev/null
    wait "$decoy" 2>/dev/null
    decoy=
    sleep 0.2
    "$CARMA" cleanup "$RD" >c5.out 2>c5.err
    check_rc c5 0 $?
fi

cli_done
