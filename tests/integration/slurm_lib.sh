# shellcheck shell=bash
# A one-node Slurm cluster on localhost, for tests/integration/test_slurm.sh and for trying
# examples/slurm/carma.sbatch by hand:
#
#   . tests/integration/slurm_lib.sh
#   slurm_start || exit 1        # exports SLURM_CONF: sbatch, srun, sinfo, scontrol use it
#   sbatch --wait examples/slurm/carma.sbatch
#   slurm_stop                   # cancels what is left, stops every daemon by its pid
#
# Everything lives in one temporary directory (SLURM_DIR): slurm.conf, the controller's state,
# slurmd's spool, the logs and, with munge, a munged of its own (its own key and socket).
# Nothing outside it is written, nothing is installed, and the machine's own Slurm
# configuration is not used (Slurm looks for its other files, cgroup.conf, gres.conf..., beside
# slurm.conf; the SPANK plugin list is an empty file there): the daemons listen on free high
# ports found at start.
#
# Authentication (CARMA_SLURM_AUTH): `munge` (a munged started here), `none` (auth/none and
# cred/none: Slurm 22.05, Debian 12's, has them; later releases may not), or `auto` (the
# default: munge when munged is installed, else none).
#
# Slurm needs root here: slurmd starts every job through slurmstepd, which switches to the
# submitting user. The daemons run as root with SlurmUser=root.
#
# Functions return non-zero on failure after printing the daemons' logs on stderr; they never
# exit the calling shell. Variables set by slurm_start: SLURM_DIR, SLURM_CONF (exported),
# SLURM_NODE (the node's name), SLURMCTLD_PID, SLURMD_PID, MUNGED_PID (empty without munge),
# SLURM_AUTH (munge or none); by slurm_stop: SLURM_LEFTOVERS. slurm_start unsets the SLURM_*,
# SBATCH_*, SRUN_*, SALLOC_* variables of the calling shell (an outer job's).

SLURM_DIR=${SLURM_DIR:-}
SLURM_NODE=${SLURM_NODE:-}
SLURMCTLD_PID=${SLURMCTLD_PID:-}
SLURMD_PID=${SLURMD_PID:-}
MUNGED_PID=${MUNGED_PID:-}
SLURM_AUTH=${SLURM_AUTH:-}
SLURM_LEFTOVERS=${SLURM_LEFTOVERS:-}
_slurm_session=()

# the programs the cluster and the tests use
SLURM_PROGRAMS=(slurmctld slurmd sbatch srun scontrol sinfo squeue scancel)

# _slurm_which PROG: print PROG's path (PATH, then the sbin directories a non-root PATH lacks).
_slurm_which() {
    local d
    command -v "$1" 2>/dev/null && return 0
    for d in /usr/sbin /sbin /usr/local/sbin; do
        [ -x "$d/$1" ] && {
            echo "$d/$1"
            return 0
        }
    done
    return 1
}

