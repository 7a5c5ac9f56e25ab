"""The distributions of drawn tensors (get_inputs(), nn.Parameter initialisers) as contract inits,
with the affine algebra KernelBench's draws use (torch.rand(n) * 2 - 1, randint(0, 2).float())."""

from __future__ import annotations

from dataclasses import dataclass, field

from .shapecheck import T, is_float

SMALL_SET = 64  # integer ranges up to this many values become an exact `choice` when converted to float


@dataclass
class DistTensor(T):
    """A drawn tensor: its shape and dtype, how its values are drawn (a contract `init`), and the
    steps of the problem's draw that the init does not reproduce (source text, line)."""

    init: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def with_(self, init: dict | None = None, dtype: str | None = None, shape: list | None = None,
              note: str | None = None) -> "DistTensor":
        return DistTensor(list(shape if shape is not None else self.shape), dtype or self.dtype,
                          dict(init if init is not None else self.init), self.notes + ([note] if note else []))


def affine(d: DistTensor, scale: float, shift: float, text: str) -> DistTensor:
    """The distribution of scale * x + shift (the result is float unless both numbers are ints)."""
    init = d.init
    kind = init.get("dist")
    to_float = isinstance(scale, float) or isinstance(shift, float) or is_float(d.dtype)
    dtype = d.dtype if is_float(d.dtype) else ("float32" if to_float else d.dtype)
    if kind == "uniform":
        lo, hi = sorted((init["low"] * scale + shift, init["high"] * scale + shift))
        if lo == hi:
            return d.with_({"dist": "constant", "value": lo}, dtype)
        return d.with_({"dist": "uniform", "low": _num(lo), "high": _num(hi)}, dtype)
    if kind == "normal":
        if scale == 0:
            return d.with_({"dist": "constant", "value": _num(shift)}, dtype)
        return d.with_({"dist": "normal", "mean": _num(init["mean"] * scale + shift),
                        "std": _num(abs(init["std"] * scale))}, dtype)
    values = discrete_values(d)
    if values is not None:
        mapped = sorted({v * scale + shift for v in values})
        return d.with_(_discrete(mapped, dtype), dtype)
    if kind in ("ones", "zeros", "constant"):
        v = {"ones": 1, "zeros": 0}.get(kind, init.get("value"))
        return d.with_({"dist": "constant", "value": _num(v * scale + shift)}, dtype)
    return d.with_(dtype=dtype, note=text)


def discrete_values(d: DistTensor) -> list | None:
    init = d.init
    if init.get("dist") == "choice":
        return list(init["values"])
    if init.get("dist") == "randint" and init["high"] - init["low"] <= SMALL_SET:
        return list(range(int(init["low"]), int(init["high"])))
    if d.dtype == "bool":
        return [0, 1]
    return None


def _discrete(values: list, dtype: str) -> dict:
    if not is_float(dtype) and all(float(v).is_integer() for v in values):
        ints = [int(v) for v in values]
        if ints == list(range(ints[0], ints[-1] + 1)):
            return {"dist": "randint", "low": ints[0], "high": ints[-1] + 1}
    if len(values) == 1:
        return {"dist": "constant", "value": _num(values[0])}
    return {"dist": "choice", "values": [_num(float(v) if is_float(dtype) else v) for v in values]}


def convert(d: DistTensor, dtype: str, text: str) -> DistTensor:
    """x.float(), x.bool(), x.long(), x.to(dtype)."""
    if dtype == d.dtype:
        return d
    values = discrete_values(d)
    if dtype == "bool":
        if values is not None and sorted(set(values)) == [0, 1]:
            return d.with_({"dist": "randint", "low": 0, "high": 2}, "bool")
        return d.with_({"dist": "randint", "low": 0, "high": 2}, "bool",
                       note=text)
    if is_float(dtype):
        if values is not None:
            return d.with_(_discrete([float(v) for v in values], dtype), dtype)
        if is_float(d.dtype) or d.init.get("dist") in ("ones", "zeros", "constant"):
            return d.with_(dtype=dtype)
        return d.with_({"dist": "uniform", "low": d.init["low"], "high": d.init["high"]}, dtype,
                       note=text)
    # float -> integer truncates toward zero
    init = d.init
    if init.get("dist") == "uniform":
        lo, hi = int(init["low"]), int(init["high"])
        if float(init["high"]).is_integer() and init["low"] >= 0:
            return d.with_({"dist": "randint", "low": lo, "high": hi}, dtype)
    if values is not None:
        return d.with_(_discrete([int(v) for v in values], dtype), dtype)
    return d.with_({"dist": "randint", "low": 0, "high": 10}, dtype,
                   note=text)


def describe(init: dict) -> str:
    kind = init.get("dist", "uniform")
    if kind == "uniform":
        return f"uniform({_num(init.get('low', 0))}, {_num(init.get('high', 1))})"
    if kind == "normal":
        return f"normal({_num(init.get('mean', 0))}, {_num(init.get('std', 1))})"
    if kind == "randint":
        return f"randint({init.get('low', 0)}, {init.get('high', 1)})"
    if kind == "choice":
        return f"one of {init['values']}"
    if kind == "constant":
        return f"constant {init['value']}"
    return kind


def _num(v):
    """Numbers as JSON writes them: ints stay ints, floats lose float noise (0.30000000000000004)."""
    if isinstance(v, float):
        return float(f"{v:.12g}")
    return v


def approximation_note(d: DistTensor) -> str | None:
    """What the contract says about an input whose draw it only approximates."""
    if not d.notes:
        return None
    steps = "; ".join(f"`{n}`" for n in dict.fromkeys(d.notes))
    return f"drawn as {describe(d.init)}, not as the problem draws it: kevo cannot reproduce {steps}"
