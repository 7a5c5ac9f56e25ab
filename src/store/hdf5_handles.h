// What every part of the campaign file's HDF5 code shares: the failure type and HDF5's error
// stack in one line, identifiers closed on scope exit, fixed-length text, attributes, and the
// file access settings (file format bounds, the journaling driver).
#pragma once

#include <hdf5.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "store/journal_driver.h"

namespace kevo::store::h5 {

// A failure inside the store; the public functions add the path and pick the exception type.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The serial HDF5 library is not thread-safe, and its error-printing switch is process-wide.
std::mutex& mutex();

// The innermost description on HDF5's error stack (where the failure was detected), then clears it.
std::string reason();

template <class T>
T ok(T result, const std::string& what) {
  if (result < 0) throw Failure(what + " (HDF5: " + reason() + ")");
  return result;
}

// HDF5 1.10 leaks free-list blocks on some error paths and then prints "infinite loop closing
// library" from its atexit hook after kevo's own error; every file kevo opens is closed
// explicitly, so the hook is turned off when kevo is the first to use HDF5.
void skip_atexit();

// Turns HDF5's own printing of its error stack off for the lifetime of the object.
class Quiet {
 public:
  Quiet();
  ~Quiet();
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;

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

Id plist(hid_t cls);
Id space_1d(hsize_t n);
// Fixed-length UTF-8 strings of `size` bytes, NUL-padded (variable-length strings live in HDF5's
// global heap, which 1.10 reads without bounds checks).
Id text_type(size_t size);

// File access through the journaling driver (`durable`: commits synced): HDF5 1.8's format at the
// earliest (superblock version 2, checksummed: no "open for writing" flag that a killed writer
// would leave set and that would refuse every later reader, h5py included) and 1.10's at the
// latest; every object closed before the file counts as closed; HDF5's own file locks off (the
// driver takes its own).
Id file_access(JournalMode mode, bool durable = true);

void write_text_attribute(hid_t obj, const char* name, const std::string& value);
// A root attribute of fixed-length text; a missing one is "missing root attribute NAME".
std::string read_text_attribute(hid_t obj, const char* name);
bool has_attribute(hid_t obj, const char* name);
void write_number_attribute(hid_t obj, const char* name, int64_t value);
// An int32 attribute, created or overwritten.
void set_int32_attribute(hid_t obj, const char* name, int32_t value);
int64_t read_number_attribute(hid_t obj, const char* name);

// fsync of a path (a file or, with O_DIRECTORY, a folder).
void sync_path(const std::string& path, int flags, const std::string& what);

bool starts_with_hdf5_signature(const std::string& path);

}  // namespace kevo::store::h5
