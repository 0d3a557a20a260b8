#!/usr/bin/env bash
# carma record: srt-slurm's host collector on fixture roots, stopped by SIGTERM; checks:
#   - grace (ACPI with the Grace socket totals), schema 3: the header, every row whole (CRLF,
#     14 cells), each cycle's rows in sensor-name order, the sensors' watts from the fixture
#     files (the first sensor of each (socket, kind)), total_power_w = the two totals,
#     timestamp_local in the zone's offset and equal to timestamp_unix, the absolute clock (no
#     drift), blank utilization; metadata.json (reader metadata, counts, status complete),
#     ready.json, exit 0; the carma/<host>/ recording read by `carma report`;
#   - schema 4 (one row per socket with its rails), --carma-dir, --source acpi;
#   - a root with the other naming of the totals only ("Total Power socket N", "Total Power in
#     uW socket N");
#   - ACPI without a socket total, and a root with no source: error.json, exit 2, no CSV;
#   - readings that never parse: exit 3, status failed, read failures counted;
#   - DCGM through the fake libdcgm: CPU<n>:cpuPowerUsageW with the scenario's watts and
#     utilization, carma's recording with the GPUs;
#   - the host name: $SLURMD_NODENAME, else the short host name; bad options: exit 2.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib.sh"

GRACE="$CARMA_FIXTURES/grace"
FAKE_DCGM="${CARMA_FAKE_DCGM:-$CARMA_BUILD/tests/fakes/libdcgm.so.4}"
SCENARIO="$CARMA_SRC/tests/fakes/dcgm/grace.scenario"
need_file "$GRACE" "$FAKE_DCGM" "$SCENARIO"
export TZ="PST8PDT,M3.2.0,M11.1.0"

# record NAME SECONDS ARGS...: runs carma record in the background, waits for a marker in
# NAME/ready, lets it run SECONDS, sends SIGTERM; sets RC.
record() {
    local name=$1 secs=$2 i pid
    shift 2
    "$CARMA" record --output-dir "$name/nodes" --ready-dir "$name/ready" "$@" \
        >"$name.out" 2>"$name.err" &
    pid=$!
    _cleanup_pids+=("$pid")
    for ((i = 0; i < 500; i++)); do
        compgen -G "$name/ready/*.json" >/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.01
    done
    kill -0 "$pid" 2>/dev/null && sleep "$secs"
    kill -TERM "$pid" 2>/dev/null
    RC=0
    wait "$pid" || RC=$?
}

# check_csv NAME HOST SCHEMA SOURCE EXPECT_JSON: the per-node files against the expectations
# ({sensor: watts}, "total": watts, "util": {sensor: [5 cells]}).
check_csv() {
    "$PY" - "$@" <<'EOF' || fail "$1: the srt-slurm files are wrong (see above)"
import csv, json, sys
from datetime import datetime
name, host, schema, source, expect = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], json.loads(sys.argv[5])
H3 = "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq"
H4 = "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq"
raw = open(f"{name}/nodes/{host}.csv", "rb").read()
def bad(msg):
    print(f"{name}: {msg}", file=sys.stderr); sys.exit(1)
if not raw.endswith(b"\r\n"): bad("the file does not end in a whole row")
lines = raw.decode().split("\r\n")[:-1]
if lines[0] != (H3 if schema == 3 else H4): bad(f"header {lines[0]!r}")
rows = list(csv.reader(lines[1:]))
if not rows: bad("no row")
width = len(lines[0].split(","))
cycles = {}
for r in rows:
    if len(r) != width: bad(f"row of {len(r)} cells: {r}")
    if r[0] != str(schema) or r[3] != host or r[4] != source: bad(f"row {r}")
    cycles.setdefault(r[1], []).append(r)
    t = float(r[1])
    loc = datetime.fromisoformat(r[2])
    if abs(loc.timestamp() - t) > 1e-6: bad(f"timestamp_local {r[2]} is not {r[1]}")
    if loc.utcoffset() != datetime.fromtimestamp(t).astimezone().utcoffset(): bad(f"offset of {r[2]}")
    if datetime.fromtimestamp(t).astimezone().isoformat() != r[2]: bad(f"{r[2]} is not Python's isoformat")
