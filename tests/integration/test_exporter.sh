#!/usr/bin/env bash
# carma exporter against the real tools that consume it.
#
# 1. On every fixture profile (intel-2s, amd-server, laptop, grace, acpi-meter, vm-empty, and
#    grace with --compat srtctl): /metrics is 200 with the text format's Content-Type and one
#    energy line per channel, and `promtool check metrics` finds no error and no lint problem;
#    /healthz, /, 404, 405 (with Allow), HEAD, a kept-alive connection; bad --listen values,
#    a port in use and a root without sensors exit 1 with the message; SIGTERM and SIGINT stop
#    it with status 0.
# 2. A real Prometheus server scrapes the exporter every second on a 2-socket Intel tree kept
#    alive by the simulated power plant; after ~16 s the node's power from
#    sum(rate(carma_energy_joules_total{domain="total"}[10s])) is compared with the plant's
#    truth over the same span (the exporter's own sample times, from
#    carma_last_sample_timestamp_seconds, bound it): within 2 %. Each channel's energy between
#    the first and last scrape of the window is compared with the truth too.
#
# Every process started here is stopped by its pid (lib.sh's exit trap), on failure too.
# shellcheck source=lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

PROMTOOL=${PROMTOOL:-/usr/bin/promtool}
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
command -v curl >/dev/null || skip "curl is not installed"
[ -x "$PROMTOOL" ] || skip "$PROMTOOL is not installed (Debian package prometheus)"
[ -x "$PROMETHEUS" ] || skip "$PROMETHEUS is not installed (Debian package prometheus)"

# shellcheck source=exporter_lib.sh
. "$CARMA_SRC/tests/integration/exporter_lib.sh"

# ---------------------------------------------------------------- 1. every fixture profile
declare -A nchan=([intel-2s]=6 [amd-server]=4 [laptop]=6 [grace]=28 [acpi-meter]=1 [vm-empty]=1)
for fx in intel-2s amd-server laptop grace acpi-meter vm-empty grace+srtctl; do
    tree=${fx%+srtctl}
    args=(--root "$CARMA_FIXTURES/$tree" --interval 50ms)
    [ "$fx" != "$tree" ] && args+=(--compat srtctl)
    start_exporter "exp-$fx" "${args[@]}"
    sleep 0.15 # two more samples: counters have a power value
    code=$(curl -sS -o "$fx.prom" -D "$fx.hdr" -w '%{http_code}' "$EXP_URL/metrics")
    check "$([ "$code" = 200 ] && echo 0 || echo 1)" "$fx: GET /metrics is 200 (got $code)"
    grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$fx.hdr"
    check $? "$fx: /metrics Content-Type is the text format 0.0.4"
    n=$(grep -c '^carma_energy_joules_total{' "$fx.prom")
    check "$([ "$n" = "${nchan[$tree]}" ] && echo 0 || echo 1)" \
        "$fx: one energy line per channel ($n, expected ${nchan[$tree]})"
    grep -q '^carma_node_energy_joules_total{' "$fx.prom"
    check $? "$fx: a node energy line"
    rc=0
    lint=$("$PROMTOOL" check metrics <"$fx.prom" 2>&1) || rc=$?
    echo "# promtool check metrics ($fx, $(wc -l <"$fx.prom") lines): rc $rc${lint:+: $lint}"
    check "$([ "$rc" = 0 ] && [ -z "$lint" ] && echo 0 || echo 1)" \
        "$fx: promtool check metrics: no error, no lint problem"
    if [ "$fx" = grace+srtctl ]; then
        n=$(grep -c '^cpu_power_acpi_watts{' "$fx.prom")
        check "$([ "$n" = 28 ] && echo 0 || echo 1)" "$fx: 28 cpu_power_acpi_watts lines ($n)"
        grep -qxF 'cpu_power_acpi_watts{sensor="hwmon1/power1",type="total",socket="0",oem_info="Grace Power Socket 0",source="acpi"} 150.000000' "$fx.prom"
        check $? "$fx: srt-slurm's line for hwmon1/power1, byte for byte"
        grep -qxF '# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).' "$fx.prom"
        check $? "$fx: srt-slurm's HELP text"
    fi
    case $tree in
    grace | acpi-meter)
        grep -q '^carma_node_power_watts{.*} [0-9]' "$fx.prom"
        check $? "$fx: a node power line"
        ;;
    esac
    if [ "$fx" = intel-2s ]; then
        body=$(curl -sS -w ' %{http_code}' "$EXP_URL/healthz")
        check "$([ "$body" = "ok
 200" ] && echo 0 || echo 1)" "/healthz is 200 ok"
        body=$(curl -sS -o /dev/null -w '%{http_code}' "$EXP_URL/nope")
        check "$([ "$body" = 404 ] && echo 0 || echo 1)" "/nope is 404 (got $body)"
        body=$(curl -sS -o /dev/null -D post.hdr -w '%{http_code}' -X POST -d x=1 "$EXP_URL/metrics")
        check "$([ "$body" = 405 ] && echo 0 || echo 1)" "POST /metrics is 405 (got $body)"
        grep -qi '^allow: GET, HEAD' post.hdr
        check $? "405 says Allow: GET, HEAD"
        body=$(curl -sS -o /dev/null -w '%{http_code}' -X DELETE "$EXP_URL/")
        check "$([ "$body" = 405 ] && echo 0 || echo 1)" "DELETE / is 405 (got $body)"
        size=$(curl -sS -I -o /dev/null -D head.hdr -w '%{http_code} %{size_download}' "$EXP_URL/metrics")
        len=$(tr -d '\r' <head.hdr | sed -n 's/^[Cc]ontent-[Ll]ength: //p')
        check "$([ "$size" = "200 0" ] && [ "${len:-0}" -gt 1000 ] && echo 0 || echo 1)" \
            "HEAD /metrics: 200, Content-Length $len, no body ($size)"
        curl -sS "$EXP_URL/" | grep -q 'href="/metrics"'
        check $? "/ links /metrics"
        reused=$(curl -sS -v -o /dev/null -o /dev/null "$EXP_URL/metrics" "$EXP_URL/metrics" 2>&1 |
            grep -c 'Re-using existing connection')
        check "$([ "$reused" -ge 1 ] && echo 0 || echo 1)" "two scrapes on one kept-alive connection"
        scrapes=$(sed -n 's/^carma_scrapes_total //p' "$fx.prom")
        check "$([ -n "$scrapes" ] && echo 0 || echo 1)" "carma_scrapes_total is served ($scrapes)"
        # another exporter on the same port
        rc=0
        "$CARMA" exporter --root "$CARMA_FIXTURES/intel-2s" --listen "127.0.0.1:$EXP_PORT" \
            2>inuse.err || rc=$?
        ok=1
        [ "$rc" = 1 ] && grep -qF "cannot listen on 127.0.0.1:$EXP_PORT: Address already in use" \
            inuse.err && ok=0
        check "$ok" "port in use: exit 1 ($rc) with: $(cat inuse.err)"
        stop_exporter TERM
    else
        stop_exporter "$([ "$fx" = vm-empty ] && echo INT || echo TERM)"
    fi
