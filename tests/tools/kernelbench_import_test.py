"""Checks for the importers (tools/kevo_import): KernelBench problem files of kevo's own in
tests/tools/kernelbench/ and a FlashInfer-Bench definition in tests/tools/flashinfer/.

    python3 tests/tools/kernelbench_import_test.py            translation checks (no torch needed)
    python3 tests/tools/kernelbench_import_test.py --torch    the agreement check under Python torch;
                                                               exit 77 (skipped) where torch is missing
Exit status 1 on any failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROBLEMS = os.path.join(HERE, "kernelbench")
sys.path.insert(0, os.path.join(REPO, "tools"))

from kevo_import import flashinfer  # noqa: E402
from kevo_import.dist import DistTensor, affine, convert  # noqa: E402
from kevo_import.kb_translate import TranslateError, translate  # noqa: E402
from kevo_import.symdim import Dim, evaluate, parse_size, text_of  # noqa: E402

failures: list = []


def check(what: str, ok: bool, detail: str = ""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))
    if not ok:
        failures.append(what)


def problem(name: str):
    path = os.path.join(PROBLEMS, name + ".py")
    with open(path) as f:
        return translate(path, f.read())


def inline(source: str):
    return translate("inline.py", source)


def refusal(source: str) -> TranslateError | None:
    try:
        inline(source)
    except TranslateError as e:
        return e
    return None


def size_at(entry, env: dict) -> int:
    return entry if isinstance(entry, int) else evaluate(parse_size(entry, {a: Dim.axis(a) for a in env}), env)


# ---------------------------------------------------------------------------------------------- sizes


def test_sizes():
    H, B = Dim.axis("H"), Dim.axis("B")
    pooled = (H - 1) // 2 + 1
    check("a floor division that is not exact stays whole", text_of(pooled) == "(H - 1) // 2 + 1", text_of(pooled))
    check("... and evaluates as Python's", evaluate(pooled, {"H": 10}) == 5)
    check("a product divided by one of its factors simplifies", text_of(B * 3 * pooled // (B * 3)) == text_of(pooled))
    check("sizes written then parsed are the same size", parse_size(text_of(pooled * B), {"H": H, "B": B}) == pooled * B)
    check("sizes without axes are ints", isinstance(H - H + 4, int) and H - H + 4 == 4)


def test_draws():
    def d(init, dtype="float32"):
        return DistTensor([4], dtype, init)

    labels = affine(convert(d({"dist": "randint", "low": 0, "high": 2}, "int64"), "float32", ""), 2, -1, "")
    check("randint(0, 2).float() * 2 - 1 is a choice of -1 and 1", labels.init == {"dist": "choice", "values": [-1.0, 1.0]},
          str(labels.init))
    n = affine(d({"dist": "normal", "mean": 0.0, "std": 1.0}), 0.5, 1.0, "")
    check("randn * 0.5 + 1 is normal(1, 0.5)", n.init == {"dist": "normal", "mean": 1.0, "std": 0.5}, str(n.init))
    u = affine(d({"dist": "uniform", "low": 0.0, "high": 1.0}), -2, 1, "")
    check("1 - 2 * rand is uniform(-1, 1)", u.init == {"dist": "uniform", "low": -1.0, "high": 1.0}, str(u.init))
    mask = convert(d({"dist": "randint", "low": 0, "high": 2}, "int64"), "bool", "")
    check("randint(0, 2).bool() is exact fair coin flips", mask.dtype == "bool" and not mask.notes)


# ---------------------------------------------------------------------------------------------- problems


def test_conv_relu():
    t = problem("conv_relu")
    c = t.contract
    check("conv_relu: the named sizes are var axes",
          t.var_axes == ["batch_size", "in_channels", "out_channels", "height", "width"], str(t.var_axes))
    check("conv_relu: the kernel size is a const axis", c["axes"].get("kernel_size") == {"type": "const", "value": 3})
    check("conv_relu: inputs are forward's, then parameters in __init__ order",
          list(c["inputs"]) == ["x", "conv_weight", "conv_bias", "bias"], str(list(c["inputs"])))
    inits = {k: v.get("init", {}).get("dist") for k, v in c["inputs"].items()}
    check("conv_relu: PyTorch's default initialisation",
          inits == {"x": "uniform", "conv_weight": "kaiming_uniform", "conv_bias": "fan_in_uniform", "bias": "normal"},
          str(inits))
    check("conv_relu: the bias's fan-in is the weight's", c["inputs"]["conv_bias"]["init"]["fan_in_of"] == "conv_weight")
    ref = c["reference"]
    check("conv_relu: the module as its functional call",
          "F.conv2d(x, conv_weight, conv_bias, stride=1, padding=1, dilation=1, groups=1)" in ref, ref)
    check("conv_relu: the activation module and the constant", "torch.relu(x)" in ref and "x * 0.5" in ref, ref)
    check("conv_relu: the output keeps the padded size",
          c["outputs"]["out"]["shape"] == ["batch_size", "out_channels", "height", "width"], str(c["outputs"]))
    full, small = c["workloads"]
    check("conv_relu: workload 0 is the problem's own sizes",
          full == {"batch_size": 16, "in_channels": 8, "out_channels": 16, "height": 64, "width": 64}, str(full))
    check("conv_relu: workload 1 is smaller", all(small[a] <= full[a] for a in full) and small != full, str(small))


def test_matmul():
    c = problem("matmul").contract
    check("matmul: M = 4096 * 2 is an axis of 8192", c["workloads"][0] == {"M": 8192, "K": 2048, "N": 768},
          str(c["workloads"]))
    check("matmul: randn * 0.5 + 1.0 is drawn as normal(1, 0.5)",
          c["inputs"]["B"]["init"] == {"dist": "normal", "mean": 1.0, "std": 0.5}, str(c["inputs"]["B"]))
    check("matmul: get_init_inputs' alpha is written in", "torch.matmul(A, B.T) * 2.0" in c["reference"], c["reference"])
    check("matmul: output [M, N]", c["outputs"]["out"]["shape"] == ["M", "N"])


def test_norm():
    t = problem("norm")
    c = t.contract
    ref = c["reference"]
    check("norm: GroupNorm with its group count and eps", "F.group_norm(x, 32, gn_weight, gn_bias, eps=1e-06)" in ref, ref)
    check("norm: BatchNorm in training mode without running statistics",
          "F.batch_norm(x, None, None, bn_weight, bn_bias, training=True, momentum=0.2, eps=1e-05)" in ref, ref)
    check("norm: norm weights are ones, biases zeros",
          c["inputs"]["bn_weight"]["init"] == {"dist": "ones"} and c["inputs"]["gn_bias"]["init"] == {"dist": "zeros"})
    check("norm: the small workload keeps the channels a multiple of the groups", t.small["out_features"] % 32 == 0,
          str(t.small))
    check("norm: a note says training mode", any("training mode" in n for n in c["notes"]))


def test_pooling():
    c = problem("pooling").contract
    check("pooling: sizes read from the tensor stay in the reference", "b, c, h, w = x.shape" in c["reference"],
          c["reference"])
    for w in c["workloads"]:
        h = (w["height"] + 2 - 3) // 2 + 1
        h = (h - 2) // 2 + 1
        got = size_at(c["outputs"]["out"]["shape"][2], w)
        check(f"pooling: output height follows torch's formula at height {w['height']}", got == h, f"{got} != {h}")


def test_reduction():
    t = problem("reduction")
    c = t.contract
    check("reduction: columns broadcast against the batch merge two axes into one", t.var_axes == ["batch_size"],
          str(t.var_axes))
    check("reduction: x is [batch_size, batch_size]", c["inputs"]["x"]["shape"] == ["batch_size", "batch_size"])
    check("reduction: labels drawn as -1 or 1", c["inputs"]["labels"]["init"] == {"dist": "choice", "values": [-1.0, 1.0]})
    check("reduction: the mask is bool", c["inputs"]["mask"]["dtype"] == "bool")
    check("reduction: three outputs", [v["shape"] for v in c["outputs"].values()] == [["batch_size", 1], ["batch_size"], []],
          str(c["outputs"]))
    check("reduction: .values becomes [0]", "torch.max(x, dim=1, keepdim=True)[0]" in c["reference"], c["reference"])


def test_refusals():
    e = None
    try:
        problem("untranslatable")
    except TranslateError as err:
        e = err
    check("a for loop is refused at its line", e is not None and e.line == 14 and "for" in str(e), repr(e))
    r = subprocess.run([sys.executable, os.path.join(REPO, "tools", "kernelbench_import.py"),
                        os.path.join(PROBLEMS, "untranslatable.py"), "-o", os.devnull], capture_output=True, text=True)
    check("the tool exits 2 with FILE:LINE: cannot translate",
          r.returncode == 2 and "untranslatable.py:14: cannot translate: a `for` loop in forward()" in r.stderr, r.stderr)
    base = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self, p):\n"
            "        super().__init__()\n        self.drop = nn.Dropout(p)\n    def forward(self, x):\n"
            "        return self.drop(x)\nB = 8\ndef get_inputs():\n    return [torch.rand(B, 4)]\n"
            "def get_init_inputs():\n    return [{p}]\n")
    e = refusal(base.format(p=0.1))
    check("an active dropout is refused at its call", e is not None and e.line == 8 and "Dropout" in str(e), repr(e))
    ref = inline(base.format(p=0.0)).contract["reference"]
    check("a dropout of p=0 is the identity it is", "F.dropout(x, p=0.0, training=True)" in ref, ref)
    ln = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self, f):\n"
          "        super().__init__()\n        self.ln = nn.LayerNorm(f)\n    def forward(self, x):\n"
          "        return self.ln(x)\nbatch = 16\nfeatures = 32\ndef get_inputs():\n    return [torch.rand(batch, features)]\n"
          "def get_init_inputs():\n    return [features]\n")
    t = inline(ln)
    check("a size written into the reference is fixed (a const axis)",
          t.var_axes == ["batch"] and t.contract["axes"]["features"] == {"type": "const", "value": 32},
          str(t.contract["axes"]))


# ---------------------------------------------------------------------------------------------- FlashInfer


def test_flashinfer():
    fdir = os.path.join(HERE, "flashinfer")
    with open(os.path.join(fdir, "rmsnorm_h64.json")) as f:
        definition = json.load(f)
    workloads = flashinfer.read_workloads(os.path.join(fdir, "rmsnorm_h64.jsonl"), "rmsnorm_h64")
    check("flashinfer: other definitions' workloads are skipped", len(workloads) == 10, str(len(workloads)))
    c = flashinfer.translate(definition, workloads, 4, 1e-2, "rmsnorm_h64.json")
    sizes = [w["batch_size"] for w in c["workloads"]]
    check("flashinfer: distinct workloads spread from smallest to largest", sizes[0] == 1 and sizes[-1] == 4096
          and len(sizes) == 4 and sizes == sorted(set(sizes)), str(sizes))
    check("flashinfer: a scalar input takes the workloads' value",
          c["inputs"]["eps"]["init"] == {"dist": "constant", "value": 1e-6}, str(c["inputs"]["eps"]))
    check("flashinfer: random floats are normal as FlashInfer-Bench draws them",
          c["inputs"]["weight"]["init"] == {"dist": "normal", "mean": 0.0, "std": 1.0})
    check("flashinfer: the reference passes through", c["reference"] == definition["reference"])
    check("flashinfer: FlashInfer-Bench's default tolerance", c["tolerance"] == {"atol": 1e-2, "rtol": 1e-2})
    two = dict(definition, type="rmsnorm", outputs={"y": definition["outputs"]["output"], "r": {"shape": [], "dtype": "float32"}},
               reference="def run(hidden_states, weight, eps):\n    y = hidden_states * weight\n"
                         "    return {'r': y.sum(), \"y\": y}  # by name\n")
    del two["op_type"]
    c2 = flashinfer.translate(two, workloads, 8, 1e-2, "two.json")
    check("flashinfer: a dict returned by output name becomes the outputs in order",
          c2["reference"].endswith("    return y, y.sum()  # by name\n"), c2["reference"])
    check("flashinfer: the earlier field name 'type' is op_type", c2.get("op_type") == "rmsnorm" and "type" not in c2)
    fp8 = dict(definition, inputs=dict(definition["inputs"],
                                       weight={"shape": ["hidden_size"], "dtype": "float8_e4m3fn"}))
    try:
        flashinfer.translate(fp8, workloads, 8, 1e-2, "fp8.json")
        check("flashinfer: an fp8 input is refused", False)
    except flashinfer.ImportError_ as e:
        check("flashinfer: an fp8 input is refused", "float8_e4m3fn" in str(e), str(e))
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "definitions", "rmsnorm"))
        os.makedirs(os.path.join(d, "workloads", "rmsnorm"))
        dpath = os.path.join(d, "definitions", "rmsnorm", "rmsnorm_h64.json")
        wpath = os.path.join(d, "workloads", "rmsnorm", "rmsnorm_h64.jsonl")
        open(dpath, "w").write("{}")
        open(wpath, "w").write("")
        check("flashinfer: workloads found in the trace layout", flashinfer.default_workloads_path(dpath) == wpath)


# ---------------------------------------------------------------------------------------------- torch


def test_agreement():
    from kevo_import.kb_agree import check as agree

    for name in ("conv_relu", "matmul", "norm", "pooling", "reduction"):
        t = problem(name)
        r = agree(t)
        check(f"agreement: {name} matches its Model on the small workload", r.ok and r.max_abs_err <= 1e-4,
              "; ".join(r.lines))
    t = problem("conv_relu")
    t.contract["reference"] = t.contract["reference"].replace("x * 0.5", "x * 0.55")
    r = agree(t)
    check("agreement: a wrong constant is caught", not r.ok and any("differ" in line for line in r.lines),
          "; ".join(r.lines))
    t = problem("conv_relu")
    t.contract["inputs"]["conv_bias"]["init"] = {"dist": "uniform", "low": 0.0, "high": 1.0}
    r = agree(t)
    check("agreement: a wrong initialisation is caught", not r.ok and any("conv_bias" in line for line in r.lines),
          "; ".join(r.lines))
    t = problem("pooling")
    t.contract["outputs"]["out"]["shape"][2] = "height // 2"
    r = agree(t)
    check("agreement: a wrong output shape is caught", not r.ok and any("declares" in line for line in r.lines),
          "; ".join(r.lines))


def main() -> int:
    if "--torch" in sys.argv[1:]:
        try:
            import torch
        except ImportError:
            print(f"SKIP: no torch in {sys.executable} (Debian: apt install python3-torch; scripts/setup.sh does)")
            return 77
        print(f"torch {torch.__version__} in {sys.executable}")
        test_agreement()
    else:
        for test in (test_sizes, test_draws, test_conv_relu, test_matmul, test_norm, test_pooling, test_reduction,
                     test_refusals, test_flashinfer):
            test()
    print(f"{len(failures)} failure(s)" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
