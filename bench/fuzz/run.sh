#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and fuzzes each for SECONDS (default 60).
#   bench/fuzz/run.sh [SECONDS]      logs and any crash inputs land in build-fuzz/
# Seeds: the references and contracts of tasks/ (and its subfolders) and bench/fuzz/ops_seeds.py. A crash leaves crash-* files; fix the bug and
# keep the input as a test.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${1:-60}
out=${FUZZ_DIR:-$root/build-fuzz}
mkdir -p "$out/corpus-reference" "$out/corpus-contract"
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (apt-get install clang)" >&2; exit 1; }

sources=$(ls "$root"/src/core/*.cpp)
flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$root/src")
for target in reference contract; do
  [ "$out/fuzz_$target" -nt "$root/bench/fuzz/fuzz_$target.cpp" ] && [ -z "$(find "$root/src/core" -newer "$out/fuzz_$target")" ] ||
    clang++ "${flags[@]}" "$root/bench/fuzz/fuzz_$target.cpp" $sources -o "$out/fuzz_$target"
done

python3 - "$root" "$out" <<'PY'
import json, glob, os, sys
root, out = sys.argv[1:]
seeds = sorted(glob.glob(os.path.join(root, "tasks", "*.json")) + glob.glob(os.path.join(root, "tasks", "*", "*.json")))
for i, f in enumerate(seeds):
    text = open(f).read()
    open(os.path.join(out, "corpus-contract", f"seed{i}.json"), "w").write(text)
    open(os.path.join(out, "corpus-reference", f"seed{i}.py"), "w").write(json.loads(text)["reference"])
# The operators and language no contract uses yet.
for i, ref in enumerate(open(os.path.join(root, "bench", "fuzz", "ops_seeds.py")).read().split("\n\n")):
    open(os.path.join(out, "corpus-reference", f"ops{i}.py"), "w").write(ref.strip() + "\n")
PY

status=0
for target in reference contract; do
  echo "fuzz: $target for ${seconds}s"
  (cd "$out" && ./fuzz_$target -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "corpus-$target" > "fuzz_$target.log" 2>&1) || status=$?
  grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+ +DONE" "$out/fuzz_$target.log" || true
  grep -E "ERROR|SUMMARY|unexpected exception|multi-line" "$out/fuzz_$target.log" | head -5 || true
done
exit $status
