# shellcheck shell=bash
# The golden runner, sourced by tests/integration/test_golden.sh and scripts/golden-compare.sh:
# runs every command of tests/golden/commands with one carma binary and writes one record per
# command (its exit statuses, stdout, stderr and the files it kept), normalised, to a folder.
#
#   golden_run CARMA OUTDIR WORKDIR   OUTDIR/NAME.txt for each command; WORKDIR/NAME is the
#                                     command's working directory (both are emptied first);
#                                     GOLDEN_JOBS (default: the CPUs, at most 8) run at once
#
# The commands file: one command a line, `NAME COMMAND`; blank lines and lines starting with #
# are skipped. NAME ([a-z0-9._-]+, unique) names the record; COMMAND is a bash line run by eval
# in a new empty directory WORKDIR/NAME, in which
#   carma ARGS...   runs the binary under test with a clean environment: env -i, PATH=/usr/bin:/bin,
#                   HOME=the working directory, LC_ALL=C, TZ=UTC, the sanitizers' *_OPTIONS,
#                   and CARMA_SRTLOG_NO_FAST / CARMA_FSROOT_RESOLVE only when the line sets them
#                   (`CARMA_SRTLOG_NO_FAST=1 carma report ...`); its exit status is recorded;
#   pre CMD...      a setup step (cp, mkdir, python3): its output is dropped, its failure is
#                   written to the record's stderr (so the record differs from the stored one);
#   keep FILE...    FILE's contents go into the record after the streams ("(absent)" if none);
#   $SRC $FIX $EX $EXP $GOLDEN  the repository, tests/fixtures, examples, tests/experiments,
#                   tests/golden; $PY is /usr/bin/python3.
# stdout and stderr are the whole line's (carma's and any echo of the line itself).
#
# Normalised in a record, and nothing else: the repository's absolute path (as given and as
# resolved) becomes @SRC@ and the command's working directory @WORK@, since both depend on
# where the tree is checked out and the test runs; the time of writing in an HTML report's
# footer ("on 2026-12-02 01:42:28 UTC") becomes "on @TIME@ UTC" and a model file's
# "created_unix" and a --follow report's "emitted_at_unix" become @TIME@, since they are the time
# of day the command ran.

GOLDEN_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GOLDEN_COMMANDS="$GOLDEN_DIR/commands"

# _golden_sed_escape STRING: STRING as a literal in a sed regex (delimiter |)
_golden_sed_escape() {
    printf '%s' "$1" | sed 's/[][\.*^$|]/\\&/g'
}

# _golden_emit FILE: FILE's bytes, and a marker line when they do not end in a newline
_golden_emit() {
    cat "$1"
    if [ -s "$1" ] && [ -n "$(tail -c 1 "$1")" ]; then
        printf '\n\\ no newline at end\n'
    fi
}

# golden_names: the commands' names, in file order (fails on a malformed or repeated name)
golden_names() {
    awk '/^[ \t]*(#|$)/ { next }
         $1 !~ /^[a-z0-9._-]+$/ { printf "%s:%d: bad name %s\n", FILENAME, NR, $1 > "/dev/stderr"; bad = 1 }
         seen[$1]++ { printf "%s:%d: %s twice\n", FILENAME, NR, $1 > "/dev/stderr"; bad = 1 }
         { print $1 }
         END { exit bad }' "$GOLDEN_COMMANDS"
}

# golden_command NAME: the command line of NAME
golden_command() {
    awk -v n="$1" '$1 == n { sub(/^[ \t]*[^ \t]+[ \t]+/, ""); print; exit }' "$GOLDEN_COMMANDS"
}

