#!/usr/bin/env bash
# carma sensors on every fixture tree: the JSON lists exactly the channels each machine has
# (name, source, kind, domain, parent, socket, method, a current watts value) and the reason
# for every unusable source; --sources selects sources and rejects unknown ones; the human
# table shows the same channels.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

hwmon=0
have_hwmon && hwmon=1
note "hwmon source present: $hwmon"

# sensors_json NAME FIXTURE [OPTIONS...]: carma sensors --json on a fixture into NAME.out;
# checks exit 0 and a clean stderr.
sensors_json() {
    local name=$1 fx=$2 rc
    shift 2
    rc=$(run_logged "$name" "$CARMA" sensors --root "$CARMA_FIXTURES/$fx" --sample 20ms --json "$@")
    check_rc "$name" 0 "$rc"
    check_clean_stderr "$name"
}

# The shape and contents of one sensors --json document against EXPECT, a Python dict:
# channel name -> (source, kind, domain, parent, socket, method, watts or None to skip).
# UNAVAIL: the sources expected in unavailable[] (exactly).
check_sensors() {
    local what=$1 file=$2 expect=$3 unavail=$4
    check_py "$what: channels and unavailable sources" '
j = load(sys.argv[1])
expect = '"$expect"'
unavail = set(s for s in sys.argv[2].split(",") if s)
for key in ("channels", "unavailable"):
    assert isinstance(j.get(key), list), "no %s[] array" % key
for c in j["channels"]:
    for k in ("name", "source", "kind", "domain", "method", "socket", "watts"):
        assert k in c, "channel %s has no %r key" % (c.get("name"), k)
    assert c["method"] in ("measured", "estimated"), c
    assert c["domain"] in ("total", "component"), c
    assert c["socket"] is None or isinstance(c["socket"], int), c
    assert c["watts"] is None or isinstance(c["watts"], (int, float)), c
    if c["watts"] is None:
        assert c.get("error"), "channel %s: watts null without an error text" % c["name"]
for u in j["unavailable"]:
    for k in ("source", "reason"):
        assert isinstance(u.get(k), str) and u[k], "unavailable entry without %s: %r" % (k, u)
names = [c["name"] for c in j["channels"]]
assert len(names) == len(set(names)), "duplicate channel names: %s" % names
assert set(names) == set(expect), "channels %s, expected %s" % (sorted(names), sorted(expect))
for name, (src, kind, domain, parent, socket, method, watts) in expect.items():
    c = chan(j, name)
    got = (c["source"], c["kind"], c["domain"], c.get("parent"), c["socket"], c["method"])
    want = (src, kind, domain, parent, socket, method)
    assert got == want, "%s: (source, kind, domain, parent, socket, method) = %s, expected %s" % (name, got, want)
    if watts is not None:
        assert c["watts"] is not None and abs(c["watts"] - watts) <= 1e-9 * max(1, watts), "%s: watts %r, expected %r" % (name, c["watts"], watts)
got_u = [u["source"] for u in j["unavailable"]]
assert sorted(got_u) == sorted(unavail), "unavailable sources %s, expected %s" % (got_u, sorted(unavail))
' "$file" "$unavail"
}

# unavail LIST: LIST plus hwmon when this carma has the hwmon source.
unavail() {
    # nvml and dcgm are unavailable on every fixture tree (no CARMA_NVML_LIBRARY nor
    # CARMA_DCGM_LIBRARY given)
    if [ "$hwmon" = 1 ]; then echo "$1,hwmon,nvml,dcgm"; else echo "$1,nvml,dcgm"; fi
}

# --- intel-2s: two packages, each with a core (component) and a dram (own domain) subzone
sensors_json intel intel-2s
check_sensors intel-2s intel.out '{
 "rapl/package-0":      ("rapl", "cpu",  "total",     None, 0, "measured", 0.0),
 "rapl/package-0/core": ("rapl", "cpu",  "component", "rapl/package-0", 0, "measured", 0.0),
 "rapl/package-0/dram": ("rapl", "dram", "total",     None, 0, "measured", 0.0),
 "rapl/package-1":      ("rapl", "cpu",  "total",     None, 1, "measured", 0.0),
 "rapl/package-1/core": ("rapl", "cpu",  "component", "rapl/package-1", 1, "measured", 0.0),
 "rapl/package-1/dram": ("rapl", "dram", "total",     None, 1, "measured", 0.0),
}' "$(unavail model)"
check_py "intel-2s: the model says why it is not used" '
j = load(sys.argv[1])
r = [u["reason"] for u in j["unavailable"] if u["source"] == "model"][0]
assert r.startswith("not needed: measured CPU power channels exist"), r
assert "add model to --sources" in r, r
' intel.out

