#!/usr/bin/env bash
# Marks (docs/formats.md, "Marks"): windows of a program that carma stat -o DIR and carma run
# measure, through `carma mark` and libcarma (carma.h), on fixture trees:
#   1. carma stat on the grace fixture (291.25 W, steady): begin/end with counts, nested and
#      overlapping windows, a name repeated (end closes the most recent), an event, a window
#      around a command (its exit status passed on), an unknown end (exit 1, carma's
#      message), a window never ended (marks.csv "unended", carma says so); the socket mode
#      0600 and absolute, gone after the run; marks.csv's rows; `carma report DIR`: a window
#      per mark, the node's energy 291.25 W x its length, the `end` reply's figure the same
#      within 2 %, a short window warned about;
#   2. marks off: no CARMA_SOCKET (exit 0, one line saying why; the command still runs), a
#      socket that refuses (connection refused named); usage errors exit 2;
#   3. a run directory whose path is too long for a socket address: the socket in /tmp, a
#      link in the directory, marks work;
#   4. libcarma from a C program (cc ... -lcarma): begin, end with its energy, an event;
#   5. carma stat on a live tree animated by the simulated plant: a busy window (one core
#      spinning), an idle one and one around both: each window's energy per channel within 2 %
#      of the plant's truth over the window;
#   6. carma run, two workloads each marking its own windows: marks.csv names each window's
#      workload, the report's mark windows carry it and the job's energy, which adds up with the
#      other jobs', idle and the rest to the node's;
#   7. the Python module (python/carma) against carma stat: a window around a pool of forked
#      workers, each marking its own windows over its own connection (its pid in marks.csv),
#      the window's energy in w.energy;
#   8. carma collect of an exporter on loopback: a mark sent to the collect directory's socket
#      (a head node's benchmark driver) is a window of the collect report, with its tokens.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

GRACE="$CARMA_FIXTURES/grace"
LIBDIR="$CARMA_BUILD/libcarma"
need_file "$GRACE" "$CARMA_SRC/libcarma/carma.h" "$PLANT" "$BUSY"
here=$PWD

# ---------------------------------------------------------------- 1. carma stat, grace
cat >marks1.sh <<EOF
set -u
M="$CARMA mark"
echo "\$CARMA_SOCKET" >sock.path
stat -c %a "\$CARMA_SOCKET" >sock.mode
\$M begin outer --tokens 7 -q
\$M begin inner -q
sleep 0.3
\$M end inner --json >inner.json
\$M begin ep -q
\$M begin ep -q
\$M end ep -q
\$M event loss 0.25
sleep 0.2
\$M end ep --requests 3 >ep.txt
\$M w -- sh -c 'sleep 0.2; exit 3'
echo "around=\$?" >around.rc
\$M end nothere 2>nothere.err
echo "nothere=\$?" >nothere.rc
\$M end outer --tokens 70 >outer.txt
\$M begin short -q
\$M end short -q
\$M begin left -q
EOF
rc=$(run_logged s1 "$CARMA" stat --root "$GRACE" --interval 50ms -o d1 -- bash marks1.sh)
check_rc s1 0 "$rc"
check_grep s1.err "1 window still open at the end (marks.csv: unended)" "stat: the unended window said"
check_eq "$(cat sock.mode)" 600 "socket mode"
check_eq "$(cat sock.path)" "$here/d1/carma.sock" "CARMA_SOCKET is absolute, in the run directory"
[ -e d1/carma.sock ] && check_fail "the socket is left after the run"
check_eq "$(cat around.rc)" "around=3" "mark NAME -- CMD: the command's exit status"
check_eq "$(cat nothere.rc)" "nothere=1" "end of no open window: exit 1"
check_grep nothere.err "carma: mark: end nothere: no open window 'nothere'" "end of no open window: said"
check_py "marks.csv: every mark, in order, with ids, pids, the job" '
rows = list(csv.DictReader(open("d1/marks.csv", newline="")))
ev = [(r["event"], r["id"], r["name"]) for r in rows]
want = [("begin", "1", "outer"), ("begin", "2", "inner"), ("end", "2", "inner"),
        ("begin", "3", "ep"), ("begin", "4", "ep"), ("end", "4", "ep"), ("event", "", "loss"),
        ("end", "3", "ep"), ("begin", "5", "w"), ("end", "5", "w"), ("end", "1", "outer"),
        ("begin", "6", "short"), ("end", "6", "short"), ("begin", "7", "left"),
        ("unended", "7", "left")]
