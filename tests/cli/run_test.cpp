// `kevo run`, `kevo resume` and `kevo sweep` as a user drives them: replayed campaigns killed with
// SIGKILL at random moments and resumed finish with the archive of an uninterrupted run; bad
// flags and corrupt files get one line and exit 2 without touching the file.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "eval/cuda_driver.h"
#include "search/sweep.h"
#include "store/campaign_file.h"
#include "tests/cli/run_kevo.h"
#include "tests/support/llm_stub.h"
#include "tests/search/synthetic_evaluator.h"
#include "tests/support/temp_path.h"

namespace kevo {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

std::string temp_path(const std::string& name) { return kevo::testing::fresh_temp_path("kevo_run", name); }

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A landscape recorded by a synthetic "GPU": what CI replays.
const std::string& replay_file() {
  static const std::string path = [] {
    std::string p = temp_path("space.h5");
    search::SweepConfig sc;
    sc.limit = 400;
    sc.batch = 100;
    testing::SyntheticEvaluator ev;
    search::run_sweep(p, {kRoot + "tasks/01_relu.json", kRoot + "tasks/06_sum_dim1.json"}, sc, ev, "test");
    return p;
  }();
  return path;
}

std::string campaign_args(const std::string& out) {
  return kRoot + "tasks/01_relu.json " + kRoot + "tasks/06_sum_dim1.json --replay " + replay_file() + " --out " + out +
         " --budget-evals 90 --population 5 --islands 2 --seed 11";
}

// The final archive and every variant: what must not depend on interruptions.
std::string fingerprint(const std::string& path) {
  store::CampaignContents k = store::read_campaign(path);
  std::ostringstream s;
  for (const auto& v : k.variants) s << v.id << ' ' << v.run << ' ' << v.source_hash << ' ' << v.duplicate_of << '\n';
  for (const auto& m : k.measurements) s << m.variant << ' ' << m.status << ' ' << m.fitness << '\n';
  int last = -1;
  for (const auto& a : k.archive) last = std::max(last, a.generation);
  for (const auto& a : k.archive)
    if (a.generation == last) s << a.run << ' ' << a.island << ' ' << a.cell << ' ' << a.variant << '\n';
  return s.str();
}

// Starts kevo with these arguments, SIGKILLs it after `ms` milliseconds; true when it finished first.
bool run_and_kill(const std::vector<std::string>& args, int ms) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    std::vector<char*> argv{const_cast<char*>(KEVO_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(KEVO_BINARY, argv.data());
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST(Run, ReplayedCampaignPrintsProgressAndItsBestVariants) {
  std::string out = temp_path("c.h5");
  auto r = testing::run_kevo("run " + campaign_args(out));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("gen 0 | evals"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("relu: 90 evaluations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best "), std::string::npos) << r.out;
  // Same seed, same replay: the same campaign.
  std::string again = temp_path("c.h5");
  ASSERT_EQ(testing::run_kevo("run " + campaign_args(again)).status, 0);
  EXPECT_EQ(fingerprint(out), fingerprint(again));
}

TEST(Run, KilledAtRandomMomentsAndResumedFinishesWithTheUninterruptedArchive) {
  std::string whole = temp_path("whole.h5");
  ASSERT_EQ(testing::run_kevo("run " + campaign_args(whole)).status, 0);
  const std::string expected = fingerprint(whole);
  std::mt19937 rng(20261130);
  int kills = 0;
  for (int round = 0; round < 4; ++round) {
    std::string path = temp_path("killed.h5");
    bool finished = false;
    for (int attempt = 0; !finished; ++attempt) {
      ASSERT_LT(attempt, 200) << "never finished";
      int ms = std::uniform_int_distribution<int>(50, 400 + 60 * attempt)(rng);
      std::vector<std::string> args = exists(path) ? std::vector<std::string>{"resume", path}
                                                   : split("run " + campaign_args(path));
      finished = run_and_kill(args, ms);
      if (!finished) ++kills;
      EXPECT_FALSE(exists(path + ".tmp") && finished) << "a finished run left its temporary file";
    }
    EXPECT_EQ(fingerprint(path), expected) << "round " << round;
  }
  EXPECT_GT(kills, 4) << "the kills never landed: the test proves nothing";
}

// A kevo process whose output (stdout and stderr together) is read line by line while it runs.
struct Running {
  pid_t pid = -1;
  FILE* out = nullptr;
  std::string said;
  // Reads lines until one contains `text` (true) or the output ends (false).
  bool read_until(const std::string& text) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, out)) {
      said += buf;
      if (std::string(buf).find(text) != std::string::npos) return true;
    }
    return false;
  }
  // Reads the rest and waits: the exit status, or 128 + the signal that ended it.
  int finish() {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, out)) said.append(buf, n);
    std::fclose(out);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

