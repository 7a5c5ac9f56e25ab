// The campaign file's HDF5 form: one group per table, one 1-D dataset per column with a checksum,
// no variable-length data; written to "<path>.tmp" and renamed into place; read back with every
// column, length and id checked.
#include "store/campaign_file.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include "core/error.h"

namespace kevo::store {
namespace {

// A failure inside this file; the public functions add the path and pick the exception type.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr const char* kChecksumAttr = "kevo_checksum";
constexpr hsize_t kChunkBytes = hsize_t{1} << 20;        // target size of one chunk
constexpr hsize_t kCompressFrom = hsize_t{64} << 10;     // columns smaller than this stay contiguous
constexpr hsize_t kPoolWindow = 8 * kChunkBytes;         // pool bytes moved per H5Dread/H5Dwrite

// The serial HDF5 library is not thread-safe, and its error-printing switch is process-wide.
std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

// ---- HDF5 errors and handles ---------------------------------------------------------------

herr_t collect_error(unsigned, const H5E_error2_t* e, void* data) {
  if (e->desc && *e->desc) static_cast<std::vector<std::string>*>(data)->push_back(e->desc);
  return 0;
}

// The innermost description on HDF5's error stack (where the failure was detected), then clears it.
std::string hdf5_reason() {
  std::vector<std::string> descs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &descs);
  H5Eclear2(H5E_DEFAULT);
  return descs.empty() ? std::string("HDF5 error") : descs.back();
}

template <class T>
T ok(T result, const std::string& what) {
  if (result < 0) throw Failure(what + " (HDF5: " + hdf5_reason() + ")");
  return result;
}

// HDF5 1.10 leaks free-list blocks on some error paths (a metadata checksum failure, for one) and
// then prints "HDF5: infinite loop closing library" from its atexit hook after kevo's own one-line
// error. Every file kevo opens is closed explicitly, so the hook has nothing to do for kevo; it is
// turned off when kevo is the first to use HDF5 (afterwards H5dont_atexit has no effect).
void skip_hdf5_atexit() {
  static const bool once = [] {
    H5dont_atexit();
    return true;
  }();
  (void)once;
}

// Turns HDF5's own printing of its error stack off for the lifetime of the object.
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// An HDF5 identifier closed on scope exit.
class Id {
 public:
  Id() = default;
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Id(Id&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
  Id& operator=(Id&& o) noexcept {
    reset();
    id_ = std::exchange(o.id_, -1);
    close_ = o.close_;
    return *this;
  }
  ~Id() { reset(); }
  hid_t get() const { return id_; }
  // Closes now and reports whether that worked (closing a file flushes it).
  herr_t close() {
    herr_t r = id_ >= 0 ? close_(id_) : 0;
    id_ = -1;
    return r;
  }

 private:
  void reset() {
    if (id_ >= 0) close_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

Id plist(hid_t cls) { return Id(ok(H5Pcreate(cls), "cannot create a property list"), H5Pclose); }
Id space_1d(hsize_t n) { return Id(ok(H5Screate_simple(1, &n, nullptr), "cannot create a dataspace"), H5Sclose); }

// Fixed-length UTF-8 strings of `size` bytes, padded with NULs. Variable-length strings would put
// the text in HDF5's global heap, which 1.10 reads without bounds checks: a damaged file could
// crash the reader instead of failing.
Id text_type(size_t size) {
  Id t(ok(H5Tcopy(H5T_C_S1), "cannot create a string type"), H5Tclose);
  ok(H5Tset_size(t.get(), std::max<size_t>(size, 1)), "cannot create a string type");
  ok(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), "cannot create a string type");
  ok(H5Tset_cset(t.get(), H5T_CSET_UTF8), "cannot create a string type");
  return t;
}

// File access for both directions: HDF5 1.10's format (checksummed metadata, readable by h5py on
// 1.10 or later), every object closed before the file counts as closed, no file locks (the file is
// replaced by rename, never written in place, and some filesystems refuse flock).
Id file_access() {
  Id fapl = plist(H5P_FILE_ACCESS);
  ok(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110), "cannot set the file format");
  ok(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_SEMI), "cannot set the close degree");
#if H5_VERSION_GE(1, 10, 7)
  ok(H5Pset_file_locking(fapl.get(), false, true), "cannot turn file locking off");
#endif
  return fapl;
}

// ---- checksums -----------------------------------------------------------------------------

// A 64-bit checksum of a column's values (not of its file bytes, which compression changes).
// Each step is a bijection of the state, so any single changed word changes the result.
class Checksum {
 public:
  explicit Checksum(uint64_t seed = 0x6B65766F2D636D70ull, uint64_t mul = 0x9E3779B97F4A7C15ull)
      : h_(seed), mul_(mul) {}
  void add(uint64_t v) { h_ = mix(h_ ^ v); }
  void add_bytes(const void* data, size_t n) {
    add(n);
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t lane[4] = {h_, h_ ^ 1, h_ ^ 2, h_ ^ 3};  // four chains: no multiply latency chain
    for (; n >= 32; p += 32, n -= 32)
      for (int k = 0; k < 4; ++k) lane[k] = mix(lane[k] ^ load(p + 8 * k));
    unsigned char tail[32] = {};
    if (n > 0) std::memcpy(tail, p, n);
    for (int k = 0; k < 4; ++k) lane[k] = mix(lane[k] ^ load(tail + 8 * k));
    h_ = lane[0];
    for (int k = 1; k < 4; ++k) h_ = mix(h_ ^ lane[k]);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t mix(uint64_t x) const {
    x *= mul_;
    return x ^ (x >> 29);
  }
  static uint64_t load(const unsigned char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
  }
  uint64_t h_, mul_;
};

// ---- the tables ----------------------------------------------------------------------------

// A field whose rows have very different sizes (a source, an error message, a checkpoint): all
// rows' bytes are stored end to end in one uint8 dataset `<name>_data`, row i at
// `<name>_offset[i]` with `<name>_length[i]` bytes. std::vector<int64_t> fields are pooled the
// same way, as int64.
template <class Row>
struct Pooled {
  std::string Row::*member;
};

template <class Row>
struct Column {
  const char* name;
  std::variant<int32_t Row::*, int64_t Row::*, uint64_t Row::*, double Row::*, std::string Row::*,
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

const std::vector<Column<TaskRecord>> kTaskColumns = {
    {"name", &TaskRecord::name}, {"contract", &TaskRecord::contract}, {"sha256", &TaskRecord::sha256}};
const std::vector<Column<RunRecord>> kRunColumns = {{"id", &RunRecord::id},
                                                    {"task", &RunRecord::task},
                                                    {"arm", &RunRecord::arm},
                                                    {"seed", &RunRecord::seed},
                                                    {"config", &RunRecord::config}};
const std::vector<Column<VariantRecord>> kVariantColumns = {
    {"id", &VariantRecord::id},
    {"run", &VariantRecord::run},
    {"generation", &VariantRecord::generation},
    {"island", &VariantRecord::island},
    {"space", &VariantRecord::space},
    {"genome", &VariantRecord::genome},
    {"source_hash", &VariantRecord::source_hash},
    {"parents", &VariantRecord::parents},
    {"op", &VariantRecord::op},
    {"log_prob", &VariantRecord::log_prob},
    {"duplicate_of", &VariantRecord::duplicate_of}};
const std::vector<Column<MeasurementRecord>> kMeasurementColumns = {
    {"variant", &MeasurementRecord::variant},
    {"status", &MeasurementRecord::status},
    {"error", Pooled<MeasurementRecord>{&MeasurementRecord::error}},
    {"fitness", &MeasurementRecord::fitness},
    {"speedup_vs_compile", &MeasurementRecord::speedup_vs_compile},
    {"registers", &MeasurementRecord::registers},
    {"shared_bytes", &MeasurementRecord::shared_bytes},
    {"spill_bytes", &MeasurementRecord::spill_bytes},
    {"occupancy", &MeasurementRecord::occupancy},
    {"wall_seconds", &MeasurementRecord::wall_seconds},
    {"gpu_seconds", &MeasurementRecord::gpu_seconds},
    {"gpu", &MeasurementRecord::gpu}};
const std::vector<Column<WorkloadRow>> kWorkloadColumns = {
    {"measurement", &WorkloadRow::measurement},
    {"variant", &WorkloadRow::variant},
    {"workload", &WorkloadRow::workload},
    {"status", &WorkloadRow::status},
    {"median_ms", &WorkloadRow::median_ms},
    {"eager_ms", &WorkloadRow::eager_ms},
    {"compile_ms", &WorkloadRow::compile_ms},
    {"floor_ms", &WorkloadRow::floor_ms},
    {"speedup", &WorkloadRow::speedup},
    {"max_error_ratio", &WorkloadRow::max_error_ratio}};
const std::vector<Column<ArchiveEntry>> kArchiveColumns = {
    {"run", &ArchiveEntry::run},   {"generation", &ArchiveEntry::generation}, {"island", &ArchiveEntry::island},
    {"cell", &ArchiveEntry::cell}, {"variant", &ArchiveEntry::variant},       {"fitness", &ArchiveEntry::fitness}};
const std::vector<Column<GenerationRecord>> kGenerationColumns = {
    {"run", &GenerationRecord::run},
    {"generation", &GenerationRecord::generation},
    {"evaluations", &GenerationRecord::evaluations},
    {"unmeasured", &GenerationRecord::unmeasured},
    {"duplicates", &GenerationRecord::duplicates},
    {"best_fitness", &GenerationRecord::best_fitness},
    {"best_variant", &GenerationRecord::best_variant},
    {"wall_seconds", &GenerationRecord::wall_seconds},
    {"gpu_busy_seconds", &GenerationRecord::gpu_busy_seconds},
    {"gpus", &GenerationRecord::gpus}};
const std::vector<Column<SourceRecord>> kSourceColumns = {{"hash", &SourceRecord::hash},
                                                          {"text", Pooled<SourceRecord>{&SourceRecord::text}}};
const std::vector<Column<CheckpointRecord>> kCheckpointColumns = {
    {"run", &CheckpointRecord::run},
    {"generation", &CheckpointRecord::generation},
    {"kind", &CheckpointRecord::kind},
    {"bytes", Pooled<CheckpointRecord>{&CheckpointRecord::bytes}}};

const std::vector<Column<LlmSampleRecord>> kLlmSampleColumns = {
    {"id", &LlmSampleRecord::id},
    {"run", &LlmSampleRecord::run},
    {"generation", &LlmSampleRecord::generation},
    {"request", &LlmSampleRecord::request},
    {"parent", &LlmSampleRecord::parent},
    {"variant", &LlmSampleRecord::variant},
    {"prompt", Pooled<LlmSampleRecord>{&LlmSampleRecord::prompt}},
    {"response", Pooled<LlmSampleRecord>{&LlmSampleRecord::response}},
    {"status", &LlmSampleRecord::status},
    {"error", Pooled<LlmSampleRecord>{&LlmSampleRecord::error}},
    {"model", &LlmSampleRecord::model},
    {"prompt_tokens", &LlmSampleRecord::prompt_tokens},
    {"completion_tokens", &LlmSampleRecord::completion_tokens},
    {"reward", &LlmSampleRecord::reward}};

const char* const kRootAttributes[] = {"campaign_id", "kevo_version", "kevo_commit",
                                       "created",     "templates_hash", "command"};
std::string CampaignContents::*const kRootMembers[] = {
    &CampaignContents::campaign_id, &CampaignContents::kevo_version,   &CampaignContents::kevo_commit,
    &CampaignContents::created,     &CampaignContents::templates_hash, &CampaignContents::command};

// Number types: how each is stored and read.
template <class T>
struct NumberTypes;
template <>
struct NumberTypes<int32_t> {
  static hid_t file() { return H5T_STD_I32LE; }
  static hid_t mem() { return H5T_NATIVE_INT32; }
};
template <>
struct NumberTypes<int64_t> {
  static hid_t file() { return H5T_STD_I64LE; }
  static hid_t mem() { return H5T_NATIVE_INT64; }
};
template <>
struct NumberTypes<uint64_t> {
  static hid_t file() { return H5T_STD_U64LE; }
  static hid_t mem() { return H5T_NATIVE_UINT64; }
};
template <>
struct NumberTypes<double> {
  static hid_t file() { return H5T_IEEE_F64LE; }
  static hid_t mem() { return H5T_NATIVE_DOUBLE; }
};
template <>
struct NumberTypes<char> {  // the bytes of a pooled text
  static hid_t file() { return H5T_STD_U8LE; }
  static hid_t mem() { return H5T_NATIVE_UINT8; }
};

template <class T>
uint64_t as_word(T v) {
  if constexpr (std::is_same_v<T, double>) {
    uint64_t w;
    std::memcpy(&w, &v, 8);
    return w;
  } else {
    return static_cast<uint64_t>(v);
  }
}

// One pooled row's contribution to its field's checksum.
void add_row(Checksum& sum, const char* p, size_t n) { sum.add_bytes(p, n); }
void add_row(Checksum& sum, const int64_t* p, size_t n) {
  sum.add(n);
  for (size_t i = 0; i < n; ++i) sum.add(static_cast<uint64_t>(p[i]));
}

// The elements of a pooled field in one row.
template <class Row>
std::pair<const char*, size_t> pooled_row(const Row& r, Pooled<Row> f) {
  return {(r.*f.member).data(), (r.*f.member).size()};
}
template <class Row>
std::pair<const int64_t*, size_t> pooled_row(const Row& r, std::vector<int64_t> Row::*m) {
  return {(r.*m).data(), (r.*m).size()};
}
template <class Row>
void set_pooled_row(Row& r, Pooled<Row> f, const char* p, size_t n) {
  (r.*f.member).assign(p, n);
}
template <class Row>
void set_pooled_row(Row& r, std::vector<int64_t> Row::*m, const int64_t* p, size_t n) {
  (r.*m).assign(p, p + n);
}

std::string column_path(const char* table, const std::string& column) {
  return std::string("/") + table + "/" + column;
}

// ---- consistency (checked before writing and after reading) -------------------------------

std::string inconsistency(const CampaignContents& c) {
  std::unordered_set<std::string> tasks;
  for (const auto& t : c.tasks)
    if (!tasks.insert(t.name).second) return "task '" + t.name + "' appears twice";
  std::unordered_set<int32_t> runs;
  for (const auto& r : c.runs) {
    if (!runs.insert(r.id).second) return "run id " + std::to_string(r.id) + " appears twice";
    if (!tasks.count(r.task)) return "run " + std::to_string(r.id) + " is of unknown task '" + r.task + "'";
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

// ---- writing -------------------------------------------------------------------------------

struct Writer {
  hid_t file;
  int compression;  // deflate level; 0: none
};

void write_checksum(hid_t obj, uint64_t sum, const std::string& where) {
  Id scalar(ok(H5Screate(H5S_SCALAR), "cannot create a dataspace"), H5Sclose);
  Id a(ok(H5Acreate2(obj, kChecksumAttr, H5T_STD_U64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
          "cannot create " + where + "'s checksum"),
       H5Aclose);
  ok(H5Awrite(a.get(), H5T_NATIVE_UINT64, &sum), "cannot write " + where + "'s checksum");
}

// ---- compressed chunks kept between writes ----
// The search rewrites the whole file every generation, and most of it (above all the sources, an
// append-only pool) is what the last write wrote. Each full chunk is keyed by two 64-bit hashes
// of its bytes and the dataset's filter settings; a chunk seen before is copied in compressed
// (H5Dwrite_chunk) instead of being deflated again. Chunks go straight to the file (the dataset's
// chunk cache is off), so a newly written one is read back compressed (H5Dread_chunk) to be kept.

struct ChunkKey {
  uint64_t a, b, params;
  bool operator==(const ChunkKey& o) const { return a == o.a && b == o.b && params == o.params; }
};
struct ChunkKeyHash {
  size_t operator()(const ChunkKey& k) const { return static_cast<size_t>(k.a ^ (k.params * 0x9E3779B97F4A7C15ull)); }
};

ChunkKey chunk_key(const void* data, size_t n, uint64_t params) {
  Checksum one;
  one.add_bytes(data, n);
  Checksum two(0x243F6A8885A308D3ull, 0xC2B2AE3D27D4EB4Full);  // another start and multiplier
  two.add(params);
  two.add_bytes(data, n);
  return {one.value(), two.value(), params};
}

class ChunkCache {
 public:
  struct Entry {
    std::string bytes;  // as stored: filtered
    uint32_t filter_mask = 0;
    uint64_t used = 0;  // the write that last used it
  };
  void begin_write() { ++write_; }
  const Entry* find(const ChunkKey& k) {
    auto it = map_.find(k);
    if (it == map_.end()) return nullptr;
    it->second.used = write_;
    return &it->second;
  }
  void put(const ChunkKey& k, std::string bytes, uint32_t filter_mask) {
    map_[k] = Entry{std::move(bytes), filter_mask, write_};
  }
  // Keeps what the last few writes used: a process may alternate between a few files.
  void end_write() {
    for (auto it = map_.begin(); it != map_.end();)
      it = it->second.used + 3 < write_ ? map_.erase(it) : std::next(it);
  }

 private:
  std::unordered_map<ChunkKey, Entry, ChunkKeyHash> map_;
  uint64_t write_ = 0;
};

ChunkCache& chunk_cache() {  // used under hdf5_mutex()
  static ChunkCache cache;
  return cache;
}

// A dataset being written.
struct Dataset {
  Id ds;
  std::string where;
  hsize_t chunk = 0;   // elements per chunk; 0: contiguous
  size_t elem = 0;     // bytes per element
  uint64_t params = 0; // what besides the bytes determines a compressed chunk
};

// Creates a 1-D dataset of n elements of `file_type` (elem_bytes each), chunked and compressed
// when large; the chunks hold about kChunkBytes, so kPoolWindow is a whole number of them.
Dataset create_column(const Writer& w, hid_t group, const std::string& where, const std::string& name,
                      hid_t file_type, hsize_t n, hsize_t elem_bytes, bool shuffle) {
  Dataset d;
  d.where = where;
  d.elem = elem_bytes;
  Id dcpl = plist(H5P_DATASET_CREATE), dapl = plist(H5P_DATASET_ACCESS);
  ok(H5Pset_obj_track_times(dcpl.get(), false), "cannot set dataset properties");
  if (w.compression > 0 && n * elem_bytes >= kCompressFrom) {
    d.chunk = std::min<hsize_t>(n, std::max<hsize_t>(1, kChunkBytes / elem_bytes));
    ok(H5Pset_chunk(dcpl.get(), 1, &d.chunk), "cannot chunk " + where);
    shuffle = shuffle && elem_bytes > 1;
    if (shuffle) ok(H5Pset_shuffle(dcpl.get()), "cannot set the shuffle filter on " + where);
    ok(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(w.compression)), "cannot compress " + where);
    ok(H5Pset_chunk_cache(dapl.get(), H5D_CHUNK_CACHE_NSLOTS_DEFAULT, 0, H5D_CHUNK_CACHE_W0_DEFAULT),
       "cannot set the chunk cache of " + where);
    Checksum p;
    for (uint64_t x : {uint64_t(d.chunk), uint64_t(elem_bytes), uint64_t(shuffle), uint64_t(w.compression)}) p.add(x);
    d.params = p.value();
  }
  Id space = space_1d(n);
  d.ds = Id(ok(H5Dcreate2(group, name.c_str(), file_type, space.get(), H5P_DEFAULT, dcpl.get(), dapl.get()),
               "cannot create " + where),
            H5Dclose);
  return d;
}

void write_selection(Dataset& d, hid_t mem_type, hsize_t first, hsize_t count, const void* buf) {
  Id file_space(ok(H5Dget_space(d.ds.get()), "cannot write " + d.where), H5Sclose);
  ok(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &first, nullptr, &count, nullptr),
     "cannot write " + d.where);
  Id mem_space = space_1d(count);
  ok(H5Dwrite(d.ds.get(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buf), "cannot write " + d.where);
}

// Writes elements [first, first + count) from `buf`; `first` is a multiple of the chunk size.
void write_range(Dataset& d, hid_t mem_type, hsize_t first, hsize_t count, const void* buf) {
  if (count == 0) return;
  if (d.chunk == 0) return write_selection(d, mem_type, first, count, buf);
  ChunkCache& cache = chunk_cache();
  for (hsize_t at = first; at < first + count; at += d.chunk) {
    const hsize_t m = std::min(d.chunk, first + count - at);
    const char* p = static_cast<const char*>(buf) + (at - first) * d.elem;
    if (m < d.chunk) {  // the last chunk, part full: its bytes change as the table grows
      write_selection(d, mem_type, at, m, p);
      continue;
    }
    const ChunkKey key = chunk_key(p, m * d.elem, d.params);
    if (const ChunkCache::Entry* e = cache.find(key)) {
      ok(H5Dwrite_chunk(d.ds.get(), H5P_DEFAULT, e->filter_mask, &at, e->bytes.size(), e->bytes.data()),
         "cannot write " + d.where);
      continue;
    }
    write_selection(d, mem_type, at, m, p);
    hsize_t stored = 0;
    uint32_t mask = 0;
    ok(H5Dget_chunk_storage_size(d.ds.get(), &at, &stored), "cannot read back " + d.where);
    std::string bytes(stored, '\0');
    ok(H5Dread_chunk(d.ds.get(), H5P_DEFAULT, &at, &mask, bytes.data()), "cannot read back " + d.where);
    cache.put(key, std::move(bytes), mask);
  }
}

template <class T>
void write_numbers(const Writer& w, hid_t g, const std::string& where, const std::string& name,
                   const std::vector<T>& v, uint64_t sum) {
  Dataset d = create_column(w, g, where, name, NumberTypes<T>::file(), v.size(), sizeof(T), true);
  write_range(d, NumberTypes<T>::mem(), 0, v.size(), v.data());
  write_checksum(d.ds.get(), sum, where);
}

template <class Row, class T>
void write_field(const Writer& w, hid_t g, const char* table, const char* name, const std::vector<Row>& rows,
                 T Row::*m) {
  std::vector<T> v(rows.size());
  Checksum sum;
  for (size_t i = 0; i < rows.size(); ++i) {
    v[i] = rows[i].*m;
    sum.add(as_word(v[i]));
  }
  write_numbers(w, g, column_path(table, name), name, v, sum.value());
}

template <class Row>
void write_field(const Writer& w, hid_t g, const char* table, const char* name, const std::vector<Row>& rows,
                 std::string Row::*m) {
  const std::string where = column_path(table, name);
  size_t width = 1;
  Checksum sum;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string& s = rows[i].*m;
    if (s.find('\0') != std::string::npos)
      throw Failure(where + " row " + std::to_string(i) + " contains a NUL byte (text columns hold UTF-8 text)");
    width = std::max(width, s.size());
    sum.add_bytes(s.data(), s.size());
  }
  std::string buf(rows.size() * width, '\0');
  for (size_t i = 0; i < rows.size(); ++i) (rows[i].*m).copy(&buf[i * width], width);
  Id type = text_type(width);
  Dataset d = create_column(w, g, where, name, type.get(), rows.size(), width, false);
  write_range(d, type.get(), 0, rows.size(), buf.data());
  write_checksum(d.ds.get(), sum.value(), where);
}

// A pooled field: `<name>_offset` and `<name>_length` columns, then the elements in `<name>_data`,
// written through a window of whole chunks (no second copy of all the elements is ever held).
template <class Row, class Field>
void write_pooled(const Writer& w, hid_t g, const char* table, const char* name, const std::vector<Row>& rows,
                  Field f) {
  using Elem = std::remove_const_t<std::remove_pointer_t<decltype(pooled_row(std::declval<const Row&>(), f).first)>>;
  const std::string base = column_path(table, name), n = name;
  std::vector<int64_t> offset(rows.size()), length(rows.size());
  Checksum offset_sum, length_sum, data_sum;
  hsize_t total = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto [p, count] = pooled_row(rows[i], f);
    offset[i] = static_cast<int64_t>(total);
    length[i] = static_cast<int64_t>(count);
    total += count;
    offset_sum.add(as_word(offset[i]));
    length_sum.add(as_word(length[i]));
    add_row(data_sum, p, count);
  }
  write_numbers(w, g, base + "_offset", n + "_offset", offset, offset_sum.value());
  write_numbers(w, g, base + "_length", n + "_length", length, length_sum.value());

  const std::string where = base + "_data";
  Dataset d = create_column(w, g, where, n + "_data", NumberTypes<Elem>::file(), total, sizeof(Elem), true);
  const size_t capacity = kPoolWindow / sizeof(Elem);
  std::vector<Elem> window;
  window.reserve(std::min<hsize_t>(total, capacity));
  hsize_t written = 0;
  auto flush = [&] {
    write_range(d, NumberTypes<Elem>::mem(), written, window.size(), window.data());
    written += window.size();
    window.clear();
  };
  for (const Row& r : rows) {
    auto [p, count] = pooled_row(r, f);
    for (size_t at = 0; at < count;) {
      size_t take = std::min(count - at, capacity - window.size());
      window.insert(window.end(), p + at, p + at + take);
      at += take;
      if (window.size() == capacity) flush();
    }
  }
  flush();
  write_checksum(d.ds.get(), data_sum.value(), where);
}

template <class Row>
void write_field(const Writer& w, hid_t g, const char* table, const char* name, const std::vector<Row>& rows,
                 Pooled<Row> f) {
  write_pooled(w, g, table, name, rows, f);
}
template <class Row>
void write_field(const Writer& w, hid_t g, const char* table, const char* name, const std::vector<Row>& rows,
                 std::vector<int64_t> Row::*m) {
  write_pooled(w, g, table, name, rows, m);
}

Id create_group(hid_t parent, const char* name) {
  Id gcpl = plist(H5P_GROUP_CREATE);
  ok(H5Pset_obj_track_times(gcpl.get(), false), "cannot set group properties");
  return Id(ok(H5Gcreate2(parent, name, H5P_DEFAULT, gcpl.get(), H5P_DEFAULT),
               std::string("cannot create table /") + name),
            H5Gclose);
}

template <class Row>
Id write_table(const Writer& w, const char* table, const std::vector<Row>& rows, const std::vector<Column<Row>>& cols) {
  Id g = create_group(w.file, table);
  for (const auto& c : cols)
    std::visit([&](auto field) { write_field(w, g.get(), table, c.name, rows, field); }, c.field);
  return g;
}

void write_attribute(hid_t obj, const char* name, hid_t file_type, hid_t mem_type, const void* value) {
  Id scalar(ok(H5Screate(H5S_SCALAR), "cannot create a dataspace"), H5Sclose);
  Id a(ok(H5Acreate2(obj, name, file_type, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
          std::string("cannot create attribute ") + name),
       H5Aclose);
  ok(H5Awrite(a.get(), mem_type, value), std::string("cannot write attribute ") + name);
}

void write_text_attribute(hid_t obj, const char* name, const std::string& value) {
  if (value.find('\0') != std::string::npos)
    throw Failure(std::string("attribute ") + name + " contains a NUL byte");
  Id type = text_type(value.size());
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  write_attribute(obj, name, type.get(), type.get(), padded.data());
}

void write_file(const std::string& file_path, const CampaignContents& c, const WriteOptions& o) {
  if (o.compression < 0 || o.compression > 9)
    throw Failure("compression level " + std::to_string(o.compression) + " is not in 0..9");
  Id fapl = file_access();
  Id file(ok(H5Fcreate(file_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), "cannot create " + file_path),
          H5Fclose);
  Writer w{file.get(), H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0 ? o.compression : 0};

  write_text_attribute(file.get(), "kevo_schema", kCampaignSchema);
  for (size_t i = 0; i < std::size(kRootAttributes); ++i)
    write_text_attribute(file.get(), kRootAttributes[i], c.*kRootMembers[i]);

  std::vector<WorkloadRow> workloads;
  for (size_t m = 0; m < c.measurements.size(); ++m)
    for (const auto& x : c.measurements[m].workloads)
      workloads.push_back({static_cast<int64_t>(m), c.measurements[m].variant, x.workload, x.status, x.median_ms,
                           x.eager_ms, x.compile_ms, x.floor_ms, x.speedup, x.max_error_ratio});

  write_table(w, "tasks", c.tasks, kTaskColumns);
  write_table(w, "runs", c.runs, kRunColumns);
  write_table(w, "variants", c.variants, kVariantColumns);
  write_table(w, "measurements", c.measurements, kMeasurementColumns);
  write_table(w, "workloads", workloads, kWorkloadColumns);
  write_table(w, "archive", c.archive, kArchiveColumns);
  write_table(w, "generations", c.generations, kGenerationColumns);
  static const std::vector<SourceRecord> none;
  Id sources = write_table(w, "sources", o.sources ? c.sources : none, kSourceColumns);
  int32_t omitted = o.sources || c.sources.empty() ? 0 : 1;
  write_attribute(sources.get(), "omitted", H5T_STD_I32LE, H5T_NATIVE_INT32, &omitted);
  sources.close();
  write_table(w, "checkpoints", c.checkpoints, kCheckpointColumns);
  write_table(w, "llm_samples", c.llm_samples, kLlmSampleColumns);
  ok(file.close(), "cannot close " + file_path);
}

void sync_path(const std::string& p, int flags, const std::string& what) {
  int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  if (fd < 0) throw Failure("cannot open " + what + " to sync it: " + std::strerror(errno));
  int r = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (r != 0) throw Failure("cannot sync " + what + ": " + std::strerror(err));
}

// ---- reading -------------------------------------------------------------------------------

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER: return "integers";
    case H5T_FLOAT: return "floats";
    case H5T_STRING: return "strings";
    case H5T_VLEN: return "variable-length arrays";
    case H5T_COMPOUND: return "compound values";
    case H5T_OPAQUE: return "opaque values";
    case H5T_ARRAY: return "arrays";
    case H5T_ENUM: return "enums";
    case H5T_REFERENCE: return "references";
    case H5T_BITFIELD: return "bitfields";
    case H5T_TIME: return "times";
    default: return "values of an unknown type";
  }
}

// The element kinds a dataset may be required to hold.
enum class Stored { integers, floats, text, bytes };

const char* stored_name(Stored s) {
  switch (s) {
    case Stored::integers: return "integers";
    case Stored::floats: return "floats";
    case Stored::text: return "fixed-length strings";
    case Stored::bytes: return "uint8 bytes";
  }
  return "";
}

template <class T>
constexpr Stored stored_kind() {
  if constexpr (std::is_same_v<T, double>) return Stored::floats;
  if constexpr (std::is_same_v<T, char>) return Stored::bytes;
  return Stored::integers;
}

struct OpenColumn {
  Id ds;
  hsize_t n = 0;
  size_t width = 0;  // of a fixed-length string
  std::string where;
};

OpenColumn open_column(hid_t group, const char* table, const std::string& name, Stored want) {
  OpenColumn c;
  c.where = column_path(table, name);
  htri_t exists = ok(H5Lexists(group, name.c_str(), H5P_DEFAULT), "cannot look up " + c.where);
  if (!exists) throw Failure("missing column " + c.where);
  c.ds = Id(ok(H5Dopen2(group, name.c_str(), H5P_DEFAULT), c.where + " is not a readable dataset"), H5Dclose);
  Id space(ok(H5Dget_space(c.ds.get()), "cannot read " + c.where), H5Sclose);
  int rank = ok(H5Sget_simple_extent_ndims(space.get()), "cannot read " + c.where);
  if (rank != 1) throw Failure(c.where + " has " + std::to_string(rank) + " dimensions, not 1");
  ok(H5Sget_simple_extent_dims(space.get(), &c.n, nullptr), "cannot read " + c.where);

  Id type(ok(H5Dget_type(c.ds.get()), "cannot read " + c.where), H5Tclose);
  H5T_class_t cls = H5Tget_class(type.get());
  std::string found = class_name(cls);
  bool fits = false;
  switch (want) {
    case Stored::integers: fits = cls == H5T_INTEGER; break;
    case Stored::floats: fits = cls == H5T_FLOAT; break;
    case Stored::bytes:
      fits = cls == H5T_INTEGER && H5Tget_size(type.get()) == 1;
      if (cls == H5T_INTEGER && !fits) found = std::to_string(H5Tget_size(type.get())) + "-byte integers";
      break;
    case Stored::text:
      fits = cls == H5T_STRING && H5Tis_variable_str(type.get()) == 0;
      if (cls == H5T_STRING && !fits) found = "variable-length strings";
      c.width = H5Tget_size(type.get());
      break;
  }
  if (!fits) throw Failure(c.where + " holds " + found + ", not " + stored_name(want));
  return c;
}

void verify_checksum(hid_t ds, const std::string& where, uint64_t computed) {
  htri_t has = ok(H5Aexists(ds, kChecksumAttr), "cannot read " + where);
  if (!has) return;  // a column written or edited by another tool
  Id a(ok(H5Aopen(ds, kChecksumAttr, H5P_DEFAULT), "cannot read " + where + "'s checksum"), H5Aclose);
  uint64_t stored = 0;
  ok(H5Aread(a.get(), H5T_NATIVE_UINT64, &stored), "cannot read " + where + "'s checksum");
  if (stored != computed) throw Failure(where + " does not match its checksum: the file is corrupt");
}

template <class T>
std::vector<T> read_numbers(OpenColumn& c) {
  std::vector<T> v(c.n);
  if (c.n > 0)
    ok(H5Dread(c.ds.get(), NumberTypes<T>::mem(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), "cannot read " + c.where);
  Checksum sum;
  for (T x : v) sum.add(as_word(x));
  verify_checksum(c.ds.get(), c.where, sum.value());
  return v;
}

template <class Row, class T>
void read_field(std::vector<OpenColumn>& c, std::vector<Row>& rows, T Row::*m) {
  std::vector<T> v = read_numbers<T>(c[0]);
  for (size_t i = 0; i < rows.size(); ++i) rows[i].*m = v[i];
}

template <class Row>
void read_field(std::vector<OpenColumn>& c, std::vector<Row>& rows, std::string Row::*m) {
  OpenColumn& col = c[0];
  Id type(ok(H5Dget_type(col.ds.get()), "cannot read " + col.where), H5Tclose);  // its width and charset
  std::string buf(rows.size() * col.width, '\0');
  if (!rows.empty())
    ok(H5Dread(col.ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), "cannot read " + col.where);
  Checksum sum;
  for (size_t i = 0; i < rows.size(); ++i) {
    const char* p = buf.data() + i * col.width;
    std::string& s = rows[i].*m;
    s.assign(p, strnlen(p, col.width));
    sum.add_bytes(s.data(), s.size());
  }
  verify_checksum(col.ds.get(), col.where, sum.value());
}

// A pooled field: each row's elements read through a window aligned to the chunks, so rows stored
// in order cost one pass over the data (each chunk inflated about once).
template <class Row, class Field>
void read_pooled(std::vector<OpenColumn>& c, std::vector<Row>& rows, Field f) {
  using Elem = std::remove_const_t<std::remove_pointer_t<decltype(pooled_row(std::declval<const Row&>(), f).first)>>;
  std::vector<int64_t> offset = read_numbers<int64_t>(c[0]), length = read_numbers<int64_t>(c[1]);
  OpenColumn& data = c[2];
  for (size_t i = 0; i < rows.size(); ++i)
    if (offset[i] < 0 || length[i] < 0 || static_cast<uint64_t>(offset[i]) > data.n ||
        static_cast<uint64_t>(length[i]) > data.n - static_cast<uint64_t>(offset[i]))
      throw Failure(c[0].where + " row " + std::to_string(i) + ": elements " + std::to_string(offset[i]) + " + " +
                    std::to_string(length[i]) + " lie outside " + data.where + " (" + std::to_string(data.n) +
                    " elements)");
  const hsize_t span = kPoolWindow / sizeof(Elem), chunk = kChunkBytes / sizeof(Elem);
  Id file_space(ok(H5Dget_space(data.ds.get()), "cannot read " + data.where), H5Sclose);
  std::vector<Elem> window;
  hsize_t lo = 0, hi = 0;
  Checksum sum;
  for (size_t i = 0; i < rows.size(); ++i) {
    hsize_t at = static_cast<hsize_t>(offset[i]), len = static_cast<hsize_t>(length[i]);
    if (len > 0 && (at < lo || at + len > hi)) {
      lo = at / chunk * chunk;  // a row that straddles windows re-reads at most one chunk
      hi = std::min(data.n, std::max(lo + span, (at + len + chunk - 1) / chunk * chunk));
      hsize_t count = hi - lo;
      window.resize(count);
      ok(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &lo, nullptr, &count, nullptr),
         "cannot read " + data.where);
      Id mem_space = space_1d(count);
      ok(H5Dread(data.ds.get(), NumberTypes<Elem>::mem(), mem_space.get(), file_space.get(), H5P_DEFAULT,
                 window.data()),
         "cannot read " + data.where);
    }
    const Elem* p = len > 0 ? window.data() + (at - lo) : nullptr;
    set_pooled_row(rows[i], f, p, len);
    add_row(sum, p, len);
  }
  verify_checksum(data.ds.get(), data.where, sum.value());
}

template <class Row>
void read_field(std::vector<OpenColumn>& c, std::vector<Row>& rows, Pooled<Row> f) {
  read_pooled(c, rows, f);
}
template <class Row>
void read_field(std::vector<OpenColumn>& c, std::vector<Row>& rows, std::vector<int64_t> Row::*m) {
  read_pooled(c, rows, m);
}

// The datasets a field is stored in, and what each must hold.
template <class Row, class T>
std::vector<std::pair<std::string, Stored>> stored_as(const char* name, T Row::*) {
  return {{name, stored_kind<T>()}};
}
template <class Row>
std::vector<std::pair<std::string, Stored>> stored_as(const char* name, std::string Row::*) {
  return {{name, Stored::text}};
}
std::vector<std::pair<std::string, Stored>> pooled_as(const std::string& n, Stored data) {
  return {{n + "_offset", Stored::integers}, {n + "_length", Stored::integers}, {n + "_data", data}};
}
template <class Row>
std::vector<std::pair<std::string, Stored>> stored_as(const char* name, std::vector<int64_t> Row::*) {
  return pooled_as(name, Stored::integers);
}
template <class Row>
std::vector<std::pair<std::string, Stored>> stored_as(const char* name, Pooled<Row>) {
  return pooled_as(name, Stored::bytes);
}

Id open_table(hid_t file, const char* table) {
  htri_t exists = ok(H5Lexists(file, table, H5P_DEFAULT), std::string("cannot look up table /") + table);
  if (!exists) throw Failure(std::string("missing table /") + table);
  return Id(ok(H5Gopen2(file, table, H5P_DEFAULT), std::string("/") + table + " is not a readable group"),
            H5Gclose);
}

template <class Row>
std::vector<Row> read_table(hid_t file, const char* table, const std::vector<Column<Row>>& cols) {
  Id g = open_table(file, table);
  // Every column is opened and sized before any is read, so a short column is reported as such.
  std::vector<std::vector<OpenColumn>> opened(cols.size());
  bool sized = false;
  hsize_t n = 0;
  std::string sized_by;
  for (size_t i = 0; i < cols.size(); ++i) {
    auto parts = std::visit([&](auto field) { return stored_as(cols[i].name, field); }, cols[i].field);
    for (size_t k = 0; k < parts.size(); ++k) {
      opened[i].push_back(open_column(g.get(), table, parts[k].first, parts[k].second));
      const OpenColumn& c = opened[i].back();
      if (k == 2) continue;  // a pooled field's data, not a column of rows
      if (!sized) {
        sized = true;
        n = c.n;
        sized_by = c.where;
      } else if (c.n != n) {
        throw Failure("table /" + std::string(table) + ": " + c.where + " has " + std::to_string(c.n) +
                      " rows but " + sized_by + " has " + std::to_string(n));
      }
    }
  }
  std::vector<Row> rows(n);
  for (size_t i = 0; i < cols.size(); ++i)
    std::visit([&](auto field) { read_field(opened[i], rows, field); }, cols[i].field);
  return rows;
}

std::string read_text_attribute(hid_t obj, const char* name) {
  htri_t exists = ok(H5Aexists(obj, name), std::string("cannot look up attribute ") + name);
  if (!exists) throw Failure(std::string("missing root attribute ") + name);
  Id a(ok(H5Aopen(obj, name, H5P_DEFAULT), std::string("cannot open attribute ") + name), H5Aclose);
  Id type(ok(H5Aget_type(a.get()), std::string("cannot read attribute ") + name), H5Tclose);
  Id space(ok(H5Aget_space(a.get()), std::string("cannot read attribute ") + name), H5Sclose);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) != 0 ||
      H5Sget_simple_extent_npoints(space.get()) != 1)
    throw Failure(std::string("attribute ") + name + " is not one fixed-length string");
  std::string buf(H5Tget_size(type.get()), '\0');
  ok(H5Aread(a.get(), type.get(), buf.data()), std::string("cannot read attribute ") + name);
  buf.resize(strnlen(buf.data(), buf.size()));
  return buf;
}

