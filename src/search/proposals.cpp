// Proposals: seeds, policy requests with parents drawn by the selection, duplicates re-asked.
#include "search/proposals.h"

#include <future>
#include <map>

#include "core/rng.h"
#include "core/sha256.h"
#include "mutate/space.h"

namespace kevo::search {

namespace {

class Proposer {
 public:
  explicit Proposer(SearchState& s) : s_(s) {}

  // Runs propose independently (each its own islands, policy and random streams), so runs whose
  // policy waits on a model propose in parallel; their batches are then joined in run order, with
  // variant ids numbered as if the runs had proposed one after another.
  Batch all(int g) {
    Batch b;
    b.generation = g;
    std::vector<Batch> parts(s_.runs.size());
    bool waits = false;
    for (const Run& run : s_.runs) waits = waits || (!run.done && run.editor);
    if (waits && s_.runs.size() > 1) {
      std::vector<std::future<void>> jobs;
      for (size_t r = 0; r < s_.runs.size(); ++r)
        jobs.push_back(std::async(std::launch::async, [&, r] { parts[r] = propose_run(s_.runs[r], g); }));
      for (auto& j : jobs) j.wait();
      for (auto& j : jobs) j.get();  // the first failure, if any
    } else {
      for (size_t r = 0; r < s_.runs.size(); ++r) parts[r] = propose_run(s_.runs[r], g);
    }
    for (Batch& part : parts) join(b, part);
    return b;
  }

 private:
  // The first parent's measurement, as its transition will compare the child with it.
  std::optional<policy::Parent> parent_of(const Run& run, const policy::Proposal& p) const {
    if (p.parents.empty()) return std::nullopt;
    auto it = run.outcomes.find(p.parents.front());
    if (it == run.outcomes.end()) return std::nullopt;
    return it->second.stats;
  }


  // Appends a run's batch, replacing its local variant ids (-2, -3, ...) by the campaign's.
  void join(Batch& b, Batch& part) {
    std::map<int64_t, int64_t> ids;
    for (const auto& v : part.variants) ids[v.id] = s_.next_variant++;
    auto id = [&](int64_t x) {
      auto it = ids.find(x);
      return it == ids.end() ? x : it->second;
    };
    for (auto& v : part.variants) {
      v.id = id(v.id);
      v.duplicate_of = id(v.duplicate_of);
      if (v.duplicate_of == -1) s_.runs[static_cast<size_t>(v.run)].by_hash.set(v.source_hash, v.id);
    }
    for (auto& r : part.requests) r.variant = id(r.variant);
    for (auto& m : part.premade)
      if (m) m->variant = id(m->variant);
    for (auto& s : part.samples) s.variant = id(s.variant);
    const int64_t sample_base = static_cast<int64_t>(b.samples.size());
    for (auto& p : part.proposals)
      if (p.sample >= 0) p.sample += sample_base;
    const size_t variant_base = b.variants.size();
    for (size_t k : part.variant_of_request) b.variant_of_request.push_back(variant_base + k);
    auto append = [](auto& to, auto& from) { to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end())); };
    append(b.variants, part.variants);
    append(b.sources, part.sources);
    append(b.proposals, part.proposals);
    append(b.parents, part.parents);
    append(b.requests, part.requests);
    append(b.premade, part.premade);
    append(b.samples, part.samples);
  }

  Batch propose_run(Run& run, int g) {
    Batch b;
    b.generation = g;
    if (run.done) return b;
    int64_t remaining = s_.config.budget_evals - run.proposed;
    for (int i = 0; i < s_.config.islands && remaining > 0; ++i) {
      Island& isl = run.islands[static_cast<size_t>(i)];
      std::mt19937_64 rng = fork_rng(run.seed, run.task_index, g, i);
      const int n = static_cast<int>(std::min<int64_t>(s_.config.population, remaining));
      std::vector<policy::Proposal> props = draw(b, run, isl, n, g, rng);
      for (policy::Proposal& p : props) {
        if (remaining <= 0) break;
        remaining -= add(b, run, i, g, p, isl, rng);
      }
      isl.reseed = false;
    }
    run.idle_generations = b.requests.empty() ? run.idle_generations + 1 : 0;
    // Done when the budget is handed out, or when three generations in a row found nothing new
    // (a space exhausted).
    if (run.proposed >= s_.config.budget_evals || run.idle_generations >= 3) run.done = true;
    return b;
  }

