"""A KernelBench problem file read without running it: its module constants (the named sizes
become axes), get_init_inputs(), get_inputs() and Model.__init__'s modules and parameters."""

from __future__ import annotations

import ast
from collections import ChainMap
from dataclasses import dataclass, field

from .dist import DistTensor
from .nn_modules import KINDS
from .pyeval import DrawEvaluator, Evaluator, Ref, module_aliases
from .shapecheck import Checker, Untranslatable
from .signature import Bound
from .symdim import Dim, NamedInt


@dataclass
class Root:
    """A module constant written as an integer literal: a candidate axis."""

    name: str
    value: int
    whole: bool  # a whole constant (batch_size = 128), not an element of a tuple (input_shape = (4096,))


class AxisConfig:
    """Which roots are var axes (and which of them are merged into one) and which are fixed."""

    def __init__(self):
        self.parent: dict = {}
        self.pinned: set = set()

    def find(self, name: str) -> str:
        while self.parent.get(name, name) != name:
            name = self.parent[name]
        return name

    def union(self, a: str, b: str):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            keep, drop = sorted((ra, rb))
            self.parent[drop] = keep
            if drop in self.pinned:
                self.pinned.add(keep)

    def pin(self, name: str):
        self.pinned.add(self.find(name))

    def is_var(self, name: str) -> bool:
        return self.find(name) not in self.pinned


@dataclass
class ModuleSpec:
    attr: str
    kind: str
    args: Bound
    params: list  # of Param
    node: ast.AST


@dataclass
class ParamSpec:
    """A tensor attribute: nn.Parameter(draw), a registered buffer or a plain tensor."""

    attr: str
    tensor: DistTensor
    node: ast.AST


@dataclass
class Instance:
    """The problem evaluated for one axis configuration."""

    scope: dict                  # module constants
    inputs: list                 # (forward argument name, DistTensor or Python value) in order
    attrs: dict = field(default_factory=dict)  # self.X -> ModuleSpec | ParamSpec | value


class _Self:
    """`self` inside __init__."""


def _literal_only(node: ast.AST) -> bool:
    return not any(isinstance(n, (ast.Name, ast.Attribute, ast.Call)) for n in ast.walk(node))


class Problem:
    def __init__(self, path: str, source: str):
        self.path = path
        self.source = source
        try:
            self.tree = ast.parse(source, filename=path)
        except SyntaxError as e:
            raise Untranslatable(f"not valid Python: {e.msg}", ast.Pass(lineno=e.lineno or 1)) from None
        self.aliases = module_aliases(self.tree)
        self.functions = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}
        if "Model" not in classes:
            raise Untranslatable("no class Model", self.tree.body[0] if self.tree.body else None)
        self.model = classes["Model"]
        methods = {n.name: n for n in self.model.body if isinstance(n, ast.FunctionDef)}
        for needed, where in (("forward", methods), ("__init__", methods), ("get_inputs", self.functions),
                              ("get_init_inputs", self.functions)):
            if needed not in where:
                raise Untranslatable(f"no {needed}()", self.model)
        self.init_fn, self.forward_fn = methods["__init__"], methods["forward"]
        self.roots: dict = {}
        self._root_names: dict = {}  # id(node), target index -> root name, stable across evaluations

    @property
    def docstring(self) -> str:
        return (ast.get_docstring(self.model) or "").strip()

    # ---- module scope
    def module_scope(self, config: AxisConfig, ck: Checker) -> dict:
        scope = dict(self.aliases)
        ev = Evaluator(scope, ck)
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.ClassDef)):
                continue
            if isinstance(stmt, ast.FunctionDef):
                scope[stmt.name] = Ref(f"<function {stmt.name}>")
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue
            if isinstance(stmt, ast.If) and ast.unparse(stmt.test).replace("'", '"') == '__name__ == "__main__"':
                continue
            if not isinstance(stmt, ast.Assign):
                raise Untranslatable(f"a module-level `{type(stmt).__name__}` statement", stmt)
            value = ev.eval(stmt.value)
            if _literal_only(stmt.value):
                for i, target in enumerate(stmt.targets):
                    ev.assign(target, self._rooted(stmt, i, target, value, config))
            else:
                for target in stmt.targets:
                    ev.assign(target, value)
        return scope

    def _rooted(self, stmt, index, target, value, config):
        """The value with its named integers turned into axes (var or fixed, as config says)."""
        if isinstance(target, ast.Name):
            if isinstance(value, (tuple, list)):
                items = [self._root(stmt, (index, i), f"{target.id}_{i}", v, False, config) for i, v in enumerate(value)]
                return type(value)(items)
            return self._root(stmt, (index,), target.id, value, True, config)
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (tuple, list)) \
                and len(value) == len(target.elts):
            return type(value)(self._rooted(stmt, index, t, v, config) if isinstance(t, ast.Name) else v
                               for t, v in zip(target.elts, value))
        return value

    def _root(self, stmt, key, name, value, whole, config):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 1:
            return value
        key = (id(stmt), key, name)
        if key not in self._root_names:
            unique, k = name, 2
            while unique in self.roots:
                unique, k = f"{name}_{k}", k + 1
            self._root_names[key] = unique
            self.roots[unique] = Root(unique, value, whole)
        name = self._root_names[key]
        if config.is_var(name):
            return Dim.axis(config.find(name))
        return NamedInt(value, name) if whole else value

    def full_env(self, config: AxisConfig) -> dict:
        return {config.find(r.name): r.value for r in self.roots.values() if config.is_var(r.name)}

    # ---- the model and its inputs
    def instantiate(self, config: AxisConfig, ck: Checker) -> Instance:
        scope = self.module_scope(config, ck)
        init_args = Evaluator(dict(scope), ck).run_body(self.functions["get_init_inputs"].body)
        inputs = DrawEvaluator(dict(scope), ck).run_body(self.functions["get_inputs"].body)
        fn = self.functions["get_inputs"]
        if not isinstance(inputs, (list, tuple)):
            raise Untranslatable("get_inputs() must return a list", fn)
        if not isinstance(init_args, (list, tuple)):
            raise Untranslatable("get_init_inputs() must return a list", self.functions["get_init_inputs"])
        names = self._forward_params(len(inputs))
        inst = Instance(scope, list(zip(names, inputs)))
        InitEvaluator(scope, ck, inst).construct(self.init_fn, list(init_args))
        return inst

    def _forward_params(self, n: int) -> list:
        a = self.forward_fn.args
        if a.vararg or a.kwarg or a.kwonlyargs:
            raise Untranslatable("forward() with *args, **kwargs or keyword-only arguments", self.forward_fn)
        names = [p.arg for p in a.posonlyargs + a.args][1:]
        if len(names) != n:
            raise Untranslatable(f"forward() takes {len(names)} inputs but get_inputs() returns {n}", self.forward_fn)
        return names


