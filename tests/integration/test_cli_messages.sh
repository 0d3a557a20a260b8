#!/usr/bin/env bash
# Messages a person can act on, for every subcommand: long options are written in full (an
# abbreviation such as `report --json` for --json-out is refused, never guessed), an unknown
# option or command names the closest ones, a missing value names its option; every duration
# follows one rule (a plain number is seconds, else a unit) with one message; `carma report`
# on a path it cannot read says what it expected; the commands that print a table have --json.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

F=$CARMA_FIXTURES
need_file "$F/vm-empty" "$F/rundir/stat" "$CARMA_SRC/tests/experiments/good/minimal.json"

# err_is NAME RC TEXT CMD...: exit status RC and TEXT (a fixed string) on stderr, nothing else
err_is() {
    local name=$1 want_rc=$2 text=$3 rc
    shift 3
    rc=$(run_logged "$name" "$CARMA" "$@")
    check_rc "$name" "$want_rc" "$rc"
    check_clean_stderr "$name"
    check_grep "$name.err" "$text" "carma $*"
}

# --- unknown commands and options suggest the closest
err_is sats 2 "carma: unknown command 'sats': did you mean 'stat'?" sats
err_is sensor 2 "carma: unknown command 'sensor': did you mean 'sensors'?" sensor
err_is model_sub 2 "carma: model: unknown subcommand 'fti': did you mean 'fit'?" model fti
err_is nothing 2 "carma: unknown command 'zzzzzz'" zzzzzz
check_no_grep nothing.err "did you mean" "no suggestion for a name near nothing"
err_is intervl 2 "carma: stat: unknown option '--intervl': did you mean '--interval'?" \
    stat --intervl 1s -- true
err_is intervl_eq 2 "carma: stat: unknown option '--intervl': did you mean '--interval'?" \
    stat --intervl=1s -- true
err_is rpt_fmt 2 "carma: report: unknown option '--fromat': did you mean '--format'?" \
    report "$F/rundir/stat" --fromat json
err_is val_x 2 "carma: validate: unknown option '--frobnicate' (carma validate --help lists" \
    validate --frobnicate x.json
err_is short 2 "carma: sensors: unknown option '-Z'" sensors -Z
err_is cluster 2 "carma: stat: unknown option '-Z'" stat --interval=1s -Zq -- true

# --- abbreviations are refused in every subcommand (getopt_long would take them)
err_is abbr_report 2 "carma: report: unknown option '--json-o': did you mean '--json-out'?" \
    report "$F/rundir/stat" --json-o x.json
[ -e x.json ] && check_fail "report --json-o wrote x.json"
err_is abbr_int 2 "unknown option '--int': did you mean '--interval' or '--intensity'?" \
    stat --int 1s -- true
for args in "sensors --sam 10ms" "stat --base 1s -- true" "run --gr 1s x.json" \
    "validate --js x.json" "exporter --list :0" "collect --targ a:1" "top --onc d" \
    "report d --form json" "model fit --fold 3 d" "model predict --mod m.json d" \
    "import-nsys --work a x.sqlite" "merge d --requ" "wait-ready d --node a"; do
    # shellcheck disable=SC2086 # the words of args are the command line
    rc=$(run_logged abbr "$CARMA" $args)
    check_rc abbr 2 "$rc"
    check_grep abbr.err "unknown option '--" "carma $args: an abbreviation is refused"
    check_grep abbr.err "did you mean '--" "carma $args: the full name is suggested"
done

# --- a missing value, a value where none is taken
err_is noval 2 "carma: run: option '--baseline' needs a value" run --baseline
err_is noval_o 2 "carma: stat: option '-o' needs a value" stat -o
err_is extra 2 "carma: sensors: option '--json' takes no value" sensors --json=yes

# --- durations: one rule and one message everywhere
rule="a plain number is seconds (1.5 = 1.5 s), or give a unit: ns, us, ms, s, m or h"
err_is d_interval 2 "carma: --interval: '5x' is not a duration from 1ms to 1m: $rule" \
    stat --interval 5x -- true
err_is d_baseline 2 "carma: --baseline: '1 s' is not a duration from 0s to 10m: $rule" \
    run --baseline "1 s" x.json
err_is d_grace 2 "carma: --grace: '-1' is not a duration from 0s to 1h: $rule" \
    stat --grace=-1 -- true
err_is d_sample 2 "carma: --sample: 'soon' is not a duration from 1ns to 1m: $rule" \
    sensors --sample soon
err_is d_top 2 "carma: --interval: '5ms' is not a duration from 10ms to 24h" top --interval 5ms d
err_is d_poll 2 "carma: --poll: 'x' is not a duration" report d --poll x
err_is d_window 2 "carma: --window: '2h' is not a duration from 10ms to 1h: $rule" \
    model fit --window 2h d -o m.json
