#!/usr/bin/env bash
# fresh-check.sh: the README's first commands on a bare Debian 12, the way a newcomer runs them.
#
#   scripts/fresh-check.sh [REV]        (`make fresh-check`, `make fresh-check FRESH_REV=REV`)
#
# As root. Builds a minimal Debian 12 (debootstrap --variant=minbase, bookworm main from the
# mirror apt uses on this machine) in a new folder, with bookworm, bookworm-updates and
# bookworm-security as its apt sources, copies a clean clone of REV (default HEAD: what is
# committed, not the working tree) into /root/carma and runs there with chroot:
#   1. apt-get update; apt-get install make       (what the README says to install by hand)
#   2. make run                                   (the build packages only: scripts/deps.sh)
#   3. make test-deps; make test-build            (make test's set-up step: the test packages,
#                                                  then carma and every test program built)
#   4. meson test -C build --suite unit           (the tests so set up run and pass)
# Each phase prints its elapsed time; on a failure the tail of the log and exit status 1.
# Exit status 2: the check could not run (not root, no debootstrap, no network, a bad REV).
#
# The chroot has /proc and /sys (carma reads them), its own /dev (the base's device nodes, its
# own /dev/pts and /dev/shm) and the host's /etc/resolv.conf. Every mount is made in a private
# mount namespace (unshare), so none is ever visible outside it and none outlives the check,
# whatever ends it; they are unmounted on exit anyway, and the folder is removed
# (--one-file-system) only once nothing is mounted under it. Services that packages would
# start are not started (policy-rc.d), and processes left in the chroot are stopped.
#
# Cache (CARMA_FRESH_CACHE, default /var/cache/carma-fresh-check): the debootstrap result is
# kept as a tar file taken before anything else touches it, and later runs unpack it into a
# new folder instead of downloading the base again (rebuilt after CARMA_FRESH_BASE_DAYS, 30):
# every run starts from that pristine minimal base. Downloaded .deb files are kept in
# apt-archives/ (bind-mounted on the chroot's /var/cache/apt/archives) to spare the network;
# apt still resolves and installs every package. CARMA_FRESH_NO_CACHE=1: debootstrap and
# download everything, keep nothing.
# Other settings: CARMA_FRESH_MIRROR, CARMA_FRESH_SECURITY_MIRROR (default: from
# /etc/apt/sources.list.d/*.sources and /etc/apt/sources.list, else deb.debian.org),
# CARMA_FRESH_WORK (where the folder is made, default /var/tmp), CARMA_FRESH_KEEP=1 (keep the
# folder, unmounted), CARMA_FRESH_LOG (default CACHE/fresh-check.log), CARMA_FRESH_TIMEOUT
# (seconds a phase may take, default 1800).
# shellcheck disable=SC2317 # the cleanup functions run from traps
set -euo pipefail

suite=bookworm
prog="fresh-check"

say() { printf '%s: %s\n' "$prog" "$*"; }
cannot() {
    printf '%s: cannot run: %s\n' "$prog" "$*" >&2
    exit 2
}

