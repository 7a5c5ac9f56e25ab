#!/usr/bin/env bash
# Sweeps of the training corpus (tasks/train/*.json) on the GPU, one replay file per task, for
# `kevo train-policy --replay`. Usage: bench/train_corpus.sh OUT_DIR [SECONDS_PER_TASK=90] [LIMIT=360]
# Each sweep stops at its deadline; a sweep file keeps every batch committed before it.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kevo=$(realpath "${KEVO:-$root/build/kevo}")
out=$(realpath -m --relative-to="$root" "${1:?usage: bench/train_corpus.sh OUT_DIR [SECONDS_PER_TASK] [LIMIT]}")
cd "$root" || exit 1  # relative paths: a sweep file records its command
seconds=${2:-90}
limit=${3:-360}
mkdir -p "$out"
for task in tasks/train/*.json; do
  name=$(basename "$task" .json)
  start=$(date +%s)
  timeout -k 5 "$seconds" "$kevo" sweep "$task" --out "$out/$name.h5" --limit "$limit" --batch 16 \
    --max-seconds 0.5 > "$out/$name.log" 2>&1
  echo "$name: rc $?, $(( $(date +%s) - start )) s, $(tail -1 "$out/$name.log")"
done
