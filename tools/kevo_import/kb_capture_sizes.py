"""The capture path, sizes: the statements of several traces (the small workload and one per axis
doubled) compared, sizes that vary fitted over the axes (`_fit`) or written from the operands'
shapes (`render`), and the small workload's cost on the CPU (`_cost`)."""

from __future__ import annotations

import math
from fractions import Fraction

from .kb_capture_emit import Emitter, Lit
from .kb_capture_trace import CaptureError

MIN_SIZE = 2


class VaryingSize(CaptureError):
    """A size inside the reference that varies with the traces (those of `traces`: indices into the
    var axes) and that no operand's shape gives."""

    def __init__(self, msg: str, traces: list):
        super().__init__(msg)
        self.traces = traces


def _flatten(parts):
    for p in parts:
        if isinstance(p, list):
            yield from _flatten(p)
        else:
            yield p


def template(em: Emitter) -> list:
    out = []
    for name, parts, _ in em.stmts:
        out.append(name + "=" + "".join("#" if isinstance(p, Lit) else (str(p) if not isinstance(p, tuple) else "")
                                        for p in _flatten(parts)))
    return out


def shape_of(em, tr, name):
    key = em.shape_key.get(name)
    if key is None:
        return None
    node, idx = key
    if node in tr.consts_shapes:
        return tr.consts_shapes[node]
    sh = tr.shapes.get(node)
    if sh is None:
        return None
    if isinstance(sh, tuple):
        return sh[idx] if idx is not None and idx < len(sh) else None
    return sh if idx in (None, 0) else None


def _shape_exprs(ems: list, trs: list, scope: list) -> list:
    """Candidate runtime expressions for a size: (text, values per trace)."""
    cands = []
    for nm in scope:
        shapes = [shape_of(e, t, nm) for e, t in zip(ems, trs)]
        if any(s is None for s in shapes):
            continue
        r = len(shapes[0])
        for d in range(r):
            cands.append((f"{nm}.shape[{d}]", [s[d] for s in shapes]))
        for d in range(r - 1):
            cands.append((f"{nm}.shape[{d}] * {nm}.shape[{d + 1}]", [s[d] * s[d + 1] for s in shapes]))
        for d in range(r - 2):
            cands.append((f"{nm}.shape[{d}] * {nm}.shape[{d + 1}] * {nm}.shape[{d + 2}]",
                          [s[d] * s[d + 1] * s[d + 2] for s in shapes]))
    return cands


def render(ems: list, trs: list) -> list:
    """The body of run(): statements of the first trace, sizes that vary written as expressions
    over the shapes of the statement's operands (or of forward's inputs)."""
    em = ems[0]
    lines = []
    live = _live(em)
    per_trace = [list(_flatten_lits(e)) for e in ems]
    forward_inputs = [nm for nm, kind, _, _ in em.inputs if kind == "input"]
    k = 0
    for name, parts, deps in em.stmts:
        flat = list(_flatten(parts))
        nlits = sum(1 for p in flat if isinstance(p, Lit))
        if name not in live:
            k += nlits
            continue
        text = []
        ctx = None
        minus = 0
        for p in flat:
            if isinstance(p, tuple) and p[0] == "fail":
                raise CaptureError(p[1])
            if isinstance(p, tuple):
                ctx = p
                continue
            if isinstance(p, Lit):
                vals = [pt[k] for pt in per_trace]
                k += 1
                if len(set(vals)) == 1:
                    text.append(str(int(p)))
                    continue
                hit = None
                for expr, cv in _shape_exprs(ems, trs, list(dict.fromkeys(deps + forward_inputs))):
                    if cv == vals:
                        hit = expr
                        break
                if hit is None and ctx and ctx[0] == "view" and minus == 0:
                    minus += 1
                    text.append("-1")
                    continue
                if hit is None:
                    raise VaryingSize(f"a size that varies with the workload ({vals}) has no expression in the "
                                      f"shapes of `{name}`'s operands", [j - 1 for j, v in enumerate(vals) if v != vals[0]])
                text.append(hit)
            else:
                text.append(str(p))
        lines.append(f"    {name} = {''.join(text)}")
    lines.append(f"    return {', '.join(em.outputs)}")
    return lines