assert ev == want, ev
assert all(r["schema_version"] == "1" for r in rows)
assert all(r["workload"] == "cmd" and int(r["pid"]) > 0 for r in rows if r["event"] != "unended"), rows
b = {r["name"]: r for r in rows if r["event"] == "begin"}
assert b["outer"]["tokens"] == "7" and b["inner"]["tokens"] == "", b
e = [r for r in rows if r["event"] == "end" and r["name"] == "outer"][0]
assert e["tokens"] == "70", e
assert [r["value"] for r in rows if r["event"] == "event"] == ["0.25"], rows
ts = [float(r["timestamp_unix"]) for r in rows]
assert ts == sorted(ts), ts
'
rc=$(run_logged rep1 "$CARMA" report d1 --format json)
check_rc rep1 0 "$rc"
check_py "report: a window per mark, the node at 291.25 W, the end reply within 2 %" '
j = json.load(open("rep1.out"))
marks = [w for w in j if w["window"] == "mark"]
assert [w["name"] for w in marks] == ["outer", "inner", "ep", "ep", "w", "short", "left"], [w["name"] for w in marks]
for w in marks:
    d = w["end_unix"] - w["start_unix"]
    assert abs(w["node_total_joules"] - 291.25 * d) <= 0.01 * 291.25 * d + 1e-6, (w["name"], w["node_total_joules"], d)
    assert w["workload"] == "cmd" and w["pid"] > 0, w
o = marks[0]
assert o["tokens"] == 70 and abs(o["joules_per_token"] - o["node_total_joules"] / 70) < 1e-9, o
assert o["unended"] is False and marks[-1]["unended"] is True, marks[-1]
assert any("never ended" in x for x in marks[-1]["warnings"]), marks[-1]["warnings"]
assert any("shorter than two sampling intervals" in x for x in marks[5]["warnings"]), marks[5]["warnings"]
assert 0 <= o["interpolated_fraction"] < 0.2, o["interpolated_fraction"]
inner = json.load(open("inner.json"))
w = marks[1]
assert inner["name"] == "inner" and inner["id"] == 2 and inner["method"] == "measured", inner
assert abs(inner["t0"] - w["start_unix"]) < 1e-6 and abs(inner["t1"] - w["end_unix"]) < 1e-6, inner
assert abs(inner["energy_j"] - w["node_total_joules"]) <= 0.02 * w["node_total_joules"], (inner, w["node_total_joules"])
run = [w for w in j if w["window"] == "run"][0]
assert [(x["name"], x["value"]) for x in run["events"]] == [("loss", 0.25)], run["events"]
'
check_re ep.txt '^ep: [0-9.]+ J over 0\.[0-9]+ s \(measured, cpu [0-9.]+ J\)$' "end: the energy line"
rc=$(run_logged rep1t "$CARMA" report d1)
check_rc rep1t 0 "$rc"
check_grep rep1t.out "[mark outer] window=" "report text: the mark window"
check_grep rep1t.out "marked by workload cmd" "report text: who marked it"
check_grep rep1t.out "tokens=70: " "report text: the tokens"
check_grep rep1t.out "event loss at " "report text: the event"

