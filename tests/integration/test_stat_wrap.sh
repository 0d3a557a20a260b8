#!/usr/bin/env bash
# carma stat across RAPL counter wraps: the plant gives package-0 and package-1's dram small
# max_energy_range_uj values, so they wrap several times during the run. carma must count the
# wraps and still be within 1% of the truth on every channel.
# shellcheck source=lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

need_file "$BUSY"
conf="$PLANT_CONFIGS/intel-2s-wrap.conf"
live_tree intel-2s live
start_plant live "$conf" truth.csv

rc=$(run_logged stat "$CARMA" stat --root live --interval 100ms --baseline 1s \
    --json-out out.json -o rundir -- "$BUSY" 3)
show stat.out stat.err
stop_plant
assert_eq "$rc" 0 "carma stat -- carma-busy 3: exit status"
need_file out.json rundir/samples.csv

"$PY" "$CHECK_TRUTH" --config "$conf" --tree live --truth truth.csv --json out.json \
    --samples rundir/samples.csv --exit-status 0 --wraps package-0 --wraps package-1-dram \
    --interval 0.1 --tol 0.01 ||
    fail "carma stat disagrees with the plant's ground truth across wraps"
