// The recordings of sweep and campaign files, indexed.
#include "evaluators/recorded_measurements.h"

#include <algorithm>
#include <sstream>

#include "core/fitness.h"
#include "store/campaign_file.h"

namespace kevo::evaluators {

namespace {

std::string genome_key(const std::string& task, const std::string& space, const std::vector<int64_t>& genome) {
  std::ostringstream s;
  s << task << '\n' << space << '\n';
  for (int64_t v : genome) s << v << ',';
  return s.str();
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
    store::for_each_measured(store::read_campaign(f, measured_only), [&](const std::string& task, const store::VariantRecord& var,
                                                          const store::MeasurementRecord& m) {
      store::MeasurementRecord r = m;
      r.gpu = "replay:" + f + (m.gpu.empty() ? "" : " (" + m.gpu + ")");
      if (!var.space.empty()) by_genome_.emplace(genome_key(task, var.space, var.genome), r);
      if (!var.source_hash.empty()) by_hash_.emplace(task + '\n' + var.source_hash, r);
      if (gpu_.empty() && !m.gpu.empty()) gpu_ = m.gpu;
      if (m.wall_seconds > 0) walls_.push_back(m.wall_seconds);
    });
  }
  std::sort(walls_.begin(), walls_.end());
}

const store::MeasurementRecord* RecordedMeasurements::find(const EvalRequest& r) const {
  if (!r.space.empty()) {
    auto it = by_genome_.find(genome_key(r.task->name, r.space, r.genome));
    if (it != by_genome_.end()) return &it->second;
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
