#!/usr/bin/env bash
# The appending campaign file over a long campaign: one replayed ablation of about a million
# evaluations (the five shipped tasks with the largest spaces x SEEDS seeds x BUDGET evaluations,
# random search, islands re-seeded after two stale generations so that every run spends its budget;
# genomes the replays never recorded are "unmeasured"), run twice:
#   a: uninterrupted, its resident memory sampled every second and its commit time per generation
#      taken from the progress lines;
#   b: the same campaign SIGKILLed once KILL_AT of its evaluations are done, then `kevo resume`d
#      (the time until the resume starts measuring is reported).
# Then the two files are compared table by table (tests/search/campaign_digest.py: everything but
# wall times, ids of the file and sources) and the figures summarised in OUT/summary.md.
#
#   bench/soak.sh KEVO OUT [SEEDS] [BUDGET] [KILL_AT]     (defaults: 50 seeds, 4000 per run, 0.9)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kevo=$(realpath "$1")
out=$(mkdir -p "$2" && realpath "$2")
seeds=${3:-50}
budget=${4:-4000}
kill_at=${5:-0.9}
python=${KEVO_H5PY_PYTHON:-/usr/bin/python3}
cd "$root"

tasks="tasks/03_softmax.json tasks/05_layer_norm.json tasks/13_linear_leaky_relu.json tasks/12_max_pool2d.json tasks/04_rms_norm.json"
args="ablate $tasks --arms random --seeds $seeds --replay results/spaces --budget-evals $budget --population 4 --islands 1 --stagnation 2"

# Runs kevo with `$@`, its stderr lines and its stdout lines stamped with the time (s), its RSS
# sampled every second into $log.rss; with a fraction, SIGKILLs it once that share of the budget
# is evaluated. Leaves the exit status in $log.status.
run() {
  local log=$1 fraction=$2
  shift 2
  date +%s.%N > "$log.start"
  "$kevo" "$@" > >(while IFS= read -r l; do echo "$(date +%s.%N) $l"; done > "$log.out") \
                2> >(while IFS= read -r l; do echo "$(date +%s.%N) $l"; done > "$log.err") &
  local pid=$! total=$((5 * seeds * budget))
  : > "$log.rss"
  while kill -0 "$pid" 2>/dev/null; do
    echo "$(date +%s.%N) $(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)" >> "$log.rss"
    if [ "$fraction" != 0 ]; then
      local evals
      evals=$(tail -1 "$log.err" 2>/dev/null | sed -n 's/.* evals \([0-9]*\)\/.*/\1/p')
      if [ -n "$evals" ] && awk -v e="$evals" -v t="$total" -v f="$fraction" 'BEGIN { exit !(e >= f * t) }'; then
        kill -KILL "$pid"
        echo "$(date +%s.%N) killed at $evals evaluations" >> "$log.out"
        break
      fi
    fi
    sleep 1
  done
  set +e
  wait "$pid"
  echo $? > "$log.status"
  set -e
  sleep 1  # the stamping loops finish their files
}

rm -f "$out"/a.h5 "$out"/b.h5 "$out"/*.journal
start=$(date +%s)
run "$out/a" 0 $args --out "$out/a.h5"
echo "a: exit $(cat "$out/a.status"), $(( $(date +%s) - start )) s"
start=$(date +%s)
run "$out/b" "$kill_at" $args --out "$out/b.h5"
echo "b: killed ($(cat "$out/b.status")), $(( $(date +%s) - start )) s"
run "$out/r" 0 resume "$out/b.h5"
echo "b resumed: exit $(cat "$out/r.status")"

"$python" tests/search/campaign_digest.py "$out/a.h5" > "$out/a.digest"
"$python" tests/search/campaign_digest.py "$out/b.h5" > "$out/b.digest"
if cmp -s "$out/a.digest" "$out/b.digest"; then same=yes; else same=no; fi
"$python" - "$out" "$same" <<'PY'
import statistics, sys
out, same = sys.argv[1], sys.argv[2]

def lines(path):
    for l in open(path, encoding="utf-8", errors="replace"):
        t, _, rest = l.partition(" ")
        yield float(t), rest.rstrip("\n")

def generations(path):
    """(time, generation, evaluations, commit ms) of each committed generation."""
    g = []
    for t, l in lines(path):
        if not l.startswith("gen ") or "| commit " not in l:
            continue
        gen = int(l.split()[1])
        evals = int(l.split("| evals ")[1].split("/")[0])
        ms = float(l.split("| commit ")[1].split(" ms")[0])
        g.append((t, gen, evals, ms))
    return g

def rss(path):
    return [(float(t), int(k)) for t, k in (l.split() for l in open(path) if len(l.split()) == 2)]

a, a_rss = generations(f"{out}/a.err"), rss(f"{out}/a.rss")
t0 = float(open(f"{out}/a.start").read())
rows = ["| part of the run | generations | evaluations at its end | commit ms: median, p90, max | resident memory MB at its end |",
        "|---|---|---|---|---|"]
for d in range(10):
    part = a[d * len(a) // 10:(d + 1) * len(a) // 10]
    ms = sorted(x[3] for x in part)
    end = part[-1][0]
    r = max(k for t, k in a_rss if t <= end) / 1024
    rows.append(f"| {d * 10}-{d * 10 + 10}% | {len(part)} | {part[-1][2]} | {statistics.median(ms):.0f}, "
                f"{ms[int(0.9 * (len(ms) - 1))]:.0f}, {ms[-1]:.0f} | {r:.0f} |")
b_out = list(lines(f"{out}/b.out"))
killed = [l for t, l in b_out if l.startswith("killed at")]
r_out = list(lines(f"{out}/r.out"))
r_err = generations(f"{out}/r.err")
r_start = float(open(f"{out}/r.start").read())
resumed = [t for t, l in r_out if l.startswith("resuming ")]
first = r_err[0] if r_err else None
summary = "\n".join(rows) + "\n\n"
summary += f"a: {a[-1][1] + 1} generations, {a[-1][2]} evaluations in {a[-1][0] - t0:.0f} s; peak resident memory {max(k for _, k in a_rss) / 1024:.0f} MB\n"
summary += f"b: {killed[0] if killed else 'not killed'}; `kevo resume` read the file and was ready after about " \
           f"{(resumed[0] - r_start) if resumed else float('nan'):.1f} s (the first line it prints), its first generation " \
           f"(gen {first[1] if first else '?'}) committed {(first[0] - r_start) if first else float('nan'):.1f} s after it started\n"
summary += f"a and b's files hold the same campaign (campaign_digest.py): {same}\n"
open(f"{out}/summary.md", "w").write(summary)
print(summary)
PY
