#!/usr/bin/env bash
# carma on bad input: sensor files with garbage (non-numeric, empty, 400 digits, negative,
# nan/inf), files that vanish or fail mid-run and unreadable files (through the CARMA_FAULT
# hook), a missing or corrupt proc/stat, an unknown CPU model, and bad command lines (option
# values, missing command, missing root, unwritable outputs, unknown regions). A bad reading
# is an invalid reading with a reason, never 0 W and never a crash; a bad command line is
# exit status 2 with a message naming the option.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

hwmon=0
have_hwmon && hwmon=1
F=$CARMA_FIXTURES
BAD=$BAD_FIXTURES
need_file "$BAD/rapl-garbage" "$BAD/hwmon-garbage" "$BAD/no-procstat" "$BAD/unknown-cpu"
PKG0=sys/class/powercap/intel-rapl:0/energy_uj

# --- RAPL files with garbage: each bad channel is shown with watts null and the reason
rc=$(run_logged rg "$CARMA" sensors --root "$BAD/rapl-garbage" --sample 20ms --json)
check_rc rg 0 "$rc"
check_clean_stderr rg
check_py "rapl-garbage: sensors --json" '
j = load(sys.argv[1])
bad = {
    "rapl/package-0": "abc",
    "rapl/package-1": "empty file",
    "rapl/package-0/core": "400 digits",
    "rapl/package-1/core": "-5",
}
for name, what in bad.items():
    c = chan(j, name)
    assert c["watts"] is None, "%s (%s): watts %r, expected null" % (name, what, c["watts"])
    err = c.get("error")
    if what == "empty file":
        assert err in ("content is not a valid number", "file is empty") or (err and "empty" in err), "%s: error %r" % (name, err)
    else:
        assert err == "content is not a valid number", "%s (%s): error %r" % (name, what, err)
# a garbage max_energy_range_uj: the counter still reads, with an unknown wrap range
c = chan(j, "rapl/package-0/dram")
assert c["watts"] == 0.0 and "error" not in c, c
assert c["counter_range"] is None, "garbage max_energy_range_uj became %r" % c["counter_range"]
c = chan(j, "rapl/package-1/dram")
assert c["watts"] == 0.0 and "error" not in c, c
assert c["counter_range"] == int(open(sys.argv[2]).read()), c
' rg.out "$BAD/rapl-garbage/sys/class/powercap/intel-rapl:1:1/max_energy_range_uj"
rc=$(run_logged rgt "$CARMA" sensors --root "$BAD/rapl-garbage" --sample 20ms)
check_rc rgt 0 "$rc"
check_clean_stderr rgt
check_py "rapl-garbage: sensors table" '
lines = open(sys.argv[1]).read().splitlines()
def row(name):
    r = [l for l in lines if l.split()[1:2] == [name]]
    assert len(r) == 1, "%s: %d rows" % (name, len(r))
    return r[0]
for name in ("rapl/package-0", "rapl/package-1", "rapl/package-0/core", "rapl/package-1/core"):
    r = row(name)
    assert r.split()[6] == "?", "%s: watts column %r" % (name, r.split()[6])
    assert "(content is not a valid number)" in r or "empty" in r, r
assert row("rapl/package-1/dram").split()[6] == "0.000"
' rgt.out

# carma stat on the same tree: completes, counts every reading of a bad channel as invalid
rc=$(run_logged rgs "$CARMA" stat --root "$BAD/rapl-garbage" --interval 20ms --json-out rgs.json \
    -o rgs_run -- sleep 0.2)
