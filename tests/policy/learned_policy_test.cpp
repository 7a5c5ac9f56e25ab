// The learned policy as a search relies on it: on a landscape with known structure it learns
// (what it proposes earns more, generation after generation) and, carrying what it learned on one
// task to another, finds the optimum in fewer evaluations than pure search; a checkpoint brings
// back parameters and optimizer state exactly; a frozen policy never changes; damaged checkpoint
// bytes are a one-line error; a learned campaign interrupted mid-generation resumes to the archive
// it would have had.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/sha256.h"
#include "lower/lower.h"
#include "mutate/mutation.h"
#include "policy/learned_policy.h"
#include "search/campaign.h"
#include "search/reward.h"
#include "store/campaign_file.h"
#include "tests/search/synthetic_evaluator.h"
#include "tests/support/temp_path.h"

namespace kevo::policy {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";
const std::string kLayerNorm = kRoot + "tasks/05_layer_norm.json";
const std::string kSoftmax = kRoot + "tasks/03_softmax.json";

std::string temp_path(const std::string& name) { return kevo::testing::fresh_temp_path("kevo_learned", name); }

uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// ---- a landscape with known structure ----------------------------------------------------------

// What a GPU would make of each knob, by the knob's name (so the same in every space with that
// knob): a preferred value with a weight, fitness falling off smoothly with the squared distance of
// each knob's position in its domain from its preferred one; and, for knobs of three values or
// more, one other value that fails every workload. The optimum is found by enumeration.
struct Landscape {
  struct Preference {
    size_t target = 0;
    double weight = 1;
    size_t fails = SIZE_MAX;
  };

  static Preference preference(const mutate::Knob& k) {
    const uint64_t h = fnv(k.name);
    const size_t n = k.values.size();
    Preference p;
    p.target = h % n;
    p.weight = 0.5 + 0.5 * static_cast<double>((h >> 20) % 4);
    if (n >= 3) {
      p.fails = (h >> 40) % n;
      if (p.fails == p.target) p.fails = (p.fails + 1) % n;
    }
    return p;
  }

  static size_t index(const mutate::Knob& k, int64_t v) {
    return static_cast<size_t>(std::find(k.values.begin(), k.values.end(), v) - k.values.begin());
  }

  static double fitness(const mutate::DesignSpace& space, const std::vector<int64_t>& genome) {
    double s = 0;
    const auto& knobs = space.knobs();
    for (size_t k = 0; k < knobs.size(); ++k) {
      const size_t n = knobs[k].values.size();
      if (n < 2) continue;
      const Preference p = preference(knobs[k]);
      const double d = (static_cast<double>(index(knobs[k], genome[k])) - static_cast<double>(p.target)) /
                       static_cast<double>(n - 1);
      s += p.weight * d * d;
    }
    return 2.0 * std::exp(-1.5 * s);
  }

  static bool fails(const mutate::DesignSpace& space, const std::vector<int64_t>& genome) {
    const auto& knobs = space.knobs();
    for (size_t k = 0; k < knobs.size(); ++k)
      if (index(knobs[k], genome[k]) == preference(knobs[k]).fails) return true;
    return false;
  }

  // The best fitness among the legal genomes that do not fail, over every space of the task.
  static double optimum(const Task& task) {
    double best = 0;
    for (const auto& space : lower::lower(task)) {
      const auto& knobs = space->knobs();
      mutate::Genome g{space->id(), std::vector<int64_t>(knobs.size())};
      std::vector<size_t> idx(knobs.size(), 0);
      while (true) {
        for (size_t k = 0; k < knobs.size(); ++k) g.values[k] = knobs[k].values[idx[k]];
        const double f = fitness(*space, g.values);
        if (f > best && !fails(*space, g.values) && space->legal(g)) best = f;
        size_t k = 0;
        while (k < knobs.size() && ++idx[k] == knobs[k].values.size()) idx[k++] = 0;
        if (k == knobs.size()) break;
      }
    }
    return best;
  }
};

class LandscapeEvaluator : public evaluators::VariantEvaluator {
 public:
  std::vector<store::MeasurementRecord> measure(const std::vector<evaluators::EvalRequest>& batch) override {
    std::vector<store::MeasurementRecord> out;
    for (const auto& r : batch) {
      auto& spaces = spaces_[r.task];
      if (spaces.empty()) spaces = lower::lower(*r.task);
      const mutate::DesignSpace& space = *mutate::find_space(spaces, r.space);
      store::MeasurementRecord m;
      m.variant = r.variant;
      if (Landscape::fails(space, r.genome)) {
        m.status = "wrong_result";
        m.error = "landscape: a failing knob value";
        out.push_back(m);
        continue;
      }
      m.status = "ok";
      m.fitness = Landscape::fitness(space, r.genome);
      uint64_t h = fnv(r.space);
      for (int64_t v : r.genome) h = (h ^ static_cast<uint64_t>(v + 7)) * 1099511628211ULL;
      m.occupancy = static_cast<double>(h % 100) / 100.0;
      store::WorkloadRecord w;
      w.status = "ok";
      w.median_ms = 1.0 / m.fitness;
      w.eager_ms = 1.0;
      w.floor_ms = 0.4;
      w.speedup = m.fitness;
      m.workloads.push_back(w);
      out.push_back(m);
    }
    return out;
  }
  evaluators::EvaluatorInfo info() const override { return {"landscape"}; }