# slurm_missing: print the Slurm programs that are not installed (nothing when all are).
slurm_missing() {
    local p miss=()
    for p in "${SLURM_PROGRAMS[@]}"; do
        _slurm_which "$p" >/dev/null || miss+=("$p")
    done
    [ ${#miss[@]} -eq 0 ] || echo "${miss[*]}"
}

# slurm_logs: print slurm.conf and every log of the cluster on stderr: the last 150 lines of
# each daemon's log file, the last 20 of its stdout/stderr (where a daemon that cannot read
# its configuration says why, before it opens its log file).
slurm_logs() {
    local f
    [ -n "$SLURM_DIR" ] && [ -d "$SLURM_DIR" ] || return 0
    for f in "$SLURM_DIR"/slurm.conf "$SLURM_DIR"/*.log "$SLURM_DIR"/*.out; do
        [ -s "$f" ] || continue
        case $f in
        *.log)
            echo "----- $f (last 150 lines)"
            tail -n 150 "$f"
            ;;
        *.out)
            echo "----- $f (stdout and stderr, last 20 lines)"
            tail -n 20 "$f"
            ;;
        *)
            echo "----- $f"
            cat "$f"
            ;;
        esac
    done >&2
    if [ -n "$SLURMCTLD_PID" ] && kill -0 "$SLURMCTLD_PID" 2>/dev/null; then
        {
            echo "----- sinfo -N -l; squeue -l"
            timeout 5 sinfo -N -l 2>&1
            timeout 5 squeue -l 2>&1
        } >&2
    fi
}

# _slurm_fail MSG: report MSG and the logs, stop the cluster, return 1.
_slurm_fail() {
    echo "slurm_lib: $*" >&2
    slurm_logs
    slurm_stop
    return 1
}

# _slurm_free_ports N: print N distinct TCP ports that are free now (bound once, then closed).
_slurm_free_ports() {
    /usr/bin/python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# slurm_free_port: print one free TCP port (for a test's own server, e.g. the exporter).
slurm_free_port() {
    _slurm_free_ports 1
}

# _slurm_alive NAME PID: 0 when PID runs; else 1 with a message.
_slurm_alive() {
    kill -0 "$2" 2>/dev/null && return 0
    echo "slurm_lib: $1 (pid $2) exited" >&2
    return 1
}

# _slurm_start_munged: a munged of our own, key and socket in SLURM_DIR. Sets MUNGED_PID.
_slurm_start_munged() {
    local munged m i
    munged=$(_slurm_which munged) || return 1
    m="$SLURM_DIR/munge"
    mkdir -m 711 "$m" || return 1
    # a 1024-byte random key, readable by its owner only (munged refuses anything looser)
    head -c 1024 /dev/urandom >"$m/munge.key" && chmod 400 "$m/munge.key" || return 1
    CARMA_SLURM_CLUSTER=$SLURM_DIR "${_slurm_session[@]}" "$munged" --foreground --force \
        --key-file="$m/munge.key" --socket="$m/munge.socket" --pid-file="$m/munged.pid" \
        --log-file="$SLURM_DIR/munged.log" --seed-file="$m/munged.seed" --num-threads=2 \
        >"$SLURM_DIR/munged.out" 2>&1 &
    MUNGED_PID=$!
    for ((i = 0; i < 100; i++)); do
        if [ -S "$m/munge.socket" ]; then
            # a credential made and read back through this munged
            if munge -n -S "$m/munge.socket" 2>/dev/null |
                unmunge -S "$m/munge.socket" >/dev/null 2>&1; then
                return 0
            fi
        fi
        _slurm_alive munged "$MUNGED_PID" || return 1
        sleep 0.1
    done
    echo "slurm_lib: munged did not answer on $m/munge.socket within 10 s" >&2
    return 1
}

# slurm_start: start slurmctld and slurmd (and munged) on this host, wait until the node is
# idle. Returns 1 (logs shown, everything stopped) on failure. CARMA_SLURM_START_TIMEOUT
# (seconds, default 30) bounds the wait.
slurm_start() {
    local miss host node ports ctld_port slurmd_port cpus i state timeout_s plugindir
    local ctld slurmd auth_lines
    miss=$(slurm_missing)
    if [ -n "$miss" ]; then
        echo "slurm_lib: not installed: $miss (Debian: apt-get install slurm-wlm)" >&2
        return 1
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "slurm_lib: a Slurm cluster needs root (slurmd starts jobs through slurmstepd)" >&2
        return 1
    fi
    ctld=$(_slurm_which slurmctld)
    slurmd=$(_slurm_which slurmd)
    timeout_s=${CARMA_SLURM_START_TIMEOUT:-30}
    # The daemons must not get the signals sent to the caller's process group (timeout(1)
    # stopping a test): slurm_stop stops them in order, jobs first. A shell with job control
    # gives every background job a process group of its own; without it (a script), setsid
    # puts each daemon in a session of its own (it execs in place: $! stays the daemon's pid).
    if [[ $- == *m* ]]; then
        _slurm_session=()
    else
        _slurm_session=(setsid)
    fi

    # Nothing of an outer Slurm job (the tests may run inside one) may reach this cluster.
    # shellcheck disable=SC2046 # one variable name per word
    unset $(compgen -e | grep -E '^(SLURM|SBATCH|SRUN|SALLOC|SQUEUE|SINFO|SCONTROL)_')

    SLURM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/carma-slurm.XXXXXX") || return 1
    if ! chmod 755 "$SLURM_DIR" || ! mkdir "$SLURM_DIR/state" "$SLURM_DIR/spool"; then
        _slurm_fail "cannot set up $SLURM_DIR"
        return 1
    fi

    # The controller's host must be this machine's short name (slurmctld checks it); the node
    # takes it too when it resolves (jobs then see it as SLURM_JOB_NODELIST and reach it by
    # name), else `localhost`. Both are reached at 127.0.0.1.
    host=$(hostname -s 2>/dev/null || hostname)
    node=$host
    if ! getent hosts "$host" >/dev/null 2>&1; then
        node=localhost
    fi
    SLURM_NODE=$node
    ports=$(_slurm_free_ports 2) || {
        _slurm_fail "no free TCP ports"
        return 1
    }
    read -r ctld_port slurmd_port <<<"$ports"
    cpus=$(nproc)

    case ${CARMA_SLURM_AUTH:-auto} in
    auto)
        if _slurm_which munged >/dev/null && command -v munge >/dev/null &&
            command -v unmunge >/dev/null; then
            SLURM_AUTH=munge
        else
            SLURM_AUTH=none
        fi
        ;;
    munge | none) SLURM_AUTH=$CARMA_SLURM_AUTH ;;
    *)
        echo "slurm_lib: CARMA_SLURM_AUTH must be auto, munge or none" >&2
        return 1
        ;;
    esac
    if [ "$SLURM_AUTH" = munge ]; then
        _slurm_start_munged || {
            _slurm_fail "cannot start munged"
            return 1
        }
        auth_lines="AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SLURM_DIR/munge/munge.socket"
    else
        auth_lines="AuthType=auth/none
CredType=cred/none"
    fi

    # PluginDir is Slurm's compiled-in default; MailProg must exist (there is no mail here).
    plugindir=""
    [ -n "${CARMA_SLURM_PLUGINDIR:-}" ] && plugindir="PluginDir=$CARMA_SLURM_PLUGINDIR"
    : >"$SLURM_DIR/plugstack.conf"
    cat >"$SLURM_DIR/slurm.conf" <<EOF
# carma's one-node test cluster (tests/integration/slurm_lib.sh)
ClusterName=carmatest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
$auth_lines
$plugindir
PlugStackConfig=$SLURM_DIR/plugstack.conf
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
KillWait=5
MinJobAge=600
InactiveLimit=0
NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=64 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF="$SLURM_DIR/slurm.conf"

    # -D: in the foreground (we hold the pid); -c: start from a clean state.
    # CARMA_SLURM_CLUSTER marks the daemons and their job steps (see slurm_procs).
    CARMA_SLURM_CLUSTER=$SLURM_DIR "${_slurm_session[@]}" "$ctld" -D -c -f "$SLURM_CONF" \
        >"$SLURM_DIR/slurmctld.out" 2>&1 &
    SLURMCTLD_PID=$!
    CARMA_SLURM_CLUSTER=$SLURM_DIR "${_slurm_session[@]}" "$slurmd" -D -c -f "$SLURM_CONF" \
        -N "$node" >"$SLURM_DIR/slurmd.out" 2>&1 &
    SLURMD_PID=$!

    for ((i = 0; i < timeout_s * 5; i++)); do
        _slurm_alive slurmctld "$SLURMCTLD_PID" || {
            _slurm_fail "slurmctld exited at start"
            return 1
        }
        _slurm_alive slurmd "$SLURMD_PID" || {
            _slurm_fail "slurmd exited at start"
            return 1
        }
        state=$(timeout 5 sinfo -h -N -n "$node" -o %T 2>/dev/null)
        case $state in
        idle) return 0 ;;
        drain* | down*)
            _slurm_fail "node $node is $state: $(timeout 5 scontrol show node "$node" |
                grep -i reason)"
            return 1
            ;;
        esac
        sleep 0.2
    done
    _slurm_fail "node $node not idle within ${timeout_s} s (state: '${state:-no answer}')"
    return 1
}

# _slurm_stop_pid NAME PID: SIGTERM PID, wait up to 10 s, then SIGKILL.
_slurm_stop_pid() {
    local i
    [ -n "$2" ] || return 0
    kill -0 "$2" 2>/dev/null || {
        wait "$2" 2>/dev/null
        return 0
    }
    kill -TERM "$2" 2>/dev/null
    for ((i = 0; i < 100; i++)); do
        kill -0 "$2" 2>/dev/null || break
        # reap it when it is our child (a zombie answers kill -0)
        if [ "$(ps -o stat= -p "$2" 2>/dev/null)" = Z ]; then
            break
        fi
        sleep 0.1
    done
    if kill -0 "$2" 2>/dev/null && [ "$(ps -o stat= -p "$2" 2>/dev/null)" != Z ]; then
        echo "slurm_lib: $1 (pid $2) ignored SIGTERM for 10 s: SIGKILL" >&2
        kill -KILL "$2" 2>/dev/null
    fi
    wait "$2" 2>/dev/null
    return 0
}

# slurm_procs: print "PID COMMAND" of every live process of this cluster other than the
# daemons themselves (and slurmctld's own helper, slurmscriptd): job steps (slurmstepd), job
# scripts and what they started. A process is the cluster's when its environment holds
# CARMA_SLURM_CLUSTER=SLURM_DIR (set for the daemons), or SLURM_CONF naming this cluster's
# slurm.conf with a SLURM_JOB_ID (what a job's processes inherit), or when its working
# directory or an open file is below SLURM_DIR (slurmstepd, which writes its process title
# over its environment, keeps slurmd.log open).
slurm_procs() {
    [ -n "${SLURM_CONF:-}" ] && [ -n "$SLURM_DIR" ] || return 0
    /usr/bin/python3 - "$SLURM_DIR" "$SLURM_CONF" "$$ $BASHPID" \
        "$SLURMCTLD_PID $SLURMD_PID $MUNGED_PID" <<'EOF'
import os, sys
cdir, conf, me, daemons = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
mark = ("CARMA_SLURM_CLUSTER=" + cdir).encode()
conf = ("SLURM_CONF=" + conf).encode()
skip = set(me) | set(daemons) | {str(os.getpid())}
for pid in os.listdir("/proc"):
    if not pid.isdigit() or pid in skip:
        continue
    try:
        env = open("/proc/%s/environ" % pid, "rb").read().split(b"\0")
        stat = open("/proc/%s/stat" % pid).read()
        cmd = open("/proc/%s/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] == "Z" or fields[1] in daemons:
        continue
    ours = mark in env or (conf in env and any(e.startswith(b"SLURM_JOB_ID=") for e in env))
    if not ours:
        try:
            links = [os.readlink("/proc/%s/cwd" % pid)]
            for fd in os.listdir("/proc/%s/fd" % pid):
                try:
                    links.append(os.readlink("/proc/%s/fd/%s" % (pid, fd)))
                except OSError:
                    pass
        except OSError:
            continue
        ours = any(l == cdir or l.startswith(cdir + "/") for l in links)
    if ours:
        print(pid, cmd.strip())
EOF
}

# slurm_stop: cancel the jobs still known to the cluster and wait (up to 15 s) until every
# process of theirs has ended, stop slurmd, slurmctld and munged by their pids (SIGTERM, then
# SIGKILL after 10 s), and remove SLURM_DIR (kept when CARMA_SLURM_KEEP=1). A process of the
# cluster still alive after that (see slurm_procs) is killed by its pid and listed in
# SLURM_LEFTOVERS (empty when there was none): a test fails on it. Safe to call twice, or
# after a failed start.
slurm_stop() {
    local jobs i left pid
    SLURM_LEFTOVERS=""
    if [ -n "$SLURMCTLD_PID" ] && kill -0 "$SLURMCTLD_PID" 2>/dev/null &&
        [ -n "${SLURM_CONF:-}" ]; then
        jobs=$(timeout 5 squeue -h -o %i 2>/dev/null)
        if [ -n "$jobs" ]; then
            echo "slurm_lib: cancelling jobs still there: ${jobs//$'\n'/ }" >&2
            # shellcheck disable=SC2086 # one job id per word
            timeout 5 scancel $jobs 2>/dev/null
            for ((i = 0; i < 75; i++)); do
                [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
                sleep 0.2
            done
            jobs=$(timeout 5 squeue -h -o '%i %T' 2>/dev/null)
            [ -z "$jobs" ] || echo "slurm_lib: jobs still listed at stop: $jobs" >&2
        fi
    fi
    # a finished job's slurmstepd takes a moment to end
    for ((i = 0; i < 50; i++)); do
        [ -z "$(slurm_procs)" ] && break
        sleep 0.1
    done
    _slurm_stop_pid slurmd "$SLURMD_PID"
    _slurm_stop_pid slurmctld "$SLURMCTLD_PID"
    _slurm_stop_pid munged "$MUNGED_PID"
    SLURMD_PID="" SLURMCTLD_PID="" MUNGED_PID=""
    left=$(slurm_procs)
    if [ -n "$left" ]; then
        echo "slurm_lib: processes of the cluster left behind, killed:" >&2
        echo "$left" >&2
        SLURM_LEFTOVERS=$(echo "$left" | tr '\n' ';')
        while read -r pid _; do
            kill -KILL "$pid" 2>/dev/null
        done <<<"$left"
    fi
    if [ -n "$SLURM_DIR" ] && [ -d "$SLURM_DIR" ]; then
        if [ "${CARMA_SLURM_KEEP:-0}" = 1 ]; then
            echo "slurm_lib: kept $SLURM_DIR" >&2
        else
            rm -rf "$SLURM_DIR"
        fi
    fi
    SLURM_DIR=""
    unset SLURM_CONF
    return 0
}
