"""Symbolic sizes for the importers: integer expressions over axis names, as contracts write them."""

from __future__ import annotations

import ast


class NamedInt(int):
    """A size fixed by the contract but known by a name (a const axis): prints as its name in shapes.

    Arithmetic on it gives plain ints, so only a size passed through unchanged keeps the name."""

    def __new__(cls, value: int, name: str):
        obj = super().__new__(cls, value)
        obj.name = name
        return obj


def _poly_add(a: dict, b: dict, sign: int = 1) -> dict:
    out = dict(a)
    for mono, c in b.items():
        out[mono] = out.get(mono, 0) + sign * c
        if out[mono] == 0:
            del out[mono]
    return out


def _poly_mul(a: dict, b: dict) -> dict:
    out: dict = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            mono = tuple(sorted(ma + mb))
            out[mono] = out.get(mono, 0) + ca * cb
            if out[mono] == 0:
                del out[mono]
    return out


def _poly_text(poly: dict) -> str:
    terms = sorted(poly.items(), key=lambda t: (-len(t[0]), t[0]))
    text = ""
    for mono, c in terms:
        body = "*".join(mono)
        mag = abs(c)
        term = body if mag == 1 and body else (f"{mag}*{body}" if body else str(mag))
        if not text:
            text = ("-" if c < 0 else "") + term
        else:
            text += (" - " if c < 0 else " + ") + term
    return text or "0"


class Dim:
    """A size that depends on var axes: a polynomial (dict monomial -> coefficient, a monomial being
    the sorted tuple of its axis names) or, where floor division or modulo is not exact, a node
    (op, left, right) over sizes. Sizes without axes are plain ints, never Dims."""

    __slots__ = ("poly", "node")

    def __init__(self, poly: dict | None = None, node: tuple | None = None):
        self.poly = poly
        self.node = node

    # ---- construction
    @staticmethod
    def axis(name: str) -> "Dim":
        return Dim(poly={(name,): 1})

    @staticmethod
    def _make(poly: dict) -> "int | Dim":
        if not poly:
            return 0
        if list(poly) == [()]:
            return poly[()]
        return Dim(poly=poly)

    # ---- reading
    def axes(self) -> set:
        if self.poly is not None:
            return {name for mono in self.poly for name in mono}
        _, a, b = self.node
        return axes_of(a) | axes_of(b)

    def single_axis(self) -> str | None:
        """The axis name when this size is exactly one var axis."""
        if self.poly is not None and len(self.poly) == 1:
            (mono, c), = self.poly.items()
            if c == 1 and len(mono) == 1:
                return mono[0]
        return None

    def text(self) -> str:
        if self.poly is not None:
            return _poly_text(self.poly)
        op, a, b = self.node
        if op == "+" and not isinstance(b, Dim) and int(b) < 0:
            return f"{_wrapped(a)} - {-int(b)}"
        return f"{_wrapped(a)} {op} {_wrapped(b)}"

    def eval(self, env: dict) -> int:
        if self.poly is not None:
            total = 0
            for mono, c in self.poly.items():
                v = c
                for name in mono:
                    v *= env[name]
                total += v
            return total
        op, a, b = self.node
        x, y = evaluate(a, env), evaluate(b, env)
        if op == "+":
            return x + y
        if op == "*":
            return x * y
        if y == 0:
            raise ZeroDivisionError(f"division by zero in {self.text()}")
        return x // y if op == "//" else x % y

    def __eq__(self, other) -> bool:
        return isinstance(other, Dim) and self.text() == other.text()

    def __hash__(self) -> int:
        return hash(self.text())

    def __repr__(self) -> str:
        return f"Dim({self.text()})"

    # ---- arithmetic (ints on either side)
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return sub(self, other)

    def __rsub__(self, other):
        return sub(other, self)

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(other, self)

    def __floordiv__(self, other):
        return floordiv(self, other)

    def __rfloordiv__(self, other):
        return floordiv(other, self)

    def __mod__(self, other):
        return mod(self, other)

    def __rmod__(self, other):
        return mod(other, self)

    def __neg__(self):
        return mul(-1, self)


