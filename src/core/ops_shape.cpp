// Op family 'shape': views and layout changes (reshape, transpose, permute, squeeze, expand, flip).
#include <algorithm>

#include "core/op_families.h"

namespace kevo {

namespace {

Value emit_like(Lowering& L, const std::string& op, int x, std::map<std::string, AttrValue> attrs, Shape shape) {
  return Value::of_tensor(L.emit1(op, {x}, std::move(attrs), L.dtype(x), std::move(shape)));
}

Value reshape_to(Lowering& L, int x, const Shape& shape) { return emit_like(L, "reshape", x, {{"shape", shape}}, shape); }

// Resolves the one -1 of a requested shape against `count` elements, as torch's infer_size does.
Shape infer_shape(const Args& a, const std::string& name, const Shape& requested, int64_t count) {
  Shape shape = requested;
  int64_t known = 1;
  int inferred = -1;
  std::string invalid = "shape " + shape_string(requested) + " is invalid for input of size " + std::to_string(count);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) a.fail(name, "only one dimension can be inferred, got " + shape_string(requested));
      inferred = static_cast<int>(i);
    } else if (shape[i] < 0) {
      a.fail(name, "invalid shape dimension " + std::to_string(shape[i]) + " in " + shape_string(requested));
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      a.fail(name, invalid);
    }
  }
  if (inferred < 0) {
    if (known != count) a.fail(name, invalid);
    return shape;
  }
  if (known == 0 && count == 0)
    a.fail(name, "cannot reshape a tensor of 0 elements into shape " + shape_string(requested) +
                     ": the size of the -1 dimension is ambiguous");
  if (known == 0 || count % known != 0) a.fail(name, invalid);
  shape[inferred] = count / known;
  return shape;
}

// reshape(input, shape) and its spellings; `shape_param` names the sizes' parameter.
LowerFn reshape_op(const std::string& shape_param) {
  return [shape_param](Lowering& L, const Args& a) {
    int x = a.tensor("input");
    return reshape_to(L, x, infer_shape(a, shape_param, a.int_list(shape_param), numel(L.shape(x))));
  };
}

Value transpose(Lowering& L, int x, int64_t d0, int64_t d1) {
  Shape s = L.shape(x);
  if (!s.empty()) std::swap(s[d0], s[d1]);
  return emit_like(L, "transpose", x, {{"dim0", d0}, {"dim1", d1}}, s);
}

LowerFn transpose_op(const std::string& p0, const std::string& p1) {
  return [p0, p1](Lowering& L, const Args& a) {
    int x = a.tensor("input");
    return transpose(L, x, dim_arg(L, a, p0, x), dim_arg(L, a, p1, x));
  };
}

Value permute(Lowering& L, int x, const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims) s.push_back(L.shape(x)[d]);
  return emit_like(L, "permute", x, {{"dims", dims}}, s);
}

Value lower_permute(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  std::vector<int64_t> dims = a.int_list("dims");
  if (static_cast<int64_t>(dims.size()) != L.rank(x))
    a.fail("dims", "permute needs " + std::to_string(L.rank(x)) + " dims for a tensor of shape " +
                       shape_string(L.shape(x)) + ", got " + std::to_string(dims.size()));
  return permute(L, x, normalize_dims(L, dims, L.rank(x), a.pos("dims")));
}

// Tensor.T reverses all dims (torch deprecates it below and above rank 2 but still does that).
Value lower_T(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  if (L.rank(x) <= 2) return transpose(L, x, 0, L.rank(x) == 2 ? 1 : 0);
  std::vector<int64_t> dims;
  for (int64_t d = L.rank(x) - 1; d >= 0; --d) dims.push_back(d);
  return permute(L, x, dims);
}

Value lower_t(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  if (L.rank(x) > 2) L.fail("t() expects a tensor of rank <= 2, got shape " + shape_string(L.shape(x)));
  return lower_T(L, a);
}

