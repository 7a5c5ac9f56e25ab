// A candidate's launch plan resolved for one workload: its axis expressions evaluated, every
// buffer sized, every kernel's grid, block, shared memory and arguments checked against the
// device's limits (resolve_plan, declared in candidate.h; parsing the plan is candidate.cpp's).
#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "core/candidate.h"
#include "core/tensor_map.h"

namespace kevo {

namespace {

class Resolver {
 public:
  Resolver(const Task& task, const Workload& w, const DeviceLimits& limits)
      : task_(task), w_(w), limits_(limits), axes_(task.axis_values(w)), which_(" (" + workload_label(task, w) + ")") {
    if (!axes_.count(kNumSms)) axes_[kNumSms] = limits.num_sms;
  }

  ResolvedPlan run(const Candidate& c) {
    ResolvedPlan plan;
    for (const TensorDecl& t : task_.inputs) plan.buffers.push_back(task_tensor(t, ResolvedBuffer::Input));
    for (const TensorDecl& t : task_.outputs) plan.buffers.push_back(task_tensor(t, ResolvedBuffer::Output));
    for (const ScratchBuffer& b : c.plan.buffers) plan.buffers.push_back(scratch(b));
    for (const Step& s : c.plan.steps) {
      if (auto* k = std::get_if<KernelStep>(&s.op))
        plan.steps.push_back(kernel(*k, plan));
      else if (auto* m = std::get_if<MatmulStep>(&s.op))
        plan.steps.push_back(matmul(*m, s.at, plan));
      else
        plan.steps.push_back(conv2d(std::get<Conv2dStep>(s.op), s.at, plan));
    }
    return plan;
  }

 private:
  static std::string workload_label(const Task& task, const Workload& w) {
    for (size_t i = 0; i < task.workloads.size(); ++i)
      if (&task.workloads[i] == &w || task.workloads[i].axes == w.axes) return "workload " + std::to_string(i);
    std::string out;
    for (const auto& [axis, size] : w.axes) out += (out.empty() ? "" : ", ") + axis + "=" + std::to_string(size);
    return "workload " + out;
  }

  [[noreturn]] void fail(const Origin& at, const std::string& message) const {
    throw InputError(at.loc, at.field, message + which_);
  }

  void rank(const Origin& at, const std::string& what, const std::vector<std::string>& names,
            const std::vector<const Shape*>& shapes, size_t want) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (shapes[i]->size() != want) fail(at, what + "; '" + names[i] + "' is " + shape_string(*shapes[i]));
  }

  // A library step's bias (-1: none) holds one value per output column or channel.
  void check_bias(const Origin& at, const ResolvedPlan& plan, int bias, int64_t n) const {
    if (bias >= 0 && plan.buffers[bias].shape != Shape{n})
      fail(at, "the bias '" + plan.buffers[bias].name + "' is " + shape_string(plan.buffers[bias].shape) +
                   " but must be " + shape_string({n}));
  }

  int64_t eval(const PlanExpr& e) const {
    try {
      return e.expr.eval(axes_);
    } catch (const std::invalid_argument& err) {
      fail(e.at, err.what());
    }
  }
  // "0" for a literal, "'B - 16' = 0" for an expression.
  static std::string value_text(const PlanExpr& e, int64_t v) {
    std::string n = std::to_string(v);
    return e.expr.text() == n ? n : "'" + e.expr.text() + "' = " + n;
  }

  ResolvedBuffer scratch(const ScratchBuffer& b) const {
    ResolvedBuffer r{ResolvedBuffer::Scratch, b.name, b.dtype, {}, 0};
    for (const PlanExpr& d : b.shape) {
      r.shape.push_back(eval(d));
      if (r.shape.back() <= 0) fail(d.at, value_text(d, r.shape.back()) + ": sizes must be positive");
    }
    return with_bytes(std::move(r), b.at);
  }

  // The task validated its own workloads at load; a workload from elsewhere (held back by the
  // runner) gets the same checks here.
  ResolvedBuffer task_tensor(const TensorDecl& t, ResolvedBuffer::Role role) const {
    Origin at{t.loc, (role == ResolvedBuffer::Input ? "inputs." : "outputs.") + t.name};
    ResolvedBuffer r{role, t.name, t.dtype, {}, 0};
    try {
      r.shape = task_.shape_of(t, w_);
    } catch (const std::invalid_argument& e) {
      fail(at, e.what());
    }
    for (size_t i = 0; i < r.shape.size(); ++i)
      if (r.shape[i] <= 0)
        fail(at, "dim " + std::to_string(i) + " is " + std::to_string(r.shape[i]) + ": sizes must be positive");
    return with_bytes(std::move(r), at);
  }

  ResolvedBuffer with_bytes(ResolvedBuffer r, const Origin& at) const {
    r.bytes = dtype_size(r.dtype);
    for (int64_t n : r.shape)
      if (__builtin_mul_overflow(r.bytes, n, &r.bytes))
        fail(at, "the byte count of '" + r.name + "' overflows 64 bits");
    return r;
  }

