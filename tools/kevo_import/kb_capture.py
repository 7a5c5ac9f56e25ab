"""The capture path: a KernelBench problem that the AST translation refuses is run under Python
torch and traced (torch.fx.experimental.proxy_tensor.make_fx) to an ATen graph, which is written
node by node in the reference language.

The graph is traced at small sizes only (every module constant that sizes a tensor of
get_inputs() shrunk), once more for each such axis doubled, so that every size that varies can be
written as an expression over the axes (input and output shapes) or over the shapes of the
reference's own values (`x.shape[0]`, a `-1` in a reshape). An axis whose change alters the
graph (a sequence length that unrolls a recurrent cell) stays at the problem's own size.
Parameters, buffers and tensor attributes the graph reads become inputs named after their module
path (`layer1.0.conv1.weight` -> `layer1_0_conv1_weight`)."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

from .kb_capture_contract import _contract
from .kb_capture_emit import Emitter
from .kb_capture_sizes import CPU_BYTES, CPU_FLOPS, MIN_SIZE, VaryingSize, _cost, _eval_size, _fit, _small_value, \
    render, shape_of, template
from .kb_capture_trace import CaptureError, _forward_names, _tensor_attrs, data_axes, load, module_constants, \
    name_literal_sizes, trace

__all__ = ["CaptureError", "Captured", "agree", "capture"]


@dataclass
class Captured:
    contract: dict
    traces: list
    emitters: list
    var: list
    small: dict
    full: dict
    lines: list = field(default_factory=list)
    source: str = ""  # the problem's source with its literal sizes named (what was traced)


MAX_STATEMENTS = 20000


class TooLarge(CaptureError):
    """A graph too large to write: refused at once, not retried with other axes."""


def _floor(axis: str) -> int:
    """The least size an axis is shrunk to: a batch of 1 where nothing else is left to shrink (an
    image size that the classifier fixes)."""
    return 1 if "batch" in axis.lower() else MIN_SIZE


class _Search:
    """The var axes and their small sizes, settled by tracing: an axis the model cannot take shrunk,
    whose doubling alters the graph, or whose sizes fit no expression stays at the problem's size."""

    def __init__(self, path, source, seed, fwd_names, full, cand):
        self.path, self.source, self.seed, self.fwd = path, source, seed, fwd_names
        self.full = full
        self.small = {a: _small_value(a, full[a]) for a in cand}
        self.var = [a for a in cand if self.small[a] < full[a]]
        self.tried = set()  # axes halved as far as they go
        self._memo = None

    def env(self, restored=()) -> dict:
        return {**self.full, **{a: self.small[a] for a in self.var if a not in restored}}

    def drop(self, axes):
        self.var = [a for a in self.var if a not in axes]

    def attempt(self):
        """(traces, emitters, bad axes): the small workload and one trace per axis doubled."""
        key = (tuple(self.var), tuple(sorted(self.small.items())))
        if self._memo and self._memo[0] == key:
            return self._memo[1]
        env = self.env()
        tr0 = trace(self.path, self.source, env, self.seed)
        em0 = Emitter(tr0, self.fwd).run()
        trs, ems, bad = [tr0], [em0], []
        for a in self.var:
            try:
                tr = trace(self.path, self.source, {**env, a: self.small[a] * 2}, self.seed)
                em = Emitter(tr, self.fwd).run()
            except CaptureError:
                bad.append(a)
                continue
            if template(em) != template(em0):
                self._check_unrolled(a, len(em0.stmts), len(em.stmts))
                bad.append(a)
                continue
            trs.append(tr)
            ems.append(em)
        self._memo = (key, (trs, ems, bad))
        return trs, ems, bad

    def _check_unrolled(self, a, n_small, n_doubled):
        """An axis that unrolls the graph (a sequence length) stays at the problem's size: refused
        where the graph would then exceed MAX_STATEMENTS."""
        if n_doubled <= n_small:
            return
        steps = (n_doubled - n_small) / self.small[a]
        at_full = n_small + steps * (self.full[a] - self.small[a])
        if at_full > MAX_STATEMENTS:
            raise TooLarge(f"the graph unrolls over `{a}`: about {int(at_full)} ATen ops at the problem's size "
                           f"({a} = {self.full[a]}), more than the capture path writes ({MAX_STATEMENTS})")

    def _traces_with(self, restored) -> bool:
        try:
            trace(self.path, self.source, self.env(restored), self.seed)
            return True
        except CaptureError:
            return False

    def restore_culprits(self) -> bool:
        """A shrunk size the model cannot take: the fewest axes restored to the problem's sizes that
        let it trace (batch axes tried last); False where none do."""
        order = sorted(self.var, key=lambda a: "batch" in a.lower())
        restored = []
        for a in order:
            restored.append(a)
            if self._traces_with(restored):
                break
        else:
            return False
        for a in list(restored[:-1]):
            fewer = [b for b in restored if b != a]
            if self._traces_with(fewer):
                restored = fewer
        self.drop(restored)
        return True

    def shrink(self) -> bool:
        """Halves the largest axis that can take it (the small workload is over the CPU's limits)."""
        cands = sorted((a for a in self.var if self.small[a] // 2 >= _floor(a) and a not in self.tried),
                       key=lambda a: -self.small[a])
        if not cands:
            return False
        a, prev = cands[0], self.small[cands[0]]
        self.small[a] = prev // 2
        if self.small[a] // 2 < _floor(a):
            self.tried.add(a)
        try:
            ok = not self.attempt()[2]
        except CaptureError:
            ok = False
        if not ok:
            self.small[a] = prev
            self.tried.add(a)
        return True


def _io_shapes(ems, trs, var, small) -> tuple:
    """Shapes of the inputs and outputs fitted over the axes, and the axes no fit takes."""
    em0 = ems[0]
    shapes, drop = {}, []
    for nm in [i[0] for i in em0.inputs] + list(em0.outputs):
        per = [shape_of(e, t, nm) for e, t in zip(ems, trs)]
        if any(p is None for p in per):
            raise CaptureError(f"internal: no shape for `{nm}`")
        entry = []
        for d in range(len(per[0])):
            expr, why = _fit([p[d] for p in per], var, small)
            drop += why
            entry.append(expr)
        shapes[nm] = entry
    return shapes, drop


def _settle(s: _Search) -> tuple:
    """Traces until the axes settle: (traces, emitters, shapes, body)."""
    for _ in range(4 * len(s.var) + 40):
        try:
            trs, ems, bad = s.attempt()
        except TooLarge:
            raise
        except CaptureError:
            if not s.var or not s.restore_culprits():
                raise
            continue
        if bad:
            s.drop(bad)
            continue
        shapes, drop = _io_shapes(ems, trs, s.var, s.small)
        if drop:
            s.drop(drop)
            continue
        try:
            body = render(ems, trs)
        except VaryingSize as e:  # keep the axes that move it fixed
            axes = [s.var[j] for j in e.traces if 0 <= j < len(s.var)]
            if not axes:
                raise
            s.drop(axes)
            continue
        nbytes, flops = _cost(trs[0], ems[0])
        if (nbytes > CPU_BYTES or flops > CPU_FLOPS) and s.shrink():
            continue
        return trs, ems, shapes, body
    raise CaptureError("internal: the axes did not settle")


MEMORY_LIMIT = 8 << 30  # address space: a trace that would need more fails as a size the model cannot take


def _limit_memory():
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT, hard)
    if soft == resource.RLIM_INFINITY or soft > want:
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def capture(path: str, source: str, name: str, seed: int = 0) -> Captured:
    import torch  # noqa: F401

    _limit_memory()
    source = name_literal_sizes(source, _forward_names(ast.parse(source)))
    tree = ast.parse(source)
    full = module_constants(tree)
    s = _Search(path, source, seed, _forward_names(tree), full, data_axes(tree, full))
    trs, ems, shapes, body = _settle(s)
    smallenv = {a: s.small[a] for a in s.var}
    c = _contract(path, tree, name, trs[0], ems[0], body, shapes, s.var, full, smallenv)
    return Captured(c, trs, ems, s.var, smallenv, full, source=source)