check_rc rgs 0 "$rc"
check_clean_stderr rgs
need_file rgs.json rgs_run/samples.csv
check_grep rgs.err "missing readings: content is not a valid number)" "rapl-garbage: stat summary"
check_py "rapl-garbage: stat summary JSON" '
j = load(sys.argv[1])
ticks = j["ticks"]
assert ticks >= 5, "only %d ticks" % ticks
# every reading of the command window is invalid (the window may leave out the tick taken
# before the command started)
for name in ("rapl/package-0", "rapl/package-1", "rapl/package-0/core", "rapl/package-1/core"):
    c = chan(j, name)
    assert c["invalid"] in (ticks - 1, ticks) and c["samples"] == 0, "%s: invalid %r samples %r of %d ticks" % (name, c["invalid"], c["samples"], ticks)
    assert c["last_error"] == "content is not a valid number", "%s: last_error %r" % (name, c.get("last_error"))
    for k in ("energy_j", "avg_power_w", "min_power_w", "max_power_w"):
        assert c[k] is None, "%s: %s = %r for a channel never read" % (name, k, c[k])
for name in ("rapl/package-0/dram", "rapl/package-1/dram"):
    c = chan(j, name)
    assert c["invalid"] == 0 and c["samples"] in (ticks - 1, ticks) and "last_error" not in c, c
    assert c["energy_j"] == 0.0, c
' rgs.json
# Regression test (this was wrong once): a node total made of channels that were never read is reported as 0.0 J
# measured (and 0 g CO2e): node.energy_j must be null (unknown) when one of node.channels
# has no energy, never a partial sum that looks complete.
check_py "rapl-garbage: node energy with unread total channels" '
j = load(sys.argv[1])
unknown = [n for n in j["node"]["channels"] if chan(j, n)["energy_j"] is None]
assert unknown, "test premise: some node channel is unread"
assert j["node"]["energy_j"] is None, "node energy_j = %r although %s were never read" % (j["node"]["energy_j"], unknown)
assert j["carbon"]["g_co2e"] is None, "carbon g_co2e = %r from an unknown node energy" % j["carbon"]["g_co2e"]
' rgs.json
check_py "rapl-garbage: samples.csv" '
rows = csv_rows(sys.argv[1])
j = load(sys.argv[2])
body = rows[1:]
assert len(body) == j["ticks"] * len(j["channels"]), "%d rows for %d ticks x %d channels" % (len(body), j["ticks"], len(j["channels"]))
for r in body:
    if r[2] in ("rapl/package-0", "rapl/package-1", "rapl/package-0/core", "rapl/package-1/core"):
        assert r[7] == "" and r[8] == "", "a bad channel has numbers: %r" % r
    else:
        assert r[8] != "", "a good channel without joules_total: %r" % r
' rgs_run/samples.csv rgs.json

# --- hwmon gauges with garbage (abc, negative, empty, 400 digits, nan, inf): invalid
if [ "$hwmon" = 1 ]; then
    rc=$(run_logged hg "$CARMA" sensors --root "$BAD/hwmon-garbage" --sample 20ms --json)
    check_rc hg 0 "$rc"
    check_clean_stderr hg
    check_py "hwmon-garbage: sensors --json" '
j = load(sys.argv[1])
ch = j["channels"]
def by_dir(d):
    m = [c for c in ch if ("/%s/" % d) in c.get("path", "")]
    assert len(m) == 1, "channels of %s: %s" % (d, [c["name"] for c in ch])
    return m[0]
for d, what in (("hwmon0", "abc"), ("hwmon1", "-5000000"), ("hwmon2", "empty"),
                ("hwmon3", "400 digits"), ("hwmon4", "nan"), ("hwmon5", "inf")):
    c = by_dir(d)
    assert c["watts"] is None, "%s (%s): watts %r, expected null" % (d, what, c["watts"])
    assert c.get("error"), "%s (%s): no error text" % (d, what)
c = by_dir("hwmon6")
assert c["watts"] == 5.0 and "error" not in c, c
totals = sorted((c["name"], c["socket"]) for c in ch if c["domain"] == "total")
assert totals == [("hwmon/power_meter/socket0/total", 0), ("hwmon/power_meter/socket1/total", 1)], totals
' hg.out
    rc=$(run_logged hgs "$CARMA" stat -q --root "$BAD/hwmon-garbage" --interval 20ms \
        --json-out hgs.json -- sleep 0.1)
    check_rc hgs 0 "$rc"
    check_clean_stderr hgs
    check_py "hwmon-garbage: stat summary JSON" '
