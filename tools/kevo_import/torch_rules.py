"""Shape and dtype rules for torch's elementwise, reduction, scan and layout functions and methods.

Each rule takes the Checker and the bound arguments (abstract tensors, Python numbers, sizes) and
returns the abstract result. The rules follow PyTorch's semantics; where PyTorch would raise, so
do they (ShapeError), and a size that must be a literal in the reference raises Conflict."""

from __future__ import annotations

from functools import reduce

from .shapecheck import (T, Checker, ShapeError, TorchDtype, Untranslatable, is_float, kind_of, norm_dim, norm_dims,
                         promote)
from .signature import Signature
from .symdim import Dim, floordiv, is_size, mul, sub

RULES: dict = {}


def rule(names: str, sig: str | None):
    """Registers fn for each name; sig None: fn takes (ck, args, kwargs) unbound (overloads)."""

    def deco(fn):
        for name in names.split():
            RULES[name] = (Signature(sig) if sig is not None else None, fn)
        return fn

    return deco


def tensor(v, what: str) -> T:
    if not isinstance(v, T):
        raise Untranslatable(f"{what} must be a tensor, got {type(v).__name__}")
    return v


def numel(shape: list):
    return reduce(mul, shape, 1)


# ---------------------------------------------------------------------------------------------- elementwise

KEEP_DTYPE = "relu abs neg negative clone detach contiguous sign square triu tril"
FLOAT_RESULT = ("sigmoid tanh exp log sqrt rsqrt erf sin cos tan gelu selu elu celu hardsigmoid hardswish hardtanh "
                "relu6 softplus softsign mish silu leaky_relu logsigmoid reciprocal log1p expm1 exp2 log2 log10 "
                "sinh cosh atan asin acos floor ceil round trunc frac")


@rule(KEEP_DTYPE, "input, *rest, **kw")
def _keep(ck: Checker, a):
    x = tensor(a.input, "input")
    return ck.tensor(x.shape, x.dtype)


@rule(FLOAT_RESULT, "input, *rest, **kw")
def _float_result(ck: Checker, a):
    x = tensor(a.input, "input")
    return ck.tensor(x.shape, x.dtype if is_float(x.dtype) else "float32")


@rule("clamp clip", "input, min=None, max=None")
def _clamp(ck, a):
    x = tensor(a.input, "input")
    return ck.tensor(x.shape, promote(x.dtype, *(k for k in (kind_of(a.min), kind_of(a.max)) if k)))


@rule("clamp_min clamp_max", "input, value")
def _clamp1(ck, a):
    x = tensor(a.input, "input")
    return ck.tensor(x.shape, promote(x.dtype, kind_of(a.value)))


@rule("dropout", "input, p=0.5, training=True, inplace=False")
def _dropout(ck, a):
    x = tensor(a.input, "input")
    return ck.tensor(x.shape, x.dtype)


@rule("zeros_like ones_like rand_like randn_like empty_like", "input, *, dtype=None, device=None, **kw")
def _like(ck, a):
    x = tensor(a.input, "input")
    return ck.tensor(x.shape, a.dtype.name if isinstance(a.dtype, TorchDtype) else x.dtype)


@rule("full_like", "input, fill_value, *, dtype=None, device=None, **kw")
def _full_like(ck, a):
    x = tensor(a.input, "input")
    return ck.tensor(x.shape, a.dtype.name if isinstance(a.dtype, TorchDtype) else x.dtype)


CONVERSIONS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16", "bool": "bool",
               "int": "int32", "long": "int64"}


def _conversion(dtype: str):
    def convert(ck, a):
        x = tensor(a.input, "input")
        return ck.tensor(x.shape, dtype)

    return convert


for _name, _dtype in CONVERSIONS.items():
    rule(_name, "input")(_conversion(_dtype))


@rule("to type", "input, *args, **kw")
def _to(ck, a):
    x = tensor(a.input, "input")
    for v in list(a.args) + list(a.kw.values()):
        if isinstance(v, TorchDtype):
            return ck.tensor(x.shape, v.name)
    return ck.tensor(x.shape, x.dtype)


def binary(ck: Checker, x, y, op: str):
    """+ - * / // % ** and friends between tensors and numbers."""
    tensors = [v for v in (x, y) if isinstance(v, T)]
    if not tensors:
        raise Untranslatable(f"'{op}' needs a tensor operand")
    shape = tensors[0].shape if len(tensors) == 1 else ck.broadcast(x.shape, y.shape, f"'{op}' operands")
    kinds = [kind_of(v) for v in (x, y)]
    if None in kinds:
        raise Untranslatable(f"'{op}' on a {type(x).__name__} and a {type(y).__name__}")
    dtype = promote(*kinds)
    if op in ("/", "div", "true_divide", "divide") and not is_float(dtype):
        dtype = "float32"
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        dtype = "bool"
    return ck.tensor(shape, dtype)


