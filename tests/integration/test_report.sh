#!/usr/bin/env bash
# carma report on srt-slurm log directories, end to end:
#   1. differential: `carma report --edges snap` against tests/integration/srtref/ (srt-slurm's
#      report as docs/report.md describes it, transcribed into Python with numpy) on the fixture
#      log directories and CARMA_REPORT_SEEDS (default 60) random ones: the same exit status, the
#      same stdout text and stderr message byte for byte, and --json-out files byte for byte;
#   2. errors: exit 1, `error: <message>` and no --json-out file; usage errors exit 2;
#   3. --format json prints the --json-out text; --edges interpolate on a grid gives exact
#      figures;
#   4. --follow (srt-slurm's incremental report): power_energy_c<N>.json next to the artifact
#      and one power_energy_report.jsonl line per window, nothing twice, windows withheld until
#      the samples pass their end, torn last lines and header-only CSVs tolerated, the final
#      poll at SIGTERM, an aiperf report in conc_<N>/aiperf_artifacts/.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

REF="$CARMA_SRC/tests/integration/srtref"
need_file "$REF/srt_report_ref.py" "$REF/rand_logdir.py" "$CARMA_FIXTURES/srt/sabench"
"$PY" -c 'import numpy' 2>/dev/null || skip "$PY cannot import numpy (apt-get install python3-numpy)"
here=$PWD

# compare NAME DIR [ARGS...]: carma and the reference on DIR, everything byte for byte
compare() {
    local name=$1 dir=$2
    shift 2
    rm -f "$here/$name.c.json" "$here/$name.p.json"
    local c=0 p=0
    "$CARMA" report "$dir" --edges snap --json-out "$here/$name.c.json" "$@" \
        >"$here/$name.c.out" 2>"$here/$name.c.err" || c=$?
    "$PY" "$REF/srt_report_ref.py" "$dir" --json-out "$here/$name.p.json" "$@" \
        >"$here/$name.p.out" 2>"$here/$name.p.err" || p=$?
    check_clean_stderr "$here/$name.c"
    if [ "$c" != "$p" ]; then
        check_fail "$name: exit status $c, the reference's $p"
        show "$here/$name.c.err" "$here/$name.p.err" >&2
        return
    fi
    cmp -s "$here/$name.c.out" "$here/$name.p.out" ||
        { check_fail "$name: text differs"; diff "$here/$name.p.out" "$here/$name.c.out" | head -20 >&2; }
    cmp -s "$here/$name.c.err" "$here/$name.p.err" ||
        { check_fail "$name: stderr differs"; diff "$here/$name.p.err" "$here/$name.c.err" | head >&2; }
    if [ "$c" = 0 ]; then
        cmp -s "$here/$name.c.json" "$here/$name.p.json" ||
            { check_fail "$name: JSON differs"; diff "$here/$name.p.json" "$here/$name.c.json" | head -20 >&2; }
    elif [ -e "$here/$name.c.json" ]; then
        check_fail "$name: --json-out written although the report failed"
    fi
    [ "$c" = 0 ] && ok_runs=$((ok_runs + 1))
    [ "$c" = 1 ] && err_runs=$((err_runs + 1))
}

