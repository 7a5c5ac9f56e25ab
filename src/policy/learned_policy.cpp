// The learned policy: per request, every legal mutation (each point change, one multi-knob, one
// crossover with the mate, one space switch) gets a feature vector (task summary, parent
// measurement and knob positions, search progress, the mutation itself, knobs keyed by hashed
// *name* so what is learned carries over between spaces and tasks); an MLP scores them, and a
// mutation is drawn from the softmax with the campaign's RNG. A multi-knob change is two or three
// of the policy's own point changes, drawn one knob at a time. update() is PPO on the generation's
// transitions with leave-one-out advantages among the children of one parent.
#include "policy/learned_policy.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <unordered_set>

#include "core/sha256.h"

namespace kevo::policy {

namespace {

using mutate::DesignSpace;
using mutate::Genome;
using mutate::Operator;
using nlohmann::json;

// ---- feature layout --------------------------------------------------------------------------

// A knob is keyed by two hashes of its name into two blocks of buckets, so two names rarely
// share both slots.
constexpr int kBuckets = 16;
constexpr int kSlots = 2 * kBuckets;
constexpr int kOpBuckets = 8;
constexpr int kTaskFeatures = kOpBuckets + 5;
constexpr int kParentFeatures = 7;
constexpr int kKnobStateFeatures = 2 * kSlots;  // position, presence
constexpr int kProgressFeatures = 4;
constexpr int kStateFeatures = kTaskFeatures + kParentFeatures + kKnobStateFeatures + kProgressFeatures;
constexpr int kOps = 4;                         // point, multi, crossover, space switch
constexpr int kPointScalars = 6;
// The value taken ("kVec=4"), keyed like a knob by two hashes: what one value of one knob does
// (fail, spill, win) is learned directly and carries over to every space with that knob.
constexpr int kValueBuckets = 32;
constexpr int kValueSlots = 2 * kValueBuckets;
constexpr int kActionFeatures = kOps + kSlots + kPointScalars + 2 * kSlots + kValueSlots + 2;
constexpr int kFeatures = kStateFeatures + kActionFeatures;
// The landscape model (the policy's value estimate of a genome): the task summary, the space's
// family, every knob's position (as in the state) and every knob=value pair in its own buckets.
constexpr int kFamilyBuckets = 8;
constexpr int kGenomeValueBuckets = 128;
constexpr int kModelFeatures = kTaskFeatures + 2 * kFamilyBuckets + kKnobStateFeatures + 2 * kGenomeValueBuckets;
constexpr size_t kEnumerateUpTo = 8192;         // seeding scores every genome of a space this small,
constexpr int kSampledGenomes = 2048;           // and this many random legal ones of a larger space
constexpr int kFineTuneSteps = 20;              // landscape-model steps per generation on the run's own measurements
constexpr double kFineTuneLr = 1e-3;
constexpr size_t kFineTuneLatest = 256;         // on the run's latest measurements, at most this many
constexpr size_t kRememberedChildren = 4096;    // children a point action will not propose again
constexpr size_t kMinibatch = 8;                // transitions per gradient step

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from the raw engine: the same numbers with every standard library.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::pair<int, int> slots_of(const std::string& knob_name) {
  const uint64_t h = fnv1a(knob_name);
  return {static_cast<int>(h % kBuckets), kBuckets + static_cast<int>((h >> 32) % kBuckets)};
}

std::pair<int, int> value_slots_of(const std::string& knob_name, int64_t value) {
  const uint64_t h = splitmix(fnv1a(knob_name) ^ static_cast<uint64_t>(value));
  return {static_cast<int>(h % kValueBuckets), kValueBuckets + static_cast<int>((h >> 32) % kValueBuckets)};
}

uint64_t genome_hash(const Genome& g) {
  uint64_t h = fnv1a(g.space);
  for (int64_t v : g.values) h = splitmix(h ^ static_cast<uint64_t>(v));
  return h;
}

double clamp(double x, double lo, double hi) { return std::isfinite(x) ? std::min(hi, std::max(lo, x)) : lo; }

int index_in(const mutate::Knob& k, int64_t v) {
  auto it = std::find(k.values.begin(), k.values.end(), v);
  return it == k.values.end() ? -1 : static_cast<int>(it - k.values.begin());
}

// Where a value sits in its knob's domain, 0..1 (0.5 for a single value or one outside it).
double position(const mutate::Knob& k, int64_t v) {
  const int i = index_in(k, v);
  if (i < 0 || k.values.size() < 2) return 0.5;
  return static_cast<double>(i) / static_cast<double>(k.values.size() - 1);
}

double log2_size(int64_t v) { return std::log2(static_cast<double>(std::llabs(v)) + 1.0); }

// Op kinds, sizes, FLOPs and arithmetic intensity of the task's largest workload.
std::vector<float> task_summary(const Task& t) {
  std::vector<float> f(kTaskFeatures, 0.f);
  if (t.workloads.empty()) return f;
  const Workload* big = &t.workloads.front();
  for (const Workload& w : t.workloads)
    if (t.bytes_moved(w) > t.bytes_moved(*big)) big = &w;
  try {
    const Graph g = t.graph(*big);
    double flops = static_cast<double>(g.matmul_conv_flops());
    for (const Node& n : g.nodes) {
      f[fnv1a(n.op) % kOpBuckets] += 1.f / static_cast<float>(g.nodes.size());
      for (int o : n.outputs) flops += static_cast<double>(numel(g.values[static_cast<size_t>(o)].shape));
    }
    const double bytes = static_cast<double>(t.bytes_moved(*big));
    f[kOpBuckets + 0] = static_cast<float>(std::log10(bytes + 1) / 10);
    f[kOpBuckets + 1] = static_cast<float>(std::log10(flops + 1) / 12);
    f[kOpBuckets + 2] = static_cast<float>(clamp(std::log10(flops / std::max(bytes, 1.0) + 1e-3) / 3, -1, 2));
    f[kOpBuckets + 3] = static_cast<float>(std::min<size_t>(g.nodes.size(), 32)) / 32.f;
  } catch (const std::exception&) {
    // A task whose graph does not build is summarised by its workload count alone.
  }
  f[kOpBuckets + 4] = static_cast<float>(std::min<size_t>(t.workloads.size(), 8)) / 8.f;
  return f;
}

// ---- what a proposal saw, kept until its reward comes back -----------------------------------

struct Situation {
  Parent parent;
  bool can_cross = false;
  double mate_log_ratio = 0, mate_distance = 0;
  double progress = 0, best_log_ratio = 0;
  int spaces = 1;
};

struct Action {
  Operator op = Operator::Point;
  int knob = -1;
  int64_t value = 0;
};

struct Pending {
  int generation = 0;
  Situation s;
  int actions = 0;             // how many there were (a check that they re-enumerate alike)
  std::vector<int> excluded;   // masked out when it was sampled
  int chosen = 0;
  std::vector<int> picks;      // a multi-knob change: the point actions it combined, in order
  double log_prob = 0;         // of `chosen` (and `picks`) under the network and the offsets
  std::vector<float> offsets;  // the landscape model's term per action (empty: none)
};

// The point actions a multi-knob change may pick after `so_far`: one change per knob.
std::vector<char> pickable(const std::vector<Action>& actions, const std::vector<int>& so_far) {
  std::vector<char> ok(actions.size(), 0);
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i].op != Operator::Point) continue;
    ok[i] = 1;
    for (int j : so_far)
      if (actions[static_cast<size_t>(j)].knob == actions[i].knob) ok[i] = 0;
  }
  return ok;
}

