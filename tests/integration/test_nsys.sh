#!/usr/bin/env bash
# Nsight Systems import: `carma run` with workloads profiled by a fake nsys
# (tests/fakes/fake_nsys.c, installed here as `nsys` in PATH) on the fake NVML's shared H200
# (100 W idle, 500 W at 100% SM), and `carma import-nsys` on its own.
#
#   run      two carma-gpujob workloads of 2 s on GPU 0, both "profile": "nsys",
#            "attribution": {"gpu": "nsys"}: "busy" at 60% SM with kernels all its life,
#            "half" at 20% SM with kernels half of every 10 ms. NVML's split would give 3:1;
#            the kernel busy time gives 2:1 of the same dynamic energy (4 W per % SM x 80% x
#            2 s = 640 J): checked by check_nsys.py with the sum rules, nsys_gpu.csv's format,
#            attribution_nvml.csv kept. Retried up to three times (as test_run_gpu.sh: the
#            workloads' ends against carma's ticks).
#   again    import-nsys --run on the run's own profiles: report.json's GPU figures unchanged;
#            with --json the summary and the new split as JSON on stdout (busy seconds as in
#            nsys_gpu.csv, the GPUs' figures as report.json's)
#   plain    import-nsys FILE without a run: CSV on stdout, 100 ms grid, blank workload; --json
#            with -o (the busy seconds as in the CSV), refused (exit 2) without -o
#   errors   a missing file, a text file, an SQLite file without nsys tables, no file, an
#            unknown --workload; carma run without nsys in PATH exits 2 before starting anything;
#            carma validate on "profile" and "attribution.gpu"
# About 15 s.
# shellcheck source=tests/integration/lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

FAKES="$CARMA_BUILD/tests/fakes"
GPUJOB="$FAKES/carma-gpujob"
LIB="$FAKES/libfake-nvml.so"
FAKE_NSYS="$FAKES/carma-fake-nsys"
SCENARIO="$CARMA_SRC/tests/fakes/nvml/shared.scenario"
CHECK="$CARMA_SRC/tests/integration/check_nsys.py"
need_file "$GPUJOB" "$LIB" "$FAKE_NSYS" "$SCENARIO" "$CHECK"
top=$PWD
mkdir -p bin || fail "mkdir bin"
ln -sf "$FAKE_NSYS" bin/nsys

# exp FILE CLIENTS: the experiment of the run case
exp() {
    cat >"$1" <<JSON
{
  "experiment_name": "nsys",
  "workloads": [
    {"name": "busy", "script": "$GPUJOB", "gpu": 0, "profile": "nsys",
     "args": ["--dir", "$2", "--device", "0", "--sm", "60", "--tag", "busy", "2"]},
    {"name": "half", "script": "$GPUJOB", "gpu": 0, "profile": "nsys",
     "env": {"CARMA_FAKE_NSYS_DUTY": "0.5"},
     "args": ["--dir", "$2", "--device", "0", "--sm", "20", "--tag", "half", "2"]}
  ],
  "attribution": {"idle_policy": "idle", "gpu": "nsys"}
}
JSON
}

note "carma validate"
exp "$top/v.json" "$top"
rc=$(run_logged val "$CARMA" validate "$top/v.json")
[ "$rc" = 0 ] || { show val.out val.err; fail "validate of a profiled experiment: $rc"; }
sed 's/"profile": "nsys"/"profile": "perf"/' "$top/v.json" >"$top/v2.json"
rc=$(run_logged val2 "$CARMA" validate "$top/v2.json")
assert_eq "$rc" 1 "validate with profile perf"
grep -q 'profile: "perf" is not a profiler: use nsys' val2.err || { show val2.err; fail "profile message"; }
sed 's/, "profile": "nsys"//' "$top/v.json" >"$top/v3.json"
rc=$(run_logged val3 "$CARMA" validate "$top/v3.json")
assert_eq "$rc" 1 "validate with gpu nsys and nothing profiled"
grep -q 'attribution.gpu: .*profile' val3.err || { show val3.err; fail "attribution.gpu message"; }

note "carma run without nsys in PATH"
rc=$(run_logged nonsys env PATH=/usr/bin:/bin "$CARMA" run --sources nvml -o "$top/noruns" \
    "$top/v.json")
assert_eq "$rc" 2 "carma run without nsys"
grep -q "nsys (Nsight Systems) is not in PATH" nonsys.err || { show nonsys.err; fail "message"; }
[ ! -e "$top/noruns" ] || fail "carma run without nsys made a run directory"

