// The campaign file's tables as column lists (private to src/store): which field of which record
// each column holds and how it is stored. Both schemas kevo reads (kevo-campaign/1, written whole;
// kevo-campaign/2, appended) lay the tables out alike. docs/campaign-file.md is the user's side
// of this file.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "store/campaign_file.h"
#include "store/records.h"

namespace kevo::store::schema {

inline constexpr const char* kSchemaV1 = "kevo-campaign/1";  // written whole, replaced by rename
inline constexpr const char* kSchemaV2 = kCampaignSchema;    // appended in place, with resume states

// A text field whose rows have very different sizes (a source, an error line, a checkpoint):
// all rows' bytes end to end in `<name>_data`, row i at `<name>_offset[i]`, `<name>_length[i]`
// bytes. std::vector<int64_t> fields are pooled the same way, as int64.
template <class Row>
struct Pooled {
  std::string Row::*member;
};

// A fixed-width text field, NUL-padded: created `width` bytes wide (at least 1), and rewritten
// wider when a longer value comes.
template <class Row>
struct Text {
  std::string Row::*member;
  size_t width = 0;
};

template <class Row>
struct Column {
  const char* name;
  std::variant<int32_t Row::*, int64_t Row::*, uint64_t Row::*, double Row::*, Text<Row>,
               std::vector<int64_t> Row::*, Pooled<Row>>
      field;
};

// /workloads: the measurements' WorkloadRecords, one row each, in measurement order.
struct WorkloadRow {
  int64_t measurement = 0;  // row of /measurements
  int64_t variant = 0;      // that measurement's variant, for joins without the row index
  int32_t workload = 0;
  std::string status;
  double median_ms = 0, eager_ms = 0, compile_ms = 0, floor_ms = 0, speedup = 0, max_error_ratio = 0;
};

// Every table's column list.
const std::vector<Column<TaskRecord>>& task_columns();
const std::vector<Column<RunRecord>>& run_columns();
const std::vector<Column<VariantRecord>>& variant_columns();
const std::vector<Column<MeasurementRecord>>& measurement_columns();
const std::vector<Column<WorkloadRow>>& workload_columns();
const std::vector<Column<ArchiveEntry>>& archive_columns();
const std::vector<Column<GenerationRecord>>& generation_columns();
const std::vector<Column<SourceRecord>>& source_columns();
const std::vector<Column<CheckpointRecord>>& checkpoint_columns();
const std::vector<Column<LlmSampleRecord>>& llm_sample_columns();
const std::vector<Column<SpaceRecord>>& space_columns();

// The tables in file order.
inline const char* const kTables[] = {"tasks",   "runs",        "variants",    "measurements", "workloads",
                                      "archive", "generations", "sources",     "checkpoints",  "llm_samples",
                                      "spaces"};

// The root attributes besides kevo_schema, and the members of CampaignContents they hold.
inline const char* const kRootAttributes[] = {"campaign_id", "kevo_version",   "kevo_commit",
                                              "created",     "templates_hash", "command"};
extern std::string CampaignContents::*const kRootMembers[6];

// The workload rows of `c`'s measurements, numbered from `first_measurement`.
std::vector<WorkloadRow> workload_rows(const std::vector<MeasurementRecord>& measurements, int64_t first_measurement);

// Why `c` is not a campaign a reader would accept (duplicate ids, a variant of an unknown run, ...);
// empty when it is. Without `search_tables` (variants, measurements, archive, sources, samples
// left unread), only the tasks, runs, generations and checkpoints are checked.
std::string inconsistency(const CampaignContents& c, bool search_tables = true);

}  // namespace kevo::store::schema