Value lower_mT(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  int64_t r = L.rank(x);
  if (r < 2) L.fail("mT needs a matrix or a batch of matrices, got shape " + shape_string(L.shape(x)));
  return transpose(L, x, r - 2, r - 1);
}

Value lower_unsqueeze(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  int64_t r = L.rank(x), dim = a.integer("dim");
  if (dim < -r - 1 || dim > r)
    a.fail("dim", "dim " + std::to_string(dim) + " is out of range for unsqueeze of a tensor of rank " +
                      std::to_string(r) + " (expected " + std::to_string(-r - 1) + ".." + std::to_string(r) + ")");
  if (dim < 0) dim += r + 1;
  Shape s = L.shape(x);
  s.insert(s.begin() + dim, 1);
  return emit_like(L, "unsqueeze", x, {{"dim", dim}}, s);
}

// Only dims of size 1 are removed; the node lists exactly those.
Value lower_squeeze(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  const Shape& in = L.shape(x);
  std::vector<int64_t> asked;
  if (a.is_none("dim")) {
    for (size_t d = 0; d < in.size(); ++d) asked.push_back(static_cast<int64_t>(d));
  } else {
    asked = normalize_dims(L, a.ints("dim"), L.rank(x), a.pos("dim"));
  }
  std::vector<int64_t> removed;
  for (int64_t d : asked)
    if (d < static_cast<int64_t>(in.size()) && in[d] == 1) removed.push_back(d);
  std::sort(removed.begin(), removed.end());
  Shape s;
  for (size_t d = 0; d < in.size(); ++d)
    if (!std::binary_search(removed.begin(), removed.end(), static_cast<int64_t>(d))) s.push_back(in[d]);
  return emit_like(L, "squeeze", x, {{"dims", removed}}, s);
}

// Sizes for expand: -1 keeps an existing dim; new dims may only be added in front.
Shape expand_shape(const Args& a, const std::string& name, const Shape& from, const Shape& to) {
  if (to.size() < from.size())
    a.fail(name, "the number of sizes provided (" + std::to_string(to.size()) +
                     ") must be greater or equal to the number of dimensions in the tensor (" +
                     std::to_string(from.size()) + ")");
  size_t lead = to.size() - from.size();
  Shape out(to.size());
  for (size_t i = 0; i < to.size(); ++i) {
    if (i < lead) {
      if (to[i] < 0)
        a.fail(name, "the expanded size " + std::to_string(to[i]) + " is not allowed in a new leading dimension " +
                         std::to_string(i));
      out[i] = to[i];
      continue;
    }
    int64_t src = from[i - lead];
    if (to[i] == -1) out[i] = src;
    else if (to[i] < 0) a.fail(name, "invalid size " + std::to_string(to[i]) + " in " + shape_string(to));
    else if (src == to[i] || src == 1) out[i] = to[i];
    else
      a.fail(name, "the expanded size " + std::to_string(to[i]) + " must match the existing size " +
                       std::to_string(src) + " at non-singleton dimension " + std::to_string(i) + " (target " +
                       shape_string(to) + ", tensor " + shape_string(from) + ")");
  }
  return out;
}

LowerFn expand_op(const std::string& size_param) {
  return [size_param](Lowering& L, const Args& a) {
    int x = a.tensor("input");
    Shape s = expand_shape(a, size_param, L.shape(x), a.int_list(size_param));
    return emit_like(L, "expand", x, {{"shape", s}}, s);
  };
}

Value lower_expand_as(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  Shape s = expand_shape(a, "other", L.shape(x), L.shape(a.tensor("other")));
  return emit_like(L, "expand", x, {{"shape", s}}, s);
}

Value lower_reshape_as(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  const Shape& s = L.shape(a.tensor("other"));
  if (numel(s) != numel(L.shape(x)))
    a.fail("other", "shape " + shape_string(s) + " is invalid for input of size " + std::to_string(numel(L.shape(x))));
  return reshape_to(L, x, s);
}

