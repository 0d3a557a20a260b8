#!/usr/bin/env bash
# One mode for every output: under umask 000, everything carma run, carma stat -o, carma
# collect -o (with --srt-cpu) and carma report -o / --json-out create is 0644 (files) or 0755
# (directories), and under umask 077 0600 and 0700 (docs/formats.md, "File modes"). No
# temporary file is left behind.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

F=$CARMA_FIXTURES
cat >one.json <<'JSON'
{"experiment_name": "one", "workloads": [{"name": "a", "script": "sh", "args": ["-c", "echo out; echo err >&2"]}],
 "monitoring": {"baseline_s": 0, "interval": "10ms"}}
JSON

# start_exporter NAME: a carma exporter on the intel-2s tree, its port in EPORT.
start_exporter() {
    local i
    "$CARMA" exporter --root "$F/intel-2s" --listen 127.0.0.1:0 --interval 100ms \
        --compat srtctl --srt-source acpi >"$1.log" 2>&1 &
    EPID=$!
    _cleanup_pids+=("$EPID")
    EPORT=
    for ((i = 0; i < 500; i++)); do
        EPORT=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$1.log" | head -n 1 | cut -d: -f2)
        [ -n "$EPORT" ] && break
        kill -0 "$EPID" 2>/dev/null || break
        sleep 0.01
    done
    [ -n "$EPORT" ] || fail "carma exporter did not start: $(cat "$1.log")"
}
have_exporter=1
"$CARMA" exporter --help 2>&1 | grep -q "not built yet" && have_exporter=0
[ "$have_exporter" = 1 ] && start_exporter exp

# outputs MASK DIR: every command's outputs, made under umask MASK, below DIR.
outputs() {
    local mask=$1 d=$2 rc
    mkdir -p "$d"
    (
        umask "$mask"
        rc=$(run_logged "$d/run" "$CARMA" run --root "$F/vm-empty" -o "$d/runs" one.json)
        check_rc "$d/run" 0 "$rc"
        rc=$(run_logged "$d/stat" "$CARMA" stat -q --root "$F/vm-empty" --interval 10ms \
            -o "$d/stat.d" --json-out "$d/summary.json" -- true)
        check_rc "$d/stat" 0 "$rc"
        if [ "$have_exporter" = 1 ]; then
            rc=$(run_logged "$d/collect" "$CARMA" collect --target "127.0.0.1:$EPORT" \
                -o "$d/col" --srt-cpu --duration 1s --interval 500ms)
            check_rc "$d/collect" 0 "$rc"
        fi
        rc=$(run_logged "$d/report" "$CARMA" report "$d/stat.d" --format html -o "$d/report.html" \
            --json-out "$d/report.json")
        check_rc "$d/report" 0 "$rc"
        exit "$_cli_failures"
    ) || check_fail "umask $mask: a command failed (above)"
}

# check_modes DIR FILE_MODE DIR_MODE: every file and directory below DIR, but the test's own
# logs, has that mode.
check_modes() {
    local d=$1 fm=$2 dm=$3 bad
    bad=$(find "$d" -mindepth 1 -type d ! -perm "$dm" -printf '%m %p\n')
    [ -z "$bad" ] || check_fail "directories not $dm: $bad"
    bad=$(find "$d" -mindepth 1 -type f ! -name '*.out' ! -name '*.err' ! -perm "$fm" \
        -printf '%m %p\n')
    [ -z "$bad" ] || check_fail "files not $fm: $bad"
    bad=$(find "$d" -name '*.tmp*')
    [ -z "$bad" ] || check_fail "temporary files left: $bad"
}

outputs 000 open
outputs 077 closed
for d in open closed; do
    # what must be there: a run directory with its logs, the stat directory, collect's
    n=$(find "$d/runs" -mindepth 1 -maxdepth 1 -type d | wc -l)
    check_eq "$n" 1 "$d: one run directory"
    for f in "$d"/runs/*/report.json "$d"/runs/*/samples.csv "$d"/runs/*/manifest.json \
        "$d/stat.d/samples.csv" "$d/summary.json" "$d/report.html" "$d/report.json"; do
        [ -f "$f" ] || check_fail "$d: no $f"
    done
    [ -n "$(find "$d/runs" -path '*/logs/*' -type f)" ] || check_fail "$d: no workload log"
    if [ "$have_exporter" = 1 ]; then
        [ -f "$d/col/samples.csv" ] || check_fail "$d: no col/samples.csv"
        [ -f "$d/col/power/cpu/samples.csv" ] || check_fail "$d: no col/power/cpu/samples.csv"
    fi
    note "$d: $(find "$d" -mindepth 1 ! -name '*.out' ! -name '*.err' | wc -l) outputs"
done
check_modes open 644 755
check_modes closed 600 700

cli_done
