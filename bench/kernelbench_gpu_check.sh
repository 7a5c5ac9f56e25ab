#!/usr/bin/env bash
# Issue 19's GPU correctness sweep over imported KernelBench problems: SAMPLES random genomes of
# every design space of every contract (bench/import_kernelbench.sh writes them: OUT/level1,
# OUT/level2), built in the compile pool and evaluated by kevo's runner on every workload at the
# contract's tolerance, one trial and a short timing each (TemplatesGpu with KEVO_TEMPLATE_GPU_DIRS). The sweep is long (about 480
# instances for 198 problems at 2 per space): SHARD=i/n runs every n-th contract from the i-th, so
# that it can be spread over device sessions. Prints one line per instance and a total.
# Usage on the GPU node, after scripts/device.sh has built build-gpu/:
#   SHARD=0/3 bench/kernelbench_gpu_check.sh CONTRACTS_DIR [LOG]
# DIRS=a,b samples those folders' contracts instead of CONTRACTS_DIR/level1 and level2 (the
# half-precision development contracts: DIRS=$PWD/tasks/half).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:?usage: SHARD=i/n $0 CONTRACTS_DIR [LOG]}
log=${2:-/dev/stdout}
dir=$(cd "$dir" && pwd)
KEVO_TEMPLATE_GPU_DIRS="${DIRS:-$dir/level1,$dir/level2}" KEVO_TEMPLATE_GPU_SHARD=${SHARD:-0/1} \
  KEVO_TEMPLATE_GPU_SAMPLES=${SAMPLES:-2} KEVO_TEMPLATE_GPU_TRIALS=${TRIALS:-1} \
  "${BUILD_DIR:-$root/build-gpu}/tests/eval_gpu_whole_tests" --gtest_filter='TemplatesGpu.*' > "$log" 2>&1
rc=$?
[ "$log" = /dev/stdout ] || grep -E 'instances, |Failure|: [a-z_]+: ' "$log" | tail -80
echo "kernelbench_gpu_check (shard ${SHARD:-0/1}): exit $rc"
exit $rc
