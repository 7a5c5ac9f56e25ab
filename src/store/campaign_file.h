// The campaign file: a CampaignContents as one HDF5 file, written whole and atomically, read whole.
// The schema ("kevo-campaign/1") is documented in docs/campaign-file.md and readable with h5py.
#pragma once

#include <functional>
#include <string>

#include "store/records.h"

namespace kevo::store {

// The schema a file of this kevo carries in its root attribute `kevo_schema`.
inline constexpr const char* kCampaignSchema = "kevo-campaign/1";

struct WriteOptions {
  bool sources = true;  // false: the sources table is written empty (marked omitted); compact sweeps
  int compression = 6;  // deflate level 0..9 of the large columns; 0 stores them uncompressed
};

// Writes `c` as the file at `path`, atomically: to "<path>.tmp" in the same folder, fsyncs it,
// renames it over `path` and fsyncs the folder. A crash (kill -9) at any moment leaves either
// the old file or the new one, never a torn file. Contents a reader would reject (duplicate ids,
// a variant of an unknown run, a NUL byte in a text field, ...) are refused. Throws
// std::runtime_error (one line, "PATH: campaign file: WHAT") on any failure; the file at `path`
// is then as it was.
void write_campaign(const std::string& path, const CampaignContents& c, const WriteOptions& o = {});

// Reads the whole file. Throws InputError ("PATH: campaign file: WHAT") when the file is missing,
// not HDF5, truncated, corrupt (a column that does not match its checksum), of another schema
// version, or inconsistent (a measurement of an unknown variant, a variant of an unknown run,
// duplicate ids, columns of one table with different lengths, ...). Never modifies the file.
CampaignContents read_campaign(const std::string& path);

// Every measurement of `c` that was taken (a replay's "unmeasured" ones left out), in file order,
// with its variant and the task of the variant's run: what replays and policy training read.
void for_each_measured(const CampaignContents& c,
                       const std::function<void(const std::string& task, const VariantRecord& v,
                                                const MeasurementRecord& m)>& fn);

}  // namespace kevo::store
