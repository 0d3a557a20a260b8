#!/usr/bin/env bash
# carma on Slurm, end to end: a one-node Slurm cluster on localhost (slurm_lib.sh: slurmctld,
# slurmd and munged of its own, in a temporary directory), and the users' recipe
# examples/slurm/carma.sbatch submitted to it with `sbatch --wait`: one `carma exporter` per
# node (srun --overlap) reading a live copy of the intel-2s fixture (the simulated power
# plant), `carma collect --slurm` on the head node, a 2 s CPU benchmark. Checks: the job
# succeeded; samples.csv has the collector's header, rows for this node with every channel of
# the fixture over several scrapes and no blank cell, energies that rise; the exporters and
# the collector are gone when the job ends; step 6's carma report of the collect directory
# (report.json: the run and the benchmark window, this node's energy from its counters); every daemon is stopped by its pid (also when a
# check fails: the EXIT trap) and no process of the cluster is left. Skipped only when Slurm
# is not installed (scripts/deps.sh --test installs slurm-wlm).
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"
# shellcheck source=tests/integration/slurm_lib.sh
. "$CARMA_SRC/tests/integration/slurm_lib.sh"

SBATCH_SCRIPT="$CARMA_SRC/examples/slurm/carma.sbatch"
HEADER="schema_version,timestamp_unix,scrape_seq,node,target,channel,source,kind,domain,method,watts,joules_total"

missing=$(slurm_missing)
[ -z "$missing" ] ||
    skip "Slurm is not installed (no $missing): scripts/deps.sh --test installs slurm-wlm"
need_file "$SBATCH_SCRIPT" "$BUSY" "$PLANT"
for sub in exporter collect; do
    "$CARMA" "$sub" --help >/dev/null 2>&1 ||
        fail "carma $sub --help fails: is 'carma $sub' built? ($("$CARMA" "$sub" --help 2>&1 | head -n 1))"
done

here=$PWD
jobid=""

