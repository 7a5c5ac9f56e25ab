// One thread per slot, a first-in first-out queue of jobs between them.
#include "eval/slot_queue.h"

#include <chrono>

namespace kevo::eval {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

SlotQueue::SlotQueue(size_t slots) : busy_(slots, 0.0), taken_(slots, 0), running_since_(slots, -1.0) {
  for (size_t k = 0; k < slots; ++k) threads_.emplace_back([this, k] { serve(k); });
}

SlotQueue::~SlotQueue() {
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(waiting_);
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  // `dropped` goes out of scope here, outside the lock: its promises break.
}

void SlotQueue::push(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.push_back(std::move(job));
  }
  work_cv_.notify_one();
}

size_t SlotQueue::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

std::vector<double> SlotQueue::busy_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<double> out = busy_;
  const double now = now_seconds();
  for (size_t k = 0; k < out.size(); ++k)
    if (running_since_[k] >= 0) out[k] += now - running_since_[k];
  return out;
}

std::vector<long> SlotQueue::jobs_taken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return taken_;
}

void SlotQueue::serve(size_t slot) {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      if (stopping_) return;
      job = std::move(waiting_.front());
      waiting_.pop_front();
      running_since_[slot] = now_seconds();
      ++taken_[slot];
    }
    job(slot);
    job = nullptr;  // what the job holds (its promise, its candidate) goes before the next is taken
    std::lock_guard<std::mutex> lock(mu_);
    busy_[slot] += now_seconds() - running_since_[slot];
    running_since_[slot] = -1;
  }
}

}  // namespace kevo::eval
