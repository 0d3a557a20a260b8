#!/usr/bin/env bash
# The run directory of `carma stat -o DIR`: manifest.json (schema and carma versions, host,
# channels with kind/domain/method, options, status), samples.csv (exact header, CRLF, RFC
# 4180 quoting, ISO 8601 local timestamps with their UTC offset, one row per channel per
# tick, cumulative joules that never decrease and end at the summary's energy) and
# summary.json (the same bytes as --json-out); an existing measurement or other files in -o DIR
# refused (exit 2) and left whole, an empty DIR used, two carmas racing for one DIR: one wins.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

HEADER='timestamp_unix,timestamp_local,channel,source,kind,domain,method,watts,joules_total'
version=$("$CARMA" --version | awk '{print $2}')
[ -n "$version" ] || fail "carma --version printed nothing"

# a live tree when the plant is built (counters that move), else the static fixture
if [ -x "$PLANT" ]; then
    live_tree intel-2s tree
    start_plant tree "$PLANT_CONFIGS/intel-2s.conf" truth.csv
    live=1
else
    copy_tree intel-2s tree
    live=0
    note "no $PLANT: the run directory is checked on a static tree"
fi
# a zone offset with minutes, so that a wrong or missing offset shows
rc=$(run_logged run env TZ=XYZ-5:30 "$CARMA" stat --root tree --interval 50ms -o run \
    --json-out out.json -- sleep 0.6)
[ "$live" = 1 ] && stop_plant
check_rc run 0 "$rc"
check_clean_stderr run
need_file run/manifest.json run/samples.csv run/summary.json out.json

cmp -s run/summary.json out.json ||
    check_fail "run/summary.json differs from the --json-out file: $(diff run/summary.json out.json | head -5)"

check_py "manifest.json" '
m = load(sys.argv[1])
s = load(sys.argv[2])
version, hostname, kernel, live = sys.argv[3:7]
assert m["schema_version"] == 1 and type(m["schema_version"]) is int, m.get("schema_version")
assert m["carma_version"] == version, (m["carma_version"], version)
h = m["host"]
assert h["hostname"] == hostname and h["kernel"] == kernel, h
assert h["cpu_model"] == "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", h
assert m["options"]["interval_s"] == 0.05, m["options"]
assert m["command"] == ["sleep", "0.6"], m["command"]
assert m["status"] == "complete", m["status"]
mc = m["channels"]
assert [c["name"] for c in mc] == [c["name"] for c in s["channels"]], "manifest and summary channels differ"
assert sorted(c["name"] for c in mc) == sorted(["rapl/package-0", "rapl/package-0/core", "rapl/package-0/dram", "rapl/package-1", "rapl/package-1/core", "rapl/package-1/dram"]), [c["name"] for c in mc]
for c, sc in zip(mc, s["channels"]):
    for k in ("source", "kind", "domain", "method"):
        assert c[k] == sc[k], "%s: manifest %s %r, summary %r" % (c["name"], k, c[k], sc[k])
want = {"rapl/package-0/core": ("cpu", "component"), "rapl/package-0/dram": ("dram", "total"), "rapl/package-1": ("cpu", "total")}
for name, (kind, domain) in want.items():
    c = [c for c in mc if c["name"] == name][0]
    assert (c["kind"], c["domain"], c["method"]) == (kind, domain, "measured"), c
' run/manifest.json run/summary.json "$version" "$(uname -n)" "$(uname -r)" "$live"

