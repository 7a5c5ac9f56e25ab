// What a finished (or running) campaign file says: the best variant per task with its source, and
// the figures of `kevo report`. Shared by `kevo export` and `kevo report`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/task.h"
#include "store/records.h"
#include "store/report.h"

namespace kevo::search {

struct BestVariant {
  std::unique_ptr<Task> task;
  const store::RunRecord* run = nullptr;
  const store::VariantRecord* variant = nullptr;
  const store::MeasurementRecord* measurement = nullptr;
  std::string source;       // the candidate text: from the file, else re-rendered from the genome
  std::string description;  // "elementwise{kThreads=256,kVec=4,...}"
};

// The run's last completed generation; null when it has none.
const store::GenerationRecord* last_generation(const store::CampaignContents& c, int32_t run);

// Per task of the file (in the file's order), the fittest correct variant over all its runs;
// tasks without one are left out. Throws InputError when a best variant's source is neither in the
// file nor re-renderable (other templates than the file's).
std::vector<BestVariant> best_variants(const store::CampaignContents& c, const std::string& file);

// The report's figures: best-so-far curves per run (evaluations, best fitness), per task the
// summary and the best variant's per-workload times against eager, torch.compile and the floor.
store::ReportData report_data(const store::CampaignContents& c, const std::string& file);

}  // namespace kevo::search