# --- amd-server: packages with core subzones, no dram
sensors_json amd amd-server
check_sensors amd-server amd.out '{
 "rapl/package-0":      ("rapl", "cpu", "total",     None, 0, "measured", 0.0),
 "rapl/package-0/core": ("rapl", "cpu", "component", "rapl/package-0", 0, "measured", 0.0),
 "rapl/package-1":      ("rapl", "cpu", "total",     None, 1, "measured", 0.0),
 "rapl/package-1/core": ("rapl", "cpu", "component", "rapl/package-1", 1, "measured", 0.0),
}' "$(unavail model)"

# --- laptop: psys contains everything; the intel-rapl-mmio mirror is not a second package
sensors_json laptop laptop
check_sensors laptop laptop.out '{
 "rapl/psys":               ("rapl", "system", "total",     None, None, "measured", 0.0),
 "rapl/package-0":          ("rapl", "cpu",    "component", "rapl/psys", 0, "measured", 0.0),
 "rapl/package-0/core":     ("rapl", "cpu",    "component", "rapl/package-0", 0, "measured", 0.0),
 "rapl/package-0/uncore":   ("rapl", "soc",    "component", "rapl/package-0", 0, "measured", 0.0),
 "rapl/package-0/graphics": ("rapl", "gpu",    "component", "rapl/package-0", 0, "measured", 0.0),
 "rapl/package-0/dram":     ("rapl", "dram",   "component", "rapl/psys", 0, "measured", 0.0),
}' "$(unavail model)"

# --- vm-empty: nothing measured; the model estimates socket 0 (on the static proc/stat of
# the fixture no clock tick elapses, so there is no utilization yet: watts null, said why)
sensors_json vm vm-empty
check_sensors vm-empty vm.out '{
 "model/cpu0": ("model", "cpu", "total", None, 0, "estimated", None),
}' "$(unavail rapl)"
check_py "vm-empty: rapl reason, model fallback note" '
j = load(sys.argv[1])
r = [u["reason"] for u in j["unavailable"] if u["source"] == "rapl"][0]
assert r.startswith("no RAPL zones under sys/class/powercap"), r
c = chan(j, "model/cpu0")
assert c["watts"] is None and c["error"].startswith("no reading yet"), c
notes = j.get("notes")
assert isinstance(notes, list), "no notes[] array"
m = [n["note"] for n in notes if n.get("source") == "model"]
assert len(m) == 1, "model notes: %r" % notes
n = m[0]
assert n.startswith("estimated, not measured"), n
assert "CPU model \"AMD EPYC\" is not in the TDP table" in n, n
assert "generic TDP 85 W per socket used" in n, n
assert "give --cpu-tdp W" in n, n
' vm.out

# --cpu-tdp replaces the table, and the note says where the TDP came from
sensors_json vmtdp vm-empty --cpu-tdp 100
check_py "vm-empty --cpu-tdp 100" '
j = load(sys.argv[1])
n = [n["note"] for n in j["notes"] if n["source"] == "model"][0]
assert "P = 12 + (100 - 12) x f(u)" in n, n
assert "TDP 100 W per socket from --cpu-tdp" in n, n
assert "not in the TDP table" not in n, n
' vmtdp.out

# On a live proc/stat the model gives a power between idle (0.12 x 85 W) and the TDP, and
# exactly the constant when --cpu-idle equals --cpu-tdp.
if live_procstat vm-empty vmlive; then
    rc=$(run_logged vmlive "$CARMA" sensors --root vmlive --sample 50ms --json)
    check_rc vmlive 0 "$rc"
    rc=$(run_logged vmlive10 "$CARMA" sensors --root vmlive --sample 50ms --json --cpu-tdp 10 \
        --cpu-idle 10)
    check_rc vmlive10 0 "$rc"
    stop_plant
    check_py "vm-empty, live proc/stat: model power" '
j = load(sys.argv[1])
c = chan(j, "model/cpu0")
assert c["watts"] is not None and 10.2 - 1e-9 <= c["watts"] <= 85 + 1e-9, c
assert "utilization" in j and j["utilization"].get("total") is not None, j.get("utilization")
c = chan(load(sys.argv[2]), "model/cpu0")
assert c["watts"] == 10.0, c
' vmlive.out vmlive10.out
else
    note "no $PLANT: the model is not checked on a live proc/stat"
fi