# ---------------------------------------------------------------- 2. marks off, usage
rc=$(run_logged off1 env -u CARMA_SOCKET "$CARMA" mark begin x)
check_rc off1 0 "$rc"
check_eq "$(cat off1.err)" "carma: marks off: CARMA_SOCKET is not set (run the program under carma run or carma stat -o DIR)" "marks off: one line"
rc=$(run_logged off2 env -u CARMA_SOCKET "$CARMA" mark x -- sh -c 'echo ran; exit 4')
check_rc off2 4 "$rc"
check_eq "$(cat off2.out)" ran "marks off: the command still runs"
rc=$(run_logged off3 env CARMA_SOCKET="$here/nothing.sock" "$CARMA" mark end x)
check_rc off3 0 "$rc"
check_grep off3.err "cannot connect to $here/nothing.sock: No such file or directory" "a socket that is not there"
for bad in "" "begin" "end a b" "event x notanumber" "begin x --tokens -1" "x --"; do
    # shellcheck disable=SC2086 # the words are meant to split
    rc=$(run_logged usage env CARMA_SOCKET= "$CARMA" mark $bad)
    check_rc usage 2 "$rc"
done
rc=$(run_logged help "$CARMA" mark --help)
check_rc help 0 "$rc"
check_grep help.out "usage: carma mark begin NAME" "mark --help"

# ---------------------------------------------------------------- 3. a long directory path
long=$here/$(printf 'd%.0s' {1..60})/$(printf 'e%.0s' {1..60})
mkdir -p "$(dirname "$long")"
rc=$(run_logged s3 "$CARMA" stat --root "$GRACE" --interval 50ms -o "$long" -q -- \
    sh -c '[ -S "$CARMA_SOCKET" ] && echo "$CARMA_SOCKET" >sock3.path;
           [ -L "$(dirname "$CARMA_SOCKET")/x" ]; '"$CARMA"' mark l -- sleep 0.1')
check_rc s3 0 "$rc"
case $(cat sock3.path 2>/dev/null) in
/tmp/carma-*/carma.sock | "${TMPDIR:-/tmp}"/carma-*/carma.sock) ;;
*) check_fail "long path: the socket is not in a private directory of /tmp: $(cat sock3.path 2>&1)" ;;
esac
check_eq "$(grep -c ',end,' "$long/marks.csv")" 1 "long path: the window was recorded"
[ -e "$(cat sock3.path 2>/dev/null)" ] && check_fail "long path: the socket is left"
[ -L "$long/carma.sock" ] && check_fail "long path: the link is left"

# --socket-group: the socket 0660 for the group (and its private directory 0710 when the path
# is long); a group that does not exist is a usage error
rc=$(run_logged s3g "$CARMA" stat --root "$GRACE" --interval 50ms -o "$long-g" -q --socket-group daemon -- \
    sh -c 'stat -c "%a %G" "$CARMA_SOCKET" >sock3g.mode; stat -c "%a %G" "$(dirname "$CARMA_SOCKET")" >>sock3g.mode')
check_rc s3g 0 "$rc"
check_eq "$(head -n 1 sock3g.mode)" "660 daemon" "--socket-group: the socket's mode and group"
check_eq "$(sed -n 2p sock3g.mode)" "710 daemon" "--socket-group: its private directory's"
rc=$(run_logged s3b "$CARMA" stat --socket-group no-such-group-x -- true)
check_rc s3b 2 "$rc"
check_grep s3b.err "carma: stat: --socket-group: no group 'no-such-group-x'" "--socket-group: a bad group"

# ---------------------------------------------------------------- 4. libcarma from C
if command -v cc >/dev/null && [ -e "$LIBDIR/libcarma.so" ]; then
    cat >prog.c <<'EOF'
#include <carma.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    long long id = carma_begin("c-step", 12, -1);
    usleep(200000);
    struct carma_energy e;
    int r = carma_end("c-step", -1, 2, &e);
    int ev = carma_event("c-loss", 1.5);
    int bad = carma_end("nope", -1, -1, NULL);
    printf("id=%lld r=%d ev=%d bad=%d err=%s j=%.3f dt=%.3f method=%s\n", id, r, ev, bad,
           carma_last_error(), e.energy_j, e.t1 - e.t0, e.method);
    return 0;
}
EOF
    # a sanitized build's libcarma needs the program built with the same runtime first
    san=()
    [ -n "${CARMA_TEST_SANITIZED:-}" ] && san=(-fsanitize=address,undefined)
    cc "${san[@]}" -I"$CARMA_SRC/libcarma" prog.c -L"$LIBDIR" -lcarma -Wl,-rpath,"$LIBDIR" \
        -o prog 2>cc.err ||
        check_fail "cc prog.c -lcarma: $(cat cc.err)"
    rc=$(run_logged s4 "$CARMA" stat --root "$GRACE" --interval 50ms -o d4 -q -- ./prog)
    check_rc s4 0 "$rc"
    check_py "libcarma: begin, end with the energy, an event, an unknown end" '
