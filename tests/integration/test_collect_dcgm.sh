#!/usr/bin/env bash
# carma collect --srt-gpu over several hosts on loopback addresses (127.0.0.1..5): three fake
# dcgm-exporters (tests/fakes/fake_dcgm_exporter.py: power a known function of time, the energy
# counter its exact integral), one real `carma exporter` on the fake NVML, one srt-slurm CPU
# body; checks:
#   - carma's samples.csv: the dcgm-exporter GPUs as channels dcgm/gpu<N> (source dcgm, kind
#     gpu, domain total, method measured), MIG instances as dcgm/gpu<N>/mig<ID> (domain
#     component), a blank energy sentinel as a blank joules_total; each GPU's energy (counter
#     difference and trapezoid of the watts) within 1 % of the fake's truth;
#   - power/samples.csv passes srt-slurm's strict reader rules (v2 header, 9 fields, schema 2,
#     no duplicate (scrape_seq, hostname, gpu_index), times not going back per device, power
#     finite >= 0, riders in range), MIG rows skipped, hostname the node (not the exporter's
#     Hostname label), a scrape_seq per cycle shared by every host (the cycle of samples.csv),
#     row time = midpoint of the request (before the settle time samples.csv shows); the
#     manifest's expected/observed devices, status, publication_valid and samples_sha256;
#   - srtref's transcription of srt-slurm's energy report reads the run (both legs, --srt-cpu)
#     as srt-slurm would: per-GPU energy within 1 % of the truth;
#   - a dcgm-exporter killed mid-run and restarted with its counter reset: down and back
#     warnings, blank rows meanwhile, its energy right on each side, the others unaffected;
#   - dcgm: target errors name the target; --dcgm-port with --slurm (a fake scontrol).
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

FAKE="$CARMA_SRC/tests/fakes/fake_dcgm_exporter.py"
TARGETS="$CARMA_SRC/tests/integration/collect_targets.py"
REF="$CARMA_SRC/tests/integration/srtref/srt_report_ref.py"
NVML_LIB="$CARMA_BUILD/tests/fakes/libfake-nvml.so"
need_file "$FAKE" "$TARGETS" "$REF" "$NVML_LIB"
"$PY" -c 'import numpy' 2>/dev/null || skip "python3-numpy is not installed (srtref needs it)"
"$PY" -c 'import socket; socket.socket().bind(("127.0.0.5", 0))' 2>/dev/null ||
    skip "loopback addresses 127.0.0.2..5 cannot be bound here"

EPOCH=$("$PY" -c 'import time; print("%.6f" % (time.time() - 100))')
declare -A FPID FPORT

# start_fake NAME HOST [ARGS...]: a fake dcgm-exporter on HOST; sets FPID[NAME], FPORT[NAME].
start_fake() {
    local name=$1 host=$2 i
    shift 2
    rm -f "$name.ready"
    "$PY" "$FAKE" --host "$host" --ready "$name.ready" --epoch "$EPOCH" "$@" >"$name.log" 2>&1 &
    FPID[$name]=$!
    _cleanup_pids+=("${FPID[$name]}")
    for ((i = 0; i < 500; i++)); do
        if [ -s "$name.ready" ]; then
            FPORT[$name]=$(head -n 1 "$name.ready")
            return 0
        fi
        kill -0 "${FPID[$name]}" 2>/dev/null || fail "fake $name did not start: $(cat "$name.log")"
        sleep 0.01
    done
    fail "fake $name did not start within 5 s"
}

# A: old label spelling, a MIG instance on GPU 1, a blank GPU_UTIL on GPU 0, SM_ACTIVE on,
#    DCGM's missing CPU sensor (0.000000), named dcgm:
start_fake a 127.0.0.1 --gpus 2 --mig 1:3:1g.18gb --blank GPU_UTIL:0 --sm-active --cpu-zero \
    --hostname pod-a --uuid-prefix GPU-a-
