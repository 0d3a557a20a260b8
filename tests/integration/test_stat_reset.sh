#!/usr/bin/env bash
# carma stat when a RAPL counter resets mid-run (package-1 drops to 0, which no wrap
# explains): carma must flag the reset, not integrate it (its energy is the truth minus about
# one interval), keep the other channels within 1%, not crash, and still return the
# command's exit status.
# shellcheck source=lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

need_file "$BUSY"
conf="$PLANT_CONFIGS/intel-2s-reset.conf"
live_tree intel-2s live
start_plant live "$conf" truth.csv

rc=$(run_logged stat "$CARMA" stat --root live --interval 100ms --baseline 1s \
    --json-out out.json -o rundir -- "$BUSY" 3 4)
show stat.out stat.err
stop_plant
assert_eq "$rc" 4 "carma stat -- carma-busy 3 4: exit status"
need_file out.json rundir/samples.csv

"$PY" "$CHECK_TRUTH" --config "$conf" --tree live --truth truth.csv --json out.json \
    --samples rundir/samples.csv --exit-status 4 --reset package-1 --interval 0.1 \
    --tol 0.01 || fail "carma stat mishandles a counter reset"
