"""Checks for the capture path of `kevo import kernelbench` (tools/kevo_import/kb_capture.py): problem
files of kevo's own in KernelBench's format (tests/tools/kernelbench_capture/) that the AST
translation refuses are traced under Python torch; each contract must be written, agree with its
Model on the small workload and, given a kevo binary, load and pass `kevo check`.

    PYTHON_WITH_TORCH tests/tools/kernelbench_capture_test.py [KEVO]
Exit status 1 on any failure, 77 (skipped) where torch is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROBLEMS = os.path.join(HERE, "kernelbench_capture")
TOOL = os.path.join(REPO, "tools", "kernelbench_import.py")

failures: list = []


def check(what: str, ok: bool, detail: str = ""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))
    if not ok:
        failures.append(what)


def run_import(name: str, out: str):
    return subprocess.run([sys.executable, TOOL, os.path.join(PROBLEMS, name + ".py"), "-o", out],
                          capture_output=True, text=True, timeout=300)


def main() -> int:
    try:
        import torch  # noqa: F401
    except ImportError:
        print(f"skipped: no torch in {sys.executable}")
        return 77
    kevo = sys.argv[1] if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory() as tmp:
        for name, ops in (("residual_bn", ["F.conv2d(", "F.batch_norm(", "training=True", "torch.relu("]),
                          ("sequential_mlp", ["F.linear(", "torch.relu("]),
                          ("small_lstm", ["torch.sigmoid(", "torch.tanh(", "F.linear("]),
                          ("literal_sizes_bn_out", ["F.conv2d(", "F.batch_norm("]),
                          ("rnn_cell_concat", ["torch.cat(", "F.linear(", "torch.tanh("])):
            out = os.path.join(tmp, name + ".json")
            r = run_import(name, out)
            text = r.stdout + r.stderr
            check(f"{name}: imported through the capture path", r.returncode == 0 and "capturing the model" in text,
                  text[-800:])
            if r.returncode != 0:
                continue
            check(f"{name}: agrees with its Model", "agreement: the reference matches" in text, text[-800:])
            with open(out) as f:
                c = json.load(f)
            ref = c["reference"]
            for op in ops:
                check(f"{name}: the reference has {op}", op in ref, ref)
            check(f"{name}: one statement per line, SSA names",
                  len({ln.split(" = ")[0] for ln in ref.splitlines() if " = " in ln}) ==
                  sum(1 for ln in ref.splitlines() if " = " in ln))
            check(f"{name}: a var batch axis with a small workload",
                  c["axes"].get("batch_size") == {"type": "var"} and len(c["workloads"]) == 2, str(c["axes"]))
            if name == "residual_bn":
                check("residual_bn: parameters named after their module path",
                      {"layers_0_weight", "layers_1_weight", "layers_1_bias"} <= set(c["inputs"]), str(list(c["inputs"])))
            if name == "small_lstm":
                check("small_lstm: the LSTM's weights are inputs drawn as PyTorch draws them",
                      c["inputs"]["lstm_weight_ih_l0"]["init"]["dist"] == "uniform", str(c["inputs"]))
            if name == "literal_sizes_bn_out":
                check("literal_sizes_bn_out: the literal image size and the listed widths are axes",
                      {"x_dim2", "x_dim3", "widths_0", "widths_1"} <= set(c["axes"]), str(c["axes"]))
                check("literal_sizes_bn_out: the output returned by a batch norm has a fitted shape",
                      c["outputs"]["out"]["shape"] == ["batch_size", "widths_1", "x_dim2", "x_dim3"],
                      str(c["outputs"]))
                check("literal_sizes_bn_out: workload 0 is the problem's own sizes",
                      c["workloads"][0].get("x_dim2") == 32 and c["workloads"][0].get("widths_1") == 32,
                      str(c["workloads"]))
            if name == "rnn_cell_concat":
                check("rnn_cell_concat: a size that is a sum of axes is fitted as one",
                      c["inputs"]["i2h_weight"]["shape"] == ["hidden_size", "input_size + hidden_size"],
                      str(c["inputs"].get("i2h_weight")))
                check("rnn_cell_concat: the state copied in place from an argument reads that argument",
                      "initial_hidden" in c["inputs"] and "hidden" not in c["inputs"], str(list(c["inputs"])))
            if kevo:
                k = subprocess.run([kevo, "check", out], capture_output=True, text=True, timeout=300)
                check(f"{name}: kevo check passes on the CPU", k.returncode == 0 and "ran on the CPU" in k.stdout,
                      k.stdout[-800:] + k.stderr[-800:])
        r = run_import("active_dropout", os.path.join(tmp, "dropout.json"))
        check("active dropout is refused with one line naming it",
              r.returncode == 2 and "cannot translate:" in r.stderr and "ropout" in r.stderr, r.stderr[-800:])
    print(f"{len(failures)} failure(s)" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