def _wrapped(x) -> str:
    if isinstance(x, Dim) and not (x.poly is not None and len(x.poly) == 1 and list(x.poly.values())[0] > 0):
        return f"({x.text()})"
    if isinstance(x, Dim):
        return x.text()
    return str(int(x)) if int(x) >= 0 else f"({int(x)})"


def _as_poly(x) -> dict | None:
    if isinstance(x, Dim):
        return x.poly
    return {(): int(x)} if int(x) else {}


def is_size(x) -> bool:
    return isinstance(x, Dim) or (isinstance(x, int) and not isinstance(x, bool))


def add(a, b):
    pa, pb = _as_poly(a), _as_poly(b)
    if pa is not None and pb is not None:
        return Dim._make(_poly_add(pa, pb))
    if not isinstance(b, Dim) and int(b) == 0:
        return a
    return Dim(node=("+", a, b)) if not isinstance(a, int) or int(a) else b


def sub(a, b):
    pa, pb = _as_poly(a), _as_poly(b)
    if pa is not None and pb is not None:
        return Dim._make(_poly_add(pa, pb, -1))
    if not isinstance(b, Dim) and int(b) == 0:
        return a
    return add(a, mul(-1, b))


def mul(a, b):
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return int(a) * int(b)
    pa, pb = _as_poly(a), _as_poly(b)
    if pa is not None and pb is not None:
        return Dim._make(_poly_mul(pa, pb))
    if not isinstance(a, Dim) and int(a) == 1:
        return b
    if not isinstance(b, Dim) and int(b) == 1:
        return a
    return _Node("*", a, b)


def _exact_quotient(pa: dict, pb: dict) -> dict | None:
    """pa / pb when pb is one monomial dividing every term of pa exactly."""
    if len(pb) != 1:
        return None
    (mb, cb), = pb.items()
    out = {}
    for ma, ca in pa.items():
        rest = list(ma)
        for name in mb:
            if name not in rest:
                return None
            rest.remove(name)
        if ca % cb:
            return None
        out[tuple(rest)] = ca // cb
    return out


def floordiv(a, b):
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return int(a) // int(b)
    if not isinstance(b, Dim) and int(b) == 1:
        return a
    pa, pb = _as_poly(a), _as_poly(b)
    if pa is not None and pb is not None:
        q = _exact_quotient(pa, pb)
        if q is not None:
            return Dim._make(q)
    return _Node("//", a, b)


def mod(a, b):
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return int(a) % int(b)
    pa, pb = _as_poly(a), _as_poly(b)
    if pa is not None and pb is not None and _exact_quotient(pa, pb) is not None:
        return 0
    return _Node("%", a, b)


def _Node(op, a, b):
    return Dim(node=(op, a, b))


def axes_of(x) -> set:
    return x.axes() if isinstance(x, Dim) else set()


def evaluate(x, env: dict) -> int:
    return x.eval(env) if isinstance(x, Dim) else int(x)


def text_of(x) -> str:
    """How a size is written in a contract's shape: an axis name, an expression, or a number."""
    if isinstance(x, Dim):
        return x.text()
    if isinstance(x, NamedInt):
        return x.name
    return str(int(x))


def shape_entry(x):
    """A shape entry for the contract's JSON: an int literal or a string expression."""
    if isinstance(x, Dim) or isinstance(x, NamedInt):
        return text_of(x)
    return int(x)


def parse_size(text: str, axes: dict) -> "int | Dim":
    """A contract shape expression back to a size (axes: name -> Dim or int)."""
    tree = ast.parse(text.strip(), mode="eval")
    ops = {ast.Add: add, ast.Sub: sub, ast.Mult: mul, ast.FloorDiv: floordiv, ast.Mod: mod}

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in axes:
            return axes[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return mul(-1, value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"bad size expression '{text}'")

    return value(tree.body)