note "carma run with the fake nsys"
ok=0
for attempt in 1 2 3; do
    dir="$top/run$attempt"
    mkdir -p "$dir/clients" || fail "mkdir"
    exp "$dir/exp.json" "$dir/clients"
    cd "$dir" || fail "cd $dir"
    rc=$(run_logged run env PATH="$top/bin:$PATH" CARMA_NVML_LIBRARY="$LIB" \
        CARMA_FAKE_NVML_SCENARIO="$SCENARIO" CARMA_FAKE_NVML_CLIENTS="$dir/clients" \
        "$CARMA" run --root "$CARMA_FIXTURES/vm-empty" --sources nvml --interval 20ms \
        --baseline 0.5s -o "$dir/runs" "$dir/exp.json")
    RD=$(head -n 1 run.out)
    cd "$top" || fail "cd"
    if [ "$rc" != 0 ] || [ ! -d "$RD" ]; then
        show "$dir/run.out" "$dir/run.err"
        fail "carma run exited with $rc"
    fi
    [ -s "$RD/logs/busy.sqlite" ] && [ -s "$RD/logs/half.sqlite" ] || fail "no profiles in logs/"
    if "$PY" "$CHECK" "$RD" --job busy:2 --job half:1 --ratio busy:half:2 --dyn-j 640 \
        >"$dir/check.log" 2>&1; then
        sed 's/^/    /' "$dir/check.log"
        ok=1
        break
    fi
    sed 's/^/    /' "$dir/check.log"
    show "$dir/run.err"
    note "attempt $attempt failed"
done
[ "$ok" = 1 ] || fail "the nsys split disagrees with the kernels' busy time (3 attempts)"
grep -q "GPU (nsys)" "$dir/run.err" || { show "$dir/run.err"; fail "no nsys summary on stderr"; }
grep -q "nvml/gpu0" "$RD/report.txt" || fail "report.txt"
grep -Eq "nvml/gpu0 .*kernels [0-9]+\.[0-9]s" "$RD/report.txt" ||
    { show "$RD/report.txt"; fail "report.txt does not say the split was by kernels"; }

note "import-nsys --run again: the same split"
cp "$RD/report.json" "$top/report1.json"
rc=$(run_logged again "$CARMA" import-nsys --run "$RD" "$RD/logs/busy.sqlite" \
    "$RD/logs/half.sqlite")
[ "$rc" = 0 ] || { show again.out again.err; fail "import-nsys --run: $rc"; }
grep -q "pid .* busy" again.err || { show again.err; fail "no per-process summary"; }
"$PY" - "$top/report1.json" "$RD/report.json" <<'PYEOF' || fail "a second import changed the split"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for x, y in zip(a["gpus"], b["gpus"]):
    for k in ("jobs_j", "idle_j", "other_j", "unattributed_j", "energy_j"):
        assert abs(x[k] - y[k]) < 1e-6, (k, x[k], y[k])
for x, y in zip(a["workloads"], b["workloads"]):
    assert abs(x["energy_j"] - y["energy_j"]) < 1e-6, (x["name"], x["energy_j"], y["energy_j"])
PYEOF

note "import-nsys --run --json: the summary and the split as JSON on stdout"
rc=$(run_logged ajson "$CARMA" import-nsys --json --run "$RD" "$RD/logs/busy.sqlite" \
    "$RD/logs/half.sqlite")
[ "$rc" = 0 ] || { show ajson.out ajson.err; fail "import-nsys --json --run: $rc"; }
if grep -Eq "GPU \(nsys\)|pid .* busy" ajson.err; then show ajson.err; fail "--json: tables on stderr"; fi
"$PY" - ajson.out "$RD" <<'PYEOF' || { show ajson.out; fail "import-nsys --json --run: the document"; }
import csv, json, sys
doc = json.load(open(sys.argv[1]))
rd = sys.argv[2]
assert doc["run_dir"] == rd and doc["csv"] == rd + "/nsys_gpu.csv", (doc["run_dir"], doc["csv"])
assert [f["path"] for f in doc["files"]] == [rd + "/logs/busy.sqlite", rd + "/logs/half.sqlite"]
csv_busy = {}
for r in csv.DictReader(open(rd + "/nsys_gpu.csv", newline="")):
    key = (int(r["pid"]), int(r["gpu"]), r["workload"])
    csv_busy[key] = csv_busy.get(key, 0) + float(r["busy_s"])
js_busy, names = {}, set()
for f in doc["files"]:
    assert f["kernels"] > 0 and f["skipped_rows"] == 0 and f["session_start_unix"] > 1e9, f
    assert sum(p["kernels"] for p in f["processes"]) == f["kernels"], f
    for p in f["processes"]:
        key = (p["pid"], p["gpu"], p["workload"])
        js_busy[key] = js_busy.get(key, 0) + p["busy_s"]
        names.add(p["workload"])
assert names == {"busy", "half"}, names
assert set(js_busy) == set(csv_busy), (js_busy, csv_busy)
for k in csv_busy:
    assert abs(js_busy[k] - csv_busy[k]) < 1e-5, (k, js_busy[k], csv_busy[k])
rep = json.load(open(rd + "/report.json"))
assert len(doc["gpus"]) == len(rep["gpus"]) >= 1, (doc["gpus"], rep["gpus"])
for g, r in zip(doc["gpus"], rep["gpus"]):
    assert g["channel"] == r["channel"], (g, r)
    for k, rk in (("energy_j", "energy_j"), ("workloads_j", "jobs_j"), ("idle_j", "idle_j"),
                  ("other_j", "other_j"), ("unattributed_j", "unattributed_j")):
        assert abs(g[k] - r[rk]) < 1e-3, (k, g[k], r[rk])  # report.json: 3 decimals
    parts = g["workloads_j"] + g["idle_j"] + g["other_j"] + g["unattributed_j"]
    assert abs(parts - g["energy_j"]) < 1e-6 * max(1, g["energy_j"]), g
    assert set(g["basis"]) == {"kernels", "context", "allocation", "none"}, g["basis"]
    assert g["basis"]["kernels"] > 1, g["basis"]
