// The untyped steps of table I/O: groups, extendible datasets, writes at an offset, range reads,
// checksum attributes, kept rows, pooled rows read alone, text columns widened.
#include "store/table_io.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace kevo::store::h5 {

namespace {

// Chunks of about 32 KB for row columns (a generation appends a few KB to each, and its last,
// partly filled chunk is compressed again at every commit) and 256 KB for pooled data (sources:
// megabytes a generation).
constexpr hsize_t kColumnChunkBytes = hsize_t{32} << 10, kPoolChunkBytes = hsize_t{256} << 10;
constexpr const char* kChecksumAttr = "kevo_checksum";
constexpr const char* kKeptLengthAttr = "kevo_kept_length";
constexpr const char* kKeptChecksumAttr = "kevo_kept_checksum";

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

const char* stored_name(Stored s) {
  switch (s) {
    case Stored::integers: return "integers";
    case Stored::floats: return "floats";
    case Stored::text: return "fixed-length strings";
    case Stored::bytes: return "uint8 bytes";
  }
  return "";
}

void set_u64_attribute(hid_t obj, const char* name, uint64_t value, const std::string& where) {
  if (ok(H5Aexists(obj, name), "cannot read " + where) > 0) {
    Id a(ok(H5Aopen(obj, name, H5P_DEFAULT), "cannot open " + where + "'s " + name), H5Aclose);
    ok(H5Awrite(a.get(), H5T_NATIVE_UINT64, &value), "cannot write " + where + "'s " + name);
    return;
  }
  Id scalar(ok(H5Screate(H5S_SCALAR), "cannot create a dataspace"), H5Sclose);
  Id a(ok(H5Acreate2(obj, name, H5T_STD_U64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
          "cannot create " + where + "'s " + name),
       H5Aclose);
  ok(H5Awrite(a.get(), H5T_NATIVE_UINT64, &value), "cannot write " + where + "'s " + name);
}

std::optional<uint64_t> u64_attribute(hid_t obj, const char* name, const std::string& where) {
  if (!ok(H5Aexists(obj, name), "cannot read " + where)) return std::nullopt;
  Id a(ok(H5Aopen(obj, name, H5P_DEFAULT), "cannot read " + where + "'s " + name), H5Aclose);
  Id type(ok(H5Aget_type(a.get()), "cannot read " + where + "'s " + name), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER) throw Failure(where + "'s " + name + " is not an integer");
  uint64_t v = 0;
  ok(H5Aread(a.get(), H5T_NATIVE_UINT64, &v), "cannot read " + where + "'s " + name);
  return v;
}

}  // namespace

Id open_group(hid_t file, const std::string& name) {
  htri_t exists = ok(H5Lexists(file, name.c_str(), H5P_DEFAULT), "cannot look up table /" + name);
  if (!exists) throw Failure("missing table /" + name);
  return Id(ok(H5Gopen2(file, name.c_str(), H5P_DEFAULT), "/" + name + " is not a readable group"), H5Gclose);
}

Id create_group(hid_t file, const std::string& name) {
  Id gcpl = plist(H5P_GROUP_CREATE);
  ok(H5Pset_obj_track_times(gcpl.get(), false), "cannot set group properties");
  return Id(ok(H5Gcreate2(file, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), "cannot create /" + name),
            H5Gclose);
}

Id create_dataset(hid_t group, const std::string& where, const std::string& name, hid_t type, size_t elem,
                  int level, bool shuffle, bool pool) {
  Id dcpl = plist(H5P_DATASET_CREATE), dapl = plist(H5P_DATASET_ACCESS);
  ok(H5Pset_obj_track_times(dcpl.get(), false), "cannot set dataset properties");
  const hsize_t chunk = std::max<hsize_t>(1, (pool ? kPoolChunkBytes : kColumnChunkBytes) / elem);
  ok(H5Pset_chunk(dcpl.get(), 1, &chunk), "cannot chunk " + where);
  if (level > 0 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
    if (shuffle && elem > 1) ok(H5Pset_shuffle(dcpl.get()), "cannot set the shuffle filter on " + where);
    ok(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(level)), "cannot compress " + where);
  }
  ok(H5Pset_fletcher32(dcpl.get()), "cannot checksum the chunks of " + where);
  // The last, partly filled chunk stays cached (uncompressed) between appends; nothing more, since
  // a writer keeps every table open for a whole campaign.
  ok(H5Pset_chunk_cache(dapl.get(), H5D_CHUNK_CACHE_NSLOTS_DEFAULT, appending_cache_bytes(pool), 1.0),
     "cannot set the chunk cache of " + where);
  const hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  Id space(ok(H5Screate_simple(1, &zero, &unlimited), "cannot create a dataspace"), H5Sclose);
  return Id(ok(H5Dcreate2(group, name.c_str(), type, space.get(), H5P_DEFAULT, dcpl.get(), dapl.get()),
               "cannot create " + where),
            H5Dclose);
}

