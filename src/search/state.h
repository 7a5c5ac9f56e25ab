// What the verbs of the generation loop share: the configuration and what it chooses (parent
// selection, reward), the runs, the campaign file being appended to, and the counters that
// continue the file's rows. The campaign's rows themselves are not kept: each generation's are
// appended to the file and dropped.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "search/config.h"
#include "search/parents.h"
#include "search/reward.h"
#include "search/run.h"
#include "store/campaign_writer.h"

namespace kevo::search {

struct SearchState {
  std::string path;  // the campaign file
  CampaignConfig config;
  std::unique_ptr<ParentSelection> parents;
  std::unique_ptr<RewardFunction> reward;
  std::unique_ptr<store::CampaignWriter> file;  // open from create/resume until the campaign ends
  std::vector<Run> runs;
  int64_t next_variant = 0;
  int64_t llm_samples = 0;      // rows of /llm_samples: the next sample's id
  int64_t llm_bad_replies = 0;  // of them, completions that gave no child
  int last_committed = -1;      // the file's last generation
  std::set<std::pair<int, int>> checkpointed;  // (run, generation) of the policy checkpoints /checkpoints holds
  // Source editors' prompts show their parents' candidate texts: those of their runs' variants,
  // by hash (only runs with a source editor; their campaigns are small).
  std::map<std::string, std::string> editor_sources;
  std::string target;  // the GPU measured on ("NVIDIA H200 (sm_90a)"); empty on replay

  policy::Context context(const Run& run, int g) const { return context_of(run, g, config, target); }
  bool any_editor() const {
    for (const Run& r : runs)
      if (r.editor) return true;
    return false;
  }
};

}  // namespace kevo::search