print("    json: %d files, %s" % (len(doc["files"]),
      ", ".join("%s %.3f s" % (k[2], v) for k, v in sorted(js_busy.items()))))
PYEOF

note "import-nsys without a run"
rc=$(run_logged plain "$CARMA" import-nsys --interval 100ms "$RD/logs/busy.sqlite")
[ "$rc" = 0 ] || { show plain.err; fail "import-nsys FILE: $rc"; }
head -n 1 plain.out | grep -q $'^interval_start_unix,interval_end_unix,gpu,pid,workload,busy_s\r$' ||
    fail "plain: header"
"$PY" - plain.out <<'PYEOF' || fail "plain: rows"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert rows, "no rows"
total = 0
for r in rows:
    t0, t1 = float(r["interval_start_unix"]), float(r["interval_end_unix"])
    assert abs(t1 - t0 - 0.1) < 1e-6 and abs(t0 * 10 - round(t0 * 10)) < 1e-5, r
    assert r["workload"] == "" and r["gpu"] == "0", r
    total += float(r["busy_s"])
assert 1.94 <= total <= 2.6, total  # the process's life (start-up included): 2 s and a bit
PYEOF
rc=$(run_logged plain2 "$CARMA" import-nsys -q -o "$top/out.csv" "$RD/logs/busy.sqlite")
assert_eq "$rc" 0 "import-nsys -o"
[ -s "$top/out.csv" ] && [ ! -s plain2.err ] || fail "-o / -q"

rc=$(run_logged pjson "$CARMA" import-nsys --json -o "$top/out2.csv" "$RD/logs/busy.sqlite")
[ "$rc" = 0 ] || { show pjson.out pjson.err; fail "import-nsys --json -o: $rc"; }
if grep -q "pid .* busy" pjson.err; then show pjson.err; fail "--json -o: table on stderr"; fi
"$PY" - pjson.out "$top/out2.csv" "$RD/logs/busy.sqlite" <<'PYEOF' || { show pjson.out; fail "import-nsys --json -o: the document"; }
import csv, json, sys
doc = json.load(open(sys.argv[1]))
assert doc["run_dir"] is None and doc["csv"] == sys.argv[2] and doc["interval_s"] == 0.1, doc
(f,) = doc["files"]
assert f["path"] == sys.argv[3] and f["kernels"] > 0, f
total = sum(float(r["busy_s"]) for r in csv.DictReader(open(sys.argv[2], newline="")))
procs = f["processes"]
assert procs and all(p["workload"] is None and p["gpu"] == 0 for p in procs), procs
assert abs(sum(p["busy_s"] for p in procs) - total) < 1e-5, (procs, total)
assert "gpus" not in doc, doc
PYEOF
rc=$(run_logged pjson2 "$CARMA" import-nsys --json "$RD/logs/busy.sqlite")
assert_eq "$rc" 2 "import-nsys --json with the CSV on stdout"
grep -q "give -o FILE or --run DIR" pjson2.err || { show pjson2.err; fail "--json refusal message"; }
[ ! -s pjson2.out ] || { show pjson2.out; fail "--json refused, yet something on stdout"; }

note "import-nsys errors"
rc=$(run_logged e1 "$CARMA" import-nsys "$top/absent.sqlite")
assert_eq "$rc" 1 "missing file"
grep -q "absent.sqlite: cannot open: No such file" e1.err || { show e1.err; fail "e1 message"; }
echo "not a database" >"$top/text.sqlite"
rc=$(run_logged e2 "$CARMA" import-nsys "$top/text.sqlite")
assert_eq "$rc" 1 "text file"
grep -q "text.sqlite: not an SQLite database" e2.err || { show e2.err; fail "e2 message"; }
"$PY" -c "import sqlite3; c = sqlite3.connect('$top/other.sqlite'); c.execute('create table t (x)'); c.commit()" ||
    fail "python3 sqlite3"
rc=$(run_logged e3 "$CARMA" import-nsys "$top/other.sqlite")
assert_eq "$rc" 1 "sqlite without nsys tables"
grep -q "no table TARGET_INFO_SESSION_START_TIME" e3.err || { show e3.err; fail "e3 message"; }
rc=$(run_logged e4 "$CARMA" import-nsys)
assert_eq "$rc" 2 "no file"
rc=$(run_logged e5 "$CARMA" import-nsys --run "$RD" --workload nobody "$RD/logs/busy.sqlite")
assert_eq "$rc" 1 "unknown workload"
grep -q "no workload 'nobody'" e5.err || { show e5.err; fail "e5 message"; }
rc=$(run_logged e6 "$CARMA" import-nsys --run "$top/noruns" "$RD/logs/busy.sqlite")
assert_eq "$rc" 1 "not a run directory"
exit 0