@rule("add sub subtract", "input, other, *, alpha=1")
def _add(ck, a):
    return binary(ck, a.input, a.other, "add")


@rule("mul multiply maximum minimum pow floor_divide remainder fmod atan2 eq ne lt le gt ge logical_and logical_or",
      "input, other")
def _binary(ck, a):
    return binary(ck, a.input, a.other, "binary")


@rule("div divide true_divide", "input, other, *, rounding_mode=None")
def _div(ck, a):
    return binary(ck, a.input, a.other, "div" if a.rounding_mode is None else "floor_divide")


@rule("where", "condition, input, other")
def _where(ck, a):
    cond = tensor(a.condition, "condition")
    shape = cond.shape
    kinds = []
    for v in (a.input, a.other):
        if isinstance(v, T):
            shape = ck.broadcast(shape, v.shape, "where")
        kinds.append(kind_of(v))
    return ck.tensor(shape, promote(*kinds))


# ---------------------------------------------------------------------------------------------- reductions


def reduced(ck: Checker, x: T, dims, keepdim: bool, dtype: str) -> T:
    if isinstance(dims, (list, tuple)) and len(dims) == 0:
        dims = None
    keep = norm_dims(dims, x.rank)
    if keepdim:
        shape = [1 if i in keep else d for i, d in enumerate(x.shape)]
    else:
        shape = [d for i, d in enumerate(x.shape) if i not in keep]
    return ck.tensor(shape, dtype)


def _sum_dtype(x: T, dtype) -> str:
    if isinstance(dtype, TorchDtype):
        return dtype.name
    return x.dtype if is_float(x.dtype) else "int64"


@rule("sum nansum", "input, dim=None, keepdim=False, *, dtype=None")
def _sum(ck, a):
    x = tensor(a.input, "input")
    return reduced(ck, x, a.dim, a.keepdim, _sum_dtype(x, a.dtype))


@rule("prod", "input, dim=None, keepdim=False, *, dtype=None")
def _prod(ck, a):
    x = tensor(a.input, "input")
    return reduced(ck, x, a.dim, a.keepdim, _sum_dtype(x, a.dtype))


@rule("mean nanmean", "input, dim=None, keepdim=False, *, dtype=None")
def _mean(ck, a):
    x = tensor(a.input, "input")
    return reduced(ck, x, a.dim, a.keepdim, a.dtype.name if isinstance(a.dtype, TorchDtype) else x.dtype)


@rule("amax amin", "input, dim=(), keepdim=False")
def _amax(ck, a):
    x = tensor(a.input, "input")
    return reduced(ck, x, a.dim, a.keepdim, x.dtype)


@rule("logsumexp", "input, dim, keepdim=False")
def _logsumexp(ck, a):
    x = tensor(a.input, "input")
    return reduced(ck, x, a.dim, a.keepdim, x.dtype if is_float(x.dtype) else "float32")


@rule("norm", "input, p='fro', dim=None, keepdim=False, out=None, dtype=None")
def _norm(ck, a):
    x = tensor(a.input, "input")
    return reduced(ck, x, a.dim, a.keepdim, x.dtype)


@rule("var std", "input, dim=None, unbiased=True, keepdim=False, *, correction=None")
def _var(ck, a):
    x = tensor(a.input, "input")
    return reduced(ck, x, a.dim, a.keepdim, x.dtype)


@rule("all any", "input, dim=None, keepdim=False")
def _all(ck, a):
    x = tensor(a.input, "input")
    return reduced(ck, x, a.dim, a.keepdim, "bool")


@rule("argmax argmin", "input, dim=None, keepdim=False")
def _argmax(ck, a):
    x = tensor(a.input, "input")
    if a.dim is None:
        return ck.tensor([1] * x.rank if a.keepdim else [], "int64")
    return reduced(ck, x, a.dim, a.keepdim, "int64")


@rule("max min", None)
def _max(ck, args: list, kwargs: dict):
    """torch.max(x) | torch.max(x, dim, keepdim=False) -> (values, indices) | torch.max(x, other)."""
    x = tensor(args[0] if args else kwargs.get("input"), "input")
    rest = list(args[1:])
    if rest and isinstance(rest[0], T) or isinstance(kwargs.get("other"), T):
        return binary(ck, x, rest[0] if rest else kwargs["other"], "maximum")
    dim = rest[0] if rest else kwargs.get("dim")
    keepdim = rest[1] if len(rest) > 1 else kwargs.get("keepdim", False)
    if dim is None:
        return ck.tensor([], x.dtype)
    values = reduced(ck, x, dim, keepdim, x.dtype)
    return (values, T(values.shape, "int64"))


