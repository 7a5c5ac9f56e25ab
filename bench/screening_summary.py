"""Issue 43's figures from bench/screening_campaign.sh's OUT folder: per arm (screening off and on)
the evaluations, how many were screened out, the GPU-minutes they took (each segment's engine
summary: its busy share of its wall time, summed over the arm's segments) and evaluations per
GPU-minute; the ratio between the arms; and
the geometric mean of the final bests over eager (and over torch.compile where known) on the tasks
both arms found a correct variant for, with the per-task ratio on.

    python3 bench/screening_summary.py OUT
"""

import glob
import json
import math
import re
import sys


def segment_logs(out, arm):
    """The arm's logs: one per segment (campaign_ARM.K.log), or one for the whole arm."""
    logs = sorted(glob.glob(f"{out}/campaign_{arm}.*.log"), key=lambda p: int(p.rsplit(".", 2)[1]))
    return logs or [f"{out}/campaign_{arm}.log"]


def engine(log_paths):
    """Evaluations on GPUs and GPU-busy seconds summed over the segments' engine summaries."""
    jobs, busy_seconds = 0, 0.0
    for log_path in log_paths:
        with open(log_path) as f:
            for line in f:
                m = re.match(r"engine: (\d+) evaluations on GPUs in ([\d.]+) s: [\d.]+ per minute; busy ([\d.]+)%", line)
                if m:
                    jobs += int(m.group(1))
                    busy_seconds += float(m.group(2)) * float(m.group(3)) / 100
                    break
            else:
                raise SystemExit(f"{log_path}: no engine summary (did the segment finish?)")
    return jobs, busy_seconds


def phases(log_paths):
    """The last segment's per-evaluation phases."""
    with open(log_paths[-1]) as f:
        for line in f:
            if line.startswith("engine: per evaluation"):
                return line.strip()
    return ""


def main():
    out = sys.argv[1]
    arms = {}
    for arm in ("off", "on"):
        with open(f"{out}/report_{arm}.json") as f:
            report = json.load(f)
        logs = segment_logs(out, arm)
        jobs, busy_seconds = engine(logs)
        tasks = {t["task"]: t for t in report["tasks"]}
        arms[arm] = {
            "jobs": jobs,
            "gpu_minutes": busy_seconds / 60,
            "evaluations": sum(t["evaluations"] for t in tasks.values()),
            "screened": sum(t.get("screened", 0) for t in tasks.values()),
            "tasks": tasks,
            "phases": phases(logs),
        }
    print("| screening | evaluations | screened out | GPU-minutes | evaluations per GPU-minute |")
    print("|---|---|---|---|---|")
    rate = {}
    for arm, a in arms.items():
        rate[arm] = a["jobs"] / a["gpu_minutes"]
        print(f"| {arm} | {a['jobs']} | {a['screened']} | {a['gpu_minutes']:.2f} | {rate[arm]:.1f} |")
    print(f"\nevaluations per GPU-minute, on / off: {rate['on'] / rate['off']:.2f}x")
    for arm, a in arms.items():
        if a["phases"]:
            print(f"{arm}: {a['phases']}")
    both = [t for t in arms["off"]["tasks"] if arms["off"]["tasks"][t].get("best_fitness")
            and arms["on"]["tasks"].get(t, {}).get("best_fitness")]
    if not both:
        return
    print(f"\nfinal bests on the {len(both)} tasks both arms found a correct variant for:")
    print("| task | off: best x eager | on: best x eager | on / off |")
    print("|---|---|---|---|")
    logs = {"off": 0.0, "on": 0.0}
    compile_logs = {"off": [], "on": []}
    for t in both:
        b = {arm: arms[arm]["tasks"][t]["best_fitness"] for arm in arms}
        for arm in arms:
            logs[arm] += math.log(b[arm])
            c = arms[arm]["tasks"][t].get("best_speedup_vs_compile")
            if c:
                compile_logs[arm].append(math.log(c))
        print(f"| {t} | {b['off']:.3f} | {b['on']:.3f} | {b['on'] / b['off']:.3f} |")
    g = {arm: math.exp(logs[arm] / len(both)) for arm in arms}
    print(f"\ngeometric mean of the final bests over eager: off {g['off']:.3f}, on {g['on']:.3f} (on / off {g['on'] / g['off']:.3f})")
    if compile_logs["off"] and len(compile_logs["off"]) == len(compile_logs["on"]):
        c = {arm: math.exp(sum(v) / len(v)) for arm, v in compile_logs.items()}
        print(f"over torch.compile ({len(compile_logs['off'])} tasks): off {c['off']:.3f}, on {c['on']:.3f}")


if __name__ == "__main__":
    main()
