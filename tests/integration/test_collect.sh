#!/usr/bin/env bash
# carma collect against fake exporters (collect_targets.py: canned /metrics bodies on
# 127.0.0.1 and, where IPv6 loopback works, ::1) and a real `carma exporter`:
#   - one clock: one scrape_seq per cycle for every target, rows of a target together, the
#     node column from the exporter's node label, joules matched to watts, nodes.csv, the
#     manifest; keep-alive (one connection per target for the whole run); IPv6 URLs;
#   - a target killed mid-run: blank rows, one warning when it goes down and one when it comes
#     back after a restart, backoff (cycles skipped), the others unaffected; a body that
#     changes; a slow target (abandoned at the timeout, the cycle keeps its time); an
#     unparseable body (blank rows, the parser's message in the warning);
#   - --required with a dead target (exit 1, named); targets and --targets-file errors
#     (file:line); --slurm (a fake scontrol; not in a job; scontrol missing or failing);
#   - --srt-cpu against srt-slurm's Rust exporter bodies (formats doc §5.2): the v1 CSV rows
#     and cpu_manifest.json;
#   - SIGTERM/SIGINT/SIGHUP (exit 0, manifest written with the signal; "interrupted" when a
#     --duration was cut short; SIGINT taken when inherited ignored), -o naming an earlier run
#     or other files (refused, exit 2, nothing scraped or changed), an unwritable directory, a
#     full disk (a file size limit): the error names the file, the rows before stay.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

TARGETS="$CARMA_SRC/tests/integration/collect_targets.py"
need_file "$TARGETS"

declare -A TPORT TPID

# start_target NAME BODY [ARGS...]: start a fake exporter serving BODY (ARGS go to
# collect_targets.py, e.g. --host ::1, --port P, --mode garbage); sets TPORT[NAME], TPID[NAME].
start_target() {
    local name=$1 body=$2 i
    shift 2
    rm -f "$name.ready"
    "$PY" "$TARGETS" --body "$body" --ready "$name.ready" --log "$name.conns" "$@" \
        >"$name.tlog" 2>&1 &
    TPID[$name]=$!
    _cleanup_pids+=("${TPID[$name]}")
    for ((i = 0; i < 500; i++)); do
        if [ -s "$name.ready" ]; then
            TPORT[$name]=$(head -n 1 "$name.ready")
            return 0
        fi
        kill -0 "${TPID[$name]}" 2>/dev/null || fail "target $name did not start: $(cat "$name.tlog")"
        sleep 0.01
    done
    fail "target $name did not start within 5 s"
}

# stop_target NAME: SIGKILL it (as a crashed node) and wait for it.
stop_target() {
    kill -KILL "${TPID[$1]}" 2>/dev/null
    wait "${TPID[$1]}" 2>/dev/null
    return 0
}

