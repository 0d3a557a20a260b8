#!/usr/bin/env bash
# CARMA's own experiment file, as its README writes it (tests/experiments/good/carma-readme:
# "type": "finetune", "gpu": true, "script": "python3", args relative to the framework
# directory, CUDA_VISIBLE_DEVICES in env), run the way a CARMA user runs it, from the framework
# directory:
#   validate   carma validate accepts it; --json keeps type, gpu true and launch exec, and the
#              resolved document resolves to itself
#   gpu        carma run with the fake NVML (one GPU, 100 W idle, no GPU client: the python
#              workload never touches it) and a simulated Watts Up? (123.4 W): exit 0; the
#              workload's type in workloads.json, report.json, report.txt and report.html;
#              CARMA's files beside carma's: nvidia_smi_power.csv in nvidia-smi's CSV format
#              with the fake's power (100 W, 0 %: median within 0.5 W, each row within 10 W)
#              at power/samples.csv's times, wattsup_log.csv
#              with the meter's 123.4 W, perf.log in perf stat -x, -I -G form whose task-clock
#              adds up to features.csv's (when this machine lets carma read it), and
#              workload_name_power_carbon.csv ending at report.json's energy and carbon
#   gpu false  the same with "gpu": false: it owns no GPU (report.json gpus[].owners) and has
#              no GPU's embodied carbon, where with true it owns GPU 0
#   killed     carma SIGKILLed two event summaries into a longer run: nvidia_smi_power.csv and
#              the workload's CSV hold the rows so far (followed as the run went)
#   plain      carma run as a newcomer types it (no --root, no --sources) on this machine:
#              exit 0 with a GPU workload and no GPU measured; no nvidia_smi_power.csv and no
#              wattsup_log.csv, the workload's CSV still there
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

FW_SRC="$CARMA_SRC/tests/experiments/good/carma-readme"
LIB="$CARMA_BUILD/tests/fakes/libfake-nvml.so"
SIM="$CARMA_BUILD/tests/fakes/carma-wattsup-sim"
need_file "$FW_SRC/sample_experiment.json" "$FW_SRC/workloads/finetune_model.py" "$LIB" "$SIM" \
    "$CARMA_FIXTURES/vm-empty"
command -v python3 >/dev/null || skip "no python3 (the example's script is run with it)"
top=$PWD

# the framework directory, as a CARMA user has it
cp -R "$FW_SRC" fw || fail "cp $FW_SRC"
cd fw || fail "cd fw"

note "validate"
rc=$(run_logged "$top/validate" "$CARMA" validate sample_experiment.json)
check_rc "$top/validate" 0 "$rc"
check_eq "$(head -n 1 "$top/validate.out")" "sample_experiment.json: ok (1 workload)" "validate"
check_grep "$top/validate.out" "  workload_name: python3 workloads/finetune_model.py --model_name model_name --max_steps 60 (in " \
    "validate: the command CARMA's example runs"
rc=$(run_logged "$top/json" "$CARMA" validate --json sample_experiment.json)
check_rc "$top/json" 0 "$rc"
check_py "validate --json" '
j = load(sys.argv[1])
w = j["workloads"][0]
assert w["type"] == "finetune" and w["launch"] == "exec" and w["gpu"] is True, w
assert w["script"] == "python3" and w["args"][0] == "workloads/finetune_model.py", w
assert w["cwd"] == os.path.realpath(sys.argv[2]), (w["cwd"], sys.argv[2])
assert w["env"] == {"CUDA_VISIBLE_DEVICES": "0"}, w["env"]
' "$top/json.out" "$PWD"
cp "$top/json.out" "$top/resolved.json"
rc=$(run_logged "$top/rejson" "$CARMA" validate --json "$top/resolved.json")
check_rc "$top/rejson" 0 "$rc"
cmp -s "$top/json.out" "$top/rejson.out" || check_fail "the resolved document does not resolve to itself"

note "gpu: carma run with the fake NVML and a simulated Watts Up?"
export SIM_TTY=$top/wattsup.tty
"$SIM" --link "$SIM_TTY" --truth "$top/sim.truth.csv" --pidfile "$top/sim.pid" --duration 60 \
    --power 123.4 --period 0.2 >"$top/sim.log" 2>&1 &
