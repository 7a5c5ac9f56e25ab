// What a finished (or running) campaign file says: the best variant per task with its source, and
// the figures of `kevo report`. Shared by `kevo export` and `kevo report`.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/task.h"
#include "store/records.h"
#include "store/report.h"

namespace kevo::search {

// The least time one step of a plan (a kernel launch or a library call) takes as kevo times it on
// an H200: kevo's timing gates the queue, so host launch latency is not in its figures, but a
// launch still costs its GPU-side start and drain. 1.0 us sits under the shortest one-kernel plans
// measured (1.2 us: gelu_tanh_explicit and cumsum on their small workloads, bench/RESULTS.md), so
// no measured time exceeds its floor; the report's floor is at least this per step.
inline constexpr double kLaunchFloorMs = 1.0e-3;

struct BestVariant {
  std::unique_ptr<Task> task;
  const store::RunRecord* run = nullptr;
  const store::VariantRecord* variant = nullptr;
  const store::MeasurementRecord* measurement = nullptr;
  std::string source;       // the candidate text: from the file, else re-rendered from the genome
  std::string description;  // "elementwise{kThreads=256,kVec=4,...}"
  int launches = 0;         // steps of its plan; 0 when its source does not parse
};

// The run's last completed generation; null when it has none.
const store::GenerationRecord* last_generation(const store::CampaignContents& c, int32_t run);

// What a run measured after its last completed generation: the parts of the next generation that a
// campaign of several runs commits as each is measured (it is running, or was stopped mid-generation).
struct PartialGeneration {
  int32_t generation = -1;
  int64_t evaluations = 0, unmeasured = 0;
  double best = 0;  // best fitness among them (0: none correct)
};
// Per run with such measurements (a file read with its search tables).
std::map<int32_t, PartialGeneration> partial_generations(const store::CampaignContents& c);

// Per task of the file (in the file's order), the fittest correct variant over all its runs;
// tasks without one are left out. Throws InputError when a best variant's source is neither in the
// file nor re-renderable (other templates than the file's).
std::vector<BestVariant> best_variants(const store::CampaignContents& c, const std::string& file);

// Per timed workload of `task`, the correct variant measured fastest on it (each variant once, in
// workload order): the kernels of a dispatcher over one campaign's buckets. Empty when the task
// has no correct variant in the file.
std::vector<BestVariant> best_per_workload(const store::CampaignContents& c, const std::string& file,
                                           const std::string& task);

// The report's figures: best-so-far curves per run (evaluations, best fitness), per task the
// summary and the best variant's per-workload times against eager, torch.compile and the floor.
store::ReportData report_data(const store::CampaignContents& c, const std::string& file);

// torch.compile figures of a tools/torch_baseline.py report (`baseline`), joined at report time (a
// baseline finished after the campaign measured its tasks): each task's best variant's workloads
// without a torch.compile time get the baseline's, and where that gives every timed workload one,
// the task's best over torch.compile is computed as the evaluator computes it (the geometric mean
// of torch.compile / best over the timed workloads). Figures the campaign measured stay. Adds a
// note naming the file, its GPU and the tasks joined; returns how many were. Throws InputError for
// a file that is not such a report.
int join_torch_baseline(store::ReportData& d, const std::string& baseline);

}  // namespace kevo::search