done

# IPv6 loopback and every address (dual-stack) where the machine has IPv6
if "$PY" -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
    start_exporter v6 --root "$CARMA_FIXTURES/acpi-meter" --listen '[::1]:0'
    code=$(curl -sS -o /dev/null -w '%{http_code}' "http://[::1]:$EXP_PORT/metrics")
    check "$([ "$code" = 200 ] && echo 0 || echo 1)" "$(cat v6.err): serves /metrics ($code)"
    stop_exporter TERM
    start_exporter any --root "$CARMA_FIXTURES/acpi-meter" --listen ':0'
    c4=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$EXP_PORT/healthz")
    c6=$(curl -sS -o /dev/null -w '%{http_code}' "http://[::1]:$EXP_PORT/healthz")
    check "$([ "$c4$c6" = 200200 ] && echo 0 || echo 1)" \
        ":0 answers on IPv4 ($c4) and IPv6 ($c6): $(cat any.err)"
    stop_exporter TERM
else
    note "no IPv6 loopback here: [::1] and dual-stack not tried"
fi

# bad --listen values, and a root without sensors
for bad in 9405 '::1:9405' '[::1]' '[::1]:x' '1.2.3:9405' 'localhost:9405' '127.0.0.1:70000' \
    '[zz::1]:9405' ':'; do
    rc=0
    "$CARMA" exporter --root "$CARMA_FIXTURES/intel-2s" --listen "$bad" 2>bad.err || rc=$?
    ok=1
    [ "$rc" = 1 ] && grep -qF -- "$bad" bad.err && ok=0
    check "$ok" "--listen '$bad': exit 1 ($rc): $(cat bad.err)"
done
mkdir -p empty-root
rc=0
"$CARMA" exporter --root empty-root --listen 127.0.0.1:0 2>empty.err || rc=$?
ok=1
[ "$rc" = 1 ] && grep -q 'no power channel to export' empty.err && ok=0
check "$ok" "no usable source: exit 1 ($rc): $(head -1 empty.err)"

# ---------------------------------------------------------------- 2. Prometheus on a live plant
free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

live_tree intel-2s live
start_plant live "$PLANT_CONFIGS/intel-2s.conf" truth.csv
start_exporter live --root live --interval 100ms
note "exporter on the live tree: $EXP_URL"

prom_ok=0
for attempt in 1 2 3; do
    PROM_PORT=$(free_port)
    cat >prometheus.yml <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: carma
    static_configs:
      - targets: ['127.0.0.1:$EXP_PORT']
EOF
    rm -rf tsdb
    "$PROMETHEUS" --config.file=prometheus.yml --storage.tsdb.path="$PWD/tsdb" \
        --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >prometheus.log 2>&1 &
    PROM_PID=$!
    _cleanup_pids+=("$PROM_PID")
    for ((i = 0; i < 300; i++)); do
        if [ "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PROM_PORT/-/ready" 2>/dev/null)" = 200 ]; then
            prom_ok=1
            break
        fi
        kill -0 "$PROM_PID" 2>/dev/null || break
        sleep 0.05
    done
    [ "$prom_ok" = 1 ] && break
    kill -TERM "$PROM_PID" 2>/dev/null
    wait "$PROM_PID" 2>/dev/null
    note "prometheus did not start on port $PROM_PORT (attempt $attempt): $(tail -3 prometheus.log)"
