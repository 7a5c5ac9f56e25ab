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
import os
import re
from dataclasses import dataclass, field
from fractions import Fraction

MIN_SIZE = 2


class CaptureError(Exception):
    pass


# ---------------------------------------------------------------------------------------------- the problem


def _const_int(node):
    try:
        v = eval(compile(ast.Expression(node), "<c>", "eval"), {"__builtins__": {}})  # literal arithmetic only
    except Exception:
        return None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def module_constants(tree) -> dict:
    """Module-level `NAME = <int literal expression>` (and tuple unpacking of them), in file order."""
    out = {}
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        tgt, val = stmt.targets[0], stmt.value
        if isinstance(tgt, ast.Name):
            if isinstance(val, (ast.Constant, ast.BinOp, ast.UnaryOp)):
                v = _const_int(val)
                if v is not None:
                    out[tgt.id] = v
        elif isinstance(tgt, ast.Tuple) and isinstance(val, ast.Tuple) and len(tgt.elts) == len(val.elts):
            for t, v in zip(tgt.elts, val.elts):
                if isinstance(t, ast.Name):
                    iv = _const_int(v)
                    if iv is not None:
                        out[t.id] = iv
    return out


def load(path: str, source: str, env: dict) -> dict:
    """Runs the problem file with its module constants set to env."""
    tree = ast.parse(source)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            tgt = stmt.targets[0]
            if isinstance(tgt, ast.Name) and tgt.id in env and _const_int(stmt.value) is not None:
                stmt.value = ast.Constant(env[tgt.id])
            elif isinstance(tgt, ast.Tuple) and isinstance(stmt.value, ast.Tuple):
                for i, t in enumerate(tgt.elts):
                    if isinstance(t, ast.Name) and t.id in env and _const_int(stmt.value.elts[i]) is not None:
                        stmt.value.elts[i] = ast.Constant(env[t.id])
    ast.fix_missing_locations(tree)
    ns = {"__name__": "kevo_kernelbench_problem", "__file__": path}
    exec(compile(tree, path, "exec"), ns)
    return ns


# ---------------------------------------------------------------------------------------------- tracing


@dataclass
class Trace:
    env: dict
    gm: object
    model: object
    inputs: list
    consts: dict  # get_attr target -> (kind, path, tensor)
    shapes: dict = field(default_factory=dict)  # node name -> shape (list) or list of shapes


def _tensor_attrs(model):
    """Plain tensor attributes of the model's modules (self.h0 = torch.randn(...)): path -> tensor."""
    import torch

    out = {}
    for mname, mod in model.named_modules():
        for k, v in vars(mod).items():
            if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter) and not k.startswith("_"):
                out[f"{mname}.{k}" if mname else k] = v
    return out


def trace(path: str, source: str, env: dict, seed: int = 0) -> Trace:
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    ns = load(path, source, env)
    torch.manual_seed(seed)
    model = ns["Model"](*ns["get_init_inputs"]())
    inputs = list(ns["get_inputs"]())
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise CaptureError(f"get_inputs() passes a {type(x).__name__} as argument {i + 1}; only tensors are captured")
    known = {}
    for k, p in model.named_parameters():
        known[id(p)] = ("param", k, p)
    for k, b in model.named_buffers():
        known.setdefault(id(b), ("buffer", k, b))
    attrs = _tensor_attrs(model)
    for k, t in attrs.items():
        known.setdefault(id(t), ("attr", k, t))
    snapshot = {k: t.clone() for k, t in attrs.items()}
    with torch.no_grad():
        try:
            gm = make_fx(lambda *xs: model(*xs))(*inputs)
        except CaptureError:
            raise
        except Exception as e:
            raise CaptureError(f"the model does not trace: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    consts = {}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            t = getattr(gm, n.target)
            hit = known.get(id(t))
            if hit is None:  # a tensor attribute replaced in forward (self.h0 = self.h0.to(x.device))
                for k, orig in snapshot.items():
                    if orig.shape == t.shape and orig.dtype == t.dtype and torch.equal(orig, t):
                        hit = ("attr", k, t)
                        break
            consts[n.target] = hit or ("const", n.target, t)
    tr = Trace(env, gm, model, inputs, consts)
    tr.consts_tensor = lambda p: next(t for kind, q, t in consts.values() if q == p)
    tr.consts_shapes = {n.name: list(getattr(gm, n.target).shape) for n in gm.graph.nodes if n.op == "get_attr"}
    for n in gm.graph.nodes:
        tm = n.meta.get("tensor_meta")
        if tm is not None:
            tr.shapes[n.name] = list(tm.shape) if hasattr(tm, "shape") else [
                list(m.shape) if hasattr(m, "shape") else None for m in tm]
    return tr


# ---------------------------------------------------------------------------------------------- emitting


class Lit(int):
    """An integer written into the reference; sizes that vary between traces are resolved later."""


def _ints(v):
    return [Lit(int(x)) for x in v]


def _seq(parts_list):
    out = ["["]
    for i, p in enumerate(parts_list):
        if i:
            out.append(", ")
        out.append(p)
    out.append("]")
    return out


DTYPES = {"torch.float32": "torch.float32", "torch.float64": "torch.float64", "torch.float16": "torch.float16",
          "torch.bfloat16": "torch.bfloat16", "torch.int64": "torch.int64", "torch.int32": "torch.int32",
          "torch.bool": "torch.bool"}

UNARY = {"relu": "torch.relu", "sigmoid": "torch.sigmoid", "tanh": "torch.tanh", "exp": "torch.exp",
         "log": "torch.log", "sqrt": "torch.sqrt", "rsqrt": "torch.rsqrt", "neg": "torch.neg", "abs": "torch.abs",
         "erf": "torch.erf", "sin": "torch.sin", "cos": "torch.cos", "silu": "F.silu", "hardswish": "F.hardswish",
         "hardsigmoid": "F.hardsigmoid", "mish": "F.mish"}
BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
          "ge": ">="}
