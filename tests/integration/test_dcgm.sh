#!/usr/bin/env bash
# The dcgm source end to end, on the fake libdcgm (tests/fakes/fake_dcgm.c) below fixture roots
# (CARMA_DCGM_LIBRARY names the fake, so DCGM is read below --root):
#   - carma sensors (table and --json): the channels of tests/fakes/dcgm/grace.scenario with
#     their kinds, zones, domains, sockets and watts: dcgm/cpu<N> a total without hwmon, a
#     component on the grace fixture (hwmon's socket totals contain the CPU rail), and the notes
#     that say so;
#   - carma stat --sources dcgm: the channels' energy (constant gauges: watts x covered time),
#     and dcgm_cpu_util, per socket the mean of DCGM's utilization over the command's ticks,
#     equal to the scenario's values (DCGM's first read, the probe's, has none: it is missing,
#     never 0); null with 0 samples for a socket without utilization; the text lines;
#   - carma run: cpu_util.csv, one row per socket at every node_util.csv row (the same
#     timestamps), the scenario's values, blank cells for a socket without utilization (the
#     first row has values: the probe made DCGM's first read); the manifest's cpu_util_csv;
#   - without DCGM CPU entities (no dcgm source, or GPUs only): no dcgm_cpu_util, no
#     cpu_util.csv;
#   - the failures carma sensors prints for the dcgm source, each message: library not found,
#     a library lacking a call, the embedded engine refused, no sysmon and no GPU, no host
#     engine at --dcgm-host; bad --dcgm-host values refused with status 2.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

LIB="${CARMA_FAKE_DCGM:-$CARMA_BUILD/tests/fakes/libdcgm.so.4}"
NOSYM="${CARMA_FAKE_DCGM_NOSYM:-$CARMA_BUILD/tests/fakes/libfake-dcgm-nosym.so}"
SC="$CARMA_SRC/tests/fakes/dcgm"
VM="$CARMA_FIXTURES/vm-empty"
need_file "$LIB" "$NOSYM" "$SC/grace.scenario" "$VM"

# dcgm SCENARIO CMD...: CMD with the fake libdcgm answering from SCENARIO.
# shellcheck disable=SC2317 # called through run_logged
dcgm() {
    local sc=$1
    shift
    CARMA_DCGM_LIBRARY="$LIB" CARMA_FAKE_DCGM_SCENARIO="$sc" "$@"
}

