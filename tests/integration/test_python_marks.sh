#!/usr/bin/env bash
# The Python marks module (python/carma) against the fake marks server
# (tests/fakes/fake_markd.py), case by case in check_marks.py:
#   - offline install: `pip install ./python` into a venv with no index and no find-links
#     (build isolation on), the wheel's RECORD hashes, uninstall, the sdist, an editable install;
#   - window() as a context manager and a decorator, begin/end/event: the messages with tokens
#     and requests, the parsed energies; nested windows and a repeated name; an exception
#     inside a window; end of an unknown name (None, one stderr line);
#   - fork and multiprocessing workers (fork and spawn): one connection per process, each
#     message from its sender's pid; eight threads marking at once;
#   - no CARMA_SOCKET, a socket nobody listens on: no-ops, exactly one stderr line; the server
#     gone mid-run, or closing on a message: no exception, one line; error replies: one line
#     per distinct message, no end for a window that did not begin; ValueError for bad names,
#     counts and values, nothing sent.
# shellcheck source=tests/integration/lib_cli.sh
. "$CARMA_SRC/tests/integration/lib_cli.sh"

FAKE="$CARMA_SRC/tests/fakes/fake_markd.py"
CHECK="$CARMA_SRC/tests/integration/check_marks.py"
need_file "$FAKE" "$CHECK" "$CARMA_SRC/python/carma/__init__.py"
export PYTHONDONTWRITEBYTECODE=1
unset CARMA_SOCKET

# start_fake NAME [OPTIONS...]: the fake on NAME.sock logging to NAME.log, once it listens
start_fake() {
    local name=$1 i pid
    shift
    rm -f "$name.ready"
    "$PY" "$FAKE" --socket "$PWD/$name.sock" --log "$name.log" --ready "$name.ready" "$@" \
        >"$name.fake.err" 2>&1 &
    pid=$!
    _cleanup_pids+=("$pid")
    for ((i = 0; i < 500; i++)); do
        [ -s "$name.ready" ] && return 0
        kill -0 "$pid" 2>/dev/null || fail "fake_markd exited: $(cat "$name.fake.err")"
        sleep 0.01
    done
    fail "fake_markd did not start within 5 s"
}

# marks_case NAME CASE PYTHON [VAR=VALUE...]: check_marks.py CASE with NAME.log, the environment
# without CARMA_SOCKET plus VARs, output in NAME.out/NAME.err; a non-zero status is a failure
marks_case() {
    local name=$1 what=$2 py=$3 rc
    shift 3
    rc=$(run_logged "$name" env -u CARMA_SOCKET "$@" "$py" "$CHECK" "$what" "$name.log")
    check_rc "$name" 0 "$rc"
}

# one_line NAME TEXT: NAME.err is exactly the line TEXT
one_line() {
    check_eq "$(cat "$1.err")" "$2" "$1: stderr"
}

# --- offline install (build isolation on, nothing reachable) ---
PIPENV=(env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null
    PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1)
cp -r "$CARMA_SRC/python" python
VPY=
if ! "$PY" -m venv venv >venv.err 2>&1; then
    no_pip="$PY -m venv failed (python3-venv missing?): $(tail -1 venv.err)"
elif [ ! -x venv/bin/pip ]; then
    no_pip="the venv has no pip (python3-pip-whl missing?)"
else
    no_pip=
    VPY=$PWD/venv/bin/python
    rc=$(run_logged pip-install "${PIPENV[@]}" venv/bin/pip install ./python)
    check_rc pip-install 0 "$rc"
    check_grep pip-install.out "Successfully installed carma-0.1.0" "pip install ./python"
    rc=$(run_logged pip-wheel "${PIPENV[@]}" venv/bin/pip wheel --no-deps -w wheels ./python)
    check_rc pip-wheel 0 "$rc"
    "$PY" - wheels/carma-0.1.0-py3-none-any.whl <<'EOF' || check_fail "the wheel (above)"
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
want = {"carma/__init__.py", "carma-0.1.0.dist-info/METADATA", "carma-0.1.0.dist-info/WHEEL",
        "carma-0.1.0.dist-info/RECORD"}
if names != want:
    sys.exit("wheel files %r" % sorted(names))
rows = [l.split(",") for l in z.read("carma-0.1.0.dist-info/RECORD").decode().splitlines()]
for path, h, size in rows:
    if path.endswith("RECORD"):
        continue
    data = z.read(path)
    d = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    if h != "sha256=" + d or int(size) != len(data):
        sys.exit("RECORD row %s,%s,%s: sha256=%s,%d" % (path, h, size, d, len(data)))