# B: dcgm-exporter HEAD's lowercase uuid/hostname, three GPUs, GPU 2 with a blank energy
#    counter, families, samples and labels in a new order at every scrape; given as a plain
#    target (recognised by its families)
start_fake b 127.0.0.2 --gpus 3 --lower --blank TOTAL_ENERGY_CONSUMPTION:2 --hostname pod-b \
    --uuid-prefix GPU-b- --base 200 --amp 60 --period 3 --shuffle 7
# C: killed and restarted mid-run
start_fake c 127.0.0.3 --gpus 2 --hostname pod-c --uuid-prefix GPU-c- --base 500 --amp 100
# a carma exporter over the fake NVML's two GPUs (350 W and 120.5 W)
export CARMA_NVML_LIBRARY="$NVML_LIB" CARMA_FAKE_NVML_SCENARIO="$CARMA_SRC/tests/fakes/nvml/two.scenario"
"$CARMA" exporter --root "$CARMA_FIXTURES/intel-2s" --listen 127.0.0.4:0 --interval 100ms \
    >exp.out 2>exp.err &
EPID=$!
_cleanup_pids+=("$EPID")
for ((i = 0; i < 500; i++)); do
    EPORT=$(sed -n 's/^listening on 127\.0\.0\.4:\([0-9]*\)$/\1/p' exp.out exp.err 2>/dev/null | head -n 1)
    [ -n "$EPORT" ] && break
    kill -0 "$EPID" 2>/dev/null || fail "carma exporter did not start: $(cat exp.err)"
    sleep 0.01
done
[ -n "$EPORT" ] || fail "carma exporter did not start within 5 s"
# srt-slurm's CPU leg: a node serving its Rust exporter's DCGM CPU family
cat >cpu.prom <<'EOF'
# HELP cpu_power_dcgm_watts Grace CPU instantaneous power via DCGM field 1130 (W).
# TYPE cpu_power_dcgm_watts gauge
cpu_power_dcgm_watts{socket="0",source="dcgm"} 43.878000
cpu_power_dcgm_watts{socket="1",source="dcgm"} 52.350000
EOF
"$PY" "$TARGETS" --body cpu.prom --host 127.0.0.5 --ready cpu.ready >cpu.tlog 2>&1 &
_cleanup_pids+=("$!")
for ((i = 0; i < 500; i++)); do [ -s cpu.ready ] && break; sleep 0.01; done
CPORT=$(head -n 1 cpu.ready)

# ---- the run: 7 s at 250 ms; C killed at ~2 s, back at ~3.5 s with its counter reset ----
BG_NAME=run carma_bg -- collect --srt-gpu --srt-cpu -o run --interval 250ms --duration 7s \
    --target "dcgm:127.0.0.1:${FPORT[a]}" --target "127.0.0.2:${FPORT[b]}" \
    --target "dcgm:127.0.0.3:${FPORT[c]}" --target "127.0.0.4:$EPORT" \
    --target "127.0.0.5:$CPORT"
RUN_PID=$BG_PID
sleep 2
{
    kill -KILL "${FPID[c]}"
    wait "${FPID[c]}"
} 2>/dev/null
kill_unix=$("$PY" -c 'import time; print(time.time())')
sleep 1.5
start_fake c 127.0.0.3 --port "${FPORT[c]}" --gpus 2 --hostname pod-c --uuid-prefix GPU-c- \
    --base 500 --amp 100 --reset
back_unix=$("$PY" -c 'import time; print(time.time())')
wait "$RUN_PID"
rc=$?
check_rc run 0 "$rc"
check_clean_stderr run
check_grep run.err "dcgm:127.0.0.3:${FPORT[c]} (node 127.0.0.3) is down" "C down warned"
check_grep run.err "dcgm:127.0.0.3:${FPORT[c]} (node 127.0.0.3) is back" "C back noted"
check_no_grep run.err "127.0.0.1:${FPORT[a]} (node 127.0.0.1) is down" "A never down"
check_no_grep run.err "serves no" "no target is 'empty'"