j = load(sys.argv[1])
ticks = j["ticks"]
for c in j["channels"]:
    if c["name"] == "hwmon/power_meter/socket1/soc":
        assert c["invalid"] == 0 and c["samples"] in (ticks - 1, ticks) and c["energy_j"] > 0, c
    else:
        assert c["invalid"] in (ticks - 1, ticks) and c["samples"] == 0 and c["energy_j"] is None, c
        assert c["last_error"], c
' hgs.json
fi

# --- a counter that vanishes mid-run (ENODEV after 5 reads): the run completes, the channel
# has invalid readings from then on, samples.csv keeps whole rows with a blank watts cell
copy_tree intel-2s vanish
rc=$(run_logged vanish env "CARMA_FAULT=enodev@5:$PKG0" "$CARMA" stat --root vanish \
    --interval 10ms -o vanish_run -- sleep 0.5)
check_rc vanish 0 "$rc"
check_clean_stderr vanish
need_file vanish_run/summary.json vanish_run/samples.csv
check_grep vanish.err "missing readings: device vanished (ENODEV))" "vanished sensor: stat summary"
check_py "vanished sensor: summary and samples.csv" '
j = load(sys.argv[1])
rows = csv_rows(sys.argv[2])
c = chan(j, "rapl/package-0")
ticks = j["ticks"]
# 5 good reads (the first may be the tick before the command window), then only failures
assert c["samples"] in (4, 5), "package-0 samples %r, expected the 5 reads before the fault" % c["samples"]
assert c["invalid"] == ticks - 5 and c["invalid"] > 0, "package-0 invalid %r of %d ticks" % (c["invalid"], ticks)
assert "vanished" in c["last_error"], c["last_error"]
for n in ("rapl/package-0/core", "rapl/package-1"):
    assert chan(j, n)["invalid"] == 0, chan(j, n)
p0 = [r for r in rows[1:] if r[2] == "rapl/package-0"]
assert len(p0) == ticks, "%d package-0 rows for %d ticks" % (len(p0), ticks)
# row 0: the first counter reading (no power yet); rows 1-4: power; from row 5: vanished
assert p0[0][7] == "", p0[0]
for r in p0[1:5]:
    assert r[7] != "", "a watts cell before the fault is blank: %r" % r
for r in p0[5:]:
    assert r[7] == "", "a watts cell after the fault is not blank: %r" % r
' vanish_run/summary.json vanish_run/samples.csv

# The same on a live tree (the plant advances every counter at >= 30 W for a package): the
# vanished channel's power must not be diluted by the time it was gone.
if [ -x "$PLANT" ]; then
    live_tree intel-2s live
    start_plant live "$PLANT_CONFIGS/intel-2s.conf" truth.csv
    rc=$(run_logged vlive env "CARMA_FAULT=enodev@5:$PKG0" "$CARMA" stat -q --root live \
        --interval 10ms --json-out vlive.json -- sleep 0.5)
    stop_plant
    check_rc vlive 0 "$rc"
    check_clean_stderr vlive
    check_py "vanished sensor on a live tree: package-1 is measured" '
j = load(sys.argv[1])
c = chan(j, "rapl/package-1")
assert c["invalid"] == 0 and c["avg_power_w"] >= 27, "package-1 (plant idle 30 W): %r" % c
' vlive.json
    # The average power of a channel that vanished after 5 readings is its power over the
    # time it was read, not its energy over the whole run (that would be ~3 W here for a
    # package the plant holds at >= 30 W). Over only 4 intervals of 10 ms the plant's 5 ms
    # steps quantize the counter (one step more or less is +-50 % of an interval's energy),
    # so the bound is 15 W: far above a diluted average, below any honest one.
    check_py "vanished sensor on a live tree: package-0 average power" '
j = load(sys.argv[1])
c = chan(j, "rapl/package-0")
assert c["invalid"] > 0, c
assert c["avg_power_w"] is None or c["avg_power_w"] >= 15, "package-0 avg_power_w %r W although the plant kept it >= 30 W; it was read for %d of %d ticks" % (c["avg_power_w"], c["samples"], j["ticks"])
' vlive.json
else
    note "no $PLANT: the live-tree vanish check is not run"