 private:
  std::map<const Task*, std::vector<std::unique_ptr<mutate::DesignSpace>>> spaces_;
};

// One task with its spaces, and the context a policy sees halfway through a campaign.
struct Fixture {
  explicit Fixture(const std::string& file) : task(load_task(file)), spaces(lower::lower(task)) {}
  Context context(int generation) const {
    Context c;
    c.task = &task;
    c.spaces = &spaces;
    c.generation = generation;
    c.evaluations = 300;
    c.budget = 600;
    c.best_fitness = 2;
    return c;
  }
  const mutate::DesignSpace& space() const { return *spaces.front(); }
  // `n` valid parents drawn from `seed`.
  std::vector<Request> parents(int n, uint64_t seed) const {
    std::mt19937_64 rng(seed);
    std::vector<Request> out;
    while (static_cast<int>(out.size()) < n) {
      Request r;
      r.parent.genome = space().random_genome(rng);
      if (Landscape::fails(space(), r.parent.genome.values)) continue;
      r.parent.fitness = Landscape::fitness(space(), r.parent.genome.values);
      r.parent.variant = static_cast<int64_t>(out.size());
      out.push_back(r);
    }
    for (size_t i = 0; i + 1 < out.size(); i += 2) out[i].mate = out[i + 1].parent;
    return out;
  }
  Task task;
  std::vector<std::unique_ptr<mutate::DesignSpace>> spaces;
};

// The transitions the campaign would build from these proposals (bucketed rewards; the children
// of one parent share a group).
std::vector<Transition> transitions(const Fixture& f, const std::vector<Request>& requests,
                                    const std::vector<Proposal>& proposals) {
  std::vector<Transition> out;
  for (size_t i = 0; i < proposals.size(); ++i) {
    Transition t;
    t.proposal = proposals[i];
    t.parent = requests[i].parent;
    const mutate::DesignSpace& space = *mutate::find_space(f.spaces, proposals[i].child.space);
    t.valid = !Landscape::fails(space, proposals[i].child.values);
    t.child_fitness = t.valid ? Landscape::fitness(space, proposals[i].child.values) : 0;
    t.reward = search::make_reward("bucketed")->of(t.valid, t.parent.fitness, t.child_fitness, 2);
    t.group = t.parent.variant;
    out.push_back(t);
  }
  return out;
}

// Mean reward of one proposal for each of `n` fixed parents: what a policy has learned, apart from
// how far a search has come.
double probe_reward(Policy& policy, const Fixture& f, int n) {
  const std::vector<Request> requests = f.parents(n, 12345);
  std::mt19937_64 rng(777);
  double total = 0;
  for (const Transition& t : transitions(f, requests, policy.propose(f.context(1 << 20), requests, rng)))
    total += t.reward;
  return total / n;
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += v[i];
  return to > from ? s / static_cast<double>(to - from) : 0;
}

struct LandscapeRun {
  int64_t to_optimum = 0;                     // evaluations until the optimum was measured (0: never)
  std::vector<double> reward_per_generation;  // of the policy's children, as the campaign rewarded them
  std::vector<std::string> checkpoints;       // the policy's, as the file keeps them
};

LandscapeRun run_landscape(const search::CampaignConfig& c, const std::string& task, double optimum) {
  LandscapeEvaluator ev;
  const std::string path = temp_path(c.arm + ".h5");
  auto campaign = search::Campaign::create(path, c, {task}, ev, "test");
  campaign->run();
  const store::CampaignContents k = store::read_campaign(path);
  std::map<int64_t, const store::VariantRecord*> variant;
  for (const auto& v : k.variants) variant[v.id] = &v;
  std::map<int64_t, double> fitness;
  std::map<int, std::pair<double, int>> rewards;
  LandscapeRun o;
  double best = 0;
  int64_t n = 0;
  for (const auto& m : k.measurements) {  // in the order the campaign inserted them
    ++n;
    const store::VariantRecord& v = *variant.at(m.variant);
    const bool valid = m.status == "ok" && m.fitness > 0;
    if (!v.parents.empty() && fitness.count(v.parents.front())) {
      auto& r = rewards[v.generation];
      r.first += search::make_reward(c.reward)->of(valid, fitness[v.parents.front()], m.fitness, best);
      r.second++;
    }
    fitness[m.variant] = valid ? m.fitness : 0;
    if (valid) best = std::max(best, m.fitness);
    if (!o.to_optimum && m.fitness >= optimum * (1 - 1e-12)) o.to_optimum = n;
  }
  for (const auto& [g, r] : rewards) o.reward_per_generation.push_back(r.first / r.second);
  for (const auto& cp : k.checkpoints)
    if (cp.run == 0) o.checkpoints.push_back(cp.bytes);
  std::remove(path.c_str());
  return o;
}

std::string curve(const std::vector<double>& v) {
  std::ostringstream s;
  for (double x : v) s << " " << std::round(x * 100) / 100;
  return s.str();
}

// Evaluations until layer_norm's optimum was measured, summed over `seeds`: random search against
// the learned arm started from the checkpoint file `init` (which keeps learning). A run that never
// measured the optimum counts as the budget and one more, which only understates a gap.
struct Race {
  double random = 0, learned = 0;
};

Race race_to_optimum(const std::string& init, int64_t budget, const std::vector<uint64_t>& seeds, double optimum,
                     const std::string& learned_name) {
  Race out;
  for (uint64_t seed : seeds) {
    search::CampaignConfig c;
    c.seed = seed;
    c.budget_evals = budget;
    c.arm = "random";
    const LandscapeRun r = run_landscape(c, kLayerNorm, optimum);
    c.arm = "learned";
    c.policy_init = init;
    const LandscapeRun l = run_landscape(c, kLayerNorm, optimum);
    const int64_t re = r.to_optimum ? r.to_optimum : budget + 1, le = l.to_optimum ? l.to_optimum : budget + 1;
    out.random += static_cast<double>(re);
    out.learned += static_cast<double>(le);
    std::cout << "layer_norm seed " << seed << ": evaluations to the optimum: random " << re << ", " << learned_name
              << " " << le << "\n  realised reward per generation, random:" << curve(r.reward_per_generation)
              << "\n  learned:" << curve(l.reward_per_generation) << "\n";
  }
  const double n = static_cast<double>(seeds.size());
  std::cout << "mean evaluations to the optimum: random " << out.random / n << ", " << learned_name << " "
            << out.learned / n << "\n";
  return out;
}

// The acceptance test. On this space pure search finds the optimum in about 270 evaluations (64 of
// them the seeding generations), while a policy needs about five generations of rewards, and the
// pipeline two more, before what it learned shapes its proposals; and a campaign's realised reward
// falls as the search converges, whatever the policy. So (a) learning is measured as the reward of
// each generation's checkpoint on fixed parents, and (b) the speed-up is that of a policy trained
// on another task (softmax: the same knob names, its own space) sent to this one with
// --policy-init. Measured (LibTorch 1.13, CPU): learned 0.73x random's evaluations over these six
// seeds (per seed 0.67-0.91); a policy learning from scratch within the campaign gets 0.88x.
TEST(LearnedPolicy, LearnsALandscapeAndFindsItsOptimumSoonerThanRandomSearch) {
  const Fixture probe(kLayerNorm);
  const double optimum = Landscape::optimum(probe.task);
  ASSERT_GT(optimum, 0);

  // (a) Training: a learned campaign on softmax; its policy's reward on fixed layer_norm parents,
  // from the checkpoint of every generation, rises.
  search::CampaignConfig train;
  train.arm = "learned";
  train.seed = 11;
  train.budget_evals = 480;
  train.checkpoint_every = 1;  // every generation's policy, to probe
  const LandscapeRun trained = run_landscape(train, kSoftmax, Landscape::optimum(Fixture(kSoftmax).task));
  std::vector<double> learning;
  for (const std::string& cp : trained.checkpoints) {
    auto p = make_learned_policy({});
    p->restore(cp);
    learning.push_back(probe_reward(*p, probe, 128));
  }
  ASSERT_GE(learning.size(), 9u);
  const size_t third = learning.size() / 3;
  const double early = mean(learning, 0, third), late = mean(learning, learning.size() - third, learning.size());
  std::cout << "training on softmax: policy reward on fixed parents per generation:" << curve(learning)
            << "\n  realised reward per generation:" << curve(trained.reward_per_generation)
            << "\n  checkpoint: " << trained.checkpoints.back().size() << " bytes\n";
  EXPECT_GT(late, early + 0.3) << "the policy's reward did not rise: first third " << early << ", last third " << late;

  // (b) Search: layer_norm, random search against the trained policy (which keeps learning).
  const std::string init = temp_path("policy.pt");
  write_file(init, trained.checkpoints.back());
  const Race race = race_to_optimum(init, 400, {1, 2, 3, 4, 5, 6}, optimum, "learned");
  std::remove(init.c_str());
  // 0.85, not 0.8: another LibTorch rounds differently and so draws other trajectories; with the
  // spread of single seeds (sd about 0.09) six of them stay under 0.85 with room to spare.
  EXPECT_LE(race.learned, 0.85 * race.random) << "the trained policy was not faster than random search";
}

// The landscape model, trained across tasks (what `kevo train-policy` does with its replay files):
// fitted to 1,500 measured genomes per space of softmax, it seeds layer_norm (the same knob
// names, its own space) with the genomes it rates highest and weighs each mutation by the child
// it predicts, so the learned arm measures layer_norm's optimum in well under half of random
// search's evaluations. Measured (LibTorch 1.13, CPU), at a budget of 400 where random search
// always got there: learned 54 against random 268 evaluations on average (0.20x; per seed 0.004-0.28).
TEST(LearnedPolicy, ALandscapeModelTrainedOnAnotherTaskFindsTheOptimumInUnderHalfTheEvaluations) {
  const Fixture probe(kLayerNorm);
  const double optimum = Landscape::optimum(probe.task);
  const Fixture other(kSoftmax);
  LandscapeTask data{&other.task, &other.spaces, {}};
  std::mt19937_64 rng(5);
  for (const auto& space : other.spaces)
    for (int i = 0; i < 1500; ++i) {
      Parent m;
      m.genome = space->random_genome(rng);
      m.fitness = Landscape::fails(*space, m.genome.values) ? 0 : Landscape::fitness(*space, m.genome.values);
      data.measured.push_back(m);
    }
  const std::string init = temp_path("landscape.pt");
  write_file(init, fit_landscape({}, {data}));
  // A bad checkpoint to start from is a one-line error.
  LearnedPolicyConfig bad;
  bad.init = "junk";
  EXPECT_THROW(fit_landscape(bad, {data}), std::runtime_error);

  // Random search needs about 280 evaluations here, more than this budget.
  const Race race = race_to_optimum(init, 240, {1, 2, 3, 4}, optimum, "learned with a landscape model from softmax");
  std::remove(init.c_str());
  EXPECT_LE(race.learned, 0.5 * race.random) << "the landscape model did not halve random search's evaluations";
}

// ---- checkpoints -------------------------------------------------------------------------------

void expect_same(const std::vector<Proposal>& a, const std::vector<Proposal>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].child == b[i].child) << i << ": " << a[i].child.to_string() << " vs " << b[i].child.to_string();
    EXPECT_EQ(a[i].op, b[i].op) << i;
    EXPECT_EQ(a[i].log_prob, b[i].log_prob) << i;
    EXPECT_EQ(a[i].action, b[i].action) << i;
    EXPECT_EQ(a[i].token, b[i].token) << i;
    EXPECT_EQ(a[i].parents, b[i].parents) << i;
  }
}

