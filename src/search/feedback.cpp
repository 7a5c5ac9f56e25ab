// A measured generation's outcomes, archives, transitions and rewards.
#include "search/feedback.h"

#include <algorithm>
#include <map>
#include <set>

namespace kevo::search {

namespace {

// Files the measurement of `v` in its run: counters, outcome, archive and best.
const Outcome& file_outcome(SearchState& s, Run& run, const store::VariantRecord& v, const store::MeasurementRecord& m,
                            int generation) {
  run.evaluations++;
  if (m.status == "unmeasured") run.unmeasured++;
  if (m.status == "screened") run.screened++;
  const Outcome& o = run.outcomes[v.id] = outcome_of(v, m, *run.task, run.editor != nullptr);
  if (o.valid) {
    Elite e{o.stats, cell_of(v.space, m.occupancy, s.config.occupancy_bands), generation};
    run.islands[static_cast<size_t>(v.island)].archive.insert(e);
    if (m.fitness > run.best) {
      run.best = m.fitness;
      run.best_variant = v.id;
      run.best_elite = e;
    }
  }
  return o;
}

// The model's completions earn what their children earned: a duplicate what the candidate it
// repeats earned against this parent, no child at all the reward of an invalid one.
void credit_samples(const SearchState& s, Batch& b, const std::map<int64_t, double>& reward_of) {
  std::map<int64_t, int64_t> repeats;  // a duplicate variant -> the one it repeats
  for (const store::VariantRecord& v : b.variants)
    if (v.duplicate_of != -1) repeats[v.id] = v.duplicate_of;
  for (BatchSample& sample : b.samples) {
    const Run& run = s.runs[static_cast<size_t>(sample.run)];
    auto r = reward_of.find(sample.variant);
    if (r != reward_of.end()) {
      sample.reward = r->second;
    } else if (sample.duplicate) {
      auto o = run.outcomes.find(repeats.at(sample.variant));
      auto par = run.outcomes.find(sample.sample.parent);
      const bool known = o != run.outcomes.end() && par != run.outcomes.end();
      sample.reward = known ? s.reward->of(o->second.valid || o->second.screened, par->second.stats.fitness, o->second.stats.fitness,
                                           std::max(run.best, o->second.stats.fitness + 1))  // a repeat is never a new best
                            : 0;
    } else {
      sample.reward = sample.sample.status == "request_failed" ? 0 : s.reward->of(false, 0, 0, 0);
    }
  }
}

}  // namespace

std::vector<policy::Feedback> notify_results(SearchState& s, Batch& b,
                                             const std::vector<store::MeasurementRecord>& results) {
  std::vector<policy::Feedback> feedback(s.runs.size());
  std::map<int64_t, int64_t> group_of_parent;
  std::map<int64_t, double> reward_of;  // variant -> its reward
  for (size_t i = 0; i < b.requests.size(); ++i) {
    const size_t k = b.variant_of_request[i];
    const store::VariantRecord& v = b.variants[k];
    const store::MeasurementRecord& m = results[i];
    Run& run = s.runs[static_cast<size_t>(v.run)];
    const double run_best_before = run.best;
    const Outcome& o = file_outcome(s, run, v, m, b.generation);
    if (m.status != "unmeasured") feedback[static_cast<size_t>(run.id)].measured.push_back(o.stats);
    if (!b.parents[k]) continue;
    policy::Transition t;
    t.proposal = b.proposals[k];
    t.parent = *b.parents[k];
    t.child_fitness = o.stats.fitness;
    t.valid = o.valid || o.screened;  // a screened child's short timing is a reward signal, never an elite
    t.reward = s.reward->of(t.valid, t.parent.fitness, t.child_fitness, run_best_before);
    t.group = group_of_parent.emplace(t.parent.variant, static_cast<int64_t>(group_of_parent.size())).first->second;
    reward_of[v.id] = m.status == "unmeasured" ? 0 : t.reward;  // a replay without the recording: no signal
    feedback[static_cast<size_t>(run.id)].transitions.push_back(std::move(t));
  }
  credit_samples(s, b, reward_of);
  return feedback;
}

void forget_outcomes(Run& run) {
  if (run.editor) return;
  std::set<int64_t> elites;
  for (const Island& isl : run.islands)
    for (const auto& [cell, e] : isl.archive.cells()) elites.insert(e.parent.variant);
  for (auto it = run.outcomes.begin(); it != run.outcomes.end();)
    it = elites.count(it->first) ? std::next(it) : run.outcomes.erase(it);
}

void outcomes_of_elites(Run& run) {
  run.outcomes.clear();
  for (const Island& isl : run.islands)
    for (const auto& [cell, e] : isl.archive.cells()) {
      Outcome& o = run.outcomes[e.parent.variant];
      o.stats = e.parent;
      o.valid = true;  // only valid measurements enter an archive
    }
}

}  // namespace kevo::search
