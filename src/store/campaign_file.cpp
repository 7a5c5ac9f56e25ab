// The campaign file's HDF5 form: one group per table, one 1-D dataset per column with a checksum,
// no variable-length data. Written whole to "<path>.tmp" and renamed into place; read back whole
// or in part with every column, length and id checked.
#include "store/campaign_file.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>

#include "core/error.h"
#include "store/campaign_schema.h"
#include "store/hdf5_handles.h"
#include "store/resume_slots.h"
#include "store/table_io.h"

namespace kevo::store {
namespace {

using h5::Failure;
using h5::Id;
using h5::ok;

// ---- writing whole ----------------------------------------------------------------------------

void write_tables(hid_t file, const CampaignContents& c, const WriteOptions& o) {
  using namespace schema;
  h5::write_text_attribute(file, "kevo_schema", kCampaignSchema);
  for (size_t i = 0; i < std::size(kRootAttributes); ++i)
    h5::write_text_attribute(file, kRootAttributes[i], c.*kRootMembers[i]);
  if (!c.fitness.empty()) h5::write_text_attribute(file, "fitness", c.fitness);  // absent: as files before it
  const int level = H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0 ? o.compression : 0;
  auto tasks = h5::create_table(file, "tasks", task_columns(), level);
  h5::append_rows(tasks, task_columns(), c.tasks);
  auto runs = h5::create_table(file, "runs", run_columns(), level);
  h5::append_rows(runs, run_columns(), c.runs);
  auto variants = h5::create_table(file, "variants", variant_columns(), level);
  h5::append_rows(variants, variant_columns(), c.variants);
  auto measurements = h5::create_table(file, "measurements", measurement_columns(), level);
  h5::append_rows(measurements, measurement_columns(), c.measurements);
  auto workloads = h5::create_table(file, "workloads", workload_columns(), level);
  h5::append_rows(workloads, workload_columns(), workload_rows(c.measurements, 0));
  // Every snapshot a whole campaign holds stays (the search drops the ones it does not keep).
  auto archive = h5::create_table(file, "archive", archive_columns(), level);
  h5::append_rows(archive, archive_columns(), c.archive);
  h5::keep(archive);
  auto generations = h5::create_table(file, "generations", generation_columns(), level);
  h5::append_rows(generations, generation_columns(), c.generations);
  auto sources = h5::create_table(file, "sources", source_columns(), level);
  if (o.sources) h5::append_rows(sources, source_columns(), c.sources);
  h5::set_int32_attribute(sources.group.get(), "omitted", !o.sources && !c.sources.empty() ? 1 : 0);
  auto checkpoints = h5::create_table(file, "checkpoints", checkpoint_columns(), level);
  h5::append_rows(checkpoints, checkpoint_columns(), c.checkpoints);
  auto samples = h5::create_table(file, "llm_samples", llm_sample_columns(), level);
  h5::append_rows(samples, llm_sample_columns(), c.llm_samples);
  auto spaces = h5::create_table(file, "spaces", space_columns(), level);
  h5::append_rows(spaces, space_columns(), c.spaces);
  create_resume_slots(file);
}

// A fresh file at `file_path` (no journal: nothing in it is committed until it is renamed).
void write_file(const std::string& file_path, const CampaignContents& c, const WriteOptions& o) {
  if (o.compression < 0 || o.compression > 9)
    throw Failure("compression level " + std::to_string(o.compression) + " is not in 0..9");
  Id fapl = h5::file_access(JournalMode::write, o.durable);
  ::unlink(journal_path(file_path).c_str());
  Id file(ok(H5Fcreate(file_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), "cannot create " + file_path),
          H5Fclose);
  write_tables(file.get(), c, o);
  ok(file.close(), "cannot close " + file_path);
}

// ---- reading --------------------------------------------------------------------------------------

// The file open for reading, at its last commit point.
Id open_for_reading(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw Failure(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw Failure("is a directory");
  if (::access(path.c_str(), R_OK) != 0) throw Failure(std::string("cannot read: ") + std::strerror(errno));
  Id fapl = h5::file_access(JournalMode::read_committed);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (f < 0) {
    std::string reason = h5::reason();
    if (st.st_size == 0) throw Failure("the file is empty");
    if (!h5::starts_with_hdf5_signature(path)) throw Failure("not an HDF5 file");
    throw Failure("not a readable HDF5 file (HDF5: " + reason + ")");
  }
  Id file(f, H5Fclose);
  if (!h5::has_attribute(file.get(), "kevo_schema"))
    throw Failure("not a kevo campaign file (the root has no kevo_schema attribute)");
  const std::string schema = h5::read_text_attribute(file.get(), "kevo_schema");
  if (schema != schema::kSchemaV1 && schema != schema::kSchemaV2)
    throw Failure("schema '" + schema + "' is not supported (this kevo reads " + schema::kSchemaV2 + " and " +
                  schema::kSchemaV1 + ")");
  return file;
}

void read_checkpoints(hid_t file, CampaignContents& c, ReadOptions::Checkpoints which) {
  using C = ReadOptions::Checkpoints;
  if (which == C::all) {
    c.checkpoints = h5::read_table(file, "checkpoints", schema::checkpoint_columns());
    return;
  }
  c.checkpoints = h5::read_table(file, "checkpoints", schema::checkpoint_columns(), {"run", "generation", "kind"});
  if (which == C::none) return;
  std::vector<hsize_t> rows;
  for (size_t i = 0; i < c.checkpoints.size(); ++i)
    if (c.checkpoints[i].kind == "policy_init") rows.push_back(i);
  std::vector<std::string> bytes = h5::read_pooled_rows(file, "checkpoints", "bytes", rows);
  for (size_t k = 0; k < rows.size(); ++k) c.checkpoints[rows[k]].bytes = std::move(bytes[k]);
}

void attach_workloads(CampaignContents& c, std::vector<schema::WorkloadRow>& workloads) {
  for (size_t r = 0; r < workloads.size(); ++r) {
    schema::WorkloadRow& x = workloads[r];
    if (x.measurement < 0 || static_cast<uint64_t>(x.measurement) >= c.measurements.size())
      throw Failure("/workloads row " + std::to_string(r) + " is of measurement row " + std::to_string(x.measurement) +
                    ", which does not exist");
    MeasurementRecord& m = c.measurements[static_cast<size_t>(x.measurement)];
    if (m.variant != x.variant)
      throw Failure("/workloads row " + std::to_string(r) + " names variant " + std::to_string(x.variant) +
                    " but its measurement is of variant " + std::to_string(m.variant));
    m.workloads.push_back({x.workload, std::move(x.status), x.median_ms, x.eager_ms, x.compile_ms, x.floor_ms,
                           x.speedup, x.max_error_ratio});
  }
}

CampaignContents read_file(const std::string& path, const ReadOptions& o) {
  using namespace schema;
  Id file = open_for_reading(path);
  const hid_t f = file.get();
  CampaignContents c;
  c.schema = h5::read_text_attribute(f, "kevo_schema");
  for (size_t i = 0; i < std::size(kRootAttributes); ++i) c.*kRootMembers[i] = h5::read_text_attribute(f, kRootAttributes[i]);
  if (h5::has_attribute(f, "fitness")) c.fitness = h5::read_text_attribute(f, "fitness");
  c.tasks = h5::read_table(f, "tasks", task_columns());
  c.runs = h5::read_table(f, "runs", run_columns());
  c.generations = h5::read_table(f, "generations", generation_columns());
  read_checkpoints(f, c, o.checkpoint_bytes);
  if (o.search_tables) {
    c.variants = h5::read_table(f, "variants", variant_columns());
    c.measurements = h5::read_table(f, "measurements", measurement_columns());
    std::vector<WorkloadRow> workloads = h5::read_table(f, "workloads", workload_columns());
    attach_workloads(c, workloads);
    c.archive = h5::read_table(f, "archive", archive_columns());
    // Files of kevo before the llm policy have no /llm_samples.
    if (ok(H5Lexists(f, "llm_samples", H5P_DEFAULT), "cannot look for /llm_samples"))
      c.llm_samples = h5::read_table(f, "llm_samples", llm_sample_columns());
  }
  // Files of kevo before knobs were recorded by name have no /spaces.
  if (ok(H5Lexists(f, "spaces", H5P_DEFAULT), "cannot look for /spaces"))
    c.spaces = h5::read_table(f, "spaces", space_columns());
  if (o.sources == ReadOptions::Sources::all) c.sources = h5::read_table(f, "sources", source_columns());
  else if (o.sources == ReadOptions::Sources::hashes) c.sources = h5::read_table(f, "sources", source_columns(), {"hash"});
  ok(file.close(), "cannot close the file");
  if (std::string why = inconsistency(c, o.search_tables); !why.empty()) throw Failure(why);
  return c;
}

void sync_path(const std::string& p, int flags, const std::string& what) {
  int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  if (fd < 0) throw Failure("cannot open " + what + " to sync it: " + std::strerror(errno));
  int r = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (r != 0) throw Failure("cannot sync " + what + ": " + std::strerror(err));
}

// Runs a read under the HDF5 lock with one-line errors naming the file.
template <class F>
auto reading(const std::string& path, F&& f) {
  std::lock_guard<std::mutex> lock(h5::mutex());
  h5::skip_atexit();
  try {
    h5::Quiet quiet;
    return f();
  } catch (const Failure& e) {
    throw InputError(Location{path}, "campaign file", e.what());
  } catch (const std::bad_alloc&) {
    throw InputError(Location{path}, "campaign file", "a column is too large to read; the file is corrupt");
  } catch (const std::length_error&) {
    throw InputError(Location{path}, "campaign file", "a column is too large to read; the file is corrupt");
  }
}

}  // namespace

void write_campaign(const std::string& path, const CampaignContents& c, const WriteOptions& o) {
  std::lock_guard<std::mutex> lock(h5::mutex());
  const std::string tmp = path + ".tmp";
  bool renamed = false;
  h5::skip_atexit();
  try {
    if (std::string why = schema::inconsistency(c); !why.empty()) throw Failure("refusing to write: " + why);
    {
      h5::Quiet quiet;
      write_file(tmp, c, o);
    }
    sync_path(tmp, O_RDONLY, tmp);
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw Failure("cannot rename " + tmp + " over it: " + std::strerror(errno));
    renamed = true;
    ::unlink(journal_path(path).c_str());  // a journal of the file replaced would roll the new one back
    std::string folder = std::filesystem::path(path).parent_path().string();
    sync_path(folder.empty() ? "." : folder, O_RDONLY | O_DIRECTORY, "its folder");
  } catch (const Failure& e) {
    if (!renamed) ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": campaign file: " + e.what());
  } catch (const std::bad_alloc&) {
    if (!renamed) ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": campaign file: out of memory while writing");
  }
}