# the truth: each fake's options (fake_dcgm_exporter.energy_j)
TRUTH="{\"127.0.0.1\": [300, 50, 80, 5], \"127.0.0.2\": [200, 50, 60, 3], \"127.0.0.3\": [500, 50, 100, 5]}"

PYLIB="
import hashlib
sys.path.insert(0, '$CARMA_SRC/tests/fakes')
from fake_dcgm_exporter import energy_j
EPOCH = $EPOCH
TRUTH = json.loads('$TRUTH')
KILL, BACK = $kill_unix, $back_unix
def truth(host, gpu, t1, t2):
    base, step, amp, period = TRUTH[host]
    return energy_j(base, step, amp, period, EPOCH, gpu, t1, t2)
def samples(path):
    data = open(path, 'rb').read()
    assert data.endswith(b'\r\n'), path
    rows = list(csv.reader(io.StringIO(data.decode(), newline=''), strict=True))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]], rows[1:]
"

check_py "samples.csv: dcgm channels and energy truth" "$PYLIB"'
hdr, rows, raw = samples("run/samples.csv")
assert all(len(r) == 12 for r in raw)
dc = [r for r in rows if r["source"] == "dcgm"]
chans = {(r["node"], r["target"].split(":")[0], r["channel"], r["domain"]) for r in dc}
want = {("127.0.0.1", "dcgm", "dcgm/gpu0", "total"), ("127.0.0.1", "dcgm", "dcgm/gpu1", "total"),
        ("127.0.0.1", "dcgm", "dcgm/gpu1/mig3", "component"),
        ("127.0.0.2", "127.0.0.2", "dcgm/gpu0", "total"), ("127.0.0.2", "127.0.0.2", "dcgm/gpu1", "total"),
        ("127.0.0.2", "127.0.0.2", "dcgm/gpu2", "total"),
        ("127.0.0.3", "dcgm", "dcgm/gpu0", "total"), ("127.0.0.3", "dcgm", "dcgm/gpu1", "total")}
assert chans == want, chans
assert all(r["kind"] == "gpu" and r["method"] == "measured" for r in dc)
assert all(r["joules_total"] == "" for r in dc if r["node"] == "127.0.0.2" and r["channel"] == "dcgm/gpu2")
# (the carma exporter names its rows with its own node label)
nv = [r for r in rows if r["target"].startswith("127.0.0.4:") and r["kind"] == "gpu"]
assert {r["channel"] for r in nv} == {"nvml/gpu0", "nvml/gpu1"}, nv[:3]
# C: blank rows while it was down
cb = [r for r in rows if r["node"] == "127.0.0.3" and r["channel"] == ""]
# (after the restart, the backoff may skip up to 4 more cycles of 250 ms)
assert cb and all(KILL - 0.3 < float(r["timestamp_unix"]) < BACK + 1.5 for r in cb), (KILL, BACK, cb)
'
check_py "samples.csv: energy truth per GPU" "$PYLIB"'
hdr, rows, raw = samples("run/samples.csv")
dc = [r for r in rows if r["source"] == "dcgm" and r["domain"] == "total"]
n = 0
for (node, ch) in sorted({(r["node"], r["channel"]) for r in dc}):
    gpu = int(ch.split("gpu")[1])
    s = [(float(r["timestamp_unix"]), float(r["watts"]), r["joules_total"]) for r in dc
         if r["node"] == node and r["channel"] == ch and r["watts"] != ""]
    # C: before it was killed, after it came back (its counter restarted at 0)
    segs = [[p for p in s if p[0] < KILL], [p for p in s if p[0] > BACK]] if node == "127.0.0.3" else [s]
    assert len(s) == sum(len(g) for g in segs), (node, ch, "a row while C was down")
    for seg in segs:
        assert len(seg) >= 4, (node, ch, len(seg))
        t1, t2 = seg[0][0], seg[-1][0]
        want_j = truth(node, gpu, t1, t2)
        trap = sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(seg, seg[1:]))
        assert abs(trap - want_j) <= 0.01 * want_j, (node, ch, "trapezoid", trap, want_j)
        if seg[0][2]:
            cnt = float(seg[-1][2]) - float(seg[0][2])
            assert abs(cnt - want_j) <= 0.01 * want_j, (node, ch, "counter", cnt, want_j)
            n += 1