size_t appending_cache_bytes(bool pool) { return 2 * (pool ? kPoolChunkBytes : kColumnChunkBytes); }

Id open_dataset(hid_t group, const std::string& where, const std::string& name, Stored kind, hsize_t* length,
                size_t* width, size_t cache_bytes) {
  htri_t exists = ok(H5Lexists(group, name.c_str(), H5P_DEFAULT), "cannot look up " + where);
  if (!exists) throw Failure("missing column " + where);
  Id dapl = plist(H5P_DATASET_ACCESS);
  ok(H5Pset_chunk_cache(dapl.get(), H5D_CHUNK_CACHE_NSLOTS_DEFAULT, cache_bytes, 1.0), "cannot set the chunk cache");
  Id ds(ok(H5Dopen2(group, name.c_str(), dapl.get()), where + " is not a readable dataset"), H5Dclose);
  Id space(ok(H5Dget_space(ds.get()), "cannot read " + where), H5Sclose);
  int rank = ok(H5Sget_simple_extent_ndims(space.get()), "cannot read " + where);
  if (rank != 1) throw Failure(where + " has " + std::to_string(rank) + " dimensions, not 1");
  ok(H5Sget_simple_extent_dims(space.get(), length, nullptr), "cannot read " + where);

  Id type(ok(H5Dget_type(ds.get()), "cannot read " + where), H5Tclose);
  H5T_class_t cls = H5Tget_class(type.get());
  std::string found = class_name(cls);
  bool fits = false;
  switch (kind) {
    case Stored::integers: fits = cls == H5T_INTEGER; break;
    case Stored::floats: fits = cls == H5T_FLOAT; break;
    case Stored::bytes:
      fits = cls == H5T_INTEGER && H5Tget_size(type.get()) == 1;
      if (cls == H5T_INTEGER && !fits) found = std::to_string(H5Tget_size(type.get())) + "-byte integers";
      break;
    case Stored::text:
      fits = cls == H5T_STRING && H5Tis_variable_str(type.get()) == 0;
      if (cls == H5T_STRING && !fits) found = "variable-length strings";
      if (width) *width = H5Tget_size(type.get());
      break;
  }
  if (!fits) throw Failure(where + " holds " + found + ", not " + stored_name(kind));
  return ds;
}

void write_at(const DatasetFile& d, hid_t mem_type, hsize_t first, hsize_t count, const void* buf) {
  if (count == 0) return;
  Id before(ok(H5Dget_space(d.ds.get()), "cannot write " + d.where), H5Sclose);
  hsize_t size = 0;
  ok(H5Sget_simple_extent_dims(before.get(), &size, nullptr), "cannot write " + d.where);
  if (size < first + count) {
    size = first + count;
    ok(H5Dset_extent(d.ds.get(), &size), "cannot extend " + d.where);
  }
  Id file_space(ok(H5Dget_space(d.ds.get()), "cannot write " + d.where), H5Sclose);
  ok(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &first, nullptr, &count, nullptr), "cannot write " + d.where);
  Id mem_space = space_1d(count);
  ok(H5Dwrite(d.ds.get(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buf), "cannot write " + d.where);
}

void read_range(hid_t ds, const std::string& where, hid_t mem_type, hsize_t first, hsize_t count, void* buf) {
  if (count == 0) return;
  Id file_space(ok(H5Dget_space(ds), "cannot read " + where), H5Sclose);
  ok(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &first, nullptr, &count, nullptr), "cannot read " + where);
  Id mem_space = space_1d(count);
  ok(H5Dread(ds, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buf), "cannot read " + where);
}

void read_points(hid_t ds, const std::string& where, hid_t mem_type, const std::vector<hsize_t>& points, void* buf) {
  if (points.empty()) return;
  Id file_space(ok(H5Dget_space(ds), "cannot read " + where), H5Sclose);
  ok(H5Sselect_elements(file_space.get(), H5S_SELECT_SET, points.size(), points.data()), "cannot read " + where);
  Id mem_space = space_1d(points.size());
  ok(H5Dread(ds, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buf), "cannot read " + where);
}

std::optional<uint64_t> checksum_attribute(hid_t ds, const std::string& where) {
  return u64_attribute(ds, kChecksumAttr, where);  // none: a column written or edited by another tool
}

void set_checksum_attribute(hid_t ds, const std::string& where, uint64_t sum) {
  set_u64_attribute(ds, kChecksumAttr, sum, where);
}

void verify_checksum(hid_t ds, const std::string& where, uint64_t computed) {
  std::optional<uint64_t> stored = checksum_attribute(ds, where);
  if (stored && *stored != computed) throw Failure(where + " does not match its checksum: the file is corrupt");
}

void set_length(DatasetFile& d, hsize_t length) {
  ok(H5Dset_extent(d.ds.get(), &length), "cannot resize " + d.where);
  d.length = length;
}

