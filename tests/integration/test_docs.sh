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
commands it runs:
  sleep: sleep 1 (in ...)
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
# a background job is ended when its page is done; "..." inside a line stands for any text
self_case background 0 "\`\`\`console
\$ sh -c 'echo \$\$ >$PWD/bg.pid; exec carma-busy --duty 0.01 60' &
\$ carma validate tests/experiments/good/minimal.json
tests/experiments/good/minimal.json: ... (N workload)
...
\`\`\`"
[ -s bg.pid ] || fail "the background command of background.md did not run"
# (killed, it may stay a zombie a moment: its parent, the page's shell, is gone too)
state=$(ps -o stat= -p "$(cat bg.pid)" 2>/dev/null) || state=
if [ -n "$state" ] && [ "${state#Z}" = "$state" ]; then
    kill "$(cat bg.pid)"
    fail "the background job of background.md was left running"
fi
grep -q "^FAIL .*/column.md:6: the output of" column.log || fail "no line named: $(cat column.log)"
note "doctest.py passes a right document and fails stale ones"

# every subcommand's --help: --sources names every source carma knows, and every option it
# lists is documented (docs/*.md names it, or its short form)
"$CARMA" sensors --root "$CARMA_FIXTURES/vm-empty" --sources nosuch >sources.out 2>&1 &&
    fail "--sources nosuch accepted"
known=$(sed -n 's/.*(known: \(.*\))$/\1/p' sources.out | tr -d ' ')
[ -n "$known" ] || fail "no list of known sources in: $(cat sources.out)"
for c in sensors stat run exporter; do
    "$CARMA" "$c" --help >help.out 2>&1 || fail "carma $c --help: exit status $?"
    listed=$(sed -n 's/.*--sources LIST.*: \([a-z,]*\) (default.*/\1/p' help.out)
    assert_eq "$listed" "$known" "carma $c --help's --sources list"
done
for c in sensors stat run validate exporter collect report top model import-nsys merge wait-ready; do
    "$CARMA" "$c" --help >"help-$c.out" 2>&1 || fail "carma $c --help: exit status $?"
done
"$PY" - "$CARMA_SRC" help-*.out <<'PYEOF' || fail "options in --help that the docs do not name (above)"
import glob, os, re, sys
src = sys.argv[1]
docs = "".join(open(f, encoding="utf-8").read()
               for f in [os.path.join(src, "README.md")] + glob.glob(os.path.join(src, "docs", "*.md")))
bad = []
for path in sys.argv[2:]:
    cmd = path[len("help-"):-len(".out")]
    for line in open(path):
        m = re.match(r"\s+(?:(-[a-zA-Z]), )?(--[a-z][a-z-]*)", line)
        if not m or m.group(2) == "--help":
            continue
        forms = [f for f in (m.group(1), m.group(2)) if f]
        if not any(re.search(r"(?<![\w-])" + re.escape(f) + r"(?![\w-])", docs) for f in forms):
            bad.append("carma %s %s" % (cmd, " / ".join(forms)))
for b in bad:
    print("not in the docs: " + b)
sys.exit(1 if bad else 0)
PYEOF
note "every --help's options are in the docs, --sources lists: $known"

# the README's layout names every directory of the tree (top level, src/, tests/, examples/)
"$PY" - "$CARMA_SRC" <<'PYEOF' || fail "the README's layout is stale (above)"
import os, re, sys
src = sys.argv[1]
text = open(os.path.join(src, "README.md"), encoding="utf-8").read()
layout = text[text.index("## Layout"):]
layout = layout[:layout.index("```", layout.index("```") + 3)]
missing = []
dirs = [d + "/" for d in os.listdir(src)
        if os.path.isdir(os.path.join(src, d)) and not d.startswith(".") and
        not d.startswith("build") and d not in ("runs",)]
for sub in ("src", "tests", "examples"):
    dirs += [sub + "/" + d + "/" for d in os.listdir(os.path.join(src, sub))
             if os.path.isdir(os.path.join(src, sub, d))]
for d in sorted(dirs):
    top, _, rest = d.partition("/")
    if top + "/" + rest not in layout and not (rest and top in ("tests", "examples") and rest in layout):
        missing.append(d)
for d in missing:
    print("README.md's layout does not name " + d)
sys.exit(1 if missing else 0)
PYEOF

docs=("$CARMA_SRC/README.md" "$CARMA_SRC"/docs/*.md "$CARMA_SRC/examples/README.md")
rc=0
doctest "${docs[@]}" || rc=$?
[ "$rc" = 0 ] || fail "the docs' examples do not run as written (above)"
