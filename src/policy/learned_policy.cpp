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
#include <map>
#include <stdexcept>
#include <unordered_set>

#include "policy/learned_features.h"
#include "policy/learned_state.h"

namespace kevo::policy {

namespace {

using mutate::DesignSpace;
using mutate::Genome;
using namespace learned;

constexpr size_t kEnumerateUpTo = 8192;         // seeding scores every genome of a space this small,
constexpr int kSampledGenomes = 2048;           // and this many random legal ones of a larger space
constexpr int kFineTuneSteps = 20;              // landscape-model steps per generation on the run's own measurements
constexpr double kFineTuneLr = 1e-3;
constexpr size_t kFineTuneLatest = 256;         // on the run's latest measurements, at most this many
constexpr size_t kRememberedChildren = 4096;    // children a point action will not propose again
constexpr size_t kMinibatch = 8;                // transitions per gradient step

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

  std::vector<Proposal> propose(const Context& ctx, const std::vector<Request>& requests,
                                std::mt19937_64& rng) override {
    torch::NoGradGuard no_grad;
    std::vector<Proposal> out;
    for (const Request& r : requests) out.push_back(one(ctx, r, rng));
    return out;
  }

  // The measurements refine the landscape model; the rewards train the mutation network.
  void update(const Context& ctx, const Feedback& feedback) override {
    if (!feedback.measured.empty()) observe(ctx, feedback.measured);
    if (feedback.transitions.empty()) return;
    if (!c_.frozen) learn(ctx, feedback.transitions);
    // Proposals of this generation and older that earned nothing (duplicates, re-proposed) are
    // forgotten; those of the next generation, drawn already, wait for its update.
    for (auto it = st_.pending.begin(); it != st_.pending.end();)
      it = it->second.generation <= ctx.generation ? st_.pending.erase(it) : std::next(it);
  }

  std::string checkpoint() const override { return serialize(st_); }
  void restore(const std::string& bytes) override { st_ = deserialize(bytes, c_.lr); }

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
      p.op = mutate::kSeedOp;
      p.child = std::move(g);
      remember(p.child);
      out.push_back(std::move(p));
    }
    return out;
  }

 private:
  // The run's measurements refine the landscape model (a model trained across tasks only: from
  // scratch a few dozen genomes teach it too little to steer by).
  void observe(const Context& ctx, const std::vector<Parent>& measured) {
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
      if (actions[i].op == kPointOp &&
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
      p.op = learned_operators()[a.op]->name();
      p.parents = {r.parent.variant};
      double net_log_prob = log_prob_among(logits, allowed, pick);
      std::vector<int> picks;
      switch (a.op) {
        case kPointOp:
          p.child = mutate::apply(r.parent.genome, {{a.knob, a.value}});
          p.action = "point " + space->knobs()[static_cast<size_t>(a.knob)].name + "=" + std::to_string(a.value);
          break;
        case kMultiOp:
          // The multi-knob operator the policy's own way: its point changes, drawn by their scores.
          // Two or three of the policy's own point changes, drawn one knob at a time.
          for (int attempt = 0; attempt < 16 && p.action.empty(); ++attempt) {
            std::vector<int> knobs_free;
            for (size_t i = 0; i < actions.size(); ++i)
              if (actions[i].op == kPointOp &&
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
        case kCrossoverOp:
          if (auto m = learned_operators()[a.op]->draw({*space, spaces, r.parent.genome, &r.mate->genome}, rng)) {
            p.child = std::move(m->child);
            p.parents.push_back(r.mate->variant);
            p.action = std::move(m->action);
          }
          break;
        case kSpaceSwitchOp: {
          // The target space from the policy's own stream (what its recorded campaigns drew).
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
      if (actions[i].op == kPointOp) {
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


void check_checkpoint(const std::string& bytes) { deserialize(bytes, LearnedPolicyConfig{}.lr); }

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