# The utilization values of a scenario's `cpu N ... util T U N S I` lines, as a JSON object
# {"N": [T, U, N, S, I]} (no entry for a CPU without util).
scenario_util() {
    "$PY" - "$1" <<'EOF'
import json, sys
out = {}
for line in open(sys.argv[1]):
    w = line.split("#")[0].split()
    if len(w) >= 2 and w[0] == "cpu" and "util" in w:
        k = w.index("util")
        out[w[1]] = [float(x) for x in w[k + 1:k + 6]]
print(json.dumps(out))
EOF
}
UTIL=$(scenario_util "$SC/grace.scenario")
note "grace.scenario utilization: $UTIL"
[ "$(printf '%s' "$UTIL" | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 2 ] ||
    fail "grace.scenario no longer gives two sockets with util values: $UTIL"

# ---- carma sensors: the channels ----

rc=$(run_logged sens_vm dcgm "$SC/grace.scenario" "$CARMA" sensors --root "$VM" --sources dcgm \
    --json)
check_rc sens_vm 0 "$rc"
check_clean_stderr sens_vm
# name -> (kind, zone, domain, socket, watts or None)
check_py "sensors --json without hwmon: the dcgm channels" '
j = load(sys.argv[1])
expect = {
    "dcgm/cpu0": ("cpu", "cpu_rail", "total", 0, 151.25),
    "dcgm/cpu0/sysio": ("soc", "sysio", "component", 0, 22.5),
    "dcgm/cpu0/module": ("soc", "module", "component", 0, 310.75),
    "dcgm/cpu1": ("cpu", "cpu_rail", "total", 1, 98.5),
    "dcgm/gpu0": ("gpu", "gpu", "total", 0, None),
    "dcgm/gpu1": ("gpu", "gpu", "total", 1, 120.0),
}
got = [c["name"] for c in j["channels"]]
assert got == list(expect), got
for c in j["channels"]:
    kind, zone, domain, sock, w = expect[c["name"]]
    assert (c["source"], c["kind"], c["zone"], c["domain"], c["socket"], c["method"]) == \
        ("dcgm", kind, zone, domain, sock, "measured"), c
    assert c["form"] == ("counter" if c["name"] == "dcgm/gpu0" else "gauge"), c
    if w is not None:
        assert c["watts"] == w, c
notes = [n for n in j["notes"] if n["source"] == "dcgm"]
assert len(notes) == 1, j["notes"]
for s in (0, 1):
    assert "CPU %d: DCGM measures the CPU rail only (not SoC, SysIO or DRAM)" % s in notes[0]["note"], notes
' sens_vm.out

rc=$(run_logged sens_vm_text dcgm "$SC/grace.scenario" "$CARMA" sensors --root "$VM" --sources dcgm)
check_rc sens_vm_text 0 "$rc"
for line in "dcgm/cpu0 +cpu +total +measured +0 +151.250" "dcgm/cpu0/sysio +soc +component" \
    "dcgm/cpu0/module +soc +component" "dcgm/cpu1 +cpu +total +measured +1 +98.500" \
    "dcgm/gpu0 +gpu +total" "dcgm/gpu1 +gpu +total +measured +1 +120.000"; do
    grep -qE "^dcgm +$line" sens_vm_text.out || check_fail "sensors table: no line '$line'"
done
check_grep sens_vm_text.out "CPU 0: DCGM measures the CPU rail only (not SoC, SysIO or DRAM)" \
    "sensors table: the CPU rail note"

# on the grace fixture, hwmon measures each socket's total: DCGM's CPU rail is a component
if have_hwmon; then
    rc=$(run_logged sens_grace dcgm "$SC/grace.scenario" "$CARMA" sensors \
        --root "$CARMA_FIXTURES/grace" --json)
    check_rc sens_grace 0 "$rc"
    check_py "sensors --json on grace: DCGM's CPU rails are components" '
j = load(sys.argv[1])
d = {c["name"]: c for c in j["channels"] if c["source"] == "dcgm"}
assert sorted(d) == ["dcgm/cpu0", "dcgm/cpu0/module", "dcgm/cpu0/sysio", "dcgm/cpu1",
                     "dcgm/gpu0", "dcgm/gpu1"], sorted(d)
for n in ("dcgm/cpu0", "dcgm/cpu1"):
    assert (d[n]["kind"], d[n]["zone"], d[n]["domain"]) == ("cpu", "cpu_rail", "component"), d[n]
hw = [c for c in j["channels"] if c["source"] == "hwmon" and c["kind"] == "cpu" and
      c["domain"] == "total"]
assert sorted(c["socket"] for c in hw) == [0, 1], hw
# the rail and SysIO are inside the socket total they belong to; the module reading is not
total = {c["socket"]: c["name"] for c in hw}
for n, s in (("dcgm/cpu0", 0), ("dcgm/cpu0/sysio", 0), ("dcgm/cpu1", 1)):
    assert d[n]["parent"] == total[s], (n, d[n]["parent"])
assert d["dcgm/cpu0/module"]["parent"] is None, d["dcgm/cpu0/module"]
note = [n["note"] for n in j["notes"] if n["source"] == "dcgm"][0]
for s in (0, 1):
    assert "CPU %d: DCGM'"'"'s CPU rail is a component of the CPU measured already, not added" % s \
        in note, note
' sens_grace.out
else
    note "no hwmon source in this build: the grace fixture case is left out"
fi

# ---- carma stat: energy and dcgm_cpu_util ----

rc=$(run_logged stat dcgm "$SC/grace.scenario" "$CARMA" stat --root "$VM" --sources dcgm \
    --json-out stat.json -- sleep 1)
check_rc stat 0 "$rc"
check_clean_stderr stat
check_py "stat: dcgm energy and dcgm_cpu_util equal to the scenario" '
j = load(sys.argv[1])
util = json.loads(sys.argv[2])
for name, w in (("dcgm/cpu0", 151.25), ("dcgm/cpu0/sysio", 22.5), ("dcgm/cpu0/module", 310.75),
                ("dcgm/cpu1", 98.5), ("dcgm/gpu1", 120.0)):
    c = chan(j, name)
    assert c["source"] == "dcgm" and c["covered_s"] > 0.9, c
    assert abs(c["energy_j"] - w * c["covered_s"]) <= 1e-6 * w, (c, w)
    assert abs(c["avg_power_w"] - w) <= 1e-9 * w, (c, w)
assert j["node"]["channels"] == ["dcgm/cpu0", "dcgm/cpu1", "dcgm/gpu0", "dcgm/gpu1"], j["node"]
du = j["command"]["dcgm_cpu_util"]
assert [d["socket"] for d in du] == [0, 1], du
names = ["total", "user", "nice", "sys", "irq"]
for d in du:
    assert list(d) == ["socket"] + names + ["samples"], d
    want = util[str(d["socket"])]
    assert [d[k] for k in names] == want, (d, want)
    # every tick of the command (the probe made DCGM'"'"'s first read, the one without values)
    assert d["samples"] >= 5 and d["samples"] <= j["ticks"], (d, j["ticks"])
' stat.json "$UTIL"
# the text summary: one line per socket, in percent
"$PY" - "$UTIL" >stat.expect <<'EOF'
import json, sys
u = json.loads(sys.argv[1])
for s in sorted(u, key=int):
    t = ["%.1f%%" % (100 * x) for x in u[s]]
    print("  DCGM CPU %-4s utilization %s (user %s, nice %s, sys %s, irq %s; mean of" % (s, *t))
EOF
while IFS= read -r line; do
    check_grep stat.err "$line" "stat: the DCGM utilization line"
done <stat.expect
grep -E "^  DCGM CPU " stat.err | grep -vqE "mean of [0-9]+ readings\)$" &&
    check_fail "stat: a DCGM utilization line without its count: $(grep 'DCGM CPU' stat.err)"

# a socket without utilization values: null figures, 0 samples, never 0
cat >noutil.scenario <<'EOF'
cpu 0 power 100
cpu 1 power 90 util 0.75 0.5 0.125 0.0625 0.0625
EOF
rc=$(run_logged stat_noutil dcgm "$PWD/noutil.scenario" "$CARMA" stat --root "$VM" \
    --sources dcgm --json-out stat_noutil.json -- sleep 0.5)
check_rc stat_noutil 0 "$rc"
check_py "stat: a socket without utilization is null" '
j = load(sys.argv[1])
du = j["command"]["dcgm_cpu_util"]
names = ["total", "user", "nice", "sys", "irq"]
assert [d["socket"] for d in du] == [0, 1], du
assert [du[0][k] for k in names] == [None] * 5 and du[0]["samples"] == 0, du[0]
assert [du[1][k] for k in names] == [0.75, 0.5, 0.125, 0.0625, 0.0625], du[1]
assert du[1]["samples"] >= 3, du[1]
' stat_noutil.json
check_grep stat_noutil.err "  DCGM CPU 0    utilization: no value from DCGM during the command" \
    "stat: the line of a socket without utilization"

# without DCGM CPU entities: nothing of it (the golden records stay as they are)
rc=$(run_logged stat_none "$CARMA" stat --root "$VM" --json-out stat_none.json -- sleep 0.3)
check_rc stat_none 0 "$rc"
rc=$(run_logged stat_gpu dcgm "$SC/nosysmon.scenario" "$CARMA" stat --root "$VM" \
    --sources dcgm --json-out stat_gpu.json -- sleep 0.3)
check_rc stat_gpu 0 "$rc"
for f in stat_none stat_gpu; do
    check_py "$f: no dcgm_cpu_util" '
j = load(sys.argv[1])
assert "dcgm_cpu_util" not in j["command"], j["command"]
' "$f.json"
    check_no_grep "$f.err" "DCGM CPU" "$f: no DCGM utilization line"
done

# ---- carma run: cpu_util.csv ----

# rows(path, width): a journal's CRLF-ended rows (header first), each of width plain fields
ROWS='
def rows(path, width):
    data = open(path, "rb").read()
    assert data.endswith(b"\r\n"), "%s does not end with CRLF" % path
    lines = data.decode("utf-8").split("\r\n")[:-1]
    assert all("\n" not in l and "\r" not in l and "\"" not in l for l in lines), lines
    out = [l.split(",") for l in lines]
    for k, r in enumerate(out):
        assert len(r) == width, "line %d of %s has %d fields, not %d" % (k + 1, path, len(r), width)
    return out
'

cat >tiny.json <<'EOF'
{"experiment_name": "tiny", "workloads": [{"name": "nap", "script": "sleep", "args": ["0.5"]}]}
EOF
# run_dir NAME SCENARIO: carma run of tiny.json on the fake; prints the run directory
run_dir() {
    local name=$1 sc=$2 rc
    rc=$(run_logged "$name" dcgm "$sc" "$CARMA" run --root "$VM" --sources dcgm --baseline 0.3 \
        -o "runs_$name" tiny.json)
    check_rc "$name" 0 "$rc"
    check_clean_stderr "$name"
    head -n 1 "$name.out"
}
RD=$(run_dir run "$SC/grace.scenario")
[ -d "$RD" ] || fail "carma run made no run directory: $(show run.out run.err)"
check_py "run: cpu_util.csv beside node_util.csv" "$ROWS"'
d, util = sys.argv[1], json.loads(sys.argv[2])
cu = rows(os.path.join(d, "cpu_util.csv"), 8)
assert cu[0] == ["timestamp_unix", "socket", "source", "util_total", "util_user", "util_nice",
                   "util_sys", "util_irq"], cu[0]
nu = rows(os.path.join(d, "node_util.csv"), 4)[1:]
assert len(nu) >= 5, nu
body = cu[1:]
assert len(body) == 2 * len(nu), (len(body), len(nu))
for k, r in enumerate(nu):
    pair = body[2 * k:2 * k + 2]
    assert [p[0] for p in pair] == [r[0], r[0]], (pair, r)
    assert [p[1] for p in pair] == ["0", "1"], pair
    for p in pair:
        assert p[2] == "dcgm", p
        # the first row too: DCGM'"'"'s first read (no values) was the probe'"'"'s
        assert all(re.fullmatch(r"[0-9]+(\.[0-9]{1,6})?", x) for x in p[3:]), p
        assert [float(x) for x in p[3:]] == util[p[1]], (p, util[p[1]])
m = load(os.path.join(d, "manifest.json"))
assert m["schema_versions"].get("cpu_util_csv") == 1, m["schema_versions"]
' "$RD" "$UTIL"

RD2=$(run_dir run_noutil "$PWD/noutil.scenario")
check_py "run: blank cells for a socket without utilization" "$ROWS"'
cu = rows(os.path.join(sys.argv[1], "cpu_util.csv"), 8)[1:]
assert cu, "no rows"
for r in cu:
    if r[1] == "0":
        assert r[2:] == ["dcgm", "", "", "", "", ""], r
    else:
        assert r[1:] == ["1", "dcgm", "0.75", "0.5", "0.125", "0.0625", "0.0625"], r
assert sorted(set(r[1] for r in cu)) == ["0", "1"], cu
' "$RD2"

RD3=$(run_dir run_gpu "$SC/nosysmon.scenario")
[ -e "$RD3/cpu_util.csv" ] && check_fail "run without DCGM CPU entities: a cpu_util.csv"
check_py "run without DCGM CPU entities: no cpu_util_csv schema" '
m = load(os.path.join(sys.argv[1], "manifest.json"))
assert "cpu_util_csv" not in m["schema_versions"], m["schema_versions"]
' "$RD3"

# ---- carma sensors: why the dcgm source is unavailable ----

# unavailable NAME MESSAGE CMD...: CMD (a carma sensors) exits 0, has no dcgm channel, and
# gives MESSAGE as the dcgm source's reason, in the table and in --json
unavailable() {
    local name=$1 msg=$2 rc
    shift 2
    rc=$(run_logged "$name" "$@")
    check_rc "$name" 0 "$rc"
    check_clean_stderr "$name"
    grep -qF -- "  dcgm   $msg" "$name.out" ||
        check_fail "$name: the reason '$msg' not found: $(cat "$name.out")"
    check_no_grep "$name.out" "dcgm/" "$name: no dcgm channel"
    rc=$(run_logged "$name.json" "$@" --json)
    check_rc "$name.json" 0 "$rc"
    check_py "$name --json: the reason" '
j = load(sys.argv[1])
u = [x["reason"] for x in j["unavailable"] if x["source"] == "dcgm"]
assert u == [sys.argv[2]], (u, sys.argv[2])
assert not [c for c in j["channels"] if c["source"] == "dcgm"], j["channels"]
' "$name.json.out" "$msg"
}

S=(sensors --root "$VM" --sources dcgm)
CARMA_DCGM_LIBRARY=/nonexistent unavailable nolib \
    "/nonexistent not found (CARMA_DCGM_LIBRARY names a file that is not there)" \
    "$CARMA" "${S[@]}"
CARMA_DCGM_LIBRARY="$NOSYM" CARMA_FAKE_DCGM_SCENARIO="$SC/grace.scenario" unavailable nosym \
    "$NOSYM lacks the DCGM call dcgmEntitiesGetLatestValues: not a DCGM library, or one too old (DCGM 3 or later is needed)" \
    "$CARMA" "${S[@]}"
unavailable refused \
    "the embedded DCGM engine refused to start: DCGM initialization error (DCGM error -7): check that the NVIDIA driver is loaded and that DCGM is installed completely (its modules beside the library), or read through a running nv-hostengine (--dcgm-host 127.0.0.1)" \
    dcgm "$SC/refused.scenario" "$CARMA" "${S[@]}"
unavailable empty \
    "DCGM sees no CPU entity and no GPU: no CPU entity: DCGM's sysmon module is not loaded (not a Grace machine, or a CPU that is not NVIDIA's)" \
    dcgm "$SC/empty.scenario" "$CARMA" "${S[@]}"
unavailable nohost \
    "cannot connect to nv-hostengine at 10.9.9.9: The connection to the host engine is not valid any longer (DCGM error -21): start it (systemctl start nvidia-dcgm, or nv-hostengine), check HOST and PORT (default 5555), or leave --dcgm-host out to use DCGM's embedded engine" \
    dcgm "$SC/hostengine.scenario" "$CARMA" "${S[@]}" --dcgm-host 10.9.9.9
unavailable below_root \
    "DCGM is not read below --root $VM (set CARMA_DCGM_LIBRARY to use it anyway)" \
    env -u CARMA_DCGM_LIBRARY "$CARMA" "${S[@]}"

# no sysmon, one GPU: usable, with the note; the host engine's own address connects
for h in "" 10.1.2.3:5555; do
    name=gpuonly sc=nosysmon
    [ -n "$h" ] && name=gpuonly_host sc=hostengine
    rc=$(run_logged "$name" dcgm "$SC/$sc.scenario" "$CARMA" "${S[@]}" ${h:+--dcgm-host "$h"})
    check_rc "$name" 0 "$rc"
    grep -qE "^dcgm +dcgm/gpu0 +gpu +total +measured" "$name.out" ||
        check_fail "$name: no dcgm/gpu0 channel: $(cat "$name.out")"
    check_grep "$name.out" \
        "  dcgm   no CPU entity: DCGM's sysmon module is not loaded (not a Grace machine, or a CPU that is not NVIDIA's)" \
        "$name: the sysmon note"
    check_no_grep "$name.out" "dcgm/cpu" "$name: no CPU channel"
done

# bad --dcgm-host values: usage errors (status 2), said once, nothing measured
for h in host:0 :5555 host:65536 host:abc ""; do
    rc=$(run_logged badhost dcgm "$SC/hostengine.scenario" "$CARMA" "${S[@]}" --dcgm-host "$h")
    check_rc "badhost '$h'" 2 "$rc"
    check_eq "$(cat badhost.err)" \
        "carma: --dcgm-host: '$h' is not HOST or HOST:PORT (a port 1..65535; nv-hostengine listens on 5555)" \
        "--dcgm-host '$h': the message"
    check_eq "$(wc -c <badhost.out)" 0 "--dcgm-host '$h': nothing on stdout"
done
rc=$(run_logged badhost_stat dcgm "$SC/hostengine.scenario" "$CARMA" stat --root "$VM" \
    --dcgm-host :5555 -- true)
check_rc "stat --dcgm-host :5555" 2 "$rc"
check_grep badhost_stat.err "carma: --dcgm-host: ':5555' is not HOST or HOST:PORT" \
    "stat --dcgm-host :5555: the message"

cli_done
