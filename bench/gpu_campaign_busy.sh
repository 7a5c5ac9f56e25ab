#!/usr/bin/env bash
# How busy a real campaign keeps its GPUs (issue 21's GPU acceptance: at least 2,000 evaluations,
# GPU busy at least 95% of wall time). Builds kevo into build-gpu/ (scripts/device.sh, no tests),
# runs a campaign of short evaluations and prints, from the campaign file, the GPU busy share of
# wall time and evaluations per minute, then kevo's own engine summary (busy per GPU, CPU per
# evaluation, where the loop's thread and the builds spent their time).
#
#   KEVO_COMMIT=<hash> bench/gpu_campaign_busy.sh          one GPU (GPU 0), under ~10 minutes with the build
#   GPUS=0,1 BUILD=0 bench/gpu_campaign_busy.sh            the same campaign on two GPUs, kevo already built
#
# The task: tasks/05_layer_norm.json, the development task with the smallest workload (16x64x256x256
# fp32, 570 MB per draw, where most tasks move 4-15 GB; kernels of 0.28 ms (the best found) to a few
# ms; its evaluations took 0.14 s (median) in results/campaigns/h200-floor.h5, before the integrity
# checks of issue 17 added their share: 0.22 s on 2026-12-03, 275 evaluations/min at 0.05 s of timing)
# and 16,848 legal genomes, so 2,000 evaluations are 2,000 distinct candidates. One correctness trial
# and 0.05 s of timing per workload keep 2,000 evaluations near 7.5 minutes, under 10 with the build.
# Environment: GPUS (0), TASKS, BUDGET (2000, per task), POPULATION (16) and ISLANDS
# (2) per task and generation, TRIALS (1), MAX_SECONDS (0.05), SECONDS_LEFT (450: the campaign stops
# proposing after this long, so the call ends in time; it then says how many evaluations it
# reached: run it again with BUILD=0 and more time), BUILD (1), OUT (bench-out/gpu_campaign_busy).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-$root/build-gpu}
out=${OUT:-$root/bench-out/gpu_campaign_busy}
gpus=${GPUS:-0}
tasks=${TASKS:-tasks/05_layer_norm.json}
budget=${BUDGET:-2000}
mkdir -p "$out"

if [ "${BUILD:-1}" = 1 ]; then
  start=$(date +%s)
  BUILD_DIR=$build "$root/scripts/device.sh" -R NoSuchTestXYZ > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - start )) s"
fi

file=$out/campaign-gpus-${gpus//,/_}.h5
"$build/kevo" run $tasks --out "$file" --force --gpus "$gpus" --budget-evals "$budget" \
  --population "${POPULATION:-16}" --islands "${ISLANDS:-2}" --trials "${TRIALS:-1}" --max-seconds "${MAX_SECONDS:-0.05}" \
  --budget-seconds "${SECONDS_LEFT:-450}" --seed 1 > "$out/run.log" 2>&1 || { tail -20 "$out/run.log"; exit 1; }

# From the campaign file: every run's last generation carries the campaign's wall time, the GPUs'
# busy seconds (summed over GPUs) and the GPU count; the measurements are the evaluations.
python3 - "$file" <<'EOF' || { echo "(no h5py here: kevo's own summary follows)"; }
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    g = f["generations"]
    wall, busy, gpus = float(g["wall_seconds"][-1]), float(g["gpu_busy_seconds"][-1]), int(g["gpus"][-1])
    status = f["measurements"]["status"]
    n = len(status)
    failed = sum(1 for s in status[:] if (s.decode() if isinstance(s, bytes) else str(s)) not in ("ok",))
print(f"campaign file: {n} evaluations in {wall:.1f} s on {gpus} GPU(s): {60 * n / wall:.1f} evaluations/min, "
      f"GPU busy {100 * busy / (wall * gpus):.1f}% of wall time ({n - failed} ok)")
print("acceptance: " + ("holds" if n >= 2000 and busy / (wall * gpus) >= 0.95 else "does NOT hold") +
      " (at least 2000 evaluations, GPU busy at least 95%)")
EOF
grep -E '^GPU busy|^engine:' "$out/run.log"
