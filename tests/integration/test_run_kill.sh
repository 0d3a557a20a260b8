#!/usr/bin/env bash
# carma run when bad luck strikes: a file size limit, a SIGKILL, a daemon that escapes.
# - Under `ulimit -f`, carma is not killed by SIGXFSZ: its writes fail (EFBIG) as on a full
#   disk; it says so, exits 1, leaves no workload running, samples.csv keeps whole rows only,
#   and `carma report` reads the run.
# - `kill -9` of carma run mid-run: within seconds no workload process is left (a supervisor
#   kills their process groups and, with cgroups, carma's cgroup, which it removes); with
#   cgroups that includes a daemon that left its workload's process group. Checked with and
#   (in a mount namespace without cgroup2, where unshare works) without cgroups.
# - Without cgroups, a daemon that double-forks, calls setsid and ignores SIGTERM is ended at
#   the end of the run (carma, its subreaper, inherited it) and named on stderr.
# Every wait is bounded; what a failed check leaves is killed by pid at exit.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

ROOT="$CARMA_FIXTURES/intel-2s"
here=$PWD
carma_pid=

# pid_of FILE: the pid FILE holds ("" unless a positive number: never 0, never a group)
pid_of() {
    local p
    p=$(cat "$1" 2>/dev/null)
    case $p in '' | *[!0-9]* | 0*) p= ;; esac
    printf '%s' "$p"
}

# kill_file FILE...: SIGKILL to the pid each FILE holds, and to its process group unless that
# is this test's
own_pgid=$(ps -o pgid= -p $$ | tr -d ' ')
kill_file() {
    local f p g
    for f in "$@"; do
        p=$(pid_of "$f")
        [ -n "$p" ] || continue
        g=$(ps -o pgid= -p "$p" 2>/dev/null | tr -d ' ')
        [ -n "$g" ] && [ "$g" != "$own_pgid" ] && [ "$g" -gt 1 ] && kill -KILL -- "-$g" 2>/dev/null
        kill -KILL "$p" 2>/dev/null
    done
    return 0
}

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_left() {
    kill_file "$here"/*.pid "$here"/*.child
    [ -n "$carma_pid" ] && kill -KILL "$carma_pid" 2>/dev/null
    # a cgroup a failed check left (empty once its processes are killed)
    [ -n "${dir:-}" ] && [ -d "$dir" ] && sleep 0.2 && rmdir "$dir"/*/ "$dir" 2>/dev/null
    return 0
}
trap 'cleanup_left; _lib_cleanup' EXIT

# check_re FILE REGEX MSG: FILE has a line matching REGEX (extended)
check_re() {
    if ! grep -qE -- "$2" "$1" 2>/dev/null; then
        check_fail "$3: /$2/ not found in $1"
        show "$1" >&2
    fi
}

# alive PID: the process runs (not gone, not a zombie)
alive() {
    local st
    [ -n "$1" ] || return 1
    st=$(sed -n 's/^[0-9]* (.*) \(.\) .*/\1/p' "/proc/$1/stat" 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ]
}

# wait_gone SECONDS PID...: true once none of the PIDs is alive
wait_gone() {
    local n=$(($1 * 20)) p left i
    shift
    for ((i = 0; i < n; i++)); do
        left=0
        for p in "$@"; do alive "$p" && left=1; done
        [ "$left" = 0 ] && return 0
        sleep 0.05
    done
    return 1
}

# wait_files SECONDS FILE...: true once every FILE is there and not empty
wait_files() {
    local n=$(($1 * 20)) f ok i
    shift
    for ((i = 0; i < n; i++)); do
        ok=1
        for f in "$@"; do [ -s "$f" ] || ok=0; done
        [ "$ok" = 1 ] && return 0
        sleep 0.05
    done
    return 1
}

# nocg CMD...: CMD in a mount namespace where no cgroup2 hierarchy is mounted (no cgroups)
# shellcheck disable=SC2016 # for the inner shell
UMOUNT_CG='for m in $(awk '\''$0 ~ / - cgroup2 / { print $5 }'\'' /proc/self/mountinfo); do
    umount -l "$m" || exit 99; done; exec "$@"'
nocg() {
    unshare -m --propagation private sh -c "$UMOUNT_CG" nocg "$@"
}
have_nocg=0
[ "$(nocg grep -c ' - cgroup2 ' /proc/self/mountinfo 2>/dev/null)" = 0 ] && have_nocg=1

# sleeper.sh NAME [SECONDS]: a workload of two processes (NAME.pid, NAME.child), 1.5 s
cat >sleeper.sh <<'EOF'
echo $$ >"$1.pid"
sleep 60 &
echo $! >"$1.child"
sleep "${2:-1.5}"
kill $!
EOF

