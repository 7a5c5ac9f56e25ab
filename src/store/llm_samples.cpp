#include "store/llm_samples.h"

#include <map>
#include <nlohmann/json.hpp>

namespace kevo::store {

std::string samples_jsonl(const CampaignContents& c) {
  using nlohmann::json;
  std::map<int32_t, const RunRecord*> runs;
  for (const RunRecord& r : c.runs) runs[r.id] = &r;
  std::map<int64_t, double> fitness;
  for (const MeasurementRecord& m : c.measurements) fitness[m.variant] = m.status == "ok" ? m.fitness : 0;
  for (const VariantRecord& v : c.variants)  // a repeat is as fit as the candidate it repeats
    if (v.duplicate_of >= 0) fitness[v.id] = fitness.count(v.duplicate_of) ? fitness[v.duplicate_of] : 0;
  auto fitness_of = [&](int64_t v) {
    auto it = fitness.find(v);
    return it == fitness.end() ? 0.0 : it->second;
  };
  std::string out;
  for (const LlmSampleRecord& s : c.llm_samples) {
    if (s.response.empty()) continue;
    json prompt = json::parse(s.prompt, nullptr, false);
    if (prompt.is_discarded()) prompt = s.prompt;  // kept as text rather than dropped
    json line = {{"prompt", prompt},
                 {"response", s.response},
                 {"reward", s.reward},
                 {"group", s.request},
                 {"id", s.id},
                 {"campaign", c.campaign_id},
                 {"task", runs.count(s.run) ? runs[s.run]->task : std::string()},
                 {"run", s.run},
                 {"generation", s.generation},
                 {"parent", s.parent},
                 {"variant", s.variant},
                 {"parent_fitness", fitness_of(s.parent)},
                 {"fitness", s.variant >= 0 ? fitness_of(s.variant) : 0.0},
                 {"status", s.status},
                 {"error", s.error},
                 {"model", s.model},
                 {"prompt_tokens", s.prompt_tokens},
                 {"completion_tokens", s.completion_tokens}};
    out += line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  return out;
}

}  // namespace kevo::store