line = open("s4.out").read().split()
kv = dict(x.split("=", 1) for x in line if "=" in x)
assert kv["id"] == "1" and kv["r"] == "0" and kv["ev"] == "0" and kv["bad"] == "-2", kv
assert kv["method"] == "measured" and 0.19 < float(kv["dt"]) < 0.5, kv
assert abs(float(kv["j"]) - 291.25 * float(kv["dt"])) < 0.02 * 291.25 * float(kv["dt"]), kv
rows = list(csv.DictReader(open("d4/marks.csv", newline="")))
assert [(r["event"], r["name"], r["tokens"], r["requests"]) for r in rows] == [
    ("begin", "c-step", "12", ""), ("end", "c-step", "12", "2"), ("event", "c-loss", "", "")], rows
'
    # carma_begin_nowait: the window's id comes with its end; a begin that carma refuses (4096
    # windows open) is told by the end of its name, which closes no other window of the name
    cat >fast.c <<'EOF'
#include <carma.h>
#include <stdio.h>
int main(void)
{
    struct carma_energy e;
    int b = carma_begin_nowait("fast", -1, -1);
    int r = carma_end("fast", -1, -1, &e);
    printf("b=%d r=%d id=%llu method=%s\n", b, r, e.id, e.method);
    carma_begin_nowait("over", -1, -1); /* the real one */
    for (int k = 1; k < 4096; k++)
        if (carma_begin_nowait("fill", -1, -1) != 0)
            return 1;
    int b2 = carma_begin_nowait("over", -1, -1); /* the 4097th: refused */
    int r2 = carma_end("over", -1, -1, &e);
    printf("b2=%d r2=%d err=%s\n", b2, r2, carma_last_error());
    int r3 = carma_end("over", -1, -1, &e);
    printf("r3=%d id3=%llu\n", r3, e.id);
    int r4 = carma_end_nowait("over", -1, -1); /* nothing of that name is open any more */
    int r5 = carma_begin_nowait("late", -1, -1);
    int r6 = carma_end_nowait("late", -1, -1);
    carma_event("sync", 1); /* waits: the answers before it are read */
    printf("r4=%d r5=%d r6=%d err=%s\n", r4, r5, r6, carma_last_error());
    return 0;
}
EOF
    cc "${san[@]}" -I"$CARMA_SRC/libcarma" fast.c -L"$LIBDIR" -lcarma -Wl,-rpath,"$LIBDIR" \
        -o fast 2>cc.err ||
        check_fail "cc fast.c -lcarma: $(cat cc.err)"
    rc=$(run_logged s4f "$CARMA" stat --root "$GRACE" --interval 50ms -o d4f -q -- ./fast)
    check_rc s4f 0 "$rc"
    check_grep s4f.out "b=0 r=0 id=1 method=measured" "libcarma: begin_nowait, then end with the id"
    check_grep s4f.out "b2=0 r2=-22 err=begin over was refused: begin: 4096 windows are open already" \
        "libcarma: a refused begin_nowait told by its end"
    check_grep s4f.out "r3=0 id3=2" "libcarma: the refused begin's end closed no other window"
    check_grep s4f.out "r4=0 r5=0 r6=0 err=end over: no open window 'over'" \
        "libcarma: end_nowait, its refusal told by a later call that waits"
    check_eq "$(grep -c ',unended,' d4f/marks.csv)" 4095 "libcarma: the fill windows left open"
    check_eq "$(grep -c ',late,' d4f/marks.csv)" 2 "libcarma: the nowait window's begin and end recorded"
    rc=$(run_logged off4 env -u CARMA_SOCKET ./prog)
    check_rc off4 0 "$rc"
    check_grep off4.out "id=0 r=1 ev=1 bad=1 " "libcarma without carma: no-ops (0, CARMA_OFF)"
    check_eq "$(grep -c 'marks off' off4.err)" 1 "libcarma without carma: said once"
