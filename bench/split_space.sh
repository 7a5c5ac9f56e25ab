#!/usr/bin/env bash
# A reduction after the GEMM, the CPU acceptance: for every split contract (linear + softmax,
# log_softmax, layer norm, logsumexp; fp32 and 16-bit), N random genomes legal on each
# architecture of every space render into valid plans and compile with NVRTC for sm_90a and
# sm_100a (kevo space, through the compile pool); then the gtests compile the row-statistics space
# on every instruction path (mma.sync, wgmma, TMA, persistent) and N samples of each split space.
# Usage: bench/split_space.sh [N=20]; needs build/kevo and build/tests/lower_tests.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kevo=${KEVO:-$root/build/kevo}
n=${1:-20}
failed=0
start=$(date +%s)
for task in linear_softmax linear_softmax_bf16 linear_layer_norm linear_logsumexp linear_bf16_log_softmax; do
  t0=$(date +%s)
  out=$("$kevo" space "$root/tests/data/tasks/$task.json" --sample "$n" --compile --arch sm_90a --arch sm_100a 2>&1)
  rc=$?
  echo "$task ($(( $(date +%s) - t0 )) s):"
  echo "$out" | grep -A1 '^  gemm/' | grep -oE '^  gemm/[^ ]+|[0-9]+ genomes, (about )?[0-9]+ legal' | paste - - | sed 's/^/ /'
  echo "$out" | grep -E '^rendered|^compiled' | sed 's/^/  /'
  [ $rc -ne 0 ] && { failed=$((failed + 1)); echo "$out" | grep -vE '^(rendered|compiled)' | tail -5; }
done
KEVO_SPLIT_SAMPLES=$n "$root/build/tests/lower_tests" --gtest_filter='SplitSpaces.Sampled*:RowStatsSpaces.Sampled*' \
  > /tmp/split_space_gtest.log 2>&1 || { failed=$((failed + 1)); tail -20 /tmp/split_space_gtest.log; }
grep -E '^\[ +(OK|FAILED|SKIPPED) ' /tmp/split_space_gtest.log
echo "split_space: $failed failure(s), $(( $(date +%s) - start )) s"
exit $((failed > 0))
