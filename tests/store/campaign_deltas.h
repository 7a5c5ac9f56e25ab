// A campaign cut into the deltas the search commits (shared by the writer test and
// write_sample_campaign): the header a campaign's file is created with, then one delta per
// generation.
#pragma once

#include <algorithm>
#include <map>
#include <vector>

#include "store/campaign_writer.h"
#include "store/records.h"

namespace kevo::store::testing {

// The campaign's header, tasks and runs: what a campaign's file holds when it is created.
inline CampaignContents head_of(const CampaignContents& c) {
  CampaignContents h;
  h.campaign_id = c.campaign_id;
  h.kevo_version = c.kevo_version;
  h.kevo_commit = c.kevo_commit;
  h.created = c.created;
  h.templates_hash = c.templates_hash;
  h.command = c.command;
  h.fitness = c.fitness;
  h.tasks = c.tasks;
  h.runs = c.runs;
  h.spaces = c.spaces;  // written with the file, as a campaign's are
  return h;
}

// The campaign cut into one delta per generation (0..generations-1), as the search commits it:
// its variants, their measurements, its generation records, archive snapshot (kept), checkpoints
// and samples; the sources spread evenly. Appended in order they make `c` again.
inline std::vector<CampaignDelta> deltas_of(const CampaignContents& c, int generations) {
  std::vector<CampaignDelta> d(static_cast<size_t>(generations));
  std::map<int64_t, int> generation_of;
  for (const auto& v : c.variants) {
    generation_of[v.id] = std::min(v.generation, generations - 1);
    d[static_cast<size_t>(generation_of[v.id])].variants.push_back(v);
  }
  for (const auto& m : c.measurements) d[static_cast<size_t>(generation_of.at(m.variant))].measurements.push_back(m);
  auto at = [&](int g) -> CampaignDelta& { return d[static_cast<size_t>(std::clamp(g, 0, generations - 1))]; };
  for (const auto& g : c.generations) at(g.generation).generations.push_back(g);
  for (const auto& a : c.archive) {
    CampaignDelta& x = at(a.generation);
    if (!x.archive) x.archive.emplace();
    x.archive->push_back(a);
    x.archive_kept = true;
  }
  for (const auto& k : c.checkpoints) at(k.generation).checkpoints.push_back(k);
  for (const auto& s : c.llm_samples) at(s.generation).llm_samples.push_back(s);
  for (size_t i = 0; i < c.sources.size(); ++i)
    d[i * static_cast<size_t>(generations) / c.sources.size()].sources.push_back(c.sources[i]);
  return d;
}

// What `c` holds after its first `n` deltas.
inline CampaignContents after(const CampaignContents& c, const std::vector<CampaignDelta>& d, size_t n) {
  CampaignContents k = head_of(c);
  for (size_t i = 0; i < n; ++i) {
    auto add = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    add(k.variants, d[i].variants);
    add(k.measurements, d[i].measurements);
    add(k.generations, d[i].generations);
    if (d[i].archive) add(k.archive, *d[i].archive);
    add(k.sources, d[i].sources);
    add(k.checkpoints, d[i].checkpoints);
    add(k.llm_samples, d[i].llm_samples);
  }
  return k;
}

}  // namespace kevo::store::testing