// log-softmax of `logits[pick]` among `ok`.
double log_prob_among(const float* logits, const std::vector<char>& ok, size_t pick) {
  double top = -INFINITY;
  for (size_t i = 0; i < ok.size(); ++i)
    if (ok[i]) top = std::max(top, static_cast<double>(logits[i]));
  double sum = 0;
  for (size_t i = 0; i < ok.size(); ++i)
    if (ok[i]) sum += std::exp(logits[i] - top);
  return logits[pick] - top - std::log(sum);
}

// Inverse CDF over `ok` with one uniform draw; ok must allow at least one.
size_t draw(const float* logits, const std::vector<char>& ok, std::mt19937_64& rng) {
  double top = -INFINITY;
  for (size_t i = 0; i < ok.size(); ++i)
    if (ok[i]) top = std::max(top, static_cast<double>(logits[i]));
  double sum = 0;
  for (size_t i = 0; i < ok.size(); ++i)
    if (ok[i]) sum += std::exp(logits[i] - top);
  double u = uniform01(rng) * sum;
  size_t pick = ok.size();
  for (size_t i = 0; i < ok.size(); ++i) {
    if (!ok[i]) continue;
    pick = i;
    u -= std::exp(logits[i] - top);
    if (u < 0) break;
  }
  return pick;
}

std::vector<Action> actions_of(const DesignSpace& space, const Situation& s) {
  std::vector<Action> out;
  for (const mutate::KnobChange& c : mutate::point_mutations(space, s.parent.genome))
    out.push_back({Operator::Point, c.knob, c.value});
  out.push_back({Operator::Multi});
  if (s.can_cross) out.push_back({Operator::Crossover});
  if (s.spaces > 1) out.push_back({Operator::SpaceSwitch});
  return out;
}

// Position and presence of each knob of `g`, by the knob's name slots (kKnobStateFeatures floats).
void knob_state(const DesignSpace& space, const Genome& g, float* k) {
  const auto& knobs = space.knobs();
  for (size_t i = 0; i < knobs.size() && i < g.values.size(); ++i) {
    auto [a, b] = slots_of(knobs[i].name);
    const float pos = static_cast<float>(position(knobs[i], g.values[i]));
    k[a] += pos;
    k[b] += pos;
    k[kSlots + a] += 1.f;
    k[kSlots + b] += 1.f;
  }
}

// The landscape model's input for one genome (kModelFeatures floats, zeroed by the caller).
void genome_features(const std::vector<float>& task, const DesignSpace& space, const Genome& g, float* f) {
  std::copy(task.begin(), task.end(), f);
  float* fam = f + kTaskFeatures;
  const uint64_t h = fnv1a(space.id().substr(0, space.id().find('/')));  // "pool_vec" of "pool_vec/max_pool2d"
  fam[h % kFamilyBuckets] = 1;
  fam[kFamilyBuckets + (h >> 32) % kFamilyBuckets] = 1;
  knob_state(space, g, fam + 2 * kFamilyBuckets);
  float* val = fam + 2 * kFamilyBuckets + kKnobStateFeatures;
  const auto& knobs = space.knobs();
  for (size_t i = 0; i < knobs.size() && i < g.values.size(); ++i) {
    const uint64_t v = splitmix(fnv1a(knobs[i].name) ^ static_cast<uint64_t>(g.values[i]));
    val[v % kGenomeValueBuckets] += 1;
    val[kGenomeValueBuckets + (v >> 32) % kGenomeValueBuckets] += 1;
  }
}

torch::Tensor genome_rows(const std::vector<float>& task, const DesignSpace& space, const std::vector<Genome>& gs) {
  torch::Tensor x = torch::zeros({static_cast<int64_t>(gs.size()), kModelFeatures}, torch::kFloat32);
  float* d = x.data_ptr<float>();
  for (size_t i = 0; i < gs.size(); ++i) genome_features(task, space, gs[i], d + i * kModelFeatures);
  return x;
}