def _flatten_lits(em):
    for _, parts, _ in em.stmts:
        for p in _flatten(parts):
            if isinstance(p, Lit):
                yield int(p)


def _live(em) -> set:
    deps = {name: d for name, _, d in em.stmts}
    live = set()
    stack = [o for o in em.outputs]
    while stack:
        x = stack.pop()
        if x in live or x not in deps:
            continue
        live.add(x)
        stack += deps[x]
    return live


def _small_value(name: str, v: int) -> int:
    if "batch" in name.lower():  # 4 where it can be: training-mode batch norm over 2 values is +-1 whatever the input
        return min(v, 4) if v >= 8 else min(v, 2)
    return max(MIN_SIZE, min(v, max(8, v // 4)))


def _fit(values: list, var: list, small: dict):
    """A size as an expression over the var axes, from its values in the base trace and in one
    trace per axis doubled: a monomial times a rational constant."""
    base = values[0]
    degs = {}
    for a, v in zip(var, values[1:]):
        if v == base:
            continue
        if base and v == 2 * base:
            degs[a] = 1
        elif base and v == 4 * base:
            degs[a] = 2
        else:
            return _fit_sum(values, var, small)
    if not degs:
        return base, []
    denom = 1
    for a, d in degs.items():
        denom *= small[a] ** d
    c = Fraction(base, denom)
    mono = " * ".join(a if d == 1 else f"{a} * {a}" for a, d in degs.items())
    if c == 1:
        return mono, []
    if c.denominator == 1:
        return f"{mono} * {c.numerator}", []
    if c.numerator == 1:
        return f"{mono} // {c.denominator}", []
    return None, list(degs)


def _fit_sum(values: list, var: list, small: dict):
    """A size as a sum of the axes times whole constants plus a whole constant (`input_size +
    hidden_size`, from a concatenation): doubling an axis adds its term once more."""
    base, terms, total = values[0], [], 0
    for a, v in zip(var, values[1:]):
        delta = v - base
        if delta < 0 or delta % small[a]:
            return None, [a]
        if delta:
            k = delta // small[a]
            terms.append(a if k == 1 else f"{k} * {a}")
            total += delta
    c = base - total
    if c < 0 or not terms:
        return None, [a for a, v in zip(var, values[1:]) if v != base]
    return " + ".join(terms + ([str(c)] if c else [])), []


CPU_BYTES = 400e6  # kevo check runs a workload on the CPU under 512 MB and 2 GFLOP
CPU_FLOPS = 1.5e9


def _cost(tr, em) -> tuple:
    flops = 0
    for n in tr.gm.graph.nodes:
        if n.op != "call_function" or not hasattr(n.target, "_schema"):
            continue
        op = n.target._schema.name.split("::")[1]
        out = tr.shapes.get(n.name)
        if not out or not isinstance(out[0], int):
            continue
        numel = math.prod(out)
        if op == "convolution":
            w = tr.consts_shapes.get(n.args[1].name) or tr.shapes.get(n.args[1].name)
            flops += 2 * numel * math.prod(w[1:]) if not n.args[6] else 2 * math.prod(tr.shapes[n.args[0].name]) * \
                math.prod(w[1:])
        elif op in ("mm", "addmm", "bmm"):
            a = n.args[1] if op == "addmm" else n.args[0]
            sa = tr.consts_shapes.get(a.name) or tr.shapes.get(a.name)
            flops += 2 * numel * sa[-1]
    nbytes = 0
    for nm, kind, p, node in em.inputs:
        sh = shape_of(em, tr, nm)
        nbytes += 4 * math.prod(sh) if sh else 0
    for nm in em.outputs:
        sh = shape_of(em, tr, nm)
        nbytes += 4 * math.prod(sh) if sh else 0
    return nbytes, flops


def _eval_size(e, env):
    return e if isinstance(e, int) else int(eval(e, {"__builtins__": {}}, dict(env)))