# --sources rapl on a VM: no channel, only the rapl reason
sensors_json vmrapl vm-empty --sources rapl
check_sensors "vm-empty --sources rapl" vmrapl.out '{}' rapl
check_grep vmrapl.out 'no RAPL zones under sys/class/powercap' "vm-empty --sources rapl: reason"

# --sources rapl,model on intel-2s: the estimate beside the measurement, from the table row
sensors_json intelmodel intel-2s --sources rapl,model
check_py "intel-2s --sources rapl,model" '
j = load(sys.argv[1])
names = sorted(c["name"] for c in j["channels"])
assert names == sorted(["rapl/package-0", "rapl/package-0/core", "rapl/package-0/dram",
                        "rapl/package-1", "rapl/package-1/core", "rapl/package-1/dram",
                        "model/cpu0", "model/cpu1"]), names
for k in (0, 1):
    c = chan(j, "model/cpu%d" % k)
    assert (c["method"], c["socket"], c["domain"]) == ("estimated", k, "total"), c
n = [n["note"] for n in j["notes"] if n["source"] == "model"][0]
assert "P = 18 + (150 - 18) x f(u)" in n, n  # 0.12 x 150 W idle (Xeon Gold 6248)
assert "TDP 150 W per socket" in n and "Gold 6248" in n, n
assert j["unavailable"] == [] or [u["source"] for u in j["unavailable"]] == [], j["unavailable"]
' intelmodel.out

# --- hwmon fixtures (only when this carma has the hwmon source)
if [ "$hwmon" = 1 ]; then
    # Grace: one socket total per socket (Grace Power Socket N; socket 1 only has
    # power1_input); every other OEM variant is a component and never added
    sensors_json grace grace
    check_py "grace: socket totals and components" '
j = load(sys.argv[1])
ch = j["channels"]
assert all(c["source"] == "hwmon" and c["method"] == "measured" for c in ch), ch
for c in ch:
    for k in ("name", "source", "kind", "domain", "method", "socket", "watts"):
        assert k in c, "channel %s has no %r key" % (c.get("name"), k)
# one channel per power_meter device: hwmonN and hwmonN/device are one device, not two
assert len(ch) == 28, "%d channels, expected 28: %s" % (len(ch), [c["name"] for c in ch])
totals = sorted((c["name"], c["socket"], c["watts"]) for c in ch if c["domain"] == "total")
assert totals == [("hwmon/power_meter/socket0/total", 0, 150.0),
                  ("hwmon/power_meter/socket1/total", 1, 141.25)], totals
def by_dir(d):
    m = [c for c in ch if ("/%s/" % d) in c.get("path", "")]
    assert len(m) == 1, "channels of %s: %s" % (d, m)
    return m[0]
want = {  # hwmon dir: (kind, socket, watts)  all components
    "hwmon2": ("cpu", 0, 125.5),    # CPU Power Socket 0: a Grace rail, not the envelope
    "hwmon3": ("soc", 0, 9.5),      # SysIO Power Socket 0
    "hwmon7": ("soc", 1, 9.25),     # SysIO Power Socket 1
    "hwmon10": ("cpu", 0, 150.25),  # Total Power socket 0: a second total of socket 0
    "hwmon12": ("cpu", 0, 125.25),  # CPU Rail Power socket 0
    "hwmon20": ("dram", 0, 8.0),    # DRAM Power socket 0
    "hwmon21": ("dram", 1, 7.5),    # DRAM Power in uW socket 1
    "hwmon24": ("other", None, 118.5),  # CPU Rail Output Power: unclassified
    "hwmon27": ("other", None, 205.0),  # Module Socket A: unclassified
}
for d, (kind, socket, watts) in want.items():
    c = by_dir(d)
    got = (c["kind"], c["domain"], c["socket"], c["watts"])
    assert got == (kind, "component", socket, watts), "%s (%s): %s, expected %s" % (d, c["name"], got, (kind, "component", socket, watts))
    if socket is not None:
        assert c.get("parent") == "hwmon/power_meter/socket%d/total" % socket, c
assert [u["source"] for u in j["unavailable"]] == ["rapl", "nvml", "dcgm", "model"], j["unavailable"]
' grace.out

    # an ACPI power meter: one system total; temperature-only hwmon devices add nothing
    sensors_json acpi acpi-meter
    check_py "acpi-meter: one system total" '
j = load(sys.argv[1])
ch = j["channels"]
assert len(ch) == 1, [c["name"] for c in ch]
c = ch[0]
assert c["name"].startswith("hwmon/"), c
got = (c["source"], c["kind"], c["domain"], c["socket"], c["method"], c["watts"])
assert got == ("hwmon", "system", "total", None, "measured", 345.0), got
assert sorted(u["source"] for u in j["unavailable"]) == ["dcgm", "model", "nvml", "rapl"], j["unavailable"]
' acpi.out
else
    note "no hwmon source in this carma: grace and acpi-meter not checked"
