// Executes op graphs on LibTorch, checking every value against the graph's shape rules.
#include "eval/torch_graph.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <set>
#include <stdexcept>

#include "eval/torch_op_families.h"

namespace kevo::eval {

torch::ScalarType to_torch(DType t) {
  switch (t) {
    case DType::Float32: return torch::kFloat32;
    case DType::Float64: return torch::kFloat64;
    case DType::Float16: return torch::kFloat16;
    case DType::BFloat16: return torch::kBFloat16;
    case DType::Int64: return torch::kInt64;
    case DType::Int32: return torch::kInt32;
    case DType::Bool: return torch::kBool;
  }
  return torch::kFloat32;
}

DType from_torch(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return DType::Float32;
    case torch::kFloat64: return DType::Float64;
    case torch::kFloat16: return DType::Float16;
    case torch::kBFloat16: return DType::BFloat16;
    case torch::kInt64: return DType::Int64;
    case torch::kInt32: return DType::Int32;
    case torch::kBool: return DType::Bool;
    default: throw std::logic_error(std::string("unsupported torch dtype ") + c10::toString(t));
  }
}

const TorchOpTable& torch_op_table() {
  static const TorchOpTable table = [] {
    TorchOpTable t;
    register_torch_builtin_ops(t);
    register_torch_elementwise_ops(t);
    register_torch_reduction_ops(t);
    register_torch_nn_ops(t);
    register_torch_matmul_ops(t);
    register_torch_conv_ops(t);
    register_torch_pool_ops(t);
    register_torch_loss_ops(t);
    register_torch_shape_ops(t);
    register_torch_slice_ops(t);
    return t;
  }();
  return table;
}

torch::Scalar attr_scalar(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) throw std::logic_error(n.op + " has no attribute " + key);
  if (auto b = std::get_if<bool>(&it->second)) return torch::Scalar(*b);
  if (auto i = std::get_if<int64_t>(&it->second)) return torch::Scalar(*i);
  if (auto d = std::get_if<double>(&it->second)) return torch::Scalar(*d);
  throw std::logic_error(n.op + ": attribute " + key + " is not a scalar");
}