# free_port: a TCP port of 127.0.0.1 nobody listens on (bound and released).
free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# carma_body FILE NODE CHANNELS...: a carma exporter body: each CHANNEL "name:watts:joules"
# in carma_power_watts and carma_energy_joules_total, the node's power and energy, and two
# utilization modes.
carma_body() {
    local file=$1 node=$2 c name w j i tmp
    shift 2
    tmp="$file.tmp"
    {
        echo "# HELP carma_power_watts Power of the channel."
        echo "# TYPE carma_power_watts gauge"
        for c in "$@"; do
            IFS=: read -r name w j <<<"$c"
            echo "carma_power_watts{node=\"$node\",channel=\"$name\",source=\"rapl\",kind=\"cpu\",domain=\"total\",method=\"measured\",socket=\"0\"} $w"
        done
        echo "# TYPE carma_energy_joules_total counter"
        # in the reverse order: matching must not rely on it
        for ((i = $#; i >= 1; i--)); do
            IFS=: read -r name w j <<<"${!i}"
            echo "carma_energy_joules_total{node=\"$node\",channel=\"$name\",source=\"rapl\",kind=\"cpu\",domain=\"total\",method=\"measured\",socket=\"0\"} $j"
        done
        echo "# TYPE carma_node_power_watts gauge"
        echo "carma_node_power_watts{node=\"$node\",method=\"measured\"} 99.5"
        echo "# TYPE carma_node_energy_joules_total counter"
        echo "carma_node_energy_joules_total{node=\"$node\",method=\"measured\"} 12345.25"
        echo "# TYPE carma_cpu_utilization_ratio gauge"
        echo "carma_cpu_utilization_ratio{node=\"$node\",mode=\"total\"} 0.5"
        echo "carma_cpu_utilization_ratio{node=\"$node\",mode=\"system\"} 0.125"
    } >"$tmp"
    mv "$tmp" "$file"
}

# busy DIR TARGET...: true when the run in DIR shows that this machine was too busy for the
# clock (a cycle missed, or a TARGET that serves at once failed a scrape): the run is tried
# again (up to 3 times in all) before its checks.
busy() {
    "$PY" - "$@" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
bad = m["missed_cycles"] > 0 or any(t["error_count"] for t in m["targets"] if t["target"] in sys.argv[2:])
sys.exit(0 if bad else 1)
EOF
}

# Python helpers for the checks (prepended to each check_py script).
PYLIB='
HEADER = ["schema_version", "timestamp_unix", "scrape_seq", "node", "target", "channel",
          "source", "kind", "domain", "method", "watts", "joules_total"]
NODES_HEADER = ["schema_version", "timestamp_unix", "scrape_seq", "node", "target", "method",
                "watts", "joules_total", "cpu_util_total", "cpu_util_user", "cpu_util_nice",
                "cpu_util_sys", "cpu_util_irq"]

def rows_of(path, header):
    data = open(path, "rb").read()
    assert data.endswith(b"\r\n"), "%s does not end with CRLF" % path
    text = data.decode("utf-8")
    lines = text.split("\r\n")[:-1]
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    assert len(rows) == len(lines), "%s: a quoted line break?" % path
    assert rows[0] == header, "%s header: %r" % (path, rows[0])
    for k, r in enumerate(rows[1:]):
        assert len(r) == len(header), "%s line %d: %d fields: %r" % (path, k + 2, len(r), r)
        assert r[0] == "1", r
        assert re.fullmatch(r"\d+\.\d{6}", r[1]), "timestamp %r" % r[1]
    return [dict(zip(header, r)) for r in rows[1:]]

def by_seq(rows):
    seqs = {}
    for r in rows:
        seqs.setdefault(int(r["scrape_seq"]), []).append(r)
    return seqs

def blank(r):
    return all(r[k] == "" for k in ("channel", "source", "kind", "domain", "method", "watts",
                                    "joules_total"))
'

# py MSG SCRIPT [ARGS...]: check_py with the helpers above.
py() {
    local msg=$1 script=$2
    shift 2
    check_py "$msg" "$PYLIB
$script" "$@"
}

IPV6=0
if ip -6 addr show lo 2>/dev/null | grep -q 'inet6 ::1/128' &&
    "$PY" -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
    IPV6=1
else
    note "no IPv6 loopback here: the [::1] target is left out"
fi

carma_body a.prom node-a rapl/package-0:31.5:1000.5 rapl/package-0/dram:4.25:100.125
carma_body b.prom node-b rapl/package-0:50:2000 rapl/package-1:60.5:3000.75 \
    rapl/package-1/dram:7:70
carma_body c.prom node-c psys:120.25:99999.5
start_target a a.prom
start_target b b.prom
if [ "$IPV6" = 1 ]; then
    start_target c c.prom --host ::1
fi

# ---- one clock, three targets (one of them IPv6), from a targets file, --required ----
{
    echo "# the fake exporters"
    echo
    echo "127.0.0.1:${TPORT[a]}   # node-a"
    echo "  localhost:${TPORT[b]}"
    [ "$IPV6" = 1 ] && echo "[::1]:${TPORT[c]}"
} >targets.txt
for attempt in 1 2 3; do
    : >a.conns
    rm -rf basic # an earlier attempt's: carma never overwrites a run directory
    rc=$(run_logged basic "$CARMA" collect --targets-file targets.txt -o basic --required \
        --duration 4s --interval 500ms)
    if [ "$rc" != 0 ] || ! busy basic "127.0.0.1:${TPORT[a]}" "localhost:${TPORT[b]}" \
        "[::1]:${TPORT[c]:-}"; then
        break
    fi
    note "basic: the machine was too busy for the clock (attempt $attempt): once more"
done
check_rc basic 0 "$rc"
check_clean_stderr basic
check_eq "$(head -n 1 basic.out)" basic "basic: the directory is the first line of stdout"
check_no_grep basic.err warning "basic: no warning"
py "basic: samples.csv" '
rows = rows_of("basic/samples.csv", HEADER)
m = load("basic/manifest.json")
ipv6 = sys.argv[1] == "1"
names = ["127.0.0.1:%s" % sys.argv[2], "localhost:%s" % sys.argv[3]] + (["[::1]:%s" % sys.argv[4]] if ipv6 else [])
per = {names[0]: 2, names[1]: 3}
if ipv6:
    per[names[2]] = 1
seqs = by_seq(rows)
assert m["missed_cycles"] == 0, m["missed_cycles"]
assert sorted(seqs) == list(range(8)), "scrape_seq %r: 8 cycles of 500 ms in 4 s" % sorted(seqs)
assert m["cycles"] == 8
first = None
for k in range(8):
    rs = seqs[k]
    # a target'"'"'s rows together, targets in order, each with all its channels
    order = []
    for r in rs:
        if not order or order[-1] != r["target"]:
            order.append(r["target"])
    assert order == names, "cycle %d: targets %r" % (k, order)
    for n in names:
        assert sum(r["target"] == n for r in rs) == per[n], (k, n)
    ts = [float(r["timestamp_unix"]) for r in rs]
    assert max(ts) - min(ts) < 0.4, "cycle %d spans %.3f s" % (k, max(ts) - min(ts))
    if first is None:
        first = min(ts)
    # one clock: cycle k starts k x 500 ms after cycle 0
    off = min(ts) - first - 0.5 * k
    assert -0.06 < off < 0.3, "cycle %d starts %.3f s off its slot" % (k, off)
a = [r for r in rows if r["target"] == names[0]]
assert {r["node"] for r in a} == {"node-a"}
assert [(r["channel"], r["watts"], r["joules_total"]) for r in a[:2]] == [
    ("rapl/package-0", "31.5", "1000.5"), ("rapl/package-0/dram", "4.25", "100.125")], a[:2]
assert all((r["source"], r["kind"], r["domain"], r["method"]) == ("rapl", "cpu", "total", "measured") for r in a)
b = [r for r in rows if r["target"] == names[1]][:3]
assert [(r["node"], r["channel"], r["watts"], r["joules_total"]) for r in b] == [
    ("node-b", "rapl/package-0", "50", "2000"), ("node-b", "rapl/package-1", "60.5", "3000.75"),
    ("node-b", "rapl/package-1/dram", "7", "70")], b
if ipv6:
    c = [r for r in rows if r["target"] == names[2]]
    assert [(r["node"], r["channel"], r["watts"]) for r in c[:1]] == [("node-c", "psys", "120.25")]
' "$IPV6" "${TPORT[a]}" "${TPORT[b]}" "${TPORT[c]:-}"
py "basic: nodes.csv" '
rows = rows_of("basic/nodes.csv", NODES_HEADER)
n = 3 if sys.argv[1] == "1" else 2
assert len(rows) == 8 * n, len(rows)
r = rows[0]
assert (r["node"], r["method"], r["watts"], r["joules_total"], r["cpu_util_total"], r["cpu_util_user"], r["cpu_util_sys"]) == ("node-a", "measured", "99.5", "12345.25", "0.5", "", "0.125"), r
' "$IPV6"
py "basic: manifest.json" '
m = load("basic/manifest.json")
assert m["status"] == "complete", m["status"]
assert m["stop_reason"] == "duration"
assert m["reason_codes"] == []
assert m["options"]["interval_s"] == 0.5 and m["options"]["required"] is True
assert m["stopped_unix"] >= m["started_unix"]
t = m["targets"]
assert t[0]["url"] == "http://127.0.0.1:%s/metrics" % sys.argv[2], t[0]["url"]
assert t[0]["node"] == "127.0.0.1" and t[0]["node_label"] == "node-a"
assert t[1]["url"] == "http://localhost:%s/metrics" % sys.argv[3]
if sys.argv[1] == "1":
    assert t[2]["url"] == "http://[::1]:%s/metrics" % sys.argv[4], t[2]["url"]
    assert t[2]["target"] == "[::1]:%s" % sys.argv[4] and t[2]["node"] == "::1"
for x in t:
    assert (x["scrape_count"], x["error_count"], x["skipped_count"], x["up"]) == (8, 0, 0, True), x
    assert x["last_error"] is None
' "$IPV6" "${TPORT[a]}" "${TPORT[b]}" "${TPORT[c]:-}"
# keep-alive: each target saw one connection carry every request
check_eq "$(grep -c "^conn ${TPORT[a]} " a.conns)" 1 "basic: connections to target a (keep-alive)"
check_eq "$(grep -c "^req ${TPORT[a]} " a.conns)" 8 "basic: requests to target a"

# ---- a target killed mid-run, restarted; a body that changes ----
for attempt in 1 2 3; do
    carma_body a.prom node-a rapl/package-0:31.5:1000.5 rapl/package-0/dram:4.25:100.125
    rm -rf down
    BG_NAME=down carma_bg -- collect --target "127.0.0.1:${TPORT[a]}" \
        --target "127.0.0.1:${TPORT[b]}" -o down --duration 7s --interval 500ms
    COLLECT_PID=$BG_PID
    _cleanup_pids+=("$COLLECT_PID")
    sleep 1.3
    stop_target b
    sleep 2
    carma_body a.prom node-a rapl/package-0:40:1100 rapl/package-0/dram:4.25:101
    start_target b b.prom --port "${TPORT[b]}"
    rc=0
    wait "$COLLECT_PID" || rc=$?
    if [ "$rc" != 0 ] || ! busy down "127.0.0.1:${TPORT[a]}"; then
        break
    fi
    note "down: the machine was too busy for the clock (attempt $attempt): once more"
done
check_eq "$rc" 0 "down: exit status"
check_clean_stderr down
check_eq "$(grep -c "127.0.0.1:${TPORT[b]} (node node-b) is down: " down.err)" 1 \
    "down: one warning when it goes down"
check_eq "$(grep -c "127.0.0.1:${TPORT[b]} (node node-b) is back after " down.err)" 1 \
    "down: one note when it comes back"
check_eq "$(grep -c "127.0.0.1:${TPORT[a]}" down.err)" 0 "down: nothing about the other target"
py "down: blank rows, backoff, the other target unaffected" '
rows = rows_of("down/samples.csv", HEADER)
m = load("down/manifest.json")
a, b = "127.0.0.1:%s" % sys.argv[1], "127.0.0.1:%s" % sys.argv[2]
seqs = by_seq(rows)
assert sorted(seqs) == list(range(14)), sorted(seqs)
state = []
for k in range(14):
    ra = [r for r in seqs[k] if r["target"] == a]
    rb = [r for r in seqs[k] if r["target"] == b]
    assert len(ra) == 2 and not any(blank(r) for r in ra), "cycle %d: target a %r" % (k, ra)
    if len(rb) == 1 and blank(rb[0]):
        assert rb[0]["node"] == "node-b", rb[0]
        state.append("down")
    else:
        assert len(rb) == 3 and not any(blank(r) for r in rb), "cycle %d: %r" % (k, rb)
        state.append("up")
s = "".join("D" if x == "down" else "u" for x in state)
assert "uD" in s and "Du" in s and s.startswith("u") and s.endswith("u"), s
assert s.count("D") >= 3, s
# the body change reached the rows
wa = [r["watts"] for r in rows if r["target"] == a and r["channel"] == "rapl/package-0"]
assert wa[0] == "31.5" and wa[-1] == "40", wa
tb = m["targets"][1]
assert tb["error_count"] >= 2 and tb["skipped_count"] >= 1, tb
assert tb["scrape_count"] + tb["skipped_count"] == 14, tb
assert tb["up"] is True and tb["last_error"], tb
assert m["targets"][0]["error_count"] == 0
assert m["status"] == "incomplete" and m["reason_codes"] == ["target_errors"], m
print("# target b per cycle:", s)
' "${TPORT[a]}" "${TPORT[b]}"
py "down: nodes.csv" '
rows = rows_of("down/nodes.csv", NODES_HEADER)
assert len(rows) == 28, len(rows)
' 

# ---- a slow target is abandoned at the timeout; the cycle keeps its time ----
start_target slow a.prom --mode slow --delay 3
for attempt in 1 2 3; do
    rm -rf slow
    t0=$(date +%s%N)
    rc=$(run_logged slow "$CARMA" collect --target "127.0.0.1:${TPORT[a]}" \
        --target "127.0.0.1:${TPORT[slow]}" -o slow --duration 2s --interval 500ms --timeout 200ms)
    t1=$(date +%s%N)
    if [ "$rc" != 0 ] || ! busy slow "127.0.0.1:${TPORT[a]}"; then
        break
    fi
    note "slow: the machine was too busy for the clock (attempt $attempt): once more"
done
check_rc slow 0 "$rc"
check_clean_stderr slow
check_grep slow.err "127.0.0.1:${TPORT[slow]} (node 127.0.0.1) is down: " "slow: warning"
[ $(((t1 - t0) / 1000000)) -lt 3000 ] || check_fail "slow: the run took $(((t1 - t0) / 1000000)) ms"
py "slow: rows" '
rows = rows_of("slow/samples.csv", HEADER)
a, s = "127.0.0.1:%s" % sys.argv[1], "127.0.0.1:%s" % sys.argv[2]
seqs = by_seq(rows)
assert sorted(seqs) == [0, 1, 2, 3], sorted(seqs)
first = float(seqs[0][0]["timestamp_unix"])
for k, rs in seqs.items():
    ra = [r for r in rs if r["target"] == a]
    assert len(ra) == 2 and not blank(ra[0]), ra
    assert abs(float(ra[0]["timestamp_unix"]) - first - 0.5 * k) < 0.2, (k, ra[0])
    rs_ = [r for r in rs if r["target"] == s]
    assert len(rs_) == 1 and blank(rs_[0]), rs_
m = load("slow/manifest.json")
assert m["options"]["timeout_s"] == 0.2
e = m["targets"][1]["last_error"]
# the time actually waited: the timeout, or less when the cycle started late (its slot keeps
# its deadline)
w = re.match(r"no answer within ([0-9.]+) s", e)
assert (w and 0 < float(w.group(1)) <= 0.2) or "timed out" in e, e
' "${TPORT[a]}" "${TPORT[slow]}"
stop_target slow

# ---- an unparseable body: blank rows, the parser's message in the warning ----
start_target junk a.prom --mode garbage
rc=$(run_logged junk "$CARMA" collect --target "127.0.0.1:${TPORT[a]}" \
    --target "127.0.0.1:${TPORT[junk]}" -o junk --duration 1s --interval 250ms)
check_rc junk 0 "$rc"
check_clean_stderr junk
check_grep junk.err "127.0.0.1:${TPORT[junk]} (node 127.0.0.1) is down: unparseable body: line " \
    "junk: the parser's message"
check_eq "$(grep -c "is down" junk.err)" 1 "junk: warned once"
py "junk: rows" '
rows = rows_of("junk/samples.csv", HEADER)
j = [r for r in rows if r["target"] == "127.0.0.1:%s" % sys.argv[1]]
assert j and all(blank(r) and r["node"] == "127.0.0.1" for r in j), j
assert len([r for r in rows if r["target"] != "127.0.0.1:%s" % sys.argv[1]]) == 8
m = load("junk/manifest.json")
assert m["targets"][1]["last_error"].startswith("unparseable body: line "), m["targets"][1]
' "${TPORT[junk]}"
stop_target junk

# ---- a valid body without any family collect reads: blank rows, one warning, no error ----
printf '# HELP other_metric Something else.\n# TYPE other_metric gauge\nother_metric 1\n' >other.prom
start_target other other.prom
rc=$(run_logged other "$CARMA" collect --target "127.0.0.1:${TPORT[other]}" -o other \
    --duration 1s --interval 200ms)
check_rc other 0 "$rc"
check_eq "$(grep -c "127.0.0.1:${TPORT[other]} (node 127.0.0.1) serves no carma_power_watts (nor srt-slurm's cpu_power_\*_watts) samples in 3 scrapes" other.err)" \
    1 "other: one warning after 3 scrapes"
py "other: rows" '
rows = rows_of("other/samples.csv", HEADER)
assert len(rows) == 5 and all(blank(r) for r in rows), rows
m = load("other/manifest.json")
assert m["targets"][0]["error_count"] == 0 and m["status"] == "complete", m
'
stop_target other

# ---- --required: a dead target is fatal, named ----
dead=$(free_port)
rc=$(run_logged req "$CARMA" collect --required --target "127.0.0.1:${TPORT[a]}" \
    --target "127.0.0.1:$dead" -o req --duration 2s --interval 500ms)
check_rc req 1 "$rc"
check_clean_stderr req
check_grep req.err "carma: collect: required target 127.0.0.1:$dead (node 127.0.0.1) is down: " \
    "req: the dead target is named"
check_eq "$(json_get req/manifest.json 'j["status"]')" failed "req: manifest status"
check_eq "$(json_get req/manifest.json 'j["stop_reason"]')" required_target_down "req: stop_reason"
check_eq "$(json_get req/manifest.json 'j["cycles"]')" 1 "req: stopped after the first cycle"
# without --required the same run is best-effort
rc=$(run_logged noreq "$CARMA" collect --target "127.0.0.1:${TPORT[a]}" \
    --target "127.0.0.1:$dead" -o noreq --duration 1s --interval 500ms)
check_rc noreq 0 "$rc"

# ---- target and targets-file errors ----
cli_err() { # NAME EXPECTED-STDERR ARGS...
    local name=$1 want=$2 rc
    shift 2
    rc=$(run_logged "$name" "$CARMA" collect "$@")
    check_rc "$name" 2 "$rc"
    check_grep "$name.err" "$want" "$name"
    check_clean_stderr "$name"
}
printf '# comment\n127.0.0.1:9405\n\nnode7:99999\n' >bad.txt
cli_err tf_port "carma: collect: bad.txt:4: bad target 'node7:99999': port '99999' is not 1..65535" \
    --targets-file bad.txt
printf 'a:1 b:2\n' >two.txt
cli_err tf_two "carma: collect: two.txt:1: one target per line ('b:2' follows 'a:1')" \
    --targets-file two.txt
printf '# nothing\n\n' >empty.txt
cli_err tf_empty "carma: collect: empty.txt: no targets in it" --targets-file empty.txt
cli_err tf_missing "carma: collect: cannot read nofile.txt: No such file or directory" \
    --targets-file nofile.txt
printf 'a:1\nhttp://a:1/metrics\n' >dup.txt
cli_err tf_dup "carma: collect: dup.txt:2: target 'http://a:1/metrics' is given twice" \
    --targets-file dup.txt
printf 'ok:1\nbad host\n' >sp.txt
cli_err tf_space "carma: collect: sp.txt:2: one target per line" --targets-file sp.txt
cli_err t_bracket "bad target '[::1': '[' without ']'" --target '[::1'
cli_err t_scheme "bad target 'ftp://x': only http:// and https:// URLs" --target ftp://x
cli_err t_v6port "bad target '::1:94g5': not an IPv6 address (write [ADDR]:PORT to give a port)" \
    --target ::1:94g5
cli_err t_none "carma: collect: no targets: give --target HOST:PORT, --targets-file F or --slurm"
cli_err t_interval "--interval: '2h' is not a duration from 10ms to 1h" --target a:1 --interval 2h
cli_err t_port "--port: '0' is not a port" --target a --port 0
# the forms accepted, as the manifest shows them (nothing here leaves this machine: .invalid
# names are never resolved to an address, the zone of the link-local address is lo)
printf 'h1.invalid\n[::1]\nhttp://[fe80::1%%lo]:8080\nhttp://[fe80::2%%25lo]\nhttps://h2.invalid/x?y=1\n127.0.0.9\n' \
    >forms.txt
rc=$(run_logged forms "$CARMA" collect --targets-file forms.txt --port 9999 -o forms -q \
    --duration 30ms --interval 20ms --timeout 10ms)
check_rc forms 0 "$rc"
py "forms: URLs" '
m = load("forms/manifest.json")
got = [(t["target"], t["url"], t["node"]) for t in m["targets"]]
want = [("h1.invalid:9999", "http://h1.invalid:9999/metrics", "h1.invalid"),
        ("[::1]:9999", "http://[::1]:9999/metrics", "::1"),
        ("http://[fe80::1%25lo]:8080/metrics", "http://[fe80::1%25lo]:8080/metrics", "fe80::1%lo"),
        ("http://[fe80::2%25lo]:9999/metrics", "http://[fe80::2%25lo]:9999/metrics", "fe80::2%lo"),
        ("https://h2.invalid:9999/x?y=1", "https://h2.invalid:9999/x?y=1", "h2.invalid"),
        ("127.0.0.9:9999", "http://127.0.0.9:9999/metrics", "127.0.0.9")]
assert got == want, got
'

# ---- --slurm: the job's nodes through scontrol ----
mkdir -p bin
cat >bin/scontrol <<'EOF'
#!/bin/sh
[ "$1 $2" = "show hostnames" ] || exit 3
case "$3" in
"fake[1-2]") printf '127.0.0.1\nlocalhost\n' ;;
*) echo "scontrol: error: Unable to create hostlist from '$3'" >&2; exit 1 ;;
esac
EOF
chmod +x bin/scontrol
rc=$(run_logged slurm env PATH="$PWD/bin:$PATH" SLURM_JOB_NODELIST='fake[1-2]' SLURM_JOB_ID=77 \
    "$CARMA" collect --slurm --port "${TPORT[a]}" -o slurm --duration 1s --interval 500ms)
check_rc slurm 0 "$rc"
check_clean_stderr slurm
py "slurm: targets" '
m = load("slurm/manifest.json")
assert [(t["node"], t["url"]) for t in m["targets"]] == [
    ("127.0.0.1", "http://127.0.0.1:%s/metrics" % sys.argv[1]),
    ("localhost", "http://localhost:%s/metrics" % sys.argv[1])], m["targets"]
assert m["nodes"] == ["127.0.0.1", "localhost"] and m["job_id"] == "77"
assert all(t["scrape_count"] == 2 and t["error_count"] == 0 for t in m["targets"])
# the Slurm node name names the rows, not the exporter'"'"'s node label ("node-a")
rows = rows_of("slurm/samples.csv", HEADER)
assert [r["node"] for r in rows] == ["127.0.0.1"] * 2 + ["localhost"] * 2 + ["127.0.0.1"] * 2 + ["localhost"] * 2, rows
assert {r["node"] for r in rows_of("slurm/nodes.csv", NODES_HEADER)} == {"127.0.0.1", "localhost"}
' "${TPORT[a]}"
rc=$(run_logged slurm_nojob env -u SLURM_JOB_NODELIST -u SLURM_NODELIST "$CARMA" collect --slurm)
check_rc slurm_nojob 2 "$rc"
check_grep slurm_nojob.err "carma: collect: --slurm: not in a Slurm job (SLURM_JOB_NODELIST is not set)" \
    "slurm: not in a job"
rc=$(run_logged slurm_missing env PATH=/nonexistent SLURM_JOB_NODELIST=n1 "$CARMA" collect --slurm)
check_rc slurm_missing 2 "$rc"
check_grep slurm_missing.err "carma: collect: --slurm: scontrol not found in PATH" \
    "slurm: no scontrol"
rc=$(run_logged slurm_fail env PATH="$PWD/bin:$PATH" SLURM_JOB_NODELIST='bad[' "$CARMA" collect \
    --slurm)
check_rc slurm_fail 2 "$rc"
check_grep slurm_fail.err \
    "carma: collect: --slurm: 'scontrol show hostnames bad[' failed (exit status 1): scontrol: error: Unable to create hostlist from 'bad['" \
    "slurm: scontrol fails"

# ---- --srt-cpu: srt-slurm's Rust exporter bodies (ACPI, DCGM) -> power/cpu/ ----
cat >acpi.prom <<'EOF'
# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).
# TYPE cpu_power_acpi_watts gauge
cpu_power_acpi_watts{sensor="hwmon0/power1",type="cpu_rail",socket="0",oem_info="CPU Power Socket 0",source="acpi"} 48.100000
cpu_power_acpi_watts{sensor="hwmon1/power1",type="soc",socket="0",oem_info="SysIO Power Socket 0",source="acpi"} 5.200000
cpu_power_acpi_watts{sensor="hwmon2/power1",type="total",socket="0",oem_info="Grace Power Socket 0",source="acpi"} 93.400000
cpu_power_acpi_watts{sensor="hwmon3/power1",type="other",socket="",oem_info="Module Socket A",source="acpi"} 1.000000
EOF
cat >dcgm.prom <<'EOF'
# HELP cpu_power_dcgm_watts Grace CPU instantaneous power via DCGM field 1130 (W).
# TYPE cpu_power_dcgm_watts gauge
cpu_power_dcgm_watts{socket="0",source="dcgm"} 43.878000
cpu_power_dcgm_watts{socket="1",source="dcgm"} 52.350000
EOF
grep -v 'type="total"' acpi.prom >acpi_nototal.prom
start_target acpi acpi.prom
start_target dcgm dcgm.prom
for attempt in 1 2 3; do
    rm -rf srt
    rc=$(run_logged srt "$CARMA" collect --srt-cpu --target "127.0.0.1:${TPORT[acpi]}" \
        --target "localhost:${TPORT[dcgm]}" --target "127.0.0.1:$dead" -o srt --duration 1s \
        --interval 500ms)
    if [ "$rc" != 0 ] || ! busy srt "127.0.0.1:${TPORT[acpi]}" "localhost:${TPORT[dcgm]}"; then
        break
    fi
    note "srt: the machine was too busy for the clock (attempt $attempt): once more"
done
check_rc srt 0 "$rc"
check_clean_stderr srt
check_no_grep srt.err "serves no carma_power_watts" "srt: srt-slurm bodies are not 'empty'"
py "srt: power/cpu/samples.csv" '
data = open("srt/power/cpu/samples.csv", "rb").read()
lines = data.split(b"\r\n")
assert lines[-1] == b"" and all(b"\n" not in l for l in lines), data
assert lines[0] == b"schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w", lines[0]
body = [l.decode() for l in lines[1:-1]]
assert len(body) == 2 * 5, body
ts = r"(\d+\.\d{6})"
acpi = [re.fullmatch(r"1," + ts + r",127\.0\.0\.1,acpi,(.*)", l) for l in body if ",acpi," in l]
dcgm = [re.fullmatch(r"1," + ts + r",localhost,dcgm,(.*)", l) for l in body if ",dcgm," in l]
assert len(acpi) == 6 and len(dcgm) == 4 and all(acpi) and all(dcgm), body
assert [x.group(2) for x in acpi[:3]] == ["CPU Power Socket 0,0,48.1,93.4",
    "SysIO Power Socket 0,0,5.2,93.4", "Grace Power Socket 0,0,93.4,93.4"], acpi
assert [x.group(2) for x in dcgm[:2]] == ["CPU0:cpuPowerUsageW,0,43.878,96.228",
    "CPU1:cpuPowerUsageW,1,52.35,96.228"], dcgm
# one timestamp per node per scrape, taken after its body arrived; a scrape of a node together
assert len({x.group(1) for x in acpi[:3]}) == 1 and acpi[0].group(1) != acpi[3].group(1)
assert body[:3] == [x.group(0) for x in acpi[:3]]
m = json.load(open("srt/power/cpu/cpu_manifest.json"))
assert list(m) == ["schema_version", "producer", "producer_git_commit", "started_at_unix",
                   "stopped_at_unix", "nodes"], list(m)
assert m["nodes"] == {"127.0.0.1": {"resolved_mode": "acpi", "scrape_count": 3, "error_count": 1},
                      "localhost": {"resolved_mode": "dcgm", "scrape_count": 2, "error_count": 0}}, m["nodes"]
'
# (the dead target shares the ACPI one's host: its one poll, an error, counts there; the next
# cycle skips it.) Without the total line total_power_w is blank:
stop_target acpi
start_target acpi acpi_nototal.prom
rc=$(run_logged srt2 "$CARMA" collect --srt-cpu --target "127.0.0.1:${TPORT[acpi]}" -o srt2 \
    --duration 100ms --interval 100ms)
check_rc srt2 0 "$rc"
py "srt: no total" '
lines = open("srt2/power/cpu/samples.csv", "rb").read().decode().split("\r\n")[1:-1]
assert [l.split(",", 4)[4] for l in lines] == ["CPU Power Socket 0,0,48.1,", "SysIO Power Socket 0,0,5.2,"], lines
'

# ---- SIGTERM / SIGINT / SIGHUP: the cycle finishes, the files are flushed, exit 0; the signal
# and its time are in the manifest (without --duration a signal is the ordinary end) ----
for sig in TERM INT HUP; do
    BG_NAME=sig$sig carma_bg -- collect --target "127.0.0.1:${TPORT[a]}" -o "sig$sig" \
        --interval 200ms
    pid=$BG_PID
    _cleanup_pids+=("$pid")
    sleep 1
    kill "-$sig" "$pid"
    rc=0
    wait "$pid" || rc=$?
    check_eq "$rc" 0 "SIG$sig: exit status"
    check_clean_stderr "sig$sig"
    check_eq "$(json_get "sig$sig/manifest.json" 'j["stop_reason"]')" signal "SIG$sig: stop_reason"
    py "SIG$sig: rows" '
rows = rows_of(sys.argv[1] + "/samples.csv", HEADER)
m = load(sys.argv[1] + "/manifest.json")
assert m["status"] in ("complete", "incomplete"), m["status"]
assert m["stopped_unix"] is not None and m["cycles"] >= 2, m
assert len(rows) == m["sample_row_count"] and len(by_seq(rows)) == m["cycles"], (len(rows), m)
import time
i = m["interruption"]
assert i["signal"] == "SIG" + sys.argv[2] and i["signal_number"] == int(sys.argv[3]), i
assert m["started_unix"] <= i["time_unix"] <= m["stopped_unix"], (i, m["stopped_unix"])
assert i["time_utc"].endswith("Z") and i["time_utc"].startswith(
    time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(i["time_unix"])))), i
