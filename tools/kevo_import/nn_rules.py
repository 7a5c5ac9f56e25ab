"""Shape rules for products, convolutions, pooling, normalisation, losses and attention
(registered into torch_rules.RULES), with PyTorch's output-size formulas."""

from __future__ import annotations

from .shapecheck import T, Checker, ShapeError, Untranslatable, is_float, norm_dim, promote
from .symdim import add, floordiv, mul, sub
from .torch_rules import rule, tensor

# ---------------------------------------------------------------------------------------------- products


def _batch_matmul(ck: Checker, a: T, b: T) -> T:
    if a.rank == 0 or b.rank == 0:
        raise ShapeError("matmul of a scalar", 0)
    sa = [1] + a.shape if a.rank == 1 else list(a.shape)
    sb = b.shape + [1] if b.rank == 1 else list(b.shape)
    ck.same(sa[-1], sb[-2], "matmul: inner sizes")
    batch = ck.broadcast(sa[:-2], sb[:-2], "matmul: batch sizes")
    out = batch + ([sa[-2]] if a.rank > 1 else []) + ([sb[-1]] if b.rank > 1 else [])
    return ck.tensor(out, _product_dtype(a, b))


def _product_dtype(a: T, b: T) -> str:
    dtype = promote(a.dtype, b.dtype)
    if not is_float(dtype):
        raise Untranslatable("an integer matrix product")
    return dtype


@rule("matmul", "input, other")
def _matmul(ck, a):
    return _batch_matmul(ck, tensor(a.input, "input"), tensor(a.other, "other"))


@rule("mm", "input, mat2")
def _mm(ck, a):
    x, y = tensor(a.input, "input"), tensor(a.mat2, "mat2")
    if x.rank != 2 or y.rank != 2:
        raise ShapeError("mm expects matrices", 0)
    return _batch_matmul(ck, x, y)


@rule("bmm", "input, mat2")
def _bmm(ck, a):
    x, y = tensor(a.input, "input"), tensor(a.mat2, "mat2")
    if x.rank != 3 or y.rank != 3:
        raise ShapeError("bmm expects rank-3 tensors", 0)
    ck.same(x.shape[0], y.shape[0], "bmm: batch sizes")
    return _batch_matmul(ck, x, y)


@rule("linear", "input, weight, bias=None")
def _linear(ck, a):
    x, w = tensor(a.input, "input"), tensor(a.weight, "weight")
    if w.rank != 2:
        raise ShapeError("linear: weight must be [out, in]", 0)
    ck.same(x.shape[-1], w.shape[1], "linear: in features")
    if isinstance(a.bias, T):
        ck.broadcast([w.shape[0]], a.bias.shape, "linear: bias")
    return ck.tensor(x.shape[:-1] + [w.shape[0]], _product_dtype(x, w))


@rule("einsum", "equation, *operands")
def _einsum(ck, a):
    ops = a.operands[0] if len(a.operands) == 1 and isinstance(a.operands[0], (list, tuple)) else a.operands
    eq = a.equation.replace(" ", "")
    if "." in eq:
        raise Untranslatable("einsum with '...'")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ops):
        raise ShapeError("einsum: operand count does not match the equation", 0)
    sizes: dict = {}
    counts: dict = {}
    for term, op in zip(terms, ops):
        op = tensor(op, "einsum operand")
        if len(term) != op.rank:
            raise ShapeError(f"einsum: '{term}' does not match rank {op.rank}", 0)
        for letter, d in zip(term, op.shape):
            counts[letter] = counts.get(letter, 0) + 1
            if letter in sizes:
                ck.same(sizes[letter], d, f"einsum: size of '{letter}'")
            else:
                sizes[letter] = d
    out = rhs if "->" in eq else "".join(sorted(k for k, n in counts.items() if n == 1))
    return ck.tensor([sizes[c] for c in out], _product_dtype(*[tensor(o, "operand") for o in ops[:2]])
                     if len(ops) > 1 else ops[0].dtype)


# ---------------------------------------------------------------------------------------------- convolution


def tuple_arg(v, n: int, what: str) -> list:
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            v = list(v) * n
        if len(v) != n:
            raise ShapeError(f"{what}: expected {n} values, got {len(v)}", 0)
        return list(v)
    return [v] * n


def _literal_ints(ck: Checker, values: list, what: str) -> list:
    return [ck.const_int(v, what) for v in values]


def conv_out(ck, size, k: int, s: int, p: int, d: int):
    return add(floordiv(sub(add(size, 2 * p), d * (k - 1) + 1), s), 1)


