// Compile workers behind the WorkerPool: requests go out as JSON frames, results come back.
#include "eval/compile_pool.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/error.h"
#include "eval/build_wire.h"
#include "eval/worker_pool.h"

namespace kevo::eval {

std::string self_executable() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

CompilePool::CompilePool(CompilePoolConfig config) : config_(std::move(config)) {
  if (config_.kevo_binary.empty()) config_.kevo_binary = self_executable();
  workers_ = config_.workers > 0 ? config_.workers
                                 : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

CompilePool::~CompilePool() = default;

namespace {

BuildResult failed(const BuildRequest& r, BuildStatus status, const std::string& error) {
  BuildResult out;
  out.status = status;
  out.arch = r.arch;
  out.error = error;
  return out;
}

}  // namespace

std::vector<BuildResult> CompilePool::build_all(const std::vector<BuildRequest>& requests) {
  std::vector<BuildResult> results(requests.size());
  std::vector<Job> jobs;
  std::vector<size_t> job_index;
  for (size_t i = 0; i < requests.size(); ++i) {
    BuildRequest r = requests[i];
    r.time_limit_s = config_.time_limit_s;
    r.memory_limit_bytes = config_.memory_limit_bytes;
    if (auto hit = find_cached(r)) {
      results[i] = std::move(*hit);
      continue;
    }
    // The worker watches the time limit itself; the pool's deadline only catches a worker
    // too wedged to answer at all.
    auto deadline = std::chrono::milliseconds(static_cast<int64_t>(config_.time_limit_s * 1500) + 5000);
    jobs.push_back({static_cast<uint64_t>(i), build_request_to_json(r), deadline});
    job_index.push_back(i);
  }
  if (jobs.empty()) return results;
  if (!pool_) {
    WorkerPoolConfig pc;
    for (int w = 0; w < workers_; ++w)
      pc.workers.push_back({"compile" + std::to_string(w), {config_.kevo_binary, "compile-worker"}, {}});
    pool_ = std::make_unique<WorkerPool>(std::move(pc));
  }
  std::vector<JobOutcome> outcomes = pool_->run_all(std::move(jobs));
  for (size_t k = 0; k < outcomes.size(); ++k) {
    size_t i = job_index[k];
    const JobOutcome& o = outcomes[k];
    switch (o.status) {
      case JobStatus::Ok:
        try {
          results[i] = build_result_from_json(o.answer);
        } catch (const InputError& e) {
          results[i] = failed(requests[i], BuildStatus::Crashed, std::string("unreadable compile result: ") + e.what());
        }
        break;
      case JobStatus::Timeout:
        results[i] = failed(requests[i], BuildStatus::Timeout, "the compile worker stopped answering: " + o.error);
        break;
      default:
        results[i] = failed(requests[i], BuildStatus::Crashed,
                            std::string("compile worker ") + to_string(o.status) + ": " + o.error);
    }
  }
  return results;
}

}  // namespace kevo::eval
