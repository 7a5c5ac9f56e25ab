// Op family 'slice': indexing x[...], select, narrow, chunk, split, unbind, cat and stack.
#include <algorithm>
#include <string>
#include <vector>

#include "core/op_families.h"

namespace kevo {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

Value emit_like(Lowering& L, const std::string& op, int x, std::map<std::string, AttrValue> attrs, Shape shape) {
  return Value::of_tensor(L.emit1(op, {x}, std::move(attrs), L.dtype(x), std::move(shape)));
}

// x[start:end:step] along one dim, bounds already normalized into [0, size] with start <= end.
int slice(Lowering& L, int x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Shape s = L.shape(x);
  s[dim] = (end - start + step - 1) / step;
  return emit_like(L, "slice", x, {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}}, s).tensor;
}

// x.select(dim, index) with index in [0, size).
int select(Lowering& L, int x, int64_t dim, int64_t index) {
  Shape s = L.shape(x);
  s.erase(s.begin() + dim);
  return emit_like(L, "select", x, {{"dim", dim}, {"index", index}}, s).tensor;
}

// Python's clamping of a slice bound to [0, size] for a positive step.
int64_t clamp_bound(int64_t i, int64_t size) { return std::min(std::max(i < 0 ? i + size : i, int64_t{0}), size); }

// The dim an index entry consumes; x[:, 3] selects in dim 1.
int consumed_dims(const std::vector<TensorIndex>& index) {
  int n = 0;
  for (const TensorIndex& t : index) n += t.kind == TensorIndex::Kind::Int || t.kind == TensorIndex::Kind::Slice;
  return n;
}

// Sizes of `count` pieces: split_size each, the last one the rest (torch.split with an int).
std::vector<int64_t> even_pieces(int64_t size, int64_t split_size) {
  std::vector<int64_t> sizes;
  if (size == 0) return {0};
  for (int64_t at = 0; at < size; at += split_size) sizes.push_back(std::min(split_size, size - at));
  return sizes;
}

Value split_into(Lowering& L, int x, int64_t dim, const std::vector<int64_t>& sizes) {
  std::vector<int> pieces;
  int64_t at = 0;
  for (int64_t n : sizes) {
    pieces.push_back(slice(L, x, dim, at, at + n, 1));
    at += n;
  }
  std::vector<Value> items;
  for (int p : pieces) items.push_back(Value::of_tensor(p));
  return Value::tuple(std::move(items));  // a tuple even of one piece, as torch returns
}

Value lower_narrow(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  if (L.rank(x) == 0) L.fail("narrow() cannot be applied to a 0-dim tensor");
  int64_t dim = dim_arg(L, a, "dim", x), size = L.shape(x)[dim];
  if (a.get("start").kind == Value::Kind::Tensor) a.fail("start", "a Tensor start is not supported; pass an int");
  int64_t start = a.integer("start"), length = a.integer("length");
  if (start < -size || start > size)
    a.fail("start", "start out of range (expected to be in range of [" + str(-size) + ", " + str(size) + "], but got " +
                        str(start) + ")");
  if (start < 0) start += size;
  if (length < 0) a.fail("length", "narrow(): length must be non-negative, got " + str(length));
  if (start + length > size)
    a.fail("length",
           "start (" + str(start) + ") + length (" + str(length) + ") exceeds dimension size (" + str(size) + ")");
  return Value::of_tensor(slice(L, x, dim, start, start + length, 1));
}

Value lower_select(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  if (L.rank(x) == 0) L.fail("select() cannot be applied to a 0-dim tensor");
  int64_t dim = dim_arg(L, a, "dim", x), size = L.shape(x)[dim], index = a.integer("index");
  if (index < -size || index >= size)
    a.fail("index", "select(): index " + str(index) + " out of range for tensor of size " + shape_string(L.shape(x)) +
                        " at dimension " + str(dim));
  return Value::of_tensor(select(L, x, dim, index < 0 ? index + size : index));
}

Value lower_chunk(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  if (L.rank(x) == 0) L.fail("chunk expects at least a 1-dimensional tensor");
  int64_t chunks = a.integer("chunks");
  if (chunks <= 0) a.fail("chunks", "chunk expects `chunks` to be greater than 0, got: " + str(chunks));
  int64_t dim = dim_arg(L, a, "dim", x), size = L.shape(x)[dim];
  return split_into(L, x, dim, even_pieces(size, std::max<int64_t>((size + chunks - 1) / chunks, 1)));
}

