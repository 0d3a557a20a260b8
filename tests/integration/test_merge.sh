#!/usr/bin/env bash
# carma wait-ready and carma merge on per-node files of srt-slurm's host collector written here
# byte for byte (formats of srt-slurm PR #410: the v3 header, CRLF rows, ready/error markers,
# metadata): every node ready (exit 0, status running) and the timeout / an error.json (status
# failed; exit 1 with --required only); the merge of nodes with a missing node, a node whose
# source failed, a file of another header version, a torn last row, --required both ways and
# --srt-schema 4; and DIR/carma/<host>/ recordings joined into DIR/carma_merged/, whose
# `carma report` energy is the sum of the nodes' own.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

V3='schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq'
V4='schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq'

# node DIR HOST T0 WATTS: nodes/HOST.csv (v3, two sensors a cycle, 5 cycles from T0), its
# metadata (complete) and ready marker.
node() {
    local d=$1 h=$2 t0=$3 w=$4 i
    mkdir -p "$d/nodes" "$d/ready"
    {
        printf '%s\r\n' "$V3"
        for i in 0 1 2 3 4; do
            printf '3,%s.%d,2026-09-01T17:29:0%d.%d00000-07:00,%s,acpi,CPU0:cpuRailPowerUsageW,0,%s.5,%s.0,,,,,\r\n' \
                "$t0" "$i" "$i" "$i" "$h" "$((w - 20))" "$w"
            printf '3,%s.%d,2026-09-01T17:29:0%d.%d00000-07:00,%s,acpi,CPU0:cpuSidePowerUsageW,0,%s.0,%s.0,,,,,\r\n' \
                "$t0" "$i" "$i" "$i" "$h" "$w" "$w"
        done
    } >"$d/nodes/$h.csv"
    printf '{\n  "ended_at_unix": %s.9,\n  "hostname": "%s",\n  "requested_source": "auto",\n  "sample_interval_seconds": 0.1,\n  "sample_row_count": 10,\n  "schema_version": 3,\n  "source": "acpi",\n  "status": "complete"\n}\n' \
        "$t0" "$h" >"$d/nodes/$h.metadata.json"
    printf '{\n  "hostname": "%s",\n  "ready_at_unix": %s.0,\n  "source": "acpi"\n}\n' "$h" "$t0" \
        >"$d/ready/$h.ready.json"
}

# ---- wait-ready ----
node w a 100 150
node w b 100 90
rc=$(run_logged wr_ok "$CARMA" wait-ready w --nodes a,b --timeout 5s --required)
check_rc wr_ok 0 "$rc"
check_eq "$(json_get w/manifest.json 'j["status"]')" running "wait-ready: all ready"
check_eq "$(json_get w/manifest.json 'j["reason_codes"]')" "[]" "wait-ready: no reason"

start=$(date +%s.%N)
rc=$(run_logged wr_to "$CARMA" wait-ready w --nodes a,b,c --timeout 0.5s)
end=$(date +%s.%N)
check_rc wr_to 0 "$rc"
check_grep wr_to.err "1 of 3 nodes not ready in time: c" "wait-ready timeout: names the node"
check_py "wait-ready waits its timeout" "assert 0.45 < $end - $start < 5, $end - $start"
check_eq "$(json_get w/manifest.json 'j["status"]')" failed "wait-ready timeout: status"
check_eq "$(json_get w/manifest.json 'j["reason_codes"]')" '["cpu_power_startup_timeout"]' \
    "wait-ready timeout: reason"
check_eq "$(json_get w/manifest.json 'j["missing_nodes"]')" '["c"]' "wait-ready timeout: missing"
rc=$(run_logged wr_to_req "$CARMA" wait-ready w --nodes a,b,c --timeout 0.2 --required)
check_rc wr_to_req 1 "$rc"

# a node that becomes ready while waiting
( sleep 0.3; node w c 100 80 ) &
rc=$(run_logged wr_late "$CARMA" wait-ready w --nodes a,b,c --timeout 10s --required)
wait
check_rc wr_late 0 "$rc"
check_eq "$(json_get w/manifest.json 'j["status"]')" running "wait-ready: late node"