fi

# --- proc/stat failing mid-run: the model's channel becomes invalid
# Regression test (this was wrong once): CARMA_FAULT=eio@N:proc/stat has no effect: procfs reads proc/stat with its own
# pread(), not through fsroot_pread_text(), so the fault hook never sees the reads and the
# model keeps reporting valid power from a proc/stat that fails.
if live_procstat vm-empty eiolive; then
    rc=$(run_logged eio env "CARMA_FAULT=eio@5:proc/stat" "$CARMA" stat -q --root eiolive \
        --interval 10ms --json-out eio.json -- sleep 0.3)
    stop_plant
    check_rc eio 0 "$rc"
    check_clean_stderr eio
    check_py "proc/stat failing mid-run (eio@5)" '
j = load(sys.argv[1])
c = chan(j, "model/cpu0")
assert c["invalid"] >= j["ticks"] - 6, "model/cpu0: %d invalid readings of %d ticks after proc/stat failed (samples %d)" % (c["invalid"], j["ticks"], c["samples"])
assert "I/O error" in c.get("last_error", ""), c
' eio.json
else
    note "no $PLANT: proc/stat failing mid-run is not checked"
fi

# --- an unreadable energy_uj (root-only since CVE-2020-8694)
# only package-0's counter: the other zones stay usable, but the reason must still be shown
rc=$(run_logged acc1 env "CARMA_FAULT=eacces:$PKG0" "$CARMA" sensors --root "$F/intel-2s" \
    --sample 20ms --json)
check_rc acc1 0 "$rc"
check_clean_stderr acc1
# Regression test (this was wrong once): with only package-0's energy_uj unreadable, the reason (file, CVE-2020-8694,
# fix) is built but printed nowhere (neither unavailable[] nor notes[] nor the table),
# because the rapl source as a whole is usable.
check_py "eacces on package-0 only: the reason is shown" '
j = load(sys.argv[1])
texts = [u["reason"] for u in j["unavailable"]] + [n["note"] for n in j.get("notes", [])]
hit = [t for t in texts if "sys/class/powercap/intel-rapl:0/energy_uj" in t and "CVE-2020-8694" in t]
assert hit, "no reason naming the file and CVE-2020-8694 in %s" % texts
' acc1.out
# Regression test (this was wrong once): the subzones of the unreadable package lose their package: they become
# rapl/core and rapl/dram with socket null, and rapl/dram (a total) is added to the node
# without a socket. Expected rapl/package-0/core and rapl/package-0/dram, socket 0.
check_py "eacces on package-0 only: the other zones" '
j = load(sys.argv[1])
names = sorted(c["name"] for c in j["channels"])
assert "rapl/package-0" not in names, names
for n in ("rapl/package-1", "rapl/package-1/core", "rapl/package-1/dram"):
    assert chan(j, n)["watts"] == 0.0, chan(j, n)
sub = [c for c in j["channels"] if c["path"].startswith("sys/class/powercap/intel-rapl:0:")]
assert len(sub) == 2, sub
for c in sub:
    assert c["socket"] == 0 and c["name"].startswith("rapl/package-0/"), "subzone of the unreadable package-0: name %r socket %r" % (c["name"], c["socket"])
' acc1.out
rc=$(run_logged acc1t env "CARMA_FAULT=eacces:$PKG0" "$CARMA" sensors --root "$F/intel-2s" \
    --sample 20ms)
check_rc acc1t 0 "$rc"
check_grep acc1t.out "CVE-2020-8694" "eacces on package-0 only: the table shows the reason"

# every counter unreadable: rapl is unavailable with the reason and the fix; the model
# takes over
faults=""
for z in 0 0:0 0:1 1 1:0 1:1; do
    faults="$faults;eacces:sys/class/powercap/intel-rapl:$z/energy_uj"
