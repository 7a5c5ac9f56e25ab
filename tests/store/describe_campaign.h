// Every field of a campaign as text, to compare two campaigns exactly (shared by the store tests).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "store/records.h"

namespace kevo::store::testing {

inline std::string bits(double d) {
  uint64_t w;
  std::memcpy(&w, &d, 8);
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(w));
  return buf;
}

template <class T>
inline std::string list(const std::vector<T>& v) {
  std::string s = "[";
  for (const auto& x : v) s += std::to_string(x) + ",";
  return s + "]";
}

inline std::string q(const std::string& s) { return "<" + std::to_string(s.size()) + ":" + s + ">"; }

// Every field of every record, doubles by their bits, so two campaigns compare equal exactly
// when they are (and a failure shows where they differ).
inline std::string describe(const CampaignContents& c) {
  std::ostringstream o;
  o << q(c.campaign_id) << q(c.kevo_version) << q(c.kevo_commit) << q(c.created) << q(c.templates_hash)
    << q(c.command) << "\n";
  for (const auto& t : c.tasks) o << "task " << q(t.name) << q(t.contract) << q(t.sha256) << "\n";
  for (const auto& r : c.runs) o << "run " << r.id << q(r.task) << q(r.arm) << r.seed << q(r.config) << "\n";
  for (const auto& v : c.variants)
    o << "variant " << v.id << " " << v.run << " " << v.generation << " " << v.island << q(v.space)
      << list(v.genome) << q(v.source_hash) << list(v.parents) << q(v.op) << bits(v.log_prob) << " "
      << v.duplicate_of << "\n";
  for (const auto& m : c.measurements) {
    o << "measurement " << m.variant << q(m.status) << q(m.error) << bits(m.fitness) << bits(m.speedup_vs_compile)
      << " " << m.registers << " " << m.shared_bytes << " " << m.spill_bytes << bits(m.occupancy)
      << bits(m.wall_seconds) << bits(m.gpu_seconds) << q(m.gpu) << "\n";
    for (const auto& w : m.workloads)
      o << "  workload " << w.workload << q(w.status) << bits(w.median_ms) << bits(w.eager_ms) << bits(w.compile_ms)
        << bits(w.floor_ms) << bits(w.speedup) << bits(w.max_error_ratio) << "\n";
  }
  for (const auto& a : c.archive)
    o << "archive " << a.run << " " << a.generation << " " << a.island << q(a.cell) << a.variant << bits(a.fitness)
      << "\n";
  for (const auto& g : c.generations)
    o << "generation " << g.run << " " << g.generation << " " << g.evaluations << " " << g.unmeasured << " "
      << g.duplicates << bits(g.best_fitness) << g.best_variant << bits(g.wall_seconds) << bits(g.gpu_busy_seconds)
      << " " << g.gpus << "\n";
  for (const auto& s : c.sources) o << "source " << q(s.hash) << q(s.text) << "\n";
  for (const auto& k : c.checkpoints) o << "checkpoint " << k.run << " " << k.generation << q(k.kind) << q(k.bytes) << "\n";
  for (const auto& s : c.llm_samples)
    o << "llm_sample " << s.id << " " << s.run << " " << s.generation << " " << s.request << " " << s.parent << " "
      << s.variant << q(s.prompt) << q(s.response) << q(s.status) << q(s.error) << q(s.model) << " " << s.prompt_tokens
      << " " << s.completion_tokens << bits(s.reward) << "\n";
  for (const auto& s : c.spaces) o << "space " << q(s.task) << q(s.space) << q(s.knobs) << "\n";
  return o.str();
}

}  // namespace kevo::store::testing
