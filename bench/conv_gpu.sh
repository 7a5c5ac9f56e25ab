#!/usr/bin/env bash
# The conv family's GPU acceptance on an H200 in one device call (about 8 minutes; or two calls:
# bench/conv_bench.sh OUT, about 5, then the rest, about 4). First the standalone instances against
# a direct fp64 convolution, their TFLOP/s beside cuDNN fp32, cuDNN TF32, eager and torch.compile
# (bench/conv_bench.sh: nvcc only, no kevo build; shape 5 is a conv3d); then kevo's own path:
# scripts/device.sh builds build-gpu/ (about 110 s) and runs the GPU template test on the
# convolution tasks (conv2d, conv1d and the two conv3d contracts of tests/data/tasks), whose sampled
# conv instances (and the test's conv corners) go through the runner: fresh inputs, poisoned
# outputs, the LibTorch reference at the task's tolerance on every workload, timing beside eager.
# Usage: OUT=DIR KEVO_COMMIT=<hash> bench/conv_gpu.sh   (logs under OUT/conv)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/bench-out}/conv
mkdir -p "$out"
start=$(date +%s)
"$root/bench/conv_bench.sh" "$out"
echo "conv_bench.sh: exit $?, $(( $(date +%s) - start )) s"
KEVO_TEMPLATE_GPU_TASKS=${KEVO_TEMPLATE_GPU_TASKS:-conv2d_relu_bias,conv2d_strided_grouped,conv2d_rgb_stem,conv1d_gelu,conv3d_strided_grouped,conv3d_asymmetric_rgb} \
  KEVO_TEMPLATE_GPU_SAMPLES=${KEVO_TEMPLATE_GPU_SAMPLES:-4} \
  "$root/scripts/device.sh" -R 'TemplatesGpu' -V > "$out/templates_gpu.log" 2>&1
rc=$?
grep -E ' conv/|tests passed|tests failed|FAILED' "$out/templates_gpu.log" | tail -60
echo "TemplatesGpu (conv tasks): exit $rc; conv_gpu: $(( $(date +%s) - start )) s"