def _conv(ck: Checker, a, n: int, transposed: bool) -> T:
    x, w = tensor(a.input, "input"), tensor(a.weight, "weight")
    if x.rank != n + 2 or w.rank != n + 2:
        raise Untranslatable(f"conv{n}d expects a batched rank-{n + 2} input and weight")
    groups = ck.const_int(a.groups, "groups")
    kernel = _literal_ints(ck, w.shape[2:], "kernel size")
    stride = _literal_ints(ck, tuple_arg(a.stride, n, "stride"), "stride")
    dilation = _literal_ints(ck, tuple_arg(a.dilation, n, "dilation"), "dilation")
    spatial = x.shape[2:]
    if transposed:
        padding = _literal_ints(ck, tuple_arg(a.padding, n, "padding"), "padding")
        outpad = _literal_ints(ck, tuple_arg(a.output_padding, n, "output_padding"), "output_padding")
        ck.same(x.shape[1], w.shape[0], "conv_transpose: input channels")
        cout = mul(w.shape[1], groups)
        out = [add(add(mul(sub(L, 1), s) - 2 * p, dl * (k - 1) + op), 1)
               for L, k, s, p, dl, op in zip(spatial, kernel, stride, padding, dilation, outpad)]
    else:
        ck.same(x.shape[1], mul(w.shape[1], groups), "conv: input channels")
        ck.divides(w.shape[0], groups, "conv: output channels by groups")
        cout = w.shape[0]
        if isinstance(a.padding, str):
            if a.padding == "valid":
                padding = [0] * n
            elif a.padding == "same":
                return _bias_checked(ck, a, cout, ck.tensor([x.shape[0], cout] + spatial, x.dtype, "conv"))
            else:
                raise Untranslatable(f"padding='{a.padding}'")
        else:
            padding = _literal_ints(ck, tuple_arg(a.padding, n, "padding"), "padding")
        out = [conv_out(ck, L, k, s, p, dl) for L, k, s, p, dl in zip(spatial, kernel, stride, padding, dilation)]
    return _bias_checked(ck, a, cout, ck.tensor([x.shape[0], cout] + out, _product_dtype(x, w), "conv output"))


def _bias_checked(ck, a, cout, result: T) -> T:
    if isinstance(a.bias, T):
        if a.bias.rank != 1:
            raise ShapeError("conv: bias must be [out_channels]", 0)
        ck.same(a.bias.shape[0], cout, "conv: bias")
    return result


for _n in (1, 2, 3):
    rule(f"conv{_n}d", "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1")(
        lambda ck, a, n=_n: _conv(ck, a, n, False))
    rule(f"conv_transpose{_n}d", "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1")(
        lambda ck, a, n=_n: _conv(ck, a, n, True))


# ---------------------------------------------------------------------------------------------- pooling


def pooled(ck: Checker, size, k: int, s: int, p: int, d: int, ceil_mode: bool):
    if p * 2 > k:
        raise ShapeError(f"pool: padding {p} must be at most half the kernel {k}", 0)
    span = sub(add(size, 2 * p), d * (k - 1) + 1)
    if not ceil_mode:
        return add(floordiv(span, s), 1)
    out = add(floordiv(add(span, s - 1), s), 1)
    # torch drops the last window when it would start in the right padding.
    drops = [(o - 1) * s >= L + p for o, L in zip(ck.values(out), ck.values(size))]
    if all(drops):
        return sub(out, 1)
    if any(drops):
        raise ShapeError("pool: ceil_mode's last window differs between workloads", drops.index(not drops[0]))
    return out


def _pool(ck: Checker, a, n: int, dilation) -> T:
    x = tensor(a.input, "input")
    if x.rank not in (n + 1, n + 2):
        raise ShapeError(f"pool{n}d expects rank {n + 1} or {n + 2}", 0)
    kernel = _literal_ints(ck, tuple_arg(a.kernel_size, n, "kernel_size"), "kernel_size")
    stride = kernel if a.stride is None or a.stride == [] or a.stride == () else _literal_ints(
        ck, tuple_arg(a.stride, n, "stride"), "stride")
    padding = _literal_ints(ck, tuple_arg(a.padding, n, "padding"), "padding")
    dil = _literal_ints(ck, tuple_arg(dilation, n, "dilation"), "dilation")
    lead = x.shape[:x.rank - n]
    out = [pooled(ck, L, k, s, p, d, bool(a.ceil_mode))
           for L, k, s, p, d in zip(x.shape[x.rank - n:], kernel, stride, padding, dil)]
    return ck.tensor(lead + out, x.dtype, "pool output")