CampaignContents read_campaign(const std::string& path, const ReadOptions& o) {
  return reading(path, [&] { return read_file(path, o); });
}

std::map<std::string, std::string> read_sources(const std::string& path, const std::set<std::string>& hashes) {
  return reading(path, [&] {
    Id file = open_for_reading(path);
    Id g = h5::open_group(file.get(), "sources");
    const h5::FixedText hash = h5::read_text_column(g.get(), "sources", "hash");
    std::vector<hsize_t> rows;
    std::vector<std::string> found;
    for (hsize_t i = 0; i < hash.n; ++i)
      if (std::string h = hash.value(i); hashes.count(h)) {
        rows.push_back(i);
        found.push_back(std::move(h));
      }
    std::vector<std::string> text = h5::read_pooled_rows(file.get(), "sources", "text", rows);
    std::map<std::string, std::string> out;
    for (size_t k = 0; k < rows.size(); ++k) out[found[k]] = std::move(text[k]);
    return out;
  });
}

std::vector<VariantRecord> read_variants(const std::string& path, const std::set<int64_t>& ids) {
  return reading(path, [&] {
    Id file = open_for_reading(path);
    Id g = h5::open_group(file.get(), "variants");
    const std::vector<int64_t> id = h5::read_number_column<int64_t>(g.get(), "variants", "id");
    std::vector<hsize_t> rows;
    for (size_t i = 0; i < id.size(); ++i)
      if (ids.count(id[i])) rows.push_back(i);
    return h5::read_some_rows(file.get(), "variants", schema::variant_columns(), rows);
  });
}

