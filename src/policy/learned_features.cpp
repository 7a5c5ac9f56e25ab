// The learned policy's features: the row layouts of learned_features.h filled in, and sampling.
#include "policy/learned_features.h"

#include <algorithm>
#include <cstdlib>

namespace kevo::policy::learned {

using mutate::DesignSpace;
using mutate::Genome;

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

std::pair<int, int> slots_of(const std::string& knob_name) {
  const uint64_t h = fnv1a(knob_name);
  return {static_cast<int>(h % kBuckets), kBuckets + static_cast<int>((h >> 32) % kBuckets)};
}

std::pair<int, int> value_slots_of(const std::string& knob_name, int64_t value) {
  const uint64_t h = splitmix(fnv1a(knob_name) ^ static_cast<uint64_t>(value));
  return {static_cast<int>(h % kValueBuckets), kValueBuckets + static_cast<int>((h >> 32) % kValueBuckets)};
}

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
  f[act.op] = 1;
  float* id = f + kOps;
  float* sc = id + kSlots;
  float* slot_pos = sc + kPointScalars;
  float* slot_dir = slot_pos + kSlots;
  float* value = slot_dir + kSlots;
  float* cross = value + kValueSlots;
  if (act.op == kPointOp) {
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
  } else if (act.op == kCrossoverOp) {
    cross[0] = static_cast<float>(s.mate_log_ratio);
    cross[1] = static_cast<float>(s.mate_distance);
  }
}

}  // namespace

uint64_t genome_hash(const Genome& g) {
  uint64_t h = fnv1a(g.space);
  for (int64_t v : g.values) h = splitmix(h ^ static_cast<uint64_t>(v));
  return h;
}

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

const std::vector<const mutate::MutationOperator*>& learned_operators() {
  static const std::vector<const mutate::MutationOperator*> ops = {
      &mutate::point_operator(), &mutate::multi_knob_operator(), &mutate::crossover_operator(),
      &mutate::space_switch_operator()};
  static_assert(kOps == 4, "one one-hot feature per learned operator");
  return ops;
}

std::vector<Action> actions_of(const DesignSpace& space, const Situation& s) {
  std::vector<Action> out;
  for (const mutate::KnobChange& c : mutate::point_mutations(space, s.parent.genome))
    out.push_back({kPointOp, c.knob, c.value});
  out.push_back({kMultiOp});
  if (s.can_cross) out.push_back({kCrossoverOp});
  if (s.spaces > 1) out.push_back({kSpaceSwitchOp});
  return out;
}

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

torch::Tensor genome_rows(const std::vector<float>& task, const DesignSpace& space, const std::vector<Genome>& gs) {
  torch::Tensor x = torch::zeros({static_cast<int64_t>(gs.size()), kModelFeatures}, torch::kFloat32);
  float* d = x.data_ptr<float>();
  for (size_t i = 0; i < gs.size(); ++i) genome_features(task, space, gs[i], d + i * kModelFeatures);
  return x;
}

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

std::vector<char> pickable(const std::vector<Action>& actions, const std::vector<int>& so_far) {
  std::vector<char> ok(actions.size(), 0);
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i].op != kPointOp) continue;
    ok[i] = 1;
    for (int j : so_far)
      if (actions[static_cast<size_t>(j)].knob == actions[i].knob) ok[i] = 0;
  }
  return ok;
}

namespace {

// The largest logit among `ok` and the sum of exp(logit - largest) over them: the softmax's scale.
struct Softmax {
  double top = -INFINITY, sum = 0;
};

Softmax softmax_over(const float* logits, const std::vector<char>& ok) {
  Softmax s;
  for (size_t i = 0; i < ok.size(); ++i)
    if (ok[i]) s.top = std::max(s.top, static_cast<double>(logits[i]));
  for (size_t i = 0; i < ok.size(); ++i)
    if (ok[i]) s.sum += std::exp(logits[i] - s.top);
  return s;
}

}  // namespace

double log_prob_among(const float* logits, const std::vector<char>& ok, size_t pick) {
  const Softmax s = softmax_over(logits, ok);
  return logits[pick] - s.top - std::log(s.sum);
}

size_t draw(const float* logits, const std::vector<char>& ok, std::mt19937_64& rng) {
  const Softmax s = softmax_over(logits, ok);
  double u = uniform01(rng) * s.sum;
  size_t pick = ok.size();
  for (size_t i = 0; i < ok.size(); ++i) {
    if (!ok[i]) continue;
    pick = i;
    u -= std::exp(logits[i] - s.top);
    if (u < 0) break;
  }
  return pick;
}

}  // namespace kevo::policy::learned
