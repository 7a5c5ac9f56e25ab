// Re-deriving recorded generations.
#include "search/recording.h"

#include "core/error.h"

namespace kevo::search {

Recording recording_after(const std::vector<store::GenerationRecord>& generations) {
  Recording r;
  for (const auto& g : generations) {
    if (g.generation > r.through) {
      r.through = g.generation;
      r.wall_seconds = g.wall_seconds;
      r.gpu_busy_seconds = g.gpu_busy_seconds;
    }
  }
  return r;
}

Recording recording_of(store::CampaignContents contents) {
  Recording r = recording_after(contents.generations);
  r.contents = std::make_unique<const store::CampaignContents>(std::move(contents));
  for (const auto& v : r.contents->variants) {
    r.variants[v.id] = &v;
    if (v.generation > r.through) r.partial_variants.push_back(v);
  }
  for (const auto& m : r.contents->measurements) {
    r.measurements[m.variant] = &m;
    if (auto v = r.variants.find(m.variant); v != r.variants.end() && v->second->generation > r.through)
      r.partial_measurements[m.variant] = m;
  }
  return r;
}

void adopt_partial(Recording& r, Batch& b, const std::string& path) {
  if (r.partial_variants.empty() || b.generation != r.through + 1) return;
  auto refuse = [&](int64_t variant) {
    return InputError(Location{path, 0, 0}, "",
                      "cannot resume: the part of generation " + std::to_string(b.generation) +
                          " the file holds does not re-derive as recorded (variant " + std::to_string(variant) +
                          "); the templates or kevo changed since");
  };
  const std::vector<BatchPart> parts = parts_of(b);
  size_t k = 0;
  while (k < parts.size() && parts[k].variants_end <= r.partial_variants.size()) ++k;
  const size_t n = k == 0 ? 0 : parts[k - 1].variants_end;
  if (n != r.partial_variants.size()) throw refuse(r.partial_variants[n].id);
  for (size_t i = 0; i < n; ++i) {
    const store::VariantRecord& mine = b.variants[i];
    const store::VariantRecord& theirs = r.partial_variants[i];
    if (mine.id != theirs.id || mine.run != theirs.run || mine.generation != theirs.generation ||
        mine.source_hash != theirs.source_hash || mine.duplicate_of != theirs.duplicate_of)
      throw refuse(theirs.id);
  }
  for (size_t q = 0; q < parts[k - 1].requests_end; ++q) {
    const int64_t id = b.requests[q].variant;
    auto m = r.partial_measurements.find(id);
    if (m == r.partial_measurements.end()) throw refuse(id);
    b.premade[q] = m->second;
  }
  b.parts_committed = k;
  r.partial_variants.clear();
  r.partial_measurements.clear();
}

std::vector<store::MeasurementRecord> recorded_results(const Recording& r, const Batch& b, const std::string& path) {
  std::vector<store::MeasurementRecord> out(b.requests.size());
  for (size_t i = 0; i < b.requests.size(); ++i) {
    const store::VariantRecord& mine = b.variants[b.variant_of_request[i]];
    auto v = r.variants.find(mine.id);
    auto m = r.measurements.find(mine.id);
    if (v == r.variants.end() || v->second->source_hash != mine.source_hash || m == r.measurements.end())
      throw InputError(Location{path, 0, 0}, "",
                       "cannot resume: generation " + std::to_string(b.generation) + " does not re-derive as "
                       "recorded (variant " + std::to_string(mine.id) + "); the templates or kevo changed since");
    out[i] = *m->second;
  }
  return out;
}

void replay_samples(const store::CampaignContents& contents, std::vector<Run>& runs, policy::LlmClient* client) {
  std::map<int, std::vector<policy::LlmSample>> by_run;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  for (const store::LlmSampleRecord& r : contents.llm_samples) {
    policy::LlmSample s;
    s.request = r.request;
    s.parent = r.parent;
    s.prompt = r.prompt;
    s.response = r.response;
    s.status = r.status == "duplicate" ? "ok" : r.status;
    s.error = r.error;
    s.model = r.model;
    s.prompt_tokens = r.prompt_tokens;
    s.completion_tokens = r.completion_tokens;
    s.generation = r.generation;
    by_run[r.run].push_back(std::move(s));
    prompt_tokens += r.prompt_tokens;
    completion_tokens += r.completion_tokens;
  }
  for (Run& run : runs)
    if (run.editor && by_run.count(run.id)) run.editor->replay_samples(by_run[run.id]);
  if (client) client->add_usage(prompt_tokens, completion_tokens);
}

void restore_policies(const Recording& r, std::vector<Run>& runs, int g) {
  if (!r.contents) return;
  for (const auto& c : r.contents->checkpoints)
    if (c.generation == g && c.kind == "policy" && c.run >= 0 && c.run < static_cast<int>(runs.size()))
      runs[static_cast<size_t>(c.run)].policy->restore(c.bytes);
}

}  // namespace kevo::search
