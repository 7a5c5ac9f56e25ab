#!/usr/bin/env bash
# Issue 43's measurement: the same KernelBench problems, seed and GPU time, searched twice on one
# GPU, once with every candidate measured by the full protocol (--screen off) and once screened
# (--screen on); then evaluations per GPU-minute and the geometric mean of the final bests of each
# arm (bench/screening_summary.py). Each arm runs for exactly SECONDS_PER_ARM: `timeout`'s SIGTERM
# stops it, and kevo commits what was measured and prints its engine summary. Usage on the GPU
# node, after scripts/device.sh has built build-gpu/:
#   OUT=DIR SECONDS_PER_ARM=240 bench/screening_campaign.sh CONTRACTS_DIR [ARM...]
# CONTRACTS_DIR holds the contracts (*.json, in it or in level*/ below it); ARM is off and/or on
# (default both, off first). An arm whose report exists is not run again, so a later call (another
# device session) runs only the arm left. POPULATION (default 4) and ISLANDS (default 1) shape the
# search; TRIALS (default 1) and MAX_SECONDS (default 0.5) the full protocol, as the KernelBench
# campaigns of bench/kernelbench_campaign.sh; TORCH_BASELINE adds torch.compile figures.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(cd "${1:?usage: OUT=DIR $0 CONTRACTS_DIR [off] [on]}" && pwd)
shift
arms=("$@")
[ ${#arms[@]} -gt 0 ] || arms=(off on)
out=${OUT:-$root/bench-out/screening}
kevo=${BUILD_DIR:-$root/build-gpu}/kevo
mkdir -p "$out"
mapfile -t tasks < <(find "$dir" -maxdepth 2 -name '*.json' | sort -V)
[ ${#tasks[@]} -gt 0 ] || { echo "$0: no contract under $dir" >&2; exit 2; }
tb=()
[ -n "${TORCH_BASELINE:-}" ] && tb=(--torch-baseline "$TORCH_BASELINE")
for arm in "${arms[@]}"; do
  case $arm in on|off) ;; *) echo "$0: an arm is on or off, got '$arm'" >&2; exit 2 ;; esac
  [ -s "$out/report_$arm.json" ] && { echo "arm $arm: done before ($out/report_$arm.json)"; continue; }
  rm -f "$out/campaign_$arm.h5"
  echo "arm $arm: ${#tasks[@]} tasks, ${SECONDS_PER_ARM:-240} s"
  timeout -s TERM -k 20 "${SECONDS_PER_ARM:-240}" "$kevo" run "${tasks[@]}" --out "$out/campaign_$arm.h5" \
    --screen "$arm" --seed 1 --budget-evals 100000 --population "${POPULATION:-4}" --islands "${ISLANDS:-1}" \
    --trials "${TRIALS:-1}" --max-seconds "${MAX_SECONDS:-0.5}" "${tb[@]}" > "$out/campaign_$arm.log" 2>&1
  echo "arm $arm: exit $? ($(grep -m1 '^engine:' "$out/campaign_$arm.log"))"
  "$kevo" report "$out/campaign_$arm.h5" --json "$out/report_$arm.json" "${tb[@]}" > /dev/null
done
[ -s "$out/report_off.json" ] && [ -s "$out/report_on.json" ] &&
  python3 "$root/bench/screening_summary.py" "$out"
exit 0
