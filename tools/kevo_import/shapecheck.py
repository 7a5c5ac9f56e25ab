"""Abstract tensors and the checks shape rules make, over every workload being translated at once."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .symdim import Dim, evaluate, is_size, text_of

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8")


class Untranslatable(Exception):
    """Something the importer cannot express in a contract; `node` gives the line."""

    def __init__(self, message: str, node: ast.AST | None = None):
        super().__init__(message)
        self.node = node


class ShapeError(Exception):
    """Sizes that do not fit in workload `env` (0: the problem's own sizes)."""

    def __init__(self, message: str, env: int):
        super().__init__(message)
        self.env = env


class Conflict(Exception):
    """Two sizes must be equal but are different expressions that agree at the problem's sizes:
    the axes involved must be merged or fixed (the translation restarts)."""

    def __init__(self, a, b, what: str):
        super().__init__(f"{what}: {text_of(a)} must equal {text_of(b)}")
        self.a, self.b = a, b


@dataclass
class T:
    """An abstract tensor: sizes (ints or Dims) and a dtype name."""

    shape: list
    dtype: str = "float32"

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class TorchDtype:
    name: str


class Device:
    """x.device: only ever passed on (device= arguments are dropped from the reference)."""


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


class Checker:
    """Evaluates sizes at each workload (env: axis -> size) so rules can check them everywhere."""

    def __init__(self, envs: list):
        self.envs = envs

    def values(self, d) -> list:
        return [evaluate(d, e) for e in self.envs]

    def same(self, a, b, what: str):
        if not isinstance(a, Dim) and not isinstance(b, Dim):
            if int(a) != int(b):
                raise ShapeError(f"{what}: {int(a)} != {int(b)}", 0)
            return
        if isinstance(a, Dim) and a == b:
            return
        for i, (x, y) in enumerate(zip(self.values(a), self.values(b))):
            if x != y:
                raise ShapeError(f"{what}: {x} != {y}", i)
        raise Conflict(a, b, what)

    def positive(self, d, what: str):
        for i, v in enumerate(self.values(d)):
            if v <= 0:
                raise ShapeError(f"{what}: size {text_of(d)} is {v}", i)

    def divides(self, d, k: int, what: str):
        for i, v in enumerate(self.values(d)):
            if v % k:
                raise ShapeError(f"{what}: {v} is not a multiple of {k}", i)

    def tensor(self, shape: list, dtype: str = "float32", what: str = "result") -> T:
        for d in shape:
            if not is_size(d):
                raise Untranslatable(f"{what}: a size that is not an integer ({d!r})")
            self.positive(d, what)
        return T(list(shape), dtype)

    def const_int(self, v, what: str) -> int:
        """A size used where a contract needs a number (a literal in the reference)."""
        if isinstance(v, Dim):
            raise Conflict(v, self.values(v)[0], what)
        return v if isinstance(v, int) and not isinstance(v, bool) else int(v)

    def broadcast(self, a: list, b: list, what: str = "broadcast") -> list:
        out = []
        n = max(len(a), len(b))
        a = [1] * (n - len(a)) + list(a)
        b = [1] * (n - len(b)) + list(b)
        for x, y in zip(a, b):
            if not isinstance(x, Dim) and int(x) == 1:
                out.append(y)
            elif not isinstance(y, Dim) and int(y) == 1:
                out.append(x)
            else:
                self.same(x, y, what)
                out.append(x)
        return out


def norm_dim(d, rank: int, what: str = "dim") -> int:
    if isinstance(d, bool) or not isinstance(d, int):
        raise Untranslatable(f"{what} must be an int, got {d!r}")
    r = max(rank, 1)
    if not -r <= d < r:
        raise ShapeError(f"{what} {d} out of range for rank {rank}", 0)
    return d % r


def norm_dims(dims, rank: int) -> list:
    if dims is None:
        return list(range(rank))
    if isinstance(dims, (list, tuple)):
        return sorted({norm_dim(d, rank) for d in dims})
    return [norm_dim(dims, rank)]


def promote(*dtypes: str) -> str:
    """torch's promotion among tensor dtypes (python numbers are passed as 'int'/'float'/'bool' kinds)."""
    tensor = [d for d in dtypes if d not in ("pyint", "pyfloat", "pybool")]
    best = max(tensor, key=_rank_of) if tensor else "float32"
    if "pyfloat" in dtypes and not is_float(best):
        return "float32"
    if "pyint" in dtypes and best == "bool":
        return "int64"
    return best


def _rank_of(d: str) -> int:
    order = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
    return order.index(d) if d in order else 0


def kind_of(v) -> str | None:
    """The dtype a value brings to promotion."""
    if isinstance(v, T):
        return v.dtype
    if isinstance(v, bool):
        return "pybool"
    if is_size(v):
        return "pyint"
    if isinstance(v, float):
        return "pyfloat"
    return None
