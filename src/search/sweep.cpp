// Sweeps: which genomes, measured in pipelined batches (the next batch compiles while this one is
// measured), committed to the file after every batch.
#include "search/sweep.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/fitness.h"
#include "core/sha256.h"
#include "core/task.h"
#include "lower/lower.h"
#include "mutate/manifest.h"
#include "mutate/mutation.h"
#include "search/build_info.h"
#include "search/campaign.h"
#include "search/run.h"
#include "store/campaign_file.h"
#include "store/campaign_writer.h"

namespace kevo::search {

namespace {

using Clock = std::chrono::steady_clock;

using Fix = std::map<std::string, std::vector<int64_t>>;

// The knob domains with `fix` applied; empty when the space lacks a fixed knob or a fixed value.
std::vector<std::vector<int64_t>> domains(const mutate::DesignSpace& s, const Fix& fix) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& [name, values] : fix)
    if (s.manifest().knob(name) < 0) return {};
  for (const mutate::Knob& k : s.knobs()) {
    auto f = fix.find(k.name);
    std::vector<int64_t> d;
    for (int64_t v : k.values)
      if (f == fix.end() || std::find(f->second.begin(), f->second.end(), v) != f->second.end()) d.push_back(v);
    if (d.empty()) return {};
    out.push_back(std::move(d));
  }
  return out;
}

// Every legal genome when the (sub-)space is small enough to enumerate, else up to `want` distinct
// random legal ones.
std::vector<mutate::Genome> candidates_of(const mutate::DesignSpace& s, int64_t want, const Fix& fix,
                                          std::mt19937_64& rng) {
  std::vector<mutate::Genome> out;
  std::vector<std::vector<int64_t>> dom = domains(s, fix);
  if (dom.empty()) return out;
  double size = 1;
  for (const auto& d : dom) size *= static_cast<double>(d.size());
  mutate::Genome g{s.id(), std::vector<int64_t>(dom.size())};
  if (size <= 1e6) {
    std::vector<size_t> at(dom.size(), 0);
    for (;;) {
      for (size_t k = 0; k < at.size(); ++k) g.values[k] = dom[k][at[k]];
      if (s.legal(g)) out.push_back(g);
      size_t k = 0;
      while (k < at.size() && ++at[k] == dom[k].size()) at[k++] = 0;
      if (k == at.size()) break;
    }
    return out;
  }
  std::set<std::vector<int64_t>> seen;
  for (int64_t tries = 0; tries < want * 1000 && static_cast<int64_t>(out.size()) < want; ++tries) {
    for (size_t k = 0; k < dom.size(); ++k) g.values[k] = dom[k][std::uniform_int_distribution<size_t>(0, dom[k].size() - 1)(rng)];
    if (s.legal(g) && seen.insert(g.values).second) out.push_back(g);
  }
  return out;
}

}  // namespace

std::vector<mutate::Genome> sweep_genomes(const std::vector<std::unique_ptr<mutate::DesignSpace>>& spaces,
                                          int64_t limit, uint64_t seed, const Fix& fix) {
  std::vector<std::vector<mutate::Genome>> pools;
  for (size_t i = 0; i < spaces.size(); ++i) {
    std::mt19937_64 rng(seed * 1000003 + i);
    pools.push_back(candidates_of(*spaces[i], limit, fix, rng));
    std::shuffle(pools.back().begin(), pools.back().end(), rng);
  }
  // Water-filling: spaces with fewer genomes than their share give the rest to the others.
  std::vector<int64_t> take(spaces.size(), 0);
  int64_t left = limit;
  for (;;) {
    std::vector<size_t> open;
    for (size_t i = 0; i < pools.size(); ++i)
      if (take[i] < static_cast<int64_t>(pools[i].size())) open.push_back(i);
    if (open.empty() || left <= 0) break;
    int64_t share = std::max<int64_t>(1, left / static_cast<int64_t>(open.size()));
    for (size_t i : open) {
      int64_t add = std::min({share, static_cast<int64_t>(pools[i].size()) - take[i], left});
      take[i] += add;
      left -= add;
      if (left <= 0) break;
    }
  }
  // Interleave the spaces so any prefix of the sweep covers all of them.
  std::vector<mutate::Genome> out;
  for (int64_t k = 0;; ++k) {
    bool any = false;
    for (size_t i = 0; i < pools.size(); ++i)
      if (k < take[i]) {
        out.push_back(pools[i][static_cast<size_t>(k)]);
        any = true;
      }
    if (!any) break;
  }
  return out;
}