def agree(cap: Captured, path: str, source: str, seed: int = 0) -> tuple:
    """Runs the problem's Model and the contract's run() on the small workload with the same
    inputs and parameter tensors: (ok, lines)."""
    import torch
    import torch.nn.functional as F  # noqa: F401

    env = {**cap.full, **cap.small}
    ns = load(path, cap.source or source, env)
    torch.manual_seed(seed)
    model = ns["Model"](*ns["get_init_inputs"]())
    inputs = list(ns["get_inputs"]())
    em = cap.emitters[0]
    by_path = dict(model.named_parameters())
    by_path.update(dict(model.named_buffers()))
    by_path.update(_tensor_attrs(model))
    args = []
    lines = []
    for nm, kind, p, _ in em.inputs:
        if nm not in cap.contract["inputs"]:
            continue
        t = inputs[int(p)] if kind == "input" else by_path.get(p)
        if t is None:
            return False, [f"input {nm}: no tensor at {p}"]
        want = [_eval_size(e, env) for e in cap.contract["inputs"][nm]["shape"]]
        if list(t.shape) != want:
            return False, [f"input {nm}: the problem gives {list(t.shape)}, the contract declares {want}"]
        args.append(t.detach().clone())
    with torch.no_grad():
        expected = model(*inputs)
        ref_ns = {"torch": torch, "F": torch.nn.functional, "math": math}
        exec(compile(cap.contract["reference"], "<reference>", "exec"), ref_ns)
        got = ref_ns["run"](*args)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    ok = len(expected) == len(got)
    err_max = 0.0
    for (on, decl), e, g in zip(cap.contract["outputs"].items(), expected, got):
        want = [_eval_size(x, env) for x in decl["shape"]]
        if list(e.shape) != want or list(g.shape) != want:
            return False, [f"output {on}: the model returns {list(e.shape)}, the reference {list(g.shape)}, the "
                           f"contract declares {want}"]
        err = (g.double() - e.double()).abs()
        err_max = max(err_max, float(err.max()) if err.numel() else 0.0)
        bad = ~(err <= 1e-4 + 1e-4 * e.double().abs())
        if bad.any():
            ok = False
            lines.append(f"output {on}: {int(bad.sum())} of {e.numel()} elements differ by more than atol 1e-4 + "
                         f"rtol 1e-4 (max abs error {float(err.max()):.3g})")
    if ok:
        lines.append(f"agreement: the reference matches the problem's Model within atol 0.0001, rtol 0.0001 on the "
                     f"small workload (max abs error {err_max:.3g}; torch {torch.__version__})")
    return ok, lines
