"""The agreement check, under Python torch: the problem's own Model and the contract's reference,
on the small workload, with the same parameters and inputs, must agree within the tolerance; the
shapes the contract declares must be the ones torch produces; parameters and inputs drawn exactly
must look like the contract's inits."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .kb_translate import Translation
from .shapecheck import Checker
from .symdim import Dim, evaluate, parse_size

TORCH_DTYPES = {"float32": "float32", "float64": "float64", "float16": "float16", "bfloat16": "bfloat16",
                "int64": "int64", "int32": "int32", "bool": "bool"}


@dataclass
class Agreement:
    ok: bool
    lines: list = field(default_factory=list)
    max_abs_err: float = 0.0
    skipped: bool = False


def _concrete(value, env):
    if isinstance(value, Dim):
        return evaluate(value, env)
    if isinstance(value, bool) or value is None or isinstance(value, (float, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_concrete(v, env) for v in value)
    return value


def small_globals(t: Translation, env: dict) -> dict:
    """The problem's module constants at the small workload's sizes."""
    scope = t.problem.module_scope(t.config, Checker([env]))
    out = {}
    for name, value in scope.items():
        if isinstance(value, (Dim, int, float, bool, str, tuple, list)) or value is None:
            out[name] = _concrete(value, env)
    return out


def _shape(t: Translation, entries: list, env: dict) -> list:
    axes = {a: v["value"] for a, v in t.contract["axes"].items() if v["type"] == "const"}
    axes.update(env)
    return [e if isinstance(e, int) else parse_size(e, axes) for e in entries]


def check(t: Translation, seed: int = 0) -> Agreement:
    import torch

    env = {**t.problem.full_env(t.config), **t.small}
    ns = {"__name__": "kevo_kernelbench_problem", "__file__": t.problem.path}
    exec(compile(t.problem.source, t.problem.path, "exec"), ns)
    ns.update(small_globals(t, env))
    torch.manual_seed(seed)
    model = ns["Model"](*ns["get_init_inputs"]())
    inputs = list(ns["get_inputs"]())
    tensors = dict(model.named_parameters())
    tensors.update(dict(model.named_buffers()))
    forward_args = [a.arg for a in t.problem.forward_fn.args.args][1:]
    result = Agreement(True)

    def fail(line: str):
        result.ok = False
        result.lines.append(line)

    args = []
    for ri, (name, decl) in zip(t.forward.run_inputs, t.contract["inputs"].items()):
        kind, where = ri.source.split(":", 1)
        value = inputs[forward_args.index(where)] if kind == "input" else tensors.get(where)
        if value is None:
            value = _attr_path(model, where)
        want = _shape(t, decl["shape"], env)
        if list(value.shape) != want or str(value.dtype).replace("torch.", "") != decl["dtype"]:
            fail(f"input {name}: the problem gives {str(value.dtype).replace('torch.', '')}{list(value.shape)}, "
                 f"the contract declares {decl['dtype']}{want}")
        elif not ri.notes:
            problem = _init_mismatch(value, decl.get("init"), {n: tensors.get(r.source.split(':', 1)[1])
                                                               for n, r in zip(t.contract['inputs'],
                                                                               t.forward.run_inputs)})
            if problem:
                fail(f"input {name}: {problem}")
        args.append(value.detach().clone())
    if not result.ok:
        return result
    with torch.no_grad():
        try:
            expected = model(*inputs)
        except AttributeError as e:
            if "torch" not in str(e):
                raise
            result.lines.append(f"agreement check: skipped: the problem's Model does not run under torch "
                                f"{torch.__version__} ({e})")
            result.skipped = True
            return result
        ref_ns = {"torch": torch, "F": torch.nn.functional, "math": math}
        exec(compile(t.contract["reference"], "<reference>", "exec"), ref_ns)
        got = ref_ns["run"](*args)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    tol = t.contract["tolerance"]
    for (name, decl), e, g in zip(t.contract["outputs"].items(), expected, got):
        want = _shape(t, decl["shape"], env)
        if list(e.shape) != want or str(e.dtype).replace("torch.", "") != decl["dtype"]:
            fail(f"output {name}: the model returns {str(e.dtype).replace('torch.', '')}{list(e.shape)}, the contract "
                 f"declares {decl['dtype']}{want}")
            continue
        if g.shape != e.shape or g.dtype != e.dtype:
            fail(f"output {name}: the reference returns {g.dtype}{list(g.shape)}, the model {e.dtype}{list(e.shape)}")
            continue
        if not torch.isfinite(e.float()).all():
            fail(f"output {name}: the model's own output is not finite on the small workload")
            continue
        ef, gf = e.double(), g.double()
        err = (gf - ef).abs()
        bad = ~(err <= tol["atol"] + tol["rtol"] * ef.abs())
        result.max_abs_err = max(result.max_abs_err, float(err.max()) if err.numel() else 0.0)
        if bad.any():
            fail(f"output {name}: {int(bad.sum())} of {e.numel()} elements differ by more than atol {tol['atol']} + "
                 f"rtol {tol['rtol']} (max abs error {float(err.max()):.3g})")
    if len(expected) != len(got) or len(got) != len(t.contract["outputs"]):
        fail(f"the model returns {len(expected)} outputs, the reference {len(got)}")
    for (name, _), e in zip(t.contract["outputs"].items(), expected):
        if result.ok and e.numel() > 1 and bool((e == e.flatten()[0]).all()):
            result.lines.append(f"warning: output {name} is {e.flatten()[0].item():g} everywhere on the small workload, as "
                                "the problem's own model computes it: kevo check refuses the task if no check can "
                                "tell outputs that ignore the inputs from computed ones")
    if result.ok:
        result.lines.append(f"agreement: the reference matches the problem's Model within atol {tol['atol']}, rtol "
                            f"{tol['rtol']} on the small workload (max abs error {result.max_abs_err:.3g}; torch "
                            f"{torch.__version__})")
    return result


def _attr_path(model, path: str):
    obj = model
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _init_mismatch(x, init: dict | None, by_name: dict) -> str | None:
    """Whether values drawn by the problem look like draws from the contract's init."""
    import torch

    init = init or ({"dist": "randint", "low": 0, "high": 2} if x.dtype == torch.bool else
                    {"dist": "uniform", "low": 0.0, "high": 1.0})
    kind = init["dist"]
    v = x.detach().double().flatten()
    n = v.numel()
    lo, hi = float(v.min()), float(v.max())
    if kind in ("uniform", "kaiming_uniform", "fan_in_uniform"):
        if kind == "uniform":
            a, b = init.get("low", 0.0), init.get("high", 1.0)
        else:
            fan_in = _fan_in(x if kind == "kaiming_uniform" else by_name.get(init["fan_in_of"]))
            if fan_in is None:
                return None
            if kind == "kaiming_uniform":
                bound = math.sqrt(2.0 / (1 + init.get("a", math.sqrt(5.0)) ** 2)) * math.sqrt(3.0 / fan_in)
            else:
                bound = 1.0 / math.sqrt(fan_in)
            a, b = -bound, bound
        slack = 1e-6 * max(1.0, abs(a), abs(b))
        if lo < a - slack or hi > b + slack:
            return f"values in [{lo:.4g}, {hi:.4g}] outside the declared [{a:.4g}, {b:.4g}]"
        if n >= 64 and (lo > a + 0.2 * (b - a) or hi < b - 0.2 * (b - a)):
            return f"values in [{lo:.4g}, {hi:.4g}] do not cover the declared [{a:.4g}, {b:.4g}]"
        return None
    if kind == "normal":
        if n >= 64:
            mean, std = float(v.mean()), float(v.std())
            m, s = init.get("mean", 0.0), init.get("std", 1.0)
            if abs(mean - m) > 0.5 * s or not 0.6 * s < std < 1.5 * s:
                return f"mean {mean:.3g} and std {std:.3g}, not normal({m}, {s})"
        return None
    if kind in ("ones", "zeros", "constant"):
        c = {"ones": 1.0, "zeros": 0.0}.get(kind, init.get("value"))
        return None if lo == hi == c else f"values in [{lo:.4g}, {hi:.4g}], not the constant {c}"
    if kind in ("randint", "choice"):
        allowed = set(range(int(init.get("low", 0)), int(init.get("high", 1)))) if kind == "randint" else set(
            init["values"])
        seen = set(torch.unique(v).tolist()) if n <= 1 << 22 else set()
        if not seen <= {float(a) for a in allowed}:
            return f"values {sorted(seen - {float(a) for a in allowed})[:5]} outside the declared {kind}"
    return None


def _fan_in(w) -> int | None:
    if w is None or w.dim() < 2:
        return None
    return int(w.shape[1] * (w[0][0].numel()))
