#!/usr/bin/env bash
# Every number honest on a machine that lacks something:
#   - no power sensor (vm-empty, its proc/stat kept live by the plant): `carma stat` and
#     `carma run` say why the numbers are estimated (the model, its TDP, why each source is
#     unavailable, how to measure instead) on stderr, in report.txt / summary.json /
#     report.json, in `carma report` (text and JSON) and in the HTML page's warnings;
#   - a workload that asks for a GPU where none is measured: a warning at the start and in
#     every report, its GPU energy null / "n/a" (never 0), no embodied carbon for the missing
#     GPU, or the experiment's declared figure labelled as declared;
#   - report.txt has no column for a device kind without a channel, and no "-0.000";
#   - a baseline during which other processes (carma-busy) kept the CPUs busy: the figure
#     ("baseline: other processes used X of N CPUs") and what carma did, everywhere;
#   - `carma model fit` refuses runs of estimated power unless --allow-estimated, records the
#     training data's method; `carma model predict` never calls an estimate "measured".
# shellcheck source=tests/integration/lib_cli.sh
. "$CARMA_SRC/tests/integration/lib_cli.sh"

need_file "$BUSY" "$PLANT"

# run_dir NAME: the run directory printed on the first line of NAME.out
run_dir() {
    head -n 1 "$1.out" 2>/dev/null
}

# ------------------------------------------------- no sensor: carma stat on vm-empty
F=$CARMA_FIXTURES
rc=$(run_logged st "$CARMA" stat --root "$F/vm-empty" -o st -- sleep 0.5)
check_rc st 0 "$rc"
check_grep st.err "warning: estimated, not measured: model/cpu0" "stat: why estimated"
for t in "TDP" "unavailable: rapl:" "to measure instead" "--cpu-tdp"; do
    check_grep st.err "$t" "stat: the estimate's reason says '$t'"
done
check_eq "$(grep -c "Fan et al" st.err)" 1 "stat: the estimate's basis said once (the warning, not a note too)"
check_py "summary.json warnings" '
w = load("st/summary.json")["warnings"]
assert any(x.startswith("estimated, not measured: model/cpu0") and "to measure instead" in x for x in w), w
'
rc=$(run_logged str "$CARMA" report st)
check_rc str 0 "$rc"
check_grep str.out "warning: estimated, not measured: model/cpu0" "carma report (stat dir): why estimated"
rc=$(run_logged strj "$CARMA" report st --format json)
check_rc strj 0 "$rc"
check_py "carma report --format json (stat dir): the warning" '
w = load("strj.out")[0]["warnings"]
assert any(x.startswith("estimated, not measured") for x in w), w
'
rc=$(run_logged sth "$CARMA" report st --format html)
check_rc sth 0 "$rc"
check_grep sth.out "to measure instead" "HTML (stat dir): why estimated"

# ------------------------------------------------- no sensor, no GPU: carma run
live_procstat vm-empty vm || fail "no plant"
mkdir exp || fail mkdir
cat >exp/gpu.json <<EOF
{"experiment_name": "nogpu",
 "workloads": [
   {"name": "cpuonly", "script": "$BUSY", "args": ["0.6"]},
   {"name": "trainer", "script": "$BUSY", "args": ["0.6"], "gpu": 0}
 ],
 "monitoring": {"interval": "50ms", "baseline_s": 0.3}}
EOF
rc=$(run_logged nogpu "$CARMA" run exp/gpu.json -o runs --root vm)
check_rc nogpu 0 "$rc"
check_clean_stderr nogpu
rd=$(run_dir nogpu)
[ -d "$rd" ] || fail "no run directory: $(cat nogpu.out nogpu.err)"
check_grep nogpu.err "carma: warning: workload trainer asks for a GPU (gpu 0) but no GPU is measured" \
    "run: GPU warning at the start"
check_grep nogpu.err "carma: warning: estimated, not measured: model/cpu0" "run: why estimated, at the start"
check_no_grep nogpu.err "workload cpuonly asks" "run: cpuonly asks for no GPU"
# the printed report is report.txt
tail -n +2 nogpu.out >printed.txt
cmp -s printed.txt "$rd/report.txt" || check_fail "the printed report is not report.txt"
for t in "warning: workload trainer asks for a GPU" "warning: estimated, not measured: model/cpu0" \
    "to measure instead"; do
    check_grep "$rd/report.txt" "$t" "report.txt says '$t'"