' "sig$sig" "$sig" "$(kill -l "$sig")"
done

# a signal that cuts a --duration short: "interrupted"; started as a script's background job
# (SIGINT inherited ignored), SIGINT still reaches carma
bash -c '"$1" collect --target "127.0.0.1:$2" -o sigdur --interval 200ms --duration 60s \
    >sigdur.out 2>sigdur.err & echo $! >sigdur.pid; wait' _ "$CARMA" "${TPORT[a]}" &
shell=$!
_cleanup_pids+=("$shell")
for ((i = 0; i < 100; i++)); do [ -s sigdur/samples.csv ] && break; sleep 0.05; done
pid=$(cat sigdur.pid)
_cleanup_pids+=("$pid")
ign=$(awk '/^SigIgn/ { print $2 }' "/proc/$pid/status")
check_eq "$(((0x${ign:-ff} >> 1) & 1))" 0 "collect from a script: SIGINT taken, not left ignored"
sleep 0.5
kill -INT "$pid"
rc=0
wait "$shell" || rc=$?
check_eq "$rc" 0 "SIGINT cutting --duration short: exit status"
check_eq "$(json_get sigdur/manifest.json 'j["status"]')" interrupted "SIGINT before --duration: status"
check_eq "$(json_get sigdur/manifest.json 'j["interruption"]["signal"]')" SIGINT \
    "SIGINT before --duration: the signal"