ALIAS = {"clone", "detach", "alias", "lift_fresh_copy", "contiguous", "lift_fresh"}
VIEWS = {"view", "_unsafe_view", "_reshape_alias", "slice", "select", "permute", "transpose", "t", "expand",
         "unsqueeze", "squeeze", "as_strided", "unbind", "split", "split_with_sizes", "diagonal"}


def _num(v):
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, float):
        if math.isinf(v):
            return "float('inf')" if v > 0 else "-float('inf')"
        return repr(v)
    return repr(int(v))


class Emitter:
    """One trace's graph as statements: (name, parts, deps); parts mix text and Lit sizes."""

    def __init__(self, tr: Trace, forward_names: list):
        self.tr = tr
        self.stmts = []  # [name, parts, deps]
        self.val = {}  # fx node name -> reference value name, or ("tuple", [names]) / ("split", ...)
        self.inputs = []  # (ref name, kind, path, node name)
        self.input_by_key = {}
        self.forward_names = forward_names
        self.poison = set()
        self.shape_key = {}  # reference name -> (fx node name, output index or None)

    def fail(self, n, why):
        raise CaptureError(f"{why} (traced as {n.target})")

    def ref(self, a):
        import torch.fx as fx

        if isinstance(a, fx.Node):
            v = self.val.get(a.name)
            if v is None:
                raise CaptureError(f"internal: {a.name} has no value")
            if isinstance(v, tuple):
                raise CaptureError(f"internal: {a.name} is a tuple")
            return v
        return a

    def operand(self, a):
        """A tensor or number argument as parts."""
        import torch.fx as fx

        if isinstance(a, fx.Node):
            return [self.ref(a)]
        if isinstance(a, (list, tuple)):
            return _seq([self.operand(x) for x in a])
        if isinstance(a, bool) or a is None:
            return [repr(a)]
        if isinstance(a, int):
            return [Lit(a)]
        if isinstance(a, float):
            return [_num(a)]
        if "torch." in str(a) and str(a) in DTYPES:
            return [DTYPES[str(a)]]
        raise CaptureError(f"internal: argument {a!r}")

    def emit(self, n, parts, deps=None):
        name = n.name
        self.stmts.append([name, parts, self._deps(parts)])
        self.val[n.name] = name
        self.shape_key[name] = (n.name, None)

    @staticmethod
    def _deps(parts):
        out = []
        for p in parts:
            if isinstance(p, list):
                out += Emitter._deps(p)
            elif isinstance(p, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p):
                out.append(p)
        return out

    def add_input(self, key, ref_name, kind, path, node_name):
        if key not in self.input_by_key:
            base = re.sub(r"[^A-Za-z0-9_]", "_", ref_name)
            name = base
            taken = {i[0] for i in self.inputs}
            k = 1
            while name in taken:
                name = f"{base}_{k}"
                k += 1
            self.inputs.append((name, kind, path, node_name))
            self.shape_key[name] = (node_name, None)
            self.input_by_key[key] = name
        return self.input_by_key[key]

    def run(self):
        placeholders = [n for n in self.tr.gm.graph.nodes if n.op == "placeholder"]
        for i, n in enumerate(placeholders):
            nm = self.forward_names[i] if i < len(self.forward_names) else f"x{i}"
            self.val[n.name] = self.add_input(("input", i), nm, "input", str(i), n.name)
        for n in self.tr.gm.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "get_attr":
                kind, p, t = self.tr.consts[n.target]
                c = self.constant(n, t, kind)
                if c is not None:
                    self.val[n.name] = c
                    continue
                self.val[n.name] = self.add_input(("const", p), p.replace(".", "_"), kind, p, n.name)
                continue
            if n.op == "output":
                outs = n.args[0]
                outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
                self.outputs = [self.ref(o) for o in outs]
                continue
            if n.op != "call_function":
                raise CaptureError(f"internal: node {n.op}")
            try:
                self.node(n)
            except CaptureError as e:  # refused only if the output needs it (dead ops: BN's empty, stat updates)
                deps = []
                for a in list(n.args) + list(n.kwargs.values()):
                    for x in (a if isinstance(a, (list, tuple)) else [a]):
                        if hasattr(x, "name") and isinstance(self.val.get(x.name), str):
                            deps.append(self.val[x.name])
                self.stmts.append([n.name, [("fail", str(e))], deps])
                self.val[n.name] = n.name
                self.poison.add(n.name)
        return self

    def constant(self, n, t, kind):
        """A buffer whose values are a constant or a causal mask is made in the reference."""
        import torch

        self.shape_key[n.name] = (n.name, None)
        if kind in ("param",) or t.numel() == 0:
            return None
        if kind == "const" or kind == "buffer":
            flat = t.flatten()
            dt = DTYPES.get(str(t.dtype))
            if dt is None:
                return None
            shape = _seq([[Lit(s)] for s in t.shape])
            if t.numel() == 1 and t.dim() == 0:
                self.stmts.append([n.name, ["torch.tensor(", _num(flat[0].item()), ", dtype=", dt, ")"], []])
                return n.name
            if bool((flat == flat[0]).all()):
                self.stmts.append([n.name, ["torch.full(", shape, ", ", _num(flat[0].item()), ", dtype=", dt, ")"], []])
                return n.name
            if t.dim() >= 2 and bool((t == torch.tril(torch.ones_like(t))).all()):
                self.stmts.append([n.name, ["torch.tril(torch.ones(", shape, ", dtype=", dt, "))"], []])
                return n.name
            if kind == "const":
                raise CaptureError(f"the model uses a tensor constant of shape {list(t.shape)} that is not a parameter, "
                                   "buffer or attribute")
        return None

    # ------------------------------------------------------------------------------------------ ops

    def node(self, n):
        import torch

        tgt = n.target
        if tgt is __import__("operator").getitem:
            src, i = n.args
            v = self.val.get(src.name)
            if isinstance(v, str) and v in self.poison:
                raise CaptureError(dict((st[0], st[1][0][1]) for st in self.stmts if st[0] == v)[v].rsplit(" (traced", 1)[0]
                                   + f" (traced as {src.target})")
            if isinstance(v, tuple):
                kind = v[0]
                if kind == "tuple":
                    if v[1][i] is None:
                        self.val[n.name] = ("unused", i)
                        return
                    self.val[n.name] = v[1][i]
                    return
                if kind == "split":
                    _, x, dim, starts = v
                    s, e = starts[i], starts[i + 1]
                    self.emit(n, [x, ".narrow(", Lit(dim), ", ", Lit(s), ", ", Lit(e - s), ")"])
                    return
                if kind == "unbind":
                    _, x, dim = v
                    self.emit(n, [x, ".select(", Lit(dim), ", ", Lit(i), ")"])
                    return
                if kind == "indices":
                    self.fail(n, "the indices of a max pooling are used")
            raise CaptureError(f"internal: getitem of {src.target}")
        if not hasattr(tgt, "_schema"):
            raise CaptureError(f"cannot translate {tgt}")
        op = tgt._schema.name.split("::")[1]
        overload = tgt._overloadname
        inplace = op.endswith("_") and not op.startswith("_") or op in ("add_", "mul_")
        base = op[:-1] if op.endswith("_") and not op.endswith("__") and op not in ("_",) else op
        args, kw = list(n.args), dict(n.kwargs)
        if inplace:
            src = args[0]
            if getattr(src, "op", None) == "call_function" and hasattr(src.target, "_schema") and \
                    src.target._schema.name.split("::")[1] in VIEWS:
                self.fail(n, "an in-place update of a view (x[...] = ..., x[:, i].copy_(...))")
        h = getattr(self, "op_" + base, None)
        if base in ALIAS:
            self.val[n.name] = self.ref(args[0])
        elif base in UNARY:
            self.emit(n, [UNARY[base], "(", self.ref(args[0]), ")"])
        elif base in BINARY:
            a, b = args[0], args[1]
            alpha = kw.get("alpha", args[2] if len(args) > 2 and base in ("add", "sub") else 1)
            bp = self.operand(b)
            if alpha != 1:
                bp = ["(", _num(alpha), " * ", bp, ")"]
            self.emit(n, ["(", self.operand(a), f" {BINARY[base]} ", bp, ")"] if False else
                      [self.operand(a), f" {BINARY[base]} ", bp])
        elif h is not None:
            h(n, args, kw, overload)
        else:
            self.fail(n, f"aten.{op} has no spelling in kevo's reference language")
        if inplace and args and hasattr(args[0], "name") and n.name in self.val:
            self.val[args[0].name] = self.val[n.name]  # later reads of the mutated tensor see the update

    def dtype_of(self, name):
        key = self.shape_key.get(name)
        node = next(n for n in self.tr.gm.graph.nodes if n.name == key[0])
        tm = node.meta.get("tensor_meta")
        if tm is None:
            return "float32"
        if not hasattr(tm, "dtype"):
            tm = tm[key[1] or 0]
        return str(tm.dtype).replace("torch.", "")

    def _shape(self, node):
        if node.name in self.tr.consts_shapes:
            return self.tr.consts_shapes[node.name]
        return self.tr.shapes.get(node.name)

    def op_convolution(self, n, a, kw, o):
        x, w, b, stride, padding, dilation, transposed, out_pad, groups = a
        d = len(self._shape(w)) - 2
        if transposed:
            self.emit(n, [f"F.conv_transpose{d}d(", self.ref(x), ", ", self.ref(w), ", ", self.operand(b),
                          ", stride=", _seq([[Lit(s)] for s in stride]), ", padding=", _seq([[Lit(s)] for s in padding]),
                          ", output_padding=", _seq([[Lit(s)] for s in out_pad]), ", groups=", Lit(groups),
                          ", dilation=", _seq([[Lit(s)] for s in dilation]), ")"])
        else:
            self.emit(n, [f"F.conv{d}d(", self.ref(x), ", ", self.ref(w), ", ", self.operand(b),
                          ", stride=", _seq([[Lit(s)] for s in stride]), ", padding=", _seq([[Lit(s)] for s in padding]),
                          ", dilation=", _seq([[Lit(s)] for s in dilation]), ", groups=", Lit(groups), ")"])

    def _tuple(self, n, first_parts, k):
        self.emit(n, first_parts)
        name = self.stmts[-1][0]
        self.stmts[-1][0] = name + "_0"
        self.shape_key[name + "_0"] = (n.name, 0)
        self.val[n.name] = ("tuple", [name + "_0"] + [None] * (k - 1))

    def op_native_batch_norm(self, n, a, kw, o):
        x, w, b, rm, rv, training, momentum, eps = a
        if not training:
            self.fail(n, "batch norm in eval mode (running statistics)")
        self._tuple(n, ["F.batch_norm(", self.ref(x), ", None, None, ", self.operand(w), ", ", self.operand(b),
                        ", training=True, eps=", _num(eps), ")"], 3)

    def op__native_batch_norm_legit(self, n, a, kw, o):
        self.op_native_batch_norm(n, list(a[:5]) + [a[5], a[6], a[7]], kw, o)

    def op_native_layer_norm(self, n, a, kw, o):
        x, shape, w, b, eps = a
        self._tuple(n, ["F.layer_norm(", self.ref(x), ", ", _seq([[Lit(s)] for s in shape]), ", ", self.operand(w),
                        ", ", self.operand(b), ", eps=", _num(eps), ")"], 3)

    def op_native_group_norm(self, n, a, kw, o):
        x, w, b, N, C, HW, g, eps = a
        self._tuple(n, ["F.group_norm(", self.ref(x), ", ", Lit(g), ", ", self.operand(w), ", ", self.operand(b),
                        ", eps=", _num(eps), ")"], 3)

    def op_native_dropout(self, n, a, kw, o):
        x, p, train = a[0], a[1], a[2] if len(a) > 2 else True
        if train and p > 0:
            self.fail(n, f"dropout with p={p} is active in training mode (KernelBench never calls .eval()): "
                         "a fresh random mask on every call, which no kernel can reproduce")
        self.val[n.name] = ("tuple", [self.ref(x), None])

    def op_dropout(self, n, a, kw, o):
        x, p, train = a
        if train and p > 0:
            self.op_native_dropout(n, a, kw, o)
        self.val[n.name] = self.ref(x)

    def op_addmm(self, n, a, kw, o):
        bias, m1, m2 = a[:3]
        beta, alpha = kw.get("beta", 1), kw.get("alpha", 1)
        if beta != 1 or alpha != 1:
            self.fail(n, "addmm with beta or alpha")
        w = self._weight_of_t(m2)
        if w is not None:
            self.emit(n, ["F.linear(", self.ref(m1), ", ", w, ", ", self.ref(bias), ")"])
        else:
            self.emit(n, ["torch.matmul(", self.ref(m1), ", ", self.ref(m2), ") + ", self.ref(bias)])

    def _weight_of_t(self, m2):
        if getattr(m2, "op", None) == "call_function" and hasattr(m2.target, "_schema") and \
                m2.target._schema.name == "aten::t":
            return self.ref(m2.args[0])
        return None

    def op_mm(self, n, a, kw, o):
        w = self._weight_of_t(a[1])
        if w is not None:
            self.emit(n, ["F.linear(", self.ref(a[0]), ", ", w, ")"])
        else:
            self.emit(n, ["torch.mm(", self.ref(a[0]), ", ", self.ref(a[1]), ")"])

    def op_bmm(self, n, a, kw, o):
        self.emit(n, ["torch.bmm(", self.ref(a[0]), ", ", self.ref(a[1]), ")"])

    def op_matmul(self, n, a, kw, o):
        self.emit(n, ["torch.matmul(", self.ref(a[0]), ", ", self.ref(a[1]), ")"])

    def op_linear(self, n, a, kw, o):
        self.emit(n, ["F.linear(", self.ref(a[0]), ", ", self.ref(a[1]), ", ", self.operand(a[2] if len(a) > 2 else None),
                      ")"])

    def op_t(self, n, a, kw, o):
        self.emit(n, [self.ref(a[0]), ".t()"])

    def op_rsub(self, n, a, kw, o):
        alpha = kw.get("alpha", 1)
        self.emit(n, [self.operand(a[1]), " - ", self.operand(a[0]) if alpha == 1 else [_num(alpha), " * ",
                                                                                         self.operand(a[0])]])

    def op_pow(self, n, a, kw, o):
        self.emit(n, [self.operand(a[0]), " ** ", self.operand(a[1])])

    def op_gelu(self, n, a, kw, o):
        self.emit(n, ["F.gelu(", self.ref(a[0]), ", approximate=", repr(kw.get("approximate", "none")), ")"])

    def op_leaky_relu(self, n, a, kw, o):
        self.emit(n, ["F.leaky_relu(", self.ref(a[0]), ", negative_slope=", _num(a[1] if len(a) > 1 else 0.01), ")"])

    def op_hardtanh(self, n, a, kw, o):
        lo = a[1] if len(a) > 1 else -1.0
        hi = a[2] if len(a) > 2 else 1.0
        self.emit(n, ["F.hardtanh(", self.ref(a[0]), ", min_val=", _num(float(lo)), ", max_val=", _num(float(hi)), ")"])

    def op_elu(self, n, a, kw, o):
        if len(a) > 2 and (a[2] != 1 or (len(a) > 3 and a[3] != 1)):
            self.fail(n, "elu with scale")
        self.emit(n, ["F.elu(", self.ref(a[0]), ", alpha=", _num(float(a[1] if len(a) > 1 else 1.0)), ")"])

    def op_softplus(self, n, a, kw, o):
        self.emit(n, ["F.softplus(", self.ref(a[0]), ", beta=", _num(a[1] if len(a) > 1 else 1), ", threshold=",
                      _num(a[2] if len(a) > 2 else 20), ")"])

    def op_clamp(self, n, a, kw, o):
        lo = a[1] if len(a) > 1 else kw.get("min")
        hi = a[2] if len(a) > 2 else kw.get("max")
        self.emit(n, ["torch.clamp(", self.ref(a[0]), ", min=", _num(lo), ", max=", _num(hi), ")"])

    def op_clamp_min(self, n, a, kw, o):
        self.emit(n, ["torch.clamp_min(", self.ref(a[0]), ", ", _num(a[1]), ")"])

    def op_clamp_max(self, n, a, kw, o):
        self.emit(n, ["torch.clamp_max(", self.ref(a[0]), ", ", _num(a[1]), ")"])

    def op_where(self, n, a, kw, o):
        self.emit(n, ["torch.where(", self.operand(a[0]), ", ", self.operand(a[1]), ", ", self.operand(a[2]), ")"])

    def op_masked_fill(self, n, a, kw, o):
        self.emit(n, ["torch.where(", self.ref(a[1]), ", ", self.operand(a[2]), ", ", self.ref(a[0]), ")"])

    def op_maximum(self, n, a, kw, o):
        self.emit(n, ["torch.maximum(", self.ref(a[0]), ", ", self.ref(a[1]), ")"])

    def op_minimum(self, n, a, kw, o):
        self.emit(n, ["torch.minimum(", self.ref(a[0]), ", ", self.ref(a[1]), ")"])

    def _dims(self, d):
        return _seq([[Lit(x)] for x in d]) if isinstance(d, (list, tuple)) else [Lit(d)]

    def _reduce(self, n, fn, a, kw):
        x = self.ref(a[0])
        dim = a[1] if len(a) > 1 else kw.get("dim")
        keep = a[2] if len(a) > 2 else kw.get("keepdim", False)
        if kw.get("dtype") is not None:
            self.fail(n, f"{fn} with dtype")
        if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
            self.emit(n, [f"torch.{fn}(", x, ")"])
        else:
            self.emit(n, [f"torch.{fn}(", x, ", dim=", self._dims(dim), ", keepdim=", repr(bool(keep)), ")"])

    def op_mean(self, n, a, kw, o):
        self._reduce(n, "mean", a, kw)

    def op_sum(self, n, a, kw, o):
        self._reduce(n, "sum", a, kw)

    def op_amax(self, n, a, kw, o):
        self._reduce(n, "amax", a, kw)

    def op_amin(self, n, a, kw, o):
        self._reduce(n, "amin", a, kw)

    def op_logsumexp(self, n, a, kw, o):
        self._reduce(n, "logsumexp", a, kw)

    def op_max(self, n, a, kw, o):
        if o == "default":
            self.emit(n, ["torch.max(", self.ref(a[0]), ")"])
        elif o == "dim":
            keep = a[2] if len(a) > 2 else False
            x = self.ref(a[0])
            self.stmts.append([n.name + "_values", [f"torch.amax(", x, ", dim=", Lit(a[1]), ", keepdim=", repr(keep), ")"],
                               [x]])
            self.stmts.append([n.name + "_indices", [f"torch.argmax(", x, ", dim=", Lit(a[1]), ", keepdim=", repr(keep),
                                                     ")"], [x]])
            self.val[n.name] = ("tuple", [n.name + "_values", n.name + "_indices"])
            self.shape_key[n.name + "_values"] = (n.name, 0)
            self.shape_key[n.name + "_indices"] = (n.name, 1)
        else:
            self.emit(n, ["torch.maximum(", self.ref(a[0]), ", ", self.ref(a[1]), ")"])

    def op_norm(self, n, a, kw, o):
        p = a[1] if len(a) > 1 else 2
        dim = a[2] if len(a) > 2 else None
        keep = a[3] if len(a) > 3 else False
        self.emit(n, ["torch.norm(", self.ref(a[0]), ", p=", _num(p), ", dim=", self._dims(dim) if dim is not None else
                      "None", ", keepdim=", repr(keep), ")"])

    def op_linalg_vector_norm(self, n, a, kw, o):
        p = a[1] if len(a) > 1 else kw.get("ord", 2)
        dim = a[2] if len(a) > 2 else kw.get("dim")
        keep = a[3] if len(a) > 3 else kw.get("keepdim", False)
        self.emit(n, ["torch.norm(", self.ref(a[0]), ", p=", _num(float(p)), ", dim=",
                      self._dims(dim) if dim is not None else "None", ", keepdim=", repr(keep), ")"])

    def op__softmax(self, n, a, kw, o):
        self.emit(n, ["torch.softmax(", self.ref(a[0]), ", dim=", Lit(a[1]), ")"])

    def op__log_softmax(self, n, a, kw, o):
        self.emit(n, ["torch.log_softmax(", self.ref(a[0]), ", dim=", Lit(a[1]), ")"])

    def op_cumsum(self, n, a, kw, o):
        self.emit(n, ["torch.cumsum(", self.ref(a[0]), ", dim=", Lit(a[1]), ")"])

    def op_tril(self, n, a, kw, o):
        self.emit(n, ["torch.tril(", self.ref(a[0]), ", ", Lit(a[1] if len(a) > 1 else 0), ")"])

    def op_triu(self, n, a, kw, o):
        self.emit(n, ["torch.triu(", self.ref(a[0]), ", ", Lit(a[1] if len(a) > 1 else 0), ")"])

    # views and layout
    def op_view(self, n, a, kw, o):
        self.emit(n, [self.ref(a[0]), ".reshape(", ("view", a[0].name), _seq([[Lit(s)] for s in a[1]]), ")"])

    op__unsafe_view = op_view
    op_reshape = op_view

    def op__reshape_alias(self, n, a, kw, o):
        self.op_view(n, a[:2], kw, o)

    def op_permute(self, n, a, kw, o):
        self.emit(n, [self.ref(a[0]), ".permute(", self._dims(a[1]), ")"])

    def op_transpose(self, n, a, kw, o):
        self.emit(n, [self.ref(a[0]), ".transpose(", Lit(a[1]), ", ", Lit(a[2]), ")"])

    def op_expand(self, n, a, kw, o):
        src = self._shape(a[0])
        sizes = list(a[1])
        off = len(sizes) - len(src)
        parts = []
        for i, s in enumerate(sizes):
            if i >= off and s != -1 and src[i - off] == s:
                parts.append(["-1"])
            else:
                parts.append([Lit(s)])
        self.emit(n, [self.ref(a[0]), ".expand(", ("shape",), _seq(parts), ")"])

    def op_unsqueeze(self, n, a, kw, o):
        self.emit(n, [self.ref(a[0]), ".unsqueeze(", Lit(a[1]), ")"])

    def op_squeeze(self, n, a, kw, o):
        if len(a) > 1:
            self.emit(n, [self.ref(a[0]), ".squeeze(", Lit(a[1]), ")"])
        else:
            self.emit(n, [self.ref(a[0]), ".squeeze()"])

    def op_slice(self, n, a, kw, o):
        x = a[0]
        dim = a[1] if len(a) > 1 else 0
        start = a[2] if len(a) > 2 else None
        end = a[3] if len(a) > 3 else None
        step = a[4] if len(a) > 4 else 1
        size = self._shape(x)[dim]
        start = start or 0
        if end is None or end >= size:
            end = None
        if start == 0 and end is None and step == 1:
            self.val[n.name] = self.ref(x)
            return
        idx = [":"] * dim + [[Lit(start) if start else "", ":", Lit(end) if end is not None else "",
                              [":", Lit(step)] if step != 1 else ""]]
        self.emit(n, [self.ref(x), "[", *sum(([p, ", "] for p in idx[:-1]), []), idx[-1], "]"])

    def op_select(self, n, a, kw, o):
        x, dim, i = a
        if i < 0:
            i += self._shape(x)[dim]
        self.emit(n, [self.ref(x), ".select(", Lit(dim), ", ", Lit(i), ")"])

    def op_unbind(self, n, a, kw, o):
        self.val[n.name] = ("unbind", self.ref(a[0]), a[1] if len(a) > 1 else 0)

    def op_split(self, n, a, kw, o):
        x, size = a[0], a[1]
        dim = a[2] if len(a) > 2 else 0
        total = self._shape(x)[dim]
        starts = list(range(0, total, size)) + [total]
        self.val[n.name] = ("split", self.ref(x), dim, starts)

    op_unsafe_split = op_split

    def op_split_with_sizes(self, n, a, kw, o):
        x, sizes = a[0], a[1]
        dim = a[2] if len(a) > 2 else 0
        starts = [0]
        for s in sizes:
            starts.append(starts[-1] + s)
        self.val[n.name] = ("split", self.ref(x), dim, starts)

    op_unsafe_split_with_sizes = op_split_with_sizes

    def op_cat(self, n, a, kw, o):
        dim = a[1] if len(a) > 1 else 0
        self.emit(n, ["torch.cat(", _seq([[self.ref(t)] for t in a[0]]), ", dim=", Lit(dim), ")"])

    def op_stack(self, n, a, kw, o):
        dim = a[1] if len(a) > 1 else 0
        self.emit(n, ["torch.stack(", _seq([[self.ref(t)] for t in a[0]]), ", dim=", Lit(dim), ")"])

    def op_flip(self, n, a, kw, o):
        self.emit(n, [self.ref(a[0]), ".flip(", self._dims(a[1]), ")"])

    def op__to_copy(self, n, a, kw, o):
        dt = kw.get("dtype")
        if dt is None:
            self.val[n.name] = self.ref(a[0])
        else:
            self.emit(n, [self.ref(a[0]), ".to(", DTYPES[str(dt)], ")"])

    # factories
    def _factory(self, n, sizes, value, dtype):
        dt = DTYPES.get(str(dtype) if dtype is not None else "torch.float32")
        self.emit(n, ["torch.full(", ("shape",), _seq([[Lit(s)] for s in sizes]), ", ", _num(value), ", dtype=", dt, ")"])

    def op_zeros(self, n, a, kw, o):
        self._factory(n, a[0], 0.0 if kw.get("dtype") in (None, ) or "float" in str(kw.get("dtype")) else 0,
                      kw.get("dtype"))

    def op_ones(self, n, a, kw, o):
        self._factory(n, a[0], 1.0 if kw.get("dtype") is None or "float" in str(kw.get("dtype")) else
                      (True if "bool" in str(kw.get("dtype")) else 1), kw.get("dtype"))

    def op_full(self, n, a, kw, o):
        self._factory(n, a[0], a[1], kw.get("dtype"))

    def op_scalar_tensor(self, n, a, kw, o):
        self.emit(n, ["torch.tensor(", _num(a[0]), ", dtype=", DTYPES[str(kw.get("dtype", "torch.float32"))], ")"])

    def op_zeros_like(self, n, a, kw, o):
        self.emit(n, ["torch.zeros_like(", self.ref(a[0]), ")"])

    def op_ones_like(self, n, a, kw, o):
        self.emit(n, ["torch.ones_like(", self.ref(a[0]), ")"])

    def op_new_zeros(self, n, a, kw, o):
        self._factory(n, a[1], 0.0, kw.get("dtype") or self.tr.gm and None)

    def op_fill(self, n, a, kw, o):
        self.emit(n, ["torch.full_like(", self.ref(a[0]), ", ", _num(a[1]), ")"])

    # pooling
    def op_max_pool2d_with_indices(self, n, a, kw, o, d=2):
        x, k = a[0], a[1]
        s = a[2] if len(a) > 2 and a[2] else k
        p = a[3] if len(a) > 3 else [0] * d
        dil = a[4] if len(a) > 4 else [1] * d
        ceil = a[5] if len(a) > 5 else False
        self.emit(n, [f"F.max_pool{d}d(", self.ref(x), ", kernel_size=", self._dims(k), ", stride=", self._dims(s),
                      ", padding=", self._dims(p), ", dilation=", self._dims(dil), ", ceil_mode=", repr(ceil), ")"])
        self.val[n.name] = ("tuple", [n.name, None])
        self.shape_key[n.name] = (n.name, 0)

    def op_max_pool3d_with_indices(self, n, a, kw, o):
        self.op_max_pool2d_with_indices(n, a, kw, o, 3)

    def op_max_pool2d(self, n, a, kw, o):
        self.op_max_pool2d_with_indices(n, a, kw, o)
        self.val[n.name] = n.name

    def op_avg_pool2d(self, n, a, kw, o, d=2):
        x, k = a[0], a[1]
        s = a[2] if len(a) > 2 and a[2] else k
        p = a[3] if len(a) > 3 else [0] * d
        ceil = a[4] if len(a) > 4 else False
        cip = a[5] if len(a) > 5 else True
        div = a[6] if len(a) > 6 else None
        self.emit(n, [f"F.avg_pool{d}d(", self.ref(x), ", kernel_size=", self._dims(k), ", stride=", self._dims(s),
                      ", padding=", self._dims(p), ", ceil_mode=", repr(ceil), ", count_include_pad=", repr(cip),
                      ", divisor_override=", _num(div), ")"])

    def op_avg_pool3d(self, n, a, kw, o):
        self.op_avg_pool2d(n, a, kw, o, 3)

    def op__adaptive_avg_pool2d(self, n, a, kw, o, d=2):
        self.emit(n, [f"F.adaptive_avg_pool{d}d(", self.ref(a[0]), ", ", self._dims(a[1]), ")"])

    def op__adaptive_avg_pool3d(self, n, a, kw, o):
        self.op__adaptive_avg_pool2d(n, a, kw, o, 3)

    def op_adaptive_max_pool2d(self, n, a, kw, o):
        self.emit(n, ["F.adaptive_max_pool2d(", self.ref(a[0]), ", ", self._dims(a[1]), ")"])
        self.val[n.name] = ("tuple", [n.name, None])
        self.shape_key[n.name] = (n.name, 0)