if {r[0] for r in rows} != names:
    sys.exit("RECORD names %r" % sorted(r[0] for r in rows))
meta = z.read("carma-0.1.0.dist-info/METADATA").decode()
for line in ("Name: carma", "Version: 0.1.0", "Requires-Python: >=3.8"):
    if line not in meta.splitlines():
        sys.exit("METADATA lacks %r" % line)
if "Tag: py3-none-any" not in z.read("carma-0.1.0.dist-info/WHEEL").decode().splitlines():
    sys.exit("WHEEL lacks the tag")
EOF
    start_fake venv-basic
    marks_case venv-basic basic "$VPY" CARMA_SOCKET="$PWD/venv-basic.sock"
    check_grep venv-basic.out "$PWD/venv/lib/" "the installed module is the venv's"
    one_line venv-basic "carma: marks: end nosuch: no open window 'nosuch'"
    rc=$(run_logged pip-uninstall "${PIPENV[@]}" venv/bin/pip uninstall -y carma)
    check_rc pip-uninstall 0 "$rc"
    compgen -G "venv/lib/python3*/site-packages/carma" >/dev/null && check_fail "pip uninstall left carma/"
    (cd python && "$PY" -c 'import carma_build as b; print(b.build_sdist("../sdist"))') >sdist.out 2>&1 ||
        check_fail "build_sdist: $(cat sdist.out)"
    rc=$(run_logged pip-sdist "${PIPENV[@]}" venv/bin/pip install sdist/carma-0.1.0.tar.gz)
    check_rc pip-sdist 0 "$rc"
    "${PIPENV[@]}" venv/bin/pip uninstall -y carma >/dev/null 2>&1
    rc=$(run_logged pip-editable "${PIPENV[@]}" venv/bin/pip install -e ./python)
    check_rc pip-editable 0 "$rc"
    check_eq "$(cd / && "$VPY" -c 'import carma; print(carma.__file__)')" \
        "$PWD/python/carma/__init__.py" "the editable install's module"
    note "pip install ./python offline: wheel, sdist and editable"
fi

# --- the module in place (PYTHONPATH=python) ---
export PYTHONPATH="$CARMA_SRC/python"
start_fake basic
marks_case basic basic "$PY" CARMA_SOCKET="$PWD/basic.sock"
check_grep basic.out "$CARMA_SRC/python/carma/__init__.py" "the module in place"
one_line basic "carma: marks: end nosuch: no open window 'nosuch'"

start_fake fork
marks_case fork fork "$PY" CARMA_SOCKET="$PWD/fork.sock"
check_eq "$(cat fork.err)" "" "fork: stderr"

start_fake threads
marks_case threads threads "$PY" CARMA_SOCKET="$PWD/threads.sock"

marks_case unset off "$PY"
one_line unset "carma: marks off: CARMA_SOCKET is not set (run the program under carma run or carma stat -o DIR)"
marks_case refused off "$PY" CARMA_SOCKET="$PWD/nobody.sock"
one_line refused "carma: marks off: cannot connect to $PWD/nobody.sock: No such file or directory"

start_fake gone --exit-after 4
marks_case gone gone "$PY" CARMA_SOCKET="$PWD/gone.sock"
check_eq "$(wc -l <gone.err)" 1 "gone: stderr lines"
grep -Eq "^carma: marks off: ($PWD/gone.sock: the server closed the connection|lost the connection to $PWD/gone.sock: .*)\$" gone.err ||
    check_fail "gone: stderr $(cat gone.err)"

start_fake dropped --drop end
marks_case dropped dropped "$PY" CARMA_SOCKET="$PWD/dropped.sock"
one_line dropped "carma: marks off: $PWD/dropped.sock: the server closed the connection"

start_fake errors --error begin
marks_case errors errors "$PY" CARMA_SOCKET="$PWD/errors.sock"
check_eq "$(cat errors.err)" "carma: marks: begin w: refused by the fake
carma: marks: end w: no open window 'w'" "errors: stderr"

start_fake invalid
marks_case invalid invalid "$PY" CARMA_SOCKET="$PWD/invalid.sock"
check_eq "$(cat invalid.err)" "" "invalid: stderr"

if [ -n "$no_pip" ] && [ "$_cli_failures" = 0 ]; then
    skip "the install checks: $no_pip (every other check passed)"
fi
cli_done
