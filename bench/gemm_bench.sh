#!/usr/bin/env bash
# The gemm family on one H200 without kevo: builds bench/gemm_bench.cu's groups of instances in
# parallel (nvcc, sm_90a), runs each (correctness against cuBLAS at the tasks' tolerance, then
# TFLOP/s beside cuBLAS fp32, TF32 and bf16), counts the tensor-core instructions in their SASS,
# and times eager PyTorch and torch.compile on the same problems (bench/gemm_torch.py). Groups 6
# and 7 are the warp-specialised TMA path (bf16; 6 times 8192^3 with and without the fused tail
# beside cuBLAS bf16 and cuBLAS + a tail kernel). GROUPS_TO_RUN="6 7" TORCH_ARGS=... picks groups.
# Usage: bench/gemm_bench.sh [OUT_DIR]   (logs: OUT_DIR/gemm_group*.log, sass.txt, torch.log)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-${OUT:-/tmp/gemm_bench}}
bin=$(mktemp -d)
mkdir -p "$out"
groups=${GROUPS_TO_RUN:-"1 2 3 4 5 6 7"}
for g in $groups; do
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DGROUP=$g "$root/bench/gemm_bench.cu" -o "$bin/g$g" \
    -lcublas -Xptxas -v > "$out/build_group$g.log" 2>&1 &
done
wait
for g in $groups; do
  [ -x "$bin/g$g" ] || { echo "group $g did not build:"; tail -5 "$out/build_group$g.log"; continue; }
  timeout ${GROUP_TIMEOUT:-60} "$bin/g$g" > "$out/gemm_group$g.log" 2>&1
  echo "group $g: rc=$?"; cat "$out/gemm_group$g.log"
done
if command -v cuobjdump > /dev/null; then
  for g in $groups; do
    [ -x "$bin/g$g" ] && echo "group $g SASS: $(cuobjdump -sass "$bin/g$g" | grep -cE 'HGMMA') HGMMA, $(cuobjdump -sass "$bin/g$g" | grep -cE 'HMMA') HMMA, $(cuobjdump -sass "$bin/g$g" | grep -cE 'UTMALDG') UTMALDG"
  done | tee "$out/sass.txt"
fi
timeout 150 python3 "$root/bench/gemm_torch.py" ${TORCH_ARGS:-} 2>&1 | tee "$out/torch.log"
