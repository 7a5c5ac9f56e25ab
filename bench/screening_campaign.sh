#!/usr/bin/env bash
# Issue 43's measurement: the same KernelBench problems, seed and GPU time, searched twice on one
# GPU, once with every candidate measured by the full protocol (--screen off) and once screened
# (--screen on); then evaluations per GPU-minute and the geometric mean of the final bests of each
# arm (bench/screening_summary.py). Usage on the GPU node, after scripts/device.sh has built
# build-gpu/:
#   OUT=DIR SECONDS_PER_ARM=1200 SEGMENT_SECONDS=270 bench/screening_campaign.sh CONTRACTS_DIR [ARM...]
# CONTRACTS_DIR holds the contracts (*.json, in it or in level*/ below it); ARM is off and/or on
# (default both, off first). Each arm runs for SECONDS_PER_ARM in all, in segments of at most
# SEGMENT_SECONDS (default: all of it at once): one call runs the next segment of each arm, so that a
# measurement longer than one device call resumes across calls and sessions (the first segment
# `kevo run`s, the later ones `kevo resume` the arm's campaign file; `timeout`'s SIGTERM ends a
# segment, and kevo commits what was measured and prints its engine summary to the segment's log).
# OUT keeps each arm's seconds run so far (arm_ARM.seconds); an arm that has run them all gets its
# report, and once both have, the summary prints. POPULATION (default 4) and ISLANDS (default 1)
# shape the search; TRIALS (default 1) and MAX_SECONDS (default 0.5) the full protocol, as the
# KernelBench campaigns of bench/kernelbench_campaign.sh; TORCH_BASELINE adds torch.compile figures.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(cd "${1:?usage: OUT=DIR $0 CONTRACTS_DIR [off] [on]}" && pwd)
shift
arms=("$@")
[ ${#arms[@]} -gt 0 ] || arms=(off on)
out=${OUT:-$root/bench-out/screening}
kevo=${BUILD_DIR:-$root/build-gpu}/kevo
total=${SECONDS_PER_ARM:-240}
segment=${SEGMENT_SECONDS:-$total}
mkdir -p "$out"
mapfile -t tasks < <(find "$dir" -maxdepth 2 -name '*.json' | sort -V)
[ ${#tasks[@]} -gt 0 ] || { echo "$0: no contract under $dir" >&2; exit 2; }
tb=()
[ -n "${TORCH_BASELINE:-}" ] && tb=(--torch-baseline "$TORCH_BASELINE")
for arm in "${arms[@]}"; do
  case $arm in on|off) ;; *) echo "$0: an arm is on or off, got '$arm'" >&2; exit 2 ;; esac
  [ -s "$out/report_$arm.json" ] && { echo "arm $arm: done before ($out/report_$arm.json)"; continue; }
  done_s=$(cat "$out/arm_$arm.seconds" 2>/dev/null || echo 0)
  if [ "$done_s" -lt "$total" ]; then
    run_s=$(( total - done_s < segment ? total - done_s : segment ))
    k=$(ls "$out"/campaign_"$arm".*.log 2>/dev/null | wc -l)
    if [ "$done_s" -eq 0 ]; then
      rm -f "$out/campaign_$arm.h5" "$out"/campaign_"$arm".*.log
      k=0
      cmd=(run "${tasks[@]}" --out "$out/campaign_$arm.h5" --screen "$arm" --seed 1 --budget-evals 100000
           --population "${POPULATION:-4}" --islands "${ISLANDS:-1}" --trials "${TRIALS:-1}"
           --max-seconds "${MAX_SECONDS:-0.5}" "${tb[@]}")
    else
      cmd=(resume "$out/campaign_$arm.h5")
    fi
    echo "arm $arm: segment $k, ${#tasks[@]} tasks, $run_s s (of $total; $done_s run before)"
    timeout -s TERM -k 20 "$run_s" "$kevo" "${cmd[@]}" > "$out/campaign_$arm.$k.log" 2>&1
    echo "arm $arm: exit $? ($(grep -m1 '^engine:' "$out/campaign_$arm.$k.log"))"
    echo $(( done_s + run_s )) > "$out/arm_$arm.seconds"
  fi
  [ "$(cat "$out/arm_$arm.seconds")" -ge "$total" ] &&
    "$kevo" report "$out/campaign_$arm.h5" --json "$out/report_$arm.json" "${tb[@]}" > /dev/null
done
[ -s "$out/report_off.json" ] && [ -s "$out/report_on.json" ] &&
  python3 "$root/bench/screening_summary.py" "$out"
exit 0
