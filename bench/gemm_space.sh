#!/usr/bin/env bash
# The gemm family's full CPU acceptance: for every GEMM task (task 13 and the 16-bit and TF32 test
# contracts), N random genomes legal on each architecture render into valid plans and compile
# with NVRTC for sm_90a and sm_100a (kevo space, through the compile pool), then a wgmma and an
# mma.sync instance of each task show HGMMA/HMMA in their SASS, and N TMA instances of the 16-bit
# linear task UTMALDG and HGMMA without LDGSTS (cuobjdump; the gtests).
# Usage: bench/gemm_space.sh [N=200]; needs build/kevo and build/tests/lower_tests.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kevo=${KEVO:-$root/build/kevo}
n=${1:-200}
failed=0
start=$(date +%s)
for task in tasks/13_linear_leaky_relu.json tests/data/tasks/linear_bf16_gelu.json \
            tests/data/tasks/matmul_fp16_residual.json tests/data/tasks/matmul_tf32_loose.json \
            tests/data/tasks/bmm_fp16_transposed_b_residual.json tests/data/tasks/bmm_gelu_bias.json; do
  out=$("$kevo" space "$root/$task" --sample "$n" --compile --arch sm_90a --arch sm_100a 2>&1)
  rc=$?
  legal=$(echo "$out" | grep -A1 '^  gemm/' | grep -oE '[0-9]+ genomes, (about )?[0-9]+ legal')
  echo "$(basename "$task" .json): gemm space $legal; $(echo "$out" | grep -E '^rendered|^compiled' | tr '\n' ' ')"
  [ $rc -ne 0 ] && { failed=$((failed + 1)); echo "$out" | grep -vE '^(rendered|compiled)' | tail -5; }
done
"$root/build/tests/lower_tests" --gtest_filter='GemmSpaces.SampledGenomes*' > /tmp/gemm_space_sass.log 2>&1 ||
  { failed=$((failed + 1)); tail -20 /tmp/gemm_space_sass.log; }
grep -E 'OK|SKIPPED|FAILED' /tmp/gemm_space_sass.log | head -3
# N TMA instances (the TMA subspace is small: a few in 200 uniform draws of the legal genomes).
KEVO_GEMM_SAMPLES=$n "$root/build/tests/lower_tests" --gtest_filter='GemmSpaces.Tma*' > /tmp/gemm_space_tma.log 2>&1 ||
  { failed=$((failed + 1)); tail -20 /tmp/gemm_space_tma.log; }
grep -E 'OK|SKIPPED|FAILED' /tmp/gemm_space_tma.log | head -3
echo "gemm_space: $failed failure(s), $(( $(date +%s) - start )) s"
exit $((failed > 0))
