"""Evaluates the Python of a problem file outside forward(): module constants, get_inputs(),
get_init_inputs() and __init__'s arguments, without running it. Sizes stay symbolic (Dims) and
drawn tensors carry their distributions (DistTensor)."""

from __future__ import annotations

import ast
import math
import operator

from .dist import DistTensor, affine, convert
from .shapecheck import T, Checker, TorchDtype, Untranslatable
from .symdim import Dim, add, floordiv, is_size, mod, mul, sub
from .torch_rules import CONVERSIONS, RULES

DTYPES = {"float32": "float32", "float": "float32", "float64": "float64", "double": "float64", "float16": "float16",
          "half": "float16", "bfloat16": "bfloat16", "int64": "int64", "long": "int64", "int32": "int32",
          "int": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool"}
SIZE_OPS = {ast.Add: add, ast.Sub: sub, ast.Mult: mul, ast.FloorDiv: floordiv, ast.Mod: mod}
NUM_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
DRAWS = {"rand": {"dist": "uniform", "low": 0.0, "high": 1.0}, "randn": {"dist": "normal", "mean": 0.0, "std": 1.0},
         "ones": {"dist": "ones"}, "zeros": {"dist": "zeros"}, "empty": {"dist": "zeros"}}
PASS_THROUGH = {"contiguous", "cuda", "cpu", "clone", "detach", "requires_grad_"}


class Ref:
    """A dotted name that is not a value (torch, torch.nn, nn.Conv2d, math.sqrt)."""

    def __init__(self, path: str):
        self.path = path

    def __repr__(self):
        return self.path


def module_aliases(tree: ast.Module) -> dict:
    """Names the file's imports bind: {'torch': Ref('torch'), 'F': Ref('torch.nn.functional'), ...}."""
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                names[(a.asname or a.name).split(".")[0]] = Ref(a.name if a.asname else a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                names[a.asname or a.name] = Ref(f"{node.module}.{a.name}")
    names.setdefault("torch", Ref("torch"))
    names.setdefault("math", Ref("math"))
    return names


class Evaluator:
    """Values of expressions and straight-line statements, in a scope of names."""

    def __init__(self, scope: dict, ck: Checker, source: str = ""):
        self.scope = scope
        self.ck = ck
        self.source = source

    # ---- statements
    def run_body(self, body: list):
        """Runs statements until a return; returns its value (None without one)."""
        for stmt in body:
            done, value = self.statement(stmt)
            if done:
                return value
        return None

    def statement(self, stmt: ast.stmt):
        try:
            return self._statement(stmt)
        except Untranslatable as e:
            if e.node is None:
                e.node = stmt
            raise

    def _statement(self, stmt):
        if isinstance(stmt, ast.Return):
            return True, self.eval(stmt.value) if stmt.value is not None else None
        if isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value)
            for target in stmt.targets:
                self.assign(target, value)
            return False, None
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value))
            return False, None
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            value = self.binop(stmt.op, self.eval(ast.Name(stmt.target.id, ast.Load())), self.eval(stmt.value), stmt)
            self.assign(stmt.target, value)
            return False, None
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return False, None  # a docstring
        if isinstance(stmt, ast.Expr):
            self.expression_statement(stmt.value)
            return False, None
        if isinstance(stmt, ast.Pass):
            return False, None
        if isinstance(stmt, ast.If):
            cond = self.eval(stmt.test)
            if not isinstance(cond, (bool, int, float, type(None), tuple, list, str)) or isinstance(cond, Dim):
                raise Untranslatable("an `if` whose condition is not known before running", stmt)
            return self.run_branch(stmt.body if cond else stmt.orelse)
        raise Untranslatable(f"a `{type(stmt).__name__}` statement", stmt)

    def run_branch(self, body):
        for s in body:
            done, value = self.statement(s)
            if done:
                return True, value
        return False, None

    def expression_statement(self, node):
        raise Untranslatable("an expression statement with effects", node)

    def assign(self, target, value):
        if isinstance(target, ast.Name):
            self.scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(value) if isinstance(value, (tuple, list)) else None
            if items is None or len(items) != len(target.elts):
                raise Untranslatable("unpacking a value that is not a tuple of the right length", target)
            for t, v in zip(target.elts, items):
                self.assign(t, v)
        else:
            self.assign_other(target, value)

    def assign_other(self, target, value):
        raise Untranslatable(f"assigning to {ast.unparse(target)}", target)

    # ---- expressions
    def eval(self, node):
        try:
            return self._eval(node)
        except Untranslatable as e:
            if e.node is None:
                e.node = node
            raise

    def _eval(self, node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            items = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    items.extend(self.eval(e.value))
                else:
                    items.append(self.eval(e))
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.eval(node.left), self.eval(node.right), node)
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand)
            if isinstance(node.op, ast.USub):
                return self.binop(ast.Mult(), -1, v, node) if not isinstance(v, bool) else -v
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Not):
                return not v
        if isinstance(node, ast.Attribute):
            return self.attribute(self.eval(node.value), node.attr, node)
        if isinstance(node, ast.Subscript):
            return self.subscript(self.eval(node.value), self.eval_index(node.slice), node)
        if isinstance(node, ast.Call):
            args, kwargs = self.call_args(node)
            return self.call(self.eval(node.func), args, kwargs, node)
        if isinstance(node, ast.IfExp):
            return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = self.eval(node.left), self.eval(node.comparators[0])
            if isinstance(a, (T, Dim)) or isinstance(b, (T, Dim)):
                raise Untranslatable("a comparison of tensors or symbolic sizes outside forward()", node)
            ops = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
                   ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not}
            if type(node.ops[0]) in ops:
                return ops[type(node.ops[0])](a, b)
        raise Untranslatable(f"the expression `{ast.unparse(node)}`", node)

    def eval_index(self, node):
        if isinstance(node, ast.Slice):
            return slice(*(self.eval(x) if x is not None else None for x in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.Tuple):
            return tuple(self.eval_index(e) for e in node.elts)
        return self.eval(node)

    def call_args(self, node: ast.Call):
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.eval(a.value))
            else:
                args.append(self.eval(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                raise Untranslatable("**kwargs in a call", node)
            kwargs[k.arg] = self.eval(k.value)
        return args, kwargs

    def name(self, node: ast.Name):
        if node.id in self.scope:
            return self.scope[node.id]
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        if node.id in ("int", "float", "tuple", "list", "len", "min", "max", "abs", "round", "range", "sum"):
            return Ref(f"builtins.{node.id}")
        raise Untranslatable(f"the name '{node.id}' is not defined here", node)

    def binop(self, op, a, b, node):
        if isinstance(a, DistTensor) or isinstance(b, DistTensor):
            return self.draw_binop(op, a, b, node)
        if isinstance(a, T) or isinstance(b, T):
            raise Untranslatable("tensor arithmetic outside forward()", node)
        if is_size(a) and is_size(b) and type(op) in SIZE_OPS and (isinstance(a, Dim) or isinstance(b, Dim)):
            return SIZE_OPS[type(op)](a, b)
        if isinstance(a, Dim) or isinstance(b, Dim):
            raise Untranslatable(f"'{ast.unparse(node)}' mixes a symbolic size with a non-integer", node)
        if isinstance(a, (tuple, list)) and isinstance(op, (ast.Add, ast.Mult)):
            return a + b if isinstance(op, ast.Add) else a * b
        if type(op) in NUM_OPS:
            return NUM_OPS[type(op)](a, b)
        raise Untranslatable(f"the operator in `{ast.unparse(node)}`", node)

    def draw_binop(self, op, a, b, node):
        text = ast.unparse(node)
        scalar = (int, float)
        if isinstance(a, DistTensor) and isinstance(b, scalar) and not isinstance(b, bool):
            table = {ast.Mult: (b, 0), ast.Div: (1 / b if b else 0, 0), ast.Add: (1, b), ast.Sub: (1, -b)}
            if type(op) in table:
                return affine(a, *table[type(op)], text)
        if isinstance(b, DistTensor) and isinstance(a, scalar) and not isinstance(a, bool):
            table = {ast.Mult: (a, 0), ast.Add: (1, a), ast.Sub: (-1, a)}
            if type(op) in table:
                return affine(b, *table[type(op)], text)
        first = a if isinstance(a, DistTensor) else b
        other = b if first is a else a
        shape = first.shape
        if isinstance(other, T):
            shape = self.ck.broadcast(first.shape, other.shape, text)
        init = _support(op, a, b) or first.init
        return first.with_(init, shape=shape,
                           note=text)

    def attribute(self, obj, attr, node):
        if isinstance(obj, Ref):
            path = f"{obj.path}.{attr}"
            if obj.path == "torch" and attr in DTYPES:
                return TorchDtype(DTYPES[attr])
            if obj.path == "math" and attr in ("pi", "e", "inf", "tau"):
                return getattr(math, attr)
            return Ref(path)
        if isinstance(obj, T):
            if attr == "shape":
                return tuple(obj.shape)
            if attr in ("T", "mT"):
                return self.draw_method(obj, "t" if obj.rank <= 2 else "permute", [], {}, node)
            if attr == "dtype":
                return TorchDtype(obj.dtype)
            if attr == "device":
                return None
            return Ref(f"<tensor>.{attr}")
        raise Untranslatable(f"the attribute '{attr}' of a {type(obj).__name__}", node)

    def subscript(self, obj, index, node):
        if isinstance(obj, (tuple, list)):
            if isinstance(index, (int, slice)) and not isinstance(index, (bool, Dim)):
                return obj[index]
        raise Untranslatable(f"the subscript `{ast.unparse(node)}`", node)

    # ---- calls
    def call(self, fn, args, kwargs, node):
        if isinstance(fn, Ref):
            return self.call_ref(fn.path, args, kwargs, node)
        raise Untranslatable(f"calling `{ast.unparse(node.func)}`", node)

    def call_ref(self, path: str, args, kwargs, node):
        if path.startswith("builtins."):
            return self.builtin(path.split(".", 1)[1], args, node)
        if path.startswith("math."):
            fn = getattr(math, path.split(".", 1)[1], None)
            if fn is None or any(isinstance(a, (Dim, T)) for a in args):
                raise Untranslatable(f"`{path}` on these arguments", node)
            return fn(*args)
        if path.startswith("torch.") and path.count(".") == 1:
            return self.torch_call(path.split(".")[1], args, kwargs, node)
        if path.startswith("<tensor>."):
            raise AssertionError("methods are bound in call()")
        raise Untranslatable(f"calling `{path}`", node)

    def builtin(self, name, args, node):
        if name == "len" and len(args) == 1 and isinstance(args[0], (tuple, list)):
            return len(args[0])
        if any(isinstance(a, (Dim, T)) for a in args):
            if name in ("int",) and is_size(args[0]):
                return args[0]
            raise Untranslatable(f"{name}() of a symbolic size or a tensor", node)
        return {"int": int, "float": float, "tuple": tuple, "list": list, "min": min, "max": max, "abs": abs,
                "round": round, "range": range, "sum": sum, "len": len}[name](*args)

    def torch_call(self, name, args, kwargs, node):
        if name in DRAWS or name in ("randint", "full", "tensor", "randperm", "arange"):
            return self.draw(name, args, kwargs, node)
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, T)]
        if tensors and isinstance(tensors[0], DistTensor):
            return self.draw_function(name, args, kwargs, node)
        raise Untranslatable(f"`torch.{name}` outside forward()", node)

    def draw(self, name, args, kwargs, node) -> DistTensor:
        dtype = kwargs.get("dtype")
        dtype = dtype.name if isinstance(dtype, TorchDtype) else None
        if name == "tensor":
            v = args[0] if args else kwargs.get("data")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(v, Dim):
                raise Untranslatable("torch.tensor of something other than a number", node)
            return DistTensor([], dtype or ("float32" if isinstance(v, float) else "int64"),
                              {"dist": "constant", "value": v})
        if name == "randint":
            sizes = args[-1] if args else kwargs.get("size")
            low, high = (0, args[0]) if len(args) == 2 else (args[0], args[1]) if len(args) == 3 else (
                kwargs.get("low", 0), kwargs.get("high"))
            low, high = self.ck.const_int(low, "randint's low"), self.ck.const_int(high, "randint's high")
            return DistTensor(self.size_list(sizes, node), dtype or "int64", {"dist": "randint", "low": low, "high": high})
        if name == "full":
            sizes, value = (args[0], args[1]) if len(args) >= 2 else (args[0], kwargs.get("fill_value"))
            return DistTensor(self.size_list(sizes, node), dtype or ("float32" if isinstance(value, float) else "int64"),
                              {"dist": "constant", "value": value})
        if name in ("randperm", "arange"):
            raise Untranslatable(f"torch.{name} inputs (kevo draws each element independently)", node)
        sizes = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else tuple(args)
        if "size" in kwargs:
            sizes = kwargs["size"]
        return DistTensor(self.size_list(sizes, node), dtype or "float32", dict(DRAWS[name]))

    def size_list(self, sizes, node) -> list:
        sizes = list(sizes) if isinstance(sizes, (tuple, list)) else [sizes]
        for s in sizes:
            if not is_size(s):
                raise Untranslatable(f"a size that is not an integer: {s!r}", node)
        return self.ck.tensor(sizes, what=ast.unparse(node)).shape

    def draw_method(self, x: DistTensor, name: str, args, kwargs, node):
        text = ast.unparse(node)
        if name in PASS_THROUGH or (name == "to" and not any(isinstance(a, TorchDtype) for a in args)
                                    and not isinstance(kwargs.get("dtype"), TorchDtype)):
            return x
        if name in CONVERSIONS:
            return convert(x, CONVERSIONS[name], text)
        if name == "to" or name == "type":
            dt = next((a for a in list(args) + [kwargs.get("dtype")] if isinstance(a, TorchDtype)), None)
            return convert(x, dt.name, text)
        if name in ("uniform_", "normal_") and not isinstance(x, Dim):
            if name == "uniform_":
                lo, hi = (list(args) + [kwargs.get("from", 0.0), kwargs.get("to", 1.0)])[:2] if args else (
                    kwargs.get("from", 0.0), kwargs.get("to", 1.0))
                return x.with_({"dist": "uniform", "low": lo, "high": hi})
            mean, std = (list(args) + [0.0, 1.0])[:2] if args else (kwargs.get("mean", 0.0), kwargs.get("std", 1.0))
            return x.with_({"dist": "normal", "mean": mean, "std": std})
        return self.draw_function(name, [x] + list(args), kwargs, node)

    def draw_function(self, name, args, kwargs, node):
        """A transformation kevo cannot draw: the shape follows torch, the values the first draw's."""
        first = next(a for a in list(args) + list(kwargs.values()) if isinstance(a, DistTensor))
        if name not in RULES:
            raise Untranslatable(f"`{name}` applied to a drawn tensor", node)
        sig, fn = RULES[name]
        result = fn(self.ck, args, kwargs) if sig is None else fn(self.ck, sig.bind(args, kwargs, name))
        if isinstance(result, tuple):
            raise Untranslatable(f"`{name}` returning several tensors in a draw", node)
        return first.with_(shape=result.shape, dtype=result.dtype,
                           note=ast.unparse(node))


