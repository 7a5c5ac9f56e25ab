// Appending to a campaign file as the search does, a generation per commit: the appended file
// reads back as the campaign written whole; the archive's unkept snapshot is replaced; the last
// two resume states are kept; a commit killed at every one of its file operations leaves the
// file at the commit before (read as such, never modified by the reader) and the next writer
// finishes it; a second writer is refused; files of kevo-campaign/1 are converted when appended to.
#include "store/campaign_writer.h"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "core/error.h"
#include "store/campaign_file.h"
#include "tests/store/campaign_deltas.h"
#include "tests/store/describe_campaign.h"
#include "tests/store/sample_campaign.h"

namespace kevo::store {
namespace {

using testing::after;
using testing::deltas_of;
using testing::describe;
using testing::head_of;
using testing::sample_campaign;
namespace fs = std::filesystem;

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class CampaignWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "kevo_writer_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(CampaignWriterTest, AGenerationAtATimeReadsBackAsTheWholeCampaign) {
  const CampaignContents c = sample_campaign(200);
  const std::vector<CampaignDelta> d = deltas_of(c, 25);
  const std::string path = file("c.h5");
  write_campaign(path, head_of(c));
  auto w = CampaignWriter::open(path);
  for (size_t i = 0; i < d.size(); ++i) {
    w->commit(d[i]);
    if (i % 8 == 0) {
      EXPECT_EQ(describe(read_campaign(path)), describe(after(c, d, i + 1))) << "after commit " << i;
    }
  }
  w->close();
  EXPECT_EQ(describe(read_campaign(path)), describe(c));
  EXPECT_FALSE(fs::exists(path + ".journal"));
  // Appending again, in a new session, goes on where the file ends.
  CampaignDelta more;
  more.variants = {c.variants.front()};
  more.variants[0].id = 100000;
  more.variants[0].duplicate_of = -1;
  CampaignWriter::open(path)->commit(more);
  EXPECT_EQ(read_campaign(path).variants.back().id, 100000);
}

TEST_F(CampaignWriterTest, TheArchivesLatestSnapshotReplacesTheOneBeforeUnlessKept) {
  const CampaignContents c = sample_campaign();
  const std::string path = file("c.h5");
  write_campaign(path, head_of(c));
  auto w = CampaignWriter::open(path);
  auto snapshot = [&](int g, int cells) {
    CampaignDelta d;
    d.archive.emplace();
    for (int k = 0; k < cells; ++k)
      d.archive->push_back({0, g, k, "cell " + std::to_string(k), c.variants[static_cast<size_t>(k)].id, 1.0 + g});
    d.variants = g == 0 ? c.variants : std::vector<VariantRecord>{};
    d.archive_kept = g % 10 == 0;
    return d;
  };
  for (int g = 0; g <= 13; ++g) w->commit(snapshot(g, 1 + g % 4));
  std::vector<int> gens;
  for (const auto& a : read_campaign(path).archive) gens.push_back(a.generation);
  EXPECT_EQ(gens, (std::vector<int>{0, 10, 10, 10, 13, 13}));
  CampaignDelta no_archive;  // a commit without a snapshot (a sweep's) leaves the archive alone
  w->commit(no_archive);
  EXPECT_EQ(read_campaign(path).archive.size(), 6u);
  CampaignDelta empty = snapshot(14, 0);  // an empty snapshot still replaces the one before
  w->commit(empty);
  EXPECT_EQ(read_campaign(path).archive.size(), 4u);
}

TEST_F(CampaignWriterTest, KeepsTheResumeStatesOfTheLastTwoGenerations) {
  const std::string path = file("c.h5");
  write_campaign(path, head_of(sample_campaign()));
  EXPECT_TRUE(read_resume_states(path).empty());
  auto w = CampaignWriter::open(path);
  for (int g = 0; g < 5; ++g) {
    CampaignDelta d;
    d.resume = ResumeState{g, std::string(static_cast<size_t>(1000 + 300000 * (g % 2)), static_cast<char>('a' + g))};
    w->commit(d);
  }
  std::vector<ResumeState> s = read_resume_states(path);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].generation, 3);
  EXPECT_EQ(s[0].bytes, std::string(300000 + 1000, 'd'));
  EXPECT_EQ(s[1].generation, 4);
  EXPECT_EQ(s[1].bytes, std::string(1000, 'e'));
}

