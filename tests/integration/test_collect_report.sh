#!/usr/bin/env bash
# carma report of carma collect directories:
#   (a) directories made by collectref/gen_collect.py (seeded random: several nodes, gaps,
#       an exporter restart, blank rows, dcgm-exporter GPU rows, a torn last line) against the
#       numpy reference collectref/collect_report_ref.py, every number within 1e-9 relative;
#   (b) a real carma collect of two carma exporters, each over its own simulated power plant:
#       each node's energy within 1 % of its plant's truth;
#   (c) bad samples.csv / nodes.csv rows and windows files: `error: FILE:LINE: what`, exit 1;
#   (d) windows from the command line (Unix and ISO 8601), a CSV and a JSON file agree, and an
#       srt-slurm log directory around the collect directory gives its benchmark windows with
#       their tokens (J/token checked against the reference).
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

REF="$CARMA_SRC/tests/integration/collectref"
need_file "$REF/gen_collect.py" "$REF/collect_report_ref.py" "$REF/compare.py"

# compare NAME DIR [ARGS...]: carma report DIR --json ARGS against the reference with ARGS.
compare() {
    local name=$1 dir=$2 rc
    shift 2
    rc=$(run_logged "$name" "$CARMA" report "$dir" --json "$@")
    check_rc "$name" 0 "$rc"
    [ "$rc" = 0 ] || return 0
    "$PY" "$REF/collect_report_ref.py" "$dir" "$@" >"$name.ref.json" 2>"$name.ref.err" ||
        { check_fail "$name: the reference failed: $(tail -n 1 "$name.ref.err")"; return 0; }
    "$PY" "$REF/compare.py" "$name.out" "$name.ref.json" >"$name.cmp" ||
        check_fail "$name: carma and the reference differ: $(head -n 4 "$name.cmp")"
    note "$name: $(tail -n 1 "$name.cmp")"
}

# ---- (a) generated directories against the numpy reference ----
"$PY" "$REF/gen_collect.py" g1 --seed 1 --nodes 4 --torn || fail "gen g1"
"$PY" "$REF/gen_collect.py" g2 --seed 7 --nodes 6 --duration 200 --interval 0.5 || fail "gen g2"
"$PY" "$REF/gen_collect.py" g3 --seed 3 --nodes 1 --duration 100 --interval 2 || fail "gen g3"
compare a1 g1 --window mid=1796000010.5,1796000070.25 --window early=1795999990,1796000005.5 \
    --window late=1796000110.3,1796000140 --window down=1796000041,1796000059
compare a2 g2 --window w=1796000033.3,1796000151.7 --max-gap 5
compare a3 g3 --window w=1796000003,1796000097
check_py "a1: the torn last line is skipped with a warning, the down node is named" '
j = load("a1.out")
assert any("g1/samples.csv:" in w and "the last line has no line end" in w for w in j["warnings"]), j["warnings"]
down = [w for w in j["warnings"] if "window '"'"'down'"'"': node node01 was down for" in w]
assert len(down) == 1 and "its energy there is missing" in down[0], j["warnings"]
w = [w for w in j["windows"] if w["name"] == "down"][0]
n1 = [n for n in w["nodes"] if n["node"] == "node01"][0]
assert n1["down"] and n1["energy_j"] == 0 and n1["covered_s"] == 0, n1
assert j["windows"][0]["name"] == "run" and j["kind"] == "collect", j.keys()
# the exporter restart: one reset per counter of node02, the trapezoid beside it
c = [c for c in j["windows"][0]["channels"] if c["node"] == "node02" and c["channel"] == "rapl/package-0"][0]
assert c["resets"] == 1 and c["energy_source"] == "counter" and abs(c["drift_pct"]) < 5, c
# dcgm GPUs: added to node01 (no nvml channel), not to node00 (it has one)
ns = {n["node"]: n for n in j["windows"][0]["nodes"]}
assert ns["node00"]["dcgm_gpus_added"] == 0 and ns["node01"]["dcgm_gpus_added"] == 2, ns
assert ns["node01"]["method"] == "measured" and ns["node03"]["basis"] == "channels", ns
'
# the reference can tell: a gap limit it does not share makes them differ
rc=$(run_logged mut "$CARMA" report g1 --json --max-gap 30)
"$PY" "$REF/collect_report_ref.py" g1 >mut.ref.json
"$PY" "$REF/compare.py" mut.out mut.ref.json >mut.cmp && check_fail "a different gap limit went unnoticed by the comparison"
# text and --json-out (atomic, the same JSON)
rc=$(run_logged text "$CARMA" report g1 --json-out g1.json)
check_rc text 0 "$rc"
check_grep text.out "window run (run)" "text report"
check_grep text.out "node node01 was down for" "text report: the down node"
"$CARMA" report g1 --json >g1.stdout.json 2>/dev/null
cmp -s g1.json g1.stdout.json || check_fail "--json-out and --json differ"

