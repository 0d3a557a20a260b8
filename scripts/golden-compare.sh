#!/usr/bin/env bash
# Runs the golden commands (tests/golden/commands) with two carma binaries and compares their
# records byte for byte: the check that a change alters no output, without stored records.
#
#   scripts/golden-compare.sh OLD_CARMA NEW_CARMA [KEEP_DIR]
#
# Both binaries read this checkout's fixtures, examples and experiment files. Prints one line
# per differing command and the first lines of its unified diff, then "N commands, N differ";
# exits 0 when every record is the same, 1 when one differs, 2 on a bad command line. The
# records stay in KEEP_DIR/old and KEEP_DIR/new when it is given (else in a temporary
# directory, removed).
set -u

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 OLD_CARMA NEW_CARMA [KEEP_DIR]" >&2
    exit 2
fi
old=$1 new=$2
for b in "$old" "$new"; do
    [ -x "$b" ] || {
        echo "$0: $b is not an executable" >&2
        exit 2
    }
done
src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/golden/golden.sh
. "$src/tests/golden/golden.sh"

if [ $# -eq 3 ]; then
    keep=$3
    mkdir -p "$keep" || exit 2
else
    keep=$(mktemp -d "${TMPDIR:-/tmp}/carma-golden.XXXXXX") || exit 2
    trap 'rm -rf "$keep"' EXIT
fi
keep=$(cd "$keep" && pwd)

# the same work directory for both, so that the records normalise it alike
golden_run "$old" "$keep/old" "$keep/work" || exit 2
golden_run "$new" "$keep/new" "$keep/work" || exit 2
rm -rf "$keep/work"

count=0 differ=0
for name in $(golden_names); do
    count=$((count + 1))
    if ! cmp -s "$keep/old/$name.txt" "$keep/new/$name.txt"; then
        differ=$((differ + 1))
        echo "DIFFERS $name: $(golden_command "$name")"
        diff -u --label "old/$name.txt" --label "new/$name.txt" "$keep/old/$name.txt" \
            "$keep/new/$name.txt" | head -n 40
    fi
done
echo "$count commands, $differ differ"
[ "$differ" -eq 0 ]