  // `what` is "grid" or "block"; `unit` what it counts.
  std::array<unsigned, 3> dims(const std::vector<PlanExpr>& exprs, const std::array<int64_t, 3>& max, const char* what,
                               const char* unit) const {
    std::array<unsigned, 3> out{1, 1, 1};
    for (size_t i = 0; i < exprs.size(); ++i) {
      int64_t n = eval(exprs[i]);
      if (n <= 0)
        fail(exprs[i].at,
             value_text(exprs[i], n) + ": a " + what + " needs at least one " + unit + " in each dimension");
      if (n > max[i])
        fail(exprs[i].at, value_text(exprs[i], n) + " is over the device's limit of " + std::to_string(max[i]) +
                              " for " + what + " dimension " + std::to_string(i));
      out[i] = static_cast<unsigned>(n);
    }
    return out;
  }

  ResolvedKernel kernel(const KernelStep& k, const ResolvedPlan& plan) const {
    ResolvedKernel r;
    r.kernel = k.kernel;
    r.grid = dims(k.grid, limits_.max_grid, "grid", "block");
    r.block = dims(k.block, limits_.max_block, "block", "thread");
    int64_t threads = int64_t{r.block[0]} * r.block[1] * r.block[2];
    if (threads > limits_.max_threads_per_block) {
      Origin at = k.block[0].at;
      at.field.erase(at.field.rfind('['));  // the whole block, not its first dim
      fail(at, "a block of " + std::to_string(threads) + " threads is over the device's limit of " +
                   std::to_string(limits_.max_threads_per_block));
    }
    int64_t shared = eval(k.shared_bytes);
    if (shared < 0) fail(k.shared_bytes.at, value_text(k.shared_bytes, shared) + ": a byte count cannot be negative");
    if (shared > limits_.max_shared_bytes)
      fail(k.shared_bytes.at, value_text(k.shared_bytes, shared) + " is over the device's limit of " +
                                  std::to_string(limits_.max_shared_bytes) +
                                  " bytes of dynamic shared memory per block");
    r.shared_bytes = static_cast<unsigned>(shared);
    for (const KernelArg& a : k.args) {
      ResolvedArg ra;
      ra.kind = a.kind;
      if (a.kind == ArgKind::Buffer)
        ra.buffer = plan.buffer(a.buffer);
      else if (a.kind == ArgKind::TensorMap)
        ra = tensor_map(a, plan);
      else if (a.kind == ArgKind::Float32 || a.kind == ArgKind::Float64)
        ra.real = a.real;
      else
        ra.integer = eval(a.value);
      if (a.kind == ArgKind::Int32 && (ra.integer < INT32_MIN || ra.integer > INT32_MAX))
        fail(a.value.at, value_text(a.value, ra.integer) + " does not fit a 32-bit int (use {\"int64\": ...})");
      r.args.push_back(ra);
    }
    return r;
  }

  ResolvedArg tensor_map(const KernelArg& a, const ResolvedPlan& plan) const {
    const TensorMapArg& t = a.tensor_map;
    ResolvedArg r;
    r.kind = ArgKind::TensorMap;
    r.buffer = plan.buffer(t.buffer);
    const ResolvedBuffer& b = plan.buffers[static_cast<size_t>(r.buffer)];
    std::vector<int64_t> dims, strides;
    for (const PlanExpr& e : t.dims) dims.push_back(eval(e));
    for (const PlanExpr& e : t.strides) strides.push_back(eval(e));
    try {
      r.tensor_map = resolve_tensor_map(t, b.dtype, dims, strides, b.bytes / dtype_size(b.dtype));
    } catch (const std::invalid_argument& err) {
      fail(a.at, err.what());
    }
    return r;
  }