done
rc=$(run_logged accall env "CARMA_FAULT=${faults#;}" "$CARMA" sensors --root "$F/intel-2s" \
    --sample 20ms --json)
check_rc accall 0 "$rc"
check_clean_stderr accall
check_py "eacces on every zone" '
j = load(sys.argv[1])
r = [u["reason"] for u in j["unavailable"] if u["source"] == "rapl"]
assert len(r) == 1, j["unavailable"]
r = r[0]
assert r.startswith("cannot read sys/class/powercap/intel-rapl:0/energy_uj: permission denied"), r
assert "CVE-2020-8694" in r and "chmod o+r" in r, r
names = sorted(c["name"] for c in j["channels"])
assert names == ["model/cpu0", "model/cpu1"], names
assert all(c["method"] == "estimated" for c in j["channels"])
' accall.out

# --- CPU model in no table: the model says it fell back to the generic TDP
rc=$(run_logged uk "$CARMA" sensors --root "$BAD/unknown-cpu" --sample 20ms --json)
check_rc uk 0 "$rc"
check_clean_stderr uk
check_py "unknown CPU model" '
j = load(sys.argv[1])
names = sorted(c["name"] for c in j["channels"])
assert names == ["model/cpu0", "model/cpu1"], names
for c in j["channels"]:
    assert c["method"] == "estimated" and c["socket"] in (0, 1), c
n = [n["note"] for n in j["notes"] if n["source"] == "model"]
assert len(n) == 1, j["notes"]
n = n[0]
assert "CPU model \"Frobnitz Quantum 9000 CPU @ 3.00GHz\" is not in the TDP table: generic TDP 85 W per socket used" in n, n
assert "--cpu-tdp" in n, n
' uk.out

# --- proc/stat missing or corrupt: no model, the reason for both; stat still runs
rc=$(run_logged nps "$CARMA" sensors --root "$BAD/no-procstat" --sample 20ms --json)
check_rc nps 0 "$rc"
check_clean_stderr nps
check_py "no proc/stat: sensors" '
j = load(sys.argv[1])
assert j["channels"] == [], j["channels"]
u = dict((x["source"], x["reason"]) for x in j["unavailable"])
assert "proc/stat" in u.get("procfs", ""), u
assert "No such file" in u["procfs"] or "not found" in u["procfs"] or "does not exist" in u["procfs"], u["procfs"]
assert u.get("model", "").startswith("no CPU utilization"), u
' nps.out
rc=$(run_logged npss "$CARMA" stat -q --root "$BAD/no-procstat" --json-out npss.json -- true)
check_rc npss 0 "$rc"
check_clean_stderr npss
# Regression test (this was wrong once): without proc/stat the node's CPU busy time is unknown, but the summary says
# command.node_busy_time_s = 0.0 (a missing value reported as 0).
check_py "no proc/stat: stat summary" '
j = load(sys.argv[1])
assert j["channels"] == [] and j["node"]["energy_j"] is None, j
assert j["command"]["node_busy_time_s"] is None, "node_busy_time_s = %r without proc/stat" % j["command"]["node_busy_time_s"]
' npss.json
rc=$(run_logged psg "$CARMA" sensors --root "$BAD/procstat-garbage" --sample 20ms --json)
check_rc psg 0 "$rc"
check_clean_stderr psg
check_py "corrupt proc/stat" '
j = load(sys.argv[1])
assert j["channels"] == [], j["channels"]
u = dict((x["source"], x["reason"]) for x in j["unavailable"])
assert "proc/stat" in u.get("procfs", "") and "no valid \"cpu\" line" in u["procfs"], u
' psg.out

# --- cpu numbers past any table in proc/stat and proc/cpuinfo (2^64 - 1 wrapped a long to -1
# once, and wrote outside the per-cpu table): those lines are ignored, the others are used
need_file "$BAD/procstat-hugecpu"
for cmd in sensors stat; do
    args=("$cmd" --root "$BAD/procstat-hugecpu")
    [ "$cmd" = stat ] && args+=(-q --interval 20ms --json-out phc.json -- true) ||
        args+=(--sample 20ms --json)
    rc=$(run_logged "phc_$cmd" "$CARMA" "${args[@]}")
    check_rc "phc_$cmd" 0 "$rc"
    check_clean_stderr "phc_$cmd"
