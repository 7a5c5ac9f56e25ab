"""The Python packages the trainer and the local server need, and where the project installs them.

scripts/setup.sh installs these exact versions (with `KEVO_RL=1`) into .deps/rl-python with
`pip install --no-deps --target`, so nothing of the system's Python is replaced; the tools add
that folder to sys.path themselves. transformers 4.44 and peft 0.12 are the last lines that run
on Debian 12's torch 1.13 and also run on torch 2.x (the GPU node's).
"""
import os
import sys

PINNED = [
    "transformers==4.44.2", "tokenizers==0.19.1", "safetensors==0.4.5", "huggingface-hub==0.24.6",
    "peft==0.12.0", "accelerate==0.33.0", "regex==2024.7.24", "tqdm==4.66.5", "filelock==3.15.4",
    "packaging==24.1", "fsspec==2024.6.1", "jinja2==3.1.4", "markupsafe==2.1.5",
]

# What those packages import and a torch installation may lack (Debian's python3-torch brings them,
# a pip-installed torch not always): installed only where the Python cannot import them.
BASE = {
    "numpy": ["numpy==1.26.4"],
    "yaml": ["pyyaml==6.0.2"],
    "psutil": ["psutil==6.0.0"],
    "requests": ["requests==2.32.3", "urllib3==2.2.2", "idna==3.7", "certifi==2024.7.4", "charset-normalizer==3.3.2"],
}

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPS_DIR = os.path.join(ROOT, ".deps", "rl-python")


def use_project_deps():
    """Puts .deps/rl-python on sys.path (where setup.sh installed the pinned packages)."""
    if os.path.isdir(DEPS_DIR) and DEPS_DIR not in sys.path:
        sys.path.insert(0, DEPS_DIR)
    # Everything is local: never ask a hub for a model, a tokenizer or telemetry.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def base_pins_missing():
    """The pins of BASE whose module this Python cannot import."""
    import importlib.util

    return [pin for module, pins in BASE.items() if importlib.util.find_spec(module) is None for pin in pins]


def missing():
    """A one-line reason when torch, transformers or peft cannot be imported, else None."""
    use_project_deps()
    for name in ("torch", "transformers", "peft"):
        try:
            __import__(name)
        except Exception as e:  # an ImportError, or a package that fails on this torch
            return "%s does not import (%s): run KEVO_RL=1 scripts/setup.sh" % (name, str(e).splitlines()[0] if str(e) else type(e).__name__)
    return None
