#!/usr/bin/env bash
# Golden outputs: every command of tests/golden/commands (carma report on the run directories
# and srt-slurm log directories of tests/fixtures, validate on the experiment corpus and the
# examples, model fit/predict, import-nsys, sensors on the fixture trees, top --once, usage
# errors, every --help) gives byte for byte its stored record tests/golden/expected/NAME.txt:
# the exit status of each carma call, stdout, stderr and the files the command keeps. A
# difference prints the command and the first lines of a unified diff.
#
# Normalised (tests/golden/golden.sh does it, identically for the stored and the new records):
# the repository's absolute path -> @SRC@ and the command's working directory -> @WORK@ (where
# the tree is checked out and where the test runs); an HTML report's footer time and a model
# file's created_unix -> @TIME@ (the time of day the command ran). Nothing else: the commands
# are chosen to be deterministic, plain and under the sanitizers (CARMA_TEST_SANITIZED=1: the
# same records); carma run, carma stat, the exporter, collect with targets and top of a
# running run sample a live clock into their output and are left out (their usage errors and
# experiment checks are in).
#
# CARMA_GOLDEN_UPDATE=1 writes the records to tests/golden/expected/ instead (and removes those
# of commands no longer listed): a deliberate output change, to be reviewed in the diff.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

gdir="$CARMA_SRC/tests/golden"
need_file "$gdir/commands" "$gdir/golden.sh" "$gdir/expected"
# shellcheck source=tests/golden/golden.sh
. "$gdir/golden.sh"

golden_run "$CARMA" "$PWD/actual" "$PWD/work" || fail "golden_run"
names=$(golden_names) || fail "tests/golden/commands is malformed"

if [ "${CARMA_GOLDEN_UPDATE:-0}" = 1 ]; then
    rm -f "$gdir"/expected/*.txt
    cp "$PWD"/actual/*.txt "$gdir/expected/" || fail "cannot write $gdir/expected"
    note "wrote $(echo "$names" | wc -w) records to $gdir/expected (review them: git diff)"
    exit 0
fi

count=0
for name in $names; do
    count=$((count + 1))
    want="$gdir/expected/$name.txt"
    if [ ! -f "$want" ]; then
        check_fail "$name: no stored record tests/golden/expected/$name.txt (CARMA_GOLDEN_UPDATE=1 writes it)"
        continue
    fi
    if ! cmp -s "$want" "actual/$name.txt"; then
        check_fail "$name differs from its stored record: $(golden_command "$name")"
        diff -u --label "expected/$name.txt" --label "actual/$name.txt" "$want" \
            "actual/$name.txt" | head -n 40 >&2
    fi
done
for f in "$gdir"/expected/*.txt; do
    name=$(basename "$f" .txt)
    grep -qx -- "$name" <<<"$names" ||
        check_fail "tests/golden/expected/$name.txt: no such command in tests/golden/commands"
done
note "$count golden records compared"
cli_done
