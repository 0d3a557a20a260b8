#!/usr/bin/env bash
# The HTML report (`carma report DIR --format html`, report.html of `carma run`), opened by
# headless Chromium as a user would open it:
#   1. a fresh `carma run`: report.html is written; `carma report --format html -o` writes the
#      same page (but its time of writing); Chromium's DOM has the channel and job series and
#      the job table with report.json's energies; no console message; a screenshot is kept in
#      BUILD/test-artifacts/;
#   2. an srt-slurm log directory (bench_report's generator, 20 000 rows): one table row per
#      window with the JSON report's figures, the perf/W chart;
#   3. a long run (1 h at 100 ms, 36 000 ticks): every series downsampled to at most 1500
#      points, the page under 1 MB;
#   4. errors: a missing directory (exit 1, nothing written), --follow with html (exit 2);
#   5. marks: `carma stat -o DIR` on the grace fixture with windows marked by `carma mark`
#      (nested, overlapping, a name repeated, an event, one never ended, a name to escape), and
#      `carma run` of two workloads marking 217 windows (nested and overlapping) and 45 events
#      with the Python module: the timeline has a bar per mark window at its begin..end on the
#      power charts' time axis, lanes without overlaps, each workload's lanes together, the
#      labels, tooltips with the report's figures, the unended ones hatched, the events' ticks,
#      the windows of each workload's first lane shaded behind every power chart, the table of
#      the windows; the run of 1. (no marks) has none of it; screenshots kept;
#   6. carma collect of an exporter with two windows marked on its socket: each in the page's
#      windows table (source mark) and on a timeline over the power-per-node chart.
# Every <svg> must be well-formed XML and the page must fetch nothing.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib.sh"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || skip "no chromium (apt-get install chromium)"
CHECK="$CARMA_SRC/tests/integration/check_html.py"
GEN="$CARMA_SRC/tests/integration/gen_rundir.py"
ART="$CARMA_BUILD/test-artifacts"
mkdir -p "$ART"
here=$PWD

# dom PAGE OUT [SCREENSHOT]: Chromium's DOM of PAGE into OUT (its log into OUT.log); with
# SCREENSHOT, a 1200-pixel wide picture of it too. Fails on a console message.
dom() {
    local page=$1 out=$2 shot=${3:-}
    local flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
        --disable-component-update --disable-sync --no-first-run --disable-quic
        --user-data-dir="$here/chromium-profile" --enable-logging=stderr --v=0)
    timeout 120 "$CHROMIUM" "${flags[@]}" --dump-dom "file://$page" >"$out" 2>"$out.log" ||
        fail "chromium --dump-dom $page: $(tail -3 "$out.log")"
    [ -s "$out" ] || fail "chromium dumped nothing for $page"
    if grep -a 'CONSOLE' "$out.log"; then
        fail "console messages while opening $page"
    fi
    if [ -n "$shot" ]; then
        timeout 120 "$CHROMIUM" "${flags[@]}" --window-size=1200,2400 --screenshot="$shot" \
            "file://$page" >/dev/null 2>&1 || fail "chromium --screenshot $page"
        [ -s "$shot" ] || fail "no screenshot of $page"
    fi
}

# 1. a fresh carma run (two workloads on the intel-2s fixture tree)
cat >exp.json <<'JSON'
{"experiment_name": "html", "workloads": [
  {"name": "trainer", "script": "sleep", "args": ["1"]},
  {"name": "evaluator", "script": "sleep", "args": ["0.5"], "delay_s": 0.2}],
 "monitoring": {"baseline_s": 0.3, "interval": "50ms"}}
JSON
"$CARMA" run -q -o runs --root "$CARMA_FIXTURES/intel-2s" exp.json >run.out 2>run.err ||
    fail "carma run: $(cat run.err)"
run_dir=$(head -n 1 run.out)
need_file "$run_dir/report.html" "$run_dir/report.json"
"$CARMA" report "$run_dir" --format html -o again.html || fail "carma report --format html -o"
# the same page but for the footer's time
diff <(grep -v '^<footer>' "$run_dir/report.html") <(grep -v '^<footer>' again.html) >/dev/null ||
    fail "report.html differs from carma report --format html"
"$CARMA" report "$run_dir" --format html >stdout.html || fail "--format html to stdout"
cmp -s <(grep -v '^<footer>' stdout.html) <(grep -v '^<footer>' again.html) ||
    fail "--format html on stdout differs from -o"
dom "$(realpath "$run_dir/report.html")" run.dom "$ART/report-run.png"
"$PY" "$CHECK" run.dom run "$run_dir/report.json" rapl/package-0 rapl/package-1 trainer \
    evaluator || fail "the run's page"
"$PY" "$CHECK" run.dom nomarks || fail "the page of a run without marks"
note "run page: $(wc -c <"$run_dir/report.html") bytes, screenshot $ART/report-run.png"

# 2. an srt-slurm log directory
"$CARMA_BUILD/bench/bench_report" gen srt 20000 >/dev/null || fail "bench_report gen"
"$CARMA" report srt --edges snap --format html -o srt.html --json-out srt.json ||
    fail "carma report srt --format html"
dom "$PWD/srt.html" srt.dom "$ART/report-srt.png"
"$PY" "$CHECK" srt.dom srt srt.json || fail "the srt-slurm page"

# 3. a long run: downsampled
"$PY" "$GEN" long 3600 0.1 || fail "gen_rundir"
"$CARMA" report long --format html -o long.html || fail "carma report long --format html"
size=$(wc -c <long.html)
[ "$size" -lt 1000000 ] || fail "the 1-hour page is $size bytes"
dom "$PWD/long.html" long.dom
"$PY" "$CHECK" long.dom shown 1500 || fail "the long page"
"$PY" "$CHECK" long.dom run long/report.json rapl/package-0 model/gpu0 train eval idle ||
    fail "the long page's figures"