// Proposals for `requests` and an update from their rewards, as one generation of a campaign.
void generation(Policy& p, const Fixture& f, const std::vector<Request>& requests, int g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<Proposal> props = p.propose(f.context(g), requests, rng);
  p.update(f.context(g), {{}, transitions(f, requests, props)});
}

// Eight parents with four children each.
std::vector<Request> children_of_eight(const Fixture& f, uint64_t seed) {
  std::vector<Request> out;
  for (const Request& r : f.parents(8, seed))
    for (int k = 0; k < 4; ++k) out.push_back(r);
  return out;
}

TEST(LearnedPolicy, ARestoredCheckpointHasTheSameParametersAndOptimizerState) {
  const Fixture f(kLayerNorm);
  LearnedPolicyConfig c;
  c.seed = 3;
  auto a = make_learned_policy(c);
  for (int g = 0; g < 3; ++g) generation(*a, f, children_of_eight(f, 100 + g), g, 200 + g);
  // Proposals of the next generation, drawn before this one's update as in a campaign: the
  // checkpoint must carry what the update needs of them.
  const std::vector<Request> next = children_of_eight(f, 300);
  std::mt19937_64 rng(301);
  const std::vector<Proposal> pending = a->propose(f.context(4), next, rng);
  const std::string bytes = a->checkpoint();

  c.seed = 99;
  auto b = make_learned_policy(c);
  b->restore(bytes);
  const std::vector<Request> probe = children_of_eight(f, 400);
  std::mt19937_64 ra(5), rb(5);
  expect_same(a->propose(f.context(4), probe, ra), b->propose(f.context(4), probe, rb));

  // The same update on both: equal only if Adam's moments and step count came back too.
  const std::vector<Transition> ts = transitions(f, next, pending);
  a->update(f.context(4), {{}, ts});
  b->update(f.context(4), {{}, ts});
  for (int g = 5; g < 7; ++g) {
    generation(*a, f, children_of_eight(f, 500 + g), g, 600 + g);
    generation(*b, f, children_of_eight(f, 500 + g), g, 600 + g);
  }
  std::mt19937_64 ra2(9), rb2(9);
  expect_same(a->propose(f.context(7), probe, ra2), b->propose(f.context(7), probe, rb2));

  // And the updates did change the policy: a fresh one proposes otherwise.
  auto fresh = make_learned_policy({});
  std::mt19937_64 rf(9), ra3(9);
  const auto pf = fresh->propose(f.context(7), probe, rf), pa = a->propose(f.context(8), probe, ra3);
  double differ = 0;
  for (size_t i = 0; i < pf.size(); ++i) differ += std::abs(pf[i].log_prob - pa[i].log_prob);
  EXPECT_GT(differ, 1.0);
}