@rule("softmax log_softmax", "input, dim=None, _stacklevel=3, dtype=None")
def _softmax(ck, a):
    x = tensor(a.input, "input")
    if a.dim is None:
        raise Untranslatable("softmax without dim (implicit dim choice is deprecated)")
    norm_dim(a.dim, x.rank)
    return ck.tensor(x.shape, a.dtype.name if isinstance(a.dtype, TorchDtype) else x.dtype)


@rule("cumsum cumprod", "input, dim, *, dtype=None")
def _cumsum(ck, a):
    x = tensor(a.input, "input")
    norm_dim(a.dim, x.rank)
    return ck.tensor(x.shape, _sum_dtype(x, a.dtype))


@rule("flip", "input, *dims")
def _flip(ck, a):
    x = tensor(a.input, "input")
    dims = a.dims[0] if len(a.dims) == 1 and isinstance(a.dims[0], (list, tuple)) else a.dims
    norm_dims(list(dims), x.rank)
    return ck.tensor(x.shape, x.dtype)


# ---------------------------------------------------------------------------------------------- layout


def sizes_arg(values: list) -> list:
    """view(2, 3) or view((2, 3)): the sizes as a list."""
    if len(values) == 1 and isinstance(values[0], (list, tuple)):
        values = list(values[0])
    for v in values:
        if not is_size(v):
            raise Untranslatable(f"a size must be an int, got {v!r}")
    return list(values)


def reshaped(ck: Checker, x: T, sizes: list) -> T:
    total = numel(x.shape)
    holes = [i for i, s in enumerate(sizes) if not isinstance(s, Dim) and int(s) == -1]
    if len(holes) > 1:
        raise ShapeError("only one size may be -1", 0)
    known = numel([s for i, s in enumerate(sizes) if i not in holes])
    if holes:
        for i, (t, k) in enumerate(zip(ck.values(total), ck.values(known))):
            if k <= 0 or t % k:
                raise ShapeError(f"cannot view {t} elements as a multiple of {k}", i)
        sizes = list(sizes)
        sizes[holes[0]] = floordiv(total, known)
    else:
        ck.same(total, known, "view: element count")
    return ck.tensor(sizes, x.dtype, "view")


@rule("view reshape", "input, *shape")
def _view(ck, a):
    x = tensor(a.input, "input")
    if len(a.shape) == 1 and isinstance(a.shape[0], TorchDtype):
        raise Untranslatable("view(dtype) reinterprets bits")
    return reshaped(ck, x, sizes_arg(a.shape))


@rule("view_as reshape_as expand_as", "input, other")
def _view_as(ck, a):
    x, other = tensor(a.input, "input"), tensor(a.other, "other")
    return ck.tensor(other.shape, x.dtype)


@rule("flatten", "input, start_dim=0, end_dim=-1")
def _flatten(ck, a):
    x = tensor(a.input, "input")
    if x.rank == 0:
        return ck.tensor([1], x.dtype)
    s, e = norm_dim(a.start_dim, x.rank), norm_dim(a.end_dim, x.rank)
    return ck.tensor(x.shape[:s] + [numel(x.shape[s:e + 1])] + x.shape[e + 1:], x.dtype)


@rule("unflatten", "input, dim, sizes")
def _unflatten(ck, a):
    x = tensor(a.input, "input")
    d = norm_dim(a.dim, x.rank)
    part = reshaped(ck, T([x.shape[d]], x.dtype), sizes_arg([a.sizes]))
    return ck.tensor(x.shape[:d] + part.shape + x.shape[d + 1:], x.dtype)


@rule("unsqueeze", "input, dim")
def _unsqueeze(ck, a):
    x = tensor(a.input, "input")
    d = norm_dim(a.dim, x.rank + 1)
    return ck.tensor(x.shape[:d] + [1] + x.shape[d:], x.dtype)


def _is_one(ck: Checker, d) -> bool:
    """Whether squeeze drops this dim; a size that is 1 in some workloads only would change the graph."""
    vals = ck.values(d)
    if all(v == 1 for v in vals):
        return True
    if any(v == 1 for v in vals):
        raise ShapeError("squeeze: a size that is 1 in only some workloads", vals.index(1))
    return False


@rule("squeeze", "input, dim=None")
def _squeeze(ck, a):
    x = tensor(a.input, "input")
    dims = norm_dims(a.dim, x.rank) if a.dim is not None else list(range(x.rank))
    return ck.tensor([d for i, d in enumerate(x.shape) if not (i in dims and _is_one(ck, d))], x.dtype)


