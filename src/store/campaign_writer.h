// Appending to a campaign file: each commit adds what one generation (or one sweep batch) added,
// in place, so its cost does not grow with the campaign; it is atomic (store/journal_driver.h): a
// process killed at any moment leaves the file at its last commit, and the next writer or reader
// sees exactly that.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/campaign_file.h"
#include "store/records.h"

namespace kevo::store {

// What one commit adds.
struct CampaignDelta {
  std::vector<TaskRecord> tasks;
  std::vector<RunRecord> runs;
  std::vector<VariantRecord> variants;
  std::vector<MeasurementRecord> measurements;
  std::vector<GenerationRecord> generations;
  std::vector<SourceRecord> sources;            // new hashes only
  std::vector<CheckpointRecord> checkpoints;
  std::vector<LlmSampleRecord> llm_samples;
  std::vector<SpaceRecord> spaces;              // kept only where the file has /spaces (kevo's since knobs by name)
  // The archives' latest snapshot: it replaces the previous one unless that one was kept.
  std::optional<std::vector<ArchiveEntry>> archive;
  bool archive_kept = false;                    // this snapshot stays when the next comes
  std::optional<ResumeState> resume;            // replaces the older of the two the file keeps
};

class CampaignWriter {
 public:
  // Opens the campaign file at `path` for appending: a commit a killed writer left unfinished is
  // rolled back first, and a kevo-campaign/1 file is rewritten once as kevo-campaign/2 (atomically,
  // as write_campaign). One writer at a time: another process writing the file is an error.
  // Throws std::runtime_error ("PATH: campaign file: WHAT"), or InputError for a file that is not a
  // readable campaign file.
  static std::unique_ptr<CampaignWriter> open(const std::string& path, const WriteOptions& o = {});
  ~CampaignWriter();
  CampaignWriter(const CampaignWriter&) = delete;
  CampaignWriter& operator=(const CampaignWriter&) = delete;

  // Appends `d` and commits. Throws std::runtime_error (one line) on failure: the file then stays
  // at its last commit and this writer refuses further commits.
  void commit(const CampaignDelta& d);
  // Closes the file (the destructor does too). Nothing since the last commit is written.
  void close();

  int64_t measurements() const;  // rows of /measurements: the next measurement's row

 private:
  CampaignWriter();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// For crash tests only: the n-th file operation of the campaign file's driver from now on (a
// write, sync, truncation or journal step; n >= 1) is replaced by SIGKILL to this process; 0 turns
// it off. Returns how many operations were counted since the last call.
int64_t kill_at_file_operation_for_testing(int64_t n);

}  // namespace kevo::store