done
check_py "huge cpu numbers: sensors --json" '
j = load(sys.argv[1])
u = j["utilization"]
assert u["cpus"] == 2 and u["sockets"] == 1, u
' phc_sensors.out

# --- an implausible hwmon gauge (4294967296000000 uW = 4.29 GW) and one with a NUL byte
# ("12\0 34"): invalid readings with a reason, never integrated
if [ "$hwmon" = 1 ]; then
    need_file "$BAD/hwmon-implausible"
    for what in big nul; do
        if [ "$what" = big ]; then
            tree=$BAD/hwmon-implausible
        else
            tree=hwnul
            copy_tree acpi-meter "$tree"
            printf '12\0 34\n' >"$tree/sys/class/hwmon/hwmon1/power1_average"
        fi
        rc=$(run_logged "hwi_$what" "$CARMA" sensors --root "$tree" --sample 20ms --json)
        check_rc "hwi_$what" 0 "$rc"
        check_clean_stderr "hwi_$what"
        rc=$(run_logged "hwis_$what" "$CARMA" stat -q --root "$tree" --sources hwmon \
            --interval 20ms --json-out "hwis_$what.json" -- sleep 0.1)
        check_rc "hwis_$what" 0 "$rc"
        check_clean_stderr "hwis_$what"
        check_py "hwmon $what: sensors and stat" '
import sys
what = sys.argv[3]
j = load(sys.argv[1])
c = [c for c in j["channels"] if c["source"] == "hwmon"]
assert len(c) == 1, j["channels"]
c = c[0]
assert c["watts"] is None, c
want = "implausible" if what == "big" else "not a valid number"
assert want in c.get("error", ""), c
s = load(sys.argv[2])
ticks = s["ticks"]
for c in s["channels"]:
    assert c["samples"] == 0 and c["invalid"] in (ticks - 1, ticks), c
    assert c["energy_j"] is None, c
    assert c["max_power_w"] is None or c["max_power_w"] < 1e4, c
' "hwi_$what.out" "hwis_$what.json" "$what"
    done
fi

# --- bad --interval values: exit 2 naming --interval, for stat and sensors
for v in abc 0ms 100 2m -5ms 61s "" 1.5.0s 10xs; do
    for cmd in stat sensors; do
        args=("$cmd" --root "$F/vm-empty" "--interval=$v")
        [ "$cmd" = stat ] && args+=(-- true) || args+=(--sample 1ms)
        rc=$(run_logged "iv_$cmd" "$CARMA" "${args[@]}")
        check_rc "iv_$cmd" 2 "$rc"
        check_grep "iv_$cmd.err" "carma: --interval: '$v' is not a duration" \
            "$cmd --interval '$v'"
    done
done
for v in 1ms 60s 0.5s 0.1 1; do
    rc=$(run_logged ivok "$CARMA" stat -q --root "$F/vm-empty" --interval "$v" -- true)
    check_rc ivok 0 "$rc"
done
# a plain number is seconds: 0.25 is the same interval as 250ms
rc=$(run_logged ivsec "$CARMA" stat -q --root "$F/vm-empty" --interval 0.25 -o ivsec.d -- true)
check_rc ivsec 0 "$rc"
check_eq "$(json_get ivsec.d/manifest.json 'j["options"]["interval_s"]')" 0.25 "--interval 0.25"
# Regression test (this was wrong once): the --interval error (and the help) suggest "250us" as an example, but 250us
# is below the 1ms minimum and is rejected: every example the message gives must be valid.
"$CARMA" stat --root "$F/vm-empty" --interval abc -- true 2>iv_examples.err
examples=$(grep -oE '[0-9]+(us|ms|s)\b' iv_examples.err | sort -u)
[ -n "$examples" ] || check_fail "--interval error gives no example"
for v in $examples; do
    rc=$(run_logged "ivex" "$CARMA" stat -q --root "$F/vm-empty" --interval "$v" -- true)
    [ "$rc" = 0 ] || check_fail "--interval $v, an example from the error message, is rejected: $(cat ivex.err)"