mkdir -p e && node e a 100 150 && printf '{\n  "error": "no ACPI socket-total",\n  "hostname": "b"\n}\n' >e/ready/b.error.json
rc=$(run_logged wr_err "$CARMA" wait-ready e --nodes a,b --timeout 30s --required)
check_rc wr_err 1 "$rc"
check_eq "$(json_get e/manifest.json 'j["reason_codes"]')" '["cpu_power_source_unavailable"]' \
    "wait-ready error.json: reason"
rc=$(run_logged wr_err2 "$CARMA" wait-ready e --nodes a,b --timeout 30s)
check_rc wr_err2 0 "$rc"

# ---- merge: a clean job ----
rc=$(run_logged m_ok "$CARMA" merge w --expected-nodes a,b,c --required --job-id 42 --run-name r1)
check_rc m_ok 0 "$rc"
check_py "merge: samples.csv order and bytes" '
data = open("w/samples.csv", "rb").read()
lines = data.split(b"\r\n")
assert lines[-1] == b"", "not CRLF-terminated"
rows = [l.decode().split(",") for l in lines[1:-1]]
assert lines[0].decode() == sys.argv[1], lines[0]
assert len(rows) == 30, len(rows)
key = [(float(r[1]), r[3], r[5]) for r in rows]
assert key == sorted(key), "not sorted"
assert [r[3] for r in rows[:6]] == ["a", "a", "b", "b", "c", "c"], [r[3] for r in rows[:6]]
for h in "abc":
    src = open("w/nodes/%s.csv" % h, "rb").read().split(b"\r\n")[1:-1]
    got = [l for l in lines[1:-1] if l.split(b",")[3] == h.encode()]
    assert got == src, "rows of %s changed" % h
' "$V3"
m=w/manifest.json
check_eq "$(json_get $m 'j["status"]')" complete "merge: status"
check_eq "$(json_get $m 'j["publication_valid"]')" true "merge: publication_valid"
check_eq "$(json_get $m 'j["job_id"]')" 42 "merge: job_id"
check_eq "$(json_get $m 'j["run_name"]')" r1 "merge: run_name"
check_eq "$(json_get $m 'j["sample_row_count"]')" 30 "merge: sample_row_count"
check_eq "$(json_get $m 'j["observed_nodes"]')" '["a", "b", "c"]' "merge: observed"
check_eq "$(json_get $m 'j["sample_interval_seconds"]')" 0.1 "merge: interval"
check_eq "$(json_get $m 'sorted(j["node_metadata"])')" '["a", "b", "c"]' "merge: node_metadata"
check_py "merge: manifest as json.dumps(indent=2, sort_keys=True)" '
text = open("w/manifest.json").read()
assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n", "not sort_keys / indent 2"
'

# ---- merge: a missing node, a failed source, another header version, a torn row ----
node f a 200 150
node f b 200 90
node f d 200 70
# b's last row torn (the collector killed mid-write)
printf '3,200.5,2026-09-01T17:29:05-07:00,b,acpi,CPU0:cpuSi' >>f/nodes/b.csv
# d wrote srt-slurm's v4 header: not the current one
{ printf '%s\r\n' "$V4"; printf '4,200.0,x,d,acpi,CPU0:cpuSidePowerUsageW,0,70.0,,,,70.0,,,,,\r\n'; } >f/nodes/d.csv
# e's source failed: error.json, metadata status failed, no CSV
printf '{\n  "error": "no source",\n  "hostname": "e"\n}\n' >f/ready/e.error.json
printf '{\n  "hostname": "e",\n  "sample_row_count": 0,\n  "status": "failed",\n  "ended_at_unix": 200.0\n}\n' >f/nodes/e.metadata.json
cp -r f f_req
rc=$(run_logged m_bad "$CARMA" merge f --expected-nodes a,b,c,d,e)
check_rc m_bad 0 "$rc"
check_grep m_bad.err "f/nodes/b.csv:12: 6 fields, the header has 14" "merge: torn row named"
check_grep m_bad.err "f/nodes/d.csv:1: not the current header" "merge: header mismatch named"
check_grep m_bad.err "not publication-valid" "merge: warns"
m=f/manifest.json
check_eq "$(json_get $m 'j["status"]')" incomplete "merge bad: status"
check_eq "$(json_get $m 'j["publication_valid"]')" false "merge bad: publication_valid"
check_eq "$(json_get $m 'j["reason_codes"]')" \
    '["cpu_power_source_unavailable", "cpu_samples_malformed", "cpu_node_samples_missing", "cpu_collector_failed"]' \
    "merge bad: reason codes"
