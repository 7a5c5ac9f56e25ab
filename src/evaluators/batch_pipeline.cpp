// The pipeline's thread: batches parsed, built and handed to the GPUs in the order they came.
#include "evaluators/batch_pipeline.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "eval/compile_pool.h"

namespace kevo::evaluators {

namespace {

using Clock = std::chrono::steady_clock;

PendingRecord at_once(store::MeasurementRecord r) {
  PendingRecord p;
  p.wait = [](double) { return true; };
  p.get = [r = std::move(r)] { return r; };
  return p;
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
    std::vector<PendingRecord> pending;  // per request: set (under the lock) once its build is there
    size_t set = 0;                      // pending records set
    size_t taken = 0;                    // records collected
    std::exception_ptr error;            // preparing the batch failed
  };

  void submit(std::vector<EvalRequest> batch) {
    auto b = std::make_shared<Submitted>();
    b->requests = std::move(batch);
    b->pending.resize(b->requests.size());
    {
      std::lock_guard<std::mutex> lock(mu);
      to_feed.push_back(b);
      to_collect.push_back(b);
    }
    cv.notify_all();
  }

  // Under the lock: records [from, to) of the oldest batch have their pending records set.
  static bool all_set(const Submitted& b, size_t from, size_t to) {
    if (b.set == b.requests.size()) return true;
    for (size_t i = from; i < to; ++i)
      if (!b.pending[i].get) return false;
    return true;
  }
  static size_t end_of(const Submitted& b, size_t n) {
    return n >= b.requests.size() - b.taken ? b.requests.size() : b.taken + n;
  }

  std::vector<store::MeasurementRecord> collect(size_t n) {
    std::shared_ptr<Submitted> b;
    size_t from = 0, to = 0;
    std::exception_ptr error;
    {
      std::unique_lock<std::mutex> lock(mu);
      if (to_collect.empty()) throw std::logic_error("collect() without a batch submitted");
      b = to_collect.front();
      from = b->taken;
      to = end_of(*b, n);
      cv.wait(lock, [&] { return b->error || all_set(*b, from, to); });
      error = b->error;
      b->taken = to;
      if (error || to == b->requests.size()) to_collect.pop_front();
    }
    if (error) std::rethrow_exception(error);
    std::vector<store::MeasurementRecord> out;
    out.reserve(to - from);
    try {
      for (size_t i = from; i < to; ++i) {
        out.push_back(b->pending[i].get());
        out.back().variant = b->requests[i].variant;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!to_collect.empty() && to_collect.front() == b) to_collect.pop_front();  // a broken batch is taken whole
      throw;
    }
    return out;
  }

  bool ready(size_t n, double seconds) const {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    std::shared_ptr<Submitted> b;
    size_t from = 0, to = 0;
    {
      std::unique_lock<std::mutex> lock(mu);
      if (to_collect.empty()) return true;
      b = to_collect.front();
      from = b->taken;
      to = end_of(*b, n);
      if (!cv.wait_until(lock, deadline, [&] { return b->error || all_set(*b, from, to); })) return false;
      if (b->error) return true;  // collect() throws it
    }
    for (size_t i = from; i < to; ++i) {
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (!b->pending[i].wait(std::max(0.0, left))) return false;
    }
    return true;
  }

  MeasuringBackend& backend;
  const std::string arch;
  const DeviceLimits limits;
  const std::string cache_dir;
  std::unique_ptr<eval::CompilePool> compiler;
  mutable std::mutex mu;
  mutable std::condition_variable cv;
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
      std::exception_ptr error;
      try {
        feed(*b);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      counts.prepare_seconds += std::chrono::duration<double>(Clock::now() - start).count();
      if (error) b->error = error;
      cv.notify_all();
    }
  }

  // Request i's pending record, for collect() to wait on.
  void put(Submitted& b, size_t i, PendingRecord p) {
    {
      std::lock_guard<std::mutex> lock(mu);
      b.pending[i] = std::move(p);
      ++b.set;
    }
    cv.notify_all();
  }

  // Each distinct text parsed and built once; every request for it handed to the backend as soon
  // as its build is there.
  void feed(Submitted& b) {
    const std::vector<EvalRequest>& requests = b.requests;
    std::map<std::string, std::vector<size_t>> by_hash;  // text -> its requests
    std::vector<size_t> firsts;
    for (size_t i = 0; i < requests.size(); ++i) {
      std::vector<size_t>& same = by_hash[requests[i].source_hash];
      if (same.empty()) firsts.push_back(i);
      same.push_back(i);
    }
    auto fail_all = [&](size_t first, const std::string& status, const std::string& error) {
      for (size_t i : by_hash[requests[first].source_hash]) put(b, i, at_once(backend.failed(requests[i], status, error)));
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
      for (size_t i : by_hash[requests[built_first[j]].source_hash]) put(b, i, backend.start(requests[i], done));
    });
  }
};

BatchPipeline::BatchPipeline(MeasuringBackend& backend, int compile_workers, std::string cache_dir)
    : impl_(std::make_unique<Impl>(backend, compile_workers, std::move(cache_dir))) {}
BatchPipeline::~BatchPipeline() = default;

void BatchPipeline::submit(std::vector<EvalRequest> batch) { impl_->submit(std::move(batch)); }
std::vector<store::MeasurementRecord> BatchPipeline::collect(size_t n) { return impl_->collect(n); }
bool BatchPipeline::ready(size_t n, double seconds) const { return impl_->ready(n, seconds); }

bool BatchPipeline::idle() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->to_collect.empty();
}

EngineFigures BatchPipeline::figures() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->counts;
}

}  // namespace kevo::evaluators