# ---------------------------------------------------------------- ulimit -f
cat >fsize.json <<EOF
{"experiment_name": "fsize", "workloads": [
  {"name": "a", "script": "sh", "args": ["$here/sleeper.sh", "fs"], "cwd": "$here"}
], "monitoring": {"interval": "5ms", "baseline_s": 0}}
EOF
# stderr through a pipe: a file would be under the limit too
(
    ulimit -f 16
    exec timeout -s KILL 60 "$CARMA" run --root "$ROOT" -o runs-fsize fsize.json 2>&1 >fsize.out
) | head -c 65536 >fsize.err
rc=${PIPESTATUS[0]}
[ "$rc" = 153 ] && check_fail "ulimit -f: carma was killed by SIGXFSZ (exit 153)"
check_eq "$rc" 1 "ulimit -f: carma run's exit status"
check_re fsize.err 'samples\.csv: [0-9]+ rows lost to: File too large$' \
    "ulimit -f: what was lost, said"
wait_gone 3 "$(pid_of fs.pid)" "$(pid_of fs.child)" ||
    check_fail "ulimit -f: a workload process outlives carma"
rd=$(head -n 1 fsize.out)
if [ -n "$rd" ] && [ -f "$rd/samples.csv" ]; then
    size=$(stat -c %s "$rd/samples.csv")
    [ "$size" -le 16384 ] || check_fail "samples.csv is $size bytes, over the 16 KiB limit"
    check_py "ulimit -f: samples.csv keeps whole rows" '
text = open(sys.argv[1] + "/samples.csv", newline="").read()
assert text.endswith("\r\n"), repr(text[-60:])
rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
assert len(rows) > 2, len(rows)
for k, r in enumerate(rows):
    assert len(r) == 9, (k, r)
' "$rd"
    "$CARMA" report "$rd" >report.out 2>report.err ||
        check_fail "carma report refuses the run written under ulimit -f: $(head -n 3 report.err)"
else
    check_fail "ulimit -f: no run directory ($(head -n 3 fsize.err))"
fi
kill_file fs.pid fs.child

# ---------------------------------------------------------------- kill -9
# escape.sh NAME: a daemon out of the workload's process group and session, deaf to TERM, HUP
# and INT, blocked on a FIFO (no child of its own); NAME.pid
cat >escape.sh <<'EOF'
( setsid sh -c 'trap "" TERM HUP INT; echo $$ >"$1.pid"; exec 3<>"$1.fifo"; read x <&3' esc "$1" & )
EOF
mkfifo esc9.fifo || fail mkfifo
cat >kill.json <<EOF
{"experiment_name": "kill9", "workloads": [
  {"name": "a", "script": "sh", "args": ["$here/sleeper.sh", "k1", "30"], "cwd": "$here"},
  {"name": "b", "script": "sh",
   "args": ["-c", "sh $here/escape.sh esc9; sh $here/sleeper.sh k2 30"], "cwd": "$here"}
], "monitoring": {"interval": "50ms", "baseline_s": 0}}
EOF
# kill9 NAME [nocg]: starts carma run, waits for its workloads, kills carma with SIGKILL and
# checks that they die within 5 s; KILL9_CG: the cgroup workload a was in ("" for none)
kill9() {
    local name=$1 mode=${2:-} cg f p i
    rm -f k1.pid k1.child k2.pid k2.child esc9.pid
    if [ "$mode" = nocg ]; then
        # exec: $! is carma's pid (unshare and sh exec in turn)
        (exec unshare -m --propagation private sh -c "$UMOUNT_CG" nocg "$CARMA" run \
            --root "$ROOT" -o "runs-$name" kill.json) >"$name.out" 2>"$name.err" &
    else
        "$CARMA" run --root "$ROOT" -o "runs-$name" kill.json >"$name.out" 2>"$name.err" &
    fi
    carma_pid=$!
    local want=(k1.pid k1.child k2.pid k2.child esc9.pid)
    wait_files 10 "${want[@]}" || {
        check_fail "$name: the workloads did not start: $(head -n 3 "$name.err")"
        return
    }
    [ "$(readlink "/proc/$carma_pid/exe")" = "$(readlink -f "$CARMA")" ] ||
        check_fail "$name: $carma_pid is not carma"
    local pids=()
    for f in "${want[@]}"; do
        # without cgroups, a process that left its workload's process group survives a
        # SIGKILL of carma (docs/usage.md): not checked
        [ "$mode" = nocg ] && [ "$f" = esc9.pid ] && continue
        pids+=("$(pid_of "$f")")
    done
    cg=$(sed -n 's/^0:://p' "/proc/$(pid_of k1.pid)/cgroup" 2>/dev/null)
    case $cg in */carma-*) ;; *) cg= ;; esac
    kill -KILL "$carma_pid"
    wait "$carma_pid" 2>/dev/null
    carma_pid=
    if ! wait_gone 5 "${pids[@]}"; then
        local left=()
        for p in "${pids[@]}"; do alive "$p" && left+=("$p ($(cat "/proc/$p/comm" 2>/dev/null))"); done
        check_fail "$name: 5 s after SIGKILL of carma, still running: ${left[*]}"
    fi
    # the supervisor says it after the kills: the processes may be gone a moment before
    for ((i = 0; i < 50; i++)); do
        grep -qE '^carma: carma \(pid [0-9]+\) ended with its workloads running' "$name.err" && break
        sleep 0.1
    done
    check_re "$name.err" '^carma: carma \(pid [0-9]+\) ended with its workloads running: SIGKILL to 2 process groups' \
        "$name: the supervisor says what it did"
    KILL9_CG=$cg
    kill_file "${want[@]}"
}