// Regression targets of one task's measurements: log fitness standardised over its valid
// genomes (so tasks of any speed-up weigh alike), an invalid genome one deviation below the worst.
std::vector<float> standardised(const std::vector<double>& fitness) {
  double sum = 0, sq = 0, lo = INFINITY;
  int n = 0;
  for (double f : fitness)
    if (f > 0) {
      const double l = std::log(f);
      sum += l;
      sq += l * l;
      lo = std::min(lo, l);
      n++;
    }
  const double mean = n ? sum / n : 0;
  const double sd = n ? std::max(0.02, std::sqrt(std::max(0.0, sq / n - mean * mean))) : 1;
  std::vector<float> z;
  for (double f : fitness)
    z.push_back(static_cast<float>(f > 0 ? (std::log(f) - mean) / sd : (n ? (lo - mean) / sd - 1 : -1)));
  return z;
}

// Appends one task's measured genomes (genome, fitness; 0 when invalid) as the landscape model's
// rows and standardised targets; a genome of a space the task does not have is left out.
void add_examples(const std::vector<float>& task, const std::vector<std::unique_ptr<DesignSpace>>& spaces,
                  const std::vector<std::pair<const Genome*, double>>& measured, std::vector<torch::Tensor>& rows,
                  std::vector<float>& targets) {
  std::vector<double> fitness;
  for (const auto& [g, f] : measured) {
    const DesignSpace* sp = mutate::find_space(spaces, g->space);
    if (!sp || sp->knobs().size() != g->values.size()) continue;
    rows.push_back(genome_rows(task, *sp, {*g}));
    fitness.push_back(f);
  }
  const std::vector<float> z = standardised(fitness);
  targets.insert(targets.end(), z.begin(), z.end());
}

void state_features(const std::vector<float>& task, const DesignSpace& space, const Situation& s, float* f) {
  std::copy(task.begin(), task.end(), f);
  float* p = f + kTaskFeatures;
  const Parent& q = s.parent;
  p[0] = static_cast<float>(q.fitness > 0 ? clamp(std::log(q.fitness), -5, 5) / 2 : -2.5);
  p[1] = static_cast<float>(clamp(q.floor_fraction, 0, 1));
  p[2] = static_cast<float>(clamp(q.registers / 255.0, 0, 1));
  p[3] = static_cast<float>(clamp(q.shared_bytes / 232448.0, 0, 1));
  p[4] = q.spill_bytes > 0 ? 1.f : 0.f;
  p[5] = static_cast<float>(std::log1p(std::max(0, q.spill_bytes)) / 10);
  p[6] = static_cast<float>(clamp(q.occupancy, 0, 1));
  float* k = p + kParentFeatures;
  knob_state(space, q.genome, k);
  float* g = k + kKnobStateFeatures;
  g[0] = static_cast<float>(s.progress);
  g[1] = static_cast<float>(s.best_log_ratio);
  g[2] = s.can_cross ? 1.f : 0.f;
  g[3] = s.spaces > 1 ? 1.f : 0.f;
}

void action_features(const DesignSpace& space, const Situation& s, const Action& act, float* f) {
  switch (act.op) {
    case Operator::Point: f[0] = 1; break;
    case Operator::Multi: f[1] = 1; break;
    case Operator::Crossover: f[2] = 1; break;
    default: f[3] = 1; break;
  }
  float* id = f + kOps;
  float* sc = id + kSlots;
  float* slot_pos = sc + kPointScalars;
  float* slot_dir = slot_pos + kSlots;
  float* value = slot_dir + kSlots;
  float* cross = value + kValueSlots;
  if (act.op == Operator::Point) {
    const mutate::Knob& knob = space.knobs()[static_cast<size_t>(act.knob)];
    const int64_t old = s.parent.genome.values[static_cast<size_t>(act.knob)];
    auto [a, b] = slots_of(knob.name);
    const double np = position(knob, act.value), op = position(knob, old);
    const int steps = index_in(knob, act.value) - index_in(knob, old);
    const float dir = steps > 0 ? 1.f : -1.f;
    id[a] = id[b] = 1;
    sc[0] = static_cast<float>(np);
    sc[1] = static_cast<float>(op);
    sc[2] = static_cast<float>(clamp((log2_size(act.value) - log2_size(old)) / 4, -3, 3));
    sc[3] = dir;
    sc[4] = knob.values.size() > 1 ? static_cast<float>(std::abs(steps)) / static_cast<float>(knob.values.size() - 1) : 0.f;
    sc[5] = std::abs(steps) == 1 ? 1.f : 0.f;
    slot_pos[a] = slot_pos[b] = static_cast<float>(np);
    slot_dir[a] = slot_dir[b] = dir;
    auto [va, vb] = value_slots_of(knob.name, act.value);
    value[va] = value[vb] = 1;
  } else if (act.op == Operator::Crossover) {
    cross[0] = static_cast<float>(s.mate_log_ratio);
    cross[1] = static_cast<float>(s.mate_distance);
  }
}

// One row of features per action.
torch::Tensor features(const std::vector<float>& task, const DesignSpace& space, const Situation& s,
                       const std::vector<Action>& actions) {
  std::vector<float> state(kStateFeatures, 0.f);
  state_features(task, space, s, state.data());
  torch::Tensor x = torch::zeros({static_cast<int64_t>(actions.size()), kFeatures}, torch::kFloat32);
  float* d = x.data_ptr<float>();
  for (size_t i = 0; i < actions.size(); ++i) {
    float* row = d + i * kFeatures;
    std::copy(state.begin(), state.end(), row);
    action_features(space, s, actions[i], row + kStateFeatures);
  }
  return x;
}