# _golden_one NAME CMD: run one command in $_g_work/NAME, write its record $_g_out/NAME.txt
_golden_one() {
    local name=$1 cmd=$2
    local dir="$_g_work/$name" meta="$_g_work/.meta/$name" f
    mkdir -p "$dir" "$meta"
    # shellcheck disable=SC2317 # carma, pre and keep are called by the eval'd line
    (
        cd "$dir" || exit 1
        unset CARMA_SRTLOG_NO_FAST CARMA_FSROOT_RESOLVE
        # shellcheck disable=SC2034 # the variables are for the eval'd line
        SRC=$_g_src FIX="$_g_src/tests/fixtures" EX="$_g_src/examples" \
            EXP="$_g_src/tests/experiments" GOLDEN=$GOLDEN_DIR PY=/usr/bin/python3
        carma() {
            local env=(PATH=/usr/bin:/bin "HOME=$dir" LC_ALL=C TZ=UTC) v rc=0
            for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS CARMA_SRTLOG_NO_FAST \
                CARMA_FSROOT_RESOLVE; do
                [ -n "${!v+x}" ] && env+=("$v=${!v}")
            done
            env -i "${env[@]}" timeout -k 5 60 "$_g_bin" "$@" || rc=$?
            printf '%s\n' "$rc" >>"$meta/status"
            return "$rc"
        }
        pre() {
            local rc=0
            "$@" >"$meta/pre.out" 2>&1 || rc=$?
            [ "$rc" = 0 ] || {
                echo "golden: setup step failed (exit status $rc): $*"
                cat "$meta/pre.out"
            } >&2
            return "$rc"
        }
        keep() {
            printf '%s\n' "$@" >>"$meta/keep"
        }
        eval "$cmd"
    ) >"$meta/stdout" 2>"$meta/stderr" </dev/null
    {
        printf '$ %s\n' "$cmd"
        printf 'exit status:'
        # shellcheck disable=SC2046 # one word a carma call
        [ -f "$meta/status" ] && printf ' %s' $(<"$meta/status")
        printf '\n--- stdout\n'
        _golden_emit "$meta/stdout"
        printf -- '--- stderr\n'
        _golden_emit "$meta/stderr"
        if [ -f "$meta/keep" ]; then
            while IFS= read -r f; do
                printf -- '--- file %s\n' "$f"
                if [ -f "$dir/$f" ]; then
                    _golden_emit "$dir/$f"
                else
                    printf '(absent)\n'
                fi
            done <"$meta/keep"
        fi
    } | sed -e "s|$_g_work_p_re/${name//./\\.}|@WORK@|g" -e "s|$_g_work_re/${name//./\\.}|@WORK@|g" \
        "${_g_sed[@]}" >"$_g_out/$name.txt"
}

# golden_run CARMA OUTDIR WORKDIR
golden_run() {
    local names name
    names=$(golden_names) || return 2
    _g_bin=$1 _g_out=$2 _g_work=$3
    case $_g_bin in /*) ;; *) _g_bin="$PWD/$_g_bin" ;; esac
    rm -rf "$_g_out" "$_g_work"
    mkdir -p "$_g_out" "$_g_work"
    _g_out=$(cd "$_g_out" && pwd) _g_work=$(cd "$_g_work" && pwd)
    _g_src=$(cd "$GOLDEN_DIR/../.." && pwd)
    _g_work_re=$(_golden_sed_escape "$_g_work")
    _g_work_p_re=$(_golden_sed_escape "$(cd "$_g_work" && pwd -P)")
    _g_sed=(-e "s|$(_golden_sed_escape "$(cd "$_g_src" && pwd -P)")|@SRC@|g"
        -e "s|$(_golden_sed_escape "$_g_src")|@SRC@|g"
        -e 's|^\(<footer>Written by carma [^ ]* on \)[0-9]\{4\}-[0-9-]* [0-9:]* UTC\.|\1@TIME@ UTC.|'
        -e 's/"\(created_unix\|emitted_at_unix\)": [0-9][0-9.]*/"\1": @TIME@/g')
    local -A cmds
    while read -r name cmd; do
        case $name in '' | '#'*) continue ;; esac
        cmds[$name]=$cmd
    done <"$GOLDEN_COMMANDS"
    # GOLDEN_JOBS commands at a time (default: the CPUs, at most 8): each has its own directory
    local jobs=${GOLDEN_JOBS:-$(nproc 2>/dev/null || echo 2)} running=0
    [ "$jobs" -gt 8 ] && [ -z "${GOLDEN_JOBS:-}" ] && jobs=8
    for name in $names; do
        if [ "$running" -ge "$jobs" ]; then
            wait -n
            running=$((running - 1))
        fi
        _golden_one "$name" "${cmds[$name]}" &
        running=$((running + 1))
    done
    wait
}
