#!/usr/bin/env bash
# carma run on a full disk (a 200 KiB tmpfs, as root) and past a file size limit (`ulimit -f`
# in a subshell, any user), sampling every 2 ms so that the journals outgrow the room:
# - the exit status is 1 and stderr says in words that the run directory is incomplete;
# - every journal (samples.csv, attribution.csv, node_util.csv, features.csv,
#   event_summaries.jsonl, pstree.log) ends with a line end and parses row for row;
# - each file that lost rows is warned of exactly once for its condition, and counted once at
#   the end ("RUN/NAME: N rows lost to: REASON"), with no warning per tick;
# - the small final files (workloads.json, workload_pids.json, report.json, report.txt,
#   manifest.json "complete") are there, or their failure is named;
# - `carma report RUN` reads what is on disk and says what is missing; without report.json or
#   manifest.json it names the file.
# Without root, or where tmpfs cannot be mounted, the full-disk half is skipped (said), the
# `ulimit -f` half still runs.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

ROOT="$CARMA_FIXTURES/intel-2s"
here=$PWD
mnt=

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_mount() {
    [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
    return 0
}
trap 'cleanup_mount; _lib_cleanup' EXIT

cat >disk.json <<EOF
{"experiment_name": "disk", "workloads": [
  {"name": "a", "script": "sleep", "args": ["1.5"], "cwd": "$here"},
  {"name": "b", "script": "sleep", "args": ["1.2"], "cwd": "$here"},
  {"name": "c", "script": "sh", "args": ["-c", "sleep 1; exit 3"], "cwd": "$here"}
], "monitoring": {"interval": "2ms", "baseline_s": 0}}
EOF

# check_run LABEL REASON RUNS ERR RC: the checks of one run that lost rows to REASON
check_run() {
    local label=$1 reason=$2 runs=$3 err=$4 rc=$5 rd name n_warn n_count f
    check_eq "$rc" 1 "$label: carma run's exit status"
    rd=$(find "$runs" -mindepth 1 -maxdepth 1 -type d | head -n 1)
    if [ -z "$rd" ]; then
        check_fail "$label: no run directory in $runs"
        return
    fi
    check_re "$err" "^carma: $rd is incomplete \(.*samples\.csv.*: said above\): exit status 1\$" \
        "$label: the outcome said in words"
    # one warning per file and condition, one count each, nothing per tick
    local lost=0
    for name in samples.csv attribution.csv node_util.csv features.csv event_summaries.jsonl \
        pstree.log; do
        n_warn=$(grep -c "^carma: cannot write $rd/$name: $reason (" "$err")
        n_count=$(grep -cE "^carma: $rd/$name: [0-9]+ [a-z]+ lost to: $reason\$" "$err")
        [ "$n_warn" -le 1 ] || check_fail "$label: $name warned of $n_warn times"
        check_eq "$n_count" "$n_warn" "$label: $name: the count at the end (one per warning)"
        [ "$n_warn" = 1 ] && lost=$((lost + 1))
    done
    [ "$lost" -ge 1 ] || check_fail "$label: no journal lost rows (the room was not filled?)"
    grep -q "^carma: cannot write $rd/samples.csv: $reason (rows from t=[0-9.]* not written" "$err" ||
        check_fail "$label: samples.csv's warning: $(grep samples.csv "$err" | head -n 1)"
    n=$(grep -c '^carma: ' "$err")
    [ "$n" -le 20 ] || check_fail "$label: $n lines on stderr (a warning per tick?)"
    # whole rows only
    check_py "$label: every journal keeps whole rows" '
d = sys.argv[1]
for name, fields in (("samples.csv", 9), ("attribution.csv", 4), ("node_util.csv", 4),
                     ("features.csv", 6)):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        continue
    data = open(p, "rb").read()
    assert data.endswith(b"\r\n"), "%s ends with %r" % (name, data[-40:])
    text = data.decode()
    lines = text.split("\r\n")[:-1]
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    assert len(rows) == len(lines), (name, len(rows), len(lines))
    for k, r in enumerate(rows):
        assert len(r) == fields, "%s line %d: %r" % (name, k + 1, r)
    for r in rows[1:]:
        float(r[0])
for name in ("event_summaries.jsonl", "pstree.log"):
    p = os.path.join(d, name)
    data = open(p, "rb").read() if os.path.exists(p) else b""
    assert not data or data.endswith(b"\n"), "%s ends with %r" % (name, data[-40:])
    if name.endswith(".jsonl"):
        for line in data.decode().splitlines():
            json.loads(line)
' "$rd"
    # a failed workload's empty logs/c.err comes with the reason its output may be lost
    check_re "$rd/report.txt" "^  \(the run directory's files met \"$reason\": what c wrote to logs/, its error message included, may be lost\)\$" \
        "$label: the failed workload's note on its logs"
    # the small final files
    for f in workloads.json workload_pids.json report.json manifest.json report.txt; do
        if [ ! -s "$rd/$f" ]; then
            grep -q "^carma: cannot write $rd/$f: " "$err" ||
                check_fail "$label: $f is missing and its failure is not named"
            check_fail "$label: $f was not written (the room kept for it did not suffice)"
        fi
    done
    check_py "$label: the final files parse, manifest.json complete, the losses in report.json" '
d = sys.argv[1]
m = load(d + "/manifest.json")
assert m["status"] == "complete", m["status"]
rep = load(d + "/report.json")
load(d + "/workloads.json"); load(d + "/workload_pids.json")
w = [x for x in rep["warnings"] if x.startswith("samples.csv: ") and "lost to" in x]
assert len(w) == 1, rep["warnings"]
assert rep["end_unix"] > 0
assert "samples.csv: " in open(d + "/report.txt").read()
' "$rd"
    # carma report reads what is there and says what is missing
    if "$CARMA" report "$rd" >"$err.report" 2>"$err.report.err"; then
        check_grep "$err.report" "warning: samples.csv: " "$label: carma report repeats the loss"
        # the rows are written in batches of up to 100 ms: the last, small batch may fit where
        # the larger ones before it did not, and then the file ends with the run (a gap before)
        if python3 -c 'import json, sys
end = json.load(open(sys.argv[1] + "/report.json"))["end_unix"]
last = float(open(sys.argv[1] + "/samples.csv").read().splitlines()[-1].split(",")[0])
sys.exit(0 if last < end - 0.001 else 1)' "$rd"; then
            check_re "$err.report" \
                "warning: samples\.csv ends at [0-9.]+, [0-9.]+ s before the run did" \
                "$label: carma report says where samples.csv ends"
        fi
    else
        check_fail "$label: carma report fails: $(head -c 300 "$err.report.err")"
    fi
    rm -rf "$here/cut" && cp -r "$rd" "$here/cut" && rm "$here/cut/report.json"
    "$CARMA" report "$here/cut" >cut.out 2>cut.err ||
        check_fail "$label: carma report without report.json fails: $(head -c 300 cut.err)"
    check_grep cut.out "warning: report.json is missing" "$label: no report.json, named"
    rm "$here/cut/manifest.json"
    "$CARMA" report "$here/cut" >cut.out 2>cut.err
    check_eq "$?" 1 "$label: carma report without manifest.json: exit status"
    check_grep cut.err "holds no manifest.json" "$label: no manifest.json, named"
}

# check_re FILE ERE MSG: a line of FILE matches ERE
check_re() {
    grep -qE -- "$2" "$1" || check_fail "$3: no line matches '$2' in $1: $(head -c 600 "$1")"
}

# ---------------------------------------------------------------- a full disk (root, tmpfs)
if [ "$(id -u)" != 0 ]; then
    note "SKIP the full disk half: not root (a tmpfs cannot be mounted); the ulimit -f half runs"
elif ! mkdir -p "$here/small" || ! mount -t tmpfs -o size=200k tmpfs "$here/small" 2>mount.err; then
    note "SKIP the full disk half: cannot mount a tmpfs ($(cat mount.err 2>/dev/null)); the ulimit -f half runs"
else
    mnt="$here/small"
    timeout -s KILL 60 "$CARMA" run -q --root "$ROOT" -o "$mnt/runs" disk.json >full.out 2>full.err
    rc=$?
    check_run "full disk" "No space left on device" "$mnt/runs" full.err "$rc"
fi

# ---------------------------------------------------------------- ulimit -f (any user)
# stderr through a pipe: a file would be under the limit too
(
    ulimit -f 64
    exec timeout -s KILL 60 "$CARMA" run -q --root "$ROOT" -o "$here/runs-fsize" disk.json 2>&1 >fsize.out
) | head -c 65536 >fsize.err
rc=${PIPESTATUS[0]}
[ "$rc" = 153 ] && check_fail "ulimit -f: carma was killed by SIGXFSZ (exit 153)"
check_run "ulimit -f" "File too large" "$here/runs-fsize" fsize.err "$rc"

cli_done
