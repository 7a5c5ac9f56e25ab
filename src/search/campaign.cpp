// The campaign loop. Everything a generation decides is a function of the configuration, the seed
// and the measurements recorded so far: proposals for generation g+1 are drawn (while generation g
// is measured) from the state after generation g-1, with an RNG forked from (seed, run, g, island).
// That makes a replay campaign reproducible and lets `kevo resume` re-derive every committed
// generation from the file's recordings, then go on.
#include "search/campaign.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"
#include "core/task.h"
#include "mutate/space.h"
#include "policy/learned_policy.h"
#include "policy/llm_client.h"
#include "policy/llm_policy.h"
#include "policy/policy.h"
#include "search/archive.h"
#include "search/build_info.h"
#include "search/reward.h"
#include "store/campaign_file.h"

namespace kevo::search {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// An RNG for one (run, generation, island): independent of how many draws anything else made.
std::mt19937_64 fork_rng(uint64_t seed, int run, int generation, int island) {
  uint64_t h = splitmix(seed);
  h = splitmix(h ^ static_cast<uint64_t>(run));
  h = splitmix(h ^ static_cast<uint64_t>(generation));
  h = splitmix(h ^ static_cast<uint64_t>(island));
  return std::mt19937_64(h);
}

std::string random_hex(int bytes) {
  std::random_device rd;
  std::string s;
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < bytes; ++i) {
    unsigned v = rd() & 0xff;
    s += hex[v >> 4];
    s += hex[v & 15];
  }
  return s;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Fraction of the DRAM floor reached on the largest workload (0 when unknown).
double floor_fraction(const store::MeasurementRecord& m) {
  const store::WorkloadRecord* big = nullptr;
  for (const auto& w : m.workloads)
    if (w.floor_ms > 0 && (!big || w.floor_ms > big->floor_ms)) big = &w;
  return big && big->median_ms > 0 ? big->floor_ms / big->median_ms : 0;
}

}  // namespace

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LlmSettings, url, model, api_key_env, temperature, max_tokens, samples, concurrency,
                                   timeout_seconds, retries, token_budget, weight, mix, inspirations,
                                   between_generations, adapter_name, adapter_path)

namespace {

policy::LlmPolicyConfig llm_policy_config(const LlmSettings& l) {
  policy::LlmPolicyConfig pc;
  pc.weight = l.weight;
  pc.samples = l.samples;
  pc.inspirations = l.inspirations;
  return pc;
}

policy::LlmClientConfig llm_client_config(const LlmSettings& l) {
  policy::LlmClientConfig c;
  c.base_url = l.url;
  c.model = l.model;
  c.api_key_env = l.api_key_env;
  c.temperature = l.temperature;
  c.max_tokens = l.max_tokens;
  c.samples = l.samples;
  c.concurrency = l.concurrency;
  c.timeout_seconds = l.timeout_seconds;
  c.retries = l.retries;
  c.token_budget = l.token_budget;
  return c;
}

struct Island {
  Archive archive;
  double best = 0;
  int stale = 0;
  bool reseed = false;
};

// The outcome of a measured variant, as later generations see it.
struct Outcome {
  policy::Parent stats;
  bool valid = false;
  std::string hash;    // of its source
  std::string report;  // its measurement in words, for policies that read code
};

// A measurement in words, for a prompt: status, resources and per-workload times.
std::string measurement_report(const store::MeasurementRecord& m, const Task& task) {
  std::ostringstream o;
  o.precision(4);
  o << "status " << m.status;
  if (!m.error.empty()) o << ": " << m.error;
  o << "\n";
  if (m.status != "ok" && m.workloads.empty()) return o.str();
  o << "registers " << m.registers << ", static+dynamic shared memory " << m.shared_bytes << " B, spills "
    << m.spill_bytes << " B, theoretical occupancy " << static_cast<int>(m.occupancy * 100 + 0.5) << "%\n";
  for (const store::WorkloadRecord& w : m.workloads) {
    o << "workload " << w.workload;
    if (w.workload >= 0 && static_cast<size_t>(w.workload) < task.workloads.size()) {
      o << " {";
      bool first = true;
      for (const auto& [axis, v] : task.workloads[static_cast<size_t>(w.workload)].axes) {
        o << (first ? "" : ", ") << axis << "=" << v;
        first = false;
      }
      o << "}";
    }
    o << ": " << w.status;
    if (w.median_ms > 0) o << ", " << w.median_ms << " ms (PyTorch eager " << w.eager_ms << " ms, " << w.speedup << "x)";
    if (w.floor_ms > 0 && w.median_ms > 0)
      o << ", DRAM floor " << w.floor_ms << " ms (" << static_cast<int>(w.floor_ms / w.median_ms * 100 + 0.5) << "% of it)";
    o << "\n";
  }
  return o.str();
}

struct Run {
  int id = 0;
  int task_index = 0;  // in the file's tasks: with the seed, what the run's random streams derive from
  std::string arm;
  uint64_t seed = 1;
  std::unique_ptr<Task> task;
  std::vector<std::unique_ptr<mutate::DesignSpace>> spaces;
  std::unique_ptr<policy::Policy> policy;
  std::vector<Island> islands;
  std::map<std::string, int64_t> by_hash;  // measured or in flight
  std::map<int64_t, Outcome> outcomes;
  int64_t proposed = 0, evaluations = 0, unmeasured = 0, duplicates = 0;
  double best = 0;
  int64_t best_variant = -1;
  std::optional<Elite> best_elite;
  bool done = false;
  int idle_generations = 0;  // generations in a row without a new variant
};

// A sample of an llm policy in a batch: its run and, once added, its variant.
struct BatchSample {
  int run = 0;
  policy::LlmSample sample;
  int64_t variant = -1;
  bool duplicate = false;
  double reward = 0;
};

// One generation's proposals across runs.
struct Batch {
  int generation = -1;
  std::vector<store::VariantRecord> variants;            // every proposal, duplicates included
  std::vector<std::string> sources;                      // per variant (empty for duplicates)
  std::vector<policy::Proposal> proposals;               // per variant
  std::vector<std::optional<policy::Parent>> parents;    // per variant: the first parent's stats
  std::vector<EvalRequest> requests;                     // the new ones, in variant order
  std::vector<size_t> variant_of_request;
  std::vector<std::optional<store::MeasurementRecord>> premade;  // per request: a render failure
  std::vector<BatchSample> samples;                      // llm completions, in the order the policies made them
  bool empty() const { return variants.empty(); }
};

}  // namespace