class InitEvaluator(DrawEvaluator):
    """Model.__init__: modules, parameters and constants assigned to self."""

    def __init__(self, module_scope: dict, ck: Checker, inst: Instance):
        super().__init__(ChainMap({}, module_scope), ck)
        self.inst = inst

    def construct(self, fn: ast.FunctionDef, init_args: list):
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs:
            raise Untranslatable("__init__ with *args, **kwargs or keyword-only arguments", fn)
        params = [p.arg for p in a.posonlyargs + a.args]
        defaults = dict(zip(params[len(params) - len(a.defaults):], [self.eval(d) for d in a.defaults]))
        if len(init_args) > len(params) - 1:
            raise Untranslatable(f"get_init_inputs() gives {len(init_args)} values; __init__ takes {len(params) - 1}", fn)
        local = self.scope.maps[0]
        local[params[0]] = _Self()
        for i, name in enumerate(params[1:]):
            if i < len(init_args):
                local[name] = init_args[i]
            elif name in defaults:
                local[name] = defaults[name]
            else:
                raise Untranslatable(f"__init__ needs '{name}', which get_init_inputs() does not give", fn)
        self.run_body(fn.body)

    def expression_statement(self, node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "__init__" and "super" in ast.unparse(node.func.value):
                return
            if node.func.attr == "register_buffer" and isinstance(self.eval(node.func.value), _Self):
                args, kwargs = self.call_args(node)
                name, tensor = args[0], args[1] if len(args) > 1 else kwargs.get("tensor")
                if not isinstance(tensor, DistTensor):
                    raise Untranslatable("register_buffer of something that is not a drawn tensor", node)
                self.inst.attrs[name] = ParamSpec(name, tensor, node)
                return
        raise Untranslatable(f"the statement `{ast.unparse(node)}` in __init__", node)

    def name(self, node):
        if node.id == "super":
            return Ref("builtins.super")
        return super().name(node)

    def assign_other(self, target, value):
        if isinstance(target, ast.Attribute) and isinstance(self.eval(target.value), _Self):
            attr = target.attr
            if isinstance(value, (ModuleSpec, ParamSpec)):
                value.attr = attr
            elif isinstance(value, DistTensor):
                value = ParamSpec(attr, value, target)
            self.inst.attrs[attr] = value
            return
        super().assign_other(target, value)

    def attribute(self, obj, attr, node):
        if isinstance(obj, _Self):
            if attr == "training":
                return True
            if attr not in self.inst.attrs:
                raise Untranslatable(f"self.{attr} is read before it is set", node)
            v = self.inst.attrs[attr]
            return v.tensor if isinstance(v, ParamSpec) else v
        return super().attribute(obj, attr, node)

    def call_ref(self, path, args, kwargs, node):
        for prefix in ("torch.nn.modules.", "torch.nn."):
            if path.startswith(prefix):
                name = path.rsplit(".", 1)[1]
                if name == "Parameter":
                    data = args[0] if args else kwargs.get("data")
                    if not isinstance(data, DistTensor):
                        raise Untranslatable("nn.Parameter of something that is not a drawn tensor", node)
                    return ParamSpec("", data, node)
                if name not in KINDS:
                    raise Untranslatable(f"the module nn.{name}", node)
                kind = KINDS[name]
                bound = kind.sig.bind(args, kwargs, f"nn.{name}")
                return ModuleSpec("", name, bound, kind.params(self.ck, bound), node)
        if path == "builtins.super":
            return Ref("<super>")
        return super().call_ref(path, args, kwargs, node)