// ---- the network -------------------------------------------------------------------------------

struct NetImpl : torch::nn::Module {
  NetImpl(int in, int hidden) {
    l1 = register_module("l1", torch::nn::Linear(in, hidden));
    l2 = register_module("l2", torch::nn::Linear(hidden, hidden));
    l3 = register_module("l3", torch::nn::Linear(hidden, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) { return l3(torch::tanh(l2(torch::tanh(l1(x))))).squeeze(-1); }
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
};
TORCH_MODULE(Net);

// Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) from our own RNG (torch's initialisers differ between
// versions); the output layer starts small so the first policy is close to uniform.
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

std::string one_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// ---- checkpoint --------------------------------------------------------------------------------
//
// "kevo-learned-policy 2 <meta bytes> <tensor bytes> <sha256 of both>\n", then the metadata (JSON:
// shapes, counters, proposals waiting for rewards, the hashes of the children proposed so far,
// Adam's step per parameter, the list of tensors with their shapes), then the tensors as raw
// little-endian float32: the network ("net.*"), the landscape model ("model.*") and Adam's moments
// ("adam.*"). A checkpoint written by one LibTorch reads with any other. Version 1 (still read)
// held a torch archive instead, which only the LibTorch version that wrote it reads safely.

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

// Everything a checkpoint holds, parsed before any of it replaces the policy's state.
struct State {
  int hidden = 64;
  Net net{nullptr};
  // The landscape model: trained across tasks by fit_landscape() (model_examples genomes), then
  // fine-tuned on the run's own measurements (`observed`: genome, fitness; 0 for an invalid one).
  Net model{nullptr};
  int64_t model_examples = 0;
  std::vector<std::pair<Genome, double>> observed;
  std::unique_ptr<torch::optim::Adam> adam;
  int64_t next_token = 0, updates = 0;
  std::map<int64_t, Pending> pending;
  std::deque<uint64_t> children;  // in the order proposed, oldest first
  std::unordered_set<uint64_t> child_set;
};

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

std::string serialize(const State& st) {
  json meta;
  meta["features"] = kFeatures;
  meta["hidden"] = st.hidden;
  meta["next_token"] = st.next_token;
  meta["updates"] = st.updates;
  meta["model"] = true;  // the tensors include the landscape model
  meta["model_examples"] = st.model_examples;
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

struct CheckpointError : std::runtime_error {
  explicit CheckpointError(const std::string& why) : std::runtime_error("learned policy checkpoint: " + why) {}
};

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

// ---- the policy --------------------------------------------------------------------------------

class LearnedPolicy : public Policy {
 public:
  explicit LearnedPolicy(const LearnedPolicyConfig& c) : c_(c) {
    // Results must not depend on how many threads torch would use (process-wide; the networks are
    // far too small to gain from more).
    torch::set_num_threads(1);
    st_ = c.init.empty() ? fresh_state(c) : deserialize(c.init, c.lr);
    // A checkpoint used as a starting point brings its parameters and optimizer state, not the
    // bookkeeping of the campaign it came from.
    st_.pending.clear();
    st_.children.clear();
    st_.child_set.clear();
    st_.next_token = 0;
    st_.observed.clear();
  }

  std::string name() const override { return c_.frozen ? "learned-frozen" : "learned"; }

  std::vector<Proposal> propose(const Context& ctx, const std::vector<Request>& requests,
                                std::mt19937_64& rng) override {
    torch::NoGradGuard no_grad;
    std::vector<Proposal> out;
    for (const Request& r : requests) out.push_back(one(ctx, r, rng));
    return out;
  }

  void update(const Context& ctx, const std::vector<Transition>& transitions) override {
    if (!c_.frozen) learn(ctx, transitions);
    // Proposals of this generation and older that earned nothing (duplicates, re-proposed) are
    // forgotten; those of the next generation, drawn already, wait for its update.
    for (auto it = st_.pending.begin(); it != st_.pending.end();)
      it = it->second.generation <= ctx.generation ? st_.pending.erase(it) : std::next(it);
  }

  std::string checkpoint() const override { return serialize(st_); }
  void restore(const std::string& bytes) override { st_ = deserialize(bytes, c_.lr); }

  // The run's measurements refine the landscape model (a model trained across tasks only: from
  // scratch a few dozen genomes teach it too little to steer by).
  void observe(const Context& ctx, const std::vector<Parent>& measured) override {
    if (c_.frozen || !guided() || !ctx.spaces) return;
    for (const Parent& m : measured)
      if (!m.genome.space.empty()) st_.observed.push_back({m.genome, m.fitness});  // not a free-form child
    std::vector<std::pair<const Genome*, double>> latest;
    for (size_t i = st_.observed.size() > kFineTuneLatest ? st_.observed.size() - kFineTuneLatest : 0;
         i < st_.observed.size(); ++i)
      latest.emplace_back(&st_.observed[i].first, st_.observed[i].second);
    std::vector<torch::Tensor> rows;
    std::vector<float> z;
    add_examples(task_features(ctx.task), *ctx.spaces, latest, rows, z);
    if (rows.size() < 2) return;
    const torch::Tensor x = torch::cat(rows);
    const torch::Tensor y = torch::tensor(z, torch::kFloat32);
    torch::optim::Adam adam(st_.model->parameters(), torch::optim::AdamOptions(kFineTuneLr));
    for (int step = 0; step < kFineTuneSteps; ++step) {
      torch::Tensor loss = torch::mse_loss(st_.model->forward(x), y);
      adam.zero_grad();
      loss.backward();
      adam.step();
    }
  }

  // With a landscape model trained across tasks, the seeds are the genomes it rates highest of
  // every space (all of a small space, a sample of a large one) not proposed before in the run.
  std::vector<Proposal> seeds(const Context& ctx, int n, std::mt19937_64& rng) override {
    if (!guided() || !ctx.spaces || n <= 0) return {};
    torch::NoGradGuard no_grad;
    std::vector<std::pair<float, Genome>> rated;
    for (const auto& sp : *ctx.spaces) {
      std::vector<Genome> candidates;
      std::unordered_set<uint64_t> seen;
      auto consider = [&](Genome g) {
        const uint64_t h = genome_hash(g);
        if (st_.child_set.count(h) || !seen.insert(h).second) return;
        candidates.push_back(std::move(g));
      };
      if (sp->size() <= kEnumerateUpTo) {
        for (Genome g : enumerate(*sp))
          if (sp->legal(g)) consider(std::move(g));
      } else {
        for (int i = 0; i < kSampledGenomes; ++i) {
          try {
            consider(sp->random_genome(rng));
          } catch (const std::runtime_error&) {
            break;  // no legal genome found: the space has none to offer
          }
        }
      }
      if (candidates.empty()) continue;
      const torch::Tensor v = st_.model->forward(genome_rows(task_features(ctx.task), *sp, candidates)).contiguous();
      for (size_t i = 0; i < candidates.size(); ++i) rated.emplace_back(v.data_ptr<float>()[i], std::move(candidates[i]));
    }
    // The best first; ties by the genome's text so the order is the same with every library.
    std::sort(rated.begin(), rated.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second.to_string() < b.second.to_string();
    });
    std::vector<Proposal> out;
    for (auto& [score, g] : rated) {
      if (static_cast<int>(out.size()) >= n) break;
      Proposal p;
      p.op = Operator::Seed;
      p.child = std::move(g);
      remember(p.child);
      out.push_back(std::move(p));
    }
    return out;
  }

 private:
  const std::vector<float>& task_features(const Task* task) {
    if (!task) {
      static const std::vector<float> none(kTaskFeatures, 0.f);
      return none;
    }
    if (task != task_ || task->name != task_name_) {
      task_ = task;
      task_name_ = task->name;
      task_summary_ = task_summary(*task);
    }
    return task_summary_;
  }

  Situation situation(const Context& ctx, const Request& r, const DesignSpace& space) const {
    Situation s;
    s.parent = r.parent;
    s.spaces = ctx.spaces ? static_cast<int>(ctx.spaces->size()) : 1;
    s.progress = ctx.budget > 0 ? clamp(static_cast<double>(ctx.evaluations) / static_cast<double>(ctx.budget), 0, 1) : 0;
    if (ctx.best_fitness > 0 && r.parent.fitness > 0) s.best_log_ratio = clamp(std::log(ctx.best_fitness / r.parent.fitness), 0, 3);
    s.can_cross = r.mate && r.mate->genome.space == space.id() && !(r.mate->genome == r.parent.genome);
    if (s.can_cross) {
      if (r.mate->fitness > 0 && r.parent.fitness > 0) s.mate_log_ratio = clamp(std::log(r.mate->fitness / r.parent.fitness), -3, 3);
      int differ = 0;
      const auto& a = r.parent.genome.values;
      const auto& b = r.mate->genome.values;
      for (size_t i = 0; i < a.size() && i < b.size(); ++i) differ += a[i] != b[i];
      s.mate_distance = a.empty() ? 0 : static_cast<double>(differ) / static_cast<double>(a.size());
    }
    return s;
  }

  void remember(const Genome& child) {
    const uint64_t h = genome_hash(child);
    if (!st_.child_set.insert(h).second) return;
    st_.children.push_back(h);
    if (st_.children.size() > kRememberedChildren) {
      st_.child_set.erase(st_.children.front());
      st_.children.pop_front();
    }
  }

  Proposal one(const Context& ctx, const Request& r, std::mt19937_64& rng) {
    if (!ctx.spaces) throw std::runtime_error("learned policy: the context names no design spaces");
    const auto& spaces = *ctx.spaces;
    const DesignSpace* space = mutate::find_space(spaces, r.parent.genome.space);
    if (!space) throw std::runtime_error("parent of unknown space " + r.parent.genome.space);
    if (r.parent.genome.values.size() != space->knobs().size())
      throw std::runtime_error("parent genome " + r.parent.genome.to_string() + " does not fit its space");
    const Situation s = situation(ctx, r, *space);
    const std::vector<Action> actions = actions_of(*space, s);
    // A point change to a child proposed before would only be a duplicate: leave it out while
    // anything else is left.
    std::vector<char> allowed(actions.size(), 1);
    std::vector<int> excluded;
    for (size_t i = 0; i < actions.size(); ++i)
      if (actions[i].op == Operator::Point &&
          st_.child_set.count(genome_hash(mutate::apply(r.parent.genome, {{actions[i].knob, actions[i].value}})))) {
        allowed[i] = 0;
        excluded.push_back(static_cast<int>(i));
      }
    torch::Tensor logits_t = net()->forward(features(task_features(ctx.task), *space, s, actions)).contiguous();
    const std::vector<float> terms = offsets(ctx, *space, s, actions);
    std::vector<float> combined(logits_t.data_ptr<float>(), logits_t.data_ptr<float>() + actions.size());
    for (size_t i = 0; i < terms.size(); ++i) combined[i] += terms[i];
    const float* logits = combined.data();
    while (std::find(allowed.begin(), allowed.end(), 1) != allowed.end()) {
      const size_t pick = draw(logits, allowed, rng);
      const Action& a = actions[pick];
      Proposal p;
      p.op = a.op;
      p.parents = {r.parent.variant};
      double net_log_prob = log_prob_among(logits, allowed, pick);
      std::vector<int> picks;
      switch (a.op) {
        case Operator::Point:
          p.child = mutate::apply(r.parent.genome, {{a.knob, a.value}});
          p.action = "point " + space->knobs()[static_cast<size_t>(a.knob)].name + "=" + std::to_string(a.value);
          break;
        case Operator::Multi:
          // Two or three of the policy's own point changes, drawn one knob at a time.
          for (int attempt = 0; attempt < 16 && p.action.empty(); ++attempt) {
            std::vector<int> knobs_free;
            for (size_t i = 0; i < actions.size(); ++i)
              if (actions[i].op == Operator::Point &&
                  std::find(knobs_free.begin(), knobs_free.end(), actions[i].knob) == knobs_free.end())
                knobs_free.push_back(actions[i].knob);
            if (knobs_free.size() < 2) break;
            const size_t k = knobs_free.size() >= 3 ? 2 + rng() % 2 : 2;
            picks.clear();
            double lp = 0;
            std::vector<mutate::KnobChange> changes;
            for (size_t j = 0; j < k; ++j) {
              const std::vector<char> ok = pickable(actions, picks);
              const size_t q = draw(logits, ok, rng);
              lp += log_prob_among(logits, ok, q);
              picks.push_back(static_cast<int>(q));
              changes.push_back({actions[q].knob, actions[q].value});
            }
            Genome child = mutate::apply(r.parent.genome, changes);
            if (!space->legal(child)) continue;
            p.child = std::move(child);
            p.action = "multi";
            for (const auto& c : changes) p.action += " " + space->knobs()[static_cast<size_t>(c.knob)].name + "=" + std::to_string(c.value);
            net_log_prob += lp;
            p.log_prob = knobs_free.size() >= 3 ? -std::log(2.0) : 0;  // the number of knobs
          }
          break;
        case Operator::Crossover:
          if (auto g = mutate::crossover(*space, r.parent.genome, r.mate->genome, rng)) {
            p.child = *g;
            p.parents.push_back(r.mate->variant);
            p.action = "crossover";
          }
          break;
        default: {
          std::vector<const DesignSpace*> others;
          for (const auto& o : spaces)
            if (o.get() != space) others.push_back(o.get());
          const DesignSpace* to = others[static_cast<size_t>(rng() % others.size())];
          p.child = to->random_genome(rng);
          p.action = "space_switch " + to->id();
          p.log_prob = -std::log(static_cast<double>(others.size()));
          break;
        }
      }
      if (p.action.empty()) {  // a multi-knob change or crossover with no legal child: draw again without it
        allowed[pick] = 0;
        excluded.push_back(static_cast<int>(pick));
        continue;
      }
      p.log_prob += net_log_prob;
      if (!c_.frozen) {
        Pending q;
        q.generation = ctx.generation;
        q.s = s;
        q.actions = static_cast<int>(actions.size());
        q.excluded = excluded;
        q.chosen = static_cast<int>(pick);
        q.picks = std::move(picks);
        q.log_prob = net_log_prob;
        q.offsets = terms;
        p.token = st_.next_token;
        st_.pending[p.token] = std::move(q);
      }
      st_.next_token++;
      remember(p.child);
      return p;
    }
    // Nothing legal but the parent itself: re-seed the space (a duplicate the search recognises).
    return reseed_proposal(*space, r.parent, rng);
  }

  struct Sample {
    const Pending* p;
    double reward;
    int64_t group;
  };

  void learn(const Context& ctx, const std::vector<Transition>& transitions) {
    if (!ctx.spaces) return;
    std::vector<Sample> samples;
    for (const Transition& t : transitions) {
      auto it = st_.pending.find(t.proposal.token);
      if (t.proposal.token < 0 || it == st_.pending.end()) continue;
      const DesignSpace* space = mutate::find_space(*ctx.spaces, it->second.s.parent.genome.space);
      if (!space || space->knobs().size() != it->second.s.parent.genome.values.size()) continue;
      samples.push_back({&it->second, t.reward, t.group});
    }
    if (samples.size() < 2) return;
    // Leave-one-out baseline among the children of one parent; a lone child is compared with the
    // rest of the generation.
    std::map<int64_t, std::pair<double, int>> groups;
    double total = 0;
    for (const Sample& x : samples) {
      auto& g = groups[x.group];
      g.first += x.reward;
      g.second++;
      total += x.reward;
    }
    const size_t n = samples.size();
    std::vector<double> adv(n);
    for (size_t i = 0; i < n; ++i) {
      const auto& g = groups[samples[i].group];
      adv[i] = g.second > 1 ? samples[i].reward - (g.first - samples[i].reward) / (g.second - 1)
                            : samples[i].reward - (total - samples[i].reward) / static_cast<double>(n - 1);
    }
    double sq = 0;
    for (double a : adv) sq += a * a;
    const double rms = std::sqrt(sq / static_cast<double>(n));
    if (rms < 1e-9) return;  // every child earned the same: nothing to prefer
    for (double& a : adv) a /= rms;

    // Rebuild every sample's action features, padded to the widest action set.
    std::vector<torch::Tensor> xs;
    std::vector<std::vector<char>> masks;
    std::vector<int64_t> chosen;
    std::vector<float> old_lp, advantages;
    std::vector<std::vector<float>> terms;  // the landscape model's offsets when the action was drawn
    // A multi-knob change's picks: (pick, the point actions it was drawn among) per step.
    std::vector<std::vector<std::pair<int, std::vector<char>>>> steps;
    size_t width = 0;
    for (size_t i = 0; i < n; ++i) {
      const Pending& p = *samples[i].p;
      const DesignSpace& space = *mutate::find_space(*ctx.spaces, p.s.parent.genome.space);
      const std::vector<Action> actions = actions_of(space, p.s);
      if (static_cast<int>(actions.size()) != p.actions || p.chosen < 0 || p.chosen >= p.actions) continue;
      std::vector<std::pair<int, std::vector<char>>> multi;
      bool consistent = true;
      for (size_t j = 0; j < p.picks.size(); ++j) {
        std::vector<char> ok = pickable(actions, std::vector<int>(p.picks.begin(), p.picks.begin() + static_cast<long>(j)));
        consistent = consistent && p.picks[j] >= 0 && p.picks[j] < p.actions && ok[static_cast<size_t>(p.picks[j])];
        multi.emplace_back(p.picks[j], std::move(ok));
      }
      if (!consistent) continue;
      steps.push_back(std::move(multi));
      std::vector<char> mask(actions.size(), 1);
      for (int e : p.excluded)
        if (e >= 0 && e < p.actions) mask[static_cast<size_t>(e)] = 0;
      xs.push_back(features(task_features(ctx.task), space, p.s, actions));
      masks.push_back(std::move(mask));
      chosen.push_back(p.chosen);
      terms.push_back(p.offsets.size() == actions.size() ? p.offsets : std::vector<float>(actions.size(), 0.f));
      old_lp.push_back(static_cast<float>(p.log_prob));
      advantages.push_back(static_cast<float>(adv[i]));
      width = std::max(width, actions.size());
    }
    const int64_t rows = static_cast<int64_t>(xs.size());
    if (rows < 2) return;
    torch::Tensor x = torch::zeros({rows, static_cast<int64_t>(width), kFeatures});
    torch::Tensor mask = torch::zeros({rows, static_cast<int64_t>(width)}, torch::kBool);
    torch::Tensor shift = torch::zeros({rows, static_cast<int64_t>(width)});
    for (int64_t i = 0; i < rows; ++i) {
      x[i].narrow(0, 0, xs[static_cast<size_t>(i)].size(0)).copy_(xs[static_cast<size_t>(i)]);
      const std::vector<float>& t = terms[static_cast<size_t>(i)];
      shift[i].narrow(0, 0, static_cast<int64_t>(t.size())).copy_(torch::tensor(t, torch::kFloat32));
      auto m = mask.accessor<bool, 2>();
      for (size_t j = 0; j < masks[static_cast<size_t>(i)].size(); ++j) m[i][static_cast<int64_t>(j)] = masks[static_cast<size_t>(i)][j] != 0;
    }
    const torch::Tensor off = mask.logical_not();
    const torch::Tensor pick = torch::tensor(chosen, torch::kInt64).unsqueeze(1);
    const torch::Tensor old = torch::tensor(old_lp, torch::kFloat32);
    const torch::Tensor a = torch::tensor(advantages, torch::kFloat32);
    // Minibatches in an order drawn from the update count, so an update is a function of the
    // policy's state and the transitions alone.
    std::mt19937_64 shuffle(splitmix(0x7570646174650000ULL ^ static_cast<uint64_t>(st_.updates)));
    std::vector<int64_t> order(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) order[static_cast<size_t>(i)] = i;
    for (int e = 0; e < c_.epochs; ++e) {
      for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(shuffle() % i)]);
      for (size_t from = 0; from < order.size(); from += kMinibatch) {
        const size_t to = std::min(order.size(), from + kMinibatch);
        if (to - from < 2 && from > 0) break;  // a lone leftover would be a step on one sample
        const torch::Tensor idx = torch::tensor(std::vector<int64_t>(order.begin() + static_cast<long>(from),
                                                                     order.begin() + static_cast<long>(to)),
                                                torch::kInt64);
        const torch::Tensor off_b = off.index_select(0, idx);
        const torch::Tensor scores = net()->forward(x.index_select(0, idx)) + shift.index_select(0, idx);
        torch::Tensor logp_all = torch::log_softmax(scores.masked_fill(off_b, -1e9), 1);
        torch::Tensor logp = logp_all.gather(1, pick.index_select(0, idx)).squeeze(1);
        logp = logp + multi_log_prob(scores, order, from, to, steps);
        torch::Tensor ratio = torch::exp(logp - old.index_select(0, idx));
        const torch::Tensor a_b = a.index_select(0, idx);
        torch::Tensor surrogate = torch::min(ratio * a_b, torch::clamp(ratio, 1 - c_.clip, 1 + c_.clip) * a_b).mean();
        torch::Tensor entropy = -(logp_all.exp() * logp_all).masked_fill(off_b, 0).sum(1).mean();
        torch::Tensor loss = -(surrogate + c_.entropy * entropy);
        st_.adam->zero_grad();
        loss.backward();
        torch::nn::utils::clip_grad_norm_(net()->parameters(), 1.0);
        st_.adam->step();
      }
    }
    st_.updates++;
  }