check_eq "$(json_get sigdur/manifest.json 'j["stop_reason"]')" signal "SIGINT before --duration: stop_reason"

# ---- -o naming an earlier run: refused before any scrape (exit 2), the earlier files whole;
# (an --srt-cpu run's power/cpu/samples.csv would be left beside another run's manifest) ----
rc=$(run_logged prev "$CARMA" collect --srt-cpu --target "127.0.0.1:${TPORT[a]}" -o prev \
    --duration 300ms --interval 100ms)
check_rc prev 0 "$rc"
need_file prev/manifest.json prev/samples.csv prev/power/cpu/samples.csv
before=$(find prev -type f -exec md5sum {} + | sort)
reqs=$(grep -c "^req ${TPORT[a]} " a.conns)
rc=$(run_logged prev2 "$CARMA" collect --target "127.0.0.1:${TPORT[a]}" -o prev \
    --duration 300ms --interval 100ms)
check_rc prev2 2 "$rc"
check_grep prev2.err "carma: collect: -o prev: prev already holds a measurement (manifest.json: carma collect, status complete, written 20" \
    "collect into an earlier run: refused, naming it"
check_grep prev2.err "also samples.csv, nodes.csv, power), which carma never overwrites: give another -o DIR, or remove prev first" \
    "collect into an earlier run: what is there, what to do"