std::vector<MeasurementRecord> read_measurements(const std::string& path, const std::set<int64_t>& variants) {
  return reading(path, [&] {
    Id file = open_for_reading(path);
    std::vector<hsize_t> rows;
    {
      Id g = h5::open_group(file.get(), "measurements");
      const std::vector<int64_t> variant = h5::read_number_column<int64_t>(g.get(), "measurements", "variant");
      for (size_t i = 0; i < variant.size(); ++i)
        if (variants.count(variant[i])) rows.push_back(i);
    }
    std::vector<MeasurementRecord> out = h5::read_some_rows(file.get(), "measurements", schema::measurement_columns(), rows);
    std::map<int64_t, size_t> index;  // measurement row -> its place in `out`
    for (size_t k = 0; k < rows.size(); ++k) index[static_cast<int64_t>(rows[k])] = k;
    std::vector<hsize_t> wrows;
    {
      Id g = h5::open_group(file.get(), "workloads");
      const std::vector<int64_t> of = h5::read_number_column<int64_t>(g.get(), "workloads", "measurement");
      for (size_t i = 0; i < of.size(); ++i)
        if (index.count(of[i])) wrows.push_back(i);
    }
    for (schema::WorkloadRow& x : h5::read_some_rows(file.get(), "workloads", schema::workload_columns(), wrows)) {
      MeasurementRecord& m = out[index.at(x.measurement)];
      if (m.variant != x.variant)
        throw Failure("a /workloads row names variant " + std::to_string(x.variant) + " but its measurement is of variant " +
                      std::to_string(m.variant));
      m.workloads.push_back({x.workload, std::move(x.status), x.median_ms, x.eager_ms, x.compile_ms, x.floor_ms,
                             x.speedup, x.max_error_ratio});
    }
    return out;
  });
}

