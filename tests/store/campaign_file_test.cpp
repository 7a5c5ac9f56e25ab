// The campaign file: every field round-trips; a damaged, foreign or inconsistent file is a clear
// one-line InputError and is never modified; a write killed at any moment leaves a readable file.
#include "store/campaign_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "core/error.h"
#include "tests/store/describe_campaign.h"
#include "tests/store/sample_campaign.h"

namespace kevo::store {
namespace {

using testing::describe;
using testing::sample_campaign;
namespace fs = std::filesystem;

// ---- helpers -------------------------------------------------------------------------------

std::string bytes_of(const std::string& path) {
  if (!fs::is_regular_file(path)) return "";
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void put_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class CampaignFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "kevo_campaign_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }

  // A valid file of the sample campaign, written at `name`.
  std::string sample_file(const std::string& name = "campaign.h5") {
    std::string path = file(name);
    write_campaign(path, sample_campaign());
    return path;
  }

  // The InputError that reading `path` gives; checks it is one line naming the file and that the
  // file's bytes are unchanged.
  std::string read_error(const std::string& path) {
    const std::string before = bytes_of(path);
    try {
      read_campaign(path);
      ADD_FAILURE() << "read_campaign(" << path << ") succeeded";
    } catch (const InputError& e) {
      std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.rfind(path + ": campaign file: ", 0), 0u) << what;
      EXPECT_TRUE(bytes_of(path) == before) << "read_campaign changed " << path;
      return what;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an InputError: " << e.what();
    }
    return "";
  }

  std::string dir_;
};

// ---- editing files behind kevo's back (HDF5's C API, as another tool would) -----------------

class Edit {
 public:
  explicit Edit(const std::string& path) : f_(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)) {
    EXPECT_GE(f_, 0) << path;
  }
  ~Edit() { H5Fclose(f_); }
  hid_t file() const { return f_; }

  void remove(const char* link) { EXPECT_GE(H5Ldelete(f_, link, H5P_DEFAULT), 0) << link; }

  void replace_root_text(const char* name, const std::string& value) {
    if (H5Aexists(f_, name) > 0) H5Adelete(f_, name);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, value.size());
    H5Tset_cset(t, H5T_CSET_UTF8);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f_, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(H5Awrite(a, t, value.data()), 0);
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
  }

  // Replaces dataset `name` by an int64 column of `values` (no checksum).
  void replace_ints(const char* name, const std::vector<int64_t>& values) {
    remove(name);
    hsize_t n = values.size();
    hid_t s = H5Screate_simple(1, &n, nullptr);
    hid_t d = H5Dcreate2(f_, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    H5Dclose(d);
    H5Sclose(s);
  }

  // Overwrites the values of an integer dataset in place, keeping (or dropping) its checksum.
  void overwrite_ints(const char* name, const std::vector<int64_t>& values, bool drop_checksum) {
    hid_t d = H5Dopen2(f_, name, H5P_DEFAULT);
    EXPECT_GE(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    if (drop_checksum) {
      EXPECT_GE(H5Adelete(d, "kevo_checksum"), 0);
    }
    H5Dclose(d);
  }

 private:
  hid_t f_;
};

std::vector<int64_t> ints_of(const std::string& path, const char* name) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  hid_t s = H5Dget_space(d);
  std::vector<int64_t> v(static_cast<size_t>(H5Sget_simple_extent_npoints(s)));
  H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Sclose(s);
  H5Dclose(d);
  H5Fclose(f);
  return v;
}

// ---- round trips ---------------------------------------------------------------------------

TEST_F(CampaignFile, RoundTripsEveryField) {
  CampaignContents c = sample_campaign();
  write_campaign(file("c.h5"), c);
  EXPECT_EQ(describe(read_campaign(file("c.h5"))), describe(c));
  EXPECT_FALSE(fs::exists(file("c.h5.tmp")));
}

// Variable-length data would live in HDF5's global heap ("GCOL" blocks), which HDF5 1.10 reads
// without bounds checks: damage there crashed the reader instead of failing it.
TEST_F(CampaignFile, HoldsNoVariableLengthData) {
  const std::string bytes = bytes_of(sample_file());
  EXPECT_EQ(bytes.find("GCOL"), std::string::npos);
}