# A: 2 GPUs, B: 2 with a counter, C: 2 GPUs x 2 segments
assert n == 8, n
# C restarted with its counter reset: the second segment starts near 0 J
c0 = [float(r["joules_total"]) for r in dc if r["node"] == "127.0.0.3" and r["channel"] == "dcgm/gpu0"
      and r["joules_total"] != "" and float(r["timestamp_unix"]) > BACK]
assert c0 and c0[0] < 600 * 2, c0[:3]
'

check_py "power/samples.csv: srt-slurm's strict reader" "$PYLIB"'
hdr, rows, raw = samples("run/power/samples.csv")
assert hdr == ["schema_version", "timestamp_unix", "scrape_seq", "hostname", "gpu_index",
               "gpu_uuid", "power_w", "gpu_util_pct", "sm_active"], hdr
assert all(len(r) == 9 and r[0] == "2" for r in raw)
keys, last = set(), {}
for r in sorted(rows, key=lambda r: int(r["scrape_seq"])):
    k = (int(r["scrape_seq"]), r["hostname"], int(r["gpu_index"]))
    assert k not in keys, ("duplicate_sample_row", k)
    keys.add(k)
    t = float(r["timestamp_unix"])
    d = (r["hostname"], int(r["gpu_index"]))
    assert t >= last.get(d, 0), ("timestamp_non_monotonic", d)
    last[d] = t
    w = float(r["power_w"])
    assert math.isfinite(w) and w >= 0, r
    if r["gpu_util_pct"]:
        assert 0 <= float(r["gpu_util_pct"]) <= 100, r
    if r["sm_active"]:
        assert 0 <= float(r["sm_active"]) <= 1, r
devs = sorted(last)
assert devs == [("127.0.0.1", 0), ("127.0.0.1", 1), ("127.0.0.2", 0), ("127.0.0.2", 1),
                ("127.0.0.2", 2), ("127.0.0.3", 0), ("127.0.0.3", 1), ("127.0.0.4", 0),
                ("127.0.0.4", 1)], devs
# riders: A GPU 0 utilization blank (DCGM sentinel), SM activity only where enabled (A)
a0 = [r for r in rows if r["hostname"] == "127.0.0.1" and r["gpu_index"] == "0"]
assert all(r["gpu_util_pct"] == "" and r["sm_active"] != "" for r in a0), a0[:2]
assert all(r["gpu_util_pct"] != "" and r["sm_active"] == "" for r in rows if r["hostname"] == "127.0.0.2")
nv = {r["gpu_index"]: r for r in rows if r["hostname"] == "127.0.0.4"}
assert nv["0"]["gpu_uuid"] == "GPU-0000" and nv["0"]["gpu_util_pct"] == "80.0", nv["0"]
assert abs(float(nv["0"]["power_w"]) - 350) < 1 and abs(float(nv["1"]["power_w"]) - 120.5) < 1, nv
assert {r["gpu_uuid"] for r in a0} == {"GPU-a-0000"}
# one timestamp per host per cycle; the midpoint is before the settle time of samples.csv
_, crow, _ = samples("run/samples.csv")
host = lambda target: target.split(":")[-2]
settle = {(int(r["scrape_seq"]), host(r["target"])): float(r["timestamp_unix"]) for r in crow
          if not r["target"].startswith("127.0.0.5:")}
seqs = {}
for r in rows:
    seqs.setdefault((int(r["scrape_seq"]), r["hostname"]), set()).add(float(r["timestamp_unix"]))