@rule("transpose swapaxes swapdims", "input, dim0, dim1")
def _transpose(ck, a):
    x = tensor(a.input, "input")
    i, j = norm_dim(a.dim0, x.rank), norm_dim(a.dim1, x.rank)
    shape = list(x.shape)
    shape[i], shape[j] = shape[j], shape[i]
    return ck.tensor(shape, x.dtype)


@rule("t", "input")
def _t(ck, a):
    x = tensor(a.input, "input")
    if x.rank > 2:
        raise ShapeError("t() expects a tensor of rank <= 2", 0)
    return ck.tensor(list(reversed(x.shape)), x.dtype)


@rule("permute", "input, *dims")
def _permute(ck, a):
    x = tensor(a.input, "input")
    dims = [norm_dim(d, x.rank) for d in sizes_arg(a.dims)]
    if sorted(dims) != list(range(x.rank)):
        raise ShapeError("permute: not a permutation of the dims", 0)
    return ck.tensor([x.shape[d] for d in dims], x.dtype)


@rule("expand broadcast_to", "input, *sizes")
def _expand(ck, a):
    x = tensor(a.input, "input")
    sizes = sizes_arg(a.sizes)
    if len(sizes) < x.rank:
        raise ShapeError("expand: fewer sizes than dims", 0)
    lead = len(sizes) - x.rank
    out = list(sizes[:lead])
    for d, s in zip(x.shape, sizes[lead:]):
        if not isinstance(s, Dim) and int(s) == -1:
            out.append(d)
        elif not isinstance(d, Dim) and int(d) == 1:
            out.append(s)
        else:
            ck.same(d, s, "expand")
            out.append(d)
    return ck.tensor(out, x.dtype)


@rule("repeat", "input, *sizes")
def _repeat(ck, a):
    x = tensor(a.input, "input")
    reps = sizes_arg(a.sizes)
    shape = [1] * (len(reps) - x.rank) + list(x.shape)
    return ck.tensor([mul(d, r) for d, r in zip(shape, reps)], x.dtype)


@rule("narrow", "input, dim, start, length")
def _narrow(ck, a):
    x = tensor(a.input, "input")
    d = norm_dim(a.dim, x.rank)
    for i, (n, s, l) in enumerate(zip(ck.values(x.shape[d]), ck.values(a.start), ck.values(a.length))):
        if s < 0 or l < 0 or s + l > n:
            raise ShapeError(f"narrow: start {s} + length {l} exceeds {n}", i)
    shape = list(x.shape)
    shape[d] = a.length
    return ck.tensor(shape, x.dtype)


@rule("select", "input, dim, index")
def _select(ck, a):
    x = tensor(a.input, "input")
    d = norm_dim(a.dim, x.rank)
    for i, (n, k) in enumerate(zip(ck.values(x.shape[d]), ck.values(a.index))):
        if not -n <= k < n:
            raise ShapeError(f"select: index {k} out of range for size {n}", i)
    return ck.tensor(x.shape[:d] + x.shape[d + 1:], x.dtype)


@rule("cat concat concatenate", "tensors, dim=0")
def _cat(ck, a):
    ts = [tensor(t, "tensors") for t in a.tensors]
    if not ts:
        raise ShapeError("cat of no tensors", 0)
    d = norm_dim(a.dim, ts[0].rank)
    shape = list(ts[0].shape)
    for t in ts[1:]:
        if t.rank != len(shape):
            raise ShapeError("cat: tensors of different ranks", 0)
        for i in range(len(shape)):
            if i == d:
                shape[i] = shape[i] + t.shape[i]
            else:
                ck.same(shape[i], t.shape[i], "cat")
    return ck.tensor(shape, promote(*(t.dtype for t in ts)))


@rule("stack", "tensors, dim=0")
def _stack(ck, a):
    ts = [tensor(t, "tensors") for t in a.tensors]
    if not ts:
        raise ShapeError("stack of no tensors", 0)
    for t in ts[1:]:
        if t.rank != ts[0].rank:
            raise ShapeError("stack: tensors of different ranks", 0)
        for x, y in zip(ts[0].shape, t.shape):
            ck.same(x, y, "stack")
    d = norm_dim(a.dim, ts[0].rank + 1)
    return ck.tensor(ts[0].shape[:d] + [len(ts)] + ts[0].shape[d:], promote(*(t.dtype for t in ts)))


