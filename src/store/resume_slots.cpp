// The two resume slots: written whole at each commit, read back checked.
#include "store/resume_slots.h"

#include <algorithm>

#include "store/checksum.h"
#include "store/hdf5_handles.h"
#include "store/table_io.h"

namespace kevo::store {

namespace {

const char* const kSlots[2] = {"state0", "state1"};

uint64_t checksum_of(const std::string& bytes) {
  Checksum sum;
  sum.add_bytes(bytes.data(), bytes.size());
  return sum.value();
}

}  // namespace

void create_resume_slots(hid_t file) {
  h5::Id g = h5::create_group(file, "resume");
  for (const char* name : kSlots) {
    const std::string where = std::string("/resume/") + name;
    h5::Id ds = h5::create_dataset(g.get(), where, name, H5T_STD_U8LE, 1, 0, false, true);
    h5::write_number_attribute(ds.get(), "generation", -1);
    h5::set_checksum_attribute(ds.get(), where, checksum_of(""));
  }
}

void write_resume_slot(hid_t file, const ResumeState& s) {
  if (s.generation < 0) throw h5::Failure("a resume state needs a generation");
  h5::Id g = h5::open_group(file, "resume");
  const char* name = kSlots[s.generation % 2];
  h5::DatasetFile d;
  d.where = std::string("/resume/") + name;
  d.ds = h5::open_dataset(g.get(), d.where, name, h5::Stored::bytes, &d.length, nullptr);
  h5::write_at(d, H5T_NATIVE_UINT8, 0, s.bytes.size(), s.bytes.data());
  h5::set_length(d, s.bytes.size());
  h5::Id a(h5::ok(H5Aopen(d.ds.get(), "generation", H5P_DEFAULT), "cannot open " + d.where + "'s generation"), H5Aclose);
  const int64_t generation = s.generation;
  h5::ok(H5Awrite(a.get(), H5T_NATIVE_INT64, &generation), "cannot write " + d.where + "'s generation");
  h5::set_checksum_attribute(d.ds.get(), d.where, checksum_of(s.bytes));
}

std::vector<ResumeState> read_resume_slots(hid_t file) {
  std::vector<ResumeState> out;
  if (!h5::ok(H5Lexists(file, "resume", H5P_DEFAULT), "cannot look for /resume")) return out;
  h5::Id g = h5::open_group(file, "resume");
  for (const char* name : kSlots) {
    const std::string where = std::string("/resume/") + name;
    hsize_t n = 0;
    h5::Id ds = h5::open_dataset(g.get(), where, name, h5::Stored::bytes, &n, nullptr);
    const int64_t generation = h5::read_number_attribute(ds.get(), "generation");
    if (generation < 0) continue;
    ResumeState s;
    s.generation = static_cast<int32_t>(generation);
    s.bytes.resize(n);
    h5::read_range(ds.get(), where, H5T_NATIVE_UINT8, 0, n, s.bytes.data());
    h5::verify_checksum(ds.get(), where, checksum_of(s.bytes));
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const ResumeState& a, const ResumeState& b) { return a.generation < b.generation; });
  return out;
}

}  // namespace kevo::store