else
    note "no cc or no $LIBDIR/libcarma.so: the C library is not tried"
fi

# ---------------------------------------------------------------- 5. the plant: energy truth
# The plant's power follows this machine's whole CPU load: another program's burst inside a
# window is in the truth and in carma's figure alike, but a burst across a window's edge is
# cut at carma's tick (10 ms) and the plant's (5 ms) differently. A miss is tried again, up
# to three times.
cat >truth_check.py <<'EOF'
import bisect, csv, json, sys
rows = list(csv.reader(open("truth.csv")))
head, body = rows[0], [[float(x) for x in r] for r in rows[1:]]
ts = [r[0] for r in body]
def truth(name, t):
    c = head.index(name + "_j")
    i = bisect.bisect_left(ts, t)
    assert 0 < i < len(ts), (name, t)
    t0, t1 = ts[i - 1], ts[i]
    return body[i - 1][c] + (body[i][c] - body[i - 1][c]) * (t - t0) / (t1 - t0)
j = json.load(open("rep5.out"))
marks = {w["name"]: w for w in j if w["window"] == "mark"}
assert set(marks) == {"both", "busy", "idle"}, list(marks)
checked, bad = 0, []
for name, w in marks.items():
    a, b = w["start_unix"], w["end_unix"]
    for ch in w["per_channel"]:
        p = ch["label"].split("/")[-1]
        if p not in ("package-0", "package-1"):
            continue
        want = truth(p, b) - truth(p, a)
        got = ch["joules"]
        print("# %s %s: %.3f J vs truth %.3f J (%+.2f%%)" % (name, p, got, want, 100 * (got - want) / want))
        if abs(got - want) > 0.02 * want:
            bad.append((name, p))
        checked += 1
assert checked == 6, checked
busy, idle = marks["busy"], marks["idle"]
assert busy["node_total_joules"] / (busy["end_unix"] - busy["start_unix"]) > idle["node_total_joules"] / (idle["end_unix"] - idle["start_unix"]), (busy, idle)
assert not bad, "beyond 2 %%: %r" % bad
EOF
cat >marks5.sh <<EOF
$CARMA mark begin both -q
$CARMA mark busy -q -- $BUSY 1.5
$CARMA mark idle -q -- sleep 1
$CARMA mark end both -q
EOF
ok=0
for attempt in 1 2 3; do
    rm -rf live d5 truth.csv
    live_tree intel-2s live
    start_plant live "$PLANT_CONFIGS/intel-2s.conf" truth.csv --period 5ms --duration 120
    rc=$(run_logged s5 "$CARMA" stat --root live --interval 10ms -o d5 -q -- bash marks5.sh)
    check_rc s5 0 "$rc"
    rc=$(run_logged rep5 "$CARMA" report d5 --format json)
    check_rc rep5 0 "$rc"
    stop_plant
    "$PY" truth_check.py >truth_check.out 2>&1 && ok=1
    sed 's/^/    /' truth_check.out
    [ "$ok" = 1 ] && break
    note "plant: attempt $attempt missed"
done
[ "$ok" = 1 ] ||
    check_fail "plant: a mark window's energy is not within 2 % of the truth (3 attempts; above)"

# ---------------------------------------------------------------- 6. carma run, two jobs
cat >job.sh <<EOF
$CARMA mark begin "\$1-all" -q
$CARMA mark "\$1-step" --tokens 5 -q -- sleep 0.3
$CARMA mark end "\$1-all" -q
EOF
cat >x6.json <<EOF
{"experiment_name": "marks", "workloads": [
 {"name": "a", "launch": "shell", "script": "$here/job.sh", "args": ["a"]},
 {"name": "b", "launch": "shell", "script": "$here/job.sh", "args": ["b"], "delay_s": 0.2}],
 "monitoring": {"interval": "50ms", "baseline_s": 0.2}}