@rule("chunk", "input, chunks, dim=0")
def _chunk(ck, a):
    x = tensor(a.input, "input")
    d = norm_dim(a.dim, x.rank)
    n = ck.const_int(x.shape[d], "chunk: the chunked dim")
    size = -(-n // a.chunks)
    return tuple(_with(ck, x, d, min(size, n - k)) for k in range(0, n, size))


@rule("split", "tensor, split_size_or_sections, dim=0")
def _split(ck, a):
    x = tensor(a.tensor, "tensor")
    d = norm_dim(a.dim, x.rank)
    s = a.split_size_or_sections
    if isinstance(s, (list, tuple)):
        ck.same(x.shape[d], sum(s), "split: the sections")
        return tuple(_with(ck, x, d, k) for k in s)
    n = ck.const_int(x.shape[d], "split: the split dim")
    return tuple(_with(ck, x, d, min(s, n - k)) for k in range(0, n, s))


def _with(ck, x: T, d: int, size) -> T:
    shape = list(x.shape)
    shape[d] = size
    return ck.tensor(shape, x.dtype)


@rule("diag", "input, diagonal=0")
def _diag(ck, a):
    x = tensor(a.input, "input")
    k = abs(a.diagonal)
    if x.rank == 1:
        return ck.tensor([x.shape[0] + k, x.shape[0] + k], x.dtype)
    if x.rank == 2:
        return ck.tensor([_min_size(ck, x.shape[0], x.shape[1]) - k], x.dtype)
    raise ShapeError("diag expects a tensor of rank 1 or 2", 0)


def _min_size(ck, a, b):
    va, vb = ck.values(a), ck.values(b)
    if all(x <= y for x, y in zip(va, vb)):
        return a
    if all(y <= x for x, y in zip(va, vb)):
        return b
    raise ShapeError("diag: the smaller side differs between workloads", 0)


# ---------------------------------------------------------------------------------------------- indexing


def indexed(ck: Checker, x: T, index) -> T:
    """x[...] with ints, slices, None and Ellipsis (basic indexing); tensor indices are untranslatable."""
    items = list(index) if isinstance(index, tuple) else [index]
    if any(isinstance(i, T) for i in items):
        raise Untranslatable("indexing with a tensor (advanced indexing)")
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > x.rank:
        raise ShapeError("too many indices", 0)
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items = items[:k] + [slice(None)] * (x.rank - used) + items[k + 1:]
    items += [slice(None)] * (x.rank - sum(1 for i in items if i is not None))
    out, dim = [], 0
    for it in items:
        if it is None:
            out.append(1)
            continue
        size = x.shape[dim]
        dim += 1
        if isinstance(it, slice):
            out.append(_sliced(ck, size, it))
        elif is_size(it):
            for i, (n, k) in enumerate(zip(ck.values(size), ck.values(it))):
                if not -n <= k < n:
                    raise ShapeError(f"index {k} out of range for size {n}", i)
        else:
            raise Untranslatable(f"an index of type {type(it).__name__}")
    return ck.tensor(out, x.dtype)


def _sliced(ck: Checker, size, s: slice):
    step = 1 if s.step is None else s.step
    if not isinstance(step, int) or step <= 0:
        raise Untranslatable("a slice step must be a positive int")
    start, stop = s.start, s.stop
    if not isinstance(size, Dim):
        return len(range(*slice(_int(start), _int(stop), step).indices(int(size))))
    # A symbolic size: only bounds that keep the length one expression in every workload.
    if start is None:
        start = 0
    if stop is None:
        stop = size
    elif not isinstance(stop, Dim) and stop < 0:
        stop = size + stop
    if not isinstance(start, Dim) and start < 0:
        start = size + start
    length = sub(stop, start)
    for i, (n, b, e) in enumerate(zip(ck.values(size), ck.values(start), ck.values(stop))):
        if not (0 <= b <= e <= n):
            raise ShapeError(f"slice [{b}:{e}] of a size {n} clamps", i)
    return floordiv(length + (step - 1), step) if step > 1 else length


def _int(v):
    if v is None or isinstance(v, int):
        return v
    raise Untranslatable(f"a slice bound must be an int, got {v!r}")


# ---------------------------------------------------------------------------------------------- constants


@rule("tensor as_tensor", "data, *, dtype=None, device=None, requires_grad=False")
def _tensor(ck, a):
    data = a.data
    if isinstance(a.dtype, TorchDtype):
        dtype = a.dtype.name
    elif isinstance(data, bool):
        dtype = "bool"
    elif isinstance(data, int):
        dtype = "int64"
    elif isinstance(data, float):
        dtype = "float32"
    else:
        raise Untranslatable("torch.tensor of something other than a number")
    return ck.tensor([], dtype)