check_eq "$(find prev -type f -exec md5sum {} + | sort)" "$before" "collect into an earlier run: files unchanged"
check_eq "$(grep -c "^req ${TPORT[a]} " a.conns)" "$reqs" "collect into an earlier run: nothing scraped"
check_no_grep prev2.out prev "collect into an earlier run: no directory printed"
mkdir empty_out
rc=$(run_logged emptyo "$CARMA" collect --target "127.0.0.1:${TPORT[a]}" -o empty_out \
    --duration 300ms --interval 100ms)
check_rc emptyo 0 "$rc"
check_eq "$(json_get empty_out/manifest.json 'j["status"]')" complete "collect into an empty directory"

# ---- an unwritable directory; a full disk ----
echo x >afile
rc=$(run_logged unw "$CARMA" collect --target "127.0.0.1:${TPORT[a]}" -o afile/sub --duration 1s)
check_rc unw 1 "$rc"
check_grep unw.err "carma: collect: cannot create afile/sub: Not a directory" "unwritable: names it"
mkdir -p isdir/samples.csv
rc=$(run_logged isdir "$CARMA" collect --target "127.0.0.1:${TPORT[a]}" -o isdir --duration 1s)
check_rc isdir 2 "$rc"
check_grep isdir.err "carma: collect: -o isdir: isdir holds files of an earlier measurement (samples.csv), which carma never overwrites" \
    "a directory holding a run's file: refused, naming it"