fi

# --- unknown and empty --sources: a usage error (exit 2) listing the known sources
known="rapl, hwmon, nvml, dcgm, model"
[ "$hwmon" = 1 ] || known="rapl, nvml, model"
for cmd in sensors stat; do
    args=(--root "$CARMA_FIXTURES/vm-empty")
    [ "$cmd" = stat ] && tail_args=(-- true) || tail_args=()
    # Regression test (this was wrong once): `carma sensors --sources foo` exits 1; a bad option value is a usage error
    # (exit 2), as `carma stat --sources foo` does.
    rc=$(run_logged "src_$cmd" "$CARMA" "$cmd" "${args[@]}" --sources foo "${tail_args[@]}")
    check_rc "src_$cmd" 2 "$rc"
    check_grep "src_$cmd.err" "carma: --sources: unknown source 'foo' (known: $known)" \
        "$cmd --sources foo: message"
    check_eq "$(wc -c <"src_$cmd.out")" 0 "$cmd --sources foo: nothing on stdout"
    rc=$(run_logged "srcmix_$cmd" "$CARMA" "$cmd" "${args[@]}" --sources rapl,bogus,model \
        "${tail_args[@]}")
    check_rc "srcmix_$cmd" 2 "$rc"
    check_grep "srcmix_$cmd.err" "unknown source 'bogus'" "$cmd --sources rapl,bogus,model"
    # Regression test (this was wrong once): `carma sensors --sources ''` exits 1 (see above)
    rc=$(run_logged "srcempty_$cmd" "$CARMA" "$cmd" "${args[@]}" --sources '' "${tail_args[@]}")
    check_rc "srcempty_$cmd" 2 "$rc"
    check_grep "srcempty_$cmd.err" "--sources: empty list" "$cmd --sources '': message"
done

# --- the human table: every channel of the JSON, the unavailable reasons and the notes
fixtures="intel-2s amd-server laptop vm-empty"
[ "$hwmon" = 1 ] && fixtures="$fixtures grace acpi-meter"
for fx in $fixtures; do
    rc=$(run_logged "table_$fx" "$CARMA" sensors --root "$CARMA_FIXTURES/$fx" --sample 20ms)
    check_rc "table_$fx" 0 "$rc"
    check_clean_stderr "table_$fx"
    check_grep "table_$fx.out" "SOURCE  CHANNEL" "$fx table header"
    rc=$(run_logged "tjson_$fx" "$CARMA" sensors --root "$CARMA_FIXTURES/$fx" --sample 20ms --json)
    check_py "$fx table lists what the JSON lists" '
j = load(sys.argv[1])
table = open(sys.argv[2]).read()
lines = table.splitlines()
for c in j["channels"]:
    row = [l for l in lines if l.split()[1:2] == [c["name"]]]
    assert len(row) == 1, "%s: %d table rows" % (c["name"], len(row))
    f = row[0].split()
    assert f[0] == c["source"] and f[2] == c["kind"] and f[3] == c["domain"] and f[4] == c["method"], row[0]
for u in j["unavailable"]:
    assert u["reason"] in table, "reason of %s missing from the table" % u["source"]
for n in j.get("notes", []):
    assert n["note"] in table, "note of %s missing from the table" % n["source"]
if not j["channels"]:
    assert "(no power channel found)" in table
' "tjson_$fx.out" "table_$fx.out"
done
rc=$(run_logged table_none "$CARMA" sensors --root "$CARMA_FIXTURES/vm-empty" --sources rapl \
    --sample 20ms)
check_rc table_none 0 "$rc"
check_grep table_none.out "(no power channel found)" "vm-empty --sources rapl table"

# --- the RAPL read path (docs/sources.md): powercap where the tree has no perf PMU; the perf
# PMU through the real kernel on a tree that describes software events as one (cpu-clock counts,
# dummy reads 0 J: refused as a stub); --rapl-path forces a path
check_py "intel-2s: every rapl channel read by powercap pread, no note" '
j = load(sys.argv[1])
for c in j["channels"]:
    if c["source"] == "rapl":
        assert c.get("read_path") == "powercap pread", c
    else:
        assert "read_path" not in c, c