done
check_no_grep "$rd/report.txt" "-0.000" "report.txt: no -0.000"
check_py "report.txt: columns of the kinds the node has, n/a for the GPU not measured" '
lines = open(sys.argv[1] + "/report.txt").read().splitlines()
head = [l for l in lines if l.startswith("workload ")][0]
for k in ("dram J", "soc J", "system J"):
    assert k not in head, "column %r without a channel: %s" % (k, head)
assert "cpu J" in head and "gpu J" in head, head
# the columns are right-aligned: the gpu figure of a row ends where "gpu J" of the header does
end = head.index("gpu J") + len("gpu J")
tr = [l for l in lines if l.startswith("trainer ")][0]
assert tr[end - 9:end].strip() == "n/a", "trainer gpu: %r in %r" % (tr[end - 9:end], tr)
cp = [l for l in lines if l.startswith("cpuonly ")][0]
assert cp[end - 9:end].strip() == "n/a", "cpuonly gpu (none measured): %r" % cp[end - 9:end]
' "$rd"
check_py "report.json: warnings, gpu energy null, no embodied GPU" '
r = load(sys.argv[1] + "/report.json")
w = r["warnings"]
assert any(x.startswith("workload trainer asks for a GPU") and "no embodied carbon" in x for x in w), w
assert any(x.startswith("estimated, not measured: model/cpu0") for x in w), w
ws = {x["name"]: x for x in r["workloads"]}
bk = ws["trainer"]["energy_by_kind_j"]
assert "gpu" in bk and bk["gpu"] is None, bk
assert set(bk) <= {"cpu", "gpu"}, bk
assert set(ws["cpuonly"]["energy_by_kind_j"]) <= {"cpu", "gpu"}, ws["cpuonly"]["energy_by_kind_j"]
dev = [e["device"] for e in ws["trainer"]["embodied"]]
assert not any(d.startswith("gpu") for d in dev), dev
' "$rd"
rc=$(run_logged rep "$CARMA" report "$rd")
check_rc rep 0 "$rc"
check_grep rep.out "warning: workload trainer asks for a GPU" "carma report: GPU warning"
check_grep rep.out "warning: estimated, not measured: model/cpu0" "carma report: why estimated"
check_no_grep rep.out "-0.00" "carma report: no -0.00"
rc=$(run_logged repj "$CARMA" report "$rd" --format json)
check_rc repj 0 "$rc"
check_py "carma report --format json: the run window has the warnings" '
w = load("repj.out")[0]["warnings"]
assert any(x.startswith("workload trainer asks for a GPU") for x in w), w
assert any(x.startswith("estimated, not measured") for x in w), w
'
check_grep "$rd/report.html" "asks for a GPU (gpu 0) but no GPU is measured" "HTML: GPU warning"
check_grep "$rd/report.html" "to measure instead" "HTML: why estimated"

# the experiment declares the GPU's embodied carbon: charged, and labelled declared
cat >exp/declared.json <<EOF
{"experiment_name": "declared",
 "workloads": [{"name": "trainer", "script": "$BUSY", "args": ["0.3"], "gpu": 0}],
 "monitoring": {"interval": "50ms", "baseline_s": 0},
 "carbon": {"embodied": [{"component": "gpu", "kg_co2e": 150, "lifetime_years": 4}]}}
EOF
rc=$(run_logged decl "$CARMA" run exp/declared.json -o runs --root vm -q)
check_rc decl 0 "$rc"
check_py "declared GPU embodied carbon: labelled declared" '
r = load(sys.argv[1] + "/report.json")
t = r["workloads"][0]
g = [e for e in t["embodied"] if e["device"].startswith("gpu")]
assert len(g) == 1 and g[0].get("declared") is True and g[0]["g_co2e"] > 0, t["embodied"]
assert g[0]["source"] == "experiment override", g
assert any("declared figure (carbon.embodied)" in x for x in r["warnings"]), r["warnings"]
assert t["energy_by_kind_j"]["gpu"] is None, t["energy_by_kind_j"]
' "$(run_dir decl)"
check_grep "$(run_dir decl)/report.html" "experiment override (declared: no such device measured)" \
    "HTML: the declared GPU embodied carbon labelled"

