// A pool of compile workers: untrusted candidate source compiled in `kevo compile-worker`
// processes under time and memory limits, with cache hits answered without a worker.
#pragma once

#include <cstdint>
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
  int workers() const { return workers_; }

 private:
  CompilePoolConfig config_;
  int workers_ = 0;
  std::unique_ptr<WorkerPool> pool_;  // started on first use: cache hits need no worker
};

// The path of the running executable (/proc/self/exe resolved).
std::string self_executable();

}  // namespace kevo::eval
