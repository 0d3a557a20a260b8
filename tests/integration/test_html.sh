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
#   4. errors: a missing directory (exit 1, nothing written), --follow with html (exit 2).
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
exit 0
