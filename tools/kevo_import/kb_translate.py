"""KernelBench problem -> kevo contract: which named sizes can vary (axes), the small checked
workload, and the contract's JSON."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field

from .dist import describe
from .forward import Forward, RunInput
from .kb_problem import AxisConfig, Problem
from .shapecheck import Checker, Conflict, ShapeError, Untranslatable
from .symdim import Dim, NamedInt, axes_of, evaluate, shape_entry
from .torch_rules import numel

ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2, "int8": 1,
            "uint8": 1, "bool": 1}
# The small workload is shrunk until it costs at most this much (kevo check runs it on the CPU,
# several times over, for every imported problem).
SMALL_BYTES = 16e6
SMALL_FLOPS = 64e6
MIN_SIZE = 2
MAX_RESTARTS = 200


class TranslateError(Exception):
    """A problem the importer refuses: `line` in the problem file (0 when not known)."""

    def __init__(self, message: str, line: int = 0):
        super().__init__(message)
        self.line = line


@dataclass
class Translation:
    problem: Problem
    config: AxisConfig
    forward: Forward
    outputs: list
    full: dict
    small: dict
    notes: list = field(default_factory=list)
    contract: dict = field(default_factory=dict)
    var_axes: list = field(default_factory=list)


def _attempt(problem: Problem, config: AxisConfig, envs: list):
    ck = Checker(envs)
    inst = problem.instantiate(config, ck)
    fwd = Forward(inst, ck, problem.forward_fn, problem.aliases)
    outputs = fwd.translate()
    return fwd, outputs, ck


def _resolve(config: AxisConfig, c: Conflict) -> bool:
    """Merges two axes that must be equal, or fixes the axes of sizes that must be literal."""
    sa = c.a.single_axis() if isinstance(c.a, Dim) else None
    sb = c.b.single_axis() if isinstance(c.b, Dim) else None
    if sa and sb and sa != sb:
        config.union(sa, sb)
        return True
    names = axes_of(c.a) | axes_of(c.b)
    before = set(config.pinned)
    for n in names:
        config.pin(n)
    return config.pinned != before


def _line(e: Untranslatable) -> int:
    return getattr(e.node, "lineno", 0) or 0


def structure(problem: Problem) -> tuple:
    """The axis configuration at the problem's own sizes: every size that must be a literal is
    fixed, every pair of sizes that must be equal merged."""
    config = AxisConfig()
    problem.module_scope(config, Checker([{}]))  # discovers the roots
    for _ in range(MAX_RESTARTS):
        full = problem.full_env(config)
        try:
            fwd, outputs, _ = _attempt(problem, config, [full])
            return config, fwd, outputs
        except Conflict as c:
            if not _resolve(config, c):
                raise TranslateError(f"internal: cannot settle '{c}'") from None
        except ShapeError as e:
            raise TranslateError(f"the problem's own shapes do not fit: {e}") from None
    raise TranslateError("internal: the axes did not settle")


def _cost(fwd: Forward, outputs: list, env: dict) -> tuple:
    total = 0
    for ri in fwd.run_inputs:
        total += evaluate(numel(ri.tensor.shape), env) * ITEMSIZE.get(ri.tensor.dtype, 4)
    for t in outputs:
        total += evaluate(numel(t.shape), env) * ITEMSIZE.get(t.dtype, 4)
    return total, evaluate(fwd.flops, env)


def used_axes(fwd: Forward, outputs: list, problem: Problem) -> list:
    """The var axes the contract's shapes use, in the order the problem file names them."""
    names = set()
    for t in [ri.tensor for ri in fwd.run_inputs] + outputs:
        for d in t.shape:
            names |= axes_of(d)
    order = {n: i for i, n in enumerate(problem.roots)}
    return sorted(names, key=lambda n: order.get(n, len(order)))


def small_workload(problem: Problem, config: AxisConfig, fwd: Forward, outputs: list, full: dict) -> dict:
    """Halves the largest axis that still gives a valid graph until the workload is cheap."""
    axes = used_axes(fwd, outputs, problem)
    small = {a: full[a] for a in axes}

    def valid(env: dict) -> bool:
        try:
            _attempt(problem, config, [full, {**full, **env}])
            return True
        except (ShapeError, Conflict, Untranslatable, ZeroDivisionError):
            return False

    while True:
        b, f = _cost(fwd, outputs, {**full, **small})
        if b <= SMALL_BYTES and f <= SMALL_FLOPS:
            return small
        for a in sorted(axes, key=lambda n: (-small[n], n)):
            if small[a] // 2 < MIN_SIZE:
                continue
            trial = dict(small)
            trial[a] = small[a] // 2
            if valid(trial):
                small = trial
                break
        else:
            return small


