"""Per KernelBench level, from `kevo report CAMPAIGN --json`: the tasks a campaign measured, how many
beat eager and torch.compile on their best variant, and the geometric mean of the best variants'
speedups over torch.compile (issue 19's campaign figures).

    python3 bench/kernelbench_summary.py report.json
"""

import json
import math
import re
import sys


def level_of(task):
    m = re.match(r"kb_(level\d+)_", task)
    return m.group(1) if m else "other"


def summarise(report):
    levels = {}
    for t in report["tasks"]:
        if t.get("evaluations", 0) == 0 or not t.get("best_variant"):
            continue
        s = levels.setdefault(level_of(t["task"]), {"tasks": 0, "eager": 0, "compile": 0, "with_compile": 0, "log": 0.0})
        s["tasks"] += 1
        s["eager"] += t["best_geometric_mean"] > 1.0
        c = t.get("best_speedup_vs_compile")
        if c:
            s["with_compile"] += 1
            s["compile"] += c > 1.0
            s["log"] += math.log(c)
    return levels


def main():
    with open(sys.argv[1]) as f:
        levels = summarise(json.load(f))
    print("| level | tasks measured | faster than eager | faster than torch.compile | geometric mean over torch.compile |")
    print("|---|---|---|---|---|")
    for level, s in sorted(levels.items()):
        gm = math.exp(s["log"] / s["with_compile"]) if s["with_compile"] else float("nan")
        print(f"| {level} | {s['tasks']} | {s['eager']} | {s['compile']} of {s['with_compile']} | {gm:.3f} |")


if __name__ == "__main__":
    main()
