// The rows of a campaign file: plain C++ records the search fills and the store persists. Every
// table is append-only within a campaign; ids are unique in the file and never reused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kevo::store {

// One task contract, as the user gave it (the JSON text) and its SHA-256.
struct TaskRecord {
  std::string name;
  std::string contract;  // the contract's JSON text
  std::string sha256;    // hex, of `contract`
};

// One search run: a task searched by one arm with one seed. A sweep is a run with arm "sweep".
struct RunRecord {
  int32_t id = 0;
  std::string task;     // TaskRecord::name
  std::string arm;      // "random", "learned", "learned-frozen", "llm", "sweep"
  uint64_t seed = 0;
  std::string config;   // JSON: population, islands, budgets, policy, evaluator (gpu or replay file)
};

// A design space a run's variants belong to, with its knobs by name in the order of its genomes:
// a recording stays readable after the space gains a knob (store/genome_names.h).
struct SpaceRecord {
  std::string task;   // TaskRecord::name
  std::string space;  // the space id
  std::string knobs;  // the knob names in genome order, comma-separated: "kThreads,kVec,kCache"
};

// One variant the search produced (measured, or recognised as a duplicate of one that was).
struct VariantRecord {
  int64_t id = 0;
  int32_t run = 0;
  int32_t generation = 0;
  int32_t island = 0;
  std::string space;              // the design space id; empty for a free-form (source-edited) variant
  std::vector<int64_t> genome;    // knob values in the space's knob order; empty when free-form
  std::string source_hash;        // hex SHA-256 of the candidate text (a key of the sources table)
  std::vector<int64_t> parents;   // variant ids; empty for seeds
  std::string op;                 // "seed", "point", "multi", "crossover", "space_switch", "reseed", "edit"
  double log_prob = 0;            // the policy's log-probability of the mutation (0 when not sampled)
  int64_t duplicate_of = -1;      // a variant of the same run with the same source hash, or -1
};

// One workload of one measurement.
struct WorkloadRecord {
  int32_t workload = 0;           // index into the task's workloads
  std::string status;             // eval::to_string(EvalStatus): "ok", "wrong_result", ...
  double median_ms = 0, eager_ms = 0, compile_ms = 0, floor_ms = 0;
  double speedup = 0;             // eager / candidate
  double max_error_ratio = 0;
};

// The measurement of one variant (none for duplicates).
struct MeasurementRecord {
  int64_t variant = 0;
  std::string status;             // overall status; "unmeasured" when a replay evaluator had no recording
  std::string error;              // one line; empty when ok
  double fitness = 0;             // speedup over eager as the file's fitness defines it; 0 when not ok
  double speedup_vs_compile = 0;  // 0 when unknown
  int32_t registers = 0, shared_bytes = 0, spill_bytes = 0;  // of the plan's first kernel (0 for library-only)
  double occupancy = 0;           // theoretical, 0..1, of that kernel on the largest workload
  double wall_seconds = 0;        // the evaluation's engine wall time
  double gpu_seconds = 0;         // the candidate's own timed GPU time
  std::string gpu;                // "NVIDIA H200 (sm_90a)"; "replay:FILE" for replayed ones
  std::vector<WorkloadRecord> workloads;
};

// An elite of a run's archive after a generation.
struct ArchiveEntry {
  int32_t run = 0;
  int32_t generation = 0;         // the generation after which this snapshot was taken
  int32_t island = 0;
  std::string cell;               // MAP-Elites cell: "space|occupancy band"
  int64_t variant = 0;
  double fitness = 0;
};

// A completed generation of a run: the unit of crash safety.
struct GenerationRecord {
  int32_t run = 0;
  int32_t generation = 0;
  int64_t evaluations = 0;        // cumulative measured evaluations of the run
  int64_t unmeasured = 0;         // cumulative: proposals a replay evaluator had no recording for
  int64_t duplicates = 0;         // cumulative
  double best_fitness = 0;        // best of the run so far
  int64_t best_variant = -1;
  double wall_seconds = 0;        // cumulative campaign wall time at the end of the generation
  double gpu_busy_seconds = 0;    // cumulative time the GPU workers were busy, summed over GPUs
  int32_t gpus = 0;
};

// A candidate's text by hash (template variants render deterministically; sources are kept so
// exports and reports never depend on the template version).
struct SourceRecord {
  std::string hash;
  std::string text;
};

// An opaque checkpoint (a policy's parameters and optimizer state, for instance).
struct CheckpointRecord {
  int32_t run = 0;
  int32_t generation = 0;
  std::string kind;               // "policy"
  std::string bytes;              // binary
};

// One completion of a language-model policy, with the reward its child earned: the trajectories
// RL trainers for LLMs read (kevo export --samples writes them as JSONL).
struct LlmSampleRecord {
  int64_t id = 0;
  int32_t run = 0;
  int32_t generation = 0;
  int64_t request = 0;            // the id of the request's first sample: completions of one prompt share it (the group)
  int64_t parent = -1;            // the variant whose source the prompt showed
  int64_t variant = -1;           // the child it became; -1 when none did
  std::string prompt;             // JSON array of chat messages {role, content}
  std::string response;           // the completion; empty when the request failed
  std::string status;             // "ok", "duplicate", "prompt_too_long", "request_failed", "bad_reply", "edit_failed", "rejected"
  std::string error;              // one line; empty when ok
  std::string model;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double reward = 0;              // the run's reward (its config names it); invalid: the lowest
};

// Everything a campaign file holds (what a reader asked for of it). The search does not keep
// one: it appends each generation's rows (store/campaign_writer.h).
struct CampaignContents {
  std::string schema;             // the file's kevo_schema, as read (a writer writes its own)
  std::string campaign_id;        // random hex, fixed at creation
  std::string kevo_version, kevo_commit, created;  // created: ISO 8601 UTC
  std::string templates_hash;     // hex SHA-256 of the embedded templates (renders depend on it)
  std::string command;            // the command line that created it
  std::string fitness;            // what MeasurementRecord::fitness is (core/fitness.h); "" in files before it was recorded
  std::vector<TaskRecord> tasks;
  std::vector<RunRecord> runs;
  std::vector<VariantRecord> variants;
  std::vector<MeasurementRecord> measurements;
  std::vector<ArchiveEntry> archive;
  std::vector<GenerationRecord> generations;
  std::vector<SourceRecord> sources;
  std::vector<CheckpointRecord> checkpoints;
  std::vector<LlmSampleRecord> llm_samples;  // absent (empty) in files of kevo before the llm policy
  std::vector<SpaceRecord> spaces;           // absent (empty) in files of kevo before knobs were recorded by name
};

}  // namespace kevo::store
