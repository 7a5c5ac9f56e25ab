#!/usr/bin/env bash
# Reward integrity on the GPU, after scripts/device.sh has built build-gpu/: the GPU test suite, the
# planted hacks evaluated one by one, evaluations per minute of a ~1.7 ms kernel against a build
# of the tree before the defences (BEFORE=build folder of that tree; skipped without one), and the
# best instances of results/campaigns/h200-floor.h5 against the speed of light. Logs go to $OUT
# (default bench-out/); phases stop at the deadline (SECONDS_LEFT, default 540).
#   OUT=... BEFORE=/tmp/kevo-before/build bench/integrity_gpu.sh [phases...]
#   phases: tests planted throughput best
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=${OUT:-$root/bench-out}
build=${BUILD_DIR:-$root/build-gpu}
kevo=$build/kevo
deadline=$(( $(date +%s) + ${SECONDS_LEFT:-540} ))
left() { echo $(( deadline - $(date +%s) )); }
mkdir -p "$out"
phases=${*:-tests planted throughput best}

# "name task candidate": the planted hacks and the status each must earn.
planted=(
  "stateful tasks/10_mse_loss.json tests/data/planted/mse_scratch_cache.cu"
  "stateful tasks/10_mse_loss.json tests/data/planted/mse_module_cache.cu"
  "stateful tasks/10_mse_loss.json tests/data/planted/mse_heap_cache.cu"
  "stateful tasks/13_linear_leaky_relu.json tests/data/planted/linear_scratch_cache.cu"
  "stateful tasks/13_linear_leaky_relu.json tests/data/planted/linear_module_cache.cu"
  "input_independent tasks/03_softmax.json tests/data/planted/softmax_zeros.cu"
  "distribution_fitted tasks/10_mse_loss.json tests/data/planted/mse_expectation.cu"
  "distribution_fitted tasks/11_hinge_loss.json tests/data/planted/hinge_labels_only.cu"
  "faster_than_light tests/data/tasks/mse_loose.json tests/data/planted/mse_sampled.cu"
  "ok tasks/10_mse_loss.json tests/data/planted/mse_ok.cu"
  "ok tasks/11_hinge_loss.json tests/data/planted/hinge_ok.cu"
)

for phase in $phases; do
  t=$(left)
  [ "$t" -gt 20 ] || { echo "$phase: no time left"; continue; }
  case $phase in
    tests)
      (cd "$build" && timeout -k 5 "$t" ctest -L gpu --timeout 600 >"$out/ctest_gpu.log" 2>&1)
      echo "ctest -L gpu: exit $? ($(grep -E 'tests passed|tests failed' "$out/ctest_gpu.log"))"
      grep -E "\*\*\*Failed|Failed  |\(Failed\)" "$out/ctest_gpu.log" | head -20
      ;;
    planted)
      for p in "${planted[@]}"; do
        read -r want task cand <<<"$p"
        name=$(basename "$cand" .cu)
        timeout -k 5 "$(left)" "$kevo" eval "$task" "$cand" --workload 0 --max-seconds 1 --json "$out/planted_$name.json" \
          >"$out/planted_$name.log" 2>&1
        got=$(sed -n 's/^result: \([a-z_]*\).*/\1/p' "$out/planted_$name.log")
        echo "$name: want $want, got ${got:-nothing} ($(grep '^result:' "$out/planted_$name.log" | cut -c1-160))"
      done
      ;;
    throughput)
      # Alternating builds, so that both see the same GPU state; kevo eval --repeat prints the rate.
      for round in 1 2; do
        for which in before after; do
          bin=$kevo
          [ "$which" = before ] && bin=${BEFORE:-}/kevo
          [ -x "$bin" ] || { echo "throughput $which: no build"; continue; }
          timeout -k 5 "$(left)" "$bin" eval bench/tasks/relu_1700us.json tests/data/planted/relu_ok.cu --repeat "${REPEAT:-12}" \
            --trials 2 >"$out/throughput_${which}_$round.log" 2>&1
          echo "throughput $which round $round: $(grep -E 'throughput:' "$out/throughput_${which}_$round.log")"
        done
      done
      ;;
    best)
      # The best variant per task of the floor campaign, its source written out and evaluated again.
      mkdir -p "$out/best"
      python3 - "$out/best" <<'PY'
import sys, h5py
dst = sys.argv[1]
with h5py.File("results/campaigns/h200-floor.h5", "r") as f:
    runs = dict(zip(f["runs/id"][:], f["runs/task"].asstr()[:]))
    vrun = dict(zip(f["variants/id"][:], f["variants/run"][:]))
    vhash = dict(zip(f["variants/id"][:], f["variants/source_hash"].asstr()[:]))
    data = f["sources/text_data"][:]
    texts = {h: data[o:o + n].tobytes().decode() for h, o, n in
             zip(f["sources/hash"].asstr()[:], f["sources/text_offset"][:], f["sources/text_length"][:])}
    best = {}
    for v, fit, st in zip(f["measurements/variant"][:], f["measurements/fitness"][:], f["measurements/status"].asstr()[:]):
        task = runs[vrun[v]]
        if st == "ok" and fit > best.get(task, (0, None))[0]:
            best[task] = (fit, v)
    for task, (fit, v) in sorted(best.items()):
        open(f"{dst}/{task}.cu", "w").write(texts[vhash[v]])
        print(task, v, fit)
PY
      for cu in "$out"/best/*.cu; do
        task=$(basename "$cu" .cu)
        file=$(grep -l "\"name\": \"$task\"" tasks/*.json | head -1)
        [ -n "$file" ] || continue
        timeout -k 5 "$(left)" "$kevo" eval "$file" "$cu" --max-seconds 1 --json "$out/best/$task.json" >"$out/best/$task.log" 2>&1
        echo "$task: $(grep '^result:' "$out/best/$task.log" | cut -c1-120); $(grep -o 'speed of light [0-9.]* ms ([0-9]*% of it; [a-zA-Z]* floor)' "$out/best/$task.log" | head -1)"
      done
      ;;
    *) echo "unknown phase $phase" ;;
  esac
done
