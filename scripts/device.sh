#!/usr/bin/env bash
# Builds and tests kevo on a GPU node that has no package registry (CUDA, Python torch, HDF5,
# Eigen, GoogleTest and nlohmann-json present; Boost.Program_options not). Stage Debian's Boost
# packages into .deps/ first (on a machine with apt):
#   mkdir -p .deps && (cd .deps && apt-get download libboost-program-options1.74.0 \
#       libboost-program-options1.74-dev libboost1.74-dev)
# (send the three .deb files to the node, not .deps/ whole: `KEVO_RL=1 scripts/setup.sh` keeps ~125 MB
# of Python packages in .deps/rl-python.)
# Then on the node:  KEVO_COMMIT=<hash> scripts/device.sh [ctest args...]
# (the RL tests' packages too, from wheels gathered by scripts/rl_wheels.sh DIR 3.12 and sent along:
#  KEVO_RL=1 KEVO_RL_WHEELS=DIR scripts/device.sh -L rl)
# (the node's copy of the checkout may carry stale git metadata: KEVO_COMMIT names the tree for the
# provenance kevo writes into campaign files and exported headers)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${KEVO_DEPS_PREFIX:-/tmp/kevo-deps}
if ls "$root"/.deps/*.deb >/dev/null 2>&1; then
  mkdir -p "$prefix"
  for deb in "$root"/.deps/*.deb; do dpkg -x "$deb" "$prefix"; done
  export KEVO_CMAKE_ARGS="-DBOOST_ROOT=$prefix/usr -DBoost_NO_SYSTEM_PATHS=ON ${KEVO_CMAKE_ARGS:-}"
fi
export KEVO_NO_APT=1 KEVO_NO_PIP=1  # no package registry there
export BUILD_DIR=${BUILD_DIR:-$root/build-gpu}
exec "$root/scripts/test.sh" "$@"