err_is d_collect 2 "carma: collect: --timeout: '0' is not a duration from 1ms to 1h: $rule" \
    collect --target a:1 --timeout 0
err_is d_follow 2 "carma: run: --report-poll: 'x' is not a duration" run --report-poll x x.json
err_is d_nsys 2 "carma: --interval: '0.0001' is not a duration from 1ms to 1h: $rule" \
    import-nsys --interval 0.0001 x.sqlite
# a plain number is seconds, on the command line and in an experiment file
rc=$(run_logged sample_s "$CARMA" sensors --root "$F/vm-empty" --sample 0.02 --json)
check_rc sample_s 0 "$rc"
cat >dur.json <<'JSON'
{"experiment_name": "dur", "workloads": [{"name": "a", "script": "true", "delay_s": "250ms",
 "timeout_s": 90}], "monitoring": {"interval": 0.05, "baseline_s": "1.5"}}
JSON
rc=$(run_logged dur "$CARMA" validate --json dur.json)
check_rc dur 0 "$rc"
check_py "experiment durations by the one rule" '
j = load(sys.argv[1])
w = j["workloads"][0]
assert w["delay_s"] == 0.25 and w["timeout_s"] == 90, w
assert j["monitoring"]["baseline_s"] == 1.5, j["monitoring"]
' dur.out

# --- carma report on what it cannot read says what it expected
exp="carma report reads a carma run, stat or collect directory, which holds manifest.json (carma run -o, carma stat -o, carma collect -o), or an srt-slurm log directory, which holds benchmark.out"
err_is r_missing 1 "error: $PWD/nope: no such directory; $exp" report "$PWD/nope"
mkdir -p empty
err_is r_empty 1 "error: empty holds no manifest.json and no benchmark.out: it is neither a carma run, stat or collect directory nor an srt-slurm log directory; $exp" \
    report empty
check_no_grep r_empty.err "benchmark.out: not found" "report on an empty directory"
echo x >file.txt
err_is r_file 1 "error: file.txt is a file, not a directory: $exp" report file.txt
err_is r_manifest 1 "error: $F/rundir/stat/manifest.json is a file, not a directory: give the directory it is in (carma report $F/rundir/stat)" \
    report "$F/rundir/stat/manifest.json"
mkdir -p coll && echo '{"producer": "carma collect"}' >coll/manifest.json
err_is r_collect 1 "error: coll/samples.csv: No such file or directory" \
    report coll
mkdir -p badman && echo '{"producer": ' >badman/manifest.json
err_is r_badjson 1 "error: badman/manifest.json is not JSON" report badman
if [ "$(id -u)" != 0 ]; then
    mkdir -p locked && chmod 000 locked
    err_is r_locked 1 "error: cannot read the directory locked: Permission denied" report locked
    chmod 755 locked
fi

# --- --json on every command that prints a table
rc=$(run_logged rj "$CARMA" report "$F/rundir/stat" --json)
check_rc rj 0 "$rc"
cmp -s rj.out <("$CARMA" report "$F/rundir/stat" --format json) ||
    check_fail "report --json differs from --format json"
rc=$(run_logged sj "$CARMA" sensors --root "$F/vm-empty" --sample 10ms --json)
check_rc sj 0 "$rc"
check_py "sensors --json" 'j = load(sys.argv[1]); assert "channels" in j, j' sj.out
rc=$(run_logged stj "$CARMA" stat --root "$F/vm-empty" --json -- true)
check_rc stj 0 "$rc"
check_py "stat --json (stderr)" 'j = load(sys.argv[1]); assert j["exit_status"] == 0, j' stj.err
rc=$(run_logged vj "$CARMA" validate --json "$CARMA_SRC/tests/experiments/good/minimal.json")
check_rc vj 0 "$rc"
check_py "validate --json" 'j = load(sys.argv[1]); assert j["workloads"], j' vj.out
cat >one.json <<'JSON'
{"experiment_name": "one", "workloads": [{"name": "a", "script": "true"}],
 "monitoring": {"baseline_s": 0, "interval": "10ms"}}
JSON
rc=$(run_logged runj "$CARMA" run --root "$F/vm-empty" -o runs --json one.json)
check_rc runj 0 "$rc"
check_py "run --json: one document, the run directory and report.json" '
j = load(sys.argv[1])
d = j["run_dir"]
assert os.path.isdir(d), d
assert j["report"] == load(os.path.join(d, "report.json")), "not report.json"
' runj.out

rc=$(run_logged topj "$CARMA" top --once --json "$(json_get runj.out 'j["run_dir"]')")
check_rc topj 0 "$rc"
check_py "top --json: one frame a line" '
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
j = json.loads(lines[0])
assert j["finished"] is True and [w["name"] for w in j["jobs"]] == ["a"], j
assert j["jobs"][0]["ended"] is True and j["jobs"][0]["energy_j"] is not None, j
' topj.out