// Every HDF5 object kevo opens is closed again, on success and on failure.
TEST_F(CampaignFile, LeavesNoHdf5ObjectOpen) {
  auto open_ids = [] { return H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL); };  // files, groups, datasets, attributes
  std::string path = sample_file();
  const ssize_t before = open_ids();
  read_campaign(path);
  write_campaign(path, sample_campaign(3));
  put_bytes(file("cut.h5"), bytes_of(path).substr(0, 5000));
  EXPECT_THROW(read_campaign(file("cut.h5")), InputError);
  std::vector<int64_t> gen = ints_of(path, "/variants/generation");
  gen[1] += 1;
  Edit(path).overwrite_ints("/variants/generation", gen, false);
  EXPECT_THROW(read_campaign(path), InputError);
  fs::create_directory(path + ".tmp");
  EXPECT_THROW(write_campaign(path, sample_campaign(3)), std::runtime_error);
  EXPECT_EQ(open_ids(), before);
}

TEST_F(CampaignFile, RoundTripsAnEmptyCampaign) {
  CampaignContents c;
  write_campaign(file("c.h5"), c);
  EXPECT_EQ(describe(read_campaign(file("c.h5"))), describe(c));
}

TEST_F(CampaignFile, RoundTripsTenThousandVariants) {
  CampaignContents c = sample_campaign(10000);
  auto t0 = std::chrono::steady_clock::now();
  write_campaign(file("c.h5"), c);
  auto t1 = std::chrono::steady_clock::now();
  CampaignContents back = read_campaign(file("c.h5"));
  auto t2 = std::chrono::steady_clock::now();
  EXPECT_EQ(back.variants.size(), 10000u);
  EXPECT_EQ(describe(back), describe(c));
  std::printf("10k variants, %zu sources: write %.0f ms, read %.0f ms, %.1f MB\n", c.sources.size(),
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count(), fs::file_size(file("c.h5")) / 1e6);
}

// What a report, an export, a resume and a summary read of a large file, read in part, is what the
// whole file holds.
TEST_F(CampaignFile, PartsReadAloneAreTheWholeFilesRows) {
  const CampaignContents c = sample_campaign(300);
  const std::string path = file("c.h5");
  write_campaign(path, c);
  CampaignContents only;
  only.variants = {c.variants[0], c.variants[7], c.variants[299]};
  EXPECT_EQ(describe(only), describe([&] {
              CampaignContents k;
              k.variants = read_variants(path, {c.variants[299].id, c.variants[0].id, c.variants[7].id, 123456789});
              return k;
            }()));
  const std::map<std::string, std::string> src = read_sources(path, {c.sources[3].hash, c.sources.back().hash, "x"});
  EXPECT_EQ(src, (std::map<std::string, std::string>{{c.sources[3].hash, c.sources[3].text},
                                                      {c.sources.back().hash, c.sources.back().text}}));
  size_t n = 0;
  scan_variant_keys(path, [&](const VariantKey& k) {
    const VariantRecord& v = c.variants[n++];
    EXPECT_TRUE(k.id == v.id && k.run == v.run && k.duplicate_of == v.duplicate_of && k.source_hash == v.source_hash);
  });
  EXPECT_EQ(n, c.variants.size());
  ReadOptions o;
  o.sources = ReadOptions::Sources::hashes;
  o.checkpoint_bytes = ReadOptions::Checkpoints::none;
  CampaignContents k = read_campaign(path, o);
  ASSERT_EQ(k.sources.size(), c.sources.size());
  EXPECT_EQ(k.sources[5].hash, c.sources[5].hash);
  EXPECT_TRUE(k.sources[5].text.empty());
  EXPECT_EQ(k.checkpoints.size(), c.checkpoints.size());
  EXPECT_TRUE(k.checkpoints[0].bytes.empty());
  EXPECT_EQ(describe([&] {
              CampaignContents x = c;
              x.sources.clear();
              x.checkpoints.clear();
              return x;
            }()),
            describe([&] {
              k.sources.clear();
              k.checkpoints.clear();
              return k;
            }()));
}

