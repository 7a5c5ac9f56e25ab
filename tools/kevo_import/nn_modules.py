"""torch.nn modules as the importer translates them: constructor signature, the parameters they
create (shape and PyTorch's default initialisation) and the functional call their forward is."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .nn_rules import tuple_arg
from .shapecheck import Checker, ShapeError, Untranslatable
from .signature import Bound, Signature
from .symdim import floordiv

KAIMING = {"dist": "kaiming_uniform", "a": math.sqrt(5.0)}


@dataclass
class Param:
    suffix: str   # attribute under the module: weight, bias
    shape: list
    init: dict    # a contract init; fan_in_of names a suffix ("weight") until inputs are named
    notes: list = field(default_factory=list)


@dataclass
class Call:
    """The functional call a module's forward is: `fn` as spelled in the reference, the shape rule,
    and the arguments: "INPUT" placeholders for forward's arguments, "@suffix" for parameters, other
    values are literals."""

    fn: str
    rule: str
    args: list
    kwargs: dict


class Kind:
    def __init__(self, sig: str):
        self.sig = Signature(sig)

    def params(self, ck: Checker, a: Bound) -> list:
        return []

    def call(self, ck: Checker, a: Bound, inputs: list, kwinputs: dict) -> Call:
        raise NotImplementedError


def _one_input(inputs: list, kwinputs: dict, name: str, what: str):
    if kwinputs or len(inputs) != 1:
        raise Untranslatable(f"{what} called with other than one input")


class Functional(Kind):
    """A module whose forward is one functional call on its input with its constructor arguments
    as keywords (activations, pooling, flatten, losses)."""

    def __init__(self, sig: str, fn: str, rule: str, keys: list, n_inputs: int = 1, drop=("inplace",), check=None):
        super().__init__(sig)
        self.fn, self.rule, self.keys, self.n_inputs, self.drop, self.check = fn, rule, keys, n_inputs, drop, check

    def call(self, ck, a, inputs, kwinputs):
        if kwinputs or len(inputs) != self.n_inputs:
            raise Untranslatable(f"{self.fn} module called with {len(inputs)} inputs, expected {self.n_inputs}")
        if self.check:
            self.check(a)
        return Call(self.fn, self.rule, ["INPUT"] * self.n_inputs, {k: a[k] for k in self.keys})


class Linear(Kind):
    def __init__(self):
        super().__init__("in_features, out_features, bias=True, device=None, dtype=None")

    def params(self, ck, a):
        out = [Param("weight", [a.out_features, a.in_features], dict(KAIMING))]
        if a.bias:
            out.append(Param("bias", [a.out_features], {"dist": "fan_in_uniform", "fan_in_of": "weight"}))
        return out

    def call(self, ck, a, inputs, kwinputs):
        _one_input(inputs, kwinputs, "input", "Linear")
        return Call("F.linear", "linear", ["INPUT", "@weight", "@bias" if a.bias else None], {})


class Conv(Kind):
    def __init__(self, n: int, transposed: bool):
        extra = "output_padding=0, groups=1, bias=True, dilation=1" if transposed else "dilation=1, groups=1, bias=True"
        super().__init__(f"in_channels, out_channels, kernel_size, stride=1, padding=0, {extra}, padding_mode='zeros', "
                         "device=None, dtype=None")
        self.n, self.transposed = n, transposed

    def params(self, ck, a):
        if a.padding_mode != "zeros":
            raise Untranslatable(f"padding_mode='{a.padding_mode}'")
        groups = ck.const_int(a.groups, "groups")
        kernel = [ck.const_int(k, "kernel_size") for k in tuple_arg(a.kernel_size, self.n, "kernel_size")]
        ck.divides(a.in_channels, groups, "in_channels by groups")
        ck.divides(a.out_channels, groups, "out_channels by groups")
        if self.transposed:
            shape = [a.in_channels, floordiv(a.out_channels, groups)] + kernel
        else:
            shape = [a.out_channels, floordiv(a.in_channels, groups)] + kernel
        out = [Param("weight", shape, dict(KAIMING))]
        if a.bias:
            out.append(Param("bias", [a.out_channels], {"dist": "fan_in_uniform", "fan_in_of": "weight"}))
        return out

    def call(self, ck, a, inputs, kwinputs):
        _one_input(inputs, kwinputs, "input", "Conv")
        bias = "@bias" if a.bias else None
        if self.transposed:
            return Call(f"F.conv_transpose{self.n}d", f"conv_transpose{self.n}d", ["INPUT", "@weight", bias],
                        {"stride": a.stride, "padding": a.padding, "output_padding": a.output_padding,
                         "groups": a.groups, "dilation": a.dilation})
        return Call(f"F.conv{self.n}d", f"conv{self.n}d", ["INPUT", "@weight", bias],
                    {"stride": a.stride, "padding": a.padding, "dilation": a.dilation, "groups": a.groups})


class BatchNorm(Kind):
    """In training mode, as KernelBench runs its models: batch statistics, running ones unused."""

    def __init__(self, ranks: tuple):
        super().__init__("num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True, "
                         "device=None, dtype=None")
        self.ranks = ranks

    def params(self, ck, a):
        if not a.affine:
            return []
        return [Param("weight", [a.num_features], {"dist": "ones"}), Param("bias", [a.num_features], {"dist": "zeros"})]

    def call(self, ck, a, inputs, kwinputs):
        _one_input(inputs, kwinputs, "input", "BatchNorm")
        w, b = ("@weight", "@bias") if a.affine else (None, None)
        return Call("F.batch_norm", "batch_norm", ["INPUT", None, None, w, b],
                    {"training": True, "momentum": a.momentum, "eps": a.eps}, )


class GroupNorm(Kind):
    def __init__(self):
        super().__init__("num_groups, num_channels, eps=1e-05, affine=True, device=None, dtype=None")

    def params(self, ck, a):
        ck.divides(a.num_channels, ck.const_int(a.num_groups, "num_groups"), "num_channels by num_groups")
        if not a.affine:
            return []
        return [Param("weight", [a.num_channels], {"dist": "ones"}), Param("bias", [a.num_channels], {"dist": "zeros"})]

    def call(self, ck, a, inputs, kwinputs):
        _one_input(inputs, kwinputs, "input", "GroupNorm")
        w, b = ("@weight", "@bias") if a.affine else (None, None)
        return Call("F.group_norm", "group_norm", ["INPUT", a.num_groups, w, b], {"eps": a.eps})


class LayerNorm(Kind):
    def __init__(self):
        super().__init__("normalized_shape, eps=1e-05, elementwise_affine=True, bias=True, device=None, dtype=None")

    def shape(self, a) -> tuple:
        ns = a.normalized_shape
        return tuple(ns) if isinstance(ns, (list, tuple)) else (ns,)

    def params(self, ck, a):
        if not a.elementwise_affine:
            return []
        out = [Param("weight", list(self.shape(a)), {"dist": "ones"})]
        if a.bias:
            out.append(Param("bias", list(self.shape(a)), {"dist": "zeros"}))
        return out

    def call(self, ck, a, inputs, kwinputs):
        _one_input(inputs, kwinputs, "input", "LayerNorm")
        w = "@weight" if a.elementwise_affine else None
        b = "@bias" if a.elementwise_affine and a.bias else None
        return Call("F.layer_norm", "layer_norm", ["INPUT", self.shape(a), w, b], {"eps": a.eps})


class InstanceNorm(Kind):
    """Statistics of each input, in training and eval mode alike (without running statistics)."""

    def __init__(self):
        super().__init__("num_features, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False, "
                         "device=None, dtype=None")

    def params(self, ck, a):
        if not a.affine:
            return []
        return [Param("weight", [a.num_features], {"dist": "ones"}), Param("bias", [a.num_features], {"dist": "zeros"})]

    def call(self, ck, a, inputs, kwinputs):
        _one_input(inputs, kwinputs, "input", "InstanceNorm")
        kw = {"weight": "@weight", "bias": "@bias"} if a.affine else {}
        kw["eps"] = a.eps
        return Call("F.instance_norm", "instance_norm", ["INPUT"], kw)


class Dropout(Kind):
    def __init__(self, name: str):
        super().__init__("p=0.5, inplace=False")
        self.name = name

    def call(self, ck, a, inputs, kwinputs):
        _one_input(inputs, kwinputs, "input", self.name)
        if a.p:
            raise Untranslatable(f"nn.{self.name}(p={a.p}) is active (KernelBench never calls .eval()): its random "
                                 "mask has no deterministic reference")
        return Call("F.dropout", "dropout", ["INPUT"], {"p": 0.0, "training": True})


class Identity(Kind):
    def __init__(self):
        super().__init__("*args, **kwargs")

    def call(self, ck, a, inputs, kwinputs):
        _one_input(inputs, kwinputs, "input", "Identity")
        return Call("", "identity", ["INPUT"], {})


def _no_indices(a):
    if a.return_indices:
        raise Untranslatable("max pooling with return_indices=True")


_LOSS = "size_average=None, reduce=None, reduction='mean'"
_NO_LEGACY = ("size_average", "reduce")

KINDS: dict = {
    "Linear": Linear(),
    "GroupNorm": GroupNorm(),
    "LayerNorm": LayerNorm(),
    "Identity": Identity(),
    "Flatten": Functional("start_dim=1, end_dim=-1", "torch.flatten", "flatten", ["start_dim", "end_dim"]),
    "ReLU": Functional("inplace=False", "torch.relu", "relu", []),
    "ReLU6": Functional("inplace=False", "F.relu6", "relu6", []),
    "Sigmoid": Functional("", "torch.sigmoid", "sigmoid", []),
    "Tanh": Functional("", "torch.tanh", "tanh", []),
    "SiLU": Functional("inplace=False", "F.silu", "silu", []),
    "Mish": Functional("inplace=False", "F.mish", "mish", []),
    "Hardswish": Functional("inplace=False", "F.hardswish", "hardswish", []),
    "Hardsigmoid": Functional("inplace=False", "F.hardsigmoid", "hardsigmoid", []),
    "SELU": Functional("inplace=False", "F.selu", "selu", []),
    "Softsign": Functional("", "F.softsign", "softsign", []),
    "LogSigmoid": Functional("", "F.logsigmoid", "logsigmoid", []),
    "GELU": Functional("approximate='none'", "F.gelu", "gelu", ["approximate"]),
    "LeakyReLU": Functional("negative_slope=0.01, inplace=False", "F.leaky_relu", "leaky_relu", ["negative_slope"]),
    "ELU": Functional("alpha=1.0, inplace=False", "F.elu", "elu", ["alpha"]),
    "CELU": Functional("alpha=1.0, inplace=False", "F.celu", "celu", ["alpha"]),
    "Hardtanh": Functional("min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None", "F.hardtanh",
                           "hardtanh", ["min_val", "max_val"]),
    "Softplus": Functional("beta=1.0, threshold=20.0", "F.softplus", "softplus", ["beta", "threshold"]),
    "Softmax": Functional("dim=None", "F.softmax", "softmax", ["dim"]),
    "LogSoftmax": Functional("dim=None", "F.log_softmax", "log_softmax", ["dim"]),
    "MSELoss": Functional(_LOSS, "F.mse_loss", "mse_loss", ["reduction"], 2),
    "L1Loss": Functional(_LOSS, "F.l1_loss", "l1_loss", ["reduction"], 2),
    "SmoothL1Loss": Functional(f"{_LOSS}, beta=1.0", "F.smooth_l1_loss", "smooth_l1_loss", ["reduction", "beta"], 2),
    "HuberLoss": Functional("reduction='mean', delta=1.0", "F.huber_loss", "huber_loss", ["reduction", "delta"], 2),
    "KLDivLoss": Functional(f"{_LOSS}, log_target=False", "F.kl_div", "kl_div", ["reduction", "log_target"], 2),
    "CrossEntropyLoss": Functional("weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', "
                                   "label_smoothing=0.0", "F.cross_entropy", "cross_entropy",
                                   ["ignore_index", "reduction", "label_smoothing"], 2),
    "NLLLoss": Functional("weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean'",
                          "F.nll_loss", "nll_loss", ["ignore_index", "reduction"], 2),
    "BCELoss": Functional(f"weight=None, {_LOSS}", "F.binary_cross_entropy", "binary_cross_entropy", ["reduction"], 2),
    "BCEWithLogitsLoss": Functional(f"weight=None, {_LOSS}, pos_weight=None", "F.binary_cross_entropy_with_logits",
                                    "binary_cross_entropy_with_logits", ["reduction"], 2),
    "TripletMarginLoss": Functional(f"margin=1.0, p=2.0, eps=1e-06, swap=False, {_LOSS}", "F.triplet_margin_loss",
                                    "triplet_margin_loss", ["margin", "p", "eps", "swap", "reduction"], 3),
    "CosineEmbeddingLoss": Functional(f"margin=0.0, {_LOSS}", "F.cosine_embedding_loss", "cosine_embedding_loss",
                                      ["margin", "reduction"], 3),
    "MarginRankingLoss": Functional(f"margin=0.0, {_LOSS}", "F.margin_ranking_loss", "margin_ranking_loss",
                                    ["margin", "reduction"], 3),
    "HingeEmbeddingLoss": Functional(f"margin=1.0, {_LOSS}", "F.hinge_embedding_loss", "hinge_embedding_loss",
                                     ["margin", "reduction"], 2),
}
for _name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"):
    KINDS[_name] = Dropout(_name)
for _n in (1, 2, 3):
    KINDS[f"Conv{_n}d"] = Conv(_n, False)
    KINDS[f"ConvTranspose{_n}d"] = Conv(_n, True)
    KINDS[f"BatchNorm{_n}d"] = BatchNorm((2, 3) if _n == 1 else (_n + 2,))
    KINDS[f"InstanceNorm{_n}d"] = InstanceNorm()
    KINDS[f"MaxPool{_n}d"] = Functional(
        "kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False", f"F.max_pool{_n}d",
        f"max_pool{_n}d", ["kernel_size", "stride", "padding", "dilation", "ceil_mode"], check=_no_indices)
    avg_keys = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]
    KINDS[f"AvgPool{_n}d"] = Functional(
        "kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True"
        + ("" if _n == 1 else ", divisor_override=None"), f"F.avg_pool{_n}d", f"avg_pool{_n}d",
        avg_keys + ([] if _n == 1 else ["divisor_override"]))
    KINDS[f"AdaptiveAvgPool{_n}d"] = Functional("output_size", f"F.adaptive_avg_pool{_n}d", f"adaptive_avg_pool{_n}d",
                                                ["output_size"])
    KINDS[f"AdaptiveMaxPool{_n}d"] = Functional("output_size, return_indices=False", f"F.adaptive_max_pool{_n}d",
                                                f"adaptive_max_pool{_n}d", ["output_size"], check=_no_indices)


def check_rank(kind_name: str, rank: int):
    """The input ranks a module's forward accepts, where the functional call would accept more."""
    kind = KINDS[kind_name]
    if isinstance(kind, BatchNorm) and rank not in kind.ranks:
        raise ShapeError(f"nn.{kind_name} expects an input of rank {' or '.join(map(str, kind.ranks))}, got {rank}", 0)