struct Campaign::State {
  std::string path;
  CampaignConfig config;
  Selection selection = Selection::Tournament;
  VariantEvaluator* evaluator = nullptr;
  store::CampaignContents contents;
  std::vector<Run> runs;
  int64_t next_variant = 0;
  // Resume: generations up to `recorded_through` are answered from the file's recordings.
  int recorded_through = -1;
  std::map<int64_t, const store::MeasurementRecord*> recorded;
  std::map<int64_t, const store::VariantRecord*> recorded_variants;
  std::map<std::string, size_t> stored_sources;  // hash -> row of contents.sources
  std::shared_ptr<policy::LlmClient> llm_client;  // one for every llm run: one concurrency limit, one budget
  double wall_base = 0, busy_base = 0;  // cumulative figures of earlier sessions
  Clock::time_point start = Clock::now();
  double busy_at_start = 0;

  // One run per record, each with its own arm and seed (an ordinary campaign: one per task, all
  // with the configuration's arm and seed).
  void init_runs(const std::vector<store::TaskRecord>& tasks, const std::vector<store::RunRecord>& records) {
    auto is_learned = [](const std::string& arm) { return arm == "learned" || arm == "learned-frozen"; };
    bool any_learned = false;
    for (const auto& rec : records)
      any_learned = any_learned || is_learned(rec.arm) || (rec.arm == "llm" && config.llm.mix == "learned");
    // The checkpoint a learned arm starts from is kept in the file (generation -1, kind "policy_init"),
    // so that a resume does not depend on the file it was read from.
    std::string init;
    if (any_learned && !config.policy_init.empty()) {
      auto kept = std::find_if(contents.checkpoints.begin(), contents.checkpoints.end(),
                               [](const store::CheckpointRecord& c) { return c.kind == "policy_init"; });
      if (kept != contents.checkpoints.end()) {
        init = kept->bytes;
      } else {
        init = read_input_file(config.policy_init);
        contents.checkpoints.push_back({records.front().id, -1, "policy_init", init});
      }
    }
    for (const store::RunRecord& rec : records) {
      Run r;
      r.id = rec.id;
      r.arm = rec.arm;
      r.seed = rec.seed;
      r.task_index = -1;
      for (size_t i = 0; i < tasks.size(); ++i)
        if (tasks[i].name == rec.task) r.task_index = static_cast<int>(i);
      if (r.task_index < 0 || r.id != static_cast<int>(runs.size()))
        throw InputError(Location{path, 0, 0}, "runs", "run " + std::to_string(rec.id) + " of task '" + rec.task +
                                                           "' does not match the file's tasks");
      const store::TaskRecord& t = tasks[static_cast<size_t>(r.task_index)];
      r.task = std::make_unique<Task>(parse_task(t.contract, t.name + ".json"));
      r.spaces = mutate::lower(*r.task);
      if (r.spaces.empty())
        throw InputError(Location{t.name, 0, 0}, "", "no design space serves this task (see kevo space)");
      if (r.arm == "random") r.policy = policy::make_random_policy();
      else if (is_learned(r.arm)) r.policy = learned_policy(r, init);
      else if (r.arm == "llm") r.policy = llm_policy(r, init);
      else throw InputError(Location{}, "--policy", "unknown policy '" + r.arm + "' (have: random, learned, learned-frozen, llm)");
      r.islands.resize(static_cast<size_t>(config.islands));
      runs.push_back(std::move(r));
    }
  }

  // The model's share of mutations; the template policy (random or learned) serves the rest.
  std::unique_ptr<policy::Policy> llm_policy(const Run& run, const std::string& init) {
    const LlmSettings& l = config.llm;
    try {
      if (!llm_client) llm_client = std::make_shared<policy::LlmClient>(llm_client_config(l));
      std::unique_ptr<policy::Policy> templates =
          l.mix == "learned" ? learned_policy(run, init) : policy::make_random_policy();
      return policy::make_llm_policy(llm_policy_config(l), llm_client, std::move(templates));
    } catch (const InputError&) {
      throw;
    } catch (const std::runtime_error& e) {
      throw InputError(Location{}, "", e.what());
    }
  }