TEST_F(CampaignFile, UncompressedFilesReadTheSame) {
  CampaignContents c = sample_campaign(3000);
  write_campaign(file("c.h5"), c, {true, 0});
  EXPECT_EQ(describe(read_campaign(file("c.h5"))), describe(c));
}

TEST_F(CampaignFile, SourcesCanBeLeftOut) {
  CampaignContents c = sample_campaign();
  write_campaign(file("c.h5"), c, {false, 6});
  CampaignContents back = read_campaign(file("c.h5"));
  EXPECT_TRUE(back.sources.empty());
  c.sources.clear();
  EXPECT_EQ(describe(back), describe(c));
}

TEST_F(CampaignFile, RewritingReplacesTheWholeFile) {
  CampaignContents big = sample_campaign(500), small = sample_campaign(3);
  write_campaign(file("c.h5"), big);
  write_campaign(file("c.h5"), small);
  EXPECT_EQ(describe(read_campaign(file("c.h5"))), describe(small));
  EXPECT_FALSE(fs::exists(file("c.h5.tmp")));
}

// Successive writes reuse the compressed chunks they wrote before; a chunk whose bytes changed
// (here one byte of one source, and a table that grew) is written anew.
TEST_F(CampaignFile, SuccessiveWritesOfAGrowingCampaignReadBackExactly) {
  CampaignContents c = sample_campaign(3000);  // about 10 MB of sources: ten chunks
  write_campaign(file("c.h5"), c);
  EXPECT_EQ(describe(read_campaign(file("c.h5"))), describe(c));
  const std::string original = c.sources[700].text;
  c.sources[700].text[100] = '#';
  CampaignContents more = sample_campaign(3100);
  c.variants = more.variants;
  c.measurements = more.measurements;
  c.sources.push_back({"extra", std::string(3 << 20, 'x')});
  write_campaign(file("c.h5"), c);
  EXPECT_EQ(describe(read_campaign(file("c.h5"))), describe(c));
  c.sources[700].text = original;
  write_campaign(file("d.h5"), c);
  EXPECT_EQ(describe(read_campaign(file("d.h5"))), describe(c));
  write_campaign(file("d.h5"), c, {true, 1});
  EXPECT_EQ(describe(read_campaign(file("d.h5"))), describe(c));
}

TEST_F(CampaignFile, ALeftoverTemporaryFileIsReplaced) {
  put_bytes(file("c.h5.tmp"), "half of an interrupted write");
  CampaignContents c = sample_campaign(5);
  write_campaign(file("c.h5"), c);
  EXPECT_EQ(describe(read_campaign(file("c.h5"))), describe(c));
  EXPECT_FALSE(fs::exists(file("c.h5.tmp")));
}

// ---- files that are not (whole, consistent) campaign files -----------------------------------

TEST_F(CampaignFile, AMissingFileIsAnError) {
  try {
    read_campaign(file("none.h5"));
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), file("none.h5") + ": campaign file: No such file or directory");
  }
  EXPECT_FALSE(fs::exists(file("none.h5")));
}

TEST_F(CampaignFile, AFolderIsAnError) { EXPECT_NE(read_error(dir_).find("is a directory"), std::string::npos); }

TEST_F(CampaignFile, AnEmptyFileIsAnError) {
  put_bytes(file("empty.h5"), "");
  EXPECT_NE(read_error(file("empty.h5")).find("the file is empty"), std::string::npos);
}

TEST_F(CampaignFile, ATextFileIsNotHdf5) {
  put_bytes(file("c.h5"), "{\"campaign\": \"this is JSON\"}\n");
  EXPECT_NE(read_error(file("c.h5")).find("not an HDF5 file"), std::string::npos);
}

TEST_F(CampaignFile, RandomBytesAreNotHdf5) {
  std::string junk;
  uint32_t x = 12345;
  for (int i = 0; i < 100000; ++i) junk.push_back(static_cast<char>((x = x * 1664525u + 1013904223u) >> 24));
  put_bytes(file("c.h5"), junk);
  EXPECT_NE(read_error(file("c.h5")).find("not an HDF5 file"), std::string::npos);
}

