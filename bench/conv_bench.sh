#!/usr/bin/env bash
# The conv family on one H200 without kevo: builds bench/conv_bench.cu's shapes in parallel (nvcc,
# sm_90a), runs each (every instance checked against a direct fp64 convolution at 1e-4, then
# TFLOP/s), counts the tensor-core instructions in their SASS, and times cuDNN fp32 (kevo's
# library family today), cuDNN TF32, eager PyTorch and torch.compile on the same problems
# (bench/conv_torch.py). kevo's own path (rendered instances through the runner and the oracle)
# is bench/conv_gpu.sh's second half.
# Usage: bench/conv_bench.sh [OUT_DIR]   (logs: OUT_DIR/conv_shape*.log, sass.txt, torch.log)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-${OUT:-/tmp/conv_bench}}
bin=$(mktemp -d)
mkdir -p "$out"
shapes=${SHAPES_TO_RUN:-"1 2 3 4 5"}
start=$(date +%s)
for s in $shapes; do
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DSHAPE=$s "$root/bench/conv_bench.cu" -o "$bin/s$s" \
    -Xptxas -v > "$out/build_shape$s.log" 2>&1 &
done
wait
echo "built in $(( $(date +%s) - start )) s; spills: $(grep -c ' [1-9][0-9]* bytes spill stores' "$out"/build_shape*.log | tr '\n' ' ')"
failed=0
for s in $shapes; do
  [ -x "$bin/s$s" ] || { echo "shape $s did not build:"; grep -m5 error "$out/build_shape$s.log"; failed=1; continue; }
  timeout ${SHAPE_TIMEOUT:-90} "$bin/s$s" > "$out/conv_shape$s.log" 2>&1 || failed=1
  cat "$out/conv_shape$s.log"
done
if command -v cuobjdump > /dev/null; then
  for s in $shapes; do
    [ -x "$bin/s$s" ] && echo "shape $s SASS: $(cuobjdump -sass "$bin/s$s" | grep -c 'HMMA') HMMA"
  done | tee "$out/sass.txt"
fi
timeout ${TORCH_TIMEOUT:-240} python3 "$root/bench/conv_torch.py" ${TORCH_ARGS:-} 2>&1 | tee "$out/torch.log"
echo "conv_bench: $( [ $failed = 0 ] && echo ok || echo FAILURES ), $(( $(date +%s) - start )) s"
exit $failed
