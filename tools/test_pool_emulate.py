"""The pool family's streaming kernels, run on the CPU: random legal genomes of every streaming
space (pool_stream, pool_vec) of every pooling contract are rendered by `kevo space` and run
through tools/pool_emulate.py against a naive reference, on the contract's largest workload (a smaller shape for the development task).
Catches wrong halos, strips, vectors, staging or walks without a GPU.

    python3 tools/test_pool_emulate.py path/to/kevo [samples per space (default 3)]
"""

from __future__ import annotations

import glob
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The development task's workloads are too big to emulate a thread per GPU thread: a small shape
# with partial strips and walks instead (W a multiple of 4 keeps every pool_vec genome legal).
SMALL = {"12_max_pool2d.json": {"N": 1, "C": 2, "H": 37, "W": 300}}


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    kevo, samples = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 3
    contracts = [os.path.join(ROOT, "tasks", "12_max_pool2d.json")] + sorted(
        glob.glob(os.path.join(ROOT, "tests", "data", "tasks", "*pool*.json")))
    runs, failed, spaces = 0, [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for i, contract in enumerate(contracts):
            name = os.path.basename(contract)
            out = os.path.join(tmp, str(i))
            r = subprocess.run([kevo, "space", contract, "--sample", str(samples), "--seed", str(7 + i), "--out", out],
                               capture_output=True, text=True)
            if r.returncode:
                print(f"{name}: kevo space failed: {r.stderr.strip()}")
                return 1
            task = json.load(open(contract))
            axes = SMALL.get(name) or max(task["workloads"], key=lambda w: math.prod(w.values()))
            for cu in sorted(glob.glob(os.path.join(out, "pool_stream_*.cu")) + glob.glob(os.path.join(out, "pool_vec_*.cu"))):
                genome = next(line.split("Genome: ")[1].split(" =")[0] for line in open(cu) if "Genome: " in line)
                spaces.add(genome.split("{")[0])
                e = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "pool_emulate.py"), cu, contract,
                                    json.dumps(axes)], capture_output=True, text=True)
                runs += 1
                verdict = (e.stdout.strip().splitlines() or [e.stderr.strip()])[-1]
                print(f"{name} {genome} {json.dumps(axes)}: {verdict}")
                if e.returncode:
                    failed.append(f"{name} {genome}: {verdict} {e.stderr.strip()[:2000]}")
    print(f"{runs} emulated, {len(failed)} wrong or not run; spaces: {', '.join(sorted(spaces))}")
    for f in failed:
        print("FAILED:", f)
    if not any(s.startswith("pool_vec/") for s in spaces) or not any(s.startswith("pool_stream/") for s in spaces):
        print("FAILED: a streaming space was never sampled")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