done

# --- other bad option values: exit 2 naming the option
badopt() { # OPTION VALUE EXPECTED-TEXT
    rc=$(run_logged bo "$CARMA" stat --root "$F/vm-empty" "$1" "$2" -- true)
    check_rc bo 2 "$rc"
    check_grep bo.err "$3" "stat $1 '$2'"
}
badopt --cpu-tdp abc "--cpu-tdp: 'abc'"
badopt --cpu-tdp 0 "--cpu-tdp: '0'"
badopt --cpu-tdp -5 "--cpu-tdp: '-5'"
badopt --cpu-idle x "--cpu-idle: 'x'"
badopt --model-curve cubic "--model-curve: 'cubic'"
badopt --intensity 0 "--intensity: '0'"
badopt --intensity lots "--intensity: 'lots'"
badopt --pue 0.5 "--pue: '0.5'"
badopt --baseline soon "--baseline: 'soon'"
rc=$(run_logged both "$CARMA" stat --root "$F/vm-empty" --region FRA --intensity 50 -- true)
check_rc both 2 "$rc"
check_grep both.err "give --region or --intensity, not both" "--region with --intensity"

# --- the command: not found, not executable, missing
rc=$(run_logged nocmd "$CARMA" stat -q --root "$F/vm-empty" -- /no/such/cmd)
check_rc nocmd 127 "$rc"
check_grep nocmd.err "carma: /no/such/cmd: command not found" "missing command"
rc=$(run_logged nocmd2 "$CARMA" stat -q --root "$F/vm-empty" -- carma-no-such-command-xyz arg)
check_rc nocmd2 127 "$rc"
check_grep nocmd2.err "carma-no-such-command-xyz: command not found" "command not on PATH"
printf 'not a program\n' >notexec
chmod 644 notexec
rc=$(run_logged noexec "$CARMA" stat -q --root "$F/vm-empty" -- ./notexec)
check_rc noexec 126 "$rc"
check_grep noexec.err "./notexec: Permission denied" "non-executable command"
for args in "" "--"; do
    # shellcheck disable=SC2086
    rc=$(run_logged none "$CARMA" stat --root "$F/vm-empty" $args)
    check_rc none 2 "$rc"
    check_grep none.err "carma: stat: no command given" "stat ${args:-(nothing)}"
done

# --- a root that does not exist / is not a directory: exit 2 naming the path
for cmd in stat sensors; do
    for root in /does/not/exist /etc/passwd; do
        args=("$cmd" --root "$root")
        [ "$cmd" = stat ] && args+=(-- true)
        n="noroot_${cmd}_${root//\//_}"
        rc=$(run_logged "$n" "$CARMA" "${args[@]}")
        # Regression test (this was wrong once): `carma sensors --root /does/not/exist` exits 1; stat exits 2 (usage)
        check_rc "$n" 2 "$rc"
        check_grep "$n.err" "carma: cannot open root directory $root" "$cmd --root $root"
    done
done

# --- outputs that cannot be written: a clear error naming the path, and the command is not
# started for nothing
rc=$(run_logged unw "$CARMA" stat -q --root "$F/vm-empty" -o /etc/passwd/x -- touch ran)
[ "$rc" != 0 ] || check_fail "-o /etc/passwd/x: exit status 0"
check_grep unw.err "carma: stat: cannot create /etc/passwd/x: Not a directory" \
    "-o under a regular file"
[ -e ran ] && check_fail "-o /etc/passwd/x: the command ran although its run directory failed"
rm -f ran
mkdir -p ro_parent
rc=$(run_logged unw2 "$CARMA" stat -q --root "$F/vm-empty" -o ro_parent/sub/../../ro_parent/a/b/c \
    -- true)