sensors = sorted(k for k in expect if ":" in k)
times = sorted(cycles, key=float)
for ts in times:
    got = [r[5] for r in cycles[ts]]
    if got != sensors: bad(f"cycle {ts}: sensors {got}, expected {sensors}")
    for r in cycles[ts]:
        if abs(float(r[7]) - expect[r[5]]) > 1e-6: bad(f"{r[5]}: {r[7]} W, expected {expect[r[5]]}")
        if r[6] != r[5][3:r[5].index(":")]: bad(f"socket_id {r[6]} of {r[5]}")
        tot = r[8] if schema == 3 else r[11]
        if abs(float(tot) - expect["total"]) > 1e-6: bad(f"total_power_w {tot}")
        util = r[9:14] if schema == 3 else r[12:17]
        if util != expect.get("util", {}).get(r[5], [""] * 5): bad(f"utilization {util} of {r[5]}")
        if schema == 4:
            for col, key in ((8, "cpu_rail"), (9, "soc"), (10, "dram")):
                want = expect.get("rails", {}).get(r[5], {}).get(key)
                if (r[col] == "") != (want is None) or (want is not None and abs(float(r[col]) - want) > 1e-6):
                    bad(f"{key} of {r[5]}: {r[col]!r}, expected {want}")
if len(times) < 4: bad(f"only {len(times)} cycles")
# the absolute clock: cycles on the grid of the first; one woken late (a loaded machine) is
# followed by cycles on the grid again, never drifts: the median lateness stays small
iv = expect["interval"]
late = sorted((float(ts) - float(times[0])) % iv for ts in times[1:])
if late[len(late) // 2] > 0.25 * iv: bad(f"cycles off the {iv} s grid of {times[0]}: {late}")
m = json.load(open(f"{name}/nodes/{host}.metadata.json"))
want = {"hostname": host, "schema_version": schema, "source": source, "status": "complete",
        "sample_row_count": len(rows), "read_failure_count": 0, "sample_interval_seconds": iv}
for k, v in want.items():
    if m.get(k) != v: bad(f"metadata {k}: {m.get(k)!r}, expected {v!r}")
if not m["started_at_unix"] <= float(times[0]) <= float(times[-1]) <= m["ended_at_unix"]: bad("metadata times")
names = [s["name"] for s in m["sensors"]]
if names != sorted(names) or not set(sensors) <= set(names) or len(names) != expect.get("nsensors", len(sensors)):
    bad(f"metadata sensors {names}")
text = open(f"{name}/nodes/{host}.metadata.json").read()
if text != json.dumps(m, indent=2, sort_keys=True) + "\n": bad("metadata is not json.dumps(indent=2, sort_keys=True)")
rd = json.load(open(f"{name}/ready/{host}.ready.json"))
if sorted(rd) != ["hostname", "ready_at_unix", "source"] or rd["hostname"] != host or rd["source"] != source: bad(f"ready.json {rd}")
if not m["started_at_unix"] <= rd["ready_at_unix"] <= float(times[0]): bad("ready_at_unix")
EOF
}

# uW FILE: the watts in a fixture file.
uw() { "$PY" -c 'import sys; print(int(open(sys.argv[1]).read()) / 1e6)' "$1"; }
HW="$GRACE/sys/class/hwmon"
T0=$(uw "$HW/hwmon1/device/power1_average")
T1=$(uw "$HW/hwmon5/power1_input")
R0=$(uw "$HW/hwmon12/power1_average")
R1=$(uw "$HW/hwmon13/power1_average")
S0=$(uw "$HW/hwmon16/power1_average")
S1=$(uw "$HW/hwmon17/power1_average")
D0=$(uw "$HW/hwmon20/power1_average")
D1=$(uw "$HW/hwmon21/power1_average")
TOTAL=$("$PY" -c "print($T0 + $T1)")

# ---- grace, schema 3 ----
SLURMD_NODENAME=gh-01 record a 1 --root "$GRACE"
assert_eq "$RC" 0 "grace: exit status ($(cat a.err))"
check_csv a gh-01 3 acpi "{\"CPU0:cpuSidePowerUsageW\": $T0, \"CPU1:cpuSidePowerUsageW\": $T1,
  \"CPU0:cpuRailPowerUsageW\": $R0, \"CPU1:cpuRailPowerUsageW\": $R1,
  \"CPU0:socPowerUsageW\": $S0, \"CPU1:socPowerUsageW\": $S1,
  \"CPU0:dramPowerUsageW\": $D0, \"CPU1:dramPowerUsageW\": $D1,
  \"total\": $TOTAL, \"interval\": 0.1}"
