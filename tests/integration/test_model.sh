#!/usr/bin/env bash
# carma model fit / predict on the simulated power plant (tests/fakes/plant/intel-2s.conf:
# per package P = 30 + 120 u, per DRAM P = 4 + 16 u, u the machine's CPU busy fraction). Two
# short `carma run`s at different loads are fitted: the node's cpu kind (two packages) must come
# out at 60 W + 240 W x cpu_util, dram at 8 + 32, each within 2%; a third run (held out) is
# predicted: the node's MAPE is reported and must stay under 5%. Then `carma stat --model-file`
# on the plant (the fitted estimate against RAPL), and the error cases.
#
# The fit needs the node's utilization to vary down to the idle end: on a machine whose CPUs
# other processes keep busy, u stays near 1 whatever the workloads do, the baseline is an
# extrapolation, and the fit's own standard errors say it cannot resolve 2%. A try counts when
# the standard errors of baseline and slope are under 1/1.5 of the tolerance (a sound fit then
# misses 2% about once in 8 tries); up to 3 tries, the test passes at the first that is within
# 2%, fails when two counted tries missed, and skips the coefficient check when no try counted.
# The prediction, stat and error cases are checked anyway.
# shellcheck source=tests/integration/lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

need_file "$BUSY" "$PLANT"
conf="$PLANT_CONFIGS/intel-2s.conf"
top=$PWD
TOL=0.02
MAPE_MAX=5

# run_exp NAME JSON_WORKLOADS BASELINE_S: one carma run on the live tree; prints its directory
run_exp() {
    cat >"$1.json" <<EOF
{"experiment_name": "$1", "workloads": [$2],
 "monitoring": {"interval": "100ms", "baseline_s": $3}, "attribution": {"idle_policy": "idle"}}
EOF
    local rc
    rc=$(run_logged "$1" "$CARMA" run "$1.json" -o runs --root live -q)
    [ "$rc" = 0 ] || {
        show "$1.out" "$1.err"
        fail "carma run $1: exit status $rc"
    }
    head -n 1 "$1.out"
}

# the spread of the node's utilization over 1 s windows of node_util.csv (max - min)
util_span() {
    "$PY" - "$@" <<'EOF'
import csv, sys
lo, hi = 1.0, 0.0
for d in sys.argv[1:]:
    rows = [r for r in csv.DictReader(open(d + "/node_util.csv", newline=""))]
    t0 = None
    for r in rows:
        t, b, tot = float(r["timestamp_unix"]), float(r["busy_cpu_s"]), float(r["total_cpu_s"])
        if t0 is None or t - t0[0] >= 1.0:
            if t0 is not None and tot > t0[2]:
                u = (b - t0[1]) / (tot - t0[2])
                lo, hi = min(lo, u), max(hi, u)
            t0 = (t, b, tot)
print("%.3f" % (hi - lo))
EOF
}

w() { # w NAME ARGS_JSON [DELAY]: one workload of carma-busy
    echo "{\"name\": \"$1\", \"script\": \"$BUSY\", \"args\": $2, \"delay_s\": ${3:-0}}"
}

live_tree intel-2s live
start_plant live "$conf" truth.csv
verdict=
misses=0
for attempt in 1 2 3; do
    note "attempt $attempt"
    rm -rf runs
    a=$(run_exp fitA "$(w full '["3"]'), $(w quarter '["--duty", "0.5", "3"]' 1.5)" 2)
    b=$(run_exp fitB "$(w two '["--fork", "2", "3"]'), $(w light '["--duty", "0.3", "2"]' 3.5)" 2)
    c=$(run_exp heldout "$(w a '["--duty", "0.7", "3"]'), $(w b '["--duty", "0.4", "3"]' 1)" 1.5)
    need_file "$a/node_util.csv" "$b/node_util.csv" "$c/node_util.csv"
    span=$(util_span "$a" "$b")
    note "node utilization spans $span over the fitted runs"
    rc=$(run_logged fit "$CARMA" model fit "$a" "$b" -o model.json)
    [ "$rc" = 0 ] || {
        show fit.out fit.err
        fail "carma model fit: exit status $rc"
    }
    cat fit.out
    rc=$(run_logged predict "$CARMA" model predict "$c" --model model.json)
    [ "$rc" = 0 ] || {
        show predict.out predict.err
        fail "carma model predict: exit status $rc"
    }
    cat predict.out
    need_file "$c/prediction.csv" "$c/prediction.json"
    rc=0
    "$PY" - model.json "$TOL" <<'EOF' || rc=$?
import json, sys
# the fit resolves 2% only when its own standard errors are well below it
m, tol = json.load(open(sys.argv[1])), float(sys.argv[2])
k = [k for k in m["kinds"] if k["kind"] == "cpu"][0]
ok = (k["baseline"]["stderr_w"] < tol * 60 / 1.5 and
      k["delta"]["stderr"]["cpu_util"] < tol * 240 / 1.5)
sys.exit(0 if ok else 1)
EOF
    if [ "$rc" = 0 ]; then
        "$PY" - model.json "$c/prediction.json" "$TOL" "$MAPE_MAX" <<'EOF' || rc=$?
