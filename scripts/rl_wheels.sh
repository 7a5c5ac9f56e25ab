#!/usr/bin/env bash
# Downloads the wheels the RL trainer and serve_hf.py need (tools/kevo_rl/deps.py: the pins and the
# base packages a torch installation may lack) for a machine without a package registry: carry DIR
# there and run `KEVO_RL=1 KEVO_RL_WHEELS=DIR scripts/setup.sh`.
#   scripts/rl_wheels.sh DIR [PYTHON_VERSION]     (the target's Python, e.g. 3.12; default: this one's)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:?usage: scripts/rl_wheels.sh DIR [PYTHON_VERSION]}
pyver=${2:-$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
pins=$(python3 -c "import sys; sys.path.insert(0, '$root/tools'); from kevo_rl import deps
print(' '.join(deps.PINNED + [p for ps in deps.BASE.values() for p in ps]))")
# shellcheck disable=SC2086
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --dest "$dir" \
  --python-version "$pyver" --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux_2_28_x86_64 $pins
ls "$dir"