now() { printf '%s' "${EPOCHREALTIME/,/.}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# ---------------------------------------------------------------------------------------------
# the inner part: in the private mount namespace, with the chroot prepared in $FRESH_ROOT
if [[ ${1:-} == --inner ]]; then
    root=$FRESH_ROOT
    log=$FRESH_LOG
    mounts=()
    phase_pid=

    in_chroot_pids() {
        local p r
        for p in /proc/[0-9]*; do
            r=$(readlink "$p/root" 2>/dev/null) || continue
            [[ $r == "$root" ]] && printf '%s\n' "${p#/proc/}"
        done
        return 0
    }

    cleanup() {
        local rc=$? pids i
        # a phase cut short: timeout passes the signal on to its process group
        if [[ -n ${phase_pid:-} ]]; then
            kill -TERM "$phase_pid" 2>/dev/null || true
            wait "$phase_pid" 2>/dev/null || true
        fi
        # processes the chroot started and left (a service, a stuck step, dpkg in a session of
        # its own): ours, by pid, until none is left (one may start another meanwhile)
        local sig=TERM round
        for ((round = 0; round < 20; round++)); do
            pids=$(in_chroot_pids)
            [[ -n $pids ]] || break
            # shellcheck disable=SC2086
            kill -"$sig" $pids 2>/dev/null || true
            sleep 0.5
            [[ $round -lt 2 ]] || sig=KILL
        done
        for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
            umount -R "${mounts[i]}" 2>/dev/null || umount -R -l "${mounts[i]}" 2>/dev/null ||
                say "could not unmount ${mounts[i]}"
        done
        exit "$rc"
    }
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    mount_at() { # mount_at DIR ARGS...: mount ARGS... on $root/DIR, remembered for cleanup
        local dir=$root/$1
        shift
        mkdir -p "$dir"
        mount "$@" "$dir"
        mounts+=("$dir")
    }
    mount_at proc -t proc proc
    mount_at sys --rbind /sys
    mount --make-rslave "$root/sys"
    # /dev: the base's own device nodes (debootstrap made them), never the host's /dev, which
    # nothing in the chroot can then remove or replace; its own pseudo-terminals and shm
    if mount_at dev/pts -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts; then
        ln -sf pts/ptmx "$root/dev/ptmx"
    else
        mount_at dev/pts --bind /dev/pts
    fi
    mount_at dev/shm -t tmpfs -o mode=1777 tmpfs
    if [[ -n ${FRESH_ARCHIVES:-} ]]; then
        mount_at var/cache/apt/archives --bind "$FRESH_ARCHIVES"
    fi

    # run_phase N NAME COMMAND: COMMAND (bash, in /root/carma in the chroot, as a newcomer's
    # root shell would) with its output in the log; progress and elapsed time on stdout
    run_phase() {
        local n=$1 name=$2 cmd=$3 t0 rc=0 start_line
        t0=$(now)
        say "[$n/$FRESH_PHASES] $name ..."
        start_line=$(($(wc -l <"$log") + 1))
        printf '\n===== [%s/%s] %s\n$ %s\n' "$n" "$FRESH_PHASES" "$name" "$cmd" >>"$log"
        # in the background, so that a signal to this shell is handled at once (wait returns);
        # with every signal's default disposition, as in a login shell (a background job's
        # SIGINT and SIGQUIT are ignored)
        timeout --kill-after=30 "$FRESH_TIMEOUT" chroot "$root" /usr/bin/env -i --default-signal \
            HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 TERM=dumb \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            /bin/bash -c "cd /root/carma && $cmd" </dev/null >>"$log" 2>&1 &
        phase_pid=$!
        wait "$phase_pid" || rc=$?
        phase_pid=
        if [[ $rc -eq 0 ]]; then
            say "[$n/$FRESH_PHASES] $name: ok ($(since "$t0"))"
            return 0
        fi
        [[ $rc -eq 124 || $rc -eq 137 ]] && echo "(timed out after $FRESH_TIMEOUT s)" >>"$log"
        say "[$n/$FRESH_PHASES] $name: FAILED (exit status $rc, after $(since "$t0"))"
        echo "----- the last lines of its output (all of it: $log)"
        tail -n +"$start_line" "$log" | tail -n 40
        echo "-----"
        if tail -n +"$start_line" "$log" |
            grep -Eq 'Temporary failure resolving|Could not resolve|Failed to fetch|Unable to connect|Network is unreachable|Connection timed out'; then
            say "apt could not reach the Debian mirror ($FRESH_MIRROR): is the network up?"
        fi
        exit 1
    }

    run_phase 1 "apt-get update; apt-get install make (the README's prerequisite)" \
        'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq make'
    run_phase 2 "make run (the README's first command)" 'make run'
    run_phase 3 "make test-deps (make test's set-up: the test packages)" 'make test-deps'
    run_phase 4 "make test-build (make test's set-up: the tests turned on and built)" \
        'make test-build'
    run_phase 5 "meson test -C build --suite unit (the tests so set up pass)" \
        'meson test -C build --suite unit --print-errorlogs'
    if [[ -n ${FRESH_ARCHIVES:-} ]]; then
        # drop the cached .deb files no mirror offers any longer (the cache does not grow)
        chroot "$root" apt-get autoclean -qq >>"$log" 2>&1 || true
    fi
    exit 0
fi

# ---------------------------------------------------------------------------------------------
# the outer part: checks, the base, the clone, then the inner part in its own mount namespace
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
fi
[[ $# -le 1 ]] || cannot "usage: $0 [REV]"
rev=${1:-HEAD}

[[ $(id -u) -eq 0 ]] ||
    cannot "must run as root (debootstrap, chroot and mount need it): sudo make fresh-check"
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel 2>/dev/null) ||
    cannot "$(dirname "$0")/.. is not a git checkout (the check copies a clean clone of it)"
sha=$(git -C "$repo" rev-parse --verify --quiet "$rev^{commit}") ||
    cannot "$rev is not a commit of $repo"
for t in chroot mount unshare tar flock timeout; do
    command -v "$t" >/dev/null 2>&1 || cannot "$t is missing (Debian: util-linux, coreutils, tar)"
done

cache=${CARMA_FRESH_CACHE:-/var/cache/carma-fresh-check}
no_cache=${CARMA_FRESH_NO_CACHE:-0}
base_days=${CARMA_FRESH_BASE_DAYS:-30}
timeout_s=${CARMA_FRESH_TIMEOUT:-1800}
mkdir -p "$cache"
log=${CARMA_FRESH_LOG:-$cache/fresh-check.log}

# one check at a time on a cache (the base file, the .deb cache and the log are shared)
exec 9>"$cache/lock"
if ! flock -n 9; then
    say "waiting for another fresh-check to finish ($cache/lock) ..."
    flock 9
fi
: >"$log"

t_all=$(now)
say "checking $(git -C "$repo" log -1 --format='%h %s' "$sha" | cut -c1-90)"
if [[ $rev == HEAD ]] && [[ -n $(git -C "$repo" status --porcelain --untracked-files=no) ]]; then
    say "note: the working tree has uncommitted changes; the check copies HEAD, without them"
fi

# the mirrors apt uses here: URIs of the (deb) stanza or line whose suites include $1
mirror_for() {
    local want=$1 f
    local -a d822=() lines=()
    for f in /etc/apt/sources.list.d/*.sources; do [[ -r $f ]] && d822+=("$f"); done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do [[ -r $f ]] && lines+=("$f"); done
    {
        if [[ ${#d822[@]} -gt 0 ]]; then
            awk -v want="$want" '
                function val(line) { sub(/^[^:]*:[ \t]*/, "", line); return line }
                function flush(   n, s, i, u) {
                    if (types ~ /(^|[ \t])deb([ \t]|$)/ && enabled !~ /^no$/) {
                        n = split(suites, s, /[ \t]+/)
                        for (i = 1; i <= n; i++)
                            if (s[i] == want) { split(uris, u, /[ \t]+/); print u[1]; break }
                    }
                    types = uris = suites = enabled = ""
                }
                /^[ \t]*#/ { next }
                /^[ \t]*$/ { flush(); next }
                tolower($1) == "types:" { types = val($0) }
                tolower($1) == "uris:" { uris = val($0) }
                tolower($1) == "suites:" { suites = val($0) }
                tolower($1) == "enabled:" { enabled = tolower(val($0)) }
                END { flush() }' "${d822[@]}"
        fi
        if [[ ${#lines[@]} -gt 0 ]]; then
            awk -v want="$want" '$1 == "deb" {
                i = 2
                if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
                if ($(i + 1) == want) print $i }' "${lines[@]}"
        fi
    } 2>/dev/null | head -n 1
}
mirror=${CARMA_FRESH_MIRROR:-$(mirror_for "$suite")}
mirror=${mirror:-http://deb.debian.org/debian}
security=${CARMA_FRESH_SECURITY_MIRROR:-$(mirror_for "$suite-security")}
security=${security:-http://deb.debian.org/debian-security}
updates=
[[ -n ${CARMA_FRESH_MIRROR:-} ]] || updates=$(mirror_for "$suite-updates")
updates=${updates:-$mirror}
say "mirror: $mirror ($suite, $suite-updates: $updates, $suite-security: $security)"

host=${mirror#*://}
host=${host%%/*}
host=${host%%:*}
if [[ $mirror == http* ]] && ! getent hosts "$host" >/dev/null 2>&1; then
    from="as in /etc/apt"
    [[ -z ${CARMA_FRESH_MIRROR:-} ]] || from="CARMA_FRESH_MIRROR"
    cannot "no network: $host (the Debian mirror, $from) does not resolve"
fi

# chroot needs /proc and /sys mounted: a container without CAP_SYS_ADMIN cannot
if ! unshare --mount --propagation private -- mount -t tmpfs none /mnt 2>/dev/null; then
    cannot "cannot mount in a private mount namespace here (a container without CAP_SYS_ADMIN?): the check needs a VM or a privileged container"
fi

if ! command -v debootstrap >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || cannot "debootstrap is missing and there is no apt-get"
    say "installing debootstrap (apt-get install debootstrap) ..."
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -qq debootstrap >>"$log" 2>&1; then
        if ! { apt-get update -qq && apt-get install -y -qq debootstrap; } >>"$log" 2>&1; then
            tail -n 20 "$log" >&2
            cannot "apt-get could not install debootstrap (no network? log: $log)"
        fi
    fi
fi

work=$(mktemp -d "${CARMA_FRESH_WORK:-/var/tmp}/carma-fresh.XXXXXX")
root=$work/root
mkdir "$root"
clean_work() {
    # the mounts live in the inner mount namespace, so none is here; never remove a folder
    # with something mounted under it all the same
    if grep -qF " $work/" /proc/self/mountinfo; then
        say "something is still mounted under $work: left as it is" >&2
        return 1
    elif [[ ${CARMA_FRESH_KEEP:-0} == 1 ]]; then
        say "kept: $root"
    else
        rm -rf --one-file-system "$work"
    fi
}
inner_pid=
remove_work() {
    local rc=$?
    # stopped early: the inner part stops its phase and unmounts first
    if [[ -n $inner_pid ]]; then
        kill -TERM "$inner_pid" 2>/dev/null || true
        wait "$inner_pid" 2>/dev/null || true
    fi
    clean_work || [[ $rc -ne 0 ]] || rc=1
    [[ $rc -lt 128 ]] || say "stopped by a signal, after $(since "$t_all"): nothing left mounted or running"
    exit "$rc"
}
trap remove_work EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the base: debootstrap, or the pristine tar file of an earlier one
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
key=$(printf '%s' "$mirror" | md5sum | cut -c1-8)
base_tar=$cache/$suite-$arch-minbase-$key.tar
t0=$(now)
if [[ $no_cache != 1 && -f $base_tar ]] && [[ -n $(find "$base_tar" -mtime -"$base_days") ]]; then
    say "[base] unpacking the pristine minimal Debian 12 of $(date -u -r "$base_tar" '+%Y-%m-%d %H:%M UTC') ($base_tar) ..."
    tar -C "$root" --numeric-owner -xpf "$base_tar"
    say "[base] ok ($(since "$t0"))"
else
    say "[base] debootstrap --variant=minbase $suite from $mirror (a few minutes) ..."
    printf '===== debootstrap --variant=minbase --arch=%s %s %s %s\n' "$arch" "$suite" "$root" "$mirror" >>"$log"
    if ! debootstrap --variant=minbase --arch="$arch" --components=main "$suite" "$root" "$mirror" >>"$log" 2>&1; then
        say "[base] FAILED after $(since "$t0")"
        echo "----- the last lines of its output (all of it: $log)"
        tail -n 25 "$log"
        [[ -f $root/debootstrap/debootstrap.log ]] && tail -n 15 "$root/debootstrap/debootstrap.log"
        echo "-----"
        if grep -Eq 'Failed getting release file|Temporary failure|Could not resolve|Connection refused|Network is unreachable' "$log" "$root/debootstrap/debootstrap.log" 2>/dev/null; then
            cannot "debootstrap could not download $suite from $mirror (no network, or not a Debian mirror)"
        fi
        exit 1
    fi
    say "[base] debootstrap ok ($(since "$t0"))"
    if [[ $no_cache != 1 ]]; then
        t1=$(now)
        rm -f "$cache"/"$suite-$arch"-minbase-*.tar
        tar -C "$root" --numeric-owner -cpf "$base_tar.tmp" .
        mv "$base_tar.tmp" "$base_tar"
        chmod 0444 "$base_tar"
        say "[base] kept as $base_tar for later runs ($(du -h "$base_tar" | cut -f1), $(since "$t1"))"
    fi
fi

# ---- the machine's set-up: apt sources as a Debian 12 install has them, DNS, no services
t0=$(now)
rm -f "$root/etc/apt/sources.list"
mkdir -p "$root/etc/apt/sources.list.d"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $updates
Suites: $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
rm -f "$root/etc/resolv.conf"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
printf '#!/bin/sh\n# fresh-check: no service starts in the chroot\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"

# ---- a clean clone of REV, as `git clone` leaves it
git clone --quiet --no-local --no-checkout "$repo" "$root/root/carma" >>"$log" 2>&1
if ! git -C "$root/root/carma" cat-file -e "$sha^{commit}" 2>/dev/null; then
    git -C "$root/root/carma" fetch --quiet "$repo" "$sha" >>"$log" 2>&1
fi
git -C "$root/root/carma" -c advice.detachedHead=false checkout --quiet "$sha"
say "[setup] apt sources, resolv.conf, a clean clone of $(git -C "$repo" rev-parse --short "$sha") in /root/carma ($(since "$t0"))"

archives=
if [[ $no_cache != 1 ]]; then
    archives=$cache/apt-archives
    mkdir -p "$archives/partial"
fi

rc=0
FRESH_ROOT=$root FRESH_LOG=$log FRESH_ARCHIVES=$archives FRESH_MIRROR=$mirror FRESH_PHASES=5 \
    FRESH_TIMEOUT=$timeout_s unshare --mount --propagation private -- bash "$0" --inner &
inner_pid=$!
wait "$inner_pid" || rc=$?
inner_pid=
t0=$(now)
trap - EXIT
clean_work || [[ $rc -ne 0 ]] || rc=1
[[ ${CARMA_FRESH_KEEP:-0} == 1 ]] || say "[cleanup] the chroot's folder removed ($(since "$t0"))"
if [[ $rc -eq 0 ]]; then
    say "passed in $(since "$t_all"): a bare Debian 12 builds and runs carma with the README's commands (log: $log)"
else
    say "failed after $(since "$t_all") (log: $log)"
fi
exit "$rc"