# --- 1. fixtures and random log directories against the reference
ok_runs=0 err_runs=0
for d in "$CARMA_FIXTURES"/srt/*/; do
    compare "fixture-$(basename "$d")" "$d"
done
# the sabench fixture's CPU leg does not cover concurrency 4's end: with the GPU leg alone
cp -R "$CARMA_FIXTURES/srt/sabench" "$here/sabench-gpu" && rm -r "$here/sabench-gpu/power/cpu"
compare fixture-sabench-gpu "$here/sabench-gpu"
seeds=${CARMA_REPORT_SEEDS:-60}
for s in $(seq 1 "$seeds"); do
    "$PY" "$REF/rand_logdir.py" "$here/rand" "$s" || fail "rand_logdir.py $s"
    compare "rand-$s" "$here/rand"
done
note "differential: $ok_runs reports and $err_runs errors identical to the reference"
[ "$ok_runs" -ge $((seeds / 3)) ] || check_fail "only $ok_runs of the runs gave a report"
[ "$err_runs" -ge 3 ] || check_fail "only $err_runs of the runs gave an error"

# --- 2. errors and usage
rc=$(run_logged "$here/missing" "$CARMA" report "$here/no-such-dir")
check_rc "$here/missing" 1 "$rc"
check_grep "$here/missing.err" "error: $here/no-such-dir: no such directory; carma report reads a carma run, stat or collect directory, which holds manifest.json" "missing dir"
rc=$(run_logged "$here/bad-edges" "$CARMA" report "$here/rand" --edges nearest)
check_rc "$here/bad-edges" 2 "$rc"
rc=$(run_logged "$here/no-dir" "$CARMA" report)
check_rc "$here/no-dir" 2 "$rc"
# a thread count that is not one: refused, not ignored
for v in 0 two -1 257 "1.5"; do
    rc=$(CARMA_REPORT_THREADS=$v run_logged "$here/threads-bad" "$CARMA" report "$here/rand")
    check_rc "$here/threads-bad" 2 "$rc"
    check_grep "$here/threads-bad.err" "CARMA_REPORT_THREADS='$v': a thread count from 1 to 256 is needed" "CARMA_REPORT_THREADS=$v"
done
rc=$(CARMA_REPORT_THREADS=' 3 ' run_logged "$here/threads-ok" "$CARMA" report "$here/rand")
[ "$rc" = 0 ] || [ "$rc" = 1 ] || check_fail "CARMA_REPORT_THREADS=' 3 ': exit $rc"

# --- 3. a flat run: --format json, both edges, exact figures
flat=$here/flat
mkdir -p "$flat/sa-bench_x" "$flat/power"
printf 'Serving Benchmark Result\n' >"$flat/benchmark.out"
printf '{"benchmark_start_time_unix": 100.5, "benchmark_end_time_unix": 110.5, "total_input_tokens": 1500, "total_output_tokens": 500}\n' \
    >"$flat/sa-bench_x/results_concurrency_4_a.json"
{
    printf 'schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,sm_active\r\n'
    for t in $(seq 95 115); do printf '2,%d.0,%d,node-a,0,G0,%d.0,,\r\n' "$t" "$t" $((t * 2)); done
} >"$flat/power/samples.csv"
rc=$(run_logged "$here/flat-json" "$CARMA" report "$flat" --format json --json-out "$here/flat.json")
check_rc "$here/flat-json" 0 "$rc"
cmp -s "$here/flat-json.out" "$here/flat.json" || check_fail "--format json differs from --json-out"
rc=$(run_logged "$here/flat-snap" "$CARMA" report "$flat" --format json --edges snap)
check_rc "$here/flat-snap" 0 "$rc"
check_py "flat figures" '
i = load(sys.argv[1])[0]["gpu_per_device"][0]
s = load(sys.argv[2])[0]["gpu_per_device"][0]
# w = 2t over [100.5, 110.5]: (110.5^2 - 100.5^2) = 2110 J exactly; snap: ties to the earlier
# sample (100 and 110), trapezoid of 2t over [100, 110] = 2100 J
assert abs(i["joules"] - 2110.0) < 1e-9, i
assert abs(s["joules"] - 2100.0) < 1e-9, s
assert s["sample_start_unix"] == 100.0 and s["sample_end_unix"] == 110.0, s
assert i["min_w"] == 201.0 and i["max_w"] == 221.0, i
' "$here/flat-json.out" "$here/flat-snap.out"

# --- a host name that is not UTF-8, and 1e308 W on every row (its sums overflow): errors
# naming the file and line, not "out of memory"
for what in host big; do
    bad=$here/flat-$what
    rm -rf "$bad"
    cp -r "$flat" "$bad"
    if [ "$what" = host ]; then
        printf '2,116.0,116,node-\377,0,G0,10.0,,\r\n' >>"$bad/power/samples.csv"
        want="error: $bad/power/samples.csv:23: hostname is not valid UTF-8 (byte 0xff at offset 5 of the cell)"
    else
        {
            printf 'schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,sm_active\r\n'
            for t in $(seq 95 115); do printf '2,%d.0,%d,node-a,0,G0,1e308,,\r\n' "$t" "$t"; done
        } >"$bad/power/samples.csv"
        want="error: $bad/power/samples.csv:2: power_w 1e+308 W is no plausible power (over 1e+09 W)"
    fi
    rc=$(run_logged "$here/flat-$what" "$CARMA" report "$bad")
    check_rc "$here/flat-$what" 1 "$rc"
    check_grep "$here/flat-$what.err" "$want" "report on a bad samples.csv ($what)"
    grep -q "out of memory" "$here/flat-$what.err" && check_fail "$what: reported as out of memory"
done

# --- 4. --follow
fol=$here/follow
mkdir -p "$fol/sa-bench_x" "$fol/power"
printf 'Serving Benchmark Result\n' >"$fol/benchmark.out"
printf '{"benchmark_start_time_unix": 1000, "benchmark_end_time_unix": 1010, "total_input_tokens": 30, "total_output_tokens": 10}\n' \
    >"$fol/sa-bench_x/results_concurrency_4_a.json"
hdr='schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,sm_active'
printf '%s\r\n' "$hdr" >"$fol/power/samples.csv"
follow_once() { run_logged "$here/$1" "$CARMA" report "$fol" --follow --once --edges snap; }
rc=$(follow_once f-header)
check_rc "$here/f-header" 0 "$rc"
[ -e "$fol/power_energy_report.jsonl" ] && check_fail "a header-only CSV gave a report"
check_grep "$here/f-header.err" "no samples yet" "header only: waiting"
# samples up to 1004 and a torn row: withheld
printf '2,999.5,0,n,0,G,100.0,,\r\n2,1002.0,1,n,0,G,100.0,,\r\n2,1004.0,2,n,0,G,100.0,,\r\n2,1005' \
    >>"$fol/power/samples.csv"
rc=$(follow_once f-early)
check_rc "$here/f-early" 0 "$rc"
[ -e "$fol/sa-bench_x/power_energy_c4.json" ] && check_fail "a window was reported before its samples reached its end"
# the rest of the torn row and the samples past the end: reported, once
printf '.0,3,n,0,G,100.0,,\r\n2,1008.0,4,n,0,G,100.0,,\r\n2,1010.5,5,n,0,G,100.0,,\r\n2,1011' \
    >>"$fol/power/samples.csv"
rc=$(follow_once f-done)
check_rc "$here/f-done" 0 "$rc"
rc=$(follow_once f-again)
check_rc "$here/f-again" 0 "$rc"
need_file "$fol/sa-bench_x/power_energy_c4.json"
check_eq "$(wc -l <"$fol/power_energy_report.jsonl")" 1 "JSONL lines after two polls"
"$CARMA" report "$fol" --edges snap --json-out "$here/fol-terminal.json" >/dev/null 2>&1 ||
    check_fail "terminal report of the follow run"
check_py "follow payload" '
c = load(sys.argv[1])
t = load(sys.argv[2])[0]
line = [json.loads(l) for l in open(sys.argv[3])][0]
keys = list(t) + ["schema_version", "emitted_at_unix"]
assert list(c) == keys, list(c)
assert list(line) == keys
for k in t:
    assert c[k] == t[k] == line[k], k
assert c["schema_version"] == 1 and abs(c["emitted_at_unix"] - __import__("time").time()) < 600
assert abs(c["gpu_total_joules"] - 1100.0) < 1e-9, c["gpu_total_joules"]
' "$fol/sa-bench_x/power_energy_c4.json" "$here/fol-terminal.json" "$fol/power_energy_report.jsonl"
text=$(tr -d '\n' <"$fol/power_energy_report.jsonl" | head -c 40)
case $text in '{"benchmark_type": "sa-bench", "concurre'*) ;; *) check_fail "JSONL line: $text" ;; esac

# an aiperf run: the report lands in conc_8/aiperf_artifacts/; at SIGTERM the final poll
# reports a window whose samples stop 1 s short of its end
ai=$here/aiperf
mkdir -p "$ai/conc_8/aiperf_artifacts" "$ai/power"
printf '17:59:31.680 NOTICE   Phase profiling (profiling) started | x\n' >"$ai/benchmark.out"
printf '{"metadata": {"benchmark_phase": "profiling", "request_start_ns": 1000000000000, "request_end_ns": 1010000000000}}\n' \
    >"$ai/conc_8/aiperf_artifacts/profile_export.jsonl"
printf '{"total_osl": {"avg": 42}, "total_isl": {"avg": 7}}\n' >"$ai/conc_8/aiperf_artifacts/profile_export_aiperf.json"
{
    printf '%s\r\n' "$hdr"
    for t in $(seq 999 1009); do printf '2,%d.0,%d,n,0,G,50.0,,\r\n' "$t" "$t"; done
} >"$ai/power/samples.csv"
BG_NAME=$here/ai-bg
"$CARMA" report "$ai" --follow --poll 200ms --edges snap >"$here/ai-bg.out" 2>"$here/ai-bg.err" &
pid=$!
sleep 1
[ -e "$ai/conc_8/aiperf_artifacts/power_energy_c8.json" ] &&
    check_fail "aiperf window reported before the final poll"
kill -TERM "$pid"
wait "$pid"
check_eq "$?" 0 "follow exit status at SIGTERM"
check_clean_stderr "$here/ai-bg"
need_file "$ai/conc_8/aiperf_artifacts/power_energy_c8.json"
check_py "aiperf follow" '
c = load(sys.argv[1])
assert c["benchmark_type"] == "aiperf" and c["concurrency"] == 8, c
assert abs(c["gpu_total_joules"] - 450.0) < 1e-9, c["gpu_total_joules"]
' "$ai/conc_8/aiperf_artifacts/power_energy_c8.json"

# --- 5. carma run and stat directories: a real run made now, and the fixtures
rc=$(run_logged "$here/qrun" "$CARMA" run -q -o "$here/runs" "$CARMA_SRC/examples/quickstart/experiment.json")
check_rc "$here/qrun" 0 "$rc"
rd=$(head -n 1 "$here/qrun.out")
need_file "$rd/report.json"
rc=$(run_logged "$here/rrep" "$CARMA" report "$rd" --json-out "$here/rrep.json")
check_rc "$here/rrep" 0 "$rc"
check_clean_stderr "$here/rrep"
check_grep "$here/rrep.out" "[run] window=" "run report text"
check_grep "$here/rrep.out" "[workload heavy (cpu-load)] window=" "workload window text, with the type"
check_grep "$here/rrep.out" "[estimated]" "the model's numbers are labelled"
check_py "run report vs report.json" '
rep = load(sys.argv[1]); w = load(sys.argv[2])
run = w[0]
assert run["window"] == "run" and [x["name"] for x in w[1:]] == [x["name"] for x in rep["workloads"]], w
assert abs(run["node_total_joules"] - rep["total_energy_j"]) <= 1e-6 * rep["total_energy_j"], (run["node_total_joules"], rep["total_energy_j"])
jobs = {j["name"]: j["joules"] for j in run["jobs"]}
for x in rep["workloads"]:
    assert abs(jobs[x["name"]] - x["energy_j"]) <= 1e-6 * max(1.0, x["energy_j"]), (x["name"], jobs[x["name"]], x["energy_j"])
rest = run["idle_joules"] + run["other_joules"] + run["unattributed_joules"]
assert abs(sum(jobs.values()) + rest - run["node_total_joules"]) <= 1e-6 * run["node_total_joules"]
assert abs(run["carbon"]["operational_g_co2e"] - rep["carbon"]["operational_g_co2e"]) <= 1e-6 * rep["carbon"]["operational_g_co2e"] + 1e-12
for x in w[1:]:
    me = [j for j in x["jobs"] if j["name"] == x["name"]][0]
    assert abs(me["joules"] - jobs[x["name"]]) <= 1e-6 * max(1.0, jobs[x["name"]]), x["name"]
' "$rd/report.json" "$here/rrep.json"
rc=$(run_logged "$here/rrep-follow" "$CARMA" report "$rd" --follow)
check_rc "$here/rrep-follow" 2 "$rc"
for d in "$CARMA_FIXTURES"/rundir/*/; do
    n=$(basename "$d")
    rc=$(run_logged "$here/fix-$n" "$CARMA" report "$d" --format json)
    check_rc "$here/fix-$n" 0 "$rc"
    check_clean_stderr "$here/fix-$n"
