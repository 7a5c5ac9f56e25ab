// A generation's delta, appended to the campaign file.
#include "search/commit.h"

#include <algorithm>
#include <map>
#include <utility>

#include "search/resume_state.h"
#include "store/campaign_writer.h"

namespace kevo::search {

namespace {

// Whether variant `v` (new to its run) is the file's first with its source: no other run has it
// under an earlier id (ids grow with commits, and within a batch in the order it is written).
bool first_in_file(const SearchState& s, const store::VariantRecord& v) {
  for (const Run& run : s.runs) {
    if (run.id == v.run) continue;
    const int64_t other = run.by_hash.find(v.source_hash);
    if (other >= 0 && other < v.id) return false;
  }
  return true;
}

// Variants [from, to), and the sources not stored yet; source editors' texts are kept for their prompts.
void add_variants(SearchState& s, const Batch& b, size_t from, size_t to, store::CampaignDelta& d) {
  d.variants.assign(b.variants.begin() + static_cast<std::ptrdiff_t>(from), b.variants.begin() + static_cast<std::ptrdiff_t>(to));
  for (size_t k = from; k < to; ++k) {
    const store::VariantRecord& v = b.variants[k];
    if (b.sources[k].empty()) continue;
    if (s.runs[static_cast<size_t>(v.run)].editor) s.editor_sources.emplace(v.source_hash, b.sources[k]);
    if (first_in_file(s, v)) d.sources.push_back({v.source_hash, b.sources[k]});
  }
}

// Samples: ids continue the file's; a request's id is its first sample's.
void add_samples(SearchState& s, const Batch& b, store::CampaignDelta& d) {
  std::map<std::pair<int, int64_t>, int64_t> request_id;
  for (const BatchSample& bs : b.samples) {
    store::LlmSampleRecord r;
    r.id = s.llm_samples++;
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
    if (r.status == "bad_reply" || r.status == "edit_failed" || r.status == "rejected") s.llm_bad_replies++;
    d.llm_samples.push_back(std::move(r));
  }
}

// The archives' snapshot: every tenth generation's is kept, and always the latest.
void add_archives(const SearchState& s, int generation, store::CampaignDelta& d) {
  d.archive.emplace();
  for (const Run& run : s.runs)
    for (size_t i = 0; i < run.islands.size(); ++i)
      for (const auto& [cell, e] : run.islands[i].archive.cells())
        d.archive->push_back({run.id, generation, static_cast<int32_t>(i), cell, e.parent.variant, e.parent.fitness});
  d.archive_kept = generation % 10 == 0;
}

// Each run's generation record.
void add_generation(const SearchState& s, int generation, const CommitTimes& times, store::CampaignDelta& d) {
  for (const Run& run : s.runs) {
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
    d.generations.push_back(g);
  }
}

}  // namespace

bool keeps_checkpoints(const CampaignConfig& config, int g) {
  return config.checkpoint_every > 0 && g % config.checkpoint_every == 0;
}

void commit(SearchState& s, const Batch& b, const std::vector<store::MeasurementRecord>& results,
            const CommitTimes& times) {
  store::CampaignDelta d;
  // What the parts committed before added is in the file already.
  size_t first_variant = 0, first_request = 0;
  if (b.parts_committed > 0) {
    const std::vector<BatchPart> parts = parts_of(b);
    first_variant = parts.at(b.parts_committed - 1).variants_end;
    first_request = parts.at(b.parts_committed - 1).requests_end;
  }
  add_variants(s, b, first_variant, b.variants.size(), d);
  const int64_t samples_before = s.llm_samples, bad_before = s.llm_bad_replies;
  add_samples(s, b, d);
  d.measurements.assign(results.begin() + static_cast<std::ptrdiff_t>(first_request), results.end());
  add_archives(s, b.generation, d);
  add_generation(s, b.generation, times, d);
  std::vector<std::string> policies;
  for (const Run& run : s.runs) policies.push_back(run.policy->checkpoint());
  if (keeps_checkpoints(s.config, b.generation))
    for (const Run& run : s.runs)
      if (!policies[static_cast<size_t>(run.id)].empty())
        d.checkpoints.push_back({run.id, b.generation, "policy", policies[static_cast<size_t>(run.id)]});
  for (const auto& c : d.checkpoints) s.checkpointed.insert({c.run, c.generation});
  // A campaign with a source editor resumes by re-deriving its generations (its policy's state
  // is more than its checkpoint): no resume state.
  if (!s.any_editor()) d.resume = store::ResumeState{b.generation, save_resume_state(s, policies)};
  try {
    s.file->commit(d);
  } catch (...) {
    s.llm_samples = samples_before;
    s.llm_bad_replies = bad_before;
    throw;
  }
  s.last_committed = b.generation;
}

void commit_part(SearchState& s, const Batch& b, const BatchPart& part,
                 const std::vector<store::MeasurementRecord>& results) {
  store::CampaignDelta d;
  add_variants(s, b, part.variants_begin, part.variants_end, d);
  d.measurements.assign(results.begin() + static_cast<std::ptrdiff_t>(part.requests_begin),
                        results.begin() + static_cast<std::ptrdiff_t>(part.requests_end));
  s.file->commit(d);
}

void finish_checkpoints(SearchState& s) {
  const int g = s.last_committed;
  if (g < 0) return;
  store::CampaignDelta d;
  for (const Run& run : s.runs) {
    if (s.checkpointed.count({run.id, g})) continue;
    std::string bytes = run.policy->checkpoint();
    if (!bytes.empty()) d.checkpoints.push_back({run.id, g, "policy", std::move(bytes)});
  }
  if (d.checkpoints.empty()) return;
  s.file->commit(d);
  for (const auto& c : d.checkpoints) s.checkpointed.insert({c.run, c.generation});
}

}  // namespace kevo::search
