"""The capture path, tracing: the problem file run with its module constants set to a workload
(`load`), the Model traced to an ATen graph (`trace`), and the module constants that size the
problem's tensors (`data_axes`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


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
    shapes: dict = field(default_factory=dict)  # node name -> shape (list) or tuple of shapes


def _tensor_attrs(model):
    """Plain tensor attributes of the model's modules (self.h0 = torch.randn(...)): path -> tensor."""
    import torch

    out = {}
    for mname, mod in model.named_modules():
        for k, v in vars(mod).items():
            if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter) and not k.startswith("_"):
                out[f"{mname}.{k}" if mname else k] = v
    return out


def _known_tensors(model) -> tuple:
    """Tensors the graph may read, by id: (kind, module path, tensor); and a copy of the plain
    tensor attributes (forward may replace them by equal tensors)."""
    known = {}
    for k, p in model.named_parameters():
        known[id(p)] = ("param", k, p)
    for k, b in model.named_buffers():
        known.setdefault(id(b), ("buffer", k, b))
    attrs = _tensor_attrs(model)
    for k, t in attrs.items():
        known.setdefault(id(t), ("attr", k, t))
    return known, {k: t.clone() for k, t in attrs.items()}


def _make_graph(model, inputs):
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    with torch.no_grad():
        try:
            return make_fx(lambda *xs: model(*xs))(*inputs)
        except CaptureError:
            raise
        except Exception as e:
            raise CaptureError(f"the model does not trace: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def _graph_consts(gm, known, snapshot) -> dict:
    """get_attr target -> (kind, path, tensor)."""
    import torch

    consts = {}
    for n in gm.graph.nodes:
        if n.op != "get_attr":
            continue
        t = getattr(gm, n.target)
        hit = known.get(id(t))
        if hit is None:  # a tensor attribute replaced in forward (self.h0 = self.h0.to(x.device))
            for k, orig in snapshot.items():
                if orig.shape == t.shape and orig.dtype == t.dtype and torch.equal(orig, t):
                    hit = ("attr", k, t)
                    break
        consts[n.target] = hit or ("const", n.target, t)
    return consts


def _node_shapes(gm) -> dict:
    """Node name -> shape (a list), or for an op returning several tensors (batch norm) a tuple of
    shapes, taken from the getitem nodes that read them where the op itself has no metadata."""
    import operator

    shapes = {}
    for n in gm.graph.nodes:
        tm = n.meta.get("tensor_meta")
        if tm is not None:
            shapes[n.name] = list(tm.shape) if hasattr(tm, "shape") else tuple(
                list(m.shape) if hasattr(m, "shape") else None for m in tm)
    for n in gm.graph.nodes:
        if n.target is operator.getitem and n.name in shapes and n.args[0].name not in shapes:
            src, i = n.args[0].name, n.args[1]
            elems = list(shapes.get(src + "#", ()))
            elems += [None] * (i + 1 - len(elems))
            elems[i] = shapes[n.name]
            shapes[src + "#"] = tuple(elems)
    for k in [k for k in shapes if k.endswith("#")]:
        shapes[k[:-1]] = shapes.pop(k)
    return shapes


def trace(path: str, source: str, env: dict, seed: int = 0) -> Trace:
    import torch

    ns = load(path, source, env)
    torch.manual_seed(seed)
    try:
        model = ns["Model"](*ns["get_init_inputs"]())
        inputs = list(ns["get_inputs"]())
    except Exception as e:
        raise CaptureError(f"the model cannot be built at these sizes: {type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''}")
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise CaptureError(f"get_inputs() passes a {type(x).__name__} as argument {i + 1}; only tensors are captured")
    known, snapshot = _known_tensors(model)
    gm = _make_graph(model, inputs)
    consts = _graph_consts(gm, known, snapshot)
    tr = Trace(env, gm, model, inputs, consts, _node_shapes(gm))
    tr.consts_tensor = lambda p: next(t for kind, q, t in consts.values() if q == p)
    tr.consts_shapes = {n.name: list(getattr(gm, n.target).shape) for n in gm.graph.nodes if n.op == "get_attr"}
    return tr


def _names_in(fn_node) -> set:
    return {n.id for n in ast.walk(fn_node) if isinstance(n, ast.Name)}


def data_axes(tree, consts: dict) -> list:
    """Module constants that size get_inputs()'s tensors or are passed to get_init_inputs() (directly or
    through other constants)."""
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
    seen, stack = set(), list(_names_in(fn)) + list(init_names)
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        stack += list(deps.get(x, ()))
    return [n for n in consts if consts[n] > 1 and n in seen]


def _forward_names(tree) -> list:
    for s in tree.body:
        if isinstance(s, ast.ClassDef) and s.name == "Model":
            for f in s.body:
                if isinstance(f, ast.FunctionDef) and f.name == "forward":
                    return [a.arg for a in f.args.args][1:]
    return []


# ---------------------------------------------------------------------------------------------- literal sizes

SIZE_CALLS = {"rand", "randn", "zeros", "ones", "empty", "randint", "full"}
LITERAL_MIN = 8  # smaller literals (channels 3, a kernel size) stay as written


def _int_literal(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value >= LITERAL_MIN


class _Namer:
    """New module constants for literal sizes: (name, value) in order, names not already taken."""

    def __init__(self, tree):
        self.taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        self.taken |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        self.new = []

    def name(self, base: str, value: int) -> ast.Name:
        nm, k = base, 1
        while nm in self.taken:
            nm, k = f"{base}_{k}", k + 1
        self.taken.add(nm)
        self.new.append((nm, value))
        return ast.Name(nm, ast.Load())


def _size_args(call) -> list:
    """The argument nodes of a tensor factory that are sizes: (holder list, index)."""
    fn = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if fn not in SIZE_CALLS:
        return []
    args = call.args
    if fn == "randint":
        args = [a for a in args if isinstance(a, (ast.Tuple, ast.List))][-1:]
    elif fn == "full":
        args = args[:1]
    out = []
    for i, a in enumerate(args):
        if isinstance(a, (ast.Tuple, ast.List)):
            out += [(a.elts, j) for j in range(len(a.elts))]
        elif a in call.args:
            out.append((call.args, call.args.index(a)))
    return out


def _name_call_sizes(call, base: str, namer: _Namer):
    for d, (holder, j) in enumerate(_size_args(call)):
        if _int_literal(holder[j]):
            holder[j] = namer.name(f"{base}_dim{d}", holder[j].value)


def _name_get_inputs(fn, fwd_names: list, namer: _Namer):
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and isinstance(stmt.targets[0], ast.Name):
            _name_call_sizes(stmt.value, stmt.targets[0].id, namer)
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, (ast.List, ast.Tuple)):
            for i, e in enumerate(stmt.value.elts):
                if isinstance(e, ast.Call):
                    _name_call_sizes(e, fwd_names[i] if i < len(fwd_names) else f"input{i}", namer)


def _name_module_sequences(tree, namer: _Namer) -> list:
    """`input_shape = (batch_size, 3, 224, 224)`, `layer_sizes = [400, 800]`: each literal size a
    constant of its own (input_shape_2, layer_sizes_0), defined just before."""
    body = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and \
                isinstance(stmt.value, (ast.Tuple, ast.List)) and stmt.value.elts and \
                all(isinstance(e, ast.Name) or (isinstance(e, ast.Constant) and type(e.value) is int)
                    for e in stmt.value.elts):
            before = len(namer.new)
            for j, e in enumerate(stmt.value.elts):
                if _int_literal(e):
                    stmt.value.elts[j] = namer.name(f"{stmt.targets[0].id}_{j}", e.value)
            body += [ast.Assign([ast.Name(nm, ast.Store())], ast.Constant(v)) for nm, v in namer.new[before:]]
        body.append(stmt)
    return body


def name_literal_sizes(source: str, fwd_names: list) -> str:
    """The problem's source with every literal size of its input tensors (`torch.rand(batch_size, 3,
    224, 224)` -> `x_dim2`, `x_dim3`) and of module-level size tuples and lists made a module
    constant, so that they can be axes like the constants the problem names; the source itself
    where there are none."""
    tree = ast.parse(source)
    namer = _Namer(tree)
    tree.body = _name_module_sequences(tree, namer)
    n_seq = len(namer.new)
    for i, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "get_inputs":
            _name_get_inputs(stmt, fwd_names, namer)
            tree.body[i:i] = [ast.Assign([ast.Name(nm, ast.Store())], ast.Constant(v)) for nm, v in namer.new[n_seq:]]
            break
    if not namer.new:
        return source
    return ast.unparse(ast.fix_missing_locations(tree))