def translate(path: str, source: str, name: str | None = None) -> Translation:
    try:
        problem = Problem(path, source)
        config, fwd, outputs = structure(problem)
        full = problem.full_env(config)
        small = small_workload(problem, config, fwd, outputs, full)
        axes = used_axes(fwd, outputs, problem)
        envs = [{**full}, {**full, **small}]
        fwd, outputs, _ = _attempt(problem, config, envs)
    except Untranslatable as e:
        raise TranslateError(str(e), _line(e)) from None
    except ShapeError as e:
        raise TranslateError(f"shapes do not fit: {e}") from None
    t = Translation(problem, config, fwd, outputs, {a: full[a] for a in axes}, small, var_axes=axes)
    t.contract = contract(t, name or default_name(path))
    return t


def default_name(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem).strip("_") or "problem"


# ---------------------------------------------------------------------------------------------- contract


def _const_axes(tensors: list) -> dict:
    out = {}
    for t in tensors:
        for d in t.shape:
            if isinstance(d, NamedInt):
                out[d.name] = int(d)
    return out


def contract(t: Translation, name: str) -> dict:
    fwd = t.forward
    tensors = [ri.tensor for ri in fwd.run_inputs] + t.outputs
    axes = {a: {"type": "var"} for a in t.var_axes}
    for a, v in sorted(_const_axes(tensors).items()):
        if a not in axes:
            axes[a] = {"type": "const", "value": v}
    inputs = {}
    notes = [f"Imported from KernelBench's {os.path.basename(t.problem.path)} by `kevo import kernelbench`; "
             "parameters are inputs drawn with PyTorch's default initialisation."]
    for ri in fwd.run_inputs:
        entry = {"shape": [shape_entry(d) for d in ri.tensor.shape], "dtype": ri.tensor.dtype}
        init = _init(ri)
        if init:
            entry["init"] = init
        inputs[ri.name] = entry
        kind, where = ri.source.split(":", 1)
        for n in ri.notes:
            notes.append(f"{ri.name}{'' if kind == 'input' else f' (self.{where})'}: {n}")
    out_names = _output_names(len(t.outputs), set(inputs))
    outputs = {n: {"shape": [shape_entry(d) for d in o.shape], "dtype": o.dtype} for n, o in zip(out_names, t.outputs)}
    if any(k in t.problem.source for k in ("BatchNorm", "batch_norm")):
        notes.append("Batch normalisation in training mode, as KernelBench runs the model (it never calls .eval()): "
                     "statistics of each batch; the running statistics it would update are not outputs.")
    notes += fwd.notes
    if t.var_axes:
        notes.append("Workload 0 is the problem's own sizes; workload 1 is a small workload of the same graph, "
                     "checked on the CPU by `kevo check`.")
    doc = t.problem.docstring.splitlines()
    return {
        "name": name,
        "description": (doc[0] if doc else f"KernelBench {default_name(t.problem.path)}").strip(),
        "axes": axes,
        "inputs": inputs,
        "outputs": outputs,
        "reference": reference_text(fwd),
        "workloads": [t.full, t.small] if t.var_axes and t.small != t.full else [t.full],
        "tolerance": {"atol": 1e-4, "rtol": 1e-4},
        "notes": notes,
    }


def _init(ri: RunInput) -> dict:
    init = dict(ri.init)
    if init.get("dist") == "randint" and ri.tensor.dtype == "bool":
        return {}  # kevo's default for bool: fair coin flips
    return init


def _output_names(n: int, taken: set) -> list:
    base = ["out"] if n == 1 else [f"out{i}" for i in range(n)]
    return [b + ("_" * 1 if b in taken else "") for b in base]


def reference_text(fwd: Forward) -> str:
    lines = ["import torch", "import torch.nn.functional as F"]
    if fwd.uses_math:
        lines.append("import math")
    lines += ["", "", f"def run({', '.join(ri.name for ri in fwd.run_inputs)}):"]
    for stmt in fwd.body:
        lines.append("    " + ast.unparse(ast.fix_missing_locations(stmt)))
    return "\n".join(lines) + "\n"


def summary(t: Translation) -> str:
    c = t.contract
    axes = ", ".join(f"{k}={v['value'] if 'value' in v else t.full.get(k)}" for k, v in c["axes"].items())
    ins = ", ".join(f"{k}{v['shape']} {describe(v['init']) if 'init' in v else ''}".strip()
                    for k, v in c["inputs"].items())
    return (f"  axes: {axes or 'none'}; var: {', '.join(t.var_axes) or 'none'}\n"
            f"  small workload: {t.small}\n"
            f"  inputs: {ins}")
