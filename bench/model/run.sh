#!/usr/bin/env bash
# run.sh: the power models' accuracy on the simulated plant, against the plant's own law.
#
# usage: bench/model/run.sh BUILD_DIR [TRIES]      (TRIES: default 3)
#
# Each try is one pass of tests/integration/test_model.sh (two short `carma run`s at different
# loads on the plant, `carma model fit` on them, `carma model predict` on a third, held-out
# run; tests/fakes/plant/intel-2s.conf: the node's cpu kind is 60 + 240 u W and dram 8 + 32 u
# W, u the machine's CPU busy fraction). The peer is that law, known exactly: each try prints
# the recovered baseline and slope per kind against it, the 5-fold MAPE of the fit, and the
# held-out run's node MAPE and R². About 30 s a try; the plant reads this machine's real CPU
# load, so run it on a quiet machine.
set -euo pipefail
build=${1:?usage: bench/model/run.sh BUILD_DIR [TRIES]}
tries=${2:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[[ -x $build/carma ]] || { echo "run.sh: $build/carma is missing (ninja -C $build)" >&2; exit 2; }
echo "carma model fit/predict on the simulated plant, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "truth: cpu 60 W + 240 W x u, dram 8 W + 32 W x u (two sockets of intel-2s.conf)"
for ((i = 1; i <= tries; i++)); do
    out=$(CARMA_TEST_VERBOSE=1 bash "$here/tests/integration/run.sh" "$build" test_model 2>&1 || true)
    echo "try $i ($(date -u '+%H:%M:%S')): $(grep -Eo '^(PASS|FAIL|SKIP) test_model' <<<"$out" | head -n 1)"
    grep -E '^ +(cpu|dram): baseline|^ +held-out run:|node utilization spans' <<<"$out" | sed 's/^ */  /'
done