check_eq "$(json_get $m 'j["missing_nodes"]')" '["c", "d", "e"]' "merge bad: missing"
check_eq "$(json_get $m 'j["observed_nodes"]')" '["a", "b"]' "merge bad: observed"
check_eq "$(json_get $m 'j["skipped_files"]')" '["d.csv"]' "merge bad: skipped files"
check_eq "$(json_get $m 'j["skipped_row_count"]')" 1 "merge bad: skipped rows"
check_eq "$(json_get $m '[p["hostname"] for p in j["failed_processes"]]')" '["e"]' "merge bad: failed"
check_eq "$(json_get $m 'j["sample_row_count"]')" 20 "merge bad: rows"
rc=$(run_logged m_bad_req "$CARMA" merge f_req --expected-nodes a,b,c,d,e --required)
check_rc m_bad_req 1 "$rc"
check_grep m_bad_req.err "(--required: exit 1)" "merge --required: says why"

# --srt-schema 4: d's file is the current one, a's and b's are not
rc=$(run_logged m_v4 "$CARMA" merge f_req --srt-schema 4 -q)
check_rc m_v4 0 "$rc"
check_eq "$(json_get f_req/manifest.json 'j["observed_nodes"]')" '["d"]' "merge v4: observed"
check_eq "$(json_get f_req/manifest.json 'j["skipped_files"]')" '["a.csv", "b.csv"]' "merge v4: skipped"
check_eq "$(head -c 200 f_req/samples.csv | head -n 1 | tr -d '\r')" "$V4" "merge v4: header"

# no files at all: empty, not valid
mkdir -p z/nodes
rc=$(run_logged m_empty "$CARMA" merge z --expected-nodes a --required)
check_rc m_empty 1 "$rc"
check_eq "$(json_get z/manifest.json 'j["reason_codes"]')" \
    '["cpu_power_startup_timeout", "cpu_node_samples_missing", "cpu_samples_empty"]' "merge empty"
check_eq "$(tr -d '\r' <z/samples.csv)" "$V3" "merge empty: header only"
rc=$(run_logged m_int "$CARMA" merge w --interrupted --required)
check_rc m_int 1 "$rc"
check_eq "$(json_get w/manifest.json 'j["reason_codes"]')" '["interrupted"]' "merge --interrupted"

# option errors
rc=$(run_logged m_noarg "$CARMA" merge)
check_rc m_noarg 2 "$rc"
rc=$(run_logged m_schema "$CARMA" merge w --srt-schema 5)
check_rc m_schema 2 "$rc"
check_grep m_schema.err "'5' is not 3 or 4" "merge --srt-schema 5"
rc=$(run_logged wr_nonodes "$CARMA" wait-ready w)
check_rc wr_nonodes 2 "$rc"
check_grep wr_nonodes.err "no nodes" "wait-ready without nodes"

# ---- --slurm: the expected nodes from the job's node list (a fake scontrol) ----
mkdir -p bin
cat >bin/scontrol <<'EOF2'
#!/bin/sh
[ "$1 $2" = "show hostnames" ] || exit 3
case "$3" in
"node-[a-c]") printf 'a\nb\nc\n' ;;
*) echo "scontrol: error: Unable to create hostlist from '$3'" >&2; exit 1 ;;
esac
EOF2
chmod +x bin/scontrol
node s a 300 100
node s b 300 100
rc=$(run_logged wr_slurm env PATH="$PWD/bin:$PATH" SLURM_JOB_NODELIST='node-[a-c]' SLURM_JOB_ID=77 \
    "$CARMA" wait-ready s --slurm --timeout 0.2 --required)