done

# carma collect --report-follow: the reports of a log directory written beside a collection
# (here of one dead target: the collection goes on, and so does the report thread)
cf=$here/collect-follow
mkdir -p "$cf/sa-bench_x" "$cf/power"
printf 'Serving Benchmark Result\n' >"$cf/benchmark.out"
printf '{"benchmark_start_time_unix": 1000, "benchmark_end_time_unix": 1004, "total_input_tokens": 3, "total_output_tokens": 1}\n' \
    >"$cf/sa-bench_x/results_concurrency_2_a.json"
{
    printf '%s\r\n' "$hdr"
    for t in $(seq 999 1006); do printf '2,%d.0,%d,n,0,G,10.0,,\r\n' "$t" "$t"; done
} >"$cf/power/samples.csv"
rc=$(run_logged "$here/collect" "$CARMA" collect --target 127.0.0.1:1 --interval 200ms \
    --duration 1500ms --report-follow "$cf" --report-poll 300ms --report-edges snap -o "$here/coll")
check_rc "$here/collect" 0 "$rc"
check_clean_stderr "$here/collect"
need_file "$cf/sa-bench_x/power_energy_c2.json"
check_grep "$here/collect.err" "1 benchmark window reported in $cf" "collect's summary"
check_eq "$(wc -l <"$cf/power_energy_report.jsonl")" 1 "collect --report-follow JSONL lines"
rc=$(run_logged "$here/collect-bad" "$CARMA" collect --target 127.0.0.1:1 --report-poll 0s -o "$here/coll2")
check_rc "$here/collect-bad" 2 "$rc"