Running start_kevo(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  Running r;
  r.pid = ::fork();
  if (r.pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv{const_cast<char*>(KEVO_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(KEVO_BINARY, argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  r.out = ::fdopen(fds[0], "r");
  return r;
}

// Issue 19: a campaign over several tasks on (simulated) GPUs, stopped by a deadline's SIGTERM
// while its GPU measures a generation, keeps each task's part measured before it (committed as it
// was measured, its line printed), exits at once with one line and 143, and `kevo resume` measures
// only the rest, ending as the uninterrupted campaign.
TEST(Run, SigtermMidGenerationKeepsTheTasksMeasuredAndResumeFinishes) {
  const std::string args = kRoot + "tasks/01_relu.json " + kRoot + "tasks/06_sum_dim1.json --replay " + replay_file() +
                           " --budget-evals 8 --population 4 --islands 1 --seed 5";
  const std::string replayed = temp_path("replayed.h5"), path = temp_path("stopped.h5");
  ASSERT_EQ(testing::run_kevo("run " + args + " --out " + replayed).status, 0);
  Running k = start_kevo(split("run " + args + " --out " + path + " --simulate-gpus 1 --sim-eval-seconds 0.4 " +
                               "--compile-workers 2 --cache-dir " + temp_path("cubin")));
  ASSERT_TRUE(k.read_until("gen 0 | relu: 4 evaluations")) << k.said;
  const auto signalled = std::chrono::steady_clock::now();
  ::kill(k.pid, SIGTERM);
  const int status = k.finish();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  EXPECT_EQ(status, 128 + SIGTERM) << k.said;
  EXPECT_LT(took, 1.0) << "it waited for the evaluations under way";
  EXPECT_NE(k.said.find(" -> " + path + ": 2 tasks"), std::string::npos) << "the first line never reached the log: " << k.said;
  EXPECT_NE(k.said.find("kevo run: stopped by SIGTERM in generation 0: " + path + " holds 4 evaluations"), std::string::npos)
      << k.said;
  EXPECT_EQ(k.said.find("gen 0 | evals"), std::string::npos) << "generation 0 was not measured whole: " << k.said;
  const store::CampaignContents kept = store::read_campaign(path);
  EXPECT_EQ(kept.measurements.size(), 4u);
  EXPECT_TRUE(kept.generations.empty());
  auto report = testing::run_kevo("report " + path);
  EXPECT_NE(report.out.find("relu: 4 evaluations"), std::string::npos) << report.out;
  auto resumed = testing::run_kevo("resume " + path);
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  EXPECT_EQ(fingerprint(path), fingerprint(replayed));
}

// SIGTERM at random moments of a replayed campaign over two tasks: each stop is clean (status 143
// and one line, or the signal came before kevo could catch it), and the resumed campaign ends as
// the uninterrupted one.
TEST(Run, SigtermAtRandomMomentsStopsCleanlyAndResumeFinishes) {
  std::string whole = temp_path("whole.h5");
  ASSERT_EQ(testing::run_kevo("run " + campaign_args(whole)).status, 0);
  const std::string expected = fingerprint(whole);
  std::mt19937 rng(20261205);
  int clean = 0;
  for (int round = 0; round < 3; ++round) {
    std::string path = temp_path("terminated.h5");
    for (int attempt = 0;; ++attempt) {
      ASSERT_LT(attempt, 200) << "never finished";
      Running k = start_kevo(exists(path) ? std::vector<std::string>{"resume", path} : split("run " + campaign_args(path)));
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 300 + 40 * attempt)(rng)));
      ::kill(k.pid, SIGTERM);
      const int status = k.finish();
      if (status == 0) break;
      if (status == 128 + SIGTERM && k.said.find("stopped by SIGTERM") != std::string::npos) {
        ++clean;
        EXPECT_EQ(k.said.find("stopped by"), k.said.rfind("stopped by")) << k.said;
        EXPECT_NE(k.said.find("` continues\n"), std::string::npos) << k.said;
      } else {
        EXPECT_EQ(status, 128 + SIGTERM) << k.said;  // before main: the default action
      }
    }
    EXPECT_EQ(fingerprint(path), expected) << "round " << round;
  }
  EXPECT_GT(clean, 2) << "no SIGTERM was caught: the test proves nothing";
}

TEST(Run, CorruptOrTruncatedCampaignFilesGetOneLineAndStayAsTheyWere) {
  std::string good = temp_path("good.h5");
  ASSERT_EQ(testing::run_kevo("run " + campaign_args(good)).status, 0);
  std::string bytes = slurp(good);
  for (size_t cut : {size_t{0}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    std::string bad = temp_path("bad.h5");
    std::ofstream(bad, std::ios::binary) << bytes.substr(0, cut);
    std::string before = slurp(bad);
    auto r = testing::run_kevo("resume " + bad);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_EQ(slurp(bad), before) << "resume changed a corrupt file";
  }
  auto r = testing::run_kevo("resume " + temp_path("missing.h5"));
  EXPECT_EQ(r.status, 2) << r.out;
}

TEST(Run, BadFlagsGetOneLine) {
  for (const std::string& flags : {std::string("--population 0"), std::string("--selection roulette"),
                                   std::string("--policy oracle"), std::string("--gpus x")}) {
    auto r = testing::run_kevo("run " + campaign_args(temp_path("f.h5")) + " " + flags);
    EXPECT_EQ(r.status, 2) << flags << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << flags << ": " << r.out;
  }
  std::string path = temp_path("twice.h5");
  ASSERT_EQ(testing::run_kevo("run " + campaign_args(path)).status, 0);
  std::string before = slurp(path);
  auto r = testing::run_kevo("run " + campaign_args(path));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(slurp(path), before) << "a second run over an existing campaign changed it";
}

TEST(Run, LlmPolicyAgainstAStubServer) {
  const std::string edit =
      "<<<<<<< SEARCH\n// Generated by kevo from template family 'elementwise' (space elementwise).\n=======\n"
      "// Generated by kevo from template family 'elementwise' (space elementwise).\n// edited\n>>>>>>> REPLACE\n";
  nlohmann::json script = {{"responses", {{{"status", 503}}}}, {"default", {{"content", edit}}}};
  testing::LlmStub stub(script.dump());
  if (!stub.ok()) GTEST_SKIP() << "SKIPPED: " << stub.why();
  const std::string c = temp_path("llm.h5"), hook = stub.dir() + "/hook.txt";
  const std::string args = "run " + kRoot + "tasks/01_relu.json --replay " + replay_file() + " --out " + c +
                           " --budget-evals 24 --population 4 --islands 1 --policy llm --llm-url " + stub.url() +
                           " --llm-model coder --llm-samples 2 --llm-retries 2 --between-generations 'echo $KEVO_GENERATION >> " +
                           hook + "'";
  auto r = testing::run_kevo(args);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("llm: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 0 failed"), std::string::npos) << "the 503 was retried, not failed: " << r.out;
  EXPECT_FALSE(slurp(hook).empty());
  // The completions as JSONL: one object per line with the fields trainers read.
  const std::string jsonl = temp_path("samples.jsonl");
  auto e = testing::run_kevo("export " + c + " --samples " + jsonl);
  ASSERT_EQ(e.status, 0) << e.out;
  std::istringstream in(slurp(jsonl));
  int lines = 0;
  for (std::string l; std::getline(in, l); ++lines) {
    auto j = nlohmann::json::parse(l);
    EXPECT_TRUE(j.at("prompt").is_array());
    EXPECT_NE(j.at("response").get<std::string>().find("// edited"), std::string::npos);
    EXPECT_TRUE(j.at("reward").is_number());
    EXPECT_TRUE(j.at("group").is_number_integer());
  }
  EXPECT_GT(lines, 0);
  // Bad llm flags get one line and exit 2.
  for (const std::string& flags : {std::string("--policy llm"), std::string("--policy llm --llm-model m --llm-url ftp://x"),
                                   std::string("--policy llm --llm-model m --llm-weight lots"),
                                   std::string("--policy llm --llm-model m --load-adapter /a")}) {
    auto b = testing::run_kevo("run " + campaign_args(temp_path("f.h5")) + " " + flags);
    EXPECT_EQ(b.status, 2) << flags << ": " << b.out;
    EXPECT_EQ(std::count(b.out.begin(), b.out.end(), '\n'), 1) << flags << ": " << b.out;
  }
}

TEST(Run, ReportAndExportOfAReplayedCampaign) {
  std::string c = temp_path("rep.h5");
  ASSERT_EQ(testing::run_kevo("run " + campaign_args(c)).status, 0);
  std::string html = temp_path("report.html"), json = temp_path("report.json");
  auto r = testing::run_kevo("report " + c + " --html " + html + " --json " + json);
  ASSERT_EQ(r.status, 0) << r.out;
  std::string page = slurp(html);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("relu"), std::string::npos);
  EXPECT_NE(page.find("sum_dim1"), std::string::npos);
  if (exists("/usr/bin/python3")) {
    std::string cmd = "/usr/bin/python3 " + kRoot + "tests/store/check_html.py " + html + " 2>&1";
    std::string said;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[512];
      while (size_t n = std::fread(buf, 1, sizeof buf, p)) said.append(buf, n);
      EXPECT_EQ(::pclose(p), 0) << said;
    }
    EXPECT_NE(said.find("ok: "), std::string::npos) << said;
  }
  std::string figures = slurp(json);
  EXPECT_NE(figures.find("\"sum_dim1\""), std::string::npos) << figures.substr(0, 400);
  // The best variant per task as a header.
  std::string dir = temp_path("exported");
  auto e = testing::run_kevo("export " + c + " --out " + dir);
  ASSERT_EQ(e.status, 0) << e.out;
  for (const char* t : {"relu", "sum_dim1"}) {
    std::string header = slurp(dir + "/" + t + ".cuh");
    EXPECT_NE(header.find("kevo_" + std::string(t)), std::string::npos) << t;
    EXPECT_NE(header.find("Campaign "), std::string::npos) << t;
  }
  // --torch: beside each header the extension, its loader and the contract.
  std::string torch_dir = temp_path("exported_torch");
  auto pt = testing::run_kevo("export " + c + " --torch --out " + torch_dir);
  ASSERT_EQ(pt.status, 0) << pt.out;
  EXPECT_NE(pt.out.find("torch.ops.kevo.relu"), std::string::npos) << pt.out;
  EXPECT_NE(slurp(torch_dir + "/relu_torch.cu").find("TORCH_LIBRARY_FRAGMENT(kevo, m)"), std::string::npos);
  EXPECT_NE(slurp(torch_dir + "/relu_torch.cu").find("#include \"relu.cuh\""), std::string::npos);
  EXPECT_NE(slurp(torch_dir + "/relu_torch.py").find("return torch.ops.kevo.relu"), std::string::npos);
  EXPECT_NE(slurp(torch_dir + "/relu.json").find("\"workloads\""), std::string::npos);
  // ... and the candidate as measured, which `kevo compile` (and so `kevo eval`) takes back.
  auto back = testing::run_kevo("compile " + torch_dir + "/relu.json " + torch_dir + "/relu.cu --arch sm_90a");
  EXPECT_EQ(back.status, 0) << back.out;
  auto bad = testing::run_kevo("report " + temp_path("none.h5") + " --html " + html);
  EXPECT_EQ(bad.status, 2) << bad.out;
}