check_py "samples.csv" '
from datetime import datetime, timedelta, timezone
rows = csv_rows(sys.argv[1])
m = load(sys.argv[2])
s = load(sys.argv[3])
live = sys.argv[5] == "1"
assert ",".join(rows[0]) == sys.argv[4], rows[0]
chans = m["channels"]
n = len(chans)
body = rows[1:]
assert body and len(body) % n == 0, "%d rows for %d channels" % (len(body), n)
ticks = [body[k:k + n] for k in range(0, len(body), n)]
assert len(ticks) == s["ticks"], "%d ticks in samples.csv, %d in the summary" % (len(ticks), s["ticks"])
iso = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?[+-]\d\d:\d\d$")
prev_t = None
spacing = []
for t in ticks:
    t0 = t[0][0]
    assert re.match(r"^\d{10,}\.\d{6}$", t0), "timestamp_unix %r" % t0
    for r, c in zip(t, chans):
        assert r[0] == t0 and r[1] == t[0][1], "one tick, two timestamps: %r" % t
        assert r[2:7] == [c["name"], c["source"], c["kind"], c["domain"], c["method"]], "row %r for channel %r" % (r, c)
    loc = t[0][1]
    assert iso.match(loc), "timestamp_local %r is not ISO 8601 with a UTC offset" % loc
    assert loc.endswith("+05:30"), "timestamp_local %r: TZ=XYZ-5:30 is UTC+05:30" % loc
    d = datetime.fromisoformat(loc)
    assert abs(d.timestamp() - float(t0)) < 2e-6, "timestamp_local %r is not timestamp_unix %s" % (loc, t0)
    if prev_t is not None:
        assert float(t0) > prev_t, "time goes back at %s" % t0
        spacing.append(float(t0) - prev_t)
    prev_t = float(t0)
