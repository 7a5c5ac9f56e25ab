#!/usr/bin/env bash
# Issue 19's campaign over imported KernelBench problems: every STRIDE-th contract of level 1 and of
# level 2 (default 4: 25 + 25 tasks across the categories, the problems being numbered by category),
# eager and torch.compile timed by tools/torch_baseline.py on the same GPU, then one kevo campaign
# over them (random policy, BUDGET evaluations per task), then the per-level summary of
# bench/kernelbench_summary.py. Resumable: the baseline and the campaign file are kept in OUT, and a
# later call (another device session) continues where the deadline (SECONDS_LEFT, default 540)
# stopped it. Usage on the GPU node, after scripts/device.sh has built build-gpu/:
#   OUT=DIR bench/kernelbench_campaign.sh CONTRACTS_DIR
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(cd "${1:?usage: OUT=DIR $0 CONTRACTS_DIR}" && pwd)
out=${OUT:-$root/bench-out/kb-campaign}
kevo=${BUILD_DIR:-$root/build-gpu}/kevo
stride=${STRIDE:-4}
deadline=$(( $(date +%s) + ${SECONDS_LEFT:-540} ))
left() { echo $(( deadline - $(date +%s) )); }
mkdir -p "$out"

tasks=()
for level in level1 level2; do
  mapfile -t files < <(ls "$dir/$level" | grep "\.json$" | sort -n | sed "s|^|$dir/$level/|")
  for ((i = 0; i < ${#files[@]}; i += stride)); do tasks+=("${files[$i]}"); done
done
printf '%s\n' "${tasks[@]}" > "$out/tasks.txt"
echo "${#tasks[@]} tasks (every ${stride}th of each level): $out/tasks.txt"

baseline=$out/torch_baseline.json
if [ ! -s "$baseline" ]; then
  timeout $(( $(left) / 3 )) python3 "$root/tools/torch_baseline.py" "${tasks[@]}" --out "$baseline" --max-seconds 1 \
    > "$out/torch_baseline.log" 2>&1
  echo "torch baseline: exit $? ($(tail -1 "$out/torch_baseline.log"))"
fi
tb=()
[ -s "$baseline" ] && tb=(--torch-baseline "$baseline")

file=$out/campaign.h5
t=$(left)
if [ "$t" -gt 30 ]; then
  if [ -f "$file" ]; then
    timeout -k 5 "$t" "$kevo" resume "$file" >> "$out/campaign.log" 2>&1
  else
    timeout -k 5 "$t" "$kevo" run "${tasks[@]}" --out "$file" --budget-evals "${BUDGET:-24}" --population 8 --islands 1 \
      --trials 1 --max-seconds 0.5 --seed 1 "${tb[@]}" >> "$out/campaign.log" 2>&1
  fi
  echo "campaign: exit $? ($(tail -1 "$out/campaign.log"))"
fi
[ -f "$file" ] && "$kevo" report "$file" --json > "$out/report.json" && python3 "$root/bench/kernelbench_summary.py" "$out/report.json"
