#!/usr/bin/env bash
# Installs what kevo needs (Debian packages, where apt can reach them) and builds it into build/.
# Idempotent: re-running only rebuilds what changed. On a machine without a package registry
# (the GPU node) the libraries must already be there; the script then skips apt.
#
#   scripts/setup.sh              install if needed, configure, build
#   BUILD_DIR=build-x scripts/setup.sh
#   KEVO_TORCH_PREFIX=/path/to/torch/share/cmake scripts/setup.sh   (use another LibTorch)
#   KEVO_RL=1 scripts/setup.sh    also the RL trainer's Python packages (scripts/test.sh sets it)
#   KEVO_RL=1 KEVO_RL_WHEELS=DIR scripts/setup.sh   the same from wheels in DIR (a node without PyPI)
#   KEVO_TARGETS="kevo core_tests" scripts/setup.sh   build these targets (default: kevo alone, what the
#                                  quick start runs; scripts/test.sh builds all, the tests included)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

# python3-torch (Debian's 1.13, for /usr/bin/python3) lets `kevo import kernelbench` check its
# translations against the problems' own models (18 packages, about 20 s to install).
packages=(build-essential cmake ninja-build pkg-config libtorch-dev libeigen3-dev libboost-program-options-dev
          libhdf5-dev nlohmann-json3-dev libgtest-dev libcurl4-openssl-dev python3-h5py python3-torch)

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi

if ((${#missing[@]})); then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && [ -z "${KEVO_NO_APT:-}" ]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: not installing ${missing[*]} (no apt, not root, or KEVO_NO_APT set); using what is present"
  fi
fi

# The CUDA toolkit: NVRTC, CUPTI and cuda.h. It is not a Debian package here; it must be installed.
cuda_root=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda_root/bin/nvcc" ] && ! command -v nvcc >/dev/null 2>&1; then
  echo "setup: no CUDA toolkit found (looked in $cuda_root and on PATH); install CUDA 12.8+ or set CUDA_HOME" >&2
  exit 1
fi
[ -x "$cuda_root/bin/nvcc" ] && export PATH="$cuda_root/bin:$PATH"

# cuobjdump and nvdisasm (the gemm family's SASS check, tests/lower/gemm_test.cpp): the
# toolkit's where it has them, else NVIDIA's PyPI wheels in .deps/cuda-tools (optional: the check
# skips without them).
if [ ! -x "$cuda_root/bin/cuobjdump" ] && [ ! -x "$root/.deps/cuda-tools/nvidia/cu13/bin/cuobjdump" ] &&
   [ -z "${KEVO_NO_PIP:-}" ] && command -v python3 >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check --target "$root/.deps/cuda-tools" \
    nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >/dev/null 2>&1 ||
    echo "setup: no cuobjdump (pip could not install nvidia-cuda-cuobjdump); the SASS check will skip"
fi

# The RL trainer and the local model server (tools/grpo_step.py, tools/serve_hf.py) need transformers
# and PEFT for the Python that has torch (Debian's python3-torch here, the node's own torch there):
# the versions pinned in tools/kevo_rl/deps.py, without their dependencies' resolution (so nothing
# replaces the system's numpy or torch), into .deps/rl-python, which the tools put on their path.
# Only with KEVO_RL=1: the tests that need them (ctest label `rl`) skip with the reason otherwise.
# About 25 s and 125 MB; re-installed only when the pins change.
# (KEVO_NO_PIP, a machine without a registry, still installs them from KEVO_RL_WHEELS.)
# The first Python with torch: Debian's here, the node's own there (the tests that need torch run with it).
torch_python=${KEVO_RL_PYTHON:-}
if [ -z "$torch_python" ]; then
  for p in /usr/bin/python3 "$(command -v python3 || true)"; do
    [ -x "$p" ] && "$p" -c 'import torch' 2>/dev/null && { torch_python=$p; break; }
  done
fi
if [ "${KEVO_RL:-0}" = 1 ] && { [ -z "${KEVO_NO_PIP:-}" ] || [ -n "${KEVO_RL_WHEELS:-}" ]; }; then
  rl_python=$torch_python
  rl_dir=$root/.deps/rl-python
  if [ -z "$rl_python" ]; then
    echo "setup: no Python with torch found (set KEVO_RL_PYTHON); the rl tests will skip" >&2
  else
    rl_pins=$("$rl_python" -c "import sys; sys.path.insert(0, '$root/tools'); from kevo_rl import deps
print(' '.join(deps.PINNED + deps.base_pins_missing()))")
    if [ "$(cat "$rl_dir/.kevo-pins" 2>/dev/null)" != "$rl_pins" ]; then
      rl_pip=("$rl_python" -m pip)
      "$rl_python" -m pip --version >/dev/null 2>&1 || rl_pip=(python3 -m pip)
      rl_source=()
      [ -n "${KEVO_RL_WHEELS:-}" ] && rl_source=(--no-index --find-links "$KEVO_RL_WHEELS")
      rm -rf "$rl_dir"
      # shellcheck disable=SC2086
      if "${rl_pip[@]}" install -q --disable-pip-version-check --root-user-action=ignore --no-deps --target "$rl_dir" \
           "${rl_source[@]}" $rl_pins >/dev/null; then
        echo "$rl_pins" > "$rl_dir/.kevo-pins"
        echo "setup: installed the RL trainer's packages into $rl_dir (for $rl_python)"
      else
        echo "setup: could not install the RL trainer's packages ($rl_pins); the rl tests will skip" >&2
      fi
    fi
  fi
fi

# LibTorch: Debian's on CPU machines; elsewhere the one inside Python's torch.
torch_prefix=${KEVO_TORCH_PREFIX:-}
if [ -z "$torch_prefix" ] && [ ! -d /usr/lib/x86_64-linux-gnu/cmake/Torch ]; then
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
fi

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake_args=(-S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release})
[ -n "$torch_prefix" ] && cmake_args+=("-DCMAKE_PREFIX_PATH=$torch_prefix")
[ -n "$torch_python" ] && cmake_args+=("-DKEVO_TORCH_PYTHON=$torch_python")
# The generator is fixed when a build folder is first configured.
[ -f "$build_dir/CMakeCache.txt" ] && generator=()
# shellcheck disable=SC2086
cmake "${generator[@]}" "${cmake_args[@]}" ${KEVO_CMAKE_ARGS:-} >/dev/null
# shellcheck disable=SC2086
# shellcheck disable=SC2086
cmake --build "$build_dir" -j "$jobs" --target ${KEVO_TARGETS:-kevo}
echo "setup: built $build_dir/kevo"