void run_sweep(const std::string& path, const std::vector<std::string>& task_files, const SweepConfig& config,
               evaluators::VariantEvaluator& evaluator, const std::string& command,
               const std::function<void(const SweepProgress&)>& progress) {
  if (config.limit < 1 || config.batch < 1) throw InputError(Location{}, "--limit", "must be at least 1");
  store::CampaignContents k;
  struct stat st;
  const bool continuing = ::stat(path.c_str(), &st) == 0;
  if (continuing) {
    store::ReadOptions o;  // the source texts stay in the file: their hashes say which are there
    o.sources = store::ReadOptions::Sources::hashes;
    o.checkpoint_bytes = store::ReadOptions::Checkpoints::none;
    k = store::read_campaign(path, o);
    if (fitness_name(k.fitness) != kFitnessWeightedTime)
      throw InputError(Location{path, 0, 0}, "", "campaign file: measured with the fitness " + fitness_name(k.fitness) +
                                                     "; this kevo measures " + kFitnessWeightedTime +
                                                     ", so a sweep cannot add to it: choose another --out");
  } else {
    k.campaign_id = sha256_hex(path + now_iso()).substr(0, 16);
    k.kevo_version = kevo_version();
    k.kevo_commit = kevo_commit();
    k.created = now_iso();
    k.templates_hash = mutate::templates_hash();
    k.command = command;
    k.fitness = kFitnessWeightedTime;
  }
  store::WriteOptions wo;
  wo.sources = config.sources;

  // The tasks: new ones get a run; known ones must be the same contract.
  struct Job {
    std::unique_ptr<Task> task;
    int32_t run = 0;
    std::vector<std::unique_ptr<mutate::DesignSpace>> spaces;
    std::map<std::string, std::shared_ptr<const store::KnobList>> knobs;  // per space id
    std::vector<mutate::Genome> todo;
    int64_t total = 0, measured = 0, ok = 0;
    double best = 0;
  };
  std::vector<Job> jobs;
  store::CampaignDelta added;      // tasks, runs and spaces new to the file
  std::set<std::string> recorded;  // run|space|genome
  std::map<int64_t, int32_t> run_of_variant;
  for (const auto& v : k.variants) {
    std::ostringstream key;
    key << v.run << '|' << mutate::Genome{v.space, v.genome}.to_string();
    recorded.insert(key.str());
    run_of_variant[v.id] = v.run;
  }
  for (const std::string& f : task_files) {
    std::string text = read_input_file(f);
    Job j;
    j.task = std::make_unique<Task>(parse_task(text, f));
    auto known = std::find_if(k.tasks.begin(), k.tasks.end(), [&](const auto& t) { return t.name == j.task->name; });
    if (known != k.tasks.end() && known->sha256 != sha256_hex(text))
      throw InputError(Location{f, 0, 0}, "", "task '" + j.task->name + "' differs from the one " + path + " holds");
    if (known == k.tasks.end()) {
      k.tasks.push_back({j.task->name, text, sha256_hex(text)});
      added.tasks.push_back(k.tasks.back());
    }
    auto run = std::find_if(k.runs.begin(), k.runs.end(), [&](const auto& r) { return r.task == j.task->name; });
    if (run == k.runs.end()) {
      store::RunRecord r;
      r.id = static_cast<int32_t>(k.runs.size());
      r.task = j.task->name;
      r.arm = "sweep";
      r.seed = config.seed;
      r.config = "{\"limit\":" + std::to_string(config.limit) + ",\"seed\":" + std::to_string(config.seed) + "}";
      k.runs.push_back(r);
      added.runs.push_back(r);
      run = k.runs.end() - 1;
    }
    j.run = run->id;
    j.spaces = lower::lower(*j.task, evaluator.target_arch());
    if (j.spaces.empty()) throw InputError(Location{f, 0, 0}, "", "no design space serves this task (see kevo space)");
    for (const auto& space : j.spaces) {
      j.knobs[space->id()] = std::make_shared<const store::KnobList>(knob_list(*space));
      const bool known_space = std::any_of(k.spaces.begin(), k.spaces.end(), [&](const store::SpaceRecord& r) {
        return r.task == j.task->name && r.space == space->id();
      });
      if (!known_space) {
        k.spaces.push_back(store::space_record(j.task->name, space->id(), j.knobs[space->id()]->names));
        added.spaces.push_back(k.spaces.back());
      }
    }
    std::vector<mutate::Genome> genomes = sweep_genomes(j.spaces, config.limit, config.seed, config.fix);
    if (genomes.empty())
      throw InputError(Location{f, 0, 0}, "--fix", "no legal genome of " + j.task->name + "'s spaces has these knob values");
    for (mutate::Genome& g : genomes) {
      std::ostringstream key;
      key << j.run << '|' << g.to_string();
      if (recorded.count(key.str())) {
        j.measured++;
        continue;
      }
      j.todo.push_back(std::move(g));
    }
    j.total = j.measured + static_cast<int64_t>(j.todo.size());
    jobs.push_back(std::move(j));
  }
  for (const auto& m : k.measurements) {
    auto r = run_of_variant.find(m.variant);
    if (r == run_of_variant.end()) continue;
    for (Job& j : jobs)
      if (j.run == r->second && m.status == "ok") {
        j.ok++;
        j.best = std::max(j.best, m.fitness);
      }
  }
  int64_t next_id = 0;
  int32_t generation = 0;
  for (const auto& v : k.variants) next_id = std::max(next_id, v.id + 1);
  for (const auto& g : k.generations) generation = std::max(generation, g.generation + 1);
  std::set<std::string> stored_sources;
  for (const auto& s : k.sources) stored_sources.insert(s.hash);
  if (!continuing) {
    k.tasks = added.tasks;
    k.runs = added.runs;
    k.spaces = added.spaces;
    store::write_campaign(path, k, wo);
    added = {};
  }
  k.variants.clear();  // what the batches need of the file is counted above
  k.measurements.clear();
  k.sources.clear();
  std::unique_ptr<store::CampaignWriter> file = store::CampaignWriter::open(path, wo);
  if (!added.tasks.empty() || !added.runs.empty() || !added.spaces.empty()) file->commit(added);

  // Batches: the task's genomes in order, `batch` at a time, task after task.
  struct Batch {
    size_t job = 0, at = 0, count = 0;  // the job's genomes [at, at + count)
    std::vector<evaluators::EvalRequest> requests;
    std::vector<store::VariantRecord> variants;
  };
  std::vector<Batch> batches;
  for (size_t ji = 0; ji < jobs.size(); ++ji)
    for (size_t at = 0; at < jobs[ji].todo.size(); at += static_cast<size_t>(config.batch))
      batches.push_back({ji, at, std::min(static_cast<size_t>(config.batch), jobs[ji].todo.size() - at), {}, {}});
  auto render = [&](Batch& b) {
    Job& j = jobs[b.job];
    b.variants.resize(b.count);
    for (size_t i = 0; i < b.count; ++i) {
      store::VariantRecord& v = b.variants[i];
      const mutate::Genome& g = j.todo[b.at + i];
      const mutate::DesignSpace* space = mutate::find_space(j.spaces, g.space);
      evaluators::EvalRequest r;
      r.task = j.task.get();
      r.variant = next_id++;
      r.space = g.space;
      r.genome = g.values;
      r.knobs = j.knobs.at(g.space);
      r.source = space->render(g);
      r.source_hash = sha256_hex(r.source);
      v.id = r.variant;
      v.run = j.run;
      v.space = g.space;
      v.genome = g.values;
      v.source_hash = r.source_hash;
      v.op = "sweep";
      b.requests.push_back(std::move(r));
    }
  };
  const double busy0 = evaluator.gpu_busy_seconds();
  const auto start = Clock::now();
  // Batch bi+1 is handed over before batch bi is collected: its compiles and GPU jobs follow bi's.
  // A sweep that stops early collects (and drops) what it handed over: those requests point at its tasks.
  struct Handed {
    evaluators::VariantEvaluator& evaluator;
    size_t submitted = 0, collected = 0;
    ~Handed() {
      for (; collected < submitted; ++collected) try {
          evaluator.collect();
        } catch (...) {
        }
    }
  } handed{evaluator};
  auto submit_next = [&] {
    if (handed.submitted == batches.size()) return;
    render(batches[handed.submitted]);
    evaluator.submit(batches[handed.submitted].requests);
    ++handed.submitted;
  };
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    Batch& b = batches[bi];
    if (bi == 0) submit_next();
    submit_next();
    ++handed.collected;  // a collect() that throws has taken its batch too
    std::vector<store::MeasurementRecord> results = evaluator.collect();
    Job& j = jobs[b.job];
    store::CampaignDelta d;
    for (size_t i = 0; i < results.size(); ++i) {
      b.variants[i].generation = generation;
      d.variants.push_back(b.variants[i]);
      if (config.sources && stored_sources.insert(b.requests[i].source_hash).second)
        d.sources.push_back({b.requests[i].source_hash, b.requests[i].source});
      results[i].variant = b.variants[i].id;
      if (results[i].status == "ok") {
        j.ok++;
        j.best = std::max(j.best, results[i].fitness);
      }
      j.measured++;
      d.measurements.push_back(std::move(results[i]));
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    store::GenerationRecord g;
    g.run = j.run;
    g.generation = generation++;
    g.evaluations = j.measured;
    g.best_fitness = j.best;
    g.wall_seconds = elapsed;
    g.gpu_busy_seconds = evaluator.gpu_busy_seconds() - busy0;
    g.gpus = evaluator.gpus();
    d.generations.push_back(g);
    file->commit(d);
    if (progress) {
      SweepProgress p;
      p.task = j.task->name;
      p.measured = j.measured;
      p.total = j.total;
      p.ok = j.ok;
      p.best = j.best;
      if (evaluator.gpus() > 0 && elapsed > 0) p.gpu_busy_fraction = g.gpu_busy_seconds / (elapsed * evaluator.gpus());
      progress(p);
    }
  }
}

}  // namespace kevo::search
