# shellcheck shell=bash
# A one-node Slurm cluster on localhost (or an N-node one in network namespaces, below), for
# tests/integration/test_slurm.sh, test_slurm_2node.sh and for trying
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
# `slurm_start N` (N >= 2) makes an N-node cluster on this one machine: a network namespace
# per node and one for the controller (cms<PID>-head, cms<PID>-1..N), joined by a bridge in
# the head namespace (10.232.0.1, nodes 10.232.0.11..), one slurmd per node namespace
# started as `slurmd -N cnI`, each with NodeAddr its namespace's address. Every daemon also
# runs in a mount namespace of its own (unshare) where SLURM_DIR/hosts is bind-mounted on
# /etc/hosts, so that cn1..cnN and the controller resolve to those addresses in the job and
# nowhere else; with CARMA_SLURM_BIND="SRC:DST" (%n in SRC: the node's name) each node also
# sees its own SRC at DST. The commands of the test (sbatch, squeue, scontrol...) must run in
# the head namespace: prefix them with "${SLURM_EXEC[@]}" (empty for one node). Nothing of
# the root namespace is changed; slurm_stop deletes the namespaces (those left by a run that
# was SIGKILLed are deleted by the next slurm_start N). Variables: SLURM_NODES (the node
# names), SLURMD_PIDS (every slurmd), SLURM_NETNS (the namespaces made), SLURM_EXEC.
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
SLURMD_PIDS=()
SLURM_NODES=()
SLURM_NETNS=()
SLURM_EXEC=()
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
            timeout 5 "${SLURM_EXEC[@]}" sinfo -N -l 2>&1
            timeout 5 "${SLURM_EXEC[@]}" squeue -l 2>&1
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

# _slurm_write_nsexec: SLURM_DIR/nsexec, a script: `nsexec NS HOST BIND... -- CMD...` execs
# CMD in network namespace NS, in a UTS namespace of its own named HOST (- keeps this
# machine's name: the controller's host must be it), and in a mount namespace of its own
# where SLURM_DIR/hosts is bind-mounted on /etc/hosts and each BIND "SRC:DST" on DST. Every
# step execs: the pid of `nsexec ... &` is CMD's.
_slurm_write_nsexec() {
    cat >"$SLURM_DIR/nsexec" <<EOF &&
#!/bin/sh
ns=\$1
shift
exec nsenter --net="/run/netns/\$ns" unshare --mount --uts --propagation private sh -c '
    [ "\$2" = - ] || hostname "\$2" || exit 126
    b=\$1
    shift 2
    set -- "\$b" "\$@"
    while [ "\$1" != -- ]; do
        mount --bind "\${1%%:*}" "\${1#*:}" || exit 126
        shift
    done
    shift
    exec "\$@"' sh "$SLURM_DIR/hosts:/etc/hosts" "\$@"
EOF
        chmod 755 "$SLURM_DIR/nsexec"
}

