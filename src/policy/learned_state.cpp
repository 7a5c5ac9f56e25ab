// The learned policy's state: fresh parameters, and the checkpoint written and read.
#include "policy/learned_state.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "core/sha256.h"

namespace kevo::policy::learned {

using mutate::Genome;
using nlohmann::json;

namespace {

std::string one_line(const std::string& s) { return s.substr(0, s.find('\n')); }

const char* kMagic = "kevo-learned-policy";

json situation_json(const Situation& s) {
  const Parent& p = s.parent;
  return {{"variant", p.variant},       {"space", p.genome.space},
          {"values", p.genome.values},  {"fitness", p.fitness},
          {"floor_fraction", p.floor_fraction}, {"registers", p.registers},
          {"shared_bytes", p.shared_bytes}, {"spill_bytes", p.spill_bytes},
          {"occupancy", p.occupancy},   {"can_cross", s.can_cross},
          {"mate_log_ratio", s.mate_log_ratio}, {"mate_distance", s.mate_distance},
          {"progress", s.progress},     {"best_log_ratio", s.best_log_ratio},
          {"spaces", s.spaces}};
}

Situation situation_from(const json& j) {
  Situation s;
  Parent& p = s.parent;
  p.variant = j.at("variant").get<int64_t>();
  p.genome.space = j.at("space").get<std::string>();
  p.genome.values = j.at("values").get<std::vector<int64_t>>();
  p.fitness = j.at("fitness").get<double>();
  p.floor_fraction = j.at("floor_fraction").get<double>();
  p.registers = j.at("registers").get<int>();
  p.shared_bytes = j.at("shared_bytes").get<int>();
  p.spill_bytes = j.at("spill_bytes").get<int>();
  p.occupancy = j.at("occupancy").get<double>();
  s.can_cross = j.at("can_cross").get<bool>();
  s.mate_log_ratio = j.at("mate_log_ratio").get<double>();
  s.mate_distance = j.at("mate_distance").get<double>();
  s.progress = j.at("progress").get<double>();
  s.best_log_ratio = j.at("best_log_ratio").get<double>();
  s.spaces = j.at("spaces").get<int>();
  return s;
}

// Adam's per-parameter state is keyed by the parameter's TensorImpl: a string of its address in
// LibTorch 1.x, the address itself in 2.x.
template <class Key>
Key state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;  // what c10::guts::to_string made of the pointer
    os << p.unsafeGetTensorImpl();
    return os.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}
using AdamKey = std::decay_t<decltype(std::declval<torch::optim::Adam&>().state())>::key_type;

const torch::optim::AdamParamState* adam_state(torch::optim::Adam& adam, const torch::Tensor& p) {
  auto it = adam.state().find(state_key<AdamKey>(p));
  return it == adam.state().end() ? nullptr : static_cast<const torch::optim::AdamParamState*>(it->second.get());
}

struct CheckpointError : std::runtime_error {
  explicit CheckpointError(const std::string& why) : std::runtime_error("learned policy checkpoint: " + why) {}
};

}  // namespace

void init_parameters(Net& net, uint64_t seed) {
  std::mt19937_64 rng(splitmix(seed ^ 0x6c6561726e6564ULL));
  torch::NoGradGuard no_grad;
  for (torch::nn::Linear* l : {&net->l1, &net->l2, &net->l3}) {
    const double bound = 1.0 / std::sqrt(static_cast<double>((*l)->weight.size(1))) * (l == &net->l3 ? 0.1 : 1.0);
    for (torch::Tensor* t : {&(*l)->weight, &(*l)->bias}) {
      std::vector<float> v(static_cast<size_t>(t->numel()));
      for (float& x : v) x = static_cast<float>((2 * uniform01(rng) - 1) * bound);
      t->copy_(torch::from_blob(v.data(), t->sizes(), torch::kFloat32));
    }
  }
}

std::unique_ptr<torch::optim::Adam> make_adam(Net& net, double lr) {
  return std::make_unique<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(lr));
}

State fresh_state(const LearnedPolicyConfig& c) {
  if (c.hidden < 1 || c.hidden > 4096) throw std::runtime_error("learned policy: hidden must be between 1 and 4096");
  State st;
  st.hidden = c.hidden;
  st.net = Net(kFeatures, c.hidden);
  init_parameters(st.net, c.seed);
  st.adam = make_adam(st.net, c.lr);
  st.model = Net(kModelFeatures, c.hidden);
  init_parameters(st.model, splitmix(c.seed ^ 0x6d6f64656cULL));
  return st;
}

namespace {

// The names of learned_operators(), in the order of their features.
std::vector<std::string> operator_names() {
  std::vector<std::string> out;
  for (const mutate::MutationOperator* op : learned_operators()) out.push_back(op->name());
  return out;
}

}  // namespace

