// HDF5 errors, handles, text types, attributes and file access settings of the campaign file.
#include "store/hdf5_handles.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace kevo::store::h5 {

std::mutex& mutex() {
  static std::mutex m;
  return m;
}

namespace {

herr_t collect_error(unsigned, const H5E_error2_t* e, void* data) {
  if (e->desc && *e->desc) static_cast<std::vector<std::string>*>(data)->push_back(e->desc);
  return 0;
}

}  // namespace

std::string reason() {
  std::vector<std::string> descs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &descs);
  H5Eclear2(H5E_DEFAULT);
  return descs.empty() ? std::string("HDF5 error") : descs.back();
}

void skip_atexit() {
  static const bool once = [] {
    H5dont_atexit();
    return true;
  }();
  (void)once;
}

Quiet::Quiet() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
Quiet::~Quiet() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

Id plist(hid_t cls) { return Id(ok(H5Pcreate(cls), "cannot create a property list"), H5Pclose); }
Id space_1d(hsize_t n) { return Id(ok(H5Screate_simple(1, &n, nullptr), "cannot create a dataspace"), H5Sclose); }

Id text_type(size_t size) {
  Id t(ok(H5Tcopy(H5T_C_S1), "cannot create a string type"), H5Tclose);
  ok(H5Tset_size(t.get(), std::max<size_t>(size, 1)), "cannot create a string type");
  ok(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), "cannot create a string type");
  ok(H5Tset_cset(t.get(), H5T_CSET_UTF8), "cannot create a string type");
  return t;
}

Id file_access(JournalMode mode, bool durable) {
  Id fapl = plist(H5P_FILE_ACCESS);
  ok(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V110), "cannot set the file format");
  ok(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_SEMI), "cannot set the close degree");
#if H5_VERSION_GE(1, 10, 7)
  ok(H5Pset_file_locking(fapl.get(), false, true), "cannot turn file locking off");
#endif
  if (mode == JournalMode::write) {
    // A writer keeps the file open for a whole campaign: its metadata cache stays small (appends
    // touch the last node of each chunk index and the tables' object headers).
    H5AC_cache_config_t mdc;
    mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    ok(H5Pget_mdc_config(fapl.get(), &mdc), "cannot read the metadata cache settings");
    mdc.set_initial_size = true;
    mdc.initial_size = 1 << 20;
    mdc.min_size = 1 << 20;
    mdc.max_size = 4 << 20;
    ok(H5Pset_mdc_config(fapl.get(), &mdc), "cannot set the metadata cache");
  }
  try {
    use_journal_driver(fapl.get(), mode, durable);
  } catch (const std::runtime_error& e) {
    throw Failure(e.what());
  }
  return fapl;
}

namespace {

void write_attribute(hid_t obj, const char* name, hid_t file_type, hid_t mem_type, const void* value) {
  Id scalar(ok(H5Screate(H5S_SCALAR), "cannot create a dataspace"), H5Sclose);
  Id a(ok(H5Acreate2(obj, name, file_type, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
          std::string("cannot create attribute ") + name),
       H5Aclose);
  ok(H5Awrite(a.get(), mem_type, value), std::string("cannot write attribute ") + name);
}

}  // namespace

void write_text_attribute(hid_t obj, const char* name, const std::string& value) {
  if (value.find('\0') != std::string::npos) throw Failure(std::string("attribute ") + name + " contains a NUL byte");
  Id type = text_type(value.size());
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  write_attribute(obj, name, type.get(), type.get(), padded.data());
}

bool has_attribute(hid_t obj, const char* name) {
  return ok(H5Aexists(obj, name), std::string("cannot look up attribute ") + name) > 0;
}

std::string read_text_attribute(hid_t obj, const char* name) {
  if (!has_attribute(obj, name)) throw Failure(std::string("missing root attribute ") + name);
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

void write_number_attribute(hid_t obj, const char* name, int64_t value) {
  write_attribute(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void set_int32_attribute(hid_t obj, const char* name, int32_t value) {
  if (has_attribute(obj, name)) {
    Id a(ok(H5Aopen(obj, name, H5P_DEFAULT), std::string("cannot open attribute ") + name), H5Aclose);
    ok(H5Awrite(a.get(), H5T_NATIVE_INT32, &value), std::string("cannot write attribute ") + name);
    return;
  }
  write_attribute(obj, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &value);
}

int64_t read_number_attribute(hid_t obj, const char* name) {
  Id a(ok(H5Aopen(obj, name, H5P_DEFAULT), std::string("cannot open attribute ") + name), H5Aclose);
  Id type(ok(H5Aget_type(a.get()), std::string("cannot read attribute ") + name), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER) throw Failure(std::string("attribute ") + name + " is not an integer");
  int64_t v = 0;
  ok(H5Aread(a.get(), H5T_NATIVE_INT64, &v), std::string("cannot read attribute ") + name);
  return v;
}

void sync_path(const std::string& p, int flags, const std::string& what) {
  int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  if (fd < 0) throw Failure("cannot open " + what + " to sync it: " + std::strerror(errno));
  int r = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (r != 0) throw Failure("cannot sync " + what + ": " + std::strerror(err));
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

}  // namespace kevo::store::h5