# ---- (c) bad inputs ----
bad() { # bad NAME SED_EXPR FILE WANT
    rm -rf "$1" && cp -a g3 "$1" && sed -i "$2" "$1/$3"
    local rc
    rc=$(run_logged "$1" "$CARMA" report "$1")
    check_rc "$1" 1 "$rc"
    check_grep "$1.err" "$4" "carma report $1"
}
bad bad_num '3s/,measured,[0-9.]*,/,measured,12x,/' samples.csv "error: bad_num/samples.csv:3: watts: '12x' is not a finite number"
bad bad_cols '4s/,[^,]*$//' samples.csv "error: bad_cols/samples.csv:4: 11 fields, the header has 12"
bad bad_schema '5s/^1,/7,/' samples.csv "error: bad_schema/samples.csv:5: schema_version: '7' is not 1"
bad bad_header '1s/watts/power/' samples.csv "error: bad_header/samples.csv:1: not the header of carma collect's samples.csv"
bad bad_nodes '6s/,measured,[0-9.]*,/,measured,inf,/' nodes.csv "error: bad_nodes/nodes.csv:6: watts: 'inf' is not a finite number"
bad bad_seq '2s/,0,node00,/,-1,node00,/' samples.csv "error: bad_seq/samples.csv:2: scrape_seq: '-1' is not a cycle number"
printf 'name,start,end,tokens\nok,1796000001,1796000002,5\nbad,1796000005,soon,\n' >bad.csv
rc=$(run_logged bad_wcsv "$CARMA" report g3 --windows bad.csv)
check_rc bad_wcsv 1 "$rc"
check_grep bad_wcsv.err "error: bad.csv:3: end: 'soon'" "windows CSV error"
printf '[\n {"name": "ok", "start": 1796000001, "end": 1796000002},\n {"name": "x",\n  "start": 1796000003, "end": 1796000004, "tokens": -3}\n]\n' >bad.json
rc=$(run_logged bad_wjson "$CARMA" report g3 --windows bad.json)
check_rc bad_wjson 1 "$rc"
check_grep bad_wjson.err "error: bad.json:3: tokens: not a number >= 0" "windows JSON error"
rc=$(run_logged bad_wcli "$CARMA" report g3 --window x=1796000009,1796000003)
check_rc bad_wcli 2 "$rc"
check_grep bad_wcli.err "the end is not after the start" "--window error"
rc=$(run_logged bad_region "$CARMA" report g3 --region node00=XXX)
check_rc bad_region 1 "$rc"

# ---- --format html: one page, per-node power over time, energy per node per window by kind ----
rc=$(run_logged html "$CARMA" report g1 --format html -o g1.html --json-out g1h.json \
    --window mid=1796000010.5,1796000070.25)
check_rc html 0 "$rc"
check_py "the collect page" '
import xml.etree.ElementTree as ET
h = open("g1.html").read()
j = load("g1h.json")
svgs = re.findall(r"<svg.*?</svg>", h, re.S)
for s in svgs:
    ET.fromstring(s.replace("&#8201;", " "))
assert "id=\"power-nodes\"" in h, "no per-node power chart"
for i, w in enumerate(j["windows"]):
    assert "id=\"energy-w%d\"" % i in h, "no energy chart for window %s" % w["name"]
assert len(svgs) == 1 + len(j["windows"]), len(svgs)
# every node of the run window in the nodes table, its energy as the JSON has it
for n in j["windows"][0]["nodes"]:
    e = "%.0f" % n["energy_j"]
    shown = e[:-3] + "&#8201;" + e[-3:] if len(e) > 3 else e
    assert "<td class=\"l\">%s</td><td>%s</td>" % (n["node"], shown) in h, (n["node"], shown)
