#!/usr/bin/env bash
# Imports every level-1, level-2 and level-3 problem of a KernelBench checkout with `kevo import
# kernelbench`, runs `kevo check` on each contract (and `kevo space --sample 1` on level 3's),
# prints a summary table and writes the per-problem list.
#
#   bench/import_kernelbench.sh KB_DIR OUT_DIR
#     KB_DIR   a KernelBench checkout (KB_DIR/KernelBench/level1 or KB_DIR/level1)
#     OUT_DIR  contracts (OUT_DIR/level1/*.json), logs, and OUT_DIR/report.md: the summary and one
#              row per problem (imported? check passed? why not?)
#   KEVO=path/to/kevo (default: build/kevo)  JOBS=N (default: nproc)  DOCS=docs/file.md (also write
#   the report there)  LIMIT_S=N (default 900: seconds each import and each check may take)
#   LEVELS="level1 level2 level3" (default: those present; level 3 goes through the capture path,
#   which needs a Python with torch: KEVO_PYTHON or --python as `kevo import` finds it)
#
# A problem "passes" when it imports (translated, agreeing with its Model under Python torch where
# torch is present, loaded by kevo's parser) and `kevo check` exits 0 having run the small workload
# on the CPU. The contracts are KernelBench's problems translated: keep OUT_DIR out of the repository.
set -uo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 KB_DIR OUT_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kb=$1
out=$2
kevo=${KEVO:-$root/build/kevo}
jobs=${JOBS:-$(nproc)}
if [ -d "$kb/KernelBench/level1" ]; then kb=$kb/KernelBench; fi
if [ ! -d "$kb/level1" ] || [ ! -d "$kb/level2" ]; then
  echo "$0: no level1/ and level2/ under $1 (nor under $1/KernelBench)" >&2
  exit 2
fi
if [ ! -x "$kevo" ]; then
  echo "$0: no kevo binary at $kevo (build it, or set KEVO)" >&2
  exit 2
fi
levels=${LEVELS:-level1 level2$( [ -d "$kb/level3" ] && echo " level3")}
for l in $levels; do mkdir -p "$out/$l"; done
mkdir -p "$out/logs" "$out/status"
rm -f "$out"/status/*.tsv

# One problem: import, check, and one status line: level, problem, imported, check, reason.
one() {
  local f=$1 lvl stem name json log irc crc imported=no check=- reason=
  lvl=$(basename "$(dirname "$f")")
  stem=$(basename "$f" .py)
  name="kb_${lvl}_$(printf '%s' "$stem" | tr -c 'A-Za-z0-9_.-' '_')"
  json="$OUT/$lvl/$stem.json"
  log="$OUT/logs/${lvl}_$stem"
  rm -f "$json"
  timeout "$LIMIT_S" "$KEVO" import kernelbench "$f" -o "$json" --name "$name" >"$log.import" 2>&1
  irc=$?
  [ $irc -eq 124 ] && echo "kevo import: error: timed out after $LIMIT_S s" >>"$log.import"
  if [ $irc -eq 0 ]; then
    imported=yes
    timeout "$LIMIT_S" "$KEVO" check "$json" >"$log.check" 2>&1
    crc=$?
    if [ $crc -eq 124 ]; then
      check=failed
      reason="kevo check timed out after $LIMIT_S s"
    elif [ $crc -ne 0 ]; then
      check=failed
      # kevo check's verdict: the first line naming the contract after its header ("FILE: NAME - ...").
      reason=$(grep -E "^$json|internal error" "$log.check" | grep -v -m1 -F "$json: $name - " |
               sed -E "s|^$json:[0-9]+:[0-9]+: ||; s|^$json: ||; s|^|kevo check: |")
      [ -n "$reason" ] || reason="kevo check exited $crc"
    elif grep -q "ran on the CPU" "$log.check"; then
      check=passed
      if [ "$lvl" = level3 ]; then
        timeout "$LIMIT_S" "$KEVO" space "$json" --sample 1 >"$log.space" 2>&1 || {
          check=failed; reason="kevo space --sample 1: $(grep -m1 -iE 'error|no legal|invalid' "$log.space" | sed -E 's|^.*: the rendered plan is invalid: [^ ]*: |the rendered plan is invalid: |')"; }
      fi
    else
      check=failed
      reason="no workload ran on the CPU"
    fi
  elif grep -q "cannot translate:" "$log.import"; then
    imported=refused
    reason=$(grep -m1 "cannot translate:" "$log.import" | sed -E "s|^.*/$stem\.py:([0-9]+): cannot translate: |line \1: |")
  elif grep -q "does not accept it" "$log.import"; then
    imported=translated
    check=failed
    reason="kevo refuses the contract: $(grep -m1 -E "^$json:" "$log.import" | sed -E "s|^$json:[0-9]+:[0-9]+: ||")"
  else
    imported=failed
    reason=$(grep -m1 -E "agreement check failed|error|Error" "$log.import" | sed -E "s|^.*/$stem\.py: ||")
    [ -n "$reason" ] || reason="kevo import exited $irc"
  fi
  reason=${reason//$'\t'/ }
  printf '%s\t%s\t%s\t%s\t%s\n' "$lvl" "$stem" "$imported" "$check" "$reason" >"$OUT/status/${lvl}_$stem.tsv"
}
export -f one
export OUT=$out KEVO=$kevo LIMIT_S=${LIMIT_S:-900}

