#!/usr/bin/env python3
"""How far could a learned mutation policy beat random mutation on a recorded landscape? An offline
simulation over sweep files (results/spaces/*.h5), for setting expectations of `kevo ablate`.

    bench/ablation_sim.py TASK FILE.h5... [--fitness geomean|large] [--seeds 40] [--budget 100]

Both searches seed with one random generation of `--population` genomes (default 8: kevo's
population 4 x 2 islands), keep the 4 best measured genomes as parents, and mutate one knob at a
time (a tenth of children switch space); genomes the files do not hold are never proposed. "random"
takes the first distinct children; "model" screens 60 (or --candidates) of them with a ridge
regression of log fitness over one-hot (space, knob, value) features fitted to everything measured
so far, and takes the best predicted: an idealised model-guided policy (no cost for the model, no
noise beyond the recording's). "lag" is kevo's pipeline (generation g+1 is drawn before generation g
is measured), "no lag" proposes from every measurement. Prints evaluations to 95% of the file's best
(mean over seeds) and model / random. Fitness is the recorded geometric-mean speedup over eager
(`geomean`, what kevo selects on) or the speedup on the largest workload alone (`large`).
"""
import argparse
import random

import h5py
import numpy as np


def load(paths, task, fitness):
    data = {}
    for path in paths:
        with h5py.File(path, "r") as f:
            runs = dict(zip(f["runs/id"][:], f["runs/task"].asstr()[:]))
            g = f["variants"]
            flat = g["genome_data"][:]
            genome = {v: tuple(int(x) for x in flat[o:o + n])
                      for v, o, n in zip(g["id"][:], g["genome_offset"][:], g["genome_length"][:])}
            space = dict(zip(g["id"][:], g["space"].asstr()[:]))
            run = dict(zip(g["id"][:], g["run"][:]))
            w = f["workloads"]
            large = {v: e / m for v, wl, m, e in zip(w["variant"][:], w["workload"][:], w["median_ms"][:], w["eager_ms"][:])
                     if wl == 0 and m > 0}
            m = f["measurements"]
            for v, fit, st in zip(m["variant"][:], m["fitness"][:], m["status"].asstr()[:]):
                if runs.get(run[v]) != task or not space[v] or st == "unmeasured":
                    continue
                value = (fit if fitness == "geomean" else large.get(v, 0.0)) if st == "ok" else 0.0
                data[(space[v], genome[v])] = value
    return data


def search(data, policy, seed, budget, population, lag, candidates, lam=1.0, parents_kept=4):
    rnd = random.Random(seed)
    keys = sorted(data)
    spaces = sorted({s for s, _ in keys})
    domains = {}
    for s, vals in keys:
        d = domains.setdefault(s, [set() for _ in vals])
        for i, v in enumerate(vals):
            d[i].add(v)
    domains = {s: [sorted(x) for x in d] for s, d in domains.items()}
    seen, order, generations = {}, [], []

    def measure(g):
        if g not in seen:
            seen[g] = data[g]
            order.append(seen[g])

    first = [rnd.choice(keys) for _ in range(population)]
    for g in first:
        measure(g)
    generations.append(first)
    while len(order) < budget:
        known = [g for gen in (generations[:-1] if lag else generations) for g in gen]
        parents = sorted(known, key=lambda g: -seen[g])[:parents_kept] if known else generations[-1]
        pool = []
        for _ in range(candidates if policy == "model" else 4 * population):
            s, vals = rnd.choice(parents)
            if len(spaces) > 1 and rnd.random() < 0.1:
                s = rnd.choice(spaces)
                child = (s, tuple(rnd.choice(d) for d in domains[s]))
            else:
                vals = list(vals)
                i = rnd.randrange(len(vals))
                vals[i] = rnd.choice(domains[s][i])
                child = (s, tuple(vals))
            if child in data and child not in seen and child not in pool:
                pool.append(child)
        if policy == "model" and known:
            index = {}
            rows = [[index.setdefault(("space", s), len(index))] + [index.setdefault((s, i, v), len(index)) for i, v in enumerate(vals)]
                    for s, vals in known + pool]
            a = np.zeros((len(known), len(index)))
            for r, cols in enumerate(rows[:len(known)]):
                a[r, cols] = 1
            y = np.log(np.maximum([seen[g] for g in known], 1e-3))
            w = np.linalg.solve(a.T @ a + lam * np.eye(len(index)), a.T @ (y - y.mean()))
            predicted = [w[cols].sum() for cols in rows[len(known):]]
            pool = [g for _, g in sorted(zip(predicted, pool), key=lambda x: -x[0])]
        chosen = pool[:population]
        if not chosen:
            break
        for g in chosen:
            measure(g)
        generations.append(chosen)
    best = max(data.values())
    return next((i + 1 for i, v in enumerate(order) if v >= 0.95 * best), budget)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--fitness", choices=["geomean", "large"], default="geomean")
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--population", type=int, default=8)
    ap.add_argument("--candidates", type=int, default=60)
    args = ap.parse_args()
    data = load(args.files, args.task, args.fitness)
    if not data:
        raise SystemExit(f"no recorded genomes of {args.task} in the files")
    best = max(data.values())
    top = sum(v >= 0.95 * best for v in data.values())
    print(f"{args.task}: {len(data)} recorded genomes, best {best:.3f}x, {top} within 5% of it ({args.fitness} fitness)")
    for lag in (True, False):
        r = [search(data, "random", s, args.budget, args.population, lag, args.candidates) for s in range(args.seeds)]
        m = [search(data, "model", s, args.budget, args.population, lag, args.candidates) for s in range(args.seeds)]
        print(f"  {'lag   ' if lag else 'no lag'}: random {np.mean(r):.1f}, model {np.mean(m):.1f} evaluations to 95%: "
              f"model / random {np.mean(m) / np.mean(r):.2f}")


if __name__ == "__main__":
    main()