sim_pid=$!
_cleanup_pids+=("$sim_pid")
for ((i = 0; i < 300; i++)); do
    [ -s "$top/sim.pid" ] && break
    sleep 0.01
done
[ -s "$top/sim.pid" ] || fail "carma-wattsup-sim did not start: $(cat "$top/sim.log")"
mkdir -p "$top/clients"
rc=$(run_logged "$top/run" env CARMA_NVML_LIBRARY="$LIB" \
    CARMA_FAKE_NVML_SCENARIO="$CARMA_SRC/tests/fakes/nvml/shared.scenario" \
    CARMA_FAKE_NVML_CLIENTS="$top/clients" "$CARMA" run --root "$CARMA_FIXTURES/vm-empty" \
    --sources nvml --meter "wattsup:$SIM_TTY" --interval 100ms --baseline 0.3s -o runs \
    sample_experiment.json)
kill -TERM "$sim_pid" 2>/dev/null
wait "$sim_pid" 2>/dev/null
check_rc "$top/run" 0 "$rc"
RD=$(head -n 1 "$top/run.out")
[ -d "$RD" ] || fail "no run directory: '$RD'"
check_grep "$top/run.out" "workload types: workload_name finetune" "the printed report's type"
check_grep "$RD/report.txt" "workload types: workload_name finetune" "report.txt's type"
check_grep "$RD/report.html" '<span class="tag kind">finetune</span>' "the HTML report's type"
check_grep "$RD/logs/workload_name.out" "done: model_name loss" "the workload ran to its end"
check_py "run dir" '
import datetime, time
rd = sys.argv[1]
ex = load(rd + "/experiment.json")["workloads"][0]
assert ex["type"] == "finetune" and ex["gpu"] is True and ex["launch"] == "exec", ex
assert load(rd + "/workloads.json")["workloads"][0]["type"] == "finetune"
rep = load(rd + "/report.json")
rw = rep["workloads"][0]
assert rw["type"] == "finetune", rw
pids = load(rd + "/workload_pids.json")
assert list(pids) == ["workload_name"] and pids["workload_name"] > 0, pids

# nvidia_smi_power.csv: nvidia-smi --query-gpu=timestamp,index,power.draw,utilization.gpu
# --format=csv, a row per row of power/samples.csv (local time, ms)
lines = open(rd + "/nvidia_smi_power.csv").read().split("\n")
assert lines[0] == "timestamp, index, power.draw [W], utilization.gpu [%]", lines[0]
assert lines[-1] == "", "no final newline"
rows = lines[1:-1]
src = list(csv.DictReader(open(rd + "/power/samples.csv", newline="")))
assert len(rows) == len(src) and rows, (len(rows), len(src))
pat = re.compile(r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}), (\d+), (\d+\.\d\d) W, (\d+) %$")
for row, s in zip(rows, src):
    m = pat.match(row)
    assert m, row
    t = datetime.datetime.strptime(m.group(1), "%Y/%m/%d %H:%M:%S.%f").timestamp()
    assert abs(t - float(s["timestamp_unix"])) <= 0.0006, (row, s["timestamp_unix"])
    assert m.group(2) == s["gpu_index"] == "0", row
    # the fake: 100 W idle, no client. A row is the step of the counter over the time between two
    # reads as carma stamped them: a thread preempted between its stamp and the read shows
    # 100 W x (T + d) / T on that row and 100 W x (T - d) / T on the next (96.75 W seen under
    # the sanitizers on a loaded CI machine, d = 3.25 ms on T = 100 ms), so a row is held to
    # 10 W and the median and mean of the run to 0.5 W and 1 W
    assert abs(float(m.group(3)) - 100.0) < 10.0, row
    assert abs(float(m.group(3)) - float(s["power_w"])) <= 0.005001, (row, s["power_w"])
    assert m.group(4) == "0", row
