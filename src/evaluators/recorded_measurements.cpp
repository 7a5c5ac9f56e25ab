// The recordings of sweep and campaign files, indexed.
#include "evaluators/recorded_measurements.h"

#include <algorithm>
#include <set>

#include "core/fitness.h"
#include "store/campaign_file.h"

namespace kevo::evaluators {

namespace {

// Positional knob names for a request that names none: its genome read as recorded.
store::KnobList positional(size_t n) {
  store::KnobList k;
  for (size_t i = 0; i < n; ++i) k.names.push_back("#" + std::to_string(i));
  k.defaults.resize(n);
  return k;
}

}  // namespace

void screen_recorded(const AdmissionBar& bar, store::MeasurementRecord& m) {
  if (m.status != "ok") return;
  const ScreenVerdict v = screen_verdict(m.fitness, 0, bar.admit(m.occupancy));
  if (v.verify) return;
  m.status = "screened";
  m.error = v.reason;
}

// The fitness of today's contract (its weights, its timed workloads) from the recorded times, so
// that a recording made under another fitness or other weights replays as kevo measures now.
double recorded_fitness(const Task& task, const store::MeasurementRecord& m) {
  std::vector<WorkloadTime> times;
  for (const store::WorkloadRecord& w : m.workloads)
    if (w.status == "ok") times.push_back({w.workload, w.eager_ms, w.median_ms});
  return weighted_speedup(task, times);
}

RecordedMeasurements::RecordedMeasurements(const std::vector<std::string>& files) : files_(files) {
  for (const std::string& f : files) {
    store::ReadOptions measured_only;  // no sources, no checkpoints: a large file reads fast
    measured_only.sources = store::ReadOptions::Sources::none;
    measured_only.checkpoint_bytes = store::ReadOptions::Checkpoints::none;
    const store::CampaignContents k = store::read_campaign(f, measured_only);
    std::map<std::string, size_t> mine;  // task + '\n' + space -> this file's entry in by_space_
    auto entry = [&](const std::string& key) -> SpaceRecordings& {
      auto [it, fresh] = mine.emplace(key, by_space_[key].size());
      if (fresh) by_space_[key].emplace_back();
      return by_space_[key][it->second];
    };
    for (const store::SpaceRecord& s : k.spaces) entry(s.task + '\n' + s.space).names = store::knob_names(s);
    std::set<std::pair<std::string, std::vector<int64_t>>> seen;
    store::for_each_measured(k, [&](const std::string& task, const store::VariantRecord& var,
                                    const store::MeasurementRecord& m) {
      store::MeasurementRecord r = m;
      r.gpu = "replay:" + f + (m.gpu.empty() ? "" : " (" + m.gpu + ")");
      const std::string key = task + '\n' + var.space;
      if (!var.space.empty() && seen.insert({key, var.genome}).second) {
        entry(key).genomes.emplace_back(var.genome, r);
        ++genomes_;
      }
      if (!var.source_hash.empty()) by_hash_.emplace(task + '\n' + var.source_hash, r);
      if (gpu_.empty() && !m.gpu.empty()) gpu_ = m.gpu;
      if (m.wall_seconds > 0) walls_.push_back(m.wall_seconds);
    });
  }
  std::sort(walls_.begin(), walls_.end());
}

// The recordings of the request's space read as genomes of its knobs, built on first need: the
// first file's recording of a genome answers, as the first recording within a file does.
const RecordedMeasurements::GenomeIndex& RecordedMeasurements::index_for(const EvalRequest& r) const {
  const std::string space = r.task->name + '\n' + r.space;
  const store::KnobList to = r.knobs ? *r.knobs : positional(r.genome.size());
  std::string key = space;
  for (const std::string& n : to.names) key += '\n' + n;
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, fresh] = read_as_.emplace(key, GenomeIndex());
  if (!fresh) return it->second;
  auto recorded = by_space_.find(space);
  if (recorded == by_space_.end()) return it->second;
  for (const SpaceRecordings& file : recorded->second) {
    const std::vector<std::string> from = r.knobs ? file.names : std::vector<std::string>();
    for (const auto& [values, m] : file.genomes)
      if (auto g = store::read_genome(values, from, to)) it->second.emplace(std::move(*g), &m);
  }
  return it->second;
}

const store::MeasurementRecord* RecordedMeasurements::find(const EvalRequest& r) const {
  if (!r.space.empty()) {
    const GenomeIndex& index = index_for(r);
    if (auto it = index.find(r.genome); it != index.end()) return it->second;
  }
  auto it = by_hash_.find(r.task->name + '\n' + r.source_hash);
  return it == by_hash_.end() ? nullptr : &it->second;
}

store::MeasurementRecord RecordedMeasurements::answer(const EvalRequest& r) const {
  store::MeasurementRecord m;
  if (const store::MeasurementRecord* found = find(r)) {
    m = *found;
    if (m.status == "ok") m.fitness = recorded_fitness(*r.task, m);
    screen_recorded(r.bar, m);
  } else {
    m.status = "unmeasured";
    m.error = "no recording of this variant in the replay files";
    m.gpu = "replay";
  }
  m.variant = r.variant;
  return m;
}

double RecordedMeasurements::median_wall_seconds() const { return walls_.empty() ? 0 : walls_[walls_.size() / 2]; }

std::string replayed_gpu_name(const std::string& recorded_gpu) {
  return recorded_gpu.empty() ? "replay" : recorded_gpu + ", replayed";
}

}  // namespace kevo::evaluators