  ResolvedMatmul matmul(const MatmulStep& m, const Origin& at, const ResolvedPlan& plan) const {
    ResolvedMatmul r{m, plan.buffer(m.a), plan.buffer(m.b), plan.buffer(m.d), plan.buffer(m.bias)};
    // The GPU's, not the workload's: no "(workload N)".
    if (m.emulation != Emulation::Off && !limits_.arch.empty() && !emulation_runs_on(limits_.arch))
      throw InputError(at.loc, at.field + ".emulation",
                       "\"" + emulation_name(m.emulation) + "\": cuBLASLt's bf16x9 fp32 emulation runs on sm_100a and "
                       "sm_103a only, not on " + limits_.arch + " (use \"off\")");
    const Shape &a = plan.buffers[r.a].shape, &b = plan.buffers[r.b].shape, &d = plan.buffers[r.d].shape;
    if (a.size() < 2) rank(at, "cublaslt.matmul takes matrices", {m.a}, {&a}, 2);
    if (b.size() < 2) rank(at, "cublaslt.matmul takes matrices", {m.b}, {&b}, 2);
    // A strided batch where b, or a transposed a, has leading dims; else where a (not transposed) has
    // them, a batch of rows: [..., k] with d [..., n], which cuBLASLt sees as [rows, k].
    const bool batched = strided_batch(a.size(), b.size(), m.transpose_a);
    const bool rows = !batched && !m.transpose_a;
    r.m = rows ? numel(Shape(a.begin(), a.end() - 1)) : a[a.size() - (m.transpose_a ? 1 : 2)];
    r.k = a[a.size() - (m.transpose_a ? 2 : 1)];
    const int64_t kb = b[b.size() - (m.transpose_b ? 1 : 2)];
    r.n = b[b.size() - (m.transpose_b ? 2 : 1)];
    auto op = [](const std::string& name, bool t) { return t ? name + "^T" : name; };
    if (kb != r.k)
      fail(at, "op(a) = " + op(m.a, m.transpose_a) + " is " + shape_string({r.m, r.k}) + " but op(b) = " +
                   op(m.b, m.transpose_b) + " is " + shape_string({kb, r.n}) + ": the inner dims differ");
    Shape product = batched ? batch_of(m, at, a, b, r) : Shape{};
    if (rows) product.assign(a.begin(), a.end() - 1);
    else product.push_back(r.m);
    product.push_back(r.n);
    if (d != product)
      fail(at, "'" + m.d + "' is " + shape_string(d) + " but the product is " + shape_string(product));
    check_bias(at, plan, r.bias, r.n);
    return r;
  }

  // A strided batch's dims (sets r's batch and strides): a and b each a matrix, broadcast to every
  // product, or of the batch's rank with the same leading dims.
  Shape batch_of(const MatmulStep& m, const Origin& at, const Shape& a, const Shape& b, ResolvedMatmul& r) const {
    const Shape& batched = b.size() > 2 ? b : a;
    const Shape dims(batched.begin(), batched.end() - 2);
    for (const auto& [name, shape] : {std::pair{m.a, &a}, std::pair{m.b, &b}})
      if (shape->size() != 2 && Shape(shape->begin(), shape->end() - 2) != dims)
        fail(at, "a strided batch of products " + shape_string(dims) + ": '" + name + "' is " + shape_string(*shape) +
                     ", neither a matrix nor a batch of those dims");
    r.batch = numel(dims);
    if (r.batch < 1 || r.batch > INT32_MAX)
      fail(at, "a strided batch of " + std::to_string(r.batch) + " products: cuBLASLt counts 1 to " +
                   std::to_string(INT32_MAX));
    r.stride_a = a.size() > 2 ? r.m * r.k : 0;
    r.stride_b = b.size() > 2 ? r.k * r.n : 0;
    return dims;
  }

  ResolvedConv2d conv2d(const Conv2dStep& c, const Origin& at, const ResolvedPlan& plan) const {
    ResolvedConv2d r{c, plan.buffer(c.x), plan.buffer(c.w), plan.buffer(c.y), plan.buffer(c.bias)};
    const Shape &x = plan.buffers[r.x].shape, &w = plan.buffers[r.w].shape, &y = plan.buffers[r.y].shape;
    rank(at, "cudnn.conv2d_forward takes NCHW tensors", {c.x, c.w, c.y}, {&x, &w, &y}, 4);
    if (x[1] % c.groups != 0 || w[0] % c.groups != 0 || w[1] * c.groups != x[1])
      fail(at, "'" + c.w + "' " + shape_string(w) + " does not fit '" + c.x + "' " + shape_string(x) +
                   " with groups=" + std::to_string(c.groups) + ": need w[1] * groups == x[1] and w[0] % groups == 0");
    Shape want = {x[0], w[0], 0, 0};
    for (int i = 0; i < 2; ++i) {
      // 128 bits: a huge dilation times a huge kernel must not wrap into a plausible size.
      __int128 span = __int128{x[2 + i]} + 2 * c.padding[i] - __int128{c.dilation[i]} * (w[2 + i] - 1) - 1;
      if (span < 0)
        fail(at,
             "the kernel of '" + c.w + "' " + shape_string(w) + " is larger than the padded input " + shape_string(x));
      want[2 + i] = static_cast<int64_t>(span / c.stride[i] + 1);
    }
    if (y != want) fail(at, "'" + c.y + "' is " + shape_string(y) + " but the convolution gives " + shape_string(want));
    check_bias(at, plan, r.bias, w[0]);
    return r;
  }

  const Task& task_;
  const Workload& w_;
  const DeviceLimits& limits_;
  std::map<std::string, int64_t> axes_;
  std::string which_;
};

}  // namespace

int ResolvedPlan::buffer(const std::string& name) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].name == name) return static_cast<int>(i);
  return -1;
}

ResolvedPlan resolve_plan(const Candidate& c, const Task& task, const Workload& w, const DeviceLimits& limits) {
  return Resolver(task, w, limits).run(c);
}

}  // namespace kevo
