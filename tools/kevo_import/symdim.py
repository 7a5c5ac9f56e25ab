"""Symbolic sizes for the importers: integer expressions over axis names, as contracts write them.

A size is a polynomial whose factors are axis names or opaque atoms (a floor division or modulo
that is not exact, kept whole), so B*C*(D // 2) // (B*C) simplifies to D // 2. Sizes without any
axis are plain ints."""

from __future__ import annotations

import ast


class NamedInt(int):
    """A size fixed by the contract but known by a name (a const axis): prints as its name in shapes.

    Arithmetic on it gives plain ints, so only a size passed through unchanged keeps the name."""

    def __new__(cls, value: int, name: str):
        obj = super().__new__(cls, value)
        obj.name = name
        return obj


class Atom:
    """An opaque factor: a // b or a % b of sizes, compared by its text."""

    __slots__ = ("op", "a", "b", "key")

    def __init__(self, op: str, a, b):
        self.op, self.a, self.b = op, a, b
        self.key = f"{_operand(a)} {op} {_operand(b)}"

    def eval(self, env: dict) -> int:
        x, y = evaluate(self.a, env), evaluate(self.b, env)
        if y == 0:
            raise ZeroDivisionError(f"division by zero in {self.key}")
        return x // y if self.op == "//" else x % y

    def axes(self) -> set:
        return axes_of(self.a) | axes_of(self.b)


_ATOMS: dict = {}  # key -> Atom: every opaque factor seen, so monomials can hold plain strings


def _operand(x) -> str:
    """A size inside a floor division: parenthesised unless it is one name or a non-negative number."""
    if isinstance(x, Dim):
        t = x.text()
        return t if x.single_axis() else f"({t})"
    return str(int(x)) if int(x) >= 0 else f"({int(x)})"


def _factor_text(f: str) -> str:
    return f"({f})" if f in _ATOMS else f


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


def _term_text(mono: tuple, mag: int) -> str:
    if len(mono) == 1 and mag == 1:
        return mono[0]  # a lone atom needs no parentheses: // binds tighter than + and -
    body = "*".join(_factor_text(f) for f in mono)
    if not body:
        return str(mag)
    return body if mag == 1 else f"{mag}*{body}"


class Dim:
    """A size that depends on var axes: {monomial: coefficient}, a monomial being the sorted tuple
    of its factors (axis names and atom keys)."""

    __slots__ = ("poly",)

    def __init__(self, poly: dict):
        self.poly = poly

    @staticmethod
    def axis(name: str) -> "Dim":
        return Dim({(name,): 1})

    @staticmethod
    def _make(poly: dict) -> "int | Dim":
        if not poly:
            return 0
        if list(poly) == [()]:
            return poly[()]
        return Dim(poly)

    def axes(self) -> set:
        out = set()
        for mono in self.poly:
            for f in mono:
                out |= _ATOMS[f].axes() if f in _ATOMS else {f}
        return out

    def single_axis(self) -> str | None:
        """The axis name when this size is exactly one var axis."""
        if len(self.poly) == 1:
            (mono, c), = self.poly.items()
            if c == 1 and len(mono) == 1 and mono[0] not in _ATOMS:
                return mono[0]
        return None

    def text(self) -> str:
        terms = sorted(self.poly.items(), key=lambda t: (-len(t[0]), t[0]))
        text = ""
        for mono, c in terms:
            term = _term_text(mono, abs(c))
            if not text:
                text = ("-" if c < 0 else "") + term
            else:
                text += (" - " if c < 0 else " + ") + term
        return text or "0"

    def eval(self, env: dict) -> int:
        total = 0
        for mono, c in self.poly.items():
            v = c
            for f in mono:
                v *= _ATOMS[f].eval(env) if f in _ATOMS else env[f]
            total += v
        return total

    def __eq__(self, other) -> bool:
        return isinstance(other, Dim) and self.poly == other.poly

    def __hash__(self) -> int:
        return hash(self.text())

    def __repr__(self) -> str:
        return f"Dim({self.text()})"

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


def _poly(x) -> dict:
    if isinstance(x, Dim):
        return x.poly
    return {(): int(x)} if int(x) else {}


def is_size(x) -> bool:
    return isinstance(x, Dim) or (isinstance(x, int) and not isinstance(x, bool))


def add(a, b):
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return int(a) + int(b)
    return Dim._make(_poly_add(_poly(a), _poly(b)))


def sub(a, b):
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return int(a) - int(b)
    return Dim._make(_poly_add(_poly(a), _poly(b), -1))


def mul(a, b):
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return int(a) * int(b)
    return Dim._make(_poly_mul(_poly(a), _poly(b)))


def _exact_quotient(pa: dict, pb: dict) -> dict | None:
    """pa / pb when pb is one term dividing every term of pa exactly."""
    if len(pb) != 1:
        return None
    (mb, cb), = pb.items()
    out = {}
    for ma, ca in pa.items():
        rest = list(ma)
        for f in mb:
            if f not in rest:
                return None
            rest.remove(f)
        if ca % cb:
            return None
        out[tuple(rest)] = ca // cb
    return out


def _atom(op: str, a, b) -> "Dim":
    atom = Atom(op, a, b)
    _ATOMS.setdefault(atom.key, atom)
    return Dim({(atom.key,): 1})


def floordiv(a, b):
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return int(a) // int(b)
    q = _exact_quotient(_poly(a), _poly(b))
    if q is not None:
        return Dim._make(q)
    return _atom("//", a, b)


def mod(a, b):
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return int(a) % int(b)
    if _exact_quotient(_poly(a), _poly(b)) is not None:
        return 0
    return _atom("%", a, b)


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
    if isinstance(x, (Dim, NamedInt)):
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
