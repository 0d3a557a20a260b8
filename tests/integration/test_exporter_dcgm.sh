#!/usr/bin/env bash
# carma exporter --compat srtctl: srt-slurm's CPU family chosen at start (--srt-source), with
# the fake libdcgm (tests/fakes/fake_dcgm.c) standing in for DCGM:
#   - --srt-source dcgm on the grace scenario: the cpu_power_dcgm_watts family byte for byte
#     (values worked out by hand from tests/fakes/dcgm/grace.scenario: field 1130 of CPU 0 is
#     151.25 W, of CPU 1 98.5 W; SysIO, module and GPUs are not in the family), no
#     cpu_power_acpi_watts, `promtool check metrics` clean, the startup line names the family;
#   - auto on the grace fixture (ACPI socket totals that read > 0) picks ACPI, even with DCGM
#     readable beside it; auto on a tree without ACPI sensors but with DCGM picks DCGM;
#   - dcgm where DCGM reads no CPU power (nosensor.scenario): exit 2, "DCGM yielded no live
#     data"; dcgm without the library: exit 2, "DCGM unavailable"; auto with neither: exit 2
#     naming both; --sources without dcgm, and --srt-source without --compat srtctl: exit 2.
# Every exporter started here is stopped by its pid (lib.sh's exit trap), on failure too.
# shellcheck source=lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

PROMTOOL=${PROMTOOL:-/usr/bin/promtool}
command -v curl >/dev/null || skip "curl is not installed"
[ -x "$PROMTOOL" ] || skip "$PROMTOOL is not installed (Debian package prometheus)"
FAKE_DCGM=${CARMA_FAKE_DCGM:-$CARMA_BUILD/tests/fakes/libdcgm.so.4}
SCEN="$CARMA_SRC/tests/fakes/dcgm"
need_file "$FAKE_DCGM" "$SCEN/grace.scenario" "$SCEN/nosensor.scenario"

# shellcheck source=exporter_lib.sh
. "$CARMA_SRC/tests/integration/exporter_lib.sh"

# expect_exit NAME STATUS TEXT ARGS...: carma exporter ARGS exits with STATUS and says TEXT.
expect_exit() {
    local name=$1 want=$2 text=$3 rc=0
    shift 3
    "$CARMA" exporter "$@" --listen 127.0.0.1:0 --interval 50ms 2>"$name.err" >/dev/null || rc=$?
    ok=1
    [ "$rc" = "$want" ] && grep -qF -- "$text" "$name.err" && ok=0
    check "$ok" "$name: exit $want ($rc) with '$text': $(cat "$name.err")"
}

# ---- --srt-source dcgm on the grace scenario
export CARMA_DCGM_LIBRARY="$FAKE_DCGM" CARMA_FAKE_DCGM_SCENARIO="$SCEN/grace.scenario"
start_exporter dcgm --root "$CARMA_FIXTURES/vm-empty" --compat srtctl --srt-source dcgm --interval 50ms
sleep 0.15
curl -sS -o dcgm.prom "$EXP_URL/metrics"
# end to end: carma collect --srt-cpu scrapes this exporter as srt-slurm's head node would
rc=0
"$CARMA" collect --srt-cpu --target "${EXP_URL#http://}" -o srtcol --duration 1s \
    --interval 250ms >srtcol.out 2>srtcol.err || rc=$?
check "$rc" "collect --srt-cpu of the dcgm exporter: exit 0 ($rc): $(cat srtcol.err)"
python3 - "${EXP_URL#http://}" <<'PY' >srtcol.check 2>&1
import json, re, sys
host = sys.argv[1].rsplit(":", 1)[0]
rows = open("srtcol/power/cpu/samples.csv", newline="").read().split("\r\n")
assert rows[0] == "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w", rows[0]
body = [r for r in rows[1:] if r]
assert len(body) >= 4 and len(body) % 2 == 0, body
for k, r in enumerate(body):
    sock = k % 2
    want = r"1,\d+\.\d{6}," + re.escape(host) + r",dcgm,CPU%d:cpuPowerUsageW,%d,%s,249\.75" % (
        sock, sock, ("151.25", "98.5")[sock])
    assert re.fullmatch(want, r), (r, want)
m = json.load(open("srtcol/power/cpu/cpu_manifest.json"))
node = m["nodes"][host]
assert node["resolved_mode"] == "dcgm" and node["error_count"] == 0, node
PY
check $? "collect --srt-cpu: power/cpu/samples.csv holds the DCGM rails (151.25 + 98.5 = 249.75 W): $(cat srtcol.check)"
stop_exporter TERM
printf '%s\n' \
    '# HELP cpu_power_dcgm_watts Grace CPU instantaneous power via DCGM field 1130 (W).' \
    '# TYPE cpu_power_dcgm_watts gauge' \
    'cpu_power_dcgm_watts{socket="0",source="dcgm"} 151.250000' \
    'cpu_power_dcgm_watts{socket="1",source="dcgm"} 98.500000' >dcgm.want