kill9 k9
if [ -n "$KILL9_CG" ]; then
    mnt=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
    dir=$mnt${KILL9_CG%/*} # carma-<pid>, the parent of the workload's own cgroup
    for ((i = 0; i < 60; i++)); do
        [ -e "$dir" ] || break
        sleep 0.05
    done
    [ -e "$dir" ] && check_fail "kill -9: carma's cgroup $dir is left behind"
    check_grep k9.err "every process of cgroup $dir (removed)" "kill -9: the cgroup, said"
else
    note "no cgroups here: kill -9 with cgroups (and the escaped daemon) is not checked"
fi

if [ "$have_nocg" = 1 ]; then
    kill9 k9nocg nocg
    check_no_grep k9nocg.err "cgroup" "kill -9 without cgroups: no cgroup named"
else
    note "cannot hide cgroup v2 (unshare -m): kill -9 without cgroups is not checked"
fi

# ---------------------------------------------------------------- kill -9 of carma stat
rm -f st.pid st.child
"$CARMA" stat --root "$ROOT" -- sh sleeper.sh st 30 >stat9.out 2>stat9.err &
carma_pid=$!
if wait_files 10 st.pid st.child; then
    kill -KILL "$carma_pid"
    wait "$carma_pid" 2>/dev/null
    carma_pid=
    wait_gone 5 "$(pid_of st.pid)" "$(pid_of st.child)" ||
        check_fail "kill -9 of carma stat: the command's processes still run 5 s later"
    check_re stat9.err '^carma: carma \(pid [0-9]+\) ended with its workloads running: SIGKILL to 1 process group' \
        "kill -9 of carma stat: the supervisor says what it did"
else
    check_fail "carma stat did not start its command: $(head -n 3 stat9.err)"
fi
kill_file st.pid st.child

# ---------------------------------------------------------------- the escaped daemon
if [ "$have_nocg" = 1 ]; then
    cat >daemon.sh <<'EOF'
#!/bin/sh
trap '' TERM HUP INT
echo $$ >"$1.pid"
exec 3<>"$1.fifo"
read x <&3
EOF
    chmod +x daemon.sh
    mkfifo escd.fifo || fail mkfifo
    cat >start.sh <<'EOF'
( setsid ./daemon.sh escd </dev/null >/dev/null 2>&1 & )
for i in 1 2 3 4 5 6 7 8 9 10; do [ -s escd.pid ] && break; sleep 0.1; done
EOF
    cat >daemon.json <<EOF
{"experiment_name": "daemon", "workloads": [
  {"name": "d", "script": "sh", "args": ["$here/start.sh"], "cwd": "$here"}
], "monitoring": {"interval": "50ms", "baseline_s": 0}}
EOF
    t0=$(date +%s.%N)
    nocg timeout -s KILL 60 "$CARMA" run --root "$ROOT" -o runs-daemon --grace 1s daemon.json \
        >daemon.out 2>daemon.err
    rc=$?
    t1=$(date +%s.%N)
    check_eq "$rc" 0 "escaped daemon: carma run's exit status"
    d=$(pid_of escd.pid)
    if [ -z "$d" ]; then
        check_fail "the daemon did not start: $(head -n 3 daemon.err)"
    else
        alive "$d" && check_fail "the daemon (pid $d) outlives the run"
        check_grep daemon.err "carma: 1 process escaped its workload's process group: pid $d (daemon.sh): killed" \
            "escaped daemon: said on stderr"
    fi
    awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 15) }' ||
        check_fail "escaped daemon: the run took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s"
else
    note "cannot hide cgroup v2 (unshare -m): the escaped daemon is not checked"
fi

cli_done