TEST(Run, TrainPolicyWritesACheckpointThatLearnedArmsStartFrom) {
  std::string policy = temp_path("policy.pt");
  auto t = testing::run_kevo("train-policy " + kRoot + "tasks/01_relu.json " + kRoot + "tasks/06_sum_dim1.json --replay " +
                             replay_file() + " --out " + policy + " --budget-evals 30 --population 5");
  ASSERT_EQ(t.status, 0) << t.out;
  EXPECT_NE(t.out.find("round 1 relu: 30 evaluations"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("round 1 sum_dim1: 30 evaluations"), std::string::npos) << t.out;
  EXPECT_FALSE(exists(policy + ".campaign.h5")) << "the training's scratch campaign was left behind";
  ASSERT_FALSE(slurp(policy).empty());
  std::string frozen = temp_path("frozen.h5");
  auto r = testing::run_kevo("run " + kRoot + "tasks/01_relu.json --replay " + replay_file() + " --out " + frozen +
                             " --budget-evals 20 --policy learned-frozen --policy-init " + policy);
  ASSERT_EQ(r.status, 0) << r.out;
  // A damaged checkpoint is a one-line error, not a crash.
  std::string bad = temp_path("bad.pt");
  std::ofstream(bad, std::ios::binary) << slurp(policy).substr(0, 100);
  auto b = testing::run_kevo("run " + kRoot + "tasks/01_relu.json --replay " + replay_file() + " --out " +
                             temp_path("b.h5") + " --policy learned-frozen --policy-init " + bad);
  EXPECT_EQ(b.status, 2) << b.out;
  EXPECT_EQ(std::count(b.out.begin(), b.out.end(), '\n'), 1) << b.out;
  auto help = testing::run_kevo("--help");
  EXPECT_NE(help.out.find("train-policy"), std::string::npos) << help.out;
}

TEST(Run, WithoutAGpuTheFallbackReplayIsTakenAndSaidPlainly) {
  if (eval::cuda_driver_status().available) GTEST_SKIP() << "this machine has a GPU: the fallback is not taken";
  std::string out = temp_path("fallback.h5");
  auto r = testing::run_kevo("run " + kRoot + "tasks/01_relu.json --fallback-replay " + replay_file() + " --out " + out +
                             " --budget-evals 20");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("no GPU here"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replayed, not measured"), std::string::npos) << r.out;
  // Without the fallback, no GPU is an error, not a silent replay.
  auto g = testing::run_kevo("run " + kRoot + "tasks/01_relu.json --out " + temp_path("nogpu.h5"));
  EXPECT_EQ(g.status, 2) << g.out;
  EXPECT_NE(g.out.find("GPU"), std::string::npos) << g.out;
}

// The number before `label` in the engine's summary ("engine: 24 evaluations on GPUs"); -1 if absent.
long figure_before(const std::string& out, const std::string& label) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("([0-9]+) " + label))) return -1;
  return std::stol(m[1]);
}

