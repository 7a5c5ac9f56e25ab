"""Model.forward as a contract's reference: each statement evaluated on abstract tensors (shapes
checked in every workload) and re-emitted with modules as functional calls, parameters as run()'s
arguments and the model's constants as literals."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from .kb_problem import Instance, ModuleSpec, ParamSpec
from .nn_modules import KINDS, check_rank
from .pyeval import DTYPES, NUM_OPS, SIZE_OPS, Ref
from .shapecheck import T, Checker, Device, TorchDtype, Untranslatable
from .symdim import Dim, is_size, mul
from .torch_rules import RULES, binary, indexed, numel

RESERVED = {"torch", "F", "math", "nn", "run", "self"}
OPERATOR_RULES = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floor_divide",
                  ast.Mod: "remainder", ast.Pow: "pow"}
COMPARE_RULES = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
FLOP_RULES = {"linear", "matmul", "mm", "bmm", "einsum", "scaled_dot_product_attention", "conv1d", "conv2d", "conv3d",
              "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}


@dataclass
class V:
    """A value of forward(): its abstract value and the reference's expression for it."""

    abs: object
    node: ast.expr | None


@dataclass
class RunInput:
    name: str        # run()'s parameter
    tensor: T        # shape and dtype (a DistTensor for drawn ones)
    source: str      # "input:<forward arg>" or "param:<attr path>" (conv.weight)
    init: dict
    notes: list


def literal(value, ck: Checker) -> ast.expr:
    """A value of the model (a constant, a module's argument) written into the reference."""
    if isinstance(value, Dim):
        ck.const_int(value, "a size written into the reference")
    if value is None or isinstance(value, (bool, str)):
        return ast.Constant(value)
    if isinstance(value, int):
        return ast.Constant(int(value))
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            return ast.parse(f"float('{value}')", mode="eval").body
        return ast.Constant(value)
    if isinstance(value, (tuple, list)):
        elts = [literal(v, ck) for v in value]
        return ast.Tuple(elts, ast.Load()) if isinstance(value, tuple) else ast.List(elts, ast.Load())
    if isinstance(value, TorchDtype):
        return ast.parse(f"torch.{value.name}", mode="eval").body
    raise Untranslatable(f"the value {value!r} cannot be written into the reference")