EOF
rc=$(run_logged r6 "$CARMA" run x6.json --root "$GRACE" -q -o runs6)
check_rc r6 0 "$rc"
rd=$(head -n 1 r6.out)
check_py "carma run: each window names its workload, the job's energy adds up" '
rows = list(csv.DictReader(open(sys.argv[1] + "/marks.csv", newline="")))
assert {(r["name"], r["workload"]) for r in rows} == {("a-all", "a"), ("a-step", "a"), ("b-all", "b"), ("b-step", "b")}, rows
j = load(sys.argv[1] + "/report.json") if False else None
' "$rd"
rc=$(run_logged rep6 "$CARMA" report "$rd" --format json)
check_rc rep6 0 "$rc"
check_py "carma run report: the mark windows carry the workload and its energy" '
j = json.load(open("rep6.out"))
marks = [w for w in j if w["window"] == "mark"]
assert sorted(w["name"] for w in marks) == ["a-all", "a-step", "b-all", "b-step"], marks
for w in marks:
    assert w["workload"] == w["name"][0], w
    total = w["job_joules"] + w["other_jobs_joules"] + w["idle_joules"] + w["other_joules"] + w["unattributed_joules"]
    assert abs(total - w["node_total_joules"]) <= 1e-6 * max(1, w["node_total_joules"]), (w["name"], total, w["node_total_joules"])
    assert w["tokens"] == (5 if w["name"].endswith("step") else None), w
# every window: the jobs and the rests add up to the node (the rests give back what the
# workloads lifetime rule moves across an edge)
for w in j:
    parts = sum(x["joules"] for x in w["jobs"]) + w["idle_joules"] + w["other_joules"] + w["unattributed_joules"]
    assert abs(parts - w["node_total_joules"]) <= 1e-5 + 1e-6 * w["node_total_joules"], (w["window"], w["name"], parts, w["node_total_joules"])
'
# ---------------------------------------------------------------- 7. the Python module
cat >py7.py <<'EOF'
import json, multiprocessing, os, time
import carma

def work(i):
    with carma.window("shard-%d" % i):
        time.sleep(0.1)
    return os.getpid()

if __name__ == "__main__":
    with carma.window("all", tokens=9) as w:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            pids = pool.map(work, range(4))
    e = w.energy
    print(json.dumps({"pids": sorted(set(pids)), "me": os.getpid(), "id": e.id,
                      "energy_j": e.energy_j, "dt": e.t1 - e.t0, "method": e.method}))
EOF
rc=$(run_logged s7 env PYTHONPATH="$CARMA_SRC/python" "$CARMA" stat --root "$GRACE" \
    --interval 50ms -o d7 -q -- "$PY" py7.py)
check_rc s7 0 "$rc"
check_py "Python: a window around a pool, each worker its own connection and pid" '
out = json.loads(open("s7.out").read())
rows = list(csv.DictReader(open("d7/marks.csv", newline="")))
names = sorted(r["name"] for r in rows if r["event"] == "end")
assert names == ["all", "shard-0", "shard-1", "shard-2", "shard-3"], names
wpids = {int(r["pid"]) for r in rows if r["name"].startswith("shard")}
assert wpids == set(out["pids"]) and out["me"] not in wpids, (wpids, out)
assert all(r["workload"] == "cmd" for r in rows), rows
assert [r["tokens"] for r in rows if r["name"] == "all"] == ["9", "9"], rows
assert out["id"] == 1 and out["method"] == "measured", out
assert abs(out["energy_j"] - 291.25 * out["dt"]) <= 0.02 * 291.25 * out["dt"], out
'
# ---------------------------------------------------------------- 8. carma collect: a head node's marks
# shellcheck source=tests/integration/exporter_lib.sh
. "$CARMA_SRC/tests/integration/exporter_lib.sh"
start_exporter exp8 --root "$GRACE" --interval 100ms
"$CARMA" collect --target "$EXP_URL" -o c8 --duration 3s --interval 100ms -q >c8.out 2>c8.err &
c8_pid=$!
for ((i = 0; i < 100; i++)); do
    [ -S c8/carma.sock ] && break
    sleep 0.05