start=$(date +%s)
for l in $levels; do echo "$kb/$l"; done | xargs -I{} find {} -maxdepth 1 -name '*.py' | sort -V | xargs -P "$jobs" -I{} bash -c 'one "$1"' _ {}
elapsed=$(($(date +%s) - start))

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
python_line=$(grep -h -m1 "kevo import: python" "$out"/logs/*.import 2>/dev/null | head -1 | sed 's/kevo import: //')
agreed=$(grep -l "agreement: the reference matches" "$out"/logs/*.import 2>/dev/null | wc -l)
skipped=$(grep -l "agreement check: skipped" "$out"/logs/*.import 2>/dev/null | wc -l)
report="$out/report.md"
{
  echo "# KernelBench levels 1 to 3 through \`kevo import kernelbench\`"
  echo
  echo "kevo $commit, $python_line, $(date -u +%Y-%m-%d), ${elapsed} s with $jobs jobs. Regenerate with"
  echo "\`bench/import_kernelbench.sh KB_DIR OUT_DIR\` (see docs/import.md)."
  echo
  echo "| | level 1 | level 2 | level 3 | total |"
  echo "|---|---|---|---|---|"
  count() { cat "$out"/status/*.tsv | awk -F'\t' -v l="$1" -v want="$2" -v col="$3" \
              '(l == "all" || $1 == l) && $col ~ want {n++} END {print n+0}'; }
  row() { echo "| $1 | $(count level1 "$2" "$3") | $(count level2 "$2" "$3") | $(count level3 "$2" "$3") | $(count all "$2" "$3") |"; }
  row "problems" "." 1
  row "translated (the importer wrote a contract)" "^(yes|translated)$" 3
  row "imported (kevo's parser accepts the contract)" "^yes$" 3
  row "**kevo check passed** (small workload run on the CPU; level 3: and a legal genome)" "^passed$" 4
  row "refused by the importer" "^refused$" 3
  row "failed in the importer (agreement, internal)" "^failed$" 3
  echo
  echo "Agreement with KernelBench's Model under Python torch on the small workload: $agreed contracts;"
  echo "skipped: $skipped."
  echo
  echo "## Why not, grouped"
  echo
  echo "| problems | reason |"
  echo "|---|---|"
  cat "$out"/status/*.tsv | awk -F'\t' '$5 != "" {print $5}' |
    sed -E "s/^line [0-9]+: //; s/reference:[0-9]+:[0-9]+: //; s/ \(workload [0-9]+\)//" |
    sort | uniq -c | sort -rn | awk '{n=$1; $1=""; sub(/^ /, ""); print "| " n " | " $0 " |"}'
  echo
  echo "## Per problem"
  echo
  echo "| level | problem | imported | kevo check | why not |"
  echo "|---|---|---|---|---|"
  cat "$out"/status/*.tsv | sort -t$'\t' -k1,1 -k2,2V |
    awk -F'\t' '{gsub(/\|/, "\\|", $5); print "| " $1 " | " $2 " | " $3 " | " $4 " | " $5 " |"}'
} >"$report"
[ -n "${DOCS:-}" ] && cp "$report" "$DOCS"

sed -n '/^| |/,/^$/p' "$report" | sed -e 's/\*\*//g'
echo "Why not (grouped):"
sed -n '/^## Why not/,/^## Per problem/p' "$report" | grep '^| [0-9]' | sed 's/^| \([0-9]*\) | \(.*\) |$/  \1  \2/'
echo "per-problem list: $report"