TEST(Run, SimulatedGpusSearchAsTheReplayDoesAndSayWhereTheTimeWent) {
  const std::string args = kRoot + "tasks/01_relu.json --replay " + replay_file() +
                           " --budget-evals 24 --population 4 --islands 2 --seed 3";
  const std::string replayed = temp_path("replayed.h5"), simulated = temp_path("simulated.h5");
  ASSERT_EQ(testing::run_kevo("run " + args + " --out " + replayed).status, 0);
  auto r = testing::run_kevo("run " + args + " --out " + simulated + " --simulate-gpus 3 --sim-eval-seconds 0.02 " +
                             "--compile-workers 2 --cache-dir " + temp_path("cubin"));
  ASSERT_EQ(r.status, 0) << r.out;
  // Three GPUs answering in whatever order their jobs finish: the search is the replay's.
  EXPECT_EQ(fingerprint(replayed), fingerprint(simulated));
  // Every variant sent to the evaluator went to a simulated GPU or failed before one.
  EXPECT_EQ(figure_before(r.out, "evaluations on GPUs") + figure_before(r.out, "failed before a GPU"), 24) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("per GPU: [0-9.]+ [0-9.]+ [0-9.]+\\)"))) << r.out;
  EXPECT_NE(r.out.find("ms per evaluation"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("waiting for results"), std::string::npos) << r.out;
  // Bad settings get one line and exit 2.
  for (const std::string& flags : {std::string("--simulate-gpus 2"),  // recordings without times, no --sim-eval-seconds
                                   std::string("--simulate-gpus 65 --sim-eval-seconds 1"),
                                   std::string("--sim-eval-seconds 1")}) {
    auto bad = testing::run_kevo("run " + args + " --out " + temp_path("bad.h5") + " " + flags);
    EXPECT_EQ(bad.status, 2) << flags << ": " << bad.out;
    EXPECT_EQ(std::count(bad.out.begin(), bad.out.end(), '\n'), 1) << flags << ": " << bad.out;
  }
}

