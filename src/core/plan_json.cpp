// Field by field, both ways; buffer references are indices into the plan's buffers.
#include "core/plan_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

namespace kevo {

namespace {

using Json = nlohmann::json;

constexpr const char* kRoles[] = {"input", "output", "scratch"};
constexpr const char* kArgKinds[] = {"buffer", "int", "int64", "float", "double", "tensor_map"};

template <size_t N>
int index_of(const char* const (&names)[N], const std::string& name, const char* what) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<int>(i);
  throw std::invalid_argument(std::string("unknown ") + what + " '" + name + "'");
}

Epilogue epilogue_from(const std::string& name) {
  for (int e = 0; e <= static_cast<int>(Epilogue::BiasGelu); ++e)
    if (epilogue_name(static_cast<Epilogue>(e)) == name) return static_cast<Epilogue>(e);
  throw std::invalid_argument("unknown epilogue '" + name + "'");
}

Json tensor_map_json(const ResolvedTensorMap& t) {
  const size_t n = static_cast<size_t>(t.rank);
  return {{"dtype", dtype_name(t.dtype)},
          {"dims", std::vector<uint64_t>(t.dims.begin(), t.dims.begin() + n)},
          {"stride_bytes", std::vector<uint64_t>(t.stride_bytes.begin(), t.stride_bytes.begin() + (n - 1))},
          {"box", std::vector<uint32_t>(t.box.begin(), t.box.begin() + n)},
          {"swizzle", t.swizzle}};
}

ResolvedTensorMap tensor_map_from(const Json& j) {
  ResolvedTensorMap t;
  const auto dtype = parse_dtype(j.at("dtype").get<std::string>());
  if (!dtype) throw std::invalid_argument("unknown tensor map dtype");
  t.dtype = *dtype;
  const auto dims = j.at("dims").get<std::vector<uint64_t>>();
  const auto strides = j.at("stride_bytes").get<std::vector<uint64_t>>();
  const auto box = j.at("box").get<std::vector<uint32_t>>();
  if (dims.empty() || dims.size() > t.dims.size() || box.size() != dims.size() || strides.size() + 1 != dims.size())
    throw std::invalid_argument("tensor map rank out of range");
  t.rank = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), t.dims.begin());
  std::copy(strides.begin(), strides.end(), t.stride_bytes.begin());
  std::copy(box.begin(), box.end(), t.box.begin());
  t.swizzle = j.at("swizzle").get<int>();
  return t;
}

Json step_json(const ResolvedStep& step) {
  if (const auto* k = std::get_if<ResolvedKernel>(&step)) {
    Json args = Json::array();
    for (const ResolvedArg& a : k->args) {
      args.push_back({{"kind", kArgKinds[static_cast<int>(a.kind)]}, {"buffer", a.buffer}, {"integer", a.integer},
                      {"real", a.real}});
      if (a.kind == ArgKind::TensorMap) args.back()["tensor_map"] = tensor_map_json(a.tensor_map);
    }
    return {{"kernel", k->kernel}, {"grid", k->grid}, {"block", k->block}, {"shared_bytes", k->shared_bytes},
            {"args", args}};
  }
  if (const auto* m = std::get_if<ResolvedMatmul>(&step)) {
    const MatmulStep& c = m->call;
    return {{"library", "cublaslt.matmul"}, {"a", m->a}, {"b", m->b}, {"d", m->d}, {"bias", m->bias},
            {"m", m->m}, {"n", m->n}, {"k", m->k}, {"batch", m->batch}, {"stride_a", m->stride_a},
            {"stride_b", m->stride_b}, {"names", {c.a, c.b, c.d, c.bias}},
            {"transpose_a", c.transpose_a}, {"transpose_b", c.transpose_b}, {"alpha", c.alpha},
            {"epilogue", epilogue_name(c.epilogue)}, {"algo", c.algo}, {"emulation", static_cast<int>(c.emulation)}};
  }
  const auto& v = std::get<ResolvedConv2d>(step);
  const Conv2dStep& c = v.call;
  return {{"library", "cudnn.conv2d_forward"}, {"x", v.x}, {"w", v.w}, {"y", v.y}, {"bias", v.bias},
          {"names", {c.x, c.w, c.y, c.bias}}, {"stride", c.stride}, {"padding", c.padding},
          {"dilation", c.dilation}, {"groups", c.groups}, {"epilogue", epilogue_name(c.epilogue)}};
}

