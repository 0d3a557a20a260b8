#!/usr/bin/env bash
# carma exporter under a slow-client flood: one host cannot lock the others out.
#
# The exporter listens on its default form of address (:PORT, every interface); the flood
# (tests/fakes/slow_clients.py) and the scrapes go to 127.0.0.1 only, from source addresses in
# 127.0.0.0/8 (loopback on Linux: nothing leaves the machine).
#
# 1. One address: 2000 connections from 127.0.0.2, each sending its request one byte a second
#    and replaced when closed, for 13 s. Meanwhile a scrape every second from 127.0.0.1 and
#    from 127.0.0.2 itself: each is 200 within 5 s. Beside it, 40 slow connections from
#    127.0.0.3, under every reserve: the 10 s request deadline closes them (between 9.5 s and
#    11 s after their connect: the sweep's period and the flood's tick). No flood connection
#    lives past the deadline.
# 2. Many addresses: 2000 connections from 100 addresses (127.0.0.2-127.0.0.101, 20 each: under
#    the per-address limit), one in ten trickling a body instead of headers, for 13 s; scrapes
#    from 127.0.0.1 as in 1; the exporter holds at most 1024 connections.
# 3. Oversized request headers (40 KB in one header or in 2500, and 4 MB, which the client is
#    still sending when the answer comes) get 431 Request Header Fields Too Large and then the
#    end of the stream, not a reset; 8 KB are served.
#
# Bounded: 2000 connections at most, 13 s a flood, scrapes with curl --max-time 5. Every process
# started here is stopped by its pid (lib.sh's exit trap), on failure too.
# shellcheck source=lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

command -v curl >/dev/null || skip "curl is not installed"
FLOOD="$CARMA_SRC/tests/fakes/slow_clients.py"
need_file "$FLOOD"
# 2000 sockets here, ~1100 in the exporter (it raises its own soft limit)
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 2100 ] ||
    skip "ulimit -n is $(ulimit -n) (hard $(ulimit -Hn)): 2000 client sockets do not fit"

# shellcheck source=exporter_lib.sh
. "$CARMA_SRC/tests/integration/exporter_lib.sh"

"$CARMA" exporter --root "$CARMA_FIXTURES/intel-2s" --interval 100ms --listen :0 2>exp.err &
EXP_PID=$!
_cleanup_pids+=("$EXP_PID")
addr=
for ((i = 0; i < 500; i++)); do
    addr=$(sed -n 's/^listening on \(.*:[0-9][0-9]*\)$/\1/p' exp.err)
    [ -n "$addr" ] && break
    kill -0 "$EXP_PID" 2>/dev/null || fail "carma exporter exited: $(cat exp.err)"
    sleep 0.01
done
[ -n "$addr" ] || fail "carma exporter did not say 'listening on' within 5 s"
PORT=${addr##*:}
URL="http://127.0.0.1:$PORT"
for ((i = 0; i < 500; i++)); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/healthz")" = 200 ] && break
    sleep 0.01
done

# flood NAME ARGS...: runs slow_clients.py ARGS in the background for 13 s; sets FLOOD_PID.
flood() {
    local name=$1
    shift
    "$PY" "$FLOOD" --port "$PORT" --count 2000 --duration 13 --age-limit 11 "$@" \
        >"$name.json" 2>"$name.err" &
    FLOOD_PID=$!
    _cleanup_pids+=("$FLOOD_PID")
}

# scrapes NAME N [CURL_ARGS...]: N scrapes of /metrics a second apart (after 2 s of flood);
# appends "code seconds" lines to NAME.lat.
scrapes() {
    local name=$1 n=$2 i
    shift 2
    sleep 2
    for ((i = 0; i < n; i++)); do
        curl -s -o /dev/null --max-time 5 -w '%{http_code} %{time_total}\n' "$@" \
            "$URL/metrics" >>"$name.lat" || true # curl writes "000 TIME" when it fails
        sleep 1
    done
}

# judge NAME [ALLOWED]: every scrape in NAME.lat but at most ALLOWED (default 0) was 200;
# prints the latencies' median and maximum.
judge() {
    local name=$1 allowed=${2:-0} bad n
    n=$(wc -l <"$name.lat")
    bad=$(awk '$1 != 200' "$name.lat" | wc -l)
    check "$([ "$n" -ge 1 ] && [ "$bad" -le "$allowed" ] && echo 0 || echo 1)" \
        "$name: $n scrapes under the flood, $bad not 200 within 5 s (at most $allowed allowed)"
    sort -n -k2 "$name.lat" | awk -v name="$name" '{t[NR] = $2} END {
        printf "# %s: scrape latency median %.3f s, max %.3f s (%d scrapes)\n",
            name, t[int((NR + 1) / 2)], t[NR], NR }'
}

