#!/usr/bin/env bash
# The templates' full CPU acceptance: for every development task, N random legal genomes of every
# design space render into valid plans and compile with NVRTC for sm_90a and sm_100a (CI runs a
# sample of this through mutate_tests). Usage: bench/space_bench.sh [N=200]; needs build/kevo.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kevo=${KEVO:-$root/build/kevo}
n=${1:-200}
failed=0
start=$(date +%s)
for task in "$root"/tasks/*.json; do
  out=$("$kevo" space "$task" --sample "$n" --compile --arch sm_90a --arch sm_100a 2>&1)
  rc=$?
  name=$(basename "$task" .json)
  spaces=$(echo "$out" | sed -n 's/^[a-z_0-9]*: \([0-9]*\) design space.*/\1/p')
  echo "$name: ${spaces:-0} spaces; $(echo "$out" | grep -E '^rendered|^compiled' | tr '\n' ' ')"
  [ $rc -ne 0 ] && { failed=$((failed + 1)); echo "$out" | grep -vE '^(rendered|compiled)' | tail -5; }
done
echo "space_bench: $failed task(s) failed, $(( $(date +%s) - start )) s"
exit $((failed > 0))