# ------------------------------------------------- a busy baseline (RAPL measured)
live_tree intel-2s live
start_plant live "$PLANT_CONFIGS/intel-2s.conf" truth.csv
cat >exp/busy.json <<EOF
{"experiment_name": "busybase",
 "workloads": [{"name": "spin", "script": "$BUSY", "args": ["1.5"]}],
 "monitoring": {"interval": "50ms", "baseline_s": 1.5}}
EOF
# other processes: two spinning children for the baseline and a little after
"$BUSY" --fork 2 4 >/dev/null 2>&1 &
bg1=$!
_cleanup_pids+=("$bg1")
sleep 0.2
rc=$(run_logged busy "$CARMA" run exp/busy.json -o runs --root live)
check_rc busy 0 "$rc"
brd=$(run_dir busy)
[ -d "$brd" ] || fail "no run directory: $(cat busy.out busy.err)"
check_py "report.json: the baseline's load and the warning" '
r = load(sys.argv[1] + "/report.json")
m = load(sys.argv[1] + "/manifest.json")
b = r["attribution"]["baseline"]
assert b["cpus"] == m["host"]["cpus"], (b, m["host"])
assert b["busy_cpus"] >= 1.0, "two spinning processes during the baseline, busy_cpus %r" % b["busy_cpus"]
assert abs(b["duration_s"] - 1.5) < 0.2, b
want = "baseline: other processes used %.1f of %d CPUs" % (b["busy_cpus"], b["cpus"])
w = [x for x in r["warnings"] if x.startswith(want)]
assert w, (want, r["warnings"])
assert "carma split among the workloads only the CPU time above theirs" in w[0], w[0]
if b["other_j"] > 0:
    assert "%.3f J of the static power to \"other\"" % b["other_j"] in w[0], (b, w[0])
assert not any(x.startswith("estimated") for x in r["warnings"]), "RAPL is measured: %r" % r["warnings"]
open("busy_want.txt", "w").write(want)
' "$brd"
want=$(cat busy_want.txt 2>/dev/null)
if [ -n "$want" ]; then
    check_grep busy.out "warning: $want" "printed report: the baseline's load"
    check_grep "$brd/report.txt" "warning: $want" "report.txt: the baseline's load"
    rc=$(run_logged brep "$CARMA" report "$brd")
    check_grep brep.out "warning: $want" "carma report: the baseline's load"
    check_grep "$brd/report.html" "$want" "HTML: the baseline's load"
fi
# carma stat --baseline with the same kind of background
wait "$bg1"
"$BUSY" --fork 2 3 >/dev/null 2>&1 &
bg2=$!
_cleanup_pids+=("$bg2")
sleep 0.2
rc=$(run_logged sbusy "$CARMA" stat --root live --baseline 1s -o sbusy -- "$BUSY" 0.3)
check_rc sbusy 0 "$rc"
check_py "stat --baseline: the baseline's load in summary.json" '
j = load("sbusy/summary.json")
b = j["command"]["static_busy_cpus"]
cpus = load("sbusy/manifest.json")["host"]["cpus"]
assert b >= 1.0, "two spinning processes during the baseline: static_busy_cpus %r" % b
want = "baseline: other processes used %.1f of %d CPUs" % (b, cpus)
assert any(x.startswith(want) for x in j["warnings"]), (want, j["warnings"])
open("sbusy_want.txt", "w").write(want)
'
[ -s sbusy_want.txt ] && check_grep sbusy.err "warning: $(cat sbusy_want.txt)" "stat: the baseline's load printed"

check_py "report.txt on RAPL: no gpu/soc/system columns" '
head = [l for l in open(sys.argv[1] + "/report.txt") if l.startswith("workload ")][0]
assert "cpu J" in head and "dram J" in head, head
for k in ("gpu J", "soc J", "system J"):
    assert k not in head, (k, head)
' "$brd"