[ "$(json_get a/nodes/gh-01.metadata.json 'j["requested_source"]')" = auto ] || fail "requested_source"
[ "$(json_get a/nodes/gh-01.metadata.json 'j["driver"]')" = "Linux ACPI power_meter hwmon" ] || fail "driver"
[ "$(json_get a/nodes/gh-01.metadata.json 'len(j["available_power_domains"])')" = 28 ] ||
    fail "available_power_domains: every power_meter channel"
[ "$(json_get a/nodes/gh-01.metadata.json '[s["label"] for s in j["sensors"]][1]')" = "Grace Power Socket 0" ] ||
    fail "sensor label"

# carma's own recording: a collect directory of one node that carma report reads
C=a/carma/gh-01
need_file "$C/carma_samples.csv" "$C/nodes.csv" "$C/manifest.json"
"$PY" - "$C" <<'EOF' || fail "carma/<host>: wrong recording"
import csv, json, sys
d = sys.argv[1]
s = list(csv.DictReader(open(f"{d}/carma_samples.csv", newline="")))
chans = {r["channel"] for r in s}
assert len(chans) == 28, chans
assert {r["node"] for r in s} == {"gh-01"} and {r["target"] for r in s} == {"local"}
assert all(r["schema_version"] == "1" for r in s)
tot = [r for r in s if r["channel"] == "hwmon/power_meter/socket0/total"]
assert all(abs(float(r["watts"]) - 150.0) < 1e-6 for r in tot), tot[:2]
n = list(csv.DictReader(open(f"{d}/nodes.csv", newline="")))
assert all(abs(float(r["watts"]) - 291.25) < 1e-6 for r in n), n[:2]
m = json.load(open(f"{d}/manifest.json"))
assert m["producer"] == "carma record" and m["status"] == "complete" and m["nodes"] == ["gh-01"], m
assert m["sample_row_count"] == len(s)
EOF
"$CARMA" report "$C" >rep.txt 2>rep.err || fail "carma report of $C: $(cat rep.err)"
grep -q "node gh-01 .*avg    291.250 W" rep.txt || fail "carma report: node power: $(cat rep.txt)"
"$CARMA" report --json "$C" >rep.json 2>rep.err || fail "carma report --json: $(cat rep.err)"
[ "$(json_get rep.json 'j["kind"]')" = collect ] || fail "report kind"

# ---- schema 4, --source acpi, --carma-dir, 50 ms ----
SLURMD_NODENAME=gh-02 record b 0.6 --root "$GRACE" --srt-schema 4 --source acpi \
    --interval 50ms --carma-dir b/mine
assert_eq "$RC" 0 "schema 4: exit status ($(cat b.err))"
check_csv b gh-02 4 acpi "{\"CPU0:cpuSidePowerUsageW\": $T0, \"CPU1:cpuSidePowerUsageW\": $T1,
  \"rails\": {\"CPU0:cpuSidePowerUsageW\": {\"cpu_rail\": $R0, \"soc\": $S0, \"dram\": $D0},
              \"CPU1:cpuSidePowerUsageW\": {\"cpu_rail\": $R1, \"soc\": $S1, \"dram\": $D1}},
  \"total\": $TOTAL, \"interval\": 0.05, \"nsensors\": 8}"
need_file b/mine/carma_samples.csv b/mine/manifest.json
[ ! -e b/carma ] || fail "--carma-dir: b/carma made anyway"

# ---- the other naming of the totals only ----
cp -a "$GRACE" g2
rm -rf g2/sys/class/hwmon/hwmon{1,2,3,5,6,7}
T0B=$(uw "$HW/hwmon10/power1_average")
T1B=$(uw "$HW/hwmon8/power1_average")
SLURMD_NODENAME=gh-03 record c 0.6 --root g2 --srt-schema 4
assert_eq "$RC" 0 "naming variant: exit status ($(cat c.err))"
check_csv c gh-03 4 acpi "{\"CPU0:cpuSidePowerUsageW\": $T0B, \"CPU1:cpuSidePowerUsageW\": $T1B,
  \"rails\": {\"CPU0:cpuSidePowerUsageW\": {\"cpu_rail\": $R0, \"soc\": $S0, \"dram\": $D0},
              \"CPU1:cpuSidePowerUsageW\": {\"cpu_rail\": $R1, \"soc\": $S1, \"dram\": $D1}},
  \"total\": $("$PY" -c "print($T0B + $T1B)"), \"interval\": 0.1, \"nsensors\": 8}"

