#!/usr/bin/env bash
# Wall power meters (--meter, monitoring.meter) against carma-wattsup-sim, a Watts Up? Pro on a
# pseudo-terminal: carma stat's wall energy within 1% of the simulator's truth over carma's
# window, the meter alone as the node's figure, "rest of system" = meter - RAPL totals (the
# plant animates RAPL), garbage lines skipped and counted; an unplug: missing readings during
# the gap (never 0 W), then a reconnection; a cmd: meter (ipmitool's output); carma sensors;
# carma run with monitoring.meter; bad specs, a missing device, a tty that is no Watts Up?.
# shellcheck source=lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

SIM="$CARMA_BUILD/tests/fakes/carma-wattsup-sim"
need_file "$SIM"
export SIM_TTY=$PWD/wattsup.tty

# start_sim NAME [SIM_OPTIONS...]: a simulator linked at $SIM_TTY, truth in NAME.truth.csv,
# events in NAME.events; sets SIM_PID.
start_sim() {
    local name=$1 i
    shift
    rm -f "$name.pid"
    "$SIM" --link "$SIM_TTY" --truth "$name.truth.csv" --events "$name.events" \
        --pidfile "$name.pid" --duration 60 "$@" >"$name.sim.log" 2>&1 &
    SIM_PID=$!
    _cleanup_pids+=("$SIM_PID")
    for ((i = 0; i < 300; i++)); do
        [ -s "$name.pid" ] && return 0
        sleep 0.01
    done
    fail "carma-wattsup-sim did not start: $(cat "$name.sim.log")"
}

stop_sim() {
    kill -TERM "$SIM_PID" 2>/dev/null
    wait "$SIM_PID" 2>/dev/null
}

# ---- carma stat: the wall energy against the truth, rest of system, garbage ----
live_tree intel-2s live
start_plant live "$PLANT_CONFIGS/intel-2s.conf" plant.csv
start_sim a --power 487.3 --period 0.5 --garbage-every 2
rc=$(run_logged stat "$CARMA" stat --root live --interval 100ms --meter "wattsup:$SIM_TTY" \
    --json-out a.json -o rundir -- sleep 2)
sleep 0.6 # a truth row after carma's end
stop_sim
show stat.out stat.err
assert_eq "$rc" 0 "carma stat --meter wattsup: exit status"
grep -q "^  rest of system -*[0-9.]* J = .*(measured: meter/wattsup - rapl/package-0 - " stat.err ||
    fail "no 'rest of system' line"
grep -q "^  node energy .*(measured: meter/wattsup)$" stat.err || fail "the node is not the meter"
grep -q "meter         wattsup:$SIM_TTY: [0-9]* records, [1-9][0-9]* garbage lines skipped" \
    stat.err || fail "no meter line with garbage counted"
"$PY" - a.json a.truth.csv a.events rundir/manifest.json <<'EOF' || fail "stat vs the simulator's truth"
import csv, json, sys
j = json.load(open(sys.argv[1]))
rows = [(float(r["timestamp_unix"]), float(r["energy_j"])) for r in csv.DictReader(open(sys.argv[2]))]
def cum(t):  # the truth's energy at t, linear between its rows
    for (t0, e0), (t1, e1) in zip(rows, rows[1:]):
        if t0 <= t <= t1:
            return e0 + (e1 - e0) * (t - t0) / (t1 - t0)
    raise SystemExit(f"{t} outside the truth ({rows[0][0]}..{rows[-1][0]})")