void scan_variant_keys(const std::string& path, const std::function<void(const VariantKey&)>& fn) {
  reading(path, [&] {
    Id file = open_for_reading(path);
    Id g = h5::open_group(file.get(), "variants");
    const std::vector<int64_t> id = h5::read_number_column<int64_t>(g.get(), "variants", "id");
    const std::vector<int32_t> run = h5::read_number_column<int32_t>(g.get(), "variants", "run");
    const std::vector<int64_t> dup = h5::read_number_column<int64_t>(g.get(), "variants", "duplicate_of");
    const std::vector<int32_t> generation = h5::read_number_column<int32_t>(g.get(), "variants", "generation");
    const h5::FixedText hash = h5::read_text_column(g.get(), "variants", "source_hash");
    if (run.size() != id.size() || dup.size() != id.size() || generation.size() != id.size() || hash.n != id.size())
      throw Failure("table /variants: its columns have different lengths");
    for (size_t i = 0; i < id.size(); ++i) {
      const char* p = hash.bytes.data() + i * hash.width;
      fn(VariantKey{run[i], id[i], dup[i], std::string_view(p, strnlen(p, hash.width)), generation[i]});
    }
    return 0;
  });
}

std::vector<ResumeState> read_resume_states(const std::string& path) {
  return reading(path, [&] {
    Id file = open_for_reading(path);
    return read_resume_slots(file.get());
  });
}

void for_each_measured(const CampaignContents& c,
                       const std::function<void(const std::string& task, const VariantRecord& v,
                                                const MeasurementRecord& m)>& fn) {
  std::map<int32_t, std::string> task_of_run;
  for (const RunRecord& r : c.runs) task_of_run[r.id] = r.task;
  std::map<int64_t, const VariantRecord*> variant;
  for (const VariantRecord& v : c.variants) variant[v.id] = &v;
  for (const MeasurementRecord& m : c.measurements) {
    if (m.status == "unmeasured") continue;
    auto v = variant.find(m.variant);
    if (v != variant.end()) fn(task_of_run[v->second->run], *v->second, m);
  }
}

}  // namespace kevo::store