TEST(LearnedPolicy, AFrozenPolicyNeverChanges) {
  const Fixture f(kLayerNorm);
  LearnedPolicyConfig c;
  c.seed = 4;
  auto teacher = make_learned_policy(c);
  for (int g = 0; g < 2; ++g) generation(*teacher, f, children_of_eight(f, 10 + g), g, 20 + g);
  c.init = teacher->checkpoint();
  c.frozen = true;
  auto frozen = make_learned_policy(c), untouched = make_learned_policy(c);
  c.frozen = false;
  auto learning = make_learned_policy(c);
  for (int g = 0; g < 4; ++g) {
    generation(*frozen, f, children_of_eight(f, 30 + g), g, 40 + g);
    generation(*learning, f, children_of_eight(f, 30 + g), g, 40 + g);
    // The same proposals without updates, so the policies remember the same children.
    std::mt19937_64 rng(40 + g);
    untouched->propose(f.context(g), children_of_eight(f, 30 + g), rng);
  }
  // Its whole state (parameters, optimizer, remembered children) is the one that saw no update.
  EXPECT_EQ(frozen->checkpoint(), untouched->checkpoint());
  const std::vector<Request> probe = children_of_eight(f, 50);
  std::mt19937_64 r1(1), r2(1), r3(1);
  const auto pf = frozen->propose(f.context(9), probe, r1);
  expect_same(pf, untouched->propose(f.context(9), probe, r2));
  const auto pl = learning->propose(f.context(9), probe, r3);
  double differ = 0;
  for (size_t i = 0; i < pf.size(); ++i) differ += std::abs(pf[i].log_prob - pl[i].log_prob);
  EXPECT_GT(differ, 0.1) << "the same updates left a learning policy unchanged too";
  // A frozen checkpoint restores as frozen parameters.
  c.frozen = true;
  auto again = make_learned_policy(c);
  again->restore(frozen->checkpoint());
  std::mt19937_64 r4(1), r5(1);
  expect_same(again->propose(f.context(10), probe, r4), frozen->propose(f.context(10), probe, r5));
}

