#!/usr/bin/env python3
"""The best correct instance per task of campaign or sweep files, against the DRAM floor.

    bench/best_instances.py FILE.h5...

For each task: the variant of highest fitness (geometric-mean speedup over eager), its space and
genome, and per workload its median time, eager's, the floor the evaluator measured in the same
run (bytes the task must move over the copy bandwidth) and the fraction of it reached.
"""
import sys

import h5py
import numpy as np


def text(ds):
    return list(ds.asstr()[:])


def pooled_ints(g, name):
    data = g[name + "_data"][:]
    return [list(data[o:o + n]) for o, n in zip(g[name + "_offset"][:], g[name + "_length"][:])]


def main(paths):
    for path in paths:
        with h5py.File(path, "r") as f:
            runs = dict(zip(f["runs/id"][:], text(f["runs/task"])))
            v_ids = f["variants/id"][:]
            v_run = dict(zip(v_ids, f["variants/run"][:]))
            v_space = dict(zip(v_ids, text(f["variants/space"])))
            v_genome = dict(zip(v_ids, pooled_ints(f["variants"], "genome")))
            m_var = f["measurements/variant"][:]
            m_fit = f["measurements/fitness"][:]
            m_status = text(f["measurements/status"])
            w = f["workloads"]
            wl = list(zip(w["variant"][:], w["workload"][:], w["median_ms"][:], w["eager_ms"][:], w["floor_ms"][:]))
            best = {}
            counts = {}
            for v, fit, st in zip(m_var, m_fit, m_status):
                task = runs[v_run[v]]
                counts[task] = counts.get(task, 0) + 1
                if st == "ok" and fit > best.get(task, (0, -1))[0]:
                    best[task] = (fit, v)
            # The floor table's figure: the fastest correct instance on the task's largest workload.
            ok = {v for v, st in zip(m_var, m_status) if st == "ok"}
            big = {}
            for vv, k, med, eager, floor in wl:
                task = runs[v_run[vv]]
                if vv in ok and med > 0 and (task not in big or floor > big[task][0] or
                                             (floor == big[task][0] and med < big[task][1])):
                    big[task] = (floor, med, eager, vv)
            print(f"{path}:")
            for task, (floor, med, eager, vv) in sorted(big.items()):
                pct = f"{100 * floor / med:.1f}% of floor" if floor > 0 else "no floor"
                print(f"  {task}: fastest on the largest workload: variant {vv} "
                      f"{v_space[vv] or '(free-form)'}{{{','.join(str(int(x)) for x in v_genome[vv])}}}: "
                      f"{med:.4f} ms, eager {eager:.4f} ms, floor {floor:.4f} ms: {pct}")
            for task, (fit, v) in sorted(best.items()):
                print(f"  {task}: best {fit:.3f}x over eager of {counts[task]} measured; variant {v} "
                      f"{v_space[v] or '(free-form)'}{{{','.join(str(int(x)) for x in v_genome[v])}}}")
                for vv, k, med, eager, floor in wl:
                    if vv == v:
                        pct = f"{100 * floor / med:.1f}% of floor" if floor > 0 and med > 0 else "no floor"
                        print(f"    workload {k}: {med:.4f} ms, eager {eager:.4f} ms, floor {floor:.4f} ms: {pct}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    main(sys.argv[1:])
