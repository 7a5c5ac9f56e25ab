"""The capture path, the contract: inputs with their inits (recognised from the module that owns a
parameter, else from the values), outputs, the reference's text, workloads and notes."""

from __future__ import annotations

import ast
import math
import os

from .kb_capture_sizes import _live


def _stats_init(t):
    import torch

    v = t.detach().double().flatten()
    if t.dtype == torch.bool:
        return {}, None
    if not t.is_floating_point():
        return {"dist": "randint", "low": int(v.min()), "high": int(v.max()) + 1}, None
    lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        return ({"dist": "zeros"} if lo == 0 else {"dist": "ones"} if lo == 1 else {"dist": "constant", "value": lo}), None
    mean, std = float(v.mean()), float(v.std()) if v.numel() > 1 else 1.0
    if lo >= 0 and hi <= 1 and v.numel() >= 16 and abs(mean - 0.5) < 0.1:
        return {"dist": "uniform", "low": 0.0, "high": 1.0}, None
    if v.numel() >= 16 and abs(mean) < 0.2 and 0.8 < std < 1.2:
        return {"dist": "normal", "mean": 0.0, "std": 1.0}, None
    return ({"dist": "normal", "mean": float(f"{mean:.4g}"), "std": float(f"{std:.4g}")},
            f"drawn as normal({mean:.4g}, {std:.4g}), fitted to the values the problem draws (kevo does not "
            "reproduce its own initialisation)")


def _module_init(model, path, t, names):
    import torch.nn as nn

    prefix, _, leaf = path.rpartition(".")
    try:
        mod = model.get_submodule(prefix) if prefix else model
    except AttributeError:
        return None
    if isinstance(mod, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
                        nn.ConvTranspose3d)):
        if leaf == "weight":
            return {"dist": "kaiming_uniform", "a": math.sqrt(5.0)}
        if leaf == "bias" and names.get(f"{prefix}.weight" if prefix else "weight"):
            return {"dist": "fan_in_uniform", "fan_in_of": names[f"{prefix}.weight" if prefix else "weight"]}
    if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm, nn.GroupNorm,
                        nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)):
        return {"dist": "ones"} if leaf == "weight" else {"dist": "zeros"} if leaf == "bias" else None
    if isinstance(mod, (nn.LSTM, nn.GRU, nn.RNN)):
        k = 1.0 / math.sqrt(mod.hidden_size)
        return {"dist": "uniform", "low": -k, "high": k}
    return None


def _used_inputs(em) -> set:
    """The inputs a live statement or an output reads."""
    live = _live(em)
    used = set(em.outputs)
    for st in em.stmts:
        if st[0] in live:
            used.update(st[2])
    return used


def _inputs(tr, em, shapes) -> tuple:
    """The contract's inputs with their inits, and a note for each init drawn from the values."""
    from .kb_agree import _init_mismatch

    names = {p: nm for nm, kind, p, _ in em.inputs if kind != "input"}
    tensors = {nm: tr.inputs[int(p)] if kind == "input" else tr.consts_tensor(p) for nm, kind, p, _ in em.inputs}
    used = _used_inputs(em)
    inputs, notes = {}, []
    for nm, kind, p, _ in em.inputs:
        if nm not in used:
            continue
        t = tensors[nm]
        init = _module_init(tr.model, p, t, names) if kind == "param" else None
        note = None
        if init is not None and _init_mismatch(t, init, dict(tensors)):
            init = None
        if init is None:
            init, note = _stats_init(t)
        inputs[nm] = {"shape": shapes[nm], "dtype": str(t.dtype).replace("torch.", "")}
        if init:
            inputs[nm]["init"] = init
        if note:
            notes.append(f"{nm}{'' if kind == 'input' else f' (self.{p})'}: {note}")
    return inputs, notes


def _description(path, tree) -> str:
    for s in tree.body:
        if isinstance(s, ast.ClassDef) and s.name == "Model":
            doc = (ast.get_docstring(s) or "").strip().splitlines()
            if doc:
                return doc[0].strip()
    return f"KernelBench {os.path.splitext(os.path.basename(path))[0]}"


def _contract(path, tree, name, tr, em, body, shapes, var, full, small) -> dict:
    inputs, init_notes = _inputs(tr, em, shapes)
    notes = [f"Imported from KernelBench's {os.path.basename(path)} by `kevo import kernelbench` through the capture "
             "path: the model traced under Python torch (make_fx) to ATen ops, written one statement per op; "
             "parameters and buffers are inputs named after their module path."] + init_notes
    outs = em.outputs
    out_names = ["out"] if len(outs) == 1 else [f"out{i}" for i in range(len(outs))]
    outputs = {on: {"shape": shapes[nm], "dtype": em.dtype_of(nm)} for on, nm in zip(out_names, outs)}
    if "batch_norm" in "\n".join(body):
        notes.append("Batch normalisation in training mode, as KernelBench runs the model (it never calls .eval()): "
                     "statistics of each batch; the running statistics it would update are not outputs.")
    if var:
        notes.append("Workload 0 is the problem's own sizes; workload 1 is a small workload of the same graph, "
                     "checked on the CPU by `kevo check`.")
    imports = ["import math"] if any("math." in line for line in body) else []
    ref = "\n".join(imports + ["import torch", "import torch.nn.functional as F", "", "",
                               f"def run({', '.join(inputs)}):"] + body) + "\n"
    return {
        "name": name,
        "description": _description(path, tree),
        "axes": {a: {"type": "var"} for a in var},
        "inputs": inputs,
        "outputs": outputs,
        "reference": ref,
        "workloads": [{a: full[a] for a in var}, small] if var else [{}],
        "tolerance": {"atol": 1e-4, "rtol": 1e-4},
        "notes": notes,
    }