  // Per minibatch row, the log-probability of a multi-knob change's picks (0 for other actions).
  static torch::Tensor multi_log_prob(const torch::Tensor& scores, const std::vector<int64_t>& order, size_t from,
                                      size_t to, const std::vector<std::vector<std::pair<int, std::vector<char>>>>& steps) {
    std::vector<int64_t> rows, picks;
    std::vector<char> ok;
    const int64_t width = scores.size(1);
    for (size_t b = from; b < to; ++b)
      for (const auto& [q, among] : steps[static_cast<size_t>(order[b])]) {
        rows.push_back(static_cast<int64_t>(b - from));
        picks.push_back(q);
        std::vector<char> padded(static_cast<size_t>(width), 0);
        std::copy(among.begin(), among.end(), padded.begin());
        ok.insert(ok.end(), padded.begin(), padded.end());
      }
    torch::Tensor out = torch::zeros({static_cast<int64_t>(to - from)});
    if (rows.empty()) return out;
    const int64_t n = static_cast<int64_t>(rows.size());
    const torch::Tensor r = torch::tensor(rows, torch::kInt64);
    const torch::Tensor allowed =
        torch::from_blob(ok.data(), {n, width}, torch::kUInt8).to(torch::kBool);  // copies
    const torch::Tensor sel = scores.index_select(0, r);
    const torch::Tensor term = sel.gather(1, torch::tensor(picks, torch::kInt64).unsqueeze(1)).squeeze(1) -
                               torch::logsumexp(sel.masked_fill(allowed.logical_not(), -1e9), 1);
    return out.index_add(0, r, term);
  }