TEST_F(CampaignWriterTest, ALongerTextValueWidensItsColumn) {
  CampaignContents c = sample_campaign();
  const std::string path = file("c.h5");
  write_campaign(path, head_of(c));
  auto w = CampaignWriter::open(path);
  CampaignDelta d;
  d.variants = c.variants;
  d.variants[3].space = std::string(300, 's');
  d.variants[5].op = "an operator with a long name";
  w->commit(d);
  CampaignDelta d2;
  d2.variants = {c.variants[0]};
  d2.variants[0].id = 999;
  d2.variants[0].duplicate_of = -1;
  w->commit(d2);
  w->close();
  CampaignContents back = read_campaign(path);
  ASSERT_EQ(back.variants.size(), c.variants.size() + 1);
  EXPECT_EQ(back.variants[3].space, std::string(300, 's'));
  EXPECT_EQ(back.variants[5].op, "an operator with a long name");
  EXPECT_EQ(back.variants[4].space, c.variants[4].space);
  EXPECT_EQ(back.variants.back().id, 999);
}

// A writer closes every HDF5 object it opened, after commits that worked and one that failed.
TEST_F(CampaignWriterTest, LeavesNoHdf5ObjectOpen) {
  auto open_ids = [] { return H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL); };
  const CampaignContents c = sample_campaign(60);
  const std::vector<CampaignDelta> d = deltas_of(c, 4);
  const std::string path = file("c.h5");
  write_campaign(path, head_of(c));
  const ssize_t before = open_ids();
  {
    auto w = CampaignWriter::open(path);
    w->commit(d[0]);
    w->commit(d[1]);
  }
  {
    auto w = CampaignWriter::open(path);
    CampaignDelta bad = d[2];
    bad.variants.front().op = std::string("nul\0", 4);
    EXPECT_THROW(w->commit(bad), std::runtime_error);
  }
  EXPECT_EQ(open_ids(), before);
  CampaignWriter::open(path)->commit(d[2]);
  EXPECT_EQ(open_ids(), before);
}

TEST_F(CampaignWriterTest, ASecondWriterIsRefused) {
  const std::string path = file("c.h5");
  write_campaign(path, head_of(sample_campaign()));
  auto w = CampaignWriter::open(path);
  try {
    CampaignWriter::open(path);
    FAIL() << "two writers";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another process is writing this file"), std::string::npos) << e.what();
  }
  w->close();
  CampaignWriter::open(path);  // free again
}

TEST_F(CampaignWriterTest, AFailedCommitLeavesTheFileAtTheLastOne) {
  CampaignContents c = sample_campaign();
  const std::string path = file("c.h5");
  write_campaign(path, head_of(c));
  auto w = CampaignWriter::open(path);
  CampaignDelta good;
  good.variants = c.variants;
  w->commit(good);
  CampaignDelta bad;
  bad.runs = {RunRecord{7, std::string("nul\0inside", 10), "random", 1, "{}"}};
  EXPECT_THROW(w->commit(bad), std::runtime_error);
  EXPECT_THROW(w->commit(good), std::runtime_error);  // the writer is done
  w->close();
  CampaignContents expected = head_of(c);
  expected.variants = c.variants;
  EXPECT_EQ(describe(read_campaign(path)), describe(expected));
}

// A file written by kevo before the appending campaign file (kevo-campaign/1) reads, and is
// rewritten as kevo-campaign/2 the first time it is appended to, its contents unchanged.
TEST_F(CampaignWriterTest, AnOlderFileIsConvertedWhenAppendedTo) {
  const std::string original = std::string(KEVO_SOURCE_ROOT) + "/results/campaigns/h200-random-mse_loss.h5";
  const std::string path = file("old.h5");
  fs::copy_file(original, path);
  const CampaignContents before = read_campaign(path);
  EXPECT_EQ(before.schema, "kevo-campaign/1");
  CampaignWriter::open(path)->commit({});
  const CampaignContents now = read_campaign(path);
  EXPECT_EQ(now.schema, "kevo-campaign/2");
  EXPECT_EQ(describe(now), describe(before));
}