for _n in (1, 2, 3):
    rule(f"max_pool{_n}d", "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False")(
        lambda ck, a, n=_n: _max_pool(ck, a, n))
    rule(f"avg_pool{_n}d", "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, "
                           "divisor_override=None")(lambda ck, a, n=_n: _pool(ck, a, n, 1))
    rule(f"adaptive_avg_pool{_n}d", "input, output_size")(lambda ck, a, n=_n: _adaptive(ck, a, n))
    rule(f"adaptive_max_pool{_n}d", "input, output_size, return_indices=False")(
        lambda ck, a, n=_n: _adaptive(ck, a, n))


def _max_pool(ck, a, n):
    if a.return_indices:
        raise Untranslatable("max pooling with return_indices=True")
    return _pool(ck, a, n, a.dilation)


def _adaptive(ck, a, n):
    x = tensor(a.input, "input")
    if x.rank not in (n + 1, n + 2):
        raise ShapeError(f"adaptive pool{n}d expects rank {n + 1} or {n + 2}", 0)
    sizes = tuple_arg(a.output_size, n, "output_size")
    spatial = x.shape[x.rank - n:]
    out = [L if s is None else ck.const_int(s, "output_size") for L, s in zip(spatial, sizes)]
    return ck.tensor(x.shape[:x.rank - n] + out, x.dtype)


# ---------------------------------------------------------------------------------------------- normalisation


def _affine(ck: Checker, a, channels: list, what: str):
    for name in ("weight", "bias"):
        v = a.get(name)
        if isinstance(v, T):
            if v.rank != len(channels):
                raise ShapeError(f"{what}: {name} has rank {v.rank}, expected {len(channels)}", 0)
            for x, y in zip(v.shape, channels):
                ck.same(x, y, f"{what}: {name}")


@rule("batch_norm", "input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05")
def _batch_norm(ck, a):
    x = tensor(a.input, "input")
    if x.rank < 2:
        raise ShapeError("batch_norm expects rank >= 2", 0)
    _affine(ck, a, [x.shape[1]], "batch_norm")
    if a.training:
        # torch refuses a channel with a single value to normalise over.
        count = mul(x.shape[0], _numel(x.shape[2:]))
        for i, v in enumerate(ck.values(count)):
            if v <= 1:
                raise ShapeError("batch_norm in training mode needs more than one value per channel", i)
    return ck.tensor(x.shape, x.dtype)


def _numel(shape):
    out = 1
    for d in shape:
        out = mul(out, d)
    return out


@rule("instance_norm", "input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, "
                       "momentum=0.1, eps=1e-05")
def _instance_norm(ck, a):
    x = tensor(a.input, "input")
    if x.rank < 3:
        raise ShapeError("instance_norm expects rank >= 3", 0)
    _affine(ck, a, [x.shape[1]], "instance_norm")
    for i, v in enumerate(ck.values(_numel(x.shape[2:]))):
        if v <= 1:
            raise ShapeError("instance_norm needs more than one spatial element", i)
    return ck.tensor(x.shape, x.dtype)


@rule("layer_norm", "input, normalized_shape, weight=None, bias=None, eps=1e-05")
def _layer_norm(ck, a):
    x = tensor(a.input, "input")
    ns = list(a.normalized_shape) if isinstance(a.normalized_shape, (list, tuple)) else [a.normalized_shape]
    if len(ns) > x.rank:
        raise ShapeError("layer_norm: normalized_shape longer than the input's rank", 0)
    for d, n in zip(x.shape[x.rank - len(ns):], ns):
        ck.same(d, n, "layer_norm: normalized_shape")
    _affine(ck, a, x.shape[x.rank - len(ns):], "layer_norm")
    return ck.tensor(x.shape, x.dtype)


@rule("group_norm", "input, num_groups, weight=None, bias=None, eps=1e-05")
def _group_norm(ck, a):
    x = tensor(a.input, "input")
    if x.rank < 2:
        raise ShapeError("group_norm expects rank >= 2", 0)
    ck.divides(x.shape[1], ck.const_int(a.num_groups, "num_groups"), "group_norm: channels by groups")
    _affine(ck, a, [x.shape[1]], "group_norm")
    return ck.tensor(x.shape, x.dtype)


@rule("normalize", "input, p=2.0, dim=1, eps=1e-12, out=None")
def _normalize(ck, a):
    x = tensor(a.input, "input")
    norm_dim(a.dim, x.rank)
    return ck.tensor(x.shape, x.dtype)