# --- a command shorter than two sampling ticks (20 ms: long enough for the --interval 1ms hint,
# which a command under 2 ms does not get): said, with what to do, and no figures
rc=$(run_logged short "$CARMA" stat --root "$F/intel-2s" --interval 100ms --json-out short.json -- sleep 0.02)
check_rc short 0 "$rc"
check_grep short.err "  too short: the command ran " "stat -- sleep 0.02"
check_grep short.err "less than two sampling intervals (2 x 100ms): too short to measure, so its figures are n/a; measure it with a shorter interval (--interval 1ms) or run it longer" \
    "stat -- sleep 0.02: what to do"
check_grep short.err "node energy, command CPU and carbon: n/a (too short)" "stat -- sleep 0.02: n/a"
check_py "stat -- sleep 0.02: n/a in the table, too_short in the JSON" '
t = open(sys.argv[1]).read()
rows = [l for l in t.splitlines() if l.startswith("  rapl/")]
assert rows and all(l.split()[-3:] == ["n/a"] * 3 for l in rows), rows
assert not re.search(r"\d+\.\d{3} J", t), t
j = load(sys.argv[2])
assert "too short to measure" in j["too_short"], j["too_short"]
' short.err short.json
rc=$(run_logged long "$CARMA" stat --root "$F/intel-2s" --interval 1ms --json-out long.json -- sleep 0.05)
check_rc long 0 "$rc"
check_no_grep long.err "too short" "stat at --interval 1ms of a 50 ms command"
check_grep long.err "  node energy   " "stat at --interval 1ms: the figures"
check_eq "$(json_get long.json 'j["too_short"]')" null "too_short of a long enough command"

# --- a workload that failed or timed out: said in words, with the end of its stderr log
cat >fail.json <<'JSON'
{"experiment_name": "fail", "workloads": [
 {"name": "ok", "script": "true"},
 {"name": "worker-2", "script": "sh",
  "args": ["-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo line $i >&2; done; exit 3"]},
 {"name": "quiet", "script": "sh", "args": ["-c", "exit 4"]},
 {"name": "sleeper", "script": "sleep", "args": ["30"], "timeout_s": 0.3},
 {"name": "stubborn", "script": "sh",
  "args": ["-c", "trap '' TERM; echo ignoring TERM >&2; exec sleep 30"], "timeout_s": "300ms"}
], "monitoring": {"baseline_s": 0, "interval": "10ms"}}
JSON
rc=$(run_logged fail "$CARMA" run --root "$F/vm-empty" --grace 0.5 -o runs fail.json)
check_rc fail 1 "$rc"
check_clean_stderr fail
d=$(head -n 1 fail.out)
for out in fail.out "$d/report.txt"; do
    check_py "failed workloads in $out" '
t = open(sys.argv[1]).read()
m = re.search(r"^worker-2 failed: exit status 3 after (\d+\.\d+) s\n  the last 10 lines of logs/worker-2.err:\n((    \| .*\n){10})", t, re.M)
assert m, t
assert m.group(2).splitlines() == ["    | line %d" % i for i in range(3, 13)], m.group(2)
assert "\nquiet failed: exit status 4 after " in t and "  logs/quiet.err is empty\n" in t, t
assert "\nsleeper timed out after 0.300 s (its timeout_s), stopped by SIGTERM\n" in t, t
assert ("\nstubborn timed out after 0.300 s (its timeout_s), SIGTERM did not stop it: SIGKILLed "
        "after the 0.500 s grace\n  the last line of logs/stubborn.err:\n    | ignoring TERM\n") in t, t
assert not re.search(r"^ok (failed|timed|was|could)", t, re.M), "a workload that exited with 0 is not listed"
' "$out"
done

# a run whose files give no page (no source at all): report.html is said missing, for its
# reason, not as a failed write, and the run is not made incomplete by it
cat >nopage.json <<'JSON'
{"experiment_name": "nopage", "workloads": [{"name": "a", "script": "sleep", "args": ["0.2"]}],
 "monitoring": {"baseline_s": 0, "interval": "100ms"}}
JSON
rc=$(run_logged nopage "$CARMA" run -q --root "$F/vm-empty" --sources rapl -o runs-nopage nopage.json)
check_rc nopage 0 "$rc"
d=$(head -n 1 nopage.out)
check_grep nopage.err "carma: no $d/report.html: the run's files give no page: $d/samples.csv: no samples" \
    "no report.html: the reason"
check_no_grep nopage.err "cannot write" "nopage: a missing page said as a failed write"
[ -e "$d/report.html" ] && check_fail "nopage: report.html written"

cli_done
