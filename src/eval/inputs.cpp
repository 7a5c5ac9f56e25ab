// Input generation for the oracle: contract distributions on a seeded CPU generator.
#include "eval/inputs.h"

#include <cmath>
#include <optional>
#include <stdexcept>

#include "eval/torch_graph.h"

namespace kevo::eval {

int64_t fan_in(const Shape& s) {
  int64_t f = s.size() > 1 ? s[1] : 1;
  for (size_t i = 2; i < s.size(); ++i) f *= s[i];
  return f;
}

namespace {

// On the CPU from the global generator (manual_seed); on a GPU from that device's default
// generator, seeded per input: the values differ between the two, each is reproducible.
torch::Tensor draw(const Task& task, const TensorDecl& t, const Workload& w, uint64_t seed, torch::Device device) {
  Shape shape = task.shape_of(t, w);
  auto opts = torch::TensorOptions().dtype(to_torch(t.dtype)).device(device);
  const InitSpec& in = t.init;
  // One generator per input, so adding an input to a contract leaves the others' values alone.
  uint64_t h = seed;
  for (char c : t.name) h = h * 1099511628211ULL ^ static_cast<unsigned char>(c);
  c10::optional<at::Generator> gen;
  if (device.is_cpu()) {
    torch::manual_seed(h);
  } else {
    gen = at::globalContext().defaultGenerator(device);
    gen->set_current_seed(h >> 1);
  }
  auto uniform = [&](double lo, double hi) { return torch::empty(shape, opts).uniform_(lo, hi, gen); };
  if (in.dist == "uniform") return uniform(in.low, in.high);
  if (in.dist == "normal") return torch::empty(shape, opts).normal_(in.mean, in.std, gen);
  if (in.dist == "kaiming_uniform") {
    double gain = std::sqrt(2.0 / (1.0 + in.a * in.a));
    double bound = gain * std::sqrt(3.0 / static_cast<double>(fan_in(shape)));
    return uniform(-bound, bound);
  }
  if (in.dist == "fan_in_uniform") {
    for (const TensorDecl& other : task.inputs) {
      if (other.name != in.fan_in_of) continue;
      double bound = 1.0 / std::sqrt(static_cast<double>(fan_in(task.shape_of(other, w))));
      return uniform(-bound, bound);
    }
    throw std::logic_error("fan_in_of names no input");
  }
  if (in.dist == "randint")
    return torch::randint(static_cast<int64_t>(in.low), static_cast<int64_t>(in.high), shape, gen, opts);
  if (in.dist == "choice") {
    torch::Tensor values = torch::tensor(in.values, torch::kFloat64).to(opts);
    torch::Tensor idx = torch::randint(0, static_cast<int64_t>(in.values.size()), {numel(shape)}, gen,
                                       torch::TensorOptions().dtype(torch::kInt64).device(device));
    return values.index_select(0, idx).reshape(shape);
  }
  if (in.dist == "ones") return torch::ones(shape, opts);
  if (in.dist == "zeros") return torch::zeros(shape, opts);
  if (in.dist == "constant") return torch::full(shape, in.value, opts);
  throw std::logic_error("unknown distribution " + in.dist);
}

}  // namespace

std::vector<torch::Tensor> make_inputs(const Task& task, const Workload& w, uint64_t seed, torch::Device device) {
  std::vector<torch::Tensor> out;
  for (const TensorDecl& t : task.inputs) out.push_back(draw(task, t, w, seed, device));
  return out;
}

}  // namespace kevo::eval