  std::vector<policy::Proposal> draw(Batch& b, Run& run, Island& isl, int n, int g, std::mt19937_64& rng) {
    std::vector<policy::Proposal> out;
    if (isl.archive.empty() || isl.reseed) {
      out = run.policy->seeds(s_.context(run, g), n, rng);
      if (out.size() >= static_cast<size_t>(n)) {
        out.resize(static_cast<size_t>(n));
        for (policy::Proposal& p : out) {
          p.op = isl.reseed ? mutate::kReseedOp : mutate::kSeedOp;
          p.parents.clear();
          p.token = -1;
          p.action = p.op + " " + p.child.space + " (chosen by the policy)";
        }
        return out;
      }
      out.clear();
      for (int k = 0; k < n; ++k) out.push_back(seed_proposal(run, isl.reseed, rng));
      return out;
    }
    std::vector<policy::Request> requests;
    for (int k = 0; k < n; ++k) requests.push_back(request(run, isl, rng));
    return ask(b, run, g, requests, rng);
  }

  // The policy's proposals; the samples a source editor made go into the batch.
  std::vector<policy::Proposal> ask(Batch& b, Run& run, int g, const std::vector<policy::Request>& requests,
                                    std::mt19937_64& rng) {
    std::vector<policy::Proposal> props = run.policy->propose(s_.context(run, g), requests, rng);
    if (!run.editor) return props;
    const int64_t base = static_cast<int64_t>(b.samples.size());
    for (policy::LlmSample& sample : run.editor->take_samples()) b.samples.push_back({run.id, std::move(sample)});
    for (policy::Proposal& p : props)
      if (p.sample >= 0) p.sample += base;
    return props;
  }

  policy::Request request(const Run& run, const Island& isl, std::mt19937_64& rng) const {
    policy::Request r;
    const Elite& p = s_.parents->select(isl.archive, rng);
    r.parent = p.parent;
    if (isl.archive.size() > 1) r.mate = s_.parents->select(isl.archive, rng, &p).parent;
    with_code(run, isl, r);
    return r;
  }

  // For policies that read code: the parents' sources and reports, and the island's best elites.
  void with_code(const Run& run, const Island& isl, policy::Request& r) const {
    if (!run.editor) return;
    with_source(run, r.parent);
    if (r.mate) with_source(run, *r.mate);
    for (const Elite* e : isl.archive.top(static_cast<size_t>(run.editor->inspirations()) + 1)) {
      r.inspirations.push_back(e->parent);
      with_source(run, r.inspirations.back());
    }
  }

  // A parent's candidate text and measurement report (committed before any proposal reads them).
  void with_source(const Run& run, policy::Parent& p) const {
    auto o = run.outcomes.find(p.variant);
    if (o == run.outcomes.end()) return;
    p.report = o->second.report;
    auto src = s_.editor_sources.find(o->second.hash);
    if (src != s_.editor_sources.end()) p.source = src->second;
  }

  policy::Proposal seed_proposal(const Run& run, bool reseed, std::mt19937_64& rng) const {
    policy::Proposal p;
    const auto& space = run.spaces[std::uniform_int_distribution<size_t>(0, run.spaces.size() - 1)(rng)];
    p.child = space->random_genome(rng);
    p.op = reseed ? mutate::kReseedOp : mutate::kSeedOp;
    p.action = p.op + " " + space->id();
    return p;
  }

  // A proposal's candidate text (its hash, and the rendering's error when it failed).
  struct Rendered {
    std::string source, hash, error;
  };

  Rendered render(const Run& run, const policy::Proposal& p) const {
    Rendered r;
    if (p.op == mutate::kEditOp) {
      r.source = p.source;  // a model's edit: kept as it is, even when it repeats a candidate (that is its reward)
    } else {
      try {
        r.source = mutate::find_space(run.spaces, p.child.space)->render(p.child);
      } catch (const std::exception& e) {
        r.source.clear();
        r.error = e.what();
      }
    }
    r.hash = sha256_hex(r.source.empty() ? "render:" + p.child.to_string() : r.source);
    return r;
  }