void keep(TableFile& t) {
  for (DatasetFile& d : t.datasets) {
    set_u64_attribute(d.ds.get(), kKeptLengthAttr, d.length, d.where);
    set_u64_attribute(d.ds.get(), kKeptChecksumAttr, d.sum, d.where);
  }
}

void drop_unkept(TableFile& t) {
  bool any = false;
  for (DatasetFile& d : t.datasets) {
    const hsize_t kept = u64_attribute(d.ds.get(), kKeptLengthAttr, d.where).value_or(0);
    const uint64_t sum = u64_attribute(d.ds.get(), kKeptChecksumAttr, d.where).value_or(Checksum::kStart);
    if (kept > d.length) throw Failure(d.where + " is shorter than its kept rows: the file is corrupt");
    if (kept == d.length) continue;
    set_length(d, kept);
    d.sum = sum;
    set_checksum_attribute(d.ds.get(), d.where, d.sum);
    any = true;
  }
  if (!any) return;
  for (const DatasetFile& d : t.datasets)
    if (!d.pool_data) {
      t.rows = d.length;
      break;
    }
}

void widen_text(TableFile& t, DatasetFile& d, size_t width) {
  // Twice as wide as needed: a column grows in few steps.
  width = std::max(width, 2 * d.width);
  std::string old(d.length * d.width, '\0'), wide(d.length * width, '\0');
  Id old_type = text_type(d.width);
  read_range(d.ds.get(), d.where, old_type.get(), 0, d.length, old.data());
  for (hsize_t i = 0; i < d.length; ++i) std::memcpy(&wide[i * width], &old[i * d.width], d.width);
  const std::string tmp = d.name + ".widening";
  Id type = text_type(width);
  Id ds = create_dataset(t.group.get(), d.where, tmp, type.get(), width, t.compression, false, false);
  DatasetFile w;
  w.ds = std::move(ds);
  w.where = d.where;
  write_at(w, type.get(), 0, d.length, wide.data());
  set_checksum_attribute(w.ds.get(), d.where, d.sum);
  for (const char* a : {kKeptLengthAttr, kKeptChecksumAttr})
    if (std::optional<uint64_t> v = u64_attribute(d.ds.get(), a, d.where)) set_u64_attribute(w.ds.get(), a, *v, d.where);
  d.ds = Id();
  ok(H5Ldelete(t.group.get(), d.name.c_str(), H5P_DEFAULT), "cannot replace " + d.where);
  ok(H5Lmove(t.group.get(), tmp.c_str(), t.group.get(), d.name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
     "cannot replace " + d.where);
  d.ds = std::move(w.ds);
  d.width = width;
}

std::string FixedText::value(hsize_t i) const {
  const char* p = bytes.data() + i * width;
  return std::string(p, strnlen(p, width));
}

FixedText read_text_column(hid_t group, const char* table, const std::string& name) {
  FixedText t;
  const std::string where = detail::path_of(table, name);
  Id ds = open_dataset(group, where, name, Stored::text, &t.n, &t.width);
  Id type(ok(H5Dget_type(ds.get()), "cannot read " + where), H5Tclose);
  t.bytes.assign(t.n * t.width, '\0');
  read_range(ds.get(), where, type.get(), 0, t.n, t.bytes.data());
  Checksum sum;
  for (hsize_t i = 0; i < t.n; ++i) {
    const char* p = t.bytes.data() + i * t.width;
    sum.add_bytes(p, strnlen(p, t.width));
  }
  verify_checksum(ds.get(), where, sum.value());
  return t;
}

std::vector<std::string> read_pooled_rows(hid_t file, const char* table, const std::string& field,
                                          const std::vector<hsize_t>& rows) {
  Id g = open_group(file, table);
  std::vector<int64_t> offset = read_number_column<int64_t>(g.get(), table, field + "_offset");
  std::vector<int64_t> length = read_number_column<int64_t>(g.get(), table, field + "_length");
  if (offset.size() != length.size())
    throw Failure("table /" + std::string(table) + ": " + field + "_offset and " + field + "_length differ in length");
  const std::string where = detail::path_of(table, field + "_data");
  hsize_t n = 0;
  Id data = open_dataset(g.get(), where, field + "_data", Stored::bytes, &n, nullptr);
  std::vector<std::string> out;
  for (hsize_t r : rows) {
    if (r >= offset.size()) throw Failure("table /" + std::string(table) + " has no row " + std::to_string(r));
    const int64_t at = offset[r], len = length[r];
    if (at < 0 || len < 0 || static_cast<uint64_t>(at) > n || static_cast<uint64_t>(len) > n - static_cast<uint64_t>(at))
      throw Failure(detail::path_of(table, field + "_offset") + " row " + std::to_string(r) + ": elements " +
                    std::to_string(at) + " + " + std::to_string(len) + " lie outside " + where);
    std::string s(static_cast<size_t>(len), '\0');
    read_range(data.get(), where, H5T_NATIVE_UINT8, static_cast<hsize_t>(at), static_cast<hsize_t>(len), s.data());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kevo::store::h5
