#!/usr/bin/env bash
# Builds kevo (through setup.sh) and runs every test; GPU tests skip with a reason where no GPU is.
#   scripts/test.sh            all tests
#   scripts/test.sh -L gpu     only the GPU tests (on a GPU machine)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
cd "${BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