check_rc unw2 0 "$rc"
[ -f ro_parent/a/b/c/summary.json ] || check_fail "-o a/b/c: parents are not created"
rc=$(run_logged jout "$CARMA" stat -q --root "$F/vm-empty" --json-out /etc/passwd/x.json -- true)
check_grep jout.err "cannot write /etc/passwd/x.json: Not a directory" "--json-out under a file"
# a run directory path longer than PATH_MAX (22 components of 200 characters)
# Regression test (this was wrong once): mkdir_p() copies the path into a 4096-byte buffer and silently cuts it: carma
# creates a directory tree the user did not ask for (the first 4095 characters) and its error
# names that cut path. Expected: refused as too long (as --root is), nothing created.
seg=$(printf 'd%.0s' $(seq 200))
long=$seg
for _ in $(seq 21); do long="$long/$seg"; done
mkdir longo
rc=$(cd longo && run_logged ../longo_run "$CARMA" stat -q --root "$F/vm-empty" -o "$long" -- true)
[ "$rc" != 0 ] || check_fail "-o with a ${#long}-character path: exit status 0"
check_clean_stderr longo_run
[ -z "$(ls -A longo)" ] ||
    check_fail "-o with a ${#long}-character path: carma created $(find longo -type d | tail -n 1 | wc -c)-character directories although it failed"
rc=$(run_logged longroot "$CARMA" stat --root "/$long" -- true)
check_rc longroot 2 "$rc"
check_grep longroot.err "path too long" "--root with a path longer than PATH_MAX"

# --- regions
rc=$(run_logged rx "$CARMA" stat -q --root "$F/vm-empty" --region XXX -- touch ran)
check_rc rx 2 "$rc"
check_grep rx.err "carma: --region: unknown region 'XXX'" "--region XXX"
check_grep rx.err "--intensity" "--region XXX: says how else to give the intensity"
check_grep rx.err "FRA" "--region XXX: gives an example code"
[ -e ran ] && check_fail "--region XXX: the command ran"
rc=$(run_logged fra "$CARMA" stat -q --root "$F/vm-empty" --region FRA --json-out fra.json -- true)
check_rc fra 0 "$rc"
check_py "--region FRA" '
j = load(sys.argv[1])
c = j["carbon"]
assert c["g_per_kwh"] == 56 and c["region"] == "FRA", c
assert "France" in c["intensity_source"] and "2023" in c["intensity_source"], c
e = j["node"]["energy_j"]
if e is None:  # a frozen fixture: the model has no utilization, nothing is known
    assert c["g_co2e"] is None, c
else:
    assert abs(c["g_co2e"] - e / 3.6e6 * 56) <= 1e-9 * max(1, c["g_co2e"]), (c, e)
' fra.json
rc=$(run_logged world "$CARMA" stat -q --root "$F/vm-empty" --json-out world.json -- true)
check_eq "$(json_get world.json 'j["carbon"]["g_per_kwh"]')" 475.0 "default intensity (WORLD)"

# --- stat --json: the summary as JSON where the table goes (stderr: stdout is the command's)
# Regression test (this was wrong once): `carma stat --json -- CMD` is accepted and ignored (nothing on stdout); then it
# was refused. It prints the summary JSON (the --json-out document) instead of the table.
rc=$(run_logged sj "$CARMA" stat --root "$F/vm-empty" --json -- sh -c 'echo out; exit 3')
check_rc sj 3 "$rc"
check_eq "$(cat sj.out)" "out" "stat --json: stdout is the command's"
check_py "stat --json prints the summary on stderr" '
j = load(sys.argv[1])
assert j["exit_status"] == 3, j
assert "energy" in json.dumps(j), j
' sj.err

# --- a malformed CARMA_FAULT is ignored, not a crash
rc=$(run_logged badfault env "CARMA_FAULT=;;nonsense;eacces;enodev@x:y;@:" "$CARMA" sensors \
    --root "$F/vm-empty" --sample 10ms)
check_rc badfault 0 "$rc"
check_clean_stderr badfault

cli_done