# ---- ACPI without a socket total; no source at all ----
cp -a "$GRACE" g3
rm -rf g3/sys/class/hwmon/hwmon{1,5,8,9,10,11}
for src in auto acpi; do
    rm -rf d
    SLURMD_NODENAME=gh-04 record d 0 --root g3 --source "$src"
    assert_eq "$RC" 2 "no ACPI total, --source $src: exit status"
    need_file d/ready/gh-04.error.json
    if [ -e d/ready/gh-04.ready.json ] || [ -e d/nodes/gh-04.csv ]; then
        fail "no total: files written"
    fi
    [ "$(json_get d/ready/gh-04.error.json 'sorted(j)')" = '["error", "hostname"]' ] || fail "error.json keys"
    json_get d/ready/gh-04.error.json 'j["error"]' | grep -q "no ACPI socket-total power_meter channels under g3; available domains: .*CPU Power Socket 0" ||
        fail "error.json: $(cat d/ready/gh-04.error.json)"
    grep -q "no ACPI socket-total" d.err || fail "the error on stderr: $(cat d.err)"
done
SLURMD_NODENAME=gh-05 record e 0 --root "$CARMA_FIXTURES/vm-empty"
assert_eq "$RC" 2 "vm-empty: exit status"
json_get e/ready/gh-05.error.json 'j["error"]' | grep -q "no DCGM CPU entity" ||
    fail "vm-empty error.json: $(cat e/ready/gh-05.error.json)"