# show_job: the job's output and logs, for a failure.
show_job() {
    show "$here/sbatch.out" "$here/sbatch.err" "$here/job.out" "$here"/out/logs/*.log >&2
    [ -f "$here/out/samples.csv" ] && {
        echo "----- $here/out/samples.csv (first 20 lines)"
        head -n 20 "$here/out/samples.csv"
    } >&2
}

# show_failure: the job's files and the daemons' logs (once).
shown=0
show_failure() {
    [ "$shown" = 1 ] && return 0
    shown=1
    show_job
    slurm_logs
}

# on_exit: on a failure, show_failure; then stop the cluster by its pids, whatever happened
# (slurm_stop does nothing once done), and the plant.
# shellcheck disable=SC2317 # called by the EXIT trap
on_exit() {
    local rc=$?
    # a second signal (timeout(1) signals this shell, then its process group) must not cut
    # the cleanup short
    trap '' TERM INT
    [ "$rc" -ne 0 ] && show_failure
    slurm_stop
    _lib_cleanup
}
trap on_exit EXIT
trap 'exit 143' TERM INT

# ------------------------------------------------------------------ the cluster
t0=$SECONDS
slurm_start || fail "the one-node Slurm cluster did not start (logs above)"
note "cluster up in $((SECONDS - t0)) s: node $SLURM_NODE, auth $SLURM_AUTH, $SLURM_CONF"
daemon_pids=("$SLURMCTLD_PID" "$SLURMD_PID")
[ -n "$MUNGED_PID" ] && daemon_pids+=("$MUNGED_PID")

# ------------------------------------------------------------------ the job
live_tree intel-2s live
start_plant live "$PLANT_CONFIGS/intel-2s.conf" truth.csv
port=$(slurm_free_port) || fail "no free port"
t0=$SECONDS
# sbatch --wait in the background, waited for with `wait`: a SIGTERM to this test (run.sh's
# timeout) is then handled at once (the EXIT trap cancels the job and stops the cluster).
# timeout --foreground: in this test's process group, so it gets that SIGTERM too.
CARMA="$CARMA" CARMA_PORT="$port" CARMA_INTERVAL=250ms CARMA_OUT="$here/out" \
    CARMA_BENCHMARK="$BUSY 2" CARMA_EXPORTER_ARGS="--root $here/live" CARMA_WAIT=20 \
    timeout --foreground 60 sbatch --wait --parsable --job-name=carma-test --nodes=1 \
    --output="$here/job.out" "$SBATCH_SCRIPT" >sbatch.out 2>sbatch.err &
sbatch_pid=$!
_cleanup_pids+=("$sbatch_pid")
rc=0
wait "$sbatch_pid" || rc=$?
jobid=$(head -n 1 sbatch.out | cut -d';' -f1)
note "job $jobid: sbatch --wait returned $rc after $((SECONDS - t0)) s"
[ -n "$jobid" ] || fail "sbatch printed no job id"
show job.out
if [ "$rc" != 0 ]; then
    check_fail "the job failed: sbatch --wait exit status $rc"
fi
state=$(timeout 5 scontrol show job "$jobid" -o 2>&1)
case $state in
*JobState=COMPLETED*ExitCode=0:0*) ;;
*) check_fail "job $jobid did not complete with exit code 0: $state" ;;
esac
check_grep job.out "every exporter answers" "job output: the exporters were waited for"
# no crash or sanitizer report from carma (exporter, collector) or the script
crash='AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:'
crash="$crash|Segmentation fault|Assertion .* failed|stack smashing|double free|core dumped"
for f in job.out out/logs/*.log; do
    if grep -qE "$crash" "$f" 2>/dev/null; then
        check_fail "$f: a crash or sanitizer report"
        show "$f" >&2
    fi
done
# srun names the log by the host's short name (%N), which is the node's name unless the
# node had to be called localhost
elog=$(find out/logs -name 'exporter-*.log' | head -n 1)
check_grep "${elog:-out/logs/exporter-$SLURM_NODE.log}" "listening on" "the exporter's log"

# ------------------------------------------------------------------ samples.csv
if [ -f out/samples.csv ]; then
    check_py "samples.csv of the job" '
import time
path, node, header = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
rows = list(csv.reader(open(path, newline="", encoding="utf-8"), strict=True))
assert rows, "samples.csv is empty"
assert rows[0] == header, "header %r, expected %r" % (rows[0], header)
col = {n: i for i, n in enumerate(header)}
data = rows[1:]
for k, r in enumerate(data):
    assert len(r) == len(header), "row %d has %d fields: %r" % (k + 2, len(r), r)
mine = [r for r in data if r[col["node"]] == node]
assert mine, "no row for node %r (nodes: %s)" % (node, sorted({r[col["node"]] for r in data}))
others = sorted({r[col["node"]] for r in data} - {node})
assert not others, "rows for nodes outside the job: %s" % others
for r in mine:
    blank = [header[i] for i, c in enumerate(r) if c.strip() == ""]
    assert not blank, "blank cells %s for the live node: %r" % (blank, r)
want = {  # channel: (source, kind, domain, method), the intel-2s fixture
    "rapl/package-0": ("rapl", "cpu", "total", "measured"),
    "rapl/package-0/core": ("rapl", "cpu", "component", "measured"),
    "rapl/package-0/dram": ("rapl", "dram", "total", "measured"),
    "rapl/package-1": ("rapl", "cpu", "total", "measured"),
    "rapl/package-1/core": ("rapl", "cpu", "component", "measured"),
    "rapl/package-1/dram": ("rapl", "dram", "total", "measured"),
}
by = {}
for r in mine:
    by.setdefault(r[col["channel"]], []).append(r)
missing = sorted(set(want) - set(by))
assert not missing, "channels missing: %s (got %s)" % (missing, sorted(by))
for ch, (src, kind, dom, meth) in want.items():
    got = tuple(by[ch][0][col[c]] for c in ("source", "kind", "domain", "method"))
    assert got == (src, kind, dom, meth), "%s: source/kind/domain/method %r" % (ch, got)
seqs = sorted({int(r[col["scrape_seq"]]) for r in mine})
assert len(seqs) >= 4, "only %d scrapes: %s" % (len(seqs), seqs)
assert len({r[col["schema_version"]] for r in data}) == 1, "several schema versions"
now = time.time()
for r in mine:
    t = float(r[col["timestamp_unix"]])
    assert now - 300 < t <= now + 1, "timestamp %r is not of this run" % t
    w = float(r[col["watts"]])
    assert math.isfinite(w) and w >= 0, "watts %r" % w
for ch in want:
    pts = sorted((int(r[col["scrape_seq"]]), float(r[col["timestamp_unix"]]),
                  float(r[col["joules_total"]])) for r in by[ch])
    for a, b in zip(pts, pts[1:]):
        assert b[0] > a[0], "%s: scrape %d twice" % (ch, a[0])
        assert b[1] >= a[1], "%s: time goes back between scrapes %d and %d" % (ch, a[0], b[0])
        assert b[2] >= a[2], "%s: joules_total falls between scrapes %d and %d" % (ch, a[0], b[0])
    assert pts[-1][2] > pts[0][2], "%s: joules_total did not rise (%r)" % (ch, pts)
pk = by["rapl/package-0"]
print("# samples.csv: %d rows, %d scrapes, %d channels; rapl/package-0 %.1f J over the run" % (
    len(mine), len(seqs), len(by),
    float(pk[-1][col["joules_total"]]) - float(pk[0][col["joules_total"]])))
' out/samples.csv "$SLURM_NODE" "$HEADER"
    check_py "manifest.json of the collector" '
m = load(sys.argv[1])
assert str(m.get("job_id")) == sys.argv[2], "job_id %r, the job is %s" % (m.get("job_id"), sys.argv[2])
assert m.get("nodes") == [sys.argv[3]], "nodes %r" % m.get("nodes")
for t in m["targets"]:
    assert t["error_count"] == 0 and t["scrape_count"] >= 4, "target %r" % t
' out/manifest.json "$jobid" "$SLURM_NODE"
    check_py "step 6: carma report of the collect directory" '
r = load(sys.argv[1])
assert r["kind"] == "collect", r.get("kind")
names = [w["name"] for w in r["windows"]]
assert names == ["run", "benchmark"], names
for w in r["windows"]:
    ns = {n["node"]: n for n in w["nodes"]}
    n = ns[sys.argv[2]]
    assert n["energy_j"] > 0 and n["basis"] == "nodes.csv" and n["energy_source"] == "counter", n
    assert not n["down"] and w["job"]["energy_j"] == n["energy_j"], (n, w["job"])
b = r["windows"][1]
assert 1.5 < b["end_unix"] - b["start_unix"] < 30, b
txt = open(sys.argv[3]).read()
assert "window benchmark (cli)" in txt and "node " + sys.argv[2] in txt, txt[:400]
print("# report: node %s %.1f J over the benchmark window" % (sys.argv[2], b["nodes"][0]["energy_j"]))
' out/report.json "$SLURM_NODE" out/report.txt
else
    check_fail "no samples.csv in out/ ($(find out 2>&1 | tr '\n' ' '))"
fi

# ------------------------------------------------------------------ nothing left running
# When the job has ended, its processes (exporters, collector, benchmark, slurmstepd) end too.
for ((i = 0; i < 50; i++)); do
    left=$(slurm_procs)
    [ -z "$left" ] && break
    sleep 0.1
done
[ -z "$left" ] || check_fail "processes of the job still running after it ended: $left"
if "$PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' \
    "$port" 2>/dev/null; then
    check_fail "something still listens on the exporters' port $port"
fi

# shellcheck disable=SC2154 # lib_cli.sh's count of failed checks
[ "$_cli_failures" -gt 0 ] && show_failure
slurm_stop
[ -z "$SLURM_LEFTOVERS" ] || check_fail "processes of the cluster left behind: $SLURM_LEFTOVERS"
for pid in "${daemon_pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
        check_fail "daemon pid $pid still runs after slurm_stop: $(ps -o args= -p "$pid")"
    fi
done
stop_plant
note "test done in $SECONDS s"
cli_done
