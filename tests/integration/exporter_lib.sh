# shellcheck shell=bash disable=SC2034 # failures, EXP_PORT and EXP_URL are for the tests that source it
# exporter_lib.sh: what the exporter tests share (sourced after lib.sh): check, which records a
# failed expectation and goes on, and start_exporter / stop_exporter, which run one carma
# exporter on loopback (stopped by its pid by lib.sh's exit trap, on failure too).

failures=0
check() { # check COND_STATUS MSG: record a failed expectation and go on
    if [ "$1" -ne 0 ]; then
        echo "FAIL: $2" >&2
        failures=$((failures + 1))
    else
        echo "ok   $2"
    fi
}

# start_exporter NAME ARGS...: starts carma exporter ARGS on 127.0.0.1 with a free port (unless
# ARGS has --listen), waits for "listening on" and for /healthz to say ok. Sets EXP_PID,
# EXP_PORT, EXP_URL; stderr goes to NAME.err.
start_exporter() {
    local name=$1 i
    shift
    local listen=(--listen 127.0.0.1:0)
    case " $* " in *" --listen "*) listen=() ;; esac
    "$CARMA" exporter "$@" "${listen[@]}" 2>"$name.err" &
    EXP_PID=$!
    _cleanup_pids+=("$EXP_PID")
    local addr=
    for ((i = 0; i < 500; i++)); do
        addr=$(sed -n 's/^listening on \(.*:[0-9][0-9]*\)$/\1/p' "$name.err")
        [ -n "$addr" ] && break
        kill -0 "$EXP_PID" 2>/dev/null || fail "carma exporter $* exited: $(cat "$name.err")"
        sleep 0.01
    done
    [ -n "$addr" ] || fail "carma exporter $* did not say 'listening on' within 5 s"
    EXP_PORT=${addr##*:}
    case $addr in
    "[::]:"* | "0.0.0.0:"*) EXP_URL="http://127.0.0.1:$EXP_PORT" ;;
    *) EXP_URL="http://$addr" ;;
    esac
    for ((i = 0; i < 500; i++)); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$EXP_URL/healthz")" = 200 ] && return 0
        sleep 0.01
    done
    fail "carma exporter $*: /healthz not ok within 5 s"
}

# stop_exporter SIGNAL: sends SIGNAL to the exporter and checks that it exits with 0.
stop_exporter() {
    local rc=0
    kill "-$1" "$EXP_PID"
    wait "$EXP_PID" || rc=$?
    check "$rc" "exit status 0 after SIG$1 (got $rc)"
}
