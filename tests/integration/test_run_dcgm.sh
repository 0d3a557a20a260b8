#!/usr/bin/env bash
# GPU energy attribution of carma run through DCGM where NVML is absent, on the fake libdcgm
# (tests/fakes/fake_dcgm.c, scenarios in tests/fakes/dcgm/), with carma --root on the vm-empty
# fixture and --interval 20ms. DCGM lists no process: a GPU's dynamic energy goes to the
# running workloads that own it (allocation.gpus or CUDA_VISIBLE_DEVICES), equally.
#
#   a  --sources dcgm, tests/fakes/dcgm/pair.scenario: two GPUs with energy counters, busier
#      after the baseline; workload "a" owns GPU 0 by CUDA_VISIBLE_DEVICES (its UUID), "b" GPU 1
#      by allocation.gpus. Checks: channels dcgm/gpu0 and dcgm/gpu1 (counters); per GPU the
#      workloads' gpu_j + idle_j + other_j + unattributed_j == energy_j (1e-6 relative), and
#      energy_j is a difference of the channel's joules_total in samples.csv, attribution.csv's
#      rows add up to it; "a" got nothing of GPU 1 and "b" nothing of GPU 0, each some of its
#      own (GPU 0's dynamic power is twice GPU 1's: a/b within 1.5..2.5); the basis is
#      allocation (basis_s, report.txt's "split by"), no gpu_process_lists; utilization.csv:
#      device rows only, DCGM's gpu_util_pct (37, 64), mem_util_pct blank; power/: manifest
#      names DCGM (source_metric, power_scope, utilization metric), samples carry gpu_util_pct
#      and GPU 1's sm_active 0.25, the assignments are the owners.
#   b  fake NVML (tests/fakes/nvml/two.scenario) and fake DCGM with the same two GPUs (same
#      UUIDs, tests/fakes/dcgm/nvmltwins.scenario), --sources nvml,dcgm: no dcgm/gpu channel
#      in the manifest, report.json's GPUs are NVML's, power/ names NVML only.
#   c  the same NVML beside DCGM's nvmlmixed.scenario (GPU 0 NVML's, GPU 2 not): channels
#      nvml/gpu0, nvml/gpu1, dcgm/gpu2; dcgm/gpu2 split to its owner by allocation; power/'s
#      strings joined for both sources.
#
# About 10 s in all.
# shellcheck source=tests/integration/lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

FAKES="$CARMA_BUILD/tests/fakes"
DCGM_LIB="$FAKES/libdcgm.so.4"
NVML_LIB="$FAKES/libfake-nvml.so"
SCEN="$CARMA_SRC/tests/fakes/dcgm"
need_file "$DCGM_LIB" "$NVML_LIB" "$SCEN/pair.scenario" "$SCEN/nvmltwins.scenario" \
    "$SCEN/nvmlmixed.scenario" "$CARMA_SRC/tests/fakes/nvml/two.scenario" \
    "$CARMA_FIXTURES/vm-empty"
top=$PWD

# dcgm_case NAME SOURCES DCGM_SCENARIO NVML_SCENARIO|"" WORKLOADS_JSON: runs carma run (0.5 s
# baseline) on an experiment of WORKLOADS_JSON; leaves the run directory in $RD.
dcgm_case() {
    local name=$1 sources=$2 dscen=$3 nscen=$4 ws=$5 dir rc
    dir="$top/$name"
    mkdir -p "$dir/clients" || fail "mkdir $dir"
    cat >"$dir/exp.json" <<EOF
{"experiment_name": "dcgm-$name", "workloads": $ws, "attribution": {"idle_policy": "idle"}}
EOF
    cd "$dir" || fail "cd $dir"
    note "case $name: carma run --sources $sources ($(basename "$dscen")${nscen:+, NVML $(basename "$nscen")})"
    local nvml_env=(CARMA_NVML_LIBRARY="$dir/no-nvml.so")
    [ -n "$nscen" ] && nvml_env=(CARMA_NVML_LIBRARY="$NVML_LIB" CARMA_FAKE_NVML_SCENARIO="$nscen"
        CARMA_FAKE_NVML_CLIENTS="$dir/clients")
    rc=$(run_logged run env "${nvml_env[@]}" CARMA_DCGM_LIBRARY="$DCGM_LIB" \
        CARMA_FAKE_DCGM_SCENARIO="$dscen" "$CARMA" run --root "$CARMA_FIXTURES/vm-empty" \
        --sources "$sources" --interval 20ms --baseline 0.5s -o "$dir/runs" "$dir/exp.json")
    RD=$(head -n 1 run.out)
    if [ "$rc" != 0 ] || [ -z "$RD" ] || [ ! -d "$RD" ]; then
        show run.out run.err
        fail "case $name: carma run exited with $rc, run directory '$RD'"
    fi
    cd "$top" || fail "cd $top"
}