bool starts_with_hdf5_signature(const std::string& path) {
  static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  unsigned char head[8] = {};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t got = ::read(fd, head, 8);
  ::close(fd);
  return got == 8 && std::memcmp(head, sig, 8) == 0;
}

CampaignContents read_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw Failure(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw Failure("is a directory");
  if (::access(path.c_str(), R_OK) != 0) throw Failure(std::string("cannot read: ") + std::strerror(errno));

  Id fapl = file_access();
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (f < 0) {
    std::string reason = hdf5_reason();
    if (st.st_size == 0) throw Failure("the file is empty");
    if (!starts_with_hdf5_signature(path)) throw Failure("not an HDF5 file");
    throw Failure("not a readable HDF5 file (HDF5: " + reason + ")");
  }
  Id file(f, H5Fclose);

  htri_t tagged = ok(H5Aexists(file.get(), "kevo_schema"), "cannot read the root attributes");
  if (!tagged) throw Failure("not a kevo campaign file (the root has no kevo_schema attribute)");
  const std::string schema = read_text_attribute(file.get(), "kevo_schema");
  if (schema != kCampaignSchema)
    throw Failure("schema '" + schema + "' is not supported (this kevo reads " + kCampaignSchema + ")");

  CampaignContents c;
  for (size_t i = 0; i < std::size(kRootAttributes); ++i)
    c.*kRootMembers[i] = read_text_attribute(file.get(), kRootAttributes[i]);
  c.tasks = read_table(file.get(), "tasks", kTaskColumns);
  c.runs = read_table(file.get(), "runs", kRunColumns);
  c.variants = read_table(file.get(), "variants", kVariantColumns);
  c.measurements = read_table(file.get(), "measurements", kMeasurementColumns);
  std::vector<WorkloadRow> workloads = read_table(file.get(), "workloads", kWorkloadColumns);
  c.archive = read_table(file.get(), "archive", kArchiveColumns);
  c.generations = read_table(file.get(), "generations", kGenerationColumns);
  c.sources = read_table(file.get(), "sources", kSourceColumns);
  c.checkpoints = read_table(file.get(), "checkpoints", kCheckpointColumns);
  // Files of kevo before the llm policy have no /llm_samples.
  if (ok(H5Lexists(file.get(), "llm_samples", H5P_DEFAULT), "cannot look for /llm_samples"))
    c.llm_samples = read_table(file.get(), "llm_samples", kLlmSampleColumns);
  ok(file.close(), "cannot close the file");

  for (size_t r = 0; r < workloads.size(); ++r) {
    WorkloadRow& x = workloads[r];
    if (x.measurement < 0 || static_cast<uint64_t>(x.measurement) >= c.measurements.size())
      throw Failure("/workloads row " + std::to_string(r) + " is of measurement row " +
                    std::to_string(x.measurement) + ", which does not exist");
    MeasurementRecord& m = c.measurements[static_cast<size_t>(x.measurement)];
    if (m.variant != x.variant)
      throw Failure("/workloads row " + std::to_string(r) + " names variant " + std::to_string(x.variant) +
                    " but its measurement is of variant " + std::to_string(m.variant));
    m.workloads.push_back({x.workload, std::move(x.status), x.median_ms, x.eager_ms, x.compile_ms, x.floor_ms,
                           x.speedup, x.max_error_ratio});
  }
  if (std::string why = inconsistency(c); !why.empty()) throw Failure(why);
  return c;
}

}  // namespace

void write_campaign(const std::string& path, const CampaignContents& c, const WriteOptions& o) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  const std::string tmp = path + ".tmp";
  bool renamed = false;
  skip_hdf5_atexit();
  try {
    if (std::string why = inconsistency(c); !why.empty()) throw Failure("refusing to write: " + why);
    {
      QuietHdf5 quiet;
      chunk_cache().begin_write();
      write_file(tmp, c, o);
      chunk_cache().end_write();
    }
    sync_path(tmp, O_RDONLY, tmp);
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw Failure("cannot rename " + tmp + " over it: " + std::strerror(errno));
    renamed = true;
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

CampaignContents read_campaign(const std::string& path) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  skip_hdf5_atexit();
  try {
    QuietHdf5 quiet;
    return read_file(path);
  } catch (const Failure& e) {
    throw InputError(Location{path}, "campaign file", e.what());
  } catch (const std::bad_alloc&) {
    throw InputError(Location{path}, "campaign file", "a column is too large to read; the file is corrupt");
  } catch (const std::length_error&) {
    throw InputError(Location{path}, "campaign file", "a column is too large to read; the file is corrupt");
  }
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
