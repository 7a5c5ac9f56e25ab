#!/usr/bin/env bash
# The GPU runs behind results/: torch.compile baselines, the shipped replay sweeps, the 4-task
# campaign of the search issue (random policy, 500 evaluations per task, one GPU) and the
# floor campaign over all 14 development tasks (best instance per task for the template table).
# Run after scripts/device.sh has built build-gpu/. Every phase is resumable: the command stops
# its phases at the deadline (SECONDS_LEFT, default 540) and a later call continues them.
#   CAMPAIGN_GPU=0 FLOOR_GPU=1 OUT=... bench/gpu_campaigns.sh
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=${OUT:-$root/bench-out}
build=${BUILD_DIR:-$root/build-gpu}
res=${RESULTS:-$root/results}
kevo=$build/kevo
deadline=$(( $(date +%s) + ${SECONDS_LEFT:-540} ))
left() { echo $(( deadline - $(date +%s) )); }
cgpu=${CAMPAIGN_GPU:-0}
fgpu=${FLOOR_GPU:-1}
mkdir -p "$out" "$res/spaces" "$res/campaigns"

campaign_tasks="tasks/05_layer_norm.json tasks/11_hinge_loss.json tasks/13_linear_leaky_relu.json tasks/14_conv2d_relu_bias.json"
baseline=$res/campaigns/torch_baseline.json

# Resumable kevo run: start it, or resume it when its file exists (the file keeps the flags);
# stopped at the deadline (SIGTERM, then KILL), which loses at most the generation in flight.
campaign() {  # file log gpu run-args...
  local file=$1 log=$2 gpu=$3; shift 3
  local t; t=$(left)
  [ "$t" -gt 20 ] || { echo "no time left for $file"; return 0; }
  if [ -f "$file" ]; then
    timeout -k 5 "$t" "$kevo" resume "$file" --gpus "$gpu" >>"$log" 2>&1
  else
    timeout -k 5 "$t" "$kevo" run --out "$file" --gpus "$gpu" "$@" >>"$log" 2>&1
  fi
  echo "$file: exit $? ($(tail -1 "$log"))"
}

# GPU $fgpu: torch.compile baselines for the campaign's tasks, then the replay sweeps, then the floor campaign.
(
  if [ ! -s "$baseline" ]; then
    CUDA_VISIBLE_DEVICES=$fgpu timeout $(( $(left) - 10 )) python3 tools/torch_baseline.py $campaign_tasks \
      --out "$baseline" --max-seconds 5 >"$out/torch_baseline.log" 2>&1
    echo "torch baseline: exit $?"
  fi
  for t in 05_layer_norm 08_gelu_tanh_explicit; do
    t_left=$(left)
    [ "$t_left" -gt 30 ] || break
    timeout -k 5 "$t_left" "$kevo" sweep "tasks/$t.json" --out "$res/spaces/${t#??_}.h5" --limit 200 --gpus "$fgpu" \
      >>"$out/sweep_${t#??_}.log" 2>&1
    echo "sweep $t: exit $? ($(tail -1 "$out/sweep_${t#??_}.log"))"
  done
  campaign "$res/campaigns/h200-floor.h5" "$out/floor.log" "$fgpu" tasks/*.json --budget-evals 64 --population 8 \
    --islands 2 --seed 1
) &
floor_pid=$!

# GPU $cgpu: the search issue's campaign (waits for the baselines so torch.compile figures are attached).
while [ ! -s "$baseline" ] && kill -0 $floor_pid 2>/dev/null && [ "$(left)" -gt 60 ]; do sleep 5; done
tb=()
[ -s "$baseline" ] && tb=(--torch-baseline "$baseline")
campaign "$res/campaigns/h200-random-4tasks.h5" "$out/campaign.log" "$cgpu" $campaign_tasks --budget-evals 500 \
  --population 16 --islands 2 --seed 1 "${tb[@]}"
wait $floor_pid
ls -la "$res/spaces" "$res/campaigns"
