#!/usr/bin/env bash
# The conv family's full CPU acceptance: for every convolution task (task 14, its bf16 and fp16
# versions, and the test contracts of strides/groups, odd K, conv1d, conv3d and transposed convolutions), N random genomes legal on
# each architecture render into valid plans and compile with NVRTC for sm_90a and sm_100a (kevo
# space, through the compile pool), then an instance of each task shows HMMA in its SASS
# (cuobjdump; the gtest), and the index math matches a direct convolution (conv_host_tests).
# Usage: [CONV_TASKS="a.json b.json"] bench/conv_space.sh [N=200]; needs build/kevo, build/tests/lower_tests and conv_host_tests.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kevo=${KEVO:-$root/build/kevo}
n=${1:-200}
failed=0
start=$(date +%s)
tasks=${CONV_TASKS:-tasks/14_conv2d_relu_bias.json tasks/half/conv2d_relu_bias_bf16.json tasks/half/conv2d_relu_bias_fp16.json
  tests/data/tasks/conv2d_strided_grouped.json tests/data/tasks/conv2d_rgb_stem.json tests/data/tasks/conv1d_gelu.json
  tests/data/tasks/conv3d_strided_grouped.json tests/data/tasks/conv3d_asymmetric_rgb.json
  tests/data/tasks/conv_transpose2d_strided_grouped.json tests/data/tasks/conv_transpose1d_dilated.json
  tests/data/tasks/conv_transpose3d_strided.json tests/data/tasks/conv_transpose2d_bf16.json}
for task in $tasks; do
  out=$("$kevo" space "$root/$task" --sample "$n" --compile --arch sm_90a --arch sm_100a 2>&1)
  rc=$?
  legal=$(echo "$out" | grep -A1 '^  conv/' | grep -oE '[0-9]+ genomes, (about )?[0-9]+ legal')
  echo "$(basename "$task" .json): conv space $legal; $(echo "$out" | grep -E '^rendered|^compiled' | tr '\n' ' ')"
  [ $rc -ne 0 ] && { failed=$((failed + 1)); echo "$out" | grep -vE '^(rendered|compiled)' | tail -5; }
done
"$root/build/tests/lower_tests" --gtest_filter='ConvSpaces.SampledGenomes*' > /tmp/conv_space_sass.log 2>&1 ||
  { failed=$((failed + 1)); tail -20 /tmp/conv_space_sass.log; }
grep -E 'OK|SKIPPED|FAILED' /tmp/conv_space_sass.log | head -3
"$root/build/tests/conv_host_tests" > /tmp/conv_host.log 2>&1 || { failed=$((failed + 1)); tail -20 /tmp/conv_host.log; }
grep -E 'PASSED|FAILED' /tmp/conv_host.log | head -3
echo "conv_space: $failed failure(s), $(( $(date +%s) - start )) s"
exit $((failed > 0))