std::string serialize(const State& st) {
  json meta;
  meta["features"] = kFeatures;
  meta["hidden"] = st.hidden;
  meta["next_token"] = st.next_token;
  meta["updates"] = st.updates;
  meta["model"] = true;  // the tensors include the landscape model
  meta["model_examples"] = st.model_examples;
  // The operators of the one-hot features, where they are not the first four (whose checkpoints,
  // written before the list was recorded, name none).
  if (operator_names() != std::vector<std::string>{"point", "multi", "crossover", "space_switch"})
    meta["operators"] = operator_names();
  json seen = json::array();
  for (const auto& [g, f] : st.observed) seen.push_back({g.space, g.values, f});
  meta["observed"] = seen;
  json pend = json::array();
  for (const auto& [token, p] : st.pending)
    pend.push_back({{"token", token}, {"generation", p.generation}, {"situation", situation_json(p.s)},
                    {"actions", p.actions}, {"excluded", p.excluded}, {"chosen", p.chosen}, {"picks", p.picks},
                    {"log_prob", p.log_prob}, {"offsets", p.offsets}});
  meta["pending"] = pend;
  std::vector<int64_t> children;
  for (uint64_t h : st.children) children.push_back(static_cast<int64_t>(h));
  meta["children"] = children;
  // Every tensor as raw float32, named and shaped in the metadata: the same bytes whatever
  // LibTorch wrote them (torch archives of Adam's state do not cross LibTorch versions).
  std::string blob;
  json list = json::array();
  auto put = [&](const std::string& name, const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kFloat32).contiguous();
    list.push_back({name, c.sizes().vec()});
    blob.append(reinterpret_cast<const char*>(c.data_ptr<float>()), static_cast<size_t>(c.numel()) * sizeof(float));
  };
  for (const auto& p : st.net->named_parameters()) put("net." + p.key(), p.value());
  for (const auto& p : st.model->named_parameters()) put("model." + p.key(), p.value());
  json steps = json::array();
  for (const auto& p : st.net->named_parameters()) {
    const torch::optim::AdamParamState* a = adam_state(*st.adam, p.value());
    steps.push_back(a ? a->step() : 0);
    if (a) {
      put("adam." + p.key() + ".exp_avg", a->exp_avg());
      put("adam." + p.key() + ".exp_avg_sq", a->exp_avg_sq());
    }
  }
  meta["adam_steps"] = steps;
  meta["tensors"] = list;
  const std::string m = meta.dump();
  return std::string(kMagic) + " 2 " + std::to_string(m.size()) + " " + std::to_string(blob.size()) + " " +
         Sha256().update(m).update(blob).hex_digest() + "\n" + m + blob;
}

