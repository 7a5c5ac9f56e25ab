#!/usr/bin/env bash
# Issue 19's campaign over imported KernelBench problems: every STRIDE-th contract of level 1 and of
# level 2 (default 4: 25 + 25 tasks across the categories, the problems being numbered by category),
# eager and torch.compile timed by tools/torch_baseline.py on the same GPU, then one kevo campaign
# over them (random policy, BUDGET evaluations per task), then the per-level summary of
# bench/kernelbench_summary.py. Resumable: the baseline and the campaign file are kept in OUT, and a
# later call (another device session) continues where the deadline (SECONDS_LEFT, default 540)
# stopped it: the baseline measures only the workloads its file lacks (at most half the time left,
# so the campaign always gets the rest), and the campaign, stopped by timeout's SIGTERM, has
# committed each task's part of a generation as it was measured (`kevo resume` goes on from there).
# The report joins the baseline's torch.compile figures for tasks the campaign measured before the
# baseline had them. Usage on the GPU node, after scripts/device.sh has built build-gpu/:
#   OUT=DIR bench/kernelbench_campaign.sh CONTRACTS_DIR
# POPULATION (default 8) is the offspring of a generation; DRY_RUN=1 prints the commands it would run instead.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(cd "${1:?usage: OUT=DIR $0 CONTRACTS_DIR}" && pwd)
out=${OUT:-$root/bench-out/kb-campaign}
kevo=${BUILD_DIR:-$root/build-gpu}/kevo
stride=${STRIDE:-4}
deadline=$(( $(date +%s) + ${SECONDS_LEFT:-540} ))
left() { echo $(( deadline - $(date +%s) )); }
dry=${DRY_RUN:-}
run() { if [ -n "$dry" ]; then echo "would run: $*"; else "$@"; fi; }
mkdir -p "$out"

tasks=()
for level in level1 level2; do
  mapfile -t files < <(ls "$dir/$level" | grep "\.json$" | sort -n | sed "s|^|$dir/$level/|")
  for ((i = 0; i < ${#files[@]}; i += stride)); do tasks+=("${files[$i]}"); done
done
printf '%s\n' "${tasks[@]}" > "$out/tasks.txt"
echo "${#tasks[@]} tasks (every ${stride}th of each level): $out/tasks.txt"

# The tasks whose workloads the baseline's file does not all hold yet (tools/torch_baseline.py
# continues its --out file: what it holds is kept, only the rest is measured).
baseline=$out/torch_baseline.json
missing=$(python3 - "$baseline" "${tasks[@]}" <<'PY'
import json, sys
try:
    with open(sys.argv[1]) as f:
        done = {t["name"]: {w["index"] for w in t["workloads"]} for t in json.load(f)["tasks"]}
except (OSError, ValueError, KeyError, TypeError):
    done = {}
missing = 0
for path in sys.argv[2:]:
    with open(path) as f:
        c = json.load(f)
    missing += not set(range(len(c["workloads"]))) <= done.get(c["name"], set())
print(missing)
PY
)
if [ "$missing" -gt 0 ]; then
  t=$(( $(left) / 2 ))  # at most half of what is left: the campaign gets the rest
  echo "torch baseline: $missing of ${#tasks[@]} tasks to measure, $t s at most"
  if [ "$t" -gt 30 ]; then
    run timeout -k 5 "$t" python3 "$root/tools/torch_baseline.py" "${tasks[@]}" --out "$baseline" --max-seconds 1 \
      >> "$out/torch_baseline.log" 2>&1
    echo "torch baseline: exit $? ($(tail -1 "$out/torch_baseline.log" 2>/dev/null))"
  fi
fi
tb=()
[ -s "$baseline" ] && tb=(--torch-baseline "$baseline")

# Stopped by timeout's SIGTERM, kevo commits what it measured and exits 143 (timeout then says 124).
file=$out/campaign.h5
t=$(left)
if [ "$t" -gt 30 ]; then
  if [ -f "$file" ]; then
    run timeout -k 5 "$t" "$kevo" resume "$file" "${tb[@]}" >> "$out/campaign.log" 2>&1
  else
    run timeout -k 5 "$t" "$kevo" run "${tasks[@]}" --out "$file" --budget-evals "${BUDGET:-24}" --population "${POPULATION:-8}" --islands 1 \
      --trials 1 --max-seconds 0.5 --seed 1 "${tb[@]}" >> "$out/campaign.log" 2>&1
  fi
  echo "campaign: exit $? ($(tail -1 "$out/campaign.log" 2>/dev/null))"
fi
if [ -f "$file" ]; then
  run "$kevo" report "$file" --json "$out/report.json" "${tb[@]}" &&
    run python3 "$root/bench/kernelbench_summary.py" "$out/report.json"
fi