  // Initial parameters from (seed, task) unless a checkpoint is given.
  std::unique_ptr<policy::Policy> learned_policy(const Run& run, const std::string& init) const {
    policy::LearnedPolicyConfig lc;
    lc.seed = splitmix(run.seed ^ splitmix(static_cast<uint64_t>(run.task_index) + 1));
    lc.frozen = run.arm == "learned-frozen";
    lc.init = init;
    try {
      return policy::make_learned_policy(lc);
    } catch (const std::runtime_error& e) {
      throw InputError(Location{config.policy_init, 0, 0}, "--policy-init", e.what());
    }
  }

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start).count(); }

  // ---- propose ------------------------------------------------------------------------------

  std::optional<policy::Parent> parent_of(const Run& run, const policy::Proposal& p) const {
    if (p.parents.empty()) return std::nullopt;
    auto it = run.outcomes.find(p.parents.front());
    if (it == run.outcomes.end()) return std::nullopt;
    return it->second.stats;
  }

  // Runs propose independently (each its own islands, policy and random streams), so runs whose
  // policy waits on a model propose in parallel; their batches are then joined in run order, with
  // variant ids numbered as if the runs had proposed one after another.
  Batch propose(int g) {
    Batch b;
    b.generation = g;
    if (config.max_generations > 0 && g >= config.max_generations) return b;
    if (config.wall_seconds > 0 && elapsed() >= config.wall_seconds) return b;
    std::vector<Batch> parts(runs.size());
    bool waits = false;
    for (const Run& run : runs) waits = waits || (!run.done && run.policy->wants_sources());
    if (waits && runs.size() > 1) {
      std::vector<std::future<void>> jobs;
      for (size_t r = 0; r < runs.size(); ++r)
        jobs.push_back(std::async(std::launch::async, [&, r] { parts[r] = propose_run(runs[r], g); }));
      for (auto& j : jobs) j.wait();
      for (auto& j : jobs) j.get();  // the first failure, if any
    } else {
      for (size_t r = 0; r < runs.size(); ++r) parts[r] = propose_run(runs[r], g);
    }
    for (Batch& part : parts) join(b, part);
    return b;
  }

  // Appends a run's batch, replacing its local variant ids (-2, -3, ...) by the campaign's.
  void join(Batch& b, Batch& part) {
    std::map<int64_t, int64_t> ids;
    for (const auto& v : part.variants) ids[v.id] = next_variant++;
    auto id = [&](int64_t x) {
      auto it = ids.find(x);
      return it == ids.end() ? x : it->second;
    };
    for (auto& v : part.variants) {
      v.id = id(v.id);
      v.duplicate_of = id(v.duplicate_of);
      if (v.duplicate_of == -1) runs[static_cast<size_t>(v.run)].by_hash[v.source_hash] = v.id;
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
    int64_t remaining = config.budget_evals - run.proposed;
    for (int i = 0; i < config.islands && remaining > 0; ++i) {
      Island& isl = run.islands[static_cast<size_t>(i)];
      std::mt19937_64 rng = fork_rng(run.seed, run.task_index, g, i);
      const int n = static_cast<int>(std::min<int64_t>(config.population, remaining));
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
    if (run.proposed >= config.budget_evals || run.idle_generations >= 3) run.done = true;
    return b;
  }

  policy::Context context(const Run& run, int g) const {
    policy::Context c;
    c.task = run.task.get();
    c.spaces = &run.spaces;
    c.generation = g;
    c.evaluations = run.evaluations;
    c.budget = config.budget_evals;
    c.best_fitness = run.best;
    c.target = evaluator->gpu_name();
    return c;
  }

  std::vector<policy::Proposal> draw(Batch& b, Run& run, Island& isl, int n, int g, std::mt19937_64& rng) {
    std::vector<policy::Proposal> out;
    if (isl.archive.empty() || isl.reseed) {
      out = run.policy->seeds(context(run, g), n, rng);
      if (out.size() >= static_cast<size_t>(n)) {
        out.resize(static_cast<size_t>(n));
        for (policy::Proposal& p : out) {
          p.op = isl.reseed ? mutate::Operator::Reseed : mutate::Operator::Seed;
          p.parents.clear();
          p.token = -1;
          p.action = std::string(mutate::to_string(p.op)) + " " + p.child.space + " (chosen by the policy)";
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

  // The policy's proposals; the samples it made (an llm policy's) go into the batch.
  std::vector<policy::Proposal> ask(Batch& b, Run& run, int g, const std::vector<policy::Request>& requests,
                                    std::mt19937_64& rng) {
    std::vector<policy::Proposal> props = run.policy->propose(context(run, g), requests, rng);
    const int64_t base = static_cast<int64_t>(b.samples.size());
    for (policy::LlmSample& s : run.policy->take_samples()) b.samples.push_back({run.id, std::move(s)});
    for (policy::Proposal& p : props)
      if (p.sample >= 0) p.sample += base;
    return props;
  }

  policy::Request request(const Run& run, const Island& isl, std::mt19937_64& rng) const {
    policy::Request r;
    const Elite& p = select_parent(isl.archive, selection, config.tournament, rng);
    r.parent = p.parent;
    if (isl.archive.size() > 1) r.mate = select_parent(isl.archive, selection, config.tournament, rng, &p).parent;
    with_code(run, isl, r);
    return r;
  }

  // For policies that read code: the parents' sources and reports, and the island's best elites.
  void with_code(const Run& run, const Island& isl, policy::Request& r) const {
    if (!run.policy->wants_sources()) return;
    with_source(run, r.parent);
    if (r.mate) with_source(run, *r.mate);
    for (const Elite* e : isl.archive.top(static_cast<size_t>(run.policy->inspirations()) + 1)) {
      r.inspirations.push_back(e->parent);
      with_source(run, r.inspirations.back());
    }
  }

  // A parent's candidate text and measurement report (committed before any proposal reads them).
  void with_source(const Run& run, policy::Parent& p) const {
    auto o = run.outcomes.find(p.variant);
    if (o == run.outcomes.end()) return;
    p.report = o->second.report;
    auto src = stored_sources.find(o->second.hash);
    if (src != stored_sources.end()) p.source = contents.sources[src->second].text;
  }

  policy::Proposal seed_proposal(const Run& run, bool reseed, std::mt19937_64& rng) const {
    policy::Proposal p;
    const auto& space = run.spaces[std::uniform_int_distribution<size_t>(0, run.spaces.size() - 1)(rng)];
    p.child = space->random_genome(rng);
    p.op = reseed ? mutate::Operator::Reseed : mutate::Operator::Seed;
    p.action = std::string(mutate::to_string(p.op)) + " " + space->id();
    return p;
  }

  // Renders and records one proposal; re-proposes a duplicate up to dedupe_retries times. Returns
  // 1 when it became a new variant to measure, 0 when it stayed a duplicate.
  int add(Batch& b, Run& run, int island, int g, policy::Proposal p, Island& isl, std::mt19937_64& rng) {
    std::string source, hash, render_error;
    for (int attempt = 0;; ++attempt) {
      render_error.clear();
      const bool free_form = p.op == mutate::Operator::Edit;
      if (free_form) {
        source = p.source;  // a model's edit: kept as it is, even when it repeats a candidate (that is its reward)
      } else {
        try {
          const mutate::DesignSpace* space = mutate::find_space(run.spaces, p.child.space);
          source = space->render(p.child);
        } catch (const std::exception& e) {
          source.clear();
          render_error = e.what();
        }
      }
      hash = sha256_hex(source.empty() ? "render:" + p.child.to_string() : source);
      if (!run.by_hash.count(hash) || attempt >= config.dedupe_retries || free_form) break;
      // A duplicate: ask again (from the same parent when there was one).
      if (isl.archive.empty() || p.parents.empty()) {
        p = seed_proposal(run, p.op == mutate::Operator::Reseed, rng);
      } else {
        policy::Request r;
        auto it = run.outcomes.find(p.parents.front());
        r.parent = it != run.outcomes.end() ? it->second.stats : request(run, isl, rng).parent;
        if (isl.archive.size() > 1) r.mate = select_parent(isl.archive, selection, config.tournament, rng).parent;
        with_code(run, isl, r);
        p = ask(b, run, g, {r}, rng).front();
      }
    }
    store::VariantRecord v;
    v.id = -2 - static_cast<int64_t>(b.variants.size());  // local to the run's batch until join()
    v.run = run.id;
    v.generation = g;
    v.island = island;
    v.space = p.child.space;
    v.genome = p.child.values;
    v.source_hash = hash;
    v.parents = p.parents;
    v.op = mutate::to_string(p.op);
    v.log_prob = p.log_prob;
    auto dup = run.by_hash.find(hash);
    if (dup != run.by_hash.end()) {
      v.duplicate_of = dup->second;
      run.duplicates++;
    }
    if (p.sample >= 0) {
      b.samples[static_cast<size_t>(p.sample)].variant = v.id;
      b.samples[static_cast<size_t>(p.sample)].duplicate = v.duplicate_of != -1;
    }
    b.variants.push_back(v);
    b.sources.push_back(v.duplicate_of != -1 ? std::string() : source);
    b.parents.push_back(parent_of(run, p));
    b.proposals.push_back(std::move(p));
    if (v.duplicate_of != -1) return 0;
    run.by_hash[hash] = v.id;
    run.proposed++;
    EvalRequest req;
    req.task = run.task.get();
    req.variant = v.id;
    req.space = v.space;
    req.genome = v.genome;
    req.source = source;
    req.source_hash = hash;
    b.requests.push_back(std::move(req));
    b.variant_of_request.push_back(b.variants.size() - 1);
    if (!render_error.empty()) {
      store::MeasurementRecord m;
      m.variant = v.id;
      m.status = "internal_error";
      m.error = "kevo: rendering " + b.proposals.back().child.to_string() + ": " + render_error;
      b.premade.emplace_back(m);
    } else {
      b.premade.emplace_back();
    }
    return 1;
  }

  // ---- measure --------------------------------------------------------------------------------

  bool from_file(const Batch& b) const { return b.generation <= recorded_through; }

  std::vector<store::MeasurementRecord> measure(const Batch& b) {
    std::vector<store::MeasurementRecord> out(b.requests.size());
    if (from_file(b)) {
      for (size_t i = 0; i < b.requests.size(); ++i) {
        const store::VariantRecord& mine = b.variants[b.variant_of_request[i]];
        auto v = recorded_variants.find(mine.id);
        auto m = recorded.find(mine.id);
        if (v == recorded_variants.end() || v->second->source_hash != mine.source_hash || m == recorded.end())
          throw InputError(Location{path, 0, 0}, "",
                           "cannot resume: generation " + std::to_string(b.generation) + " does not re-derive as "
                           "recorded (variant " + std::to_string(mine.id) + "); the templates or kevo changed since");
        out[i] = *m->second;
      }
      return out;
    }
    std::vector<EvalRequest> live;
    std::vector<size_t> live_of;
    for (size_t i = 0; i < b.requests.size(); ++i) {
      if (b.premade[i]) {
        out[i] = *b.premade[i];
      } else {
        live.push_back(b.requests[i]);
        live_of.push_back(i);
      }
    }
    std::vector<store::MeasurementRecord> got = evaluator->measure(live);
    for (size_t j = 0; j < got.size(); ++j) {
      out[live_of[j]] = std::move(got[j]);
      out[live_of[j]].variant = live[j].variant;
    }
    return out;
  }

  // ---- insert and update ----------------------------------------------------------------------

  void insert(Batch& b, const std::vector<store::MeasurementRecord>& results) {
    std::map<int, std::vector<policy::Transition>> transitions;
    std::map<int64_t, int64_t> group_of_parent;
    std::map<int64_t, double> reward_of;  // variant -> its reward
    std::map<int, std::vector<policy::Parent>> measured;  // per run: what the policy may observe
    for (size_t i = 0; i < b.requests.size(); ++i) {
      const store::VariantRecord& v = b.variants[b.variant_of_request[i]];
      const store::MeasurementRecord& m = results[i];
      Run& run = runs[static_cast<size_t>(v.run)];
      run.evaluations++;
      if (m.status == "unmeasured") run.unmeasured++;
      Outcome o;
      o.valid = m.status == "ok" && m.fitness > 0;
      o.stats.variant = v.id;
      o.stats.genome = {v.space, v.genome};
      o.stats.fitness = o.valid ? m.fitness : 0;
      o.stats.floor_fraction = floor_fraction(m);
      o.stats.registers = m.registers;
      o.stats.shared_bytes = m.shared_bytes;
      o.stats.spill_bytes = m.spill_bytes;
      o.stats.occupancy = m.occupancy;
      o.hash = v.source_hash;
      if (run.policy->wants_sources()) o.report = measurement_report(m, *run.task);
      run.outcomes[v.id] = o;
      if (m.status != "unmeasured") measured[run.id].push_back(o.stats);
      const double run_best_before = run.best;
      if (o.valid) {
        Elite e{o.stats, cell_of(v.space, m.occupancy, config.occupancy_bands), b.generation};
        run.islands[static_cast<size_t>(v.island)].archive.insert(e);
        if (m.fitness > run.best) {
          run.best = m.fitness;
          run.best_variant = v.id;
          run.best_elite = e;
        }
      }
      const size_t k = b.variant_of_request[i];
      if (b.parents[k]) {
        policy::Transition t;
        t.proposal = b.proposals[k];
        t.parent = *b.parents[k];
        t.child_fitness = o.stats.fitness;
        t.valid = o.valid;
        t.reward = reward(config.reward, t.valid, t.parent.fitness, t.child_fitness, run_best_before);
        t.group = group_of_parent.emplace(t.parent.variant, static_cast<int64_t>(group_of_parent.size())).first->second;
        reward_of[v.id] = m.status == "unmeasured" ? 0 : t.reward;  // a replay without the recording: no signal
        transitions[run.id].push_back(std::move(t));
      }
    }
    // The model's completions earn what their children earned: a duplicate what the candidate it
    // repeats earned against this parent, no child at all the reward of an invalid one.
    std::map<int64_t, int64_t> repeats;  // a duplicate variant -> the one it repeats
    for (const store::VariantRecord& v : b.variants)
      if (v.duplicate_of != -1) repeats[v.id] = v.duplicate_of;
    for (BatchSample& s : b.samples) {
      const Run& run = runs[static_cast<size_t>(s.run)];
      auto r = reward_of.find(s.variant);
      if (r != reward_of.end()) {
        s.reward = r->second;
      } else if (s.duplicate) {
        auto o = run.outcomes.find(repeats.at(s.variant));
        auto par = run.outcomes.find(s.sample.parent);
        const bool known = o != run.outcomes.end() && par != run.outcomes.end();
        s.reward = known ? reward(config.reward, o->second.valid, par->second.stats.fitness, o->second.stats.fitness,
                                  std::max(run.best, o->second.stats.fitness + 1))  // a repeat is never a new best
                         : 0;
      } else {
        s.reward = s.sample.status == "request_failed" ? 0 : reward(config.reward, false, 0, 0, 0);
      }
    }
    for (Run& run : runs) {
      if (measured.count(run.id)) run.policy->observe(context(run, b.generation), measured[run.id]);
      if (transitions.count(run.id)) run.policy->update(context(run, b.generation), transitions[run.id]);
      stagnation(run);
      migrate(run, b.generation);
    }
  }

  void stagnation(Run& run) {
    for (Island& isl : run.islands) {
      const Elite* best = isl.archive.best();
      double f = best ? best->parent.fitness : 0;
      if (f > isl.best) {
        isl.best = f;
        isl.stale = 0;
        continue;
      }
      if (isl.archive.empty() || ++isl.stale < config.stagnation) continue;
      // A stale island starts over from fresh seeds, keeping the run's best as its anchor.
      isl.archive.clear();
      if (run.best_elite) isl.archive.insert(*run.best_elite);
      isl.best = run.best_elite ? run.best_elite->parent.fitness : 0;
      isl.stale = 0;
      isl.reseed = true;
    }
  }

  void migrate(Run& run, int g) {
    const int n = config.islands;
    if (n < 2 || config.migration_interval <= 0 || (g + 1) % config.migration_interval != 0) return;
    std::vector<std::vector<Elite>> outgoing(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      for (const Elite* e : run.islands[static_cast<size_t>(i)].archive.top(static_cast<size_t>(config.migrants)))
        outgoing[static_cast<size_t>(i)].push_back(*e);
    for (int i = 0; i < n; ++i)
      for (const Elite& e : outgoing[static_cast<size_t>(i)]) run.islands[static_cast<size_t>((i + 1) % n)].archive.insert(e);
  }

  // ---- commit ---------------------------------------------------------------------------------

  void commit(const Batch& b, const std::vector<store::MeasurementRecord>& results) {
    for (size_t k = 0; k < b.variants.size(); ++k) {
      contents.variants.push_back(b.variants[k]);
      const std::string& hash = b.variants[k].source_hash;
      if (!b.sources[k].empty() && stored_sources.emplace(hash, contents.sources.size()).second)
        contents.sources.push_back({hash, b.sources[k]});
    }
    // Samples: ids continue the file's; a request's id is its first sample's.
    std::map<std::pair<int, int64_t>, int64_t> request_id;
    for (const BatchSample& bs : b.samples) {
      store::LlmSampleRecord r;
      r.id = static_cast<int64_t>(contents.llm_samples.size());
      r.run = bs.run;
      r.generation = b.generation;
      r.request = request_id.emplace(std::make_pair(bs.run, bs.sample.request), r.id).first->second;
      r.parent = bs.sample.parent;
      r.variant = bs.variant;
      r.prompt = bs.sample.prompt;
      r.response = bs.sample.response;
      r.status = bs.duplicate ? "duplicate" : bs.sample.status;
      r.error = bs.sample.error;
      r.model = bs.sample.model;
      r.prompt_tokens = bs.sample.prompt_tokens;
      r.completion_tokens = bs.sample.completion_tokens;
      r.reward = bs.reward;
      contents.llm_samples.push_back(std::move(r));
    }
    for (const auto& m : results) contents.measurements.push_back(m);
    // Archive snapshots: every tenth generation is kept, and always the latest.
    auto& a = contents.archive;
    a.erase(std::remove_if(a.begin(), a.end(), [](const store::ArchiveEntry& e) { return e.generation % 10 != 0; }),
            a.end());
    for (const Run& run : runs)
      for (size_t i = 0; i < run.islands.size(); ++i)
        for (const auto& [cell, e] : run.islands[i].archive.cells())
          a.push_back({run.id, b.generation, static_cast<int32_t>(i), cell, e.parent.variant, e.parent.fitness});
    for (const Run& run : runs) {
      store::GenerationRecord g;
      g.run = run.id;
      g.generation = b.generation;
      g.evaluations = run.evaluations;
      g.unmeasured = run.unmeasured;
      g.duplicates = run.duplicates;
      g.best_fitness = run.best;
      g.best_variant = run.best_variant;
      g.wall_seconds = wall_base + elapsed();
      g.gpu_busy_seconds = busy_base + evaluator->gpu_busy_seconds() - busy_at_start;
      g.gpus = evaluator->gpus();
      contents.generations.push_back(g);
    }
    for (const Run& run : runs) {
      std::string bytes = run.policy->checkpoint();
      if (!bytes.empty()) contents.checkpoints.push_back({run.id, b.generation, "policy", bytes});
    }
    store::write_campaign(path, contents);
  }

  // Resume: each llm run's recorded completions answer its prompts again; their tokens count
  // against the budget.
  void replay_llm_samples() {
    std::map<int, std::vector<policy::LlmSample>> by_run;
    int64_t prompt_tokens = 0, completion_tokens = 0;
    for (const store::LlmSampleRecord& r : contents.llm_samples) {
      policy::LlmSample s;
      s.request = r.request;
      s.parent = r.parent;
      s.prompt = r.prompt;
      s.response = r.response;
      s.status = r.status == "duplicate" ? "ok" : r.status;
      s.error = r.error;
      s.model = r.model;
      s.prompt_tokens = r.prompt_tokens;
      s.completion_tokens = r.completion_tokens;
      s.generation = r.generation;
      by_run[r.run].push_back(std::move(s));
      prompt_tokens += r.prompt_tokens;
      completion_tokens += r.completion_tokens;
    }
    for (Run& run : runs)
      if (by_run.count(run.id)) run.policy->replay_samples(by_run[run.id]);
    if (llm_client) llm_client->add_usage(prompt_tokens, completion_tokens);
  }

  // Re-deriving a generation from the file: the policies continue from the parameters they had
  // after it (their updates need not be bit-reproducible; the file's checkpoints are).
  void restore_policies(int g) {
    for (const auto& c : contents.checkpoints)
      if (c.generation == g && c.kind == "policy" && c.run >= 0 && c.run < static_cast<int>(runs.size()))
        runs[static_cast<size_t>(c.run)].policy->restore(c.bytes);
  }

  Progress progress(int g, bool replaying) const {
    Progress p;
    p.generation = g;
    p.replaying_file = replaying;
    for (const Run& run : runs) {
      p.evaluations += run.evaluations;
      p.budget += config.budget_evals;
      p.unmeasured += run.unmeasured;
      p.duplicates += run.duplicates;
      p.best.emplace_back(run.task->name, run.best);
    }
    p.elapsed_seconds = elapsed();
    const int gpus = evaluator->gpus();
    if (gpus > 0 && p.elapsed_seconds > 0)
      p.gpu_busy_fraction = (evaluator->gpu_busy_seconds() - busy_at_start) / (p.elapsed_seconds * gpus);
    int64_t done_now = 0;
    for (const Run& run : runs) done_now += run.evaluations;
    const int64_t left = p.budget - p.evaluations;
    if (done_now > 0) p.seconds_left = p.elapsed_seconds / static_cast<double>(done_now) * static_cast<double>(left);
    if (config.wall_seconds > 0) p.seconds_left = std::min(p.seconds_left, std::max(0.0, config.wall_seconds - p.elapsed_seconds));
    if (llm_client) {
      const policy::LlmStats st = llm_client->stats();
      p.llm_requests = st.requests;
      p.llm_failed = st.failed;
      p.llm_rate_limited = st.rate_limited;
      p.llm_timeouts = st.timeouts;
      p.llm_tokens = st.prompt_tokens + st.completion_tokens;
    }
    for (const auto& s : contents.llm_samples)
      if (s.status == "bad_reply" || s.status == "edit_failed" || s.status == "rejected") p.llm_bad_replies++;
    return p;
  }

  // --between-generations: the user's command after a committed generation, then the adapter it
  // produced loaded into the server. A failure stops the campaign (the generation is on disk).
  void between_generations(int g) {
    const LlmSettings& l = config.llm;
    if (l.between_generations.empty()) return;
    const std::string where = "--between-generations: after generation " + std::to_string(g) + ": ";
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(where + "cannot start a process");
    if (pid == 0) {
      ::setenv("KEVO_CAMPAIGN", path.c_str(), 1);
      ::setenv("KEVO_GENERATION", std::to_string(g).c_str(), 1);
      ::setenv("KEVO_MODEL", llm_client ? llm_client->model().c_str() : "", 1);
      ::execl("/bin/sh", "sh", "-c", l.between_generations.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error(where + "'" + l.between_generations + "' " +
                               (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                                  : std::string("was killed")) +
                               "; the campaign stops here (kevo resume continues it)");
    if (l.adapter_path.empty() || !llm_client) return;
    llm_client->unload_adapter(l.adapter_name);  // not loaded yet the first time
    try {
      llm_client->load_adapter(l.adapter_name, l.adapter_path);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + "loading adapter '" + l.adapter_name + "': " + e.what());
    }
    llm_client->set_model(l.adapter_name);
  }

  void loop(const std::function<void(const Progress&)>& report) {
    if (!config.llm.between_generations.empty()) return serial_loop(report);
    int g = 0;
    Batch cur = propose(g);
    if (!from_file(cur)) evaluator->prepare(cur.requests);
    while (!cur.empty()) {
      // Measure this generation while the next one is proposed and compiled.
      std::future<std::vector<store::MeasurementRecord>> measuring =
          std::async(std::launch::async, [&] { return measure(cur); });
      Batch next;
      try {
        next = propose(cur.generation + 1);
        if (!next.empty() && !from_file(next)) evaluator->prepare(next.requests);
      } catch (...) {
        measuring.wait();
        throw;
      }
      std::vector<store::MeasurementRecord> results = measuring.get();
      insert(cur, results);
      const bool replaying = from_file(cur);
      if (replaying) restore_policies(cur.generation);
      if (!replaying) commit(cur, results);
      if (report) report(progress(cur.generation, replaying));
      cur = std::move(next);
    }
  }

  // With a hook between generations, generation g+1 is proposed after generation g's hook (the
  // model it asks may have changed), so nothing overlaps.
  void serial_loop(const std::function<void(const Progress&)>& report) {
    for (Batch cur = propose(0); !cur.empty(); cur = propose(cur.generation + 1)) {
      const bool replaying = from_file(cur);
      if (!replaying) evaluator->prepare(cur.requests);
      std::vector<store::MeasurementRecord> results = measure(cur);
      insert(cur, results);
      if (replaying) restore_policies(cur.generation);
      if (!replaying) commit(cur, results);
      if (report) report(progress(cur.generation, replaying));
      if (!replaying) between_generations(cur.generation);
    }
  }
};

// ---- configuration -----------------------------------------------------------------------------

void validate(const CampaignConfig& c) {
  auto bad = [](const std::string& flag, const std::string& why) { throw InputError(Location{}, flag, why); };
  Selection s;
  if (c.population < 1 || c.population > 100000) bad("--population", "must be between 1 and 100000");
  if (c.islands < 1 || c.islands > 1000) bad("--islands", "must be between 1 and 1000");
  if (c.budget_evals < 1) bad("--budget-evals", "must be at least 1");
  if (c.max_generations < 0) bad("--max-generations", "must not be negative");
  if (!(c.wall_seconds >= 0)) bad("--budget-seconds", "must not be negative");
  if (!parse_selection(c.selection, s)) bad("--selection", "'" + c.selection + "': use tournament or proportional");
  if (c.tournament < 1) bad("--tournament", "must be at least 1");
  if (c.migration_interval < 0 || c.migrants < 0) bad("--migration-interval", "must not be negative");
  if (c.stagnation < 1) bad("--stagnation", "must be at least 1");
  if (c.occupancy_bands < 1 || c.occupancy_bands > 64) bad("--occupancy-bands", "must be between 1 and 64");
  if (c.dedupe_retries < 0) bad("--dedupe-retries", "must not be negative");
  if (!valid_reward(c.reward)) bad("--reward", "'" + c.reward + "': use bucketed or log_speedup");
  if (c.trials < 1 || c.trials > 1000) bad("--trials", "must be between 1 and 1000");
  if (!(c.max_seconds > 0)) bad("--max-seconds", "must be positive");
  if (c.arm != "random" && c.arm != "learned" && c.arm != "learned-frozen" && c.arm != "llm")
    bad("--policy", "unknown policy '" + c.arm + "' (have: random, learned, learned-frozen, llm)");
  if (c.arm == "llm") {
    const LlmSettings& l = c.llm;
    try {
      policy::validate(llm_client_config(l));
      policy::validate(llm_policy_config(l));
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      const size_t colon = m.find(": ");
      if (m.rfind("--", 0) == 0 && colon != std::string::npos) bad(m.substr(0, colon), m.substr(colon + 2));
      bad("--policy", m);
    }
    if (l.mix != "random" && l.mix != "learned") bad("--llm-mix", "'" + l.mix + "': use random or learned");
    if (!l.adapter_path.empty() && l.adapter_name.empty()) bad("--adapter-name", "give the name the adapter is served as");
    if (!l.adapter_path.empty() && l.between_generations.empty())
      bad("--load-adapter", "an adapter is (re)loaded after --between-generations; give that command too");
  }
  if (c.arm == "learned-frozen" && c.policy_init.empty())
    bad("--policy-init", "learned-frozen samples from a checkpoint: give the file a learned policy wrote");
}

std::string config_to_json(const CampaignConfig& c) {
  json j;
  j["arm"] = c.arm;
  j["policy_init"] = c.policy_init;
  j["seed"] = c.seed;
  j["population"] = c.population;
  j["islands"] = c.islands;
  j["budget_evals"] = c.budget_evals;
  j["max_generations"] = c.max_generations;
  j["wall_seconds"] = c.wall_seconds;
  j["selection"] = c.selection;
  j["tournament"] = c.tournament;
  j["migration_interval"] = c.migration_interval;
  j["migrants"] = c.migrants;
  j["stagnation"] = c.stagnation;
  j["occupancy_bands"] = c.occupancy_bands;
  j["dedupe_retries"] = c.dedupe_retries;
  j["reward"] = c.reward;
  j["replay"] = c.replay;
  j["trials"] = c.trials;
  j["max_seconds"] = c.max_seconds;
  j["torch_baseline"] = c.torch_baseline;
  j["llm"] = c.llm;  // the API key is not there: only the name of its variable
  return j.dump();
}

CampaignConfig config_from_json(const std::string& text) {
  CampaignConfig c;
  try {
    json j = json::parse(text);
    c.arm = j.at("arm").get<std::string>();
    c.policy_init = j.value("policy_init", std::string());  // absent in files of kevo before the learned arms
    c.seed = j.at("seed").get<uint64_t>();
    c.population = j.at("population").get<int>();
    c.islands = j.at("islands").get<int>();
    c.budget_evals = j.at("budget_evals").get<int64_t>();
    c.max_generations = j.at("max_generations").get<int>();
    c.wall_seconds = j.at("wall_seconds").get<double>();
    c.selection = j.at("selection").get<std::string>();
    c.tournament = j.at("tournament").get<int>();
    c.migration_interval = j.at("migration_interval").get<int>();
    c.migrants = j.at("migrants").get<int>();
    c.stagnation = j.at("stagnation").get<int>();
    c.occupancy_bands = j.at("occupancy_bands").get<int>();
    c.dedupe_retries = j.at("dedupe_retries").get<int>();
    c.reward = j.at("reward").get<std::string>();
    c.replay = j.at("replay").get<std::vector<std::string>>();
    c.trials = j.at("trials").get<int>();
    c.max_seconds = j.at("max_seconds").get<double>();
    c.torch_baseline = j.at("torch_baseline").get<std::string>();
    if (j.contains("llm")) c.llm = j.at("llm").get<LlmSettings>();  // absent in files of kevo before the llm policy
  } catch (const json::exception& e) {
    throw InputError(Location{}, "runs/config", std::string("not a campaign configuration: ") + e.what());
  }
  validate(c);
  return c;
}

// ---- Campaign ------------------------------------------------------------------------------------

Campaign::Campaign() : s_(std::make_unique<State>()) {}
Campaign::~Campaign() = default;

const store::CampaignContents& Campaign::contents() const { return s_->contents; }

std::unique_ptr<Campaign> Campaign::create(const std::string& path, const CampaignConfig& config,
                                           const std::vector<std::string>& task_files, VariantEvaluator& evaluator,
                                           const std::string& command) {
  return create_ablation(path, config, task_files, {config.arm}, {config.seed}, evaluator, command);
}

std::unique_ptr<Campaign> Campaign::create_ablation(const std::string& path, const CampaignConfig& config,
                                                    const std::vector<std::string>& task_files,
                                                    const std::vector<std::string>& arms,
                                                    const std::vector<uint64_t>& seeds, VariantEvaluator& evaluator,
                                                    const std::string& command) {
  if (arms.empty()) throw InputError(Location{}, "--arms", "give at least one arm");
  if (seeds.empty()) throw InputError(Location{}, "--seeds", "give at least one seed");
  if (std::set<std::string>(arms.begin(), arms.end()).size() != arms.size())
    throw InputError(Location{}, "--arms", "an arm is given twice");
  if (std::set<uint64_t>(seeds.begin(), seeds.end()).size() != seeds.size())
    throw InputError(Location{}, "--seeds", "a seed is given twice");
  std::vector<CampaignConfig> per_arm_seed;  // (arm, seed) in arm-major order
  for (const std::string& arm : arms)
    for (uint64_t seed : seeds) {
      CampaignConfig rc = config;
      rc.arm = arm;
      rc.seed = seed;
      validate(rc);
      per_arm_seed.push_back(rc);
    }
  if (exists(path))
    throw InputError(Location{path, 0, 0}, "", "exists already; continue it with `kevo resume " + path +
                                                   "` or choose another --out");
  std::unique_ptr<Campaign> c(new Campaign());
  State& s = *c->s_;
  s.path = path;
  s.config = config;
  parse_selection(config.selection, s.selection);
  s.evaluator = &evaluator;
  store::CampaignContents& k = s.contents;
  k.campaign_id = random_hex(8);
  k.kevo_version = kevo_version();
  k.kevo_commit = kevo_commit();
  k.created = now_iso();
  k.templates_hash = mutate::templates_hash();
  k.command = command;
  std::set<std::string> names;
  for (const std::string& f : task_files) {
    std::string text = read_input_file(f);
    Task t = parse_task(text, f);  // errors name the user's file
    if (!names.insert(t.name).second) throw InputError(Location{f, 0, 0}, "name", "task '" + t.name + "' given twice");
    k.tasks.push_back({t.name, text, sha256_hex(text)});
  }
  // Runs task-major, then arm, then seed: an ordinary campaign's run i is its task i.
  for (const store::TaskRecord& t : k.tasks)
    for (const CampaignConfig& rc : per_arm_seed)
      k.runs.push_back({static_cast<int32_t>(k.runs.size()), t.name, rc.arm, rc.seed, config_to_json(rc)});
  s.config = per_arm_seed.front();
  s.init_runs(k.tasks, k.runs);
  store::write_campaign(path, k);  // the file exists from the start: tasks, runs, no generation yet
  return c;
}

CampaignConfig Campaign::stored_config(const std::string& path) {
  store::CampaignContents k = store::read_campaign(path);
  if (k.runs.empty()) throw InputError(Location{path, 0, 0}, "", "campaign file: holds no run");
  return config_from_json(k.runs.front().config);
}

std::unique_ptr<Campaign> Campaign::resume(const std::string& path, VariantEvaluator& evaluator) {
  std::unique_ptr<Campaign> c(new Campaign());
  State& s = *c->s_;
  s.path = path;
  s.evaluator = &evaluator;
  s.contents = store::read_campaign(path);
  store::CampaignContents& k = s.contents;
  if (k.runs.empty()) throw InputError(Location{path, 0, 0}, "", "campaign file: holds no run");
  s.config = config_from_json(k.runs.front().config);
  parse_selection(s.config.selection, s.selection);
  if (k.templates_hash != mutate::templates_hash())
    throw InputError(Location{path, 0, 0}, "",
                     "cannot resume: the file was written with other kernel templates (kevo " + k.kevo_commit + ")");
  s.init_runs(k.tasks, k.runs);
  for (const auto& g : k.generations) {
    if (g.generation > s.recorded_through) {
      s.recorded_through = g.generation;
      s.wall_base = g.wall_seconds;
      s.busy_base = g.gpu_busy_seconds;
    }
  }
  for (const auto& v : k.variants) s.recorded_variants[v.id] = &v;
  for (const auto& m : k.measurements) s.recorded[m.variant] = &m;
  for (size_t i = 0; i < k.sources.size(); ++i) s.stored_sources.emplace(k.sources[i].hash, i);
  s.replay_llm_samples();
  return c;
}

void Campaign::run(const std::function<void(const Progress&)>& progress) {
  s_->start = Clock::now();
  s_->busy_at_start = s_->evaluator->gpu_busy_seconds();
  s_->loop(progress);
}

}  // namespace kevo::search