# ---------------------------------------------------------------------------------------------- losses

_REDUCED = "size_average=None, reduce=None, reduction='mean'"


def _reduction(ck, shape: list, dtype: str, reduction: str) -> T:
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise Untranslatable(f"reduction='{reduction}'")
    return ck.tensor(shape if reduction == "none" else [], dtype)


@rule("mse_loss l1_loss binary_cross_entropy_with_logits soft_margin_loss",
      f"input, target, {_REDUCED}, **kw")
def _pointwise_loss(ck, a):
    x, t = tensor(a.input, "input"), tensor(a.target, "target")
    return _reduction(ck, ck.broadcast(x.shape, t.shape, "loss operands"), x.dtype, a.reduction)


@rule("smooth_l1_loss", f"input, target, {_REDUCED}, beta=1.0")
def _smooth_l1(ck, a):
    return _pointwise_loss(ck, a)


@rule("huber_loss", "input, target, reduction='mean', delta=1.0")
def _huber(ck, a):
    return _pointwise_loss(ck, a)


@rule("binary_cross_entropy", f"input, target, weight=None, {_REDUCED}")
def _bce(ck, a):
    return _pointwise_loss(ck, a)


@rule("kl_div", f"input, target, {_REDUCED}, log_target=False")
def _kl_div(ck, a):
    return _pointwise_loss(ck, a)


@rule("cross_entropy nll_loss", "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, "
                                "reduction='mean', label_smoothing=0.0")
def _cross_entropy(ck, a):
    x, t = tensor(a.input, "input"), tensor(a.target, "target")
    if is_float(t.dtype):
        for p, q in zip(x.shape, t.shape):
            ck.same(p, q, "cross_entropy: probability target")
    else:
        want = x.shape[:1] + x.shape[2:] if x.rank > 1 else []
        if t.rank != len(want):
            raise ShapeError("cross_entropy: class-index target of the wrong rank", 0)
        for p, q in zip(want, t.shape):
            ck.same(p, q, "cross_entropy: target")
    return _reduction(ck, x.shape[:1] + x.shape[2:] if x.rank > 1 else [], x.dtype, a.reduction)


@rule("triplet_margin_loss", f"anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, {_REDUCED}")
def _triplet(ck, a):
    xs = [tensor(v, "operand") for v in (a.anchor, a.positive, a.negative)]
    shape = ck.broadcast(ck.broadcast(xs[0].shape, xs[1].shape, "triplet"), xs[2].shape, "triplet")
    return _reduction(ck, shape[:-1], xs[0].dtype, a.reduction)


@rule("cosine_similarity", "x1, x2, dim=1, eps=1e-08")
def _cosine(ck, a):
    x, y = tensor(a.x1, "x1"), tensor(a.x2, "x2")
    shape = ck.broadcast(x.shape, y.shape, "cosine_similarity")
    d = norm_dim(a.dim, len(shape))
    return ck.tensor(shape[:d] + shape[d + 1:], x.dtype)


@rule("hinge_embedding_loss", f"input, target, margin=1.0, {_REDUCED}")
def _hinge(ck, a):
    return _pointwise_loss(ck, a)


@rule("margin_ranking_loss cosine_embedding_loss", f"input1, input2, target, margin=0, {_REDUCED}")
def _ranking(ck, a):
    x, y, t = (tensor(v, "operand") for v in (a.input1, a.input2, a.target))
    shape = ck.broadcast(ck.broadcast(x.shape, y.shape, "loss"), t.shape, "loss")
    return _reduction(ck, shape, x.dtype, a.reduction)


# ---------------------------------------------------------------------------------------------- attention


@rule("scaled_dot_product_attention", "query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None")
def _sdpa(ck, a):
    q, k, v = (tensor(x, name) for x, name in ((a.query, "query"), (a.key, "key"), (a.value, "value")))
    if q.rank < 2 or k.rank != q.rank or v.rank != q.rank:
        raise ShapeError("scaled_dot_product_attention: query, key and value of one rank >= 2", 0)
    ck.same(q.shape[-1], k.shape[-1], "attention: query and key feature sizes")
    ck.same(k.shape[-2], v.shape[-2], "attention: key and value lengths")
    batch = ck.broadcast(ck.broadcast(q.shape[:-2], k.shape[:-2], "attention batch"), v.shape[:-2], "attention batch")
    if a.dropout_p:
        raise Untranslatable("attention dropout draws a random mask")
    return ck.tensor(batch + [q.shape[-2], v.shape[-1]], q.dtype)