# check CASE: the checks of CASE on $RD (python below), fails the test when one fails.
check() {
    "$PY" - "$1" "$RD" >"$top/$1/check.log" 2>&1 <<'EOF' || {
import csv, json, math, os, sys

case, rd = sys.argv[1], sys.argv[2]
failed = []

def ok(cond, msg):
    print(("ok " if cond else "FAIL ") + msg)
    if not cond:
        failed.append(msg)

def load(name):
    with open(os.path.join(rd, name)) as f:
        return json.load(f)

def rows(name):
    with open(os.path.join(rd, name), newline="") as f:
        return list(csv.DictReader(f))

man, rep, pm = load("manifest.json"), load("report.json"), load("power/manifest.json")
chans = {c["name"]: c for c in man["channels"]}
gpus = {g["channel"]: g for g in rep["gpus"]}
ws = {w["name"]: w for w in rep["workloads"]}
samples = rows("samples.csv")
attr = rows("attribution.csv")

def conservation(ch):
    g = gpus[ch]
    E = g["energy_j"]
    jobs = sum(w["gpu_j"].get(ch, 0.0) for w in ws.values())
    tot = jobs + g["idle_j"] + g["other_j"] + g["unattributed_j"]
    ok(E > 0 and abs(tot - E) <= 1e-6 * E,
       "%s: workloads %.6f + idle %.6f + other %.6f + unattributed %.6f = %.9f == energy_j %.9f"
       % (ch, jobs, g["idle_j"], g["other_j"], g["unattributed_j"], tot, E))
    ok(abs(jobs - g["jobs_j"]) <= 1e-6 * E, "%s: the workloads' gpu_j add up to jobs_j" % ch)
    js = [float(r["joules_total"]) for r in samples if r["channel"] == ch and r["joules_total"]]
    ok(bool(js) and any(abs((js[-1] - j) - E) <= 1e-6 * E for j in js),
       "%s: energy_j %.6f J is the channel's joules_total in samples.csv from a tick of the "
       "run to its last (%s J at the end)" % (ch, E, js[-1] if js else None))
    at = sum(float(r["joules"]) for r in attr if r["channel"] == ch)
    ok(abs(at - E) <= 1e-6 * E, "%s: attribution.csv rows %.9f J == energy_j" % (ch, at))

def allocation_basis(ch):
    b = gpus[ch]["basis_s"]
    ok(b["allocation"] > 0 and b["sm"] == 0 and b["context"] == 0,
       "%s: split by allocation (basis_s %r)" % (ch, b))

def util_rows(gpu):
    return [r for r in rows("utilization.csv") if r["gpu"] == str(gpu)]

def power_rows(gpu):
    return [r for r in rows("power/samples.csv") if r["gpu_index"] == str(gpu)]

with open(os.path.join(rd, "report.txt")) as f:
    txt = f.read()

if case == "a":
    ok(sorted(chans) == ["dcgm/gpu0", "dcgm/gpu1"], "channels %r" % sorted(chans))
    ok(all(c["form"] == "counter" and c["domain"] == "total" for c in chans.values()),
       "both channels are total-domain counters")
    ok(sorted(gpus) == ["dcgm/gpu0", "dcgm/gpu1"], "report.json's GPUs %r" % sorted(gpus))
    ok([gpus["dcgm/gpu0"]["uuid"], gpus["dcgm/gpu1"]["uuid"]] == ["GPU-dcgm-0000", "GPU-dcgm-0001"],
       "the GPUs' UUIDs are DCGM's")
    ok(gpus["dcgm/gpu0"]["owners"] == ["a"] and gpus["dcgm/gpu1"]["owners"] == ["b"],
       "owners: gpu0 %r, gpu1 %r" % (gpus["dcgm/gpu0"]["owners"], gpus["dcgm/gpu1"]["owners"]))
    for ch in ("dcgm/gpu0", "dcgm/gpu1"):
        conservation(ch)
        allocation_basis(ch)
    a0, a1 = ws["a"]["gpu_j"]["dcgm/gpu0"], ws["a"]["gpu_j"]["dcgm/gpu1"]
    b0, b1 = ws["b"]["gpu_j"]["dcgm/gpu0"], ws["b"]["gpu_j"]["dcgm/gpu1"]
    ok(a1 == 0 and b0 == 0, "a got %r J of GPU 1, b %r J of GPU 0: none" % (a1, b0))
    ok(a0 > 0 and b1 > 0 and 1.5 <= a0 / b1 <= 2.5,
       "a got %.3f J of GPU 0, b %.3f J of GPU 1 (dynamic 200 W vs 100 W: ratio %.3f in 1.5..2.5)"
       % (a0, b1, a0 / b1 if b1 else math.nan))
    ok("gpu_process_lists" not in rep, "no gpu_process_lists (DCGM lists no process)")
    lines = [l for l in txt.splitlines() if l.startswith("dcgm/gpu")]
    ok(len(lines) == 2 and all("allocation" in l for l in lines),
       "report.txt: both GPUs split by allocation: %r" % lines)
    ok("drift: DCGM's power gauge" in txt, "report.txt: the drift is DCGM's gauge's")
    u = rows("utilization.csv")
    ok(len(u) > 0 and all(r["pid"] == "" and r["workload"] == "" for r in u),
       "utilization.csv: %d rows, device rows only" % len(u))
    for gpu, pct in ((0, "37"), (1, "64")):
        ur = util_rows(gpu)
        ok(len(ur) > 0 and all(r["gpu_util_pct"] == pct and r["mem_util_pct"] == "" for r in ur),
           "utilization.csv GPU %d: %d rows, gpu_util_pct %s (DCGM's), mem_util_pct blank"
           % (gpu, len(ur), pct))
    ok(pm["source_metric"] == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
       "power/manifest.json source_metric %r" % pm["source_metric"])
    ok(pm["power_scope"] == "gpu_device_board_as_reported_by_dcgm",
       "power/manifest.json power_scope %r" % pm["power_scope"])
    um = {m["column"]: m["source_metric"] for m in pm["utilization_metrics"]}
    ok(um.get("gpu_util_pct") == "DCGM_FI_DEV_GPU_UTIL", "power/: gpu_util_pct from %r" % um)
    asg = {d["gpu_index"]: [x["worker_process"] for x in d["assignments"]]
           for d in pm["expected_devices"]}
    ok(asg == {0: ["a"], 1: ["b"]}, "power/ assignments %r" % asg)
    p0, p1 = power_rows(0), power_rows(1)
    ok(len(p0) > 0 and all(float(r["gpu_util_pct"]) == 37 and r["sm_active"] == "" and
                           r["gpu_uuid"] == "GPU-dcgm-0000" for r in p0),
       "power/samples.csv GPU 0: %d rows, gpu_util_pct 37, sm_active blank" % len(p0))
    ok(len(p1) > 0 and all(float(r["gpu_util_pct"]) == 64 and float(r["sm_active"]) == 0.25
                           for r in p1),
       "power/samples.csv GPU 1: %d rows, gpu_util_pct 64, sm_active 0.25" % len(p1))
elif case == "b":
    ok(not [c for c in chans if c.startswith("dcgm/gpu")],
       "no dcgm/gpu channel in the manifest (channels %r)" % sorted(chans))
    ok(sorted(gpus) == ["nvml/gpu0", "nvml/gpu1"], "report.json's GPUs %r" % sorted(gpus))
    for ch in gpus:
        conservation(ch)
    ok(pm["source_metric"] == "nvmlDeviceGetTotalEnergyConsumption" and
       pm["power_scope"] == "gpu_device_board_as_reported_by_nvml",
       "power/ names NVML: %r, %r" % (pm["source_metric"], pm["power_scope"]))
    ok("gpu_process_lists" in rep, "gpu_process_lists (NVML's)")
    ok("drift: NVML's power gauge" in txt, "report.txt: the drift is NVML's gauge's")
elif case == "c":
    ok(sorted(c for c in chans if chans[c]["kind"] == "gpu" and chans[c]["domain"] == "total")
       == ["dcgm/gpu2", "nvml/gpu0", "nvml/gpu1"], "GPU channels %r" % sorted(chans))
    ok(sorted(gpus) == ["dcgm/gpu2", "nvml/gpu0", "nvml/gpu1"], "report.json's GPUs %r"
       % sorted(gpus))
    for ch in gpus:
        conservation(ch)
    allocation_basis("dcgm/gpu2")
    ok(gpus["dcgm/gpu2"]["owners"] == ["c"], "dcgm/gpu2's owners %r" % gpus["dcgm/gpu2"]["owners"])
    ok(ws["c"]["gpu_j"]["dcgm/gpu2"] > 0 and ws["d"]["gpu_j"]["dcgm/gpu2"] == 0,
       "c got %.3f J of dcgm/gpu2, d %r" % (ws["c"]["gpu_j"]["dcgm/gpu2"],
                                            ws["d"]["gpu_j"]["dcgm/gpu2"]))
    ok(pm["source_metric"] ==
       "nvmlDeviceGetTotalEnergyConsumption+DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
       "power/manifest.json source_metric %r" % pm["source_metric"])
    ok(pm["power_scope"] == "gpu_device_board_as_reported_by_dcgm_or_nvml",
       "power/manifest.json power_scope %r" % pm["power_scope"])
    um = {m["column"]: m["source_metric"] for m in pm["utilization_metrics"]}
    ok(um.get("gpu_util_pct") == "nvmlDeviceGetUtilizationRates+DCGM_FI_DEV_GPU_UTIL",
       "power/: gpu_util_pct from %r" % um)
    ur = util_rows(2)
    ok(len(ur) > 0 and all(r["gpu_util_pct"] == "55" and r["pid"] == "" for r in ur),
       "utilization.csv dcgm GPU 2: %d device rows, gpu_util_pct 55" % len(ur))
    ok("each GPU's (NVML's or DCGM's)" in txt, "report.txt: the drift names both sources")
sys.exit(1 if failed else 0)
EOF
        sed 's/^/    /' "$top/$1/check.log"
        show "$top/$1/run.err"
        fail "case $1: checks failed"
    }
    sed 's/^/    /' "$top/$1/check.log"
}

# a) DCGM only: two GPUs, one workload each
dcgm_case a dcgm "$SCEN/pair.scenario" "" '[
  {"name": "a", "script": "sleep", "args": ["2"], "gpu": true,
   "env": {"CUDA_VISIBLE_DEVICES": "GPU-dcgm-0000"}},
  {"name": "b", "script": "sleep", "args": ["2"], "gpu": true, "allocation": {"gpus": [1]}}]'
check a

# b) NVML and DCGM see the same GPUs: NVML's channels only
dcgm_case b nvml,dcgm "$SCEN/nvmltwins.scenario" "$CARMA_SRC/tests/fakes/nvml/two.scenario" '[
  {"name": "a", "script": "sleep", "args": ["1"], "gpu": 0},
  {"name": "b", "script": "sleep", "args": ["1"], "gpu": 1}]'
check b

# c) NVML's two GPUs and one more that only DCGM reads
dcgm_case c nvml,dcgm "$SCEN/nvmlmixed.scenario" "$CARMA_SRC/tests/fakes/nvml/two.scenario" '[
  {"name": "c", "script": "sleep", "args": ["2"], "gpu": 2},
  {"name": "d", "script": "sleep", "args": ["2"], "gpu": 0}]'
check c

exit 0