done
sleep 0.5
rc=$(run_logged m8 env CARMA_SOCKET="$here/c8/carma.sock" "$CARMA" mark bench --tokens 600 -- sleep 1)
check_rc m8 0 "$rc"
wait "$c8_pid" || check_fail "carma collect: $(cat c8.err)"
kill -TERM "$EXP_PID" 2>/dev/null
rc=$(run_logged rep8 "$CARMA" report c8 --format json)
check_rc rep8 0 "$rc"
check_py "carma collect: the head node's mark is a window of the collect report" '
j = json.load(open("rep8.out"))
w = {x["name"]: x for x in j["windows"]}
assert "bench" in w, list(w)
b = w["bench"]
assert b["source"] == "mark" and b["tokens"] == 600, b
assert 0.9 < b["end_unix"] - b["start_unix"] < 1.5, b
e = sum(n["energy_j"] for n in b["nodes"])
assert abs(e - 291.25 * (b["end_unix"] - b["start_unix"])) < 0.03 * e, (e, b["end_unix"] - b["start_unix"])
rows = list(csv.DictReader(open("c8/marks.csv", newline="")))
assert [(r["event"], r["name"]) for r in rows] == [("begin", "bench"), ("end", "bench")], rows
'
[ -e c8/carma.sock ] && check_fail "carma collect: the socket is left"

# ---------------------------------------------------------------- 9. collocated GPU jobs: truth
# Two workloads on one fake GPU (100 W idle, 500 W at 100 % SM), each marking its own windows
# around its fake GPU clients (carma-gpujob: sm 60 and 30, overlapping). The truth of a job in
# a window is its clients' dynamic energy there, (500 - 100) / 100 x sm x the overlap (the
# idle power is "idle", no job's): the window's job_joules within 2 % of its own clients', and
# other_jobs_joules within 2 % (+ one tick) of the other job's clients' in the window.
GPUJOB="$CARMA_BUILD/tests/fakes/carma-gpujob"
NVML="$CARMA_BUILD/tests/fakes/libfake-nvml.so"
if [ -x "$GPUJOB" ] && [ -e "$NVML" ]; then
    mkdir -p clients9
    cat >gjob.sh <<EOF
# NAME SM DELAY: a window around a first client, another around a second
sleep \$3
$CARMA mark begin "\$1-one" -q
$GPUJOB --device 0 --sm \$2 --tag "\$1-1" 2.0
$CARMA mark end "\$1-one" -q
$CARMA mark "\$1-two" -q -- $GPUJOB --device 0 --sm \$2 --tag "\$1-2" 1.2
EOF
    cat >x9.json <<EOF
{"experiment_name": "gpu-marks", "workloads": [
 {"name": "a", "launch": "shell", "script": "$here/gjob.sh", "args": ["a", "60", "0"], "gpu": 0},
 {"name": "b", "launch": "shell", "script": "$here/gjob.sh", "args": ["b", "30", "0.8"], "gpu": 0}],
 "attribution": {"idle_policy": "idle"}}
EOF
    rc=$(run_logged r9 env CARMA_NVML_LIBRARY="$NVML" \
        CARMA_FAKE_NVML_SCENARIO="$CARMA_SRC/tests/fakes/nvml/shared.scenario" \
        CARMA_FAKE_NVML_CLIENTS="$here/clients9" "$CARMA" run --root "$CARMA_FIXTURES/vm-empty" \
        --sources nvml --interval 20ms --baseline 0.3s -q -o runs9 x9.json)
    check_rc r9 0 "$rc"
    rd9=$(head -n 1 r9.out)
    rc=$(run_logged rep9 "$CARMA" report "$rd9" --format json)
    check_rc rep9 0 "$rc"
    check_py "collocated GPU jobs: each mark window's job and other-job energy against the truth" '
