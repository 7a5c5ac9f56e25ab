#!/usr/bin/env bash
# The learned policy against random search with a policy trained on the *other* tasks (leave one
# out): for each of relu, gelu_tanh_explicit, cumsum and max_pool2d, `kevo train-policy` over the
# remaining development tasks that have replay sweeps and the training corpus (tasks/train/), from
# their recordings in results/spaces/, then `kevo ablate` of the held-out task with
# --policy-init, on the replays or on the GPU.
#
#   bench/ablation_loo.sh train POLICY_DIR            train the four held-out policies (CPU, in parallel)
#   bench/ablation_loo.sh replay POLICY_DIR OUT_DIR    ablate on the replays (CPU)
#   bench/ablation_loo.sh gpu POLICY_DIR OUT_DIR       ablate on the GPU(s): two tasks at a time
#                                                      when there are two GPUs
# Flags of the ablations: ABLATE_FLAGS (default below); SEEDS (5), BUDGET (100 on replay, 40 on the GPU);
# of the training campaigns: TRAIN_FLAGS (--budget-evals 100 --population 4).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kevo=$(realpath "${KEVO:-$root/build/kevo}")
# Paths relative to the repository root, so the commands the campaign files record name no machine's folders.
mode=${1:?usage: bench/ablation_loo.sh train|replay|gpu POLICY_DIR [OUT_DIR]}
policies=$(realpath -m --relative-to="$root" "${2:?usage: bench/ablation_loo.sh train|replay|gpu POLICY_DIR [OUT_DIR]}")
cd "$root" || exit 1
# HELD (space-separated task files' stems) overrides the held-out tasks.
read -r -a held <<< "${HELD:-01_relu 08_gelu_tanh_explicit 09_cumsum 12_max_pool2d}"
# Development tasks with replay sweeps in results/spaces/.
recorded=(01_relu 02_gelu 03_softmax 05_layer_norm 08_gelu_tanh_explicit 09_cumsum 12_max_pool2d)
seeds=${SEEDS:-5}

case $mode in
  train)
    mkdir -p "$policies"
    for h in "${held[@]}"; do
      train=()
      for t in "${recorded[@]}"; do [ "$t" = "$h" ] || train+=("tasks/$t.json"); done
      train+=(tasks/train/*.json)
      "$kevo" train-policy "${train[@]}" --replay results/spaces --replay results/spaces/train \
        ${TRAIN_FLAGS:---budget-evals 100 --population 4} --out "$policies/${h#*_}.pt" > "$policies/${h#*_}.log" 2>&1 &
    done
    failed=0
    for job in $(jobs -p); do wait "$job" || failed=1; done
    tail -n 1 "$policies"/*.log
    exit $failed ;;
  replay|gpu)
    out=$(realpath -m --relative-to="$root" "${3:?usage: bench/ablation_loo.sh $mode POLICY_DIR OUT_DIR}")
    mkdir -p "$out"
    if [ "$mode" = replay ]; then
      flags=${ABLATE_FLAGS:---arms random,learned,learned-frozen --budget-evals ${BUDGET:-100} --population 4}
      where=(--replay results/spaces)
    else
      flags=${ABLATE_FLAGS:---arms random,learned --budget-evals ${BUDGET:-40} --population 4 --max-seconds 0.3 --trials 1}
      where=()
    fi
    gpus=$( [ "$mode" = gpu ] && nvidia-smi -L 2>/dev/null | wc -l || echo 0)
    one() {  # task gpu
      local name=${1#*_} extra=()
      [ -n "$2" ] && extra=(--gpus "$2")
      # shellcheck disable=SC2086
      "$kevo" ablate "tasks/$1.json" "${where[@]}" "${extra[@]}" $flags --seeds "$seeds" \
        --policy-init "$policies/$name.pt" --out "$out/$name.h5" --force > "$out/$name.log" 2>&1
      "$kevo" report "$out/$name.h5" --html "$out/$name.html" --json "$out/$name.json" > /dev/null 2>&1
      grep "evaluations to 95%" "$out/$name.log"
    }
    if [ "$gpus" -ge 2 ]; then
      for i in 0 2; do
        one "${held[$i]}" 0 & one "${held[$((i + 1))]}" 1 & wait
      done
    else
      for h in "${held[@]}"; do one "$h" ""; done
    fi ;;
  *) echo "bench/ablation_loo.sh: unknown mode '$mode' (train, replay or gpu)" >&2; exit 2 ;;
esac
