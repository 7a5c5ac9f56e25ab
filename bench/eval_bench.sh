#!/usr/bin/env bash
# GPU evaluation benchmarks, run on the device after scripts/device.sh has built build-gpu/:
#   the timer against independent clocks, the softmax candidate against eager and torch.compile,
#   the spread of repeated measurements, and evaluations per minute with the engine's overhead
#   for a ~1 ms kernel. Logs go to ${OUT:-bench-out}/.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/bench-out}
build=${BUILD_DIR:-$root/build-gpu}
mkdir -p "$out"
cd "$root"
echo "== timer"; "$build/bench/timer_bench" 2>&1 | tee "$out/timer.log"
echo "== softmax vs eager and torch.compile"
python3 tools/torch_baseline.py tasks/03_softmax.json --out "$out/softmax_torch.json" > "$out/softmax_torch.log" 2>&1
tail -3 "$out/softmax_torch.log"
"$build/kevo" eval tasks/03_softmax.json tests/data/candidates/softmax.cu --torch-baseline "$out/softmax_torch.json" \
  --json "$out/softmax_eval.json" 2>&1 | tee "$out/softmax_eval.log"
echo "== repeated measurement and throughput, ~1 ms kernel"
"$build/kevo" eval bench/tasks/relu_1ms.json tests/data/planted/relu_ok.cu --repeat ${REPEAT:-20} --trials 3 \
  --json "$out/relu_1ms_repeat.json" > "$out/relu_1ms_repeat.log" 2>&1
grep -E "candidate|repeat:|throughput:" "$out/relu_1ms_repeat.log" | sed -n '1,3p;$p'
grep -E "repeat:|throughput:" "$out/relu_1ms_repeat.log"
