#!/usr/bin/env bash
# The engine alone, on simulated GPUs (`kevo run --simulate-gpus N`, docs/search.md): the real
# pipeline (parsing, the compile pool or its cache, the slot queue, the protocol's CPU side, a
# worker process per GPU, notify, update, commit) with each evaluation holding its simulated GPU
# EVAL_SECONDS and answered from the recordings in results/spaces/.
#
#   bench/engine_sim.sh            a campaign on 8 GPUs with an empty CUBIN cache (compiling
#                                  included, as far as this machine's cores allow), then the same
#                                  campaign on 1, 2, 4 and 8 GPUs with every candidate in the cache
#
# Environment: KEVO (default build/kevo), GPUS ("1 2 4 8"), EVAL_SECONDS (0.3: a ~1.7 ms kernel on
# an H200), TASKS, BUDGET (evaluations per task), POPULATION and ISLANDS (per task and generation),
# COLD (1: the cold-cache run first; 0: skip it), OUT (logs and campaign files; default a temporary
# folder). Prints one row per run: evaluations per minute against the ideal (GPUs x 60 /
# EVAL_SECONDS), the GPUs' busy share (all of them, and each), the share of GPU time spent
# holding (what a real GPU would have computed), this process's CPU per evaluation, and where the
# loop's thread and the build pipeline spent their time.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kevo=${KEVO:-$root/build/kevo}
gpus=${GPUS:-"1 2 4 8"}
seconds=${EVAL_SECONDS:-0.3}
tasks=${TASKS:-"tasks/01_relu.json tasks/03_softmax.json tasks/05_layer_norm.json tasks/12_max_pool2d.json"}
budget=${BUDGET:-250}
population=${POPULATION:-16}
islands=${ISLANDS:-2}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
cache=$out/cubin
cd "$root"

ntasks=$(echo $tasks | wc -w)
echo "engine_sim: $ntasks tasks x $budget evaluations, $islands islands x $population per task and generation" \
  "($((ntasks * islands * population)) per generation), $seconds s per evaluation; $(nproc) cores; logs in $out"
echo "| run | GPUs | evaluations | wall s | per min (ideal) | busy % (per GPU) | holding % | CPU ms/eval |" \
  "loop: generate / notify+update / commit / waiting s | builds: compiled (NVRTC s each) / cached, pipeline thread s |"
echo "|---|---|---|---|---|---|---|---|---|---|"

# One campaign: its engine summary as a table row.
run() {
  local name=$1 n=$2
  "$kevo" run $tasks --replay results/spaces --budget-evals "$budget" --population "$population" \
    --islands "$islands" --seed 1 --simulate-gpus "$n" --sim-eval-seconds "$seconds" --cache-dir "$cache" \
    --out "$out/$name.h5" --force > "$out/$name.log" 2>&1 || { tail -5 "$out/$name.log"; exit 1; }
  grep '^engine:' "$out/$name.log" | awk -v name="$name" -v n="$n" -v s="$seconds" '
    # The number after (or before) a word of the engine summary.
    function after(w,   i, v) { v = "-"; for (i = 1; i < NF; ++i) if ($i == w) v = $(i + 1); return v }
    function before(w,   i) { for (i = 2; i <= NF; ++i) if ($i == w) return $(i - 1); return "-" }
    /evaluations on GPUs/ {
      evals = $2; wall = after("in"); permin = after("s:"); busy = after("busy"); sub(/%/, "", busy)
      per = ""
      for (i = 1; i <= NF; ++i) if ($i == "GPU:") for (j = i + 1; j <= NF; ++j) { v = $j; sub(/\)/, "", v); per = per (per == "" ? "" : " ") v }
    }
    /of CPU/ {
      cpu = after("CPU"); sub(/\(/, "", cpu)
      gen = after("generate"); notify = after("notify+update"); commit = after("commit"); wait = after("results")
    }
    /builds:/ {
      compiled = before("compiled"); if (compiled == "-") compiled = before("compiled,")
      each = after("(NVRTC"); cached = before("from"); thread = after("busy")
    }
    END {
      # With the times of the recordings (EVAL_SECONDS=0) there is no one ideal.
      ideal = s > 0 ? sprintf("%.0f", n * 60 / s) : "-"; held = s > 0 ? sprintf("%.1f", 100 * evals * s / (wall * n)) : "-"
      printf "| %s | %d | %d | %.1f | %.0f (%s) | %s (%s) | %s | %s | %s / %s / %s / %s | %s (%s) / %s, %s |\n",
        name, n, evals, wall, permin, ideal, busy, per, held, cpu, gen, notify, commit, wait, compiled, each, cached, thread
    }'
}

if [ "${COLD:-1}" = 1 ]; then
  rm -rf "$cache"
  run cold-8 8
fi
for n in $gpus; do run "cached-$n" "$n"; done