# ---- readings that never parse: exit 3 ----
cp -a "$GRACE" g4
for f in g4/sys/class/hwmon/*/power1_average g4/sys/class/hwmon/*/device/power1_average \
    g4/sys/class/hwmon/*/power1_input; do
    [ -f "$f" ] && [ ! -L "$f" ] && echo garbage >"$f"
done
SLURMD_NODENAME=gh-06 "$CARMA" record --root g4 --output-dir f/nodes --ready-dir f/ready \
    --duration 0.35 >f.out 2>f.err
rc=$?
assert_eq "$rc" 3 "no row: exit status ($(cat f.err))"
[ "$(json_get f/nodes/gh-06.metadata.json 'j["status"]')" = failed ] || fail "no row: status"
[ "$(json_get f/nodes/gh-06.metadata.json 'j["sample_row_count"]')" = 0 ] || fail "no row: count"
[ "$(json_get f/nodes/gh-06.metadata.json 'j["read_failure_count"] >= 3')" = true ] ||
    fail "no row: read failures $(cat f/nodes/gh-06.metadata.json)"
need_file f/ready/gh-06.ready.json

# ---- DCGM through the fake libdcgm ----
SLURMD_NODENAME=gh-07 CARMA_DCGM_LIBRARY="$FAKE_DCGM" CARMA_FAKE_DCGM_SCENARIO="$SCENARIO" \
    record g 1 --root "$CARMA_FIXTURES/vm-empty"
assert_eq "$RC" 0 "dcgm: exit status ($(cat g.err))"
check_csv g gh-07 3 dcgm '{"CPU0:cpuPowerUsageW": 151.25, "CPU1:cpuPowerUsageW": 98.5,
  "total": 249.75, "interval": 0.1,
  "util": {"CPU0:cpuPowerUsageW": ["0.5", "0.375", "0.0", "0.125", "0.0"],
           "CPU1:cpuPowerUsageW": ["0.25", "0.25", "0.0", "0.0", "0.0"]}}'
[ "$(json_get g/nodes/gh-07.metadata.json 'j["field_id"]')" = 1130 ] || fail "dcgm metadata"
[ "$(json_get g/nodes/gh-07.metadata.json '[s["cpu_entity_id"] for s in j["sensors"]]')" = "[0, 1]" ] ||
    fail "dcgm sensors"
{ grep -q ",dcgm/gpu0,dcgm,gpu,total,measured,[0-9]" g/carma/gh-07/carma_samples.csv &&
    grep -q ",dcgm/gpu1,dcgm,gpu,total,measured,120," g/carma/gh-07/carma_samples.csv; } ||
    fail "carma's recording has no GPU: $(head -5 g/carma/gh-07/carma_samples.csv)"
"$CARMA" report g/carma/gh-07 >rep2.txt 2>rep2.err || fail "carma report (dcgm): $(cat rep2.err)"
# --source acpi where only DCGM is: refused
SLURMD_NODENAME=gh-08 CARMA_DCGM_LIBRARY="$FAKE_DCGM" CARMA_FAKE_DCGM_SCENARIO="$SCENARIO" \
    record h 0 --root "$CARMA_FIXTURES/vm-empty" --source acpi
assert_eq "$RC" 2 "dcgm root, --source acpi: exit status"

# ---- the host name without SLURMD_NODENAME ----
SHORT=$("$PY" -c 'import socket; print(socket.gethostname().split(".")[0])')
(unset SLURMD_NODENAME; "$CARMA" record --root "$GRACE" --output-dir i/nodes --ready-dir i/ready \
    --duration 0.2 >i.out 2>i.err) || fail "short host name: $(cat i.err)"
need_file "i/nodes/$SHORT.csv" "i/ready/$SHORT.ready.json" "i/carma/$SHORT/carma_samples.csv"

# ---- marks: a program on the node marks windows on DIR/carma/<host>/carma.sock ----
# (mode 0660 for --socket-group; the window's energy is the node's 291.25 W x its length)
SLURMD_NODENAME=gh-09 "$CARMA" record --root "$GRACE" --output-dir m/nodes --ready-dir m/ready \
    --interval 50ms --socket-group daemon >m.out 2>m.err &
mpid=$!
_cleanup_pids+=("$mpid")
for ((i = 0; i < 500; i++)); do
    [ -S m/carma/gh-09/carma.sock ] && [ -e m/ready/gh-09.ready.json ] && break
    sleep 0.01
done
[ -S m/carma/gh-09/carma.sock ] || fail "marks: no m/carma/gh-09/carma.sock: $(cat m.err)"
assert_eq "$(stat -c '%a %G' m/carma/gh-09/carma.sock)" "660 daemon" "marks: --socket-group"
sleep 0.2
CARMA_SOCKET=$PWD/m/carma/gh-09/carma.sock "$CARMA" mark --json step -- sleep 0.5 >mk.out 2>mk.err ||
    fail "marks: carma mark: $(cat mk.err)"
CARMA_SOCKET=$PWD/m/carma/gh-09/carma.sock "$CARMA" mark begin left-open >/dev/null 2>>mk.err
sleep 0.2
kill -TERM "$mpid"
wait "$mpid" || fail "marks: carma record exited $?: $(cat m.err)"
grep -q "1 window still open at the end (marks.csv: unended)" m.err ||
    fail "marks: the open window not said: $(cat m.err)"
[ ! -e m/carma/gh-09/carma.sock ] || fail "marks: the socket is left"
"$PY" - "$CARMA" <<'EOF' || fail "marks: marks.csv or carma report of the recording (see above)"
import csv, json, subprocess, sys
rows = list(csv.DictReader(open("m/carma/gh-09/marks.csv", newline="")))
assert [(r["event"], r["name"]) for r in rows] == [
    ("begin", "step"), ("end", "step"), ("begin", "left-open"), ("unended", "left-open")], rows
e = json.load(open("mk.out"))
dt = e["t1"] - e["t0"]
assert 0.49 < dt < 1.0 and abs(e["energy_j"] - 291.25 * dt) < 0.05 * 291.25 * dt, e
rep = json.loads(subprocess.run([sys.argv[1], "report", "m/carma/gh-09", "--format", "json"],
                                check=True, capture_output=True, text=True).stdout)
w = [w for w in rep["windows"] if w["source"] == "mark" and w["name"] == "step"][0]
assert abs(w["job"]["energy_j"] - 291.25 * dt) < 0.02 * 291.25 * dt, (w["job"], dt)
print("# marks: step %.3f s, %.2f J (reply %.2f J)" % (dt, w["job"]["energy_j"], e["energy_j"]))
EOF

# ---- bad options ----
"$CARMA" record --output-dir x/nodes --ready-dir x/ready --source bogus >bad.out 2>bad.err
assert_eq "$?" 2 "--source bogus"
grep -q "'bogus' is not auto, acpi or dcgm" bad.err || fail "--source bogus: $(cat bad.err)"
"$CARMA" record --output-dir x/nodes --ready-dir x/ready --srt-schema 2 >bad.out 2>bad.err
assert_eq "$?" 2 "--srt-schema 2"
"$CARMA" record --ready-dir x/ready >bad.out 2>bad.err
assert_eq "$?" 2 "no --output-dir"
grep -q "output-dir and --ready-dir are needed" bad.err || fail "no --output-dir: $(cat bad.err)"
[ ! -e x ] || fail "bad options wrote files"
echo "ok"