// "kevo-learned-policy 2 META TENSORS SHA\n" + meta + tensors, rebuilt with a valid digest.
std::string reseal(const std::string& meta, const std::string& tensors, int version = 2) {
  return "kevo-learned-policy " + std::to_string(version) + " " + std::to_string(meta.size()) + " " + std::to_string(tensors.size()) + " " +
         Sha256().update(meta).update(tensors).hex_digest() + "\n" + meta + tensors;
}

std::pair<std::string, std::string> unseal(const std::string& bytes) {
  std::istringstream head(bytes.substr(0, bytes.find('\n')));
  std::string magic, digest;
  int version;
  size_t m, t;
  head >> magic >> version >> m >> t >> digest;
  const size_t at = bytes.find('\n') + 1;
  return {bytes.substr(at, m), bytes.substr(at + m, t)};
}

TEST(LearnedPolicy, DamagedCheckpointsAreOneLineErrorsAndLeaveThePolicyAsItWas) {
  const Fixture f(kLayerNorm);
  auto p = make_learned_policy({});
  generation(*p, f, children_of_eight(f, 1), 0, 2);
  const std::string good = p->checkpoint();
  const auto [meta, tensors] = unseal(good);
  std::string other_features = meta;
  other_features.replace(other_features.find("\"features\":"), 11, "\"features\":1");
  std::string junk_tensors = tensors;
  for (size_t i = 0; i < junk_tensors.size(); i += 7) junk_tensors[i] = static_cast<char>(junk_tensors[i] ^ 0x5a);
  std::string bad_shape = meta;
  bad_shape.replace(bad_shape.find("\"net.l1.weight\",["), 17, "\"net.l1.weight\",[-");
  std::string no_model = meta;
  no_model.replace(no_model.find("\"model.l1.weight\""), 17, "\"model.lX.weight\"");
  std::vector<std::pair<std::string, std::string>> damaged = {
      {"empty", ""},
      {"text", "not a checkpoint at all"},
      {"header only", good.substr(0, good.find('\n') + 1)},
      {"truncated", good.substr(0, good.size() / 2)},
      {"one byte more", good + "x"},
      {"a bit flipped in the metadata", good},
      {"a bit flipped in the tensors", good},
      {"a byte of the header", good},
      {"metadata not JSON", reseal("{not json", tensors)},
      {"metadata of another policy", reseal(other_features, tensors)},
      {"metadata missing a field", reseal("{\"features\":1}", tensors)},
      {"tensors damaged, read as a version 1 torch archive", reseal(meta, junk_tensors, 1)},
      {"a tensor of a negative shape", reseal(bad_shape, tensors)},
      {"a tensor missing", reseal(no_model, tensors)},
      {"tensors and one byte more", reseal(meta, tensors + "x")},
      {"tensors missing", reseal(meta, "")},
      {"tensors truncated", reseal(meta, tensors.substr(0, tensors.size() / 3))},
  };
  damaged[5].second[good.find('\n') + 10] ^= 1;
  damaged[6].second[good.size() - tensors.size() / 2] ^= 4;
  damaged[7].second.insert(22, "1");  // the metadata's size
  const std::vector<Request> probe = children_of_eight(f, 3);
  for (const auto& [what, bytes] : damaged) {
    try {
      p->restore(bytes);
      ADD_FAILURE() << what << ": restored";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << what << ": " << msg;
      EXPECT_EQ(msg.rfind("learned policy checkpoint: ", 0), 0u) << what << ": " << msg;
    }
    if (bytes.empty()) continue;  // as a starting point, empty means fresh
    LearnedPolicyConfig c;
    c.init = bytes;
    EXPECT_THROW(make_learned_policy(c), std::runtime_error) << what;
  }
  // Still the policy it was.
  auto q = make_learned_policy({});
  q->restore(good);
  std::mt19937_64 r1(8), r2(8);
  expect_same(p->propose(f.context(1), probe, r1), q->propose(f.context(1), probe, r2));
}