# ------------------------------------------------- models and estimated power
rc=$(run_logged fitest "$CARMA" model fit "$rd" -o est.json --window 200ms)
check_eq "$rc" 1 "model fit on a run of estimated power: refused"
check_grep fitest.err "its cpu power was estimated, not measured (model/cpu0" "model fit: says why"
check_grep fitest.err "--allow-estimated" "model fit: says how to fit anyway"
[ ! -e est.json ] || check_fail "model fit refused but wrote est.json"
rc=$(run_logged fitest2 "$CARMA" model fit "$rd" -o est.json --window 200ms --allow-estimated)
est_ok=1
if [ "$rc" != 0 ] && grep -q "rank deficient" fitest2.err; then
    # other processes kept the machine's load constant: nothing to fit (not carma's fault)
    note "the machine's load did not vary in the estimated run: $(cat fitest2.err)"
    est_ok=0
else
    check_rc fitest2 0 "$rc"
    check_grep fitest2.out "trained on estimated power" "model fit --allow-estimated: the note"
    check_py "the model file records its training data's method" '
k = {x["kind"]: x for x in load("est.json")["kinds"]}
assert k["cpu"]["training_method"] == "estimated", k["cpu"]
'
fi
# a measured run whose load varies (idle, then two busy CPUs) to fit a model on
wait "$bg2" # the background of the baselines above is gone
cat >exp/quiet.json <<EOF
{"experiment_name": "quiet",
 "workloads": [{"name": "spin", "script": "$BUSY", "args": ["--fork", "2", "1.0"], "delay_s": 0.6}],
 "monitoring": {"interval": "50ms", "baseline_s": 0.3}}
EOF
rc=$(run_logged quiet "$CARMA" run exp/quiet.json -o runs --root live -q)
check_rc quiet 0 "$rc"
qrd=$(run_dir quiet)
rc=$(run_logged fitmeas "$CARMA" model fit "$qrd" -o meas.json --window 200ms --kinds cpu)
if [ "$rc" != 0 ] && grep -q "rank deficient" fitmeas.err; then
    # other processes kept the machine's load constant: no model to fit (not carma's fault)
    note "the machine's load did not vary: $(cat fitmeas.err)"
    cli_done
fi
check_rc fitmeas 0 "$rc"
check_py "a model of measured runs says so" '
k = {x["kind"]: x for x in load("meas.json")["kinds"]}
assert k["cpu"]["training_method"] == "measured", k["cpu"]
'
# predicting a run of estimated power: its figures are the estimate, not "measured"
rc=$(run_logged pred "$CARMA" model predict "$rd" --model meas.json)
check_rc pred 0 "$rc"
check_no_grep pred.out "measured J" "predict on an estimated run: no 'measured J'"
check_grep pred.out "estimated J" "predict on an estimated run: 'estimated J'"
check_py "prediction.json / .csv of an estimated run: nothing called measured" '
p = load(sys.argv[1] + "/prediction.json")
assert p["method"] == "predicted", p["method"]
assert p["reference_method"] == {"cpu": "estimated"}, p["reference_method"]
assert p["model_training_method"] == {"cpu": "measured"}, p["model_training_method"]
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            assert not k.startswith("measured_j"), "key %s in prediction.json" % k
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(p)
assert "estimated_j" in p["node"]["all"], p["node"]["all"]
head = open(sys.argv[1] + "/prediction.csv").readline()
assert "measured" not in head and "estimated_w,estimated_j" in head, head
' "$rd"
if [ "$est_ok" = 1 ]; then
    rc=$(run_logged pred2 "$CARMA" model predict "$qrd" --model est.json)
    check_rc pred2 0 "$rc"
    check_grep pred2.out "measured J" "predict on a measured run: 'measured J'"
    check_py "prediction.json of a measured run, model of estimated runs" '
p = load(sys.argv[1] + "/prediction.json")
assert p["reference_method"] == {"cpu": "measured"} and p["model_training_method"] == {"cpu": "estimated"}, p
' "$qrd"
fi
# carma stat with a fitted model: its channels are estimated
rc=$(run_logged stm "$CARMA" stat --root "$F/vm-empty" --model-file meas.json -o stm -- sleep 0.2)
check_rc stm 0 "$rc"
check_py "stat --model-file: estimated channels" '
s = load("stm/manifest.json")
assert s["channels"] and all(c["method"] == "estimated" for c in s["channels"]), s["channels"]
'

cli_done
