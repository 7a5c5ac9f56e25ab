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

// A compile worker's outcome as the request's result.
BuildResult result_of(const BuildRequest& request, const JobOutcome& o) {
  switch (o.status) {
    case JobStatus::Ok:
      try {
        return build_result_from_json(o.answer);
      } catch (const InputError& e) {
        return failed(request, BuildStatus::Crashed, std::string("unreadable compile result: ") + e.what());
      }
    case JobStatus::Timeout:
      return failed(request, BuildStatus::Timeout, "the compile worker stopped answering: " + o.error);
    default:
      return failed(request, BuildStatus::Crashed, std::string("compile worker ") + to_string(o.status) + ": " + o.error);
  }
}

}  // namespace

std::vector<BuildResult> CompilePool::build_all(const std::vector<BuildRequest>& requests) {
  std::vector<BuildResult> results(requests.size());
  build_each(requests, [&](size_t i, BuildResult r) { results[i] = std::move(r); });
  return results;
}

void CompilePool::build_each(const std::vector<BuildRequest>& requests,
                             const std::function<void(size_t, BuildResult)>& done) {
  std::vector<Job> jobs;
  for (size_t i = 0; i < requests.size(); ++i) {
    BuildRequest r = requests[i];
    r.time_limit_s = config_.time_limit_s;
    r.memory_limit_bytes = config_.memory_limit_bytes;
    if (auto hit = find_cached(r)) {
      done(i, std::move(*hit));
      continue;
    }
    // The worker watches the time limit itself; the pool's deadline only catches a worker
    // too wedged to answer at all.
    auto deadline = std::chrono::milliseconds(static_cast<int64_t>(config_.time_limit_s * 1500) + 5000);
    jobs.push_back({static_cast<uint64_t>(i), build_request_to_json(r), deadline});
  }
  if (jobs.empty()) return;
  if (!pool_) {
    WorkerPoolConfig pc;
    for (int w = 0; w < workers_; ++w)
      pc.workers.push_back({"compile" + std::to_string(w), {config_.kevo_binary, "compile-worker"}, {}});
    pool_ = std::make_unique<WorkerPool>(std::move(pc));
  }
  size_t outstanding = jobs.size();
  for (Job& job : jobs) pool_->submit(std::move(job));
  try {
    for (; outstanding > 0; --outstanding) {
      JobOutcome o = pool_->next_outcome();
      done(static_cast<size_t>(o.id), result_of(requests[static_cast<size_t>(o.id)], o));
    }
  } catch (...) {
    for (--outstanding; outstanding > 0; --outstanding) pool_->next_outcome();  // the pool is left with nothing outstanding
    throw;
  }
}

}  // namespace kevo::eval