for (seq, host), ts in seqs.items():
    assert len(ts) == 1, (seq, host, ts)
    t = ts.pop()
    st = settle[(seq, host)]
    assert st - 0.25 < t < st, (seq, host, t, st)
# every cycle in which A answered has a row of every host that was up: scrape_seq shared
full = [s for s in {k[0] for k in seqs} if all((s, h) in seqs for h in ("127.0.0.1", "127.0.0.2", "127.0.0.4"))]
assert len(full) >= 12, len(full)
m = json.load(open("run/power/manifest.json"))
assert m["status"] == "incomplete" and m["publication_valid"] is False, (m["status"], m["publication_valid"])
assert m["samples_schema_version"] == 2 and m["timestamp_source"] == "head_node_unix_clock"
assert m["sample_row_count"] == len(rows), (m["sample_row_count"], len(rows))
assert m["samples_sha256"] == hashlib.sha256(open("run/power/samples.csv", "rb").read()).hexdigest()
exp = [(d["hostname"], d["gpu_index"], [a["worker_role"] for a in d["assignments"]]) for d in m["expected_devices"]]
assert exp == [(h, i, ["agg"]) for h, i in devs], exp
obs = [(d["hostname"], d["gpu_index"]) for d in m["observed_devices"]]
assert obs == devs, obs
for d in m["observed_devices"]:
    ts = [float(r["timestamp_unix"]) for r in rows if (r["hostname"], int(r["gpu_index"])) == (d["hostname"], d["gpu_index"])]
    assert abs(d["first_sample_time_unix"] - min(ts)) < 1e-6 and abs(d["last_sample_time_unix"] - max(ts)) < 1e-6, d
'

# ---- srt-slurm's energy report on the run (srtref), both legs ----
mkdir -p log/sa-bench_isl_1024_osl_128
cp "$CARMA_FIXTURES/srt/sabench/benchmark.out" log/
cp -r run/power log/power
"$PY" - <<EOF
import json
rows = [l.split(",") for l in open("run/power/samples.csv", newline="").read().split("\r\n")[1:-1]]
ts = sorted(float(r[1]) for r in rows if r[3] == "127.0.0.1")
start, end = ts[0] + 0.5, ts[-1] - 0.5
json.dump({"duration": end - start, "completed": 10, "total_input_tokens": 1000,
           "total_output_tokens": 500, "benchmark_start_time_unix": start,
           "benchmark_end_time_unix": end},
          open("log/sa-bench_isl_1024_osl_128/results_concurrency_4_gpus_8_ctx_1_gen_1.json", "w"))
EOF
rc=0
"$PY" "$REF" log --json-out ref.json >ref.txt 2>ref.err || rc=$?
check_eq "$rc" 0 "srtref reads the collected directory (stderr: $(tail -n 1 ref.err 2>/dev/null))"
check_py "srtref: both legs, per-GPU energy within 1 % of the truth" "$PYLIB"'
r = json.load(open("ref.json"))
r = r[0] if isinstance(r, list) else r["reports"][0] if "reports" in r else r
dev = {b["label"]: b for b in r["gpu_per_device"]}
assert sorted(dev) == ["gpu/127.0.0.1/gpu0", "gpu/127.0.0.1/gpu1", "gpu/127.0.0.2/gpu0",
                       "gpu/127.0.0.2/gpu1", "gpu/127.0.0.2/gpu2", "gpu/127.0.0.3/gpu0",
                       "gpu/127.0.0.3/gpu1", "gpu/127.0.0.4/gpu0", "gpu/127.0.0.4/gpu1"], sorted(dev)
for host in ("127.0.0.1", "127.0.0.2"):
    for g in range(len([k for k in dev if k.startswith("gpu/%s/" % host)])):
        b = dev["gpu/%s/gpu%d" % (host, g)]
        want = truth(host, g, b["sample_start_unix"], b["sample_end_unix"])
        assert abs(b["joules"] - want) <= 0.01 * want, (host, g, b["joules"], want)
