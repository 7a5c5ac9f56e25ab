#!/usr/bin/env bash
# Builds kevo (through setup.sh) and runs every test; GPU tests skip with a reason where no GPU is.
#   scripts/test.sh            all tests
#   scripts/test.sh -L gpu     only the GPU tests (on a GPU machine)
#   KEVO_RL=0 scripts/test.sh  without installing the RL trainer's Python packages (those tests skip)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The RL loop's tests (ctest label `rl`) need transformers and PEFT: setup installs them unless KEVO_RL=0.
KEVO_TARGETS=${KEVO_TARGETS:-all} KEVO_RL=${KEVO_RL:-1} "$root/scripts/setup.sh"
cd "${BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
