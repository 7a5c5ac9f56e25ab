// The campaign file: a CampaignContents as one HDF5 file (schema "kevo-campaign/2", documented in
// docs/campaign-file.md and readable with h5py), written whole or appended to a generation at a
// time (store/campaign_writer.h), and read whole, in part, or as what a resume needs. Files of the
// schema before ("kevo-campaign/1", written whole) read the same.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "store/records.h"

namespace kevo::store {

// The schema a file of this kevo carries in its root attribute `kevo_schema`.
inline constexpr const char* kCampaignSchema = "kevo-campaign/2";

struct WriteOptions {
  bool sources = true;   // false: sources are left out (the table stays empty, marked omitted); compact sweeps
  int compression = 6;   // deflate level 0..9 of the datasets; 0 stores them uncompressed
  bool durable = true;   // every commit synced to the disk (power failures); false: safe against kills only
};

// Writes `c` as the file at `path`, atomically: to "<path>.tmp" in the same folder, synced,
// renamed over `path`, the folder synced. A crash (kill -9) at any moment leaves either the old
// file or the new one. Contents a reader would reject (duplicate ids, a variant of an unknown
// run, a NUL byte in a text field, ...) are refused. Throws std::runtime_error (one line,
// "PATH: campaign file: WHAT") on any failure; the file at `path` is then as it was.
void write_campaign(const std::string& path, const CampaignContents& c, const WriteOptions& o = {});

// What to read of a file. The defaults read everything.
struct ReadOptions {
  enum class Sources { all, hashes, none };
  Sources sources = Sources::all;       // hashes: every SourceRecord with its text left empty
  enum class Checkpoints { all, initial, none };
  Checkpoints checkpoint_bytes = Checkpoints::all;  // initial: only "policy_init" rows keep their bytes
  bool search_tables = true;            // false: variants, measurements, archive, llm samples left empty
};

// Reads the file. Throws InputError ("PATH: campaign file: WHAT") when the file is missing, not
// HDF5, truncated, corrupt (a column that does not match its checksum), of another schema
// version, or inconsistent (a measurement of an unknown variant, a variant of an unknown run,
// duplicate ids, columns of one table with different lengths, ...). Never modifies the file;
// reads the last commit point when a writer was killed mid-commit.
CampaignContents read_campaign(const std::string& path, const ReadOptions& o = {});

// The texts of the sources with these hashes (those the file holds), read alone: what an export
// or a report needs of a large file. Throws InputError like read_campaign.
std::map<std::string, std::string> read_sources(const std::string& path, const std::set<std::string>& hashes);

// The variants with these ids (those the file holds), in file order, read alone: what a summary
// needs of a large file. Throws InputError like read_campaign.
std::vector<VariantRecord> read_variants(const std::string& path, const std::set<int64_t>& ids);

// The measurements (with their workloads) of the variants with these ids (those the file holds),
// in file order, read alone: what a resume takes of a generation the file holds only part of.
// Throws InputError like read_campaign.
std::vector<MeasurementRecord> read_measurements(const std::string& path, const std::set<int64_t>& variants);

// Each variant's run, id, generation, source hash and duplicate_of, in file order, without the rest
// of the file: what a resume rebuilds its duplicate index from. Throws InputError like read_campaign.
struct VariantKey {
  int32_t run = 0;
  int64_t id = 0, duplicate_of = -1;
  std::string_view source_hash;
  int32_t generation = 0;
};
void scan_variant_keys(const std::string& path, const std::function<void(const VariantKey&)>& fn);

// A search's state after a generation, as the search serialized it (opaque to the store). The
// file keeps the last two (a resume needs the states after the last two generations).
struct ResumeState {
  int32_t generation = -1;
  std::string bytes;
};
// The file's resume states, checked, oldest first; none for files of kevo-campaign/1.
std::vector<ResumeState> read_resume_states(const std::string& path);

// Every measurement of `c` that was taken (a replay's "unmeasured" ones left out), in file order,
// with its variant and the task of the variant's run: what replays and policy training read.
void for_each_measured(const CampaignContents& c,
                       const std::function<void(const std::string& task, const VariantRecord& v,
                                                const MeasurementRecord& m)>& fn);

}  // namespace kevo::store
