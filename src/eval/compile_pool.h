// A pool of compile workers: untrusted candidate source compiled in `kevo compile-worker`
// processes under time and memory limits, with cache hits answered without a worker; and the
// worker process's own loop.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eval/builder.h"

namespace kevo {
class WorkerPool;
}

namespace kevo::eval {

struct CompilePoolConfig {
  std::string kevo_binary;                      // empty: this process's own executable
  int workers = 0;                              // 0: one per core
  double time_limit_s = 120;                    // per compile
  uint64_t memory_limit_bytes = uint64_t{8} << 30;
};

class CompilePool {
 public:
  explicit CompilePool(CompilePoolConfig config);
  ~CompilePool();

  // One result per request, in order. A worker that hangs, crashes or runs out of memory gives
  // that request a Timeout, Crashed or OutOfMemory result; the pool replaces the worker.
  std::vector<BuildResult> build_all(const std::vector<BuildRequest>& requests);
  // The same, each result handed to `done(index, result)` as soon as it is there: cache hits first,
  // in order, then compiles as they finish. One caller at a time.
  void build_each(const std::vector<BuildRequest>& requests, const std::function<void(size_t, BuildResult)>& done);
  int workers() const { return workers_; }

 private:
  CompilePoolConfig config_;
  int workers_ = 0;
  std::unique_ptr<WorkerPool> pool_;  // started on first use: cache hits need no worker
};

// The path of the running executable (/proc/self/exe resolved).
std::string self_executable();

// The `kevo compile-worker` process (compile_worker.cpp): serve_worker's protocol (a ready frame,
// then one answer per request) with build() as the handler. The first request's memory limit is
// applied once with RLIMIT_AS; each request's time limit is watched by a thread. A timeout, a
// crash or an allocation failure inside NVRTC is answered (timeout, crashed, out_of_memory) and
// the worker exits, to be respawned by its supervisor. Returns 0 on EOF, 1 on a broken protocol.
int compile_worker_main(int in_fd, int out_fd);

}  // namespace kevo::eval