# _slurm_make_netns N: the head namespace with a bridge (10.232.0.1/24) and N node namespaces
# on it (10.232.0.1I), veth pairs made inside the namespaces; SLURM_DIR/hosts naming them.
_slurm_make_netns() {
    local n=$1 i ns tag=cms$$ p
    if ! command -v ip >/dev/null || ! command -v nsenter >/dev/null ||
        ! command -v unshare >/dev/null; then
        echo "slurm_lib: $1 nodes need ip (iproute2), nsenter and unshare (util-linux)" >&2
        return 1
    fi
    # namespaces of a run that was SIGKILLed (its shell's pid gone): what runs there, then them
    for ns in $(ip netns list 2>/dev/null | grep -o '^cms[0-9]*-[a-z0-9]*'); do
        p=${ns#cms}
        p=${p%%-*}
        kill -0 "$p" 2>/dev/null && continue
        for i in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$i" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    ip netns add "$tag-head" || return 1
    SLURM_NETNS+=("$tag-head")
    ip -n "$tag-head" link set lo up &&
        ip -n "$tag-head" link add br0 type bridge &&
        ip -n "$tag-head" addr add 10.232.0.1/24 dev br0 &&
        ip -n "$tag-head" link set br0 up || return 1
    for ((i = 1; i <= n; i++)); do
        ns="$tag-$i"
        ip netns add "$ns" || return 1
        SLURM_NETNS+=("$ns")
        ip -n "$ns" link set lo up &&
            ip -n "$tag-head" link add "v$i" type veth peer name eth0 netns "$ns" &&
            ip -n "$tag-head" link set "v$i" master br0 &&
            ip -n "$tag-head" link set "v$i" up &&
            ip -n "$ns" addr add "10.232.0.$((10 + i))/24" dev eth0 &&
            ip -n "$ns" link set eth0 up || return 1
    done
    return 0
}

# slurm_start [N]: start slurmctld and slurmd (and munged) on this host, wait until the node is
# idle; with N >= 2, an N-node cluster in network namespaces (above). Returns 1 (logs shown,
# everything stopped) on failure. CARMA_SLURM_START_TIMEOUT (seconds, default 30) bounds the
# wait.
slurm_start() {
    local miss host node ports ctld_port slurmd_port i state timeout_s plugindir
    local ctld slurmd auth_lines nnodes=${1:-1} ctld_addr node_lines nodelist want bind pid
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
    SLURMD_PIDS=() SLURM_NODES=() SLURM_NETNS=() SLURM_EXEC=()
    if [ "$nnodes" -gt 1 ]; then
        _slurm_make_netns "$nnodes" || {
            _slurm_fail "cannot make the network namespaces of $nnodes nodes"
            return 1
        }
        _slurm_write_nsexec || {
            _slurm_fail "cannot write $SLURM_DIR/nsexec"
            return 1
        }
        SLURM_EXEC=("$SLURM_DIR/nsexec" "${SLURM_NETNS[0]}" - --)
    fi

    # The controller's host must be this machine's short name (slurmctld checks it); the node
    # takes it too when it resolves (jobs then see it as SLURM_JOB_NODELIST and reach it by
    # name), else `localhost`. Both are reached at 127.0.0.1.
    host=$(hostname -s 2>/dev/null || hostname)
    node=$host
    if ! getent hosts "$host" >/dev/null 2>&1; then
        node=localhost
    fi
    ctld_addr=127.0.0.1
    node_lines="NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=64 State=UNKNOWN"
    nodelist=$node
    SLURM_NODES=("$node")
    if [ "$nnodes" -gt 1 ]; then
        # cn1..cnN at 10.232.0.11.., the controller at 10.232.0.1, in every daemon's /etc/hosts
        ctld_addr=10.232.0.1
        node=cn1
        SLURM_NODES=()
        node_lines=""
        printf '127.0.0.1 localhost\n%s %s\n' "$ctld_addr" "$host" >"$SLURM_DIR/hosts"
        for ((i = 1; i <= nnodes; i++)); do
            SLURM_NODES+=("cn$i")
            printf '10.232.0.%d cn%d\n' $((10 + i)) "$i" >>"$SLURM_DIR/hosts"
            node_lines+="NodeName=cn$i NodeHostname=cn$i NodeAddr=10.232.0.$((10 + i)) CPUs=$(nproc) RealMemory=64 State=UNKNOWN
"
            mkdir "$SLURM_DIR/spool-cn$i" || return 1
        done
        nodelist="cn[1-$nnodes]"
    fi
    SLURM_NODE=$node
    ports=$(_slurm_free_ports 2) || {
        _slurm_fail "no free TCP ports"
        return 1
    }
    read -r ctld_port slurmd_port <<<"$ports"

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
# carma's test cluster (tests/integration/slurm_lib.sh)
ClusterName=carmatest
SlurmctldHost=$host($ctld_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
$auth_lines
$plugindir
PlugStackConfig=$SLURM_DIR/plugstack.conf
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool$([ "$nnodes" -gt 1 ] && echo -%n)
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd$([ "$nnodes" -gt 1 ] && echo -%n).pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd$([ "$nnodes" -gt 1 ] && echo -%n).log
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
$node_lines
PartitionName=debug Nodes=$nodelist Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF="$SLURM_DIR/slurm.conf"

    # -D: in the foreground (we hold the pid); -c: start from a clean state.
    # CARMA_SLURM_CLUSTER marks the daemons and their job steps (see slurm_procs).
    if [ "$nnodes" -gt 1 ]; then
        # setsid, then nsexec into the namespaces (every step execs: $! is the daemon's pid)
        CARMA_SLURM_CLUSTER=$SLURM_DIR "${_slurm_session[@]}" "${SLURM_EXEC[@]}" "$ctld" -D -c \
            -f "$SLURM_CONF" >"$SLURM_DIR/slurmctld.out" 2>&1 &
        SLURMCTLD_PID=$!
        for ((i = 1; i <= nnodes; i++)); do
            bind=()
            [ -n "${CARMA_SLURM_BIND:-}" ] && bind=("${CARMA_SLURM_BIND//%n/cn$i}")
            CARMA_SLURM_CLUSTER=$SLURM_DIR "${_slurm_session[@]}" "$SLURM_DIR/nsexec" \
                "${SLURM_NETNS[$i]}" "cn$i" "${bind[@]}" -- "$slurmd" -D -c -f "$SLURM_CONF" -N "cn$i" \
                >"$SLURM_DIR/slurmd-cn$i.out" 2>&1 &
            SLURMD_PIDS+=($!)
        done
        SLURMD_PID=${SLURMD_PIDS[0]}
    else
        CARMA_SLURM_CLUSTER=$SLURM_DIR "${_slurm_session[@]}" "$ctld" -D -c -f "$SLURM_CONF" \
            >"$SLURM_DIR/slurmctld.out" 2>&1 &
        SLURMCTLD_PID=$!
        CARMA_SLURM_CLUSTER=$SLURM_DIR "${_slurm_session[@]}" "$slurmd" -D -c -f "$SLURM_CONF" \
            -N "$node" >"$SLURM_DIR/slurmd.out" 2>&1 &
        SLURMD_PID=$!
        SLURMD_PIDS=("$SLURMD_PID")
    fi

    for ((i = 0; i < timeout_s * 5; i++)); do
        _slurm_alive slurmctld "$SLURMCTLD_PID" || {
            _slurm_fail "slurmctld exited at start"
            return 1
        }
        for pid in "${SLURMD_PIDS[@]}"; do
            _slurm_alive slurmd "$pid" || {
                _slurm_fail "slurmd exited at start"
                return 1
            }
        done
        # "NODE STATE" per node, in order
        state=$(timeout 5 "${SLURM_EXEC[@]}" sinfo -h -N -o '%N %T' 2>/dev/null | sort -u |
            tr '\n' ' ')
        want=""
        for node in "${SLURM_NODES[@]}"; do want+="$node idle "; done
        [ "$state" = "$want" ] && return 0
        case $state in
        *drain* | *down*)
            _slurm_fail "a node is not up ($state): $(timeout 5 "${SLURM_EXEC[@]}" scontrol \
                show node | grep -i reason)"
            return 1
            ;;
        esac
        sleep 0.2
    done
    _slurm_fail "nodes ${SLURM_NODES[*]} not idle within ${timeout_s} s (state: '${state:-no answer}')"
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
        "$SLURMCTLD_PID ${SLURMD_PIDS[*]} $MUNGED_PID" <<'EOF'
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
    local jobs i left pid ns
    SLURM_LEFTOVERS=""
    if [ -n "$SLURMCTLD_PID" ] && kill -0 "$SLURMCTLD_PID" 2>/dev/null &&
        [ -n "${SLURM_CONF:-}" ]; then
        jobs=$(timeout 5 "${SLURM_EXEC[@]}" squeue -h -o %i 2>/dev/null)
        if [ -n "$jobs" ]; then
            echo "slurm_lib: cancelling jobs still there: ${jobs//$'\n'/ }" >&2
            # shellcheck disable=SC2086 # one job id per word
            timeout 5 "${SLURM_EXEC[@]}" scancel $jobs 2>/dev/null
            for ((i = 0; i < 75; i++)); do
                [ -z "$(timeout 5 "${SLURM_EXEC[@]}" squeue -h -o %i 2>/dev/null)" ] && break
                sleep 0.2
            done
            jobs=$(timeout 5 "${SLURM_EXEC[@]}" squeue -h -o '%i %T' 2>/dev/null)
            [ -z "$jobs" ] || echo "slurm_lib: jobs still listed at stop: $jobs" >&2
        fi
    fi
    # a finished job's slurmstepd takes a moment to end
    for ((i = 0; i < 50; i++)); do
        [ -z "$(slurm_procs)" ] && break
        sleep 0.1
    done
    for pid in "${SLURMD_PIDS[@]}"; do
        _slurm_stop_pid slurmd "$pid"
    done
    SLURMD_PIDS=()
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
    for ns in "${SLURM_NETNS[@]}"; do
        ip netns del "$ns" 2>/dev/null || echo "slurm_lib: cannot delete the namespace $ns" >&2
    done
    SLURM_NETNS=()
    SLURM_EXEC=()
    SLURM_DIR=""
    unset SLURM_CONF
    return 0
}

# slurm_netns_unusable: prints why `slurm_start N` (N >= 2) cannot work here (not root, no
# network namespaces, no bridge, veth, nsenter or unshare), nothing when it can.
slurm_netns_unusable() {
    local probe="cmsprobe$$" err
    if [ "$(id -u)" != 0 ]; then
        echo "two slurmd's need root and network namespaces"
        return 0
    fi
    if ! err=$(ip netns add "$probe" 2>&1); then
        echo "ip netns add fails here ($(head -n 1 <<<"$err"))"
        return 0
    fi
    if ! err=$({ ip -n "$probe" link add br0 type bridge &&
        ip -n "$probe" link add v1 type veth peer name v2 &&
        nsenter --net="/run/netns/$probe" unshare --mount --uts --propagation private true; } 2>&1); then
        echo "network namespaces without a bridge, a veth or nsenter/unshare here ($(head -n 1 <<<"$err"))"
    fi
    ip netns del "$probe"
}

# slurm_stop_checked: a test's last step (lib_cli.sh's checks): waits up to 5 s for the jobs'
# processes to end (a check fails naming those left), runs the test's show_failure when a
# check failed, stops the cluster and checks that nothing of it is left: no process, no
# daemon, no namespace.
slurm_stop_checked() {
    local daemons=("$SLURMCTLD_PID" "${SLURMD_PIDS[@]}") spaces=("${SLURM_NETNS[@]}") left= i pid ns
    [ -n "$MUNGED_PID" ] && daemons+=("$MUNGED_PID")
    for ((i = 0; i < 50; i++)); do
        left=$(slurm_procs)
        [ -z "$left" ] && break
        sleep 0.1
    done
    [ -z "$left" ] || check_fail "processes of the job still running after it ended: $left"
    [ "$_cli_failures" -gt 0 ] && declare -F show_failure >/dev/null && show_failure
    slurm_stop
    [ -z "$SLURM_LEFTOVERS" ] || check_fail "processes of the cluster left behind: $SLURM_LEFTOVERS"
    for pid in "${daemons[@]}"; do
        kill -0 "$pid" 2>/dev/null && check_fail "daemon pid $pid still runs after slurm_stop"
    done
    for ns in "${spaces[@]}"; do
        ip netns list | grep -q "^$ns\b" && check_fail "namespace $ns still there after slurm_stop"
    done
    return 0
}
