#!/usr/bin/env bash
# Compiles each header of the export runtime (src/runtime/kevo_export/) on its own, included twice,
# with the host compiler (-Werror) and, when given, with nvcc; then all of them in one translation
# unit. A header that needs cudnn.h is skipped, with the reason, where the toolkit lacks cudnn.h.
#
#   compile_headers.sh CXX CUDA_INCLUDE_DIRS [NVCC]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cxx=$1
nvcc=${3:-}
includes=(-I "$root/src/runtime")
IFS=';' read -r -a cuda_dirs <<< "$2"
have_cudnn=0
for d in "${cuda_dirs[@]}"; do
  includes+=(-I "$d")
  [ -f "$d/cudnn.h" ] && have_cudnn=1
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

status=0
compiled=()
for path in "$root"/src/runtime/kevo_export/*.h; do
  h=$(basename "$path")
  if grep -q '^#include <cudnn.h>' "$path" && [ $have_cudnn = 0 ]; then
    echo "SKIP $h: cudnn.h is not in the CUDA include directories ($2)"
    continue
  fi
  printf '#include "kevo_export/%s"\n#include "kevo_export/%s"\n' "$h" "$h" > "$work/$h.cpp"
  if ! "$cxx" -std=c++17 -fsyntax-only -Wall -Wextra -Wshadow -Werror "${includes[@]}" "$work/$h.cpp"; then
    echo "FAIL: $h does not compile on its own with $cxx"
    status=1
  fi
  if [ -n "$nvcc" ] && [ -x "$nvcc" ]; then
    cp "$work/$h.cpp" "$work/$h.cu"
    if ! "$nvcc" -std=c++17 -c -Xcompiler -Wall "${includes[@]}" "$work/$h.cu" -o "$work/$h.o"; then
      echo "FAIL: $h does not compile on its own with nvcc"
      status=1
    fi
  fi
  compiled+=("$h")
done
# All together, as an exported header with every kind of step holds them.
for h in "${compiled[@]}"; do echo "#include \"kevo_export/$h\""; done > "$work/all.cpp"
"$cxx" -std=c++17 -fsyntax-only -Wall -Wextra -Werror "${includes[@]}" "$work/all.cpp" || {
  echo "FAIL: the headers do not compile together"
  status=1
}
[ $status = 0 ] && echo "ok: ${#compiled[@]} headers compile on their own and together: ${compiled[*]}"
exit $status