# ---------------------------------------------------------------------------------------------- sizes


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
    if idx is None:
        return sh if not sh or isinstance(sh[0], int) else None
    return sh[idx] if sh and isinstance(sh[0], list) else (sh if idx == 0 else None)


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
                    raise CaptureError(f"a size that varies with the workload ({vals}) has no expression in the "
                                       f"shapes of `{name}`'s operands")
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


# ---------------------------------------------------------------------------------------------- the contract


def _names_in(fn_node) -> set:
    return {n.id for n in ast.walk(fn_node) if isinstance(n, ast.Name)}


def data_axes(tree, consts: dict) -> list:
    """Module constants that size get_inputs()'s tensors (directly or through other constants)."""
    fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "get_inputs"), None)
    if fn is None:
        raise CaptureError("no get_inputs()")
    init_fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "get_init_inputs"), None)
    init_names = _names_in(init_fn) if init_fn is not None else set()
    deps = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                for nm in (x.id for x in ast.walk(t) if isinstance(x, ast.Name)):
                    deps.setdefault(nm, set()).update(_names_in(stmt.value))
    seen, stack = set(), list(_names_in(fn))
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        stack += list(deps.get(x, ()))
    return [n for n in consts if consts[n] > 1 and (n in seen or n in init_names)]


def _small_value(name: str, v: int) -> int:
    if "batch" in name.lower():
        return min(v, 2)
    return max(MIN_SIZE, min(v, max(8, v // 4)))


def _forward_names(tree) -> list:
    for s in tree.body:
        if isinstance(s, ast.ClassDef) and s.name == "Model":
            for f in s.body:
                if isinstance(f, ast.FunctionDef) and f.name == "forward":
                    return [a.arg for a in f.args.args][1:]
    return []


@dataclass
class Captured:
    contract: dict
    traces: list
    emitters: list
    var: list
    small: dict
    full: dict
    lines: list = field(default_factory=list)


def _attempt(path, source, full, var, small, fwd_names, seed):
    env = {**full, **{a: small[a] for a in var}}
    tr0 = trace(path, source, env, seed)
    em0 = Emitter(tr0, fwd_names).run()
    trs, ems = [tr0], [em0]
    bad = []
    for a in var:
        env_a = dict(env)
        env_a[a] = small[a] * 2
        try:
            tr = trace(path, source, env_a, seed)
            em = Emitter(tr, fwd_names).run()
        except CaptureError:
            bad.append(a)
            continue
        if template(em) != template(em0):
            bad.append(a)
            continue
        trs.append(tr)
        ems.append(em)
    return trs, ems, bad


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
            return None, [a]
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


def capture(path: str, source: str, name: str, seed: int = 0) -> Captured:
    import torch  # noqa: F401

    tree = ast.parse(source)
    consts = module_constants(tree)
    fwd_names = _forward_names(tree)
    full = dict(consts)
    cand = data_axes(tree, consts)
    small = {a: _small_value(a, full[a]) for a in cand}
    var = [a for a in cand if small[a] < full[a]]
    tried = set()
    for _ in range(len(cand) + 40):
        try:
            trs, ems, bad = _attempt(path, source, full, var, small, fwd_names, seed)
        except CaptureError as e:
            # a shrunk size the model cannot take: restore the axes one at a time
            culprit = None
            for a in var:
                try:
                    trace(path, source, {**full, **{b: small[b] for b in var if b != a}}, seed)
                    culprit = a
                    break
                except CaptureError:
                    continue
            if culprit is None:
                if not var:
                    raise
                var = []
            else:
                var = [a for a in var if a != culprit]
            continue
        if bad:
            var = [a for a in var if a not in bad]
            continue
        # shapes of inputs and outputs over the axes
        drop = []
        em0 = ems[0]
        shapes = {}
        for nm in [i[0] for i in em0.inputs] + list(em0.outputs):
            per = [shape_of(e, t, nm) for e, t in zip(ems, trs)]
            if any(p is None for p in per):
                raise CaptureError(f"internal: no shape for {nm}")
            entry = []
            for d in range(len(per[0])):
                expr, why = _fit([p[d] for p in per], var, small)
                drop += why
                entry.append(expr)
            shapes[nm] = entry
        if drop:
            var = [a for a in var if a not in drop]
            continue
        body = render(ems, trs)
        cost = _cost(trs[0], em0)
        if cost[0] > CPU_BYTES or cost[1] > CPU_FLOPS:
            shrinkable = sorted((a for a in var if small[a] // 2 >= MIN_SIZE and a not in tried), key=lambda a: -small[a])
            if shrinkable:
                a = shrinkable[0]
                tried.add(a) if small[a] // 2 < MIN_SIZE * 2 else None
                prev = dict(small)
                small[a] //= 2
                try:
                    _attempt(path, source, full, var, small, fwd_names, seed)[2] and (_ for _ in ()).throw(CaptureError(""))
                    continue
                except CaptureError:
                    small = prev
                    tried.add(a)
                    continue
        break
    else:
        raise CaptureError("internal: the axes did not settle")
    smallenv = {a: small[a] for a in var}
    c = _contract(path, tree, name, trs[0], em0, body, shapes, var, full, smallenv)
    return Captured(c, trs, ems, var, smallenv, full)


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


def _contract(path, tree, name, tr, em, body, shapes, var, full, small) -> dict:
    from .kb_agree import _init_mismatch

    names = {p: nm for nm, kind, p, _ in em.inputs if kind != "input"}
    tensors = {}
    for nm, kind, p, node in em.inputs:
        tensors[nm] = tr.inputs[int(p)] if kind == "input" else tr.consts_tensor(p)
    inputs, notes = {}, [f"Imported from KernelBench's {os.path.basename(path)} by `kevo import kernelbench` through "
                         "the capture path: the model traced under Python torch (make_fx) to ATen ops, written one "
                         "statement per op; parameters and buffers are inputs named after their module path."]
    live = _live(em)
    used = set()
    for _, parts, deps in em.stmts:
        pass
    for st in em.stmts:
        if st[0] in live:
            used.update(st[2])
    used.update(em.outputs)
    for nm, kind, p, node in em.inputs:
        if nm not in used:
            continue
        t = tensors[nm]
        init = _module_init(tr.model, p, t, names) if kind == "param" else None
        note = None
        if init is not None and _init_mismatch(t, init, {n: tensors.get(n) for n in tensors}):
            init = None
        if init is None:
            init, note = _stats_init(t)
        entry = {"shape": shapes[nm], "dtype": str(t.dtype).replace("torch.", "")}
        if init:
            entry["init"] = init
        inputs[nm] = entry
        if note:
            notes.append(f"{nm}{'' if kind == 'input' else f' (self.{p})'}: {note}")
    outs = em.outputs
    out_names = ["out"] if len(outs) == 1 else [f"out{i}" for i in range(len(outs))]
    outputs = {}
    for on, nm in zip(out_names, outs):
        outputs[on] = {"shape": shapes[nm], "dtype": em.dtype_of(nm)}
    if "batch_norm" in "\n".join(body):
        notes.append("Batch normalisation in training mode, as KernelBench runs the model (it never calls .eval()): "
                     "statistics of each batch; the running statistics it would update are not outputs.")
    if var:
        notes.append("Workload 0 is the problem's own sizes; workload 1 is a small workload of the same graph, "
                     "checked on the CPU by `kevo check`.")
    run_args = [nm for nm in inputs]
    ref = "\n".join(["import torch", "import torch.nn.functional as F", "", "",
                     f"def run({', '.join(run_args)}):"] + body) + "\n"
    doc = ""
    for s in tree.body:
        if isinstance(s, ast.ClassDef) and s.name == "Model":
            doc = (ast.get_docstring(s) or "").strip().splitlines()
    fullenv = {a: full[a] for a in var}
    # sizes of the full workload must be whole
    return {
        "name": name,
        "description": (doc[0] if doc else f"KernelBench {os.path.splitext(os.path.basename(path))[0]}").strip(),
        "axes": {a: {"type": "var"} for a in var},
        "inputs": inputs,
        "outputs": outputs,
        "reference": ref,
        "workloads": [fullenv, small] if var else [{}],
        "tolerance": {"atol": 1e-4, "rtol": 1e-4},
        "notes": notes,
    }


def agree(cap: Captured, path: str, source: str, seed: int = 0) -> tuple:
    """Runs the problem's Model and the contract's run() on the small workload with the same
    inputs and parameter tensors: (ok, lines)."""
    import torch
    import torch.nn.functional as F  # noqa: F401

    env = {**cap.full, **cap.small}
    ns = load(path, source, env)
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
