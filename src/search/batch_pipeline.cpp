// The pipeline's thread: batches parsed, built and handed to the GPUs in the order they came.
#include "search/batch_pipeline.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "eval/compile_pool.h"

namespace kevo::search {

namespace {

using Clock = std::chrono::steady_clock;

PendingRecord ready(store::MeasurementRecord r) {
  return [r = std::move(r)] { return r; };
}

}  // namespace

class BatchPipeline::Impl {
 public:
  Impl(MeasuringBackend& b, int compile_workers, std::string cache_dir)
      : backend(b), arch(b.arch()), limits(b.limits()), cache_dir(std::move(cache_dir)) {
    eval::CompilePoolConfig pc;
    pc.workers = compile_workers;
    compiler = std::make_unique<eval::CompilePool>(pc);
    thread = std::thread([this] { feed_loop(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    cv.notify_all();
    thread.join();
  }

  // A batch between submit() and collect().
  struct Submitted {
    std::vector<EvalRequest> requests;
    std::vector<PendingRecord> pending;  // per request, once the batch is fed
    bool fed = false;
    std::exception_ptr error;
  };

  void submit(std::vector<EvalRequest> batch) {
    auto b = std::make_shared<Submitted>();
    b->requests = std::move(batch);
    {
      std::lock_guard<std::mutex> lock(mu);
      to_feed.push_back(b);
      to_collect.push_back(b);
    }
    cv.notify_all();
  }

  std::vector<store::MeasurementRecord> collect() {
    std::shared_ptr<Submitted> b;
    {
      std::unique_lock<std::mutex> lock(mu);
      if (to_collect.empty()) throw std::logic_error("collect() without a batch submitted");
      b = to_collect.front();
      to_collect.pop_front();
      cv.wait(lock, [&] { return b->fed; });
    }
    if (b->error) std::rethrow_exception(b->error);
    std::vector<store::MeasurementRecord> out;
    out.reserve(b->requests.size());
    for (size_t i = 0; i < b->requests.size(); ++i) {
      out.push_back(b->pending[i]());
      out.back().variant = b->requests[i].variant;
    }
    return out;
  }

  MeasuringBackend& backend;
  const std::string arch;
  const DeviceLimits limits;
  const std::string cache_dir;
  std::unique_ptr<eval::CompilePool> compiler;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Submitted>> to_feed, to_collect;
  bool stopping = false;
  EngineFigures counts;
  std::thread thread;

 private:
  void feed_loop() {
    for (;;) {
      std::shared_ptr<Submitted> b;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stopping || !to_feed.empty(); });
        if (stopping) return;
        b = to_feed.front();
        to_feed.pop_front();
      }
      const auto start = Clock::now();
      std::vector<PendingRecord> pending(b->requests.size());
      std::exception_ptr error;
      try {
        feed(b->requests, pending);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      counts.prepare_seconds += std::chrono::duration<double>(Clock::now() - start).count();
      b->pending = std::move(pending);
      b->error = error;
      b->fed = true;
      cv.notify_all();
    }
  }

  // Each distinct text parsed and built once; every request for it handed to the backend as soon
  // as its build is there.
  void feed(const std::vector<EvalRequest>& requests, std::vector<PendingRecord>& pending) {
    std::map<std::string, std::vector<size_t>> by_hash;  // text -> its requests
    std::vector<size_t> firsts;
    for (size_t i = 0; i < requests.size(); ++i) {
      std::vector<size_t>& same = by_hash[requests[i].source_hash];
      if (same.empty()) firsts.push_back(i);
      same.push_back(i);
    }
    auto fail_all = [&](size_t first, const std::string& status, const std::string& error) {
      for (size_t i : by_hash[requests[first].source_hash]) pending[i] = ready(backend.failed(requests[i], status, error));
      std::lock_guard<std::mutex> lock(mu);
      ++counts.failed_before_gpu;
    };
    std::vector<std::shared_ptr<BuiltCandidate>> built;
    std::vector<size_t> built_first;
    std::vector<eval::BuildRequest> builds;
    for (size_t first : firsts) {
      const EvalRequest& r = requests[first];
      auto c = std::make_shared<BuiltCandidate>();
      try {
        c->candidate = parse_candidate(r.source, "variant-" + std::to_string(r.variant) + ".cu", *r.task, limits);
      } catch (const InputError& e) {
        fail_all(first, "bad_plan", e.what());
        continue;
      }
      eval::BuildRequest req;
      req.source = c->candidate.source;
      req.name_expressions = c->candidate.kernel_names();
      req.arch = arch;
      req.cache_dir = cache_dir;
      builds.push_back(std::move(req));
      built.push_back(std::move(c));
      built_first.push_back(first);
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      counts.sources += static_cast<int64_t>(firsts.size());
    }
    if (builds.empty()) return;
    compiler->build_each(builds, [&](size_t j, eval::BuildResult result) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (result.cache_hit) ++counts.cache_hits;
        else if (result.status == eval::BuildStatus::Ok || result.status == eval::BuildStatus::CompileError)
          ++counts.compiled, counts.compile_seconds += result.compile_seconds;
      }
      if (result.status != eval::BuildStatus::Ok) return fail_all(built_first[j], "compile_error", result.error);
      built[j]->build = std::move(result);
      std::shared_ptr<const BuiltCandidate> done = built[j];
      for (size_t i : by_hash[requests[built_first[j]].source_hash]) pending[i] = backend.start(requests[i], done);
    });
  }
};

BatchPipeline::BatchPipeline(MeasuringBackend& backend, int compile_workers, std::string cache_dir)
    : impl_(std::make_unique<Impl>(backend, compile_workers, std::move(cache_dir))) {}
BatchPipeline::~BatchPipeline() = default;

void BatchPipeline::submit(std::vector<EvalRequest> batch) { impl_->submit(std::move(batch)); }
std::vector<store::MeasurementRecord> BatchPipeline::collect() { return impl_->collect(); }

bool BatchPipeline::idle() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->to_collect.empty();
}

EngineFigures BatchPipeline::figures() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->counts;
}

}  // namespace kevo::search
