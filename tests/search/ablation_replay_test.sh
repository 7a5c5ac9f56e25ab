#!/usr/bin/env bash
# The issue's acceptance on the shipped replay spaces, sized for CI: for each of gelu,
# gelu_tanh_explicit, cumsum and max_pool2d, a policy trained on the *other* tasks' recordings and
# the training corpus (bench/ablation_loo.sh train, short training campaigns) is ablated against
# random search on the held-out task's H200 recordings (5 seeds, 100 evaluations); the learned arm
# must reach 95% of the best fitness in at most half of random search's evaluations on at least 3
# of the 4 tasks. relu was held out here until fitness became the weighted time of the timed
# workloads (its small workload checked, not timed): on its large workload alone nearly every genome
# sits at the copy floor, random search reaches 95% of the best in 14.4 evaluations and the learned
# arm's 8.0 (its first two generations of 4) cannot be half of that, whatever the policy.
# Usage: ablation_replay_test.sh KEVO
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export KEVO=$1
export HELD="02_gelu 08_gelu_tanh_explicit 09_cumsum 12_max_pool2d"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TRAIN_FLAGS="--budget-evals 24 --population 4" "$root/bench/ablation_loo.sh" train "$work/policies" > /dev/null
ABLATE_FLAGS="--arms random,learned --budget-evals 100 --population 4" "$root/bench/ablation_loo.sh" replay \
  "$work/policies" "$work/out" | tee "$work/summary.txt"
# "gelu, random (5 seeds): ... evaluations to 95% of the best (0.993x) 22.4 ..." per task and arm.
passed=0
for t in gelu gelu_tanh_explicit cumsum max_pool2d; do
  r=$(sed -n "s/^$t, random (5 seeds):.* of the best ([0-9.]*x) \([0-9.]*\).*/\1/p" "$work/summary.txt")
  l=$(sed -n "s/^$t, learned (5 seeds):.* of the best ([0-9.]*x) \([0-9.]*\).*/\1/p" "$work/summary.txt")
  [ -n "$r" ] && [ -n "$l" ] || { echo "FAIL: no figures for $t"; exit 1; }
  ok=$(awk -v l="$l" -v r="$r" 'BEGIN { print (l <= 0.5 * r) ? 1 : 0 }')
  echo "$t: learned $l, random $r evaluations to 95% of the best: $( [ "$ok" = 1 ] && echo "at most half" || echo "more than half")"
  passed=$((passed + ok))
done
[ "$passed" -ge 3 ] || { echo "FAIL: the learned arm halved random search's evaluations on $passed of 4 tasks"; exit 1; }
echo "ok: $passed of 4 tasks"