// split(x, 2) cuts pieces of 2; split(x, [1, 3]) cuts pieces of those sizes.
Value lower_split(Lowering& L, const Args& a, const std::string& param) {
  int x = a.tensor("input");
  if (L.rank(x) == 0) L.fail("split expects at least a 1-dimensional tensor");
  int64_t dim = dim_arg(L, a, "dim", x), size = L.shape(x)[dim];
  if (a.get(param).kind == Value::Kind::Int) {
    int64_t n = a.integer(param);
    if (n < 0) a.fail(param, "split expects split_size be non-negative, but got split_size=" + str(n));
    if (n == 0 && size != 0)
      a.fail(param, "split_size can only be 0 if dimension size is 0, but got dimension size of " + str(size));
    return split_into(L, x, dim, n == 0 ? std::vector<int64_t>{0} : even_pieces(size, n));
  }
  std::vector<int64_t> sizes = a.int_list(param);
  int64_t total = 0;
  for (int64_t n : sizes) {
    if (n < 0)
      a.fail(param, "split_with_sizes expects split_sizes have only non-negative entries, got " + shape_string(sizes));
    total += n;
  }
  if (total != size)
    a.fail(param, "split_with_sizes expects split_sizes to sum exactly to " + str(size) +
                      " (input tensor's size at dimension " + str(dim) +
                      "), but got split_sizes=" + shape_string(sizes));
  return split_into(L, x, dim, sizes);
}

Value lower_unbind(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  if (L.rank(x) == 0) L.fail("dimension specified as 0 but tensor has no dimensions");
  int64_t dim = dim_arg(L, a, "dim", x);
  std::vector<Value> items;
  for (int64_t i = 0; i < L.shape(x)[dim]; ++i) items.push_back(Value::of_tensor(select(L, x, dim, i)));
  return Value::tuple(std::move(items));
}

// The tensors of cat/stack, non-empty, with their promoted dtype.
std::vector<int> tensor_list(Lowering& L, const Args& a, const std::string& name, const std::string& op, DType& dtype) {
  std::vector<int> xs = a.tensors(name);
  if (xs.empty()) a.fail(name, op + "(): expected a non-empty list of Tensors");
  dtype = L.dtype(xs[0]);
  for (int x : xs) dtype = promote_types(dtype, L.dtype(x));
  return xs;
}

int cat(Lowering& L, const Args& a, const std::string& list, const std::string& dim_param, const std::vector<int>& xs,
        DType dtype) {
  const Shape& first = L.shape(xs[0]);
  if (first.empty()) a.fail(list, "zero-dimensional tensor (at position 0) cannot be concatenated");
  int64_t dim = normalize_dim(L, a.integer(dim_param), static_cast<int64_t>(first.size()), a.pos(dim_param));
  Shape s = first;
  for (size_t k = 1; k < xs.size(); ++k) {
    const Shape& other = L.shape(xs[k]);
    if (other.size() != first.size())
      a.fail(list,
             "Tensors must have same number of dimensions: got " + str(first.size()) + " and " + str(other.size()));
    for (size_t d = 0; d < first.size(); ++d)
      if (static_cast<int64_t>(d) != dim && other[d] != first[d])
        a.fail(list, "Sizes of tensors must match except in dimension " + str(dim) + ". Expected size " +
                         str(first[d]) + " but got size " + str(other[d]) + " for tensor number " + str(k) +
                         " in the list.");
    s[dim] += other[dim];
  }
  return L.emit1("cat", xs, {{"dim", dim}}, dtype, s);
}

LowerFn cat_op(const std::string& dim_param) {
  return [dim_param](Lowering& L, const Args& a) {
    DType dtype;
    std::vector<int> xs = tensor_list(L, a, "tensors", "cat", dtype);
    return Value::of_tensor(cat(L, a, "tensors", dim_param, xs, dtype));
  };
}