assert "node01 was down for" in h, "the down node is not in the warnings"
assert "<script" not in h and "http://" not in h.replace("http://www.w3.org/2000/svg", ""), "fetches"
'
# ---- --follow: the report of what was collected so far, rewritten each poll ----
mkdir fo && cp g1/manifest.json fo/ && head -n 1 g1/samples.csv >fo/samples.csv
rc=$(run_logged fo1 "$CARMA" report fo --follow --once)
check_rc fo1 0 "$rc"
check_grep fo1.err "carma report: waiting: fo/samples.csv: no power samples" "--follow before the first scrape"
[ -e fo/report.json ] && check_fail "--follow wrote a report of nothing"
# half of the rows, the last one cut in the middle (the collector is writing it)
"$PY" -c '
import sys
d = open("g1/samples.csv", "rb").read()
cut = d.rfind(b"\r\n", 0, len(d) // 2) + 40
open("fo/samples.csv", "wb").write(d[:cut])
open("fo/nodes.csv", "wb").write(open("g1/nodes.csv", "rb").read()[:len(open("g1/nodes.csv", "rb").read()) // 2])
open("rest.csv", "wb").write(d[cut:])'
rc=$(run_logged fo2 "$CARMA" report fo --follow --once)
check_rc fo2 0 "$rc"
check_py "--follow: a report of the first half, the line being written left for later" '
j = load("fo/report.json")
assert j["kind"] == "collect" and not any("no line end" in w for w in j["warnings"]), j["warnings"]
assert 40 < j["windows"][0]["duration_s"] < 80, j["windows"][0]["duration_s"]
assert open("fo/report.txt").read().startswith("carma collect report: fo"), "report.txt"
'
BG_NAME=fo3 carma_bg -- report fo --follow --poll 100ms --json-out fo3.json
sleep 0.5
cat rest.csv >>fo/samples.csv
cp g1/nodes.csv fo/nodes.csv.tmp && mv fo/nodes.csv.tmp fo/nodes.csv
sleep 0.5
kill -TERM "$BG_PID"
rc=0
wait "$BG_PID" || rc=$?
check_eq "$rc" 0 "--follow: exit status after SIGTERM"
"$CARMA" report fo --json >fo.full.json 2>/dev/null
"$PY" -c '
import json, sys
a, b, c = (json.load(open(f)) for f in ("fo/report.json", "fo3.json", "fo.full.json"))
assert a == b, "--json-out and DIR/report.json differ"
assert a == c, "the followed report is not the one of the whole directory"' ||
    check_fail "--follow's final report differs from carma report of the finished directory"
check_grep fo3.err "reports written" "--follow's summary"

# ---- (d) windows: CLI (Unix, ISO 8601), CSV, JSON, srt-slurm ----
printf 'name,start,end,tokens,requests\nw,1796000010.5,1796000050,1000,10\n' >w.csv
printf '[{"name": "w", "start": "2026-12-01T12:13:30.5Z", "end": 1796000050, "tokens": 1000, "requests": 10}]\n' >w.json
"$PY" -c 'import datetime; print(datetime.datetime.fromtimestamp(1796000010.5, datetime.timezone.utc).isoformat())' >iso.txt
iso=$(cat iso.txt)
rc=$(run_logged d_cli "$CARMA" report g1 --json --window "w=$iso,1796000050")
check_rc d_cli 0 "$rc"
rc=$(run_logged d_csv "$CARMA" report g1 --json --windows w.csv)
check_rc d_csv 0 "$rc"
"$PY" -c '
import json, sys, datetime
j = json.load(open(sys.argv[1]))
j[0]["start"] = datetime.datetime.fromtimestamp(1796000010.5, datetime.timezone.utc).isoformat()
json.dump(j, open(sys.argv[1], "w"))' w.json
rc=$(run_logged d_json "$CARMA" report g1 --json --windows w.json)
check_rc d_json 0 "$rc"
check_py "windows from the command line, a CSV and a JSON file agree" '
ws = [[w for w in load(f)["windows"] if w["name"] == "w"][0] for f in ("d_cli.out", "d_csv.out", "d_json.out")]
assert ws[0]["start_unix"] == 1796000010.5 and ws[0]["end_unix"] == 1796000050, ws[0]
for w in ws[1:]:
    assert w["nodes"] == ws[0]["nodes"] and w["start_unix"] == ws[0]["start_unix"], w["name"]
    assert w["tokens"] == 1000 and w["requests"] == 10 and w["source"] == "file", w
    assert abs(w["job"]["j_per_token"] - w["job"]["energy_j"] / 1000) < 1e-12, w["job"]
    assert abs(w["job"]["j_per_request"] - w["job"]["energy_j"] / 10) < 1e-12, w["job"]
assert ws[0]["source"] == "cli" and ws[0]["tokens"] is None, ws[0]
'
for fx in sabench aiperf; do
    cp -a "$CARMA_FIXTURES/srt/$fx" "log_$fx" || fail "copy $fx"
    "$PY" "$REF/gen_collect.py" "log_$fx/collect" --seed 5 --nodes 3 --t0 950 --duration 400 ||
        fail "gen log_$fx"
    rc=$(run_logged "srt_$fx" "$CARMA" report "log_$fx/collect" --json)
    check_rc "srt_$fx" 0 "$rc"
    "$PY" -c '
import json, sys
j = json.load(open(sys.argv[1]))
ws = [{"name": w["name"], "start": w["start_unix"], "end": w["end_unix"], "tokens": w["tokens"]}
      for w in j["windows"] if w["source"] == "srt"]
assert ws, "no srt-slurm windows in %s" % sys.argv[1]
assert all(w["tokens"] for w in ws), ws
json.dump(ws, open(sys.argv[2], "w"))
print(len(ws), "srt-slurm windows:", ", ".join(w["name"] for w in ws))' "srt_$fx.out" "srt_$fx.windows.json" ||
        check_fail "srt_$fx: no srt-slurm windows with tokens"
    "$PY" "$REF/collect_report_ref.py" "log_$fx/collect" --windows-json "srt_$fx.windows.json" >"srt_$fx.ref.json"
    "$PY" "$REF/compare.py" "srt_$fx.out" "srt_$fx.ref.json" >"srt_$fx.cmp" ||
        check_fail "srt_$fx: carma and the reference differ: $(head -n 4 "srt_$fx.cmp")"
done

# ---- (b) a real carma collect of two carma exporters over simulated plants ----
conf="$PLANT_CONFIGS/intel-2s.conf"
need_file "$PLANT" "$conf"
declare -A EPORT
for n in nodeA nodeB; do
    live_tree intel-2s "live_$n"
    "$PLANT" --tree "live_$n" --config "$conf" --truth "truth_$n.csv" --pidfile "plant_$n.pid" \
        >"plant_$n.log" 2>&1 &
    _cleanup_pids+=("$!")
    for ((i = 0; i < 500; i++)); do
        [ -s "plant_$n.pid" ] && break
        sleep 0.01
    done
    [ -s "plant_$n.pid" ] || fail "carma-plant for $n did not start: $(cat "plant_$n.log")"
    SLURMD_NODENAME=$n "$CARMA" exporter --root "live_$n" --listen 127.0.0.1:0 --interval 20ms \
        >"exp_$n.log" 2>&1 &
    _cleanup_pids+=("$!")
    for ((i = 0; i < 500; i++)); do
        EPORT[$n]=$(grep -o 'listening on 127.0.0.1:[0-9]*' "exp_$n.log" | head -n 1 | cut -d: -f2)
        [ -n "${EPORT[$n]}" ] && break
        sleep 0.01
    done
    [ -n "${EPORT[$n]}" ] || fail "carma exporter for $n did not start: $(cat "exp_$n.log")"
done
sleep 0.5
rc=$(run_logged real "$CARMA" collect --target "127.0.0.1:${EPORT[nodeA]}" \
    --target "127.0.0.1:${EPORT[nodeB]}" -o real --required --duration 8s --interval 250ms)
check_rc real 0 "$rc"
rc=$(run_logged real_rep "$CARMA" report real --json)
check_rc real_rep 0 "$rc"
# carma collect --report-follow of its own directory: DIR/report.json while it runs, and at the
# end the report of the finished directory (its manifest's final status)
rc=$(run_logged self "$CARMA" collect --target "127.0.0.1:${EPORT[nodeA]}" -o self \
    --duration 2s --interval 250ms --report-follow self --report-poll 500ms)
check_rc self 0 "$rc"
check_grep self.err " of self written to self/report.json" "collect --report-follow DIR of itself"
"$CARMA" report self --json >self.full.json 2>/dev/null
"$PY" -c '
import json
a, b = json.load(open("self/report.json")), json.load(open("self.full.json"))
assert a == b, "the final report differs from carma report of the directory"
assert a["collect_status"] == "complete", a["collect_status"]' ||
    check_fail "collect --report-follow DIR of itself: its final report is not that of the directory"
"$PY" - real_rep.out truth_nodeA.csv truth_nodeB.csv <<'PYEOF' || check_fail "(b) per-node energy is not within 1 % of the plant truth"
import bisect, csv, json, sys
rep = json.load(open(sys.argv[1]))
run = rep["windows"][0]
cov = {c["node"]: c for c in rep["coverage"]}
bad = 0
for node, tpath in (("nodeA", sys.argv[2]), ("nodeB", sys.argv[3])):
    rows = list(csv.DictReader(open(tpath)))
    ts = [float(r["timestamp_unix"]) for r in rows]
    cols = ["package-0_j", "package-0-dram_j", "package-1_j", "package-1-dram_j"]
    def at(t):
        i = min(max(bisect.bisect_left(ts, t), 1), len(ts) - 1)
        f = (t - ts[i - 1]) / (ts[i] - ts[i - 1])
        return sum(float(rows[i - 1][c]) + f * (float(rows[i][c]) - float(rows[i - 1][c])) for c in cols)
    c = cov[node]
    truth = at(c["last_sample_unix"]) - at(c["first_sample_unix"])
    n = [x for x in run["nodes"] if x["node"] == node][0]
    err = abs(n["energy_j"] - truth) / truth
    print("%s: carma %.3f J (%s, %s), plant truth %.3f J: %.3f %%" %
          (node, n["energy_j"], n["basis"], n["energy_source"], truth, 100 * err))
    bad += err > 0.01 or n["basis"] != "nodes.csv" or n["energy_source"] != "counter" or n["down"]
sys.exit(1 if bad else 0)
PYEOF

cli_done