# carma run --report-follow: a workload that writes an srt-slurm sweep of two concurrencies;
# the first is reported while the sweep runs, the second at the final poll after it ends
rf=$here/run-follow
cat >"$here/sweep.sh" <<SWEEP
d=$rf
mkdir -p \$d/power \$d/sa-bench_x
printf 'Serving Benchmark Result\\n' >\$d/benchmark.out
printf '%s\\r\\n' '$hdr' >\$d/power/samples.csv
for t in 1000 1001 1002 1003 1004 1005; do printf '2,%d.0,%d,n,0,G,20.0,,\\r\\n' \$t \$t >>\$d/power/samples.csv; done
printf '{"benchmark_start_time_unix": 1000, "benchmark_end_time_unix": 1004, "total_input_tokens": 3, "total_output_tokens": 1}' >\$d/sa-bench_x/results_concurrency_1_a.json
sleep 1
test -e \$d/sa-bench_x/power_energy_c1.json && echo early-report-seen
for t in 1006 1007 1008 1009; do printf '2,%d.0,%d,n,0,G,30.0,,\\r\\n' \$t \$t >>\$d/power/samples.csv; done
printf '{"benchmark_start_time_unix": 1005, "benchmark_end_time_unix": 1009, "total_input_tokens": 3, "total_output_tokens": 1}' >\$d/sa-bench_x/results_concurrency_2_a.json
SWEEP
printf '{"experiment_name": "sweep", "workloads": [{"name": "sweep", "type": "shell", "script": "%s"}], "monitoring": {"interval": "100ms", "baseline_s": 0}}\n' \
    "$here/sweep.sh" >"$here/sweep.json"
rc=$(run_logged "$here/run-follow" "$CARMA" run -o "$here/runs2" --report-follow "$rf" \
    --report-poll 200ms "$here/sweep.json")
check_rc "$here/run-follow" 0 "$rc"
check_clean_stderr "$here/run-follow"
check_grep "$here/run-follow.err" "2 benchmark windows reported in $rf" "run's summary"
rd2=$(head -n 1 "$here/run-follow.out")
check_grep "$rd2/logs/sweep.out" "early-report-seen" "the first window reported while the sweep ran"
check_eq "$(wc -l <"$rf/power_energy_report.jsonl")" 2 "run --report-follow JSONL lines"
check_py "run --report-follow" '
a = load(sys.argv[1]); b = load(sys.argv[2])
assert abs(a["gpu_total_joules"] - 80.0) < 1e-9, a["gpu_total_joules"]
assert abs(b["gpu_total_joules"] - 115.0) < 1e-9  # 20 W at 1005, 30 W from 1006, b["gpu_total_joules"]
' "$rf/sa-bench_x/power_energy_c1.json" "$rf/sa-bench_x/power_energy_c2.json"

cli_done
