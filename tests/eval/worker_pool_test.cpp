// The worker pool survives every way a worker can fail and gives each job exactly one outcome.
#include "eval/worker_pool.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kevo {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

WorkerSpec fake_worker(const std::string& name, std::vector<std::string> args = {}) {
  WorkerSpec spec{name, {KEVO_FAKE_WORKER}, {}};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  return spec;
}

WorkerPoolConfig fake_pool(int workers) {
  WorkerPoolConfig config;
  for (int i = 0; i < workers; ++i) config.workers.push_back(fake_worker("w" + std::to_string(i)));
  config.start_timeout = milliseconds(5000);
  config.restart_backoff = milliseconds(10);
  config.shutdown_grace = milliseconds(500);
  return config;
}

Job job(uint64_t id, std::string payload, milliseconds timeout = milliseconds(5000)) {
  return Job{id, std::move(payload), timeout};
}

JobOutcome run_one(WorkerPool& pool, Job j) { return pool.run_all({std::move(j)}).at(0); }

pid_t pid_of_worker(WorkerPool& pool, uint64_t id) {
  JobOutcome out = run_one(pool, job(id, "pid"));
  EXPECT_EQ(out.status, JobStatus::Ok) << out.error;
  return static_cast<pid_t>(std::atoi(out.answer.c_str()));
}

// Reaped by us and no longer running: neither a zombie nor an orphan.
bool process_gone(pid_t pid) {
  errno = 0;
  bool not_our_child = ::waitpid(pid, nullptr, WNOHANG) == -1 && errno == ECHILD;
  errno = 0;
  bool not_running = ::kill(pid, 0) == -1 && errno == ESRCH;
  return not_our_child && not_running;
}

TEST(WorkerPool, AnswersEveryJobInSubmissionOrder) {
  WorkerPool pool(fake_pool(2));
  std::vector<Job> jobs;
  for (uint64_t i = 0; i < 10; ++i) jobs.push_back(job(100 + i, "echo:answer " + std::to_string(i)));
  auto outcomes = pool.run_all(jobs);
  ASSERT_EQ(outcomes.size(), 10u);
  std::set<std::string> workers;
  for (uint64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(outcomes[i].id, 100 + i);
    EXPECT_EQ(outcomes[i].status, JobStatus::Ok) << outcomes[i].error;
    EXPECT_EQ(outcomes[i].answer, "answer " + std::to_string(i));
    EXPECT_FALSE(outcomes[i].worker_replaced);
    EXPECT_GT(outcomes[i].wall_seconds, 0.0);
    workers.insert(outcomes[i].worker);
  }
  EXPECT_TRUE(workers.count("w0") || workers.count("w1"));
  EXPECT_EQ(pool.available_workers(), 2u);
}

// Each way a worker can fail, the status and text it must produce; after it, a new worker
// (a new pid, the old one reaped) serves the next job.
TEST(WorkerPool, EachFailureIsReportedAndTheWorkerIsReplacedAndServesTheNextJob) {
  struct Case {
    const char* payload;
    JobStatus status;
    const char* text;  // expected inside JobOutcome::error
  };
  const Case cases[] = {
      {"crash", JobStatus::Crashed, "killed by signal 6"},
      {"segv", JobStatus::Crashed, "killed by signal 11"},
      {"exit:7", JobStatus::Crashed, "exited with status 7"},
      {"stderr:the device is on fire", JobStatus::Crashed, "the device is on fire"},
      {"hang", JobStatus::Timeout, "no answer within 300 ms"},
      {"garbage", JobStatus::ProtocolError, "malformed answer frame"},
      {"huge", JobStatus::ProtocolError, "larger than"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.payload);
    WorkerPool pool(fake_pool(1));
    pid_t before = pid_of_worker(pool, 1);

    JobOutcome out = run_one(pool, job(2, c.payload, milliseconds(300)));
    EXPECT_EQ(out.id, 2u);
    EXPECT_EQ(out.worker, "w0");
    EXPECT_EQ(out.status, c.status) << to_string(out.status) << ": " << out.error;
    EXPECT_NE(out.error.find(c.text), std::string::npos) << out.error;
    EXPECT_TRUE(out.worker_replaced);
    EXPECT_TRUE(out.answer.empty());

    pid_t after = pid_of_worker(pool, 3);
    EXPECT_NE(after, before);
    EXPECT_GT(after, 0);
    EXPECT_TRUE(process_gone(before));
    JobOutcome next = run_one(pool, job(4, "echo:still serving"));
    EXPECT_EQ(next.status, JobStatus::Ok) << next.error;
    EXPECT_EQ(next.answer, "still serving");
  }
}

