#!/usr/bin/env python3
"""kevo serve under load: N clients post M evaluations each of the given candidates (in turn) and the
bench reports the answers' statuses, rewards, fitness, latency percentiles and throughput.

    python3 bench/serve_bench.py URL TASK CANDIDATE.cu [CANDIDATE.cu ...] [--clients 8] [--requests 10]
        [--edit-variants]   (each request a distinct candidate: the source plus a comment line)

On the replay evaluator this measures the server and the queue; on GPUs, kevo's evaluation.
"""
import argparse
import collections
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from kevo_rl.reward_client import KevoServeError, evaluate  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("task")
    ap.add_argument("candidates", nargs="+")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--edit-variants", action="store_true")
    a = ap.parse_args()
    sources = [open(p).read() for p in a.candidates]
    latencies, statuses, lock = [], collections.Counter(), threading.Lock()
    best = {}

    def client(c):
        for i in range(a.requests):
            src = sources[(c + i) % len(sources)]
            if a.edit_variants:
                src += "\n// variant %d.%d\n" % (c, i)
            t = time.time()
            try:
                r = evaluate(a.url, a.task, source=src)
                key = "%s/%s reward %s" % (r["candidate"], r.get("measurement", {}).get("status", "-"), r["reward"])
                fit = r.get("measurement", {}).get("fitness", 0)
            except KevoServeError as e:
                key, fit = "HTTP %s" % e.status, 0
            with lock:
                latencies.append(time.time() - t)
                statuses[key] += 1
                name = os.path.basename(a.candidates[(c + i) % len(sources)])
                best[name] = max(best.get(name, 0), fit)

    started = time.time()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - started
    latencies.sort()
    n = len(latencies)
    pct = lambda q: latencies[min(n - 1, int(q * n))] * 1000  # noqa: E731
    print("%d requests from %d clients in %.2f s: %.1f evaluations/s; latency p50 %.1f ms, p90 %.1f ms, max %.1f ms"
          % (n, a.clients, wall, n / wall, pct(0.5), pct(0.9), latencies[-1] * 1000))
    for k, v in sorted(statuses.items()):
        print("  %4d  %s" % (v, k))
    for name, f in sorted(best.items()):
        print("  %s: fitness %.3fx over eager" % (name, f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