TEST(Run, AblationOfTwoArmsOverSeedsReportsItsStatistics) {
  std::string c = temp_path("ablation.h5");
  auto r = testing::run_kevo("ablate " + kRoot + "tasks/01_relu.json " + kRoot + "tasks/06_sum_dim1.json --replay " +
                             replay_file() + " --out " + c +
                             " --arms random,learned --seeds 2 --budget-evals 30 --population 5 --islands 2");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("gen 0 | evals"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("relu, learned (2 seeds): final fitness"), std::string::npos) << r.out;
  EXPECT_EQ(testing::run_kevo("ablate " + kRoot + "tasks/01_relu.json --replay " + replay_file() + " --out " +
                              temp_path("bad.h5") + " --arms random,oracle")
                .status,
            2);
  std::string html = temp_path("ablation.html"), json = temp_path("ablation.json");
  auto rep = testing::run_kevo("report " + c + " --html " + html + " --json " + json);
  ASSERT_EQ(rep.status, 0) << rep.out;
  if (exists("/usr/bin/python3")) {
    std::string cmd = "/usr/bin/python3 " + kRoot + "tests/store/check_html.py " + html + " 2>&1";
    std::string said;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[512];
      while (size_t n = std::fread(buf, 1, sizeof buf, p)) said.append(buf, n);
      EXPECT_EQ(::pclose(p), 0) << said;
    }
    EXPECT_NE(said.find("ok: "), std::string::npos) << said;
  }
  std::string figures = slurp(json);
  EXPECT_NE(figures.find("\"learned\""), std::string::npos) << figures.substr(0, 400);
  EXPECT_NE(figures.find("\"random\""), std::string::npos);
  EXPECT_NE(figures.find("95% bootstrap interval over 2 seeds"), std::string::npos);
  EXPECT_NE(figures.find("learned - random over 2 shared seeds"), std::string::npos);
}

}  // namespace
}  // namespace kevo