// stack is cat of the tensors each unsqueezed at dim.
Value lower_stack(Lowering& L, const Args& a) {
  DType dtype;
  std::vector<int> xs = tensor_list(L, a, "tensors", "stack", dtype);
  const Shape& first = L.shape(xs[0]);
  int64_t r = static_cast<int64_t>(first.size()), dim = a.integer("dim");
  if (dim < -r - 1 || dim > r)
    a.fail("dim", "dim " + str(dim) + " is out of range for stacking tensors of rank " + str(r) + " (expected " +
                      str(-r - 1) + ".." + str(r) + ")");
  if (dim < 0) dim += r + 1;
  std::vector<int> expanded;
  for (size_t k = 0; k < xs.size(); ++k) {
    if (L.shape(xs[k]) != first)
      a.fail("tensors", "stack expects each tensor to be equal size, but got " + shape_string(first) +
                            " at entry 0 and " + shape_string(L.shape(xs[k])) + " at entry " + str(k));
    Shape s = first;
    s.insert(s.begin() + dim, 1);
    expanded.push_back(emit_like(L, "unsqueeze", xs[k], {{"dim", dim}}, s).tensor);
  }
  Shape s = first;
  s.insert(s.begin() + dim, static_cast<int64_t>(xs.size()));
  return Value::of_tensor(L.emit1("cat", expanded, {{"dim", dim}}, dtype, s));
}

}  // namespace

Value lower_subscript(Lowering& L, int x, const std::vector<TensorIndex>& index) {
  int64_t rank = L.rank(x);
  int ellipses = 0;
  for (const TensorIndex& t : index)
    if (t.kind == TensorIndex::Kind::Ellipsis && ++ellipses > 1)
      L.fail(t.pos, "an index can only have a single ellipsis ('...')");
  if (consumed_dims(index) > rank)
    L.fail("too many indices for tensor of dimension " + str(rank) + " (got " + str(consumed_dims(index)) + ")");
  int y = x;
  int64_t dim = 0;  // the dim of y the next entry applies to
  for (const TensorIndex& t : index) {
    switch (t.kind) {
      case TensorIndex::Kind::Ellipsis:
        dim += rank - consumed_dims(index);
        break;
      case TensorIndex::Kind::None: {
        Shape s = L.shape(y);
        s.insert(s.begin() + dim, 1);
        y = emit_like(L, "unsqueeze", y, {{"dim", dim}}, s).tensor;
        ++dim;
        break;
      }
      case TensorIndex::Kind::Int: {
        int64_t size = L.shape(y)[dim];
        if (t.index < -size || t.index >= size)
          L.fail(t.pos,
                 "index " + str(t.index) + " is out of bounds for dimension " + str(dim) + " with size " + str(size));
        y = select(L, y, dim, t.index < 0 ? t.index + size : t.index);
        break;
      }
      case TensorIndex::Kind::Slice: {
        int64_t size = L.shape(y)[dim], step = t.step.value_or(1);
        if (step <= 0)
          L.fail(t.pos,
                 "step must be greater than zero, got " + str(step) + " (torch has no negative steps: use flip)");
        int64_t start = clamp_bound(t.start.value_or(0), size), end = clamp_bound(t.stop.value_or(size), size);
        end = std::max(start, end);
        // A full slice (x[:]) is the tensor itself.
        if (start != 0 || end != size || step != 1) y = slice(L, y, dim, start, end, step);
        ++dim;
        break;
      }
    }
  }
  return Value::of_tensor(y);
}

void register_slice_ops(OpTable& t) {
  t.add({"torch.narrow", "Tensor.narrow"}, "input, dim, start, length", lower_narrow);
  t.add({"torch.select", "Tensor.select"}, "input, dim, index", lower_select);
  t.add({"torch.chunk", "Tensor.chunk"}, "input, chunks, dim=0", lower_chunk);
  t.add({"torch.split"}, "input, split_size_or_sections, dim=0",
        [](Lowering& L, const Args& a) { return lower_split(L, a, "split_size_or_sections"); });
  t.add({"Tensor.split"}, "input, split_size, dim=0",
        [](Lowering& L, const Args& a) { return lower_split(L, a, "split_size"); });
  t.add({"torch.unbind", "Tensor.unbind"}, "input, dim=0", lower_unbind);
  t.add({"torch.cat", "torch.concat"}, "tensors, dim=0", cat_op("dim"));
  t.add({"torch.concatenate"}, "tensors, axis=0", cat_op("axis"));
  t.add({"torch.stack"}, "tensors, dim=0", lower_stack);
}

}  // namespace kevo