ch = {c["name"]: c for c in j["channels"]}
m = ch["meter/wattsup"]
assert m["kind"] == "system" and m["method"] == "measured", m
window = j["end_unix"] - j["start_unix"]
assert abs(m["covered_s"] - window) < 0.02, (m["covered_s"], window)
truth = cum(j["end_unix"]) - cum(j["start_unix"])
err = (m["energy_j"] - truth) / truth
print(f"# meter {m['energy_j']:.3f} J, truth {truth:.3f} J over {window:.3f} s: {100 * err:+.3f}%")
assert abs(err) < 0.01, err
assert m["invalid"] == 0 and m["min_power_w"] == 487.3 == m["max_power_w"], m
node = j["node"]
assert node["channels"] == ["meter/wattsup"], node
assert abs(node["energy_j"] - m["energy_j"]) < 1e-9, node
rest = node["rest_of_system"]
parts = ["rapl/package-0", "rapl/package-0/dram", "rapl/package-1", "rapl/package-1/dram"]
assert rest["channels"] == parts, rest
metered = sum(ch[p]["energy_j"] for p in parts)
assert metered > 0, metered
assert abs(rest["energy_j"] - (m["energy_j"] - metered)) < 1e-6, (rest, metered)
meters = j["meters"]
assert len(meters) == 1 and meters[0]["channel"] == "meter/wattsup", meters
injected = sum(1 for line in open(sys.argv[3]) if line.startswith("garbage"))
assert 1 <= meters[0]["garbage_lines"] <= injected, (meters, injected)
assert meters[0]["reconnects"] == 0 and meters[0]["disconnects"] == 0, meters
man = json.load(open(sys.argv[4]))
assert man["meters"][0]["spec"].startswith("wattsup:"), man.get("meters")
EOF

# ---- carma sensors ----
start_sim s --power 42.5 --period 0.2
rc=$(run_logged sensors "$CARMA" sensors --root live --sample 200ms --meter "wattsup:$SIM_TTY")
assert_eq "$rc" 0 "carma sensors --meter: exit status"
grep -q "^meter   meter/wattsup .* system total     measured  -  *42.500  wattsup:" sensors.out ||
    { show sensors.out; fail "sensors: no meter/wattsup at 42.5 W"; }
grep -q "^meters:" sensors.out || fail "sensors: no meters section"
rc=$(run_logged sensorsj "$CARMA" sensors --root live --sample 100ms --json --meter "wattsup:$SIM_TTY")
stop_sim
assert_eq "$(json_get sensorsj.out 'j["meters"][0]["records"] >= 1')" true "sensors --json: meters"

# ---- unplug: missing readings during the gap (never 0 W), then a reconnection ----
start_sim u --power 95 --period 0.25 --unplug-at 0.8 --unplug-for 1.6
rc=$(run_logged unplug "$CARMA" stat --root live --interval 100ms --meter "wattsup:$SIM_TTY" \
    --json-out u.json -- sleep 4.5)
stop_sim
show unplug.err
assert_eq "$rc" 0 "carma stat across an unplug: exit status"
grep -q "1 disconnect, 1 reconnect" unplug.err || fail "the unplug is not reported"
"$PY" - u.json u.events <<'EOF' || fail "unplug"
import json, sys
j = json.load(open(sys.argv[1]))
m = next(c for c in j["channels"] if c["name"] == "meter/wattsup")
ev = [l.split()[0] for l in open(sys.argv[2])]
assert ev.count("unplug") == 1 and ev.count("replug") == 1, ev
assert m["invalid"] >= 10, m          # 1.6 s without a meter at 100 ms
assert m["min_power_w"] == 95.0, m     # never 0 W
assert m["last_error"] is not None, m
meter = j["meters"][0]
assert meter["disconnects"] == 1 and meter["reconnects"] == 1 and meter["connected"], meter
EOF

# ---- cmd: a command printing watts (ipmitool's output) ----
cat >ipmitool <<'EOF'
#!/bin/sh
echo "    Instantaneous power reading:                   220 Watts"
echo "    Minimum during sampling period:                 58 Watts"
EOF
chmod +x ipmitool
rc=$(run_logged cmd "$CARMA" stat --root live --interval 100ms \
    --meter "cmd:$PWD/ipmitool dcmi power reading" --json-out c.json -- sleep 1.5)
show cmd.err
assert_eq "$rc" 0 "carma stat --meter cmd: exit status"
"$PY" - c.json <<'EOF' || fail "cmd meter"
import json, sys
j = json.load(open(sys.argv[1]))
m = next(c for c in j["channels"] if c["name"] == "meter/cmd")
assert m["min_power_w"] == m["max_power_w"] == 220.0, m
assert abs(m["energy_j"] - 220.0 * m["covered_s"]) < 1e-6 and m["covered_s"] > 1.4, m
assert j["node"]["channels"] == ["meter/cmd"], j["node"]
assert j["meters"][0]["records"] >= 2 and j["meters"][0]["failed_runs"] == 0, j["meters"]
EOF

