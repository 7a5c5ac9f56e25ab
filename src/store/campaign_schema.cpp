// The campaign file's column lists and the consistency rules a whole campaign obeys.
#include "store/campaign_schema.h"

#include <set>
#include <unordered_set>

namespace kevo::store::schema {

namespace {

// Widths the text columns of appended tables start with (kevo's own names: statuses, operators,
// kinds; SHA-256 hex; design space ids; archive cells: a space id and an occupancy band; GPU and
// model names), so that a longer value rarely makes a column be rewritten.
constexpr size_t kStatusWidth = 32, kOpWidth = 16, kHashWidth = 64, kSpaceWidth = 64, kCellWidth = 96,
                 kGpuWidth = 64;

}  // namespace

std::string CampaignContents::*const kRootMembers[6] = {
    &CampaignContents::campaign_id, &CampaignContents::kevo_version,   &CampaignContents::kevo_commit,
    &CampaignContents::created,     &CampaignContents::templates_hash, &CampaignContents::command};

const std::vector<Column<TaskRecord>>& task_columns() {
  static const std::vector<Column<TaskRecord>> c = {{"name", Text<TaskRecord>{&TaskRecord::name}},
                                                    {"contract", Text<TaskRecord>{&TaskRecord::contract}},
                                                    {"sha256", Text<TaskRecord>{&TaskRecord::sha256}}};
  return c;
}

const std::vector<Column<RunRecord>>& run_columns() {
  static const std::vector<Column<RunRecord>> c = {{"id", &RunRecord::id},
                                                   {"task", Text<RunRecord>{&RunRecord::task}},
                                                   {"arm", Text<RunRecord>{&RunRecord::arm}},
                                                   {"seed", &RunRecord::seed},
                                                   {"config", Text<RunRecord>{&RunRecord::config}}};
  return c;
}

const std::vector<Column<VariantRecord>>& variant_columns() {
  static const std::vector<Column<VariantRecord>> c = {
      {"id", &VariantRecord::id},
      {"run", &VariantRecord::run},
      {"generation", &VariantRecord::generation},
      {"island", &VariantRecord::island},
      {"space", Text<VariantRecord>{&VariantRecord::space, kSpaceWidth}},
      {"genome", &VariantRecord::genome},
      {"source_hash", Text<VariantRecord>{&VariantRecord::source_hash, kHashWidth}},
      {"parents", &VariantRecord::parents},
      {"op", Text<VariantRecord>{&VariantRecord::op, kOpWidth}},
      {"log_prob", &VariantRecord::log_prob},
      {"duplicate_of", &VariantRecord::duplicate_of}};
  return c;
}

const std::vector<Column<MeasurementRecord>>& measurement_columns() {
  using M = MeasurementRecord;
  static const std::vector<Column<M>> c = {{"variant", &M::variant},
                                  {"status", Text<M>{&M::status, kStatusWidth}},
                                  {"error", Pooled<M>{&M::error}},
                                  {"fitness", &M::fitness},
                                  {"speedup_vs_compile", &M::speedup_vs_compile},
                                  {"registers", &M::registers},
                                  {"shared_bytes", &M::shared_bytes},
                                  {"spill_bytes", &M::spill_bytes},
                                  {"occupancy", &M::occupancy},
                                  {"wall_seconds", &M::wall_seconds},
                                  {"gpu_seconds", &M::gpu_seconds},
                                  {"gpu", Text<M>{&M::gpu, kGpuWidth}}};
  return c;
}

const std::vector<Column<WorkloadRow>>& workload_columns() {
  static const std::vector<Column<WorkloadRow>> c = {{"measurement", &WorkloadRow::measurement},
                                                     {"variant", &WorkloadRow::variant},
                                                     {"workload", &WorkloadRow::workload},
                                                     {"status", Text<WorkloadRow>{&WorkloadRow::status, kStatusWidth}},
                                                     {"median_ms", &WorkloadRow::median_ms},
                                                     {"eager_ms", &WorkloadRow::eager_ms},
                                                     {"compile_ms", &WorkloadRow::compile_ms},
                                                     {"floor_ms", &WorkloadRow::floor_ms},
                                                     {"speedup", &WorkloadRow::speedup},
                                                     {"max_error_ratio", &WorkloadRow::max_error_ratio}};
  return c;
}

const std::vector<Column<ArchiveEntry>>& archive_columns() {
  static const std::vector<Column<ArchiveEntry>> c = {{"run", &ArchiveEntry::run},
                                                      {"generation", &ArchiveEntry::generation},
                                                      {"island", &ArchiveEntry::island},
                                                      {"cell", Text<ArchiveEntry>{&ArchiveEntry::cell, kCellWidth}},
                                                      {"variant", &ArchiveEntry::variant},
                                                      {"fitness", &ArchiveEntry::fitness}};
  return c;
}

const std::vector<Column<GenerationRecord>>& generation_columns() {
  static const std::vector<Column<GenerationRecord>> c = {{"run", &GenerationRecord::run},
                                                          {"generation", &GenerationRecord::generation},
                                                          {"evaluations", &GenerationRecord::evaluations},
                                                          {"unmeasured", &GenerationRecord::unmeasured},
                                                          {"duplicates", &GenerationRecord::duplicates},
                                                          {"best_fitness", &GenerationRecord::best_fitness},
                                                          {"best_variant", &GenerationRecord::best_variant},
                                                          {"wall_seconds", &GenerationRecord::wall_seconds},
                                                          {"gpu_busy_seconds", &GenerationRecord::gpu_busy_seconds},
                                                          {"gpus", &GenerationRecord::gpus}};
  return c;
}

const std::vector<Column<SourceRecord>>& source_columns() {
  static const std::vector<Column<SourceRecord>> c = {{"hash", Text<SourceRecord>{&SourceRecord::hash, kHashWidth}},
                                                      {"text", Pooled<SourceRecord>{&SourceRecord::text}}};
  return c;
}

const std::vector<Column<CheckpointRecord>>& checkpoint_columns() {
  static const std::vector<Column<CheckpointRecord>> c = {
      {"run", &CheckpointRecord::run},
      {"generation", &CheckpointRecord::generation},
      {"kind", Text<CheckpointRecord>{&CheckpointRecord::kind, kOpWidth}},
      {"bytes", Pooled<CheckpointRecord>{&CheckpointRecord::bytes}}};
  return c;
}

const std::vector<Column<LlmSampleRecord>>& llm_sample_columns() {
  using L = LlmSampleRecord;
  static const std::vector<Column<L>> c = {{"id", &L::id},
                                  {"run", &L::run},
                                  {"generation", &L::generation},
                                  {"request", &L::request},
                                  {"parent", &L::parent},
                                  {"variant", &L::variant},
                                  {"prompt", Pooled<L>{&L::prompt}},
                                  {"response", Pooled<L>{&L::response}},
                                  {"status", Text<L>{&L::status, kOpWidth}},
                                  {"error", Pooled<L>{&L::error}},
                                  {"model", Text<L>{&L::model, kGpuWidth}},
                                  {"prompt_tokens", &L::prompt_tokens},
                                  {"completion_tokens", &L::completion_tokens},
                                  {"reward", &L::reward}};
  return c;
}

const std::vector<Column<SpaceRecord>>& space_columns() {
  static const std::vector<Column<SpaceRecord>> c = {{"task", Text<SpaceRecord>{&SpaceRecord::task}},
                                                     {"space", Text<SpaceRecord>{&SpaceRecord::space, kSpaceWidth}},
                                                     {"knobs", Text<SpaceRecord>{&SpaceRecord::knobs}}};
  return c;
}

std::vector<WorkloadRow> workload_rows(const std::vector<MeasurementRecord>& measurements, int64_t first_measurement) {
  std::vector<WorkloadRow> rows;
  for (size_t m = 0; m < measurements.size(); ++m)
    for (const auto& x : measurements[m].workloads)
      rows.push_back({first_measurement + static_cast<int64_t>(m), measurements[m].variant, x.workload, x.status,
                      x.median_ms, x.eager_ms, x.compile_ms, x.floor_ms, x.speedup, x.max_error_ratio});
  return rows;
}

std::string inconsistency(const CampaignContents& c, bool search_tables) {
  std::unordered_set<std::string> tasks;
  for (const auto& t : c.tasks)
    if (!tasks.insert(t.name).second) return "task '" + t.name + "' appears twice";
  std::unordered_set<int32_t> runs;
  for (const auto& r : c.runs) {
    if (!runs.insert(r.id).second) return "run id " + std::to_string(r.id) + " appears twice";
    if (!tasks.count(r.task)) return "run " + std::to_string(r.id) + " is of unknown task '" + r.task + "'";
  }
  if (!search_tables) {
    for (const auto& g : c.generations)
      if (!runs.count(g.run)) return "generation " + std::to_string(g.generation) + " of unknown run " + std::to_string(g.run);
    for (const auto& k : c.checkpoints)
      if (!runs.count(k.run)) return "checkpoint of unknown run " + std::to_string(k.run);
    return "";
  }
  std::unordered_set<int64_t> variants;
  variants.reserve(c.variants.size());
  for (const auto& v : c.variants)
    if (!variants.insert(v.id).second) return "variant id " + std::to_string(v.id) + " appears twice";
  for (const auto& v : c.variants) {
    const std::string which = "variant " + std::to_string(v.id);
    if (!runs.count(v.run)) return which + " belongs to unknown run " + std::to_string(v.run);
    if (v.duplicate_of != -1 && !variants.count(v.duplicate_of))
      return which + " is a duplicate of unknown variant " + std::to_string(v.duplicate_of);
    for (int64_t p : v.parents)
      if (!variants.count(p)) return which + " has unknown parent " + std::to_string(p);
  }
  std::unordered_set<int64_t> measured;
  for (const auto& m : c.measurements) {
    if (!variants.count(m.variant)) return "a measurement of unknown variant " + std::to_string(m.variant);
    if (!measured.insert(m.variant).second) return "variant " + std::to_string(m.variant) + " is measured twice";
  }
  for (const auto& a : c.archive) {
    const std::string which = "archive entry of run " + std::to_string(a.run) + " generation " +
                              std::to_string(a.generation);
    if (!runs.count(a.run)) return which + ": unknown run";
    if (!variants.count(a.variant)) return which + ": unknown variant " + std::to_string(a.variant);
  }
  std::set<std::pair<int32_t, int32_t>> generations;
  for (const auto& g : c.generations) {
    const std::string which = "generation " + std::to_string(g.generation) + " of run " + std::to_string(g.run);
    if (!runs.count(g.run)) return which + ": unknown run";
    if (!generations.insert({g.run, g.generation}).second) return which + " is recorded twice";
    if (g.best_variant != -1 && !variants.count(g.best_variant))
      return which + ": unknown best variant " + std::to_string(g.best_variant);
  }
  std::unordered_set<std::string> sources;
  sources.reserve(c.sources.size());
  for (const auto& s : c.sources)
    if (!sources.insert(s.hash).second) return "source '" + s.hash + "' appears twice";
  for (const auto& k : c.checkpoints)
    if (!runs.count(k.run))
      return "checkpoint of generation " + std::to_string(k.generation) + " is of unknown run " +
             std::to_string(k.run);
  std::unordered_set<int64_t> samples;
  for (const auto& x : c.llm_samples) {
    const std::string which = "llm sample " + std::to_string(x.id);
    if (!samples.insert(x.id).second) return which + " appears twice";
    if (!runs.count(x.run)) return which + " belongs to unknown run " + std::to_string(x.run);
    if (x.variant != -1 && !variants.count(x.variant)) return which + " names unknown variant " + std::to_string(x.variant);
    if (x.parent != -1 && !variants.count(x.parent)) return which + " names unknown parent " + std::to_string(x.parent);
  }
  return "";
}

}  // namespace kevo::store::schema