// ---- campaigns ---------------------------------------------------------------------------------

const std::vector<std::string> kSmallTasks = {kRoot + "tasks/01_relu.json", kRoot + "tasks/06_sum_dim1.json"};

search::CampaignConfig small_learned_config() {
  search::CampaignConfig c;
  c.arm = "learned";
  c.seed = 7;
  c.population = 6;
  c.islands = 2;
  c.budget_evals = 60;
  c.migration_interval = 2;
  c.stagnation = 3;
  return c;
}

using Fingerprint = std::tuple<std::vector<std::tuple<int64_t, int32_t, int32_t, std::string, std::vector<int64_t>,
                                                      std::vector<int64_t>, std::string, double, int64_t>>,
                               std::vector<std::pair<int64_t, double>>,
                               std::vector<std::tuple<int32_t, int32_t, std::string, int64_t, double>>>;

// Everything but timings: variants (with the policy's log-probabilities), measurements, the final
// archive.
Fingerprint fingerprint(const store::CampaignContents& k) {
  Fingerprint f;
  for (const auto& v : k.variants)
    std::get<0>(f).emplace_back(v.id, v.run, v.generation, v.space, v.genome, v.parents, v.op, v.log_prob,
                                v.duplicate_of);
  for (const auto& m : k.measurements) std::get<1>(f).emplace_back(m.variant, m.fitness);
  int last = -1;
  for (const auto& a : k.archive) last = std::max(last, a.generation);
  for (const auto& a : k.archive)
    if (a.generation == last) std::get<2>(f).emplace_back(a.run, a.island, a.cell, a.variant, a.fitness);
  return f;
}

