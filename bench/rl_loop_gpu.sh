#!/usr/bin/env bash
# The RL loop of the llm policy on the GPU node (issue 23), one device call's worth: a small causal
# LM built locally (nothing can be downloaded there) served by tools/serve_hf.py on GPU 0 with the
# node's torch, a campaign of `--policy llm` measuring its children on the same GPU, tools/grpo_step.py
# between generations on that GPU, the adapter reloaded (tests/tools/rl_loop_test.py --gpu asserts
# it on the server's log); then `kevo serve --gpus 0` measuring real candidates under concurrent
# clients (bench/serve_bench.py). Logs go to $OUT (default bench-out/rl). Phases stop at the deadline
# (SECONDS_LEFT, default 540).
#
#   KEVO_RL=1 KEVO_RL_WHEELS=/path/to/wheels scripts/setup.sh     (once: the pinned packages, offline)
#   OUT=... BUILD_DIR=build-gpu bench/rl_loop_gpu.sh [phases...]    (phases: deps direction loop serve)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=${OUT:-$root/bench-out/rl}
build=${BUILD_DIR:-$root/build-gpu}
kevo=$build/kevo
py=${KEVO_RL_PYTHON:-python3}
deadline=$(( $(date +%s) + ${SECONDS_LEFT:-540} ))
left() { echo $(( deadline - $(date +%s) )); }
mkdir -p "$out"
phases=${*:-deps direction loop serve}

for phase in $phases; do
  t=$(left)
  [ "$t" -gt 20 ] || { echo "$phase: no time left"; continue; }
  case $phase in
    deps)
      "$py" - <<'PY' 2>&1 | tee "$out/deps.txt"
import sys; sys.path.insert(0, "tools")
from kevo_rl import deps
why = deps.missing()
import torch
print("python %s, torch %s, cuda %s, GPU %s" % (sys.version.split()[0], torch.__version__, torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"))
if why:
    print("deps: " + why); sys.exit(1)
import transformers, peft
print("transformers %s, peft %s: ok" % (transformers.__version__, peft.__version__))
PY
      ;;
    direction)
      # The trainer's update on the GPU moves probability toward the better completions (the CPU test's
      # synthetic groups, trained on cuda).
      KEVO_RL_DEVICE=cuda CUDA_VISIBLE_DEVICES=${GPU:-0} timeout -k 5 "$t" "$py" tests/tools/grpo_step_test.py \
        >"$out/direction.log" 2>&1
      echo "trainer direction on cuda: exit $? ($(grep -E '^group|passed|FAIL|device' "$out/direction.log" | tr '\n' ';'))"
      ;;
    loop)
      # A small model (8 layers, 512 wide: ~30M parameters) so a generation's requests and the trainer's
      # step take seconds; 6 generations of 4 children, measured on GPU 0 beside the model.
      CUDA_VISIBLE_DEVICES=${GPU:-0} timeout -k 5 "$t" "$py" tests/tools/rl_loop_test.py "$kevo" --gpu --layers 8 \
        --hidden 512 --budget 24 --out "$out/loop" >"$out/loop.log" 2>&1
      echo "rl loop: exit $? ($(grep -E 'passed|^samples|^figures|^campaign|FAIL' "$out/loop.log" | tr '\n' ';'))"
      ;;
    serve)
      rm -rf "$out/candidates" && "$kevo" space tasks/01_relu.json --sample 4 --out "$out/candidates" >/dev/null 2>&1
      CUDA_VISIBLE_DEVICES=${GPU:-0} "$kevo" serve --gpus 0 --port 0 --tasks tasks/01_relu.json \
        --tasks tasks/03_softmax.json >"$out/serve.log" 2>&1 &
      server=$!
      for _ in $(seq 60); do grep -q 'listening on' "$out/serve.log" && break; sleep 1; done
      url=$(grep -o 'http://[0-9.:]*' "$out/serve.log" | head -1)
      if [ -z "$url" ]; then
        echo "kevo serve did not start: $(tail -3 "$out/serve.log")"
      else
        timeout -k 5 "$(( $(left) / 2 ))" "$py" bench/serve_bench.py "$url" softmax tests/data/candidates/softmax.cu \
          --clients 4 --requests 3 2>&1 | tee "$out/serve_softmax.txt"
        timeout -k 5 "$(( $(left) - 10 ))" "$py" bench/serve_bench.py "$url" relu "$out"/candidates/*.cu \
          --clients 8 --requests 4 2>&1 | tee "$out/serve_relu.txt"
      fi
      kill "$server" 2>/dev/null
      wait "$server" 2>/dev/null
      ;;
    *) echo "unknown phase $phase (deps direction loop serve)" ;;
  esac
done
