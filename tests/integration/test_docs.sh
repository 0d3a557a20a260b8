#!/usr/bin/env bash
# The docs are tested: every command example of README.md, docs/*.md and examples/README.md
# runs as written (tests/integration/doctest.py; the convention is in docs/testing.md), and
# its output has the shape the document shows. First the checker itself, on small documents
# of its own: a right one passes, a stale one (a changed column, a missing line, an extra
# line, a failing command, an unmarked block of commands) fails, naming the line.
# shellcheck source=tests/integration/lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

DOCTEST="$CARMA_SRC/tests/integration/doctest.py"
need_file "$DOCTEST" "$CARMA_BUILD/tests/fakes/carma-plant"
[ -x "$PY" ] || skip "$PY (Debian's python3) is not installed"
if [ "${CARMA_TEST_SANITIZED:-0}" = 1 ]; then
    skip "the docs' shapes are checked on the plain build"
fi

doctest() {
    "$PY" "$DOCTEST" --build "$CARMA_BUILD" --src "$CARMA_SRC" "$@"
}

# self_case NAME WANT_RC TEXT: doctest on a document NAME.md holding TEXT must exit WANT_RC
self_case() {
    local rc=0
    printf '%s\n' "$3" >"$1.md"
    doctest "$PWD/$1.md" >"$1.log" 2>&1 || rc=$?
    if [ "$rc" != "$2" ]; then
        cat "$1.log"
        fail "doctest on $1.md: exit status $rc, expected $2"
    fi
}

ok_doc='```console
$ carma validate tests/experiments/good/minimal.json
tests/experiments/good/minimal.json: ok (1 workload)
$ printf "a  1.5 W\nb 22.25 W\nc 3 W\n"
a 9.0 W
...
c 10 W
```'
self_case ok 0 "$ok_doc"
self_case column 1 "${ok_doc/a 9.0 W/a 9.0 J}"
self_case missing 1 "${ok_doc/c 10 W/c 10 W
d 1 W}"
self_case extra 1 "${ok_doc/...
c 10 W/c 10 W}"
self_case status 1 "${ok_doc/minimal.json/nosuch.json}"
self_case unmarked 1 '```
carma run examples/quickstart/experiment.json
```'
self_case marked 0 '<!-- doctest: skip (a reason) -->
```
carma run examples/quickstart/experiment.json
```'
grep -q "^FAIL .*/column.md:4: the output of" column.log || fail "no line named: $(cat column.log)"
note "doctest.py passes a right document and fails stale ones"

docs=("$CARMA_SRC/README.md" "$CARMA_SRC"/docs/*.md "$CARMA_SRC/examples/README.md")
rc=0
doctest "${docs[@]}" || rc=$?
[ "$rc" = 0 ] || fail "the docs' examples do not run as written (above)"