spacing.sort()
med = spacing[len(spacing) // 2]
assert 0.04 <= med <= 0.075, "median tick spacing %.4f s for --interval 50ms" % med
for i, c in enumerate(chans):
    col = [t[i] for t in ticks]
    joules = [float(r[8]) for r in col if r[8] != ""]
    assert len(joules) == len(col), "%s: blank joules_total on a good tree" % c["name"]
    assert all(b >= a for a, b in zip(joules, joules[1:])), "%s: joules_total decreases: %s" % (c["name"], joules)
    watts = [float(r[7]) for r in col if r[7] != ""]
    assert len(watts) >= len(col) - 1, "%s: blank watts cells" % c["name"]
    assert all(w >= 0 for w in watts), "%s: negative watts" % c["name"]
    e = chan(s, c["name"])["energy_j"]
    # the summary counts from the tick before the command (the first or the second row)
    ok = [k for k in (0, 1) if abs((joules[-1] - joules[k]) - e) <= 2e-6 + 1e-9 * e]
    assert ok, "%s: summary energy_j %r, samples.csv joules %r .. %r" % (c["name"], e, joules[:2], joules[-1])
    if live:
        assert e > 0 and watts and max(watts) > 0, "%s: nothing measured on a live tree" % c["name"]
' run/samples.csv run/manifest.json run/summary.json "$HEADER" "$live"

# --- a channel name that needs quoting (a zone named weird,"zone") is quoted per RFC 4180
rc=$(run_logged odd "$CARMA" stat -q --root "$BAD_FIXTURES/rapl-oddname" --interval 20ms \
    -o odd -- sleep 0.1)
check_rc odd 0 "$rc"
check_clean_stderr odd
check_grep odd/samples.csv ',"rapl/package-0/weird,""zone""",rapl,other,component,measured,' \
    "quoted channel name in samples.csv"
check_py "odd channel name" '
rows = csv_rows(sys.argv[1])
m = load(sys.argv[2])
name = "rapl/package-0/weird,\"zone\""
c = chan(m, name)
assert (c["kind"], c["domain"], c["socket"]) == ("other", "component", 0), c
assert sum(1 for r in rows[1:] if r[2] == name) == load(sys.argv[3])["ticks"], "rows of %s" % name
' odd/samples.csv odd/manifest.json odd/summary.json

# --- -o creates missing parents; a second run into the same directory is refused before it
# measures anything (exit 2), naming what is there, and the first run's files are left whole
rc=$(run_logged nest "$CARMA" stat -q --root "$CARMA_FIXTURES/amd-server" --interval 20ms \
    -o deep/er/run -- true)
check_rc nest 0 "$rc"
need_file deep/er/run/manifest.json deep/er/run/samples.csv deep/er/run/summary.json
sum_before=$(cat deep/er/run/* | md5sum)
rm -f ran
rc=$(run_logged again "$CARMA" stat -q --root "$CARMA_FIXTURES/vm-empty" --interval 20ms \
    -o deep/er/run -- touch ran)
check_rc again 2 "$rc"
check_grep again.err "carma: stat: -o deep/er/run: deep/er/run already holds a measurement (manifest.json: carma stat, status complete, written 20" \
    "second run into the same directory: refused, naming the measurement"
check_grep again.err "also samples.csv, summary.json), which carma never overwrites: give another -o DIR, or remove deep/er/run first" \
    "second run into the same directory: what is there and what to do"
[ -e ran ] && check_fail "second run into the same directory: the command ran"
check_eq "$(cat deep/er/run/* | md5sum)" "$sum_before" "second run: the first run's files unchanged"
check_eq "$(ls deep/er/run | tr '\n' ' ')" "manifest.json samples.csv summary.json " \
    "second run: nothing added"

# an empty directory is used, and so is one holding other files (a job's logs): they stay; one
# holding a file the measurement writes is refused, naming it
mkdir empty_dir
rc=$(run_logged empty "$CARMA" stat -q --root "$CARMA_FIXTURES/vm-empty" --interval 20ms \
    -o empty_dir -- true)
check_rc empty 0 "$rc"
need_file empty_dir/manifest.json empty_dir/samples.csv empty_dir/summary.json
mkdir -p other_dir/sub
: >other_dir/notes.txt
rc=$(run_logged other "$CARMA" stat -q --root "$CARMA_FIXTURES/vm-empty" --interval 20ms \
    -o other_dir -- true)
check_rc other 0 "$rc"
check_eq "$(ls other_dir | tr '\n' ' ')" "manifest.json notes.txt samples.csv sub summary.json " \
    "a directory of other files: used, they stay"
mkdir part_dir
echo "earlier rows" >part_dir/samples.csv
rc=$(run_logged part "$CARMA" stat -q --root "$CARMA_FIXTURES/vm-empty" --interval 20ms \
    -o part_dir -- true)
check_rc part 2 "$rc"
check_grep part.err "carma: stat: -o part_dir: part_dir holds files of an earlier measurement (samples.csv), which carma never overwrites nor mixes with a new one" \
    "an earlier measurement's file without its manifest: refused, named"
check_eq "$(cat part_dir/samples.csv)" "earlier rows" "an earlier measurement's file: untouched"

# a command that cannot be started: the manifest says failed, not running
rc=$(run_logged nocmd "$CARMA" stat -q --root "$CARMA_FIXTURES/vm-empty" --interval 20ms \
    -o nocmd -- ./no-such-command)
check_rc nocmd 127 "$rc"
check_eq "$(json_get nocmd/manifest.json 'j["status"]')" failed "a command not found: status"
"$CARMA" report nocmd >nocmd.report 2>&1
check_grep nocmd.report 'manifest.json says "failed": the command could not be started' \
    "a command not found: carma report says so"

# two carmas given the same new directory at once: one measures, the other is refused
for i in 1 2 3; do
    "$CARMA" stat -q --root "$CARMA_FIXTURES/vm-empty" --interval 20ms -o "race$i" -- sleep 0.3 \
        >"race${i}a.out" 2>"race${i}a.err" &
    pa=$!
    "$CARMA" stat -q --root "$CARMA_FIXTURES/vm-empty" --interval 20ms -o "race$i" -- sleep 0.3 \
        >"race${i}b.out" 2>"race${i}b.err" &
    pb=$!
    ra=0 rb=0
    wait "$pa" || ra=$?
    wait "$pb" || rb=$?
    check_eq "$(printf '%s\n' "$ra" "$rb" | sort | tr '\n' ' ')" "0 2 " \
        "two carmas into race$i: exit statuses"
    check_eq "$(json_get "race$i/manifest.json" 'j["status"]')" complete "race$i: the winner's manifest"
done

cli_done
