#!/usr/bin/env bash
# GPU check of the spaces (issue 19): for every contract, N random genomes of every space (the
# generic one included: KEVO_GENERIC=everywhere) rendered by `kevo space` and evaluated by
# `kevo eval` on every workload, one correctness trial and a short timing each. Prints one line
# per candidate that is not ok and a total. Usage on the GPU node:
#   bench/generic_gpu_check.sh [N=2] [CONTRACT_DIR...]   (default: tasks, tasks/half, tasks/train)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kevo=${KEVO:-$root/build/kevo}
n=${1:-2}
shift || true
dirs=("$@")
[ ${#dirs[@]} -eq 0 ] && dirs=("$root/tasks" "$root/tasks/half" "$root/tasks/train")
export KEVO_GENERIC=everywhere
work=$(mktemp -d)
ok=0 bad=0 start=$(date +%s)
for d in "${dirs[@]}"; do
  for task in "$d"/*.json; do
    out="$work/$(basename "$task" .json)"
    mkdir -p "$out"
    "$kevo" space "$task" --sample "$n" --out "$out" > "$out/space.txt" 2>&1 || echo "$(basename "$task"): kevo space failed: $(tail -1 "$out/space.txt")"
    for c in "$out"/*.cu; do
      [ -e "$c" ] || continue
      if "$kevo" eval "$task" "$c" --trials 1 --max-seconds 0.05 > "$c.txt" 2>&1; then
        ok=$((ok + 1))
      else
        bad=$((bad + 1))
        echo "$(basename "$task") $(basename "$c"): $(grep -m1 -iE 'fail|error|mismatch|outside' "$c.txt" || tail -1 "$c.txt")"
      fi
    done
  done
done
echo "generic_gpu_check: $ok ok, $bad not ok, $(( $(date +%s) - start )) s (candidates and logs in $work)"
exit $((bad > 0))
