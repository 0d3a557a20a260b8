#!/usr/bin/env bash
# Fails when a C file of the tree (tracked, or new and not ignored) differs from what
# clang-format (.clang-format) makes of it.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null ||
    find src tests bench -name '*.[ch]')
[ -n "$files" ] || exit 0
bad=0
for f in $files; do
    [ -f "$f" ] || continue
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "format: $f differs from clang-format (run: make format)"
        bad=1
    fi
done
[ $bad -eq 0 ] && echo "format: ok"
exit $bad