// ---- crashes ---------------------------------------------------------------------------------------

// Commits `d` in a child process killed at its n-th file operation; true when it got that far.
bool commit_killed_at(const std::string& path, const CampaignDelta& d, int64_t n, bool durable) {
  pid_t pid = ::fork();
  if (pid == 0) {
    WriteOptions o;
    o.durable = durable;
    auto w = CampaignWriter::open(path, o);
    kill_at_file_operation_for_testing(n);
    w->commit(d);
    kill_at_file_operation_for_testing(0);
    w.reset();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

// The number of file operations one commit of `d` to a copy of `path` takes.
int64_t operations_of(const std::string& path, const CampaignDelta& d, bool durable) {
  const std::string copy = path + ".count";
  fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
  WriteOptions o;
  o.durable = durable;
  auto w = CampaignWriter::open(copy, o);
  kill_at_file_operation_for_testing(0);
  w->commit(d);
  const int64_t n = kill_at_file_operation_for_testing(0);
  w.reset();
  fs::remove(copy);
  return n;
}

// A commit killed at each of its file operations, for a commit in the middle of a campaign: the
// file reads as the commit before until the commit point (the journal emptied) and as the new one
// after it, never as anything else (reading does not change the file); a writer opened afterwards
// rolls a torn commit back and commits the generation again.
void expect_every_kill_leaves_a_commit(const std::string& path, bool durable) {
  const CampaignContents c = sample_campaign(120);
  const std::vector<CampaignDelta> d = deltas_of(c, 6);
  write_campaign(path, head_of(c));
  {
    auto w = CampaignWriter::open(path);
    for (size_t i = 0; i < 3; ++i) w->commit(d[i]);
  }
  const std::string before = describe(after(c, d, 3)), done = describe(after(c, d, 4));
  const int64_t ops = operations_of(path, d[3], durable);
  ASSERT_GT(ops, 3);
  const std::string pristine = bytes_of(path);
  int through_journal = 0;
  int64_t committed_from = 0;  // the first operation a kill at which leaves the new commit
  for (int64_t n = 1; n <= ops; ++n) {
    SCOPED_TRACE("killed at file operation " + std::to_string(n) + " of " + std::to_string(ops));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << pristine;
    ASSERT_TRUE(commit_killed_at(path, d[3], n, durable));
    const std::string left = bytes_of(path);
    through_journal += fs::exists(path + ".journal") && fs::file_size(path + ".journal") > 0;
    const std::string seen = describe(read_campaign(path));
    EXPECT_TRUE(bytes_of(path) == left) << "reading changed the file";
    if (seen == done && !committed_from) committed_from = n;
    EXPECT_EQ(seen, committed_from ? done : before);
    auto w = CampaignWriter::open(path);
    EXPECT_EQ(describe(read_campaign(path)), seen);
    if (seen == before) w->commit(d[3]);
    w->commit(d[4]);
    w.reset();
    EXPECT_EQ(describe(read_campaign(path)), describe(after(c, d, 5)));
  }
  std::printf("a commit of %lld file operations killed at each: the commit before up to operation %lld (%d times "
              "through the journal left behind), the new one after\n",
              static_cast<long long>(ops), static_cast<long long>(committed_from ? committed_from - 1 : ops),
              through_journal);
  EXPECT_GT(through_journal, 0);
  EXPECT_TRUE(committed_from == 0 || committed_from >= ops) << "the commit point is its last step";
}

TEST_F(CampaignWriterTest, ACommitKilledAtAnyFileOperationLeavesACommit) {
  expect_every_kill_leaves_a_commit(file("c.h5"), true);
}

TEST_F(CampaignWriterTest, ACommitKilledAtAnyFileOperationLeavesACommitWithoutSyncs) {
  expect_every_kill_leaves_a_commit(file("c.h5"), false);
}

}  // namespace
}  // namespace kevo::store