import glob, time
off = time.time() - time.monotonic()  # the clients are stamped on CLOCK_MONOTONIC
clients = []
for p in glob.glob("clients9/[0-9]*"):
    f = dict(x.split("=", 1) for x in open(p).read().split())
    clients.append((f["tag"][0], float(f["sm"]), float(f["start"]) + off, float(f["end"]) + off))
assert len(clients) == 4 and all(c[3] > c[2] for c in clients), clients
k = (500 - 100) / 100.0
def truth(job, t0, t1, mine):
    return sum(k * sm * max(0.0, min(t1, e) - max(t0, s))
               for (tag, sm, s, e) in clients if (tag == job) == mine)
marks = [w for w in json.load(open("rep9.out")) if w["window"] == "mark"]
assert sorted(w["name"] for w in marks) == ["a-one", "a-two", "b-one", "b-two"], marks
overlap = 0
for w in marks:
    job, t0, t1 = w["workload"], w["start_unix"], w["end_unix"]
    assert job == w["name"][0], w
    mine, other = truth(job, t0, t1, True), truth(job, t0, t1, False)
    err = 100 * (w["job_joules"] - mine) / mine
    print("# %s: job %.2f J, truth %.2f J (%+.2f %%); other jobs %.2f J, truth %.2f J"
          % (w["name"], w["job_joules"], mine, err, w["other_jobs_joules"], other))
    assert abs(err) <= 2.0, (w["name"], w["job_joules"], mine)
    tick = k * 90 * 0.02
    assert abs(w["other_jobs_joules"] - other) <= 0.02 * other + tick, (w["name"], w["other_jobs_joules"], other)
    overlap += other > 0
assert overlap >= 2, "the jobs did not overlap: nothing collocated was checked"
'
else
    note "no carma-gpujob or fake NVML built: the collocated GPU case is not run"
fi

# ---------------------------------------------------------------- 10. carma exporter --marks-dir
# the exporter's marks: the end's energy (291.25 W on grace), marks.csv, the metrics' counts
start_exporter exp10 --root "$GRACE" --interval 50ms --marks-dir m10
grep -q "carma: exporter: marks on $here/m10/carma.sock" exp10.err ||
    check_fail "exporter: the marks socket not said: $(cat exp10.err)"
rc=$(run_logged m10 env CARMA_SOCKET="$here/m10/carma.sock" "$CARMA" mark --json w10 -- sleep 0.4)
check_rc m10 0 "$rc"
CARMA_SOCKET="$here/m10/carma.sock" "$CARMA" mark begin open10 -q
CARMA_SOCKET="$here/m10/carma.sock" "$CARMA" mark event loss 0.5 -q
sleep 0.2
curl -s "$EXP_URL/metrics" >m10.prom
check_grep m10.prom "carma_marks_open 1" "exporter: carma_marks_open"
check_grep m10.prom "carma_mark_windows_total 1" "exporter: carma_mark_windows_total"
check_grep m10.prom "carma_mark_events_total 1" "exporter: carma_mark_events_total"
kill -TERM "$EXP_PID"
wait "$EXP_PID" || check_fail "exporter --marks-dir: exit status $?: $(cat exp10.err)"
check_grep exp10.err "1 window still open at the end (marks.csv: unended)" "exporter: the open window said"
[ -e m10/carma.sock ] && check_fail "exporter: the socket is left"
check_py "exporter --marks-dir: the end's energy and marks.csv" '
e = json.load(open("m10.out"))
dt = e["t1"] - e["t0"]
assert 0.39 < dt < 1.0 and abs(e["energy_j"] - 291.25 * dt) < 0.05 * 291.25 * dt, e
rows = list(csv.DictReader(open("m10/marks.csv", newline="")))
assert [(r["event"], r["name"]) for r in rows] == [("begin", "w10"), ("end", "w10"), ("begin", "open10"), ("event", "loss"), ("unended", "open10")], rows
'
"$CARMA" exporter --socket-group daemon >sg.out 2>sg.err
check_eq "$?" 2 "exporter: --socket-group without --marks-dir"
check_grep sg.err "exporter: --socket-group goes with --marks-dir" "exporter: --socket-group alone said"

cli_done