State deserialize(const std::string& bytes, double lr) {
  auto bad = [](const std::string& why) { throw CheckpointError(why); };
  const size_t eol = bytes.find('\n');
  if (bytes.compare(0, std::strlen(kMagic), kMagic) != 0 || eol == std::string::npos || eol > 256)
    bad("not a kevo learned-policy checkpoint (" + std::to_string(bytes.size()) + " bytes)");
  std::istringstream head(bytes.substr(0, eol));
  std::string magic, digest;
  int version = 0;
  size_t meta_size = 0, tensor_size = 0;
  if (!(head >> magic >> version >> meta_size >> tensor_size >> digest)) bad("unreadable header");
  if (version != 1 && version != 2) bad("format version " + std::to_string(version) + " (this kevo reads 1 and 2)");
  if (meta_size > bytes.size() || tensor_size > bytes.size() || eol + 1 + meta_size + tensor_size != bytes.size())
    bad("truncated or padded (" + std::to_string(bytes.size()) + " bytes, header says " +
        std::to_string(eol + 1 + meta_size + tensor_size) + ")");
  const std::string m = bytes.substr(eol + 1, meta_size), t = bytes.substr(eol + 1 + meta_size);
  if (Sha256().update(m).update(t).hex_digest() != digest) bad("checksum mismatch (damaged)");
  State st;
  try {
    const json meta = json::parse(m);
    const int features = meta.at("features").get<int>();
    if (features != kFeatures)
      bad("written for " + std::to_string(features) + " features, this kevo has " + std::to_string(kFeatures));
    // The operators its one-hot features stand for; absent: learned_operators() as they were first.
    if (meta.contains("operators") && meta.at("operators").get<std::vector<std::string>>() != operator_names())
      bad("trained with the mutation operators " + meta.at("operators").dump() + ", this kevo's are " +
          json(operator_names()).dump());
    st.hidden = meta.at("hidden").get<int>();
    if (st.hidden < 1 || st.hidden > 4096) bad("hidden width " + std::to_string(st.hidden));
    st.next_token = meta.at("next_token").get<int64_t>();
    st.updates = meta.at("updates").get<int64_t>();
    // Checkpoints written before the landscape model have none (a fresh, untrained one).
    st.model_examples = meta.value("model_examples", int64_t{0});
    if (meta.contains("observed"))
      for (const json& o : meta.at("observed"))
        st.observed.push_back({Genome{o.at(0).get<std::string>(), o.at(1).get<std::vector<int64_t>>()}, o.at(2).get<double>()});
    for (const json& p : meta.at("pending")) {
      Pending q;
      q.generation = p.at("generation").get<int>();
      q.s = situation_from(p.at("situation"));
      q.actions = p.at("actions").get<int>();
      q.excluded = p.at("excluded").get<std::vector<int>>();
      q.chosen = p.at("chosen").get<int>();
      q.picks = p.at("picks").get<std::vector<int>>();
      q.log_prob = p.at("log_prob").get<double>();
      q.offsets = p.value("offsets", std::vector<float>{});
      st.pending[p.at("token").get<int64_t>()] = std::move(q);
    }
    st.net = Net(kFeatures, st.hidden);
    st.model = Net(kModelFeatures, st.hidden);
    const bool has_model = meta.value("model", false);
    if (!has_model) {  // written before the landscape model: a fresh, untrained one
      if (st.model_examples > 0) bad("the landscape model's parameters are missing");
      init_parameters(st.model, 1);
    }
    if (version == 2) {
      for (const json& h : meta.at("children")) {
        const uint64_t v = static_cast<uint64_t>(h.get<int64_t>());
        st.children.push_back(v);
        st.child_set.insert(v);
      }
      // Raw float32 tensors in the order the metadata lists them, each the shape it says.
      std::map<std::string, torch::Tensor> tensors;
      size_t at = 0;
      for (const json& e : meta.at("tensors")) {
        const std::vector<int64_t> shape = e.at(1).get<std::vector<int64_t>>();
        int64_t n = 1;
        for (int64_t d : shape) {
          if (d < 0 || d > (int64_t{1} << 24)) bad("tensor " + e.at(0).get<std::string>() + " has a bad shape");
          n *= d;
        }
        const size_t bytes_n = static_cast<size_t>(n) * sizeof(float);
        if (at + bytes_n > t.size()) bad("tensor data truncated at " + e.at(0).get<std::string>());
        torch::Tensor x = torch::empty(shape, torch::kFloat32);
        std::memcpy(x.data_ptr<float>(), t.data() + at, bytes_n);
        at += bytes_n;
        tensors[e.at(0).get<std::string>()] = x;
      }
      if (at != t.size()) bad("tensor data of " + std::to_string(t.size()) + " bytes, the list says " + std::to_string(at));
      auto take = [&](const std::string& name, const torch::Tensor& into) {
        auto it = tensors.find(name);
        if (it == tensors.end()) bad("tensor " + name + " is missing");
        if (it->second.sizes() != into.sizes()) bad("tensor " + name + " has the wrong shape");
        torch::NoGradGuard no_grad;
        into.copy_(it->second);
      };
      for (const auto& p : st.net->named_parameters()) take("net." + p.key(), p.value());
      if (has_model)
        for (const auto& p : st.model->named_parameters()) take("model." + p.key(), p.value());
      st.adam = make_adam(st.net, lr);
      const std::vector<int64_t> steps = meta.at("adam_steps").get<std::vector<int64_t>>();
      const auto params = st.net->named_parameters();
      if (steps.size() != params.size()) bad("Adam's state lists " + std::to_string(steps.size()) + " parameters");
      for (size_t i = 0; i < params.size(); ++i) {
        if (steps[i] <= 0) continue;  // no step taken on it yet: no state
        auto a = std::make_unique<torch::optim::AdamParamState>();
        a->step(steps[i]);
        a->exp_avg(torch::zeros_like(params[i].value()));
        a->exp_avg_sq(torch::zeros_like(params[i].value()));
        take("adam." + params[i].key() + ".exp_avg", a->exp_avg());
        take("adam." + params[i].key() + ".exp_avg_sq", a->exp_avg_sq());
        st.adam->state()[state_key<AdamKey>(params[i].value())] = std::move(a);
      }
    } else {  // version 1: a torch archive (readable by the LibTorch version that wrote it)
      torch::serialize::InputArchive root, net, adam;
      std::istringstream in(t);
      root.load_from(in);
      root.read("net", net);
      root.read("adam", adam);
      torch::Tensor children;
      root.read("children", children);
      children = children.to(torch::kInt64).contiguous().view({-1});
      for (int64_t i = 0; i < children.numel(); ++i) {
        const uint64_t h = static_cast<uint64_t>(children.data_ptr<int64_t>()[i]);
        st.children.push_back(h);
        st.child_set.insert(h);
      }
      st.net->load(net);
      st.adam = make_adam(st.net, lr);
      st.adam->load(adam);
      if (has_model) {
        torch::serialize::InputArchive model;
        root.read("model", model);
        st.model->load(model);
      }
    }
    for (auto& group : st.adam->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  } catch (const json::exception& e) {
    bad(std::string("metadata: ") + e.what());
  } catch (const CheckpointError&) {
    throw;
  } catch (const c10::Error& e) {
    bad("tensors: " + one_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    bad(one_line(e.what()));
  }
  return st;
}

}  // namespace kevo::policy::learned
