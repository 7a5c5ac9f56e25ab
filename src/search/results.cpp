// Best variants and report figures from a campaign file's tables.
#include "search/results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/candidate.h"
#include "core/template_library.h"
#include "core/error.h"
#include "core/fitness.h"
#include "eval/runner.h"
#include "lower/lower.h"
#include "mutate/manifest.h"
#include "mutate/mutation.h"
#include "mutate/space.h"
#include "search/ablation.h"
#include "store/campaign_file.h"

namespace kevo::search {

namespace {

std::string describe(const Task& task, const store::VariantRecord& v) {
  if (v.space.empty()) return "free-form source " + v.source_hash.substr(0, 12);
  std::ostringstream s;
  s << v.space << "{";
  std::vector<std::unique_ptr<mutate::DesignSpace>> spaces;
  try {
    spaces = lower::lower(task);
  } catch (...) {
  }
  const mutate::DesignSpace* space = mutate::find_space(spaces, v.space);
  for (size_t i = 0; i < v.genome.size(); ++i) {
    s << (i ? "," : "");
    if (space && i < space->knobs().size()) s << space->knobs()[i].name << "=";
    s << v.genome[i];
  }
  s << "}";
  return s.str();
}

std::string axes_text(const Task& task, int w) {
  if (w < 0 || w >= static_cast<int>(task.workloads.size())) return "workload " + std::to_string(w);
  std::ostringstream s;
  bool first = true;
  for (const auto& [axis, value] : task.axis_values(task.workloads[static_cast<size_t>(w)])) {
    s << (first ? "" : " ") << axis << "=" << value;
    first = false;
  }
  return s.str();
}

std::string num(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string interval_text(const char* f, const Interval& iv) {
  return num(f, iv.mean) + " [" + num(f, iv.lower) + ", " + num(f, iv.upper) + "]";
}

// Several arms or seeds per task: the mean curves with their bands, and the statistics as notes.
void add_ablation(const Ablation& a, store::ReportData& d) {
  for (const ArmStats& s : a.arms) {
    store::ReportSeries m;
    m.task = s.task;
    m.arm = s.arm;
    m.seed = "mean";
    for (size_t i = 0; i < s.grid.size(); ++i) {
      m.points.push_back({s.grid[i], s.curve[i].mean});
      m.band.push_back({s.curve[i].lower, s.curve[i].upper});
    }
    m.band_label = "95% bootstrap interval over " + std::to_string(s.seeds.size()) + " seed" +
                   (s.seeds.size() == 1 ? "" : "s");
    d.series.push_back(std::move(m));
    std::string line = "ablation " + s.task + ", " + s.arm + " (" + std::to_string(s.seeds.size()) +
                       " seeds): final fitness " + interval_text("%.3f", s.final_fitness) + "x; evaluations to " +
                       num("%.3f", s.target) + "x (95% of the best any arm found) " +
                       interval_text("%.1f", s.evals_to_target);
    if (s.not_reached > 0)
      line += ", " + std::to_string(s.not_reached) + " of " + std::to_string(s.seeds.size()) +
              " seeds never reached it (counted as the budget, " + std::to_string(s.budget) + ")";
    d.notes.push_back(line + " (means with 95% bootstrap intervals)");
  }
  for (const PairedComparison& p : a.paired)
    d.notes.push_back("ablation " + p.task + ", " + p.arm + " - random over " + std::to_string(p.seeds) +
                      " shared seeds: evaluations to 95% " + interval_text("%+.1f", p.evals_to_target_diff) +
                      ", final fitness " + interval_text("%+.3f", p.final_fitness_diff) + "x; fewer evaluations on " +
                      std::to_string(p.wins) + ", as many on " + std::to_string(p.ties) + ", more on " +
                      std::to_string(p.losses));
}

// The steps of a candidate's plan (kernel launches and library calls); 0 when it does not parse
// (a report still shows the measured figures).
int plan_steps(const std::string& source, const Task& task) {
  try {
    return static_cast<int>(parse_candidate(source, task.name + ".cu", task).plan.steps.size());
  } catch (const InputError&) {
    return 0;
  }
}

// The best variant's figures on one workload; the floor counts its plan's launches too.
store::WorkloadRow workload_row(const BestVariant& b, const store::WorkloadRecord& w) {
  store::WorkloadRow row;
  row.workload = w.workload;
  row.axes = axes_text(*b.task, w.workload);
  row.best_ms = w.median_ms;
  row.eager_ms = w.eager_ms;
  row.compile_ms = w.compile_ms;
  row.launches = b.launches;
  row.floor_ms = std::max(w.floor_ms, b.launches * kLaunchFloorMs);
  row.speedup = w.speedup;
  row.percent_of_floor = row.floor_ms > 0 && w.median_ms > 0 ? 100 * row.floor_ms / w.median_ms : 0;
  if (w.workload >= 0 && static_cast<size_t>(w.workload) < b.task->workloads.size()) {
    row.weight = b.task->workloads[static_cast<size_t>(w.workload)].weight;
    row.timed = b.task->workloads[static_cast<size_t>(w.workload)].timed;
  }
  return row;
}

}  // namespace

const store::GenerationRecord* last_generation(const store::CampaignContents& c, int32_t run) {
  const store::GenerationRecord* last = nullptr;
  for (const auto& g : c.generations)
    if (g.run == run && (!last || g.generation >= last->generation)) last = &g;
  return last;
}

std::map<int32_t, PartialGeneration> partial_generations(const store::CampaignContents& c) {
  std::map<int32_t, int32_t> last;  // run -> its last completed generation
  for (const auto& g : c.generations)
    if (auto [it, fresh] = last.emplace(g.run, g.generation); !fresh) it->second = std::max(it->second, g.generation);
  std::map<int64_t, const store::VariantRecord*> beyond;  // variants after their run's last generation
  for (const auto& v : c.variants) {
    auto l = last.find(v.run);
    if (v.generation > (l == last.end() ? -1 : l->second)) beyond[v.id] = &v;
  }
  std::map<int32_t, PartialGeneration> out;
  for (const auto& m : c.measurements) {
    auto v = beyond.find(m.variant);
    if (v == beyond.end()) continue;
    PartialGeneration& p = out[v->second->run];
    p.generation = v->second->generation;
    p.evaluations++;
    if (m.status == "unmeasured") p.unmeasured++;
    if (m.status == "ok" && m.fitness > p.best) p.best = m.fitness;
  }
  return out;
}

namespace {

// Per run, its measurements that screening left unverified (status "screened").
std::map<int32_t, int64_t> screened_per_run(const store::CampaignContents& c) {
  std::map<int64_t, int32_t> run_of;
  for (const auto& v : c.variants) run_of[v.id] = v.run;
  std::map<int32_t, int64_t> out;
  for (const auto& m : c.measurements)
    if (m.status == "screened")
      if (auto it = run_of.find(m.variant); it != run_of.end()) out[it->second]++;
  return out;
}

// Each chosen variant's task, description, source (from the file, else re-rendered) and launches.
void complete(const store::CampaignContents& c, const std::string& file, std::vector<BestVariant>& out) {
  std::map<std::string, std::string> source;
  for (const auto& s : c.sources) source[s.hash] = s.text;
  // The best variants' sources: read alone from the file when `c` was read without them.
  std::set<std::string> missing;
  for (const BestVariant& b : out)
    if (!source.count(b.variant->source_hash)) missing.insert(b.variant->source_hash);
  if (!missing.empty() && c.sources.empty())
    for (auto& [hash, text] : store::read_sources(file, missing)) source[hash] = std::move(text);
  for (BestVariant& b : out) {
    const store::TaskRecord& t = *std::find_if(c.tasks.begin(), c.tasks.end(),
                                               [&](const store::TaskRecord& x) { return x.name == b.run->task; });
    b.task = std::make_unique<Task>(parse_task(t.contract, t.name + ".json"));
    b.description = describe(*b.task, *b.variant);
    auto s = source.find(b.variant->source_hash);
    if (s != source.end()) {
      b.source = s->second;
    } else if (!b.variant->space.empty() && c.templates_hash == mutate::templates_hash()) {
      auto spaces = lower::lower(*b.task);
      const mutate::DesignSpace* space = mutate::find_space(spaces, b.variant->space);
      if (space) b.source = space->render({b.variant->space, b.variant->genome});
    }
    if (b.source.empty())
      throw InputError(Location{file, 0, 0}, "",
                       "the best variant of " + t.name + " (" + b.description +
                           ") has no source in the file and this kevo's templates differ from the campaign's");
    if (c.templates_hash != mutate::templates_hash() && templates::includes_library(b.source))
      throw InputError(Location{file, 0, 0}, "",
                       "the best variant of " + t.name + " (" + b.description +
                           ") includes kevo's templates, and this kevo's templates differ from the campaign's (kevo " +
                           c.kevo_commit + "): export it with that kevo");
    b.launches = plan_steps(b.source, *b.task);
  }
}

}  // namespace

std::vector<BestVariant> best_per_workload(const store::CampaignContents& c, const std::string& file,
                                           const std::string& task) {
  std::map<int64_t, const store::VariantRecord*> variant;
  for (const auto& v : c.variants) variant[v.id] = &v;
  std::map<int32_t, const store::RunRecord*> run;
  for (const auto& r : c.runs) run[r.id] = &r;
  std::map<int32_t, std::pair<double, const store::MeasurementRecord*>> fastest;  // workload -> ms, measurement
  for (const auto& m : c.measurements) {
    if (m.status != "ok" || !(m.fitness > 0)) continue;
    auto v = variant.find(m.variant);
    if (v == variant.end() || run.at(v->second->run)->task != task) continue;
    for (const store::WorkloadRecord& w : m.workloads)
      if (w.status == "ok" && w.median_ms > 0 && (!fastest.count(w.workload) || w.median_ms < fastest[w.workload].first))
        fastest[w.workload] = {w.median_ms, &m};
  }
  std::vector<BestVariant> out;
  for (const auto& [w, best] : fastest) {
    const store::MeasurementRecord* m = best.second;
    if (std::any_of(out.begin(), out.end(), [&](const BestVariant& b) { return b.measurement == m; })) continue;
    BestVariant b;
    b.measurement = m;
    b.variant = variant.at(m->variant);
    b.run = run.at(b.variant->run);
    out.push_back(std::move(b));
  }
  complete(c, file, out);
  return out;
}

std::vector<BestVariant> best_variants(const store::CampaignContents& c, const std::string& file) {
  std::map<int64_t, const store::VariantRecord*> variant;
  for (const auto& v : c.variants) variant[v.id] = &v;
  std::map<int32_t, const store::RunRecord*> run;
  for (const auto& r : c.runs) run[r.id] = &r;
  std::vector<BestVariant> out;
  for (const store::TaskRecord& t : c.tasks) {
    BestVariant b;
    for (const auto& m : c.measurements) {
      if (m.status != "ok" || !(m.fitness > 0)) continue;
      auto v = variant.find(m.variant);
      if (v == variant.end() || run.at(v->second->run)->task != t.name) continue;
      if (!b.measurement || m.fitness > b.measurement->fitness) {
        b.measurement = &m;
        b.variant = v->second;
        b.run = run.at(v->second->run);
      }
    }
    if (!b.measurement) continue;
    out.push_back(std::move(b));
  }
  complete(c, file, out);
  return out;
}

store::ReportData report_data(const store::CampaignContents& c, const std::string& file) {
  store::ReportData d;
  d.campaign_id = c.campaign_id;
  d.kevo_version = c.kevo_version;
  d.kevo_commit = c.kevo_commit;
  d.created = c.created;
  d.command = c.command;
  d.fitness = fitness_name(c.fitness);
  for (const auto& m : c.measurements)
    if (!m.gpu.empty()) {
      d.gpu = m.gpu;
      break;
    }
  // What each run measured after its last completed generation: the parts of the next generation
  // committed as they were measured (a campaign running, or stopped mid-generation).
  const std::map<int32_t, PartialGeneration> partial = partial_generations(c);
  int64_t partial_evaluations = 0;
  int partial_generation = -1;
  for (const auto& [run, p] : partial) {
    partial_evaluations += p.evaluations;
    partial_generation = std::max(partial_generation, p.generation);
  }
  if (partial_evaluations > 0)
    d.notes.push_back("generation " + std::to_string(partial_generation) + " is in the file in part: " +
                      std::to_string(partial_evaluations) + " evaluations of " + std::to_string(partial.size()) +
                      " runs, committed as each run's part was measured, are counted; the rest of it was not "
                      "measured yet (`kevo resume` continues a stopped campaign)");
  // Curves: one point per generation (cumulative evaluations, best so far), per run, and one for
  // the part of the next generation measured.
  for (const auto& r : c.runs) {
    store::ReportSeries s;
    s.task = r.task;
    s.arm = r.arm;
    s.seed = std::to_string(r.seed);
    std::vector<const store::GenerationRecord*> gens;
    for (const auto& g : c.generations)
      if (g.run == r.id) gens.push_back(&g);
    std::sort(gens.begin(), gens.end(), [](auto* a, auto* b) { return a->generation < b->generation; });
    for (const auto* g : gens) s.points.push_back({g->evaluations, g->best_fitness});
    if (auto p = partial.find(r.id); p != partial.end()) {
      const int64_t before = gens.empty() ? 0 : gens.back()->evaluations;
      const double best = gens.empty() ? 0 : gens.back()->best_fitness;
      s.points.push_back({before + p->second.evaluations, std::max(best, p->second.best)});
    }
    d.series.push_back(std::move(s));
  }
  if (is_ablation(c)) add_ablation(ablation_stats(c), d);
  std::vector<BestVariant> best;
  try {
    best = best_variants(c, file);
  } catch (const InputError&) {
    // A report still shows the figures when a source cannot be had.
  }
  const std::map<int32_t, int64_t> screened = screened_per_run(c);
  for (const store::TaskRecord& t : c.tasks) {
    store::TaskSummary s;
    s.task = t.name;
    double busy = 0, wall = 0;
    int gpus = 0;
    for (const auto& r : c.runs) {
      if (r.task != t.name) continue;
      s.runs++;
      if (auto n = screened.find(r.id); n != screened.end()) s.screened += n->second;
      if (auto p = partial.find(r.id); p != partial.end()) {
        s.evaluations += p->second.evaluations;
        s.unmeasured += p->second.unmeasured;
      }
      const store::GenerationRecord* last = last_generation(c, r.id);
      if (!last) continue;
      s.evaluations += last->evaluations;
      s.unmeasured += last->unmeasured;
      s.duplicates += last->duplicates;
      busy = last->gpu_busy_seconds;
      wall = last->wall_seconds;
      gpus = last->gpus;
    }
    if (gpus > 0 && wall > 0) s.gpu_busy = busy / (wall * gpus);
    if (s.unmeasured > 0)
      d.notes.push_back(t.name + ": " + std::to_string(s.unmeasured) +
                        " proposals had no recording in the replay files (counted as unmeasured)");
    for (const BestVariant& b : best) {
      if (b.task->name != t.name) continue;
      s.best_fitness = b.measurement->fitness;
      s.best_vs_compile = b.measurement->speedup_vs_compile;
      s.best_variant = "variant " + std::to_string(b.variant->id) + ": " + b.description;
      std::vector<WorkloadTime> times;
      for (const auto& w : b.measurement->workloads) {
        s.workloads.push_back(workload_row(b, w));
        if (w.status == "ok") times.push_back({w.workload, w.eager_ms, w.median_ms});
      }
      s.best_geometric_mean = geometric_mean_speedup(*b.task, times);
    }
    d.tasks.push_back(std::move(s));
  }
  return d;
}

int join_torch_baseline(store::ReportData& d, const std::string& baseline) {
  std::string gpu;
  {
    std::ifstream f(baseline, std::ios::binary);
    const nlohmann::json root = nlohmann::json::parse(f, nullptr, false);
    if (root.is_object() && root.contains("gpu") && root.at("gpu").is_string()) gpu = root.at("gpu").get<std::string>();
  }
  int joined = 0;
  for (store::TaskSummary& t : d.tasks) {
    if (t.workloads.empty()) continue;
    const std::map<int, double> compile = eval::torch_compile_medians(baseline, t.task);  // throws for a bad file
    bool added = false;
    for (store::WorkloadRow& w : t.workloads) {
      if (w.compile_ms > 0) continue;
      auto it = compile.find(w.workload);
      if (it == compile.end() || !(it->second > 0)) continue;
      w.compile_ms = it->second;
      added = true;
    }
    if (!added) continue;
    ++joined;
    if (t.best_vs_compile > 0) continue;
    double log_sum = 0;
    int timed = 0, with_compile = 0;
    for (const store::WorkloadRow& w : t.workloads) {
      if (!w.timed || !(w.best_ms > 0)) continue;
      ++timed;
      if (w.compile_ms > 0) log_sum += std::log(w.compile_ms / w.best_ms), ++with_compile;
    }
    if (with_compile > 0 && with_compile == timed) t.best_vs_compile = std::exp(log_sum / with_compile);
  }
  d.notes.push_back("torch.compile figures joined at report time from " + baseline +
                    (gpu.empty() ? std::string() : " (measured on " + gpu + ")") + " for " + std::to_string(joined) +
                    " task" + (joined == 1 ? "" : "s") + " whose best variant had none");
  return joined;
}

}  // namespace kevo::search