TEST_F(CampaignFile, AnotherHdf5FileIsNotACampaign) {
  hid_t f = H5Fcreate(file("other.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(f);
  EXPECT_NE(read_error(file("other.h5")).find("not a kevo campaign file (the root has no kevo_schema attribute)"),
            std::string::npos);
}

TEST_F(CampaignFile, ATruncatedFileIsAnError) {
  const std::string whole = bytes_of(sample_file());
  ASSERT_GT(whole.size(), 4096u);
  for (size_t keep : {size_t{8}, size_t{100}, size_t{2048}, whole.size() / 4, whole.size() / 2,
                      whole.size() * 3 / 4, whole.size() - 1}) {
    SCOPED_TRACE("kept " + std::to_string(keep) + " of " + std::to_string(whole.size()) + " bytes");
    put_bytes(file("cut.h5"), whole.substr(0, keep));
    std::string what = read_error(file("cut.h5"));
    if (keep >= 2048) {
      EXPECT_NE(what.find("truncated file"), std::string::npos) << what;
    }
  }
}

// Damage anywhere in the file is either reported or lands where no data lives; it never reads
// back as different data.
TEST_F(CampaignFile, CorruptBytesAreReportedNeverReadAsData) {
  const CampaignContents c = sample_campaign();
  const std::string expected = describe(c);
  const std::string whole = bytes_of(sample_file());
  int reported = 0, harmless = 0;
  const int trials = 97;
  for (int t = 0; t < trials; ++t) {
    size_t at = whole.size() * t / trials;
    SCOPED_TRACE("16 bytes damaged at " + std::to_string(at) + " of " + std::to_string(whole.size()));
    std::string damaged = whole;
    for (size_t i = at; i < std::min(at + 16, damaged.size()); ++i) damaged[i] = static_cast<char>(damaged[i] ^ 0x5A);
    put_bytes(file("bad.h5"), damaged);
    try {
      CampaignContents back = read_campaign(file("bad.h5"));
      EXPECT_EQ(describe(back), expected);
      ++harmless;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      ++reported;
    }
    EXPECT_TRUE(bytes_of(file("bad.h5")) == damaged);
  }
  // Most of a small file is its chunk indexes' B-tree nodes, allocated whole and mostly empty.
  std::printf("damage at %d offsets: %d reported, %d in unused bytes\n", trials, reported, harmless);
  EXPECT_GT(reported, 0);
}

// Damage inside a column's stored chunk is always reported: by the chunk's Fletcher-32 checksum
// (what protects a source read alone) or the column's.
TEST_F(CampaignFile, DamageInsideAColumnsChunkIsAlwaysReported) {
#if !H5_VERSION_GE(1, 10, 5)
  GTEST_SKIP() << "SKIPPED: H5Dget_chunk_info, which finds a chunk's bytes, needs HDF5 1.10.5";
#else
  const std::string path = sample_file();
  const std::string whole = bytes_of(path);
  int checked = 0;
  for (const char* column : {"/sources/text_data", "/variants/id", "/measurements/fitness", "/variants/source_hash"}) {
    haddr_t addr = 0;
    hsize_t size = 0;
    {
      hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      hid_t d = H5Dopen2(f, column, H5P_DEFAULT);
      hid_t space = H5Dget_space(d);
      hsize_t offset = 0;
      unsigned mask = 0;
      ASSERT_GE(H5Dget_chunk_info(d, space, 0, &offset, &mask, &addr, &size), 0) << column;
      H5Sclose(space);
      H5Dclose(d);
      H5Fclose(f);
    }
    for (hsize_t at : {hsize_t{0}, size / 2, size - 1}) {
      SCOPED_TRACE(std::string(column) + " chunk byte " + std::to_string(at) + " of " + std::to_string(size));
      std::string damaged = whole;
      damaged[addr + at] = static_cast<char>(damaged[addr + at] ^ 0x01);
      put_bytes(file("bad.h5"), damaged);
      EXPECT_THROW(read_campaign(file("bad.h5")), InputError);
      if (std::string(column) == "/sources/text_data") {
        EXPECT_THROW(read_sources(file("bad.h5"), {sample_campaign().sources.front().hash}), InputError);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 12);
#endif
}

TEST_F(CampaignFile, AMissingTableIsAnError) {
  std::string path = sample_file();
  Edit(path).remove("/archive");
  EXPECT_NE(read_error(path).find("missing table /archive"), std::string::npos);
}

TEST_F(CampaignFile, AnEmptyTableMustStillHaveItsColumns) {
  std::string path = file("c.h5");
  write_campaign(path, CampaignContents{});
  Edit(path).remove("/checkpoints/bytes_data");
  EXPECT_NE(read_error(path).find("missing column /checkpoints/bytes_data"), std::string::npos);
}

TEST_F(CampaignFile, ColumnsOfDifferentLengthsAreAnError) {
  std::string path = sample_file();
  Edit(path).replace_ints("/runs/seed", {1, 2, 3, 4});
  EXPECT_NE(read_error(path).find("table /runs: /runs/seed has 4 rows but /runs/id has 3"), std::string::npos);
}

TEST_F(CampaignFile, AColumnOfTheWrongTypeIsAnError) {
  std::string path = sample_file();
  Edit(path).replace_ints("/variants/op", std::vector<int64_t>(40, 7));
  EXPECT_NE(read_error(path).find("/variants/op holds integers, not fixed-length strings"), std::string::npos);
}

TEST_F(CampaignFile, AnotherSchemaVersionIsAnError) {
  std::string path = sample_file();
  Edit(path).replace_root_text("kevo_schema", "kevo-campaign/3");
  EXPECT_NE(read_error(path).find("schema 'kevo-campaign/3' is not supported (this kevo reads kevo-campaign/2 and "
                                  "kevo-campaign/1)"),
            std::string::npos);
}

TEST_F(CampaignFile, AMissingRootAttributeIsAnError) {
  std::string path = sample_file();
  {
    Edit e(path);
    EXPECT_GE(H5Adelete(e.file(), "templates_hash"), 0);
  }
  EXPECT_NE(read_error(path).find("missing root attribute templates_hash"), std::string::npos);
}

TEST_F(CampaignFile, AValueChangedBehindItsChecksumIsAnError) {
  std::string path = sample_file();
  std::vector<int64_t> gen = ints_of(path, "/variants/generation");
  gen[7] += 1;
  Edit(path).overwrite_ints("/variants/generation", gen, false);
  EXPECT_NE(read_error(path).find("/variants/generation does not match its checksum: the file is corrupt"),
            std::string::npos);
}

TEST_F(CampaignFile, AVariantOfAnUnknownRunIsAnError) {
  std::string path = sample_file();
  std::vector<int64_t> run = ints_of(path, "/variants/run");
  run[2] = 99;
  Edit(path).overwrite_ints("/variants/run", run, true);  // edited as a tool would: no stale checksum
  EXPECT_NE(read_error(path).find("variant 7 belongs to unknown run 99"), std::string::npos);
}

TEST_F(CampaignFile, DuplicateIdsAreAnError) {
  std::string path = sample_file();
  std::vector<int64_t> id = ints_of(path, "/variants/id");
  id[1] = id[0];
  Edit(path).overwrite_ints("/variants/id", id, true);
  EXPECT_NE(read_error(path).find("variant id 1 appears twice"), std::string::npos);
}

TEST_F(CampaignFile, AMeasurementOfAnUnknownVariantIsAnError) {
  std::string path = sample_file();
  std::vector<int64_t> variant = ints_of(path, "/measurements/variant");
  variant[0] = 1000;
  Edit(path).overwrite_ints("/measurements/variant", variant, true);  // measurement 0 has no workloads
  EXPECT_NE(read_error(path).find("a measurement of unknown variant 1000"), std::string::npos);
}

TEST_F(CampaignFile, AWorkloadOfAMissingMeasurementIsAnError) {
  std::string path = sample_file();
  std::vector<int64_t> m = ints_of(path, "/workloads/measurement");
  m.back() = 5000;
  Edit(path).overwrite_ints("/workloads/measurement", m, true);
  EXPECT_NE(read_error(path).find("is of measurement row 5000, which does not exist"), std::string::npos);
}

TEST_F(CampaignFile, ASourceOutsideTheTextBytesIsAnError) {
  std::string path = sample_file();
  std::vector<int64_t> len = ints_of(path, "/sources/text_length");
  len[3] = 1 << 30;
  Edit(path).overwrite_ints("/sources/text_length", len, true);
  EXPECT_NE(read_error(path).find("/sources/text_offset row 3: elements"), std::string::npos);
}

// ---- writing -------------------------------------------------------------------------------

void expect_write_error(const std::string& path, const CampaignContents& c, const std::string& part) {
  try {
    write_campaign(path, c);
    ADD_FAILURE() << "write_campaign succeeded";
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(part), std::string::npos) << what;
    EXPECT_EQ(what.rfind(path + ": campaign file: ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST_F(CampaignFile, InconsistentContentsAreNotWritten) {
  std::string path = sample_file();
  const std::string before = bytes_of(path);
  CampaignContents c = sample_campaign();
  c.variants[3].run = 42;
  expect_write_error(path, c, "refusing to write: variant 10 belongs to unknown run 42");
  c = sample_campaign();
  c.variants[5].parents = {77777};
  expect_write_error(path, c, "variant 16 has unknown parent 77777");
  c = sample_campaign();
  c.measurements.push_back(c.measurements[0]);
  expect_write_error(path, c, "variant 1 is measured twice");
  c = sample_campaign();
  c.sources.push_back(c.sources[0]);
  expect_write_error(path, c, "appears twice");
  c = sample_campaign();
  c.runs[0].task = "nope";
  expect_write_error(path, c, "run 0 is of unknown task 'nope'");
  EXPECT_TRUE(bytes_of(path) == before);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(CampaignFile, ANulByteInAShortTextIsNotWritten) {
  std::string path = sample_file();
  const std::string before = bytes_of(path);
  CampaignContents c = sample_campaign();
  c.variants[2].op = std::string("po\0int", 6);
  expect_write_error(path, c, "/variants/op row 2 contains a NUL byte");
  EXPECT_TRUE(bytes_of(path) == before);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(CampaignFile, AFailedWriteLeavesTheOldFile) {
  std::string path = sample_file();
  const std::string before = bytes_of(path);
  fs::create_directory(path + ".tmp");  // the temporary file cannot be created
  expect_write_error(path, sample_campaign(3), "cannot create " + path + ".tmp");
  EXPECT_TRUE(bytes_of(path) == before);
  EXPECT_EQ(describe(read_campaign(path)), describe(sample_campaign()));
}

TEST_F(CampaignFile, AMissingFolderIsAWriteError) {
  expect_write_error(file("no/such/folder/c.h5"), sample_campaign(3), "cannot create");
}

TEST_F(CampaignFile, AReadOnlyFolderIsAWriteError) {
  std::string path = sample_file();
  const std::string before = bytes_of(path);
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  if (access(dir_.c_str(), W_OK) == 0) GTEST_SKIP() << "SKIPPED: running as root, a read-only folder is writable";
  expect_write_error(path, sample_campaign(3), "cannot create");
  EXPECT_TRUE(bytes_of(path) == before);
}

// A writer killed with SIGKILL at arbitrary moments (while writing the temporary file, syncing,
// renaming) leaves the old file or the new one, each whole.
TEST_F(CampaignFile, AWriteKilledAtAnyMomentLeavesAWholeFile) {
  const std::string path = file("c.h5");
  CampaignContents a = sample_campaign(800), b = sample_campaign(500);  // about 80 and 50 ms a write
  a.campaign_id = "a";
  b.campaign_id = "b";
  const std::string da = describe(a), db = describe(b);
  write_campaign(path, a);
  int saw_a = 0, saw_b = 0;
  for (int trial = 0; trial < 16; ++trial) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        for (int k = 0;; ++k) write_campaign(path, k % 2 ? a : b);
      } catch (...) {
      }
      _exit(3);
    }
    usleep(static_cast<useconds_t>(3000 + 12000 * trial));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself: a write failed";
    CampaignContents back = read_campaign(path);
    std::string d = describe(back);
    EXPECT_TRUE(d == da || d == db) << "trial " << trial << ": a torn file";
    (back.campaign_id == "a" ? saw_a : saw_b)++;
  }
  std::printf("after 16 kills: %d times the first contents, %d times the second\n", saw_a, saw_b);
  write_campaign(path, b);  // whatever temporary file a kill left behind is no obstacle
  EXPECT_EQ(describe(read_campaign(path)), db);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

}  // namespace
}  // namespace kevo::store