assert not [n for n in j["notes"] if n["source"] == "rapl"], j["notes"]
' intel.out
pmu=sys/bus/event_source/devices/power
mkdir -p swpmu/$pmu/events
echo 1 >swpmu/$pmu/type
echo 0 >swpmu/$pmu/cpumask
for ev in pkg:0x00 cores:0x00 psys:0x09; do
    echo "event=${ev#*:}" >"swpmu/$pmu/events/energy-${ev%%:*}"
    echo 2.3283064365386962890625e-10 >"swpmu/$pmu/events/energy-${ev%%:*}.scale"
    echo Joules >"swpmu/$pmu/events/energy-${ev%%:*}.unit"
done
rc=$(run_logged swpmu "$CARMA" sensors --root "$PWD/swpmu" --sources rapl --sample 20ms --json)
check_rc swpmu 0 "$rc"
if grep -q perf_event_paranoid swpmu.out; then
    note "CPU-wide perf events not allowed here: the software-PMU check is skipped"
else
    check_py "software events as a PMU: the perf group path, the stub refused" '
j = load(sys.argv[1])
ch = {c["name"]: c for c in j["channels"]}
assert sorted(ch) == ["rapl/package-0", "rapl/package-0/core"], sorted(ch)
for c in ch.values():
    assert c["read_path"] == "perf group (2 domains, 1 read)", c
    assert c["watts"] is not None and c["watts"] > 0, c
    assert abs(c["counter_unit_j"] - 2.0 ** -32) < 1e-24, c
assert ch["rapl/package-0"]["path"] == "perf power/energy-pkg on CPU 0", ch
note = [n["note"] for n in j["notes"] if n["source"] == "rapl"][0]
assert note.startswith("read path: perf group (2 domains in 1 read a tick)"), note
assert "power/energy-psys on CPU 0 read 0 J over " in note, note
assert "a virtual machine" in note and "stub PMU, left out." in note, note
' swpmu.out
    rc=$(run_logged swpmu_table "$CARMA" sensors --root "$PWD/swpmu" --sources rapl --sample 20ms)
    check_rc swpmu_table 0 "$rc"
    check_grep swpmu_table.out "[perf group (2 domains, 1 read)]" "software PMU table: the path"
    check_grep swpmu_table.out "rapl   read path: perf group" "software PMU table: the note"
fi
sensors_json pmu_powercap intel-2s-pmu --sources rapl --rapl-path powercap
check_py "intel-2s-pmu --rapl-path powercap: the same channels, powercap, no note" '
j = load(sys.argv[1]); k = load(sys.argv[2])
assert [c["name"] for c in j["channels"]] == [c["name"] for c in k["channels"] if c["source"] == "rapl"]
assert all(c["read_path"] == "powercap pread" for c in j["channels"]), j["channels"]
assert not j["notes"], j["notes"]
' pmu_powercap.out intel.out
sensors_json pmu_auto intel-2s-pmu --sources rapl
check_py "intel-2s-pmu auto: the same channel names whichever path reads" '
j = load(sys.argv[1]); k = load(sys.argv[2])
assert [c["name"] for c in j["channels"]] == [c["name"] for c in k["channels"] if c["source"] == "rapl"]
note = [n["note"] for n in j["notes"] if n["source"] == "rapl"][0]
assert note.startswith("read path: "), note
' pmu_auto.out intel.out
sensors_json noperf intel-2s --sources rapl --rapl-path perf
check_py "intel-2s --rapl-path perf: rapl unavailable, why" '
j = load(sys.argv[1])
assert not j["channels"], j["channels"]
u = j["unavailable"][0]
assert u["source"] == "rapl" and u["reason"].startswith("--rapl-path perf: no RAPL perf PMU at sys/bus/event_source/devices/power"), u
' noperf.out
rc=$(run_logged badpath "$CARMA" sensors --root "$CARMA_FIXTURES/intel-2s" --rapl-path msr)
check_rc badpath 2 "$rc"
check_grep badpath.err "carma: --rapl-path: 'msr' is not auto, powercap or perf" "--rapl-path msr"

# --- usage errors of sensors itself
rc=$(run_logged extra "$CARMA" sensors --root "$CARMA_FIXTURES/vm-empty" extra)
check_rc extra 2 "$rc"
check_grep extra.err "carma: sensors: unexpected argument 'extra'" "sensors extra argument"
rc=$(run_logged badsample "$CARMA" sensors --root "$CARMA_FIXTURES/vm-empty" --sample abc)
check_rc badsample 2 "$rc"
check_grep badsample.err "--sample: 'abc'" "sensors --sample abc"
rc=$(run_logged badopt "$CARMA" sensors --no-such-option)
check_rc badopt 2 "$rc"
check_grep badopt.err "no-such-option" "sensors --no-such-option names the option"

cli_done