// A campaign of `config` crashed after 1, 2 and 4 batches and resumed ends as the uninterrupted one.
void expect_resumes_to_the_uninterrupted_archive(const search::CampaignConfig& config) {
  testing::SyntheticEvaluator whole;
  const std::string path = temp_path("whole.h5");
  auto c = search::Campaign::create(path, config, kSmallTasks, whole, "test");
  c->run();
  const store::CampaignContents all = store::read_campaign(path);
  const Fingerprint expected = fingerprint(all);
  // A checkpoint of each run's policy after every tenth generation and after the last.
  std::map<int32_t, std::vector<int>> per_run, expected_per_run;
  for (const auto& cp : all.checkpoints)
    if (cp.kind == "policy") per_run[cp.run].push_back(cp.generation);
  std::map<int32_t, int> last;
  for (const auto& g : all.generations) last[g.run] = std::max(last[g.run], g.generation);
  for (const auto& [run, l] : last) {
    for (int g = 0; g <= l; g += 10) expected_per_run[run].push_back(g);
    if (l % 10 != 0) expected_per_run[run].push_back(l);
  }
  EXPECT_EQ(per_run, expected_per_run);
  EXPECT_EQ(per_run.size(), 2u);
  for (int crash_at : {1, 2, 4}) {
    const std::string p = temp_path("crash.h5");
    testing::SyntheticEvaluator crashing;
    crashing.fail_after = crash_at;
    auto campaign = search::Campaign::create(p, config, kSmallTasks, crashing, "test");
    EXPECT_THROW(campaign->run(), std::runtime_error);
    campaign.reset();
    testing::SyntheticEvaluator rest;
    auto resumed = search::Campaign::resume(p, rest);
    resumed->run();
    EXPECT_TRUE(expected == fingerprint(store::read_campaign(p))) << "crash after " << crash_at << " batches";
    std::remove(p.c_str());
  }
  std::remove(path.c_str());
}

TEST(LearnedCampaign, ResumedAfterACrashFinishesWithTheUninterruptedArchive) {
  expect_resumes_to_the_uninterrupted_archive(small_learned_config());
}

// The same with a fitted landscape model (seeds chosen by it, mutations weighed by it, the model
// refined on the run's measurements): what the checkpoints hold is enough to re-derive all of it.
TEST(LearnedCampaign, WithALandscapeModelResumedAfterACrashFinishesWithTheUninterruptedArchive) {
  const Fixture relu(kSmallTasks.front());
  LandscapeTask data{&relu.task, &relu.spaces, {}};
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200; ++i) {
    Parent m;
    m.genome = relu.space().random_genome(rng);
    m.fitness = Landscape::fails(relu.space(), m.genome.values) ? 0 : Landscape::fitness(relu.space(), m.genome.values);
    data.measured.push_back(m);
  }
  const std::string init = temp_path("landscape.pt");
  write_file(init, fit_landscape({}, {data}, 300));
  search::CampaignConfig c = small_learned_config();
  c.policy_init = init;
  expect_resumes_to_the_uninterrupted_archive(c);
  // The model chose relu's seeds: on the landscape it was fitted to they score far above random
  // search's seeds.
  auto seed_fitness = [&](const search::CampaignConfig& config) {
    testing::SyntheticEvaluator ev;
    const std::string path = temp_path("seeded.h5");
    search::Campaign::create(path, config, kSmallTasks, ev, "test")->run();
    double sum = 0;
    int n = 0;
    for (const auto& v : store::read_campaign(path).variants)
      if (v.run == 0 && v.op == "seed" && v.duplicate_of == -1) {
        sum += Landscape::fails(relu.space(), v.genome) ? 0 : Landscape::fitness(relu.space(), v.genome);
        n++;
      }
    std::remove(path.c_str());
    EXPECT_GT(n, 0);
    return n ? sum / n : 0;
  };
  search::CampaignConfig r = small_learned_config();
  r.arm = "random";
  const double guided = seed_fitness(c), uniform = seed_fitness(r);
  std::cout << "relu seeds' mean landscape fitness: chosen by the model " << guided << ", random " << uniform << "\n";
  EXPECT_GT(guided, 1.3 * uniform);
  std::remove(init.c_str());
}

