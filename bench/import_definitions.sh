#!/usr/bin/env bash
# Imports every definition of a FlashInfer-Bench-format repository (SOL-ExecBench's
# <problem>/definition.json beside workload.jsonl, FlashInfer-Trace's definitions/<op>/<name>.json
# beside workloads/) with `kevo import flashinfer`, runs `kevo check` on each contract and lowers it
# (`kevo space --sample 1`: a legal genome rendered with a valid plan), and prints one line per
# definition and a summary.
#
#   bench/import_definitions.sh REPO_DIR OUT_DIR
#     OUT_DIR  contracts, logs and OUT_DIR/report.tsv (definition, imported, checked, lowered, why not)
#   KEVO=path/to/kevo (default: build/kevo)  LIMIT_S=N (default 900: seconds each step may take)
#
# The contracts are the repository's definitions translated: keep OUT_DIR out of the repository.
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 REPO_DIR OUT_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repo=$1
out=$2
kevo=${KEVO:-$root/build/kevo}
limit=${LIMIT_S:-900}
[ -x "$kevo" ] || { echo "$0: no kevo binary at $kevo (build it, or set KEVO)" >&2; exit 2; }
mkdir -p "$out/logs"
mapfile -t defs < <(find "$repo" -name definition.json -o -path '*/definitions/*.json' | sort)
[ ${#defs[@]} -gt 0 ] || { echo "$0: no definition under $repo" >&2; exit 2; }
printf 'definition\timported\tchecked\tlowered\twhy not\n' > "$out/report.tsv"
n_import=0 n_check=0 n_lower=0
for d in "${defs[@]}"; do
  rel=${d#"$repo"/}
  name=$(printf '%s' "${rel%.json}" | sed 's|/definition$||' | tr -c 'A-Za-z0-9_.-' '_')
  json="$out/$name.json" log="$out/logs/$name"
  imported=no checked=- lowered=- why=
  if timeout "$limit" "$kevo" import flashinfer "$d" -o "$json" --name "$name" > "$log.import" 2>&1; then
    imported=yes n_import=$((n_import + 1)) checked=no
    if timeout "$limit" "$kevo" check "$json" > "$log.check" 2>&1; then
      checked=yes n_check=$((n_check + 1)) lowered=no
      if timeout "$limit" "$kevo" space "$json" --sample 1 > "$log.space" 2>&1 &&
         grep -q '^rendered [1-9][0-9]* samples, 0 with invalid plans' "$log.space"; then
        lowered=yes n_lower=$((n_lower + 1))
      else
        why=$(grep -v '^\s*$' "$log.space" | tail -1)
      fi
    else
      why=$(grep -m1 -v "^$json: $name" "$log.check")
    fi
  else
    why=$(grep -v '^kevo import' "$log.import" | grep -v '^\s*$' | tail -1)
  fi
  why=${why//$'\t'/ }
  printf '%s\t%s\t%s\t%s\t%s\n' "$rel" "$imported" "$checked" "$lowered" "${why:0:300}" >> "$out/report.tsv"
  printf '%-60s import %-3s check %-3s lower %-3s %s\n' "$rel" "$imported" "$checked" "$lowered" "${why:0:160}"
done
echo "${#defs[@]} definitions: $n_import imported, $n_check checked, $n_lower lowered to a space with a legal genome"
