// Op family 'reduction': reductions over dims, arg/max/min overloads, softmax and scans.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/op_families.h"

namespace kevo {

namespace {

std::vector<int64_t> all_dims(int64_t rank) {
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  std::iota(dims.begin(), dims.end(), 0);
  return dims;
}

// An optional single dim (prod, argmax): the given one, normalized, or every dim when None.
std::vector<int64_t> one_or_all_dims(const Lowering& L, const Args& a, std::optional<int64_t> dim, int x) {
  return dim ? std::vector<int64_t>{normalize_dim(L, *dim, L.rank(x), a.pos("dim"))} : all_dims(L.rank(x));
}

// The dims argument of a reduction, normalized and sorted (the order of reduced dims does not
// matter); None and () mean every dim, as in torch.
std::vector<int64_t> reduction_dims(Lowering& L, const Args& a, int x) {
  std::optional<std::vector<int64_t>> dims = a.opt_ints("dim");
  if (!dims || dims->empty()) return all_dims(L.rank(x));
  std::vector<int64_t> out = normalize_dims(L, *dims, L.rank(x), a.pos("dim"));
  std::sort(out.begin(), out.end());
  return out;
}

// The input, cast to `dtype` when one is given: torch casts before the op, so sum(x, dtype=
// torch.float32) of float16 values adds them in float32 and softmax(x, dim, dtype=...) too.
int input_in_dtype(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  std::optional<DType> t = a.opt_dtype("dtype");
  return t ? lower_cast(L, x, *t) : x;
}

void require_floating(Lowering& L, const std::string& op, int x) {
  if (!is_floating(L.dtype(x))) L.fail(op + " needs a floating-point tensor, got " + dtype_name(L.dtype(x)));
}

// max, min and arg reductions have no identity element: torch refuses empty reductions.
void require_nonempty(Lowering& L, const std::string& op, int x, const std::vector<int64_t>& dims) {
  const Shape& s = L.shape(x);
  for (int64_t d : dims)
    if (d < static_cast<int64_t>(s.size()) && s[d] == 0)
      L.fail(op + ": cannot reduce dim " + std::to_string(d) + " of size 0");
}

// Sums and products accumulate integers and bools in int64, as torch does.
DType accumulating_dtype(DType t) { return is_floating(t) ? t : DType::Int64; }

int emit_reduction(Lowering& L, const std::string& op, int x, const std::vector<int64_t>& dims, bool keepdim,
                   DType out, std::map<std::string, AttrValue> attrs = {}) {
  attrs["dim"] = dims;
  attrs["keepdim"] = keepdim;
  return L.emit1(op, {x}, std::move(attrs), out, reduced_shape(L.shape(x), dims, keepdim));
}

// An integer sum, product or scan in int64, cast to the dtype asked for (torch.sum(x, dtype=
// torch.int32) is int32); floating ones are computed in their own dtype.
int in_asked_dtype(Lowering& L, const Args& a, int y) {
  std::optional<DType> t = a.opt_dtype("dtype");
  return t ? lower_cast(L, y, *t) : y;
}

Value lower_sum(Lowering& L, const Args& a) {
  int x = input_in_dtype(L, a);
  int sum = emit_reduction(L, "sum", x, reduction_dims(L, a, x), a.boolean("keepdim"), accumulating_dtype(L.dtype(x)));
  return Value::of_tensor(in_asked_dtype(L, a, sum));
}

Value lower_mean(Lowering& L, const Args& a) {
  int x = input_in_dtype(L, a);
  require_floating(L, "mean", x);
  return Value::of_tensor(emit_reduction(L, "mean", x, reduction_dims(L, a, x), a.boolean("keepdim"), L.dtype(x)));
}

// torch.prod reduces one dim or all of them; there is no tuple form.
Value lower_prod(Lowering& L, const Args& a) {
  int x = input_in_dtype(L, a);
  bool keepdim = a.boolean("keepdim");
  std::optional<int64_t> dim = a.opt_integer("dim");
  if (!dim && keepdim) a.fail("keepdim", "is only accepted together with dim");
  std::vector<int64_t> dims = one_or_all_dims(L, a, dim, x);
  int prod = emit_reduction(L, "prod", x, dims, keepdim, accumulating_dtype(L.dtype(x)));
  return Value::of_tensor(in_asked_dtype(L, a, prod));
}

LowerFn extremum(const std::string& op) {
  return [op](Lowering& L, const Args& a) {
    int x = a.tensor("input");
    std::vector<int64_t> dims = reduction_dims(L, a, x);
    require_nonempty(L, op, x, dims);
    return Value::of_tensor(emit_reduction(L, op, x, dims, a.boolean("keepdim"), L.dtype(x)));
  };
}

Value lower_logsumexp(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  require_floating(L, "logsumexp", x);
  if (a.ints("dim").empty()) a.fail("dim", "must name at least one dim");
  return Value::of_tensor(emit_reduction(L, "logsumexp", x, reduction_dims(L, a, x), a.boolean("keepdim"), L.dtype(x)));
}

// torch.norm: a number p is a vector norm over dim (all dims when None); 'fro' over one or two
// dims (or all) is the vector 2-norm. 'nuc' and 'fro' over more dims are matrix norms.
Value lower_norm(Lowering& L, const Args& a) {
  if (a.has("out") && !a.is_none("out")) a.fail("out", "out= is not supported");
  int x = input_in_dtype(L, a);
  require_floating(L, "norm", x);
  std::vector<int64_t> dims = reduction_dims(L, a, x);
  double p = 2.0;
  if (a.get("p").kind == Value::Kind::String) {
    std::string name = a.str("p");
    if (name == "nuc") a.fail("p", "the nuclear norm is not supported");
    if (name != "fro") a.fail("p", "must be a number, 'fro' or 'nuc', got '" + name + "'");
    if (!a.is_none("dim") && dims.size() > 2) a.fail("dim", "p='fro' needs at most 2 dims");
  } else if (!a.is_none("p")) {
    p = a.number("p");
    if (std::isnan(p)) a.fail("p", "must not be nan");
  }
  return Value::of_tensor(emit_reduction(L, "norm", x, dims, a.boolean("keepdim"), L.dtype(x), {{"p", p}}));
}

// argmax/argmin: dim=None searches the flattened input; keepdim then keeps every dim as size 1.
LowerFn arg_extremum(const std::string& op) {
  return [op](Lowering& L, const Args& a) {
    int x = a.tensor("input");
    if (L.dtype(x) == DType::Bool) L.fail(op + " does not support bool tensors");
    bool keepdim = a.boolean("keepdim");
    std::optional<int64_t> dim = a.opt_integer("dim");
    std::vector<int64_t> dims = one_or_all_dims(L, a, dim, x);
    require_nonempty(L, op, x, dims);
    std::map<std::string, AttrValue> attrs = {{"dim", std::monostate{}}, {"keepdim", keepdim}};
    if (dim) attrs["dim"] = dims[0];
    return Value::of_tensor(L.emit1(op, {x}, std::move(attrs), DType::Int64, reduced_shape(L.shape(x), dims, keepdim)));
  };
}

// torch.max/min overloads: (input) reduces everything, (input, dim, keepdim) gives values and
// indices, (input, other) is elementwise.
LowerFn max_min(const std::string& name, const std::string& reduce_op, const std::string& binary_op) {
  return [=](Lowering& L, const Args& a) {
    int x = a.tensor("input");
    const Value& dim = a.get("dim");
    const Value* other = dim.kind == Value::Kind::Tensor ? &dim : nullptr;
    if (!a.is_none("other")) {
      if (!a.is_none("dim")) a.fail("other", "cannot be given with dim");
      a.tensor("other");
      other = &a.get("other");
    }
    if (other) {
      if (a.boolean("keepdim")) a.fail("keepdim", "is not accepted when comparing two tensors");
      return lower_binary(L, binary_op, a.get("input"), *other);
    }
    if (dim.kind == Value::Kind::None) {
      if (a.boolean("keepdim")) a.fail("keepdim", "is only accepted together with dim");
      std::vector<int64_t> dims = all_dims(L.rank(x));
      require_nonempty(L, name, x, dims);
      return Value::of_tensor(emit_reduction(L, reduce_op, x, dims, false, L.dtype(x)));
    }
    int64_t d = dim_arg(L, a, "dim", x);
    require_nonempty(L, name, x, {d});
    bool keepdim = a.boolean("keepdim");
    Shape s = reduced_shape(L.shape(x), {d}, keepdim);
    Value result = Value::of_tensors(L.emit(name + "_dim", {x}, {{"dim", d}, {"keepdim", keepdim}},
                                            {{L.dtype(x), s}, {DType::Int64, s}}));
    result.fields = {"values", "indices"};  // torch.return_types.max: r.values, r.indices
    return result;
  };
}

// softmax and log_softmax; F.* spell dim=None for a legacy implicit dim that graphs refuse.
LowerFn softmax_like(const std::string& op) {
  return [op](Lowering& L, const Args& a) {
    int x = input_in_dtype(L, a);
    if (a.is_none("dim")) a.fail("dim", op + " needs dim");
    int64_t dim = dim_arg(L, a, "dim", x);
    return Value::of_tensor(lower_unary(L, op, x, {{"dim", dim}}));
  };
}

LowerFn scan(const std::string& op) {
  return [op](Lowering& L, const Args& a) {
    int x = input_in_dtype(L, a);
    int64_t dim = dim_arg(L, a, "dim", x);
    int y = L.emit1(op, {x}, {{"dim", dim}}, accumulating_dtype(L.dtype(x)), L.shape(x));
    return Value::of_tensor(in_asked_dtype(L, a, y));
  };
}

}  // namespace

void register_reduction_ops(OpTable& t) {
  t.add({"torch.sum", "Tensor.sum"}, "input, dim=None, keepdim=False, *, dtype=None", lower_sum);
  t.add({"torch.mean", "Tensor.mean"}, "input, dim=None, keepdim=False, *, dtype=None", lower_mean);
  t.add({"torch.prod", "Tensor.prod"}, "input, dim=None, keepdim=False, *, dtype=None", lower_prod);
  t.add({"torch.amax", "Tensor.amax"}, "input, dim=(), keepdim=False", extremum("amax"));
  t.add({"torch.amin", "Tensor.amin"}, "input, dim=(), keepdim=False", extremum("amin"));
  t.add({"torch.logsumexp", "Tensor.logsumexp"}, "input, dim, keepdim=False", lower_logsumexp);
  t.add({"torch.norm"}, "input, p='fro', dim=None, keepdim=False, out=None, dtype=None", lower_norm);
  t.add({"Tensor.norm"}, "input, p='fro', dim=None, keepdim=False, dtype=None", lower_norm);
  t.add({"torch.argmax", "Tensor.argmax"}, "input, dim=None, keepdim=False", arg_extremum("argmax"));
  t.add({"torch.argmin", "Tensor.argmin"}, "input, dim=None, keepdim=False", arg_extremum("argmin"));
  t.add({"torch.max", "Tensor.max"}, "input, dim=None, keepdim=False, *, other=None", max_min("max", "amax", "maximum"));
  t.add({"torch.min", "Tensor.min"}, "input, dim=None, keepdim=False, *, other=None", max_min("min", "amin", "minimum"));
  t.add({"torch.softmax", "Tensor.softmax"}, "input, dim, dtype=None", softmax_like("softmax"));
  t.add({"torch.nn.functional.softmax"}, "input, dim=None, _stacklevel=3, dtype=None", softmax_like("softmax"));
  t.add({"torch.log_softmax", "Tensor.log_softmax"}, "input, dim, dtype=None", softmax_like("log_softmax"));
  t.add({"torch.nn.functional.log_softmax"}, "input, dim=None, _stacklevel=3, dtype=None", softmax_like("log_softmax"));
  t.add({"torch.cumsum", "Tensor.cumsum"}, "input, dim, *, dtype=None", scan("cumsum"));
  t.add({"torch.cumprod", "Tensor.cumprod"}, "input, dim, *, dtype=None", scan("cumprod"));
}

}  // namespace kevo
