// What the verbs of the generation loop share: the configuration and what it chooses (parent
// selection, reward), the runs, the campaign file's contents as committed, and the variant counter.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "search/config.h"
#include "search/parents.h"
#include "search/reward.h"
#include "search/run.h"
#include "store/records.h"

namespace kevo::search {

struct SearchState {
  std::string path;  // the campaign file
  CampaignConfig config;
  std::unique_ptr<ParentSelection> parents;
  std::unique_ptr<RewardFunction> reward;
  store::CampaignContents contents;           // every committed generation
  std::map<std::string, size_t> source_rows;  // source hash -> its row of contents.sources
  std::vector<Run> runs;
  int64_t next_variant = 0;
  std::string target;                         // the GPU measured on ("NVIDIA H200 (sm_90a)"); empty on replay

  policy::Context context(const Run& run, int g) const { return context_of(run, g, config, target); }
};

}  // namespace kevo::search