// close-stdin answers Ok, then the next request's write hits a pipe nobody reads. Were SIGPIPE
// not handled, that write would kill the test process.
TEST(WorkerPool, WriteToAWorkerThatStoppedReadingFailsTheJobNotTheEngine) {
  WorkerPool pool(fake_pool(1));
  ASSERT_EQ(run_one(pool, job(1, "close-stdin")).answer, "closed");
  JobOutcome out = run_one(pool, job(2, "echo:" + std::string(1 << 20, 'x')));
  EXPECT_EQ(out.status, JobStatus::Crashed);
  EXPECT_NE(out.error.find("stopped reading its input"), std::string::npos) << out.error;
  EXPECT_EQ(run_one(pool, job(3, "echo:ok")).answer, "ok");
}

// A worker that died between jobs never saw the next one: that job must not be blamed.
TEST(WorkerPool, WorkerThatDiedWhileIdleIsReplacedBeforeTheNextJob) {
  WorkerPool pool(fake_pool(1));
  pid_t first = pid_of_worker(pool, 1);
  ASSERT_EQ(run_one(pool, job(2, "exit-soon")).answer, "bye");
  std::this_thread::sleep_for(milliseconds(200));
  JobOutcome out = run_one(pool, job(3, "echo:" + std::string(1 << 20, 'y')));
  EXPECT_EQ(out.status, JobStatus::Ok) << out.error;
  EXPECT_FALSE(out.worker_replaced);
  EXPECT_NE(pid_of_worker(pool, 4), first);
}

TEST(WorkerPool, HangIsKilledCloseToItsDeadline) {
  WorkerPool pool(fake_pool(1));
  pid_of_worker(pool, 1);  // started
  auto t0 = Clock::now();
  JobOutcome out = run_one(pool, job(2, "hang", milliseconds(300)));
  double elapsed = seconds_since(t0);
  EXPECT_EQ(out.status, JobStatus::Timeout);
  EXPECT_GE(out.wall_seconds, 0.29);
  EXPECT_LT(elapsed, 1.0);
  // A job that finishes inside its deadline is not cut short.
  JobOutcome slow = run_one(pool, job(3, "slow:200", milliseconds(2000)));
  EXPECT_EQ(slow.status, JobStatus::Ok) << slow.error;
  EXPECT_EQ(slow.answer, "slept");
  EXPECT_GE(slow.wall_seconds, 0.19);
}

TEST(WorkerPool, LargeMessagesPassAndOversizedAnswersAreProtocolErrors) {
  WorkerPoolConfig config = fake_pool(1);
  config.max_message_bytes = 4 << 20;
  WorkerPool pool(config);
  std::string big(3 << 20, 'k');  // far above a pipe's buffer in both directions
  JobOutcome out = run_one(pool, job(1, "echo:" + big));
  EXPECT_EQ(out.status, JobStatus::Ok) << out.error;
  EXPECT_EQ(out.answer, big);
  JobOutcome too_big = run_one(pool, job(2, "echo:" + std::string(5 << 20, 'k')));
  EXPECT_EQ(too_big.status, JobStatus::ProtocolError) << too_big.error;
  EXPECT_TRUE(too_big.worker_replaced);
  EXPECT_EQ(run_one(pool, job(3, "echo:small")).answer, "small");
}

TEST(WorkerPool, MixedFailuresGiveExactlyOneCorrectOutcomePerJob) {
  std::string log = ::testing::TempDir() + "worker_pool_requests_" + std::to_string(::getpid());
  std::remove(log.c_str());
  WorkerPoolConfig config = fake_pool(3);
  for (auto& spec : config.workers) spec.env.push_back({"FAKE_WORKER_LOG", log});
  WorkerPool pool(config);

  // Every payload is unique (the #tag) so the request log shows how often each job ran.
  const char* kinds[] = {"echo", "crash", "echo", "hang", "echo", "garbage", "segv", "exit:4",
                         "echo"};
  std::map<uint64_t, std::string> kind_of;
  for (uint64_t id = 1; id <= 72; ++id) {
    std::string kind = kinds[id % 9];
    kind_of[id] = kind;
    std::string payload = kind == "echo" ? "echo:job " + std::to_string(id) : kind;
    pool.submit(job(id, payload + "#" + std::to_string(id), milliseconds(300)));
  }
  std::map<uint64_t, int> seen;
  for (int n = 0; n < 72; ++n) {
    JobOutcome out = pool.next_outcome();
    ++seen[out.id];
    const std::string& kind = kind_of.at(out.id);
    JobStatus want = kind == "echo"                          ? JobStatus::Ok
                     : kind == "hang"                        ? JobStatus::Timeout
                     : kind == "garbage"                     ? JobStatus::ProtocolError
                                                             : JobStatus::Crashed;
    EXPECT_EQ(out.status, want) << "job " << out.id << " (" << kind << "): " << out.error;
    if (kind == "echo") {
      EXPECT_EQ(out.answer, "job " + std::to_string(out.id));
    }
  }
  EXPECT_THROW(pool.next_outcome(), std::logic_error);  // nothing left: no extra outcomes
  ASSERT_EQ(seen.size(), 72u);
  for (const auto& [id, count] : seen) EXPECT_EQ(count, 1) << "job " << id;

  std::map<std::string, int> runs;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) ++runs[line.substr(line.find('#') + 1)];
  EXPECT_EQ(runs.size(), 72u);
  for (const auto& [id, count] : runs) EXPECT_EQ(count, 1) << "job " << id << " ran twice";
  std::remove(log.c_str());
}