  // Renders one proposal, asking again up to dedupe_retries times (from the same parent when there
  // was one) while it repeats a candidate of the run; then records it. Returns 1 when it became a
  // new variant to measure, 0 when it stayed a duplicate.
  int add(Batch& b, Run& run, int island, int g, policy::Proposal p, Island& isl, std::mt19937_64& rng) {
    Rendered r = render(run, p);
    for (int attempt = 0; run.by_hash.contains(r.hash) && attempt < s_.config.dedupe_retries &&
                          p.op != mutate::kEditOp;
         ++attempt) {
      if (isl.archive.empty() || p.parents.empty()) {
        p = seed_proposal(run, p.op == mutate::kReseedOp, rng);
      } else {
        policy::Request q;
        auto it = run.outcomes.find(p.parents.front());
        q.parent = it != run.outcomes.end() ? it->second.stats : request(run, isl, rng).parent;
        if (isl.archive.size() > 1) q.mate = s_.parents->select(isl.archive, rng).parent;
        with_code(run, isl, q);
        p = ask(b, run, g, {q}, rng).front();
      }
      r = render(run, p);
    }
    return record(b, run, island, g, std::move(p), r);
  }

  int record(Batch& b, Run& run, int island, int g, policy::Proposal p, const Rendered& r) {
    store::VariantRecord v;
    v.id = -2 - static_cast<int64_t>(b.variants.size());  // local to the run's batch until join()
    v.run = run.id;
    v.generation = g;
    v.island = island;
    v.space = p.child.space;
    v.genome = p.child.values;
    v.source_hash = r.hash;
    v.parents = p.parents;
    v.op = p.op;
    v.log_prob = p.log_prob;
    const int64_t dup = run.by_hash.find(r.hash);
    if (dup != -1) {
      v.duplicate_of = dup;
      run.duplicates++;
    }
    if (p.sample >= 0) {
      b.samples[static_cast<size_t>(p.sample)].variant = v.id;
      b.samples[static_cast<size_t>(p.sample)].duplicate = v.duplicate_of != -1;
    }
    b.variants.push_back(v);
    b.sources.push_back(v.duplicate_of != -1 ? std::string() : r.source);
    b.parents.push_back(parent_of(run, p));
    b.proposals.push_back(std::move(p));
    if (v.duplicate_of != -1) return 0;
    run.by_hash.set(r.hash, v.id);
    run.proposed++;
    evaluators::EvalRequest req;
    req.task = run.task.get();
    req.variant = v.id;
    req.space = v.space;
    req.genome = v.genome;
    req.source = r.source;
    req.source_hash = r.hash;
    if (auto k = run.knobs.find(v.space); k != run.knobs.end()) req.knobs = k->second;
    if (s_.config.screen)
      req.bar = admission_bar(run.islands[static_cast<size_t>(island)].archive, v.space, s_.config.occupancy_bands);
    b.requests.push_back(std::move(req));
    b.variant_of_request.push_back(b.variants.size() - 1);
    std::optional<store::MeasurementRecord> premade;
    if (!r.error.empty()) {
      premade.emplace();
      premade->variant = v.id;
      premade->status = "internal_error";
      premade->error = "kevo: rendering " + b.proposals.back().child.to_string() + ": " + r.error;
    }
    b.premade.push_back(std::move(premade));
    return 1;
  }

  SearchState& s_;
};

}  // namespace

Batch propose(SearchState& s, int g) { return Proposer(s).all(g); }

std::vector<BatchPart> parts_of(const Batch& b) {
  std::vector<BatchPart> parts;
  size_t r = 0;
  for (size_t k = 0; k < b.variants.size(); ++k) {
    if (parts.empty() || b.variants[k].run != parts.back().run) {
      BatchPart p;
      p.run = b.variants[k].run;
      p.variants_begin = k;
      p.requests_begin = r;
      parts.push_back(p);
    }
    while (r < b.variant_of_request.size() && b.variant_of_request[r] <= k) ++r;
    parts.back().variants_end = k + 1;
    parts.back().requests_end = r;
  }
  return parts;
}

}  // namespace kevo::search