def _describe(d: DistTensor) -> str:
    return _describe_init(d.init)


def _describe_init(init: dict) -> str:
    from .dist import describe
    return describe(init)


def _support(op, a, b) -> dict | None:
    """Uniform draws combined: a uniform over the range the combination covers."""
    if not (isinstance(a, DistTensor) and isinstance(b, DistTensor)):
        return None
    if a.init.get("dist") != "uniform" or b.init.get("dist") != "uniform":
        return None
    (l1, h1), (l2, h2) = (a.init["low"], a.init["high"]), (b.init["low"], b.init["high"])
    if isinstance(op, ast.Add):
        lo, hi = l1 + l2, h1 + h2
    elif isinstance(op, ast.Sub):
        lo, hi = l1 - h2, h1 - l2
    elif isinstance(op, ast.Mult) and min(l1, l2) >= 0:
        lo, hi = l1 * l2, h1 * h2
    else:
        return None
    return {"dist": "uniform", "low": lo, "high": hi}


class DrawEvaluator(Evaluator):
    """get_inputs() and parameter initialisers: method calls on drawn tensors are understood."""

    def _eval(self, node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            obj = self.eval(node.func.value)
            if isinstance(obj, DistTensor):
                args, kwargs = self.call_args(node)
                return self.draw_method(obj, node.func.attr, args, kwargs, node)
        return super()._eval(node)