TEST(WorkerPool, RespawnAfterAnOkAnswerWhenTheCallerAsks) {
  WorkerPoolConfig config = fake_pool(1);
  config.respawn_after = [](const std::string& answer) { return answer == "sticky error"; };
  WorkerPool pool(config);
  pid_t first = pid_of_worker(pool, 1);
  JobOutcome fine = run_one(pool, job(2, "echo:fine"));
  EXPECT_FALSE(fine.worker_replaced);
  EXPECT_EQ(pid_of_worker(pool, 3), first);

  JobOutcome poisoned = run_one(pool, job(4, "echo:sticky error"));
  EXPECT_EQ(poisoned.status, JobStatus::Ok);
  EXPECT_EQ(poisoned.answer, "sticky error");
  EXPECT_TRUE(poisoned.worker_replaced);
  pid_t second = pid_of_worker(pool, 5);
  EXPECT_NE(second, first);
  EXPECT_TRUE(process_gone(first));
}

TEST(WorkerPool, MissingBinaryMakesJobsUnavailableInsteadOfHanging) {
  WorkerPoolConfig config = fake_pool(0);
  config.workers.push_back({"gpu0", {"/nonexistent/kevo-worker", "--device", "0"}, {}});
  auto t0 = Clock::now();
  WorkerPool pool(config);
  auto outcomes = pool.run_all({job(1, "echo:a"), job(2, "echo:b"), job(3, "echo:c")});
  for (const auto& out : outcomes) {
    EXPECT_EQ(out.status, JobStatus::Unavailable);
    EXPECT_NE(out.error.find("No such file or directory"), std::string::npos) << out.error;
    EXPECT_NE(out.error.find("3 failed starts in a row"), std::string::npos) << out.error;
  }
  EXPECT_EQ(outcomes[2].id, 3u);
  EXPECT_EQ(pool.available_workers(), 0u);
  EXPECT_EQ(run_one(pool, job(4, "echo:d")).status, JobStatus::Unavailable);
  EXPECT_LT(seconds_since(t0), 2.0);
}