# ---- errors: bad specs, a missing device, not a serial port, a tty that is no Watts Up? ----
check_error() { # NAME EXPECTED_TEXT CARMA_ARGS...
    local name=$1 want=$2 rc
    shift 2
    rc=$(run_logged "$name" "$CARMA" "$@")
    assert_eq "$rc" 2 "$name: exit status"
    grep -qF -- "$want" "$name.err" || { show "$name.err"; fail "$name: no '$want'"; }
}
check_error bad1 "carma: --meter: unknown meter type 'killawatt'" stat --meter killawatt:/dev/x -- true
check_error bad2 "carma: --meter: '/dev/ttyUSB0' is not TYPE:ARGUMENT" stat --meter /dev/ttyUSB0 -- true
check_error bad3 "carma: --meter: no command after 'cmd:'" sensors --meter cmd:
check_error missing "carma: --meter wattsup:$PWD/nope: cannot open $PWD/nope: No such file or directory" \
    stat --root live --meter "wattsup:$PWD/nope" -- touch notrun
check_error notty "wattsup:/dev/null: /dev/null is not a serial port" stat --root live --meter wattsup:/dev/null -- true
check_error cmdfail "cmd:exit 4: 'exit 4' exited with status 4" stat --root live --meter "cmd:exit 4" -- true
start_sim q --silent
check_error silent "carma: --meter wattsup:$SIM_TTY: no Watts Up? record (#d,...;) from $SIM_TTY within 4 s" \
    stat --root live --meter "wattsup:$SIM_TTY" -- true
stop_sim
[ ! -e notrun ] || fail "the command ran despite a bad meter"

# ---- carma run with monitoring.meter; validation of the field ----
start_sim r --power 300 --period 0.5
cat >exp.json <<EOF
{
  "experiment_name": "metered",
  "workloads": [{"name": "nap", "script": "sleep", "args": ["1.5"]},
                {"name": "spin", "script": "$BUSY", "args": ["1.5"]}],
  "monitoring": {"interval": "100ms", "baseline_s": 0, "meter": "wattsup:$SIM_TTY"}
}
EOF
rc=$(run_logged run "$CARMA" run --root live -o runs exp.json)
stop_sim
show run.out run.err
assert_eq "$rc" 0 "carma run with monitoring.meter: exit status"
dir=$(head -n 1 run.out)
grep -q "^  rest of system .*(measured: meter/wattsup - rapl/package-0" run.out ||
    fail "carma run: no rest of system line"
"$PY" - "$dir" <<'EOF' || fail "carma run's report with a meter"
import json, sys
d = sys.argv[1]
rep = json.load(open(d + "/report.json"))
assert rep["node_channels"] == ["meter/wattsup"], rep["node_channels"]
rest = rep["rest_of_system"]
assert abs(rest["meter_energy_j"] - rep["total_energy_j"]) < 1e-6 * rep["total_energy_j"] + 1e-6, rest
assert rest["energy_j"] < rest["meter_energy_j"], rest
exp = json.load(open(d + "/experiment.json"))
assert exp["monitoring"]["meter"].startswith("wattsup:"), exp["monitoring"]
# the meter's energy is split as the measured channels inside it were: the busy workload's
# share of the meter is its share of RAPL; the meter's rows add up to the meter's energy
rows = [l.rstrip("\r\n").split(",") for l in open(d + "/attribution.csv")][1:]
def shares(ch):
    by = {}
    for t, c, job, j in rows:
        if c == ch:
            by[job] = by.get(job, 0.0) + float(j)
    return by, sum(by.values())
