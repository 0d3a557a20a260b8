#!/usr/bin/env bash
# --root keeps every read below the root: a sensor label that is a symbolic link to an absolute
# path outside the tree (or ".." past its top) never shows that file's text; the same absolute
# path inside the tree is what is read, as a container would see it. Both resolvers: the
# kernel's openat2(RESOLVE_IN_ROOT) and carma's own walk (CARMA_FSROOT_RESOLVE=walk).
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

have_hwmon || skip "this carma has no hwmon source"

secret="$PWD/outside/secret"
mkdir -p outside
printf 'Leaked Secret Label 7\n' >"$secret"
copy_tree acpi-meter tree
dev=tree/sys/class/hwmon/hwmon1/device
ln -s "$secret" "$dev/power1_oem_info"

for mode in openat2 walk; do
    resolve=
    [ "$mode" = walk ] && resolve=walk
    # outside the root: the link resolves to tree/$secret, absent, so there is no label
    rc=$(run_logged "out_$mode" env CARMA_FSROOT_RESOLVE="$resolve" "$CARMA" sensors \
        --root tree --sample 20ms --json)
    check_rc "out_$mode" 0 "$rc"
    check_no_grep "out_$mode.out" "Leaked Secret" "$mode: sensors --json shows a file outside the root"
    check_no_grep "out_$mode.err" "Leaked Secret" "$mode: sensors' stderr shows a file outside the root"
    rc=$(run_logged "table_$mode" env CARMA_FSROOT_RESOLVE="$resolve" "$CARMA" sensors \
        --root tree --sample 20ms)
    check_rc "table_$mode" 0 "$rc"
    check_no_grep "table_$mode.out" "Leaked Secret" "$mode: the sensors table shows a file outside the root"
    check_py "$mode: one channel, still read" '
j = load(sys.argv[1])
assert len(j["channels"]) == 1, [c["name"] for c in j["channels"]]
' "out_$mode.out"
done

# ".." past the top of the root stays at the root: six of them from tree/sys/class/hwmon/
# hwmon1/device would reach ./outside/secret; below the root they reach tree/outside/secret,
# absent too
rm "$dev/power1_oem_info"
ln -s ../../../../../../outside/secret "$dev/power1_oem_info"
[ "$(cat "$dev/power1_oem_info")" = "Leaked Secret Label 7" ] || fail "the link does not reach the secret"
rc=$(run_logged dotdot "$CARMA" sensors --root tree --sample 20ms --json)
check_rc dotdot 0 "$rc"
check_no_grep dotdot.out "Leaked Secret" "a relative link climbing out of the root is followed"

# the same absolute path inside the tree is the one read
mkdir -p "tree$(dirname "$secret")"
printf 'Inside Label 42\n' >"tree$secret"
rm "$dev/power1_oem_info"
ln -s "$secret" "$dev/power1_oem_info"
for mode in openat2 walk; do
    resolve=
    [ "$mode" = walk ] && resolve=walk
    rc=$(run_logged "in_$mode" env CARMA_FSROOT_RESOLVE="$resolve" "$CARMA" sensors \
        --root tree --sample 20ms --json)
    check_rc "in_$mode" 0 "$rc"
    check_grep "in_$mode.out" "Inside Label 42" "$mode: the link resolved inside the root"
    check_no_grep "in_$mode.out" "Leaked Secret" "$mode: sensors --json shows a file outside the root"
done

cli_done