namespace {

// A Python number meeting a tensor, as torch's Python binding makes it: a CPU "wrapped number"
// of the number's own type (double, int64, bool), which type promotion treats as a Python scalar
// and TensorIterator reads in the op's math type (a float16 tensor times 0.1 multiplies by the
// float 0.1 on the GPU, not by 0.1 rounded to float16).
torch::Tensor python_scalar(const Node& n) {
  torch::Scalar s = attr_scalar(n, "value");
  torch::ScalarType type = s.isBoolean() ? torch::kBool : s.isIntegral(false) ? torch::kInt64 : torch::kFloat64;
  torch::Tensor t = torch::scalar_tensor(s, torch::TensorOptions().dtype(type));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

// The nodes without operands: Python numbers and filled tensors (torch.tensor(2.0), zeros, ...).
torch::Tensor source(const Node& n, const ValueInfo& v, torch::Device device) {
  if (n.op == "constant") return python_scalar(n);
  auto opts = torch::TensorOptions().dtype(to_torch(v.dtype)).device(device);
  return torch::full(attr_ints(n, "shape"), attr_scalar(n, "value"), opts);
}

bool is_reduced_float(const torch::Tensor& t) {
  return t.defined() && (t.scalar_type() == torch::kHalf || t.scalar_type() == torch::kBFloat16);
}

// An op with its operands' types and devices: "softmax:Half@cpu".
std::string kernel_key(const Node& n, const std::vector<torch::Tensor>& in) {
  std::string key = n.op;
  for (const torch::Tensor& t : in)
    key += t.defined() ? std::string(":") + c10::toString(t.scalar_type()) + "@" + c10::DeviceTypeName(t.device().type())
                       : std::string(":-");
  return key;
}

// The kernels whose preferred way failed once (below). Later calls go straight to the other way:
// raising a c10::Error (it records a backtrace) costs milliseconds per node.
class FallbackKernels {
 public:
  bool contains(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    return keys_.count(key) > 0;
  }
  void add(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    keys_.insert(key);
  }

 private:
  std::mutex mutex_;
  std::set<std::string> keys_;
};

FallbackKernels& fallback_kernels() {
  static FallbackKernels kernels;
  return kernels;
}

std::vector<torch::Tensor> run_in_float32(const TorchOp& fn, const Graph& g, const Node& n,
                                          const std::vector<torch::Tensor>& in) {
  std::vector<torch::Tensor> wide;
  for (const torch::Tensor& t : in) wide.push_back(is_reduced_float(t) ? t.to(torch::kFloat32) : t);
  std::vector<torch::Tensor> out = fn(n, wide);
  for (size_t k = 0; k < out.size() && k < n.outputs.size(); ++k)
    out[k] = out[k].to(to_torch(g.values[n.outputs[k]].dtype));
  return out;
}

// A node with float16 or bfloat16 operands runs one of two ways: LibTorch's half kernel, or in
// float32 with its outputs rounded once to the graph's dtypes (what the GPU's kernels compute:
// float32 math and accumulation, one rounding).
// - On the CPU float32 comes first, so the reference is the same on every CPU: LibTorch's half
//   CPU kernels choose their path by the instruction set (oneDNN's bfloat16 convolution on one CPU
//   keeps more of its sums in 16 bits than on another), and 1.13 lacks many of them.
// - On the GPU the half kernel comes first: LibTorch's CUDA kernels accumulate in float32 already,
//   and they are what the eager baseline times.
// The other way is the fallback where the first raises; where both do, the half kernel's error is
// the one reported.
std::vector<torch::Tensor> run_node(const TorchOp& fn, const Graph& g, const Node& n,
                                    const std::vector<torch::Tensor>& in) {
  auto reduced = std::find_if(in.begin(), in.end(), is_reduced_float);
  if (reduced == in.end()) return fn(n, in);
  const bool float32_first = reduced->device().is_cpu();
  auto preferred = [&] { return float32_first ? run_in_float32(fn, g, n, in) : fn(n, in); };
  auto fallback = [&] { return float32_first ? fn(n, in) : run_in_float32(fn, g, n, in); };
  const std::string key = kernel_key(n, in);
  if (fallback_kernels().contains(key)) return fallback();
  std::exception_ptr preferred_error;
  try {
    return preferred();
  } catch (const c10::Error&) {
    preferred_error = std::current_exception();
  }
  std::vector<torch::Tensor> out;
  try {
    out = fallback();
  } catch (const c10::Error&) {
    std::rethrow_exception(float32_first ? std::current_exception() : preferred_error);
  }
  fallback_kernels().add(key);
  return out;
}

}  // namespace

std::vector<torch::Tensor> run_graph(const Graph& g, const std::vector<torch::Tensor>& inputs) {
  if (inputs.size() != g.inputs.size())
    throw std::invalid_argument("run_graph: " + std::to_string(inputs.size()) + " inputs for a graph of " +
                                std::to_string(g.inputs.size()));
  std::vector<torch::Tensor> env(g.values.size());
  auto check = [&](int id, const torch::Tensor& t, const std::string& what) {
    const ValueInfo& v = g.values[id];
    Shape got(t.sizes().begin(), t.sizes().end());
    if (got != v.shape || from_torch(t.scalar_type()) != v.dtype)
      throw std::logic_error(what + ": torch gives " + dtype_name(from_torch(t.scalar_type())) + shape_string(got) +
                             " where the graph says " + dtype_name(v.dtype) + shape_string(v.shape));
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    check(g.inputs[i], inputs[i], "input '" + g.values[g.inputs[i]].name + "'");
    env[g.inputs[i]] = inputs[i];
  }
  torch::Device device = inputs.empty() ? torch::Device(torch::kCPU) : inputs[0].device();
  torch::NoGradGuard no_grad;
  // The reference is the fp32 truth: cuDNN convolutions default to TF32, which is 1e-3 off.
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
  for (const Node& n : g.nodes) {
    if (n.op == "constant" || n.op == "full") {
      env[n.outputs[0]] = source(n, g.values[n.outputs[0]], device);
      if (n.op == "full") check(n.outputs[0], env[n.outputs[0]], "op 'full'");
      continue;
    }
    const TorchOp* fn = torch_op_table().find(n.op);
    if (!fn) throw std::logic_error("no LibTorch execution for op '" + n.op + "'");
    std::vector<torch::Tensor> in;
    for (int id : n.inputs) in.push_back(id < 0 ? torch::Tensor() : env[id]);
    std::vector<torch::Tensor> out = run_node(*fn, g, n, in);
    if (out.size() != n.outputs.size())
      throw std::logic_error(n.op + ": torch gives " + std::to_string(out.size()) + " outputs, graph says " +
                             std::to_string(n.outputs.size()));
    for (size_t k = 0; k < out.size(); ++k) {
      check(n.outputs[k], out[k], "op '" + n.op + "' at " + std::to_string(n.pos.line) + ":" + std::to_string(n.pos.col));
      env[n.outputs[k]] = out[k];
    }
  }
  std::vector<torch::Tensor> result;
  for (int id : g.outputs) result.push_back(env[id]);
  return result;
}

}  // namespace kevo::eval