pw = [float(r.split(", ")[2].split()[0]) for r in rows]
med = sorted(pw)[len(pw) // 2]
assert abs(med - 100.0) < 0.5, ("median", med, pw)
assert abs(sum(pw) / len(pw) - 100.0) < 1.0, ("mean", sum(pw) / len(pw), pw)
print("# nvidia_smi_power.csv: %d rows, %.2f .. %.2f W" % (len(rows), min(pw), max(pw)))

# wattsup_log.csv: the meter readings
w = open(rd + "/wattsup_log.csv").read().split("\n")
assert w[0] == "timestamp_unix,watts,volts,amps" and w[-1] == "", w[:2]
assert len(w) >= 4, w
for row in w[1:-1]:
    f = row.split(",")
    assert len(f) == 4 and f[1] == "123.4" and f[2] == "" and f[3] == "", row
print("# wattsup_log.csv: %d rows of 123.4 W" % (len(w) - 2))

# perf.log: perf stat -x, -I ... -G lines, with the counters carma read
feat = list(csv.DictReader(open(rd + "/features.csv", newline="")))
tc = [int(r["task_clock_ns"]) for r in feat if r["task_clock_ns"]]
if not os.path.exists(rd + "/perf.log"):
    assert not tc and not any(r["instructions"] or r["cycles"] for r in feat), "features.csv has counters, no perf.log"
    print("# perf.log: none (this machine gave carma no perf counter)")
else:
    pl = open(rd + "/perf.log").read().split("\n")
    assert pl[-1] == "", "no final newline"
    msec, last_t = 0.0, -1.0
    for row in pl[:-1]:
        f = row.split(",")
        assert len(f) == 9, row
        assert f[3] in ("task-clock", "instructions", "cycles") and f[4] == "workload_name", row
        assert float(f[0]) >= last_t and int(f[5]) > 0 and f[6] == "100.00", row
        last_t = float(f[0])
        if f[3] == "task-clock":
            assert f[2] == "msec" and f[8] == "CPUs utilized", row
            msec += float(f[1])
    if tc:
        assert abs(msec - tc[-1] / 1e6) < 0.01 * len(pl), (msec, tc[-1])
    print("# perf.log: %d lines, task-clock %.2f ms" % (len(pl) - 1, msec))

# the workload power and carbon CSV, ending at the report figures
jc = list(csv.DictReader(open(rd + "/workload_name_power_carbon.csv", newline="")))
ev = [json.loads(l) for l in open(rd + "/event_summaries.jsonl")]
assert len(jc) == len(ev) and jc, (len(jc), len(ev))
assert list(jc[0]) == ["timestamp_unix", "elapsed_s", "power_w", "energy_j", "operational_g_co2e", "embodied_g_co2e", "method"], list(jc[0])
last = jc[-1]
assert abs(float(last["energy_j"]) - rw["energy_j"]) <= 1e-3 + 1e-3 * rw["energy_j"], (last, rw["energy_j"])
assert abs(float(last["operational_g_co2e"]) - rw["operational_g_co2e"]) <= 1e-6 + 1e-3 * rw["operational_g_co2e"], last
assert abs(float(last["embodied_g_co2e"]) - rw["embodied_g_co2e"]) <= 0.02 * rw["embodied_g_co2e"] + 1e-9, (last, rw["embodied_g_co2e"])
assert all(r["method"] == "measured" for r in jc), jc
e = [float(r["energy_j"]) for r in jc]
assert e == sorted(e), e
print("# workload_name_power_carbon.csv: %d rows, %.3f J, %.6f gCO2e operational" % (len(jc), e[-1], float(last["operational_g_co2e"])))
' "$RD"

note "gpu false: the same workload, declared not a GPU workload"
# CUDA_VISIBLE_DEVICES still names GPU 0, but "gpu": false: it owns no GPU and has no GPU's
# embodied carbon (with true, above: it owns GPU 0, from its CUDA_VISIBLE_DEVICES)
sed 's/"gpu": true/"gpu": false/' sample_experiment.json >cpu_experiment.json
rc=$(run_logged "$top/cpu" env CARMA_NVML_LIBRARY="$LIB" \
    CARMA_FAKE_NVML_SCENARIO="$CARMA_SRC/tests/fakes/nvml/shared.scenario" \
    CARMA_FAKE_NVML_CLIENTS="$top/clients" "$CARMA" run --root "$CARMA_FIXTURES/vm-empty" \
    --sources nvml --interval 100ms --baseline 0.2s -o runs-cpu cpu_experiment.json)
check_rc "$top/cpu" 0 "$rc"
check_py "gpu true and false: owners and embodied GPUs" '
t, f = load(sys.argv[1] + "/report.json"), load(sys.argv[2] + "/report.json")
assert t["gpus"][0]["owners"] == ["workload_name"], t["gpus"][0]["owners"]
assert f["gpus"][0]["owners"] == [], f["gpus"][0]["owners"]
dev = lambda r: [e["device"] for e in r["workloads"][0]["embodied"]]
assert "gpu0" in dev(t) and "gpu0" not in dev(f), (dev(t), dev(f))
assert load(sys.argv[2] + "/experiment.json")["workloads"][0]["gpu"] is False
' "$RD" "$(head -n 1 "$top/cpu.out")"

note "killed: carma SIGKILLed mid-run leaves CARMA's files up to then"
sed 's/"--max_steps", "60"/"--max_steps", "600"/' sample_experiment.json >long_experiment.json
BG_NAME="$top/kill" carma_bg CARMA_NVML_LIBRARY="$LIB" \
    CARMA_FAKE_NVML_SCENARIO="$CARMA_SRC/tests/fakes/nvml/shared.scenario" \
    CARMA_FAKE_NVML_CLIENTS="$top/clients" -- run --root "$CARMA_FIXTURES/vm-empty" \
    --sources nvml --interval 100ms --baseline 0.2s -o runs-kill long_experiment.json
_cleanup_pids+=("$BG_PID")
wait_rows "$top/kill.out" 1 || fail "carma run printed no run directory: $(cat "$top/kill.err")"
KD=$(head -n 1 "$top/kill.out")
# two event summaries in: every CARMA file has rows
for ((i = 0; i < 800; i++)); do
    [ -f "$KD/event_summaries.jsonl" ] && [ "$(wc -l <"$KD/event_summaries.jsonl")" -ge 2 ] && break
    sleep 0.01
done
sleep 0.2
kill -KILL "$BG_PID" 2>/dev/null
wait "$BG_PID" 2>/dev/null
kill_group "$(sed -n 's/^workload_name: pgid \([0-9]*\).*/\1/p' "$KD/pstree.log" | head -n 1)"
[ -e "$KD/report.json" ] && check_fail "killed: the run got to its end (report.json)"
check_py "killed run: CARMA files so far" '
rd = sys.argv[1]
n = open(rd + "/nvidia_smi_power.csv").read().split("\n")
assert n[0] == "timestamp, index, power.draw [W], utilization.gpu [%]" and len(n) >= 6 and n[-1] == "", n[:3]
src = list(csv.DictReader(open(rd + "/power/samples.csv", newline="")))
assert len(n) - 2 <= len(src) and len(n) - 2 >= len(src) - 20, (len(n), len(src))
assert all(re.match(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}, 0, \d+\.\d\d W, \d+ %$", l) for l in n[1:-1]), n
jc = open(rd + "/workload_name_power_carbon.csv").read().split("\n")
assert jc[0].startswith("timestamp_unix,elapsed_s,power_w,energy_j,") and len(jc) >= 3 and jc[-1] == "", jc
feat = [r for r in csv.DictReader(open(rd + "/features.csv", newline="")) if r["task_clock_ns"]]
assert not feat or os.path.getsize(rd + "/perf.log") > 0, "features.csv has counters, perf.log is empty"
print("# killed run: nvidia_smi_power.csv %d rows (power/samples.csv %d), workload CSV %d rows" % (len(n) - 2, len(src), len(jc) - 2))
' "$KD"

note "plain: carma run as a newcomer types it"
rc=$(run_logged "$top/plain" "$CARMA" run --baseline 0.3s -o plain sample_experiment.json)
check_rc "$top/plain" 0 "$rc"
PD=$(head -n 1 "$top/plain.out")
if [ -d "$PD" ]; then
    [ -e "$PD/nvidia_smi_power.csv" ] && check_fail "nvidia_smi_power.csv without a GPU measured"
    [ -e "$PD/wattsup_log.csv" ] && check_fail "wattsup_log.csv without a meter"
    [ -s "$PD/workload_name_power_carbon.csv" ] || check_fail "no workload_name_power_carbon.csv"
    check_grep "$PD/report.txt" "workload types: workload_name finetune" "plain: report.txt's type"
else
    check_fail "plain: no run directory: '$PD'"
fi

cd "$top" || fail "cd $top"
cli_done