check_rc wr_slurm 1 "$rc"
check_eq "$(json_get s/manifest.json 'j["missing_nodes"]')" '["c"]' "wait-ready --slurm: missing"
check_eq "$(json_get s/manifest.json 'j["job_id"]')" 77 "wait-ready --slurm: job_id"
rc=$(run_logged m_slurm env PATH="$PWD/bin:$PATH" SLURM_JOB_NODELIST='node-[a-c]' \
    "$CARMA" merge s --slurm --required)
check_rc m_slurm 1 "$rc"
check_eq "$(json_get s/manifest.json 'j["job_id"]')" 77 "merge: the gate's job_id"
check_eq "$(json_get s/manifest.json 'j["reason_codes"]')" \
    '["cpu_power_startup_timeout", "cpu_node_samples_missing"]' "merge --slurm: reasons"
rc=$(run_logged m_noslurm env -u SLURM_JOB_NODELIST -u SLURM_NODELIST "$CARMA" merge s --slurm)
check_rc m_noslurm 2 "$rc"
check_grep m_noslurm.err "not in a Slurm job" "merge --slurm outside a job"

# ---- the carma recordings joined ----
# crec DIR HOST WATTS T0FRAC: a one-node collect directory at 1 Hz for 10 s
crec() {
    local d=$1/carma/$2 i
    mkdir -p "$d"
    {
        printf 'schema_version,timestamp_unix,scrape_seq,node,target,channel,source,kind,domain,method,watts,joules_total\r\n'
        for i in $(seq 0 10); do
            printf '1,%d.%s,%d,%s,%s:9405,rapl/package-0,rapl,cpu,total,measured,%s,\r\n' \
                $((1000 + i)) "$4" "$i" "$2" "$2" "$3"
        done
    } >"$d/carma_samples.csv"
    {
        printf 'schema_version,timestamp_unix,scrape_seq,node,target,method,watts,joules_total,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq\r\n'
        for i in $(seq 0 10); do
            printf '1,%d.%s,%d,%s,%s:9405,measured,%s,,,,,,\r\n' $((1000 + i)) "$4" "$i" "$2" "$2" "$3"
        done
    } >"$d/nodes.csv"
    printf '{"schema_version": 1, "producer": "carma collect", "options": {"interval_s": 1.0}, "job_id": "42", "status": "complete", "nodes": ["%s"]}\n' \
        "$2" >"$d/manifest.json"
}
crec w h1 100.0 000000
crec w h2 50.0 500000
printf '1,1011.500000,11,h2,h2:9405,rapl/package-0,rap' >>w/carma/h2/carma_samples.csv
# marks from both nodes: each carma numbers its windows from 1; the join renumbers h2's
M='schema_version,event,id,name,timestamp_unix,pid,workload,tokens,requests,value'
printf '%s\n1,begin,1,phase-a,1002.0,10,,,,\n1,event,,loss,1003.0,10,,,,0.5\n1,end,1,phase-a,1005.0,10,,100,,\n' \
    "$M" >w/carma/h1/marks.csv
printf '%s\n1,begin,1,phase-b,1003.5,20,,,,\n1,end,1,phase-b,1008.5,20,,,,\n1,begin,2,torn' \
    "$M" >w/carma/h2/marks.csv
rc=$(run_logged m_carma "$CARMA" merge w -q)
check_rc m_carma 0 "$rc"
[ -d w/carma_merged ] || check_fail "merge: no carma_merged"
rc=$(run_logged m_carma_v "$CARMA" merge w)
check_grep m_carma_v.err "w/carma/h2/carma_samples.csv:13: the last line has no line end" "merge: torn carma row named"
check_grep m_carma_v.err "2 carma recordings (22 rows, 5 mark rows) joined" "merge: carma join summary"
check_grep m_carma_v.err "w/carma/h2/marks.csv:3: the last line has no line end" "merge: torn mark row named"
check_eq "$(cut -d, -f2-4 w/carma_merged/marks.csv | tr '\n' ' ')" \
    "event,id,name begin,1,phase-a event,,loss end,1,phase-a begin,2,phase-b end,2,phase-b " \
    "merge: the nodes' marks, h2's window renumbered"
