// Supervised pool of long-lived worker processes: dispatch, deadlines, crash handling, respawn.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace kevo {

// One worker process: `kevo worker --device 3` with CUDA_VISIBLE_DEVICES=3, named "gpu3".
struct WorkerSpec {
  std::string name;
  std::vector<std::string> argv;                            // argv[0] is the executable path
  std::vector<std::pair<std::string, std::string>> env;     // added to (or replacing) the parent's
};

struct WorkerPoolConfig {
  std::vector<WorkerSpec> workers;
  uint64_t max_message_bytes = uint64_t{64} << 20;          // larger answers are ProtocolError
  int max_start_failures = 3;                               // in a row, then the worker is Unavailable
  std::chrono::milliseconds start_timeout{30000};           // spawn until the worker's ready frame
  std::chrono::milliseconds restart_backoff{50};            // times the failure count, between starts
  std::chrono::milliseconds shutdown_grace{1000};           // EOF on stdin, then SIGKILL
  size_t stderr_tail_bytes = 16384;
  // Runs on the worker's supervising thread after an Ok answer, before that worker takes
  // another job. True replaces the worker: a sticky CUDA error poisons the context even though
  // the worker answered.
  std::function<bool(const std::string& answer)> respawn_after;
};

struct Job {
  uint64_t id = 0;
  std::string payload;
  std::chrono::milliseconds timeout{10000};  // from dispatch to a worker, not from submit
};

enum class JobStatus { Ok, Timeout, Crashed, ProtocolError, Unavailable };
const char* to_string(JobStatus status);

struct JobOutcome {
  uint64_t id = 0;
  std::string worker;          // spec name; empty when no worker took the job
  JobStatus status = JobStatus::Unavailable;
  std::string answer;          // the worker's frame, when Ok
  std::string error;           // what went wrong and the worker's stderr tail, otherwise
  double wall_seconds = 0;     // dispatch to outcome
  bool worker_replaced = false;
};

// Every submitted job gets exactly one outcome; a job whose worker died is reported, never
// retried (the caller decides). One job per worker at a time. Thread-safe.
class WorkerPool {
 public:
  explicit WorkerPool(WorkerPoolConfig config);  // starts the workers in the background
  // Stdin EOF, grace, SIGKILL, reap: no children left. Queued jobs are dropped; one in flight
  // is killed once the grace period is over.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Throws std::invalid_argument when a job with the same id is still outstanding.
  void submit(Job job);
  // Blocks until some outstanding job has its outcome; throws std::logic_error when none is.
  JobOutcome next_outcome();
  // Submits all jobs (ids unique, nothing else outstanding) and returns their outcomes in order.
  std::vector<JobOutcome> run_all(std::vector<Job> jobs);

  std::vector<pid_t> worker_pids() const;  // live workers now (0 for one that is not running)
  size_t available_workers() const;        // workers not given up as Unavailable

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The worker side: sends a ready frame, then answers each request frame with handler(request)
// until EOF on in_fd. Returns 0 on clean EOF, 1 on a broken protocol or a dead parent.
int serve_worker(int in_fd, int out_fd, std::function<std::string(const std::string&)> handler,
                 uint64_t max_request_bytes = uint64_t{1} << 31);

// serve_worker on stdin/stdout, with fd 1 pointed at stderr first so that a library's stray
// printf cannot corrupt the frames.
int serve_worker_on_stdio(std::function<std::string(const std::string&)> handler);

}  // namespace kevo
