// The order in which GPUs take evaluation jobs: one thread per slot takes the oldest waiting job as
// soon as its last one is done, whatever batch either belongs to, so no GPU waits for another's job
// (the slowest of a generation) before it starts the next. The Runner serves its GPUs through it,
// the simulated GPUs (eval/simulated_gpus.h) theirs. No CUDA here: a job is any function of a slot.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kevo::eval {

class SlotQueue {
 public:
  // A job runs on the thread of the slot that took it; it reports its own result (a promise) and
  // must not throw.
  using Job = std::function<void(size_t slot)>;

  explicit SlotQueue(size_t slots);
  // Waits for the jobs running; jobs still waiting are dropped (their promises break).
  ~SlotQueue();
  SlotQueue(const SlotQueue&) = delete;
  SlotQueue& operator=(const SlotQueue&) = delete;

  // Behind every job pushed before it.
  void push(Job job);

  size_t slots() const { return threads_.size(); }
  size_t waiting() const;                  // jobs pushed and not taken yet
  // Per slot, the running job included (so a job whose result is out is always counted): time
  // spent running jobs, and jobs taken.
  std::vector<double> busy_seconds() const;
  std::vector<long> jobs_taken() const;

 private:
  void serve(size_t slot);

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::deque<Job> waiting_;
  bool stopping_ = false;
  std::vector<double> busy_;
  std::vector<long> taken_;
  std::vector<double> running_since_;  // per slot: when its job started (seconds on the clock), or -1
  std::vector<std::thread> threads_;
};

}  // namespace kevo::eval
