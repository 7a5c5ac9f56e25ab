// Appending a generation to the campaign's contents and writing the file.
#include "search/commit.h"

#include <algorithm>
#include <map>
#include <utility>

#include "store/campaign_file.h"

namespace kevo::search {

namespace {

// Variants, and the sources not stored yet.
void append_variants(SearchState& s, const Batch& b) {
  store::CampaignContents& contents = s.contents;
  for (size_t k = 0; k < b.variants.size(); ++k) {
    contents.variants.push_back(b.variants[k]);
    const std::string& hash = b.variants[k].source_hash;
    if (!b.sources[k].empty() && s.source_rows.emplace(hash, contents.sources.size()).second)
      contents.sources.push_back({hash, b.sources[k]});
  }
}

// Samples: ids continue the file's; a request's id is its first sample's.
void append_samples(store::CampaignContents& contents, const Batch& b) {
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
}

// Archive snapshots: every tenth generation is kept, and always the latest.
void snapshot_archives(store::CampaignContents& contents, const std::vector<Run>& runs, int generation) {
  auto& a = contents.archive;
  a.erase(std::remove_if(a.begin(), a.end(), [](const store::ArchiveEntry& e) { return e.generation % 10 != 0; }),
          a.end());
  for (const Run& run : runs)
    for (size_t i = 0; i < run.islands.size(); ++i)
      for (const auto& [cell, e] : run.islands[i].archive.cells())
        a.push_back({run.id, generation, static_cast<int32_t>(i), cell, e.parent.variant, e.parent.fitness});
}

// Each run's generation record and policy checkpoint.
void append_generation(store::CampaignContents& contents, const std::vector<Run>& runs, int generation,
                       const CommitTimes& times) {
  for (const Run& run : runs) {
    store::GenerationRecord g;
    g.run = run.id;
    g.generation = generation;
    g.evaluations = run.evaluations;
    g.unmeasured = run.unmeasured;
    g.duplicates = run.duplicates;
    g.best_fitness = run.best;
    g.best_variant = run.best_variant;
    g.wall_seconds = times.wall_seconds;
    g.gpu_busy_seconds = times.gpu_busy_seconds;
    g.gpus = times.gpus;
    contents.generations.push_back(g);
  }
  for (const Run& run : runs) {
    std::string bytes = run.policy->checkpoint();
    if (!bytes.empty()) contents.checkpoints.push_back({run.id, generation, "policy", bytes});
  }
}

}  // namespace

void commit(SearchState& s, const Batch& b, const std::vector<store::MeasurementRecord>& results,
            const CommitTimes& times) {
  append_variants(s, b);
  append_samples(s.contents, b);
  for (const auto& m : results) s.contents.measurements.push_back(m);
  snapshot_archives(s.contents, s.runs, b.generation);
  append_generation(s.contents, s.runs, b.generation, times);
  store::write_campaign(s.path, s.contents);
}

}  // namespace kevo::search