class Forward:
    def __init__(self, inst: Instance, ck: Checker, forward_fn: ast.FunctionDef, aliases: dict):
        self.inst, self.ck, self.fn, self.aliases = inst, ck, forward_fn, aliases
        self.env: dict = {}
        self.body: list = []
        self.run_inputs: list = []
        self.params: dict = {}       # attr path -> RunInput (declared)
        self.used: list = []         # attr paths in first-use order
        self.flops = 0
        self.uses_math = False
        self.notes: list = []
        self._name_params()

    # ---- naming
    def _name_params(self):
        taken = set(RESERVED) | {n.id for n in ast.walk(self.fn) if isinstance(n, ast.Name)}
        taken |= {a.arg for a in self.fn.args.args}

        def fresh(name):
            while name in taken:
                name += "_p"
            taken.add(name)
            return name

        for name, value in self.inst.inputs:
            if isinstance(value, T):
                self.run_inputs.append(RunInput(name, value, f"input:{name}", value.init, _approx(value)))
                self.env[name] = V(value, ast.Name(name, ast.Load()))
            elif value is None or isinstance(value, (bool, int, float)) and not isinstance(value, Dim):
                self.env[name] = V(value, literal(value, self.ck))
                self.notes.append(f"forward() argument '{name}' is the Python number {value!r} in every call of "
                                  "get_inputs(): written into the reference as a constant")
            else:
                raise Untranslatable(f"get_inputs() gives '{name}' a {type(value).__name__}", self.fn)
        for attr, spec in self.inst.attrs.items():
            if isinstance(spec, ModuleSpec):
                names = {p.suffix: fresh(f"{attr}_{p.suffix}") for p in spec.params}
                for p in spec.params:
                    init = dict(p.init)
                    if "fan_in_of" in init:
                        init["fan_in_of"] = names[init["fan_in_of"]]
                    t = self.ck.tensor(p.shape, "float32", f"{attr}.{p.suffix}")
                    self.params[f"{attr}.{p.suffix}"] = RunInput(names[p.suffix], t, f"param:{attr}.{p.suffix}",
                                                                 init, [])
            elif isinstance(spec, ParamSpec):
                t = spec.tensor
                self.params[attr] = RunInput(fresh(attr), t, f"param:{attr}", t.init, _approx(t))

    def _param(self, path: str) -> V:
        ri = self.params[path]
        if path not in self.used:
            self.used.append(path)
        return V(T(list(ri.tensor.shape), ri.tensor.dtype), ast.Name(ri.name, ast.Load()))

    # ---- the function
    def translate(self) -> list:
        body = self.fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        outputs = self.block(body)
        if outputs is None:
            raise Untranslatable("forward() does not return", self.fn)
        order = {p: i for i, p in enumerate(self.params)}
        self.run_inputs += [self.params[p] for p in sorted(self.used, key=order.get)]
        unused = [p for p in self.params if p not in self.used]
        if unused:
            self.notes.append(f"parameters created but unused by forward(): {', '.join(unused)}")
        return outputs

    def block(self, stmts: list):
        for stmt in stmts:
            try:
                result = self.statement(stmt)
            except Untranslatable as e:
                if e.node is None:
                    e.node = stmt
                raise
            if result is not None:
                return result
        return None

    def statement(self, stmt):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            if stmt.value is None:
                return None
            v = self.eval(stmt.value)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                self.bind(t, v)
            self.body.append(ast.Assign([self._target_node(t) for t in targets], v.node, lineno=0))
            return None
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            node = ast.BinOp(ast.Name(stmt.target.id, ast.Load()), stmt.op, stmt.value)
            v = self.eval(node)
            self.bind(stmt.target, v)
            self.body.append(ast.Assign([ast.Name(stmt.target.id, ast.Store())], v.node, lineno=0))
            return None
        if isinstance(stmt, ast.Return):
            if stmt.value is None:
                raise Untranslatable("forward() returns nothing", stmt)
            v = self.eval(stmt.value)
            outs = list(v.abs) if isinstance(v.abs, (tuple, list)) else [v.abs]
            if not outs or not all(isinstance(o, T) for o in outs):
                raise Untranslatable("forward() must return tensors", stmt)
            self.body.append(ast.Return(v.node))
            return outs
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            return None
        if isinstance(stmt, ast.If):
            cond = self.eval(stmt.test).abs
            if isinstance(cond, (T, Dim)):
                raise Untranslatable("an `if` on a tensor or a symbolic size in forward()", stmt)
            return self.block(stmt.body if cond else stmt.orelse)
        kind = {ast.For: "a `for` loop", ast.While: "a `while` loop", ast.With: "a `with` block",
                ast.Expr: "an expression statement (an in-place update?)"}.get(type(stmt), f"a `{type(stmt).__name__}`")
        raise Untranslatable(f"{kind} in forward()", stmt)

    def bind(self, target, v: V):
        if isinstance(target, ast.Name):
            if isinstance(v.abs, (ModuleSpec, Ref)):
                raise Untranslatable("a module or function bound to a name", target)
            self.env[target.id] = V(v.abs, ast.Name(target.id, ast.Load()))
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = v.abs
            if not isinstance(items, (tuple, list)) or len(items) != len(target.elts):
                raise Untranslatable("unpacking a value that is not a tuple of the right length", target)
            for t, item in zip(target.elts, items):
                if not isinstance(t, ast.Name):
                    raise Untranslatable("nested unpacking", target)
                self.bind(t, V(item, None))
        else:
            raise Untranslatable(f"assigning to `{ast.unparse(target)}` (an in-place update)", target)

    def _target_node(self, t):
        if isinstance(t, ast.Name):
            return ast.Name(t.id, ast.Store())
        return ast.Tuple([ast.Name(e.id, ast.Store()) for e in t.elts], ast.Store())

    # ---- expressions
    def eval(self, node) -> V:
        try:
            return self._eval(node)
        except Untranslatable as e:
            if e.node is None:
                e.node = node
            raise

    def _eval(self, node) -> V:
        if isinstance(node, ast.Constant):
            return V(node.value, ast.Constant(node.value))
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            items, nodes = [], []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    v = self.eval(e.value)
                    if not isinstance(v.abs, (tuple, list)):
                        raise Untranslatable("unpacking something that is not a tuple", e)
                    items += list(v.abs)
                    nodes += [self.item_node(v, i) for i in range(len(v.abs))]
                else:
                    v = self.eval(e)
                    items.append(v.abs)
                    nodes.append(v.node)
            kind = tuple if isinstance(node, ast.Tuple) else list
            return V(kind(items), (ast.Tuple if kind is tuple else ast.List)(nodes, ast.Load()))
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.eval(node.left), self.eval(node.right))
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand)
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.USub):
                if isinstance(v.abs, T):
                    return V(self.apply("neg", [v.abs], {}), ast.UnaryOp(ast.USub(), v.node))
                if isinstance(v.abs, (int, float)) or isinstance(v.abs, Dim):
                    return V(mul(-1, v.abs) if is_size(v.abs) else -v.abs, ast.UnaryOp(ast.USub(), v.node))
            if isinstance(node.op, ast.Not) and not isinstance(v.abs, (T, Dim)):
                return V(not v.abs, ast.UnaryOp(ast.Not(), v.node))
            raise Untranslatable(f"`{ast.unparse(node)}`", node)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self.compare(node)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.IfExp):
            cond = self.eval(node.test).abs
            if isinstance(cond, (T, Dim)):
                raise Untranslatable("a conditional expression on a tensor or a symbolic size", node)
            return self.eval(node.body if cond else node.orelse)
        raise Untranslatable(f"the expression `{ast.unparse(node)}`", node)

    def item_node(self, v: V, i: int) -> ast.expr:
        if isinstance(v.node, (ast.Tuple, ast.List)):
            return v.node.elts[i]
        if v.node is None:
            return literal(v.abs[i], self.ck)
        return ast.Subscript(v.node, ast.Constant(i), ast.Load())

    def name(self, node: ast.Name) -> V:
        if node.id in self.env:
            return self.env[node.id]
        if node.id in self.aliases:
            return V(self.aliases[node.id], node)
        if node.id in self.inst.scope:
            value = self.inst.scope[node.id]
            if isinstance(value, Ref):
                return V(value, node)
            return V(value, literal(value, self.ck))
        if node.id in ("True", "False", "None"):
            return V({"True": True, "False": False, "None": None}[node.id], node)
        if node.id in ("len", "int", "float", "min", "max", "abs", "tuple", "list", "range", "round"):
            return V(Ref(f"builtins.{node.id}"), node)
        raise Untranslatable(f"the name '{node.id}' is not defined", node)

    def attribute(self, node: ast.Attribute) -> V:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            return self.self_attribute(node.attr, node)
        base = self.eval(node.value)
        if isinstance(base.abs, Ref):
            path = f"{base.abs.path}.{node.attr}"
            if base.abs.path == "torch" and node.attr in DTYPES:
                return V(TorchDtype(DTYPES[node.attr]), ast.parse(f"torch.{DTYPES[node.attr]}", mode="eval").body)
            if base.abs.path == "math" and node.attr in ("pi", "e", "inf", "tau"):
                self.uses_math = True
                return V(getattr(math, node.attr), ast.parse(f"math.{node.attr}", mode="eval").body)
            return V(Ref(path), None)
        x = base.abs
        if isinstance(x, T):
            if node.attr == "shape":
                return V(tuple(x.shape), ast.Attribute(base.node, "shape", ast.Load()))
            if node.attr == "ndim":
                return V(x.rank, ast.Attribute(base.node, "ndim", ast.Load()))
            if node.attr == "dtype":
                return V(TorchDtype(x.dtype), literal(TorchDtype(x.dtype), self.ck))
            if node.attr == "device":
                return V(Device(), None)
            if node.attr in ("T", "mT"):
                if node.attr == "T" and x.rank > 2:
                    result = self.apply("permute", [x] + list(reversed(range(x.rank))), {})
                else:
                    result = self.apply("transpose", [x, -2, -1], {}) if x.rank >= 2 else x
                return V(result, ast.Attribute(base.node, node.attr, ast.Load()))
            return V(Ref(f"<method {node.attr}>"), None)
        if isinstance(x, tuple) and node.attr in ("values", "indices"):
            k = 0 if node.attr == "values" else 1
            return V(x[k], ast.Subscript(base.node, ast.Constant(k), ast.Load()))
        raise Untranslatable(f"the attribute `{ast.unparse(node)}`", node)

    def self_attribute(self, attr: str, node) -> V:
        if attr == "training":
            return V(True, ast.Constant(True))
        if attr not in self.inst.attrs:
            raise Untranslatable(f"self.{attr} is not set in __init__", node)
        value = self.inst.attrs[attr]
        if isinstance(value, ModuleSpec):
            return V(value, None)
        if isinstance(value, ParamSpec):
            return self._param(attr)
        return V(value, literal(value, self.ck))

    def subscript(self, node: ast.Subscript) -> V:
        base = self.eval(node.value)
        index, index_node = self.index(node.slice)
        if isinstance(base.abs, T):
            return V(indexed(self.ck, base.abs, index), ast.Subscript(base.node, index_node, ast.Load()))
        if isinstance(base.abs, (tuple, list)):
            if isinstance(index, slice) or (isinstance(index, int) and not isinstance(index, bool)):
                if isinstance(index, Dim) or any(isinstance(b, Dim) for b in (
                        (index.start, index.stop, index.step) if isinstance(index, slice) else ())):
                    raise Untranslatable("indexing a tuple with a symbolic size", node)
                return V(base.abs[index], ast.Subscript(base.node, index_node, ast.Load()))
        raise Untranslatable(f"the subscript `{ast.unparse(node)}`", node)

    def index(self, node):
        if isinstance(node, ast.Slice):
            parts = [self.eval(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
            return (slice(*(p.abs if p else None for p in parts)),
                    ast.Slice(*(p.node if p else None for p in parts)))
        if isinstance(node, ast.Tuple):
            pairs = [self.index(e) for e in node.elts]
            return tuple(p[0] for p in pairs), ast.Tuple([p[1] for p in pairs], ast.Load())
        if isinstance(node, ast.Constant) and node.value is Ellipsis:
            return Ellipsis, node
        v = self.eval(node)
        return v.abs, v.node

    # ---- operators
    def binop(self, op, a: V, b: V) -> V:
        node = ast.BinOp(a.node, op, b.node)
        if isinstance(a.abs, T) or isinstance(b.abs, T):
            if isinstance(op, ast.MatMult):
                return V(self.apply("matmul", [a.abs, b.abs], {}), node)
            if type(op) not in OPERATOR_RULES:
                raise Untranslatable(f"the operator {type(op).__name__} on tensors")
            return V(binary(self.ck, a.abs, b.abs, OPERATOR_RULES[type(op)]), node)
        x, y = a.abs, b.abs
        if is_size(x) and is_size(y) and type(op) in SIZE_OPS:
            return V(SIZE_OPS[type(op)](x, y), node)
        if isinstance(x, Dim) or isinstance(y, Dim):
            x = self.ck.const_int(x, "a size in float arithmetic") if isinstance(x, Dim) else x
            y = self.ck.const_int(y, "a size in float arithmetic") if isinstance(y, Dim) else y
        if type(op) in NUM_OPS and isinstance(x, (int, float)) and isinstance(y, (int, float)):
            return V(NUM_OPS[type(op)](x, y), node)
        if isinstance(x, (tuple, list)) and isinstance(op, ast.Add):
            return V(x + y, node)
        raise Untranslatable(f"the operator {type(op).__name__} on {type(x).__name__} and {type(y).__name__}")

    def compare(self, node: ast.Compare) -> V:
        a, b = self.eval(node.left), self.eval(node.comparators[0])
        op = node.ops[0]
        out = ast.Compare(a.node, [op], [b.node])
        if isinstance(a.abs, T) or isinstance(b.abs, T):
            if type(op) not in COMPARE_RULES:
                raise Untranslatable(f"the comparison {type(op).__name__} on tensors", node)
            return V(binary(self.ck, a.abs, b.abs, COMPARE_RULES[type(op)]), out)
        x, y = a.abs, b.abs
        if isinstance(x, Dim) or isinstance(y, Dim):
            results = {COMPARE[type(op)](p, q) for p, q in zip(self.ck.values(x), self.ck.values(y))}
            if len(results) != 1:
                raise Untranslatable("a comparison of sizes that differs between workloads", node)
            return V(results.pop(), out)
        if type(op) in COMPARE:
            return V(COMPARE[type(op)](x, y), out)
        raise Untranslatable(f"`{ast.unparse(node)}`", node)

    # ---- calls
    def call(self, node: ast.Call) -> V:
        func = node.func
        if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "self"):
            base = self.eval(func.value)
            if isinstance(base.abs, T):
                args, kwargs = self.arguments(node)
                return self.method(base, func.attr, args, kwargs)
            target = self.attribute(func) if not isinstance(base.abs, Ref) else V(Ref(f"{base.abs.path}.{func.attr}"), None)
        else:
            target = self.eval(func)
        args, kwargs = self.arguments(node)
        if isinstance(target.abs, ModuleSpec):
            return self.module_call(target.abs, args, kwargs)
        if isinstance(target.abs, Ref):
            return self.function(target.abs.path, args, kwargs, node)
        raise Untranslatable(f"calling `{ast.unparse(func)}`", node)

    def arguments(self, node: ast.Call):
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.eval(a.value)
                if not isinstance(v.abs, (tuple, list)):
                    raise Untranslatable("*args of something that is not a tuple", a)
                args += [V(item, self.item_node(v, i)) for i, item in enumerate(v.abs)]
            else:
                args.append(self.eval(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                raise Untranslatable("**kwargs in a call", node)
            kwargs[k.arg] = self.eval(k.value)
        return args, kwargs

    def function(self, path: str, args: list, kwargs: dict, node) -> V:
        if path.startswith("builtins."):
            return self.builtin(path.split(".")[1], args, node)
        if path.startswith("math."):
            name = path.split(".")[1]
            values = [self.ck.const_int(a.abs, "math argument") if isinstance(a.abs, Dim) else a.abs for a in args]
            if not hasattr(math, name) or not all(isinstance(v, (int, float)) for v in values):
                raise Untranslatable(f"`{path}` on these arguments", node)
            self.uses_math = True
            return V(getattr(math, name)(*values), self.call_node(path, args, kwargs))
        if path.startswith("torch.nn.functional."):
            return self.apply_call("F." + path.split(".")[-1], path.split(".")[-1], args, kwargs, node)
        if path.startswith("torch.") and path.count(".") == 1:
            return self.apply_call(path, path.split(".")[1], args, kwargs, node)
        raise Untranslatable(f"calling `{path}`", node)

    def builtin(self, name: str, args: list, node) -> V:
        values = [a.abs for a in args]
        if name == "len" and len(values) == 1 and isinstance(values[0], (tuple, list)):
            return V(len(values[0]), self.call_node(name, args, {}))
        if name == "int" and len(values) == 1 and is_size(values[0]):
            return V(values[0], self.call_node(name, args, {}))
        if any(isinstance(v, (Dim, T)) for v in values):
            raise Untranslatable(f"{name}() of a tensor or a symbolic size", node)
        fn = {"int": int, "float": float, "min": min, "max": max, "abs": abs, "tuple": tuple, "list": list,
              "round": round}.get(name)
        if fn is None:
            raise Untranslatable(f"{name}() in forward()", node)
        return V(fn(*values), literal(fn(*values), self.ck))

    def method(self, base: V, name: str, args: list, kwargs: dict) -> V:
        x = base.abs
        node = ast.Call(ast.Attribute(base.node, name, ast.Load()), [a.node for a in args],
                        [ast.keyword(k, v.node) for k, v in kwargs.items()])
        if name == "size":
            d = (args[0].abs if args else kwargs["dim"].abs) if args or kwargs else None
            if d is None:
                return V(tuple(x.shape), node)
            return V(x.shape[d], node)
        if name in ("dim", "ndimension"):
            return V(x.rank, node)
        if name == "numel":
            return V(numel(x.shape), node)
        if name in ("item", "tolist", "numpy", "backward"):
            raise Untranslatable(f"x.{name}() leaves the tensor world")
        if name.endswith("_") and not name.endswith("__"):
            raise Untranslatable(f"the in-place method {name}()")
        if name == "type_as":
            return V(T(list(x.shape), args[0].abs.dtype), node)
        if name == "to" or name in ("cuda", "cpu"):
            kept = [a for a in args if not isinstance(a.abs, Device) and not isinstance(a.abs, str)]
            kw = {k: v for k, v in kwargs.items() if k not in ("device", "non_blocking", "copy")}
            if not kept and not kw:
                return base
            node = ast.Call(ast.Attribute(base.node, "to", ast.Load()), [a.node for a in kept],
                            [ast.keyword(k, v.node) for k, v in kw.items()])
            args, kwargs = kept, kw
            name = "to"
        result = self.apply(self.rule_name(name), [x] + [a.abs for a in args], {k: v.abs for k, v in kwargs.items()})
        return V(result, node)

    def rule_name(self, name: str) -> str:
        if name not in RULES:
            raise Untranslatable(f"no shape rule for `{name}` (the importer does not know it)")
        return name

    def apply_call(self, spelling: str, name: str, args: list, kwargs: dict, node) -> V:
        kwargs = {k: v for k, v in kwargs.items() if not isinstance(v.abs, Device) and k != "device"}
        if name == "dropout" or name.startswith("dropout") or name in ("alpha_dropout", "feature_alpha_dropout"):
            self.check_dropout(args, kwargs, node)
        result = self.apply(self.rule_name(name), [a.abs for a in args], {k: v.abs for k, v in kwargs.items()})
        return V(result, self.call_node(spelling, args, kwargs))

    def check_dropout(self, args, kwargs, node):
        p = args[1].abs if len(args) > 1 else kwargs["p"].abs if "p" in kwargs else 0.5
        training = args[2].abs if len(args) > 2 else kwargs["training"].abs if "training" in kwargs else True
        if training and p:
            raise Untranslatable(f"dropout with p={p} in training mode draws a random mask: no deterministic "
                                 "reference", node)

    def call_node(self, spelling: str, args: list, kwargs: dict) -> ast.Call:
        func = ast.parse(spelling, mode="eval").body
        return ast.Call(func, [a.node for a in args], [ast.keyword(k, v.node) for k, v in kwargs.items()])

    def apply(self, name: str, args: list, kwargs: dict):
        sig, fn = RULES[name]
        result = fn(self.ck, args, kwargs) if sig is None else fn(self.ck, sig.bind(args, kwargs, name))
        if name in FLOP_RULES:
            self.flops = self.flops + flops_of(name, sig.bind(args, kwargs, name) if sig else None, result)
        return result

    def module_call(self, spec: ModuleSpec, args: list, kwargs: dict) -> V:
        kind = KINDS[spec.kind]
        call = kind.call(self.ck, spec.args, [a.abs for a in args], {k: v.abs for k, v in kwargs.items()})
        if call.rule == "identity":
            return args[0]
        check_rank(spec.kind, args[0].abs.rank if isinstance(args[0].abs, T) else 0)
        inputs = iter(args)

        def value(v):
            if isinstance(v, str) and v == "INPUT":
                return next(inputs)
            if isinstance(v, str) and v.startswith("@"):
                return self._param(f"{spec.attr}.{v[1:]}")
            return V(v, literal(v, self.ck))

        cargs = [value(v) for v in call.args]
        ckwargs = {k: value(v) for k, v in call.kwargs.items()}
        return self.apply_call(call.fn, call.rule, cargs, ckwargs, spec.node)


def _approx(t) -> list:
    from .dist import DistTensor, approximation_note
    note = approximation_note(t) if isinstance(t, DistTensor) else None
    return [note] if note else []


COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
           ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
           ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b}


def flops_of(name: str, a, result):
    """Multiply-adds times two of the products and convolutions (for choosing the small workload)."""
    if name == "linear":
        return mul(2, mul(numel(result.shape), a.input.shape[-1]))
    if name in ("matmul", "mm", "bmm"):
        other = a.other if name == "matmul" else a.mat2
        k = other.shape[0] if other.rank == 1 else other.shape[-2]
        return mul(2, mul(numel(result.shape), k))
    if name.startswith("conv_transpose"):
        w = a.weight
        return mul(2, mul(numel(a.input.shape), numel(w.shape[1:])))
    if name.startswith("conv"):
        return mul(2, mul(numel(result.shape), numel(a.weight.shape[1:])))
    if name == "scaled_dot_product_attention":
        return mul(4, mul(numel(result.shape), a.key.shape[-2]))
    if name == "einsum":
        ops = a.operands
        return mul(2, mul(numel(result.shape), numel(ops[0].shape))) if ops else 0
    return 0