  Net& net() { return st_.net; }

  // Whether the landscape model steers proposals: once it has been trained across tasks.
  bool guided() const { return st_.model_examples > 0; }

  // Every genome of a space (legal or not), in mixed-radix order.
  static std::vector<Genome> enumerate(const DesignSpace& space) {
    const auto& knobs = space.knobs();
    std::vector<Genome> out;
    std::vector<size_t> at(knobs.size(), 0);
    for (uint64_t k = 0; k < space.size(); ++k) {
      Genome g{space.id(), {}};
      for (size_t i = 0; i < knobs.size(); ++i) g.values.push_back(knobs[i].values[at[i]]);
      out.push_back(std::move(g));
      for (size_t i = 0; i < knobs.size() && ++at[i] == knobs[i].values.size(); ++i) at[i] = 0;
    }
    return out;
  }

  // The landscape model's term of each action's logit: weight x (the child's predicted standardised
  // log fitness - the best one's), for the point changes; the other moves, whose children are drawn
  // after the choice, get the median of those terms. Empty when the model does not steer.
  std::vector<float> offsets(const Context& ctx, const DesignSpace& space, const Situation& s,
                             const std::vector<Action>& actions) {
    if (!guided()) return {};
    std::vector<Genome> children;
    std::vector<size_t> at;
    for (size_t i = 0; i < actions.size(); ++i)
      if (actions[i].op == Operator::Point) {
        children.push_back(mutate::apply(s.parent.genome, {{actions[i].knob, actions[i].value}}));
        at.push_back(i);
      }
    std::vector<float> out(actions.size(), 0.f);
    if (children.empty()) return out;
    const torch::Tensor v = st_.model->forward(genome_rows(task_features(ctx.task), space, children)).contiguous();
    const float* p = v.data_ptr<float>();
    const float top = *std::max_element(p, p + children.size());
    std::vector<float> terms;
    for (size_t j = 0; j < children.size(); ++j) terms.push_back(static_cast<float>(c_.model_weight) * (p[j] - top));
    std::vector<float> sorted = terms;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(sorted.size() / 2), sorted.end());
    std::fill(out.begin(), out.end(), sorted[sorted.size() / 2]);
    for (size_t j = 0; j < at.size(); ++j) out[at[j]] = terms[j];
    return out;
  }

  LearnedPolicyConfig c_;
  State st_;
  const Task* task_ = nullptr;
  std::string task_name_;
  std::vector<float> task_summary_;
};

}  // namespace