import json, sys
m = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))
tol, mape_max = float(sys.argv[3]), float(sys.argv[4])
truth = {"cpu": (60.0, 240.0), "dram": (8.0, 32.0)}  # two sockets of intel-2s.conf
kinds = {k["kind"]: k for k in m["kinds"]}
bad = []
for kind, (base, slope) in truth.items():
    k = kinds[kind]
    b, s = k["baseline"]["watts"], k["delta"]["coefficients"]["cpu_util"]
    print("%s: baseline %.3f W (truth %.0f, %+.2f%%), cpu_util %.3f W (truth %.0f, %+.2f%%), "
          "held-out MAPE %.3f%%" % (kind, b, base, 100 * (b / base - 1), s, slope,
                                    100 * (s / slope - 1), k["quality"]["held_out"]["mape_pct"]))
    if abs(b / base - 1) > tol or abs(s / slope - 1) > tol:
        bad.append(kind)
mape = p["node"]["all"]["mape_pct"]
print("held-out run: node MAPE %.3f%%, R2 %.4f" % (mape, p["node"]["all"]["r2"]))
if not mape < mape_max:
    print("held-out MAPE %.3f%% is not below %g%%" % (mape, mape_max))
    sys.exit(1)
sys.exit(3 if bad else 0)
EOF
        case $rc in
        0)
            verdict=pass
            break
            ;;
        3)
            misses=$((misses + 1))
            verdict=off
            ;;
        *) fail "the held-out prediction is off" ;;
        esac
    else
        verdict=${verdict:-flat}
    fi
    sleep 2
done
[ "$misses" -ge 2 ] && fail "the fitted coefficients missed the plant's by more than $TOL in" \
    "$misses tries whose standard errors resolved it"

# carma stat with the fitted model beside RAPL: the estimate against the measurement
rc=$(run_logged stat "$CARMA" stat --root live --sources rapl,model --model-file model.json \
    --baseline 500ms --json-out stat.json -- "$BUSY" --duty 0.6 2)
[ "$rc" = 0 ] || {
    show stat.out stat.err
    fail "carma stat --model-file: exit status $rc"
}
grep -q "fitted model model.json" stat.err || {
    show stat.err
    fail "carma stat --model-file: the model's note is missing"
}
"$PY" - stat.json "$verdict" <<'EOF' || fail "carma stat --model-file disagrees with RAPL"
import json, sys
s = json.load(open(sys.argv[1]))
ch = {c["name"]: c for c in s["channels"]}
# one model channel per socket that proc/stat shows (the fixture's cpuinfo maps this
# machine's CPUs to its sockets)
mcpu = [c for c in ch if c.startswith("model/cpu")]
mdram = [c for c in ch if c.startswith("model/dram")]
assert mcpu and len(mcpu) == len(mdram), ch.keys()
for c in mcpu + mdram:
    assert ch[c]["method"] == "estimated", c
for kind, meas, est in (("cpu", ("rapl/package-0", "rapl/package-1"), mcpu),
                        ("dram", ("rapl/package-0/dram", "rapl/package-1/dram"), mdram)):
    m = sum(ch[c]["energy_j"] for c in meas)
    e = sum(ch[c]["energy_j"] for c in est)
    print("stat %s: fitted model %.3f J, RAPL %.3f J (%+.2f%%)" % (kind, e, m, 100 * (e / m - 1)))
    # the model is only as good as its fit: 5% with a checked fit, 25% without one
    if abs(e / m - 1) > (0.05 if sys.argv[2] == "pass" else 0.25):
        sys.exit(1)
assert s["node"]["method"] == "measured", s["node"]
EOF
stop_plant

# error cases: each exits 1 with a message naming the file or field
expect_error() { # expect_error PATTERN CMD...
    local pat=$1 rc
    shift
    rc=$(run_logged err "$@")
    [ "$rc" = 1 ] || {
        show err.out err.err
        fail "$* : exit status $rc, expected 1"
    }
    grep -q -- "$pat" err.err || {
        show err.err
        fail "$* : no '$pat' in the message"
    }
}
expect_error "nowhere/workloads.json: cannot open" "$CARMA" model fit nowhere -o x.json
expect_error "missing.json: cannot read" "$CARMA" model predict "$c" --model missing.json
"$PY" - model.json gpu.json <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["kinds"][0]["kind"] = "gpu"
json.dump(m, open(sys.argv[2], "w"))
EOF
expect_error "was fitted on kind gpu" "$CARMA" model predict "$c" --model gpu.json
# a run where the node's utilization never moves (0.9, above what the workloads used): the fit
# names the constant feature
cp -a "$c" flat
"$PY" - flat/node_util.csv <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
with open(sys.argv[1], "w", newline="") as f:
    f.write("timestamp_unix,busy_cpu_s,total_cpu_s,cpu_util\r\n")
    for r in rows:
        tot = float(r["total_cpu_s"])
        f.write("%s,%.6f,%.6f,\r\n" % (r["timestamp_unix"], 0.9 * tot, tot))
EOF
expect_error "feature 'cpu_util' is constant" "$CARMA" model fit flat -o x.json
rc=$(run_logged err "$CARMA" model fit "$c" -o x.json --features temperature)
[ "$rc" = 2 ] && grep -q "unknown feature 'temperature'" err.err ||
    fail "--features temperature: exit status $rc, expected 2 (usage) naming the feature"
rc=$(run_logged err "$CARMA" sensors --root live --sources model --model-file gpu.json --json)
grep -q "no model of kind cpu" err.out || {
    show err.out err.err
    fail "carma sensors --model-file with no cpu kind: the reason is missing"
}
[ "$verdict" = pass ] || skip "the machine's load left the fit unresolved (its standard errors" \
    "exceed the 2% tolerance / 1.5): coefficients not checked (prediction, stat and error cases" \
    "were)"
exit 0
