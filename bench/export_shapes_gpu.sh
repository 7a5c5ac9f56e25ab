#!/usr/bin/env bash
# GPU check of shape-general exports (issue 22): for 7 development tasks, `kevo export --general`
# exports the best kernel of an H200 campaign (results/campaigns/h200-floor.h5) for every shape its
# conditions admit inside the axis ranges tasks/ declares, after verifying it on 24 unseen shapes
# through kevo's runner; then eval_gpu_tests' ExportShapesGpu builds a program with nvcc around each
# header and runs it on 24 other unseen shapes (its own seed) against the LibTorch reference.
# Prints one line per task: shapes verified at export, shapes run, max error, pass/fail. Usage on
# the GPU node (after scripts/setup.sh, or with BUILD=1 to build first):
#   bench/export_shapes_gpu.sh [CAMPAIGN=results/campaigns/h200-floor.h5]   (VERIFY_SHAPES: shapes verified at export, 24)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${KEVO_BUILD:-$root/build}
campaign=${1:-$root/results/campaigns/h200-floor.h5}
if [ "${BUILD:-0}" = 1 ]; then
  (cd "$root" && JOBS=${JOBS:-16} scripts/setup.sh > "${TMPDIR:-/tmp}/export_shapes_build.log" 2>&1) \
    || { echo "export_shapes_gpu: the build failed: $(tail -3 "${TMPDIR:-/tmp}/export_shapes_build.log")"; exit 1; }
fi
tasks=(01_relu 03_softmax 05_layer_norm 06_sum_dim1 09_cumsum 11_hinge_loss 12_max_pool2d)
out=$(mktemp -d)
args=()
for t in "${tasks[@]}"; do
  args+=(--task "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['name'])" "$root/tasks/$t.json")")
  args+=(--ranges "$root/tasks/$t.json")
done
start=$(date +%s)
if ! "$build/kevo" export "$campaign" --general "${args[@]}" --verify-shapes "${VERIFY_SHAPES:-24}" --max-shape-bytes 1073741824 \
     --out "$out" > "$out/export.txt" 2>&1; then
  echo "export_shapes_gpu: kevo export --general refused:"
  cat "$out/export.txt"
  exit 1
fi
sed 's/^/  /' "$out/export.txt"
echo "export_shapes_gpu: exported in $(( $(date +%s) - start )) s; programs around the headers:"
start=$(date +%s)
status=0
KEVO_EXPORT_SHAPES_DIR=$out "$build/tests/eval_gpu_tests" --gtest_filter='ExportShapesGpu.*' > "$out/check.txt" 2>&1 \
  || status=$?
grep -E ' verified [0-9]+ at export' "$out/check.txt" || true
grep -E 'Failure|error|FAILED|SKIPPED' "$out/check.txt" | head -20 || true
echo "export_shapes_gpu: checked in $(( $(date +%s) - start )) s (headers and logs in $out): $([ $status = 0 ] && echo pass || echo FAIL)"
exit $status
