#!/usr/bin/env bash
# The generic family's CPU acceptance over a folder of contracts (default: tasks/, tasks/half/,
# tasks/train/): for each, whether the generic space lowers, its legal genomes (as `kevo space`
# counts them), and N random genomes rendered and compiled with NVRTC for sm_90a and sm_100a.
# Usage: bench/generic_space.sh [N=200] [CONTRACT_DIR...]; JOBS contracts at a time (default 2).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kevo=${KEVO:-$root/build/kevo}
n=${1:-200}
shift || true
dirs=("$@")
[ ${#dirs[@]} -eq 0 ] && dirs=("$root/tasks" "$root/tasks/half" "$root/tasks/train")
export KEVO_GENERIC=everywhere kevo n
one() {
  local task=$1 out rc name legal
  name=$(basename "$task" .json)
  out=$("$kevo" space "$task" --sample "$n" --compile --arch sm_90a --arch sm_100a 2>&1)
  rc=$?
  legal=$(echo "$out" | grep -A1 '(family generic)' | sed -n 's/.* \([0-9]*\) legal for every workload.*/\1/p; s/.*about \([0-9]*\) legal.*/\1/p' | head -1)
  if ! echo "$out" | grep -q '(family generic)'; then
    echo "$name: generic=no $(echo "$out" | head -1 | tr -d '\n')"
  else
    echo "$name: generic=yes legal=${legal:-?} rc=$rc $(echo "$out" | grep -E '^rendered|^compiled' | tr '\n' ' ')"
  fi
}
export -f one
start=$(date +%s)
for d in "${dirs[@]}"; do ls "$d"/*.json; done | xargs -P "${JOBS:-2}" -I{} bash -c 'one "$@"' _ {} | sort > "${OUT:-/dev/stdout}"
echo "generic_space: $(( $(date +%s) - start )) s" >&2
