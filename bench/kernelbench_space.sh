#!/usr/bin/env bash
# Issue 19's CPU acceptance over imported KernelBench contracts: for each contract, N random legal
# genomes (spread evenly over its design spaces, at least one per space; PER=space: N per space)
# rendered into plans and compiled with NVRTC for sm_90a and sm_100a (`kevo space --sample P
# --compile`, whose compile pool already uses every core, so JOBS above 1 only oversubscribes).
# About 0.4 s of a core per elementwise compile and 1 to 1.5 s per convolution one, so the full
# N = 200 over the 198 contracts is hours (a level 2 contract is 3 to 15 minutes of a 2-core host):
# the run is resumable. Each contract's report is kept in
# OUT/<level>/<name>.txt once `kevo space` has finished it, and a later run (any session) does only
# the contracts without one. Usage, after bench/import_kernelbench.sh has made CONTRACTS_DIR:
#   OUT=DIR [JOBS=1] [SECONDS_LEFT=S] bench/kernelbench_space.sh CONTRACTS_DIR [N=200]
# LIST=FILE limits the run to the contracts FILE names, one LEVEL/NAME a line (level2/6_Conv3d_...).
# It stops starting contracts once SECONDS_LEFT (default: no limit) have passed, then prints the
# totals over everything OUT holds: contracts done, samples rendered and compiled, invalid plans,
# compile failures (each failing contract named). Exit 1 if any failed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(cd "${1:?usage: OUT=DIR $0 CONTRACTS_DIR [N]}" && pwd)
n=${2:-200}
out=${OUT:?set OUT to the folder that keeps the reports}
kevo=${KEVO:-$root/build/kevo}
deadline=$(( $(date +%s) + ${SECONDS_LEFT:-31536000} ))
mkdir -p "$out"
per=${PER:-task}
export kevo n out deadline per

one() {
  local json=$1 level name report
  level=$(basename "$(dirname "$json")")
  name=$(basename "$json" .json)
  report=$out/$level/$name.txt
  [ -s "$report" ] && return 0
  [ "$(date +%s)" -ge "$deadline" ] && return 0
  mkdir -p "$out/$level"
  local samples=$n spaces
  if [ "$per" = task ]; then
    spaces=$("$kevo" space "$json" 2>/dev/null | sed -n '1s/.*: \([0-9]*\) design spaces*$/\1/p')
    [ "${spaces:-0}" -gt 0 ] && samples=$(( (n + spaces - 1) / spaces ))
  fi
  if "$kevo" space "$json" --sample "$samples" --compile --arch sm_90a --arch sm_100a > "$report.part" 2>&1; then
    mv "$report.part" "$report"
  else
    echo "kevo space exited $?" >> "$report.part"
    mv "$report.part" "$report"
  fi
  echo "$level/$name: $(grep -E '^(rendered|compiled)' "$report" | tr '\n' ' ')"
}
export -f one

if [ -n "${LIST:-}" ]; then
  [ -r "$LIST" ] || { echo "$0: LIST=$LIST: no such file" >&2; exit 2; }
  contracts=()
  for name in $(grep -v '^\s*$' "$LIST"); do
    [ -f "$dir/$name.json" ] || { echo "$0: LIST=$LIST: no contract $dir/$name.json" >&2; exit 2; }
    contracts+=("$dir/$name.json")
  done
else
  shopt -s nullglob  # a level with no contracts adds none
  contracts=("$dir"/level1/*.json "$dir"/level2/*.json)
  shopt -u nullglob
fi
[ ${#contracts[@]} -eq 0 ] || printf '%s\n' "${contracts[@]}" | xargs -P "${JOBS:-1}" -I{} bash -c 'one "$@"' _ {}

# Totals over every report kept so far.
done_count=0 rendered=0 invalid=0 compiled=0 failed=0 bad=()
for report in "$out"/level*/*.txt; do
  [ -e "$report" ] || continue
  done_count=$((done_count + 1))
  r=$(sed -n 's/^rendered \([0-9]*\) samples, \([0-9]*\) with invalid plans.*/\1 \2/p' "$report")
  c=$(sed -n 's/^compiled \([0-9]*\): \([0-9]*\) ok, \([0-9]*\) failed.*/\1 \3/p' "$report")
  read -r rn iv <<< "${r:-0 0}"
  read -r cn cf <<< "${c:-0 0}"
  rendered=$((rendered + rn)) invalid=$((invalid + iv)) compiled=$((compiled + cn)) failed=$((failed + cf))
  if [ "${iv:-0}" -gt 0 ] || [ "${cf:-0}" -gt 0 ] || grep -q "^kevo space exited" "$report"; then
    bad+=("$(basename "$(dirname "$report")")/$(basename "$report" .txt)")
  fi
done
total=$(ls "$dir"/level1/*.json "$dir"/level2/*.json | wc -l)
echo "kernelbench_space (N=$n per ${per}): $done_count of $total contracts done; $rendered rendered, $invalid invalid plans; $compiled compiled, $failed failed"
[ ${#bad[@]} -gt 0 ] && echo "failed: ${bad[*]}"
[ ${#bad[@]} -eq 0 ]