Value lower_flatten(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  const Shape& in = L.shape(x);
  int64_t start = dim_arg(L, a, "start_dim", x), end = dim_arg(L, a, "end_dim", x);
  if (start > end)
    a.fail("start_dim", "start_dim " + std::to_string(a.integer("start_dim")) + " cannot come after end_dim " +
                            std::to_string(a.integer("end_dim")));
  if (in.empty()) return reshape_to(L, x, {1});
  Shape s(in.begin(), in.begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= in[d];
  s.push_back(merged);
  s.insert(s.end(), in.begin() + end + 1, in.end());
  return reshape_to(L, x, s);
}

Value lower_unflatten(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  const Shape& in = L.shape(x);
  if (in.empty()) L.fail("unflatten needs a tensor of rank >= 1");
  int64_t dim = dim_arg(L, a, "dim", x);
  std::vector<int64_t> sizes = a.int_list("sizes");
  if (sizes.empty()) a.fail("sizes", "must not be empty");
  Shape part = infer_shape(a, "sizes", sizes, in[dim]);
  Shape s(in.begin(), in.begin() + dim);
  s.insert(s.end(), part.begin(), part.end());
  s.insert(s.end(), in.begin() + dim + 1, in.end());
  return reshape_to(L, x, s);
}

Value lower_flip(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  std::vector<int64_t> dims = normalize_dims(L, a.int_list("dims"), L.rank(x), a.pos("dims"));
  std::sort(dims.begin(), dims.end());
  return emit_like(L, "flip", x, {{"dims", dims}}, L.shape(x));
}

}  // namespace

void register_shape_ops(OpTable& t) {
  t.add({"torch.reshape"}, "input, shape", reshape_op("shape"));
  t.add({"Tensor.reshape"}, "input, *shape", reshape_op("shape"));
  t.add({"Tensor.view"}, "input, *size", reshape_op("size"));
  t.add({"Tensor.view_as", "Tensor.reshape_as"}, "input, other", lower_reshape_as);
  t.add({"torch.flatten", "Tensor.flatten"}, "input, start_dim=0, end_dim=-1", lower_flatten);
  t.add({"torch.unflatten", "Tensor.unflatten"}, "input, dim, sizes", lower_unflatten);

  t.add({"torch.transpose", "Tensor.transpose", "torch.swapdims", "Tensor.swapdims"}, "input, dim0, dim1",
        transpose_op("dim0", "dim1"));
  t.add({"torch.swapaxes", "Tensor.swapaxes"}, "input, axis0, axis1", transpose_op("axis0", "axis1"));
  t.add({"torch.t", "Tensor.t"}, "input", lower_t);
  t.add({"Tensor.T"}, "input", lower_T);
  t.add({"Tensor.mT"}, "input", lower_mT);
  t.add({"torch.permute"}, "input, dims", lower_permute);
  t.add({"Tensor.permute"}, "input, *dims", lower_permute);

  t.add({"torch.unsqueeze", "Tensor.unsqueeze"}, "input, dim", lower_unsqueeze);
  t.add({"torch.squeeze", "Tensor.squeeze"}, "input, dim=None", lower_squeeze);
  t.add({"Tensor.expand"}, "input, *size", expand_op("size"));
  t.add({"torch.broadcast_to", "Tensor.broadcast_to"}, "input, size", expand_op("size"));
  t.add({"Tensor.expand_as"}, "input, other", lower_expand_as);
  t.add({"Tensor.contiguous"}, "input", [](Lowering& L, const Args& a) {
    int x = a.tensor("input");
    return emit_like(L, "contiguous", x, {}, L.shape(x));
  });
  t.add({"torch.flip"}, "input, dims", lower_flip);
  t.add({"Tensor.flip"}, "input, *dims", lower_flip);
}

}  // namespace kevo
