"""The capture path, emitting: one traced ATen graph as statements of the reference language,
sizes kept as `Lit` so that those varying between traces can be resolved later
(kb_capture_sizes.render)."""

from __future__ import annotations

import math
import re

from .kb_capture_trace import CaptureError, Trace


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
            return "math.inf" if v > 0 else "-math.inf"
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
                self._get_attr(n)
            elif n.op == "output":
                outs = n.args[0]
                outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
                self.outputs = [self.ref(o) for o in outs]
            elif n.op != "call_function":
                raise CaptureError(f"internal: node {n.op}")
            else:
                try:
                    self.node(n)
                except CaptureError as e:
                    self._refused(n, e)
        return self

    def _get_attr(self, n):
        kind, p, t = self.tr.consts[n.target]
        c = self.constant(n, t, kind)
        if c is not None:
            self.val[n.name] = c
        else:
            self.val[n.name] = self.add_input(("const", p), p.replace(".", "_"), kind, p, n.name)

    def _refused(self, n, e):
        """An op written as a failure: refused only if the output needs it (dead ops: batch norm's
        `empty`, its running-statistics updates)."""
        deps = []
        for a in list(n.args) + list(n.kwargs.values()):
            for x in (a if isinstance(a, (list, tuple)) else [a]):
                if hasattr(x, "name") and isinstance(self.val.get(x.name), str):
                    deps.append(self.val[x.name])
        self.stmts.append([n.name, [("fail", str(e))], deps])
        self.val[n.name] = n.name
        self.poison.add(n.name)

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
        tgt = n.target
        if tgt is __import__("operator").getitem:
            self._getitem(n)
            return
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

    def _getitem(self, n):
        """An element of an op's tuple: a batch norm's output, a split's part."""
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
            self.stmts.append([n.name + "_values", ["torch.amax(", x, ", dim=", Lit(a[1]), ", keepdim=", repr(keep), ")"],
                               [x]])
            self.stmts.append([n.name + "_indices", ["torch.argmax(", x, ", dim=", Lit(a[1]), ", keepdim=", repr(keep),
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

    def op_unfold(self, n, a, kw, o):
        """Windows that tile the dim (step == size): a reshape splitting it, the window moved last."""
        x, dim, size, step = a
        s = list(self._shape(x))
        d = dim % len(s)
        if step != size or s[d] % size:
            self.fail(n, "unfold with overlapping or partial windows")
        xr, name = self.ref(x), n.name + "_windows"
        shape = s[:d] + [s[d] // size, size] + s[d + 1:]
        self.stmts.append([name, [xr, ".reshape(", ("view", x.name), _seq([[Lit(v)] for v in shape]), ")"], [xr]])
        perm = [i for i in range(len(shape)) if i != d + 1] + [d + 1]
        self.emit(n, [name, ".permute(", self._dims(perm), ")"])

    def op_copy(self, n, a, kw, o):
        """`t.copy_(src)` into a whole tensor of src's shape: later reads see src."""
        dst, src = a[0], a[1]
        if self._shape(dst) != self._shape(src):
            self.fail(n, "a copy_ that broadcasts")
        self.val[n.name] = self.ref(src)

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