TEST(LearnedCampaign, FrozenArmSamplesFromItsCheckpointAndNeverUpdates) {
  // A checkpoint from a learned campaign, as `--policy-init` reads it.
  testing::SyntheticEvaluator ev;
  const std::string learned_path = temp_path("learned.h5");
  search::Campaign::create(learned_path, small_learned_config(), kSmallTasks, ev, "test")->run();
  const store::CampaignContents learned = store::read_campaign(learned_path);
  ASSERT_FALSE(learned.checkpoints.empty());
  const std::string init = temp_path("policy.pt");
  write_file(init, learned.checkpoints.back().bytes);

  search::CampaignConfig c = small_learned_config();
  c.arm = "learned-frozen";
  c.policy_init = init;
  const std::string path = temp_path("frozen.h5");
  testing::SyntheticEvaluator ev2;
  search::Campaign::create(path, c, kSmallTasks, ev2, "test")->run();
  const store::CampaignContents frozen = store::read_campaign(path);
  EXPECT_EQ(search::config_from_json(frozen.runs.front().config).policy_init, init);
  EXPECT_EQ(frozen.runs.front().arm, "learned-frozen");
  // Every checkpoint it wrote proposes as the one it started from (probed on another task, whose
  // children it never proposed).
  const Fixture f(kLayerNorm);
  const std::vector<Request> probe = children_of_eight(f, 60);
  LearnedPolicyConfig lc;
  lc.frozen = true;
  auto start = make_learned_policy(lc);
  start->restore(learned.checkpoints.back().bytes);
  std::mt19937_64 r0(3);
  const std::vector<Proposal> expected = start->propose(f.context(1), probe, r0);
  ASSERT_FALSE(frozen.checkpoints.empty());
  for (const auto& cp : frozen.checkpoints) {
    auto p = make_learned_policy(lc);
    p->restore(cp.bytes);
    std::mt19937_64 r(3);
    const std::vector<Proposal> got = p->propose(f.context(1), probe, r);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].log_prob, expected[i].log_prob) << "generation " << cp.generation;
  }
  std::remove(init.c_str());
  std::remove(path.c_str());
  std::remove(learned_path.c_str());
}

// The --policy-init checkpoint is kept in the campaign file: a resume needs the file only, even when
// the checkpoint it was read from has gone.
TEST(LearnedCampaign, ResumeReadsThePolicyInitFromTheCampaignFile) {
  testing::SyntheticEvaluator ev;
  const std::string learned_path = temp_path("learned_for_init.h5");
  search::Campaign::create(learned_path, small_learned_config(), kSmallTasks, ev, "test")->run();
  const store::CampaignContents learned = store::read_campaign(learned_path);
  const std::string init = temp_path("init.pt");
  write_file(init, learned.checkpoints.back().bytes);
  search::CampaignConfig c = small_learned_config();
  c.policy_init = init;
  testing::SyntheticEvaluator whole;
  const std::string whole_path = temp_path("init_whole.h5");
  search::Campaign::create(whole_path, c, kSmallTasks, whole, "test")->run();
  const store::CampaignContents all = store::read_campaign(whole_path);
  int kept = 0;
  for (const auto& cp : all.checkpoints)
    if (cp.kind == "policy_init") {
      ++kept;
      EXPECT_EQ(cp.generation, -1);
      EXPECT_EQ(cp.bytes, learned.checkpoints.back().bytes);
    }
  EXPECT_EQ(kept, 1);

  const std::string path = temp_path("init_crash.h5");
  testing::SyntheticEvaluator crashing;
  crashing.fail_after = 2;
  EXPECT_THROW(search::Campaign::create(path, c, kSmallTasks, crashing, "test")->run(), std::runtime_error);
  std::remove(init.c_str());
  testing::SyntheticEvaluator rest;
  search::Campaign::resume(path, rest)->run();
  EXPECT_TRUE(fingerprint(all) == fingerprint(store::read_campaign(path)));
  for (const std::string& f : {learned_path, whole_path, path}) std::remove(f.c_str());
}

TEST(LearnedCampaign, PolicyInitIsCheckedAndKept) {
  testing::SyntheticEvaluator ev;
  search::CampaignConfig c = small_learned_config();
  c.arm = "learned-frozen";
  try {
    search::Campaign::create(temp_path("x.h5"), c, kSmallTasks, ev, "");
    ADD_FAILURE() << "learned-frozen without a checkpoint";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--policy-init"), std::string::npos) << e.what();
  }
  c.policy_init = temp_path("missing.pt");
  EXPECT_THROW(search::Campaign::create(temp_path("x.h5"), c, kSmallTasks, ev, ""), InputError);
  const std::string bad = temp_path("bad.pt");
  write_file(bad, "not a policy");
  c.policy_init = bad;
  for (const char* arm : {"learned", "learned-frozen"}) {
    c.arm = arm;
    try {
      search::Campaign::create(temp_path("x.h5"), c, kSmallTasks, ev, "");
      ADD_FAILURE() << arm << " started from a bad checkpoint";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("learned policy checkpoint"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
  std::remove(bad.c_str());
  // Kept in the stored configuration; files of kevo before the learned arms have none.
  c.policy_init = "/some/policy.pt";
  EXPECT_EQ(search::config_from_json(search::config_to_json(c)).policy_init, "/some/policy.pt");
  search::CampaignConfig plain;
  std::string text = search::config_to_json(plain);
  const size_t at = text.find("\"policy_init\":\"\",");
  ASSERT_NE(at, std::string::npos) << text;
  text.erase(at, std::string("\"policy_init\":\"\",").size());
  EXPECT_EQ(search::config_from_json(text).policy_init, "");
}

}  // namespace
}  // namespace kevo::policy