# flood_done NAME PID MIN_CONNECTED [MIN_AGE]: waits for the flood PID; checks that it made
# MIN_CONNECTED connections and that none outlived the 10 s request deadline (+1 s); with
# MIN_AGE, that the longest lived at least that long (closed by the deadline, not before).
flood_done() {
    local name=$1 pid=$2 rc=0
    wait "$pid" || rc=$?
    check "$rc" "$name: the flood ran (exit $rc: $(cat "$name.err"))"
    echo "# $name: $(cat "$name.json")"
    "$PY" - "$name.json" "$3" "${4:-0}" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
ok = (s["connected"] >= int(sys.argv[2]) and s["ages_over"] == 0
      and float(sys.argv[3]) <= s["max_age_s"] <= 11.0)
sys.exit(0 if ok else 1)
EOF
    check $? "$name: $3+ connections made, none lived past the 10 s request deadline"
}

# ---------------------------------------------------------------- 1. one address
# beside it, 40 slow connections from 127.0.0.3: under every reserve, so only the request
# deadline closes them (at 10 s; the flood lasts 13 s)
flood one --sources 127.0.0.2
f1=$FLOOD_PID
flood deadline --sources 127.0.0.3 --count 40 --burst 40
f2=$FLOOD_PID
scrapes one 8 &
s1=$!
scrapes one-same 8 --interface 127.0.0.2 &
s2=$!
wait "$s1" "$s2"
kill -0 "$f1" 2>/dev/null
check $? "one: the scrapes all ran while the flood did"
flood_done one "$f1" 2000
flood_done deadline "$f2" 40 9.5
judge one
# a scrape from the flood's own address can lose its place to 48 newer flood connections
# before its request is read (docs/usage.md): most, not all, must pass (0-1 of 8 lost as a rule,
# 1 once under the sanitizers, 3 once in a plain build under CI's load); scrapes from another
# address all must
judge one-same 3

# ---------------------------------------------------------------- 2. many addresses
flood many --sources 127.0.0.2-127.0.0.101 --body-every 10
scrapes many 8 &
s1=$!
sleep 6
nfd=$(find "/proc/$EXP_PID/fd" -mindepth 1 -maxdepth 1 -lname 'socket:*' 2>/dev/null | wc -l)
wait "$s1"
kill -0 "$FLOOD_PID" 2>/dev/null
check $? "many: the scrapes all ran while the flood did"
flood_done many "$FLOOD_PID" 2000
judge many
check "$([ "$nfd" -ge 100 ] && [ "$nfd" -le 1025 ] && echo 0 || echo 1)" \
    "many: the exporter held $nfd sockets mid-flood (at most 1024 connections and the listener)"

# ---------------------------------------------------------------- 3. oversized headers
# a raw client: the status line, then the end of the stream (EOF, not ECONNRESET)
"$PY" - "$PORT" <<'EOF' >big.out 2>&1
import socket, sys
port = int(sys.argv[1])
head = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
cases = [
    ("40 KB in one header", head + b"X-Big: " + b"a" * 40000 + b"\r\n\r\n"),
    ("40 KB in 2500 headers", head + b"".join(b"X-H%d: vvvvvvvvvv\r\n" % i for i in range(2500)) + b"\r\n"),
    ("4 MB in one header", head + b"X-Big: " + b"a" * 4000000 + b"\r\n\r\n"),
]
bad = 0
for name, req in cases:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    data, end = b"", "EOF"
    try:
        s.sendall(req)
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except OSError as e:
        end = repr(e)
    s.close()
    status = data.split(b"\r\n", 1)[0].decode(errors="replace")
    ok = status.startswith("HTTP/1.1 431 ") and end == "EOF"
    bad += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {status!r}, then {end}")
sys.exit(1 if bad else 0)
EOF
rc=$?
cat big.out
check "$rc" "oversized headers: 431 Request Header Fields Too Large, then the end of the stream (not a reset)"
ok8=$(head -c 8192 /dev/zero | tr '\0' a)
code=$(curl -sS -o /dev/null --max-time 5 -w '%{http_code}' -H "X-Ok: $ok8" "$URL/metrics")
check "$([ "$code" = 200 ] && echo 0 || echo 1)" "8 KB of headers: 200 (got $code)"

kill -0 "$EXP_PID" 2>/dev/null
check $? "the exporter is still running"
code=$(curl -s -o /dev/null --max-time 5 -w '%{http_code}' "$URL/healthz")
check "$([ "$code" = 200 ] && echo 0 || echo 1)" "/healthz after the floods (got $code)"
kill -TERM "$EXP_PID"
rc=0
wait "$EXP_PID" || rc=$?
check "$rc" "exit status 0 after SIGTERM (got $rc)"

[ "$failures" = 0 ] || fail "$failures checks failed"
echo "all exporter flood checks passed"