rc=0
(
    ulimit -f 4 # KiB: samples.csv outgrows it after about 15 cycles
    exec "$CARMA" collect --target "127.0.0.1:${TPORT[a]}" -o full --duration 2s --interval 50ms
) >full.out 2>full.err || rc=$?
check_eq "$rc" 1 "full disk: exit status"
check_clean_stderr full
# one error per failing streak (a shorter cycle may still fit: a target that timed out on a busy
# machine writes one short row)
check_eq "$(grep -c 'carma: collect: cannot write full/samples.csv: File too large (the rows written before are kept); trying again every cycle' full.err)" \
    "$((1 + $(grep -c 'writing the samples again' full.err)))" \
    "full disk: one error naming the file"
py "full disk: whole rows stay" '
rows = rows_of("full/samples.csv", HEADER)
import os
assert os.path.getsize("full/samples.csv") <= 4096
assert len(rows) >= 10 and len(rows) % 2 == 0, len(rows)
m = load("full/manifest.json")
assert m["status"] == "incomplete" and "samples_write_failed" in m["reason_codes"], m
'

# ---- a real carma exporter ----
if "$CARMA" exporter --help 2>&1 | grep -q "not built yet"; then
    note "carma exporter is not built yet: its part is skipped"
else
    for fx in intel-2s grace; do
        "$CARMA" exporter --root "$CARMA_FIXTURES/$fx" --listen 127.0.0.1:0 --interval 100ms \
            --compat srtctl --srt-source acpi >"exp_$fx.log" 2>&1 &
        epid=$!
        _cleanup_pids+=("$epid")
        eport=
        for ((i = 0; i < 500; i++)); do
            eport=$(grep -o 'listening on 127.0.0.1:[0-9]*' "exp_$fx.log" | head -n 1 | cut -d: -f2)
            [ -n "$eport" ] && break
            kill -0 "$epid" 2>/dev/null || break
            sleep 0.01
        done
        [ -n "$eport" ] || fail "carma exporter on $fx did not start: $(cat "exp_$fx.log")"
        sleep 0.5 # its first readings (a counter gives a power after two)
        for attempt in 1 2 3; do
            rm -rf "real_$fx"
            rc=$(run_logged "real_$fx" "$CARMA" collect --target "127.0.0.1:$eport" \
                -o "real_$fx" --srt-cpu --required --duration 2s --interval 500ms)
            if [ "$rc" != 0 ] || ! busy "real_$fx" "127.0.0.1:$eport"; then
                break
            fi
            note "real_$fx: the machine was too busy for the clock (attempt $attempt): once more"
        done
        check_rc "real_$fx" 0 "$rc"
        check_clean_stderr "real_$fx"
        py "real exporter ($fx)" '