assert [b["label"] for b in r["cpu_per_node"]] == ["cpu/127.0.0.5"], r["cpu_per_node"]
assert r["cpu_total_joules"] > 0 and r["gpu_total_joules"] > 0
cm = json.load(open("run/power/cpu/cpu_manifest.json"))["nodes"]
# the dcgm-exporters are no CPU-leg exporters: never polled for it (the carma exporter, without
# --compat srtctl, answers without CPU families: an error there, as before)
assert cm["127.0.0.5"]["resolved_mode"] == "dcgm" and cm["127.0.0.5"]["error_count"] == 0, cm
assert all(cm[h]["scrape_count"] == 0 for h in ("127.0.0.1", "127.0.0.3")), cm
assert cm["127.0.0.2"]["scrape_count"] == 0, cm  # recognised by its body
assert [b["label"] for b in r["gpu_per_role"]] == ["gpu/%s/agg" % h for h in ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")], r["gpu_per_role"]
'

# ---- dcgm: errors name the target ----
rc=$(run_logged bad1 "$CARMA" collect --target dcgm:h:0 -o bad1 --duration 10ms)
check_rc bad1 2 "$rc"
check_grep bad1.err "bad target 'dcgm:h:0': port '0' is not 1..65535" "dcgm:h:0 named"
rc=$(run_logged bad2 "$CARMA" collect --target dcgm: -o bad2 --duration 10ms)
check_rc bad2 2 "$rc"
check_grep bad2.err "bad target 'dcgm:': no host after 'dcgm:'" "dcgm: named"
printf '127.0.0.1:9\ndcgm:h:99999\n' >bad.txt
rc=$(run_logged bad3 "$CARMA" collect --targets-file bad.txt -o bad3 --duration 10ms)
check_rc bad3 2 "$rc"
check_grep bad3.err "bad.txt:2: bad target 'dcgm:h:99999': port '99999' is not 1..65535" "file:line"
rc=$(run_logged bad4 "$CARMA" collect --target h --dcgm-port 9400 -o bad4 --duration 10ms)
check_rc bad4 2 "$rc"
check_grep bad4.err "--dcgm-port goes with --slurm" "--dcgm-port alone"
rc=$(run_logged bad5 "$CARMA" collect --slurm --dcgm-port 0 -o bad5 --duration 10ms)
check_rc bad5 2 "$rc"
check_grep bad5.err "--dcgm-port: '0' is not a port" "--dcgm-port 0"
[ ! -e bad1 ] && [ ! -e bad3 ] || check_fail "a refused run left a directory"

# ---- --slurm --dcgm-port: each node's exporter and its dcgm-exporter ----
mkdir -p bin
cat >bin/scontrol <<'EOF'
#!/bin/sh
[ "$1 $2 $3" = "show hostnames fake1" ] && printf '127.0.0.1\n' && exit 0
exit 1
EOF
chmod +x bin/scontrol
rc=$(run_logged slurm env PATH="$PWD/bin:$PATH" SLURM_JOB_NODELIST=fake1 \
    "$CARMA" collect --slurm --port 9 --dcgm-port "${FPORT[a]}" --srt-gpu -o slurm -q \
    --duration 500ms --interval 250ms)
check_rc slurm 0 "$rc"
check_py "--slurm --dcgm-port" '
m = json.load(open("slurm/manifest.json"))
got = [(t["target"], t["node"], t["kind"]) for t in m["targets"]]
assert got == [("127.0.0.1:9", "127.0.0.1", "exporter"),
               ("dcgm:127.0.0.1:'"${FPORT[a]}"'", "127.0.0.1", "dcgm")], got
rows = open("slurm/power/samples.csv", newline="").read().split("\r\n")[1:-1]
assert rows and all(r.split(",")[3] == "127.0.0.1" for r in rows), rows
'
cli_done