done
[ "$prom_ok" = 1 ] || fail "prometheus did not start: $(tail -5 prometheus.log)"
note "prometheus on 127.0.0.1:$PROM_PORT, scraping every 1 s"
sleep 16

rc=0
"$PY" - "http://127.0.0.1:$PROM_PORT" truth.csv <<'EOF' || rc=$?
import bisect, csv, json, sys, time, urllib.parse, urllib.request

base, truth_path = sys.argv[1], sys.argv[2]
# carma's channels with domain total -> the plant's truth columns
CHANNELS = {"rapl/package-0": "package-0", "rapl/package-0/dram": "package-0-dram",
            "rapl/package-1": "package-1", "rapl/package-1/dram": "package-1-dram"}
TOL = 0.02


def query(q, at):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": "%.3f" % at})
    with urllib.request.urlopen(url, timeout=5) as r:
        j = json.load(r)
    if j.get("status") != "success":
        sys.exit("query %s: %s" % (q, j))
    return j["data"]["result"]


at = time.time() - 0.5
rate = query('sum(rate(carma_energy_joules_total{domain="total"}[10s]))', at)
stamps = query("carma_last_sample_timestamp_seconds[10s]", at)
energy = query('carma_energy_joules_total{domain="total"}[10s]', at)
ups = query("up[20s]", at)
if not rate or not stamps or not energy:
    sys.exit("Prometheus has no data: rate %s, stamps %s, energy %s, up %s"
             % (rate, stamps, energy, ups))
prom_w = float(rate[0]["value"][1])
# the exporter's sample times of the first and last scrape in the window
st = stamps[0]["values"]
scrape_t = [float(t) for t, _ in st]
tick_t = [float(v) for _, v in st]
t1, t2 = tick_t[0], tick_t[-1]

rows = []
with open(truth_path) as f:
    rd = csv.reader(f)
    head = next(rd)
    for row in rd:
        if len(row) == len(head):
            rows.append(row)
ts = [float(r[0]) for r in rows]
col = {name: head.index(name + "_j") for name in CHANNELS.values()}


def truth_at(name, t):
    k = bisect.bisect_left(ts, t)
    if k <= 0 or k >= len(ts):
        sys.exit("truth log does not cover %.6f (%.6f .. %.6f)" % (t, ts[0], ts[-1]))
    a, b = rows[k - 1], rows[k]
    ta, tb = ts[k - 1], ts[k]
    ea, eb = float(a[col[name]]), float(b[col[name]])
    return ea + (eb - ea) * (t - ta) / (tb - ta)


truth_w = sum(truth_at(n, t2) - truth_at(n, t1) for n in CHANNELS.values()) / (t2 - t1)
diff = (prom_w - truth_w) / truth_w
print("# window: %d scrapes, %.3f s of exporter samples (%.6f .. %.6f), scrape-to-sample "
      "lag %.1f .. %.1f ms" % (len(st), t2 - t1, t1, t2,
                               1000 * min(s - t for s, t in zip(scrape_t, tick_t)),
                               1000 * max(s - t for s, t in zip(scrape_t, tick_t))))
print("# Prometheus sum(rate(carma_energy_joules_total{domain=\"total\"}[10s])) = %.3f W" % prom_w)
print("# plant truth over the same samples                                    = %.3f W" % truth_w)
print("# difference %+.3f %% (tolerance %.0f %%)" % (100 * diff, 100 * TOL))
bad = abs(diff) > TOL
for series in energy:
    ch = series["metric"].get("channel")
    vals = series["values"]
    e1, e2 = float(vals[0][1]), float(vals[-1][1])
    # the exporter's sample time of each of these scrapes
    by_scrape = dict((float(s), float(v)) for s, v in st)
    s1, s2 = by_scrape.get(float(vals[0][0])), by_scrape.get(float(vals[-1][0]))
    if ch not in CHANNELS or s1 is None or s2 is None:
        print("FAIL channel %s: no matching sample times" % ch)
        bad = True
        continue
    te = truth_at(CHANNELS[ch], s2) - truth_at(CHANNELS[ch], s1)
    d = (e2 - e1 - te) / te
    print("# %-20s carma %9.3f J, truth %9.3f J over %.3f s: %+.3f %%"
          % (ch, e2 - e1, te, s2 - s1, 100 * d))
    if abs(d) > TOL:
        bad = True
print("# up: %s" % ",".join(v for _, v in ups[0]["values"]) if ups else "# up: none")
sys.exit(1 if bad else 0)
EOF
check "$rc" "Prometheus rate of the exporter's energy agrees with the plant's truth within 2 %"
kill -TERM "$PROM_PID"
wait "$PROM_PID" 2>/dev/null
stop_exporter TERM
stop_plant

[ "$failures" -eq 0 ] || fail "$failures check(s) failed"
echo "all checks passed"