fx = sys.argv[1]
rows = rows_of("real_%s/samples.csv" % fx, HEADER)
seqs = by_seq(rows)
assert sorted(seqs) == [0, 1, 2, 3], sorted(seqs)
for k, rs in seqs.items():
    assert not any(blank(r) for r in rs), rs
    chans = [r["channel"] for r in rs]
    assert len(chans) == len(set(chans)) >= 2, chans
    # every channel has its energy counter
    assert all(r["joules_total"] != "" and r["watts"] != "" for r in rs), rs
    want = "rapl/package-0" if fx == "intel-2s" else "hwmon/power_meter/socket0/total"
    assert want in chans, chans
n = rows_of("real_%s/nodes.csv" % fx, NODES_HEADER)
assert len(n) == 4 and all(r["watts"] != "" and r["joules_total"] != "" for r in n), n
cpu = open("real_%s/power/cpu/samples.csv" % fx).read().split("\n")
if fx == "grace":
    acpi = [l for l in cpu[1:] if ",acpi," in l]
    assert len(acpi) >= 4 * 10, cpu
    assert ",Grace Power Socket 0,0,150.0," in cpu[1] + cpu[2] + "".join(cpu), cpu[:3]
else:
    assert len(cpu) == 2, cpu  # the header only: no ACPI power meter on this machine
' "$fx"
        kill -TERM "$epid"
        wait "$epid" 2>/dev/null
    done
fi

# ---- an exporter serving negative watts: no reading (blank), warned once, counted at the end
carma_body neg.prom node-n rapl/package-0:-5.5:1000 rapl/package-1:40:2000
start_target neg neg.prom
rc=$(run_logged neg "$CARMA" collect --target "127.0.0.1:${TPORT[neg]}" -o neg --duration 1s \
    --interval 200ms)
check_rc neg 0 "$rc"
check_eq "$(grep -c 'serves power below 0 W' neg.err)" 1 "negative watts: warned once"
check_grep neg.err "negative power readings dropped" "negative watts: counted in the last line"
py "negative watts: a missing reading, the counter kept, the other channel whole" '
rows = rows_of("neg/samples.csv", HEADER)
p0 = [r for r in rows if r["channel"] == "rapl/package-0"]
p1 = [r for r in rows if r["channel"] == "rapl/package-1"]
assert p0 and all(r["watts"] == "" and float(r["joules_total"]) == 1000 for r in p0), p0
assert p1 and all(float(r["watts"]) == 40 for r in p1), p1
'

cli_done