check_py "carma_merged: rows in time order" '
rows = list(csv.reader(open("w/carma_merged/carma_samples.csv", newline="")))
t = [float(r[1]) for r in rows[1:]]
assert t == sorted(t) and len(t) == 22, t
assert open("w/carma_merged/carma_samples.csv", "rb").read().endswith(b"\r\n")
'
for h in h1 h2; do
    rc=$(run_logged rep_$h "$CARMA" report w/carma/$h --format json)
    check_rc rep_$h 0 "$rc"
done
rc=$(run_logged rep_m "$CARMA" report w/carma_merged --format json)
check_rc rep_m 0 "$rc"
check_py "carma report of carma_merged: the sum of the nodes" '
def energy(p):
    j = json.load(open(p))
    w = j["windows"][0] if isinstance(j, dict) else j[0]["windows"][0]
    return sum(n["energy_j"] for n in w["nodes"])
a, b, m = energy("rep_h1.out"), energy("rep_h2.out"), energy("rep_m.out")
assert abs(a - 1000) < 1e-6 and abs(b - 500) < 1e-6, (a, b)
assert abs(m - (a + b)) < 1e-6, (m, a, b)
'
check_py "carma report of carma_merged: a mark of either node is a window of the job" '
ws = {w["name"]: w for w in json.load(open("rep_m.out"))["windows"] if w["source"] == "mark"}
assert sorted(ws) == ["phase-a", "phase-b"], sorted(ws)
a, b = ws["phase-a"], ws["phase-b"]
# h1 100 W and h2 50 W the whole time: 150 W x 3 s and x 5 s; 100 tokens given at the end
assert abs(a["job"]["energy_j"] - 450) < 1e-6 and a["job"]["nodes"] == 2, a["job"]
assert abs(b["job"]["energy_j"] - 750) < 1e-6, b["job"]
assert a["tokens"] == 100 and abs(a["job"]["j_per_token"] - 4.5) < 1e-9, a
'

# ---- two real one-node recordings: carma collect of two carma exporters on loopback (on
# one machine both name the same node; the job's energy is still the sum) ----
# shellcheck source=tests/integration/exporter_lib.sh
. "$CARMA_SRC/tests/integration/exporter_lib.sh"
mkdir -p live/carma
start_exporter exp1 --root "$CARMA_FIXTURES/acpi-meter" --interval 100ms
P1=$EXP_PID U1=$EXP_URL
start_exporter exp2 --root "$CARMA_FIXTURES/grace" --interval 100ms
P2=$EXP_PID U2=$EXP_URL
"$CARMA" collect --target "$U1" -o live/carma/n1 --duration 2s --interval 200ms -q >c1.out 2>c1.err &
C1=$!
"$CARMA" collect --target "$U2" -o live/carma/n2 --duration 2s --interval 200ms -q >c2.out 2>c2.err &
C2=$!
wait "$C1" || check_fail "carma collect n1: $(cat c1.err)"
wait "$C2" || check_fail "carma collect n2: $(cat c2.err)"
kill -TERM "$P1" "$P2" 2>/dev/null
rc=$(run_logged m_live "$CARMA" merge live)
check_rc m_live 0 "$rc"
check_grep m_live.err "no host collector files to merge" "merge of carma recordings only"
[ -e live/samples.csv ] && check_fail "merge wrote samples.csv without host collector files"
for n in n1 n2 merged; do
    d=live/carma/$n
    [ $n = merged ] && d=live/carma_merged
    rc=$(run_logged rep_live_$n "$CARMA" report "$d" --format json)
    check_rc rep_live_$n 0 "$rc"
done
check_py "carma report of two real recordings joined: the sum of the nodes" '
def energy(p):
    j = json.load(open(p))
    w = j["windows"][0]
    return sum(n["energy_j"] for n in w["nodes"]), len(w["nodes"])
(a, na), (b, nb), (m, nm) = energy("rep_live_n1.out"), energy("rep_live_n2.out"), energy("rep_live_merged.out")
# on one machine both exporters name the same node (its host name): one node of both targets
assert na == 1 and nb == 1 and nm in (1, 2), (na, nb, nm)
targets = {r[4] for r in list(csv.reader(open("live/carma_merged/carma_samples.csv", newline="")))[1:]}
assert len(targets) == 2, targets
assert a > 0 and b > 0, (a, b)
assert abs(m - (a + b)) <= 1e-6 * (a + b), (m, a, b)
'
cli_done