sed -n '/^# HELP cpu_power_dcgm_watts /,$p' dcgm.prom >dcgm.got
cmp -s dcgm.got dcgm.want
check $? "dcgm: the cpu_power_dcgm_watts family byte for byte (got: $(cat dcgm.got))"
! grep -q cpu_power_acpi_watts dcgm.prom
check $? "dcgm: no cpu_power_acpi_watts family"
grep -q '^carma_power_watts{.*channel="dcgm/cpu0",' dcgm.prom
check $? "dcgm: carma's own families are still there"
rc=0
lint=$("$PROMTOOL" check metrics <dcgm.prom 2>&1) || rc=$?
echo "# promtool check metrics (dcgm, $(wc -l <dcgm.prom) lines): rc $rc${lint:+: $lint}"
check "$([ "$rc" = 0 ] && [ -z "$lint" ] && echo 0 || echo 1)" \
    "dcgm: promtool check metrics: no error, no lint problem"
grep -qxF 'carma: exporter: --compat srtctl: serving cpu_power_dcgm_watts (--srt-source dcgm: DCGM reads a positive value on 2 of 2 CPU sockets)' dcgm.err
check $? "dcgm: the startup line says the family and why: $(head -1 dcgm.err)"

# ---- auto: ACPI socket totals that read win, DCGM readable or not
start_exporter auto-acpi --root "$CARMA_FIXTURES/grace" --compat srtctl --interval 50ms
sleep 0.15
curl -sS -o auto-acpi.prom "$EXP_URL/metrics"
stop_exporter TERM
n=$(grep -c '^cpu_power_acpi_watts{' auto-acpi.prom)
check "$([ "$n" = 28 ] && ! grep -q cpu_power_dcgm_watts auto-acpi.prom && echo 0 || echo 1)" \
    "auto on grace: 28 cpu_power_acpi_watts lines ($n), no cpu_power_dcgm_watts"
grep -q '^carma: exporter: --compat srtctl: serving cpu_power_acpi_watts (--srt-source auto: [0-9]* of [0-9]* ACPI socket-total sensors read a positive value)$' auto-acpi.err
check $? "auto on grace: the startup line says ACPI and why: $(head -1 auto-acpi.err)"

# ---- auto: no ACPI sensor, DCGM reads
start_exporter auto-dcgm --root "$CARMA_FIXTURES/vm-empty" --compat srtctl --srt-source auto --interval 50ms
sleep 0.15
curl -sS -o auto-dcgm.prom "$EXP_URL/metrics"
stop_exporter TERM
sed -n '/^# HELP cpu_power_dcgm_watts /,$p' auto-dcgm.prom >auto-dcgm.got
cmp -s auto-dcgm.got dcgm.want && ! grep -q cpu_power_acpi_watts auto-dcgm.prom
check $? "auto without ACPI: the cpu_power_dcgm_watts family, byte for byte"
grep -qF 'serving cpu_power_dcgm_watts (--srt-source auto: no ACPI power_meter socket-total sensor below' auto-dcgm.err
check $? "auto without ACPI: the startup line says DCGM and why: $(head -1 auto-dcgm.err)"

# ---- failures at start
expect_exit badvalue 2 "carma: --srt-source: 'bogus' is not known (known: auto, acpi, dcgm)" \
    --root "$CARMA_FIXTURES/vm-empty" --compat srtctl --srt-source bogus
CARMA_FAKE_DCGM_SCENARIO="$SCEN/nosensor.scenario" expect_exit nosensor 2 \
    "carma: exporter: --srt-source dcgm: DCGM yielded no live data: " \
    --root "$CARMA_FIXTURES/vm-empty" --compat srtctl --srt-source dcgm
CARMA_DCGM_LIBRARY="$PWD/no-such/libdcgm.so.4" expect_exit nolib 2 \
    "carma: exporter: --srt-source dcgm: DCGM unavailable: $PWD/no-such/libdcgm.so.4 not found" \
    --root "$CARMA_FIXTURES/vm-empty" --compat srtctl --srt-source dcgm
CARMA_DCGM_LIBRARY="$PWD/no-such/libdcgm.so.4" expect_exit neither 2 \
    "--srt-source auto: neither ACPI nor DCGM reads: no ACPI power_meter socket-total sensor below $CARMA_FIXTURES/intel-2s; DCGM unavailable: " \
    --root "$CARMA_FIXTURES/intel-2s" --compat srtctl
expect_exit sources 2 "--srt-source dcgm reads the dcgm source, which --sources leaves out" \
    --root "$CARMA_FIXTURES/vm-empty" --sources hwmon,model --compat srtctl --srt-source dcgm
expect_exit nocompat 2 "--srt-source dcgm goes with --compat srtctl" \
    --root "$CARMA_FIXTURES/vm-empty" --srt-source dcgm
for f in badvalue nosensor nolib neither sources nocompat; do
    ! grep -q '^listening on' "$f.err"
    check $? "$f: never listened"
done

[ "$failures" -eq 0 ] || fail "$failures check(s) failed"
echo "all checks passed"
