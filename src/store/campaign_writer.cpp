// The campaign file open for appending: every table open, each commit's rows appended, the
// archive's unkept snapshot replaced, a resume slot rewritten, then HDF5 flushed and the driver's
// commit point taken.
#include "store/campaign_writer.h"

#include <hdf5.h>

#include <new>
#include <stdexcept>

#include "core/error.h"
#include "store/campaign_schema.h"
#include "store/hdf5_handles.h"
#include "store/journal_driver.h"
#include "store/resume_slots.h"
#include "store/table_io.h"

namespace kevo::store {

struct CampaignWriter::Impl {
  std::string path;
  WriteOptions options;
  h5::Id file;
  h5::TableFile tasks, runs, variants, measurements, workloads, archive, generations, sources, checkpoints, samples,
      spaces;
  bool has_spaces = false;  // files of kevo before knobs were recorded by name have no /spaces
  bool sources_omitted = false;
  bool broken = false;

  void open_tables() {
    using namespace schema;
    const hid_t f = file.get();
    const int level = H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0 ? options.compression : 0;
    tasks = h5::open_table(f, "tasks", task_columns(), level);
    runs = h5::open_table(f, "runs", run_columns(), level);
    variants = h5::open_table(f, "variants", variant_columns(), level);
    measurements = h5::open_table(f, "measurements", measurement_columns(), level);
    workloads = h5::open_table(f, "workloads", workload_columns(), level);
    archive = h5::open_table(f, "archive", archive_columns(), level);
    generations = h5::open_table(f, "generations", generation_columns(), level);
    sources = h5::open_table(f, "sources", source_columns(), level);
    checkpoints = h5::open_table(f, "checkpoints", checkpoint_columns(), level);
    samples = h5::open_table(f, "llm_samples", llm_sample_columns(), level);
    has_spaces = h5::ok(H5Lexists(f, "spaces", H5P_DEFAULT), "cannot look for /spaces") > 0;
    if (has_spaces) spaces = h5::open_table(f, "spaces", space_columns(), level);
    sources_omitted = h5::has_attribute(sources.group.get(), "omitted") &&
                      h5::read_number_attribute(sources.group.get(), "omitted") != 0;
  }

  void append(const CampaignDelta& d) {
    using namespace schema;
    h5::append_rows(tasks, task_columns(), d.tasks);
    h5::append_rows(runs, run_columns(), d.runs);
    h5::append_rows(variants, variant_columns(), d.variants);
    const auto first = static_cast<int64_t>(measurements.rows);
    h5::append_rows(measurements, measurement_columns(), d.measurements);
    h5::append_rows(workloads, workload_columns(), workload_rows(d.measurements, first));
    if (d.archive) {
      h5::drop_unkept(archive);
      h5::append_rows(archive, archive_columns(), *d.archive);
      if (d.archive_kept) h5::keep(archive);
    }
    h5::append_rows(generations, generation_columns(), d.generations);
    if (options.sources) {
      h5::append_rows(sources, source_columns(), d.sources);
    } else if (!d.sources.empty() && !sources_omitted) {
      h5::set_int32_attribute(sources.group.get(), "omitted", 1);
      sources_omitted = true;
    }
    h5::append_rows(checkpoints, checkpoint_columns(), d.checkpoints);
    h5::append_rows(samples, llm_sample_columns(), d.llm_samples);
    if (has_spaces) h5::append_rows(spaces, space_columns(), d.spaces);
    if (d.resume) write_resume_slot(file.get(), *d.resume);
  }
};

CampaignWriter::CampaignWriter() : impl_(std::make_unique<Impl>()) {}

CampaignWriter::~CampaignWriter() {
  try {
    close();
  } catch (const std::exception&) {  // nothing since the last commit is written anyway
  }
}

std::unique_ptr<CampaignWriter> CampaignWriter::open(const std::string& path, const WriteOptions& o) {
  // A file of the schema before is rewritten once as this one (outside the HDF5 lock: these take it).
  if (read_campaign(path, {ReadOptions::Sources::none, ReadOptions::Checkpoints::none, false}).schema !=
      kCampaignSchema)
    write_campaign(path, read_campaign(path), o);
  std::unique_ptr<CampaignWriter> w(new CampaignWriter());
  Impl& impl = *w->impl_;
  impl.path = path;
  impl.options = o;
  std::lock_guard<std::mutex> lock(h5::mutex());
  h5::skip_atexit();
  try {
    h5::Quiet quiet;
    roll_back_journal(path);
    h5::Id fapl = h5::file_access(JournalMode::write, o.durable);
    impl.file = h5::Id(h5::ok(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get()), "cannot open it for writing"), H5Fclose);
    impl.open_tables();
  } catch (const std::exception& e) {
    impl.broken = true;
    throw std::runtime_error(path + ": campaign file: " + e.what());
  }
  return w;
}

void CampaignWriter::commit(const CampaignDelta& d) {
  Impl& impl = *impl_;
  if (impl.broken) throw std::runtime_error(impl.path + ": campaign file: a commit failed before; reopen the file");
  std::lock_guard<std::mutex> lock(h5::mutex());
  try {
    h5::Quiet quiet;
    impl.append(d);
    h5::ok(H5Fflush(impl.file.get(), H5F_SCOPE_GLOBAL), "cannot flush");
    commit_journal(impl.path);
  } catch (const std::bad_alloc&) {
    impl.broken = true;
    throw std::runtime_error(impl.path + ": campaign file: out of memory while appending");
  } catch (const std::exception& e) {
    impl.broken = true;
    throw std::runtime_error(impl.path + ": campaign file: " + e.what());
  }
}

void CampaignWriter::close() {
  Impl& impl = *impl_;
  if (impl.file.get() < 0) return;
  std::lock_guard<std::mutex> lock(h5::mutex());
  h5::Quiet quiet;
  for (h5::TableFile* t : {&impl.tasks, &impl.runs, &impl.variants, &impl.measurements, &impl.workloads, &impl.archive,
                           &impl.generations, &impl.sources, &impl.checkpoints, &impl.samples, &impl.spaces})
    *t = h5::TableFile();
  const herr_t closed = impl.file.close();
  if (closed < 0 && !impl.broken) throw std::runtime_error(impl.path + ": campaign file: cannot close (HDF5: " + h5::reason() + ")");
}

int64_t CampaignWriter::measurements() const { return static_cast<int64_t>(impl_->measurements.rows); }

}  // namespace kevo::store