note "1-hour run at 100 ms: $size bytes"

# 4. errors
rc=0
"$CARMA" report nowhere --format html -o nowhere.html 2>err.txt || rc=$?
[ "$rc" -eq 1 ] || fail "a missing directory: exit $rc"
[ ! -e nowhere.html ] || fail "a page was written for a missing directory"
grep -q '^error: ' err.txt || fail "no error message: $(cat err.txt)"
rc=0
"$CARMA" report srt --follow --format html 2>/dev/null || rc=$?
[ "$rc" -eq 2 ] || fail "--follow --format html: exit $rc"
rc=0
"$CARMA" report srt --format pdf 2>/dev/null || rc=$?
[ "$rc" -eq 2 ] || fail "--format pdf: exit $rc"

# 5. marks: carma stat with carma mark
cat >marks.sh <<EOF
M="$CARMA mark"
\$M begin outer --tokens 7 -q
\$M begin inner -q
sleep 0.3
\$M end inner -q
\$M begin 'ep, <1>' -q
\$M begin 'ep, <1>' -q
\$M end 'ep, <1>' -q
\$M event loss 0.25
sleep 0.2
\$M end 'ep, <1>' --requests 3 -q
\$M w -q -- sleep 0.2
\$M end outer --tokens 70 -q
\$M begin left -q
sleep 0.3
EOF
"$CARMA" stat --root "$CARMA_FIXTURES/grace" --interval 50ms -o m1 -q -- bash marks.sh \
    >m1.out 2>m1.err || fail "carma stat with marks: $(cat m1.err)"
need_file m1/marks.csv
"$CARMA" report m1 --format html -o m1.html --json-out m1.json || fail "carma report m1"
dom "$PWD/m1.html" m1.dom "$ART/report-marks-stat.png"
"$PY" "$CHECK" m1.dom marks m1.json 6 || fail "the marks of carma stat"
grep -q '<text class="mark-label"[^>]*>ep, &lt;1&gt;</text>' m1.html ||
    fail "the label of 'ep, <1>' is not escaped"

# carma run: two workloads, 217 windows (ten epochs of ten steps, each step's begin inside a
# prefetch window, all in one), a window never ended and 45 events
cat >many.py <<'PY'
import sys, time
import carma
if sys.argv[1] == "a":
    with carma.window("train", tokens=1000):
        for e in range(10):
            carma.begin("epoch")
            for s in range(10):
                carma.begin("prefetch")
                time.sleep(0.004)
                with carma.window("step", tokens=10):
                    carma.end("prefetch")
                    time.sleep(0.012)
                if s % 3 == 0:
                    carma.event("loss", 1.0 / (1 + e * 10 + s))
            carma.end("epoch")
else:
    carma.begin("serve-forever")
    for i in range(5):
        with carma.window("request-%d" % i, tokens=5 * i):
            time.sleep(0.1)
        carma.event("queue", i)
    time.sleep(0.5)
PY
cat >many.json <<EOF
{"experiment_name": "marks", "workloads": [
 {"name": "a", "script": "$PY", "args": ["$PWD/many.py", "a"]},
 {"name": "b", "script": "$PY", "args": ["$PWD/many.py", "b"], "delay_s": 0.3}],
 "monitoring": {"interval": "50ms", "baseline_s": 0.2}}
EOF
PYTHONPATH="$CARMA_SRC/python" "$CARMA" run many.json --root "$CARMA_FIXTURES/grace" -q \
    -o runs2 >m2.out 2>m2.err || fail "carma run with marks: $(cat m2.err)"
m2=$(head -n 1 m2.out)
need_file "$m2/marks.csv" "$m2/report.html"
"$CARMA" report "$m2" --format json >m2.json || fail "carma report $m2"
dom "$(realpath "$m2/report.html")" m2.dom "$ART/report-marks-run.png"
"$PY" "$CHECK" m2.dom marks m2.json 217 || fail "the marks of carma run"

# 6. carma collect: two windows marked on its socket, overlapping
# shellcheck source=tests/integration/exporter_lib.sh
. "$CARMA_SRC/tests/integration/exporter_lib.sh"
start_exporter exp6 --root "$CARMA_FIXTURES/grace" --interval 100ms
"$CARMA" collect --target "$EXP_URL" -o c6 --duration 3s --interval 100ms -q >c6.out 2>c6.err &
c6_pid=$!
for ((i = 0; i < 100; i++)); do
    [ -S c6/carma.sock ] && break
    sleep 0.05
done
sleep 0.5
CARMA_SOCKET="$PWD/c6/carma.sock" "$CARMA" mark bench --tokens 600 -q -- sleep 1 &
bench_pid=$!
sleep 0.3
CARMA_SOCKET="$PWD/c6/carma.sock" "$CARMA" mark warmup -q -- sleep 0.4 ||
    fail "carma mark warmup"
wait "$bench_pid" || fail "carma mark bench"
wait "$c6_pid" || fail "carma collect: $(cat c6.err)"
kill -TERM "$EXP_PID" 2>/dev/null
"$CARMA" report c6 --format html -o c6.html --json-out c6.json || fail "carma report c6"
dom "$PWD/c6.html" c6.dom "$ART/report-marks-collect.png"
"$PY" "$CHECK" c6.dom collect-marks c6.json || fail "the marks of carma collect"
exit 0