std::unique_ptr<Policy> make_learned_policy(const LearnedPolicyConfig& c) {
  return std::make_unique<LearnedPolicy>(c);
}

std::string fit_landscape(const LearnedPolicyConfig& c, const std::vector<LandscapeTask>& tasks, int steps) {
  torch::set_num_threads(1);
  State st = c.init.empty() ? fresh_state(c) : deserialize(c.init, c.lr);
  std::vector<torch::Tensor> xs;
  std::vector<float> ys;
  for (const LandscapeTask& t : tasks) {
    if (!t.task || !t.spaces) continue;
    std::vector<std::pair<const Genome*, double>> measured;
    for (const Parent& m : t.measured) measured.emplace_back(&m.genome, m.fitness);
    add_examples(task_summary(*t.task), *t.spaces, measured, xs, ys);
  }
  if (xs.size() < 2) throw std::runtime_error("landscape model: fewer than 2 measured genomes of the tasks' spaces");
  const torch::Tensor x = torch::cat(xs), y = torch::tensor(ys, torch::kFloat32);
  const int64_t n = x.size(0);
  torch::optim::Adam adam(st.model->parameters(), torch::optim::AdamOptions(3e-3));
  std::mt19937_64 shuffle(splitmix(0x6c616e6473636170ULL ^ static_cast<uint64_t>(n)));
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  constexpr size_t kBatch = 64;
  for (int step = 0; step < steps;) {
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(shuffle() % i)]);
    for (size_t from = 0; from < order.size() && step < steps; from += kBatch, ++step) {
      const size_t to = std::min(order.size(), from + kBatch);
      const torch::Tensor idx = torch::tensor(std::vector<int64_t>(order.begin() + static_cast<long>(from),
                                                                   order.begin() + static_cast<long>(to)),
                                              torch::kInt64);
      torch::Tensor loss = torch::mse_loss(st.model->forward(x.index_select(0, idx)), y.index_select(0, idx));
      adam.zero_grad();
      loss.backward();
      adam.step();
    }
  }
  st.model_examples += n;
  st.pending.clear();
  st.observed.clear();
  return serialize(st);
}

}  // namespace kevo::policy