ResolvedStep step_from(const Json& j, int buffers) {
  auto buffer = [&](const char* key, bool optional) {
    int b = j.at(key).get<int>();
    if ((b < 0 && !(optional && b == -1)) || b >= buffers)
      throw std::invalid_argument(std::string("step buffer '") + key + "' out of range");
    return b;
  };
  if (j.contains("kernel")) {
    ResolvedKernel k;
    k.kernel = j.at("kernel").get<std::string>();
    k.grid = j.at("grid").get<std::array<unsigned, 3>>();
    k.block = j.at("block").get<std::array<unsigned, 3>>();
    k.shared_bytes = j.at("shared_bytes").get<unsigned>();
    for (const Json& a : j.at("args")) {
      ResolvedArg arg;
      arg.kind = static_cast<ArgKind>(index_of(kArgKinds, a.at("kind").get<std::string>(), "argument kind"));
      arg.buffer = a.at("buffer").get<int>();
      if ((arg.kind == ArgKind::Buffer || arg.kind == ArgKind::TensorMap) && (arg.buffer < 0 || arg.buffer >= buffers))
        throw std::invalid_argument("kernel argument buffer out of range");
      arg.integer = a.at("integer").get<int64_t>();
      arg.real = a.at("real").get<double>();
      if (arg.kind == ArgKind::TensorMap) arg.tensor_map = tensor_map_from(a.at("tensor_map"));
      k.args.push_back(arg);
    }
    return k;
  }
  std::string library = j.at("library").get<std::string>();
  auto names = j.at("names").get<std::array<std::string, 4>>();
  if (library == "cublaslt.matmul") {
    ResolvedMatmul m;
    m.a = buffer("a", false), m.b = buffer("b", false), m.d = buffer("d", false), m.bias = buffer("bias", true);
    m.m = j.at("m").get<int64_t>(), m.n = j.at("n").get<int64_t>(), m.k = j.at("k").get<int64_t>();
    m.batch = j.at("batch").get<int64_t>();
    m.stride_a = j.at("stride_a").get<int64_t>(), m.stride_b = j.at("stride_b").get<int64_t>();
    if (m.batch < 1 || m.batch > INT32_MAX || m.stride_a < 0 || m.stride_b < 0)
      throw std::invalid_argument("cuBLASLt batch " + std::to_string(m.batch) + " with strides " +
                                  std::to_string(m.stride_a) + ", " + std::to_string(m.stride_b) +
                                  ": expected 1 to 2^31 - 1 products, strides 0 or more");
    m.call.a = names[0], m.call.b = names[1], m.call.d = names[2], m.call.bias = names[3];
    m.call.transpose_a = j.at("transpose_a").get<bool>();
    m.call.transpose_b = j.at("transpose_b").get<bool>();
    m.call.alpha = j.at("alpha").get<double>();
    m.call.epilogue = epilogue_from(j.at("epilogue").get<std::string>());
    m.call.algo = j.at("algo").get<int64_t>();
    if (m.call.algo < kAutotunedAlgo)
      throw std::invalid_argument("cuBLASLt algorithm " + std::to_string(m.call.algo) +
                                  ": expected an index into the heuristic's list (0 or more) or -1 (autotuned)");
    const int emulation = j.at("emulation").get<int>();
    if (emulation < 0 || emulation > static_cast<int>(Emulation::Eager))
      throw std::invalid_argument("cuBLASLt emulation " + std::to_string(emulation) + ": expected 0 (off), 1 (performant) or 2 (eager)");
    m.call.emulation = static_cast<Emulation>(emulation);
    return m;
  }
  if (library == "cudnn.conv2d_forward") {
    ResolvedConv2d c;
    c.x = buffer("x", false), c.w = buffer("w", false), c.y = buffer("y", false), c.bias = buffer("bias", true);
    c.call.x = names[0], c.call.w = names[1], c.call.y = names[2], c.call.bias = names[3];
    c.call.stride = j.at("stride").get<std::array<int64_t, 2>>();
    c.call.padding = j.at("padding").get<std::array<int64_t, 2>>();
    c.call.dilation = j.at("dilation").get<std::array<int64_t, 2>>();
    c.call.groups = j.at("groups").get<int64_t>();
    c.call.epilogue = epilogue_from(j.at("epilogue").get<std::string>());
    return c;
  }
  throw std::invalid_argument("unknown library '" + library + "'");
}

}  // namespace

Json resolved_plan_to_json(const ResolvedPlan& plan) {
  Json buffers = Json::array(), steps = Json::array();
  for (const ResolvedBuffer& b : plan.buffers)
    buffers.push_back({{"role", kRoles[b.role]}, {"name", b.name}, {"dtype", dtype_name(b.dtype)},
                       {"shape", b.shape}, {"bytes", b.bytes}});
  for (const ResolvedStep& s : plan.steps) steps.push_back(step_json(s));
  return {{"buffers", buffers}, {"steps", steps}};
}

ResolvedPlan resolved_plan_from_json(const Json& j) {
  try {
    ResolvedPlan plan;
    for (const Json& b : j.at("buffers")) {
      ResolvedBuffer buf;
      buf.role = static_cast<ResolvedBuffer::Role>(index_of(kRoles, b.at("role").get<std::string>(), "buffer role"));
      buf.name = b.at("name").get<std::string>();
      auto dtype = parse_dtype(b.at("dtype").get<std::string>());
      if (!dtype) throw std::invalid_argument("unknown dtype");
      buf.dtype = *dtype;
      buf.shape = b.at("shape").get<Shape>();
      buf.bytes = b.at("bytes").get<int64_t>();
      if (buf.bytes < 0) throw std::invalid_argument("negative buffer size");
      plan.buffers.push_back(std::move(buf));
    }
    for (const Json& s : j.at("steps")) plan.steps.push_back(step_from(s, static_cast<int>(plan.buffers.size())));
    return plan;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("malformed plan: ") + e.what());
  }
}

}  // namespace kevo
