#!/usr/bin/env bash
# carma run on a live 2-socket Intel tree animated by the simulated power plant, three
# collocated jobs for 3 s (one core spinning, one core at a 50% duty cycle, a sleeper), once
# per idle policy (idle, proportional, equal): the run's total energy within 1% of the plant's
# truth, each job's energy within 2% of the run's total dynamic energy of its fair truth (its
# CPU-time share of the dynamic energy plus its part of the static energy by the policy),
# attribution.csv adding up to samples.csv (see check_run.py).
#
# The per-job check needs the machine's other load to stay steady between carma's baseline
# and the run (see check_truth.py); when it did not, the policy's run is tried again, up to 3
# times, and the test is skipped if it never was (after the other policies are checked). A
# per-job miss while the background looked steady is tried again too, but two such misses of
# one policy fail the test (a real error misses every time; a shared machine's load can move
# inside a single run without the steadiness check seeing it).
# shellcheck source=tests/integration/lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

CHECK_RUN="$CARMA_SRC/tests/integration/check_run.py"
# Under a sanitizer carma itself runs several times slower, and its own CPU time is part of
# "other" processes: the per-workload bound is then 5% instead of 2% (energy and residual
# bounds stay). The accuracy figures that count come from the normal build.
TOL_JOB=0.02
[ -n "${CARMA_TEST_SANITIZED:-}" ] && TOL_JOB=0.05
need_file "$BUSY" "$PLANT" "$CHECK_RUN"
"$CARMA" run --help >/dev/null 2>&1 || fail "carma run --help fails: is 'carma run' built?"
conf="$PLANT_CONFIGS/intel-2s.conf"
top=$PWD
inconclusive=()

for policy in idle proportional equal; do
    verdict=
    misses=0
    for attempt in 1 2 3 4; do
        dir="$top/$policy-$attempt"
        note "policy $policy, attempt $attempt"
        # let the previous run's aftermath (page cache writeback of its run directory, exiting
        # processes) settle: the baseline must see the machine's usual background
        sleep 3
        mkdir "$dir" || fail "mkdir $dir"
        cd "$dir" || fail "cd $dir"
        cat >exp.json <<EOF
{
  "experiment_name": "plant-$policy",
  "workloads": [
    {"name": "full", "script": "$BUSY", "args": ["3"],
     "env": {"CARMA_BUSY_REPORT": "full.txt"}},
    {"name": "half", "script": "$BUSY", "args": ["--duty", "0.5", "3"],
     "env": {"CARMA_BUSY_REPORT": "half.txt"}},
    {"name": "sleeper", "script": "sleep", "args": ["3"]}
  ],
  "monitoring": {"interval": "100ms", "baseline_s": 1},
  "attribution": {"idle_policy": "$policy"}
}
EOF
        live_tree intel-2s live
        start_plant live "$conf" truth.csv
        rc=$(run_logged run "$CARMA" run exp.json -o runs --root live)
        stop_plant
        rd=$(head -n 1 run.out)
        if [ "$rc" != 0 ] || [ -z "$rd" ] || [ ! -d "$rd" ]; then
            show run.out run.err
            fail "carma run ($policy): exit status $rc, run directory '$rd'"
        fi
        need_file full.txt half.txt
        rc=0
        "$PY" "$CHECK_RUN" plant "$rd" --config "$conf" --tree live --truth truth.csv \
            --policy "$policy" --busy full=full.txt --busy half=half.txt \
            --tol-total 0.01 --tol-job "$TOL_JOB" --residual 1e-4 || rc=$?
        cd "$top" || fail "cd"
        case $rc in
        0)
            verdict=pass
            break
            ;;
        3) verdict=inconclusive ;;
        4)
            misses=$((misses + 1))
            [ $misses -lt 2 ] ||
                fail "carma run ($policy): a job's energy missed its fair truth twice"
            verdict=inconclusive
            note "policy $policy: a job's energy missed its bound once; trying again"
            ;;
        *) fail "carma run ($policy) disagrees with the plant's ground truth" ;;
        esac
    done
    [ "$verdict" = pass ] || inconclusive+=("$policy")
done
[ ${#inconclusive[@]} -eq 0 ] ||
    skip "the machine's background load kept changing; per-job energies not checked for" \
        "${inconclusive[*]} (totals and residuals were)"
exit 0