TEST(WorkerPool, WorkerThatDiesOrBabblesAtStartupIsUnavailableWithItsReason) {
  WorkerPoolConfig config = fake_pool(0);
  config.workers.push_back(fake_worker("dies", {"--fail-start"}));
  config.workers.push_back(fake_worker("babbles", {"--not-a-worker"}));
  WorkerPool pool(config);
  JobOutcome out = run_one(pool, job(1, "echo:x"));
  EXPECT_EQ(out.status, JobStatus::Unavailable);
  EXPECT_NE(out.error.find("exited with status 3"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("cannot initialise the device"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("did not send the ready frame"), std::string::npos) << out.error;
}

TEST(WorkerPool, AWorkerThatCannotStartLeavesItsJobsToTheOthers) {
  WorkerPoolConfig config = fake_pool(1);
  config.workers.push_back({"broken", {"/nonexistent/kevo-worker"}, {}});
  WorkerPool pool(config);
  std::vector<Job> jobs;
  for (uint64_t i = 0; i < 20; ++i) jobs.push_back(job(i, "echo:" + std::to_string(i)));
  for (const auto& out : pool.run_all(jobs)) {
    EXPECT_EQ(out.status, JobStatus::Ok) << out.error;
    EXPECT_EQ(out.worker, "w0");
  }
  auto t0 = Clock::now();  // the broken one may still be retrying
  while (pool.available_workers() > 1 && seconds_since(t0) < 2.0)
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(pool.available_workers(), 1u);
}

TEST(WorkerPool, EnvironmentAdditionsReachTheWorker) {
  ::setenv("KEVO_POOL_TEST_OVERRIDE", "parent", 1);
  WorkerPoolConfig config = fake_pool(1);
  config.workers[0].env = {{"CUDA_VISIBLE_DEVICES", "7"}, {"KEVO_POOL_TEST_OVERRIDE", "child"}};
  WorkerPool pool(config);
  EXPECT_EQ(run_one(pool, job(1, "env:CUDA_VISIBLE_DEVICES")).answer, "7");
  EXPECT_EQ(run_one(pool, job(2, "env:KEVO_POOL_TEST_OVERRIDE")).answer, "child");
  EXPECT_EQ(run_one(pool, job(3, "env:PATH")).answer, std::getenv("PATH"));
  ::unsetenv("KEVO_POOL_TEST_OVERRIDE");
}

// Each worker holds its own three pipes and nothing else: not another worker's ends (which
// would keep that worker's stdin from ever reaching EOF), nor what the engine inherited.
TEST(WorkerPool, WorkersHoldOnlyTheirOwnPipes) {
  WorkerPool pool(fake_pool(3));
  std::vector<Job> jobs;
  for (uint64_t i = 0; i < 9; ++i) jobs.push_back(job(i, "pipes"));
  for (const auto& out : pool.run_all(jobs)) EXPECT_EQ(out.answer, "3") << out.worker;
}

TEST(WorkerPool, StrayStdoutInTheWorkerDoesNotCorruptFrames) {
  WorkerPool pool(fake_pool(1));
  JobOutcome noisy = run_one(pool, job(1, "stdout-noise"));
  EXPECT_EQ(noisy.status, JobStatus::Ok) << noisy.error;
  EXPECT_EQ(noisy.answer, "quiet");
  EXPECT_FALSE(noisy.worker_replaced);
}

TEST(WorkerPool, DestructorLeavesNoChildProcessesEvenWithAJobInFlight) {
  std::vector<pid_t> pids;
  auto t0 = Clock::now();
  {
    WorkerPool pool(fake_pool(3));
    std::vector<Job> jobs;
    for (uint64_t i = 0; i < 6; ++i) jobs.push_back(job(i, "slow:50"));
    pool.run_all(jobs);  // every worker is up
    pids = pool.worker_pids();
    pool.submit(job(99, "hang", milliseconds(60000)));  // never collected
    t0 = Clock::now();
  }
  EXPECT_LT(seconds_since(t0), 2.0);  // the grace period, not the job's minute
  ASSERT_EQ(pids.size(), 3u);
  for (pid_t pid : pids) {
    EXPECT_GT(pid, 0);
    EXPECT_TRUE(process_gone(pid)) << "pid " << pid;
  }
}

// Dead or a zombie waiting for init: either way it no longer runs (or holds a GPU).
bool process_dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, comm, state;
  if (!(stat >> pid_field >> comm >> state)) return true;
  return state == "Z" || state == "X";
}

// kill -9 of the engine must not leave a worker running its job (and holding its GPU).
TEST(WorkerPool, WorkersDieWithAnEngineThatIsKilledOutright) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t engine = ::fork();
  ASSERT_GE(engine, 0);
  if (engine == 0) {  // the "engine": a pool with a job hanging in one worker
    ::close(report[0]);
    try {
      WorkerPool pool(fake_pool(2));
      std::vector<pid_t> pids;
      for (int tries = 0; tries < 500; ++tries) {
        pids = pool.worker_pids();
        if (pids[0] > 0 && pids[1] > 0) break;
        std::this_thread::sleep_for(milliseconds(10));
      }
      if (::write(report[1], pids.data(), 2 * sizeof(pid_t)) != 2 * sizeof(pid_t)) ::_exit(1);
      pool.submit(job(1, "hang", milliseconds(60000)));
      ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(report[1]);
  pid_t pids[2] = {0, 0};
  ASSERT_EQ(::read(report[0], pids, sizeof pids), static_cast<ssize_t>(sizeof pids));
  ::close(report[0]);
  std::this_thread::sleep_for(milliseconds(100));  // the hang is dispatched
  ::kill(engine, SIGKILL);
  ::waitpid(engine, nullptr, 0);
  auto t0 = Clock::now();
  for (pid_t pid : pids) {
    ASSERT_GT(pid, 0);
    while (!process_dead(pid) && seconds_since(t0) < 2.0)
      std::this_thread::sleep_for(milliseconds(10));
    EXPECT_TRUE(process_dead(pid)) << "worker " << pid << " outlived its engine";
  }
}

TEST(WorkerPool, RejectsDuplicateOutstandingIdsAndWaitsOnNothing) {
  WorkerPool pool(fake_pool(1));
  EXPECT_THROW(pool.next_outcome(), std::logic_error);
  pool.submit(job(1, "slow:100"));
  EXPECT_THROW(pool.submit(job(1, "echo:again")), std::invalid_argument);
  EXPECT_EQ(pool.next_outcome().answer, "slept");
  EXPECT_THROW(pool.run_all({job(2, "echo:a"), job(2, "echo:b")}), std::invalid_argument);
}

}  // namespace
}  // namespace kevo