m, mt = shares("meter/wattsup")
p, pt = shares("rapl/package-0")
assert abs(mt - rest["meter_energy_j"]) < 1e-4 * mt + 1e-4, (mt, rest)
assert pt > 0 and mt > 0, (m, p)
for job in ("spin", "nap"):
    assert abs(m.get(job, 0) / mt - p.get(job, 0) / pt) < 0.03, (job, m, p)
assert m["spin"] / mt > 0.3 and m.get("nap", 0) / mt < 0.05, m
w = {x["name"]: x for x in rep["workloads"]}
assert abs(w["spin"]["energy_j"] - m["spin"]) < 1e-3 * m["spin"] + 1e-3, (w["spin"], m)
print(f"meter split: spin {m['spin'] / mt:.3f} of the meter, {p['spin'] / pt:.3f} of RAPL")
assert json.load(open(d + "/manifest.json"))["meters"][0]["records"] >= 1
EOF
# with a GPU inside the meter too (the fake NVML): a GPU job that uses no CPU gets the share of
# the meter that its GPU energy is of the measured energy, not its (nil) share of CPU time
start_sim g --power 700 --period 0.25
mkdir -p clients
cat >gexp.json <<EOF
{
  "experiment_name": "metered-gpu",
  "workloads": [{"name": "gpu", "script": "$CARMA_BUILD/tests/fakes/carma-gpujob",
                 "args": ["--dir", "$PWD/clients", "--device", "0", "--sm", "100", "1.5"]},
                {"name": "spin", "script": "$BUSY", "args": ["1.5"]}],
  "monitoring": {"interval": "100ms", "baseline_s": 0, "meter": "wattsup:$SIM_TTY"}
}
EOF
rc=$(run_logged grun env CARMA_NVML_LIBRARY="$CARMA_BUILD/tests/fakes/libfake-nvml.so" \
    CARMA_FAKE_NVML_SCENARIO="$CARMA_SRC/tests/fakes/nvml/shared.scenario" \
    CARMA_FAKE_NVML_CLIENTS="$PWD/clients" "$CARMA" run --root live -o runs gexp.json)
stop_sim
assert_eq "$rc" 0 "carma run with a meter and a GPU: exit status"
"$PY" - "$(head -n 1 grun.out)" <<'EOF' || { show grun.out grun.err; fail "the meter's split with a GPU"; }
import json, sys
d = sys.argv[1]
rep = json.load(open(d + "/report.json"))
inside = set(rep["rest_of_system"]["channels"])
assert "nvml/gpu0" in inside, inside
rows = [l.rstrip("\r\n").split(",") for l in open(d + "/attribution.csv")][1:]
m, meas = {}, {}
for t, c, job, j in rows:
    if c == "meter/wattsup":
        m[job] = m.get(job, 0.0) + float(j)
    elif c in inside:
        meas[job] = meas.get(job, 0.0) + float(j)
mt, pt = sum(m.values()), sum(meas.values())
for job in ("gpu", "spin"):
    # the meter lags a record and the GPU shares a tick: close, not equal
    assert abs(m.get(job, 0) / mt - meas.get(job, 0) / pt) < 0.08, (job, m, meas)
assert m["gpu"] / mt > 0.2, m
print(f"meter split with a GPU: gpu {m['gpu'] / mt:.3f} of the meter, {meas['gpu'] / pt:.3f} "
      f"of the measured channels")
EOF

cat >bad.json <<'EOF'
{
  "experiment_name": "metered",
  "workloads": [{"name": "nap", "script": "sleep", "args": ["1"]}],
  "monitoring": {"meter": "wattsup"}
}
EOF
rc=$(run_logged validate "$CARMA" validate bad.json)
assert_eq "$rc" 1 "carma validate: bad monitoring.meter"
grep -q "^bad.json:4:27: monitoring.meter: 'wattsup' is not TYPE:ARGUMENT" validate.err ||
    { show validate.err; fail "validate: no located monitoring.meter error"; }
check_error runmissing "carma: monitoring.meter wattsup:/nonexistent/tty0: cannot open" \
    run --root live -o runs "$(sed 's|"wattsup"|"wattsup:/nonexistent/tty0"|' bad.json >bad2.json; echo bad2.json)"
stop_plant
exit 0
