#!/usr/bin/env bash
# carma stat on a live 2-socket Intel tree animated by the simulated power plant: every RAPL
# channel's energy within 1% of the plant's truth, the command's dynamic CPU energy at least
# 95% of its fair share of the truth, samples.csv well formed, exit status propagated.
#
# The attribution check needs the machine's other load to stay steady between carma's
# baseline and the command's run (see check_truth.py); when it did not, the whole run is
# tried again, up to 5 times, and the test is skipped if it never was.
# shellcheck source=lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

need_file "$BUSY"
conf="$PLANT_CONFIGS/intel-2s.conf"

# The command's exit status comes back as carma's own.
live_tree intel-2s live0
start_plant live0 "$conf" truth0.csv
rc=$(run_logged stat3 "$CARMA" stat --root live0 --interval 100ms -- "$BUSY" 0.2 3)
[ "$rc" = 3 ] || show stat3.out stat3.err
assert_eq "$rc" 3 "carma stat -- carma-busy 0.2 3: exit status"
stop_plant

for attempt in 1 2 3 4 5; do
    note "attempt $attempt"
    mkdir "a$attempt" || fail "mkdir"
    cd "a$attempt" || fail "cd"
    live_tree intel-2s live
    start_plant live "$conf" truth.csv
    rc=$(run_logged stat env CARMA_BUSY_REPORT=busy.txt \
        "$CARMA" stat --root live --interval 100ms --baseline 1s --json-out out.json \
        -o rundir -- "$BUSY" 3)
    show stat.out stat.err
    stop_plant
    assert_eq "$rc" 0 "carma stat -- carma-busy 3: exit status"
    need_file out.json rundir/samples.csv busy.txt

    rc=0
    "$PY" "$CHECK_TRUTH" --config "$conf" --tree live --truth truth.csv --json out.json \
        --samples rundir/samples.csv --busy-report busy.txt --baseline 1 --exit-status 0 \
        --interval 0.1 --tol 0.01 --min-attr 0.95 || rc=$?
    case $rc in
    0) exit 0 ;;
    3) cd .. ;;
    *) fail "carma stat disagrees with the plant's ground truth" ;;
    esac
done
skip "the machine's background load kept changing; attribution not checked (energy was)"
